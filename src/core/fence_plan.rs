//! The fence planner (docs/fence.md): when the control plane cannot hear from this node, when will
//! it delete each pod, and so when must the pod be stopped here. Pure: pods, last contact, policy,
//! the peers' quorum verdict and `now` in; one plan per pod out, each with a reason.
//!
//! Facts mirrored (docs/semantics.md §4–5, §9–10): after `nodeMonitorGracePeriod` without a
//! heartbeat the node is Unknown and gets `node.kubernetes.io/unreachable:NoExecute`; the
//! taint-eviction controller deletes a pod after the NoExecute delay of its tolerations for that
//! taint (the same `no_execute_outcome` `explain` uses). The pass that writes the node Unknown
//! does not queue it for the taint; the next one, a monitor period later, does. Everything else
//! only adds delay (the passes' phase, rate limits), so `last contact + grace + monitor period +
//! delay` is the earliest deletion: stopping the pod by then is never late. A taint already on
//! the Node counts from its own time when that is earlier: the unreachable one, and the not-ready
//! one, whose timers the controller's swap keeps ([`Taints`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::core::qos::QosClass;
use crate::core::taint::{NoExecuteOutcome, Toleration, not_ready_delay, unreachable_delay};

/// Where fence planning counts monotonic instants from: this far before the present, so a last
/// contact made before the process began (read back after a restart) still maps to its true
/// instant on the monotonic scale.
pub const MONO_BASE: Duration = Duration::from_secs(400 * 24 * 3600);

/// Annotation with which a pod opts out of fencing (value `"false"` or `"disabled"`).
pub const OPT_OUT_ANNOTATION: &str = "nodewarden.io/fence";

/// What the planner knows of a pod bound to this node.
///
/// Also the one definition of a pod in the state file (`state`: the pods the fence resumes from
/// after a restart), through the serde attributes here, so the planner's view and what is kept
/// of it cannot drift apart. Serde is a crate that describes data, not a layer of ours: no I/O
/// comes with it, and the file itself (its other fields, versions, writing) stays in `state`.
/// The names on disk are the API's, as earlier builds wrote them; renaming a field here needs a
/// `rename` to keep them (tests/state.rs loads a file an earlier build wrote).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FencePod {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    pub tolerations: Vec<Toleration>,
    /// `spec.terminationGracePeriodSeconds` (the API defaults it to 30).
    #[serde(rename = "terminationGracePeriodSeconds")]
    pub termination_grace_seconds: i64,
    /// The controller owner's kind, e.g. `ReplicaSet`, `DaemonSet`.
    pub owner_kind: Option<String>,
    /// A mirror of a static pod (`kubernetes.io/config.mirror`) or otherwise not from the API.
    pub static_or_mirror: bool,
    #[serde(rename = "qosClass")]
    pub qos: QosClass,
    pub opted_out: bool,
    /// Succeeded or Failed: nothing runs.
    pub terminal: bool,
    /// `metadata.creationTimestamp`, on the control plane's clock: no taint eviction timer of
    /// the pod starts before it (the controller starts one for a pod created on a Node already
    /// tainted when it handles the pod, docs/semantics.md §4.3). `None`: not known (a state file
    /// or a peer older than the field, a time RFC 3339 cannot hold), and not counted.
    #[serde(
        rename = "creationTimestamp",
        default,
        skip_serializing_if = "Option::is_none",
        with = "rfc3339"
    )]
    pub created: Option<std::time::SystemTime>,
}

/// An optional time as RFC 3339 with nanoseconds (as the state file writes its other times); one
/// that RFC 3339 cannot hold (before 1970, after 9999) is written as none, and a text that is not
/// RFC 3339 is refused.
mod rfc3339 {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::SystemTime;

    pub fn serialize<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
        match t.and_then(text) {
            Some(text) => s.serialize_str(&text),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SystemTime>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| humantime::parse_rfc3339(&text).map_err(serde::de::Error::custom))
            .transpose()
    }

    /// `t` as RFC 3339 with nanoseconds, if it can be written so.
    pub fn text(t: SystemTime) -> Option<String> {
        use std::fmt::Write;
        t.duration_since(std::time::UNIX_EPOCH).ok()?;
        let mut text = String::new();
        write!(text, "{}", humantime::format_rfc3339_nanos(t)).ok()?;
        Some(text)
    }
}

/// `t` when RFC 3339 can hold it (1970 to 9999), as a pod's creation time is kept
/// ([`FencePod::created`]).
pub fn representable(t: std::time::SystemTime) -> Option<std::time::SystemTime> {
    rfc3339::text(t).map(|_| t)
}

/// How the fence acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Enforce,
    /// Plans, logs and counts what it would do; kills nothing.
    DryRun,
    Off,
}

/// What the peers in this zone say (docs/fence.md §5, `core::quorum`). `NotConsulted` plans what
/// a partition starting now would do (while connected, for the metrics), as `Enforce` would.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuorumVerdict {
    NotConsulted,
    /// The control plane evicts this node's pods: stop them on time. After a hold, the control
    /// plane taints nothing before `not_before`, so eviction times count from there — unless the
    /// hold began (`held_from`) after this node could first be tainted: a taint added before it
    /// outlasts an outage of the API server and a partial disruption alike (docs/semantics.md
    /// §5.3, §5.5: only Ready returning to True or every zone fully disrupted removes it, and in
    /// the latter the control plane taints the node again when it resumes: counting from the
    /// first taint is early there, never late).
    ///
    /// And never before `untainted` (less [`READ_SLACK`]): a peer that reaches the API server
    /// read this node's Node without the unreachable taint after that instant
    /// (`core::quorum::TaintReads`), so any taint that deletes a pod is added later, whatever was
    /// seen before.
    Enforce {
        not_before: Option<Duration>,
        held_from: Option<Duration>,
        untainted: Option<Duration>,
    },
    /// The control plane keeps this node's pods: nothing may be killed. Except, with `stop_due`,
    /// each pod an enforce after no hold makes due by [`StopDue::by`]: the control plane taints
    /// nothing now, and no taint stood after that instant, but a pod may have been deleted
    /// while one stood before (`core::quorum::Verdict::stops_due`).
    Hold {
        reason: String,
        stop_due: Option<StopDue>,
    },
    /// Not cut off, but this node's Node carries the unreachable taint (docs/fence.md §3): the
    /// control plane deletes each pod once its toleration has run from the taint, whether or not
    /// this node's link holds until then. Counted from the taint, and never before `untainted`
    /// (as for `Enforce`); planned with [`FencePolicy::on_taint`].
    Tainted {
        untainted: Option<Duration>,
    },
}

