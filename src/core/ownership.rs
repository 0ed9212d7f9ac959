//! Detecting another writer of a condition we own (docs/architecture.md §4), and deciding for how
//! long it holds that condition. Another writer counts as present only while it shows life: a
//! change of the condition (status, reason, message, `lastHeartbeatTime` or `lastTransitionTime`)
//! between two versions of the Node we saw, not explained by one of our own writes, within
//! [`OTHER_WRITER_SILENCE`]. `managedFields` naming another manager are not life: they outlive
//! their writer (a field it set keeps its name after we overwrite the others), so they alone
//! would abandon the condition forever. While another writer holds a condition, our reports leave
//! it out entirely (status, reason, message and heartbeat), and the other conditions go on as
//! before (`plan_report`); once it is silent for the window, the condition is ours again. Pure:
//! the instant is passed in, on the agent's monotonic clock.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, SystemTime};

use crate::core::condition::NodeCondition;

/// How long another writer holds a condition after its last sign of life: at least twice the
/// longest heartbeat of a known writer, so one late or lost heartbeat never hands the condition
/// to us. node-problem-detector re-sends every condition it owns (a new `lastHeartbeatTime`)
/// every `--k8s-exporter-heartbeat-period`, default 5m (its `cmd/options/options.go`, acted on
/// within its 10 s resync); the kubelet heartbeats its conditions every
/// `nodeStatusReportFrequency`, default 5m, and since v1.33 the interval after a change or a
/// restart is drawn within ±50% of it, so up to 7.5m (docs/semantics.md §6.2). Twice 7.5m: 15m. A
/// writer with a longer heartbeat is taken over between two of its beats, and each beat is then
/// reported again (WARN) and held for another window.
pub const OTHER_WRITER_SILENCE: Duration = Duration::from_secs(15 * 60);

/// Our recent writes of one condition remembered to recognise their echoes: a write whose
/// answer was lost (a timeout) may still be applied, and its echo must not look like another
/// writer. A few are enough: the watch delivers versions in order, soon after each write.
const REMEMBERED_WRITES: usize = 4;

/// A condition as observed on the server (times at the server's whole seconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedCondition {
    pub condition_type: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_heartbeat_time: Option<SystemTime>,
    pub last_transition_time: Option<SystemTime>,
}

/// One managedFields entry, reduced to who and which condition types it covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionManager {
    pub manager: String,
    pub condition_types: Vec<String>,
}

/// One version of the Node, reduced to what other-writer detection reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeObservation {
    pub conditions: Vec<ObservedCondition>,
    /// The `status` subresource's managedFields entries.
    pub managers: Vec<ConditionManager>,
}

/// Another writer holding one of our conditions.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ForeignWriter {
    pub condition_type: String,
    /// Who, when managedFields named another manager for the condition at its last sign of life.
    pub manager: Option<String>,
    /// The status and reason it left at its last sign of life.
    pub observed: Option<(String, String)>,
}

/// Which conditions another writer holds, from the versions of the Node seen so far and our own
/// writes. Small: per condition type on the Node, its value in the last version seen, our last
/// few writes of it and the instant of its last foreign change.
///
/// After a restart nothing is known of the past, so the first version seen is judged by
/// managedFields alone: a condition they name another manager for is held for one window from
/// that first sight ("presence unknown: treat as present"), not taken at once. A live writer
/// shows life within the window (its next heartbeat) and keeps the condition without a single
/// write of ours against it — what an operator restarting nodewarden beside a live writer
/// expects; a dead one costs one window after each restart before we write the condition again.
#[derive(Clone, Debug, Default)]
pub struct OtherWriters {
    /// Whether a version of the Node has been seen since the start.
    seen_node: bool,
    conditions: BTreeMap<String, Tracked>,
}

#[derive(Clone, Debug, Default)]
struct Tracked {
    /// The condition in the last version seen; `None` when that version did not carry it.
    last_seen: Option<ObservedCondition>,
    /// Our latest writes of it, oldest first.
    sent: VecDeque<NodeCondition>,
    /// The instant (monotonic) of the last sign of life of another writer.
    last_life: Option<Duration>,
    /// Other managers named for it at that instant, and the value it then held.
    writer: Option<String>,
    observed: Option<(String, String)>,
}

impl OtherWriters {
    /// Whether any version of the Node has been observed since the start.
    pub fn seen_node(&self) -> bool {
        self.seen_node
    }

