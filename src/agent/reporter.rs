//! The reporter task: turns the sampling loop's decisions into writes to our Node
//! (docs/architecture.md §6).
//!
//! - Status: a strategic-merge PATCH of `nodes/<n>/status` with only our conditions, at once
//!   when they changed (ignoring heartbeat times), otherwise once per
//!   `nodeStatusReportFrequency` since the last successful report.
//! - Taints: reconciled at start, whenever the desired set changes, and whenever the Node watch
//!   shows an owned taint missing while its condition holds (a `kubectl taint` racing us).
//! - Events: one per condition transition, kept in order while the API is unreachable.
//! - Another writer of an owned condition is reported once per change, never fought: while it
//!   shows life (`ownership::OtherWriters`), our reports leave that condition out
//!   (`ownership::plan_report`); once it is silent for `ownership::OTHER_WRITER_SILENCE`, the
//!   condition is written again at once. The first report waits for the first sight of the Node
//!   (at most `FIRST_SIGHT_WAIT`), so a restart does not overwrite a live writer's condition.
//!
//! Failures back off exponentially with jitter, capped so that work resumes within one
//! renew interval after the API returns.

use std::collections::{BTreeSet, VecDeque};
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
use crate::api::{ApiError, FIELD_MANAGER};
use crate::config::TaintSpec;
use crate::core::backoff::{Backoff, Jitter};
use crate::core::condition::{self, NodeCondition};
use crate::core::contact::Request;
use crate::core::ownership::{
    self, ConditionManager, ForeignWriter, NodeObservation, ObservedCondition, OtherWriters,
};
use crate::core::taint_plan;
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