/// What a hold still stops ([`QuorumVerdict::Hold`]): each pod whose deletion, counted as
/// [`QuorumVerdict::Enforce`] counts it with no hold and with the same read (`untainted`), is due
/// by `by`, and that tolerates the unreachable taint for less than `tolerated_from` seconds when
/// that is known (a pod tolerating it longer cannot have been deleted before the controller
/// removed every taint).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopDue {
    pub by: Duration,
    pub untainted: Option<Duration>,
    pub tolerated_from: Option<u64>,
}

impl QuorumVerdict {
    /// The same verdict without the peers' latest read of the Node (`untainted`), which moves
    /// with every round that reads it: what a record of the plans is made again for.
    pub fn without_reads(&self) -> QuorumVerdict {
        match self {
            QuorumVerdict::Enforce {
                not_before,
                held_from,
                ..
            } => QuorumVerdict::Enforce {
                not_before: *not_before,
                held_from: *held_from,
                untainted: None,
            },
            QuorumVerdict::Tainted { .. } => QuorumVerdict::Tainted { untainted: None },
            other => other.clone(),
        }
    }
}

/// The planner's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FencePolicy {
    /// The control plane's `node-monitor-grace-period` (40s by default here: never late).
    pub node_monitor_grace_period: Duration,
    /// The control plane's `node-monitor-period` (5s upstream and here). The pass that finds a
    /// node's grace period run out writes its Ready Unknown; the next pass, this much later,
    /// queues it for the taint (`processTaintBaseEviction` reads the condition the pass began
    /// with; docs/semantics.md §5.5). Zero counts the taint from the write itself.
    pub node_monitor_period: Duration,
    /// Stop this much before the eviction time.
    pub safety_margin: Duration,
    /// Cap on the SIGTERM grace given to a pod.
    pub grace_cap: Duration,
    pub mode: Mode,
    /// How much earlier than this agent's last contact the node's own Lease may last have been
    /// renewed ([`kubelet_lag`]): eviction times count from that much before the last contact.
    pub kubelet_lag: Duration,
}

/// How much earlier than the round that read the Node without the taint a deadline counts from
/// (`QuorumVerdict::Enforce::untainted`, `core::quorum::TaintReads`). The read is a fact: the
/// taint comes after it. But counting from it stops each pod within a round or so of its
/// deletion, and an agent killed then is not there to stop it: the packaged unit restarts it 5 s
/// after a failure, and the new run must start and hear its peers before it acts. This much
/// earlier covers such a restart; measured in the simulator (BENCHMARKS.md, nineteenth
/// session), it gives back most of the pods that ran twice while their agent was down, and
/// keeps most of the stops the reads spare.
pub const READ_SLACK: Duration = Duration::from_secs(10);

/// The most SIGTERM grace a pod gets from a plan made on the taint while not cut off
/// ([`QuorumVerdict::Tainted`], [`FencePolicy::on_taint`]).
pub const ON_TAINT_GRACE: Duration = Duration::from_secs(1);

impl FencePolicy {
    /// The policy of a plan made on the taint while not cut off (docs/fence.md §3): the pod is
    /// stopped as late as it can be, at most [`ON_TAINT_GRACE`] of SIGTERM before the kill. The
    /// link may be back for good, and then the controller removes the taint once the kubelet is
    /// heard again (a monitor pass after its next renewal); a stop made a whole grace period
    /// early would stop pods the control plane keeps.
    pub fn on_taint(&self) -> FencePolicy {
        FencePolicy {
            grace_cap: self.grace_cap.min(ON_TAINT_GRACE),
            ..*self
        }
    }

    /// The policy of a plan counted from a kubelet renewal read after this agent's own requests
    /// failed (`core::fencing::counted_with_kubelet`, docs/fence.md §5): as [`Self::on_taint`],
    /// the pod stopped as late as it can be. The kubelet reaches the API server, and each of its
    /// renewals (every renew interval) that a round reads moves the deadlines again; a SIGTERM a
    /// whole grace period early would come before the next one is read, and stop pods the
    /// control plane keeps. Should the kubelet go silent after the renewal read, the kill still
    /// comes by the deletion.
    pub fn kubelet_heard(&self) -> FencePolicy {
        self.on_taint()
    }
}

/// How much earlier than the agent's last contact the kubelet's Lease may last have been renewed.
/// The controller judges the node by the node's own Lease (`kube-node-lease/<node>`,
/// docs/semantics.md §5.2), which the kubelet renews on its own phase, every quarter of its
/// `nodeLeaseDurationSeconds` with up to 4 % jitter (docs/semantics.md §13); this agent's writes go
/// out on another phase. In an outage that begins at `T`, the kubelet's last stored renewal is no
/// earlier than `T` − one such interval, and the agent's last contact no later than `T`, so
/// counting from the agent's contact alone could be up to one interval late. Zero when the agent
/// renews the node's own Lease itself (no kubelet: `onlyStatusReporter`).
pub fn kubelet_lag(node_lease_duration: Duration, renews_node_lease: bool) -> Duration {
    if renews_node_lease {
        Duration::ZERO
    } else {
        (node_lease_duration / 4).mul_f64(1.04)
    }
}

/// When to stop one pod, on the monotonic clock of the caller (the same clock the contact and
/// `now` are on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The earliest moment the control plane can delete the pod.
    pub eviction_time: Duration,
    pub sigterm_at: Duration,
    pub kill_at: Duration,
}

/// The planner's verdict for one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Never fenced.
    Never { reason: Reason },
    /// Fenced on this schedule (in dry-run: only logged and counted).
    Stop {
        schedule: Schedule,
        dry_run: bool,
        reason: Reason,
    },
    /// Would be fenced, but the quorum verdict or the mode holds it.
    Hold { schedule: Schedule, reason: Reason },
}

/// Why a pod has its plan: the facts the sentence is made of, written out only when it is read
/// (logged, counted, shown by `status`). Every pod is planned whenever what the plans depend on
/// changes, and most of those sentences are never read: building each one was most of the
/// plan's cost. Shown, compared and searched as its text.
#[derive(Clone)]
pub struct Reason(Why);