    /// Remembers a report about to be sent (before the answer: a write whose answer is lost
    /// may still be applied, and its echo is ours).
    pub fn sending(&mut self, sent: &[NodeCondition]) {
        for c in sent {
            let t = self.conditions.entry(c.condition_type.clone()).or_default();
            if t.sent.len() >= REMEMBERED_WRITES {
                t.sent.pop_front();
            }
            t.sent.push_back(c.clone());
        }
    }

    /// Takes in one version of the Node seen at `now` (monotonic): a condition that changed
    /// since the previous version, to a value none of our recent writes has, shows life of
    /// another writer. Versions must be fed in the order the watch delivers them; the same
    /// version twice changes nothing.
    pub fn observe(&mut self, node: &NodeObservation, our_manager: &str, now: Duration) {
        let first_sight = !std::mem::replace(&mut self.seen_node, true);
        let types: BTreeSet<String> = self
            .conditions
            .keys()
            .cloned()
            .chain(node.conditions.iter().map(|c| c.condition_type.clone()))
            .collect();
        for ty in types {
            let current = node.conditions.iter().find(|c| c.condition_type == ty);
            let others: Vec<&str> = node
                .managers
                .iter()
                .filter(|m| m.manager != our_manager && m.condition_types.contains(&ty))
                .map(|m| m.manager.as_str())
                .collect();
            let t = self.conditions.entry(ty).or_default();
            let life = if first_sight {
                // Nothing to compare with: whoever managedFields name may be alive.
                current.is_some() && !others.is_empty()
            } else {
                // A condition removed is no value held against ours, so no life.
                current.is_some_and(|c| {
                    t.last_seen.as_ref() != Some(c) && !t.sent.iter().any(|s| is_echo(c, s))
                })
            };
            if life {
                t.last_life = Some(now);
                t.writer = (!others.is_empty()).then(|| others.join(","));
                t.observed = current.map(|c| (c.status.clone(), c.reason.clone()));
            }
            t.last_seen = current.cloned();
        }
    }

    /// The conditions of `owned` another writer holds at `now`: those it showed life on less
    /// than `silence` ago.
    pub fn holding(
        &self,
        owned: &[NodeCondition],
        now: Duration,
        silence: Duration,
    ) -> Vec<ForeignWriter> {
        owned
            .iter()
            .filter_map(|c| {
                let t = self.conditions.get(&c.condition_type)?;
                let life = t.last_life?;
                (now < life + silence).then(|| ForeignWriter {
                    condition_type: c.condition_type.clone(),
                    manager: t.writer.clone(),
                    observed: t.observed.clone(),
                })
            })
            .collect()
    }

    /// The next instant (monotonic) at which a condition of `owned` held at `now` is released
    /// unless its writer shows life again: when the reporter must look again, even if the Node
    /// does not change meanwhile.
    pub fn next_release(
        &self,
        owned: &[NodeCondition],
        now: Duration,
        silence: Duration,
    ) -> Option<Duration> {
        owned
            .iter()
            .filter_map(|c| self.conditions.get(&c.condition_type)?.last_life)
            .map(|life| life + silence)
            .filter(|release| now < *release)
            .min()
    }
}

