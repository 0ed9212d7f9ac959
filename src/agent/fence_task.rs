//! The fence task (docs/fence.md): while connected, it keeps the pods bound to this node and the
//! last contact on disk; once the API server has not answered for `unreachableAfter`, it follows
//! the planner — SIGTERM at each pod's `sigterm_at`, kill at `kill_at`, and keeps fenced pods dead;
//! when the API returns it stops fencing and reconciles each fenced pod. Every decision (contact,
//! cut off, steps due, writes due, retries) is `core::fencing`'s; this task gathers its inputs on
//! the agent's clock, asks, and carries out the answers.
//!
//! Last contact (rule 1) is the latest of: the send time of our latest write the control plane
//! stored (`core::contact`: error answers are not contact), and the Ready heartbeat of our Node as
//! last seen. It is kept on the fence's monotonic scale; only its wall-clock anchor is persisted,
//! so a restart neither resets nor skips a deadline.
//!
//! What a restart needs is on disk before it can matter: every change of the pods, the fenced
//! set, the Node or the held Events is written within [`core::fencing::COALESCE`](crate::core::fencing::COALESCE) (a pod seen a second before a
//! SIGKILL is known after the restart), and the last contact, which moves with every renewal, is
//! written to a small file of its own within half a renew interval, so the contact a restart reads
//! is never a whole renewal old (deadlines move earlier by less than that, never later).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::{Event, Node};
use kube::Api;
use kube::runtime::reflector::Store;
use tokio::sync::watch;

use crate::agent::clock::Clock;
use crate::agent::quorum::QuorumView;
use crate::agent::reporter::Journal;
use crate::agent::snapshot;
use crate::agent::wake::Wake;
use crate::api::events::{self, EVENT_NAMESPACE, PendingEvent};
use crate::api::reachability::Reachability;
use crate::api::slim::{ResourceAmounts, SlimPod, SlimPodSpec, SlimToleration};
use crate::api::{ApiClient, Requests};
use crate::config::Config;
use crate::core::backoff::{Backoff, Jitter};
use crate::core::clock::Moment;
use crate::core::contact;
use crate::core::fence_plan::{self, FencePod, OPT_OUT_ANNOTATION, Plan, QuorumVerdict};
use crate::core::fencing::{
    Cadence, Due, Durability, Heartbeat, Judged, Link, Retry, Seen, Step, Steps, Transition,
    Waiting, Write,
};
use crate::core::qos::{self, QosClass};
use crate::core::resources::Effective;
use crate::observe::http::Health;
use crate::state::{self, Loaded, State, StoredCondition, StoredNode, StoredPeer};
use crate::terminate::{CgroupLayout, Fence, Terminator};

/// The least time between a tick and the next one that an input's change or work due at once
/// (a retry with no backoff, a failing write while cut off) brings: a burst of changes is taken
/// in together, and work that stays due cannot spin. A step or write due at a planned instant is
/// taken at that instant, however close to the previous tick.
const MIN_GAP: Duration = Duration::from_millis(50);
/// The longest the task sleeps while connected. Not a tick: a bound on any wake-up source
/// missed. A step of the wall clock needs no bound: every deadline is on the monotonic scale
/// (`agent::clock`; persisted wall times enter once, through `Moment::mono_at`), which no step
/// moves, and tokio sleeps on the monotonic clock.
const IDLE_TICK: Duration = Duration::from_secs(10);
/// The longest the task sleeps while cut off with nothing due: finding the pods' cgroups again
/// after a failure, say, is retried this often.
const CUT_OFF_IDLE_TICK: Duration = Duration::from_secs(1);
/// The most pages of pods a reconciliation reads (`api::watch::PAGE_SIZE` each: 100,000 pods).
const MAX_RECONCILE_PAGES: u32 = 10_000;
/// How often fenced pods are swept for respawned processes (well within one second).
const SWEEP: Duration = Duration::from_millis(250);
/// How often, while cut off, the pods' cgroups are read for pods the view lacks
/// (`core::unlisted`): as often as the quorum's rounds may come.
const UNLISTED_SCAN: Duration = Duration::from_secs(1);
/// The fence's own list of this node's pods (`OwnList`), each page within this.
const OWN_LIST_BOUND: Duration = Duration::from_secs(2);
/// After the fence's own list failed, the cgroups are read (and the list sent) again no sooner
/// than this: the connected fence's idle tick, so no wake-up is added for it.
const OWN_LIST_RETRY: Duration = IDLE_TICK;

/// A watched pod (the watch cache's compact pod, `api::slim`) in the planner's terms, read
/// straight from it; `None` (logged by the caller) when malformed.
pub fn fence_pod(pod: &SlimPod) -> Option<FencePod> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref()?;
    let annotation = |key: &str| {
        meta.annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .map(String::as_str)
    };
    // The cache keeps only the tolerations that may tolerate the unreachable taint (`api::slim`),
    // and those that cannot be read: one of these leaves the pod out.
    let tolerations = spec
        .tolerations
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(SlimToleration::to_core)
        .collect::<Option<Vec<_>>>()?;
    let status = pod.status.as_ref();
    let qos = status
        .and_then(|s| s.qos_class.as_deref())
        .and_then(QosClass::parse)
        .unwrap_or_else(|| qos_from_spec(spec));
    let phase = status.and_then(|s| s.phase.as_deref());
    let source = annotation("kubernetes.io/config.source");
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
        static_or_mirror: annotation("kubernetes.io/config.mirror").is_some()
            || source.is_some_and(|s| s != "api"),
        qos,
        opted_out: annotation(OPT_OUT_ANNOTATION).is_some_and(|v| v == "false" || v == "disabled"),
        terminal: matches!(phase, Some("Succeeded") | Some("Failed")),
        created: meta
            .creation_timestamp
            .as_ref()
            .and_then(|t| fence_plan::representable(SystemTime::from(t.0))),
    })
}

