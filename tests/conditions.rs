//! Condition bookkeeping (docs/semantics.md §6.2–6.3) and the condition → taint mapping.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use nodewarden::config::{ConditionSpec, TaintSpec};
use nodewarden::core::condition::{
    ConditionStatus, TaintChange, changed_ignoring_heartbeat, desired_taints, report_due,
    taint_changes, update_conditions,
};
use nodewarden::core::signal::{Signal, SignalRef};
use nodewarden::core::taint::Effect;

fn disk() -> ConditionSpec {
    ConditionSpec {
        condition_type: "DiskPressure".into(),
        signals: vec![SignalRef::Eviction(Signal::NodeFsAvailable)],
        true_reason: "KubeletHasDiskPressure".into(),
        true_message: "kubelet has disk pressure".into(),
        false_reason: "KubeletHasNoDiskPressure".into(),
        false_message: "kubelet has no disk pressure".into(),
        taint: Some(TaintSpec {
            key: "node.kubernetes.io/disk-pressure".into(),
            effect: Effect::NoSchedule,
        }),
    }
}

fn custom() -> ConditionSpec {
    ConditionSpec {
        condition_type: "MemoryContention".into(),
        signals: vec![],
        true_reason: "MemoryStallHigh".into(),
        true_message: "memory stalls are high".into(),
        false_reason: "MemoryStallNormal".into(),
        false_message: "memory stalls are normal".into(),
        taint: None,
    }
}

fn t(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
}

fn pressure(pairs: &[(&str, bool)]) -> BTreeMap<String, bool> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn a_missing_condition_is_created_with_a_transition() {
    let (conds, transitions) =
        update_conditions(&[disk()], &[], &pressure(&[("DiskPressure", false)]), t(0));
    assert_eq!(conds.len(), 1);
    let c = &conds[0];
    assert_eq!(c.status, ConditionStatus::False);
    assert_eq!(c.reason, "KubeletHasNoDiskPressure");
    assert_eq!(c.message, "kubelet has no disk pressure");
    assert_eq!(c.last_heartbeat_time, t(0));
    assert_eq!(c.last_transition_time, t(0));
    assert_eq!(transitions.len(), 1);
    assert_eq!(transitions[0].from, None);
    assert_eq!(transitions[0].event, "NodeHasNoDiskPressure");
}

#[test]
fn heartbeat_moves_every_cycle_transition_time_only_on_a_flip() {
    let specs = [disk()];
    let (c0, _) = update_conditions(&specs, &[], &pressure(&[("DiskPressure", false)]), t(0));
    let (c1, tr1) = update_conditions(&specs, &c0, &pressure(&[("DiskPressure", false)]), t(10));
    assert!(tr1.is_empty());
    assert_eq!(c1[0].last_heartbeat_time, t(10));
    assert_eq!(c1[0].last_transition_time, t(0));
    assert!(
        !changed_ignoring_heartbeat(&c0, &c1),
        "only the heartbeat moved"
    );

    let (c2, tr2) = update_conditions(&specs, &c1, &pressure(&[("DiskPressure", true)]), t(20));
    assert_eq!(c2[0].status, ConditionStatus::True);
    assert_eq!(c2[0].reason, "KubeletHasDiskPressure");
    assert_eq!(c2[0].message, "kubelet has disk pressure");
    assert_eq!(c2[0].last_transition_time, t(20));
    assert_eq!(tr2.len(), 1);
    assert_eq!(tr2[0].from, Some(ConditionStatus::False));
    assert_eq!(tr2[0].event, "NodeHasDiskPressure");
    assert!(changed_ignoring_heartbeat(&c1, &c2));
}

#[test]
fn our_own_condition_types_use_their_configured_reasons_as_events() {
    let (_, tr) = update_conditions(
        &[custom()],
        &[],
        &pressure(&[("MemoryContention", true)]),
        t(0),
    );
    assert_eq!(tr[0].reason, "MemoryStallHigh");
    assert_eq!(tr[0].event, "MemoryStallHigh");
}

#[test]
fn a_condition_without_a_verdict_is_false() {
    let (c, _) = update_conditions(&[disk()], &[], &BTreeMap::new(), t(0));
    assert_eq!(c[0].status, ConditionStatus::False);
}

#[test]
fn taints_follow_true_conditions_with_a_taint() {
    let specs = [disk(), custom()];
    let (c, _) = update_conditions(
        &specs,
        &[],
        &pressure(&[("DiskPressure", true), ("MemoryContention", true)]),
        t(0),
    );
    let want = desired_taints(&specs, &c);
    assert_eq!(want, vec![disk().taint.expect("has taint")]);
    let (c, _) = update_conditions(&specs, &c, &pressure(&[("DiskPressure", false)]), t(1));
    assert!(desired_taints(&specs, &c).is_empty());
}

#[test]
fn taint_changes_list_removals_then_additions() {
    let a = TaintSpec {
        key: "a".into(),
        effect: Effect::NoSchedule,
    };
    let b = TaintSpec {
        key: "b".into(),
        effect: Effect::NoExecute,
    };
    assert_eq!(
        taint_changes(std::slice::from_ref(&a), std::slice::from_ref(&b)),
        vec![TaintChange::Remove(a.clone()), TaintChange::Add(b.clone())]
    );
    assert!(taint_changes(std::slice::from_ref(&a), std::slice::from_ref(&a)).is_empty());
}

#[test]
fn report_is_due_at_once_on_change_otherwise_once_per_frequency() {
    let f = Duration::from_secs(60);
    assert!(
        report_due(false, None, Duration::ZERO, f),
        "first report always"
    );
    assert!(report_due(
        true,
        Some(Duration::from_secs(10)),
        Duration::from_secs(11),
        f
    ));
    assert!(!report_due(
        false,
        Some(Duration::from_secs(10)),
        Duration::from_secs(69),
        f
    ));
    assert!(report_due(
        false,
        Some(Duration::from_secs(10)),
        Duration::from_secs(70),
        f
    ));
}
