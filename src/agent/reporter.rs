//! The reporter task: turns the sampling loop's decisions into writes to our Node
//! (docs/architecture.md §6). When a status report, a heartbeat, a taint write or a retry is due
//! is `core::reporting`'s to decide (the rules are written there); this task hands it each input
//! with the instant, carries out the writes it names — a strategic-merge PATCH of
//! `nodes/<n>/status` with only our conditions, the taint reconciliation, the queued Events —
//! and sleeps until the core's next wake-up or the next input. It also keeps what the core does
//! not decide: the Event queue and its journal on disk.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::{Event, Node};
use kube::Api;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::agent::clock::Clock;
use crate::agent::sampling::Snapshot;
use crate::api::events::{self, EVENT_NAMESPACE, PendingEvent};
use crate::api::node::{self, TaintWrite};
use crate::api::reachability::Reachability;
use crate::api::{ApiError, FIELD_MANAGER, Requests};
use crate::config::TaintSpec;
use crate::core::backoff::{Backoff, Jitter, Retry};
use crate::core::condition::{self, NodeCondition};
use crate::core::contact::Request;
use crate::core::ownership::{
    self, ConditionManager, ForeignWriter, NodeObservation, ObservedCondition,
};
use crate::core::reporting::{
    ForeignChange, Outcome, ReportPolicy, Reporting, StatusWrite, Writes,
};
use crate::observe::http::Health;

/// How long watch versions older than our last write are skipped at most.
const STALE_WINDOW: Duration = Duration::from_secs(30);

/// How long the first status report waits for the Node watch's first version, so that another
/// writer already holding one of our conditions is known before we write it. The watch lists one
/// Node at once when the API server answers; when it does not, no report gets through either.
const FIRST_SIGHT_WAIT: Duration = Duration::from_secs(10);

/// Events kept while the API is unreachable; older ones are dropped (and counted) beyond this.
const MAX_PENDING_EVENTS: usize = 1000;

/// What the reporter needs to know.
pub struct ReporterSettings {
    pub node: String,
    pub report_frequency: Duration,
    /// Every taint our conditions can map to.
    pub owned_taints: Vec<TaintSpec>,
    pub backoff: Backoff,
    /// The agent's clock: a heartbeat-only report is due by `core::condition::report_due`.
    pub clock: Clock,
}

/// The reporter's inputs.
pub struct ReporterInputs {
    pub snapshots: watch::Receiver<Option<Arc<Snapshot>>>,
    pub node: watch::Receiver<Option<Arc<Node>>>,
    pub events: mpsc::UnboundedReceiver<PendingEvent>,
    /// Events a previous run could not deliver (from the state directory), sent first.
    pub held: Vec<PendingEvent>,
    /// The journal after every change, for the state directory.
    pub journal: watch::Sender<Journal>,
    /// The journal generation the state directory holds: nothing is written to the API server
    /// before the journal entry that announces it is on disk.
    pub durable: watch::Receiver<u64>,
}

/// What must be on disk before the reporter writes to the API server: the Events not yet
/// delivered and our conditions as decided. A SIGKILL between a write and its record would
/// otherwise make the restarted agent decide (and announce) the same transition again, with a
/// new time and so a second Event under another name. `generation` grows with every change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Journal {
    pub generation: u64,
    pub events: Vec<PendingEvent>,
    pub decided: Vec<NodeCondition>,
}

/// The Node's UID, once known (for owner references and event objects).
pub type NodeUid = watch::Receiver<Option<String>>;

