//! Prometheus text exposition (format 0.0.4) of what the agent observed and decided. The agent
//! writes the latest values after each cycle; the HTTP server renders them on request. Hand-written:
//! two crates were measured in its place (BENCHMARKS.md, "Exposition"). prometheus-client fits the
//! memory and cycle bounds but writes OpenMetrics, which `promtool check metrics` rejects as served
//! here; `prometheus` passes promtool and the cycle bound but, with the hot-symbol order out of the
//! picture, costs more VmHWM than issue 24 allows, and would drop the families without series that
//! this renderer still heads (`# HELP`/`# TYPE`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use procfs_core::FromRead;
use procfs_core::process::{Stat, Status};

use crate::core::clock::Moment;
use crate::core::fence_plan::{Plan, QuorumVerdict};
use crate::core::pressure::Evaluation;
use crate::core::signal::Observations;

/// Everything `/metrics` shows. Updated by the sampling loop.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<State>,
    /// The peer endpoint's and the quorum's questions (connected with `[peers]`).
    peers: std::sync::OnceLock<std::sync::Arc<crate::peer::PeerCounters>>,
    /// The API requests' counters (connected: the agent's [`crate::api::Requests`]).
    requests: std::sync::OnceLock<std::sync::Arc<crate::api::RequestCounts>>,
}

#[derive(Debug, Default)]
struct State {
    observations: Observations,
    evaluation: Option<Evaluation>,
    conditions: BTreeMap<String, String>,
    transitions: BTreeMap<String, u64>,
    samples: u64,
    sample_errors: BTreeMap<String, u64>,
    /// "" (standalone), "1" or "0".
    reachability: String,
    foreign_writers: usize,
    taint_writes: BTreeMap<String, u64>,
    /// Failed writes to the state directory, by file (`state`, `contact`).
    state_write_failures: BTreeMap<&'static str, u64>,
    fence_actions: BTreeMap<String, u64>,
    fence_worst_lateness: BTreeMap<String, f64>,
    /// Pods per plan ("stop", "dry_run_stop", "hold", "never") in the latest plan.
    fence_plans: BTreeMap<&'static str, usize>,
    /// The quorum verdict the latest plan was made with.
    quorum_verdict: Option<&'static str>,
    /// The wall-clock times of the steps the latest plan made while cut off schedules, per
    /// action (`DEADLINE_ACTIONS`), sorted; empty while connected.
    fence_deadlines: BTreeMap<&'static str, Vec<SystemTime>>,
    /// The peer quorum's own verdict in the current partition ("" while connected); `None`
    /// before any (standalone, or never cut off).
    quorum: Option<&'static str>,
}

/// The quorum verdicts, as metric labels.
const VERDICTS: [&str; 3] = ["not_consulted", "enforce", "hold"];

/// Every fence action `record_fence` counts. Each series is shown from the start at 0: a counter
/// that first appears at 1 has no earlier sample, so Prometheus' `increase()` and `rate()` miss
/// that first step (the first SIGTERM of a partition would never raise an alert).
pub const FENCE_ACTIONS: [&str; 8] = [
    "planned",
    "sigterm",
    "kill",
    "rekill",
    "lift",
    "reconciled",
    "would_sigterm",
    "would_kill",
];

/// The fence steps whose deadlines `/metrics` shows: a stop plan's SIGTERM and SIGKILL, named as
/// `nodewarden_fence_actions_total` counts them when taken (`would_…` in dry-run). One series
/// each at most, so the family's cardinality does not grow with the pods.
const DEADLINE_ACTIONS: [&str; 4] = ["sigterm", "kill", "would_sigterm", "would_kill"];

impl Metrics {
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        // A poisoned lock only means a panic elsewhere mid-update; the figures are still usable.
        let mut guard = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// Records one completed sample cycle.
    pub fn record_cycle(
        &self,
        observations: &Observations,
        evaluation: &Evaluation,
        conditions: &[(String, String)],
        errors: &[String],
    ) {
        self.with(|s| {
            s.samples += 1;
            s.observations = observations.clone();
            s.evaluation = Some(evaluation.clone());
            s.conditions = conditions.iter().cloned().collect();
            for e in errors {
                *s.sample_errors.entry(e.clone()).or_default() += 1;
            }
        });
    }