/// QoS from the spec when the API server has not set `status.qosClass` (docs/semantics.md §11).
fn qos_from_spec(spec: &SlimPodSpec) -> QosClass {
    let amount = |m: Option<&ResourceAmounts>, k: &str| {
        m.and_then(|m| m.get(k))
            .and_then(|q| q.parse::<crate::core::quantity::Quantity>().ok())
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
/// Its times are carried onto `scale`, this run's (`state::load`).
pub fn load_state(
    dir: &std::path::Path,
    node: &str,
    scale: Option<crate::core::clock::Scale>,
) -> Option<State> {
    if let Some(problem) = state::directory_problem(dir) {
        log::warn!("{problem}");
    }
    match state::load(dir, scale) {
        Loaded::Found(s) if s.node == node => Some(*s),
        Loaded::Found(s) => {
            log::warn!(
                "state in {} is for node {}, not {node}; ignored",
                dir.display(),
                s.node
            );
            None
        }
        Loaded::Missing => None,
        Loaded::Newer { path, version } => {
            log::error!(
                version = version;
                "state file {} was written by a newer nodewarden (format version {version}; this build writes {}): it is kept untouched and nothing is saved while it is there, so going back to the newer release loses nothing; the fence knows no pods until the API server answers",
                path.display(), state::VERSION
            );
            None
        }
        Loaded::Corrupt { error, moved_to } => {
            log::error!(
                error = error.as_str();
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
    /// How current the pod store is; each change is written down for `status`.
    pub pod_view: Arc<crate::api::watch_view::ViewTracker>,
    pub node: watch::Receiver<Option<Arc<Node>>>,
    pub reach: Arc<Reachability>,
    /// The peer quorum: its verdict gates every stop; its zone and peers are persisted.
    pub quorum: watch::Receiver<QuorumView>,
    /// What the reads of the controller-manager's leader Lease prove (`agent::leader`).
    pub leader: watch::Receiver<crate::agent::leader::LeaderView>,
    /// Whether this node is cut off, for the quorum task.
    pub cut_off: watch::Sender<Option<bool>>,
    /// Whether our Node carried the unreachable or the not-ready NoExecute taint when last seen
    /// (by this run, or by the previous one as its state file keeps it), for the quorum task.
    pub tainted: watch::Sender<bool>,
    /// Whether our Node as last seen was not Ready (`StoredNode::not_ready`), for the heartbeat
    /// task, which then reads our Lease every second.
    pub not_ready: watch::Sender<bool>,
    /// While cut off, the pods whose cgroups run here that the view lacks, for the quorum task
    /// to ask the peers about (`core::unlisted`); empty otherwise.
    pub unlisted: watch::Sender<Vec<String>>,
}

/// Everything the state file keeps, as the task holds it.
#[derive(Default)]
struct Kept {
    /// The pods and, for `status` only, each pod's requests and limits.
    converted: Converted,
    /// The Node as last seen.
    node_status: Option<StoredNode>,
    /// The fence's own Events not yet delivered.
    fence_events: Vec<PendingEvent>,
    /// The reporter's undelivered condition Events and our conditions as decided.
    condition_events: Vec<PendingEvent>,
    decided: Vec<StoredCondition>,
    /// Pods stopped and kept dead until the API server answers.
    fenced: BTreeSet<String>,
}

impl Kept {
    fn from_state(s: Option<&State>) -> Kept {
        let Some(s) = s else {
            return Kept::default();
        };
        Kept {
            converted: Converted::from_disk(
                s.pods.iter().map(|p| p.pod.clone()).collect(),
                s.pods
                    .iter()
                    .map(|p| (p.pod.uid.clone(), p.resources.clone()))
                    .collect(),
            ),
            node_status: s.node_status.clone(),
            fence_events: s.pending_events.clone(),
            condition_events: s.condition_events.clone(),
            decided: s.decided.clone(),
            fenced: s.fenced.iter().cloned().collect(),
        }
    }
}

/// What the fence task reads of the configuration, built once when the agent connects
/// ([`FenceSettings::new`]).
#[derive(Clone, Debug)]
pub struct FenceSettings {
    /// The planner's settings (`[fence]`, the Lease duration, the kubelet's lag).
    pub policy: fence_plan::FencePolicy,
    /// The Lease renew interval, which the ticks' cadence follows.
    pub renew: Duration,
    /// How long without contact before this node counts as cut off (`[fence]
    /// unreachableAfter`).
    pub unreachable_after: Duration,
    /// Where the fence keeps its state, the contact and the pod view (`stateDirectory`).
    pub state_directory: PathBuf,
    /// Where the pods' cgroups are looked for (`[fence] cgroupRoot`, else `cgroupPath`).
    pub cgroup_root: PathBuf,
    /// `[fence] cgroupVersion`, when set rather than detected.
    pub cgroup_version: Option<crate::core::qos::CgroupVersion>,
    /// `[fence] cgroupDriver`, when set rather than detected.
    pub cgroup_driver: Option<crate::core::qos::CgroupDriver>,
    /// Where `/proc` is (`procPath`).
    pub proc_path: PathBuf,
}

impl FenceSettings {
    /// The fence task's settings from the configuration.
    pub fn new(config: &Config) -> FenceSettings {
        let fence = &config.fence;
        FenceSettings {
            policy: fence_plan::FencePolicy::from(config),
            renew: crate::agent::heartbeat::renew_interval(config.node_lease_duration_seconds),
            unreachable_after: fence.unreachable_after,
            state_directory: config.state_directory.clone(),
            cgroup_root: fence
                .cgroup_root
                .clone()
                .unwrap_or_else(|| config.cgroup_path.clone()),
            cgroup_version: fence.cgroup_version,
            cgroup_driver: fence.cgroup_driver,
            proc_path: config.proc_path.clone(),
        }
    }
}

/// The fence task: each tick gathers what changed, asks the core (`core::fencing`) what it
/// means, and carries out the answer. Runs until `shutdown`, when it takes in what changed since
/// the last tick, writes what is not on disk yet and returns.
pub async fn run(
    api: ApiClient,
    settings: FenceSettings,
    node: String,
    mut inputs: FenceInputs,
    health: Arc<Health>,
    clock: Clock,
    shutdown: crate::agent::shutdown::Shutdown,
) {
    let persisted = inputs.persisted.take();
    let start = clock.now();
    let unanswered = persisted.as_ref().and_then(|s| s.unanswered);
    let link = Link::resume(
        persisted
            .as_ref()
            .and_then(|s| s.last_contact.as_deref())
            .and_then(state::parse_time),
        persisted
            .as_ref()
            .and_then(|s| s.cut_off_since.as_deref())
            .and_then(state::parse_time),
        start,
    )
    .with_unanswered(unanswered.unwrap_or_default())
    .with_kubelet_lag(settings.policy.kubelet_lag)
    .with_unproven_return(
        persisted
            .as_ref()
            .and_then(|s| s.counted_from.as_deref())
            .and_then(state::parse_time),
        start,
    );
    if let Some(since) = link.cut_off_since() {
        inputs.reach.set_cut_off(Some(since));
        match link.counted_before_return(start) {
            Some(from) => log::warn!(
                reachable = "false";
                "cut off from the API server since {} (before this start), by a failure before the return proved the kubelet renewed: fencing goes on at once, its deadlines counted from {}",
                crate::core::clock::rfc3339(since),
                crate::core::clock::rfc3339(from)
            ),
            None => log::warn!(
                reachable = "false";
                "cut off from the API server since {} (before this start): fencing goes on",
                crate::core::clock::rfc3339(since)
            ),
        }
    } else if let Some(waited) = unanswered {
        log::warn!(
            unanswered_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
            "the previous run waited {:.1}s for an answer from the API server since its last contact and stopped before it counted as cut off: this run counts its own wait on top (cut off {:.1}s from now unless an answer comes)",
            waited.as_secs_f64(),
            settings.unreachable_after.saturating_sub(waited).as_secs_f64()
        );
    }
    let mut task = Task {
        policy: settings.policy,
        cadence: Cadence::for_renew(settings.renew),
        kept: Kept::from_state(persisted.as_ref()),
        link,
        heartbeat: None,
        kubelet_read: None,
        renewal_read: None,
        counted_from_kubelet: None,
        leader: *inputs.leader.borrow(),
        returned_at: None,
        peer_read_pending_since: None,
        node_path: Default::default(),
        node_read: false,
        reachable: false,
        on_taint: false,
        pods_generation: 0,
        planned: None,
        taint_seen: None,
        not_ready_seen: None,
        unknown_seen: None,
        ready_false_seen: None,
        steps: Steps::default(),
        durability: Durability::new(),
        retry: Retry::new(
            Backoff {
                base: Duration::from_millis(500),
                cap: settings.renew.max(Duration::from_secs(1)),
            },
            Jitter::new(crate::agent::reporter::seed()),
        ),
        // The reporter's journal generation last written (or attempted: a failing disk must not
        // stop reporting), acknowledged through `inputs.durable`.
        journal_gen: inputs.journal.borrow().generation,
        quorum_view: inputs.quorum.borrow_and_update().clone(),
        logged_verdict: None,
        fence: Fence::new(),
        terminator: None,
        layout_error: None,
        dry_layout: None,
        reconcile_error: None,
        write_errors: WriteErrors::default(),
        contact_errors: WriteErrors::default(),
        last_sweep: start.mono,
        unlisted: Vec::new(),
        last_scan: None,
        settled: BTreeSet::new(),
        scan_error: None,
        malformed: BTreeSet::new(),
        own: OwnList::new(&api.kube, &api.requests),
        refreshed: false,
        event_api: Api::namespaced(api.kube.clone(), EVENT_NAMESPACE),
        client: api.kube,
        requests: api.requests,
        settings,
        node,
        health,
        clock,
    };
    drop(persisted);
    task.own.find(&task.settings, start.mono);
    // Wakes the task between its planned ticks when an input moves.
    let mut view_current = inputs.pod_view.subscribe();
    // Written at the first tick too: a file from an earlier run says nothing of this one.
    view_current.mark_changed();
    let mut wake = Wake::default()
        .watch(&view_current)
        .watch(&inputs.pods_changed)
        .watch(&inputs.node)
        .watch(&inputs.quorum)
        .watch(&inputs.leader)
        .watch(&inputs.journal)
        .watch(&inputs.reach.subscribe())
        .watch(&inputs.reach.subscribe_contact());
    wake = wake.watch(&task.own.moved).watch(&task.own.answer);
    // The first tick at once; then at the instant the core names (`core::fencing::next_wake`),
    // or earlier when an input moves — but never within `MIN_GAP` of the last tick for that (a
    // burst of changes is taken in together).
    let mut wake_at = tokio::time::Instant::now();
    let mut last_tick: Option<tokio::time::Instant> = None;
    loop {
        let floor = last_tick.map_or(wake_at, |t| t + MIN_GAP);
        tokio::select! {
            _ = tokio::time::sleep_until(wake_at) => {}
            _ = async {
                tokio::time::sleep_until(floor).await;
                wake.any().await;
            }, if last_tick.is_some() => {}
            _ = shutdown.requested() => {
                // Stopping: what changed since the last tick is taken in and everything not on
                // disk yet is written, whatever the cadence; no step is taken any more.
                let now = task.clock.now();
                task.gather(&mut inputs, now);
                if task.reachable {
                    task.refresh_pods(&mut inputs, now);
                }
                task.note_wait(now);
                let what = task.durability.unwritten();
                task.carry_out(&inputs, now, what);
                return;
            }
        }
        let now = task.clock.now();
        task.gather(&mut inputs, now);
        if view_current.has_changed().unwrap_or(false) {
            view_current.borrow_and_update();
            let stale = inputs
                .pod_view
                .stale_since()
                .map(|t| now.wall - tokio::time::Instant::now().saturating_duration_since(t));
            let written = state::save_pod_view(&task.settings.state_directory, stale);
            task.write_errors.note(written);
        }
        let seen = Seen {
            own: inputs.reach.last_contact().map(|t| task.clock.mono_of(t)),
            heartbeat: Heartbeat::latest(task.heartbeat, task.kubelet_read, now),
            failed: inputs.reach.state() == crate::api::reachability::State::Unreachable,
        };
        // The kubelet's renewal the peers read for a run with no contact of its own counts as the
        // kubelet's own, not as this agent's contact.
        task.link.note_renewal(task.kubelet_read, now);
        // A Node not Ready as last seen: the heartbeat reads our Lease every second, and a
        // failure cuts the node off at once (docs/fence.md §2, *A Node not Ready*).
        let not_ready = task
            .kept
            .node_status
            .as_ref()
            .is_some_and(StoredNode::not_ready);
        task.link.note_not_ready(not_ready);
        inputs
            .not_ready
            .send_if_modified(|n| std::mem::replace(n, not_ready) != not_ready);
        let judged = task.link.judge(&seen, now, task.settings.unreachable_after);
        task.transition(&judged, now, &inputs.reach);
        let cut_off = Some(judged.cut_off);
        inputs
            .cut_off
            .send_if_modified(|c| std::mem::replace(c, cut_off) != cut_off);
        let node = task.kept.node_status.as_ref();
        // A not-ready taint counts as the unreachable one: the controller swaps it for that as
        // the node goes Unknown, whatever its zone's state, and the timers it started go on
        // (docs/fence.md §3, §5). The quorum counts the node as seen tainted, and the fence plans
        // on it while not cut off.
        let seen_tainted = node.is_some_and(StoredNode::controller_tainted);
        inputs
            .tainted
            .send_if_modified(|t| std::mem::replace(t, seen_tainted) != seen_tainted);
        task.reachable = judged.reachable;
        task.note_on_taint(
            crate::core::fencing::fences_on_taint(&judged, seen_tainted),
            judged.cut_off,
        );
        task.take_own_list(now);
        if judged.reachable {
            task.connected(&mut inputs, now).await;
        }
        if judged.cut_off || task.on_taint {
            task.fence(now, judged.counted, seen.own);
        }
        task.scan_unlisted(judged.cut_off, now);
        let unlisted = &task.unlisted;
        inputs.unlisted.send_if_modified(|u| {
            let changed = u != unlisted;
            if changed {
                u.clone_from(unlisted);
            }
            changed
        });
        task.note_wait(now);
        let what = task.durability.due(judged.cut_off, now.mono, task.cadence);
        task.carry_out(&inputs, now, what);
        let ended = tokio::time::Instant::now();
        last_tick = Some(ended);
        wake_at = task.wake_at(&seen, &judged, now.mono, ended);
    }
}

/// The fence task's state between ticks.
struct Task {
    settings: FenceSettings,
    node: String,
    health: Arc<Health>,
    policy: fence_plan::FencePolicy,
    cadence: Cadence,
    kept: Kept,
    link: Link,
    /// Our Node's Ready heartbeat as last seen.
    heartbeat: Option<Heartbeat>,
    /// This node's kubelet renewal as peers read it for this run (`QuorumView::kubelet_renewed`):
    /// counted as a heartbeat seen.
    kubelet_read: Option<Heartbeat>,
    /// This node's kubelet renewal as peers read it in any round of this run
    /// (`QuorumView::kubelet_read`): the deadlines count from it when it came after this run's
    /// own requests failed (`core::fencing::counted_with_kubelet`).
    renewal_read: Option<Heartbeat>,
    /// The deadlines of this partition count from a kubelet renewal read after this run's own
    /// requests failed, as logged.
    counted_from_kubelet: Option<SystemTime>,
    /// What the reads of the controller-manager's leader Lease prove (`agent::leader`), and when
    /// the latest partition ended: a plan on the taint waits for the read after it.
    leader: crate::agent::leader::LeaderView,
    returned_at: Option<Duration>,
    /// Since when the quorum's rounds have said, without a break, that a peer that says it
    /// reaches the API server has not read the leader Lease since it lost it
    /// (`QuorumView::leader_reads`): cut off after a hold, the fence's steps wait for that read,
    /// as for its own after a return.
    peer_read_pending_since: Option<Duration>,
    /// What this partition's probes of the kubelet's path said (`QuorumView::node_path`): taken
    /// from the view, as the reads are, so that a probe alone writes nothing to disk.
    node_path: crate::core::fencing::NodePath<tokio::time::Instant>,
    /// A Node has been read from the channel.
    node_read: bool,
    /// Judged reachable at the last tick.
    reachable: bool,
    /// Not cut off at the last tick, but fencing on the unreachable taint our Node carries
    /// (`core::fencing::fences_on_taint`).
    on_taint: bool,
    /// Bumped whenever `kept.converted` changes.
    pods_generation: u64,
    /// The plans of the current partition and what they were made from (last contact, the
    /// unreachable taint's time, verdict, pods).
    planned: Option<(PlanKey, Vec<fence_plan::PodPlan>)>,
    /// The `timeAdded` of the unreachable taint on our Node as this run saw it, and when it first
    /// saw it (`Task::tainted`).
    taint_seen: Option<(String, Duration)>,
    /// The same of the not-ready taint (`Task::not_ready`).
    not_ready_seen: Option<(String, Duration)>,
    /// The `lastTransitionTime` of the Ready=Unknown on our Node as this run saw it, and when it
    /// first saw it (`Task::queued`).
    unknown_seen: Option<(String, Duration)>,
    /// The same of a Ready=False the kubelet posted (`Task::not_ready`).
    ready_false_seen: Option<(String, Duration)>,
    steps: Steps,
    durability: Durability,
    retry: Retry,
    journal_gen: u64,
    quorum_view: QuorumView,
    /// What the plans were last logged with in this partition: the verdict without the peers'
    /// latest read of the Node (`QuorumVerdict::without_reads`), the taint's time, and the pods'
    /// generation (a pod a peer listed is planned, and logged, with the others).
    logged_verdict: Option<(QuorumVerdict, TaintCounts, u64)>,
    fence: Fence,
    terminator: Option<Terminator>,
    layout_error: Option<String>,
    /// In dry-run, where no terminator is made: the pods' cgroups as found for reading which
    /// run here (`scan_unlisted`).
    dry_layout: Option<CgroupLayout>,
    reconcile_error: Option<String>,
    /// One record per distinct failure of each file (a nearly full disk may take the small
    /// contact file and refuse the state).
    write_errors: WriteErrors,
    contact_errors: WriteErrors,
    last_sweep: Duration,
    /// While cut off: the pods whose cgroups run here that the view lacks, as last read (at most
    /// once an `UNLISTED_SCAN`), the UIDs a peer's list did not hold in this partition, and the
    /// last failure to read the cgroups (logged once).
    unlisted: Vec<String>,
    last_scan: Option<Duration>,
    settled: BTreeSet<String>,
    scan_error: Option<String>,
    malformed: BTreeSet<String>,
    /// While not cut off, the fence's own list of this node's pods for cgroups the view lacks
    /// (`Task::list_unseen`).
    own: OwnList,
    /// Whether the pods have been converted from the store since this task started or the
    /// last partition ended.
    refreshed: bool,
    event_api: Api<Event>,
    client: kube::Client,
    /// The API requests' timeout and counters.
    requests: Requests,
    clock: Clock,
}

/// The answer of the fence's own list: the UIDs it asked about, and the pods among them it
/// listed (`None`: the list failed).
type OwnAnswer = Option<(Vec<String>, Option<Vec<FencePod>>)>;

/// While not cut off, the fence's own list of this node's pods whenever a pod's cgroup appears
/// that the view lacks (issue 22, the late watch; docs/fence.md §5, *Pods the view missed*): the
/// kubelet's watch delivered the pod before the agent's, and a cut a moment later would leave the
/// fence without it. `agent::pod_cgroups` tells of each pod directory made or removed; the list
/// (`api::pods::NodePods`, a consistent read) is sent from a task of its own, so the fence's
/// ticks never wait for it.
struct OwnList {
    /// The pods' cgroups, once found; until then they are looked for every
    /// `pod_cgroups::FIND_AGAIN` (the agent may start before the kubelet makes them).
    layout: Option<CgroupLayout>,
    next_find: Option<Duration>,
    lister: Arc<crate::api::pods::NodePods>,
    /// Bumped by `pod_cgroups::watch`, which takes `moved_tx` once the cgroups are found.
    moved: watch::Receiver<u64>,
    moved_tx: Option<watch::Sender<u64>>,
    answer: watch::Receiver<OwnAnswer>,
    send: watch::Sender<OwnAnswer>,
    in_flight: bool,
    /// The cgroups are to be read at the next tick: they moved, or the last list failed.
    due: bool,
    /// After a failed list, not before this (`OWN_LIST_RETRY`).
    retry_at: Option<Duration>,
    /// The UIDs the last list logged was sent for.
    logged: Vec<String>,
    /// Pods a list found that the watch's store lacked: kept in the view until the store holds
    /// them or their cgroups go.
    listed: Vec<FencePod>,
    /// UIDs a list did not hold (a static pod runs under a UID of the kubelet's own): not listed
    /// for again while their cgroups remain.
    checked: BTreeSet<String>,
    scan_error: Option<String>,
}

impl OwnList {
    /// Lists through `client`; nothing is looked for until [`OwnList::find`].
    fn new(client: &kube::Client, requests: &Requests) -> OwnList {
        let (moved_tx, moved) = watch::channel(0);
        let (send, answer) = watch::channel(None);
        OwnList {
            layout: None,
            next_find: None,
            lister: Arc::new(crate::api::pods::NodePods::new(client.clone(), requests)),
            moved,
            moved_tx: Some(moved_tx),
            answer,
            send,
            in_flight: false,
            due: false,
            retry_at: None,
            logged: Vec::new(),
            listed: Vec::new(),
            checked: BTreeSet::new(),
            scan_error: None,
        }
    }

    /// Unless the fence is off or they were found already: looks for the pods' cgroups at most
    /// once a `FIND_AGAIN`, and once found, starts watching them (`agent::pod_cgroups`) and
    /// reads them at the next tick, for pods that started before. Not finding them is logged
    /// once.
    fn find(&mut self, settings: &FenceSettings, now: Duration) {
        if settings.policy.mode == fence_plan::Mode::Off
            || self.layout.is_some()
            || self.next_find.is_some_and(|t| now < t)
        {
            return;
        }
        let first = self.next_find.is_none();
        self.next_find = Some(now + crate::agent::pod_cgroups::FIND_AGAIN);
        let layout = CgroupLayout::detect(
            &settings.cgroup_root,
            settings.cgroup_version,
            settings.cgroup_driver,
        )
        .and_then(|l| l.locate_in_mounts(&settings.proc_path));
        match layout {
            Ok(layout) => {
                if let Some(tx) = self.moved_tx.take() {
                    tokio::spawn(crate::agent::pod_cgroups::watch(layout.clone(), tx));
                }
                self.layout = Some(layout);
                self.due = true;
            }
            Err(e) if first => {
                log::info!(error = e.to_string().as_str();
                    "pods' cgroups not found ({e}): looked for again every minute; until then a pod the pod watch has not delivered when the link is cut is learned only from the peers");
            }
            Err(_) => {}
        }
    }

    /// The answer of the list sent last, once, when it has come.
    fn take_answer(&mut self) -> OwnAnswer {
        if !self.answer.has_changed().unwrap_or(false) {
            return None;
        }
        self.in_flight = false;
        self.answer.borrow_and_update().clone()
    }

    /// Whether the cgroups are to be read now (clearing that).
    fn take_due(&mut self) -> bool {
        let moved = self.moved.has_changed().unwrap_or(false);
        if moved {
            self.moved.borrow_and_update();
        }
        std::mem::take(&mut self.due) | moved
    }

    /// After the view was refreshed from the store: the pods listed that the store still lacks
    /// join it again (a refresh leaves them out); whether any did.
    fn keep_in(&mut self, converted: &mut Converted) -> bool {
        self.listed.retain(|p| {
            converted
                .pods
                .binary_search_by(|q| q.uid.cmp(&p.uid))
                .is_err()
        });
        !self.listed.is_empty() && converted.learn(self.listed.clone())
    }

    /// Sends a list of `node`'s pods for `asked`.
    fn send(&mut self, node: &str, asked: Vec<String>) {
        let (lister, send) = (self.lister.clone(), self.send.clone());
        self.in_flight = true;
        let node = node.to_owned();
        tokio::spawn(async move {
            let listed = lister.listed(&node, &asked, OWN_LIST_BOUND).await;
            let pods = listed.map(|pods| pods.iter().filter_map(fence_pod).collect());
            send.send_replace(Some((asked, pods)));
        });
    }
}

/// The node controller's taints' times, and the instant every taint eviction timer started again
/// (`core::leader`), as planned.
type TaintCounts = (fence_plan::Taints, Option<Duration>);

/// What a partition's plans are made from: the contact, the taint's counts, the quorum's verdict,
/// the pods' generation.
type PlanKey = (fence_plan::PlanContact, TaintCounts, QuorumVerdict, u64);

impl Task {
    /// The instant no taint eviction timer that can still delete a pod started before, on the
    /// monotonic clock: the later of what this node's reads of the controller-manager's leader
    /// Lease prove and what its peers' reads do (`core::quorum::LeaderReads`).
    fn timers_from(&self) -> Option<Duration> {
        self.quorum_view.leader_reads.bound(self.leader.timers_from)
    }

    /// What the plans count from of the node controller's taints on our Node, on the monotonic
    /// clock, with the `timeAdded` each counts from: our own view's, and the not-ready taint the
    /// peers read (`NodeReads`).
    fn tainted(&self, now: Moment) -> fence_plan::Taints {
        let node = self.kept.node_status.as_ref();
        let (unreachable, unreachable_after_read) = self.unreachable(now);
        let not_ready = self.not_ready(now);
        fence_plan::Taints {
            unreachable: unreachable.map(|(t, _)| t),
            not_ready: not_ready.map(|(t, _)| t),
            swapped_from: node.and_then(|n| n.swapped_from_at(now)),
            added: fence_plan::TaintsAdded {
                unreachable: unreachable.and_then(|(_, added)| added),
                not_ready: not_ready.and_then(|(_, added)| added),
                swapped_from: node.and_then(StoredNode::swapped_from_added),
            },
            unreachable_after_read,
        }
        .with_not_ready_read(self.node_reads().not_ready(now))
    }

    /// The not-ready taint on our Node as last seen: its `timeAdded` read on our wall clock, or
    /// when this run first saw it if that is earlier (as [`Task::unreachable`]).
    ///
    /// Without either of the controller's taints, a Ready=False the kubelet posted counts as
    /// that taint added at the post (`Fixes::ready_false_queued`): the controller queues the node
    /// on its next pass, and a link cut before the taint came leaves this view without it while
    /// its timers run (docs/fence.md §3). With the taint's `timeAdded` (none for the post: the
    /// kubelet stamps it on this node's clock, and the taint comes later).
    fn not_ready(&self, now: Moment) -> Option<(Duration, Option<SystemTime>)> {
        let node = self.kept.node_status.as_ref()?;
        let text = node.not_ready_added();
        let seen = text.and_then(|added| first_seen(&self.not_ready_seen, added));
        let added = text.and_then(crate::state::parse_time);
        let tainted = fence_plan::taint_counted(added.map(|w| now.mono_at(w)), seen);
        tainted.map(|t| (t, added)).or_else(|| {
            let seen = first_seen(&self.ready_false_seen, node.not_ready_queued_since()?);
            fence_plan::taint_counted(node.not_ready_queued_at(now), seen).map(|t| (t, None))
        })
    }

    /// When the unreachable taint on our Node as last seen was added, on the monotonic clock: its
    /// `timeAdded` read on our wall clock (one in our future: now), or when this run first saw it
    /// if that is earlier (our clock may be behind the controller's); or, if earlier still, the
    /// `timeAdded` the peers read (as ours: `core::quorum::ReadTime::counted`), or the latest
    /// round before the peers read the taint in which they read the Node without it. `None`
    /// without any. With the `timeAdded` it counts from (none for that round); and whether,
    /// not cut off, it counts as added after the latest such read (`fence_plan::after_read`).
    fn unreachable(&self, now: Moment) -> (Option<(Duration, Option<SystemTime>)>, bool) {
        let taint_reads = crate::core::quorum::TaintReads {
            untainted_at: self.quorum_view.untainted_at.map(|t| self.clock.mono_of(t)),
            tainted: self.quorum_view.tainted_read,
        };
        let own = self.kept.node_status.as_ref().and_then(|node| {
            let text = node.unreachable_added()?;
            let seen = first_seen(&self.taint_seen, text);
            let added = crate::state::parse_time(text);
            fence_plan::taint_counted(added.map(|w| now.mono_at(w)), seen).map(|t| (t, added))
        });
        // And the taint's `timeAdded` the peers read (`NodeReads`).
        let reads = self.node_reads();
        let peers = reads
            .tainted(now)
            .map(|t| (t, reads.taint_added.map(|r| r.wall)));
        let own = fence_plan::earliest_added(own, peers);
        let cut_off = self.link.cut_off_since().is_some();
        // Not cut off, a taint added after the peers' latest read without it counts from its
        // own time (or that read's), even if later than the count from contact.
        let grace = self.policy.node_monitor_grace_period;
        let after_read =
            fence_plan::after_read(own, taint_reads.untainted_at, grace).filter(|_| !cut_off);
        // A taint the peers read counts from the latest read without it (`TaintReads`); only
        // while cut off: not cut off, our own view is fresh again, and the taint they read may
        // since have been swapped for not-ready, or removed (`Fixes::own_view_at_return`).
        let read = taint_reads.tainted_from().filter(|_| cut_off);
        (
            after_read.or_else(|| fence_plan::earliest_added(own, read.map(|t| (t, None)))),
            after_read.is_some(),
        )
    }

    /// The times the peers read on our Node (`core::quorum::NodeReads`), on the monotonic scale.
    fn node_reads(&self) -> crate::core::quorum::NodeReads<Duration> {
        self.quorum_view.node_reads.map(|t| self.clock.mono_of(t))
    }

    /// While our Node as last seen carries the Ready=Unknown the controller wrote, and not the
    /// unreachable taint, when the controller wrote it, on the monotonic clock: its
    /// `lastTransitionTime` read on our wall clock, or when this run first saw it if that is
    /// earlier (as [`Task::tainted`]); or the same the peers' latest read of it found, if earlier.
    /// The node is queued for the taint until its kubelet posts Ready=True
    /// (`core::fence_plan::queued_contact`).
    fn queued(&self, now: Moment) -> Option<Duration> {
        let own = self.kept.node_status.as_ref().and_then(|node| {
            let seen = first_seen(&self.unknown_seen, node.queued_since()?);
            fence_plan::taint_counted(node.queued_at(now), seen)
        });
        fence_plan::taint_counted(own, self.node_reads().queued(now))
    }

    /// When the next tick is due with nothing new observed (the task wakes earlier on any change
    /// of its inputs): at the instant `core::fencing::next_wake` names, `MIN_GAP` after the tick
    /// that ended at `ended` when that instant is no later than the tick's `now` (work due at
    /// once that the tick left pending: a spin would follow), and at most `IDLE_TICK` (cut off:
    /// `CUT_OFF_IDLE_TICK`) after it.
    fn wake_at(
        &self,
        seen: &Seen,
        judged: &Judged,
        now: Duration,
        ended: tokio::time::Instant,
    ) -> tokio::time::Instant {
        let next = crate::core::fencing::next_wake(&Waiting {
            now,
            judged,
            link: &self.link,
            seen,
            unreachable_after: self.settings.unreachable_after,
            plans: self.planned.as_ref().map(|(_, plans)| plans.as_slice()),
            steps: &self.steps,
            fenced: &self.kept.fenced,
            sweep_at: (self.terminator.is_some() && !self.fence.is_empty())
                .then_some(self.last_sweep + SWEEP),
            durability: &self.durability,
            cadence: self.cadence,
            retry: &self.retry,
            api_work: !((self.kept.fenced.is_empty() || self.on_taint)
                && self.kept.fence_events.is_empty()),
            on_taint: self.on_taint,
        });
        let bound = ended
            + if judged.cut_off {
                CUT_OFF_IDLE_TICK
            } else {
                IDLE_TICK
            };
        match next {
            Some(t) if t <= now => ended + MIN_GAP,
            Some(t) => self.clock.instant_of(t).min(bound),
            None => bound,
        }
    }

    /// Takes in what the other tasks changed: the quorum's view, the reporter's journal, the Node.
    fn gather(&mut self, inputs: &mut FenceInputs, now: Moment) {
        if inputs.quorum.has_changed().unwrap_or(false) {
            let mut next = inputs.quorum.borrow_and_update().clone();
            if let Some((stamped, arrived)) = next.kubelet_renewed.take() {
                self.kubelet_read = Some(Heartbeat {
                    stamped,
                    arrived: self.clock.mono_of(arrived),
                });
            }
            if let Some((stamped, arrived)) = next.kubelet_read.take() {
                self.renewal_read = Some(Heartbeat {
                    stamped,
                    arrived: self.clock.mono_of(arrived),
                });
            }
            if let Some(read) = next.pods_read.take() {
                self.learn(read);
            }
            self.node_path = std::mem::take(&mut next.node_path);
            // The read is not persisted: only what the state file keeps is written again.
            if next != self.quorum_view {
                self.quorum_view = next;
                self.durability.changed();
            }
        }
        if inputs.leader.has_changed().unwrap_or(false) {
            self.leader = *inputs.leader.borrow_and_update();
        }
        if inputs.journal.has_changed().unwrap_or(false) {
            let journal = inputs.journal.borrow_and_update();
            self.kept.condition_events = journal.events.clone();
            self.kept.decided = journal
                .decided
                .iter()
                .map(StoredCondition::from_condition)
                .collect();
            self.journal_gen = journal.generation;
            self.durability.changed();
        }
        // The Node already in the channel when the task began counts as changed.
        let node_changed = inputs.node.has_changed().unwrap_or(false) || !self.node_read;
        if node_changed && let Some(n) = inputs.node.borrow_and_update().as_ref() {
            self.node_read = true;
            let mut seen = snapshot::node(n);
            // The first taint of a run the controller swapped goes on with its timers.
            seen.carry_run(self.kept.node_status.as_ref());
            note_seen(&mut self.taint_seen, seen.unreachable_added(), now.mono);
            note_seen(&mut self.not_ready_seen, seen.not_ready_added(), now.mono);
            note_seen(&mut self.unknown_seen, seen.ready_unknown_since(), now.mono);
            note_seen(
                &mut self.ready_false_seen,
                seen.ready_false_since(),
                now.mono,
            );
            if self.kept.node_status.as_ref() != Some(&seen) {
                self.kept.node_status = Some(seen);
                self.durability.changed();
            }
            let stamped = crate::api::node::ready_condition(n)
                .and_then(|c| c.last_heartbeat_time.as_ref())
                .map(|t| SystemTime::from(t.0));
            // A new heartbeat arrives now; the same one delivered again is not news.
            if let Some(stamped) = stamped
                && self.heartbeat.map(|h| h.stamped) != Some(stamped)
            {
                self.heartbeat = Some(Heartbeat {
                    stamped,
                    arrived: now.mono,
                });
            }
        }
    }

    /// The pods a round's peers listed that the view lacks join it, and are planned with the
    /// others (`core::unlisted`); the UIDs their lists did not hold are not asked about again in
    /// this partition.
    fn learn(&mut self, read: crate::core::unlisted::PodsRead) {
        let found: Vec<FencePod> = read
            .found
            .into_iter()
            .filter(|p| self.unlisted.contains(&p.uid))
            .collect();
        // Not asked about again from this tick on, before the next read of the cgroups.
        self.unlisted
            .retain(|uid| !read.settled.contains(uid) && found.iter().all(|p| p.uid != *uid));
        self.settled.extend(read.settled);
        for p in &found {
            log::warn!(pod = format!("{}/{}", p.namespace, p.name).as_str(), pod_uid = p.uid.as_str();
                "pod {}/{} runs here but the pod watch had not delivered it before the cut: a peer listed it, and the fence plans it", p.namespace, p.name);
        }
        if self.kept.converted.learn(found) {
            self.pods_generation += 1;
            self.durability.changed();
        }
    }

    /// While cut off (the fence able to find the pods' cgroups: in enforce, its terminator's; in
    /// dry-run, found for this), the pods whose cgroups run here that the view lacks and no
    /// peer's list settled, read at most once an `UNLISTED_SCAN`; none otherwise.
    fn scan_unlisted(&mut self, cut_off: bool, now: Moment) {
        if !cut_off {
            self.unlisted.clear();
            self.settled.clear();
            self.last_scan = None;
            return;
        }
        if self
            .last_scan
            .is_some_and(|at| now.mono < at + UNLISTED_SCAN)
        {
            return;
        }
        self.last_scan = Some(now.mono);
        if self.terminator.is_none()
            && self.dry_layout.is_none()
            && self.policy.mode == fence_plan::Mode::DryRun
        {
            self.dry_layout = self.find_layout("pods the pod view lacks cannot be found");
        }
        let layout = self.terminator.as_ref().map(Terminator::layout);
        let Some(layout) = layout.or(self.dry_layout.as_ref()) else {
            return;
        };
        let (read, root) = (layout.pod_uids(), layout.hierarchy_root());
        match read {
            Ok(running) => {
                let unlisted = crate::core::unlisted::unlisted(
                    running.iter().map(String::as_str),
                    &self.kept.converted.pods,
                    &self.settled,
                );
                if unlisted != self.unlisted && !unlisted.is_empty() {
                    log::info!(
                        pods = unlisted.join(",").as_str();
                        "{} pod(s) have cgroups here that the pod view lacks: asking the peers that reach the API server to list them ({})",
                        unlisted.len(), unlisted.join(", ")
                    );
                }
                self.unlisted = unlisted;
                self.scan_error = None;
            }
            Err(e) => {
                let msg = format!(
                    "cannot read the pods' cgroups under {}: {e}",
                    root.display()
                );
                if self.scan_error.as_deref() != Some(msg.as_str()) {
                    log::error!(error = msg.as_str(); "{msg}; pods the pod view lacks cannot be found");
                    self.scan_error = Some(msg);
                }
            }
        }
    }

    /// Records the judgement: a moved contact, the start or end of a partition.
    fn transition(&mut self, judged: &Judged, now: Moment, reach: &Reachability) {
        if judged.moved {
            self.durability.contact_moved();
        }
        match judged.transition {
            Some(Transition::Reconnected { since }) => {
                // The line that says the API server answers again said so already, with how
                // long this partition lasted (`api::reachability`): one line per edge.
                let lasted = now.wall.duration_since(since).unwrap_or_default();
                log::debug!("partition of {}s over: fencing stops", lasted.as_secs());
                reach.set_cut_off(None);
                self.returned_at = Some(now.mono);
                self.steps.clear();
                self.logged_verdict = None;
                self.counted_from_kubelet = None;
                // The plans' metrics go back to a partition starting now.
                self.refreshed = false;
                self.durability.changed();
            }
            Some(Transition::CutOff) => {
                reach.set_cut_off(Some(now.wall));
                // The last contact is final now: the whole state is written at the end of this
                // tick (writes are due at once while cut off), so a restart from here on plans
                // the very same deadlines.
                self.durability.changed();
                let contact = self
                    .link
                    .last_contact_wall(now)
                    .map(crate::core::clock::rfc3339)
                    .unwrap_or_default();
                let why = self.link.cut_at_once().map_or_else(
                    || {
                        format!(
                            "no answer for {}s",
                            self.settings.unreachable_after.as_secs()
                        )
                    },
                    str::to_string,
                );
                log::warn!(
                    reachable = "false", last_contact = contact.as_str();
                    "cut off from the API server ({why}; last contact {contact}); fence planning {} pod(s) in {} mode",
                    self.kept.converted.pods.len(), mode_name(self.policy.mode)
                );
            }
            None => {}
        }
    }

    /// Records whether the fence plans on its Node's taint while not cut off, with one record
    /// at each change. Once the taint is gone (not cut off), its plans are over: the steps taken
    /// are forgotten, as at the end of a partition, so that a partition that follows plans anew
    /// for the pods released to the kubelet.
    fn note_on_taint(&mut self, on_taint: bool, cut_off: bool) {
        if on_taint == std::mem::replace(&mut self.on_taint, on_taint) {
            return;
        }
        self.logged_verdict = None;
        if on_taint {
            log::warn!(
                "not cut off, but this node's Node carries node.kubernetes.io/unreachable:NoExecute: the fence stops each pod by the time the control plane deletes it, in case the link goes again"
            );
        } else if !cut_off {
            log::info!(
                "this node's Node no longer carries node.kubernetes.io/unreachable:NoExecute: the fence no longer plans on the taint"
            );
            self.steps.clear();
        }
    }

    /// Connected: refresh the pods from the watch, reconcile fenced pods and send held Events.
    async fn connected(&mut self, inputs: &mut FenceInputs, now: Moment) {
        self.refresh_pods(inputs, now);
        self.list_unseen(now);
        self.api_work(inputs, now).await;
    }

    /// At every tick, connected or not (a list answered just before a cut counts): the answer of
    /// the fence's own list, once it has come (`OwnList`). The pods it listed that the view
    /// lacks join it; the UIDs it did not hold are not listed for again; after a failure the
    /// cgroups are read again `OWN_LIST_RETRY` later.
    fn take_own_list(&mut self, now: Moment) {
        if let Some((asked, found)) = self.own.take_answer() {
            match found {
                Some(found) => {
                    let found: Vec<FencePod> = found
                        .into_iter()
                        .filter(|p| {
                            asked.contains(&p.uid)
                                && self
                                    .kept
                                    .converted
                                    .pods
                                    .binary_search_by(|q| q.uid.cmp(&p.uid))
                                    .is_err()
                        })
                        .collect();
                    // Not held by the list, and not in the view: a static pod's UID.
                    self.own.checked.extend(asked.into_iter().filter(|uid| {
                        found.iter().all(|p| p.uid != *uid)
                            && self
                                .kept
                                .converted
                                .pods
                                .binary_search_by(|q| q.uid.cmp(uid))
                                .is_err()
                    }));
                    for p in &found {
                        log::warn!(pod = format!("{}/{}", p.namespace, p.name).as_str(), pod_uid = p.uid.as_str();
                            "pod {}/{} runs here but the pod watch had not delivered it: this node's pods were listed, and the fence plans it", p.namespace, p.name);
                    }
                    self.own.listed.extend(found.iter().cloned());
                    if self.kept.converted.learn(found) {
                        self.pods_generation += 1;
                        self.durability.changed();
                    }
                }
                None => {
                    self.own.due = true;
                    self.own.retry_at = Some(now.mono + OWN_LIST_RETRY);
                }
            }
        }
    }

    /// Connected, the view current: sends the fence's own list when the pods' cgroups moved and
    /// show a pod the view lacks (`OwnList`).
    fn list_unseen(&mut self, now: Moment) {
        self.own.find(&self.settings, now.mono);
        if !self.refreshed
            || self.own.in_flight
            || self.own.retry_at.is_some_and(|t| now.mono < t)
            || !self.own.take_due()
        {
            return;
        }
        let Some(layout) = self.own.layout.as_ref() else {
            return;
        };
        let running = match layout.pod_uids() {
            Ok(running) => {
                self.own.scan_error = None;
                running
            }
            Err(e) => {
                let msg = format!(
                    "cannot read the pods' cgroups under {}: {e}",
                    layout.hierarchy_root().display()
                );
                if self.own.scan_error.as_deref() != Some(msg.as_str()) {
                    log::error!(error = msg.as_str(); "{msg}; a pod the pod watch has not delivered is not listed before a cut");
                    self.own.scan_error = Some(msg);
                }
                return;
            }
        };
        // What is gone from the cgroups is forgotten.
        self.own
            .checked
            .retain(|uid| running.binary_search(uid).is_ok());
        self.own
            .listed
            .retain(|p| running.binary_search(&p.uid).is_ok());
        let unseen = crate::core::unlisted::unlisted(
            running.iter().map(String::as_str),
            &self.kept.converted.pods,
            &self.own.checked,
        );
        if unseen.is_empty() {
            return;
        }
        // Once for each set of pods: a list sent again after a failure says nothing new.
        if self.own.logged != unseen {
            log::info!(
                pods = unseen.join(",").as_str();
                "{} pod(s) have cgroups here that the pod view lacks: listing this node's pods ({})",
                unseen.len(), unseen.join(", ")
            );
            self.own.logged.clone_from(&unseen);
        }
        let node = self.node.clone();
        self.own.send(&node, unseen);
    }

    /// The pods from the watch's store: once the initial list is complete (an empty store right
    /// after a restart must not erase the persisted pods) and then whenever the store changes.
    fn refresh_pods(&mut self, inputs: &mut FenceInputs, now: Moment) {
        let listed = futures_util::FutureExt::now_or_never(inputs.pods.wait_until_ready())
            .is_some_and(|r| r.is_ok());
        let store_changed = inputs.pods_changed.has_changed().unwrap_or(false);
        if listed && (store_changed || !self.refreshed) {
            inputs.pods_changed.borrow_and_update();
            let first = !std::mem::replace(&mut self.refreshed, true);
            let converted = self
                .kept
                .converted
                .refresh(&inputs.pods, &mut self.malformed)
                | self.own.keep_in(&mut self.kept.converted);
            if converted {
                self.pods_generation += 1;
                self.durability.changed();
            }
            // While fencing on the taint, `fence` counts the plans it makes.
            if (converted || first) && !self.on_taint {
                // What a partition starting now would do, for the metrics.
                let verdict = QuorumVerdict::NotConsulted;
                let plans = fence_plan::plan_each(
                    &self.kept.converted.pods,
                    now.mono,
                    self.tainted(now),
                    self.timers_from(),
                    &self.policy,
                    &verdict,
                );
                let plans = plans.map(|(_, plan)| plan);
                self.health.metrics.record_plans(plans, &verdict, None);
            }
        }
    }

    /// Reconciling fenced pods and sending held Events: retried with a capped, jittered
    /// backoff, never every tick (the API server sees a request a second at most from here
    /// while it fails).
    async fn api_work(&mut self, inputs: &mut FenceInputs, now: Moment) {
        let due = self.retry.due(now.mono);
        let mut failed = false;
        let node = self.node.clone();
        // Fenced pods are released only once the taint is gone: while it is on the Node the
        // control plane deletes them, and a pod released now would run again until then.
        if due && !self.on_taint && !self.kept.fenced.is_empty() {
            match reconcile(
                &self.client,
                &self.requests,
                &node,
                &mut self.fence,
                &mut self.kept.fenced,
                &self.health,
            )
            .await
            {
                Ok(outcomes) => {
                    self.reconcile_error = None;
                    // Each outcome is an Event too, sent with the held ones below.
                    self.kept
                        .fence_events
                        .extend(outcomes.into_iter().map(|(reason, message)| PendingEvent {
                            reason,
                            message,
                            warning: false,
                            at: now.wall,
                        }));
                    self.durability.changed();
                }
                Err(e) => {
                    let msg = e.to_string();
                    if self.reconcile_error.as_deref() != Some(msg.as_str()) {
                        log::warn!(error = msg.as_str(); "cannot list pods to reconcile fenced pods yet: {msg}");
                        self.reconcile_error = Some(msg);
                    }
                    failed = true;
                }
            }
        }
        if due && !failed && !self.kept.fence_events.is_empty() {
            let uid = inputs
                .node
                .borrow()
                .as_ref()
                .and_then(|n| n.metadata.uid.clone());
            let mut kept = Vec::new();
            let before = self.kept.fence_events.len();
            for e in std::mem::take(&mut self.kept.fence_events) {
                let sent = tokio::time::Instant::now();
                let result =
                    events::send(&self.requests, &self.event_api, &node, uid.as_deref(), &e).await;
                inputs.reach.record(&result, contact::Request::Other, sent);
                if let Err(err) = result
                    && err.is_transient()
                {
                    kept.push(e);
                }
            }
            failed = !kept.is_empty();
            if kept.len() != before {
                self.durability.changed();
            }
            self.kept.fence_events = kept;
        }
        let after = self.clock.now().mono;
        self.retry.next(due, failed, after);
    }

    /// Cut off, or fencing on the taint (`Task::on_taint`): plan every pod from the last contact
    /// and take the steps due. `counted`: the contact the deadlines count from
    /// (`Judged::counted`), moved to a renewal of the kubelet peers read when it came after this
    /// run's own requests (its last contact: `own`) stopped reaching the API server
    /// (`core::fencing::counted_with_kubelet`).
    fn fence(&mut self, now: Moment, counted: Option<Duration>, own: Option<Duration>) {
        let Some(counted) = counted else {
            return;
        };
        let read = self.renewal_read.filter(|_| !self.on_taint);
        // The latest renewal the probes of the kubelet's path prove counts as one read.
        let probed = (self.node_path.kubelet_by)
            .filter(|_| !self.on_taint)
            .map(|t| self.clock.mono_of(t));
        let (contact, cut_off_policy) = crate::core::fencing::counted_with_kubelet(
            counted,
            own,
            read.map(|h| h.contact(now)).max(probed),
            self.settings.renew,
            &self.policy,
        );
        // The latest the control plane may have heard the kubelet: this run's own last contact,
        // if later than the count (after a return too short to count, say).
        let latest = contact.max(own.unwrap_or_default());
        // A Node recorded Unknown is queued for the taint, however recently it was heard.
        let queued = self.queued(now);
        let latest = fence_plan::queued_contact(latest, queued, &cut_off_policy);
        let contact = fence_plan::queued_contact(contact, queued, &cut_off_policy);
        if contact > counted
            && let Some(h) = read
            && self.counted_from_kubelet != Some(h.stamped)
        {
            if self.counted_from_kubelet.is_none() {
                log::warn!(
                    "peers read this node's kubelet Lease renewed {:.1}s after this agent's last contact: the kubelet reaches the API server while this agent's own requests fail (its path to the API server is not the node's); the fence counts its deadlines from that renewal",
                    h.contact(now)
                        .saturating_sub(own.unwrap_or_default())
                        .as_secs_f64()
                );
            }
            self.counted_from_kubelet = Some(h.stamped);
        }
        let untainted = self.quorum_view.untainted_at.map(|t| self.clock.mono_of(t));
        let (verdict, policy) = if self.on_taint {
            (QuorumVerdict::Tainted { untainted }, self.policy.on_taint())
        } else {
            (self.planning(untainted), cut_off_policy)
        };
        // Planned again only when what the plans depend on changed: while cut off, a tick
        // walks the plans for due steps and does nothing else.
        let tainted = self.tainted(now);
        let timers_from = self.timers_from();
        let contact = fence_plan::PlanContact {
            counted: contact,
            latest,
        };
        let key = (
            contact,
            (tainted, timers_from),
            verdict.clone(),
            self.pods_generation,
        );
        let replanned = self.planned.as_ref().is_none_or(|(k, _)| *k != key);
        if replanned {
            let plans = fence_plan::plan(
                &self.kept.converted.pods,
                contact,
                tainted,
                timers_from,
                &policy,
                &verdict,
            );
            self.planned = Some((key, plans));
        }
        let Some((_, plans)) = self.planned.take() else {
            return;
        };
        let answered = self.on_taint || self.quorum_view.verdict.is_some();
        // Each round read without the taint moves the deadlines a little later: the plans are
        // logged again when the verdict, the taint or the pods change, not at every such round.
        let logged = (
            verdict.without_reads(),
            (tainted, timers_from),
            self.pods_generation,
        );
        if self.logged_verdict.as_ref() != Some(&logged) && answered {
            // Every plan, logged once the quorum first answers in this partition (a round takes
            // at most `[peers] timeout`; nothing is stopped before) and again whenever it changes
            // them (held, enforced, or counted from the end of a hold).
            for p in &plans {
                log_plan(p, now);
                self.health.metrics.record_fence("planned");
            }
            self.logged_verdict = Some(logged);
        }
        if replanned && answered {
            // The plans' counts and next deadlines, again whenever the plans change (a pod
            // created or deleted while cut off as well as a new verdict).
            self.health
                .metrics
                .record_plans(plans.iter().map(|p| &p.plan), &verdict, Some(now));
        }
        if self.terminator.is_none() && self.policy.mode == fence_plan::Mode::Enforce {
            self.find_cgroups();
        }
        // A SIGTERM waits while the peers read nothing from the API server they say they reach,
        // or while an enforce in doubt has no taint read (`core::quorum::sigterm_waits`).
        let view = &self.quorum_view;
        let waits = matches!(verdict, QuorumVerdict::Enforce { .. })
            && crate::core::quorum::sigterm_waits(
                view.verdict.as_ref(),
                &view.server_reads,
                view.tainted_read,
                &crate::core::quorum::Fixes::ALL,
            );
        if self.steps.wait_sigterm(waits) {
            if !waits {
                log::info!(
                    "SIGTERMs not sent yet no longer wait for a peer's read: under enforce, each goes out when due"
                );
            } else if view.server_reads.unread {
                log::warn!(
                    "SIGTERMs not sent yet wait for a round in which a peer reads from the API server (their kills keep their times): the peers say they reach it, but none of their reads came back"
                );
            } else {
                log::warn!(
                    "SIGTERMs not sent yet wait until a peer reads the unreachable taint on this node's Node (their kills keep their times): the verdict only guesses that the control plane tainted this node, and the peers read its Node without the taint"
                );
            }
        }
        // Back from a partition, a plan on the taint waits for the first read of the leader Lease,
        // which may prove every timer started again (`agent::leader`), for at most
        // `RETURN_READ_WAIT`; a step due in the meantime has the task tick every `MIN_GAP`.
        let read_awaited = self.on_taint
            && self.leader.pending
            && self
                .returned_at
                .is_some_and(|r| now.mono < r + crate::core::leader::RETURN_READ_WAIT);
        // Cut off after a hold, so do the steps while a peer that says it reaches the API server
        // has not read it since it lost it itself: its read may prove that the controller-
        // manager's lead lapsed in an outage, and the timers started again
        // (`core::quorum::LeaderReads::read_awaited`).
        let held = !self.on_taint && self.quorum_view.held_from.is_some();
        let was = self.peer_read_pending_since;
        let peer_awaited = self.quorum_view.leader_reads.read_awaited(
            held,
            &mut self.peer_read_pending_since,
            now.mono,
        );
        if was.is_none() && peer_awaited.is_some() {
            log::info!(
                "a peer that reaches the API server has not read the controller-manager's leader Lease since it lost it itself: the fence's steps wait for its read, at most {}s",
                crate::core::leader::RETURN_READ_WAIT.as_secs()
            );
        }
        let read_awaited = read_awaited || peer_awaited.is_some();
        if !read_awaited {
            for due in self.steps.due(&plans, &self.kept.fenced, now.mono) {
                self.take(&due, now);
            }
        }
        self.planned = Some((
            (
                contact,
                (tainted, timers_from),
                verdict,
                self.pods_generation,
            ),
            plans,
        ));
        if let Some(t) = &self.terminator
            && now.mono.saturating_sub(self.last_sweep) >= SWEEP
        {
            self.last_sweep = now.mono;
            let report = self.fence.sweep(t);
            for s in &report.pods {
                if s.report.signalled > 0 {
                    log::warn!(pod_uid = s.uid.as_str(), action = "rekill", signalled = s.report.signalled;
                        "fenced pod {} had {} new process(es): killed again", s.uid, s.report.signalled);
                    self.health.metrics.record_fence("rekill");
                }
            }
        }
    }

    /// The quorum's verdict as the fence plans with it while cut off: a hold while the kubelet's
    /// path answers ready, unless a peer read the unreachable taint on the Node in this partition
    /// (`core::fencing::NodePath::answers`).
    fn planning(&self, untainted: Option<Duration>) -> QuorumVerdict {
        self.node_path.verdict(crate::core::quorum::planning(
            self.quorum_view.verdict.as_ref(),
            (
                self.quorum_view.held_at.map(|(t, _)| self.clock.mono_of(t)),
                self.quorum_view
                    .held_from
                    .map(|(t, _)| self.clock.mono_of(t)),
            ),
            (untainted, self.quorum_view.stop_due_tolerated),
            self.quorum_view.tainted_read,
            self.requests.timeout(),
        ))
    }

    /// The pods' cgroups, or `None` with the failure logged once (what it costs: `then`).
    fn find_layout(&mut self, then: &str) -> Option<CgroupLayout> {
        let c = &self.settings;
        match CgroupLayout::detect(&c.cgroup_root, c.cgroup_version, c.cgroup_driver)
            .and_then(|l| l.locate_in_mounts(&c.proc_path))
        {
            Ok(layout) => {
                self.layout_error = None;
                Some(layout)
            }
            Err(e) => {
                let msg = e.to_string();
                if self.layout_error.as_deref() != Some(msg.as_str()) {
                    log::error!(error = msg.as_str(); "cannot find the pods' cgroups ({msg}); {then}");
                    self.layout_error = Some(msg);
                }
                None
            }
        }
    }

    /// The pods' cgroups, found once per run; each failure is logged once.
    fn find_cgroups(&mut self) {
        let Some(layout) = self.find_layout("nothing can be stopped") else {
            return;
        };
        // Pods fenced before a restart are fenced again.
        for p in self
            .kept
            .converted
            .pods
            .iter()
            .filter(|p| self.kept.fenced.contains(&p.uid))
        {
            self.fence
                .fence(p.uid.clone(), layout.pod_dir(&p.uid, p.qos));
        }
        self.terminator = Some(Terminator::new(layout, self.settings.proc_path.clone()));
    }

    /// Carries out one step the core found due.
    fn take(&mut self, due: &Due, now: Moment) {
        let Some(pod) = self.kept.converted.pods.iter().find(|x| x.uid == due.uid) else {
            return;
        };
        let node = self.node.as_str();
        let id = format!("{}/{}", pod.namespace, pod.name);
        let (uid, late) = (due.uid.as_str(), due.late.as_millis() as u64);
        let metrics = &self.health.metrics;
        match (due.step, due.dry_run, &self.terminator) {
            (Step::Sigterm, true, _) => {
                log::info!(pod = id.as_str(), pod_uid = uid, action = "sigterm", dry_run = "true", late_ms = late;
                    "dry-run: would SIGTERM pod {id} now");
                metrics.record_fence("would_sigterm");
            }
            (Step::Kill, true, _) => {
                log::info!(pod = id.as_str(), pod_uid = uid, action = "kill", dry_run = "true", late_ms = late;
                    "dry-run: would kill pod {id} now and keep it fenced");
                metrics.record_fence("would_kill");
            }
            (Step::Sigterm, false, Some(t)) => {
                let r = t.terminate(&t.layout().pod_dir(uid, pod.qos));
                log::warn!(pod = id.as_str(), pod_uid = uid, action = "sigterm", late_ms = late, signalled = r.signalled;
                    "SIGTERM to pod {id} ({} process(es)) {late}ms after plan", r.signalled);
                metrics.record_fence("sigterm");
                metrics.record_lateness("sigterm", due.late);
            }
            (Step::Kill, false, Some(t)) => {
                let dir = t.layout().pod_dir(uid, pod.qos);
                let r = t.kill(&dir);
                self.fence.fence(uid.to_string(), dir);
                self.kept.fenced.insert(uid.to_string());
                self.durability.changed();
                log::warn!(pod = id.as_str(), pod_uid = uid, action = "kill", late_ms = late, signalled = r.signalled;
                    "pod {id} stopped ({} process(es) killed) {late}ms after plan; fenced until the API server answers", r.signalled);
                metrics.record_fence("kill");
                metrics.record_lateness("kill", due.late);
                self.kept.fence_events.push(PendingEvent {
                    reason: "NodewardenFenced".into(),
                    message: format!("Pod {id} stopped on node {node}: the control plane could delete it from {}", crate::core::clock::rfc3339(now.wall_at(due.eviction_time))),
                    warning: true,
                    at: now.wall,
                });
            }
            // No cgroups found (logged once): nothing can be stopped.
            (_, false, None) => {}
        }
    }

    /// Tells the writes this tick's wait without an answer (`Link::unanswered`), which goes to
    /// the contact file for a next run to take over.
    fn note_wait(&mut self, now: Moment) {
        let waited = self.link.unanswered(now.mono, self.cadence.renew);
        self.durability.unanswered(waited);
    }

    /// Writes what the core says is due (`Durability::due`: every change within `COALESCE`, at
    /// once when cut off, the last contact alone within half a renew interval) or unwritten.
    fn carry_out(&mut self, inputs: &FenceInputs, now: Moment, what: Write) {
        let ok = match what {
            Write::Nothing => return,
            Write::State => {
                let ok = self.write_errors.note(persist(
                    &self.settings.state_directory,
                    &self.node,
                    self.link.last_contact_wall(now),
                    stored_pods(&self.kept.converted.pods, &self.kept.converted.resources),
                    self.kept.node_status.as_ref(),
                    &self.kept.fenced,
                    Held {
                        fence_events: &self.kept.fence_events,
                        condition_events: &self.kept.condition_events,
                        decided: &self.kept.decided,
                        quorum: &self.quorum_view,
                        cut_off_since: self.link.cut_off_since(),
                        counted_before: self.link.counted_before_return(now),
                        wall_scale: self.clock.scale(),
                    },
                ));
                let generation = self.journal_gen;
                inputs
                    .durable
                    .send_if_modified(|g| std::mem::replace(g, generation) != generation);
                ok
            }
            Write::Contact => match self.link.last_contact_wall(now) {
                Some(contact) => {
                    // On the system clock's scale as it reads now: the same instant, and the
                    // scale the next run checks its steadiness against.
                    let system = self.clock.system_scale();
                    let (contact, scale) =
                        crate::core::clock::on_system_scale(contact, self.clock.scale(), system);
                    self.contact_errors.note(state::save_contact(
                        &self.settings.state_directory,
                        contact,
                        scale,
                        self.durability.record(),
                    ))
                }
                None => true,
            },
        };
        if !ok {
            let file = if what == Write::State {
                "state"
            } else {
                "contact"
            };
            self.health.metrics.record_state_write_failure(file);
        }
        self.durability.written(what, ok, now.mono);
    }
}

/// The pods in the store in the planner's terms, sorted by UID, with their requests and limits.
/// A pod whose tolerations cannot be read is left out (not fenced); one whose resources cannot be
/// read is fenced but shows no resources. Each is logged once. Public for the footprint harness
/// (`examples/footprint.rs`) and the benches, which measure a whole conversion.
pub fn convert_pods(
    store: &Store<SlimPod>,
    malformed: &mut BTreeSet<String>,
) -> (Vec<FencePod>, BTreeMap<String, Effective>) {
    let mut converted = Converted::default();
    converted.refresh(store, malformed);
    (converted.pods, converted.resources)
}

/// The pods converted from the watch's store, each with the store's object it came from, so a
/// refresh converts again only the pods the store replaced: one pod changing among 10,000 costs
/// one conversion, not 10,000 (the store hands out the very same object for a pod it did not
/// replace).
#[derive(Debug, Default)]
pub struct Converted {
    /// Sorted by UID.
    pub pods: Vec<FencePod>,
    pub resources: BTreeMap<String, Effective>,
    /// The object each of `pods` came from, in the same order; empty when they were not converted
    /// in this run (read from disk).
    sources: Vec<Arc<SlimPod>>,
    /// How many pods the last refresh converted (the others were the very objects it had).
    last_conversions: usize,
}

impl Converted {
    /// Pods read from disk: the next refresh converts every pod and compares.
    pub fn from_disk(mut pods: Vec<FencePod>, resources: BTreeMap<String, Effective>) -> Converted {
        pods.sort_by(|a, b| a.uid.cmp(&b.uid));
        Converted {
            pods,
            resources,
            sources: Vec::new(),
            last_conversions: 0,
        }
    }

    /// Pods a peer listed for this node that the store lacked (`core::unlisted`), kept in
    /// UID order with the others until the next refresh from the store; returns whether any was
    /// new. That refresh converts every pod again: these came from no object of the store.
    pub fn learn(&mut self, pods: Vec<FencePod>) -> bool {
        let mut changed = false;
        for pod in pods {
            if let Err(at) = self.pods.binary_search_by(|p| p.uid.cmp(&pod.uid)) {
                self.pods.insert(at, pod);
                changed = true;
            }
        }
        if changed {
            self.sources.clear();
        }
        changed
    }

    /// How many pods the last refresh converted.
    pub fn last_conversions(&self) -> usize {
        self.last_conversions
    }

    /// Brings the pods up to date with `store`, as [`convert_pods`] would convert it whole;
    /// returns whether the pods or their resources changed.
    pub fn refresh(&mut self, store: &Store<SlimPod>, malformed: &mut BTreeSet<String>) -> bool {
        let mut slims = store.state();
        slims.sort_unstable_by(|a, b| a.metadata.uid.cmp(&b.metadata.uid));
        let reuse = self.sources.len() == self.pods.len();
        let same_pods = reuse
            && slims.len() == self.pods.len()
            && slims.iter().zip(&self.pods).all(|(slim, pod)| {
                !pod.uid.is_empty() && slim.metadata.uid.as_deref() == Some(pod.uid.as_str())
            });
        if same_pods {
            return self.refresh_in_place(slims, malformed);
        }
        let mut old = std::mem::take(&mut self.pods)
            .into_iter()
            .zip(
                std::mem::take(&mut self.sources)
                    .into_iter()
                    .map(Some)
                    .chain(std::iter::repeat(None)),
            )
            .peekable();
        let mut old_resources = std::mem::take(&mut self.resources);
        let mut changed = false;
        self.last_conversions = 0;
        self.pods.reserve(slims.len());
        for slim in slims {
            let uid = slim.metadata.uid.as_deref().unwrap_or_default();
            // Pods gone from the store.
            while old.peek().is_some_and(|(p, _)| p.uid.as_str() < uid) {
                if let Some((gone, _)) = old.next() {
                    old_resources.remove(&gone.uid);
                }
                changed = true;
            }
            let before = old.next_if(|(p, _)| p.uid == uid && !uid.is_empty());
            match before {
                Some((pod, Some(source))) if reuse && Arc::ptr_eq(&source, &slim) => {
                    if let Some(r) = old_resources.remove(&pod.uid) {
                        self.resources.insert(pod.uid.clone(), r);
                    }
                    self.pods.push(pod);
                    self.sources.push(source);
                }
                before => {
                    self.last_conversions += 1;
                    let was_resources = before
                        .as_ref()
                        .and_then(|(p, _)| old_resources.remove(&p.uid));
                    let before = before.as_ref().map(|(p, _)| p);
                    let (fresh, differs) =
                        convert_again(&slim, before, was_resources, &mut self.resources, malformed);
                    changed |= differs;
                    if let Some(pod) = fresh {
                        self.pods.push(pod);
                        self.sources.push(slim);
                    }
                }
            }
        }
        changed |= old.next().is_some();
        // Sorted by UID as the store's objects were; two objects of one UID (never from one API
        // server) keep the order the sort gave them.
        changed
    }

    /// [`Converted::refresh`] when the store holds the very pods kept, by UID and in order (a
    /// relist, or a pod changed): each replaced object is converted again in its place. A
    /// rebuild held the kept vector twice while it ran, on top of the list's own transient
    /// memory (issue 25: the peak of a relist above the start's). A pod that no longer converts
    /// is removed, as the rebuild leaves it out.
    fn refresh_in_place(
        &mut self,
        slims: Vec<Arc<SlimPod>>,
        malformed: &mut BTreeSet<String>,
    ) -> bool {
        let mut changed = false;
        let mut left_out = Vec::new();
        self.last_conversions = 0;
        for (i, slim) in slims.into_iter().enumerate() {
            if Arc::ptr_eq(&self.sources[i], &slim) {
                continue;
            }
            self.last_conversions += 1;
            let was_resources = self.resources.remove(&self.pods[i].uid);
            let (fresh, differs) = convert_again(
                &slim,
                Some(&self.pods[i]),
                was_resources,
                &mut self.resources,
                malformed,
            );
            changed |= differs;
            match fresh {
                Some(pod) => {
                    self.pods[i] = pod;
                    self.sources[i] = slim;
                }
                None => left_out.push(i),
            }
        }
        for i in left_out.into_iter().rev() {
            self.pods.remove(i);
            self.sources.remove(i);
        }
        changed
    }
}

/// `slim` converted in place of `before` (the pod kept for its UID, if any, whose resources
/// were `was_resources`), its resources entered in `resources`; and whether what is kept
/// changes: a pod or resources that differ, a new pod, or one that no longer converts and is
/// left out. One rule for [`Converted::refresh`]'s rebuild and its in-place refresh.
fn convert_again(
    slim: &SlimPod,
    before: Option<&FencePod>,
    was_resources: Option<Effective>,
    resources: &mut BTreeMap<String, Effective>,
    malformed: &mut BTreeSet<String>,
) -> (Option<FencePod>, bool) {
    match convert_one(slim, malformed) {
        Some((pod, now)) => {
            let differs = before.is_none_or(|p| *p != pod) || was_resources != now;
            if let Some(r) = now {
                resources.insert(pod.uid.clone(), r);
            }
            (Some(pod), differs)
        }
        None => (None, before.is_some()),
    }
}

/// One pod in the planner's terms with its requests and limits; `None` when its tolerations
/// cannot be read. Each problem is logged once.
fn convert_one(
    slim: &SlimPod,
    malformed: &mut BTreeSet<String>,
) -> Option<(FencePod, Option<Effective>)> {
    let id = format!(
        "{}/{}",
        slim.metadata.namespace.as_deref().unwrap_or_default(),
        slim.metadata.name.as_deref().unwrap_or_default()
    );
    let Some(fp) = fence_pod(slim) else {
        if malformed.insert(id.clone()) {
            log::warn!(pod = id.as_str(); "pod {id} has tolerations this agent cannot read; it is not fenced");
        }
        return None;
    };
    let resources = match snapshot::pod_resources(slim) {
        Ok(e) => Some(e),
        Err(e) => {
            if malformed.insert(format!("{id} resources")) {
                log::warn!(pod = id.as_str(), error = e.as_str(); "pod {id} has resources this agent cannot read ({e}); `status` leaves it out of the sums");
            }
            None
        }
    };
    Some((fp, resources))
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
    fn note(&mut self, result: Result<(), state::StateError>) -> bool {
        match result {
            Ok(()) => {
                if !self.seen.is_empty() {
                    let failures = std::mem::take(&mut self.seen);
                    let was = failures.into_iter().collect::<Vec<_>>().join("; ");
                    log::info!("state written again (after: {was})");
                }
                true
            }
            Err(e) => {
                let msg = e.to_string();
                if !self.seen.contains(&msg) {
                    log::error!(error = msg.as_str(); "{msg}; the fence goes on from memory and retries");
                    self.seen.insert(msg);
                }
                false
            }
        }
    }
}

/// What the state keeps for later delivery and for the decisions to resume from.
pub struct Held<'a> {
    pub fence_events: &'a [PendingEvent],
    pub condition_events: &'a [PendingEvent],
    pub decided: &'a [StoredCondition],
    /// The zone, the peers and the quorum of the current partition.
    pub quorum: &'a QuorumView,
    pub cut_off_since: Option<SystemTime>,
    /// While cut off by a relapse, the contact the deadlines count from
    /// (`Link::counted_before_return`).
    pub counted_before: Option<SystemTime>,
    /// The scale the times are on: this run's (`agent::clock::Clock::scale`).
    pub wall_scale: Option<crate::core::clock::Scale>,
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
        counted_from: held.counted_before.map(state::format_time),
        wall_scale: held.wall_scale.map(|s| s.to_text()),
        peers_read: held.quorum.server_reads.ever,
    };
    state::save_view(dir, &s)
}

/// When this run first saw `text` (a taint's `timeAdded`, a condition's `lastTransitionTime`), if
/// `seen` holds it.
fn first_seen(seen: &Option<(String, Duration)>, text: &str) -> Option<Duration> {
    seen.as_ref().filter(|(t, _)| t == text).map(|(_, at)| *at)
}

/// Keeps `seen` to the text the Node shows now ([`first_seen`]): the same one keeps when it was
/// first seen, another is first seen `at`, none clears it.
fn note_seen(seen: &mut Option<(String, Duration)>, now_shown: Option<&str>, at: Duration) {
    match (now_shown, &*seen) {
        (Some(text), Some((known, _))) if text == known => {}
        (Some(text), _) => *seen = Some((text.to_string(), at)),
        (None, _) => *seen = None,
    }
}

fn mode_name(m: fence_plan::Mode) -> &'static str {
    match m {
        fence_plan::Mode::Enforce => "enforce",
        fence_plan::Mode::DryRun => "dry-run",
        fence_plan::Mode::Off => "off",
    }
}

fn log_plan(p: &fence_plan::PodPlan, now: Moment) {
    let id = format!("{}/{}", p.namespace, p.name);
    // Milliseconds: the plan is checked against what happens, and a restart must reproduce it.
    let at = |d: Duration| humantime::format_rfc3339_millis(now.wall_at(d)).to_string();
    match &p.plan {
        Plan::Never { reason } => {
            log::info!(pod = id.as_str(), pod_uid = p.uid.as_str(), action = "never";
            "fence plan for {id}: never ({reason})")
        }
        Plan::Stop {
            schedule,
            dry_run,
            reason,
        } => log::info!(
            pod = id.as_str(), pod_uid = p.uid.as_str(), action = "stop", dry_run = dry_run.to_string().as_str(),
            eviction_time = at(schedule.eviction_time).as_str(), sigterm_at = at(schedule.sigterm_at).as_str(), kill_at = at(schedule.kill_at).as_str();
            "fence plan for {id}: SIGTERM {}, kill {}, eviction {} ({reason})",
            at(schedule.sigterm_at), at(schedule.kill_at), at(schedule.eviction_time)),
        Plan::Hold { schedule, reason } => {
            log::info!(pod = id.as_str(), pod_uid = p.uid.as_str(), action = "hold",
            eviction_time = at(schedule.eviction_time).as_str();
            "fence plan for {id}: held ({reason})")
        }
    }
}

/// After reconnection: a fenced pod deleted upstream is done; one still present is released to
/// the kubelet. Returns each outcome as an Event's reason and message. Public for its test.
pub async fn reconcile(
    client: &kube::Client,
    requests: &Requests,
    node: &str,
    fence: &mut Fence,
    fenced: &mut BTreeSet<String>,
    health: &Health,
) -> Result<Vec<(String, String)>, String> {
    let mut outcomes = Vec::new();
    // Paged and decoded as the watch decodes pods: only the UIDs are read, and a whole-node list
    // of whole Pods (10 KB of JSON each, typically) would be the largest allocation of the run.
    let pods: Api<SlimPod> = Api::all(client.clone());
    let mut present: BTreeSet<String> = BTreeSet::new();
    let resource = format!("pods?fieldSelector=spec.nodeName={node}");
    crate::api::pods::each_page(
        &pods,
        requests,
        node,
        (crate::api::watch::PAGE_SIZE, MAX_RECONCILE_PAGES),
        (requests.timeout(), &resource),
        |listed| present.extend(listed.into_iter().filter_map(|p| p.metadata.uid)),
    )
    .await
    .map_err(|e| match e {
        crate::api::pods::PagesError::Api(e) => e.to_string(),
        crate::api::pods::PagesError::Endless => {
            format!("list {resource}: more than {MAX_RECONCILE_PAGES} pages, the list never ended")
        }
    })?;
    for uid in std::mem::take(fenced) {
        fence.lift(&uid);
        if present.contains(&uid) {
            log::info!(pod_uid = uid.as_str(), action = "lift";
                "fenced pod {uid} still exists upstream: fence lifted, the kubelet may restart it");
            health.metrics.record_fence("lift");
            outcomes.push((
                "NodewardenFenceLifted".to_string(),
                format!("Pod {uid} on node {node} still exists after the partition: fence lifted"),
            ));
        } else {
            log::info!(pod_uid = uid.as_str(), action = "reconciled";
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_look_for_cgroups_under_cgroup_root_else_cgroup_path() {
        let mut config = crate::config::from_str("", None).expect("the defaults");
        config.cgroup_path = PathBuf::from("/fixture/cgroup");
        config.proc_path = PathBuf::from("/fixture/proc");
        config.fence.cgroup_root = None;
        let settings = FenceSettings::new(&config);
        assert_eq!(settings.cgroup_root, PathBuf::from("/fixture/cgroup"));
        assert_eq!(settings.proc_path, PathBuf::from("/fixture/proc"));
        assert_eq!(settings.policy, fence_plan::FencePolicy::from(&config));
        assert_eq!(settings.unreachable_after, config.fence.unreachable_after);
        assert_eq!(settings.state_directory, config.state_directory);
        config.fence.cgroup_root = Some(PathBuf::from("/fixture/kubepods"));
        let settings = FenceSettings::new(&config);
        assert_eq!(settings.cgroup_root, PathBuf::from("/fixture/kubepods"));
    }

    /// The pods' cgroups not there at the start (the agent started before the kubelet made
    /// them) are looked for again a minute later, and then watched and read.
    #[tokio::test(flavor = "current_thread")]
    async fn cgroups_not_found_at_the_start_are_looked_for_again_a_minute_later() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("cgroup");
        std::fs::create_dir_all(&root).expect("root");
        std::fs::write(root.join("cgroup.controllers"), "cpu memory pids\n").expect("v2");
        let real = std::fs::canonicalize(&root).expect("canonical");
        let proc_self = tmp.path().join("proc/self");
        std::fs::create_dir_all(&proc_self).expect("proc");
        std::fs::write(
            proc_self.join("mountinfo"),
            format!(
                "30 23 0:26 / {} rw,nosuid - cgroup2 cgroup2 rw\n",
                real.display()
            ),
        )
        .expect("mountinfo");
        let mut config = crate::config::from_str("", None).expect("the defaults");
        config.fence.cgroup_root = Some(root.clone());
        config.proc_path = tmp.path().join("proc");
        let settings = FenceSettings::new(&config);
        assert_ne!(settings.policy.mode, fence_plan::Mode::Off);
        let client = kube::Client::try_from(kube::Config::new(
            "http://127.0.0.1:1".parse().expect("a URL"),
        ))
        .expect("a client");
        let mut own = OwnList::new(&client, &Requests::new(Duration::from_secs(1)));
        let s = Duration::from_secs;
        own.find(&settings, s(100));
        assert!(own.layout.is_none() && !own.due);
        std::fs::create_dir(root.join("kubepods")).expect("the kubelet's cgroups");
        own.find(&settings, s(130));
        assert!(own.layout.is_none(), "looked for again before a minute");
        own.find(&settings, s(160));
        assert!(own.layout.is_some(), "not found a minute later");
        assert!(own.due, "the cgroups are read at the next tick");
        assert!(own.moved_tx.is_none(), "the cgroups are not watched");
    }

    fn slim(name: &str, uid: &str) -> SlimPod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
        }))
        .expect("a pod decodes")
    }

    fn uids(c: &Converted) -> Vec<&str> {
        c.pods.iter().map(|p| p.uid.as_str()).collect()
    }

    /// A pod the fence's own list found stays in the view through refreshes from a store that
    /// lacks it, and is left to the store once the watch delivers it.
    #[tokio::test(flavor = "current_thread")]
    async fn a_pod_the_own_list_found_stays_in_the_view_until_the_store_holds_it() {
        use kube::runtime::watcher::Event as Ev;
        let mut writer: kube::runtime::reflector::store::Writer<SlimPod> = Default::default();
        writer.apply_watcher_event(&Ev::Apply(slim("a", "uid-a")));
        let store = writer.as_reader();
        let (mut converted, mut malformed) = (Converted::default(), BTreeSet::new());
        converted.refresh(&store, &mut malformed);
        let client = kube::Client::try_from(kube::Config::new(
            "http://127.0.0.1:1".parse().expect("a URL"),
        ))
        .expect("a client");
        let mut own = OwnList::new(&client, &Requests::new(Duration::from_secs(1)));
        let late = fence_pod(&slim("b", "uid-b")).expect("converts");
        own.listed.push(late.clone());
        assert!(own.keep_in(&mut converted), "the listed pod joins the view");
        assert_eq!(uids(&converted), ["uid-a", "uid-b"]);
        // Another pod's change: the refresh from the store leaves the listed pod out, and it
        // joins again.
        writer.apply_watcher_event(&Ev::Apply(slim("c", "uid-c")));
        converted.refresh(&store, &mut malformed);
        assert_eq!(uids(&converted), ["uid-a", "uid-c"]);
        assert!(own.keep_in(&mut converted));
        assert_eq!(uids(&converted), ["uid-a", "uid-b", "uid-c"]);
        // The watch delivers it: the store's object stands, and the list's is forgotten.
        writer.apply_watcher_event(&Ev::Apply(slim("b", "uid-b")));
        converted.refresh(&store, &mut malformed);
        assert!(!own.keep_in(&mut converted));
        assert!(own.listed.is_empty());
        assert_eq!(uids(&converted), ["uid-a", "uid-b", "uid-c"]);
    }
}
