//! The pure parts of connected mode: the taint plan (ours added/removed, others' untouched),
//! capped backoff with jitter, what a report sends once another writer holds a condition
//! (other-writer detection itself is table-tested beside it, in `core::ownership`), and the
//! reporter's step (`core::reporting`): when a report, a heartbeat, a taint write or a retry is
//! due, and when it looks again.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use nodewarden::config::TaintSpec;
use nodewarden::core::backoff::{Backoff, Jitter, Retry};
use nodewarden::core::condition::{ConditionStatus, NodeCondition};
use nodewarden::core::ownership::{
    ConditionManager, NodeObservation, ObservedCondition, plan_report, record_write,
};
use nodewarden::core::reporting::{Outcome, ReportPolicy, Reporting, Writes};
use nodewarden::core::taint::{Effect, Taint};
use nodewarden::core::taint_plan::{missing_owned, plan_taints};
use proptest::prelude::*;

fn spec(key: &str, effect: Effect) -> TaintSpec {
    TaintSpec {
        key: key.into(),
        effect,
    }
}

fn taint(key: &str, value: &str, effect: Effect, added: Option<&str>) -> Taint {
    Taint {
        key: key.into(),
        value: value.into(),
        effect,
        time_added: added.map(str::to_string),
    }
}

const DISK: &str = "node.kubernetes.io/disk-pressure";
const MEM: &str = "node.kubernetes.io/memory-pressure";
const NOW: &str = "2026-11-29T18:00:00Z";

fn owned() -> Vec<TaintSpec> {
    vec![
        spec(MEM, Effect::NoSchedule),
        spec(DISK, Effect::NoSchedule),
    ]
}

#[test]
fn our_taint_is_appended_and_others_keep_value_effect_time_and_order() {
    let current = vec![
        taint(
            "key1",
            "value1",
            Effect::NoSchedule,
            Some("2026-01-01T00:00:00Z"),
        ),
        taint("key1", "value1", Effect::NoExecute, None),
        taint("key2", "value2", Effect::NoSchedule, None),
    ];
    let next =
        plan_taints(&current, &owned(), &[spec(DISK, Effect::NoSchedule)], NOW).expect("a change");
    assert_eq!(next[..3], current[..]);
    assert_eq!(next[3], taint(DISK, "", Effect::NoSchedule, Some(NOW)));
}

#[test]
fn our_taint_is_removed_when_its_condition_clears_and_nothing_else_moves() {
    let current = vec![
        taint("a", "", Effect::NoSchedule, None),
        taint(DISK, "", Effect::NoSchedule, Some("2026-01-01T00:00:00Z")),
        taint("b", "x", Effect::PreferNoSchedule, None),
    ];
    let next = plan_taints(&current, &owned(), &[], NOW).expect("a change");
    assert_eq!(next, vec![current[0].clone(), current[2].clone()]);
}

#[test]
fn a_taint_with_our_key_but_another_effect_is_not_ours() {
    let current = vec![taint(DISK, "", Effect::NoExecute, None)];
    assert_eq!(plan_taints(&current, &owned(), &[], NOW), None);
}

#[test]
fn an_owned_taint_already_present_keeps_its_time_added() {
    let current = vec![taint(
        DISK,
        "",
        Effect::NoSchedule,
        Some("2026-01-01T00:00:00Z"),
    )];
    assert_eq!(
        plan_taints(&current, &owned(), &[spec(DISK, Effect::NoSchedule)], NOW),
        None,
        "no write when the node already matches"
    );
}

#[test]
fn missing_owned_lists_what_another_writer_dropped() {
    let current = vec![taint("key1", "value1", Effect::NoSchedule, None)];
    let desired = vec![spec(DISK, Effect::NoSchedule)];
    assert_eq!(missing_owned(&current, &desired), desired);
    assert!(missing_owned(&[taint(DISK, "", Effect::NoSchedule, None)], &desired).is_empty());
}

