//! The fence task's per-tick decisions (`core::fencing`, docs/fence.md) as tables: what counts as
//! contact and when the node is cut off, across restarts and wall-clock steps both ways; which
//! steps of each plan are due; what is written to disk when; when failed API work is retried.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use nodewarden::core::backoff::{Backoff, Jitter};
use nodewarden::core::clock::Moment;
use nodewarden::core::fence_plan::{
    FencePod, FencePolicy, Mode, Plan, PodPlan, QuorumVerdict, plan, queued_contact,
};
use nodewarden::core::fencing::{
    Cadence, Durability, Heartbeat, Judged, Link, NodePath, Retry, Seen, Step, Steps, Transition,
    Waiting, Write, counted_with_kubelet, next_renewal, next_wake, node_path_window,
};
use nodewarden::core::qos::QosClass;
use nodewarden::core::taint::{Effect, Toleration};

const AFTER: Duration = Duration::from_secs(40);
const BASE: Duration = Duration::from_secs(400 * 24 * 3600);

/// The plans of a node cut off with no taint seen and no peers asked.
fn plan_unasked(pods: &[FencePod], contact: Duration, policy: &FencePolicy) -> Vec<PodPlan> {
    plan(
        pods,
        contact,
        None,
        None,
        policy,
        &QuorumVerdict::NotConsulted,
    )
}

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

fn wall(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs)
}

/// `secs` after the start, with the wall clock `step` seconds ahead (negative: behind) of where
/// the monotonic clock puts it.
fn at(secs: u64, step: i64) -> Moment {
    let w = wall(secs);
    Moment {
        mono: BASE + s(secs),
        wall: if step >= 0 {
            w + s(step as u64)
        } else {
            w - s(step.unsigned_abs())
        },
    }
}

/// `n` milliseconds after the start.
fn ms(n: u64) -> Duration {
    BASE + Duration::from_millis(n)
}

/// The fence task's write cadence.
fn cadence() -> Cadence {
    Cadence {
        coalesce: Duration::from_millis(250),
        contact_every: s(5),
        renew: s(10),
    }
}

/// Enforcing, with a 40 s grace period, 2 s of margin and grace periods capped at 30 s.
fn enforce() -> FencePolicy {
    FencePolicy {
        node_monitor_grace_period: s(40),
        node_monitor_period: Duration::ZERO,
        safety_margin: s(2),
        grace_cap: s(30),
        mode: Mode::Enforce,
        kubelet_lag: Duration::ZERO,
    }
}

fn own(secs: u64) -> Option<Duration> {
    Some(BASE + s(secs))
}

