//! Node condition bookkeeping for the conditions we own (docs/semantics.md §6.3): heartbeat on
//! every cycle, status/reason/message/transition time only on a flip, an event per flip. Also the
//! condition → taint mapping (which owned taints should be on the node). Pure.

use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

use crate::core::signal::SignalRef;
use crate::core::taint::Effect;

/// A condition we own: its type, the signals that feed it, its reasons and messages, its taint.
#[derive(Clone, Debug, PartialEq)]
pub struct ConditionSpec {
    pub condition_type: String,
    pub signals: Vec<SignalRef>,
    pub true_reason: String,
    pub true_message: String,
    pub false_reason: String,
    pub false_message: String,
    pub taint: Option<TaintSpec>,
}

/// The taint a condition maps to while it is True.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaintSpec {
    pub key: String,
    pub effect: Effect,
}

/// A node condition status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }

    pub fn from_bool(b: bool) -> ConditionStatus {
        if b {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        }
    }
}

impl fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A node condition as the API holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeCondition {
    pub condition_type: String,
    pub status: ConditionStatus,
    pub reason: String,
    pub message: String,
    pub last_heartbeat_time: SystemTime,
    pub last_transition_time: SystemTime,
}

/// A status flip of one owned condition, with the event the kubelet would record (§6.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionTransition {
    pub condition_type: String,
    /// `None` when the condition did not exist before.
    pub from: Option<ConditionStatus>,
    pub to: ConditionStatus,
    pub reason: String,
    pub message: String,
    /// The event reason, e.g. `NodeHasDiskPressure`.
    pub event: String,
}

/// The kubelet's event reason for a standard condition's status (docs/semantics.md §6.3); for our
/// own condition types, the condition's reason.
pub fn event_reason(spec: &ConditionSpec, status: ConditionStatus) -> String {
    let standard = match (spec.condition_type.as_str(), status) {
        ("MemoryPressure", ConditionStatus::True) => Some("NodeHasInsufficientMemory"),
        ("MemoryPressure", ConditionStatus::False) => Some("NodeHasSufficientMemory"),
        ("DiskPressure", ConditionStatus::True) => Some("NodeHasDiskPressure"),
        ("DiskPressure", ConditionStatus::False) => Some("NodeHasNoDiskPressure"),
        ("PIDPressure", ConditionStatus::True) => Some("NodeHasInsufficientPID"),
        ("PIDPressure", ConditionStatus::False) => Some("NodeHasSufficientPID"),
        _ => None,
    };
    match (standard, status) {
        (Some(s), _) => s.to_string(),
        (None, ConditionStatus::True) => spec.true_reason.clone(),
        (None, _) => spec.false_reason.clone(),
    }
}

/// Sets every owned condition from the pressure verdicts, as the kubelet's setters do (§6.3):
/// a missing condition starts as Unknown and is then set, so it gets a transition at once;
/// `lastHeartbeatTime` is `now` on every call; status, reason, message and
/// `lastTransitionTime` change only when the status flips. Conditions in `prev` that are not
/// owned are dropped from the result (we never write them).
pub fn update_conditions(
    specs: &[ConditionSpec],
    prev: &[NodeCondition],
    pressure: &BTreeMap<String, bool>,
    now: SystemTime,
) -> (Vec<NodeCondition>, Vec<ConditionTransition>) {
    let mut out = Vec::with_capacity(specs.len());
    let mut transitions = Vec::new();
    for spec in specs {
        let status = ConditionStatus::from_bool(
            pressure.get(&spec.condition_type).copied().unwrap_or(false),
        );
        let (reason, message) = match status {
            ConditionStatus::True => (&spec.true_reason, &spec.true_message),
            _ => (&spec.false_reason, &spec.false_message),
        };
        let previous = prev
            .iter()
            .find(|c| c.condition_type == spec.condition_type);
        match previous {
            Some(p) if p.status == status => out.push(NodeCondition {
                last_heartbeat_time: now,
                ..p.clone()
            }),
            _ => {
                transitions.push(ConditionTransition {
                    condition_type: spec.condition_type.clone(),
                    from: previous.map(|p| p.status),
                    to: status,
                    reason: reason.clone(),
                    message: message.clone(),
                    event: event_reason(spec, status),
                });
                out.push(NodeCondition {
                    condition_type: spec.condition_type.clone(),
                    status,
                    reason: reason.clone(),
                    message: message.clone(),
                    last_heartbeat_time: now,
                    last_transition_time: now,
                });
            }
        }
    }
    (out, transitions)
}

