//! Per-cycle costs beside their floors, and how the decide cycle and the fence plan grow with
//! the pods and the taints (issue 12), printed as markdown tables.
//!
//! - Per cycle, each piece against its floor, measured in the same run: the sample against
//!   reading the same kernel files and two `statvfs` calls with no parsing; the decide cycle
//!   against the threshold comparisons alone (each threshold's signal looked up and compared,
//!   no grace periods, conditions or taints), and against those comparisons plus the conditions
//!   the cycle must produce (each one's status from its thresholds, its heartbeat set); the
//!   status report against serialising the same patch already built as a JSON value; the
//!   reporter's per-cycle question (changed beyond heartbeats?) against comparing the
//!   conditions pair by pair; the fence plan of 1,000 pods against building its output alone
//!   (the pods' identities copied into the plan list, no tolerations read).
//! - Growth: converting the pod store to the planner's view (done when the store changes) and
//!   planning, for 10 / 100 / 1,000 / 10,000 realistic pods (`tests/support/realistic.rs`,
//!   decoded as the pod watch decodes them, converted by `agent::fence_task::convert_pods`); the
//!   decide cycle plus the reporter's taint plan against a Node with 1 / 20 / 200 taints, and the
//!   fence plan of 100 pods with that many tolerations each.
//!
//! Each figure is the median of 15 batches, a batch being enough iterations for ~2 ms. With
//! `NODEWARDEN_CYCLE_ONLY=<piece>,<n>` one per-cycle piece runs `n` times alone (the names are
//! in `per_cycle`), for `valgrind --tool=callgrind`: instructions are repeatable on this noisy
//! machine where times are not.
//! Run: `CARGO_PROFILE_BENCH_LTO=false CARGO_PROFILE_BENCH_CODEGEN_UNITS=16 cargo bench --bench
//! growth` (about a minute).

#[path = "../tests/support/realistic.rs"]
mod realistic;
mod support;

use std::collections::BTreeSet;
use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use kube::runtime::reflector::store::{Store, Writer};
use kube::runtime::watcher;
use nodewarden::agent::{Decider, fence_task};
use nodewarden::api::node::conditions_patch;
use nodewarden::api::slim::SlimPod;
use nodewarden::core::clock::Moment;
use nodewarden::core::condition::{
    ConditionStatus, NodeCondition, TaintSpec, changed_ignoring_heartbeat,
};
use nodewarden::core::fence_plan::{FencePod, FencePolicy, Mode, QuorumVerdict, plan};
use nodewarden::core::ownership::report_changed;
use nodewarden::core::signal::SignalRef;
use nodewarden::core::taint::{Effect, Taint, Toleration};
use nodewarden::core::taint_plan::plan_taints;
use nodewarden::sample::{SamplePaths, Sampler};
use support::{example_config, kernel_files, next_cycle, read_floor};

const NODE: &str = "n1";
const FS: &str = "/";

/// Median time of one call of `f`.
fn time(mut f: impl FnMut()) -> Duration {
    // Calibrate: iterations for about 2 ms.
    let start = Instant::now();
    let mut iters = 0u32;
    while start.elapsed() < Duration::from_millis(2) && iters < 1_000_000 {
        f();
        iters += 1;
    }
    let mut batches: Vec<Duration> = (0..15)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed() / iters
        })
        .collect();
    batches.sort();
    batches[batches.len() / 2]
}

/// `NODEWARDEN_CYCLE_ONLY=<piece>,<n>`: run that one per-cycle piece (or floor) `n` times and
/// nothing else, for an instruction count under callgrind, which is repeatable where times on
/// this shared machine are not: the count with `n` = 0 is the setup, to subtract.
fn only() -> Option<(String, u32)> {
    let v = std::env::var("NODEWARDEN_CYCLE_ONLY").ok()?;
    let (name, n) = v.split_once(',')?;
    Some((name.to_string(), n.parse().ok()?))
}

/// The median time of `f` (see `time`), or under `NODEWARDEN_CYCLE_ONLY` its `n` runs if it is
/// the piece named there (and nothing otherwise).
fn piece(name: &str, mut f: impl FnMut()) -> Duration {
    match only() {
        None => time(f),
        Some((only, n)) => {
            if only == name {
                for _ in 0..n {
                    f();
                }
            }
            Duration::ZERO
        }
    }
}

