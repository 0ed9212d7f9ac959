//! The fence task (DESIGN §6): while connected, it keeps the pods bound to this node and the last
//! contact on disk; once the API server has not answered for `unreachableAfter`, it follows the
//! planner — SIGTERM at each pod's `sigterm_at`, kill at `kill_at`, and keeps fenced pods dead;
//! when the API returns it stops fencing and reconciles each fenced pod.
//!
//! Last contact (rule 1) is the latest of: the send time of our latest write the control plane
//! stored (`core::contact`: error answers are not contact), and the Ready heartbeat of our Node as
//! last seen. It is kept on the fence's monotonic scale; only its wall-clock anchor is persisted,
//! so a restart neither resets nor skips a deadline.
//!
//! What a restart needs is on disk before it can matter: every change of the pods, the fenced
//! set, the Node or the held Events is written within [`COALESCE`] (a pod seen a second before a
//! SIGKILL is known after the restart), and the last contact, which moves with every renewal, is
//! written to a small file of its own within half a renew interval, so the contact a restart reads
//! is never a whole renewal old (deadlines move earlier by less than that, never later).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::Api;
use kube::runtime::reflector::Store;
use tokio::sync::watch;

use crate::agent::quorum::QuorumView;
use crate::agent::reporter::Journal;
use crate::agent::snapshot;
use crate::api::call;
use crate::api::events::{self, EVENT_NAMESPACE, PendingEvent};
use crate::api::reachability::Reachability;
use crate::api::slim::SlimPod;
use crate::config::Config;
use crate::core::clock::Moment;
use crate::core::contact;
use crate::core::fence::{self, FencePod, OPT_OUT_ANNOTATION, Plan, QuorumVerdict};
use crate::core::qos::{self, QosClass};
use crate::core::resources::Effective;
use crate::core::taint::{Effect, Operator, Toleration};
use crate::observe::http::Health;
use crate::state::{
    self, Loaded, State, StoredCondition, StoredEvent, StoredNode, StoredPeer, StoredPod,
};
use crate::terminate::{CgroupLayout, Fence, Terminator};

/// How often the fence wakes: deadlines are met within this (plus scheduling).
const TICK: Duration = Duration::from_millis(50);
/// How often fenced pods are swept for respawned processes (well within one second).
const SWEEP: Duration = Duration::from_millis(250);
/// Changes to the durable state are written at most this long after they happen (and no more
/// often): a burst of pod events costs one write.
const COALESCE: Duration = Duration::from_millis(250);
/// The longest the last contact waits to be written while connected (flash storage on edge
/// nodes: at the default 10 s renew interval, one small write per renewal).
const CONTACT_WRITE_MAX: Duration = Duration::from_secs(5);