proptest! {
    /// Whatever the node carries, the plan never changes a taint we do not own and always ends
    /// with exactly the desired owned taints.
    #[test]
    fn plan_keeps_foreign_taints_and_reaches_the_desired_set(
        foreign in prop::collection::vec(("[a-c]", "[xy]?", 0usize..3), 0..6),
        have_mem in any::<bool>(), have_disk in any::<bool>(),
        want_mem in any::<bool>(), want_disk in any::<bool>(),
    ) {
        let effects = [Effect::NoSchedule, Effect::PreferNoSchedule, Effect::NoExecute];
        let mut current: Vec<Taint> = Vec::new();
        for (k, v, e) in foreign {
            let t = taint(&format!("example.com/{k}"), &v, effects[e], None);
            if !current.iter().any(|c| c.key == t.key && c.effect == t.effect) {
                current.push(t);
            }
        }
        if have_mem { current.push(taint(MEM, "", Effect::NoSchedule, Some("2026-01-01T00:00:00Z"))); }
        if have_disk { current.insert(0, taint(DISK, "", Effect::NoSchedule, None)); }
        let mut desired = Vec::new();
        if want_mem { desired.push(spec(MEM, Effect::NoSchedule)); }
        if want_disk { desired.push(spec(DISK, Effect::NoSchedule)); }
        let next = plan_taints(&current, &owned(), &desired, NOW).unwrap_or_else(|| current.clone());
        let foreign_before: Vec<&Taint> = current.iter().filter(|t| !t.key.starts_with("node.kubernetes.io")).collect();
        let foreign_after: Vec<&Taint> = next.iter().filter(|t| !t.key.starts_with("node.kubernetes.io")).collect();
        prop_assert_eq!(foreign_before, foreign_after);
        prop_assert_eq!(next.iter().any(|t| t.key == MEM), want_mem);
        prop_assert_eq!(next.iter().any(|t| t.key == DISK), want_disk);
        prop_assert_eq!(plan_taints(&next, &owned(), &desired, NOW), None, "a second plan is a no-op");
    }

    /// The backoff never exceeds its cap, whatever the attempt and the draw.
    #[test]
    fn backoff_never_exceeds_its_cap(attempt in 0u32..200, r in 0.0f64..1.0) {
        let b = Backoff { base: Duration::from_millis(200), cap: Duration::from_secs(10) };
        let d = b.delay(attempt, r);
        prop_assert!(d <= b.cap);
        prop_assert!(d >= Duration::from_millis(100).min(b.cap / 2));
    }
}

#[test]
fn backoff_doubles_until_the_cap() {
    let b = Backoff {
        base: Duration::from_millis(200),
        cap: Duration::from_secs(10),
    };
    assert_eq!(b.delay(0, 0.0), Duration::from_millis(200));
    assert_eq!(b.delay(1, 0.0), Duration::from_millis(400));
    assert_eq!(b.delay(5, 0.0), Duration::from_millis(6400));
    assert_eq!(b.delay(6, 0.0), Duration::from_secs(10));
    assert_eq!(
        b.delay(6, 0.999_999),
        Duration::from_secs(10).mul_f64(1.0 - 0.5 * 0.999_999)
    );
    let mut j = Jitter::new(42);
    let draws: Vec<f64> = (0..1000).map(|_| j.draw()).collect();
    assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
    assert!(
        draws.iter().any(|d| *d < 0.1) && draws.iter().any(|d| *d > 0.9),
        "spread"
    );
}

/// One of our conditions of `ty`, written at `heartbeat`, with the status flipping at `since`.
fn cond(ty: &str, status: ConditionStatus, since: u64, heartbeat: u64) -> NodeCondition {
    NodeCondition {
        condition_type: ty.into(),
        status,
        reason: format!("{ty}Is{status}"),
        message: String::new(),
        last_heartbeat_time: SystemTime::UNIX_EPOCH + Duration::from_secs(heartbeat),
        last_transition_time: SystemTime::UNIX_EPOCH + Duration::from_secs(since),
    }
}

fn types(cs: &[NodeCondition]) -> Vec<&str> {
    cs.iter().map(|c| c.condition_type.as_str()).collect()
}