#[test]
fn reachable_cut_off_and_back_as_a_sequence_of_ticks() {
    let mut link = Link::resume(None, None, at(0, 0));
    // (tick, own contact, failed, reachable, cut off, transition)
    type Row = (u64, Option<u64>, bool, bool, bool, Option<&'static str>);
    let rows: &[Row] = &[
        (0, None, false, false, false, None),
        (1, Some(1), false, true, false, None),
        (30, Some(30), false, true, false, None),
        // The last write stored at 30 s: reachable for `unreachableAfter`, then cut off.
        (70, Some(30), true, true, false, None),
        (71, Some(30), true, false, true, Some("cut off")),
        (90, Some(30), true, false, true, None),
        // A write stored again: reachable, the partition ends once.
        (95, Some(94), false, true, false, Some("reconnected")),
        (96, Some(95), false, true, false, None),
    ];
    for (tick, contact, failed, reachable, cut_off, transition) in rows {
        let seen = Seen {
            own: contact.and_then(own),
            heartbeat: None,
            failed: *failed,
        };
        let j = link.judge(&seen, at(*tick, 0), AFTER);
        assert_eq!(
            (j.reachable, j.cut_off),
            (*reachable, *cut_off),
            "at {tick}s"
        );
        let got = j.transition.map(|t| match t {
            Transition::CutOff => "cut off",
            Transition::Reconnected { .. } => "reconnected",
        });
        assert_eq!(got, *transition, "at {tick}s");
    }
    assert_eq!(link.cut_off_since(), None);
}

#[test]
fn a_partition_on_record_goes_on_at_once_and_a_clean_start_first_gives_the_server_its_chance() {
    let last = wall(0);
    let start = at(600, 0);
    // The previous run ended cut off: fencing goes on at the first tick.
    let mut link = Link::resume(Some(last), Some(wall(41)), start);
    let j = link.judge(&Seen::default(), start, AFTER);
    assert!(j.cut_off && j.transition.is_none(), "{j:?}");
    assert_eq!(j.last_contact, Some(BASE + s(0)));
    // A clean stop long ago: not cut off until a request fails or `unreachableAfter` passes.
    let mut link = Link::resume(Some(last), None, start);
    assert!(!link.judge(&Seen::default(), at(600, 0), AFTER).cut_off);
    assert!(!link.judge(&Seen::default(), at(640, 0), AFTER).cut_off);
    let failed = Seen {
        failed: true,
        ..Seen::default()
    };
    let j = link.judge(&failed, at(641, 0), AFTER);
    assert!(j.cut_off, "a failed request after a clean start");
    assert_eq!(j.transition, Some(Transition::CutOff));
    let mut link = Link::resume(Some(last), None, start);
    assert!(link.judge(&Seen::default(), at(641, 0), AFTER).cut_off);
    // Never any contact: no moment to count from, never cut off.
    let mut link = Link::resume(None, None, start);
    assert!(!link.judge(&failed, at(10_000, 0), AFTER).cut_off);
}

/// A failed request of a node whose Node as last seen is not Ready cuts it off at once, 2 s after
/// its last contact rather than `unreachableAfter` (docs/fence.md §2, *A Node not Ready*); the
/// deadlines still count from that contact, and the next contact ends the partition.
#[test]
fn a_failure_cuts_a_node_not_ready_off_at_once() {
    let failed_at = |not_ready: bool| {
        let mut link = Link::resume(None, None, at(0, 0));
        link.note_not_ready(not_ready);
        let contact = Seen {
            own: own(30),
            ..Seen::default()
        };
        assert!(link.judge(&contact, at(30, 0), AFTER).reachable);
        let failed = Seen {
            failed: true,
            ..contact
        };
        link.judge(&failed, at(32, 0), AFTER)
    };
    let j = failed_at(true);
    assert!(j.cut_off && !j.reachable, "{j:?}");
    let mut link = Link::resume(None, None, at(0, 0));
    assert_eq!(link.cut_at_once(), None);
    link.note_not_ready(true);
    assert_eq!(
        link.cut_at_once(),
        Some("a request failed while our Node is not Ready")
    );
    assert_eq!(j.transition, Some(Transition::CutOff));
    assert_eq!(j.counted, own(30));
    // A Ready one waits for `unreachableAfter`, as before.
    let j = failed_at(false);
    assert!(j.reachable && !j.cut_off, "{j:?}");
    // Contact again ends it.
    let mut link = Link::resume(None, None, at(0, 0));
    link.note_not_ready(true);
    let failed = Seen {
        own: own(30),
        heartbeat: None,
        failed: true,
    };
    assert!(link.judge(&failed, at(32, 0), AFTER).cut_off);
    let back = Seen {
        own: own(33),
        heartbeat: None,
        failed: false,
    };
    let j = link.judge(&back, at(33, 0), AFTER);
    assert!(j.reachable && !j.cut_off, "{j:?}");
    assert!(matches!(j.transition, Some(Transition::Reconnected { .. })));
}

#[test]
fn a_heartbeat_counts_as_contact_no_later_than_it_arrived() {
    let mut link = Link::resume(None, None, at(0, 0));
    // Stamped at 10 s, arrived at 11 s.
    let hb = Heartbeat {
        stamped: wall(10),
        arrived: BASE + s(11),
    };
    let seen = Seen {
        own: None,
        heartbeat: Some(hb),
        failed: false,
    };
    let j = link.judge(&seen, at(12, 0), AFTER);
    assert_eq!(j.last_contact, Some(BASE + s(10)));
    assert!(j.moved);
    // Stamped in the future (the writer's clock runs an hour ahead): it counts at its arrival,
    // and keeps counting there, so the node is cut off on time.
    let mut link = Link::resume(None, None, at(0, 0));
    let ahead = Seen {
        heartbeat: Some(Heartbeat {
            stamped: wall(3_600 + 20),
            arrived: BASE + s(20),
        }),
        ..seen
    };
    for tick in [20, 40, 60] {
        assert_eq!(
            link.judge(&ahead, at(tick, 0), AFTER).last_contact,
            Some(BASE + s(20)),
            "at {tick}s"
        );
    }
    let failed = Seen {
        failed: true,
        ..ahead
    };
    assert!(link.judge(&failed, at(61, 0), AFTER).cut_off);
}

/// A restart whose previous run was last heard at 10 s starts at 90 s; its Node's Ready
/// heartbeat reads 20 s, and the peers read its kubelet's renewal at 40 s (39 s less the slack,
/// `quorum::kubelet_renewal`), unheard since: a failure (`quorum::kubelet_unheard`), and the
/// fence counts from the later of the two heartbeats, not from the contact on disk. A stamp in
/// the future proves no more than its arrival.
#[test]
fn a_restart_counts_from_the_later_heartbeat_a_kubelet_renewal_read_by_peers_included() {
    let now = at(90, 0);
    let node = Heartbeat {
        stamped: wall(20),
        arrived: BASE + s(90),
    };
    let read = Heartbeat {
        stamped: wall(39),
        arrived: BASE + s(90),
    };
    assert_eq!(Heartbeat::latest(Some(node), Some(read), now), Some(read));
    assert_eq!(Heartbeat::latest(Some(read), Some(node), now), Some(read));
    assert_eq!(Heartbeat::latest(None, Some(node), now), Some(node));
    assert_eq!(Heartbeat::latest(Some(node), None, now), Some(node));
    assert_eq!(Heartbeat::latest(None, None, now), None);
    let ahead = Heartbeat {
        stamped: wall(3_600),
        arrived: BASE + s(30),
    };
    assert_eq!(Heartbeat::latest(Some(ahead), Some(read), now), Some(read));
    let mut link = Link::resume(Some(wall(10)), None, now);
    let seen = Seen {
        own: None,
        heartbeat: Heartbeat::latest(Some(node), Some(read), now),
        failed: true,
    };
    let j = link.judge(&seen, now, AFTER);
    assert!(j.cut_off);
    assert_eq!(j.counted, Some(BASE + s(39)));
    assert_eq!(j.transition, Some(Transition::CutOff));
}

/// Issue 13's clock-step test at the decision level: the machine's wall clock steps an hour (or
/// two) forward and back while the monotonic clock runs on. The kubelet stamps the Node's
/// heartbeat with the stepped clock; the agent's own wall time is either derived from its
/// monotonic clock (as `agent::clock` does) or stepped too. Reachability and the partition's start
/// land on the same ticks as without steps, and each stop lands within the heartbeat's delivery
/// delay after (1 s here) or one interval between our own writes before (10 s) its steady
/// instant, whatever the size of the step — never an hour late, as a future stamp taken for
/// fresh contact on every tick would make it.
#[test]
fn wall_clock_steps_both_ways_move_no_decision_by_more_than_a_heartbeat() {
    type Trace = (Vec<(u64, bool, bool)>, Vec<(String, bool, u64)>);
    let run = |steps: &[(u64, i64)], agent_steps: bool| -> Trace {
        let step_at = |tick: u64| {
            steps
                .iter()
                .rev()
                .find(|(from, _)| tick >= *from)
                .map_or(0, |(_, d)| *d)
        };
        let mut link = Link::resume(None, None, at(0, 0));
        let mut taken = Steps::default();
        let pods = vec![pod("a", Some(0)), pod("b", Some(30)), pod("c", None)];
        let policy = enforce();
        let (mut judged, mut stops) = (Vec::new(), Vec::new());
        for tick in 0..300u64 {
            let now = at(tick, if agent_steps { step_at(tick) } else { 0 });
            // Our writes stored every 10 s until 100 s, then every request fails; the kubelet's
            // heartbeat, stamped with the machine's clock, arrives a second after each stamp.
            let hb_tick = tick.saturating_sub(1).min(100);
            let seen = Seen {
                own: Some(BASE + s((tick.min(100) / 10) * 10)),
                heartbeat: Some(Heartbeat {
                    stamped: at(hb_tick, step_at(hb_tick)).wall,
                    arrived: BASE + s(hb_tick + 1),
                }),
                failed: tick > 100,
            };
            let j = link.judge(&seen, now, AFTER);
            judged.push((tick, j.reachable, j.cut_off));
            if let (true, Some(contact)) = (j.cut_off, j.last_contact) {
                let plans = plan_unasked(&pods, contact, &policy);
                for d in taken.due(&plans, &BTreeSet::new(), now.mono) {
                    stops.push((d.uid, d.step == Step::Kill, tick));
                }
            }
        }
        (judged, stops)
    };
    let (steady_judged, steady_stops) = run(&[], false);
    assert!(
        steady_judged.iter().any(|(_, _, cut)| *cut),
        "never cut off"
    );
    assert_eq!(
        steady_stops.len(),
        6,
        "a, b and c: SIGTERM and kill each: {steady_stops:?}"
    );
    for steps in [
        vec![(50, 3_600)],
        vec![(50, -3_600)],
        vec![(20, 3_600), (60, -3_600), (130, 0)],
        vec![(20, -3_600), (90, 3_600), (150, -7_200)],
    ] {
        for agent_steps in [false, true] {
            let (judged, stops) = run(&steps, agent_steps);
            let case = format!("steps {steps:?}, agent clock stepped: {agent_steps}");
            let reachable = |j: &[(u64, bool, bool)]| j.iter().map(|r| r.1).collect::<Vec<_>>();
            assert_eq!(reachable(&judged), reachable(&steady_judged), "{case}");
            // Cut off from one tick on, without flapping, within the same bounds.
            let first_cut =
                |j: &[(u64, bool, bool)]| j.iter().position(|r| r.2).unwrap_or(0) as u64;
            let (from, steady_from) = (first_cut(&judged), first_cut(&steady_judged));
            assert!(
                judged[from as usize..].iter().all(|r| r.2),
                "{case}: cut off flaps"
            );
            assert!(
                from <= steady_from + 1 && from + 10 >= steady_from,
                "{case}: cut off at {from}s, steady at {steady_from}s"
            );
            assert_eq!(stops.len(), steady_stops.len(), "{case}: {stops:?}");
            for ((uid, kill, tick), (_, _, steady)) in stops.iter().zip(&steady_stops) {
                assert!(
                    *tick <= steady + 1 && *tick + 10 >= *steady,
                    "{case}: {uid} kill={kill} at {tick}s, steady at {steady}s"
                );
            }
        }
    }
}

fn pod(uid: &str, toleration_seconds: Option<i64>) -> FencePod {
    FencePod {
        uid: uid.into(),
        namespace: "default".into(),
        name: uid.into(),
        tolerations: toleration_seconds
            .map(|t| Toleration {
                key: "node.kubernetes.io/unreachable".into(),
                operator: nodewarden::core::taint::Operator::Exists,
                value: String::new(),
                effect: Some(Effect::NoExecute),
                toleration_seconds: Some(t),
            })
            .into_iter()
            .collect(),
        termination_grace_seconds: 10,
        owner_kind: Some("ReplicaSet".into()),
        static_or_mirror: false,
        qos: QosClass::BestEffort,
        opted_out: false,
        terminal: false,
        created: None,
    }
}

#[test]
fn each_step_is_due_once_at_its_instant_and_a_pod_fenced_before_a_restart_is_done() {
    let policy = enforce();
    let contact = BASE;
    let pods = vec![pod("a", Some(0)), pod("b", Some(30)), pod("done", Some(0))];
    let plans = plan_unasked(&pods, contact, &policy);
    let fenced: BTreeSet<String> = ["done".to_string()].into();
    let mut steps = Steps::default();
    // a: eviction 40 s, kill 38 s, SIGTERM 28 s; b: eviction 70 s, kill 68 s, SIGTERM 58 s.
    type Row = (u64, &'static [(&'static str, Step, u64)]);
    let table: &[Row] = &[
        (27, &[]),
        (28, &[("a", Step::Sigterm, 0)]),
        (29, &[]),
        // A tick late: both remaining steps of a at once, with their lateness.
        (60, &[("a", Step::Kill, 22), ("b", Step::Sigterm, 2)]),
        (68, &[("b", Step::Kill, 0)]),
        (500, &[]),
    ];
    for (tick, want) in table {
        let got: Vec<(String, Step, u64)> = steps
            .due(&plans, &fenced, contact + s(*tick))
            .into_iter()
            .map(|d| (d.uid, d.step, d.late.as_secs()))
            .collect();
        let want: Vec<(String, Step, u64)> = want
            .iter()
            .map(|(u, st, l)| (u.to_string(), *st, *l))
            .collect();
        assert_eq!(got, want, "at {tick}s");
    }
    // The next partition starts from nothing taken.
    steps.clear();
    assert_eq!(steps.due(&plans, &fenced, contact + s(500)).len(), 4);
    // Dry-run plans are due the same way, marked dry-run.
    let dry = plan(
        &pods,
        contact,
        None,
        None,
        &FencePolicy {
            mode: Mode::DryRun,
            kubelet_lag: Duration::ZERO,
            ..policy
        },
        &QuorumVerdict::NotConsulted,
    );
    let mut steps = Steps::default();
    let due = steps.due(&dry, &BTreeSet::new(), contact + s(100));
    assert_eq!(due.len(), 6);
    assert!(due.iter().all(|d| d.dry_run));
    // Held plans are never due.
    let held = plan(
        &pods,
        contact,
        None,
        None,
        &policy,
        &QuorumVerdict::Hold {
            reason: "partial disruption".into(),
            stop_due: None,
        },
    );
    assert!(
        Steps::default()
            .due(&held, &BTreeSet::new(), contact + s(500))
            .is_empty()
    );
}