/// A Pod from the API in the planner's terms; `None` (logged by the caller) when malformed.
pub fn fence_pod(pod: &Pod) -> Option<FencePod> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref()?;
    let annotations = meta.annotations.clone().unwrap_or_default();
    let tolerations = spec
        .tolerations
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(|t| {
            Some(Toleration {
                key: t.key.clone().unwrap_or_default(),
                operator: match t.operator.as_deref() {
                    None | Some("") | Some("Equal") => Operator::Equal,
                    Some("Exists") => Operator::Exists,
                    Some(_) => return None,
                },
                value: t.value.clone().unwrap_or_default(),
                effect: match t.effect.as_deref() {
                    None | Some("") => None,
                    Some(e) => Some(Effect::parse(e)?),
                },
                toleration_seconds: t.toleration_seconds,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let qos = pod
        .status
        .as_ref()
        .and_then(|s| s.qos_class.as_deref())
        .and_then(QosClass::parse)
        .unwrap_or_else(|| qos_from_spec(spec));
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    let source = annotations
        .get("kubernetes.io/config.source")
        .map(String::as_str);
    Some(FencePod {
        uid: meta.uid.clone()?,
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        tolerations,
        termination_grace_seconds: spec.termination_grace_period_seconds.unwrap_or(30),
        owner_kind: meta
            .owner_references
            .as_deref()
            .unwrap_or_default()
            .iter()
            .find(|o| o.controller == Some(true))
            .map(|o| o.kind.clone()),
        static_or_mirror: annotations.contains_key("kubernetes.io/config.mirror")
            || source.is_some_and(|s| s != "api"),
        qos,
        opted_out: annotations
            .get(OPT_OUT_ANNOTATION)
            .is_some_and(|v| v == "false" || v == "disabled"),
        terminal: matches!(phase, Some("Succeeded") | Some("Failed")),
    })
}

/// QoS from the spec when the API server has not set `status.qosClass` (SEMANTICS §11).
fn qos_from_spec(spec: &k8s_openapi::api::core::v1::PodSpec) -> QosClass {
    let amount =
        |m: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
         k: &str| {
            m.and_then(|m| m.get(k))
                .and_then(|q| q.0.parse::<crate::core::quantity::Quantity>().ok())
                .map(|q| q.as_nanos())
                .unwrap_or(0)
        };
    let containers: Vec<qos::ContainerResources> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .map(|c| {
            let r = c.resources.as_ref();
            let req = r.and_then(|r| r.requests.as_ref());
            let lim = r.and_then(|r| r.limits.as_ref());
            qos::ContainerResources {
                requests: qos::CpuMemory {
                    cpu: amount(req, "cpu"),
                    memory: amount(req, "memory"),
                },
                limits: qos::CpuMemory {
                    cpu: amount(lim, "cpu"),
                    memory: amount(lim, "memory"),
                },
            }
        })
        .collect();
    qos::compute_qos(&containers)
}

/// Reads the state a previous run left for `node`; anything unusable is logged and ignored.
/// Read once at start-up: the fence task and the reporter (its held Events) share it.
pub fn load_state(dir: &std::path::Path, node: &str) -> Option<State> {
    match state::load(dir) {
        Loaded::Found(s) if s.node == node => Some(*s),
        Loaded::Found(s) => {
            log::warn!(node = node; "state in {} is for node {}, not {node}; ignored", dir.display(), s.node);
            None
        }
        Loaded::Missing => None,
        Loaded::Newer { path, version } => {
            log::error!(
                node = node, version = version;
                "state file {} was written by a newer nodewarden (format version {version}; this build writes {}): it is kept untouched and nothing is saved while it is there, so going back to the newer release loses nothing; the fence knows no pods until the API server answers",
                path.display(), state::VERSION
            );
            None
        }
        Loaded::Corrupt { error, moved_to } => {
            log::error!(
                node = node, error = error.as_str();
                "state file unusable ({error}); moved to {}; the fence knows no pods until the API server answers",
                moved_to.map(|p| p.display().to_string()).unwrap_or_else(|| "nowhere (move failed)".into())
            );
            None
        }
    }
}

/// What the fence task needs.
pub struct FenceInputs {
    /// What `load_state` found.
    pub persisted: Option<State>,
    /// The reporter's undelivered condition Events and our conditions as decided, kept in the
    /// state file with the fence's Events.
    pub journal: watch::Receiver<Journal>,
    /// The journal generation last written, for the reporter, which writes nothing to the API
    /// server before the journal that announces it is on disk.
    pub durable: watch::Sender<u64>,
    pub pods: Store<SlimPod>,
    /// Bumped on every change of the pod store: the pods are converted again only then.
    pub pods_changed: watch::Receiver<u64>,
    pub node: watch::Receiver<Option<Arc<Node>>>,
    pub reach: Arc<Reachability>,
    /// The peer quorum: its verdict gates every stop; its zone and peers are persisted.
    pub quorum: watch::Receiver<QuorumView>,
}

/// Progress on one pod's plan during the current partition.
#[derive(Default)]
struct Progress {
    termed: bool,
    killed: bool,
}

/// The fence task. Runs until dropped.
pub async fn run(
    client: kube::Client,
    config: Config,
    node: String,
    mut inputs: FenceInputs,
    health: Arc<Health>,
) {
    let policy = fence::FencePolicy::from(&config.fence);
    let dir = config.state_directory.clone();
    let contact_every =
        (crate::agent::heartbeat::renew_interval(config.node_lease_duration_seconds) / 2)
            .min(CONTACT_WRITE_MAX);
    let mut persisted = inputs.persisted.take();
    let origin_mono = tokio::time::Instant::now();
    let origin_wall = SystemTime::now();
    // Both clocks at once; monotonic instants count from `fence::MONO_BASE`.
    let moment = || {
        let elapsed = origin_mono.elapsed();
        Moment {
            mono: fence::MONO_BASE + elapsed,
            wall: origin_wall + elapsed,
        }
    };
    let mut pods: Vec<FencePod> = persisted
        .as_ref()
        .map(|s| s.pods.iter().filter_map(StoredPod::to_pod).collect())
        .unwrap_or_default();
    // For `status` only: each pod's requests and limits, and the Node as last seen.
    let mut resources: BTreeMap<String, Effective> = persisted
        .as_ref()
        .map(|s| {
            s.pods
                .iter()
                .map(|p| (p.uid.clone(), p.resources()))
                .collect()
        })
        .unwrap_or_default();
    let mut node_status: Option<StoredNode> =
        persisted.as_ref().and_then(|s| s.node_status.clone());
    // The last contact on the fence's monotonic scale (see `moment`).
    let start = moment();
    let mut last_contact: Option<Duration> = persisted
        .as_ref()
        .and_then(|s| s.last_contact.as_deref())
        .and_then(state::parse_time)
        .map(|wall| start.mono_at(wall));
    // The reachability's instants on the same scale.
    let mono_of = |t: tokio::time::Instant| {
        if t >= origin_mono {
            fence::MONO_BASE + (t - origin_mono)
        } else {
            fence::MONO_BASE.saturating_sub(origin_mono - t)
        }
    };
    let mut pending_events: Vec<StoredEvent> = persisted
        .as_ref()
        .map(|s| s.pending_events.clone())
        .unwrap_or_default();
    let mut condition_events: Vec<StoredEvent> = persisted
        .as_ref()
        .map(|s| s.condition_events.clone())
        .unwrap_or_default();
    let mut decided: Vec<StoredCondition> = persisted
        .as_ref()
        .map(|s| s.decided.clone())
        .unwrap_or_default();
    // The reporter's journal generation last written (or attempted: a failing disk must not stop
    // reporting), acknowledged through `inputs.durable`.
    let mut journal_gen = inputs.journal.borrow().generation;
    let mut fence = Fence::new();
    let mut fenced_uids: BTreeSet<String> = persisted
        .as_ref()
        .map(|s| s.fenced.iter().cloned().collect())
        .unwrap_or_default();
    // A partition that outlived the previous run goes on at once; otherwise the API server gets
    // its chance first (`contact::cut_off`: a failed request of this run, or `unreachableAfter`
    // from this start).
    let mut cut_off_since: Option<SystemTime> = persisted
        .as_ref()
        .and_then(|s| s.cut_off_since.as_deref())
        .and_then(state::parse_time);
    let detect_from = if cut_off_since.is_some() {
        None
    } else {
        Some(moment().mono)
    };
    if let Some(since) = cut_off_since {
        log::warn!(
            node = node.as_str(), reachable = "false";
            "cut off from the API server since {} (before this start): fencing goes on",
            crate::core::clock::rfc3339(since)
        );
    }
    persisted.take();
    let mut terminator: Option<Terminator> = None;
    let mut layout_error: Option<String> = None;
    let mut progress: BTreeMap<String, Progress> = BTreeMap::new();
    let mut quorum_view = inputs.quorum.borrow_and_update().clone();
    // The verdict the plans were last logged with in this partition.
    let mut logged_verdict: Option<QuorumVerdict> = None;
    let mut last_persist: Option<tokio::time::Instant> = None;
    let mut last_contact_write: Option<tokio::time::Instant> = None;
    // One record per distinct failure of each file (a nearly full disk may take the small
    // contact file and refuse the state).
    let mut api_retry = Retry::new(
        crate::agent::heartbeat::renew_interval(config.node_lease_duration_seconds)
            .max(Duration::from_secs(1)),
    );
    let mut reconcile_error: Option<String> = None;
    let (mut write_errors, mut contact_errors) = (WriteErrors::default(), WriteErrors::default());
    let mut last_sweep = tokio::time::Instant::now();
    let mut dirty = true;
    // Only the last contact moved: written to its own small file.
    let mut contact_dirty = false;
    let mut malformed: BTreeSet<String> = BTreeSet::new();
    // Whether the pods have been converted from the store since this task started.
    let mut refreshed = false;
    let event_api: Api<Event> = Api::namespaced(client.clone(), EVENT_NAMESPACE);
    let pod_api_client = client;
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

    loop {
        ticker.tick().await;
        let now = moment();
        let (now_mono, now_wall) = (now.mono, now.wall);

        if inputs.quorum.has_changed().unwrap_or(false) {
            quorum_view = inputs.quorum.borrow_and_update().clone();
            dirty = true;
        }
        if inputs.journal.has_changed().unwrap_or(false) {
            let journal = inputs.journal.borrow_and_update();
            condition_events = journal
                .events
                .iter()
                .map(StoredEvent::from_pending)
                .collect();
            decided = journal
                .decided
                .iter()
                .map(StoredCondition::from_condition)
                .collect();
            journal_gen = journal.generation;
            dirty = true;
        }
        // Last contact: our latest stored write, or the latest Ready heartbeat seen.
        let own_contact = inputs.reach.last_contact().map(mono_of);
        let mut contact = own_contact;
        let node_changed = inputs.node.has_changed().unwrap_or(false);
        if let Some(n) = inputs.node.borrow_and_update().as_ref() {
            if node_changed {
                let seen = snapshot::node(n);
                if node_status.as_ref() != Some(&seen) {
                    node_status = Some(seen);
                    dirty = true;
                }
            }
            let ready = n
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
                .and_then(|c| c.last_heartbeat_time.as_ref())
                // A heartbeat stamped in the future (a clock step) counts as now, never later.
                .map(|t| now.mono_at(SystemTime::from(t.0)));
            contact = contact.max(ready);
        }
        if contact > last_contact {
            last_contact = contact;
            contact_dirty = true;
        }
        let last_contact_wall = last_contact.map(|c| now.wall_at(c));

        let after = config.fence.unreachable_after;
        let reachable = own_contact.is_some() && !contact::older_than(own_contact, now_mono, after);
        let failed = inputs.reach.state() == crate::api::reachability::State::Unreachable;
        let cut_off = contact::cut_off(
            own_contact,
            last_contact,
            detect_from,
            failed,
            now_mono,
            after,
        );

        if reachable {
            // Connected: refresh the pod list from the watch, once the initial list is complete
            // (an empty store right after a restart must not erase the persisted pods) and then
            // whenever the store changes.
            let listed = futures_util::FutureExt::now_or_never(inputs.pods.wait_until_ready())
                .is_some_and(|r| r.is_ok());
            let store_changed = inputs.pods_changed.has_changed().unwrap_or(false);
            if listed && (store_changed || !refreshed) {
                inputs.pods_changed.borrow_and_update();
                refreshed = true;
                let (fresh, fresh_resources) = convert_pods(&inputs.pods, &node, &mut malformed);
                if fresh != pods || fresh_resources != resources {
                    pods = fresh;
                    resources = fresh_resources;
                    dirty = true;
                }
                // What a partition starting now would do, for the metrics.
                let verdict = QuorumVerdict::NotConsulted;
                let plans = fence::plan(&pods, now_mono, &policy, &verdict);
                health.metrics.record_plans(&plans, &verdict);
            }
            if let Some(since) = cut_off_since.take() {
                let lasted = now_wall.duration_since(since).unwrap_or_default();
                log::info!(
                    node = node.as_str(), reachable = "true";
                    "API server reachable again after {}s cut off: fencing stops", lasted.as_secs()
                );
                progress.clear();
                logged_verdict = None;
                dirty = true;
            }
            // Reconciling and held Events: retried with a capped, jittered backoff, never every
            // tick (the API server sees a request a second at most from here while it fails).
            let api_due = api_retry
                .at
                .is_none_or(|t| tokio::time::Instant::now() >= t);
            let mut api_failed = false;
            if api_due && !fenced_uids.is_empty() {
                match reconcile(
                    &pod_api_client,
                    &node,
                    &mut fence,
                    &mut fenced_uids,
                    &health,
                )
                .await
                {
                    Ok(outcomes) => {
                        reconcile_error = None;
                        // Each outcome is an Event too, sent with the held ones below.
                        pending_events.extend(outcomes.into_iter().map(|(reason, message)| {
                            StoredEvent {
                                reason,
                                message,
                                warning: false,
                                at: state::format_time(now_wall),
                            }
                        }));
                        dirty = true;
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        if reconcile_error.as_deref() != Some(msg.as_str()) {
                            log::warn!(node = node.as_str(), error = msg.as_str(); "cannot list pods to reconcile fenced pods yet: {msg}");
                            reconcile_error = Some(msg);
                        }
                        api_failed = true;
                    }
                }
            }
            if api_due && !api_failed && !pending_events.is_empty() {
                let uid = inputs
                    .node
                    .borrow()
                    .as_ref()
                    .and_then(|n| n.metadata.uid.clone());
                let mut kept = Vec::new();
                let pending_events_before = pending_events.clone();
                for e in pending_events.drain(..) {
                    let ev = PendingEvent {
                        reason: e.reason.clone(),
                        message: e.message.clone(),
                        warning: e.warning,
                        at: state::parse_time(&e.at).unwrap_or(now_wall),
                    };
                    let sent = tokio::time::Instant::now();
                    let result = events::send(&event_api, &node, uid.as_deref(), &ev).await;
                    inputs.reach.record(&result, contact::Request::Other, sent);
                    if let Err(err) = result
                        && err.is_transient()
                    {
                        kept.push(e);
                    }
                }
                api_failed = !kept.is_empty();
                if kept != pending_events_before {
                    dirty = true;
                }
                pending_events = kept;
            }
            api_retry.next(api_due, api_failed);
        } else if cut_off {
            let (Some(contact_mono), Some(contact_wall)) = (last_contact, last_contact_wall) else {
                continue;
            };
            if cut_off_since.is_none() {
                cut_off_since = Some(now_wall);
                // The last contact is final now: the whole state is written at the end of this
                // tick (writes are due at once while cut off), so a restart from here on plans
                // the very same deadlines.
                dirty = true;
                log::warn!(
                    node = node.as_str(), reachable = "false", last_contact = crate::core::clock::rfc3339(contact_wall).as_str();
                    "cut off from the API server (no answer for {}s; last contact {}); fence planning {} pod(s) in {} mode",
                    config.fence.unreachable_after.as_secs(), crate::core::clock::rfc3339(contact_wall), pods.len(), mode_name(policy.mode)
                );
            }
            let verdict = crate::core::quorum::planning(
                quorum_view.verdict.as_ref(),
                quorum_view.held_at.map(|(t, _)| mono_of(t)),
                crate::api::request_timeout(),
            );
            if logged_verdict.as_ref() != Some(&verdict) && quorum_view.verdict.is_some() {
                // Every plan, logged once the quorum first answers in this partition (a round
                // takes at most `[peers] timeout`; nothing is stopped before) and again whenever
                // it changes them (held, enforced, or counted from the end of a hold).
                let plans = fence::plan(&pods, contact_mono, &policy, &verdict);
                for p in &plans {
                    log_plan(&node, p, now);
                    health.metrics.record_fence("planned");
                }
                health.metrics.record_plans(&plans, &verdict);
                logged_verdict = Some(verdict.clone());
            }
            if terminator.is_none() && policy.mode == fence::Mode::Enforce {
                let root = config
                    .fence
                    .cgroup_root
                    .as_ref()
                    .unwrap_or(&config.cgroup_path);
                match CgroupLayout::detect(
                    root,
                    config.fence.cgroup_version,
                    config.fence.cgroup_driver,
                )
                .and_then(|l| l.locate_in_mounts(&config.proc_path))
                {
                    Ok(layout) => {
                        // Pods fenced before a restart are fenced again.
                        for p in pods.iter().filter(|p| fenced_uids.contains(&p.uid)) {
                            fence.fence(p.uid.clone(), layout.pod_dir(&p.uid, p.qos));
                        }
                        terminator = Some(Terminator::new(layout, config.proc_path.clone()));
                        layout_error = None;
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        if layout_error.as_deref() != Some(msg.as_str()) {
                            log::error!(node = node.as_str(), error = msg.as_str(); "cannot find the pods' cgroups ({msg}); nothing can be stopped");
                            layout_error = Some(msg);
                        }
                    }
                }
            }
            for p in fence::plan(&pods, contact_mono, &policy, &verdict) {
                let Plan::Stop {
                    schedule, dry_run, ..
                } = p.plan
                else {
                    continue;
                };
                let Some(pod) = pods.iter().find(|x| x.uid == p.uid) else {
                    continue;
                };
                // A pod fenced before a restart is done: stopped, its Event held or sent, and the
                // sweep keeps it dead. Acting on it again would announce it twice.
                let step = progress.entry(p.uid.clone()).or_insert_with(|| {
                    let done = fenced_uids.contains(&p.uid);
                    Progress {
                        termed: done,
                        killed: done,
                    }
                });
                let id = format!("{}/{}", p.namespace, p.name);
                if !step.termed && now_mono >= schedule.sigterm_at {
                    step.termed = true;
                    let late = now_mono - schedule.sigterm_at;
                    if dry_run {
                        log::info!(node = node.as_str(), pod = id.as_str(), pod_uid = p.uid.as_str(), action = "sigterm", dry_run = "true", late_ms = late.as_millis() as u64;
                            "dry-run: would SIGTERM pod {id} now");
                        health.metrics.record_fence("would_sigterm");
                    } else if let Some(t) = &terminator {
                        let r = t.terminate(&t.layout().pod_dir(&p.uid, pod.qos));
                        log::warn!(node = node.as_str(), pod = id.as_str(), pod_uid = p.uid.as_str(), action = "sigterm", late_ms = late.as_millis() as u64, signalled = r.signalled;
                            "SIGTERM to pod {id} ({} process(es)) {}ms after plan", r.signalled, late.as_millis());
                        health.metrics.record_fence("sigterm");
                        health.metrics.record_lateness("sigterm", late);
                    }
                }
                if !step.killed && now_mono >= schedule.kill_at {
                    step.killed = true;
                    let late = now_mono - schedule.kill_at;
                    if dry_run {
                        log::info!(node = node.as_str(), pod = id.as_str(), pod_uid = p.uid.as_str(), action = "kill", dry_run = "true", late_ms = late.as_millis() as u64;
                            "dry-run: would kill pod {id} now and keep it fenced");
                        health.metrics.record_fence("would_kill");
                    } else if let Some(t) = &terminator {
                        let dir = t.layout().pod_dir(&p.uid, pod.qos);
                        let r = t.kill(&dir);
                        fence.fence(p.uid.clone(), dir);
                        fenced_uids.insert(p.uid.clone());
                        dirty = true;
                        log::warn!(node = node.as_str(), pod = id.as_str(), pod_uid = p.uid.as_str(), action = "kill", late_ms = late.as_millis() as u64, signalled = r.signalled;
                            "pod {id} stopped ({} process(es) killed) {}ms after plan; fenced until the API server answers", r.signalled, late.as_millis());
                        health.metrics.record_fence("kill");
                        health.metrics.record_lateness("kill", late);
                        pending_events.push(StoredEvent {
                            reason: "NodewardenFenced".into(),
                            message: format!("Pod {id} stopped on node {node}: the control plane could delete it from {}", crate::core::clock::rfc3339(now.wall_at(schedule.eviction_time))),
                            warning: true,
                            at: state::format_time(now_wall),
                        });
                    }
                }
            }
            if let Some(t) = &terminator
                && last_sweep.elapsed() >= SWEEP
            {
                last_sweep = tokio::time::Instant::now();
                let report = fence.sweep(t);
                for s in &report.pods {
                    if s.report.signalled > 0 {
                        log::warn!(node = node.as_str(), pod_uid = s.uid.as_str(), action = "rekill", signalled = s.report.signalled;
                            "fenced pod {} had {} new process(es): killed again", s.uid, s.report.signalled);
                        health.metrics.record_fence("rekill");
                    }
                }
            }
        }

        // Every change is on disk within `COALESCE` (at once when cut off: a kill, a fenced pod),
        // so a restart resumes the same pods and deadlines.
        let due = cut_off || last_persist.is_none_or(|t| t.elapsed() >= COALESCE);
        if dirty && due {
            dirty = !write_errors.note(
                &node,
                persist(
                    &dir,
                    &node,
                    last_contact_wall,
                    stored_pods(&pods, &resources),
                    node_status.as_ref(),
                    &fenced_uids,
                    Held {
                        fence_events: &pending_events,
                        condition_events: &condition_events,
                        decided: &decided,
                        quorum: &quorum_view,
                        cut_off_since,
                    },
                ),
            );
            inputs
                .durable
                .send_if_modified(|g| std::mem::replace(g, journal_gen) != journal_gen);
            contact_dirty = dirty;
            last_persist = Some(tokio::time::Instant::now());
            if !dirty {
                last_contact_write = last_persist;
            }
        } else if contact_dirty
            && last_contact_write.is_none_or(|t| t.elapsed() >= contact_every)
            && let Some(contact) = last_contact_wall
        {
            contact_dirty = !contact_errors.note(&node, state::save_contact(&dir, contact));
            last_contact_write = Some(tokio::time::Instant::now());
        }
    }
}

/// The pods in the store in the planner's terms, sorted by UID, with their requests and limits.
/// A pod whose tolerations cannot be read is left out (not fenced); one whose resources cannot be
/// read is fenced but shows no resources. Each is logged once. Public for the footprint harness
/// (`examples/footprint.rs`), which measures what this path allocates.
pub fn convert_pods(
    store: &Store<SlimPod>,
    node: &str,
    malformed: &mut BTreeSet<String>,
) -> (Vec<FencePod>, BTreeMap<String, Effective>) {
    let mut pods = Vec::new();
    let mut resources = BTreeMap::new();
    for slim in store.state() {
        let p = slim.to_pod();
        let id = format!(
            "{}/{}",
            p.metadata.namespace.as_deref().unwrap_or_default(),
            p.metadata.name.as_deref().unwrap_or_default()
        );
        let Some(fp) = fence_pod(&p) else {
            if malformed.insert(id.clone()) {
                log::warn!(node = node, pod = id.as_str(); "pod {id} has tolerations this agent cannot read; it is not fenced");
            }
            continue;
        };
        match snapshot::pod_resources(&p) {
            Ok(e) => {
                resources.insert(fp.uid.clone(), e);
            }
            Err(e) => {
                if malformed.insert(format!("{id} resources")) {
                    log::warn!(node = node, pod = id.as_str(), error = e.as_str(); "pod {id} has resources this agent cannot read ({e}); `status` leaves it out of the sums");
                }
            }
        }
        pods.push(fp);
    }
    pods.sort_by(|a, b| a.uid.cmp(&b.uid));
    (pods, resources)
}

/// The pods as the state file keeps them, each with its requests and limits when known: a view
/// serialised straight into the file, nothing copied (issue 12).
pub fn stored_pods<'a>(
    pods: &'a [FencePod],
    resources: &'a BTreeMap<String, Effective>,
) -> state::PodsView<'a> {
    state::PodsView { pods, resources }
}

/// Reports failed state writes once per distinct error in a run of failures, and the first
/// success after them: a full or read-only disk must not flood the journal from a 50 ms loop
/// (one per file written).
#[derive(Default)]
struct WriteErrors {
    seen: BTreeSet<String>,
}

impl WriteErrors {
    /// Whether `result` is a success; logs a new error or the recovery.
    fn note(&mut self, node: &str, result: Result<(), state::StateError>) -> bool {
        match result {
            Ok(()) => {
                if !self.seen.is_empty() {
                    let failures = std::mem::take(&mut self.seen);
                    let was = failures.into_iter().collect::<Vec<_>>().join("; ");
                    log::info!(node = node; "state written again (after: {was})");
                }
                true
            }
            Err(e) => {
                let msg = e.to_string();
                if !self.seen.contains(&msg) {
                    log::error!(node = node, error = msg.as_str(); "{msg}; the fence goes on from memory and retries");
                    self.seen.insert(msg);
                }
                false
            }
        }
    }
}

/// When the fence's own API work (reconciling, held Events) is tried next after failures.
struct Retry {
    backoff: crate::core::backoff::Backoff,
    jitter: crate::core::backoff::Jitter,
    attempt: u32,
    at: Option<tokio::time::Instant>,
}

impl Retry {
    fn new(cap: Duration) -> Retry {
        Retry {
            backoff: crate::core::backoff::Backoff {
                base: Duration::from_millis(500),
                cap,
            },
            jitter: crate::core::backoff::Jitter::new(crate::agent::reporter::seed()),
            attempt: 0,
            at: None,
        }
    }

    /// After a round that `ran` (or not): a failure pushes the next try back, a success clears.
    fn next(&mut self, ran: bool, failed: bool) {
        if !ran {
            return;
        }
        if failed {
            let delay = self.backoff.delay(self.attempt, self.jitter.draw());
            self.attempt = self.attempt.saturating_add(1);
            self.at = Some(tokio::time::Instant::now() + delay);
        } else {
            self.attempt = 0;
            self.at = None;
        }
    }
}

/// What the state keeps for later delivery and for the decisions to resume from.
pub struct Held<'a> {
    pub fence_events: &'a [StoredEvent],
    pub condition_events: &'a [StoredEvent],
    pub decided: &'a [StoredCondition],
    /// The zone, the peers and the quorum of the current partition.
    pub quorum: &'a QuorumView,
    pub cut_off_since: Option<SystemTime>,
}

