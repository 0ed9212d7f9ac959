//! The reporter's decisions (docs/architecture.md §6), one step at a time, in the fence task's
//! shape: the reporter (`agent::reporter`) hands in what it observed — a decision of the sampling
//! loop, a version of our Node, the outcome of each write — with the instant, asks [`Reporting::poll`]
//! which writes are due, carries them out, and sleeps until [`Reporting::next_wake`] or its next
//! input. It decides nothing itself.
//!
//! - Status: only our conditions, at once when they changed beyond heartbeat times, otherwise
//!   once per `nodeStatusReportFrequency` since the last successful report (docs/semantics.md
//!   §6.2 step 5: `core::condition::report_due`); heartbeats alone while the server still holds
//!   every condition we send as we wrote it.
//! - Taints: reconciled at start, whenever the desired set changes, and whenever a version of the
//!   Node shows an owned taint missing while its condition holds, or a stray one of ours.
//! - Another writer of an owned condition is never fought: while it shows life
//!   (`ownership::OtherWriters`) our reports leave that condition out; once it is silent for
//!   `ownership::OTHER_WRITER_SILENCE` the condition is written again at once. The first report
//!   waits for the first sight of the Node (at most `first_sight_wait`), so a restart does not
//!   overwrite a live writer's condition.
//! - Versions of the Node the watch delivers from before our own last write are skipped
//!   ([`Reporting::stale`]): they would look like another writer undoing ours.
//! - Failures: one [`Retry`] (capped, jittered, shared with the fence), reset when the API server
//!   is heard again, so work resumes within one renew interval.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::core::backoff::Retry;
use crate::core::condition::{NodeCondition, TaintSpec};
use crate::core::ownership::{
    self, ConditionReport, ForeignWriter, NodeObservation, ObservedCondition, OtherWriters,
};
use crate::core::taint::Taint;
use crate::core::taint_plan;

/// The reporter's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportPolicy {
    /// `nodeStatusReportFrequency`: a report with nothing changed is sent this long after the
    /// last one.
    pub report_frequency: Duration,
    /// Every taint our conditions can map to.
    pub owned_taints: Vec<TaintSpec>,
    /// How long the first report waits for the first version of the Node.
    pub first_sight_wait: Duration,
    /// How long another writer holds a condition after its last sign of life.
    pub other_writer_silence: Duration,
    /// How long versions of the Node older than our last write are skipped at most.
    pub stale_window: Duration,
}

/// A status report due now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusWrite {
    /// The conditions to send (those another writer holds left out).
    pub send: Vec<NodeCondition>,
    /// Only heartbeats moved since our last write and the server holds every one of `send` as
    /// we wrote it: the heartbeats alone are sent.
    pub heartbeat_only: bool,
}

/// The writes due at one instant, carried out in this order; a failure ends the round (the
/// writes after it wait for the retry).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Writes {
    pub status: Option<StatusWrite>,
    /// The taints our conditions want on the Node now: reconcile them.
    pub taints: Option<Vec<TaintSpec>>,
    /// Send the queued Events.
    pub events: bool,
    /// The conditions another writer holds changed with time alone (one fell silent).
    pub foreign: Option<ForeignChange>,
}

/// A change of the set of conditions another writer holds, for the records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ForeignChange {
    /// Writers newly seen (by condition and writer, so one flipping back and forth is told once).
    pub appeared: Vec<ForeignWriter>,
    /// Conditions another writer held that are ours again.
    pub released: Vec<ForeignWriter>,
    /// How many conditions another writer holds now.
    pub holding: usize,
}

/// What a version of the Node told.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSeen {
    /// Owned taints our conditions want that the Node no longer carries after we wrote them (a
    /// `kubectl taint` racing us): restored.
    pub vanished: Vec<TaintSpec>,
    pub foreign: Option<ForeignChange>,
}

/// The outcome of a write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Stored; the Node the server answered with, when it did.
    Written(Option<NodeObservation>),
    /// Nothing to change (taints only).
    Unchanged,
    /// Failed; the server's `Retry-After`, if any.
    Failed { retry_after: Option<Duration> },
}

