//! Node condition bookkeeping for the conditions we own (SEMANTICS §6.3): heartbeat on every
//! cycle, status/reason/message/transition time only on a flip, an event per flip. Also the
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

/// The kubelet's event reason for a standard condition's status (SEMANTICS §6.3); for our own
/// condition types, the condition's reason.
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

/// Whether two condition lists differ in anything but heartbeat times: the kubelet's "changed"
/// test that decides an immediate report (SEMANTICS §6.2 step 4).
pub fn changed_ignoring_heartbeat(a: &[NodeCondition], b: &[NodeCondition]) -> bool {
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
/// (SEMANTICS §6.2 step 5).
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
