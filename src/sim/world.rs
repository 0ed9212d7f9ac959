//! One run: the world (links, the API server, pods and their processes), the control plane, and
//! one agent per node made of `core`'s decisions, stepped from one due instant to the next in
//! virtual time; and the checks.
//!
//! The agent's shell is modelled, its decisions are not: its Lease renewals every renew interval,
//! the first of a restarted run at its start (answered at once through a live link; through a
//! dead one, hanging for a request timeout or, on a link that refuses, failing at once),
//! what the peer endpoint answers, the rounds of the quorum task every `peers.interval` while cut
//! off, the fence's plan and steps, and what it writes to disk when `Durability` says so — which
//! a restart reads back (`Link::resume`, the stored verdict and hold), and the sweep that kills
//! again a fenced pod the kubelet restarted. The pod view is the API's pods of the node as they
//! were the agent's watch lag ago, whenever the agent can reach the API server; after a restart it
//! holds the pods on disk until then. The kubelet starts a pod its own watch lag after it was
//! created, and renews the node's own Lease on its own phase, which is all the controller judges
//! the node by; its node status updates, on a phase of their own, post Ready=True once the
//! controller has written Unknown, which the controller hears as it hears a renewal, and until
//! which the node takes no replacement.

use std::collections::{BTreeSet, BinaryHeap};
use std::time::{Duration, SystemTime};

use super::control::{ControlPlane, ControllerSettings};
use super::scenario::{Event, PodSpec, Scenario};
use crate::core::clock::{self, Moment, Scale};
use crate::core::contact::{Contact, Evidence, Reach};
use crate::core::fence_plan::{self, FencePod, FencePolicy, Mode};
use crate::core::fencing::{
    self, Cadence, Durability, Heartbeat, Link, Seen, Step, Steps, Transition, Write,
};
use crate::core::leader;
use crate::core::qos::QosClass;
use crate::core::quorum::{self, Fixes, Gate, Heard, Peer, QuorumPolicy, Undecided, Verdict};
use crate::core::taint::{Effect, Toleration};
use crate::core::unlisted;

/// The agents' and the world's settings, at the agent's defaults unless a run changes them.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub renew: Duration,
    pub request_timeout: Duration,
    pub unreachable_after: Duration,
    pub grace: Duration,
    /// The agents' `[fence] nodeMonitorPeriod` (`FencePolicy::node_monitor_period`); zero
    /// reverts that rule (thirty-fourth session), and replays the controller that queues a node
    /// in the pass that writes it Unknown (`ControllerSettings::queue_on_observed` off).
    pub monitor_period: Duration,
    pub safety_margin: Duration,
    pub grace_cap: Duration,
    pub peer_interval: Duration,
    pub ask: usize,
    pub controller: ControllerSettings,
    /// `FencePolicy::kubelet_lag`; zero reverts that fix.
    pub kubelet_lag: Duration,
    /// Quorum fixes (issue 21) the run keeps.
    pub fixes: Fixes,
    /// How long a pod list sent into a hung API server at start-up blocks the view: the request
    /// timeout since issue 21, the client's 180 s read timeout before.
    pub list_hang: Duration,
    /// A stop whose pod the control plane has neither deleted nor decided to keep this long after
    /// its planned eviction is judged by the controller's state then (monitor period and limiter).
    pub tolerance: Duration,
    /// The kubelet retries a failed Lease renewal as its lease controller does (`Ev::KubeletRenew`);
    /// false: it tries again on its usual cadence, as the simulator modelled it until the fifth
    /// session.
    pub kubelet_backoff: bool,
    /// The kubelets post their node status every `nodeStatusUpdateFrequency` (`Ev::KubeletStatus`):
    /// the controller hears a node by it as by its Lease, and a node whose Ready it wrote Unknown
    /// takes no replacement until its kubelet posts again. False: neither, as the simulator had
    /// it until the twenty-second session (a replacement could start on any node that reached the
    /// API server).
    pub kubelet_status: bool,
    /// The kubelet's heartbeat client's timeout: `nodeStatusUpdateFrequency`, at most the Lease
    /// duration (10 s by default). A request into a dead link hangs that long.
    pub kubelet_timeout: Duration,
    /// While a renewal sent after a failure hangs, the agent probes the API server this often and
    /// renews at once when a probe is answered (`agent::heartbeat`); `None`: it waits for the hung
    /// renewal's timeout, as the agent did until the eleventh session.
    pub probe: Option<Duration>,
    /// An agent that answers "reachable" again tells the peers it answered "cut off" since
    /// (`agent::quorum::Nudges`); a cut-off agent so told reads its Lease, and renews at once if
    /// that is answered or asks its peers at once if not; false: they learn of it at their next
    /// round, as until the twelfth session.
    pub nudge: bool,
    /// Whether a stop made under a policy counted apart ([`by_policy`]) is searched for a
    /// witness too, as every stop was until the forty-sixth session. Such a stop is the
    /// configured choice for a case no agent can decide, so it is never a defect either way:
    /// the search only tells whether the simulator's few worlds hold one in which the control
    /// plane deletes the pod. Off: each is counted `wrongful-stop-by-policy` at once (the
    /// policy's cost), which halves the time of a run (BENCHMARKS.md, *Simulation*).
    pub judge_policy_stops: bool,
}

impl Settings {
    /// The kubelet's lag the agents wait out after a failure before a contact counts and before
    /// their next renewal (`fencing::Link::with_kubelet_lag`, `fencing::next_renewal`); zero with
    /// that fix reverted.
    fn lag_after_return(&self) -> Duration {
        if self.fixes.kubelet_after_return {
            self.kubelet_lag
        } else {
            Duration::ZERO
        }
    }

    /// How soon after the first node's link comes back, every node having been cut off, the
    /// agents must have stopped a pod the control plane deleted meanwhile: that node's agent
    /// hears its own return within a probe's second (or a retry's, after a refused renewal);
    /// a node it answered "cut off" is nudged at once, any other asks at its next round (the
    /// peer interval), whose answers come within the peer timeout (1 s). Beyond it, a pod
    /// running on is a defect.
    pub fn cut_off_reaction(&self) -> Duration {
        fencing::PROBE_EVERY.max(fencing::RETRY_AFTER_FAILURE)
            + self.peer_interval
            + Duration::from_secs(1)
    }
}

impl Default for Settings {
    fn default() -> Self {
        let renew = Duration::from_secs(10);
        Settings {
            renew,
            request_timeout: Duration::from_secs(10),
            unreachable_after: Duration::from_secs(15),
            grace: Duration::from_secs(40),
            monitor_period: Duration::from_secs(5),
            safety_margin: Duration::from_secs(2),
            grace_cap: Duration::from_secs(30),
            peer_interval: Duration::from_secs(3),
            ask: 50,
            controller: ControllerSettings::default(),
            kubelet_lag: fence_plan::kubelet_lag(renew * 4, false),
            fixes: Fixes::ALL,
            list_hang: Duration::from_secs(10),
            tolerance: Duration::from_secs(15),
            kubelet_backoff: true,
            kubelet_status: true,
            kubelet_timeout: Duration::from_secs(10),
            probe: Some(fencing::PROBE_EVERY),
            nudge: true,
            judge_policy_stops: false,
        }
    }
}

/// A broken invariant, with when and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// The pod's processes ran on its node this long after the control plane deleted it.
    RunningTwice {
        pod: usize,
        deleted: Duration,
        /// How long it ran on after its replacement could start (once the control plane deleted
        /// it and some other node was Ready to run the replacement).
        ran_for: Duration,
        /// The fence did stop it, too late; otherwise it held (or never planned it).
        killed_late: bool,
        /// The taint behind the deletion was removed when every zone became fully disrupted
        /// (the node went silent first, was tainted while its zone still counted as healthy,
        /// and the whole cluster followed within seconds): no agent can tell that from an outage
        /// of the API server, where it must hold. Counted apart ([`kind`]).
        transient_taint: bool,
        /// The node's agent ran but did not know the pod: its pod watch had not delivered the
        /// pod's creation when the link was cut, while the kubelet's had.
        late_watch: bool,
        /// How much of `ran_for` the node's agent was not running (SIGKILLed, not yet
        /// restarted): no fence stops a pod then. When that is all of it, the violation is
        /// counted apart ([`kind`]); otherwise the seconds after the restart are a defect.
        agent_down: Duration,
        /// Every node's link to the API server was down when the control plane deleted the pod,
        /// or until moments before, and the node's agent held then: how long after the first
        /// link came back the pod stopped, when that is within [`Settings::cut_off_reaction`]. No
        /// agent can tell the world until that return from one with an outage of the API server
        /// from the last node's cut to that return (every request fails the same way in both),
        /// and in that outage it must hold; after it, it needs that long to hear of the return.
        /// Counted apart ([`kind`]); a slower stop is a defect.
        every_node_cut_off: Option<Duration>,
    },
    /// The fence stopped a pod the control plane keeps.
    WrongfulStop {
        pod: usize,
        at: Duration,
        /// The verdict it was stopped under was the configured choice for a case no agent can
        /// decide ([`by_policy`]).
        by_policy: bool,
    },
    /// An agent said enforce in an outage of the whole control plane.
    EnforceInOutage {
        node: usize,
        at: Duration,
        reason: String,
    },
}

/// The kind of a violation, as the simulator's `--kind` names it.
pub fn kind(v: &Violation) -> &'static str {
    match v {
        Violation::RunningTwice {
            transient_taint: true,
            ..
        } => "running-twice-transient-taint",
        Violation::RunningTwice {
            late_watch: true, ..
        } => "running-twice-late-watch",
        Violation::RunningTwice {
            every_node_cut_off: Some(_),
            ..
        } => "running-twice-every-node-cut-off",
        Violation::RunningTwice {
            ran_for,
            agent_down,
            ..
        } if agent_down >= ran_for => "running-twice-agent-down",
        Violation::RunningTwice { .. } => "running-twice",
        Violation::WrongfulStop {
            by_policy: true, ..
        } => "wrongful-stop-by-policy",
        Violation::WrongfulStop { .. } => "wrongful-stop",
        Violation::EnforceInOutage { reason, .. } if by_policy(reason) => {
            "enforce-in-outage-by-policy"
        }
        Violation::EnforceInOutage { .. } => "enforce-in-outage",
    }
}

/// Whether a verdict's reason is `peers.wholeZoneCutOff`'s choice for a zone cut off whole while
/// no other zone answers: an outage of the control plane (nothing evicted) and a zone that lost
/// its links to a live one and to every other zone (all of it evicted) look the same from inside
/// the zone. Violations under it are the configured choice, counted apart from the defects
/// (`enforce` by default: it errs towards never running twice).
///
/// The same holds for a node that no peer answers at all: alone, it cannot tell its own
/// partition (the control plane evicts it) from one that took its neighbours with it; the fence
/// then enforces by design (never twice before never needlessly).
///
/// And for a verdict that rests on silent peers, which count as reaching the API server: a
/// peer silenced in an outage of the whole control plane (its agent restarting, say) cannot be
/// told from one that got the API server back as it lost its link to this node.
pub fn by_policy(reason: &str) -> bool {
    reason.contains("no other zone answers")
        || reason.contains("no peer answers")
        || reason.contains("silent peer(s), counted as reaching")
}

/// What a violation is of, whenever it happened: its kind and its pod (or, for a verdict, its
/// node). The simulator's `--differential` search compares runs by it.
pub fn subject(v: &Violation) -> (&'static str, usize) {
    let of = match v {
        Violation::RunningTwice { pod, .. } | Violation::WrongfulStop { pod, .. } => *pod,
        Violation::EnforceInOutage { node, .. } => *node,
    };
    (kind(v), of)
}

/// Whether a violation of this kind is a defect (a failure of the run), rather than a known,
/// documented limit (README, *Simulation*) that is counted and reported.
pub fn is_defect(kind: &str) -> bool {
    !kind.ends_with("-by-policy")
        && !kind.ends_with("-transient-taint")
        && !kind.ends_with("-agent-down")
        && !kind.ends_with("-every-node-cut-off")
}

/// What a run found.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub violations: Vec<Violation>,
    /// Per stop of a pod the control plane deleted: deletion − kill (positive: the fence was
    /// early), in milliseconds.
    pub earliness_ms: Vec<i64>,
    /// Per SIGTERM that waited for a peer's read (`Steps::wait_sigterm`: of the API server, or of
    /// the taint under the staggered expiry's guess): how much of the time since its planned
    /// instant it waited, in milliseconds (the pod's grace period is that much shorter).
    pub sigterm_waits_ms: Vec<u64>,
    /// Stops whose pod the control plane deleted later, none deleted, or kept.
    pub stops: usize,
    /// Pods the control plane deleted.
    pub deletions: usize,
    /// Each pod's deletion by the control plane, by pod index.
    pub deleted: Vec<Option<Duration>>,
    /// The taint (`timeAdded`) each deletion was for, by pod index.
    pub deleted_for: Vec<Option<Duration>>,
    /// When the fence first sent each pod SIGTERM, by pod index.
    pub stopped: Vec<Option<Duration>>,
    /// Stops of pods the control plane kept here, but would have deleted in a world no agent
    /// can tell apart from this one (its kubelet's renewals moved): `(pod, when the witness's
    /// kubelet last renewed before the cut)`. Not violations: the order in which the controller judges the nodes
    /// of a zone follows the kubelets' renewals, which no agent sees.
    pub indistinguishable: Vec<(usize, Duration)>,
    /// Of those, the stops whose witness also needed the node's partition to go on past the
    /// stop (the node's link to the API server came back before the control plane deleted the
    /// pod; no agent sees that coming when it stops a pod).
    pub ended_after_stop: usize,
    /// Of those, the stops made so soon after the API server went down for everyone that no
    /// agent could see it yet, whose witness turned that outage into a partition of every node
    /// from a control plane that stayed up until it had judged this node (and then failed): no
    /// agent tells an API server that stopped answering from links that stopped carrying its
    /// answers.
    pub outage_as_partition: usize,
    /// Of those, the stops whose witness brought every other node's link back with the API
    /// server: until their agents renew, their peers cannot tell.
    pub others_back: usize,
    /// Of those, the stops whose witness left out an outage of the API server for everyone that
    /// began after the stop, before the control plane deleted the pod: a future no agent sees
    /// when it stops a pod, as a link's return is.
    pub outage_after_stop: usize,
    /// Of those, the stops made after an outage of the API server for everyone had ended, whose
    /// witness turned it into a partition of every node from a live control plane (no
    /// controller-manager restart there).
    pub outage_over_as_partition: usize,
    /// Of those, the stops of pods a user deleted after the stop, whose witness left that
    /// deletion out ([`Variant::no_user_delete`]).
    pub user_delete_after_stop: usize,
    /// Of those, the stops whose witness kept the link to the API server of every other node cut
    /// off from its peers and from the API server at the stop ([`Past::SilentKeptApi`]).
    pub silent_kept_api: usize,
    /// Of those, the stops whose witness had the node's zone's tainting queue take it first
    /// from the stop on: upstream's queue takes its waiting nodes in any order, which no agent
    /// sees.
    pub first_in_queue: usize,
    /// Of those, the stops whose witness changed more than one of the above (the counts above
    /// count each change it made).
    pub combined: usize,
    /// A readable account of the run.
    pub timeline: Vec<String>,
    /// The agents' renewals that were probed while they hung, and the probes sent for them.
    pub probed_renewals: usize,
    pub probes: usize,
    /// The reads of their Lease the agents sent while a return was watched
    /// (`Ev::AgentWatch`).
    pub watch_probes: usize,
    /// Nudges sent by agents whose answer turned to "reachable".
    pub nudges: usize,
}

/// An event due at an instant, in the queue: ordered by its instant, then by when it was
/// scheduled, both in one integer, so that each of the queue's many comparisons is one inlined
/// compare (as a tuple with the event they were not inlined, and the queue took about a third of
/// the simulator's time; BENCHMARKS.md, *Simulation*).
struct Due {
    /// Nanoseconds of the instant (a run spans minutes of virtual time), then the sequence number.
    key: u128,
    ev: Ev,
}

impl Due {
    fn new(at: Duration, seq: u64, ev: Ev) -> Due {
        Due {
            key: (at.as_nanos() << 64) | u128::from(seq),
            ev,
        }
    }

    /// The instant it is due.
    fn at(&self) -> Duration {
        Duration::from_nanos((self.key >> 64) as u64)
    }
}