/// The reporter's state between steps.
#[derive(Clone, Debug)]
pub struct Reporting {
    policy: ReportPolicy,
    /// The latest decision of the sampling loop: our conditions and the taints they want.
    conditions: Option<Vec<NodeCondition>>,
    desired_taints: Vec<TaintSpec>,
    /// Our conditions as we last wrote them (a withheld one keeps its last written value).
    last_written: Option<Vec<NodeCondition>>,
    last_report: Option<Duration>,
    status_dirty: bool,
    taints_dirty: bool,
    taints_written: Option<Vec<TaintSpec>>,
    first_sight_by: Duration,
    writers: OtherWriters,
    foreign: BTreeSet<ForeignWriter>,
    /// The conditions of the Node as last seen (watched or answered to a write of ours).
    seen: Option<Vec<ObservedCondition>>,
    /// The status report of the round under way, recorded as written once it is stored.
    sending: Option<Vec<NodeCondition>>,
    /// The resourceVersion our last write produced and when it was stored: versions the watch
    /// delivers before it are from before that write.
    awaiting: Option<(String, Duration)>,
    retry: Retry,
}

impl Reporting {
    /// A reporter started at `now`: the taints are reconciled at once (an owned taint that no
    /// longer matches our conditions is fixed), the first report waits for the Node's first
    /// sight.
    pub fn new(policy: ReportPolicy, retry: Retry, now: Duration) -> Reporting {
        Reporting {
            first_sight_by: now + policy.first_sight_wait,
            policy,
            conditions: None,
            desired_taints: Vec::new(),
            last_written: None,
            last_report: None,
            status_dirty: false,
            taints_dirty: true,
            taints_written: None,
            writers: OtherWriters::default(),
            foreign: BTreeSet::new(),
            seen: None,
            sending: None,
            awaiting: None,
            retry,
        }
    }

    /// A decision of the sampling loop at `now`: a report is due at once when a condition we
    /// send changed beyond its heartbeat or another writer's condition became ours again; the
    /// taints when the wanted set changed.
    pub fn decided(
        &mut self,
        conditions: &[NodeCondition],
        desired_taints: &[TaintSpec],
        now: Duration,
    ) -> ForeignChange {
        // A writer seen on the Node before the first decision holds from the first report on.
        let change = self.refresh_foreign(conditions, now);
        self.status_dirty |= !change.released.is_empty();
        self.status_dirty |= ownership::report_changed(
            conditions,
            self.last_written.as_deref().unwrap_or_default(),
            &self.held(),
        );
        if self.taints_written.as_deref() != Some(desired_taints) {
            self.taints_dirty = true;
        }
        self.conditions = Some(conditions.to_vec());
        self.desired_taints = desired_taints.to_vec();
        change
    }

    /// Our write stored at `now` produced the version `resource_version` of the Node.
    pub fn wrote(&mut self, resource_version: Option<String>, now: Duration) {
        self.awaiting = resource_version.map(|rv| (rv, now));
    }

    /// Whether a version of the Node the watch delivers at `now` is from before our own last
    /// write, and so skipped: the watch is ordered, so every version before the one our write
    /// produced is older, and from that one on none is; after `stale_window` without it (the
    /// watch relisted past it) nothing more is skipped. resourceVersions are opaque: matched,
    /// never compared.
    pub fn stale(&mut self, resource_version: Option<&str>, now: Duration) -> bool {
        let Some((want, since)) = &self.awaiting else {
            return false;
        };
        if resource_version == Some(want.as_str())
            || now.saturating_sub(*since) > self.policy.stale_window
        {
            self.awaiting = None;
            return false;
        }
        true
    }