#[test]
fn a_condition_held_by_another_writer_is_never_sent_and_the_others_are() {
    use ConditionStatus::{False, True};
    const M: &str = "MemoryPressure";
    const D: &str = "DiskPressure";
    struct Case {
        rule: &'static str,
        desired: Vec<NodeCondition>,
        written: Vec<NodeCondition>,
        held: &'static [&'static str],
        send: &'static [&'static str],
        withheld: &'static [&'static str],
        changed: bool,
    }
    let cases = [
        Case {
            rule: "no other writer: everything is sent, heartbeats alone are no change",
            desired: vec![cond(M, False, 0, 20), cond(D, False, 0, 20)],
            written: vec![cond(M, False, 0, 10), cond(D, False, 0, 10)],
            held: &[],
            send: &[M, D],
            withheld: &[],
            changed: false,
        },
        Case {
            rule: "a held condition is left out whole, even when only its heartbeat moved",
            desired: vec![cond(M, False, 0, 20), cond(D, False, 0, 20)],
            written: vec![cond(M, False, 0, 10), cond(D, False, 0, 10)],
            held: &[M],
            send: &[D],
            withheld: &[M],
            changed: false,
        },
        Case {
            rule: "our verdict on a held condition flipping is no change and is not sent",
            desired: vec![cond(M, True, 15, 20), cond(D, False, 0, 20)],
            written: vec![cond(M, False, 0, 10), cond(D, False, 0, 10)],
            held: &[M],
            send: &[D],
            withheld: &[M],
            changed: false,
        },
        Case {
            rule: "another owned condition flipping is a change and is sent",
            desired: vec![cond(M, False, 0, 20), cond(D, True, 15, 20)],
            written: vec![cond(M, False, 0, 10), cond(D, False, 0, 10)],
            held: &[M],
            send: &[D],
            withheld: &[M],
            changed: true,
        },
        Case {
            rule: "a condition never written is a change",
            desired: vec![cond(M, False, 0, 20), cond(D, False, 0, 20)],
            written: vec![],
            held: &[],
            send: &[M, D],
            withheld: &[],
            changed: true,
        },
        Case {
            rule: "every condition held: nothing to send, no change",
            desired: vec![cond(M, True, 15, 20), cond(D, True, 15, 20)],
            written: vec![cond(M, False, 0, 10), cond(D, False, 0, 10)],
            held: &[M, D],
            send: &[],
            withheld: &[M, D],
            changed: false,
        },
        Case {
            rule: "a condition released with our value unchanged needs no write",
            desired: vec![cond(M, False, 0, 20), cond(D, False, 0, 20)],
            written: vec![cond(M, False, 0, 10), cond(D, False, 0, 20)],
            held: &[],
            send: &[M, D],
            withheld: &[],
            changed: false,
        },
        Case {
            rule: "a condition released after our verdict flipped is written at once",
            desired: vec![cond(M, True, 15, 20), cond(D, False, 0, 20)],
            written: vec![cond(M, False, 0, 10), cond(D, False, 0, 20)],
            held: &[],
            send: &[M, D],
            withheld: &[],
            changed: true,
        },
    ];
    for c in cases {
        let held: BTreeSet<String> = c.held.iter().map(|h| h.to_string()).collect();
        let plan = plan_report(&c.desired, &c.written, &held);
        assert_eq!(types(&plan.send), c.send, "{}", c.rule);
        assert_eq!(plan.withheld, c.withheld, "{}", c.rule);
        assert_eq!(plan.changed, c.changed, "{}", c.rule);
        for sent in &plan.send {
            assert!(c.desired.contains(sent), "{}: sent as desired", c.rule);
        }
    }
}

#[test]
fn a_withheld_condition_keeps_the_value_we_last_wrote() {
    use ConditionStatus::{False, True};
    let before = vec![
        cond("MemoryPressure", False, 0, 10),
        cond("DiskPressure", False, 0, 10),
    ];
    let sent = vec![cond("DiskPressure", True, 15, 20)];
    let after = record_write(&before, &sent);
    assert_eq!(
        after,
        vec![
            cond("DiskPressure", True, 15, 20),
            cond("MemoryPressure", False, 0, 10)
        ]
    );
    assert_eq!(
        record_write(&[], &sent),
        sent,
        "a first write is what was sent"
    );
}