fn show(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns >= 1_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

fn ratio(a: Duration, floor: Duration) -> String {
    format!("{:.1}×", a.as_secs_f64() / floor.as_secs_f64().max(1e-12))
}

fn policy() -> FencePolicy {
    FencePolicy {
        node_monitor_grace_period: Duration::from_secs(40),
        node_monitor_period: Duration::ZERO,
        safety_margin: Duration::from_secs(2),
        grace_cap: Duration::from_secs(30),
        mode: Mode::DryRun,
        kubelet_lag: Duration::ZERO,
    }
}

/// `n` realistic pods in a reflector store, decoded as the pod watch decodes them.
fn store(n: usize) -> Store<SlimPod> {
    writer(n).as_reader()
}

/// The writer side of [`store`], for a bench that changes pods.
fn writer(n: usize) -> Writer<SlimPod> {
    let mut writer: Writer<SlimPod> = Default::default();
    for i in 0..n {
        let text = realistic::pod(i, NODE).to_string();
        match serde_json::from_str::<SlimPod>(&text) {
            Ok(pod) => writer.apply_watcher_event(&watcher::Event::Apply(pod)),
            Err(e) => panic!("realistic pod {i}: {e}"),
        }
    }
    writer
}

/// The median time of one fence plan of `pods`, as the growth tables measure it.
fn plan_time(pods: &[FencePod], policy: &FencePolicy) -> Duration {
    time(|| {
        black_box(plan(
            black_box(pods),
            Duration::from_secs(1000),
            None,
            None,
            policy,
            &QuorumVerdict::NotConsulted,
        ));
    })
}

/// The fence plan's floor: the plan list alone, each pod's identity copied and one deadline
/// added.
fn plan_floor(pods: &[FencePod]) {
    let out: Vec<(String, String, String, Duration)> = black_box(pods)
        .iter()
        .map(|p| {
            (
                p.uid.clone(),
                p.namespace.clone(),
                p.name.clone(),
                Duration::from_secs(1000) + Duration::from_secs(42),
            )
        })
        .collect();
    black_box(out);
}

fn converted(store: &Store<SlimPod>) -> Vec<FencePod> {
    let (pods, _) = fence_task::convert_pods(store, &mut Default::default());
    pods
}

/// Per cycle, each piece and its floor.
fn per_cycle() {
    println!("## Per cycle, against the floor measured in the same run\n");
    println!("| piece | median | floor | floor measures | ratio |\n|---|---|---|---|---|");

    let mut sampler = Sampler::new(SamplePaths::host(FS, FS));
    let sample = piece("sample", || {
        black_box(sampler.sample());
    });
    let files = kernel_files();
    let mut buf = Vec::with_capacity(8 * 1024);
    let sample_floor = piece("sample_floor", || {
        read_floor(&files, &mut buf, FS);
    });
    println!(
        "| sample | {} | {} | the same kernel files read, two statvfs, no parsing | {} |",
        show(sample),
        show(sample_floor),
        ratio(sample, sample_floor)
    );

    let config = example_config();
    let reading = Sampler::new(SamplePaths::host(FS, FS))
        .sample()
        .observations;
    let mut decider = Decider::new(&config);
    let mut mono = Duration::ZERO;
    let decide = piece("decide", || {
        let now = next_cycle(&mut mono);
        black_box(decider.decide(black_box(&reading), now));
    });
    let decide_floor = piece("decide_floor", || {
        let mut met = 0u32;
        for t in &config.thresholds {
            if let Some(o) = black_box(&reading).eviction.get(&t.signal) {
                met += u32::from(o.available < t.value.resolve(o.capacity));
            }
        }
        for t in &config.psi_thresholds {
            if let Some(v) = black_box(&reading).psi.get(&t.signal) {
                met += u32::from(*v > t.above_percent);
            }
        }
        black_box(met);
    });
    println!(
        "| decide ({} thresholds, {} PSI, {} conditions) | {} | {} | each threshold's signal looked up and compared | {} |",
        config.thresholds.len(),
        config.psi_thresholds.len(),
        config.conditions.len(),
        show(decide),
        show(decide_floor),
        ratio(decide, decide_floor)
    );
    // The floor above produces no conditions, which the cycle must: the same comparisons, then
    // each condition's status from its thresholds (indexes resolved beforehand) and its
    // heartbeat set, in place. Still no minimum reclaim, grace periods, transition periods,
    // transitions or taints.
    let feeds: Vec<(Vec<usize>, Vec<usize>)> = config
        .conditions
        .iter()
        .map(|c| {
            let eviction = (0..config.thresholds.len())
                .filter(|&i| {
                    c.signals
                        .contains(&SignalRef::Eviction(config.thresholds[i].signal))
                })
                .collect();
            let psi = (0..config.psi_thresholds.len())
                .filter(|&i| {
                    c.signals
                        .contains(&SignalRef::Psi(config.psi_thresholds[i].signal))
                })
                .collect();
            (eviction, psi)
        })
        .collect();
    let mut met = vec![false; config.thresholds.len()];
    let mut psi_met = vec![false; config.psi_thresholds.len()];
    let mut stamped = decider.conditions.clone();
    let mut floor_mono = Duration::ZERO;
    let conditions_floor = piece("conditions_floor", || {
        let now = next_cycle(&mut floor_mono);
        let reading = black_box(&reading);
        for (m, t) in met.iter_mut().zip(&config.thresholds) {
            *m = reading
                .eviction
                .get(&t.signal)
                .is_some_and(|o| o.available < t.value.resolve(o.capacity));
        }
        for (m, t) in psi_met.iter_mut().zip(&config.psi_thresholds) {
            *m = reading
                .psi
                .get(&t.signal)
                .is_some_and(|v| *v > t.above_percent);
        }
        for (c, (eviction, psi)) in stamped.iter_mut().zip(&feeds) {
            let on = eviction.iter().any(|&i| met[i]) || psi.iter().any(|&i| psi_met[i]);
            c.status = ConditionStatus::from_bool(on);
            c.last_heartbeat_time = now.wall;
        }
        black_box(&stamped);
    });
    println!(
        "| decide, against the conditions it produces | {} | {} | the same comparisons, each condition's status from its thresholds and its heartbeat set | {} |",
        show(decide),
        show(conditions_floor),
        ratio(decide, conditions_floor)
    );

    // The status report of a change (whole owned conditions), after one decide.
    let mut decider = Decider::new(&config);
    let now = Moment {
        mono: Duration::from_secs(10),
        wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
    };
    decider.decide(&reading, now);
    let conditions = decider.conditions.clone();
    let report = piece("report", || {
        let body = conditions_patch(black_box(&conditions), false);
        black_box(serde_json::to_vec(&body).map(|v| v.len()).unwrap_or(0));
    });
    // The floor: the same patch already built as a JSON value (each field's text, the times
    // formatted), so only its encoding is timed.
    let built = serde_json::to_value(conditions_patch(&conditions, false)).unwrap_or_default();
    let report_floor = piece("report_floor", || {
        black_box(
            serde_json::to_vec(black_box(&built))
                .map(|v| v.len())
                .unwrap_or(0),
        );
    });
    println!(
        "| report decision ({} conditions' status patch, built and encoded) | {} | {} | the same patch, already built, encoded | {} |",
        conditions.len(),
        show(report),
        show(report_floor),
        ratio(report, report_floor)
    );

    // What the reporter asks of every cycle's snapshot: did the conditions change beyond
    // heartbeats since the journal's record, and since what was last written (a report due at
    // once)? Here nothing but the heartbeats moved, as in nearly every cycle.
    let mut snapshot = conditions.clone();
    for c in &mut snapshot {
        c.last_heartbeat_time += Duration::from_secs(10);
    }
    let written = conditions.clone();
    let held = BTreeSet::new();
    let per_snapshot = piece("per_snapshot", || {
        let journal = changed_ignoring_heartbeat(black_box(&conditions), black_box(&snapshot));
        let status = report_changed(black_box(&snapshot), black_box(&written), &held);
        black_box((journal, status));
    });
    let same = |x: &NodeCondition, y: &NodeCondition| {
        x.condition_type == y.condition_type
            && x.status == y.status
            && x.reason == y.reason
            && x.message == y.message
            && x.last_transition_time == y.last_transition_time
    };
    let per_snapshot_floor = piece("per_snapshot_floor", || {
        let snapshot = black_box(&snapshot);
        let journal = black_box(&conditions)
            .iter()
            .zip(snapshot)
            .all(|(x, y)| same(x, y));
        let status = snapshot
            .iter()
            .zip(black_box(&written))
            .all(|(x, y)| same(x, y));
        black_box((journal, status));
    });
    println!(
        "| report decision per cycle ({} conditions: changed since recorded? since written?) | {} | {} | each condition compared field by field with the recorded and the written one, in order | {} |",
        conditions.len(),
        show(per_snapshot),
        show(per_snapshot_floor),
        ratio(per_snapshot, per_snapshot_floor)
    );

    let pods = converted(&store(1000));
    let policy = policy();
    let fence_plan = piece("plan", || {
        black_box(plan(
            black_box(&pods),
            Duration::from_secs(1000),
            None,
            None,
            &policy,
            &QuorumVerdict::NotConsulted,
        ));
    });
    let plan_floor = piece("plan_floor", || plan_floor(&pods));
    println!(
        "| fence plan, 1,000 realistic pods | {} | {} | the plan list alone: each pod's identity copied, one deadline added | {} |",
        show(fence_plan),
        show(plan_floor),
        ratio(fence_plan, plan_floor)
    );
}

/// Growth with the pods and with the taints.
fn growth() {
    println!("\n## Growth with the pods (realistic pods, converted as the agent converts them)\n");
    println!(
        "| pods | convert the whole store | per pod | one pod changed: the agent's refresh | per pod | fence plan | per pod | its floor (identities copied) | per pod |\n|---|---|---|---|---|---|---|---|---|"
    );
    let policy = policy();
    for n in [10, 100, 1000, 10_000] {
        let mut w = writer(n);
        let s = w.as_reader();
        let convert = time(|| {
            black_box(fence_task::convert_pods(&s, &mut Default::default()));
        });
        // What the fence does when the watch delivers one changed pod: the store replaces it,
        // and the refresh converts it alone and merges by UID.
        let mut kept = fence_task::Converted::default();
        let mut malformed = Default::default();
        kept.refresh(&s, &mut malformed);
        let changed: SlimPod = serde_json::from_value(realistic::pod(n / 2, NODE))
            .unwrap_or_else(|e| panic!("realistic pod: {e}"));
        let refresh = time(|| {
            w.apply_watcher_event(&watcher::Event::Apply(changed.clone()));
            black_box(kept.refresh(&s, &mut malformed));
        });
        assert_eq!(kept.last_conversions(), 1, "one pod converted");
        let pods = converted(&s);
        let fence_plan = plan_time(&pods, &policy);
        // The floor at the same size: what of the plan's growth per pod is the memory's (more
        // pods than the caches hold), not the plan's.
        let floor = time(|| plan_floor(&pods));
        println!(
            "| {n} | {} | {} | {} | {} | {} | {} | {} | {} |",
            show(convert),
            show(convert / n as u32),
            show(refresh),
            show(refresh / n as u32),
            show(fence_plan),
            show(fence_plan / n as u32),
            show(floor),
            show(floor / n as u32)
        );
    }

    println!("\n## Growth with the taints\n");
    println!(
        "| taints | decide + taint plan, Node with this many taints | per taint | fence plan, 100 pods with this many tolerations each | per toleration |\n|---|---|---|---|---|"
    );
    let config = example_config();
    let reading = Sampler::new(SamplePaths::host(FS, FS))
        .sample()
        .observations;
    let owned: Vec<TaintSpec> = config
        .conditions
        .iter()
        .filter_map(|c| c.taint.clone())
        .collect();
    let base = converted(&store(100));
    for t in [1usize, 20, 200] {
        // Other writers' taints, then (when there is room) one of ours.
        let mut current: Vec<Taint> = (0..t)
            .map(|i| Taint {
                key: format!("example.com/team-{i}"),
                value: "x".into(),
                effect: Effect::NoSchedule,
                time_added: None,
            })
            .collect();
        if let (Some(ours), Some(last)) = (owned.first(), current.last_mut()) {
            *last = Taint {
                key: ours.key.clone(),
                value: String::new(),
                effect: ours.effect,
                time_added: Some("2026-12-01T00:00:00Z".into()),
            };
        }
        let mut decider = Decider::new(&config);
        let mut mono = Duration::ZERO;
        let decide = time(|| {
            let now = next_cycle(&mut mono);
            black_box(decider.decide(black_box(&reading), now));
            black_box(plan_taints(
                black_box(&current),
                &owned,
                &decider.taints,
                "2026-12-01T00:00:10Z",
            ));
        });
        let pods: Vec<FencePod> = base
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p.tolerations = (0..t)
                    .map(|i| match i {
                        0 => Toleration::exists(
                            "node.kubernetes.io/unreachable",
                            Some(Effect::NoExecute),
                        )
                        .with_seconds(300),
                        _ => Toleration::equal(
                            format!("example.com/team-{i}"),
                            "x",
                            Some(Effect::NoSchedule),
                        ),
                    })
                    .collect();
                p
            })
            .collect();
        let fence_plan = plan_time(&pods, &policy);
        println!(
            "| {t} | {} | {} | {} | {} |",
            show(decide),
            show(decide / t as u32),
            show(fence_plan),
            show(fence_plan / (t as u32 * pods.len() as u32))
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing here takes arguments.
    per_cycle();
    if only().is_none() {
        growth();
    }
}