impl PartialEq for Due {
    fn eq(&self, other: &Due) -> bool {
        self.key == other.key
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Due) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    /// Reversed: the earliest is the greatest, for the max-heap.
    #[inline]
    fn cmp(&self, other: &Due) -> std::cmp::Ordering {
        other.key.cmp(&self.key)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    World(usize),
    /// A renewal of the agent's Lease, of its chain of renewals (`Agent::renewals`).
    AgentRenew(usize, u32, u32),
    AgentAnswer {
        node: usize,
        run: u32,
        chain: u32,
        sent: Duration,
        ok: bool,
    },
    /// The heartbeat's probe while its renewal (sent at the instant it names) hangs
    /// (`agent::heartbeat`): once it is answered, the hung renewal is dropped and a new chain of
    /// renewals begins at once; once that renewal is answered, the probes stop.
    AgentProbe(usize, u32, u32, Duration),
    /// The heartbeat's read of its Lease after a return (the first renewal stored past a failure,
    /// or one that ended the fence's partition), every second until about when the renewal that
    /// proves the kubelet renewed goes out (`Agent::watched_until`); `true` when the read sent a
    /// second ago found the link down, and its second runs out (`agent::heartbeat`,
    /// `Fixes::return_watched`).
    AgentWatch(usize, u32, u32, bool),
    /// A kubelet's renewal, of its chain of renewals (see `kubelet_chain`).
    KubeletRenew(usize, u32),
    /// A witness world's anchored renewal: a new chain from here.
    KubeletAnchor(usize),
    /// The kubelet's watch delivers this pod, created its lag ago.
    KubeletSees(usize),
    /// The agent's own list of its node's pods, sent when a pod's cgroup appeared that its view
    /// lacked (`Fixes::cgroup_listed`), is answered now if its path reaches the API server.
    OwnList(usize, u32),
    /// A try of the kubelet's node status update (`syncNodeStatus`), the how-manieth of its run.
    KubeletStatus(usize, u32),
    Wake(usize, u32),
    /// A peer tells this agent (of that run) that its answer turned to "reachable".
    Nudge(usize, u32, usize),
    Start(usize),
    Monitor,
    TaintPass,
    Evict {
        pod: usize,
        tainted: Duration,
        /// The controller-manager process whose timer it is (`ControlPlane::generation`).
        generation: u32,
        /// The pod's timer it is (`Pod::work`): a later one replaces it.
        work: u64,
    },
    Judge {
        pod: usize,
        eviction: Duration,
        sigterm: Duration,
    },
}

#[derive(Clone, Debug)]
struct Pod {
    node: usize,
    uid: String,
    spec: PodSpec,
    in_api: bool,
    /// When it entered the API, and left it (deleted by a user or by the controller).
    created: Duration,
    left_api: Option<Duration>,
    /// Its processes run on the node.
    running: bool,
    deleted_by_controller: Option<Duration>,
    /// The taint (`timeAdded`) behind that deletion.
    deleted_for: Option<Duration>,
    /// When its replacement could first start: at the deletion, or later when another node is
    /// Ready again (the scheduler binds it only to a Ready node).
    replaced_at: Option<Duration>,
    /// Its node's agent's verdict was a hold when the control plane deleted it.
    held_at_deletion: bool,
    fence_sigterm: Option<Duration>,
    /// The quorum's reason when the fence sent SIGTERM.
    stopped_under: Option<String>,
    fence_kill: Option<Duration>,
    /// The taint eviction controller's timer for it, while one runs (`World::process_pod`).
    work: Option<u64>,
}

/// What an agent left on disk: times as the agent's wall clock wrote them, with the scale each
/// file was written on (`core::clock::Scale`: the contact file's, the state file's).
#[derive(Clone, Debug, Default)]
struct Disk {
    last_contact: Option<SystemTime>,
    contact_scale: Option<Scale>,
    state_scale: Option<Scale>,
    cut_off_since: Option<SystemTime>,
    /// The contact a relapse's deadlines counted from (`Link::counted_before_return`).
    counted_before: Option<SystemTime>,
    verdict: Option<Verdict>,
    held_at: Option<SystemTime>,
    held_from: Option<SystemTime>,
    pods: Vec<FencePod>,
    fenced: BTreeSet<String>,
    /// The unreachable taint's `timeAdded` on the Node as last seen (the controller's clock, true
    /// time).
    taint_added: Option<Duration>,
    /// The same of the not-ready taint.
    not_ready_added: Option<Duration>,
    /// The first taint of a run the controller swapped (`state::StoredNode::swapped_from`).
    swapped_from: Option<(Duration, bool)>,
    /// When the controller wrote the Ready=Unknown that stood on the Node as last seen (its
    /// `lastTransitionTime`, the controller's clock, true time).
    unknown_since: Option<Duration>,
    /// When the kubelet posted the Ready=False that stood on the Node as last seen.
    ready_false_since: Option<Duration>,
    /// Whether the peers' reads for the node ever came back (`state::State::peers_read`).
    peers_read: bool,
    /// The contact file's second line (`core::fencing::Link::unanswered`), with the contact its
    /// first line held then: a state written since with a later contact makes it stale.
    unanswered: Option<(Option<SystemTime>, Duration)>,
}

#[derive(Clone, Debug)]
struct Agent {
    run: u32,
    /// How far the node's system clock was from true time when this run started (ms): the
    /// agent's wall clock is that reading plus monotonic time since.
    wall_offset: i64,
    contact: Contact,
    contact_before: Option<Duration>,
    /// The wall scale the previous run wrote its last contact on, as this run read it at its
    /// start (`state::contact_scale`).
    previous_scale: Option<Scale>,
    /// When this run started, or the contact on disk when the previous run stopped cut off
    /// (`quorum::resumed_heard_bound`): what `quorum::heard_until` counts from.
    heard_bound: Duration,
    link: Link,
    gate: Gate,
    steps: Steps,
    durability: Durability,
    fenced: BTreeSet<String>,
    known: Vec<FencePod>,
    /// The view waits for a list sent into a hung API server until then.
    list_blocked_until: Option<Duration>,
    next_round: Option<Duration>,
    cut_off: bool,
    plans: Vec<fence_plan::PodPlan>,
    /// The instant of the API whose pods the view shows (the agent's watch delivers each change
    /// its lag later); `None` for a view read from disk, which is not current.
    view_at: Option<Duration>,
    /// When its own list of the node's pods was last answered (`Ev::OwnList`): the view shows
    /// the API of then at least, its watch's later changes its lag later.
    listed_at: Option<Duration>,
    /// A pod's cgroup appeared since the fence last read them while connected, or this run has
    /// not read them yet (`agent::fence_task`'s `OwnList::due`).
    cgroups_moved: bool,
    /// The current chain of Lease renewals: a probe answered while a renewal hangs starts a new
    /// one, and the hung renewal's answer then schedules nothing.
    renewals: u32,
    /// The chain's last renewal failed (`agent::heartbeat`'s `failing`).
    failing: bool,
    /// The next renewal follows a probe's answer, and is not probed.
    after_probe: bool,
    /// The send time of the renewal being probed, until it or a probe is answered.
    probing: Option<Duration>,
    /// Until when a return is watched (`Ev::AgentWatch`): about when the renewal that proves
    /// the kubelet renewed goes out.
    watched_until: Option<Duration>,
    /// The chain of renewals whose reads every second (`Ev::AgentWatch`) go on, if any.
    watch_chain: Option<u32>,
    /// The peers this agent answered "cut off" since its answer last turned to "reachable".
    askers: Vec<usize>,
    /// The unreachable taint on its Node as its view last showed it: `timeAdded`, and when this
    /// run first saw it (`None`: read from disk) — `agent::fence_task`'s `tainted`.
    taint_view: Option<(Duration, Option<Duration>)>,
    /// The same of the not-ready taint — `agent::fence_task`'s `not_ready`.
    not_ready_view: Option<(Duration, Option<Duration>)>,
    /// The first taint of its Node's run of the two that a swap replaced, as its views showed
    /// the run: `timeAdded`, and whether it is the not-ready one.
    swapped_from: Option<(Duration, bool)>,
    /// The Ready=Unknown the controller wrote on its Node, while its view shows it standing: when
    /// written, and when this run first saw it (`None`: read from disk) — `agent::fence_task`'s
    /// `queued`. Delivered by the Node's watch with the taint, its lag later.
    unknown_view: Option<(Duration, Option<Duration>)>,
    /// The Ready=False its kubelet posted on its Node, while its view shows it standing: when
    /// posted (on the node's own clock, which the agent reads on its own scale), and when this
    /// run first saw it — `agent::fence_task`'s `ready_false_seen`.
    ready_false_view: Option<(Duration, Option<Duration>)>,
    /// What its peers read of its Node in this run (`quorum::TaintReads`, as `agent::quorum`
    /// keeps it: through returns of the link, not through a restart).
    reads: quorum::TaintReads,
    /// The times its peers read on its Node in this partition (`quorum::NodeReads`, as
    /// `agent::quorum` keeps them: cleared when it is no longer cut off).
    node_reads: quorum::NodeReads<Duration>,
    /// Whether the peers read from the API server they say they reach (`agent::quorum`).
    server_reads: quorum::ServerReads,
    /// What the peers' reads of the controller-manager's leader Lease prove (`agent::quorum`).
    leader_reads: quorum::LeaderReads,
    /// When the SIGTERMs of this partition last began to wait for such a read, and when they
    /// stopped (`None` while they wait) ([`Outcome::sigterm_waits_ms`]).
    waits: Option<(Duration, Option<Duration>)>,
    /// What this run's reads of the controller-manager's leader Lease showed, and when it reads
    /// it next (`agent::leader`; `None`: at once).
    leader: leader::Leader,
    leader_next: Option<Duration>,
    /// Its own requests failed since its latest read of the leader Lease
    /// (`agent::leader::LeaderView::pending`), and since when its steps wait for a peer's read
    /// (`quorum::LeaderReads::read_awaited`).
    leader_pending: bool,
    peer_read_pending_since: Option<Duration>,
    /// The pod UIDs a peer's list answered in this partition (`unlisted::unlisted`), as
    /// `agent::fence_task` keeps them: not through a restart or a return of the link.
    settled: BTreeSet<String>,
    /// Not cut off at its last tick, but fencing on its Node's taint
    /// (`fencing::fences_on_taint`).
    on_taint: bool,
    /// When a nudge's read of its Lease was last answered (`agent::quorum`): a hold does not
    /// turn into enforce for `quorum::RENEWAL_IN_FLIGHT` after.
    read_answered_at: Option<Duration>,
    /// When this run, with no answer from the API server yet, next has peers read its
    /// kubelet's Lease (`quorum::kubelet_unheard`).
    next_probe: Option<Duration>,
    /// Its kubelet's renewal as peers last read it for this run (`read_renewal`).
    kubelet_read: Option<Heartbeat>,
    /// What its probes of the kubelet's path said in this partition (`fencing::NodePath`, as
    /// `agent::quorum` keeps it in `QuorumView::node_path`).
    node_path: crate::core::fencing::NodePath<Duration>,
    /// When this run started.
    started: Duration,
    /// The peers whose latest answer was not "reachable" (`quorum::note_unable`).
    unable: quorum::Unable,
    /// `agent::quorum`'s `QuorumView::stop_due_tolerated`: not on disk.
    stop_due_tolerated: Option<u64>,
    /// What each peer last answered "reachable" (`quorum::Remembered`).
    remembered: quorum::Remembered,
    /// The latest kubelet renewal the peers read in any round (`fencing::counted_with_kubelet`).
    renewal_read: Option<Heartbeat>,
}

impl Agent {
    /// Whether its Node carried one of the node controller's NoExecute taints as its view last
    /// showed it (`state::StoredNode::controller_tainted`): the quorum's "seen tainted", and what
    /// the fence plans on while not cut off. The not-ready one only with `Fixes::not_ready_kept`.
    fn seen_tainted(&self, fixes: &quorum::Fixes) -> bool {
        self.taint_view.is_some() || (fixes.not_ready_kept && self.not_ready_view.is_some())
    }
}

/// A witness world's run: per pod, its deletion there with the taint it was for, and when the
/// fence first stopped it there.
type WitnessRun = Vec<(Option<(Duration, Duration)>, Option<Duration>)>;

/// The witness worlds of one node and variant (`World::witness_for`): the instant their runs go
/// until, and per world when its kubelet last renewed before the node's cut, the world, and its
/// run once a stop needed it. A world is run only when every world before it gave no witness:
/// the first is built to be the likeliest, and a run is the judge's whole cost.
struct WitnessWorlds {
    until: Duration,
    worlds: Vec<Witness>,
}

/// One witness world: when its kubelet last renewed before the node's cut, whether its control
/// plane stays up all along ([`Past::LiveUntilJudged`]), the world, and its run once needed.
type Witness = (Duration, bool, Scenario, Option<WitnessRun>);

struct World<'a> {
    s: &'a Scenario,
    set: Settings,
    now: Duration,
    queue: BinaryHeap<Due>,
    seq: u64,
    api_link: Vec<bool>,
    peer_link: Vec<bool>,
    /// Per node: its agent's own path to the API server is up (`Event::CutAgentPath`); the
    /// kubelet's is `api_link`.
    agent_path: Vec<bool>,
    /// When the API server last went down for everyone, while it is down: with two outages
    /// drawn overlapping, the later start (the control plane counts its restart from the
    /// earlier, `ControlPlane::api_down`).
    api_down_since: Option<Duration>,
    agents: Vec<Option<Agent>>,
    disks: Vec<Disk>,
    runs: Vec<u32>,
    pods: Vec<Pod>,
    /// Per node: when the API's pods of that node last changed.
    pods_changed: Vec<Duration>,
    /// Per node: each change of its Node's unreachable taint in the API, in order: when, and the
    /// taint's `timeAdded` (`None`: removed).
    node_taints: Vec<Vec<(Duration, Option<Duration>)>>,
    /// The same of its not-ready taint (`--not-ready`).
    node_not_ready_taints: Vec<Vec<(Duration, Option<Duration>)>>,
    /// Per node: its kubelet finds the node ready (`Event::KubeletNotReady`).
    kubelet_ready: Vec<bool>,
    /// The taint eviction controller's timers started so far (`Pod::work`).
    works: u64,
    /// Per node: each change of the Ready=Unknown the controller wrote on its Node, as the API
    /// stores it, in order: when, and that write's time (`None`: the kubelet's status replaced
    /// it, or there was none).
    node_unknowns: Vec<Vec<(Duration, Option<Duration>)>>,
    /// The same of the Ready=False its kubelet posted (`--not-ready`): when, and the post's time.
    node_ready_false: Vec<Vec<(Duration, Option<Duration>)>>,
    cp: ControlPlane,
    /// The agents' quorum policy, as `agent::quorum::policy` builds it, with the run's fixes.
    quorum_policy: QuorumPolicy,
    peers: Vec<Peer>,
    out: Outcome,
    trace: bool,
    /// Taints (`(node, timeAdded)`) that entering master disruption removed.
    transient: BTreeSet<(usize, Duration)>,
    /// A witness run (see `judge`) searches for no witnesses of its own.
    witness: bool,
    /// The witness worlds, per node and the heal of its link they leave out (see `witness_for`):
    /// the instant they run until, and each world as it was built, with its run once one was
    /// needed.
    /// By node, variant, the node's last cut, and the stop when the worlds depend on it
    /// ([`Past::LiveUntilJudged`], [`Variant::first_in_queue`]).
    witnesses: std::collections::HashMap<
        (usize, Variant, Option<Duration>, Option<Duration>),
        WitnessWorlds,
    >,
    /// Stops judged while the API server was down for everyone on a node already tainted,
    /// dropped at the end when the controller deleted the pod for that taint once the API server
    /// returned (see `judge`).
    deferred: Vec<Deferred>,
    /// Per node: the kubelet's current chain of renewals; an anchor starts a new one.
    kubelet_chain: Vec<u32>,
    /// Per node: the kubelet's failed renewal attempts since its last renewal.
    kubelet_failures: Vec<u32>,
    /// Per node: its peer list (every other node), built once.
    peer_lists: Vec<Vec<Peer>>,
    /// Per node: the peers its rounds ask (`quorum::select` of its list), built once.
    asked_lists: Vec<Vec<Peer>>,
    /// Per node: its zone as its quorum rounds count it (no node of the simulation is labelled
    /// exclude-disruption), built once.
    node_zones: Vec<crate::core::zone::NodeZone>,
    /// Per node: the agent's earliest pending wake-up and the run it is for (see `wake`).
    wake_at: Vec<Option<(Duration, u32)>>,
    /// Per node: how far its system clock is from true time (ms), after the steps so far.
    clock_offset: Vec<i64>,
    /// When passes of the tainting worker are due (`taint_pass_at`).
    taint_passes: BTreeSet<Duration>,
    /// Per node: when its agent was not running, from a crash to the restart (`None` while it
    /// is still down).
    agent_down: Vec<Vec<(Duration, Option<Duration>)>>,
    /// Per node: its kubelet Lease's `renewTime` as stored, on the node's system clock when it
    /// was renewed (what a peer reads for it, `Question::lease`).
    kubelet_renew_time: Vec<Option<SystemTime>>,
}

/// A stop judged while the API server was down for everyone on a node already tainted.
#[derive(Clone, Copy, Debug)]
struct Deferred {
    pod: usize,
    /// The taint's `timeAdded`.
    taint: Duration,
    eviction: Duration,
    sigterm: Duration,
    /// When it was judged.
    judged: Duration,
}

/// A stop as the judge weighs it: when the fence began it, when it is judged, and whether the
/// API server was down for everyone then.
#[derive(Clone, Copy, Debug)]
struct Judged {
    stop: Duration,
    now: Duration,
    api_down: bool,
}

/// The beginning of the reason of a plan `fence_plan` makes for a pod that tolerates unreachable
/// forever, by its not-ready toleration (`Fixes::not_ready_only`).
const NOT_READY_ONLY: &str = "tolerates node.kubernetes.io/unreachable:NoExecute forever, but";

/// What a witness world changes besides the kubelets' renewals (see `World::witness_for`): at
/// most one thing before the stop, and either or both of the two futures no agent sees at the
/// stop. Every event index is the scenario's own: the futures leave out only events after the
/// stop, so the indices of the change before it stay valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Variant {
    past: Past,
    /// The node's partition goes on: the heal of its link at this event index, and every later
    /// one, are left out.
    goes_on: Option<usize>,
    /// The outage of the API server for everyone at this event index, which began after the
    /// stop, does not happen (nor its end).
    no_later_outage: Option<usize>,
    /// From the stop on, the node's zone's tainting queue takes this node first while it waits
    /// there ([`Scenario::queue_first`]): a future no agent sees at the stop, since upstream's
    /// queue takes its waiting nodes in any order.
    first_in_queue: bool,
    /// A user's deletion of the pod after the stop, at this event index, does not happen: a
    /// future no agent sees at the stop, as a link's return is. Set in every world of a stop
    /// whose pod a user deleted after it: with the deletion, the controller deletes nothing.
    no_user_delete: Option<usize>,
}

/// What a witness world changes before the stop (see [`Variant`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Past {
    Plain,
    /// The outage of the API server for everyone at this event index is a partition of every
    /// node from a control plane that stays up until it has judged the node, then fails — or
    /// stays up all along (`World::witness_for` tries both). Tried only for a stop made before
    /// any agent could see that outage (`judge`): later, an agent that finds every node cut off
    /// holds, betting on the outage.
    LiveUntilJudged(usize),
    /// When the API server comes back at this event index, so does every other node's link: a
    /// peer whose agent has not renewed since says "cut off" either way.
    OthersBackWithServer(usize),
    /// The outage of the API server for everyone at this event index, over before the stop, was
    /// a partition of every node whose link was up from a control plane that never failed: the
    /// agents see the same in both, and no kube-controller-manager restarts there (its leader
    /// lease renews), while every zone fully disrupted, and leaving that, has the controller
    /// taint a node judged before at once (docs/semantics.md §5.2, §5.5).
    OutageOverAsPartition(usize),
    /// Every other node whose links to its peers and to the API server were both down at the
    /// stop kept its link to the API server through that cut (`silent_kept_api`): silent to
    /// every peer, its reach of the API server was unseen, and a peer silent since before the
    /// node's own cut counts by what it last answered. The agents are run there too, and the
    /// stopping agent must stop the pod no later: the zone as recorded would differ once the
    /// controller judged those nodes.
    SilentKeptApi,
}

impl Variant {
    /// How many things the world changes; the judge tries the fewest first.
    fn changes(&self) -> usize {
        usize::from(self.past != Past::Plain)
            + usize::from(self.goes_on.is_some())
            + usize::from(self.no_later_outage.is_some())
            + usize::from(self.first_in_queue)
    }
}

/// Each node's link to the API server as `events` (in time order) leave it at `upto`.
fn links_at(w: &Scenario, events: &[(Duration, Event)], upto: Duration) -> Vec<bool> {
    let mut up = vec![true; w.nodes()];
    for (t, e) in events {
        match e {
            _ if *t > upto => break,
            Event::CutApi(n) => up[*n] = false,
            Event::HealApi(n) => up[*n] = true,
            _ => {}
        }
    }
    up
}

/// The nodes but `node` whose links to their peers and to the API server are both down at `at`
/// (from the run's start): silent to every peer, their reach of the API server unseen.
fn silent_and_cut(w: &Scenario, at: Duration, node: usize) -> Vec<usize> {
    let api = links_at(w, &w.events, at);
    let mut peers = vec![true; w.nodes()];
    for (_, e) in w.events.iter().take_while(|(t, _)| *t <= at) {
        match e {
            Event::CutPeers(n) => peers[*n] = false,
            Event::HealPeers(n) => peers[*n] = true,
            _ => {}
        }
    }
    (0..w.nodes())
        .filter(|&n| n != node && !api[n] && !peers[n])
        .collect()
}

/// Leaves out, for each node of `silent`, the cut of its link to the API server in effect at `at`
/// (from the run's start): every cut since its last return before `at`, and the first return
/// after. Its link to its peers stays cut.
fn silent_kept_api(w: &mut Scenario, silent: &[usize], at: Duration) {
    for &n in silent {
        let cut = |e: &Event| matches!(e, Event::CutApi(x) if *x == n);
        let heal = |e: &Event| matches!(e, Event::HealApi(x) if *x == n);
        let by = w.events.partition_point(|(t, _)| *t <= at);
        let since = w.events[..by]
            .iter()
            .rposition(|(_, e)| heal(e))
            .map_or(0, |k| k + 1);
        let back = w.events[by..]
            .iter()
            .position(|(_, e)| heal(e))
            .map(|k| by + k);
        let mut k = 0;
        w.events.retain(|(_, e)| {
            k += 1;
            let i = k - 1;
            !((i >= since && i < by && cut(e)) || Some(i) == back)
        });
    }
}

