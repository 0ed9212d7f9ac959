//! Detecting another writer of a condition we own (DESIGN §3): the value on the server flipped
//! away from what we last wrote, in a version newer than our write, or the server's managedFields
//! name another manager for that condition. Reported, never fought: while another writer holds a
//! condition, our reports leave that condition out entirely (status, reason, message and
//! heartbeat), and the other conditions go on as before (`plan_report`). Pure.

use std::collections::BTreeSet;
use std::time::SystemTime;

use crate::core::condition::NodeCondition;

/// A condition as observed on the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedCondition {
    pub condition_type: String,
    pub status: String,
    pub reason: String,
    pub last_heartbeat_time: Option<SystemTime>,
}

/// One managedFields entry, reduced to who and which condition types it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionManager {
    pub manager: String,
    pub condition_types: Vec<String>,
}

/// Another writer of one of our conditions.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ForeignWriter {
    pub condition_type: String,
    /// Who, when managedFields say so.
    pub manager: Option<String>,
    /// What the server holds, when it differs from what we wrote.
    pub observed: Option<(String, String)>,
}

/// The other writers visible in one observed version of the Node. `ours` is what we last wrote
/// successfully; an observation whose heartbeat is older than ours predates our write and shows
/// nothing about other writers.
pub fn foreign_writers(
    ours: &[NodeCondition],
    observed: &[ObservedCondition],
    managers: &[ConditionManager],
    our_manager: &str,
) -> Vec<ForeignWriter> {
    let mut out = Vec::new();
    for mine in ours {
        let others: Vec<&str> = managers
            .iter()
            .filter(|m| m.manager != our_manager)
            .filter(|m| m.condition_types.contains(&mine.condition_type))
            .map(|m| m.manager.as_str())
            .collect();
        let flipped = observed
            .iter()
            .find(|o| o.condition_type == mine.condition_type)
            .filter(|o| {
                o.last_heartbeat_time
                    .is_none_or(|hb| hb >= mine.last_heartbeat_time)
            })
            .filter(|o| o.status != mine.status.as_str() || o.reason != mine.reason)
            .map(|o| (o.status.clone(), o.reason.clone()));
        if flipped.is_some() || !others.is_empty() {
            out.push(ForeignWriter {
                condition_type: mine.condition_type.clone(),
                manager: (!others.is_empty()).then(|| others.join(",")),
                observed: flipped,
            });
        }
    }
    out
}

/// What one status report carries, decided from our desired conditions, what we last wrote and
/// which condition types another writer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionReport {
    /// The conditions to send: every desired one except those another writer holds.
    pub send: Vec<NodeCondition>,
    /// The desired condition types left out because another writer holds them.
    pub withheld: Vec<String>,
    /// Whether anything in `send` differs from what we last wrote beyond heartbeat times (or was
    /// never written): a report is then due at once, and must carry full conditions.
    pub changed: bool,
}

/// Decides what a report sends. A condition another writer holds is left out whole: sending its
/// status or reason would fight that writer (issue 10), and even a heartbeat alone would vouch
/// for a value we did not compute and keep it looking fresh after that writer stopped, hiding
/// its death from whoever reads `lastHeartbeatTime`. So nothing of ours touches it until the
/// other writer is gone. A withheld condition never counts as a change, so detection itself
/// causes no write.
pub fn plan_report(
    desired: &[NodeCondition],
    written: &[NodeCondition],
    held_by_others: &BTreeSet<String>,
) -> ConditionReport {
    let (send, held): (Vec<&NodeCondition>, Vec<&NodeCondition>) = desired
        .iter()
        .partition(|c| !held_by_others.contains(&c.condition_type));
    let changed = report_changed(desired, written, held_by_others);
    ConditionReport {
        send: send.into_iter().cloned().collect(),
        withheld: held.into_iter().map(|c| c.condition_type.clone()).collect(),
        changed,
    }
}

/// `plan_report(..).changed` without building the report: whether a condition we would send
/// differs from what we last wrote beyond heartbeat times (or was never written). Asked on every
/// cycle's decision; the report itself is built only when one is due.
pub fn report_changed(
    desired: &[NodeCondition],
    written: &[NodeCondition],
    held_by_others: &BTreeSet<String>,
) -> bool {
    desired
        .iter()
        .filter(|c| !held_by_others.contains(&c.condition_type))
        .any(|c| {
            written
                .iter()
                .find(|w| w.condition_type == c.condition_type)
                .is_none_or(|w| differs_beyond_heartbeat(w, c))
        })
}

/// What we have written after a successful report of `sent`: the sent conditions replace ours of
/// the same type, and a withheld condition keeps the value we last wrote. Other-writer detection
/// compares the server against this, so a withheld condition stays "held by another writer" as
/// long as the server shows a value or a manager that is not ours, rather than looking new.
pub fn record_write(before: &[NodeCondition], sent: &[NodeCondition]) -> Vec<NodeCondition> {
    let mut out: Vec<NodeCondition> = before
        .iter()
        .filter(|b| !sent.iter().any(|s| s.condition_type == b.condition_type))
        .cloned()
        .collect();
    out.extend(sent.iter().cloned());
    out.sort_by(|a, b| a.condition_type.cmp(&b.condition_type));
    out
}

fn differs_beyond_heartbeat(a: &NodeCondition, b: &NodeCondition) -> bool {
    a.status != b.status
        || a.reason != b.reason
        || a.message != b.message
        || a.last_transition_time != b.last_transition_time
}