/// Runs until the task is dropped. Each input is handed to the core (`core::reporting`), which
/// says which writes are due and when to look again; this loop carries them out.
pub async fn run(
    client: kube::Client,
    requests: Requests,
    settings: ReporterSettings,
    mut inputs: ReporterInputs,
    reach: Arc<Reachability>,
    health: Arc<Health>,
    uid: NodeUid,
) {
    let clock = settings.clock;
    let writer = Writer {
        nodes: Api::all(client.clone()),
        event_api: Api::namespaced(client, EVENT_NAMESPACE),
        requests,
        node: settings.node.clone(),
        owned_taints: settings.owned_taints.clone(),
        reach: reach.clone(),
        health: health.clone(),
        uid,
        clock,
    };
    let mut core = Reporting::new(
        ReportPolicy {
            report_frequency: settings.report_frequency,
            owned_taints: settings.owned_taints.clone(),
            first_sight_wait: FIRST_SIGHT_WAIT,
            other_writer_silence: ownership::OTHER_WRITER_SILENCE,
            stale_window: STALE_WINDOW,
        },
        Retry::new(settings.backoff, Jitter::new(seed())),
        clock.now().mono,
    );
    let mut latest: Option<Arc<Snapshot>> = None;
    let mut pending: VecDeque<PendingEvent> = std::mem::take(&mut inputs.held).into();
    let mut queue_changed = false;
    let mut dropped_events: u64 = 0;
    let mut reach_changes = reach.subscribe();
    // The Node as last seen, the base of a taint write (the server's answer to our last write
    // when it is fresher than the watch).
    let mut seen_node: Option<Arc<Node>> = None;

    loop {
        let wake_at = core
            .next_wake(clock.now().mono)
            .map(|t| clock.instant_of(t));
        tokio::select! {
            changed = inputs.snapshots.changed() => {
                if changed.is_err() { return; }
                let snap = inputs.snapshots.borrow_and_update().clone();
                if let Some(snap) = snap {
                    // A cycle sends its transitions' Events before its conditions: both go into
                    // the same journal entry, so neither reaches the disk (or the API) alone.
                    while let Ok(ev) = inputs.events.try_recv() {
                        enqueue(&mut pending, ev, &mut dropped_events);
                        queue_changed = true;
                    }
                    let decided = &inputs.journal.borrow().decided;
                    if condition::changed_ignoring_heartbeat(decided, &snap.conditions) {
                        queue_changed = true;
                    }
                    let change = core.decided(&snap.conditions, &snap.desired_taints, clock.now().mono);
                    record_foreign(&health, &change);
                    latest = Some(snap);
                }
            }
            changed = inputs.node.changed() => {
                if changed.is_err() { return; }
                let observed = inputs.node.borrow_and_update().clone();
                let rv = observed.as_ref().and_then(|n| n.metadata.resource_version.clone());
                // After each of our writes the watch may still deliver versions from before it.
                if core.stale(rv.as_deref(), clock.now().mono) {
                    continue;
                }
                seen_node.clone_from(&observed);
                let Some(n) = observed else {
                    core.node_gone();
                    continue;
                };
                let current: Vec<_> = n.spec.as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .map(|ts| ts.iter().filter_map(node::to_core).collect())
                    .unwrap_or_default();
                let seen = core.node_seen(&observation(&n), &current, FIELD_MANAGER, clock.now().mono);
                if !seen.vanished.is_empty() {
                    let names: Vec<String> = seen.vanished.iter().map(|m| format!("{}:{}", m.key, m.effect)).collect();
                    log::warn!(
                        taint = names.join(",").as_str();
                        "owned taint {} vanished from the node while its condition holds; restoring it", names.join(", ")
                    );
                }
                if let Some(change) = &seen.foreign {
                    record_foreign(&health, change);
                }
            }
            Some(ev) = inputs.events.recv() => {
                enqueue(&mut pending, ev, &mut dropped_events);
                queue_changed = true;
            }
            _ = sleep_until_opt(wake_at), if wake_at.is_some() => {}
            changed = inputs.durable.changed() => {
                // The journal reached the disk: what waited for it may be written now.
                if changed.is_err() { return; }
            }
            changed = reach_changes.changed() => {
                // The API server answers again (another task saw it): retry now rather than
                // at the end of the backoff, so work resumes within one renew interval.
                if changed.is_ok()
                    && *reach_changes.borrow_and_update() == crate::api::reachability::State::Reachable
                {
                    core.heard_again();
                }
            }
        }
        // Before any backoff: an event queued while cut off reaches the state directory now.
        publish(
            &inputs.journal,
            &pending,
            latest.as_deref(),
            &mut queue_changed,
        );
        // Written ahead: nothing goes out before the state directory holds it.
        let durable = *inputs.durable.borrow_and_update() >= inputs.journal.borrow().generation;
        let writes = core.poll(clock.now().mono, durable);
        if let Some(change) = &writes.foreign {
            record_foreign(&health, change);
        }
        let stored = writer
            .carry_out(
                &mut core,
                &writes,
                &mut seen_node,
                &mut pending,
                &mut queue_changed,
            )
            .await;
        publish(
            &inputs.journal,
            &pending,
            latest.as_deref(),
            &mut queue_changed,
        );
        if writes.events && stored {
            core.round_succeeded();
        }
    }
}

/// What carries out the writes the core names: the API handles and where each outcome is noted.
struct Writer {
    nodes: Api<Node>,
    event_api: Api<Event>,
    /// The API requests' timeout and counters.
    requests: Requests,
    node: String,
    owned_taints: Vec<TaintSpec>,
    reach: Arc<Reachability>,
    health: Arc<Health>,
    uid: NodeUid,
    clock: Clock,
}