/// Writes the durable state, serialised from what it is given (see [`state::StateView`]).
/// Public for the footprint harness, like [`convert_pods`].
pub fn persist(
    dir: &std::path::Path,
    node: &str,
    last_contact: Option<SystemTime>,
    pods: state::PodsView<'_>,
    node_status: Option<&StoredNode>,
    fenced: &BTreeSet<String>,
    held: Held<'_>,
) -> Result<(), state::StateError> {
    let s = state::StateView {
        version: state::VERSION,
        node,
        last_contact: last_contact.map(state::format_time),
        pods,
        fenced,
        pending_events: held.fence_events,
        node_status,
        condition_events: held.condition_events,
        decided: held.decided,
        zone: held.quorum.zone.as_deref(),
        peers: held
            .quorum
            .peers
            .iter()
            .map(StoredPeer::from_peer)
            .collect(),
        quorum: held.quorum.stored(),
        cut_off_since: held.cut_off_since.map(state::format_time),
    };
    state::save_view(dir, &s)
}

fn mode_name(m: fence::Mode) -> &'static str {
    match m {
        fence::Mode::Enforce => "enforce",
        fence::Mode::DryRun => "dry-run",
        fence::Mode::Off => "off",
    }
}

fn log_plan(node: &str, p: &fence::PodPlan, now: Moment) {
    let id = format!("{}/{}", p.namespace, p.name);
    // Milliseconds: the plan is checked against what happens, and a restart must reproduce it.
    let at = |d: Duration| humantime::format_rfc3339_millis(now.wall_at(d)).to_string();
    match &p.plan {
        Plan::Never { reason } => {
            log::info!(node = node, pod = id.as_str(), pod_uid = p.uid.as_str(), action = "never";
            "fence plan for {id}: never ({reason})")
        }
        Plan::Stop {
            schedule,
            dry_run,
            reason,
        } => log::info!(
            node = node, pod = id.as_str(), pod_uid = p.uid.as_str(), action = "stop", dry_run = dry_run.to_string().as_str(),
            eviction_time = at(schedule.eviction_time).as_str(), sigterm_at = at(schedule.sigterm_at).as_str(), kill_at = at(schedule.kill_at).as_str();
            "fence plan for {id}: SIGTERM {}, kill {}, eviction {} ({reason})",
            at(schedule.sigterm_at), at(schedule.kill_at), at(schedule.eviction_time)),
        Plan::Hold { schedule, reason } => {
            log::info!(node = node, pod = id.as_str(), pod_uid = p.uid.as_str(), action = "hold",
            eviction_time = at(schedule.eviction_time).as_str();
            "fence plan for {id}: held ({reason})")
        }
    }
}