#[derive(Clone)]
enum Why {
    Fixed(&'static str),
    OptedOut,
    Scheduled {
        /// `None`: no tolerationSeconds left; otherwise the toleration's seconds.
        tolerated: Option<i64>,
        /// Seconds: last contact to deletion, the node-monitor grace, the toleration's delay,
        /// the SIGTERM grace, the safety margin.
        after_contact: u64,
        monitor: u64,
        /// Seconds: the controller's monitor period between the pass that writes the node
        /// Unknown and the one that queues it for the taint (`FencePolicy::node_monitor_period`).
        period: u64,
        delay: u64,
        grace: u64,
        margin: u64,
        /// Milliseconds before last contact the count starts (`FencePolicy::kubelet_lag`).
        lag_ms: u64,
        /// Counted from the unreachable taint the Node carried when last seen, not from contact.
        seen_taint: bool,
        /// Counted from the instant the controller-manager's leader Lease proved every taint
        /// eviction timer started again, later than the rest (`core::leader`).
        restarted: bool,
        /// Counted from the pod's creation, later than the rest ([`FencePod::created`]).
        created_later: bool,
        /// Counted instead from a taint of the Node's run of NoExecute taints that a swap keeps
        /// the timer of ([`Taints::not_ready`], [`Taints::swapped_from`]): the seconds the pod
        /// tolerates it, and whether it is the not-ready one. Earlier than the rest.
        earlier: Option<(i64, bool)>,
        quorum: Quorum,
    },
    /// A pod that tolerates the unreachable taint forever, deleted by its not-ready toleration
    /// before the controller's swap for the unreachable taint can cancel the timer
    /// (`not_ready_only`).
    NotReadyOnly {
        seconds: i64,
        grace: u64,
        margin: u64,
        quorum: &'static str,
    },
    Text(String),
}

#[derive(Clone)]
enum Quorum {
    Note(&'static str),
    /// The quorum's reason for holding (shared by every pod of one plan).
    Held(Arc<str>),
}

impl Reason {
    /// Whether the reason's text contains `pattern`.
    pub fn contains(&self, pattern: &str) -> bool {
        self.to_string().contains(pattern)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Why::Fixed(text) => f.write_str(text),
            Why::NotReadyOnly {
                seconds,
                grace,
                margin,
                quorum,
            } => write!(
                f,
                "tolerates node.kubernetes.io/unreachable:NoExecute forever, but \
                 node.kubernetes.io/not-ready:NoExecute for {seconds}s: deleted that long after \
                 the not-ready taint the Node carried when last seen (its timeAdded), or the \
                 Ready=False its kubelet posted, unless the controller swaps it for the \
                 unreachable one first (as the node goes Unknown), which cancels the timer; \
                 SIGTERM with {grace}s grace, stopped {margin}s before; {quorum}"
            ),
            Why::OptedOut => write!(f, "opted out ({OPT_OUT_ANNOTATION})"),
            Why::Text(text) => f.write_str(text),
            Why::Scheduled {
                tolerated,
                after_contact,
                monitor,
                period,
                delay,
                grace,
                margin,
                lag_ms,
                seen_taint,
                restarted,
                created_later,
                earlier,
                quorum,
            } => {
                match tolerated {
                    None => f.write_str("no tolerationSeconds left")?,
                    Some(seconds) => {
                        write!(f, "tolerates node.kubernetes.io/unreachable for {seconds}s")?
                    }
                }
                write!(
                    f,
                    "; the control plane can delete it {after_contact}s after last contact \
                     ({monitor}s node-monitor grace + "
                )?;
                if *period > 0 {
                    write!(f, "{period}s monitor period + ")?;
                }
                write!(f, "{delay}s)")?;
                if *lag_ms > 0 {
                    write!(
                        f,
                        ", counted from {}.{}s before it (the node's Lease may have been renewed \
                         last then)",
                        lag_ms / 1000,
                        lag_ms % 1000 / 100
                    )?;
                }
                if *seen_taint {
                    write!(
                        f,
                        "; counted instead from the node.kubernetes.io/unreachable:NoExecute taint \
                         the Node carried when last seen (its timeAdded), which is earlier"
                    )?;
                }
                if *restarted {
                    write!(
                        f,
                        "; and no earlier than the read of the controller-manager's leader Lease \
                         that proved every taint eviction timer started again, which is later"
                    )?;
                }
                if let Some((seconds, not_ready)) = earlier {
                    let key = if *not_ready {
                        "not-ready"
                    } else {
                        "unreachable"
                    };
                    write!(
                        f,
                        "; but deleted earlier, {seconds}s after the \
                         node.kubernetes.io/{key}:NoExecute taint the Node carried when last \
                         seen, or first in its run of them (its timeAdded), or the Ready=False its \
                         kubelet posted, which queues the node for the not-ready one: the \
                         controller's swap of one for the other keeps the timer it started"
                    )?;
                }
                if *created_later {
                    write!(
                        f,
                        "; counted from the pod's creation (its creationTimestamp), which is \
                         later: the controller starts the timer of a pod created on a tainted \
                         Node when it handles the pod"
                    )?;
                }
                write!(f, "; SIGTERM with {grace}s grace, stopped {margin}s before")?;
                match quorum {
                    Quorum::Note(note) => write!(f, "; {note}"),
                    Quorum::Held(reason) => write!(f, "; held: {reason}"),
                }
            }
        }
    }
}

impl fmt::Debug for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

impl PartialEq for Reason {
    fn eq(&self, other: &Reason) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Reason {}

impl From<String> for Reason {
    fn from(text: String) -> Reason {
        Reason(Why::Text(text))
    }
}

impl From<&str> for Reason {
    fn from(text: &str) -> Reason {
        Reason(Why::Text(text.to_string()))
    }
}

impl From<&Reason> for String {
    fn from(reason: &Reason) -> String {
        reason.to_string()
    }
}

/// One pod's plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodPlan {
    pub uid: String,
    pub namespace: String,
    pub name: String,
    pub plan: Plan,
}

fn never(reason: &'static str) -> Plan {
    Plan::Never {
        reason: Reason(Why::Fixed(reason)),
    }
}

/// The node controller's NoExecute taints on this node's Node that the plans count from, each on
/// the monotonic scale ([`taint_counted`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Taints {
    /// When the unreachable taint its Node carried counts from.
    pub unreachable: Option<Duration>,
    /// When the not-ready taint its Node carried when last seen counts from: each pod's timer for
    /// it goes on when the controller swaps it for the unreachable one (docs/semantics.md §4.3).
    pub not_ready: Option<Duration>,
    /// The first taint of the Node's unbroken run of the two, when a swap since put the other on
    /// (`state::StoredNode::swapped_from`): when it counts from, and whether it is the not-ready
    /// one. The timers it started go on.
    pub swapped_from: Option<(Duration, bool)>,
    /// The `timeAdded` each of the three counts from, on the control plane's clock, where that is
    /// what it was counted from (`None`: from something else, such as a read of the Node without
    /// the taint, or not known).
    pub added: TaintsAdded,
    /// `unreachable` counts the taint as added after the latest round in which a peer read the
    /// Node without it ([`after_read`]: from its own time, or that round's), as this node, not
    /// cut off, fences on the taint: so it counts even when later than the count from contact
    /// ([`plan`]).
    pub unreachable_after_read: bool,
}