/// While the peers read nothing from the API server they say they reach, a SIGTERM waits
/// (`Steps::wait_sigterm`, docs/fence.md §5, *The SIGTERM waits for a read*): it goes out as soon
/// as the wait ends, told as late as it is, or with its kill, which keeps its instant.
#[test]
fn a_waiting_sigterm_goes_out_when_the_wait_ends_or_with_its_kill_which_keeps_its_time() {
    let policy = enforce();
    let contact = BASE;
    let pods = vec![pod("a", Some(0)), pod("b", Some(30))];
    let plans = plan_unasked(&pods, contact, &policy);
    let none = BTreeSet::new();
    // a: SIGTERM 28 s, kill 38 s; b: SIGTERM 58 s, kill 68 s.
    let mut steps = Steps::default();
    assert!(steps.wait_sigterm(true), "a change");
    assert!(!steps.wait_sigterm(true), "no change");
    assert_eq!(steps.next_due(&plans, &none), Some(contact + s(38)));
    assert!(steps.due(&plans, &none, contact + s(37)).is_empty());
    let at = |steps: &mut Steps, tick: u64| -> Vec<(String, Step, u64)> {
        steps
            .due(&plans, &none, contact + s(tick))
            .into_iter()
            .map(|d| (d.uid, d.step, d.late.as_secs()))
            .collect()
    };
    // Still waiting at a's kill: its SIGTERM goes with it, 10 s after its plan.
    assert_eq!(
        at(&mut steps, 38),
        [
            ("a".to_string(), Step::Sigterm, 10),
            ("a".to_string(), Step::Kill, 0)
        ]
    );
    assert_eq!(steps.next_due(&plans, &none), Some(contact + s(68)));
    assert!(at(&mut steps, 60).is_empty(), "b's SIGTERM waits");
    // The wait ends: b's SIGTERM is due at once, late by as much as it waited.
    assert!(steps.wait_sigterm(false));
    assert_eq!(steps.next_due(&plans, &none), Some(contact + s(58)));
    assert_eq!(at(&mut steps, 61), [("b".to_string(), Step::Sigterm, 3)]);
    assert_eq!(at(&mut steps, 68), [("b".to_string(), Step::Kill, 0)]);
    // A new partition starts without the wait.
    steps.wait_sigterm(true);
    steps.clear();
    assert_eq!(at(&mut steps, 28), [("a".to_string(), Step::Sigterm, 0)]);
}

#[test]
fn writes_are_coalesced_while_connected_at_once_while_cut_off_and_retried_at_the_same_pace() {
    let cadence = cadence();
    let mut d = Durability::new();
    // A fresh task writes its state at once.
    assert_eq!(d.due(false, ms(0), cadence), Write::State);
    d.written(Write::State, true, ms(0));
    assert!(!d.pending());
    assert_eq!(d.due(false, ms(50), cadence), Write::Nothing);
    // A change 100 ms after a write waits for the coalescing window; cut off, it does not.
    d.changed();
    assert_eq!(d.due(false, ms(100), cadence), Write::Nothing);
    assert_eq!(d.due(true, ms(100), cadence), Write::State);
    assert_eq!(d.due(false, ms(250), cadence), Write::State);
    d.written(Write::State, true, ms(250));
    // The contact alone moves: its own file, at most every `contact_every`.
    d.contact_moved();
    assert_eq!(d.due(false, ms(300), cadence), Write::Nothing);
    assert_eq!(d.due(false, ms(5_250), cadence), Write::Contact);
    d.written(Write::Contact, true, ms(5_250));
    assert!(!d.pending());
    // A failed state write stays due, retried after the window, not on every tick.
    d.changed();
    assert_eq!(d.due(false, ms(6_000), cadence), Write::State);
    d.written(Write::State, false, ms(6_000));
    assert!(d.pending());
    assert_eq!(d.due(false, ms(6_050), cadence), Write::Nothing);
    assert_eq!(d.due(false, ms(6_250), cadence), Write::State);
    d.written(Write::State, true, ms(6_250));
    assert!(!d.pending());
    // A change and a moved contact together: one state write covers both.
    d.changed();
    d.contact_moved();
    assert_eq!(d.due(false, ms(7_000), cadence), Write::State);
    d.written(Write::State, true, ms(7_000));
    assert_eq!(d.due(false, ms(20_000), cadence), Write::Nothing);
    // Stopping writes what is unwritten at once, whatever the cadence.
    assert_eq!(d.unwritten(), Write::Nothing);
    d.contact_moved();
    assert_eq!(d.due(false, ms(7_010), cadence), Write::Nothing);
    assert_eq!(d.unwritten(), Write::Contact);
    d.changed();
    assert_eq!(d.due(false, ms(7_010), cadence), Write::Nothing);
    assert_eq!(d.unwritten(), Write::State);
}

#[test]
fn failed_api_work_backs_off_capped_and_a_success_clears_it() {
    let cap = s(10);
    let mut r = Retry::new(
        Backoff {
            base: Duration::from_millis(500),
            cap,
        },
        Jitter::new(7),
    );
    let mut now = BASE;
    assert!(r.due(now));
    // A round that did not run changes nothing.
    r.next(false, true, now);
    assert!(r.due(now));
    let mut last_wait = Duration::ZERO;
    for attempt in 0..12 {
        r.next(true, true, now);
        assert!(
            !r.due(now),
            "attempt {attempt}: due at once after a failure"
        );
        let mut wait = Duration::ZERO;
        while !r.due(now + wait) {
            wait += Duration::from_millis(10);
            assert!(wait <= cap, "attempt {attempt}: waits past the cap");
        }
        assert!(
            wait >= Duration::from_millis(250),
            "attempt {attempt}: {wait:?}"
        );
        last_wait = wait;
        now += wait;
    }
    assert!(
        last_wait >= cap / 2,
        "the backoff never grew: {last_wait:?}"
    );
    r.next(true, false, now);
    assert!(r.due(now));
}

/// `mono` on the fence's scale, with the wall clock where the monotonic clock puts it.
fn moment(mono: Duration) -> Moment {
    Moment {
        mono,
        wall: wall(0) + mono.saturating_sub(BASE),
    }
}