/// After reconnection: a fenced pod deleted upstream is done; one still present is released to
/// the kubelet.
async fn reconcile(
    client: &kube::Client,
    node: &str,
    fence: &mut Fence,
    fenced: &mut BTreeSet<String>,
    health: &Health,
) -> Result<Vec<(String, String)>, crate::api::ApiError> {
    let mut outcomes = Vec::new();
    let pods: Api<Pod> = Api::all(client.clone());
    let lp = kube::api::ListParams::default().fields(&format!("spec.nodeName={node}"));
    let listed = call(
        "list",
        format!("pods?fieldSelector=spec.nodeName={node}"),
        pods.list(&lp),
    )
    .await?;
    let present: BTreeSet<String> = listed
        .items
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    for uid in std::mem::take(fenced) {
        fence.lift(&uid);
        if present.contains(&uid) {
            log::info!(node = node, pod_uid = uid.as_str(), action = "lift";
                "fenced pod {uid} still exists upstream: fence lifted, the kubelet may restart it");
            health.metrics.record_fence("lift");
            outcomes.push((
                "NodewardenFenceLifted".to_string(),
                format!("Pod {uid} on node {node} still exists after the partition: fence lifted"),
            ));
        } else {
            log::info!(node = node, pod_uid = uid.as_str(), action = "reconciled";
                "fenced pod {uid} was deleted upstream while cut off: done");
            health.metrics.record_fence("reconciled");
            outcomes.push((
                "NodewardenFenceDone".to_string(),
                format!("Pod {uid} on node {node} was deleted upstream while the node was cut off"),
            ));
        }
    }
    Ok(outcomes)
}