/// Whether the server's `seen` is what our write `ours` left: every field we write equal, times
/// at the whole seconds the API server keeps (`metav1.Time`).
fn is_echo(seen: &ObservedCondition, ours: &NodeCondition) -> bool {
    let secs = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs())
    };
    seen.status == ours.status.as_str()
        && seen.reason == ours.reason
        && seen.message == ours.message
        && seen.last_heartbeat_time.and_then(secs) == secs(ours.last_heartbeat_time)
        && seen.last_transition_time.and_then(secs) == secs(ours.last_transition_time)
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
/// other writer has shown no life for [`OTHER_WRITER_SILENCE`]. A withheld condition never
/// counts as a change, so detection itself causes no write.
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
/// the same type, and a withheld condition keeps the value we last wrote (what `report_changed`
/// compares our verdict with). Other-writer detection does not compare against this: the last
/// value another writer left differs from it for as long as nobody writes the condition, so it
/// would hold the condition forever ([`OtherWriters`] looks for changes instead).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::condition::ConditionStatus;

    const MEM: &str = "MemoryPressure";
    const WINDOW: Duration = Duration::from_secs(900);

    fn wall(secs: f64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs_f64(secs)
    }

    /// Ours: MemoryPressure False, heartbeat at `hb` (wall seconds), since 0.
    fn ours(hb: f64) -> NodeCondition {
        NodeCondition {
            condition_type: MEM.into(),
            status: ConditionStatus::False,
            reason: "NodewardenHasSufficientMemory".into(),
            message: "ok".into(),
            last_heartbeat_time: wall(hb),
            last_transition_time: wall(0.0),
        }
    }

    /// The server's copy of our write of `ours(hb)`, at whole seconds.
    fn echo(hb: u64) -> ObservedCondition {
        ObservedCondition {
            condition_type: MEM.into(),
            status: "False".into(),
            reason: "NodewardenHasSufficientMemory".into(),
            message: "ok".into(),
            last_heartbeat_time: Some(wall(hb as f64)),
            last_transition_time: Some(wall(0.0)),
        }
    }

    /// node-problem-detector's MemoryPressure True, heartbeat at `hb`, since `since`.
    fn npd(since: u64, hb: u64) -> ObservedCondition {
        ObservedCondition {
            condition_type: MEM.into(),
            status: "True".into(),
            reason: "NPDMemoryPressure".into(),
            message: "memory is low".into(),
            last_heartbeat_time: Some(wall(hb as f64)),
            last_transition_time: Some(wall(since as f64)),
        }
    }

    enum Step {
        /// We send this (monotonic time does not matter to sending).
        Send(NodeCondition),
        /// At this monotonic second, a version of the Node with these conditions, and
        /// managedFields naming these managers for MemoryPressure.
        See(u64, Vec<ObservedCondition>, &'static [&'static str]),
    }
    use Step::{See, Send};

    const BOTH: &[&str] = &["nodewarden", "node-problem-detector"];
    const US: &[&str] = &["nodewarden"];

    fn run(steps: Vec<Step>) -> OtherWriters {
        let mut w = OtherWriters::default();
        for step in steps {
            match step {
                Send(c) => w.sending(&[c]),
                See(at, conditions, managers) => {
                    let node = NodeObservation {
                        conditions,
                        managers: managers
                            .iter()
                            .map(|m| ConditionManager {
                                manager: (*m).into(),
                                condition_types: vec![MEM.into()],
                            })
                            .collect(),
                    };
                    w.observe(&node, "nodewarden", Duration::from_secs(at));
                }
            }
        }
        w
    }

    /// Whether MemoryPressure is held at monotonic second `at`.
    fn held(w: &OtherWriters, at: u64) -> bool {
        !w.holding(&[ours(0.0)], Duration::from_secs(at), WINDOW)
            .is_empty()
    }

    #[test]
    fn another_writer_holds_a_condition_only_while_it_shows_life() {
        struct Case {
            rule: &'static str,
            steps: Vec<Step>,
            /// (monotonic second, held then?)
            checks: &'static [(u64, bool)],
        }
        // Every case starts the way a running agent does: our write, then its echo.
        let start = || vec![Send(ours(100.4)), See(100, vec![echo(100)], US)];
        let with = |mut more: Vec<Step>| {
            let mut s = start();
            s.append(&mut more);
            s
        };
        let cases = [
            Case {
                rule: "our own write's echo is no other writer",
                steps: start(),
                checks: &[(100, false), (2000, false)],
            },
            Case {
                rule: "a flip by someone else holds the condition for the window from that change",
                steps: with(vec![See(115, vec![npd(115, 115)], BOTH)]),
                checks: &[(115, true), (1014, true), (1015, false)],
            },
            Case {
                rule: "a writer that keeps heartbeating is held for as long as it beats",
                steps: with(vec![
                    See(115, vec![npd(115, 115)], BOTH),
                    See(415, vec![npd(115, 415)], BOTH),
                    See(715, vec![npd(115, 715)], BOTH),
                    See(1015, vec![npd(115, 1015)], BOTH),
                    See(1315, vec![npd(115, 1315)], BOTH),
                ]),
                checks: &[(1014, true), (1314, true), (2214, true), (2215, false)],
            },
            Case {
                rule: "a message alone changing is life",
                steps: with(vec![
                    See(115, vec![npd(115, 115)], BOTH),
                    See(
                        800,
                        vec![ObservedCondition {
                            message: "memory is still low".into(),
                            ..npd(115, 115)
                        }],
                        BOTH,
                    ),
                ]),
                checks: &[(1014, true), (1699, true), (1700, false)],
            },
            Case {
                rule: "managedFields naming the writer without a change are not life",
                steps: with(vec![
                    See(115, vec![npd(115, 115)], BOTH),
                    // Versions written for other reasons (a taint, another condition): the
                    // writer is still named, its condition unchanged.
                    See(500, vec![npd(115, 115)], BOTH),
                    See(1000, vec![npd(115, 115)], BOTH),
                    See(1200, vec![npd(115, 115)], BOTH),
                ]),
                checks: &[(1014, true), (1015, false), (1200, false)],
            },
            Case {
                rule: "after a takeover our writes and their echoes do not bring the writer back",
                steps: with(vec![
                    See(115, vec![npd(115, 115)], BOTH),
                    Send(ours(1015.2)),
                    See(1015, vec![echo(1015)], BOTH),
                    Send(ours(1075.9)),
                    See(1075, vec![echo(1075)], BOTH),
                ]),
                checks: &[(1015, false), (1075, false), (3000, false)],
            },
            Case {
                rule: "the echo of a write whose answer was lost is ours",
                steps: with(vec![
                    Send(ours(160.0)),
                    Send(ours(161.0)),
                    See(161, vec![echo(160)], US),
                    See(162, vec![echo(161)], US),
                ]),
                checks: &[(162, false)],
            },
            Case {
                rule: "our value with a heartbeat we did not send is someone else's heartbeat",
                steps: with(vec![See(130, vec![echo(130)], BOTH)]),
                checks: &[(130, true), (1029, true), (1030, false)],
            },
            Case {
                rule: "the same version seen twice is no change",
                steps: with(vec![
                    See(115, vec![npd(115, 115)], BOTH),
                    See(900, vec![npd(115, 115)], BOTH),
                ]),
                checks: &[(1015, false)],
            },
            Case {
                rule: "a condition removed is no value held against ours",
                steps: with(vec![See(115, vec![], US)]),
                checks: &[(115, false)],
            },
            Case {
                rule: "a condition written by someone else where there was none is life",
                steps: with(vec![
                    See(115, vec![], US),
                    See(120, vec![npd(120, 120)], BOTH),
                ]),
                checks: &[(120, true), (1020, false)],
            },
            Case {
                rule: "after a restart, a condition managedFields give to another writer is held \
                       for one window from the first sight",
                steps: vec![See(5, vec![npd(0, 0)], BOTH)],
                checks: &[(5, true), (904, true), (905, false)],
            },
            Case {
                rule: "after a restart, a condition only we manage is ours",
                steps: vec![See(5, vec![echo(0)], US)],
                checks: &[(5, false)],
            },
            Case {
                rule: "after a restart, a live writer keeps the condition past the first window",
                steps: vec![
                    See(5, vec![npd(0, 0)], BOTH),
                    See(300, vec![npd(0, 300)], BOTH),
                    See(600, vec![npd(0, 600)], BOTH),
                ],
                checks: &[(905, true), (1499, true), (1500, false)],
            },
        ];
        for c in cases {
            let w = run(c.steps);
            for (at, want) in c.checks {
                assert_eq!(held(&w, *at), *want, "{} (at {at} s)", c.rule);
            }
        }
    }

    #[test]
    fn the_next_release_is_when_the_hold_ends_and_none_once_it_has() {
        let w = run(vec![
            Send(ours(100.0)),
            See(100, vec![echo(100)], US),
            See(115, vec![npd(115, 115)], BOTH),
        ]);
        let at = |s: u64| Duration::from_secs(s);
        let owned = [ours(0.0)];
        assert_eq!(w.next_release(&owned, at(200), WINDOW), Some(at(1015)));
        assert_eq!(w.next_release(&owned, at(1015), WINDOW), None);
        // A condition we do not own is never waited for.
        assert_eq!(w.next_release(&[], at(200), WINDOW), None);
    }

    #[test]
    fn a_held_condition_names_its_writer_and_the_value_it_left() {
        let w = run(vec![See(5, vec![npd(0, 0)], BOTH)]);
        assert_eq!(
            w.holding(&[ours(0.0)], Duration::from_secs(5), WINDOW),
            [ForeignWriter {
                condition_type: MEM.into(),
                manager: Some("node-problem-detector".into()),
                observed: Some(("True".into(), "NPDMemoryPressure".into())),
            }]
        );
        assert!(w.seen_node());
        assert!(!OtherWriters::default().seen_node());
    }
}