/// The fence task sleeps from one tick until `Link::next_change` unless an input moves: that is
/// only safe if the judgement stays what it was until that instant and changes at it.
#[test]
fn a_judgement_holds_until_its_next_change_and_changes_exactly_then() {
    // (name, previous run's contact, start (s), own contact, a Ready heartbeat's stamp, failed,
    // tick (s), the change expected: seconds after the start, or none)
    type Case = (
        &'static str,
        Option<u64>,
        u64,
        Option<u64>,
        Option<u64>,
        bool,
        u64,
        Option<u64>,
    );
    let cases: &[Case] = &[
        ("connected", None, 0, Some(5), None, false, 10, Some(45)),
        (
            "a heartbeat later than our own write",
            None,
            0,
            Some(5),
            Some(20),
            false,
            30,
            Some(45),
        ),
        (
            "a clean start after a long stop: the server's chance",
            Some(0),
            3600,
            None,
            None,
            false,
            3601,
            Some(3640),
        ),
        (
            "never any contact: time alone changes nothing",
            None,
            0,
            None,
            None,
            false,
            1,
            None,
        ),
        (
            "own contact expired, a heartbeat keeps it from cut off",
            None,
            0,
            Some(5),
            Some(30),
            true,
            50,
            Some(70),
        ),
    ];
    for &(name, before, start, own_s, beat, failed, tick, want) in cases {
        let mut link = Link::resume(before.map(wall), None, at(start, 0));
        let seen = Seen {
            own: own_s.and_then(own),
            heartbeat: beat.map(|b| Heartbeat {
                stamped: wall(b),
                arrived: BASE + s(b),
            }),
            failed,
        };
        let now = BASE + s(tick);
        let judged = link.judge(&seen, moment(now), AFTER);
        let next = link.next_change(&seen, now, AFTER);
        assert_eq!(
            next.map(|t| t.as_secs()),
            want.map(|w| w + BASE.as_secs()),
            "{name}"
        );
        let Some(next) = next else {
            // Nothing changes for a day.
            for h in 1..=24 {
                let j = link.clone().judge(&seen, moment(now + s(h * 3600)), AFTER);
                assert_eq!(
                    (j.reachable, j.cut_off),
                    (judged.reachable, judged.cut_off),
                    "{name}"
                );
            }
            continue;
        };
        let span = next - now;
        for i in 0..200u32 {
            let t = now + span * i / 200;
            let j = link.clone().judge(&seen, moment(t), AFTER);
            assert_eq!(
                (j.reachable, j.cut_off),
                (judged.reachable, judged.cut_off),
                "{name}: changed at {t:?}, before {next:?}"
            );
        }
        let last = link
            .clone()
            .judge(&seen, moment(next - Duration::from_nanos(1)), AFTER);
        assert_eq!(
            (last.reachable, last.cut_off),
            (judged.reachable, judged.cut_off),
            "{name}"
        );
        let then = link.clone().judge(&seen, moment(next), AFTER);
        assert_ne!(
            (then.reachable, then.cut_off),
            (judged.reachable, judged.cut_off),
            "{name}: nothing changed at {next:?}"
        );
    }
    // Cut off: only new contact ends it, time does not.
    let mut link = Link::resume(None, None, at(0, 0));
    let seen = Seen {
        own: own(1),
        heartbeat: None,
        failed: true,
    };
    assert!(link.judge(&seen, at(60, 0), AFTER).cut_off);
    assert_eq!(link.next_change(&seen, BASE + s(60), AFTER), None);
}

/// The fence task sleeps until `Durability::next_due`: nothing is due before it, something at it.
#[test]
fn a_write_is_due_exactly_from_its_next_due_instant() {
    let cadence = cadence();
    let check = |d: &Durability, now: Duration, name: &str| {
        let next = d.next_due(false, cadence);
        let Some(next) = next else {
            for n in [0, 1, 10, 1000, 100_000] {
                assert_eq!(d.due(false, now + s(n), cadence), Write::Nothing, "{name}");
            }
            return;
        };
        if next > now {
            assert_eq!(
                d.due(false, next - Duration::from_millis(1), cadence),
                Write::Nothing,
                "{name}"
            );
            assert_eq!(d.due(false, now, cadence), Write::Nothing, "{name}");
        }
        assert_ne!(
            d.due(false, next.max(now), cadence),
            Write::Nothing,
            "{name}"
        );
        // Cut off, a change is due at once.
        if d.due(true, now, cadence) != Write::Nothing {
            assert!(
                d.next_due(true, cadence).is_some_and(|t| t <= now),
                "{name}"
            );
        }
    };
    let mut d = Durability::new();
    check(&d, ms(0), "fresh");
    d.written(Write::State, true, ms(0));
    check(&d, ms(10), "all written");
    d.changed();
    check(&d, ms(100), "a change within the window");
    d.written(Write::State, true, ms(250));
    d.contact_moved();
    check(&d, ms(300), "the contact alone");
    d.changed();
    check(&d, ms(400), "a change and the contact");
    d.written(Write::State, false, ms(500));
    check(&d, ms(510), "a failed write");
    d.written(Write::State, true, ms(750));
    d.written(Write::Contact, true, ms(751));
    d.contact_moved();
    d.changed();
    d.written(Write::Contact, true, ms(9_000));
    check(
        &d,
        ms(9_001),
        "the state dirty after the contact was written",
    );
    d.written(Write::State, true, ms(9_250));
    d.unanswered(Some(s(12)));
    check(&d, ms(9_300), "a wait never written");
    d.written(Write::Contact, true, ms(9_300));
    check(&d, ms(9_400), "a wait written 100 ms ago");
    d.unanswered(None);
    check(&d, ms(9_500), "no wait any more, one on disk");
    d.contact_moved();
    check(&d, ms(9_600), "the contact moved past the wait on disk");
}

/// A run that waits for an answer records the wait with its contact once a second, and a
/// contact that moves past a recorded wait is written at once; a run that waits for nothing
/// writes nothing more than before.
#[test]
fn a_wait_without_an_answer_is_written_with_the_contact_once_a_second() {
    let cadence = cadence();
    let mut d = Durability::new();
    d.written(Write::State, true, ms(0));
    // Connected: the contact moves, no wait: one contact write per `contact_every`.
    d.contact_moved();
    d.unanswered(None);
    assert_eq!(d.due(false, ms(100), cadence), Write::Nothing);
    // Waiting: the contact file with the wait, at once, then once a second.
    d.unanswered(Some(s(12)));
    assert_eq!(d.due(false, ms(200), cadence), Write::Contact);
    assert_eq!(d.record(), Some(s(12)));
    d.written(Write::Contact, true, ms(200));
    d.unanswered(Some(Duration::from_millis(12_500)));
    assert_eq!(d.due(false, ms(700), cadence), Write::Nothing);
    assert_eq!(d.due(false, ms(1_200), cadence), Write::Contact);
    // A failed write is retried a second later, not on every tick.
    d.written(Write::Contact, false, ms(1_200));
    assert_eq!(d.due(false, ms(1_300), cadence), Write::Nothing);
    assert_eq!(d.due(false, ms(2_200), cadence), Write::Contact);
    d.written(Write::Contact, true, ms(2_200));
    // An answer: no wait any more, and the contact moved: written within a second over the
    // wait on disk, which counts from the old contact, not at the contact's own pace.
    d.unanswered(None);
    d.contact_moved();
    assert_eq!(d.due(false, ms(2_300), cadence), Write::Nothing);
    assert_eq!(d.due(false, ms(3_200), cadence), Write::Contact);
    assert_eq!(d.record(), None);
    d.written(Write::Contact, true, ms(3_200));
    // Nothing on disk to supersede: the usual pace again.
    d.contact_moved();
    assert_eq!(d.due(false, ms(3_300), cadence), Write::Nothing);
    assert_eq!(d.due(false, ms(7_300), cadence), Write::Nothing);
    assert_eq!(d.due(false, ms(8_200), cadence), Write::Contact);
    d.written(Write::Contact, true, ms(8_200));
    // Stopping while waiting writes the wait.
    d.unanswered(Some(s(13)));
    assert_eq!(d.unwritten(), Write::Contact);
}