/// Heals, when the API server comes back at event `up`, the link of every node but `node` that
/// is down then.
fn others_back_with_server(w: &mut Scenario, up: usize, node: usize) {
    let Some(&(at, Event::ApiUp)) = w.events.get(up) else {
        return;
    };
    let link = links_at(w, &w.events[..up], Duration::MAX);
    let heals = (0..link.len())
        .filter(|&n| n != node && !link[n])
        .map(|n| (at, Event::HealApi(n)));
    let rest = w.events.split_off(up + 1);
    w.events.extend(heals);
    w.events.extend(rest);
}

/// Turns the outage of the API server for everyone that begins at event `down` into a partition
/// of every node whose link is up then, from a control plane that stays up until `judged` (from
/// the run's start) and only then stops answering; when the outage ends, the links come back
/// with it, and so do those that came back during it by `seen_by` (from the run's start; a
/// return after it, which no agent saw at the stop judged, stays where it was). The agents see the
/// same in both: requests that hang, peers that say so.
fn outage_as_partition(w: &mut Scenario, down: usize, judged: Duration, seen_by: Duration) {
    let Some(&(start, Event::ApiDown)) = w.events.get(down) else {
        return;
    };
    let end_at = w.events[down..]
        .iter()
        .position(|(_, e)| matches!(e, Event::ApiUp))
        .map(|k| down + k);
    let end = end_at.map(|k| w.events[k].0);
    let up_then = links_at(w, &w.events[..down], start);
    let up_after = end.map(|t| links_at(w, &w.events, t));
    let mut events = w.events.clone();
    // The outage's other beginnings (outages are drawn independently and may overlap) go with
    // it: one outage, one partition. And a node's link that came back during the outage by
    // `seen_by` stays cut in the partition until the outage ends: with the API server down, no
    // agent or kubelet could tell its link was back, and with the control plane up it would have
    // been heard. Back to front, so that `down` keeps its index.
    let mut deferred = Vec::new();
    for k in (down + 1..end_at.unwrap_or(events.len())).rev() {
        match events[k] {
            (_, Event::ApiDown) => {
                events.remove(k);
            }
            (t, Event::HealApi(n)) if t <= seen_by => {
                events.remove(k);
                deferred.push(n);
            }
            _ => {}
        }
    }
    events.remove(down);
    for (n, up) in up_then.iter().enumerate() {
        if *up {
            events.push((start, Event::CutApi(n)));
        }
    }
    let crash = judged.max(start);
    match end {
        Some(t) if crash >= t => {
            // The control plane never failed: only the links did.
            // The first return after `down` (which `remove` moved to index `down`).
            if let Some(k) = (down..events.len()).find(|&k| matches!(events[k].1, Event::ApiUp)) {
                events.remove(k);
            }
        }
        _ => events.push((crash, Event::ApiDown)),
    }
    if let (Some(t), Some(after)) = (end, up_after) {
        for (n, up) in after.iter().enumerate() {
            if *up && (up_then[n] || deferred.contains(&n)) {
                events.push((t, Event::HealApi(n)));
            }
        }
    }
    // Stable: events at the same instant keep their order, the new ones after the old.
    events.sort_by_key(|(t, _)| *t);
    w.events = events;
}

/// The index of the `ApiDown` that began the outage the one at `k` belongs to: outages are
/// drawn independently and may overlap, and the API server is down from the first beginning to
/// the first return after it.
fn outage_began(events: &[(Duration, Event)], k: usize) -> usize {
    let mut first = k;
    for j in (0..k).rev() {
        match events[j].1 {
            Event::ApiUp => break,
            Event::ApiDown => first = j,
            _ => {}
        }
    }
    first
}

/// Where every run's clocks start: far enough from zero that nothing saturates.
const ORIGIN: Duration = Duration::from_secs(1_000);

/// The kubelet's `nodeStatusUpdateFrequency` and the tries of one status update
/// (`nodeStatusUpdateRetry`), docs/semantics.md §6.
/// From a pod's cgroup appearing to the answer of the list its agent sends then
/// (`Ev::OwnList`): the cgroup watch's wake-up and a list's round trip.
const OWN_LIST_AFTER: Duration = Duration::from_millis(100);
const STATUS_EVERY: Duration = Duration::from_secs(10);
const STATUS_TRIES: u32 = 5;

/// Where in its 10 s node `node`'s kubelet's status updates fall: drawn from the seed on a stream
/// of its own, so that every seed keeps the scenario it had before the status updates were
/// simulated.
fn status_phase(seed: u64, node: usize) -> Duration {
    let mut r = crate::sim::Rng::new(seed ^ 0x5354_4154_5553 ^ ((node as u64) << 40));
    Duration::from_millis(r.below(STATUS_EVERY.as_millis() as u64))
}

/// What a history of changes to a Node in the API (when, and the time it then held) held at `at`.
fn standing_at(history: &[(Duration, Option<Duration>)], at: Duration) -> Option<Duration> {
    history
        .iter()
        .rev()
        .find(|(t, _)| *t <= at)
        .and_then(|(_, held)| *held)
}

/// Whether agent `a`'s view of its Node shows its kubelet's Ready=False or the not-ready taint.
fn not_ready_seen(a: &Agent) -> bool {
    a.ready_false_view.is_some() || a.not_ready_view.is_some()
}

/// A time the agent's view of its Node shows (`read`), with when this run first saw that same
/// time, as `agent::fence_task`'s `note_seen` keeps it: `kept` while it stands, first seen `now`
/// when it changes.
fn seen_from(
    read: Option<Duration>,
    kept: Option<(Duration, Option<Duration>)>,
    now: Duration,
) -> Option<(Duration, Option<Duration>)> {
    match (read, kept) {
        (Some(t), Some((known, when))) if t == known => Some((t, when)),
        (Some(t), _) => Some((t, Some(now))),
        (None, _) => None,
    }
}

/// A time of the control plane's as the API server stores it on a Node (a `metav1.Time`, the
/// taint's `timeAdded` or a condition's `lastTransitionTime`): to the second, the fraction
/// dropped. Every agent reads these times so, up to a second earlier than they were made.
fn stored(t: Duration) -> Duration {
    Duration::from_secs(t.as_secs())
}

fn wall(mono: Duration) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000) + mono
}

/// The scale of an agent run of node `node` whose wall clock is `offset_ms` from true time: the
/// simulated boot clock is the virtual time, one boot per node (no reboot is simulated).
fn scale_of(node: usize, offset_ms: i64) -> Option<Scale> {
    Scale::of(
        node as u128 + 1,
        moment_off(Duration::ZERO, offset_ms).wall,
        Duration::ZERO,
    )
}

/// An instant as an agent whose wall clock is `offset_ms` from true time sees it.
fn moment_off(mono: Duration, offset_ms: i64) -> Moment {
    let true_wall = wall(mono);
    let step = Duration::from_millis(offset_ms.unsigned_abs());
    Moment {
        mono,
        wall: if offset_ms >= 0 {
            true_wall + step
        } else {
            true_wall - step
        },
    }
}

/// Runs `scenario` with `settings`; `trace` keeps a timeline of what happened.
pub fn run(scenario: &Scenario, settings: &Settings, trace: bool) -> Outcome {
    run_as(scenario, settings, trace, None, true)
}

/// `witness`: a witness run (see `World::judge`), which stops after that instant. `agents`:
/// whether the agents run; without them the run is the control plane's alone, which no agent
/// acts on (a fraction of the cost).
fn run_as(
    scenario: &Scenario,
    settings: &Settings,
    trace: bool,
    witness: Option<Duration>,
    agents: bool,
) -> Outcome {
    let until = witness.unwrap_or(Duration::MAX);
    let witness = witness.is_some();
    let n = scenario.nodes();
    let zone_of = scenario.zone_of();
    let mut w = World {
        s: scenario,
        set: *settings,
        now: ORIGIN,
        queue: BinaryHeap::new(),
        seq: 0,
        api_link: vec![true; n],
        peer_link: vec![true; n],
        agent_path: vec![true; n],
        api_down_since: None,
        agents: vec![None; n],
        disks: vec![Disk::default(); n],
        runs: vec![0; n],
        pods: Vec::new(),
        pods_changed: vec![ORIGIN; n],
        node_taints: vec![Vec::new(); n],
        node_not_ready_taints: vec![Vec::new(); n],
        kubelet_ready: vec![true; n],
        works: 0,
        node_unknowns: vec![Vec::new(); n],
        node_ready_false: vec![Vec::new(); n],
        cp: {
            // Kubelets that post no status leave the Lease the only way back to Ready.
            let controller = ControllerSettings {
                ready_on_status: settings.controller.ready_on_status && settings.kubelet_status,
                ..settings.controller
            };
            let mut cp = ControlPlane::new(controller, &zone_of, ORIGIN);
            if let Some((node, from)) = scenario.queue_first {
                cp.take_first(node, ORIGIN + from);
            }
            cp
        },
        quorum_policy: QuorumPolicy {
            fixes: settings.fixes,
            ..QuorumPolicy::new(
                settings.renew,
                settings.unreachable_after,
                settings.kubelet_lag,
                Undecided::Hold,
                Undecided::Enforce,
            )
        },
        peers: (0..n)
            .map(|i| Peer {
                node: format!("n{i}"),
                address: std::net::SocketAddr::from(([127, 0, 0, 1], 20_000 + i as u16)),
                zone: format!("zone-{}", zone_of[i]),
            })
            .collect(),
        out: Outcome::default(),
        trace,
        transient: BTreeSet::new(),
        witness,
        witnesses: Default::default(),
        deferred: Vec::new(),
        kubelet_chain: vec![0; n],
        kubelet_failures: vec![0; n],
        wake_at: vec![None; n],
        clock_offset: vec![0; n],
        taint_passes: BTreeSet::new(),
        agent_down: vec![Vec::new(); n],
        kubelet_renew_time: vec![None; n],
        peer_lists: Vec::new(),
        asked_lists: Vec::new(),
        node_zones: Vec::new(),
    };
    w.peer_lists = (0..n)
        .map(|i| {
            w.peers
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, p)| p.clone())
                .collect()
        })
        .collect();
    w.asked_lists = (0..n)
        .map(|i| quorum::select(&w.peer_lists[i], &w.peers[i].zone, settings.ask))
        .collect();
    w.node_zones = w
        .peers
        .iter()
        .map(|p| crate::core::zone::NodeZone::from_key(&p.zone, false))
        .collect();
    for spec in &scenario.pods {
        w.add_pod(spec.clone());
    }
    for i in 0..n {
        if agents {
            w.start_agent(i);
        }
        w.at(ORIGIN + scenario.kubelet_phase[i], Ev::KubeletRenew(i, 0));
        if settings.kubelet_status {
            w.at(
                ORIGIN + status_phase(scenario.seed, i),
                Ev::KubeletStatus(i, 0),
            );
        }
        if let Some(a) = scenario.kubelet_anchor[i] {
            w.at(ORIGIN + a, Ev::KubeletAnchor(i));
        }
    }
    for (k, (t, _)) in scenario.events.iter().enumerate() {
        w.at(ORIGIN + *t, Ev::World(k));
    }
    w.at(ORIGIN + scenario.monitor_phase, Ev::Monitor);
    let end = ORIGIN + scenario.length;
    // Bounded: every event is at most `end`, and each handler schedules finitely many.
    while let Some(due) = w.queue.pop() {
        let t = due.at();
        // A witness run judged while the API server is down for everyone goes on until it is
        // back: a taint the node carries then is acted on only once it answers (see `judge`).
        if t > end || (t > until && w.cp.api_up()) {
            break;
        }
        w.now = t;
        w.handle(due.ev);
    }
    w.finish();
    w.out.deleted = w.pods.iter().map(|p| p.deleted_by_controller).collect();
    w.out.deleted_for = w.pods.iter().map(|p| p.deleted_for).collect();
    w.out.stopped = w.pods.iter().map(|p| p.fence_sigterm).collect();
    w.out
}