    /// Counts one status transition of a condition.
    pub fn record_transition(&self, condition: &str) {
        self.with(|s| *s.transitions.entry(condition.to_string()).or_default() += 1);
    }

    /// Records the peer quorum's verdict (`None`: cleared, the API server answers again).
    pub fn record_quorum(&self, verdict: Option<&'static str>) {
        self.with(|s| s.quorum = Some(verdict.unwrap_or("")));
    }

    /// Records whether the API server answers. Contact back ends the partition, and with it
    /// the deadlines of its plans (the fence lifts what it did not yet stop).
    pub fn record_reachable(&self, reachable: bool) {
        self.with(|s| {
            s.reachability = if reachable { "1" } else { "0" }.to_string();
            if reachable {
                s.fence_deadlines.clear();
            }
        });
    }

    /// Whether the API server answers: `None` standalone or before the first request.
    pub fn reachable(&self) -> Option<bool> {
        self.with(|s| match s.reachability.as_str() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        })
    }

    /// Records how many owned conditions another writer holds now (it showed life within
    /// `core::ownership::OTHER_WRITER_SILENCE`): drops back when one is taken over.
    pub fn record_foreign_writers(&self, n: usize) {
        self.with(|s| s.foreign_writers = n);
    }

    /// Counts one taint write by outcome (`written`, `unchanged`, `error`).
    pub fn record_taint_write(&self, outcome: &str) {
        self.with(|s| *s.taint_writes.entry(outcome.to_string()).or_default() += 1);
    }

    /// Counts one failed write of a file of the state directory (`state` or `contact`).
    pub fn record_state_write_failure(&self, file: &'static str) {
        self.with(|s| *s.state_write_failures.entry(file).or_default() += 1);
    }

    /// Counts one fence action (`planned`, `sigterm`, `kill`, `rekill`, `lift`, `reconciled`,
    /// `would_sigterm`, `would_kill`).
    pub fn record_fence(&self, action: &str) {
        self.with(|s| *s.fence_actions.entry(action.to_string()).or_default() += 1);
    }

    /// Records the latest fence plan: how many pods each plan has, the quorum verdict it was
    /// made with and, for plans made while cut off (`cut_off`: the moment they were made, to
    /// put their monotonic schedules on the wall clock), when each stop plan's steps are due.
    /// `None` for what a partition starting now would do: no deadline runs while connected.
    pub fn record_plans<P: std::borrow::Borrow<Plan>>(
        &self,
        plans: impl IntoIterator<Item = P>,
        verdict: &QuorumVerdict,
        cut_off: Option<Moment>,
    ) {
        let mut deadlines: BTreeMap<&'static str, Vec<SystemTime>> = BTreeMap::new();
        let mut counts: BTreeMap<&'static str, usize> = ["stop", "dry_run_stop", "hold", "never"]
            .map(|k| (k, 0))
            .into();
        for plan in plans {
            let plan = plan.borrow();
            let key = match plan {
                Plan::Stop { dry_run: false, .. } => "stop",
                Plan::Stop { dry_run: true, .. } => "dry_run_stop",
                Plan::Hold { .. } => "hold",
                Plan::Never { .. } => "never",
            };
            *counts.entry(key).or_default() += 1;
            // A held pod has a schedule but no step runs on it: the verdict or mode that holds
            // it is replanned, and recorded here again, before anything is due.
            let (
                Some(now),
                Plan::Stop {
                    schedule, dry_run, ..
                },
            ) = (cut_off, plan)
            else {
                continue;
            };
            let [term, kill] = if *dry_run {
                [DEADLINE_ACTIONS[2], DEADLINE_ACTIONS[3]]
            } else {
                [DEADLINE_ACTIONS[0], DEADLINE_ACTIONS[1]]
            };
            let mut add = |action, at| deadlines.entry(action).or_default().push(at);
            add(term, now.wall_at(schedule.sigterm_at));
            add(kill, now.wall_at(schedule.kill_at));
        }
        for times in deadlines.values_mut() {
            times.sort_unstable();
        }
        let verdict = match verdict {
            QuorumVerdict::NotConsulted => VERDICTS[0],
            QuorumVerdict::Enforce { .. } | QuorumVerdict::Tainted { .. } => VERDICTS[1],
            QuorumVerdict::Hold { .. } => VERDICTS[2],
        };
        self.with(|s| {
            s.fence_plans = counts;
            s.quorum_verdict = Some(verdict);
            s.fence_deadlines = deadlines;
        });
    }

    /// Records how late a fence action was against its plan (worst seen, per action).
    pub fn record_lateness(&self, action: &str, late: std::time::Duration) {
        self.with(|s| {
            let worst = s
                .fence_worst_lateness
                .entry(action.to_string())
                .or_default();
            *worst = (*worst).max(late.as_secs_f64());
        });
    }

    /// Renders the exposition text. `process` carries the agent's own resident memory and CPU.
    pub fn render(&self, process: Option<ProcessStats>) -> String {
        self.render_at(process, SystemTime::now())
    }

    /// [`Metrics::render`] at a given wall-clock time (which deadlines are still upcoming).
    fn render_at(&self, process: Option<ProcessStats>, now: SystemTime) -> String {
        let requests = self
            .requests
            .get()
            .map(|r| r.snapshot())
            .unwrap_or_default();
        let mut out = self.with(|s| render(s, &requests, process, now));
        if let Some(peers) = self.peers.get() {
            peers.render(&mut out);
        }
        out
    }

    /// The peer counters `/metrics` shows from now on (set once, when the agent connects).
    pub fn set_peer_counters(&self, counters: std::sync::Arc<crate::peer::PeerCounters>) {
        let _ = self.peers.set(counters);
    }

    /// The API request counters `/metrics` shows from now on (set once, when the agent
    /// connects; before that the family has no series).
    pub fn set_request_counts(&self, counts: std::sync::Arc<crate::api::RequestCounts>) {
        let _ = self.requests.set(counts);
    }
}