/// An answer is overdue once the next renewal had its second to be answered: a renew interval
/// after the last contact, or the kubelet's lag after the first contact past a failure, when the
/// agent's renewals wait that long (`next_renewal`); never sooner, so a connected agent, whose
/// contact moves with every renewal, records no wait.
#[test]
fn an_answer_is_overdue_a_second_after_the_next_renewal() {
    let renew = s(10);
    let lag = Duration::from_millis(10_400);
    let mut link = Link::resume(None, None, at(0, 0)).with_kubelet_lag(lag);
    let seen = |own_at: u64, failed: bool| Seen {
        own: own(own_at),
        heartbeat: None,
        failed,
    };
    link.judge(&seen(5, false), at(5, 0), AFTER);
    // A contact: the next renewal 10 s later, overdue a second after that.
    assert_eq!(
        link.unanswered_from(renew),
        Some(BASE + s(16) + Duration::from_nanos(1))
    );
    assert_eq!(link.unanswered(BASE + s(16), renew), None);
    assert_eq!(link.unanswered(BASE + s(17), renew), Some(s(12)));
    // A failure, then the first contact past it: the next renewal waits the kubelet's lag.
    link.judge(&seen(5, true), at(20, 0), AFTER);
    link.judge(&seen(30, false), at(30, 0), AFTER);
    assert_eq!(
        link.unanswered_from(renew),
        Some(BASE + s(30) + lag + s(1) + Duration::from_nanos(1))
    );
    assert_eq!(link.unanswered(BASE + s(41), renew), None);
    // The one after it: a renew interval again.
    link.judge(&seen(40, false), at(40, 0), AFTER);
    assert_eq!(
        link.unanswered_from(renew),
        Some(BASE + s(51) + Duration::from_nanos(1))
    );
}

/// How long a run went without an answer, as it hands it on (`Link::unanswered`), and a run that
/// takes it over counting its own wait on top (`Link::with_unanswered`).
#[test]
fn a_wait_without_an_answer_is_handed_on_to_the_next_run() {
    let renew = s(10);
    // The contact on disk is 100 s old; the previous runs waited 30 s of it without an answer.
    let start = at(100, 0);
    let mut link = Link::resume(Some(wall(0)), None, start).with_unanswered(s(30));
    // At its start the wait goes on from 30 s (and is recorded at once, for the run after).
    assert_eq!(link.unanswered(BASE + s(100), renew), Some(s(30)));
    // Cut off once 30 s and its own wait pass `unreachableAfter` (40 s), not 40 s after its start.
    assert!(!link.judge(&Seen::default(), at(110, 0), AFTER).cut_off);
    assert_eq!(
        link.next_change(&Seen::default(), BASE + s(110), AFTER),
        Some(BASE + s(110) + Duration::from_nanos(1))
    );
    let j = link.judge(&Seen::default(), at(111, 0), AFTER);
    assert!(
        j.cut_off && j.transition == Some(Transition::CutOff),
        "{j:?}"
    );
    // Cut off, the partition is on record: no wait to hand on.
    assert_eq!(link.unanswered(BASE + s(111), renew), None);
    // Without a wait handed on: `unreachableAfter` from the start.
    let mut fresh = Link::resume(Some(wall(0)), None, start);
    assert!(!fresh.judge(&Seen::default(), at(140, 0), AFTER).cut_off);
    assert!(fresh.judge(&Seen::default(), at(141, 0), AFTER).cut_off);
    // A start with no answer yet records its wait once it is a second long.
    let fresh = Link::resume(Some(wall(0)), None, start);
    assert_eq!(fresh.unanswered(BASE + s(100) + ms_(900), renew), None);
    assert_eq!(
        fresh.unanswered(BASE + s(102), renew),
        Some(s(2)),
        "two seconds of its own"
    );
    assert_eq!(
        fresh.unanswered_from(renew),
        Some(BASE + s(101) + Duration::from_nanos(1))
    );
    // Once this run has contact, a wait counts from it, and only once an answer is overdue:
    // connected, the contact moves every renewal and nothing is recorded.
    let mut link = Link::resume(Some(wall(0)), None, start).with_unanswered(s(30));
    let seen = Seen {
        own: Some(BASE + s(120)),
        ..Seen::default()
    };
    assert!(link.judge(&seen, at(120, 0), AFTER).reachable);
    assert_eq!(link.unanswered(BASE + s(130), renew), None);
    assert_eq!(link.unanswered(BASE + s(132), renew), Some(s(12)));
    assert_eq!(
        link.unanswered_from(renew),
        Some(BASE + s(131) + Duration::from_nanos(1))
    );
    // Never any contact: nothing to count from.
    let never = Link::resume(None, None, start).with_unanswered(s(30));
    assert_eq!(never.unanswered(BASE + s(200), renew), None);
    // A partition on record: cut off at once, no wait.
    let on_record = Link::resume(Some(wall(0)), Some(wall(50)), start).with_unanswered(s(30));
    assert_eq!(on_record.unanswered(BASE + s(101), renew), None);
}