/// Runs until the task is dropped.
pub async fn run(
    client: kube::Client,
    settings: ReporterSettings,
    mut inputs: ReporterInputs,
    reach: Arc<Reachability>,
    health: Arc<Health>,
    uid: NodeUid,
) {
    let nodes: Api<Node> = Api::all(client.clone());
    let event_api: Api<Event> = Api::namespaced(client, EVENT_NAMESPACE);
    let node = settings.node.clone();
    let mut jitter = Jitter::new(seed());
    let mut latest: Option<Arc<Snapshot>> = None;
    // Our conditions as we last wrote them (a withheld one keeps its last written value).
    let mut last_written: Option<Vec<NodeCondition>> = None;
    let mut last_report: Option<Instant> = None;
    let mut status_dirty = false;
    // Reconcile at start: an owned taint that no longer matches our conditions is fixed.
    let mut taints_dirty = true;
    let mut taints_written: Option<Vec<TaintSpec>> = None;
    let mut pending: VecDeque<PendingEvent> = std::mem::take(&mut inputs.held).into();
    let mut queue_changed = false;
    let mut dropped_events: u64 = 0;
    let mut attempt: u32 = 0;
    let mut retry_at: Option<Instant> = None;
    let mut foreign: BTreeSet<ForeignWriter> = BTreeSet::new();
    let mut writers = OtherWriters::default();
    let first_sight_by = Instant::now() + FIRST_SIGHT_WAIT;
    let mut reach_changes = reach.subscribe();
    let mut seen_node: Option<Arc<Node>> = None;
    // After each of our writes, the watch may still deliver versions from before it: they are
    // skipped until the version our write produced comes by (the watch is ordered), or for at
    // most `STALE_WINDOW` in case the watch relisted past it. resourceVersions are opaque, so
    // they are matched, never compared.
    let mut awaiting: Option<(String, Instant)> = None;

    loop {
        let report_due_at = last_report.map(|t| t + settings.report_frequency);
        let clock = settings.clock;
        let release_at = latest.as_ref().and_then(|snap| {
            writers
                .next_release(
                    &snap.conditions,
                    clock.now().mono,
                    ownership::OTHER_WRITER_SILENCE,
                )
                .map(|at| clock.instant_of(at))
        });
        let awaiting_first_sight = !writers.seen_node() && Instant::now() < first_sight_by;
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
                    // A writer seen on the Node before the first snapshot holds from the first
                    // report on.
                    status_dirty |= refresh_foreign(&health, &writers, &snap, clock, &mut foreign);
                    status_dirty |= report_changes(&snap, last_written.as_deref(), &foreign);
                    if taints_written.as_ref() != Some(&snap.desired_taints) {
                        taints_dirty = true;
                    }
                    latest = Some(snap);
                }
            }
            changed = inputs.node.changed() => {
                if changed.is_err() { return; }
                let observed = inputs.node.borrow_and_update().clone();
                let rv = observed.as_ref().and_then(|n| n.metadata.resource_version.clone());
                if let Some((want, since)) = &awaiting {
                    if rv.as_ref() == Some(want) || since.elapsed() > STALE_WINDOW {
                        awaiting = None;
                    } else {
                        continue;
                    }
                }
                seen_node.clone_from(&observed);
                if let Some(n) = &observed {
                    writers.observe(&observation(n), FIELD_MANAGER, clock.now().mono);
                }
                if let (Some(n), Some(snap)) = (observed, latest.as_ref()) {
                    let current: Vec<_> = n.spec.as_ref()
                        .and_then(|s| s.taints.as_ref())
                        .map(|ts| ts.iter().filter_map(node::to_core).collect())
                        .unwrap_or_default();
                    let desired_owned: Vec<TaintSpec> = snap.desired_taints.clone();
                    let missing = taint_plan::missing_owned(&current, &desired_owned);
                    let stray = current.iter().any(|t| taint_plan::is_owned(t, &settings.owned_taints)
                        && !desired_owned.iter().any(|d| d.key == t.key && d.effect == t.effect));
                    if !missing.is_empty() && taints_written.is_some() {
                        let names: Vec<String> = missing.iter().map(|m| format!("{}:{}", m.key, m.effect)).collect();
                        log::warn!(
                            taint = names.join(",").as_str();
                            "owned taint {} vanished from the node while its condition holds; restoring it", names.join(", ")
                        );
                    }
                    if !missing.is_empty() || stray {
                        taints_dirty = true;
                    }
                    status_dirty |= refresh_foreign(&health, &writers, snap, clock, &mut foreign);
                }
            }
            Some(ev) = inputs.events.recv() => {
                enqueue(&mut pending, ev, &mut dropped_events);
                queue_changed = true;
            }
            _ = sleep_until_opt(report_due_at), if report_due_at.is_some() && !status_dirty => {
                status_dirty = condition::report_due(
                    false,
                    last_report.map(|t| clock.mono_of(t)),
                    clock.now().mono,
                    settings.report_frequency,
                );
            }
            _ = sleep_until_opt(retry_at), if retry_at.is_some() => {
                retry_at = None;
            }
            _ = sleep_until_opt(release_at), if release_at.is_some() => {
                if let Some(snap) = latest.as_ref() {
                    status_dirty |= refresh_foreign(&health, &writers, snap, clock, &mut foreign);
                }
            }
            _ = sleep_until_opt(Some(first_sight_by)), if awaiting_first_sight => {}
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
                    retry_at = None;
                    attempt = 0;
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
        if retry_at.is_some() {
            continue;
        }
        let Some(snap) = latest.clone() else {
            continue;
        };
        if *inputs.durable.borrow_and_update() < inputs.journal.borrow().generation {
            // Written ahead: wait until the state directory holds what we are about to send.
            continue;
        }
        let mut failure: Option<ApiError> = None;

        // The report is built only when one is due.
        let first_sight_pending = !writers.seen_node() && Instant::now() < first_sight_by;
        let report = (status_dirty && !first_sight_pending)
            .then(|| plan(&snap, last_written.as_deref(), &foreign));
        if report.as_ref().is_some_and(|r| r.send.is_empty()) {
            // Another writer holds every condition we own: there is nothing of ours to send.
            status_dirty = false;
            last_report = Some(Instant::now());
        }
        if let Some(report) = report.filter(|_| status_dirty) {
            writers.sending(&report.send);
            // Only heartbeats moved since our last write, and the server still holds every one
            // of the conditions we send as we wrote it: send the heartbeats alone.
            let heartbeat_only = last_written.is_some()
                && !report.changed
                && seen_node
                    .as_deref()
                    .is_some_and(|n| server_holds(n, &report.send));
            let sent = Instant::now();
            let result = node::patch_conditions(&nodes, &node, &report.send, heartbeat_only).await;
            note(&reach, &health, &result, Request::OwnWrite, sent);
            match result {
                Ok(written) => {
                    // The server's answer is the freshest Node: the taint write below starts
                    // from it instead of a read.
                    awaiting = written
                        .metadata
                        .resource_version
                        .clone()
                        .map(|rv| (rv, Instant::now()));
                    seen_node = Some(Arc::new(written));
                    status_dirty = false;
                    last_report = Some(Instant::now());
                    last_written = Some(ownership::record_write(
                        last_written.as_deref().unwrap_or_default(),
                        &report.send,
                    ));
                }
                Err(e) => failure = Some(e),
            }
        }
        if failure.is_none() && taints_dirty {
            let sent = Instant::now();
            let result = node::reconcile_taints(
                &nodes,
                &node,
                seen_node.as_deref().cloned(),
                &settings.owned_taints,
                &snap.desired_taints,
                clock.now().wall,
                5,
            )
            .await;
            // Only a taint write stored is proof; "unchanged" may have been a read alone.
            let request = match &result {
                Ok(TaintWrite::Written(..)) => Request::OwnWrite,
                _ => Request::Other,
            };
            note(&reach, &health, &result, request, sent);
            match result {
                Ok(TaintWrite::Unchanged) => {
                    health.metrics.record_taint_write("unchanged");
                    taints_dirty = false;
                    taints_written = Some(snap.desired_taints.clone());
                }
                Ok(TaintWrite::Written(after, written)) => {
                    awaiting = written
                        .metadata
                        .resource_version
                        .clone()
                        .map(|rv| (rv, Instant::now()));
                    seen_node = Some(Arc::new(*written));
                    health.metrics.record_taint_write("written");
                    log::info!(
                        taints = after.join(",").as_str();
                        "node taints written: [{}]", after.join(", ")
                    );
                    taints_dirty = false;
                    taints_written = Some(snap.desired_taints.clone());
                }
                Err(e) => {
                    health.metrics.record_taint_write("error");
                    failure = Some(e);
                }
            }
        }
        while failure.is_none() {
            let Some(ev) = pending.front() else { break };
            let node_uid = uid.borrow().clone();
            let sent = Instant::now();
            let result = events::send(&event_api, &node, node_uid.as_deref(), ev).await;
            note(&reach, &health, &result, Request::Other, sent);
            match result {
                Ok(()) => {
                    pending.pop_front();
                    queue_changed = true;
                }
                // The server refused this event for good: drop it rather than block the queue.
                Err(e) if !e.is_transient() => {
                    log::warn!(error = e.to_string().as_str(); "event dropped: {e}");
                    pending.pop_front();
                    queue_changed = true;
                }
                Err(e) => failure = Some(e),
            }
        }
        publish(
            &inputs.journal,
            &pending,
            latest.as_deref(),
            &mut queue_changed,
        );
        match failure {
            None => attempt = 0,
            Some(e) => {
                let mut delay = settings.backoff.delay(attempt, jitter.draw());
                if let Some(after) = e.retry_after() {
                    delay = delay.max(after.min(settings.backoff.cap));
                }
                attempt = attempt.saturating_add(1);
                log::debug!(error = e.to_string().as_str(); "write failed, retrying in {delay:?}: {e}");
                retry_at = Some(Instant::now() + delay);
            }
        }
    }
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