/// The agent's own footprint, read from `/proc/self`.
#[derive(Clone, Copy, Debug)]
pub struct ProcessStats {
    pub resident_bytes: u64,
    pub cpu_seconds: f64,
}

impl ProcessStats {
    /// Reads `/proc/self/status` (VmRSS) and `/proc/self/stat` (utime + stime), each bounded
    /// and parsed by procfs-core. `None` if either cannot be read or parsed: the metrics then
    /// leave the process figures out rather than show a wrong one.
    pub fn read() -> Option<ProcessStats> {
        let mut buf = Vec::new();
        crate::bounded::read_into(
            &mut buf,
            Path::new("/proc/self/status"),
            crate::bounded::KERNEL_TEXT,
        )
        .ok()?;
        let status = Status::from_read(buf.as_slice()).ok()?;
        crate::bounded::read_into(
            &mut buf,
            Path::new("/proc/self/stat"),
            crate::bounded::KERNEL_TEXT,
        )
        .ok()?;
        let stat = Stat::from_read(buf.as_slice()).ok()?;
        ProcessStats::from_parsed(&status, &stat)
    }

    /// The figures from parsed `status` and `stat` files (split out so tests can feed fixtures).
    fn from_parsed(status: &Status, stat: &Stat) -> Option<ProcessStats> {
        // `VmRSS` is in KiB.
        let resident_bytes = status.vmrss?.checked_mul(1024)?;
        let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .unwrap_or(100) as f64;
        Some(ProcessStats {
            resident_bytes,
            cpu_seconds: stat.utime.saturating_add(stat.stime) as f64 / ticks,
        })
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn render(
    s: &State,
    requests: &[(crate::api::RequestKey, u64)],
    process: Option<ProcessStats>,
    now: SystemTime,
) -> String {
    let mut out = String::with_capacity(4096);
    header(
        &mut out,
        "nodewarden_signal_available",
        "gauge",
        "Available amount of an eviction signal (bytes, inodes or PIDs).",
    );
    for (signal, o) in &s.observations.eviction {
        let _ = writeln!(
            out,
            "nodewarden_signal_available{{signal=\"{signal}\"}} {}",
            o.available
        );
    }
    header(
        &mut out,
        "nodewarden_signal_capacity",
        "gauge",
        "Capacity an eviction signal is a share of.",
    );
    for (signal, o) in &s.observations.eviction {
        let _ = writeln!(
            out,
            "nodewarden_signal_capacity{{signal=\"{signal}\"}} {}",
            o.capacity
        );
    }
    header(
        &mut out,
        "nodewarden_psi_percent",
        "gauge",
        "Pressure stall information average, percent of wall time.",
    );
    for (signal, v) in &s.observations.psi {
        let _ = writeln!(out, "nodewarden_psi_percent{{signal=\"{signal}\"}} {v}");
    }
    if let Some(ev) = &s.evaluation {
        header(
            &mut out,
            "nodewarden_threshold_met",
            "gauge",
            "1 while an eviction threshold is met (minimum reclaim counted).",
        );
        for t in &ev.thresholds {
            let kind = if t.soft { "soft" } else { "hard" };
            let _ = writeln!(
                out,
                "nodewarden_threshold_met{{signal=\"{}\",kind=\"{kind}\"}} {}",
                t.signal,
                u8::from(t.met)
            );
        }
        header(
            &mut out,
            "nodewarden_threshold_value",
            "gauge",
            "An eviction threshold resolved against capacity.",
        );
        for t in &ev.thresholds {
            let kind = if t.soft { "soft" } else { "hard" };
            let _ = writeln!(
                out,
                "nodewarden_threshold_value{{signal=\"{}\",kind=\"{kind}\"}} {}",
                t.signal, t.threshold
            );
        }
    }
    header(
        &mut out,
        "nodewarden_condition",
        "gauge",
        "1 for the current status of each owned node condition.",
    );
    for (condition, status) in &s.conditions {
        for candidate in ["True", "False", "Unknown"] {
            let _ = writeln!(
                out,
                "nodewarden_condition{{condition=\"{condition}\",status=\"{candidate}\"}} {}",
                u8::from(candidate == status)
            );
        }
    }
    header(
        &mut out,
        "nodewarden_condition_transitions_total",
        "counter",
        "Status transitions of each owned condition.",
    );
    for (condition, n) in &s.transitions {
        let _ = writeln!(
            out,
            "nodewarden_condition_transitions_total{{condition=\"{condition}\"}} {n}"
        );
    }
    header(
        &mut out,
        "nodewarden_samples_total",
        "counter",
        "Completed sample cycles.",
    );
    let _ = writeln!(out, "nodewarden_samples_total {}", s.samples);
    header(
        &mut out,
        "nodewarden_sample_errors_total",
        "counter",
        "Signals that could not be read, by signal.",
    );
    for (what, n) in &s.sample_errors {
        let _ = writeln!(out, "nodewarden_sample_errors_total{{what=\"{what}\"}} {n}");
    }
    header(
        &mut out,
        "nodewarden_api_requests_total",
        "counter",
        "API requests by verb, resource and outcome (ok, status code, timeout, transport).",
    );
    for ((verb, resource, outcome), n) in requests {
        let _ = writeln!(
            out,
            "nodewarden_api_requests_total{{verb=\"{verb}\",resource=\"{resource}\",outcome=\"{outcome}\"}} {n}"
        );
    }
    if !s.reachability.is_empty() {
        header(
            &mut out,
            "nodewarden_api_reachable",
            "gauge",
            "1 while the API server answers, 0 while it does not.",
        );
        let _ = writeln!(out, "nodewarden_api_reachable {}", s.reachability);
    }
    header(
        &mut out,
        "nodewarden_foreign_condition_writers",
        "gauge",
        "Owned conditions another writer holds: changed or heartbeated by it within the last 15m (docs/architecture.md §4).",
    );
    let _ = writeln!(
        out,
        "nodewarden_foreign_condition_writers {}",
        s.foreign_writers
    );
    header(
        &mut out,
        "nodewarden_taint_writes_total",
        "counter",
        "Taint writes to our Node, by outcome.",
    );
    for (outcome, n) in &s.taint_writes {
        let _ = writeln!(
            out,
            "nodewarden_taint_writes_total{{outcome=\"{outcome}\"}} {n}"
        );
    }
    header(
        &mut out,
        "nodewarden_state_write_failures_total",
        "counter",
        "Failed writes to the state directory (a full or read-only disk), by file.",
    );
    for file in ["state", "contact"] {
        let n = s.state_write_failures.get(file).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "nodewarden_state_write_failures_total{{file=\"{file}\"}} {n}"
        );
    }
    header(
        &mut out,
        "nodewarden_fence_actions_total",
        "counter",
        "Fence plans and actions while cut off from the API server.",
    );
    for action in FENCE_ACTIONS {
        let n = s.fence_actions.get(action).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "nodewarden_fence_actions_total{{action=\"{action}\"}} {n}"
        );
    }
    // An action outside the list still shows (after the listed ones), rather than vanish.
    for (action, n) in &s.fence_actions {
        if !FENCE_ACTIONS.contains(&action.as_str()) {
            let _ = writeln!(
                out,
                "nodewarden_fence_actions_total{{action=\"{action}\"}} {n}"
            );
        }
    }
    header(
        &mut out,
        "nodewarden_fence_worst_lateness_seconds",
        "gauge",
        "Worst lateness of a fence action against its plan.",
    );
    for (action, v) in &s.fence_worst_lateness {
        let _ = writeln!(
            out,
            "nodewarden_fence_worst_lateness_seconds{{action=\"{action}\"}} {v}"
        );
    }
    if !s.fence_plans.is_empty() {
        header(
            &mut out,
            "nodewarden_fence_plan_pods",
            "gauge",
            "Pods per fence plan (stop, dry_run_stop, hold, never) for a cut-off from the latest \
             contact: while connected, what a partition starting now would do.",
        );
        for (plan, n) in &s.fence_plans {
            let _ = writeln!(out, "nodewarden_fence_plan_pods{{plan=\"{plan}\"}} {n}");
        }
        // A Unix time in seconds, named `_timestamp_seconds` as Prometheus' naming practice
        // has timestamps; a dashboard shows it as `… - time()`, the time left.
        header(
            &mut out,
            "nodewarden_fence_next_deadline_timestamp_seconds",
            "gauge",
            "Unix time of the earliest upcoming step per fence action (sigterm, kill; \
             would_sigterm, would_kill in dry-run) of the plans made while cut off; absent while \
             connected and once every step of that action is past.",
        );
        for (action, times) in &s.fence_deadlines {
            // Sorted: the first not yet past is the earliest upcoming.
            let Some(at) = times.get(times.partition_point(|t| *t < now)) else {
                continue;
            };
            let Ok(unix) = at.duration_since(UNIX_EPOCH) else {
                continue;
            };
            let _ = writeln!(
                out,
                "nodewarden_fence_next_deadline_timestamp_seconds{{action=\"{action}\"}} {:.3}",
                unix.as_secs_f64()
            );
        }
    }
    if let Some(verdict) = s.quorum_verdict {
        header(
            &mut out,
            "nodewarden_fence_quorum_verdict",
            "gauge",
            "1 for the peer quorum verdict the latest fence plan was made with (not_consulted \
             while connected: what a partition starting now would do).",
        );
        for v in VERDICTS {
            let _ = writeln!(
                out,
                "nodewarden_fence_quorum_verdict{{verdict=\"{v}\"}} {}",
                u8::from(v == verdict)
            );
        }
    }
    if let Some(current) = s.quorum {
        header(
            &mut out,
            "nodewarden_quorum_verdict",
            "gauge",
            "1 for the peer quorum's verdict in the current partition (enforce, hold, or pending \
             while peers cut off together may not know it yet); all 0 while connected.",
        );
        for v in ["enforce", "hold", "pending"] {
            let _ = writeln!(
                out,
                "nodewarden_quorum_verdict{{verdict=\"{v}\"}} {}",
                u8::from(v == current)
            );
        }
    }
    if let Some(p) = process {
        header(
            &mut out,
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory of the agent.",
        );
        let _ = writeln!(out, "process_resident_memory_bytes {}", p.resident_bytes);
        header(
            &mut out,
            "process_cpu_seconds_total",
            "counter",
            "CPU time used by the agent.",
        );
        let _ = writeln!(out, "process_cpu_seconds_total {}", p.cpu_seconds);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fence_plan::PodPlan;
    use std::time::Duration;

    fn plan(name: &str, plan: Plan) -> PodPlan {
        PodPlan {
            uid: name.into(),
            namespace: "ns".into(),
            name: name.into(),
            plan,
        }
    }

    /// A `/proc/<pid>/stat` line whose command name holds a space and a parenthesis, with
    /// utime = 250 and stime = 50 ticks (fields 14 and 15).
    const STAT: &[u8] = b"2297 (node warden) x) S 1 2291 2291 0 -1 4194304 99 0 0 0 250 50 0 0 20 0 1 0 314606 3133440 356 18446744073709551615 1 2 3 4 5 0 0 0 0 0 0 0 17 0 0 0 0 0 0 6 7 8 9 10 11 12 0\n";

    #[test]
    fn process_stats_are_rss_bytes_and_user_plus_system_seconds() {
        // This process's own status as the template (procfs-core requires most of its
        // fields), with a known VmRSS.
        let own = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let text: String = own
            .lines()
            .map(|line| {
                if line.starts_with("VmRSS:") {
                    "VmRSS:\t    3164 kB\n".to_string()
                } else {
                    format!("{line}\n")
                }
            })
            .collect();
        assert!(text.contains("VmRSS:\t    3164 kB"), "{text}");
        let status = Status::from_read(text.as_bytes());
        let stat = Stat::from_read(STAT);
        let (status, stat) = match (status, stat) {
            (Ok(status), Ok(stat)) => (status, stat),
            (status, stat) => panic!("fixtures must parse: {:?} {:?}", status.err(), stat.err()),
        };
        let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .unwrap_or(100) as f64;
        let stats = ProcessStats::from_parsed(&status, &stat);
        assert_eq!(stats.map(|s| s.resident_bytes), Some(3164 * 1024));
        assert_eq!(stats.map(|s| s.cpu_seconds), Some(300.0 / ticks));
    }

    #[test]
    fn process_stats_of_this_process_are_plausible() {
        let Some(stats) = ProcessStats::read() else {
            panic!("/proc/self must be readable");
        };
        // A test binary holds at least a megabyte and far less than a terabyte.
        assert!(
            (1 << 20..1 << 40).contains(&stats.resident_bytes),
            "{stats:?}"
        );
        assert!(stats.cpu_seconds >= 0.0, "{stats:?}");
    }

    #[test]
    fn every_fence_action_is_shown_at_zero_before_its_first_count() {
        let m = Metrics::default();
        let text = m.render(None);
        for action in FENCE_ACTIONS {
            let line = format!("nodewarden_fence_actions_total{{action=\"{action}\"}} 0");
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
        m.record_fence("sigterm");
        m.record_fence("sigterm");
        let text = m.render(None);
        assert!(text.contains("nodewarden_fence_actions_total{action=\"sigterm\"} 2\n"));
        assert_eq!(
            text.matches("nodewarden_fence_actions_total{action=\"sigterm\"}")
                .count(),
            1
        );
    }

    #[test]
    fn plans_are_counted_per_kind_with_the_verdict_they_used() {
        let m = Metrics::default();
        assert!(!m.render(None).contains("nodewarden_fence_plan_pods"));
        let never = |n| plan(n, Plan::Never { reason: "r".into() });
        m.record_plans(
            [never("a"), never("b")].iter().map(|p| &p.plan),
            &QuorumVerdict::Hold {
                reason: "zone".into(),
                stop_due: None,
            },
            None,
        );
        let text = m.render(None);
        for line in [
            "nodewarden_fence_plan_pods{plan=\"never\"} 2",
            "nodewarden_fence_plan_pods{plan=\"stop\"} 0",
            "nodewarden_fence_plan_pods{plan=\"dry_run_stop\"} 0",
            "nodewarden_fence_plan_pods{plan=\"hold\"} 0",
            "nodewarden_fence_quorum_verdict{verdict=\"hold\"} 1",
            "nodewarden_fence_quorum_verdict{verdict=\"not_consulted\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
        // The latest plan replaces the previous counts.
        m.record_plans([never("c").plan], &QuorumVerdict::NotConsulted, None);
        let text = m.render(None);
        assert!(text.contains("nodewarden_fence_plan_pods{plan=\"never\"} 1\n"));
        assert!(text.contains("nodewarden_fence_quorum_verdict{verdict=\"not_consulted\"} 1\n"));
    }

    /// The deadline series of an exposition, as (action, value).
    fn deadlines(text: &str) -> Vec<(String, String)> {
        text.lines()
            .filter_map(|l| {
                l.strip_prefix("nodewarden_fence_next_deadline_timestamp_seconds{action=\"")
            })
            .filter_map(|l| l.split_once("\"} "))
            .map(|(a, v)| (a.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn plans_made_while_cut_off_show_the_earliest_upcoming_step_per_action_as_unix_time() {
        use crate::core::fence_plan::Schedule;
        let s = Duration::from_secs;
        let stop = |n, term: u64, kill: u64, dry_run| {
            let schedule = Schedule {
                eviction_time: s(term),
                sigterm_at: s(term),
                kill_at: s(kill),
            };
            plan(
                n,
                Plan::Stop {
                    schedule,
                    dry_run,
                    reason: "r".into(),
                },
            )
        };
        let held = plan(
            "held",
            Plan::Hold {
                schedule: Schedule {
                    eviction_time: s(101),
                    sigterm_at: s(101),
                    kill_at: s(102),
                },
                reason: "r".into(),
            },
        );
        let plans = [
            stop("late", 130, 160, false),
            stop("early", 110, 140, false),
            stop("dry", 120, 125, true),
            held,
        ];
        // Planned at monotonic 100 s, wall 1_800_000_000 s: monotonic 110 s is wall …010.
        let at = UNIX_EPOCH + s(1_800_000_000);
        let now = Moment {
            mono: s(100),
            wall: at,
        };
        let m = Metrics::default();
        m.record_reachable(false);
        m.record_plans(
            plans.iter().map(|p| &p.plan),
            &QuorumVerdict::NotConsulted,
            Some(now),
        );
        let pair = |a: &str, v: &str| (a.to_string(), v.to_string());
        assert_eq!(
            deadlines(&m.render_at(None, at)),
            [
                pair("kill", "1800000040.000"),
                pair("sigterm", "1800000010.000"),
                pair("would_kill", "1800000025.000"),
                pair("would_sigterm", "1800000020.000"),
            ],
            "the earliest of each action; the held pod's schedule is no deadline"
        );
        // Once the first SIGTERM is past, the next pod's; once every SIGTERM is, none.
        let text = m.render_at(None, at + s(11));
        assert!(deadlines(&text).contains(&pair("sigterm", "1800000030.000")));
        let text = m.render_at(None, at + s(31));
        assert!(!deadlines(&text).iter().any(|(a, _)| a == "sigterm"));
        assert!(deadlines(&text).contains(&pair("kill", "1800000040.000")));
        assert!(text.contains("# TYPE nodewarden_fence_next_deadline_timestamp_seconds gauge\n"));

        // Contact back: no partition, no deadline (the family stays, without series).
        m.record_reachable(true);
        let text = m.render_at(None, at);
        assert!(deadlines(&text).is_empty(), "{text}");
        assert!(text.contains("# TYPE nodewarden_fence_next_deadline_timestamp_seconds gauge\n"));
        // What a partition starting now would do has no deadline either.
        m.record_plans(
            plans.iter().map(|p| &p.plan),
            &QuorumVerdict::NotConsulted,
            None,
        );
        assert!(deadlines(&m.render_at(None, at)).is_empty());
    }
}