fn ms_(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// While cut off the fence task sleeps until `Steps::next_due`: a task that ticks only at those
/// instants takes every step at its planned instant, exactly as one ticking every 50 ms does
/// (give or take that tick), and nothing is due in between.
#[test]
fn ticking_only_when_the_next_step_is_due_takes_every_step_on_time() {
    let policy = enforce();
    let contact = BASE;
    let pods: Vec<FencePod> = (0..40)
        .map(|i| match i % 5 {
            0 => pod(&format!("p{i}"), None),
            _ => pod(&format!("p{i}"), Some(i * 7 % 90)),
        })
        .chain([pod("done", Some(0))])
        .collect();
    let plans = plan_unasked(&pods, contact, &policy);
    let fenced: BTreeSet<String> = ["done".to_string()].into();

    let mut by_sleeping = Steps::default();
    let mut taken = Vec::new();
    let mut now = contact;
    for _ in 0..1000 {
        let Some(next) = by_sleeping.next_due(&plans, &fenced) else {
            break;
        };
        assert!(next >= now, "a step due in the past was left behind");
        // Nothing is due just before the instant it names.
        if next > now {
            let mut probe = by_sleeping.clone();
            assert!(
                probe
                    .due(&plans, &fenced, next - Duration::from_millis(1))
                    .is_empty()
            );
        }
        now = next;
        let due = by_sleeping.due(&plans, &fenced, now);
        assert!(!due.is_empty(), "woke at {now:?} for nothing");
        taken.extend(
            due.into_iter()
                .map(|d| (d.uid, d.step, now - contact, d.late)),
        );
    }
    assert!(
        taken.iter().all(|t| t.3.is_zero()),
        "every step at its instant"
    );

    let mut by_ticking = Steps::default();
    let mut ticked = Vec::new();
    let tick = Duration::from_millis(50);
    for i in 0..(200_000 / 50) {
        let at = contact + tick * i;
        ticked.extend(
            by_ticking
                .due(&plans, &fenced, at)
                .into_iter()
                .map(|d| (d.uid, d.step, at - contact - d.late)),
        );
    }
    let key = |t: &(String, Step, Duration)| (t.0.clone(), t.1 == Step::Kill, t.2);
    let mut a: Vec<_> = taken.into_iter().map(|t| (t.0, t.1, t.2)).collect();
    a.sort_by_key(key);
    ticked.sort_by_key(key);
    assert_eq!(a, ticked, "the same steps at the same planned instants");
    assert!(a.len() > 40, "a partition with steps to take: {}", a.len());
    assert_eq!(by_sleeping.next_due(&plans, &fenced), None, "all taken");
}

/// The fence task sleeps until `next_wake` (or an input moves): the earliest thing pending,
/// each source only where it applies, and `None` when only a new observation can bring work.
#[test]
fn the_next_wake_is_the_earliest_deadline_pending_and_none_when_nothing_is() {
    let policy = enforce();
    // a: SIGTERM at 28 s, kill at 38 s; b: SIGTERM at 58 s (see the steps' table above).
    let plans = plan_unasked(&[pod("a", Some(0)), pod("b", Some(30))], BASE, &policy);
    let none: BTreeSet<String> = BTreeSet::new();
    let fenced_a: BTreeSet<String> = ["a".to_string()].into();
    let now = BASE + s(10);
    let clean = Link::resume(None, None, at(0, 0));
    let partitioned = Link::resume(Some(wall(0)), Some(wall(40)), at(10, 0));
    // Connected, our own write stored at 5 s: no longer reachable just past 45 s.
    let mut heard = Link::resume(None, None, at(0, 0));
    let heard_seen = Seen {
        own: own(5),
        heartbeat: None,
        failed: false,
    };
    heard.judge(&heard_seen, at(10, 0), AFTER);
    let quiet = Seen::default();
    let judged = |reachable: bool, cut_off: bool| Judged {
        last_contact: None,
        counted: None,
        moved: false,
        reachable,
        cut_off,
        transition: None,
    };
    let (connected, reachable, cut_off) = (
        judged(false, false),
        judged(true, false),
        judged(false, true),
    );
    let idle = Durability::default();
    let mut dirty = Durability::new();
    dirty.written(Write::State, true, now);
    dirty.changed();
    let backoff = Backoff {
        base: Duration::from_millis(500),
        cap: s(10),
    };
    let fresh = Retry::new(backoff, Jitter::new(7));
    let mut failed = Retry::new(backoff, Jitter::new(7));
    failed.next(true, true, now);
    let backed_off = failed.next_at().expect("a failure sets a retry");
    assert!(backed_off > now && backed_off <= now + Duration::from_millis(500));

    let base = Waiting {
        now,
        judged: &connected,
        link: &clean,
        seen: &quiet,
        unreachable_after: AFTER,
        plans: None,
        steps: &Steps::default(),
        fenced: &none,
        sweep_at: None,
        durability: &idle,
        cadence: cadence(),
        retry: &fresh,
        api_work: false,
        on_taint: false,
    };
    let rows: Vec<(&str, Waiting<'_>, Option<Duration>)> = vec![
        ("nothing pending: sleep until an input moves", base, None),
        (
            "cut off with plans: the earliest step (a's SIGTERM)",
            Waiting {
                judged: &cut_off,
                link: &partitioned,
                plans: Some(&plans),
                ..base
            },
            Some(BASE + s(28)),
        ),
        (
            "a pod fenced before a restart has no step left: the next pod's",
            Waiting {
                judged: &cut_off,
                link: &partitioned,
                plans: Some(&plans),
                fenced: &fenced_a,
                ..base
            },
            Some(BASE + s(58)),
        ),
        (
            "cut off, the sweep of fenced pods before any step",
            Waiting {
                judged: &cut_off,
                link: &partitioned,
                plans: Some(&plans),
                sweep_at: Some(now + Duration::from_millis(250)),
                ..base
            },
            Some(now + Duration::from_millis(250)),
        ),
        (
            "connected, plans and sweep left from a partition count for nothing",
            Waiting {
                plans: Some(&plans),
                sweep_at: Some(now),
                ..base
            },
            None,
        ),
        (
            "connected but fencing on the Node's taint: the earliest step, as cut off",
            Waiting {
                plans: Some(&plans),
                on_taint: true,
                ..base
            },
            Some(BASE + s(28)),
        ),
        (
            "connected but fencing on the Node's taint: the sweep too",
            Waiting {
                plans: Some(&plans),
                sweep_at: Some(now + Duration::from_millis(250)),
                on_taint: true,
                ..base
            },
            Some(now + Duration::from_millis(250)),
        ),
        (
            "connected: an answer overdue past our own contact (a wait to record)",
            Waiting {
                link: &heard,
                seen: &heard_seen,
                ..base
            },
            Some(BASE + s(16) + Duration::from_nanos(1)),
        ),
        (
            "connected, the answer overdue: our own contact growing older than unreachableAfter",
            Waiting {
                now: BASE + s(20),
                link: &heard,
                seen: &heard_seen,
                ..base
            },
            Some(BASE + s(45) + Duration::from_nanos(1)),
        ),
        (
            "a change of the state: written within the coalescing time",
            Waiting {
                link: &heard,
                seen: &heard_seen,
                durability: &dirty,
                ..base
            },
            Some(now + Duration::from_millis(250)),
        ),
        (
            "API work after a failure: at its backoff time",
            Waiting {
                judged: &reachable,
                retry: &failed,
                api_work: true,
                ..base
            },
            Some(backed_off),
        ),
        (
            "API work with no failure: at once",
            Waiting {
                judged: &reachable,
                api_work: true,
                ..base
            },
            Some(now),
        ),
        (
            "API work waits while the server does not answer",
            Waiting {
                retry: &failed,
                api_work: true,
                ..base
            },
            None,
        ),
        (
            "a backoff with no API work pending wakes nobody",
            Waiting {
                judged: &reachable,
                retry: &failed,
                ..base
            },
            None,
        ),
    ];
    for (rule, waiting, want) in rows {
        assert_eq!(next_wake(&waiting), want, "{rule}");
    }
}

/// The control plane judges the node by the kubelet's renewals, which come every kubelet's lag
/// while its link is up; after a failure, the link may have been down, and a contact proves a
/// renewal of the kubelet only once it comes that lag after the first contact past the failure
/// (issue 22, seed 0xd0: a link back for 5.5 s between two cuts).
#[test]
fn after_a_failure_deadlines_count_from_a_contact_only_once_the_kubelet_must_have_renewed() {
    let lag = Duration::from_millis(10_400);
    let seen = |own_at: Option<u64>, failed: bool| Seen {
        own: own_at.map(|t| BASE + s(t)),
        heartbeat: None,
        failed,
    };
    let mut link = Link::resume(None, None, at(0, 0)).with_kubelet_lag(lag);
    // Steady: every contact counts.
    for t in [0, 10, 20] {
        let j = link.judge(&seen(Some(t), false), at(t, 0), AFTER);
        assert_eq!(j.counted, Some(BASE + s(t)));
    }
    // A renewal fails at 30 s; the link is back for the one at 31 s.
    link.judge(&seen(Some(20), true), at(30, 0), AFTER);
    let back = link.judge(&seen(Some(31), false), at(31, 0), AFTER);
    assert_eq!(back.last_contact, Some(BASE + s(31)));
    assert_eq!(
        back.counted,
        Some(BASE + s(20)),
        "the kubelet may not have renewed yet"
    );
    // 41 s: less than the lag after 31 s, still the contact before the failure.
    let j = link.judge(&seen(Some(41), false), at(41, 0), AFTER);
    assert_eq!(j.counted, Some(BASE + s(20)));
    // Another failure before the lag passed: the count still rests on 20 s.
    link.judge(&seen(Some(41), true), at(45, 0), AFTER);
    let j = link.judge(&seen(Some(46), false), at(46, 0), AFTER);
    assert_eq!(j.counted, Some(BASE + s(20)));
    // 56.4 s = 46 s + the lag: the kubelet renewed since 46 s; the contact counts again.
    let later = BASE + Duration::from_millis(56_400);
    let j = link.judge(
        &Seen {
            own: Some(later),
            heartbeat: None,
            failed: false,
        },
        at(57, 0),
        AFTER,
    );
    assert_eq!(j.counted, Some(later));

    // A start into an outage: nothing counted before the first contact, which counts then.
    let mut fresh = Link::resume(None, None, at(0, 0)).with_kubelet_lag(lag);
    fresh.judge(&seen(None, true), at(5, 0), AFTER);
    let j = fresh.judge(&seen(Some(8), false), at(8, 0), AFTER);
    assert_eq!(j.counted, Some(BASE + s(8)));

    // When the agent renews the node's Lease itself (no kubelet), every contact counts.
    let mut own_lease = Link::resume(None, None, at(0, 0));
    own_lease.judge(&seen(Some(20), true), at(30, 0), AFTER);
    let j = own_lease.judge(&seen(Some(31), false), at(31, 0), AFTER);
    assert_eq!(j.counted, Some(BASE + s(31)));

    // A partition on record counts as a failure, whether or not a request failed (one that hung
    // for its whole timeout cut the node off first).
    let mut partitioned =
        Link::resume(Some(wall(0)), Some(wall(40)), at(60, 0)).with_kubelet_lag(lag);
    let j = partitioned.judge(&seen(Some(60), false), at(60, 0), AFTER);
    assert!(matches!(j.transition, Some(Transition::Reconnected { .. })));
    assert_eq!(
        j.counted,
        Some(BASE),
        "the contact on disk, from before the partition"
    );
}

/// The kubelet's lag of the relapse tests: renewals every 10 s.
const RELAPSE_LAG: Duration = Duration::from_millis(10_400);

/// This run's own contact at `own_at` s, and whether the latest request failed.
fn own_seen(own_at: u64, failed: bool) -> Seen {
    Seen {
        own: Some(BASE + s(own_at)),
        heartbeat: None,
        failed,
    }
}

/// A link with contact at 0 s, cut at 1 s (the renewal at 10 s fails, cut off at 41 s), and
/// back at 45 s: the return unproven.
fn returned_link() -> Link {
    let mut link = Link::resume(None, None, at(0, 0)).with_kubelet_lag(RELAPSE_LAG);
    link.judge(&own_seen(0, false), at(0, 0), AFTER);
    link.judge(&own_seen(0, true), at(10, 0), AFTER);
    link.judge(&own_seen(0, true), at(41, 0), AFTER);
    link.judge(&own_seen(45, false), at(45, 0), AFTER);
    link
}

/// A relapse (docs/fence.md §2): a request that fails while the contact back after a failure has
/// not yet proved the kubelet renewed cuts the node off at once, its deadlines counted from the
/// contact before the first failure. Once a contact proves the kubelet, a failure waits for
/// `unreachableAfter` again (issue 22, seeds 0x63a4 and 0x7c1b).
#[test]
fn a_failure_before_the_return_proved_the_kubelet_cuts_the_node_off_at_once() {
    let lag = Duration::from_millis(10_400);
    let seen = |own_at: u64, failed: bool| Seen {
        own: Some(BASE + s(own_at)),
        heartbeat: None,
        failed,
    };
    let mut link = Link::resume(None, None, at(0, 0)).with_kubelet_lag(lag);
    link.judge(&seen(0, false), at(0, 0), AFTER);
    assert!(!link.unproven());
    // Cut at 1 s: the renewal at 10 s fails, and the node is cut off `AFTER` past its contact.
    link.judge(&seen(0, true), at(10, 0), AFTER);
    let cut = link.judge(&seen(0, true), at(41, 0), AFTER);
    assert_eq!(cut.transition, Some(Transition::CutOff));
    // Back at 45 s: reachable, but unproven until a contact 10.4 s after it.
    let back = link.judge(&seen(45, false), at(45, 0), AFTER);
    assert!(matches!(
        back.transition,
        Some(Transition::Reconnected { .. })
    ));
    assert!(back.reachable && !back.cut_off && link.unproven());
    assert_eq!(back.counted, Some(BASE));
    // A read unanswered at 47 s: cut off at once (not at 86 s), counted from 0 s.
    let relapse = link.judge(&seen(45, true), at(47, 0), AFTER);
    assert!(relapse.cut_off && !relapse.reachable, "{relapse:?}");
    assert_eq!(relapse.transition, Some(Transition::CutOff));
    assert_eq!(relapse.counted, Some(BASE));

    // The same return proved by the renewal 10.4 s after it: a later failure is a failure, and
    // the node is cut off only `unreachableAfter` after its last contact.
    let mut proved = returned_link();
    let later = BASE + Duration::from_millis(55_400);
    proved.judge(
        &Seen {
            own: Some(later),
            heartbeat: None,
            failed: false,
        },
        at(56, 0),
        AFTER,
    );
    assert!(!proved.unproven());
    let failed = proved.judge(
        &Seen {
            own: Some(later),
            heartbeat: None,
            failed: true,
        },
        at(58, 0),
        AFTER,
    );
    assert!(failed.reachable && !failed.cut_off, "{failed:?}");
    assert_eq!(failed.counted, Some(later));

    // With no kubelet (the agent renews the node's Lease), no return is unproven.
    let mut own_lease = Link::resume(None, None, at(0, 0));
    own_lease.judge(&seen(0, false), at(0, 0), AFTER);
    own_lease.judge(&seen(0, true), at(41, 0), AFTER);
    own_lease.judge(&seen(45, false), at(45, 0), AFTER);
    let j = own_lease.judge(&seen(45, true), at(47, 0), AFTER);
    assert!(!j.cut_off && !own_lease.unproven());
}

/// A run killed during a relapse writes down the contact its deadlines counted from
/// (`Link::counted_before_return`); the next run resumes the relapse from it: cut off at once,
/// not `unreachableAfter` after the unproven return, and counting from the contact before the
/// first failure, until contact comes back (issue 22, seed 0x12ec with
/// `--controller-keeps-state`).
#[test]
fn a_restart_during_a_relapse_resumes_it() {
    let (lag, seen) = (RELAPSE_LAG, own_seen);
    let mut link = returned_link();
    assert_eq!(
        link.counted_before_return(at(45, 0)),
        None,
        "not cut off: nothing to write"
    );
    let relapse = link.judge(&seen(45, true), at(47, 0), AFTER);
    assert!(relapse.cut_off);
    assert_eq!(link.counted_before_return(at(47, 0)), Some(wall(0)));
    // Killed at 48 s, restarted at 50 s: the contact file says 45 s, the state 0 s and cut off
    // since 47 s.
    let now = at(50, 0);
    let resumed = Link::resume(Some(wall(45)), Some(wall(47)), now)
        .with_kubelet_lag(lag)
        .with_unproven_return(Some(wall(0)), now);
    let mut plain = resumed.clone();
    let mut resumed = resumed;
    // Nothing answered in this run yet.
    let nothing = Seen {
        own: None,
        heartbeat: None,
        failed: false,
    };
    let j = resumed.judge(&nothing, now, AFTER);
    assert!(j.cut_off && !j.reachable, "{j:?}");
    assert_eq!(
        j.counted,
        Some(BASE),
        "counted from before the first failure"
    );
    assert_eq!(resumed.counted_before_return(now), Some(wall(0)));
    // Without the record, the run counts from 45 s and is not cut off until 85 s.
    let mut without = Link::resume(Some(wall(45)), Some(wall(47)), now).with_kubelet_lag(lag);
    let j = without.judge(&nothing, now, AFTER);
    assert!(!j.cut_off);
    assert_eq!(j.counted, Some(BASE + s(45)));
    // Contact back at 60 s: reachable, the return unproven again, still counted from 0 s.
    let back = plain.judge(&seen(60, false), at(60, 0), AFTER);
    assert!(back.reachable && !back.cut_off, "{back:?}");
    assert_eq!(back.counted, Some(BASE));
    // A record with no contact after it, or no partition on record, changes nothing.
    let none = Link::resume(Some(wall(45)), None, now)
        .with_kubelet_lag(lag)
        .with_unproven_return(Some(wall(0)), now);
    assert!(!none.unproven());
    let later = Link::resume(Some(wall(45)), Some(wall(47)), now)
        .with_kubelet_lag(lag)
        .with_unproven_return(Some(wall(46)), now);
    assert!(!later.unproven());
}

#[test]
fn the_first_renewal_after_a_failure_is_followed_by_one_that_proves_the_kubelet_renewed() {
    let (renew, lag) = (s(10), Duration::from_millis(10_400));
    assert_eq!(next_renewal(renew, lag, false), renew);
    assert_eq!(next_renewal(renew, lag, true), lag);
    // An agent that renews the node's Lease itself has no lag to wait for.
    assert_eq!(next_renewal(renew, Duration::ZERO, true), renew);
}

#[test]
fn a_kubelet_renewal_read_after_this_agents_requests_failed_moves_the_count() {
    let s = Duration::from_secs;
    let (renew, lag) = (s(10), Duration::from_millis(10_400));
    let policy = FencePolicy {
        node_monitor_grace_period: s(40),
        node_monitor_period: Duration::ZERO,
        safety_margin: Duration::from_millis(500),
        grace_cap: s(30),
        mode: Mode::Enforce,
        kubelet_lag: lag,
    };
    let with = |counted: u64, own: Option<u64>, read: Option<u64>| {
        counted_with_kubelet(s(counted), own.map(s), read.map(s), renew, &policy)
    };
    // A count that moves is planned with a second of SIGTERM grace, one that does not with the
    // policy given.
    for read in [None, Some(95), Some(111), Some(112), Some(140)] {
        let (count, planned) = with(100, Some(100), read);
        let moved = count > s(100);
        assert_eq!(
            planned.grace_cap,
            if moved { s(1) } else { s(30) },
            "{read:?}"
        );
    }
    // This run's own last contact at 100 s, its deadlines counted from 100 s.
    let count = |read: Option<u64>| with(100, Some(100), read).0;
    // A renewal up to a renew interval and a second after the contact proves nothing the
    // contact does not: the kubelet may have renewed just before a cut this agent's next request
    // found.
    assert_eq!(count(None), s(100));
    assert_eq!(count(Some(95)), s(100));
    assert_eq!(count(Some(111)), s(100));
    // Later, the kubelet was heard after this agent's requests had failed: the count is the
    // renewal, given with the lag the plan takes off a contact.
    assert_eq!(count(Some(112)), s(112) + lag);
    assert_eq!(count(Some(140)), s(140) + lag);
    // A count already later stays; with no contact of this run's own, the read is a heartbeat
    // of its own kind (`Seen::heartbeat`) and nothing moves here.
    assert_eq!(with(200, Some(100), Some(140)), (s(200), policy));
    assert_eq!(with(100, None, Some(140)), (s(100), policy));
}

/// An enforcing policy with the relapse tests' kubelet lag, no margin and 30 s of grace.
fn relapse_policy() -> FencePolicy {
    FencePolicy {
        node_monitor_grace_period: AFTER,
        node_monitor_period: Duration::ZERO,
        safety_margin: Duration::ZERO,
        grace_cap: s(30),
        mode: Mode::Enforce,
        kubelet_lag: RELAPSE_LAG,
    }
}

/// A Node recorded Unknown is queued for the taint: the contact the plan counts from is no later
/// than the one that makes that write the earliest taint, whatever came since; without one, the
/// contact stands.
#[test]
fn a_node_recorded_unknown_counts_from_that_write_at_the_latest() {
    let policy = relapse_policy();
    let contact = BASE + s(190);
    assert_eq!(queued_contact(contact, None, &policy), contact);
    // Written at 181 s: counted as if the kubelet last renewed a grace period before.
    let queued = queued_contact(contact, Some(BASE + s(181)), &policy);
    assert_eq!(queued, BASE + s(181) + RELAPSE_LAG - AFTER);
    let evicted =
        |counted: Duration| match &plan_unasked(&[pod("a", Some(0))], counted, &policy)[0].plan {
            Plan::Stop { schedule, .. } => schedule.eviction_time,
            other => panic!("a pod tolerating 0 s is stopped: {other:?}"),
        };
    assert_eq!(evicted(queued), BASE + s(181));
    assert_eq!(evicted(contact), BASE + s(190) - RELAPSE_LAG + AFTER);
    // A write later than the contact's own earliest taint changes nothing.
    assert_eq!(
        queued_contact(contact, Some(BASE + s(250)), &policy),
        contact
    );
}

/// A renewal of the kubelet's Lease read for a run with no contact of its own is the kubelet's:
/// the deadlines count from it, less nothing, however the failures before it left the link
/// (issue 22, seed 0x11f).
#[test]
fn a_renewal_read_counts_as_the_kubelets_own_after_a_partition_on_record() {
    // Restarted at 60 s while cut off since 40 s, the contact on disk at 0 s; the peers read the
    // kubelet's renewal at 9 s (a second before its `renewTime`) at 62 s.
    let restarted =
        || Link::resume(Some(wall(0)), Some(wall(40)), at(60, 0)).with_kubelet_lag(RELAPSE_LAG);
    let read = |stamped: u64| Heartbeat {
        stamped: wall(stamped),
        arrived: BASE + s(62),
    };
    let seen = Seen {
        own: None,
        heartbeat: Some(read(9)),
        failed: true,
    };
    // As a contact only, the read is a return the partition on record leaves unproven: the count
    // stays the contact on disk, and the plan takes the lag off it.
    let mut contact_only = restarted();
    let j = contact_only.judge(&seen, at(62, 0), AFTER);
    assert_eq!(j.last_contact, Some(BASE + s(9)));
    assert_eq!(j.counted, Some(BASE));
    // Noted as the kubelet's renewal, it is counted with the lag the plan takes off.
    let mut noted = restarted();
    noted.note_renewal(Some(read(9)), at(62, 0));
    let j = noted.judge(&seen, at(62, 0), AFTER);
    assert_eq!(j.last_contact, Some(BASE + s(9)));
    assert_eq!(j.counted, Some(BASE + s(9) + RELAPSE_LAG));
    let policy = relapse_policy();
    let evicted =
        |counted: Duration| match &plan_unasked(&[pod("a", Some(9))], counted, &policy)[0].plan {
            Plan::Stop { schedule, .. } => schedule.eviction_time,
            other => panic!("a pod tolerating 9 s is stopped: {other:?}"),
        };
    assert_eq!(evicted(BASE + s(9) + RELAPSE_LAG), BASE + s(9 + 40 + 9));
    assert!(evicted(BASE) < BASE + s(40));
    // An earlier read, or none, changes nothing; a later one moves the count.
    noted.note_renewal(Some(read(5)), at(63, 0));
    noted.note_renewal(None, at(63, 0));
    assert_eq!(noted.counted(), Some(BASE + s(9) + RELAPSE_LAG));
    noted.note_renewal(Some(read(19)), at(64, 0));
    assert_eq!(noted.counted(), Some(BASE + s(19) + RELAPSE_LAG));
    // A contact of the run's own later than the read counts as before.
    let j = noted.judge(&own_seen(70, false), at(70, 0), AFTER);
    assert!(matches!(j.transition, Some(Transition::Reconnected { .. })));
    assert_eq!(
        j.counted,
        Some(BASE + s(19) + RELAPSE_LAG),
        "the return is unproven: the count stays the renewal read"
    );
    let j = noted.judge(&own_seen(81, false), at(81, 0), AFTER);
    assert_eq!(j.counted, Some(BASE + s(81)));
}

#[test]
fn the_kubelets_path_probed_holds_while_it_answers_and_bounds_the_kubelets_renewal() {
    let s = Duration::from_secs;
    let renew = s(10);
    // A renewal hung on the path while it was down, then the next one a renew interval later,
    // and a second for its answer.
    assert_eq!(node_path_window(renew), s(21));
    let mut path = NodePath::<Duration>::default();
    assert!(!path.answers());
    assert_eq!(path.heard_age(s(5)), None);
    // A failed probe proves nothing.
    path.note(false, s(100), renew);
    assert_eq!(path, NodePath::default());
    // Answered from 103 s on, every 3 s: the fence holds at once; the kubelet's renewal is
    // bounded only once the answers span the window.
    for t in (103..=121).step_by(3) {
        path.note(true, s(t), renew);
        assert!(path.answers());
        assert_eq!(path.kubelet_by, None, "at {t}");
    }
    path.note(true, s(124), renew);
    assert_eq!(path.kubelet_by, Some(s(103)));
    path.note(true, s(130), renew);
    assert_eq!(
        (path.since, path.heard, path.kubelet_by),
        (Some(s(103)), Some(s(130)), Some(s(109)))
    );
    assert_eq!(path.heard_age(s(133)), Some(s(3)));
    // An answer older than the latest heard (a late one) moves nothing back.
    path.note(true, s(127), renew);
    assert_eq!((path.heard, path.kubelet_by), (Some(s(130)), Some(s(109))));
    // A failure ends the hold; what the answers proved stays: the kubelet renewed by 109 s, and
    // the peers hear of the latest answer, ageing.
    path.note(false, s(133), renew);
    assert!(!path.answers());
    assert_eq!((path.heard, path.kubelet_by), (Some(s(130)), Some(s(109))));
    assert_eq!(path.heard_age(s(150)), Some(s(20)));
    // Answered again: a new span, which must last the window again before it bounds anything.
    path.note(true, s(136), renew);
    assert_eq!((path.since, path.kubelet_by), (Some(s(136)), Some(s(109))));
    path.note(true, s(157), renew);
    assert_eq!(path.kubelet_by, Some(s(136)));
    // An instant given before the latest answer (another scale's rounding) ages nothing below 0.
    assert_eq!(path.heard_age(s(150)), Some(Duration::ZERO));
    // A round whose peers read the unreachable taint on the Node ends the hold and the answer
    // "reachable", though the path answers: the control plane judged the node. A round that read
    // nothing changes nothing; one that read the Node without the taint gives both back.
    assert!(path.answers());
    let enforce = QuorumVerdict::Enforce {
        not_before: None,
        held_from: None,
        untainted: None,
    };
    assert!(matches!(
        path.verdict(enforce.clone()),
        QuorumVerdict::Hold { .. }
    ));
    path.note_taint(Some(true));
    assert!(!path.answers());
    assert_eq!(path.verdict(enforce.clone()), enforce);
    assert_eq!(path.heard_age(s(160)), None);
    path.note(true, s(160), renew);
    path.note_taint(None);
    assert!(!path.answers());
    path.note_taint(Some(false));
    assert!(path.answers());
    assert_eq!(path.heard_age(s(161)), Some(s(1)));
}