/// Where a restart resumes its decisions (docs/semantics.md §6.3: the kubelet compares with the
/// stored Node): the Node's conditions as last seen, except where our own decision of a condition
/// is newer than what the Node showed — a transition decided just before the restart, which the
/// Node may or may not have received. Resuming from that decision means it is neither made nor
/// announced a second time; a later change by someone else (the controller's Unknown) keeps its
/// place, as its transition time is the later one.
pub fn resume_point(seen: &[NodeCondition], decided: &[NodeCondition]) -> Vec<NodeCondition> {
    let mut out: Vec<NodeCondition> = seen.to_vec();
    for d in decided {
        match out
            .iter_mut()
            .find(|c| c.condition_type == d.condition_type)
        {
            Some(c) => {
                let same = c.status == d.status && c.reason == d.reason && c.message == d.message;
                if !same && d.last_transition_time > c.last_transition_time {
                    *c = d.clone();
                }
            }
            None => out.push(d.clone()),
        }
    }
    out
}

/// Whether two condition lists differ in anything but heartbeat times: the kubelet's "changed"
/// test that decides an immediate report (docs/semantics.md §6.2 step 4).
pub fn changed_ignoring_heartbeat(a: &[NodeCondition], b: &[NodeCondition]) -> bool {
    let same = |x: &NodeCondition, y: &NodeCondition| {
        x.condition_type == y.condition_type
            && x.status == y.status
            && x.reason == y.reason
            && x.message == y.message
            && x.last_transition_time == y.last_transition_time
    };
    if a.len() != b.len() {
        return true;
    }
    // Asked on every cycle, nearly always of two lists in the same order: equal pair by pair,
    // they are equal once sorted too, with nothing allocated.
    if a.iter().zip(b).all(|(x, y)| same(x, y)) {
        return false;
    }
    // Otherwise as a multiset by type (a stable sort keeps the order within one type).
    let mut ka: Vec<&NodeCondition> = a.iter().collect();
    let mut kb: Vec<&NodeCondition> = b.iter().collect();
    ka.sort_by(|x, y| x.condition_type.cmp(&y.condition_type));
    kb.sort_by(|x, y| x.condition_type.cmp(&y.condition_type));
    !ka.iter().zip(&kb).all(|(x, y)| same(x, y))
}

/// The owned taints that should be on the node: one per condition that is True and maps to a
/// taint. Order follows the condition table, so the result is stable.
pub fn desired_taints(specs: &[ConditionSpec], conditions: &[NodeCondition]) -> Vec<TaintSpec> {
    specs
        .iter()
        .filter_map(|spec| {
            let on = conditions.iter().any(|c| {
                c.condition_type == spec.condition_type && c.status == ConditionStatus::True
            });
            spec.taint.clone().filter(|_| on)
        })
        .collect()
}

/// A change to the set of owned taints between two cycles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaintChange {
    Add(TaintSpec),
    Remove(TaintSpec),
}

/// The owned-taint changes from `before` to `after`, removals first.
pub fn taint_changes(before: &[TaintSpec], after: &[TaintSpec]) -> Vec<TaintChange> {
    let mut changes: Vec<TaintChange> = before
        .iter()
        .filter(|t| !after.contains(t))
        .cloned()
        .map(TaintChange::Remove)
        .collect();
    changes.extend(
        after
            .iter()
            .filter(|t| !before.contains(t))
            .cloned()
            .map(TaintChange::Add),
    );
    changes
}

