//! Detecting another writer of a condition we own (DESIGN §3): the value on the server flipped
//! away from what we last wrote, in a version newer than our write, or the server's managedFields
//! name another manager for that condition. Reported, never fought: the agent keeps its own
//! cadence and does not rewrite faster in response. Pure.

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