/// A `timeAdded`, as `metav1.Time`, is written to the whole second: the taint was added up to
/// this much after it says.
pub const TIME_ADDED_RESOLUTION: Duration = Duration::from_secs(1);

/// Where the unreachable taint counts from when it came after `untainted_at`, the latest round in
/// which a peer read the Node without either of the controller's NoExecute taints
/// (`core::quorum::TaintReads::untainted_at`), given `seen`, its time on this node's view or as
/// its peers read its `timeAdded` ([`taint_counted`], with that `timeAdded`): the later of the
/// two, when the taint's `timeAdded` (to the second, [`TIME_ADDED_RESOLUTION`]) does not say it
/// was added before that round, and it came less than `grace` (the node-monitor grace period)
/// after it; with the `timeAdded` only when the count is the taint's own time (a pod created
/// later moves no count of the round, [`TaintsAdded`]). `None` otherwise, or without either.
///
/// That round's reads saw every write stored before it was sent, and found neither taint: any
/// unreachable taint that deletes a pod is added after it (an earlier one was removed, and its
/// timers with it), and the pod is deleted no earlier than that taint's time plus its toleration
/// (docs/fence.md §3, *A taint added after a read without it*). A taint seen at a time
/// consistent with that is the one; one seen earlier still was removed since, and the next comes
/// later than the round. A not-ready taint whose timers the swap for this one kept
/// (docs/semantics.md §4.3) was on the Node a grace period or more before the swap (the
/// controller swaps as the node goes Unknown, a grace period after its kubelet was last heard,
/// and the kubelet's Ready=False that brought the not-ready taint was heard): within `grace` of
/// the round, it would have been on the Node when the round read it. Not cut off, this count, not the round's less [`READ_SLACK`], then
/// stands ([`Taints::unreachable_after_read`]).
pub fn after_read<T>(
    seen: Option<(Duration, Option<T>)>,
    untainted_at: Option<Duration>,
    grace: Duration,
) -> Option<(Duration, Option<T>)> {
    let ((t, added), u) = seen.zip(untainted_at)?;
    (t + TIME_ADDED_RESOLUTION > u && t < u + grace).then(|| (t.max(u), added.filter(|_| t >= u)))
}

/// The control plane's `timeAdded` of each of [`Taints`]' counts. A pod created later than the
/// taint has its timer start no earlier than its creation (the controller starts it when it
/// handles the pod, docs/semantics.md §4.3): the count moves that much later for it. Both times
/// are the control plane's, so no clock of this node's comes between them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaintsAdded {
    pub unreachable: Option<std::time::SystemTime>,
    pub not_ready: Option<std::time::SystemTime>,
    pub swapped_from: Option<std::time::SystemTime>,
}

/// The earlier of two counts of a taint, each with the `timeAdded` it counts from (as
/// [`taint_counted`]; `a` on a tie).
pub fn earliest_added<T: Copy>(
    a: Option<(Duration, Option<T>)>,
    b: Option<(Duration, Option<T>)>,
) -> Option<(Duration, Option<T>)> {
    match (a, b) {
        (Some(a), Some(b)) if b.0 < a.0 => Some(b),
        (a, b) => a.or(b),
    }
}

/// The first taint of a Node's unbroken run of the node controller's two NoExecute taints, when a
/// swap since put the other one on ([`Taints::swapped_from`]): from the view before this one —
/// the first it kept (`kept`), and the taint it showed (`before`) — and the taint this view shows
/// (`now`: whether it is the not-ready one; `None`, neither: the run ended, and every timer it
/// started with it). Each taint is `(what, not_ready)`.
pub fn run_first<T: Clone>(
    kept: Option<&(T, bool)>,
    before: Option<&(T, bool)>,
    now: Option<bool>,
) -> Option<(T, bool)> {
    let now = now?;
    match (kept, before) {
        (Some(first), _) => Some(first.clone()),
        (None, Some(b)) if b.1 != now => Some(b.clone()),
        _ => None,
    }
}

impl Taints {
    /// The same with the not-ready taint the peers read (`core::quorum::NodeReads::not_ready`:
    /// when it counts from, its `timeAdded`, and whether the controller swapped it for the
    /// unreachable one since). On the Node still, it counts as that taint on this node's own
    /// view, from the earlier of the two; swapped, as the first taint of the run. A cut-off
    /// node's own view may lack it: a kubelet's Ready=False posted, and the taint added, within
    /// the view's lag before the cut (`Fixes::not_ready_time_read`).
    pub fn with_not_ready_read(
        self,
        read: Option<(Duration, std::time::SystemTime, bool)>,
    ) -> Taints {
        let mut taints = self;
        match read {
            None => {}
            Some((at, wall, false)) => {
                let own = self.not_ready.map(|t| (t, self.added.not_ready));
                let earliest = earliest_added(own, Some((at, Some(wall))));
                taints.not_ready = earliest.map(|(t, _)| t);
                taints.added.not_ready = earliest.and_then(|(_, added)| added);
            }
            Some((at, wall, true)) => match self.swapped_from {
                Some((own, true)) if own <= at => {}
                Some((_, false)) => {}
                _ => {
                    taints.swapped_from = Some((at, true));
                    taints.added.swapped_from = Some(wall);
                }
            },
        }
        taints
    }
}

impl From<Option<Duration>> for Taints {
    /// The unreachable taint's count alone.
    fn from(unreachable: Option<Duration>) -> Taints {
        Taints {
            unreachable,
            not_ready: None,
            swapped_from: None,
            added: TaintsAdded::default(),
            unreachable_after_read: false,
        }
    }
}

/// The contact a plan counts from, and the latest the control plane may have heard the node at.
///
/// `counted` is the latest moment the control plane provably heard from this node (docs/fence.md
/// §2): every deadline counts from it, early, never late. After a return too short to count
/// (docs/fence.md §6) it is the contact before that return, though the kubelet may have been
/// heard during it. `latest` bounds the other side: the control plane cannot have heard the
/// kubelet later than this node's own last contact (or a renewal of the kubelet its peers read,
/// if later), so the controller's swap of the not-ready taint for the unreachable one comes no
/// later than a grace period after it. A plan that counts on that swap cancelling a timer counts
/// from `latest` (`not_ready_only`); counted from `counted`, it would expect the swap too early and
/// leave running a pod the not-ready taint's timer deletes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanContact {
    pub counted: Duration,
    pub latest: Duration,
}

impl From<Duration> for PlanContact {
    /// A contact known exactly: the two are one.
    fn from(contact: Duration) -> PlanContact {
        PlanContact {
            counted: contact,
            latest: contact,
        }
    }
}