    /// A version of our Node seen at `now` (`our_manager`: our field manager), with the taints it
    /// carries; one [`Reporting::stale`] skips is not handed in.
    pub fn node_seen(
        &mut self,
        node: &NodeObservation,
        taints: &[Taint],
        our_manager: &str,
        now: Duration,
    ) -> NodeSeen {
        self.writers.observe(node, our_manager, now);
        self.seen = Some(node.conditions.clone());
        let Some(conditions) = self.conditions.clone() else {
            return NodeSeen::default();
        };
        let missing = taint_plan::missing_owned(taints, &self.desired_taints);
        let stray = taints.iter().any(|t| {
            taint_plan::is_owned(t, &self.policy.owned_taints)
                && !self
                    .desired_taints
                    .iter()
                    .any(|d| d.key == t.key && d.effect == t.effect)
        });
        if !missing.is_empty() || stray {
            self.taints_dirty = true;
        }
        let change = self.refresh_foreign(&conditions, now);
        self.status_dirty |= !change.released.is_empty();
        NodeSeen {
            // Before our first write, a missing taint is simply not written yet.
            vanished: if self.taints_written.is_some() {
                missing
            } else {
                Vec::new()
            },
            foreign: Some(change),
        }
    }

    /// The Node is gone from the watch: nothing is known of what the server holds.
    pub fn node_gone(&mut self) {
        self.seen = None;
    }

    /// The API server answers again (another task heard it): what waits for a retry is tried at
    /// once.
    pub fn heard_again(&mut self) {
        self.retry.reset();
    }

    /// The writes due at `now`. `durable`: the state directory holds the journal of what is
    /// about to be written (nothing goes out before its record is on disk). Also looks again at
    /// the conditions another writer holds: one silent for long enough is ours again, and a
    /// report of it is due at once.
    pub fn poll(&mut self, now: Duration, durable: bool) -> Writes {
        let Some(conditions) = self.conditions.clone() else {
            return Writes::default();
        };
        let change = self.refresh_foreign(&conditions, now);
        self.status_dirty |= !change.released.is_empty();
        let foreign =
            (!change.appeared.is_empty() || !change.released.is_empty()).then_some(change);
        // A report with nothing changed, once per report frequency since the last one.
        self.status_dirty |= self.last_report.is_some()
            && crate::core::condition::report_due(
                false,
                self.last_report,
                now,
                self.policy.report_frequency,
            );
        if !self.retry.due(now) || !durable {
            return Writes {
                foreign,
                ..Writes::default()
            };
        }
        let first_sight_pending = !self.writers.seen_node() && now < self.first_sight_by;
        let mut status = None;
        if self.status_dirty && !first_sight_pending {
            let report = ownership::plan_report(
                &conditions,
                self.last_written.as_deref().unwrap_or_default(),
                &self.held(),
            );
            if report.send.is_empty() {
                // Another writer holds every condition we own: nothing of ours to send.
                self.status_dirty = false;
                self.last_report = Some(now);
            } else {
                status = Some(self.status_write(report));
            }
        }
        if let Some(s) = &status {
            self.writers.sending(&s.send);
            self.sending = Some(s.send.clone());
        }
        Writes {
            status,
            taints: self.taints_dirty.then(|| self.desired_taints.clone()),
            events: true,
            foreign,
        }
    }

    fn status_write(&self, report: ConditionReport) -> StatusWrite {
        let heartbeat_only = self.last_written.is_some()
            && !report.changed
            && self
                .seen
                .as_deref()
                .is_some_and(|seen| server_holds(seen, &report.send));
        StatusWrite {
            send: report.send,
            heartbeat_only,
        }
    }

    /// The status report of this round came back with `outcome` at `now`.
    pub fn status_result(&mut self, outcome: &Outcome, now: Duration) {
        let sent = self.sending.take();
        match outcome {
            Outcome::Written(_) | Outcome::Unchanged => {
                if let Outcome::Written(Some(node)) = outcome {
                    // The server's answer is the freshest Node.
                    self.seen = Some(node.conditions.clone());
                }
                self.status_dirty = false;
                self.last_report = Some(now);
                if let Some(sent) = sent {
                    self.last_written = Some(ownership::record_write(
                        self.last_written.as_deref().unwrap_or_default(),
                        &sent,
                    ));
                }
            }
            Outcome::Failed { retry_after } => {
                self.retry.failed(now, *retry_after);
            }
        }
    }