impl Writer {
    /// Carries out one round of `writes` in order — status, taints, queued Events — handing
    /// each outcome to the core; a failure ends the round. Returns whether every write tried was
    /// stored (or refused for good, for an Event).
    async fn carry_out(
        &self,
        core: &mut Reporting,
        writes: &Writes,
        seen_node: &mut Option<Arc<Node>>,
        pending: &mut VecDeque<PendingEvent>,
        queue_changed: &mut bool,
    ) -> bool {
        if let Some(report) = &writes.status
            && !self.status(core, report, seen_node).await
        {
            return false;
        }
        if let Some(desired) = &writes.taints
            && !self.taints(core, desired, seen_node).await
        {
            return false;
        }
        !writes.events || self.events(core, pending, queue_changed).await
    }

    async fn status(
        &self,
        core: &mut Reporting,
        report: &StatusWrite,
        seen_node: &mut Option<Arc<Node>>,
    ) -> bool {
        let sent = Instant::now();
        let result = node::patch_conditions(
            &self.requests,
            &self.nodes,
            &self.node,
            &report.send,
            report.heartbeat_only,
        )
        .await;
        note(&self.reach, &self.health, &result, Request::OwnWrite, sent);
        let outcome = match result {
            Ok(written) => {
                core.wrote(
                    written.metadata.resource_version.clone(),
                    self.clock.now().mono,
                );
                let seen = observation(&written);
                *seen_node = Some(Arc::new(written));
                Outcome::Written(Some(seen))
            }
            Err(e) => failure(&e),
        };
        core.status_result(&outcome, self.clock.now().mono);
        !matches!(outcome, Outcome::Failed { .. })
    }

    async fn taints(
        &self,
        core: &mut Reporting,
        desired: &[TaintSpec],
        seen_node: &mut Option<Arc<Node>>,
    ) -> bool {
        let sent = Instant::now();
        let result = node::reconcile_taints(
            &self.requests,
            &self.nodes,
            &self.node,
            seen_node.as_deref().cloned(),
            &self.owned_taints,
            desired,
            self.clock.now().wall,
            5,
        )
        .await;
        // Only a taint write stored is proof; "unchanged" may have been a read alone.
        let request = match &result {
            Ok(TaintWrite::Written(..)) => Request::OwnWrite,
            _ => Request::Other,
        };
        note(&self.reach, &self.health, &result, request, sent);
        let outcome = match result {
            Ok(TaintWrite::Unchanged) => {
                self.health.metrics.record_taint_write("unchanged");
                Outcome::Unchanged
            }
            Ok(TaintWrite::Written(after, written)) => {
                core.wrote(
                    written.metadata.resource_version.clone(),
                    self.clock.now().mono,
                );
                let seen = observation(&written);
                *seen_node = Some(Arc::new(*written));
                self.health.metrics.record_taint_write("written");
                log::info!(
                    taints = after.join(",").as_str();
                    "node taints written: [{}]", after.join(", ")
                );
                Outcome::Written(Some(seen))
            }
            Err(e) => {
                self.health.metrics.record_taint_write("error");
                failure(&e)
            }
        };
        core.taints_result(desired, &outcome, self.clock.now().mono);
        !matches!(outcome, Outcome::Failed { .. })
    }

    /// Sends the queued Events in order until one fails for a reason worth retrying.
    async fn events(
        &self,
        core: &mut Reporting,
        pending: &mut VecDeque<PendingEvent>,
        queue_changed: &mut bool,
    ) -> bool {
        while let Some(ev) = pending.front() {
            let node_uid = self.uid.borrow().clone();
            let sent = Instant::now();
            let result = events::send(
                &self.requests,
                &self.event_api,
                &self.node,
                node_uid.as_deref(),
                ev,
            )
            .await;
            note(&self.reach, &self.health, &result, Request::Other, sent);
            match result {
                Ok(()) => {
                    pending.pop_front();
                    *queue_changed = true;
                }
                // The server refused this event for good: drop it rather than block the queue.
                Err(e) if !e.is_transient() => {
                    log::warn!(error = e.to_string().as_str(); "event dropped: {e}");
                    pending.pop_front();
                    *queue_changed = true;
                }
                Err(e) => {
                    log::debug!(error = e.to_string().as_str(); "event not sent, retrying: {e}");
                    core.event_failed(e.retry_after(), self.clock.now().mono);
                    return false;
                }
            }
        }
        true
    }
}

/// A failed write in the core's terms (logged here: the core keeps no records).
fn failure(e: &ApiError) -> Outcome {
    log::debug!(error = e.to_string().as_str(); "write failed, retrying after a backoff: {e}");
    Outcome::Failed {
        retry_after: e.retry_after(),
    }
}