#[path = "support/switch.rs"]
mod switch;

mod resume {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, SystemTime};

    use nodewarden::agent::{Decider, Source};
    use nodewarden::config::Config;
    use nodewarden::core::clock::Moment;
    use nodewarden::core::condition::{ConditionStatus, NodeCondition};

    use super::switch;

    fn stored(status: ConditionStatus, reason: &str, message: &str) -> NodeCondition {
        let since = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        NodeCondition {
            condition_type: "DiskPressure".into(),
            status,
            reason: reason.into(),
            message: message.into(),
            last_heartbeat_time: since,
            last_transition_time: since,
        }
    }

    /// The first decision under disk pressure, after resuming from `seen`.
    fn first_decision(seen: Vec<NodeCondition>) -> (Decider, usize) {
        let config = Config::defaults();
        let mut decider = Decider::new(&config);
        decider.resume(seen);
        let mut source = switch::Switch(Arc::new(AtomicBool::new(true)));
        let now = Moment {
            mono: Duration::from_secs(5),
            wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000),
        };
        let decision = decider.decide(&source.read().observations, now);
        let disk = decision
            .transitions
            .iter()
            .filter(|t| t.condition_type == "DiskPressure")
            .count();
        (decider, disk)
    }

    fn disk(d: &Decider) -> &NodeCondition {
        d.conditions
            .iter()
            .find(|c| c.condition_type == "DiskPressure")
            .expect("DiskPressure decided")
    }

    #[test]
    fn a_restart_under_the_same_pressure_is_no_transition_and_keeps_its_time() {
        let was = stored(
            ConditionStatus::True,
            "KubeletHasDiskPressure",
            "kubelet has disk pressure",
        );
        let (d, transitions) = first_decision(vec![was.clone()]);
        assert_eq!(transitions, 0);
        assert_eq!(disk(&d).last_transition_time, was.last_transition_time);
        assert_eq!(disk(&d).status, ConditionStatus::True);
    }

    #[test]
    fn a_flip_since_the_node_was_last_seen_is_a_transition() {
        let was = stored(
            ConditionStatus::False,
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        );
        let (d, transitions) = first_decision(vec![was.clone()]);
        assert_eq!(transitions, 1);
        assert_ne!(disk(&d).last_transition_time, was.last_transition_time);
    }

    #[test]
    fn another_writers_wording_is_not_adopted() {
        let theirs = stored(ConditionStatus::True, "SomethingElse", "someone else's");
        let (d, transitions) = first_decision(vec![theirs]);
        assert_eq!(transitions, 1, "treated as unknown: a fresh transition");
        assert_eq!(disk(&d).reason, "KubeletHasDiskPressure");
    }
}

// The reporter's step (`core::reporting`): what is written when, and when it looks again.

const FREQ: Duration = Duration::from_secs(60);
const FIRST_SIGHT: Duration = Duration::from_secs(10);
const SILENCE: Duration = Duration::from_secs(900);