    /// The taint reconciliation of this round, for the taints `desired` (as `poll` gave them),
    /// came back with `outcome` at `now`.
    pub fn taints_result(&mut self, desired: &[TaintSpec], outcome: &Outcome, now: Duration) {
        match outcome {
            Outcome::Written(node) => {
                if let Some(node) = node {
                    self.seen = Some(node.conditions.clone());
                }
                self.taints_done(desired);
            }
            Outcome::Unchanged => self.taints_done(desired),
            Outcome::Failed { retry_after } => {
                self.retry.failed(now, *retry_after);
            }
        }
    }

    fn taints_done(&mut self, desired: &[TaintSpec]) {
        self.taints_written = Some(desired.to_vec());
        // A decision that arrived during the write wants another round.
        self.taints_dirty = self.desired_taints != desired;
    }

    /// An Event failed to reach the server at `now` (for a reason worth retrying).
    pub fn event_failed(&mut self, retry_after: Option<Duration>, now: Duration) {
        self.retry.failed(now, retry_after);
    }

    /// A round ended at `now` with every write it tried stored: a later failure backs off from
    /// the base again.
    pub fn round_succeeded(&mut self) {
        self.retry.reset();
    }

    /// When the reporter must look again if no input arrives first: a condition another writer
    /// held becoming ours again; the retry after a failure, or else a report due by the report
    /// frequency and the first report once the wait for the Node's first sight ends. `None` when
    /// only an input can bring work (nothing decided yet, say). Every instant is after `now`,
    /// or a report due since, which the next `poll` takes.
    pub fn next_wake(&self, now: Duration) -> Option<Duration> {
        let retry = self.retry.next_at().filter(|at| *at > now);
        let Some(conditions) = self.conditions.as_deref() else {
            return retry;
        };
        let release = self
            .writers
            .next_release(conditions, now, self.policy.other_writer_silence);
        // Nothing is written before the retry: the other instants are taken then.
        let (report, first_sight) = if retry.is_some() {
            (None, None)
        } else {
            (
                self.last_report
                    .filter(|_| !self.status_dirty)
                    .map(|t| t + self.policy.report_frequency),
                (!self.writers.seen_node() && now < self.first_sight_by)
                    .then_some(self.first_sight_by),
            )
        };
        [retry, release, report, first_sight]
            .into_iter()
            .flatten()
            .min()
    }

    /// The conditions another writer holds at the last look.
    pub fn foreign(&self) -> &BTreeSet<ForeignWriter> {
        &self.foreign
    }

    fn held(&self) -> BTreeSet<String> {
        self.foreign
            .iter()
            .map(|f| f.condition_type.clone())
            .collect()
    }

    /// Brings the set of conditions another writer holds up to date at `now`.
    fn refresh_foreign(&mut self, conditions: &[NodeCondition], now: Duration) -> ForeignChange {
        let found = self
            .writers
            .holding(conditions, now, self.policy.other_writer_silence);
        let key = |f: &ForeignWriter| (f.condition_type.clone(), f.manager.clone());
        let before: BTreeSet<_> = self.foreign.iter().map(key).collect();
        let appeared = found
            .iter()
            .filter(|f| !before.contains(&key(f)))
            .cloned()
            .collect();
        let released = self
            .foreign
            .iter()
            .filter(|f| !found.iter().any(|g| g.condition_type == f.condition_type))
            .cloned()
            .collect();
        let holding = found.len();
        self.foreign = found.into_iter().collect();
        ForeignChange {
            appeared,
            released,
            holding,
        }
    }
}

/// Whether the Node holds each of `ours` with the status, reason and message we wrote.
fn server_holds(held: &[ObservedCondition], ours: &[NodeCondition]) -> bool {
    ours.iter().all(|c| {
        held.iter().any(|h| {
            h.condition_type == c.condition_type
                && h.status == c.status.as_str()
                && h.reason == c.reason
                && h.message == c.message
        })
    })
}