/// Logs and counts a change of the conditions another writer holds.
fn record_foreign(health: &Health, change: &ForeignChange) {
    report_foreign(&change.appeared, &change.released);
    health.metrics.record_foreign_writers(change.holding);
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Queues one Event, dropping the oldest beyond [`MAX_PENDING_EVENTS`].
fn enqueue(pending: &mut VecDeque<PendingEvent>, ev: PendingEvent, dropped: &mut u64) {
    if pending.len() >= MAX_PENDING_EVENTS {
        pending.pop_front();
        *dropped += 1;
        if *dropped == 1 || dropped.is_power_of_two() {
            log::warn!(
                "{dropped} event(s) dropped: more than {MAX_PENDING_EVENTS} waiting for the API server"
            );
        }
    }
    pending.push_back(ev);
}

/// Hands the journal (the event queue, our conditions as decided) to the state directory's
/// writer when it changed.
fn publish(
    journal: &watch::Sender<Journal>,
    pending: &VecDeque<PendingEvent>,
    latest: Option<&Snapshot>,
    changed: &mut bool,
) {
    if std::mem::take(changed) {
        journal.send_modify(|j| {
            j.generation += 1;
            j.events = pending.iter().cloned().collect();
            if let Some(snap) = latest {
                j.decided.clone_from(&snap.conditions);
            }
        });
    }
}

/// Records the outcome of a request sent at `sent` for reachability (which also keeps the
/// metric) and readiness.
fn note<T>(
    reach: &Reachability,
    health: &Health,
    result: &Result<T, ApiError>,
    request: Request,
    sent: Instant,
) {
    reach.record(result, request, sent);
    let answered = match result {
        Ok(_) => true,
        Err(e) => e.got_answer(),
    };
    if answered {
        health.set_api_ok();
    }
}

/// A jitter seed that differs between processes and starts.
pub(crate) use crate::api::jitter_seed as seed;

/// This version of the Node as other-writer detection reads it (public for the guard that the
/// watch's compact Node keeps what this reads: `tests/footprint.rs`).
pub fn observation(n: &Node) -> NodeObservation {
    let time = |t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        t.map(|t| SystemTime::from(t.0))
    };
    let conditions: Vec<ObservedCondition> = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| {
            cs.iter()
                .map(|c| ObservedCondition {
                    condition_type: c.type_.clone(),
                    status: c.status.clone(),
                    reason: c.reason.clone().unwrap_or_default(),
                    message: c.message.clone().unwrap_or_default(),
                    last_heartbeat_time: time(c.last_heartbeat_time.as_ref()),
                    last_transition_time: time(c.last_transition_time.as_ref()),
                })
                .collect()
        })
        .unwrap_or_default();
    let managers: Vec<ConditionManager> = n
        .metadata
        .managed_fields
        .as_ref()
        .map(|mfs| {
            mfs.iter()
                .filter(|m| m.subresource.as_deref() == Some("status"))
                .map(|m| ConditionManager {
                    manager: m.manager.clone().unwrap_or_default(),
                    condition_types: m
                        .fields_v1
                        .as_ref()
                        .map(|f| condition_keys(&f.0))
                        .unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    NodeObservation {
        conditions,
        managers,
    }
}

/// The condition types named in a managedFields `fieldsV1` tree:
/// `{"f:status": {"f:conditions": {"k:{\"type\":\"X\"}": …}}}`.
fn condition_keys(fields: &serde_json::Value) -> Vec<String> {
    fields
        .get("f:status")
        .and_then(|s| s.get("f:conditions"))
        .and_then(|c| c.as_object())
        .map(|m| {
            m.keys()
                .filter_map(|k| k.strip_prefix("k:"))
                .filter_map(|k| serde_json::from_str::<serde_json::Value>(k).ok())
                .filter_map(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Logs each newly seen other writer (by condition and writer, not by the value it holds, so a
/// writer flipping back and forth is reported once), and, once, each condition taken back.
fn report_foreign(appeared: &[ForeignWriter], released: &[ForeignWriter]) {
    let silence = humantime::format_duration(ownership::OTHER_WRITER_SILENCE);
    for f in appeared {
        let who = f.manager.as_deref().unwrap_or("an unknown writer");
        let observed = f
            .observed
            .as_ref()
            .map(|(s, r)| format!("; the server holds {s} ({r})"))
            .unwrap_or_default();
        log::warn!(
            condition = f.condition_type.as_str(), writer = who;
            "another writer ({who}) also writes condition {} that nodewarden owns{observed}; \
             not fighting it: nodewarden stops writing this condition (status, reason and \
             heartbeat) until that writer has shown no change nor heartbeat for {silence} — give \
             nodewarden's conditions distinct types on nodes that run a kubelet",
            f.condition_type
        );
    }
    for f in released {
        let who = f.manager.as_deref().unwrap_or("an unknown writer");
        log::info!(
            condition = f.condition_type.as_str(), writer = who;
            "the other writer ({who}) of condition {} showed no change nor heartbeat for {silence}; \
             nodewarden writes the condition again", f.condition_type
        );
    }
}