/// Plans every pod. `contact`: [`PlanContact`] (a `Duration` is both of its instants);
/// `tainted`, when the node controller's taints its Node carried count from ([`Taints`]; an
/// `Option<Duration>` is the unreachable taint's alone);
/// `timers_from`, the instant no taint eviction timer that can still delete a pod started before
/// (`core::leader`, docs/fence.md §7): no eviction counts from earlier.
pub fn plan(
    pods: &[FencePod],
    contact: impl Into<PlanContact>,
    tainted: impl Into<Taints>,
    timers_from: Option<Duration>,
    policy: &FencePolicy,
    quorum: &QuorumVerdict,
) -> Vec<PodPlan> {
    plan_each(pods, contact, tainted, timers_from, policy, quorum)
        .map(|(p, plan)| PodPlan {
            uid: p.uid.clone(),
            namespace: p.namespace.clone(),
            name: p.name.clone(),
            plan,
        })
        .collect()
}

/// The contact [`plan`] counts from for a node whose Node, as last seen, carries the Ready=Unknown
/// the controller wrote at `unknown` (on the monotonic scale, read on this node's clock;
/// docs/fence.md §3, *A Node recorded Unknown*): no later than the contact that makes the earliest
/// taint a monitor period after that instant. The controller queues a node for the taint on the
/// pass after the one that wrote Unknown (`processTaintBaseEviction` reads the condition the pass
/// found), and only the kubelet's posted status takes it out of the queue: a renewal of its Lease
/// refreshes the probe time alone (docs/semantics.md §5.5). So while the condition stands the
/// taint may come at any pass, however recently this node was heard. `contact` as it is without
/// one. Not for a Node seen tainted: the taint's own time, later than that write, counts
/// ([`taint_counted`]).
pub fn queued_contact(
    contact: Duration,
    unknown: Option<Duration>,
    policy: &FencePolicy,
) -> Duration {
    match unknown {
        Some(u) => {
            contact.min((u + policy.kubelet_lag).saturating_sub(policy.node_monitor_grace_period))
        }
        None => contact,
    }
}