impl World<'_> {
    /// Wakes agent `i` (of run `run`) at `t`, unless an earlier wake-up is already pending: that
    /// one steps it and names the next, as the agent's tasks sleep until their earliest due
    /// instant. Keeps the queue from filling with wake-ups that step nothing new.
    fn wake(&mut self, i: usize, run: u32, t: Duration) {
        if self.wake_at[i].is_some_and(|(w, r)| r == run && w <= t) {
            return;
        }
        self.wake_at[i] = Some((t, run));
        self.at(t, Ev::Wake(i, run));
    }

    /// A pass of the tainting worker at `t`, unless one is already due then. Each monitor pass
    /// that finds a node queued starts one, and each pass the next 100 ms later while any node
    /// waits; on the monitor's grid they fall at the same instants, and a second pass at an
    /// instant finds nothing left to do (the limiters refill nothing in no time). Without this
    /// the passes of a zone held for minutes multiplied with every monitor pass.
    fn taint_pass_at(&mut self, t: Duration) {
        if self.taint_passes.insert(t) {
            self.at(t, Ev::TaintPass);
        }
    }

    fn at(&mut self, t: Duration, ev: Ev) {
        self.seq += 1;
        self.queue.push(Due::new(t, self.seq, ev));
    }

    fn log(&mut self, what: impl FnOnce() -> String) {
        if self.trace {
            let line = format!("{:>9.3}s {}", (self.now - ORIGIN).as_secs_f64(), what());
            self.out.timeline.push(line);
        }
    }

    fn reaches_api(&self, node: usize) -> bool {
        self.cp.api_up() && self.api_link[node]
    }

    /// Whether `node`'s agent reaches the API server: its node's link and its own path
    /// (`Event::CutAgentPath`).
    fn agent_reaches(&self, node: usize) -> bool {
        self.reaches_api(node) && self.agent_path[node]
    }

    /// How long a request of `node`'s that the API server does not answer takes to fail: its
    /// `timeout` through a link that hangs (and while the API server is down for everyone), a
    /// moment through its own dead link when that link refuses. `agent`: a request of the
    /// agent's, whose own path may be the dead one.
    fn request_time(&self, node: usize, timeout: Duration, agent: bool) -> Duration {
        let dead = !self.api_link[node] || (agent && !self.agent_path[node]);
        if dead && self.s.refuses(node) {
            Duration::from_millis(30)
        } else {
            timeout
        }
    }

    fn add_pod(&mut self, spec: PodSpec) {
        let i = self.pods.len();
        let node = spec.node;
        // The kubelet starts it once its watch delivers it, when its node reaches the API server
        // then (otherwise when the link returns, `healed`).
        let lag = self.s.kubelet_lag(node);
        let running = self.reaches_api(node) && lag.is_zero();
        self.pods.push(Pod {
            node,
            uid: format!("pod-{i}"),
            spec,
            in_api: true,
            created: self.now,
            left_api: None,
            running,
            deleted_by_controller: None,
            deleted_for: None,
            replaced_at: None,
            held_at_deletion: false,
            fence_sigterm: None,
            stopped_under: None,
            fence_kill: None,
            work: None,
        });
        if !lag.is_zero() {
            self.at(self.now + lag, Ev::KubeletSees(i));
        }
        self.pods_changed_on(node);
        // Tainted already: the taint eviction controller handles a new pod as well.
        self.process_pod(i);
    }

    /// The API's pods of `node`, or its Node's taint, changed now: its agent's watch delivers
    /// that its lag later, and wakes its fence task then (`agent::fence_task` wakes on any change
    /// of its inputs). Without a lag too: a taint's removal must not wait for the task's next
    /// planned wake, or a step due then acts on a view the watch had brought up to date.
    fn pods_changed_on(&mut self, node: usize) {
        self.pods_changed[node] = self.now;
        let lag = self.s.agent_lag(node);
        if let Some(run) = self.agents[node].as_ref().map(|a| a.run) {
            self.wake(node, run, self.now + lag);
        }
    }

    fn fence_pod(&self, p: &Pod) -> FencePod {
        FencePod {
            uid: p.uid.clone(),
            namespace: "default".into(),
            name: p.uid.clone(),
            tolerations: vec![
                Toleration {
                    toleration_seconds: p.spec.toleration.map(|t| t as i64),
                    ..Toleration::exists("node.kubernetes.io/unreachable", Some(Effect::NoExecute))
                },
                Toleration {
                    toleration_seconds: p.spec.not_ready.map(|t| t as i64),
                    ..Toleration::exists("node.kubernetes.io/not-ready", Some(Effect::NoExecute))
                },
            ],
            termination_grace_seconds: p.spec.grace as i64,
            owner_kind: Some("ReplicaSet".into()),
            static_or_mirror: false,
            qos: QosClass::BestEffort,
            opted_out: false,
            terminal: false,
            // As the API server stores it, to the second; not read by a build before
            // `Fixes::pod_created`.
            created: Some(wall(stored(p.created))).filter(|_| self.set.fixes.pod_created),
        }
    }

    /// The API's pods of `node` at `at`, as a watch delivers them.
    fn api_view(&self, node: usize, at: Duration) -> Vec<FencePod> {
        self.pods
            .iter()
            .filter(|p| p.node == node && p.created <= at && p.left_api.is_none_or(|l| l > at))
            .map(|p| self.fence_pod(p))
            .collect()
    }

    /// The unreachable taint's `timeAdded` on `node`'s Node in the API at `at`.
    fn taint_at(&self, node: usize, at: Duration) -> Option<Duration> {
        standing_at(&self.node_taints[node], at)
    }

    /// The same of its not-ready taint.
    fn not_ready_taint_at(&self, node: usize, at: Duration) -> Option<Duration> {
        standing_at(&self.node_not_ready_taints[node], at)
    }

    /// The instant of the API whose pods the watch of `node`'s agent delivers now.
    fn watched_at(&self, node: usize) -> Duration {
        let lag = self.s.agent_lag(node);
        self.now.saturating_sub(lag).max(ORIGIN)
    }

    fn start_agent(&mut self, i: usize) {
        if let Some((_, end @ None)) = self.agent_down[i].last_mut() {
            *end = Some(self.now);
        }
        self.runs[i] += 1;
        let run = self.runs[i];
        let disk = self.disks[i].clone();
        // The agent reads the node's system clock as it starts; the wall times on its disk
        // enter its monotonic scale through that reading, as `agent::clock` does.
        let wall_offset = self.clock_offset[i];
        let now = moment_off(self.now, wall_offset);
        // As `state::load` reads the disk: each file's times carried onto this run's scale.
        let scale = scale_of(i, wall_offset).filter(|_| self.set.fixes.wall_scale_carried);
        let carry = |w: Option<SystemTime>, from| w.map(|w| clock::carried(w, from, scale));
        let last_contact = carry(disk.last_contact, disk.contact_scale);
        // As `state::load` takes the contact file's wait: when its contact is the one read.
        let unanswered = disk
            .unanswered
            .filter(|(contact, _)| *contact == disk.last_contact)
            .map_or(Duration::ZERO, |(_, waited)| waited);
        let cut_off_since = carry(disk.cut_off_since, disk.state_scale);
        let counted_before =
            carry(disk.counted_before, disk.state_scale).filter(|_| self.set.fixes.relapse_kept);
        let held_at = carry(disk.held_at, disk.state_scale);
        let held_from = carry(disk.held_from, disk.state_scale);
        // As `agent::quorum::contact_before` reads it: none once the clock stepped back past it.
        let contact_before = last_contact.and_then(|w| now.mono_of_past(w));
        let mut gate = Gate::default();
        if let Some(v) = &disk.verdict
            && disk.cut_off_since.is_some()
        {
            gate.verdict = Some(v.clone());
            gate.held_at = held_at.map(|w| now.mono_at(w));
            gate.held_from = held_from.map(|w| now.mono_at(w));
        }
        let list_blocked_until = (!self.agent_reaches(i)).then_some(self.now + self.set.list_hang);
        // A time its Node's first view shows, as `agent::fence_task` notes it: from the API when
        // it reaches it (first seen now), else the state file's (`None`: read from disk).
        let (reaches, at, started) = (self.agent_reaches(i), self.watched_at(i), self.now);
        let first_view = |api: fn(&Self, usize, Duration) -> Option<Duration>,
                          stored: Option<Duration>| {
            if reaches {
                api(self, i, at).map(|t| (t, Some(started)))
            } else {
                stored.map(|t| (t, None))
            }
        };
        let agent = Agent {
            run,
            wall_offset,
            contact: Contact::default(),
            contact_before,
            previous_scale: disk.contact_scale,
            heard_bound: if self.set.fixes.resumed_cut_off {
                quorum::resumed_heard_bound(self.now, contact_before, disk.cut_off_since.is_some())
            } else {
                self.now
            },
            link: Link::resume(last_contact, cut_off_since, now)
                .with_unanswered(unanswered)
                .with_kubelet_lag(self.set.lag_after_return())
                .with_unproven_return(counted_before, now),
            gate,
            steps: Steps::default(),
            durability: Durability::new(),
            fenced: disk.fenced.clone(),
            known: if self.agent_reaches(i) {
                self.api_view(i, self.watched_at(i))
            } else {
                disk.pods.clone()
            },
            list_blocked_until,
            next_round: None,
            cut_off: false,
            plans: Vec::new(),
            // A view taken from the API at the start is current; one from disk is not.
            view_at: self.agent_reaches(i).then(|| self.watched_at(i)),
            listed_at: None,
            cgroups_moved: true,
            renewals: 0,
            failing: false,
            after_probe: false,
            watched_until: None,
            watch_chain: None,
            probing: None,
            askers: Vec::new(),
            reads: quorum::TaintReads::default(),
            node_reads: quorum::NodeReads::default(),
            // As `agent::quorum::resume`: whether the peers ever read for it goes on.
            server_reads: quorum::ServerReads {
                ever: disk.peers_read && self.set.fixes.peers_read_kept,
                unread: false,
            },
            leader_reads: quorum::LeaderReads::default(),
            waits: None,
            leader: leader::Leader::default(),
            leader_next: None,
            leader_pending: false,
            peer_read_pending_since: None,
            on_taint: false,
            taint_view: first_view(Self::taint_at, disk.taint_added),
            not_ready_view: first_view(Self::not_ready_taint_at, disk.not_ready_added),
            // As `agent::fence_task`: the first view carries the run over from the state file's.
            swapped_from: if self.agent_reaches(i) {
                let at = self.watched_at(i);
                let now = (self.taint_at(i, at).map(|_| false))
                    .or(self.not_ready_taint_at(i, at).map(|_| true));
                let before = (disk.taint_added.map(|t| (t, false)))
                    .or(disk.not_ready_added.map(|t| (t, true)));
                fence_plan::run_first(disk.swapped_from.as_ref(), before.as_ref(), now)
            } else {
                disk.swapped_from
            },
            unknown_view: first_view(Self::unknown_at, disk.unknown_since),
            ready_false_view: first_view(Self::ready_false_at, disk.ready_false_since),
            read_answered_at: None,
            next_probe: None,
            kubelet_read: None,
            node_path: Default::default(),
            started: self.now,
            unable: quorum::Unable::default(),
            stop_due_tolerated: None,
            settled: BTreeSet::new(),
            remembered: quorum::Remembered::default(),
            renewal_read: None,
        };
        self.agents[i] = Some(agent);
        // The agents' first start is spread over a renew interval, as a cluster's are; a
        // restart renews at once (`agent::heartbeat`: the ticker's first tick is immediate).
        let phase = if run == 1 {
            self.s.agent_phase[i].as_millis() as u64 % self.set.renew.as_millis().max(1) as u64
        } else {
            0
        };
        let first = self.now + Duration::from_millis(phase);
        self.at(first, Ev::AgentRenew(i, run, 0));
        self.wake(i, run, self.now);
        self.log(|| format!("n{i} agent starts (run {run})"));
        // As `agent::fence_task` logs it: only when no partition is on record (one on record
        // goes on at once, and the wait says nothing more).
        if !unanswered.is_zero() && disk.cut_off_since.is_none() {
            self.log(|| {
                format!(
                    "n{i} takes over its previous run's wait of {:.3}s without an answer",
                    unanswered.as_secs_f64()
                )
            });
        }
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::World(k) => self.world(k),
            Ev::KubeletRenew(i, chain) if chain == self.kubelet_chain[i] => {
                // Every quarter of 40 s, with up to 4 % jitter (docs/semantics.md §13).
                let jitter = Duration::from_millis(self.now.as_millis() as u64 * 7919 % 400);
                let next = if self.reaches_api(i) {
                    self.cp.kubelet_renewed(i, self.now);
                    // `renewTime` as the kubelet stamps it, with the node's system clock.
                    self.kubelet_renew_time[i] =
                        Some(moment_off(self.now, self.clock_offset[i]).wall);
                    self.kubelet_failures[i] = 0;
                    self.now + self.set.renew + jitter
                } else if self.set.kubelet_backoff {
                    // The kubelet's lease controller (component-helpers, `lease/controller.go`):
                    // each request into the dead link hangs for the heartbeat client's timeout;
                    // five updates in a row, then reads of the Lease with a sleep between them
                    // that doubles from 200 ms to at most 7 s, until one is answered, and the
                    // renewal follows at once.
                    self.kubelet_failures[i] += 1;
                    let failures = self.kubelet_failures[i];
                    let sleep = if failures <= 5 {
                        Duration::ZERO
                    } else {
                        (Duration::from_millis(100) * (1 << (failures - 5).min(10)))
                            .min(Duration::from_secs(7))
                    };
                    self.now + self.request_time(i, self.set.kubelet_timeout, false) + sleep
                } else {
                    self.now + self.set.renew + jitter
                };
                self.at(next, Ev::KubeletRenew(i, chain));
            }
            Ev::KubeletRenew(..) => {}
            Ev::KubeletAnchor(i) => {
                self.kubelet_chain[i] += 1;
                self.handle(Ev::KubeletRenew(i, self.kubelet_chain[i]));
            }
            Ev::AgentRenew(i, run, chain) => {
                if !self.alive(i, run) || !self.renewing(i, chain) {
                    return;
                }
                let sent = self.now;
                let answer = |ok| Ev::AgentAnswer {
                    node: i,
                    run,
                    chain,
                    sent,
                    ok,
                };
                // As `agent::heartbeat`: only a renewal after a failure is probed, and not the
                // one a probe's answer sent.
                let probed = self.agents[i].as_mut().is_some_and(|a| {
                    let probed = a.failing && !a.after_probe;
                    a.after_probe = false;
                    probed
                });
                if self.agent_reaches(i) {
                    self.at(sent + Duration::from_millis(20), answer(true));
                } else {
                    let fails = self.request_time(i, self.set.request_timeout, true);
                    self.at(sent + fails, answer(false));
                    if let Some(every) = self.set.probe.filter(|e| probed && *e < fails) {
                        if let Some(a) = self.agents[i].as_mut() {
                            a.probing = Some(sent);
                        }
                        self.out.probed_renewals += 1;
                        self.at(sent + every, Ev::AgentProbe(i, run, chain, sent));
                    }
                }
            }
            Ev::AgentProbe(i, run, chain, renewal) => {
                let probing = self.agents[i]
                    .as_ref()
                    .is_some_and(|a| a.run == run && a.probing == Some(renewal));
                if !probing || !self.renewing(i, chain) {
                    return;
                }
                self.out.probes += 1;
                if self.agent_reaches(i) {
                    // Answered (a read: no proof of contact by itself): renew now.
                    self.renew_after_read(i, run);
                } else if let Some(every) = self.set.probe {
                    self.at(self.now + every, Ev::AgentProbe(i, run, chain, renewal));
                }
            }
            Ev::AgentWatch(node, run, chain, unanswered) => {
                if !self.alive(node, run) || !self.renewing(node, chain) {
                    return;
                }
                let now = self.now;
                if unanswered {
                    // Unanswered within its second: a failure, and a new chain of renewals
                    // begins at once, probed as any renewal after a failure is.
                    if let Some(a) = self.agents[node].as_mut() {
                        let sent = now - fencing::PROBE_EVERY;
                        a.contact.observe(Evidence::Failure, sent, now);
                        a.watched_until = None;
                        a.watch_chain = None;
                        a.failing = true;
                        a.after_probe = false;
                        a.renewals += 1;
                        let chain = a.renewals;
                        self.at(now, Ev::AgentRenew(node, run, chain));
                    }
                    self.wake(node, run, now);
                    return;
                }
                self.out.watch_probes += 1;
                let next = now + fencing::PROBE_EVERY;
                let unanswered = !self.agent_reaches(node);
                let until = self.agents[node].as_ref().and_then(|a| a.watched_until);
                let not_ready = self.agents[node]
                    .as_ref()
                    .is_some_and(|a| self.set.fixes.not_ready_watched && not_ready_seen(a));
                if unanswered || until.is_some_and(|u| next < u) || not_ready {
                    self.at(next, Ev::AgentWatch(node, run, chain, unanswered));
                } else if let Some(a) = self.agents[node].as_mut() {
                    a.watch_chain = None;
                }
            }
            Ev::AgentAnswer {
                node,
                run,
                chain,
                sent,
                ok,
            } => {
                if !self.alive(node, run) {
                    return;
                }
                let now = self.now;
                let set = self.set;
                // Only the current chain's renewal is heard: one dropped for a probe's answer is
                // not heard of again.
                let mut nudged = Vec::new();
                let next = self.agents[node]
                    .as_mut()
                    .filter(|a| a.renewals == chain)
                    .map(|a| {
                        let evidence = if ok {
                            Evidence::Contact
                        } else {
                            Evidence::Failure
                        };
                        let first_after_failure = ok && a.contact.reach == Reach::Unreachable;
                        // As `agent::heartbeat`: a renewal that ends the fence's partition with
                        // no failure seen is a return too, watched on the usual cadence.
                        let returned = first_after_failure || (ok && a.cut_off);
                        a.contact.observe(evidence, sent, now);
                        // As `agent::quorum` on a contact: answering "reachable" again, it tells
                        // the peers it answered "cut off".
                        if set.nudge && answers_reachable(a, now, set.unreachable_after) {
                            nudged = std::mem::take(&mut a.askers);
                        }
                        if a.probing == Some(sent) {
                            a.probing = None;
                        }
                        a.failing = !ok;
                        // Renewals every renew interval (the first after a failure no sooner
                        // than the kubelet's lag, as `agent::heartbeat` does); after a failure
                        // the next goes out a second later.
                        let next = if ok {
                            let lag = set.lag_after_return();
                            sent + fencing::next_renewal(set.renew, lag, first_after_failure)
                        } else {
                            now + fencing::RETRY_AFTER_FAILURE.min(set.renew)
                        };
                        (next, returned, first_after_failure)
                    });
                if let Some((next, returned, first_after_failure)) = next {
                    self.at(next.max(now), Ev::AgentRenew(node, run, chain));
                    // As `agent::heartbeat`: the link back, watched until the renewal that
                    // proves the kubelet renewed too.
                    let watched = returned
                        && set.fixes.return_watched
                        && !set.kubelet_lag.is_zero()
                        && next > now + fencing::PROBE_EVERY;
                    if watched && let Some(a) = self.agents[node].as_mut() {
                        // After a failure, until the renewal a kubelet's lag later; after a
                        // return with no failure seen, the renewals keep their cadence, and the
                        // first sent a kubelet's lag after this one proves the kubelet.
                        a.watched_until = Some(if first_after_failure {
                            next
                        } else {
                            sent + set.kubelet_lag + set.renew
                        });
                        // Reads already going on for a Node not Ready go on until then too.
                        if a.watch_chain != Some(chain) {
                            a.watch_chain = Some(chain);
                            self.at(
                                now + fencing::PROBE_EVERY,
                                Ev::AgentWatch(node, run, chain, false),
                            );
                        }
                    }
                }
                for k in nudged {
                    // Sent over the peer link, as a question is: lost when either end is down.
                    if self.peer_link[node] && self.peer_link[k] {
                        self.out.nudges += 1;
                        let to = self.runs[k];
                        self.at(now + Duration::from_millis(2), Ev::Nudge(k, to, node));
                    }
                }
                self.wake(node, run, now);
            }
            Ev::Nudge(i, run, from) => {
                let now = self.now;
                // As `agent::quorum`: a cut-off agent reads its Lease, bounded by
                // `NUDGE_PROBE`; answered, the heartbeat renews at once (a renewal hung after a
                // failure is dropped, as for a probe's answer); otherwise it asks its peers.
                let probe = self.request_time(i, fencing::NUDGE_PROBE, true);
                let reaches = self.agent_reaches(i);
                // As `agent::quorum`: the peer that says it is back is the likeliest reader, cut
                // off or not.
                if self.set.fixes.nudger_reads
                    && let Some(a) = self.agents[i].as_mut().filter(|a| a.run == run)
                {
                    a.unable.remove(&format!("n{from}"));
                }
                let Some(a) = self.agents[i]
                    .as_mut()
                    .filter(|a| a.run == run && a.cut_off)
                else {
                    return;
                };
                if reaches {
                    a.read_answered_at = Some(now);
                    self.log(|| format!("n{i} nudged: its probe is answered, it renews"));
                    self.renew_after_read(i, run);
                } else {
                    let at = now + probe;
                    a.next_round = Some(a.next_round.map_or(at, |t| t.min(at)));
                    self.log(|| format!("n{i} nudged: its probe fails, it asks its peers"));
                    self.wake(i, run, at);
                }
            }
            Ev::Wake(i, run) => {
                // Only the agent's earliest pending wake-up steps it (it names the next one);
                // one superseded by an earlier wake-up is stale.
                if self.alive(i, run) && self.wake_at[i] == Some((self.now, run)) {
                    self.wake_at[i] = None;
                    self.step_agent(i);
                }
            }
            Ev::Start(i) => self.start_agent(i),
            Ev::Monitor => {
                let changes = self.cp.monitor(self.now);
                self.apply(changes);
                // Only a monitor pass writes Ready=Unknown (the tainting passes, every 100 ms
                // while a node is queued, leave it as it is): noted here, not in `apply`.
                self.note_unknowns();
                if self.cp.queued() {
                    self.taint_pass_at(self.now);
                }
                // `wait.UntilWithContext` starts the period when the pass ends.
                let next = self.set.controller.monitor_period + self.set.controller.pass_duration;
                self.at(self.now + next, Ev::Monitor);
            }
            Ev::TaintPass => {
                self.taint_passes.remove(&self.now);
                let changes = self.cp.taint_pass(self.now);
                self.apply(changes);
                if self.cp.queued() {
                    self.taint_pass_at(self.now + Duration::from_millis(100));
                }
            }
            Ev::Evict {
                pod,
                tainted,
                generation,
                work,
            } => {
                if generation == self.cp.generation {
                    self.evict(pod, tainted, work);
                }
            }
            Ev::KubeletSees(p) => self.kubelet_starts(p),
            Ev::OwnList(i, run) => {
                if self.alive(i, run) && self.agent_reaches(i) {
                    let now = self.now;
                    let before: Vec<String> = self.agents[i]
                        .as_ref()
                        .map(|a| a.known.iter().map(|p| p.uid.clone()).collect())
                        .unwrap_or_default();
                    if let Some(a) = self.agents[i].as_mut() {
                        a.listed_at = Some(now);
                    }
                    self.refresh_view(i);
                    self.wake(i, run, now);
                    let gained: Vec<String> = self.agents[i]
                        .as_ref()
                        .map(|a| {
                            a.known
                                .iter()
                                .filter(|p| !before.contains(&p.uid))
                                .map(|p| p.uid.clone())
                                .collect()
                        })
                        .unwrap_or_default();
                    self.log(|| {
                        format!(
                            "n{i} lists its pods for a cgroup its view lacked: it gains {gained:?}"
                        )
                    });
                }
            }
            Ev::KubeletStatus(i, tried) => self.kubelet_status(i, tried),
            Ev::Judge {
                pod,
                eviction,
                sigterm,
            } => self.judge(pod, eviction, sigterm),
        }
    }

    /// A read of agent `i`'s Lease was answered (its heartbeat's probe, or a nudge's read): a
    /// renewal hung after a failure is dropped and a new chain of renewals begins at once, whose
    /// first renewal is not probed (`agent::heartbeat`).
    fn renew_after_read(&mut self, i: usize, run: u32) {
        if let Some(a) = self.agents[i].as_mut() {
            a.renewals += 1;
            a.after_probe = true;
            a.probing = None;
            let chain = a.renewals;
            self.at(
                self.now + Duration::from_millis(20),
                Ev::AgentRenew(i, run, chain),
            );
        }
    }

    fn alive(&self, i: usize, run: u32) -> bool {
        self.agents[i].as_ref().is_some_and(|a| a.run == run)
    }

    /// Whether `chain` is agent `i`'s current chain of renewals.
    fn renewing(&self, i: usize, chain: u32) -> bool {
        self.agents[i].as_ref().is_some_and(|a| a.renewals == chain)
    }

    /// Notes each change of the Ready=Unknown the controller wrote since the last note
    /// (`node_unknowns`), and of the Ready=False a kubelet posted (`node_ready_false`): the
    /// agents' watches deliver them as they deliver the taint.
    fn note_unknowns(&mut self) {
        for node in 0..self.node_unknowns.len() {
            let now = self.cp.unknown_since(node).map(stored);
            let was = self.node_unknowns[node].last().and_then(|&(_, u)| u);
            let false_now = self.cp.false_since(node).map(stored);
            let false_was = self.node_ready_false[node].last().and_then(|&(_, f)| f);
            if false_now != false_was {
                self.node_ready_false[node].push((self.now, false_now));
            }
            if now != was {
                self.node_unknowns[node].push((self.now, now));
            }
            if now != was || false_now != false_was {
                self.pods_changed_on(node);
            }
        }
    }

    /// The Ready=Unknown on `node`'s Node as the API stored it at `at`: when it was written.
    fn unknown_at(&self, node: usize, at: Duration) -> Option<Duration> {
        standing_at(&self.node_unknowns[node], at)
    }

    /// The Ready=False on `node`'s Node as the API stored it at `at`: when its kubelet posted it.
    fn ready_false_at(&self, node: usize, at: Duration) -> Option<Duration> {
        standing_at(&self.node_ready_false[node], at)
    }

    fn apply(&mut self, changes: super::control::Changes) {
        if changes.took_over {
            // It removed every taint (below), and its taint eviction controller counts from the
            // taints it adds again.
            self.log(|| "a restarted controller-manager takes over".to_string());
        }
        for (z, state, not_ready, nodes) in changes.zones {
            self.log(|| format!("controller: zone-{z} {state} ({not_ready} of {nodes} not ready)"));
        }
        // In the pass's order: the removals of a node heard again or of a restarted
        // controller-manager's first pass (`ControlPlane::take_over`) and the swaps, in the
        // monitor pass's loop; then the taints of the tainting pass, which may add one again to
        // a node that pass took it from; then the removals of entering master disruption, which
        // `handleDisruption` makes last.
        let (last, first): (Vec<_>, Vec<_>) = changes.untainted.into_iter().partition(|u| u.2);
        for (node, added, _) in first {
            self.untainted(node, added, false);
        }
        for (node, added, not_ready) in changes.swapped {
            let (from, to) = if not_ready {
                ("unreachable", "not-ready")
            } else {
                ("not-ready", "unreachable")
            };
            self.log(|| format!("controller swaps n{node}'s {from}:NoExecute for {to}:NoExecute"));
            self.note_taint(node, !not_ready, None);
            self.note_taint(node, not_ready, Some(stored(added)));
            self.taints_changed(node);
        }
        let tainted = changes.tainted.iter().map(|&(n, t)| (n, t, false));
        let not_ready = changes.not_ready_tainted.iter().map(|&(n, t)| (n, t, true));
        for (node, added, not_ready) in tainted.chain(not_ready) {
            let key = if not_ready {
                "not-ready"
            } else {
                "unreachable"
            };
            self.log(|| format!("controller taints n{node} {key}:NoExecute"));
            self.note_taint(node, not_ready, Some(stored(added)));
            self.taints_changed(node);
        }
        for (node, added, _) in last {
            self.untainted(node, added, true);
        }
    }

    /// The controller removed `node`'s NoExecute taint, the first of its run added at `added`;
    /// `disruption`: as it entered master disruption.
    fn untainted(&mut self, node: usize, added: Duration, disruption: bool) {
        if disruption {
            self.transient.insert((node, added));
        }
        self.node_taints[node].push((self.now, None));
        self.node_not_ready_taints[node].push((self.now, None));
        self.pods_changed_on(node);
        // Every timer of the run goes with its last taint.
        for p in &mut self.pods {
            if p.node == node {
                p.work = None;
            }
        }
        self.log(|| {
            format!(
                "controller removes n{node}'s taint{}",
                if disruption {
                    " (every zone fully disrupted)"
                } else {
                    ""
                }
            )
        });
    }

    /// Notes now in the history of `node`'s unreachable taint, or of its not-ready one, as the
    /// API stored it: its `timeAdded`, or `None` for its removal.
    fn note_taint(&mut self, node: usize, not_ready: bool, added: Option<Duration>) {
        let history = if not_ready {
            &mut self.node_not_ready_taints[node]
        } else {
            &mut self.node_taints[node]
        };
        history.push((self.now, added));
    }

    /// `node`'s NoExecute taint was added or swapped: its agent's watch hears of it, and the
    /// taint eviction controller handles each of its pods ([`Self::process_pod`]).
    fn taints_changed(&mut self, node: usize) {
        self.pods_changed_on(node);
        for p in 0..self.pods.len() {
            if self.pods[p].node == node && self.pods[p].in_api {
                self.process_pod(p);
            }
        }
    }

    /// The taint eviction controller's `processPodOnNode` for `pod` under its node's NoExecute
    /// taint as it stands: the pod's own toleration of that taint. One tolerated forever cancels
    /// the pod's timer; a timer already running goes on whatever the toleration now says (a swap
    /// of the not-ready taint for the unreachable one keeps it, docs/semantics.md §4.3);
    /// otherwise one starts now — when the controller handles the update, the taint's or, for a
    /// pod created on a node already tainted, the pod's, not at `timeAdded`.
    fn process_pod(&mut self, pod: usize) {
        let node = self.pods[pod].node;
        let Some((chain, not_ready)) = self.cp.chain(node) else {
            return;
        };
        let spec = &self.pods[pod].spec;
        let toleration = if not_ready {
            spec.not_ready
        } else {
            spec.toleration
        };
        match toleration {
            None => self.pods[pod].work = None,
            Some(_) if self.pods[pod].work.is_some() => {}
            Some(t) => {
                self.works += 1;
                let work = self.works;
                self.pods[pod].work = Some(work);
                let generation = self.cp.generation;
                self.at(
                    self.now + Duration::from_secs(t),
                    Ev::Evict {
                        pod,
                        tainted: chain,
                        generation,
                        work,
                    },
                );
            }
        }
    }

    fn evict(&mut self, pod: usize, tainted: Duration, work: u64) {
        let node = self.pods[pod].node;
        let chain = self.cp.chain(node).map(|(c, _)| c);
        if chain != Some(tainted) || self.pods[pod].work != Some(work) || !self.pods[pod].in_api {
            return;
        }
        if !self.cp.api_up() {
            // The delete fails; the taint manager tries again.
            let generation = self.cp.generation;
            self.at(
                self.now + Duration::from_secs(1),
                Ev::Evict {
                    pod,
                    tainted,
                    generation,
                    work,
                },
            );
            return;
        }
        if !self.cp.running(self.now) {
            // No controller-manager leads yet after a restart: no timer runs. The one that takes
            // over removes the taint at its first pass and counts from the one it adds again
            // (`ControlPlane::take_over`).
            return;
        }
        let now = self.now;
        let held = self.agents[node]
            .as_ref()
            .is_some_and(|a| a.gate.verdict.as_ref().is_some_and(|v| v.is_hold()));
        let p = &mut self.pods[pod];
        p.held_at_deletion = held;
        p.in_api = false;
        p.deleted_by_controller = Some(now);
        p.deleted_for = Some(tainted);
        p.left_api = Some(now);
        let running = p.running;
        let kill = p.fence_kill;
        self.pods_changed_on(node);
        self.out.deletions += 1;
        if let Some(k) = kill {
            self.out
                .earliness_ms
                .push(now.as_millis() as i64 - k.as_millis() as i64);
        }
        self.log(|| format!("controller deletes pod {pod} on n{node}"));
        if running && self.reaches_api(node) {
            // The kubelet sees the deletion and stops it.
            self.pods[pod].running = false;
        }
        self.replacements();
        self.refresh_views();
    }

    /// Whether a node other than `node` can run a replacement: its kubelet reaches the API
    /// server, and no Ready=Unknown the controller wrote stands on it (its `unreachable:NoSchedule`
    /// keeps the replacement off it until the kubelet posts its status).
    fn other_ready(&self, node: usize) -> bool {
        self.cp.api_up()
            && (0..self.api_link.len()).any(|j| {
                j != node
                    && self.api_link[j]
                    && (self.cp.schedulable(j) || !self.set.kubelet_status)
            })
    }

    /// A try of `node`'s kubelet's node status update (docs/semantics.md §6.2): every
    /// `nodeStatusUpdateFrequency` (10 s, up to 4 % jitter, counted from the end of a run), up to
    /// five tries a run, each reading the Node through the heartbeat client, whose timeout is
    /// that frequency (10 s), so a hanging link holds a run for 50 s. An answered try posts the
    /// kubelet's Ready ([`Self::kubelet_post`]).
    fn kubelet_status(&mut self, node: usize, tried: u32) {
        let jitter = Duration::from_millis(self.now.as_millis() as u64 * 6271 % 400);
        let next = if self.reaches_api(node) {
            self.kubelet_post(node);
            self.now + STATUS_EVERY + jitter
        } else {
            let failed = self.now + self.request_time(node, self.set.kubelet_timeout, false);
            if tried + 1 < STATUS_TRIES {
                self.at(failed, Ev::KubeletStatus(node, tried + 1));
                return;
            }
            failed + STATUS_EVERY + jitter
        };
        self.at(next, Ev::KubeletStatus(node, 0));
    }

    /// `node`'s kubelet posts its node status, when it differs from the stored one: Ready=True
    /// (False while it finds the node not ready, `Event::KubeletNotReady`). A Ready=Unknown the
    /// controller wrote meanwhile is gone, and a node posted True can take replacements again.
    fn kubelet_post(&mut self, node: usize) {
        let ready = self.kubelet_ready[node];
        if self.cp.unknown_written(node) || self.cp.posted_ready(node) != ready {
            self.cp.status_posted(node, self.now, ready);
            self.note_unknowns();
            let said = if ready { "True" } else { "False" };
            self.log(|| format!("n{node}'s kubelet posts Ready={said}"));
            self.replacements();
        }
    }

    /// Deleted pods whose replacement can start now: the scheduler binds it to a Ready node
    /// ([`Self::other_ready`]), so while every other node is cut off or written Unknown it waits.
    /// A pod still running on its node from then on runs twice.
    fn replacements(&mut self) {
        let now = self.now;
        for p in 0..self.pods.len() {
            if self.pods[p].deleted_by_controller.is_some()
                && self.pods[p].replaced_at.is_none()
                && self.other_ready(self.pods[p].node)
            {
                self.pods[p].replaced_at = Some(now);
                self.log(|| format!("the replacement of pod {p} can start"));
            }
        }
    }

    fn judge(&mut self, pod: usize, eviction: Duration, sigterm: Duration) {
        if self.pods[pod].deleted_by_controller.is_some() {
            return;
        }
        // A user deleted it before the stop: its stop is what was asked for (the kubelet, had it
        // reached the API server, would have stopped it too), whatever the controller does.
        if self.pods[pod].left_api.is_some_and(|l| l <= sigterm) {
            self.log(|| format!("stop of pod {pod}: a user deleted it before"));
            return;
        }
        // Neither deleted nor about to be: the control plane keeps it when it holds the node's
        // zone, or is down for everyone; otherwise the partition ended first (or the limiter
        // queue is long), which no node can foresee.
        let node = self.pods[pod].node;
        // A controller-manager restarted after an outage runs once it leads; until then it is
        // judged as the API server down.
        let running = self.cp.running(self.now);
        // That excuse needs a partition: a node whose link to the API server held for the
        // minute before the stop (its agent's own path cut, `Event::CutAgentPath`) had its
        // kubelet heard all along, and its stop is judged.
        let partitioned = self
            .unheard_until(node, sigterm)
            .is_some_and(|t| sigterm <= t + Duration::from_secs(60));
        if !self.cp.holds(node) && running && partitioned {
            return;
        }
        if let (false, Some(taint)) = (running, self.cp.taint(node)) {
            // The node was tainted before the API server went down for everyone, and the taint
            // stays on the Node object: the taint eviction controller deletes the pod for it as
            // soon as the API server is back. The stop was early, not needless; the end of the
            // run tells (`finish`), and only when it does not are other worlds searched.
            self.log(|| format!("stop of pod {pod}: the API server is down, judged at the end by the taint added at {:.3}s", (taint - ORIGIN).as_secs_f64()));
            self.deferred.push(Deferred {
                pod,
                taint,
                eviction,
                sigterm,
                judged: self.now,
            });
            return;
        }
        let api_down = !self.cp.api_up();
        self.condemn_or_excuse(pod, eviction, sigterm, self.now, api_down);
    }

    /// The stop of `pod` at `sigterm`, which the control plane kept at `now` (the API server down
    /// for everyone then, or not): excused by a witness world, or a wrongful stop.
    fn condemn_or_excuse(
        &mut self,
        pod: usize,
        eviction: Duration,
        sigterm: Duration,
        now: Duration,
        api_down: bool,
    ) {
        let node = self.pods[pod].node;
        let by_policy = self.pods[pod]
            .stopped_under
            .as_deref()
            .is_some_and(by_policy);
        if by_policy && !self.set.judge_policy_stops {
            self.out.violations.push(Violation::WrongfulStop {
                pod,
                at: sigterm,
                by_policy,
            });
            self.log(|| format!("stop of pod {pod} under a policy counted apart, the control plane keeps it: not searched for a witness"));
            return;
        }
        // The same worlds with the node's partition going on past the stop: the agent decided
        // at the stop, when its link's return was a future no agent sees.
        let heal = self.s.events.iter().position(|(t, e)| {
            ORIGIN + *t > sigterm && matches!(e, Event::HealApi(x) if *x == node)
        });
        // The last outage of the API server for everyone that began before the stop, while no
        // agent could see it yet: a peer whose last contact came just before it still says it
        // reaches the API server for `unreachable_after`, and a round is asked every
        // `peers.interval`. (Later, an agent that finds every node cut off holds, betting on an
        // outage rather than on a live control plane cut off from every node.)
        let visible = self.set.unreachable_after + self.set.peer_interval;
        let down = self
            .s
            .events
            .iter()
            .rposition(|(t, e)| ORIGIN + *t <= sigterm && matches!(e, Event::ApiDown))
            .map(|k| outage_began(&self.s.events, k))
            .filter(|&k| sigterm <= ORIGIN + self.s.events[k].0 + visible);
        // The last return of the API server before the stop.
        let up = self
            .s
            .events
            .iter()
            .rposition(|(t, e)| ORIGIN + *t <= sigterm && matches!(e, Event::ApiUp));
        // The first outage of the API server for everyone that began after the stop, by now.
        let later = self.s.events.iter().position(|(t, e)| {
            ORIGIN + *t > sigterm && ORIGIN + *t <= now && matches!(e, Event::ApiDown)
        });
        // The last outage of the API server for everyone that was over by the stop.
        let over = up.and_then(|u| {
            self.s.events[..u]
                .iter()
                .rposition(|(_, e)| matches!(e, Event::ApiDown))
                .map(|k| outage_began(&self.s.events, k))
        });
        let pasts = [
            Some(Past::Plain),
            up.map(Past::OthersBackWithServer),
            down.map(Past::LiveUntilJudged),
            over.map(Past::OutageOverAsPartition),
            self.silent_unrecorded(node, sigterm, by_policy)
                .then_some(Past::SilentKeptApi),
        ];
        // A user's deletion of the pod after the stop, by now: every world leaves it out.
        let no_user_delete = self.s.events.iter().position(|(t, e)| {
            ORIGIN + *t > sigterm
                && ORIGIN + *t <= now
                && matches!(e, Event::Delete(p) if *p == pod)
        });
        // The futures no agent sees at the stop, alone and together.
        let mut futures = vec![(None, None)];
        futures.extend(heal.map(|h| (Some(h), None)));
        futures.extend(later.map(|d| (None, Some(d))));
        futures.extend(heal.zip(later).map(|(h, d)| (Some(h), Some(d))));
        let mut variants: Vec<Variant> = pasts
            .into_iter()
            .flatten()
            .flat_map(|past| {
                // The queue's order is not searched for a stop under a policy counted apart.
                let orders: &[bool] = if by_policy { &[false] } else { &[false, true] };
                futures.iter().flat_map(move |&(goes_on, no_later_outage)| {
                    orders.iter().map(move |&first_in_queue| Variant {
                        past,
                        goes_on,
                        no_later_outage,
                        first_in_queue,
                        no_user_delete,
                    })
                })
            })
            .collect();
        variants.sort_by_key(Variant::changes);
        let judged = Judged {
            stop: sigterm,
            now,
            api_down,
        };
        let found = variants
            .into_iter()
            .find_map(|v| Some((self.witness_for(pod, v, judged)?, v)));
        if let Some(((last, stayed_up), variant)) = found {
            self.out.indistinguishable.push((pod, last));
            let mut how = String::new();
            match variant.past {
                Past::Plain => {}
                Past::LiveUntilJudged(_) => {
                    self.out.outage_as_partition += 1;
                    how += if stayed_up {
                        " and the outage a partition of every node from a live control plane that stayed up"
                    } else {
                        " and the outage a partition of every node from a live control plane that failed after judging it"
                    };
                }
                Past::OthersBackWithServer(_) => {
                    self.out.others_back += 1;
                    how += " and every other node's link back with the API server, its agent not heard yet";
                }
                Past::OutageOverAsPartition(_) => {
                    self.out.outage_over_as_partition += 1;
                    how += " and the outage of the API server before the stop a partition of every node from a live control plane";
                }
                Past::SilentKeptApi => {
                    self.out.silent_kept_api += 1;
                    how += " and the nodes cut off from their peers keeping the API server";
                }
            }
            if variant.goes_on.is_some() {
                self.out.ended_after_stop += 1;
                how += " and its partition gone on past the stop";
            }
            if variant.no_later_outage.is_some() {
                self.out.outage_after_stop += 1;
                how += " and without the outage of the API server that began after the stop";
            }
            if variant.no_user_delete.is_some() {
                self.out.user_delete_after_stop += 1;
                how += " and without the user's deletion of the pod after the stop";
            }
            if variant.first_in_queue {
                self.out.first_in_queue += 1;
                how += " and its zone's tainting queue taking it first from the stop on";
            }
            if variant.changes() > 1 {
                self.out.combined += 1;
            }
            self.log(|| format!("stop of pod {pod} kept here, but deleted by then had n{node}'s kubelet last renewed at {:.3}s before its cut{how}: no agent can tell", last.as_secs_f64()));
            return;
        }
        self.out.violations.push(Violation::WrongfulStop {
            pod,
            at: sigterm,
            by_policy,
        });
        self.log(|| {
            format!(
                "WRONGFUL STOP of pod {pod}: eviction planned {:.3}s, the control plane keeps it",
                (eviction - ORIGIN).as_secs_f64()
            )
        });
    }

    /// Whether [`Past::SilentKeptApi`] is a world to try for a stop on `node` at `stop`: some other
    /// node was cut off from its peers and from the API server then, and each such node was
    /// recorded Ready from its cut through the stop. Once the controller records one Unknown, a
    /// peer that reads the zone as recorded tells the two worlds apart. Not for a stop under a
    /// policy counted apart.
    fn silent_unrecorded(&self, node: usize, stop: Duration, by_policy: bool) -> bool {
        let silent = silent_and_cut(self.s, stop - ORIGIN, node);
        !by_policy
            && !silent.is_empty()
            && silent.iter().all(|&n| {
                self.last_cut(n, stop)
                    .is_some_and(|cut| self.cp.recorded_ready_through(n, ORIGIN + cut, stop))
            })
    }

    /// A world no agent can tell apart from this one in which the control plane deletes `pod`
    /// by now: the same scenario with the kubelets renewing at other instants
    /// ([`Self::witness_worlds`]). No agent observes a kubelet's renewals — the
    /// agents' own contacts, their peers' answers and what the API shows a connected agent are
    /// the same in both until the control plane's deletions differ — so a stop that is right
    /// there cannot be told from one that is wrong here.
    ///
    /// `variant`: what else the worlds change besides the kubelets' renewals ([`Variant`]).
    /// `stop`: when the fence began to stop the pod; the node's kubelet is moved relative to the
    /// node's last cut before then. The witness's kubelet renewal, and whether its control plane
    /// stayed up all along.
    fn witness_for(
        &mut self,
        pod: usize,
        variant: Variant,
        judged: Judged,
    ) -> Option<(Duration, bool)> {
        if self.witness {
            return None;
        }
        let node = self.pods[pod].node;
        let Judged {
            stop,
            now,
            api_down,
        } = judged;
        // The agents decide the same there as here up to the stop, by construction, but when
        // other nodes' links come back: then they are run, to check (below).
        let agents = matches!(
            variant.past,
            Past::OthersBackWithServer(_) | Past::SilentKeptApi
        );
        // A witness run goes a minute past the stop it judges (not to the end of the scenario);
        // later stops on the node within that minute are judged by the same runs.
        // A world whose outage is a partition keeps cut, until the outage ends, the links that
        // came back during it by the stop (`outage_as_partition`): that one depends on the stop,
        // as does a queue that takes the node first from the stop on.
        let by_stop = (variant.first_in_queue
            || matches!(variant.past, Past::LiveUntilJudged(_) | Past::SilentKeptApi))
        .then_some(stop);
        let key = (node, variant, self.last_cut(node, stop), by_stop);
        if self
            .witnesses
            .get(&key)
            .is_none_or(|entry| entry.until < now)
        {
            let until = now + Duration::from_secs(60);
            let mut worlds: Vec<(Duration, Scenario, bool)> = self
                .witness_worlds(node, stop, now)
                .into_iter()
                .map(|(last, w)| (last, w, false))
                .collect();
            // A control plane cut off from every node that stays up all along is a world as
            // alike as one that fails once it has judged the node: every agent's request fails
            // the same from the outage on. It deletes the pods whose tolerations run out before
            // every zone counts as fully disrupted (then it removes the taint), where one that
            // failed first left them to a taint found after the return.
            if let Past::LiveUntilJudged(_) = variant.past {
                let through: Vec<_> = worlds
                    .iter()
                    .map(|(last, w, _)| (*last, w.clone(), true))
                    .collect();
                worlds.extend(through);
            }
            for (last, w, lives_through) in &mut worlds {
                if variant.first_in_queue {
                    w.queue_first = Some((node, stop - ORIGIN));
                }
                // The futures first: they leave out only events after the stop, so the index of
                // the change before it is the same after them.
                let later_up = variant.no_later_outage.and_then(|down| {
                    let up = w.events[down..]
                        .iter()
                        .position(|(_, e)| matches!(e, Event::ApiUp));
                    up.map(|u| down + u)
                });
                let mut k = 0;
                w.events.retain(|(_, e)| {
                    k += 1;
                    let i = k - 1;
                    let healed = variant.goes_on.is_some_and(|first| {
                        i >= first && matches!(e, Event::HealApi(x) if *x == node)
                    });
                    // Outages are drawn independently and may overlap: the other beginnings of
                    // the one left out go with it, as in `outage_as_partition`.
                    let outage = variant.no_later_outage.is_some_and(|down| {
                        i >= down && later_up.is_none_or(|up| i < up) && matches!(e, Event::ApiDown)
                    });
                    !healed && !outage && Some(i) != later_up && Some(i) != variant.no_user_delete
                });
                match variant.past {
                    Past::Plain => {}
                    Past::OthersBackWithServer(up) => others_back_with_server(w, up, node),
                    Past::LiveUntilJudged(down) if *lives_through => {
                        outage_as_partition(w, down, Duration::MAX, stop - ORIGIN);
                    }
                    Past::LiveUntilJudged(down) => {
                        // Judged once its grace period ran out after that renewal, on the
                        // monitor pass that follows, and tainted on the tainting pass after it
                        // (queued a pass later still, as upstream's controller queues).
                        let passes = if self.set.controller.queue_on_observed {
                            3
                        } else {
                            2
                        };
                        let judged = *last
                            + self.set.controller.grace
                            + self.set.controller.monitor_period * passes;
                        outage_as_partition(w, down, judged, stop - ORIGIN);
                    }
                    Past::OutageOverAsPartition(down) => {
                        outage_as_partition(w, down, Duration::MAX, Duration::MAX);
                    }
                    Past::SilentKeptApi => {
                        let silent = silent_and_cut(w, stop - ORIGIN, node);
                        silent_kept_api(w, &silent, stop - ORIGIN);
                    }
                }
            }
            let worlds = worlds
                .into_iter()
                .map(|(last, w, through)| (last, through, w, None))
                .collect();
            self.witnesses.insert(key, WitnessWorlds { until, worlds });
        }
        let set = self.set;
        let entry = self.witnesses.get_mut(&key)?;
        let until = entry.until;
        // Deleted there by now; or, while the API server is down for everyone here, deleted once
        // it is back for a taint added by now — the test `judge` applies to this world
        // (`deferred`). And there the fence stopped the pod no later than here (the agent
        // decided the same in both, whatever differs later), or the control plane deleted it
        // first.
        entry.worlds.iter_mut().find_map(|(last, through, w, run)| {
            let pods = run.get_or_insert_with(|| {
                let o = run_as(w, &set, false, Some(until), agents);
                let deleted = o.deleted.iter().zip(&o.deleted_for).zip(&o.stopped);
                deleted.map(|((d, f), s)| (d.zip(*f), *s)).collect()
            });
            let (Some((deleted, taint)), stopped) = pods.get(pod).copied()? else {
                return None;
            };
            // Without the later outage, the API server is up at `now` there, where a pod not
            // deleted yet is not judged (`judge`): deleted within the run's minute, it was
            // one the control plane deletes.
            let deleted_by_now =
                deleted <= now || (api_down && taint <= now) || variant.no_later_outage.is_some();
            let same_stop = !agents || stopped.is_some_and(|s| s <= stop) || deleted <= stop;
            (deleted_by_now && same_stop).then_some((*last, *through))
        })
    }

    /// The worlds [`Self::witness_for`] tries for `node`, each named by when its kubelet last
    /// renewed before its latest cut: first the one where that renewal came as long before the
    /// cut as the renew interval allows and every other kubelet renewed just before its own cut
    /// (so that this node goes silent first of all), then three more instants of the interval.
    /// Anchored, not phased: the renewals' jitter moves a phase by seconds over a run.
    fn witness_worlds(
        &self,
        node: usize,
        stop: Duration,
        now: Duration,
    ) -> Vec<(Duration, Scenario)> {
        let renew = self.set.renew;
        let tick = Duration::from_millis(1);
        let last_cut = |n: usize| self.last_cut(n, now);
        let Some(cut) = self.last_cut(node, stop) else {
            return Vec::new();
        };
        let mut worlds = Vec::new();
        let mut first = self.s.clone();
        let earliest = (cut + tick).saturating_sub(renew);
        first.kubelet_anchor[node] = Some(earliest);
        for n in 0..first.kubelet_anchor.len() {
            if let (true, Some(c)) = (n != node, last_cut(n)) {
                // A node that went silent before this one could have renewed is judged first in
                // every world: its renewal as early as its cut allows frees the tainting
                // limiter's token soonest. Any other renews just before its cut.
                first.kubelet_anchor[n] = Some(if c + tick < earliest {
                    (c + tick).saturating_sub(renew)
                } else {
                    c.saturating_sub(tick)
                });
            }
        }
        // And the controller's monitor pass right after that renewal: it then counts the grace
        // period from the renewal itself rather than from up to a monitor period later.
        let period = self.set.controller.monitor_period;
        first.monitor_phase =
            Duration::from_nanos(((earliest + tick).as_nanos() % period.as_nanos().max(1)) as u64);
        worlds.push((earliest, first));
        // A few instants only: each witness is a whole run (of every node it stopped pods on).
        for k in [0, 3, 6] {
            let last = cut.saturating_sub(renew * k / 10 + tick);
            let mut other = self.s.clone();
            other.kubelet_anchor[node] = Some(last);
            worlds.push((last, other));
        }
        worlds
    }

    /// The latest instant by `at` at which every node's link to the API server was down, or
    /// was down until then: when the first link came back after it. At `at` every link is
    /// still down (the return comes later), or one came back before.
    fn return_after_every_cut(&self, at: Duration) -> Option<Duration> {
        let mut link = vec![true; self.api_link.len()];
        let mut back = None;
        for (t, e) in &self.s.events {
            let t = ORIGIN + *t;
            let every_cut = link.iter().all(|l| !l);
            if t > at && !every_cut {
                break;
            }
            if let Event::CutApi(x) | Event::HealApi(x) = e
                && let Some(l) = link.get_mut(*x)
            {
                *l = matches!(e, Event::HealApi(_));
                if every_cut && *l {
                    back = Some(t);
                    if t > at {
                        break;
                    }
                }
            }
        }
        back
    }

    /// The latest instant by `at` at which `node`'s link to the API server, or the API server
    /// for everyone, was down (`at` itself while it is); `None` when neither ever was.
    fn unheard_until(&self, node: usize, at: Duration) -> Option<Duration> {
        let (_, back, reached) = self.reach_edges(node, at);
        if reached { back } else { Some(at) }
    }

    /// When `node` last lost the API server (its own link, or the server for everyone, whichever
    /// went first) at or before `upto`, from the run's start.
    fn last_cut(&self, node: usize, upto: Duration) -> Option<Duration> {
        self.reach_edges(node, upto).0
    }

    /// `node`'s reach of the API server (its link and the server for everyone) through the
    /// scenario's events up to `upto`: when it last went (from the run's start), when it last
    /// came back (on the run's clock), and whether it is there at `upto`.
    fn reach_edges(
        &self,
        node: usize,
        upto: Duration,
    ) -> (Option<Duration>, Option<Duration>, bool) {
        let (mut link, mut server, mut cut, mut back) = (true, true, None, None);
        for (t, e) in &self.s.events {
            if ORIGIN + *t > upto {
                break;
            }
            let reached = link && server;
            match e {
                Event::CutApi(x) | Event::HealApi(x) if *x == node => {
                    link = matches!(e, Event::HealApi(_))
                }
                Event::ApiDown => server = false,
                Event::ApiUp => server = true,
                _ => {}
            }
            match (reached, link && server) {
                (true, false) => cut = Some(*t),
                (false, true) => back = Some(ORIGIN + *t),
                _ => {}
            }
        }
        (cut, back, link && server)
    }

    fn world(&mut self, k: usize) {
        let (_, e) = self.s.events[k].clone();
        self.log(|| format!("{e:?}"));
        match e {
            Event::CutApi(i) => self.api_link[i] = false,
            Event::HealApi(i) => {
                self.api_link[i] = true;
                self.healed(i);
            }
            Event::CutPeers(i) => self.peer_link[i] = false,
            Event::HealPeers(i) => self.peer_link[i] = true,
            Event::CutAgentPath(i) => self.agent_path[i] = false,
            Event::HealAgentPath(i) => {
                self.agent_path[i] = true;
                self.refresh_view(i);
            }
            // The kubelet posts the change at once when its link is up (its status manager
            // syncs on a change of the node's readiness), else on its next try that gets through.
            Event::KubeletNotReady(i) | Event::KubeletReady(i) => {
                self.kubelet_ready[i] = matches!(e, Event::KubeletReady(_));
                if self.reaches_api(i) {
                    self.kubelet_post(i);
                }
            }
            Event::ApiDown => {
                self.api_down_since = Some(self.now);
                self.cp.api_down(self.now);
            }
            Event::ApiUp => {
                self.api_down_since = None;
                if self.cp.api_back(self.now) {
                    self.log(|| {
                        "the controller-manager lost its leader lease in the outage: a new one takes over once the old lease expires".to_string()
                    });
                }
                for i in 0..self.api_link.len() {
                    if self.api_link[i] {
                        self.healed(i);
                    }
                }
            }
            Event::Crash { node, down } => {
                if self.agents[node].take().is_some() {
                    self.agent_down[node].push((self.now, None));
                    self.at(self.now + down, Ev::Start(node));
                }
            }
            Event::Create(spec) => {
                self.add_pod(spec);
                self.refresh_views();
            }
            Event::ClockStep { node, by_ms } => {
                self.clock_offset[node] = self.clock_offset[node].saturating_add(by_ms);
            }
            Event::Delete(p) => {
                let now = self.now;
                if let Some(pod) = self.pods.get_mut(p).filter(|pod| pod.in_api) {
                    pod.in_api = false;
                    pod.left_api = Some(now);
                    let node = pod.node;
                    // The kubelet's watch of a deletion is not delayed here: on a node that
                    // reaches the API server the replacement and the old pod overlap for the
                    // grace period anyway (graceful deletion), which no fence is about.
                    if self.reaches_api(node) {
                        self.pods[p].running = false;
                    }
                    self.pods_changed_on(node);
                }
                self.refresh_views();
            }
        }
        for i in 0..self.agents.len() {
            if let Some(a) = &self.agents[i] {
                let run = a.run;
                self.wake(i, run, self.now);
            }
        }
    }

    /// The kubelet of pod `p`'s node starts it, if the pod is in the API, the node reaches the API
    /// server, and the kubelet's watch has delivered the pod (`Ev::KubeletSees`, `healed`).
    fn kubelet_starts(&mut self, p: usize) {
        let pod = &self.pods[p];
        if pod.in_api
            && self.reaches_api(pod.node)
            && pod.created + self.s.kubelet_lag(pod.node) <= self.now
        {
            self.pods[p].running = true;
            // Its cgroup appears: the agent's cgroup watch wakes the fence
            // (`agent::pod_cgroups`), which lists its node's pods when it lacks one and is
            // connected (`step_agent`).
            let node = self.pods[p].node;
            if let Some(a) = self.agents[node].as_mut() {
                a.cgroups_moved = true;
                let run = a.run;
                self.wake(node, run, self.now);
            }
        }
    }

    /// The kubelet of `node` reaches the API server again: it stops pods deleted meanwhile and
    /// starts those created meanwhile (and those the fence stopped, if still there).
    fn healed(&mut self, node: usize) {
        if !self.reaches_api(node) {
            return;
        }
        for p in 0..self.pods.len() {
            if self.pods[p].node != node {
                continue;
            }
            if self.pods[p].in_api {
                self.kubelet_starts(p);
            } else if self.pods[p].running {
                self.pods[p].running = false;
                if self.pods[p].deleted_by_controller.is_some() {
                    self.ran_twice(p, false);
                }
            }
        }
        self.replacements();
        self.refresh_view(node);
    }

    /// Every agent that reaches the API server and whose list is not blocked sees its pods.
    fn refresh_views(&mut self) {
        for i in 0..self.agents.len() {
            self.refresh_view(i);
        }
    }

    /// Agent `i`'s view, when it reaches the API server and its list is not blocked: the API's
    /// pods its lag ago.
    fn refresh_view(&mut self, i: usize) {
        let now = self.now;
        let changed = self.pods_changed[i];
        if !self.agent_reaches(i)
            || self.agents[i].as_ref().is_none_or(|a| {
                a.list_blocked_until.is_some_and(|t| now < t)
                    || (a.list_blocked_until.is_none() && a.view_at.is_some_and(|v| v >= changed))
            })
        {
            return;
        }
        let listed = self.agents[i].as_ref().and_then(|a| a.listed_at);
        let at = self.watched_at(i).max(listed.unwrap_or_default());
        let view = self.api_view(i, at);
        let taint = self.taint_at(i, self.watched_at(i));
        let not_ready = self.not_ready_taint_at(i, self.watched_at(i));
        let unknown = self.unknown_at(i, self.watched_at(i));
        let ready_false = self.ready_false_at(i, self.watched_at(i));
        let now = self.now;
        if let Some(a) = self.agents[i].as_mut() {
            a.list_blocked_until = None;
            a.view_at = Some(at);
            if a.known != view {
                a.known = view;
                a.durability.changed();
            }
            // The Node's watch, as the pods': the taint, and when this run first saw it.
            let before = (a.taint_view.map(|(t, _)| (t, false)))
                .or(a.not_ready_view.map(|(t, _)| (t, true)));
            let seen = seen_from(taint, a.taint_view, now);
            if seen != a.taint_view {
                a.taint_view = seen;
                a.durability.changed();
            }
            let seen = seen_from(not_ready, a.not_ready_view, now);
            if seen != a.not_ready_view {
                a.not_ready_view = seen;
                a.durability.changed();
            }
            let kind = (taint.map(|_| false)).or(not_ready.map(|_| true));
            let first = fence_plan::run_first(a.swapped_from.as_ref(), before.as_ref(), kind);
            if first != a.swapped_from {
                a.swapped_from = first;
                a.durability.changed();
            }
            // And its Ready=Unknown, from the same watch.
            let seen = seen_from(unknown, a.unknown_view, now);
            if seen != a.unknown_view {
                a.unknown_view = seen;
                a.durability.changed();
            }
            // And the Ready=False its kubelet posted.
            let seen = seen_from(ready_false, a.ready_false_view, now);
            if seen != a.ready_false_view {
                a.ready_false_view = seen;
                a.durability.changed();
            }
        }
    }

    /// One tick of agent `i`: what the fence task and the quorum task decide at this instant.
    fn step_agent(&mut self, i: usize) {
        let now = self.now;
        let set = self.set;
        self.refresh_view(i);
        let Some(mut a) = self.agents[i].take() else {
            return;
        };
        if self.probing(&a) && a.next_probe.is_none_or(|t| now >= t) {
            self.probe_at_start(i, &mut a);
            a.next_probe = Some(now + set.peer_interval);
        }
        let seen = Seen {
            own: a.contact.last_contact,
            heartbeat: a.kubelet_read,
            failed: a.contact.reach == Reach::Unreachable,
        };
        let m = moment_off(now, a.wall_offset);
        if set.fixes.renewal_exact {
            // As `agent::fence_task`: the renewal read counts as the kubelet's own.
            a.link.note_renewal(a.kubelet_read, m);
        }
        // As `agent::heartbeat` and `agent::fence_task`: a Node not Ready as last seen has its
        // Lease read every second while its renewals do not fail, and a failure cuts it off.
        let not_ready = set.fixes.not_ready_watched && not_ready_seen(&a);
        a.link.note_not_ready(not_ready);
        if not_ready && !a.failing && a.watch_chain != Some(a.renewals) {
            a.watch_chain = Some(a.renewals);
            self.at(
                now + fencing::PROBE_EVERY,
                Ev::AgentWatch(i, a.run, a.renewals, false),
            );
        }
        let judged = a.link.judge(&seen, m, set.unreachable_after);
        if judged.moved {
            a.durability.contact_moved();
        }
        match judged.transition {
            Some(Transition::CutOff) => {
                a.durability.changed();
                self.log(|| format!("n{i} cut off"));
            }
            Some(Transition::Reconnected { .. }) => {
                a.steps.clear();
                a.waits = None;
                // As `agent::quorum`: the latest round's word is of the partition that ended.
                a.server_reads.unread = false;
                a.settled.clear();
                a.gate = Gate::default();
                a.stop_due_tolerated = None;
                a.next_round = None;
                a.leader_next = None;
                if !set.fixes.fence_on_taint {
                    // Reconciled at once, as before the fence planned on a taint while not cut
                    // off (below, otherwise).
                    a.fenced.clear();
                }
                a.durability.changed();
                self.log(|| format!("n{i} reconnected"));
            }
            None => {}
        }
        a.cut_off = judged.cut_off;
        // As `agent::leader`: the controller-manager's leader Lease, read every
        // `Leader::next_read` while the agent reaches the API server, and at once on a return,
        // before the fence plans on a taint (`agent::fence_task` waits for that read).
        // The answer takes no time here, and the read comes as the link does; the agent's comes
        // once its own first request after the return succeeds, a moment later.
        let reaches = self.agent_reaches(i);
        // As `agent::leader`: cut off after a read that found the Lease, the read is pending.
        if a.contact.reach == Reach::Unreachable && a.leader.holder().is_some() {
            a.leader_pending = true;
        }
        if set.fixes.leader_read && reaches && a.leader_next.is_none_or(|t| now >= t) {
            if let Some((holder, renewed, lease_duration)) = self.cp.leader_lease(now) {
                let holder = format!("kube-controller-manager-{holder}");
                let read = leader::Read {
                    holder: &holder,
                    renewed: Some(wall(renewed)),
                    lease_duration,
                    sent: now,
                    answered: now,
                };
                if let Some(moved) = a.leader.read(&read) {
                    self.log(|| {
                        let from = a.leader.timers_from().unwrap_or_default();
                        let from = from.saturating_sub(ORIGIN).as_secs_f64();
                        format!("n{i} reads the leader Lease: {moved:?}, timers from {from:.3}s")
                    });
                }
            }
            a.leader_next = Some(now + a.leader.next_read());
            a.leader_pending = false;
        }
        let leader_wake = a.leader_next.filter(|_| set.fixes.leader_read && reaches);
        // As `agent::fence_task`'s `list_unseen`: connected, after a pod's cgroup appeared, it
        // lists its node's pods when its view lacks one that runs.
        if set.fixes.cgroup_listed && judged.reachable && std::mem::take(&mut a.cgroups_moved) {
            let unseen = self
                .pods
                .iter()
                .any(|p| p.node == i && p.running && a.known.iter().all(|k| k.uid != p.uid));
            if unseen {
                self.at(now + OWN_LIST_AFTER, Ev::OwnList(i, a.run));
            }
        }
        // As `agent::fence_task`: not cut off, the fence plans on the taint its Node carries as
        // last seen; fenced pods are released to the kubelet once the API server answers and
        // the taint is gone (`reconcile`).
        let seen_tainted = a.seen_tainted(&set.fixes);
        let on_taint = set.fixes.fence_on_taint
            && crate::core::fencing::fences_on_taint(&judged, seen_tainted);
        if on_taint != a.on_taint {
            a.on_taint = on_taint;
            if !on_taint && !judged.cut_off {
                // The taint is gone: its plans are over, and a partition that follows plans
                // anew (the steps of pods released to the kubelet are not taken).
                a.steps.clear();
                // As `agent::quorum`: the peers' reads of earlier partitions with it.
                if set.fixes.reads_forgotten {
                    a.reads = quorum::TaintReads::default();
                }
            }
            self.log(|| format!("n{i} fences on its taint: {on_taint}"));
        }
        if set.fixes.fence_on_taint && judged.reachable && !on_taint && !a.fenced.is_empty() {
            // Reconciled: fenced pods still in the API are the kubelet's again.
            a.fenced.clear();
            a.durability.changed();
        }
        let mut next: Vec<Duration> = Vec::new();
        next.extend(leader_wake);
        if !judged.cut_off && a.gate.verdict.is_some() {
            a.gate = Gate::default();
            a.stop_due_tolerated = None;
            a.durability.changed();
        }
        if !judged.cut_off {
            a.node_path = Default::default();
            // As `agent::quorum`: the times read are of the partition that ended.
            a.node_reads = Default::default();
        }
        if (judged.cut_off || on_taint)
            && let Some(contact) = judged.counted
        {
            let policy = FencePolicy {
                node_monitor_grace_period: set.grace,
                node_monitor_period: set.monitor_period,
                safety_margin: set.safety_margin,
                grace_cap: set.grace_cap,
                mode: Mode::Enforce,
                kubelet_lag: set.kubelet_lag,
            };
            let (verdict, policy) = if on_taint {
                let untainted = a.reads.untainted_at;
                let verdict = fence_plan::QuorumVerdict::Tainted { untainted };
                (verdict, policy.on_taint())
            } else {
                if a.next_round.is_none_or(|t| now >= t) {
                    // As `agent::quorum`: each round probes the kubelet's path beside its
                    // questions; its answer takes no time here.
                    if set.fixes.node_path {
                        a.node_path.note(self.reaches_api(i), now, set.renew);
                    }
                    self.round(i, &mut a);
                    a.next_round = Some(now + set.peer_interval);
                }
                if let Some(t) = a.next_round {
                    next.push(t);
                }
                let held_from = a.gate.held_from.filter(|_| set.fixes.taint_outlasts_hold);
                let verdict = quorum::planning(
                    a.gate.verdict.as_ref(),
                    (a.gate.held_at, held_from),
                    (a.reads.untainted_at, a.stop_due_tolerated),
                    a.reads.tainted && set.fixes.taint_during_hold,
                    set.request_timeout,
                );
                (verdict, policy)
            };
            // As `agent::fence_task`: the taint's `timeAdded` read on this node's wall clock, or
            // when this run first saw it if that is earlier.
            // Each with the `timeAdded` it counts from, where it does.
            let moment = moment_off(now, a.wall_offset);
            let own = a
                .taint_view
                .filter(|_| set.fixes.seen_taint)
                .and_then(|(added, seen)| {
                    let on_wall = moment.mono_at(wall(added));
                    fence_plan::taint_counted(Some(on_wall), seen).map(|t| (t, Some(wall(added))))
                });
            // And the taint's `timeAdded` the peers read (`quorum::NodeReads`).
            let peers = a
                .node_reads
                .tainted(moment)
                .map(|t| (t, a.node_reads.taint_added.map(|r| r.wall)));
            let tainted = fence_plan::earliest_added(own, peers);
            // Not cut off, a taint added after the peers' latest read without it counts from its
            // own time (or that read's), even if later than the count from contact.
            let after_read = fence_plan::after_read(tainted, a.reads.untainted_at, set.grace)
                .filter(|_| set.fixes.taint_after_read && !judged.cut_off);
            // Else, if earlier, the latest round before the peers read the taint that read the
            // Node without it; not while this run's own view is fresh, not cut off.
            let read = a.reads.tainted_from();
            let read = read.filter(|_| judged.cut_off || !set.fixes.own_view_at_return);
            let tainted =
                after_read.or_else(|| fence_plan::earliest_added(tainted, read.map(|t| (t, None))));
            // As `agent::fence_task`'s `not_ready`: the not-ready taint its view last showed.
            let not_ready = a
                .not_ready_view
                .filter(|_| set.fixes.not_ready_kept)
                .and_then(|(added, seen)| {
                    fence_plan::taint_counted(Some(moment.mono_at(wall(added))), seen)
                        .map(|t| (t, Some(wall(added))))
                });
            // Without either taint, a Ready=False its kubelet posted counts as the not-ready
            // taint added at the post (stamped on this node's clock: read back exactly).
            let not_ready = not_ready.or_else(|| {
                a.ready_false_view
                    .filter(|_| {
                        set.fixes.ready_false_queued
                            && a.taint_view.is_none()
                            && a.not_ready_view.is_none()
                    })
                    .and_then(|(posted, seen)| fence_plan::taint_counted(Some(posted), seen))
                    .map(|t| (t, None))
            });
            let swapped_from = a.swapped_from.filter(|_| set.fixes.not_ready_kept);
            // And the not-ready taint the peers read (`quorum::NodeReads`), as
            // `agent::fence_task`'s `tainted`.
            let taints = fence_plan::Taints {
                unreachable: tainted.map(|(t, _)| t),
                not_ready: not_ready.map(|(t, _)| t),
                swapped_from: swapped_from.map(|(t, nr)| (moment.mono_at(wall(t)), nr)),
                added: fence_plan::TaintsAdded {
                    unreachable: tainted.and_then(|(_, added)| added),
                    not_ready: not_ready.and_then(|(_, added)| added),
                    swapped_from: swapped_from.map(|(t, _)| wall(t)),
                },
                unreachable_after_read: after_read.is_some(),
            }
            .with_not_ready_read(a.node_reads.not_ready(moment));
            // As `agent::fence_task`: a kubelet renewal the peers read after this run's own
            // requests stopped reaching the API server moves the count.
            let read = a
                .renewal_read
                .filter(|_| !on_taint && set.fixes.kubelet_heard_after)
                .map(|h| h.contact(moment_off(now, a.wall_offset)));
            // And so does the latest instant the probes of the kubelet's path prove it renewed.
            let read = read.max(a.node_path.kubelet_by.filter(|_| !on_taint));
            let (contact, policy) = fencing::counted_with_kubelet(
                contact,
                a.contact.last_contact,
                read,
                set.renew,
                &policy,
            );
            // As `agent::fence_task`: the latest the control plane may have heard the kubelet.
            let latest = contact.max(a.contact.last_contact.unwrap_or_default());
            let latest = if set.fixes.swap_latest {
                latest
            } else {
                contact
            };
            // As `agent::fence_task`: a Node recorded Unknown is queued for the taint.
            let queued = a
                .unknown_view
                .filter(|_| set.fixes.unknown_queued && a.taint_view.is_none())
                .and_then(|(u, seen)| {
                    fence_plan::taint_counted(Some(moment.mono_at(wall(u))), seen)
                });
            // And one the peers read on it without the taint.
            let queued = fence_plan::taint_counted(queued, a.node_reads.queued(moment));
            let contact = fence_plan::PlanContact {
                counted: fence_plan::queued_contact(contact, queued, &policy),
                latest: fence_plan::queued_contact(latest, queued, &policy),
            };
            let verdict = if on_taint {
                verdict
            } else {
                a.node_path.verdict(verdict)
            };
            // The later of its own reads' proof and its peers' (`agent::fence_task`).
            let timers_from = a.leader_reads.bound(a.leader.timers_from());
            a.plans = fence_plan::plan(&a.known, contact, taints, timers_from, &policy, &verdict);
            if !set.fixes.not_ready_only {
                // Reverted: a pod that tolerates unreachable forever is never planned.
                for p in &mut a.plans {
                    if let fence_plan::Plan::Stop { reason, .. } = &p.plan
                        && reason.contains(NOT_READY_ONLY)
                    {
                        p.plan = fence_plan::Plan::Never {
                            reason: NOT_READY_ONLY.into(),
                        };
                    }
                }
            }
            // As `agent::fence_task`: a SIGTERM waits while the peers read nothing from the API
            // server they say they reach, or while an enforce in doubt has no taint read.
            let waits = matches!(verdict, fence_plan::QuorumVerdict::Enforce { .. })
                && quorum::sigterm_waits(
                    a.gate.verdict.as_ref(),
                    &a.server_reads,
                    a.reads.tainted,
                    &set.fixes,
                );
            if a.steps.wait_sigterm(waits) {
                a.waits = if waits {
                    Some((now, None))
                } else {
                    a.waits.map(|(from, _)| (from, Some(now)))
                };
                self.log(|| format!("n{i} SIGTERMs wait for a read: {waits}"));
            }
            // As `agent::fence_task`: cut off after a hold, the steps wait a moment while a peer
            // that says it reaches the API server has not read the leader Lease since it lost it.
            let held = judged.cut_off && !on_taint && a.gate.held_from.is_some();
            let awaited = if set.fixes.peer_leader_read {
                a.leader_reads
                    .read_awaited(held, &mut a.peer_read_pending_since, now)
            } else {
                None
            };
            let due = if awaited.is_some() {
                Vec::new()
            } else {
                a.steps.due(&a.plans, &a.fenced, now)
            };
            for due in due {
                // How much of the time since its planned instant the SIGTERM waited.
                let planned = now.saturating_sub(due.late);
                if let (Step::Sigterm, Some((from, until))) = (due.step, a.waits)
                    && until.is_none_or(|u| u > planned)
                {
                    let waited = until.unwrap_or(now).saturating_sub(from.max(planned));
                    let ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
                    self.out.sigterm_waits_ms.push(ms);
                }
                self.take_step(i, &mut a, &due.uid, due.step, due.eviction_time);
            }
            if let Some(t) = a.steps.next_due(&a.plans, &a.fenced) {
                next.push(t.max(awaited.unwrap_or(now)));
            }
        }
        if (judged.cut_off || on_taint) && !a.fenced.is_empty() {
            // The fence task's sweep (`terminate::keep_dead`, every 250 ms while cut off): a
            // fenced pod whose containers the kubelet started again (it reached the API server
            // for a moment, too short to count as contact) is killed again.
            for p in 0..self.pods.len() {
                let pod = &self.pods[p];
                if pod.node == i && pod.running && a.fenced.contains(&pod.uid) {
                    self.pods[p].running = false;
                    self.log(|| format!("n{i} sweeps pod {p} again"));
                    if self.pods[p].deleted_by_controller.is_some() {
                        self.ran_twice(p, true);
                    }
                }
            }
        }
        let cadence = Cadence::for_renew(set.renew);
        let waited = a.link.unanswered(now, cadence.renew);
        a.durability
            .unanswered(waited.filter(|_| set.fixes.unanswered_handed_on));
        let what = a.durability.due(a.cut_off, now, cadence);
        if what != Write::Nothing {
            let disk = &mut self.disks[i];
            let m = moment_off(now, a.wall_offset);
            // As `agent::fence_task` writes the contact file: on the system clock's scale.
            let run_scale = scale_of(i, a.wall_offset);
            let system = if self.set.fixes.system_scale_written {
                scale_of(i, self.clock_offset[i])
            } else {
                run_scale
            };
            let written = a
                .link
                .last_contact_wall(m)
                .map(|w| clock::on_system_scale(w, run_scale, system));
            disk.last_contact = written.map(|(w, _)| w);
            disk.contact_scale = written.map_or(run_scale, |(_, s)| s);
            if what == Write::Contact {
                disk.unanswered = a.durability.record().map(|w| (disk.last_contact, w));
            }
            if what == Write::State {
                disk.state_scale = run_scale;
                disk.cut_off_since = a.link.cut_off_since();
                disk.counted_before = a.link.counted_before_return(m);
                disk.verdict = a.gate.verdict.clone();
                disk.held_at = a.gate.held_at.map(|h| m.wall_at(h));
                disk.held_from = a.gate.held_from.map(|h| m.wall_at(h));
                disk.pods = a.known.clone();
                disk.fenced = a.fenced.clone();
                disk.taint_added = a.taint_view.map(|(t, _)| t);
                disk.not_ready_added = a.not_ready_view.map(|(t, _)| t);
                disk.swapped_from = a.swapped_from;
                disk.unknown_since = a.unknown_view.map(|(u, _)| u);
                disk.ready_false_since = a.ready_false_view.map(|(f, _)| f);
                disk.peers_read = a.server_reads.ever;
            }
            a.durability.written(what, true, now);
        }
        if let Some(t) = a.durability.next_due(a.cut_off, cadence) {
            next.push(t.max(now));
        }
        if let Some(t) = a.link.next_change(&seen, now, set.unreachable_after) {
            next.push(t);
        }
        if set.fixes.unanswered_handed_on
            && let Some(t) = a.link.unanswered_from(cadence.renew)
        {
            next.push(t);
        }
        if self.probing(&a)
            && let Some(t) = a.next_probe
        {
            next.push(t);
        }
        // A change of the API's pods its watch has not delivered yet (`pods_changed_on`).
        if self.agent_reaches(i) && a.view_at.is_some_and(|v| v < self.pods_changed[i]) {
            next.push(self.pods_changed[i] + self.s.agent_lag(i));
        }
        let run = a.run;
        self.agents[i] = Some(a);
        if let Some(t) = next.into_iter().filter(|t| *t > now).min() {
            self.wake(i, run, t);
        } else if judged.cut_off {
            // Nothing due: the fence task still wakes at least every second while cut off.
            self.wake(i, run, now + Duration::from_secs(1));
        }
    }

    /// The quorum task's round for agent `i`: ask the peers its selection names, hear the answers
    /// of those whose agents run and whose peer links are up at both ends.
    /// What the peers named answer agent `i`, as its asker hears them; each one flagged in
    /// `lease` reads this node's kubelet Lease while it answers, if it says it reaches the API
    /// server and its read is answered (`peer::serve_reading`).
    /// Each question flagged in `listers` asks about the pods in `pods` (`unlisted::unlisted`):
    /// a peer that reaches the API server lists those of them bound to this node.
    fn ask(
        &self,
        i: usize,
        peers: &[Peer],
        (lease, zoned): (&[bool], &[bool]),
        (pods, listers): (&[String], &[bool]),
    ) -> Vec<(Peer, Heard)> {
        let now = self.now;
        peers
            .iter()
            .cloned()
            .enumerate()
            .map(|(k, p)| {
                let j: usize = p.node[1..].parse().unwrap_or(usize::MAX);
                let answer = self
                    .agents
                    .get(j)
                    .and_then(|x| x.as_ref())
                    .filter(|_| self.peer_link[i] && self.peer_link[j]);
                let h = match answer {
                    Some(b) => {
                        let age =
                            quorum::answer_age(contact_age(b, now), b.node_path.heard_age(now));
                        let mut r =
                            quorum::answer(&p.node, &p.zone, age, self.set.unreachable_after);
                        if lease.get(k).copied().unwrap_or(false)
                            && r.reachable
                            && self.agent_reaches(j)
                        {
                            r.kubelet_renewed = self.kubelet_renew_time[i];
                        }
                        // What its reads of the controller-manager's leader Lease prove
                        // (`agent::connected`'s answer). A simulated agent reads the Lease in
                        // the step that finds its link back.
                        if self.set.fixes.peer_leader_read {
                            r.leader = quorum::PeerLeader::answered(
                                b.leader.timers_from(),
                                (
                                    b.leader_pending,
                                    self.set.fixes.peer_leaderless && b.leader.leaderless(),
                                ),
                                now,
                                r.reachable,
                            );
                        }
                        // Its own kubelet's last renewal as its readers read it
                        // (`agent::connected`'s answer).
                        if self.set.fixes.peer_kubelet_ordered {
                            r.kubelet_age = quorum::kubelet_answered(
                                b.renewal_read.map(|h| (h.stamped, h.arrived)),
                                b.contact.last_contact.max(b.contact_before),
                                moment_off(now, b.wall_offset),
                                moment_off(b.started, b.wall_offset).wall,
                                self.steady_run(j, b),
                            );
                        }
                        // Every question asks for this node's Node (`peer::ask_all_reading`;
                        // a build before `taint_read` asked for none).
                        if self.set.fixes.taint_read && r.reachable && self.agent_reaches(j) {
                            r.node_read = Some(quorum::NodeRead {
                                tainted: self.cp.taint(i).is_some()
                                    || (self.set.fixes.not_ready_read
                                        && self.cp.not_ready_taint(i).is_some()),
                                taint_added: self.cp.taint(i).map(|t| wall(stored(t))),
                                not_ready_added: self
                                    .cp
                                    .not_ready_taint(i)
                                    .filter(|_| self.set.fixes.not_ready_time_read)
                                    .map(|t| wall(stored(t))),
                                unknown_since: self.cp.unknown_since(i).map(|u| wall(stored(u))),
                                ready_false: self.set.fixes.ready_false_read
                                    && self.cp.false_since(i).is_some(),
                            });
                        }
                        // Asked of the one `quorum::zone_readers` chooses. The agent's reader
                        // answers from a list of the zone up to a second old
                        // (`api::node::NodeTaints::zone_record`), beside a fresh read of the
                        // asker's Node; here both are read as they stand.
                        if zoned.get(k).copied().unwrap_or(false)
                            && r.reachable
                            && self.agent_reaches(j)
                        {
                            r.zone_recorded = Some(self.cp.zone_record(
                                i,
                                |u| wall(stored(u)),
                                self.set.fixes.not_ready_read,
                            ));
                        }
                        let lists = listers.get(k).copied().unwrap_or(false);
                        if lists && !pods.is_empty() && r.reachable && self.agent_reaches(j) {
                            let listed = self.pods.iter().filter(|p| {
                                p.node == i
                                    && p.created <= now
                                    && p.left_api.is_none()
                                    && pods.contains(&p.uid)
                            });
                            // Without the creation time, as `peer::Answer` sends a pod.
                            let sent = |p| FencePod {
                                created: None,
                                ..self.fence_pod(p)
                            };
                            r.pods = Some(listed.map(sent).collect());
                        }
                        Heard::Report(r)
                    }
                    None => Heard::Silent,
                };
                (p, h)
            })
            .collect()
    }

    /// Whether the wall clock of agent `i`'s node has read as this run's wall scale since the
    /// previous run's last write, as the agent's quorum task checks it (`clock::steady`).
    fn steady(&self, i: usize, a: &Agent) -> bool {
        crate::core::clock::steady(
            scale_of(i, a.wall_offset),
            a.previous_scale,
            self.clock_offset[i].saturating_sub(a.wall_offset),
        )
    }

    /// Whether the wall clock of agent `i`'s node has read as this run's wall scale since the run
    /// began, as the agent's quorum task checks it against its own scale (`clock::steady`): a
    /// renewal stamped during the run is then placed on its clock.
    fn steady_run(&self, i: usize, a: &Agent) -> bool {
        let scale = scale_of(i, a.wall_offset);
        let offset = self.clock_offset[i].saturating_sub(a.wall_offset);
        crate::core::clock::steady(scale, scale, offset)
    }

    /// As `agent::quorum` at a start with no contact yet: a few peers read this node's kubelet
    /// Lease, and a kubelet unheard for longer than `quorum::kubelet_unheard` allows is a
    /// failure of this node's link (`Contact::observe`), as a request's timeout would be.
    fn probe_at_start(&mut self, i: usize, a: &mut Agent) {
        let now = self.now;
        let readers = quorum::start_readers(
            &self.asked_lists[i],
            &self.node_zones[i].listed,
            self.unable(a),
        );
        let heard = self.ask(i, &readers, (&vec![true; readers.len()], &[]), (&[], &[]));
        quorum::note_unable(&mut a.unable, &heard, self.set.fixes.silent_readers_first);
        self.read_renewal(i, a, &heard);
        if let Some(age) = quorum::kubelet_unheard(
            heard.iter().map(|(_, h)| h),
            moment_off(now, a.wall_offset),
            self.steady(i, a),
            self.quorum_policy.unheard_after,
        ) {
            a.contact.observe(Evidence::Failure, now, now);
            self.log(|| {
                format!(
                    "n{i} starts cut off: peers read its kubelet unheard for {:.1}s",
                    age.as_secs_f64()
                )
            });
        }
    }

    /// As `agent::quorum`'s `note_renewal` and the fence task: the latest kubelet renewal the
    /// peers read for this run counts as a heartbeat seen (`quorum::kubelet_renewal`).
    fn read_renewal(&self, i: usize, a: &mut Agent, heard: &[(Peer, Heard)]) {
        // Stamped during this run, for the count (`fencing::counted_with_kubelet`): placed when
        // the clock held since this run began.
        let steady_run = self.steady_run(i, a);
        if let Some(stamped) = quorum::kubelet_renewal(heard.iter().map(|(_, h)| h), steady_run)
            && a.renewal_read.is_none_or(|k| k.stamped < stamped)
        {
            a.renewal_read = Some(Heartbeat {
                stamped,
                arrived: self.now,
            });
        }
        // As a heartbeat seen only while this run has had no contact of its own.
        if a.contact.last_contact.is_some() {
            return;
        }
        let steady = self.steady(i, a) && self.set.fixes.renewal_counted;
        let Some(stamped) = quorum::kubelet_renewal(heard.iter().map(|(_, h)| h), steady) else {
            return;
        };
        if a.kubelet_read.is_none_or(|k| k.stamped < stamped) {
            a.kubelet_read = Some(Heartbeat {
                stamped,
                arrived: self.now,
            });
        }
    }

    /// Whether peers read agent `a`'s kubelet Lease for its start, as `agent::quorum`'s `probing`
    /// has it: the fix on, no answer from the API server yet, a contact on disk, not cut off,
    /// and within `unreachableAfter` of the start.
    fn probing(&self, a: &Agent) -> bool {
        self.set.fixes.unheard_at_start
            && a.contact.reach == Reach::Unknown
            && a.contact_before.is_some()
            && self.now < a.started + self.set.unreachable_after
            && a.link.cut_off_since().is_none()
    }

    /// The peers agent `a` asks last to read its Lease (`quorum::lease_readers`): none with
    /// that fix reverted.
    fn unable<'a>(&self, a: &'a Agent) -> &'a quorum::Unable {
        static NONE: std::sync::LazyLock<quorum::Unable> =
            std::sync::LazyLock::new(quorum::Unable::default);
        if self.set.fixes.readers_able {
            &a.unable
        } else {
            &NONE
        }
    }

    fn round(&mut self, i: usize, a: &mut Agent) {
        let now = self.now;
        let set = self.set;
        // Every node but this one, as the agent's peer list gives them (the same all run long).
        let mine = &self.peer_lists[i];
        // As `agent::fence_task` finds them: the pods whose processes run here (their cgroups)
        // that its view lacks, asked about while cut off.
        let running = self.pods.iter().filter(|p| p.node == i && p.running);
        let asked = if set.fixes.pods_read && a.cut_off {
            unlisted::unlisted(running.map(|p| p.uid.as_str()), &a.known, &a.settled)
        } else {
            Vec::new()
        };
        let ask = |peers: &[Peer], flags: (&[bool], &[bool]), listers: &[bool]| {
            self.ask(i, peers, flags, (&asked, listers))
        };
        // `quorum::select` of that list, as the agent asks each round (the same each round),
        // a few of them asked to read this node's kubelet Lease while this run has no contact,
        // and as few to list its pods while it asks about some.
        let zone = &self.node_zones[i];
        let readers = |skip: bool| {
            quorum::lease_readers(&self.asked_lists[i], &zone.listed, skip, self.unable(a))
        };
        let (lease, listers) = (
            // As `agent::quorum`: every round has the Lease read (before that fix, only a run with
            // no contact of its own). The agent asks a run with a contact in a question of its
            // own beside the round's, so that a read's wait makes no answer late; here answers
            // take no time, and the two are alike.
            readers(a.contact.last_contact.is_some() && !set.fixes.kubelet_heard_after),
            readers(asked.is_empty()),
        );
        // As `agent::quorum`: two peers read the zone as recorded, unless the list shows it
        // large (one before `two_zone_readers`).
        let zoned = quorum::zone_readers(
            &self.asked_lists[i],
            &zone.listed,
            !quorum::asks_zone_record(&set.fixes, mine, &zone.listed),
            self.unable(a),
            if set.fixes.two_zone_readers {
                quorum::ZONE_READERS
            } else {
                1
            },
        );
        let mut heard = ask(&self.asked_lists[i], (&lease, &zoned), &listers);
        if a.contact.last_contact.is_none() || !asked.is_empty() || set.fixes.kubelet_heard_after {
            quorum::note_unable(&mut a.unable, &heard, set.fixes.silent_readers_first);
        }
        // As `agent::quorum`: the kubelet renewal the earlier rounds read orders this node's
        // silence (this round's reads are noted after it, as the agent's arrive beside it).
        let kubelet_read = a.renewal_read.map(|h| h.stamped);
        self.read_renewal(i, a, &heard);
        let own = a.contact.last_contact.max(a.contact_before);
        // As the agent's quorum task reads it: the system clock against this run's wall scale,
        // and the previous run's scale as this run read it at its start.
        let steady = self.steady(i, a);
        let ages = |heard: &[(Peer, Heard)]| {
            quorum::own_ages(
                a.contact.last_contact,
                a.contact_before,
                a.heard_bound,
                quorum::kubelet_heard(
                    heard.iter().map(|(_, h)| h),
                    moment_off(now, a.wall_offset),
                    steady,
                ),
                &set.fixes,
                |t| now.saturating_sub(t),
            )
        };
        // Whether this node's Node carried the unreachable taint when last seen (or the not-ready
        // one, `state::StoredNode::controller_tainted`), or (as `agent::quorum`'s `ask_round`) its
        // peers read it so. (With `taint_read` off no peer reads the Node and `a.reads` stays
        // empty.)
        let reads = a.reads;
        let seen = a.seen_tainted(&set.fixes);
        // As the agent's quorum task builds it (zones as the controller counts them), and asks
        // the rest of the other zones before holding on two peers of each.
        let known = !mine.is_empty();
        let kubelet_age = quorum::kubelet_age(
            kubelet_read,
            moment_off(now, a.wall_offset),
            moment_off(a.started, a.wall_offset).wall,
            self.steady_run(i, a),
        );
        let leaderless = a
            .leader
            .leaderless()
            .then(|| a.unknown_view.map(|(u, _)| wall(u)))
            .flatten();
        // The agent's own round on the answers (`core::quorum::RoundBasis`), which notes in
        // `remembered` which silent peers said "reachable" earlier, and still would.
        let basis = quorum::RoundBasis {
            zone,
            peers: mine,
            seen,
            reads: &reads,
            ages: &ages,
            kubelet_age,
            leaderless,
            unreachable_after: set.unreachable_after,
        };
        let mut round = basis.round(&heard, &mut a.remembered, now);
        let policy = &self.quorum_policy;
        let (mut verdict, rest) = basis.decide_or_ask(&round, &heard, policy, known);
        if !rest.is_empty() {
            heard.extend(quorum::rest_counted(
                &zone.listed,
                ask(&rest, (&[], &[]), &[]),
            ));
            round = basis.round(&heard, &mut a.remembered, now);
            verdict = quorum::decide(&round, policy, known);
        }
        // As `agent::quorum`: how long a taint could have stood before every zone went down,
        // under a hold that stops what was due.
        let tolerated = verdict
            .stops_due()
            .then(|| quorum::zone_down_tolerated(&round, policy))
            .flatten();
        // Each peer that answered "cut off" remembers this node, to nudge it on its return.
        for (p, h) in &heard {
            if let Heard::Report(r) = h
                && !r.reachable
                && let Ok(j) = p.node[1..].parse::<usize>()
                && let Some(b) = self.agents.get_mut(j).and_then(|x| x.as_mut())
                && !b.askers.contains(&i)
            {
                b.askers.push(i);
            }
        }
        // As `agent::fence_task`: the pods a peer listed join the view.
        let read = unlisted::read(&asked, &a.known, round.heard.iter().map(|(_, h)| h));
        a.settled.extend(read.settled);
        if !read.found.is_empty() {
            let uids: Vec<String> = read.found.iter().map(|p| p.uid.clone()).collect();
            a.known.extend(read.found);
            a.durability.changed();
            self.log(|| format!("n{i} peers listed pods its view lacked: {uids:?}"));
        }
        // As `agent::quorum`: what the peers read of this node's Node, whatever the verdict.
        let read = quorum::taint_read(round.heard.iter().map(|(_, h)| h));
        if set.fixes.taint_read && a.reads.note(now, round.heard.iter().map(|(_, h)| h)) {
            self.log(|| format!("n{i} peers read its Node: tainted {read:?}"));
        }
        if set.fixes.node_times_read && a.node_reads.note(now, round.heard.iter().map(|(_, h)| h)) {
            let times = a.node_reads;
            self.log(|| format!("n{i} peers read its Node's times: {times:?}"));
        }
        // And the probes of the kubelet's path: a taint read in this partition ends their hold.
        a.node_path.note_taint(read);
        // As `agent::quorum`: whether the peers that say they reach the API server read from it.
        // The state file keeps whether they ever did: as `agent::fence_task`, a change of the
        // quorum's view is written.
        let ever = a.server_reads.ever;
        if a.server_reads.note(round.heard.iter().map(|(_, h)| h)) && a.server_reads.ever != ever {
            a.durability.changed();
        }
        // And what their reads of the controller-manager's leader Lease prove.
        let proven = a.leader_reads.timers_from;
        if set.fixes.peer_leader_read
            && a.leader_reads.note(now, round.heard.iter().map(|(_, h)| h))
            && a.leader_reads.timers_from != proven
        {
            let from = a.leader_reads.timers_from.unwrap_or_default();
            let from = from.saturating_sub(ORIGIN).as_secs_f64();
            self.log(|| format!("n{i} peers' leader reads: timers from {from:.3}s"));
        }
        let answered = round
            .heard
            .iter()
            .any(|(_, h)| matches!(h, Heard::Report(_)));
        if verdict.is_enforce()
            && answered
            && let (Some(down), Some(c)) = (self.api_down_since, own)
            && c + set.renew + Duration::from_secs(1) >= down
        {
            let reason = verdict.reason().to_string();
            self.log(|| format!("ENFORCE IN OUTAGE: n{i}: {reason}"));
            self.out.violations.push(Violation::EnforceInOutage {
                node: i,
                at: now,
                reason,
            });
        }
        // As `agent::quorum`: for a moment after a nudge's read of the Lease was answered, the
        // renewal it sent is in flight, and a hold does not turn into enforce.
        if set.fixes.renewal_in_flight
            && a.gate.verdict.as_ref().is_some_and(Verdict::is_hold)
            && verdict.is_enforce()
            && a.read_answered_at
                .is_some_and(|t| now < t + quorum::RENEWAL_IN_FLIGHT)
        {
            self.log(|| format!("n{i} would enforce, its renewal in flight: it waits a round"));
            return;
        }
        if a.gate.record(now, verdict.clone()) {
            let word = verdict.word();
            let reason = verdict.reason().to_string();
            self.log(|| format!("n{i} quorum {word}: {reason}"));
            a.durability.changed();
        }
        a.stop_due_tolerated = tolerated.filter(|_| a.gate.verdict.as_ref() == Some(&verdict));
    }

    fn take_step(&mut self, i: usize, a: &mut Agent, uid: &str, step: Step, eviction: Duration) {
        let Some(p) = self.pods.iter().position(|p| p.uid == uid && p.node == i) else {
            return;
        };
        let now = self.now;
        match step {
            Step::Sigterm => {
                if self.pods[p].fence_sigterm.is_none() {
                    self.pods[p].fence_sigterm = Some(now);
                    self.pods[p].stopped_under =
                        a.gate.verdict.as_ref().map(|v| v.reason().to_string());
                    self.out.stops += 1;
                    let judge_at = eviction.max(now) + self.set.tolerance;
                    self.at(
                        judge_at,
                        Ev::Judge {
                            pod: p,
                            eviction,
                            sigterm: now,
                        },
                    );
                }
                self.log(|| format!("n{i} SIGTERM pod {p}"));
            }
            Step::Kill => {
                a.fenced.insert(uid.to_string());
                a.durability.changed();
                let pod = &mut self.pods[p];
                pod.fence_kill.get_or_insert(now);
                if pod.running {
                    pod.running = false;
                    if pod.deleted_by_controller.is_some() {
                        self.ran_twice(p, true);
                    }
                }
                self.log(|| format!("n{i} kills pod {p}"));
            }
        }
    }

    /// Pod `p`, deleted by the control plane, ran on its node until now: twice, if its
    /// replacement could start before.
    fn ran_twice(&mut self, p: usize, killed_late: bool) {
        let (Some(deleted), Some(replaced)) =
            (self.pods[p].deleted_by_controller, self.pods[p].replaced_at)
        else {
            return;
        };
        if replaced >= self.now {
            return;
        }
        let ran_for = self.now - replaced;
        let transient_taint = self.pods[p]
            .deleted_for
            .is_some_and(|t| self.transient.contains(&(self.pods[p].node, t)));
        // The agent did not know the pod because its watch delivered the pod's creation only
        // after the link was cut (not for a view that was blind for another reason).
        let node = self.pods[p].node;
        let lag = self.s.agent_lag(node);
        let created = self.pods[p].created - ORIGIN;
        let late_watch = self.pods[p].fence_sigterm.is_none()
            && self
                .last_cut(node, self.now)
                .is_some_and(|cut| created <= cut && cut < created + lag)
            && self.agents[node]
                .as_ref()
                .is_some_and(|a| a.known.iter().all(|k| k.uid != self.pods[p].uid));
        let agent_down = self.agent_down[node]
            .iter()
            .map(|&(from, to)| {
                let (from, to) = (from.max(replaced), to.unwrap_or(self.now).min(self.now));
                to.saturating_sub(from)
            })
            .sum();
        // Stopped within the reaction's bound after the first return, having held through a
        // deletion no agent could tell from an outage.
        let reaction = self.pods[p]
            .held_at_deletion
            .then(|| self.return_after_every_cut(deleted))
            .flatten()
            .map(|back| self.now.saturating_sub(back));
        let every_node_cut_off = reaction.filter(|r| *r <= self.set.cut_off_reaction());
        self.out.violations.push(Violation::RunningTwice {
            pod: p,
            deleted,
            ran_for,
            killed_late,
            transient_taint,
            late_watch,
            agent_down,
            every_node_cut_off,
        });
        self.log(|| {
            format!(
                "RUNNING TWICE: pod {p} ran {:.3}s past its deletion{}{}{}{}",
                ran_for.as_secs_f64(),
                if killed_late { " (killed late)" } else { "" },
                if late_watch {
                    " (its agent's pod watch had not delivered it when the link was cut)"
                } else {
                    ""
                },
                match reaction {
                    Some(r) => format!(
                        " (every node was cut off at its deletion, its agent held; stopped {:.3}s after the first return{})",
                        r.as_secs_f64(),
                        if every_node_cut_off.is_some() { "" } else { ", later than the agents can react" }
                    ),
                    None => String::new(),
                },
                if agent_down.is_zero() {
                    String::new()
                } else {
                    format!(
                        " ({:.3}s of it while its agent was not running)",
                        agent_down.as_secs_f64()
                    )
                }
            )
        });
    }

    /// At the end: a pod still running on a node cut off after the control plane deleted it ran
    /// twice until then.
    fn finish(&mut self) {
        for d in std::mem::take(&mut self.deferred) {
            let pod = d.pod;
            if self.pods[pod].deleted_for == Some(d.taint) {
                self.log(|| format!("stop of pod {pod} was early: the controller deleted it for that taint once the API server returned"));
            } else {
                self.log(|| {
                    format!(
                        "stop of pod {pod}: the control plane never deleted it for the taint it had"
                    )
                });
                self.condemn_or_excuse(pod, d.eviction, d.sigterm, d.judged, true);
            }
        }
        for p in 0..self.pods.len() {
            if self.pods[p].running && self.pods[p].deleted_by_controller.is_some() {
                self.ran_twice(p, false);
            }
        }
    }
}