/// What a report of this snapshot sends, leaving out the conditions another writer holds.
fn plan(
    snap: &Snapshot,
    written: Option<&[NodeCondition]>,
    foreign: &BTreeSet<ForeignWriter>,
) -> ownership::ConditionReport {
    let held: BTreeSet<String> = foreign.iter().map(|f| f.condition_type.clone()).collect();
    ownership::plan_report(&snap.conditions, written.unwrap_or_default(), &held)
}

/// Whether a report of this snapshot would change what we last wrote (`plan(..).changed`,
/// without building the report): asked of every cycle's snapshot.
fn report_changes(
    snap: &Snapshot,
    written: Option<&[NodeCondition]>,
    foreign: &BTreeSet<ForeignWriter>,
) -> bool {
    let held: BTreeSet<String> = foreign.iter().map(|f| f.condition_type.clone()).collect();
    ownership::report_changed(&snap.conditions, written.unwrap_or_default(), &held)
}

/// Whether the Node holds each of `ours` with the status, reason and message we wrote.
fn server_holds(n: &Node, ours: &[NodeCondition]) -> bool {
    let held = n.status.as_ref().and_then(|s| s.conditions.as_ref());
    ours.iter().all(|c| {
        held.is_some_and(|cs| {
            cs.iter().any(|h| {
                h.type_ == c.condition_type
                    && h.status == c.status.as_str()
                    && h.reason.as_deref() == Some(c.reason.as_str())
                    && h.message.as_deref() == Some(c.message.as_str())
            })
        })
    })
}

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

/// Brings `foreign` (the owned conditions another writer holds) up to date at this instant:
/// logs and counts the change. Returns whether a condition was released, to be written at once
/// (our value may have been gone from the server for a long time).
fn refresh_foreign(
    health: &Health,
    writers: &OtherWriters,
    snap: &Snapshot,
    clock: Clock,
    foreign: &mut BTreeSet<ForeignWriter>,
) -> bool {
    let found = writers.holding(
        &snap.conditions,
        clock.now().mono,
        ownership::OTHER_WRITER_SILENCE,
    );
    report_foreign(foreign, &found);
    health.metrics.record_foreign_writers(found.len());
    let released = foreign
        .iter()
        .any(|f| !found.iter().any(|g| g.condition_type == f.condition_type));
    *foreign = found.into_iter().collect();
    released
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
fn report_foreign(before: &BTreeSet<ForeignWriter>, now: &[ForeignWriter]) {
    let key = |f: &ForeignWriter| (f.condition_type.clone(), f.manager.clone());
    let before_keys: BTreeSet<_> = before.iter().map(key).collect();
    let silence = humantime::format_duration(ownership::OTHER_WRITER_SILENCE);
    for f in now.iter().filter(|f| !before_keys.contains(&key(f))) {
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
    for f in before
        .iter()
        .filter(|f| !now.iter().any(|n| n.condition_type == f.condition_type))
    {
        let who = f.manager.as_deref().unwrap_or("an unknown writer");
        log::info!(
            condition = f.condition_type.as_str(), writer = who;
            "the other writer ({who}) of condition {} showed no change nor heartbeat for {silence}; \
             nodewarden writes the condition again", f.condition_type
        );
    }
}