/// When an unreachable taint the Node carried counts from, for [`plan`]'s `tainted`: the earlier
/// of its `timeAdded` read on this node's wall clock and the moment this run first saw it (the
/// node's clock may be behind the controller's); either alone when the other is not known.
pub fn taint_counted(on_wall: Option<Duration>, seen: Option<Duration>) -> Option<Duration> {
    match (on_wall, seen) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Plans every pod as [`plan`] does, one at a time, without a copy of each pod's identity: for
/// what only counts the plans (the metrics of what a partition starting now would do, made at
/// every change of the pods while connected). A vector of every plan and three strings a pod
/// was a transient of 0.2–0.3 MiB at 1,000 pods, the largest of a relist (issue 25).
pub fn plan_each<'a>(
    pods: &'a [FencePod],
    contact: impl Into<PlanContact>,
    tainted: impl Into<Taints>,
    timers_from: Option<Duration>,
    policy: &'a FencePolicy,
    quorum: &'a QuorumVerdict,
) -> impl Iterator<Item = (&'a FencePod, Plan)> + 'a {
    let tainted = tainted.into();
    let contact = contact.into();
    // A hold's reason is the same for every pod: one copy, shared.
    let held: Option<Arc<str>> = match quorum {
        QuorumVerdict::Hold { reason, .. } => Some(Arc::from(reason.as_str())),
        _ => None,
    };
    // The pods a hold still stops (`QuorumVerdict::Hold::stop_due`): those an enforce after no
    // hold, with the same read, makes due by then.
    let due = match quorum {
        QuorumVerdict::Hold {
            stop_due: Some(d), ..
        } => Some((
            d.by,
            QuorumVerdict::Enforce {
                not_before: None,
                held_from: None,
                untainted: d.untainted,
            },
            d.tolerated_from,
        )),
        _ => None,
    };
    pods.iter().map(move |p| {
        let due = due.as_ref().and_then(|(by, unheld, tolerated_from)| {
            let by = *by;
            // A pod that tolerates the taint longer than any taint could have stood.
            if let Some(from) = tolerated_from
                && let NoExecuteOutcome::EvictAfter { seconds } = unreachable_delay(&p.tolerations)
                && u64::try_from(seconds).is_ok_and(|s| s >= *from)
            {
                return None;
            }
            // With the hold's reason given, its note says why a hold stops it.
            let plan = plan_one(
                p,
                contact,
                (tainted, timers_from),
                policy,
                unheld,
                held.as_ref(),
            );
            matches!(&plan, Plan::Stop { schedule, .. } if schedule.eviction_time <= by)
                .then_some(plan)
        });
        let plan = due.unwrap_or_else(|| {
            plan_one(
                p,
                contact,
                (tainted, timers_from),
                policy,
                quorum,
                held.as_ref(),
            )
        });
        (p, plan)
    })
}

/// When the timer of a taint added at `added` deletes a pod whose toleration of it gives
/// `outcome`, every timer starting no earlier than `timers_from` (a leader's restart starts them
/// again), with the toleration's seconds; `None` when the pod tolerates the taint forever.
fn deletion_after(
    added: Duration,
    outcome: NoExecuteOutcome,
    timers_from: Option<Duration>,
) -> Option<(Duration, i64)> {
    let seconds = match outcome {
        NoExecuteOutcome::Never => return None,
        NoExecuteOutcome::EvictNow => 0,
        NoExecuteOutcome::EvictAfter { seconds } => seconds,
    };
    let from = timers_from.map_or(added, |r| added.max(r));
    Some((
        from + Duration::from_secs(u64::try_from(seconds).unwrap_or(0)),
        seconds,
    ))
}

/// How much later than a taint added at `added` the pod was created ([`FencePod::created`];
/// zero when earlier, or either is not known): its timer for that taint starts no earlier
/// ([`TaintsAdded`]).
fn created_after(pod: &FencePod, added: Option<std::time::SystemTime>) -> Duration {
    pod.created
        .zip(added)
        .and_then(|(created, added)| created.duration_since(added).ok())
        .unwrap_or_default()
}

/// The steps that stop `pod` by `eviction_time`: the kill a safety margin before, the SIGTERM its
/// grace period (capped) before that; and that grace period.
fn schedule_of(
    pod: &FencePod,
    eviction_time: Duration,
    policy: &FencePolicy,
) -> (Schedule, Duration) {
    let grace = Duration::from_secs(u64::try_from(pod.termination_grace_seconds).unwrap_or(0))
        .min(policy.grace_cap);
    let kill_at = eviction_time.saturating_sub(policy.safety_margin);
    let sigterm_at = kill_at.saturating_sub(grace);
    let schedule = Schedule {
        eviction_time,
        sigterm_at,
        kill_at,
    };
    (schedule, grace)
}

/// The plan of a pod that tolerates the unreachable taint forever, when the not-ready taint is on
/// its Node as last seen, or queued for it ([`Taints::not_ready`]): that taint's timer runs by the
/// pod's not-ready toleration until the controller swaps the taint for the unreachable one as the
/// node goes Unknown, which cancels it (docs/semantics.md §4.3). The swap comes a grace period
/// after the kubelet was last heard, with the pass that writes Unknown and the one after: no
/// later than that after the latest contact the control plane may have heard
/// ([`PlanContact::latest`]), with the kubelet's lag as slack for a kubelet heard after this
/// agent. A deadline before it is a deletion, stopped by then (docs/fence.md §3);
/// `None`: no such deadline, or a hold.
fn not_ready_only(
    pod: &FencePod,
    contact: PlanContact,
    (taints, timers_from): (Taints, Option<Duration>),
    policy: &FencePolicy,
    quorum: &QuorumVerdict,
) -> Option<Plan> {
    if matches!(quorum, QuorumVerdict::Hold { .. }) {
        return None;
    }
    let (eviction_time, seconds) = deletion_after(
        taints.not_ready? + created_after(pod, taints.added.not_ready),
        not_ready_delay(&pod.tolerations),
        timers_from,
    )?;
    let swapped_by = contact.latest.max(contact.counted)
        + policy.kubelet_lag
        + policy.node_monitor_grace_period
        + policy.node_monitor_period * 2;
    if eviction_time >= swapped_by {
        return None;
    }
    let (schedule, grace) = schedule_of(pod, eviction_time, policy);
    let quorum = match quorum {
        QuorumVerdict::Tainted { .. } => {
            "not cut off, but this node's Node carries the node controller's NoExecute taint (unreachable or not-ready): the control plane evicts, whether or not the link holds"
        }
        QuorumVerdict::Enforce { .. } => {
            "the not-ready taint's timer runs whatever the zone's state (the peers' quorum says the control plane evicts)"
        }
        _ => "peers not consulted",
    };
    Some(Plan::Stop {
        schedule,
        dry_run: policy.mode == Mode::DryRun,
        reason: Reason(Why::NotReadyOnly {
            seconds,
            grace: grace.as_secs(),
            margin: policy.safety_margin.as_secs(),
            quorum,
        }),
    })
}

fn plan_one(
    pod: &FencePod,
    contact: PlanContact,
    (taints, timers_from): (Taints, Option<Duration>),
    policy: &FencePolicy,
    quorum: &QuorumVerdict,
    held: Option<&Arc<str>>,
) -> Plan {
    if policy.mode == Mode::Off {
        return never("fencing is off");
    }
    if pod.terminal {
        return never("the pod has finished (Succeeded or Failed)");
    }
    if pod.static_or_mirror {
        // The kubelet exempts static pods from NoExecute admission (docs/semantics.md §3); the
        // control plane cannot delete them either.
        return never("static or mirror pod: the control plane cannot delete it");
    }
    if pod.owner_kind.as_deref() == Some("DaemonSet") {
        return never("DaemonSet pod: the DaemonSet controller keeps one on every node");
    }
    if pod.opted_out {
        return Plan::Never {
            reason: Reason(Why::OptedOut),
        };
    }
    let (delay, tolerated) = match unreachable_delay(&pod.tolerations) {
        NoExecuteOutcome::Never => {
            return not_ready_only(pod, contact, (taints, timers_from), policy, quorum)
                .unwrap_or_else(|| {
                    never("tolerates node.kubernetes.io/unreachable:NoExecute forever")
                });
        }
        NoExecuteOutcome::EvictNow => (Duration::ZERO, None),
        NoExecuteOutcome::EvictAfter { seconds } => (
            Duration::from_secs(u64::try_from(seconds).unwrap_or(0)),
            Some(seconds),
        ),
    };
    // The earliest moment the unreachable taint can be on the node: a grace period after the
    // node's Lease was last renewed (up to `kubelet_lag` before our last contact) its Ready is
    // written Unknown, and a monitor period later the node is queued for the taint; after a hold
    // no earlier than the control plane could resume tainting.
    let renewed = contact.counted.saturating_sub(policy.kubelet_lag);
    let judged = renewed + policy.node_monitor_grace_period + policy.node_monitor_period;
    let resumed = match quorum {
        QuorumVerdict::Enforce {
            not_before: Some(t),
            held_from,
            ..
        } if held_from.is_none_or(|b| b <= judged) => Some(*t),
        _ => None,
    };
    let counted = resumed.map_or(judged, |t| judged.max(t));
    // A taint the Node already carried when last seen is on it from when it was added, if that
    // is earlier: nothing the cut brings removes it (docs/fence.md §3). The controller sets
    // `timeAdded` as it adds the taint and starts each pod's timer no earlier (docs/semantics.md
    // §5.4, §4.3), so this is early, never late. So is a taint added after a peer's read of the
    // Node without it, whenever that is ([`after_read`]): no earlier taint is on the Node to
    // delete a pod before it. Holds keep their own rules.
    let holding = matches!(quorum, QuorumVerdict::Hold { .. });
    let seen_taint = taints
        .unreachable
        .filter(|t| (*t < counted || taints.unreachable_after_read) && !holding);
    // A peer's read of the Node without the taint, less the slack, may be later than any of
    // that: the taint, if it comes, comes after the read (a taint seen earlier was removed
    // since).
    let untainted = match quorum {
        QuorumVerdict::Enforce {
            untainted: Some(u), ..
        }
        | QuorumVerdict::Tainted { untainted: Some(u) }
            if u.saturating_sub(READ_SLACK) > seen_taint.unwrap_or(counted) =>
        {
            Some(u.saturating_sub(READ_SLACK))
        }
        _ => None,
    };
    // A pod created after the taint seen counts from its creation: its timer starts no earlier,
    // whether that taint stays or another comes (docs/semantics.md §4.3).
    let after = created_after(pod, taints.added.unreachable);
    let created_later = untainted.is_none() && seen_taint.is_some() && !after.is_zero();
    let tainted_from = untainted.unwrap_or(seen_taint.map_or(counted, |t| t + after));
    // Every timer that can still delete a pod started no earlier than `timers_from`: a process
    // that took over the controller-manager's lead starts them again (docs/semantics.md §5.2).
    let restarted = timers_from.is_some_and(|t| t > tainted_from);
    let created_later = created_later && !restarted;
    let tainted_from = timers_from.map_or(tainted_from, |t| tainted_from.max(t));
    let eviction_time = tainted_from + delay;
    // A not-ready taint the Node carried when last seen started the pod's timer for it, and the
    // controller's swap for the unreachable taint as the node goes Unknown keeps that timer
    // (docs/semantics.md §4.3): the pod is deleted that toleration after the not-ready taint, if
    // that is earlier, unless it tolerates unreachable forever (the swap cancels the timer; no
    // plan is made for it above). A leader's restart starts it again (as above). Holds keep their
    // own rules: the quorum counts such a node as one seen tainted (docs/fence.md §5).
    //
    // The same holds of the first taint of the Node's run of them, when a swap since replaced it
    // (`Taints::swapped_from`: the unreachable one swapped for not-ready as the kubelet posted
    // Ready=False, say): its timer goes on, unless the pod tolerates the taint on now forever (the
    // swap cancelled it).
    let not_ready_delay = not_ready_delay(&pod.tolerations);
    let forever_now = taints.not_ready.is_some() && not_ready_delay == NoExecuteOutcome::Never;
    // A pod created after the taint on now was added never had the first one's timer: the Node
    // carried only the later taint when the controller handled the pod.
    let created_since_swap = |first_not_ready: bool| {
        let on_now = if first_not_ready {
            taints.added.unreachable
        } else {
            taints.added.not_ready
        };
        pod.created
            .zip(on_now)
            .is_some_and(|(created, added)| created > added)
    };
    let first = taints
        .swapped_from
        .filter(|(_, not_ready)| !forever_now && !created_since_swap(*not_ready))
        .map(|(t, not_ready)| {
            let outcome = if not_ready {
                not_ready_delay
            } else {
                unreachable_delay(&pod.tolerations)
            };
            (t, outcome, not_ready, taints.added.swapped_from)
        });
    let earlier = taints
        .not_ready
        .map(|t| (t, not_ready_delay, true, taints.added.not_ready))
        .into_iter()
        .chain(first)
        .filter(|_| !holding)
        .filter_map(|(t, outcome, not_ready, added)| {
            // From the pod's creation, if that is later (as above).
            let after = created_after(pod, added);
            let (at, seconds) = deletion_after(t + after, outcome, timers_from)?;
            let created = !after.is_zero() && timers_from.is_none_or(|r| r < t + after);
            Some((at, seconds, not_ready, created))
        })
        .filter(|(at, ..)| *at < eviction_time)
        .min_by_key(|(at, ..)| *at);
    let eviction_time = earlier.map_or(eviction_time, |(at, ..)| at);
    let created_later = earlier.map_or(created_later, |(.., created)| created);
    let (schedule, grace) = schedule_of(pod, eviction_time, policy);
    let why = |quorum| {
        Reason(Why::Scheduled {
            tolerated,
            after_contact: (policy.node_monitor_grace_period + policy.node_monitor_period + delay)
                .as_secs(),
            monitor: policy.node_monitor_grace_period.as_secs(),
            period: policy.node_monitor_period.as_secs(),
            delay: delay.as_secs(),
            grace: grace.as_secs(),
            margin: policy.safety_margin.as_secs(),
            lag_ms: u64::try_from(policy.kubelet_lag.as_millis()).unwrap_or(u64::MAX),
            seen_taint: seen_taint.is_some(),
            restarted,
            created_later,
            earlier: earlier.map(|(_, seconds, not_ready, _)| (seconds, not_ready)),
            quorum,
        })
    };
    match (quorum, held) {
        (QuorumVerdict::Hold { .. }, Some(held)) => Plan::Hold {
            schedule,
            reason: why(Quorum::Held(Arc::clone(held))),
        },
        (QuorumVerdict::Hold { reason, .. }, None) => Plan::Hold {
            schedule,
            reason: why(Quorum::Held(Arc::from(reason.as_str()))),
        },
        (
            QuorumVerdict::Enforce { .. }
            | QuorumVerdict::Tainted { .. }
            | QuorumVerdict::NotConsulted,
            _,
        ) => {
            let quorum_note = match quorum {
                // Planned for a hold's `stop_due` ([`plan_each`]).
                QuorumVerdict::Enforce { .. } if held.is_some() => {
                    "the peers' quorum holds, as every zone is down, but a taint that stood before may have had it deleted by now"
                }
                QuorumVerdict::Tainted { .. } => {
                    "not cut off, but this node's Node carries the node controller's NoExecute taint (unreachable or not-ready): the control plane evicts, whether or not the link holds"
                }
                QuorumVerdict::Enforce { .. } if untainted.is_some() => {
                    "the peers' quorum says the control plane evicts, counted from the latest round in which a peer read this node's Node without the unreachable taint, less 10s"
                }
                QuorumVerdict::Enforce { .. } if resumed.is_some_and(|t| t > judged) => {
                    "the peers' quorum says the control plane evicts, counted from the end of its hold"
                }
                QuorumVerdict::Enforce {
                    not_before: Some(_),
                    ..
                } if resumed.is_none() => {
                    "the peers' quorum says the control plane evicts; its hold began after this node could be tainted, and a taint added before outlasts it"
                }
                QuorumVerdict::Enforce { .. } => "the peers' quorum says the control plane evicts",
                _ => "peers not consulted",
            };
            Plan::Stop {
                schedule,
                dry_run: policy.mode == Mode::DryRun,
                reason: why(Quorum::Note(quorum_note)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::taint::Effect;

    /// The reason of a scheduled plan as it was built with `format!` for every pod, before it
    /// was kept as its parts.
    fn formatted(tolerated: Option<i64>, policy: &FencePolicy, grace: u64, tail: &str) -> String {
        let delay = Duration::from_secs(tolerated.map_or(0, |s| u64::try_from(s).unwrap_or(0)));
        let first = match tolerated {
            None => "no tolerationSeconds left".to_string(),
            Some(seconds) => format!("tolerates node.kubernetes.io/unreachable for {seconds}s"),
        };
        let why = format!(
            "{}; the control plane can delete it {}s after last contact ({}s node-monitor grace + {}s); \
             SIGTERM with {}s grace, stopped {}s before",
            first,
            (policy.node_monitor_grace_period + delay).as_secs(),
            policy.node_monitor_grace_period.as_secs(),
            delay.as_secs(),
            grace,
            policy.safety_margin.as_secs()
        );
        format!("{why}; {tail}")
    }

    fn pod(tolerations: Vec<Toleration>) -> FencePod {
        FencePod {
            uid: "u".into(),
            namespace: "ns".into(),
            name: "p".into(),
            tolerations,
            termination_grace_seconds: 45,
            owner_kind: None,
            static_or_mirror: false,
            qos: QosClass::BestEffort,
            opted_out: false,
            terminal: false,
            created: None,
        }
    }

    #[test]
    fn a_reason_reads_exactly_as_the_sentence_it_stands_for() {
        let policy = FencePolicy {
            node_monitor_grace_period: Duration::from_millis(40_500),
            node_monitor_period: Duration::ZERO,
            safety_margin: Duration::from_secs(2),
            grace_cap: Duration::from_secs(30),
            mode: Mode::Enforce,
            kubelet_lag: Duration::ZERO,
        };
        let unreachable = |s: Option<i64>| {
            let t = Toleration::exists("node.kubernetes.io/unreachable", Some(Effect::NoExecute));
            match s {
                Some(s) => t.with_seconds(s),
                None => t,
            }
        };
        let contact = Duration::from_secs(1000);
        let verdicts = [
            (
                QuorumVerdict::NotConsulted,
                "peers not consulted".to_string(),
            ),
            (
                QuorumVerdict::Enforce {
                    not_before: None,
                    held_from: None,
                    untainted: None,
                },
                "the peers' quorum says the control plane evicts".to_string(),
            ),
            (
                QuorumVerdict::Enforce {
                    not_before: Some(contact + Duration::from_secs(500)),
                    held_from: None,
                    untainted: None,
                },
                "the peers' quorum says the control plane evicts, counted from the end of its hold"
                    .to_string(),
            ),
            (
                // The same hold, begun after the node could be tainted (1000 + 40.5 s).
                QuorumVerdict::Enforce {
                    not_before: Some(contact + Duration::from_secs(500)),
                    held_from: Some(contact + Duration::from_secs(100)),
                    untainted: None,
                },
                "the peers' quorum says the control plane evicts; its hold began after this node could be tainted, and a taint added before outlasts it"
                    .to_string(),
            ),
            (
                QuorumVerdict::Hold {
                    reason: "zone partially disrupted".into(),
                    stop_due: None,
                },
                "held: zone partially disrupted".to_string(),
            ),
        ];
        for (verdict, tail) in &verdicts {
            for (tolerations, tolerated) in [
                (vec![], None),
                (vec![unreachable(Some(-5))], None),
                (vec![unreachable(Some(0))], None),
                (vec![unreachable(Some(300))], Some(300)),
            ] {
                let plans = plan(&[pod(tolerations)], contact, None, None, &policy, verdict);
                let reason = match &plans[0].plan {
                    Plan::Stop { reason, .. } | Plan::Hold { reason, .. } => reason.to_string(),
                    Plan::Never { reason } => panic!("never: {reason}"),
                };
                assert_eq!(reason, formatted(tolerated, &policy, 30, tail));
            }
        }
        let never = |edit: fn(&mut FencePod), policy: &FencePolicy| {
            let mut p = pod(vec![unreachable(None)]);
            edit(&mut p);
            match &plan(
                &[p],
                contact,
                None,
                None,
                policy,
                &QuorumVerdict::NotConsulted,
            )[0]
            .plan
            {
                Plan::Never { reason } => reason.to_string(),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(
            never(|p| p.opted_out = true, &policy),
            format!("opted out ({OPT_OUT_ANNOTATION})")
        );
        assert_eq!(
            never(|_| {}, &policy),
            "tolerates node.kubernetes.io/unreachable:NoExecute forever"
        );
        let off = FencePolicy {
            mode: Mode::Off,
            kubelet_lag: Duration::ZERO,
            ..policy
        };
        assert_eq!(never(|_| {}, &off), "fencing is off");
        // Shown, compared and searched as that text.
        let a: Reason = "zone".into();
        assert_eq!(format!("{a:?}"), "\"zone\"");
        assert!(a.contains("on") && !a.contains("x"));
        assert_eq!(a, Reason::from("zone".to_string()));
    }

    #[test]
    fn a_taint_counts_from_the_earlier_of_its_time_and_when_it_was_seen() {
        let s = Duration::from_secs;
        for (on_wall, seen, counted) in [
            (None, None, None),
            (Some(s(10)), None, Some(s(10))),
            (None, Some(s(12)), Some(s(12))),
            // The node's clock behind the controller's: seen before its time reads.
            (Some(s(15)), Some(s(12)), Some(s(12))),
            (Some(s(10)), Some(s(12)), Some(s(10))),
        ] {
            assert_eq!(
                taint_counted(on_wall, seen),
                counted,
                "{on_wall:?} {seen:?}"
            );
        }
    }

    #[test]
    fn a_taint_seen_before_the_cut_counts_from_its_time_when_that_is_earlier() {
        let policy = FencePolicy {
            node_monitor_grace_period: Duration::from_secs(40),
            node_monitor_period: Duration::ZERO,
            safety_margin: Duration::from_secs(2),
            grace_cap: Duration::from_secs(30),
            mode: Mode::Enforce,
            kubelet_lag: Duration::from_secs(10),
        };
        let tolerating = pod(vec![
            Toleration::exists("node.kubernetes.io/unreachable", Some(Effect::NoExecute))
                .with_seconds(19),
        ]);
        let contact = Duration::from_secs(1000);
        let enforce = QuorumVerdict::Enforce {
            not_before: None,
            held_from: None,
            untainted: None,
        };
        let eviction = |tainted: Option<Duration>, verdict: &QuorumVerdict| match &plan(
            std::slice::from_ref(&tolerating),
            contact,
            tainted,
            None,
            &policy,
            verdict,
        )[0]
        .plan
        {
            Plan::Stop {
                schedule, reason, ..
            }
            | Plan::Hold { schedule, reason } => (schedule.eviction_time, reason.to_string()),
            Plan::Never { reason } => panic!("never: {reason}"),
        };
        // Counted from contact: 1000 − 10 + 40 + 19.
        let (by_contact, why) = eviction(None, &enforce);
        assert_eq!(by_contact, Duration::from_secs(1049));
        assert!(!why.contains("timeAdded"), "{why}");
        // A taint added 8 s before the last contact (the kubelet had not renewed since a return).
        let (by_taint, why) = eviction(Some(Duration::from_secs(992)), &enforce);
        assert_eq!(by_taint, Duration::from_secs(1011));
        assert!(
            why.contains("taint the Node carried when last seen"),
            "{why}"
        );
        // One added later than the count from contact changes nothing.
        assert_eq!(
            eviction(Some(Duration::from_secs(1040)), &enforce).0,
            by_contact
        );
        // Also after a hold: the earlier of the two.
        let resumed = QuorumVerdict::Enforce {
            not_before: Some(Duration::from_secs(1100)),
            held_from: Some(Duration::from_secs(1010)),
            untainted: None,
        };
        assert_eq!(eviction(None, &resumed).0, Duration::from_secs(1119));
        assert_eq!(
            eviction(Some(Duration::from_secs(992)), &resumed).0,
            Duration::from_secs(1011)
        );
        // A hold keeps its own rules.
        let hold = QuorumVerdict::Hold {
            reason: "zone".into(),
            stop_due: None,
        };
        assert_eq!(
            eviction(Some(Duration::from_secs(992)), &hold).0,
            by_contact
        );
    }
}