/// Whether agent `a` answers its peers "reachable" at `now` (`quorum::answer`).
fn answers_reachable(a: &Agent, now: Duration, unreachable_after: Duration) -> bool {
    quorum::reaches(contact_age(a, now), unreachable_after)
}

/// How old agent `a`'s latest contact is at `now`, as its peer endpoint counts it (this run's, or
/// the one on its disk).
fn contact_age(a: &Agent, now: Duration) -> Option<Duration> {
    a.contact
        .last_contact
        .max(a.contact_before)
        .map(|c| now.saturating_sub(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    /// Node 0 stops a pod at 8.5 s. Node 1 is cut off from its peers and, by two overlapping
    /// cuts, from the API server then; node 2 only from the API server. The world keeps node 1's
    /// link up through the cut in effect at the stop (both its beginnings and its first end go),
    /// leaves its earlier cut, its peer cut and node 2 as they were.
    #[test]
    fn a_silent_node_keeps_its_link_through_the_cut_in_effect_at_the_stop() {
        let mut w = Scenario::generate(1);
        w.zones = vec![3];
        w.events = vec![
            (s(1_000), Event::CutApi(1)),
            (s(2_000), Event::HealApi(1)),
            (s(5_000), Event::CutApi(1)),
            (s(5_000), Event::CutPeers(1)),
            (s(6_000), Event::CutApi(1)),
            (s(7_000), Event::CutApi(2)),
            (s(8_000), Event::CutApi(0)),
            (s(9_000), Event::HealApi(1)),
            (s(9_000), Event::HealPeers(1)),
            (s(9_500), Event::HealApi(1)),
            (s(10_000), Event::HealApi(2)),
        ];
        let stop = s(8_500);
        let silent = silent_and_cut(&w, stop, 0);
        assert_eq!(silent, [1]);
        silent_kept_api(&mut w, &silent, stop);
        assert_eq!(
            w.events,
            [
                (s(1_000), Event::CutApi(1)),
                (s(2_000), Event::HealApi(1)),
                (s(5_000), Event::CutPeers(1)),
                (s(7_000), Event::CutApi(2)),
                (s(8_000), Event::CutApi(0)),
                (s(9_000), Event::HealPeers(1)),
                (s(9_500), Event::HealApi(1)),
                (s(10_000), Event::HealApi(2)),
            ]
        );
        // There, node 1 reaches the API server at the stop: silent, but not cut off.
        assert!(links_at(&w, &w.events, stop)[1]);
        assert!(silent_and_cut(&w, stop, 0).is_empty());
    }
}