fn at(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

fn reporting(now: u64) -> Reporting {
    Reporting::new(
        ReportPolicy {
            report_frequency: FREQ,
            owned_taints: owned(),
            first_sight_wait: FIRST_SIGHT,
            other_writer_silence: SILENCE,
            stale_window: at(30),
        },
        Retry::new(
            Backoff {
                base: Duration::from_secs(1),
                cap: Duration::from_secs(10),
            },
            Jitter::new(3),
        ),
        at(now),
    )
}

/// The server's copy of a condition.
fn observed(c: &NodeCondition) -> ObservedCondition {
    ObservedCondition {
        condition_type: c.condition_type.clone(),
        status: c.status.as_str().into(),
        reason: c.reason.clone(),
        message: c.message.clone(),
        last_heartbeat_time: Some(c.last_heartbeat_time),
        last_transition_time: Some(c.last_transition_time),
    }
}

/// Our Node holding `conditions`, written by `manager`.
fn node_with(conditions: &[NodeCondition], manager: &str) -> NodeObservation {
    NodeObservation {
        conditions: conditions.iter().map(observed).collect(),
        managers: vec![ConditionManager {
            manager: manager.into(),
            condition_types: conditions
                .iter()
                .map(|c| c.condition_type.clone())
                .collect(),
        }],
    }
}

/// Carries out a poll's writes as a server that stores each one; returns what was sent (the
/// status write's heartbeat-only flag, whether taints were reconciled).
fn serve(r: &mut Reporting, now: Duration) -> (Option<bool>, bool) {
    let w = r.poll(now, true);
    if let Some(s) = &w.status {
        let echo = node_with(&s.send, "nodewarden");
        r.status_result(&Outcome::Written(Some(echo)), now);
    }
    if let Some(t) = &w.taints {
        r.taints_result(t, &Outcome::Unchanged, now);
    }
    if w.events {
        r.round_succeeded();
    }
    (w.status.map(|s| s.heartbeat_only), w.taints.is_some())
}

#[test]
fn a_change_is_reported_at_once_and_heartbeats_once_per_report_frequency_not_per_decision() {
    use ConditionStatus::{False, True};
    const M: &str = "MemoryPressure";
    let mut r = reporting(0);
    assert_eq!(
        r.next_wake(at(0)),
        None,
        "nothing decided: nothing to wake for"
    );
    r.decided(&[cond(M, False, 0, 0)], &[], at(0));
    // The taints are reconciled at start; the first report waits for the Node's first sight.
    assert_eq!(serve(&mut r, at(0)), (None, true));
    assert_eq!(
        r.next_wake(at(0)),
        Some(FIRST_SIGHT),
        "until the first sight"
    );
    r.node_seen(&NodeObservation::default(), &[], "nodewarden", at(2));
    assert_eq!(serve(&mut r, at(2)), (Some(false), false), "first report");
    assert_eq!(r.next_wake(at(2)), Some(at(62)), "a report frequency later");

    // (second, status, sent: None = nothing, Some(heartbeat only)) — a decision every 10 s.
    let rows: &[(u64, ConditionStatus, Option<bool>)] = &[
        (12, False, None),
        (22, False, None),
        (52, False, None),
        (62, False, Some(true)),
        (72, False, None),
        (75, True, Some(false)),
        (85, True, None),
        (135, True, Some(true)),
    ];
    let mut since = 0;
    let mut last = false;
    for (t, status, want) in rows {
        if (*status == True) != last {
            since = *t;
            last = *status == True;
        }
        r.decided(&[cond(M, *status, since, *t)], &[], at(*t));
        assert_eq!(serve(&mut r, at(*t)).0, *want, "at {t} s");
    }
    // A decision that wants a taint: reconciled at once, once.
    r.decided(
        &[cond(M, True, 75, 140)],
        &[spec(MEM, Effect::NoSchedule)],
        at(140),
    );
    assert_eq!(serve(&mut r, at(140)), (None, true));
    assert_eq!(serve(&mut r, at(141)), (None, false));
    // The taint removed by someone else: restored, and said so.
    let seen = r.node_seen(
        &node_with(&[cond(M, True, 75, 135)], "nodewarden"),
        &[],
        "nodewarden",
        at(142),
    );
    assert_eq!(seen.vanished, vec![spec(MEM, Effect::NoSchedule)]);
    assert_eq!(serve(&mut r, at(142)), (None, true));
}

#[test]
fn a_failed_write_is_retried_after_its_backoff_or_at_once_when_the_server_answers_again() {
    use ConditionStatus::False;
    const M: &str = "MemoryPressure";
    let mut r = reporting(0);
    r.node_seen(&NodeObservation::default(), &[], "nodewarden", at(0));
    r.decided(&[cond(M, False, 0, 0)], &[], at(0));
    let w = r.poll(at(0), true);
    assert!(w.status.is_some() && w.events);
    r.status_result(&Outcome::Failed { retry_after: None }, at(0));
    let retry = r.next_wake(at(0)).expect("a retry");
    // The first retry: the base (1 s), less up to half at random.
    assert!(
        retry >= Duration::from_millis(500) && retry <= at(1),
        "{retry:?}"
    );
    assert_eq!(
        r.poll(retry - Duration::from_millis(1), true),
        Writes::default()
    );
    let w = r.poll(retry, true);
    assert!(w.status.is_some(), "due at the backoff time");
    // The server's Retry-After is honoured, up to the backoff's cap.
    r.status_result(
        &Outcome::Failed {
            retry_after: Some(at(300)),
        },
        retry,
    );
    assert_eq!(r.next_wake(retry), Some(retry + at(10)));
    // Nothing goes out before the journal is on disk, whatever is due.
    r.heard_again();
    assert_eq!(r.poll(retry, false).status, None);
    // The server answers again: at once.
    assert!(r.poll(retry, true).status.is_some());
}

#[test]
fn another_writers_condition_is_left_out_while_it_lives_and_reported_at_once_when_it_falls_silent()
{
    use ConditionStatus::{False, True};
    const M: &str = "MemoryPressure";
    const D: &str = "DiskPressure";
    let mut r = reporting(0);
    // node-problem-detector holds MemoryPressure on the Node at our first sight.
    let theirs = cond(M, True, 0, 0);
    let seen = r.node_seen(
        &node_with(&[theirs], "node-problem-detector"),
        &[],
        "nodewarden",
        at(0),
    );
    assert_eq!(
        seen.foreign, None,
        "nothing decided yet: nothing to compare"
    );
    let change = r.decided(&[cond(M, False, 0, 1), cond(D, False, 0, 1)], &[], at(1));
    assert_eq!(change.holding, 1);
    assert_eq!(change.appeared.len(), 1);
    let w = r.poll(at(1), true);
    let sent = w.status.expect("a first report");
    assert_eq!(types(&sent.send), [D], "ours alone; theirs left out");
    r.status_result(
        &Outcome::Written(Some(node_with(&sent.send, "nodewarden"))),
        at(1),
    );
    // It is released a silence after its last sign of life (our first sight), unless it shows
    // life again; the reporter wakes then.
    assert_eq!(
        r.next_wake(at(1)),
        Some(at(61)),
        "the report frequency first"
    );
    for t in (61..900).step_by(60) {
        assert_eq!(
            serve(&mut r, at(t)).0,
            Some(true),
            "heartbeats of ours alone at {t} s"
        );
    }
    assert_eq!(
        r.next_wake(at(841)),
        Some(SILENCE),
        "before the report at 901 s"
    );
    let w = r.poll(SILENCE, true);
    let released = w.foreign.expect("the release is told");
    assert_eq!(released.released.len(), 1);
    assert_eq!(released.holding, 0);
    let sent = w.status.expect("at once, not at the next heartbeat");
    assert_eq!(types(&sent.send), [M, D]);
    assert!(!sent.heartbeat_only);
}

#[test]
fn versions_of_the_node_from_before_our_write_are_skipped_until_ours_or_the_window_ends() {
    let mut r = reporting(0);
    assert!(
        !r.stale(Some("5"), at(0)),
        "no write of ours yet: nothing skipped"
    );
    r.wrote(Some("9".into()), at(10));
    // (second, resourceVersion delivered, skipped) — versions are matched, never compared.
    let rows: &[(u64, &str, bool)] = &[
        (11, "7", true),
        (12, "12", true),
        (13, "9", false),
        (14, "8", false),
    ];
    for (t, rv, skipped) in rows {
        assert_eq!(r.stale(Some(rv), at(*t)), *skipped, "{rv} at {t} s");
    }
    // The watch relisted past our version: skipped for the window at most.
    r.wrote(Some("20".into()), at(100));
    assert!(r.stale(Some("18"), at(130)), "within the window");
    assert!(!r.stale(Some("25"), at(131)), "past it");
    assert!(!r.stale(None, at(132)));
}