/// Whether a report (or, standalone, a summary record) is due: at once on a change, otherwise
/// once `report_frequency` has passed since the last one; always when there was none
/// (docs/semantics.md §6.2 step 5).
pub fn report_due(
    changed: bool,
    last_report: Option<std::time::Duration>,
    now: std::time::Duration,
    report_frequency: std::time::Duration,
) -> bool {
    match last_report {
        None => true,
        Some(last) => changed || now.saturating_sub(last) >= report_frequency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn c(ty: &str, status: ConditionStatus, reason: &str, at_secs: u64) -> NodeCondition {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(at_secs);
        NodeCondition {
            condition_type: ty.into(),
            status,
            reason: reason.into(),
            message: format!("{reason} message"),
            last_heartbeat_time: at,
            last_transition_time: at,
        }
    }

    use ConditionStatus::{False, True, Unknown};

    /// `changed_ignoring_heartbeat` as it was first written: keys copied, sorted, compared.
    fn changed_by_copies(a: &[NodeCondition], b: &[NodeCondition]) -> bool {
        let key = |c: &NodeCondition| {
            (
                c.condition_type.clone(),
                c.status,
                c.reason.clone(),
                c.message.clone(),
                c.last_transition_time,
            )
        };
        let mut ka: Vec<_> = a.iter().map(key).collect();
        let mut kb: Vec<_> = b.iter().map(key).collect();
        ka.sort_by(|x, y| x.0.cmp(&y.0));
        kb.sort_by(|x, y| x.0.cmp(&y.0));
        ka != kb
    }

    fn arb_condition() -> impl proptest::strategy::Strategy<Value = NodeCondition> {
        use proptest::prelude::*;
        (
            prop::sample::select(vec!["A", "B", "C"]),
            prop::sample::select(vec![True, False, Unknown]),
            prop::sample::select(vec!["r", "s"]),
            0u64..3,
            0u64..3,
        )
            .prop_map(|(ty, status, reason, beat, at)| NodeCondition {
                last_heartbeat_time: SystemTime::UNIX_EPOCH + Duration::from_secs(beat),
                ..c(ty, status, reason, at)
            })
    }

    proptest::proptest! {
        /// Comparing in place (pair by pair first) answers as copying and sorting did, for
        /// lists in any order, with repeated types, and differing in any field.
        #[test]
        fn changed_ignoring_heartbeat_is_the_sorted_comparison(
            a in proptest::collection::vec(arb_condition(), 0..4),
            b in proptest::collection::vec(arb_condition(), 0..4),
            same in proptest::bool::ANY,
        ) {
            let b = if same { a.iter().rev().cloned().collect() } else { b };
            proptest::prop_assert_eq!(changed_ignoring_heartbeat(&a, &b), changed_by_copies(&a, &b));
            proptest::prop_assert_eq!(changed_ignoring_heartbeat(&a, &a), changed_by_copies(&a, &a));
        }
    }

    #[test]
    fn a_restart_resumes_from_the_newer_of_the_node_as_seen_and_our_own_decision() {
        let seen_false = c("MemoryPressure", False, "Sufficient", 100);
        let decided_true = c("MemoryPressure", True, "Insufficient", 200);
        type Case = (
            &'static str,
            Vec<NodeCondition>,
            Vec<NodeCondition>,
            Vec<NodeCondition>,
        );
        let cases: [Case; 5] = [
            (
                "a transition decided after the Node was last seen is resumed from",
                vec![seen_false.clone()],
                vec![decided_true.clone()],
                vec![decided_true.clone()],
            ),
            (
                "the controller's later Unknown keeps its place",
                vec![c("MemoryPressure", Unknown, "NodeStatusUnknown", 300)],
                vec![decided_true.clone()],
                vec![c("MemoryPressure", Unknown, "NodeStatusUnknown", 300)],
            ),
            (
                "the same condition as seen keeps the Node's (second-precision) time",
                vec![c("MemoryPressure", True, "Insufficient", 200)],
                vec![NodeCondition {
                    last_transition_time: decided_true.last_transition_time
                        + Duration::from_millis(400),
                    ..decided_true.clone()
                }],
                vec![c("MemoryPressure", True, "Insufficient", 200)],
            ),
            (
                "a decided condition the Node never showed is resumed from",
                vec![],
                vec![decided_true.clone()],
                vec![decided_true.clone()],
            ),
            (
                "nothing decided: the Node as seen",
                vec![seen_false.clone()],
                vec![],
                vec![seen_false.clone()],
            ),
        ];
        for (rule, seen, decided, want) in cases {
            assert_eq!(resume_point(&seen, &decided), want, "{rule}");
        }
    }
}
