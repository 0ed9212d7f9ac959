//! The peer quorum (docs/fence.md §5): would the control plane evict this node's pods now? A node
//! cut off from the API server cannot tell "only I am cut off" (the node lifecycle controller
//! taints me and deletes my pods) from "most of my zone is cut off" or "the control plane is down
//! everywhere" (it deliberately evicts nothing, docs/semantics.md §5.5). Its peers can. Pure: the
//! peers' answers, this node's last contact and `now` in; a verdict with its reason out.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use crate::core::clock::Moment;

/// Another agent this node can ask. Kept in the state directory, so the list is known while cut
/// off and after a restart while cut off.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Peer {
    /// The peer's Node name.
    pub node: String,
    /// Its peer endpoint. An address, never a name: DNS is one more thing a partition takes away.
    pub address: SocketAddr,
    /// Its zone: in the list, its Node's `topology.kubernetes.io/zone` label ("" when
    /// unlabelled); in a round, its zone key (`core::zone`).
    pub zone: String,
}

/// What a peer says about itself, checked (signature, freshness) before it gets here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerReport {
    pub node: String,
    /// Its zone key (`core::zone::zone_key`).
    pub zone: String,
    /// Its Node is labelled `node.kubernetes.io/exclude-disruption`: the controller leaves it out
    /// of the zone counts (`core::zone::round`).
    pub excluded: bool,
    /// It reaches the API server now: its own contact is newer than its `unreachableAfter`.
    pub reachable: bool,
    /// How long ago its last contact was, on its own monotonic clock (clocks of two nodes are
    /// never compared); `None` when it never had one.
    pub last_contact_age: Option<Duration>,
    /// The *asking* node's kubelet Lease `renewTime`, as this peer read it from the API server
    /// while answering a question that asked for it ([`lease_readers`]). The asking node's
    /// kubelet stamps it with that node's own wall clock, so only the asker reads it
    /// ([`kubelet_heard`]). `None` when not asked, when this peer does not reach the API server,
    /// or when its read failed.
    pub kubelet_renewed: Option<SystemTime>,
    /// What this peer read of the *asking* node's Node from the API server while answering
    /// (`peer::Question::taint`, [`NodeRead`]). `None` when not asked, when this peer does not
    /// reach the API server, or when its read failed. A read without the unreachable taint is a
    /// fact about a moment after the question was sent ([`TaintReads`]).
    pub node_read: Option<NodeRead>,
    /// The pods bound to the *asking* node, among those it asked about (`peer::Question::pods`:
    /// pods whose cgroups run there that its view does not hold), as this peer listed them from
    /// the API server while answering. `Some` (possibly empty) only when the list was read:
    /// `None` when not asked, when this peer does not reach the API server, or when its read
    /// failed ([`crate::core::unlisted`]).
    pub pods: Option<Vec<crate::core::fence_plan::FencePod>>,
    /// The *asking* node's zone as the control plane records it, read by this peer from the API
    /// server in the same list as the asker's Node ([`ZoneRecord`]). `None` when not asked, when
    /// this peer does not reach the API server, or when its read failed.
    pub zone_recorded: Option<ZoneRecord>,
    /// What this peer's own reads of the controller-manager's leader Lease prove ([`PeerLeader`];
    /// on the wire `leaderTimersFromAgeMillis` and `leaderReadPending`). The default, nothing
    /// proven and nothing pending, from a build older than the fields.
    pub leader: PeerLeader,
    /// How long before it answered, on its own monotonic clock, this peer's *own* kubelet last
    /// renewed its Lease, as its readers read it for it after its own last contact (its rounds
    /// ask for that read while it is cut off, [`lease_readers`]); `None` when no such read came
    /// back, when its clock did not hold ([`kubelet_age`]), or from a build older than the field
    /// (on the wire `kubeletRenewedAgeMillis`). The asker orders the peer's silence by it
    /// ([`Round::silent_before`]).
    pub kubelet_age: Option<Duration>,
}

/// What a peer's reads of the controller-manager's leader Lease prove (`core::leader`,
/// `PeerReport::leader`): a fact about the control plane, the same for every node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerLeader {
    /// How long before it answered, on its own monotonic clock, the instant its reads prove
    /// that no taint eviction timer that can still delete a pod started before
    /// (`leader::Leader::timers_from`). `None` until a read proves one.
    pub timers_from_age: Option<Duration>,
    /// It says it reaches the API server, but its own requests failed since its latest read of
    /// the Lease, and it has not read it since (`agent::leader::LeaderView::pending`): a lead may
    /// have lapsed in an outage that its reads do not show yet. Either it is back and its read
    /// is on the way, or it has just lost the API server and its contact is not yet
    /// `unreachableAfter` old.
    pub pending: bool,
    /// It says it reaches the API server, and its latest read of the Lease proved that no
    /// process leads (`leader::Leader::leaderless`; on the wire `leaderless`): the next leader's
    /// first pass may taint any node recorded Ready=Unknown on its zone's fresh token, whatever
    /// the zone's state ([`leaderless_first`]).
    pub leaderless: bool,
}

impl PeerLeader {
    /// What a peer answers at `now` (its monotonic clock) of its own reads: the age of
    /// `timers_from` (`leader::Leader::timers_from`), and `pending` and `leaderless` only while
    /// it says it reaches the API server (`reachable`).
    pub fn answered(
        timers_from: Option<Duration>,
        (pending, leaderless): (bool, bool),
        now: Duration,
        reachable: bool,
    ) -> PeerLeader {
        PeerLeader {
            timers_from_age: timers_from.map(|t| now.saturating_sub(t)),
            pending: pending && reachable,
            leaderless: leaderless && reachable,
        }
    }
}

/// What the peers' reads of the controller-manager's leader Lease prove to this node
/// (docs/fence.md §7, *The controller-manager's Lease*, read by the peers). Cut off, this node
/// reads nothing itself, and back from an outage of the API server for everyone its peers may
/// read again before it does: a taint from before the outage then says nothing of the timers
/// that will delete, and only a read of the Lease tells. Kept across the rounds of a run; not
/// persisted (a restart counts without it: earlier, never later).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeaderReads {
    /// The latest instant, on this run's monotonic clock, before which a peer's reads prove no
    /// such timer started: the round's sending less the age the peer gave. Its answer left
    /// after the question did, so this is no later than the instant the peer proved. Only moves
    /// later, as `leader::Leader::timers_from` does.
    pub timers_from: Option<Duration>,
    /// The latest round: a peer that says it reaches the API server has not read the Lease
    /// since it lost it itself (`PeerLeader::pending`).
    pub pending: bool,
}

impl LeaderReads {
    /// Notes the answers of the round sent at `sent`; true when anything changed.
    pub fn note<'a>(&mut self, sent: Duration, heard: impl IntoIterator<Item = &'a Heard>) -> bool {
        let before = *self;
        let mut pending = false;
        for h in heard {
            if let Heard::Report(r) = h {
                // `None` orders before any instant: the later of the two, as far as known.
                let proven = r.leader.timers_from_age.map(|age| sent.saturating_sub(age));
                self.timers_from = self.timers_from.max(proven);
                pending |= r.reachable && r.leader.pending;
            }
        }
        self.pending = pending;
        *self != before
    }

    /// The later of `own`, what this node's own reads of the Lease prove, and its peers'
    /// [`LeaderReads::timers_from`]: the bound the fence counts every eviction from.
    pub fn bound(&self, own: Option<Duration>) -> Option<Duration> {
        // `None` orders before any instant.
        own.max(self.timers_from)
    }

    /// Whether the fence's steps wait for a peer's read of the leader Lease, and until when
    /// (docs/fence.md §7, *Read by the peers*): cut off after a hold in this partition (`held`:
    /// the API server may have been down for everyone, long enough to end the controller-
    /// manager's lead), while the latest round has a peer that says it reaches the API server
    /// and has not read the Lease since it lost it itself; for at most
    /// `leader::RETURN_READ_WAIT` from the first such round in a row (`since`, kept by the
    /// caller). `None`: no wait.
    pub fn read_awaited(
        &self,
        held: bool,
        since: &mut Option<Duration>,
        now: Duration,
    ) -> Option<Duration> {
        *since = match (self.pending && held, *since) {
            (false, _) => None,
            (true, s) => Some(s.unwrap_or(now)),
        };
        since
            .map(|s| s + crate::core::leader::RETURN_READ_WAIT)
            .filter(|end| now < *end)
    }
}

/// What a peer read of the asking node's Node (`PeerReport::node_read`; on the wire the answer's
/// `unreachableTainted`, `unreachableTaintAdded`, `notReadyTaintAdded`, `readyUnknownSince` and
/// `readyFalse`). Its times are the control plane's, stamped with its clock, as the API server
/// returned them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeRead {
    /// The Node carried `node.kubernetes.io/unreachable:NoExecute`, or the not-ready one, whose
    /// timers its swap for the unreachable one keeps (since the fortieth session,
    /// `Fixes::not_ready_read`; an older reader reads the unreachable one alone).
    pub tainted: bool,
    /// The unreachable taint's `timeAdded`; `None` without that taint or without the field.
    pub taint_added: Option<SystemTime>,
    /// The not-ready taint's `timeAdded`; `None` without that taint, without the field, or from
    /// a reader that predates it (`Fixes::not_ready_time_read`).
    pub not_ready_added: Option<SystemTime>,
    /// While the Node's Ready condition was Unknown (only the node lifecycle controller writes
    /// that), its `lastTransitionTime`: when the controller wrote it. `None` otherwise.
    pub unknown_since: Option<SystemTime>,
    /// The Node's Ready condition was False: its kubelet posted it, and the controller queues the
    /// node for the not-ready taint on every monitor pass while it stands (docs/semantics.md
    /// §5.5). False from a reader that predates the field (`Fixes::ready_false_read`).
    pub ready_false: bool,
}

/// The times the peers read on this node's Node across the rounds of a partition (docs/fence.md
/// §5, *The times the peers read*): the taint's `timeAdded` while the latest round that read the
/// Node found the taint, and the Ready=Unknown's write while it found the condition and no taint
/// (the node is queued for the taint). Each with when this run first heard that same time read,
/// on the scale `T` (the monotonic scale, or an `Instant`): the read came before that answer, so
/// the time is no later, whatever this node's wall clock says (`ReadTime::counted`). The fence
/// counts from them as from the same times on its own view of its Node
/// (`fence_plan::taint_counted`, `fence_plan::queued_contact`), which a cut-off node does not
/// have fresh: a restarted run cut off has none at all. Unlike [`TaintReads`], not kept through a
/// return of the link: the node's own view is fresh then, and a taint read before may be gone
/// (seed 0xfe5 with path cuts: a taint read at the end of one partition, removed after it,
/// counted in the next, in which no peer reached the API server).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeReads<T> {
    /// The unreachable taint's `timeAdded`.
    pub taint_added: Option<ReadTime<T>>,
    /// The Ready=Unknown's `lastTransitionTime`, on a Node read without the taint.
    pub queued_since: Option<ReadTime<T>>,
    /// The not-ready taint's `timeAdded`, kept through the controller's swap for the unreachable
    /// one and back, which keep the timers it started (docs/semantics.md §4.3), until a round
    /// reads the Node with neither taint.
    pub not_ready_added: Option<ReadTime<T>>,
    /// The latest round that read the Node found the unreachable taint on it after
    /// `not_ready_added` was read: the controller swapped the one for the other.
    pub not_ready_swapped: bool,
}

impl<T> Default for NodeReads<T> {
    fn default() -> Self {
        NodeReads {
            taint_added: None,
            queued_since: None,
            not_ready_added: None,
            not_ready_swapped: false,
        }
    }
}

/// A time read on this node's Node ([`NodeReads`]) and when this run first heard it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadTime<T> {
    pub wall: SystemTime,
    pub first_heard: T,
}

impl ReadTime<Duration> {
    /// The time on the monotonic scale of `now`: read on this node's wall clock (one in its
    /// future maps to now), or when first heard if that is earlier (this node's clock may be
    /// behind the control plane's).
    pub fn counted(&self, now: Moment) -> Duration {
        now.mono_at(self.wall).min(self.first_heard)
    }
}

impl NodeReads<Duration> {
    /// When the taint read was added, on the monotonic scale of `now` (`ReadTime::counted`), for
    /// the fence's `tainted` beside its own view's (`fence_plan::taint_counted`).
    pub fn tainted(&self, now: Moment) -> Option<Duration> {
        self.taint_added.map(|r| r.counted(now))
    }

    /// When the Ready=Unknown read on the Node without the taint was written, as [`Self::tainted`],
    /// for `fence_plan::queued_contact` beside its own view's.
    pub fn queued(&self, now: Moment) -> Option<Duration> {
        self.queued_since.map(|r| r.counted(now))
    }

    /// When the not-ready taint read was added, as [`Self::tainted`], its `timeAdded`, and
    /// whether the controller has since swapped it for the unreachable one.
    pub fn not_ready(&self, now: Moment) -> Option<(Duration, SystemTime, bool)> {
        self.not_ready_added
            .map(|r| (r.counted(now), r.wall, self.not_ready_swapped))
    }
}

impl<T: Copy> NodeReads<T> {
    /// Notes the reads of a round whose answers came at `heard_at`; true when anything changed.
    /// A round in which no peer that reaches the API server read the Node changes nothing; in
    /// one where several did, a taint any found counts, from the earliest `timeAdded` read.
    pub fn note<'a>(&mut self, heard_at: T, heard: impl IntoIterator<Item = &'a Heard>) -> bool
    where
        T: PartialEq,
    {
        let reads = heard.into_iter().filter_map(|h| match h {
            Heard::Report(r) if r.reachable => r.node_read,
            _ => None,
        });
        let Some(read) = reads.reduce(|a, b| NodeRead {
            tainted: a.tainted || b.tainted,
            taint_added: earliest(a.taint_added, b.taint_added),
            not_ready_added: earliest(a.not_ready_added, b.not_ready_added),
            unknown_since: earliest(a.unknown_since, b.unknown_since),
            ready_false: a.ready_false || b.ready_false,
        }) else {
            return false;
        };
        let before = *self;
        let (added, queued) = match read.tainted {
            true => (read.taint_added, None),
            false => (None, read.unknown_since),
        };
        note_read(&mut self.taint_added, added, heard_at);
        note_read(&mut self.queued_since, queued, heard_at);
        // The not-ready taint's time goes on through a swap: a tainted read with the unreachable
        // taint's time and not the not-ready one's; and through a swap back, as the controller's
        // timers do. A tainted read with neither time (a reader that predates the field) changes
        // nothing; an untainted one ends the run.
        match (read.tainted, read.not_ready_added, read.taint_added) {
            (false, ..) => {
                self.not_ready_added = None;
                self.not_ready_swapped = false;
            }
            (true, Some(added), _) => {
                // Swapped, a time is kept (only a kept one is ever swapped).
                if !self.not_ready_swapped {
                    note_read(&mut self.not_ready_added, Some(added), heard_at);
                }
                self.not_ready_swapped = false;
            }
            (true, None, Some(_)) => self.not_ready_swapped = self.not_ready_added.is_some(),
            (true, None, None) => {}
        }
        *self != before
    }

    /// The same reads with `first_heard` on another scale.
    pub fn map<U>(&self, mut f: impl FnMut(T) -> U) -> NodeReads<U> {
        let mut at = |r: &ReadTime<T>| ReadTime {
            wall: r.wall,
            first_heard: f(r.first_heard),
        };
        NodeReads {
            taint_added: self.taint_added.as_ref().map(&mut at),
            queued_since: self.queued_since.as_ref().map(&mut at),
            not_ready_added: self.not_ready_added.as_ref().map(&mut at),
            not_ready_swapped: self.not_ready_swapped,
        }
    }
}

/// The earlier of two times, either alone when the other is not known.
fn earliest(a: Option<SystemTime>, b: Option<SystemTime>) -> Option<SystemTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Keeps `kept` to the time read now: the same one keeps when it was first heard.
fn note_read<T: Copy>(kept: &mut Option<ReadTime<T>>, read: Option<SystemTime>, at: T) {
    *kept = read.map(|wall| match *kept {
        Some(k) if k.wall == wall => k,
        _ => ReadTime {
            wall,
            first_heard: at,
        },
    });
}

/// A zone as the API server stores it (docs/fence.md §5, *The zone as recorded*): how many of
/// its Nodes counted in disruption checks (no `node.kubernetes.io/exclude-disruption` label)
/// have a Ready condition that is not True, of how many. The node lifecycle controller writes
/// Ready=Unknown before it counts a node in its zone's state, in the same pass; only the
/// kubelet's own status turns it True again. So this is the count its zone state was computed
/// from at its last pass, but for nodes whose kubelet posted Ready=True since (counted ready
/// here a pass early).
///
/// On the wire it is the peer answer's `zoneRecord` (`peer::Answer`), under the names below.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ZoneRecord {
    /// Nodes of the zone counted in disruption checks whose Ready condition is not True.
    pub not_ready: usize,
    /// Nodes of the zone counted in disruption checks.
    pub size: usize,
    /// Whether the asker's own Node carried the unreachable NoExecute taint in the same read, or
    /// the not-ready one (since the fortieth session: its timers run whatever the zone's state).
    #[serde(rename = "unreachableTainted")]
    pub tainted: bool,
    /// With none of the zone's Nodes counted Ready: no Node outside this zone existed, read
    /// beside the zone's list ([`ZoneRecord::every_zone_down`]). Absent on the wire when false,
    /// as from a reader older than it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub only_zone: bool,
    /// With none of the zone's Nodes counted Ready: the asker's Ready condition left True no
    /// earlier than any other's (each one's `lastTransitionTime`). Absent when false, as
    /// `only_zone`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asker_last: bool,
    /// The asker's Node counts in disruption checks and its Ready condition is True: the
    /// controller has not judged it yet ([`ZoneRecord::disrupted_once_judged`]). Absent when
    /// false, as `only_zone`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asker_ready: bool,
    /// With none of the zone's Nodes counted Ready, no Node outside it (`only_zone`) and every
    /// one's Ready condition Unknown (written by the controller, on its clock): how many whole
    /// seconds after the asker's was written the last of them was ([`ZoneRecord::tolerated_from`]).
    /// Absent otherwise, as `only_zone`.
    #[serde(
        default,
        rename = "lastDownAfterSeconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_down_after: Option<u64>,
}

impl ZoneRecord {
    /// Whether the control plane, with the zone as recorded, adds no NoExecute taint in it: a
    /// partial disruption of a zone of [`LARGE_ZONE`] nodes or fewer (its limiter at 0), not a
    /// full one (tainted again at the normal rate).
    pub fn stops_tainting(&self) -> bool {
        self.size <= LARGE_ZONE
            && self.not_ready < self.size
            && partially_disrupted(self.not_ready, self.size)
    }

    /// Whether the control plane, with the zone as recorded, has been in master disruption since
    /// the pass that judged the asker, and so never tainted it: the zone is the only one, none of
    /// its Nodes counted is Ready, and none left Ready after the asker did (docs/semantics.md
    /// §5.5). Without that last fact the asker may have been tainted while another node still
    /// counted Ready, and the taint removed when every zone went down: pods tolerating less were
    /// deleted all the same.
    pub fn every_zone_down(&self) -> bool {
        self.only_zone && self.asker_last && self.none_ready()
    }

    /// Whether the pass that judges the asker, still recorded Ready, records its zone partially
    /// disrupted, so that the controller never taints it, if no Node recorded not Ready now is
    /// posted Ready before then: with the asker counted, the zone of [`LARGE_ZONE`] nodes or
    /// fewer has more than 2 and at least 55 % of its Nodes not Ready, not all. That pass writes
    /// the asker Unknown and swaps the zone's limiter to 0; the asker is queued for the taint
    /// only on the pass after (docs/semantics.md §5.5), when no token comes any more.
    pub fn disrupted_once_judged(&self) -> bool {
        self.asker_ready
            && ZoneRecord {
                not_ready: self.not_ready + 1,
                asker_ready: false,
                ..*self
            }
            .stops_tainting()
    }

    /// Whether the zone is fully disrupted as recorded: it counts Nodes, and none is Ready.
    pub fn none_ready(&self) -> bool {
        self.size > 0 && self.not_ready == self.size
    }

    /// Why a record read from a peer cannot be, `None` when it can: more Nodes not Ready than
    /// the zone counts, a fact given only with no Node Ready (`only_zone`, `asker_last`) beside
    /// one Ready, or the asker Ready (`asker_ready`) with no Node Ready.
    pub fn impossible(&self) -> Option<String> {
        let (n, size) = (self.not_ready, self.size);
        if n > size {
            Some(format!("notReady {n} of size {size}"))
        } else if (self.only_zone || self.asker_last) && !self.none_ready() {
            Some(format!(
                "onlyZone or askerLast with notReady {n} of size {size}"
            ))
        } else if self.last_down_after.is_some() && !self.only_zone {
            Some("lastDownAfterSeconds without onlyZone".to_string())
        } else if self.asker_ready && n >= size {
            Some(format!("askerReady with notReady {n} of size {size}"))
        } else {
            None
        }
    }

    /// The toleration, in seconds, from which a pod of the asker cannot have been deleted by a
    /// taint added before every zone went down ([`ZoneRecord::last_down_after`] plus 2): the
    /// controller queues the asker for the taint no sooner than it writes its Ready Unknown, and
    /// the pass that wrote the last Node's Unknown, finding every zone down, removed every taint
    /// and with it every timer (docs/semantics.md §5.5). One second covers the last write's time
    /// kept to the second (the asker's, kept so too, is never later than its write), one the
    /// removals that pass makes after that write.
    pub fn tolerated_from(&self) -> Option<u64> {
        self.last_down_after.map(|s| s.saturating_add(2))
    }

    /// Whether the zone as recorded is in the normal state: neither partially nor fully
    /// disrupted. Its queue's worker then taints at the normal rate, a node every 10 s.
    pub fn normal(&self) -> bool {
        !self.none_ready() && !partially_disrupted(self.not_ready, self.size)
    }
}

/// The controller's zone rules (docs/semantics.md §5.1, §5.5): `--unhealthy-zone-threshold` and
/// `--large-cluster-size-threshold`, both at their defaults.
const UNHEALTHY_ZONE_THRESHOLD: f64 = 0.55;
pub const LARGE_ZONE: usize = 50;

/// `ComputeZoneState`'s partial disruption: more than 2 of a zone's `size` nodes not Ready, and
/// at least `UNHEALTHY_ZONE_THRESHOLD` of them (a zone with none Ready is fully disrupted, which
/// callers test first).
fn partially_disrupted(not_ready: usize, size: usize) -> bool {
    not_ready > 2 && not_ready as f64 / size as f64 >= UNHEALTHY_ZONE_THRESHOLD
}

/// The controller's node monitor period: it judges every node on the same 5 s tick.
pub const NODE_MONITOR_PERIOD: Duration = Duration::from_secs(5);

/// How long a peer that lists a zone answers that zone's askers from the same list
/// (`api::node`): a round reads a record at most this old when it was sent.
pub const ZONE_RECORD_FRESH: Duration = Duration::from_secs(1);

/// Whether rounds `interval` apart read a change to the zone record within a monitor period
/// (`monitor_period`, the controller's `--node-monitor-period`) of it, with the reader's list
/// up to [`ZONE_RECORD_FRESH`] old ([`QuorumPolicy::record_in_time`]).
pub fn record_in_time(interval: Duration, monitor_period: Duration) -> bool {
    interval + ZONE_RECORD_FRESH < monitor_period
}

/// `(lost_together, settled_after)` of [`QuorumPolicy`] for a renew interval and
/// `unreachableAfter`.
///
/// - Lost together: in an outage that began at `T`, every agent's last contact lies in
///   `[T − renew, T]` (it renews every `renew`), so two agents' last contacts differ by at most a
///   renew interval; the controller's 5 s monitor tick is added as slack.
/// - Settled: a peer says "reachable" while its own last contact is at most `unreachableAfter`
///   old ([`answer`]), whatever zone it is in. A peer lost together with
///   this node has a last contact at most `lost_together` after ours, so from `lost_together +
///   unreachableAfter` after our last contact on, every such peer, in any zone, answers "cut
///   off"; a peer still answering "reachable" then really reached the API server after we lost
///   it. Until the fourteenth session the window was the longer of that and one more renewal
///   and a request timeout (35 s at the defaults, against 30 s): a bound from before a peer's
///   answer followed its contact's age alone. The simulator, once its controller judged nodes
///   as soon as upstream's does, found that wait running pods twice (README, *Simulation*).
pub fn windows(renew: Duration, unreachable_after: Duration) -> (Duration, Duration) {
    let lost_together = renew + NODE_MONITOR_PERIOD;
    (lost_together, lost_together + unreachable_after)
}

/// Peers asked per other zone (enough to learn whether that zone is down too).
const PER_OTHER_ZONE: usize = 2;

/// The peers to ask in one round: up to `ask` of this zone, and a few of every other zone.
pub fn select(peers: &[Peer], zone: &str, ask: usize) -> Vec<Peer> {
    let mut chosen: Vec<Peer> = peers
        .iter()
        .filter(|p| p.zone == zone)
        .take(ask)
        .cloned()
        .collect();
    let zones: std::collections::BTreeSet<&str> = peers
        .iter()
        .map(|p| p.zone.as_str())
        .filter(|z| *z != zone)
        .collect();
    for z in zones {
        chosen.extend(
            peers
                .iter()
                .filter(|p| p.zone == z)
                .take(PER_OTHER_ZONE)
                .cloned(),
        );
    }
    chosen
}

/// The peers listed that `heard` does not hold, which a round asks when [`decide_or_ask`] says
/// so: the rest of the other zones, and with `own_zone` (`Fixes::own_zone_asked`) the rest of
/// `zone` too.
pub fn unasked(peers: &[Peer], zone: &str, heard: &[(Peer, Heard)], own_zone: bool) -> Vec<Peer> {
    let asked: std::collections::BTreeSet<&str> =
        heard.iter().map(|(p, _)| p.node.as_str()).collect();
    peers
        .iter()
        .filter(|p| (own_zone || p.zone != zone) && !asked.contains(p.node.as_str()))
        .cloned()
        .collect()
}

/// The answers of the rest a round asked ([`unasked`]) that it counts: every one of the other
/// zones (a silent one there weighs as `Fixes::silent_peer_ignored` says), and of `zone` only
/// those that answered. A peer of this zone asked only because every peer asked first was cut
/// off, and silent now, stays unasked: counted as the asked ones are (`Fixes::unasked_counted`),
/// not as ready, as a silent peer asked in the first place is. Only an answer "reachable" turns
/// the hold.
pub fn rest_counted(zone: &str, rest: Vec<(Peer, Heard)>) -> impl Iterator<Item = (Peer, Heard)> {
    rest.into_iter()
        .filter(move |(p, h)| p.zone != zone || matches!(h, Heard::Report(_)))
}

/// One round as this node knows it: its zone, the zone of every peer listed (never this node),
/// what each asked peer said, already placed in its zone (`core::zone::round` places them: a peer
/// that answered in the zone it names, a silent one in the zone the list gives it), and the age
/// of its own last contact. The counts borrow the zones, so a round copies no peer.
pub fn round<'a>(
    zone: &str,
    listed: impl Iterator<Item = &'a str>,
    heard: Vec<(String, Heard)>,
    own_contact_age: Duration,
) -> Round {
    let mut zone_size = 1;
    // A cluster has a few zones: a scan of those seen beats a tree for every peer listed.
    let mut others: Vec<&str> = Vec::new();
    for z in listed {
        if z == zone {
            zone_size += 1;
        } else if !others.contains(&z) {
            others.push(z);
        }
    }
    Round {
        zone: zone.to_string(),
        zone_size,
        this_node_counted: true,
        other_zones: others.len(),
        own_contact_age,
        own_silence_age: own_contact_age,
        heard,
        tainted: false,
        silent_reaching: 0,
        own_kubelet_age: None,
        leaderless_unknown: None,
        cut_off_remembered: Vec::new(),
    }
}

/// What this agent answers a peer (`POST /v1/contact`): whether it reaches the API server by the
/// fence's own rule — its latest contact (this run's, or the one a previous run persisted) at
/// most `unreachable_after` old — and how old that contact is. [`windows`] relies on this rule.
///
/// A restarted agent with no contact of its own yet answers with the contact on its disk, the
/// earliest the control plane may last have heard it: its peers then count it as lost together
/// with them (a hold leans that way), as this agent counts them against [`heard_until`], the
/// latest.
pub fn answer(
    node: &str,
    zone: &str,
    last_contact_age: Option<Duration>,
    unreachable_after: Duration,
) -> PeerReport {
    reach_only(
        node.to_string(),
        zone.to_string(),
        reaches(last_contact_age, unreachable_after),
        last_contact_age,
    )
}

/// A peer's answer of its reach alone: not excluded, no read for the asker, nothing proven of
/// the leader, no kubelet renewal of its own. What [`answer`] starts from, and what a round
/// counts in place of a silent peer ([`Round::cut_off_counted`], [`silent_cut_off`]).
fn reach_only(
    node: String,
    zone: String,
    reachable: bool,
    last_contact_age: Option<Duration>,
) -> PeerReport {
    PeerReport {
        node,
        zone,
        excluded: false,
        reachable,
        last_contact_age,
        kubelet_renewed: None,
        node_read: None,
        pods: None,
        zone_recorded: None,
        leader: PeerLeader::default(),
        kubelet_age: None,
    }
}

/// The contact age a peer answer gives ([`answer`]): the younger of this run's own contact's and
/// the latest ready answer of the kubelet's path's (`fencing::NodePath::heard_age`), either of
/// which proves the control plane heard this node then.
pub fn answer_age(contact: Option<Duration>, node_path: Option<Duration>) -> Option<Duration> {
    match (contact, node_path) {
        (Some(c), Some(p)) => Some(c.min(p)),
        (c, p) => c.or(p),
    }
}

/// The rule [`answer`] says "reachable" by: a last contact at most `unreachable_after` old.
pub fn reaches(last_contact_age: Option<Duration>, unreachable_after: Duration) -> bool {
    last_contact_age.is_some_and(|a| a <= unreachable_after)
}

/// What one peer said in a round.
// A round holds one per peer asked, and lives for the round: a box per answer would cost an
// allocation each for the few bytes a silent peer's entry saves.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Heard {
    /// A checked answer.
    Report(PeerReport),
    /// No answer in time, or one that failed its checks: known nothing from it.
    Silent,
}

/// What a cut-off node does when its peers cannot settle the question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undecided {
    Hold,
    Enforce,
}

/// Fixes of defects found in the field, each of which the simulator (`crate::sim`) can switch
/// off to show that its random search finds the defect by itself (issue 22). The agent always
/// runs with [`Fixes::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fixes {
    /// No enforce rests on any zone's answers before they settle (issue 21: a zone enforced
    /// while another zone's agent had not noticed the same outage yet).
    pub settled_every_zone: bool,
    /// Peers of a zone beyond `peers.ask` count as the asked ones (a zone of more than 51 nodes
    /// was never fully disrupted).
    pub unasked_counted: bool,
    /// A partial disruption holds only a node that went silent after its zone already counted
    /// as disrupted (issue 22: the controller judges each node when its own grace period ends;
    /// the first of a zone is tainted while the zone still counts as healthy, and keeps its taint
    /// through the partial disruption that follows).
    pub staggered_expiry: bool,
    /// Another zone counts as down when every peer of it that answers says so; a silent one
    /// beside them (restarting, say) is no evidence that the zone is up (issue 22).
    pub silent_peer_ignored: bool,
    /// An agent restarted in an outage counts its peers as lost together with it from the
    /// latest moment it may have been heard ([`heard_until`]), not from a contact on disk that
    /// predates its restart (issue 22). The agent's shell applies it; only the simulator reads
    /// this switch.
    pub restart_heard: bool,
    /// Every other zone counts as down only once every peer of it was asked: the round asks two
    /// of each, and when those say "cut off" the rest are asked before this node holds
    /// ([`decide_or_ask`]; issue 22: the two asked of a six-node zone were cut off, the
    /// others reached the API server, and the controller evicted the cut-off zone).
    /// [`RoundBasis::decide_or_ask`] reads it.
    pub other_zones_asked: bool,
    /// An agent whose previous run stopped while cut off counts itself heard until the contact
    /// that run persisted, not until its own start ([`resumed_heard_bound`]; issue 22: restarted
    /// mid-partition, an agent waited for its rounds to settle from its start and stopped its
    /// pods 30 s after their deletion). The agent's shell applies it; only the simulator reads
    /// this switch.
    pub resumed_cut_off: bool,
    /// A restarted agent carries the wall times its previous run wrote onto its own wall scale
    /// through the boot clock (`core::clock::Scale`, `state::load`; issue 22: after a step of
    /// the wall clock back and a restart, the contact on disk read as later than now, and the
    /// fence counted its deadlines from the restart, 47 s late). The agent's shell applies it;
    /// only the simulator reads this switch.
    pub wall_scale_carried: bool,
    /// The fence counts its deadlines from a contact only once contact has lasted the kubelet's
    /// lag since it came back after a failure (`fencing::Link::counted`; issue 22: a link back
    /// for 5.5 s between two cuts stored no renewal of the kubelet, and the fence counted from
    /// the contact it made then, 14 s late). The agent's shell applies it; only the simulator
    /// reads this switch.
    pub kubelet_after_return: bool,
    /// A pending enforce is settled before `settled_after` when every way the peers that may not
    /// know the outage yet can answer gives enforce ([`settled_early`]; issue 22: after a short
    /// return, or a restart just after the cut, the controller deleted a node's pods for the
    /// renewal its kubelet made before, while the fence waited 35 s from the later contact or
    /// start for its peers to settle, and stopped them 7-21 s late).
    pub settled_early: bool,
    /// A hold that began after this node could first be tainted does not move its deadlines
    /// (`fence_plan::QuorumVerdict::Enforce`; issue 22, seed 0x591: a node tainted 9 s before an
    /// outage of the API server held through it, enforced again after it counting from its end,
    /// and ran a pod 38 s past the deletion its old taint brought). The agent's shell applies it;
    /// only the simulator reads this switch.
    pub taint_outlasts_hold: bool,
    /// The fence counts from the `timeAdded` of the unreachable taint its Node carried when last
    /// seen, when that is earlier than its count from contact (`fence_plan::plan`; issue 22,
    /// seed 0x292: the controller tainted a node as an outage of the API server ended, before
    /// its kubelet renewed; the agent, back, saw the taint, was cut off again before the taint
    /// was removed, counted from its new contact and ran a pod 32 s past its deletion). The
    /// agent's shell applies it; only the simulator reads this switch.
    pub seen_taint: bool,
    /// Which peers went silent before this node is counted from the earliest moment its kubelet
    /// may have gone unheard ([`silent_since`]), not from the latest ([`heard_until`]; issue 22,
    /// seed 0x16f: an agent killed 8 s after its link was cut, before it knew, restarted 20 s
    /// later and counted its silence from that start; the 16 of 23 peers cut off with it read
    /// as judged before it, so it held a partial disruption while the controller, which judged
    /// it first, tainted it and deleted two pods 24–27 s before it stopped them). The agent's
    /// shell applies it; only the simulator reads this switch.
    pub silence_ordered: bool,
    /// A restarted agent with no contact of its own yet counts itself heard no later than its
    /// kubelet's last Lease renewal, as peers that reach the API server read it for it
    /// ([`kubelet_heard`]; issue 22, seed 0x33b: an agent killed 3 s before its link was cut
    /// restarted 32 s later in a short outage of the API server, counted itself heard until that
    /// start, took the peers that lost the API server in that outage for peers lost together
    /// with it, and stopped a pod 3.3 s after the controller deleted it for the renewal its
    /// kubelet made before the cut). The agent's shell applies it; only the simulator reads
    /// this switch.
    pub lease_heard: bool,
    /// Every node known cut off holds whenever each of them lost the API server, not only when
    /// all lost it together with this node ([`nobody_reaches`]; issue 22, seeds 0x1084 and
    /// 0x122b: a node cut off alone before an outage of the API server counted the peers that
    /// lost it in the outage as ready, enforced as in a healthy zone through the outage, and
    /// stopped pods the controller-manager, restarted by the outage, never deleted).
    pub everyone_cut_off: bool,
    /// A hold does not turn into enforce for [`RENEWAL_IN_FLIGHT`] after a nudge's read of this
    /// node's Lease was answered (issue 22, seed 0x1cea: a node nudged as the API server
    /// returned renewed on its answered read, but its regular round 4 ms later heard the other
    /// zone back and enforced on deadlines long past, stopping two pods 36 ms before its renewal
    /// landed). The agent's shell applies it; only the simulator reads this switch.
    pub renewal_in_flight: bool,
    /// A run with no answer from the API server yet has peers read its kubelet's Lease, and
    /// counts itself cut off at once when the kubelet is unheard ([`kubelet_unheard`]; issue 22,
    /// seed 0x11d4: an agent restarted 34 s into a cut of its link, sent its first renewal into
    /// the hanging link, and learned it was cut off only at that request's timeout, 10 s later,
    /// stopping a pod 11 s after its deletion). The agent's shell applies it; only the simulator
    /// reads this switch.
    pub unheard_at_start: bool,
    /// The fence counts its deadlines from this node's kubelet renewal as peers read it for a
    /// run with no contact of its own, as from a Ready heartbeat seen ([`kubelet_renewal`]),
    /// not from the contact on disk alone, which predates every minute its agent was down
    /// (issue 22, seed 0xd30). The agent's shell applies it; only the simulator reads this
    /// switch.
    pub renewal_counted: bool,
    /// A hold because every node known is cut off asks the peers of this zone not asked yet
    /// before it stands, as it asks the other zones' ([`unasked`]; issue 22, seed 0x129d: in a
    /// zone of 60, the 50 peers a round asks were all cut off and the 8 that reached the API
    /// server were not asked; the zone read as fully disrupted and every node held, while the
    /// controller, seeing a large zone partly disrupted, tainted one and deleted its pod 18 s
    /// before the fence stopped it).
    pub own_zone_asked: bool,
    /// The contact file names the system clock's scale at its write, its time moved onto it
    /// (`clock::on_system_scale`), so a restart's `clock::steady` sees only a step made after
    /// the previous run's last write (issue 22, seeds 0xd6b and 0x1f01: a step during the
    /// previous run, 100 s before its crash, left every kubelet renewal its peers read for the
    /// restarted agent unplaceable; it counted itself heard until its start and stopped two pods
    /// 21 s late). The agent's shell applies it; only the simulator reads this switch.
    pub system_scale_written: bool,
    /// The peers asked to read this node's Lease are those whose latest answer was
    /// "reachable" first ([`lease_readers`]; issue 22, seed 0xd6b: in a zone of six, the three
    /// asked first were cut off, and the one that reached the API server was never asked). The
    /// agent's shell applies it; only the simulator reads this switch.
    pub readers_able: bool,
    /// A node whose Node carried the unreachable NoExecute taint when last seen has been judged
    /// already ([`Round::tainted`]): its verdict settles once a peer is heard after this node's
    /// own next renewal would have been answered (`QuorumPolicy::renewed_within`), not only
    /// once peers lost together with it would know, and a partial disruption of its small zone
    /// does not hold it (issue 22, seed 0x1b73: a node tainted while cut off came back for a
    /// few seconds and was cut off again before the taint was removed; its pod was deleted for
    /// that taint 3.7 s before the verdict settled). The agent's shell applies it; only the
    /// simulator reads this switch.
    pub taint_settles: bool,
    /// A round's peers that reach the API server read this node's Node, and one read without the
    /// unreachable taint bounds every deadline: the control plane taints the node only after
    /// that read, so it deletes none of its pods before the round's send plus their toleration
    /// ([`TaintReads`]; issue 22, seed 0x14: a node of a small zone, cut off as the zone
    /// went into a partial disruption, stopped its pods though the control plane never tainted
    /// it). The agent's shell applies it; only the simulator reads this switch.
    pub taint_read: bool,
    /// A node not cut off whose Node carries the unreachable taint stops each pod by its
    /// deletion as if cut off (`fence_plan::QuorumVerdict::Tainted`; issue 22, seeds 0x95e,
    /// 0xd6b, 0x1124: a tainted node's link came back for a few seconds and went again, and the
    /// controller deleted a pod before the agent, counting its 15 s, knew it was cut off again).
    /// The agent's shell applies it; only the simulator reads this switch.
    pub fence_on_taint: bool,
    /// A node cut off asks its peers for the pods whose cgroups it finds and its view lacks, and
    /// plans those a peer lists ([`crate::core::unlisted`]; issue 22, seed 0x1e1: the agent's
    /// watch had not delivered a pod the kubelet already ran when the link was cut, and the pod
    /// ran 105 s past its deletion). The agent's shell applies it; only the simulator reads this
    /// switch.
    pub pods_read: bool,
    /// A pending enforce settles at once when a peer that reaches the API server read this
    /// node's Node with the unreachable taint in this round: the control plane is up and has
    /// judged the node, and its pods are deleted as their tolerations run out, whoever else lost
    /// the API server ([`settled_by_taint`]; issue 22, seed 0x1d5b: a node tainted after a short
    /// return waited 15 s for its answers to settle and killed a pod 15.8 s after its deletion).
    /// The agent's shell applies it; only the simulator reads this switch.
    pub taint_read_settles: bool,
    /// A run killed before it knew itself cut off hands its wait for an answer on to the next
    /// one (`core::fencing::Link::unanswered`, the contact file's second line), which counts its
    /// own on top rather than `unreachableAfter` afresh from its start (issue 22, seed 0x2420: an
    /// agent killed three times, each before `unreachableAfter` of a link that hung, knew itself
    /// cut off only 19 s after the controller deleted a pod). The agent's shell applies it; only
    /// the simulator reads this switch.
    pub unanswered_handed_on: bool,
    /// A peer silent in a round answers for it what its latest answer "reachable" still says
    /// ([`Remembered`]): that it reached the API server at that contact, while the contact is
    /// within `unreachableAfter` (issue 22, seed 0x1a62: the one peer of a zone that reached the
    /// API server was restarted; the three nodes cut off took its silence for no evidence of a
    /// live control plane and held, and the controller deleted a pod 1.9 s before its node
    /// stopped it). The agent's shell applies it; only the simulator reads this switch.
    pub silent_remembered: bool,
    /// A kubelet renewal peers read after this run's own requests stopped reaching the API
    /// server moves the deadlines (`fencing::counted_with_kubelet`, and every round asks for the
    /// read): the kubelet's path to the API server is not the agent's. The agent's shell applies
    /// it; only the simulator reads this switch.
    pub kubelet_heard_after: bool,
    /// An agent whose own requests fail probes the kubelet's path to the API server each round
    /// (`fencing::NodePath`, `fence.kubeletServer`): while it is answered ready, the fence holds
    /// and the agent answers its peers "reachable" (issue 22, seed 0x420 of
    /// `simulate --agent-path-cuts`: every other node cut off, the one node whose kubelet still
    /// reached the API server answered "cut off" for its agent's own failed path, every agent
    /// held on "every node known cut off", and the controller, which heard that node, evicted the
    /// others' zone). The agent applies it when `fence.kubeletServer` is set; only the simulator
    /// reads this switch.
    pub node_path: bool,
    /// After the first renewal stored past a failure, until the one that proves the kubelet
    /// renewed too, the agent reads its Lease every second, and a read not answered within it
    /// cuts the node off again at once (`fencing::Link::unproven`; issue 22, seeds
    /// 0x63a4 and 0x7c1b: a link back for 2.4–2.8 s between two cuts, the kubelet's renewal
    /// never stored in it, and the agent knew itself cut off again only `unreachableAfter` after
    /// its return, after the controller had deleted a pod counted from the first cut). The
    /// agent's shell applies it; only the simulator reads this switch.
    pub return_watched: bool,
    /// An agent not cut off lists its node's pods as soon as a pod's cgroup appears that its
    /// view lacks, and plans those the list holds (`agent::pod_cgroups`; issue 22, seed 0x2041:
    /// the agent's watch was 5.5 s late, the kubelet's started a pod 1.6 s before the link was
    /// cut with no peer to list it, and it ran 9.6 s past its deletion). The agent's shell
    /// applies it; only the simulator reads this switch.
    pub cgroup_listed: bool,
    /// A run that stops cut off by a relapse writes down the contact its deadlines counted
    /// from, and the next run resumes the relapse: cut off at once, counting from it
    /// (`fencing::Link::with_unproven_return`; issue 22, seed 0x12ec with
    /// `--controller-keeps-state`: an agent killed 4.4 s into a relapse after an outage of the
    /// API server restarted counting from its unproven return, knew itself cut off only
    /// `unreachableAfter` after it, and two pods ran 7.7 s past their deletion). The agent's
    /// shell applies it; only the simulator reads this switch.
    pub relapse_kept: bool,
    /// The staggered expiry orders this node's silence after its peers' by its kubelet's last
    /// renewal as the peers read it, when they did, as well as by its own last contact (issue 22:
    /// the contact alone leaves the kubelet's lag in the order's tie, and in seed 0x1f40 a node
    /// whose contact came 24.1 s after those of the two nodes of its zone of five cut off before
    /// it, within that 25.4 s tie, enforced in the partial disruption they made and stopped a pod
    /// the control plane kept; its kubelet's renewal as read came 26 s after them).
    pub kubelet_ordered: bool,
    /// A pod's SIGTERM, which nothing later undoes, waits while the latest round's peers say they
    /// reach the API server but none of their reads of it came back ([`ServerReads`]); its kill
    /// keeps its time (issue 22: the API server went down for everyone a few seconds before a
    /// SIGTERM sent 30 s ahead of its kill, while the peers still said they reached it; two
    /// rounds later the verdict was hold, and seeds such as 0x147d and 0x8d3 stopped pods the
    /// control plane kept). The agent's shell applies it; only the simulator reads this switch.
    pub sigterm_read: bool,
    /// A pod's SIGTERM also waits under an enforce the staggered expiry only guesses
    /// ([`Verdict::in_doubt`]) while the peers read this node's Node without the taint; its kill
    /// keeps its time (issue 22: in a small zone's partial disruption, a node judged after the
    /// zone was disrupted is never tainted, and pods whose grace period is longer than their
    /// toleration less `READ_SLACK` got their SIGTERM at once, as in seeds 0xd97 and 0x2448).
    /// The agent's shell applies it; only the simulator reads this switch.
    pub sigterm_doubt: bool,
    /// The taint counts from no earlier than the instant the controller-manager's leader Lease
    /// proves no taint eviction timer ran ([`crate::core::leader`]; issue 22, seeds 0xefd,
    /// 0xf5f: an outage of a minute restarted the controller-manager, which starts every
    /// toleration again when it takes over; the agent, back before it, counted the old taint's
    /// `timeAdded` and stopped at once pods the control plane kept). The agent's shell applies
    /// it; only the simulator reads this switch.
    pub leader_read: bool,
    /// A node cut off in a small zone holds while a peer that reaches the API server reads its
    /// zone recorded as partially disrupted and its Node without the unreachable taint
    /// ([`recorded_hold`]).
    pub zone_recorded: bool,
    /// A node its peers read tainted, with no read without the taint since its hold began,
    /// plans without the hold's end ([`planning`]): a hold is a bet that the control plane
    /// taints nothing, and the taint read says it may have, during the hold (issue 22, seed
    /// 0xcdf7).
    pub taint_during_hold: bool,
    /// A renewal of the kubelet's Lease the peers read for a run with no contact of its own
    /// counts as the kubelet's in the contact the deadlines count from, whatever failed before
    /// it, and not as this agent's contact (`fencing::Link::note_renewal`; issue 22, seed 0x11f:
    /// an agent restarted while cut off was read a renewal 9 s later than the contact on disk,
    /// its partition on record made that an unproven return, and it counted from the contact on
    /// disk and stopped a pod the zone's partial disruption kept). The agent's shell applies it;
    /// only the simulator reads this switch.
    pub renewal_exact: bool,
    /// A node whose Node, as last seen, carries the Ready=Unknown the controller wrote counts its
    /// deadlines from that write at the latest (`fence_plan::queued_contact`): the controller
    /// queued it for the taint, and only the kubelet's posted status takes it out. The agent's
    /// shell applies it; only the simulator reads this switch.
    pub unknown_queued: bool,
    /// The peers' answers carry the times they read on the asker's Node, and the fence counts
    /// from them (`NodeReads`; issue 22, seed 0x889f: an agent restarted while cut off had no
    /// view of its Node, whose Ready the controller had written Unknown while it was cut off;
    /// it counted from its kubelet's last renewal, and the taint came 25 s before that count
    /// said). The agent's shell applies it; only the simulator reads this switch.
    pub node_times_read: bool,
    /// A pending enforce settles at once when a peer that reaches the API server read this
    /// node's Node, in this round, with its Ready condition Unknown and without the unreachable
    /// taint, and its zone recorded normal: the controller has queued the node, and its worker
    /// taints it when the zone's limiter next gives a token, at any pass ([`settled_by_queue`];
    /// issue 22, seed 0xe28: a node still recorded Unknown from an earlier partition, cut off
    /// again, waited for its answers to settle and killed a pod tolerating 0 s 88 ms after the
    /// taint its zone's next token brought). Zones of up to 100 nodes have their record asked
    /// for it ([`asks_zone_record`]). The agent's shell applies it; only the simulator reads this
    /// switch.
    pub queue_read_settles: bool,
    /// While no controller-manager leads ([`Round::leaderless_unknown`]), a node read recorded
    /// with the Ready=Unknown it saw then is not held by its zone as recorded
    /// ([`leaderless_first`]): the next leader's first pass queues it and its worker may taint it
    /// on the zone's fresh token before the pass sets the zone's rate (issue 22, seed 0xe75:
    /// after an outage that restarted the controller-manager, a node recorded Unknown from before
    /// it, cut off again, held on its zone recorded partially disrupted, and the new leader's
    /// first pass tainted it and deleted a pod tolerating 0 s). The agent's shell applies it;
    /// only the simulator reads this switch.
    pub leaderless_first: bool,
    /// A node cut off holds, as for [`Fixes::zone_recorded`], while a peer that reaches the API
    /// server reads its zone recorded with no node Ready, no Node outside it and none gone from
    /// Ready after this one, and its Node without the unreachable taint: every zone has been
    /// fully disrupted since the controller judged it ([`ZoneRecord::every_zone_down`],
    /// [`recorded_hold`]; issue 22, seed 0x8aa: of a zone of two, both cut off, the first back
    /// made the other enforce before its kubelet had posted Ready, and the stop came 32 s before
    /// the taint).
    pub master_recorded: bool,
    /// A peer that tells this node it reaches the API server again (a nudge) is no longer
    /// among those whose latest answer was "cut off" ([`note_unable`]), so the next round asks
    /// it first to read for this node (the zone record, the Lease, the pods; issue 22, seed
    /// 0x25ee: of a zone of five cut off, the first back nudged the others; one asked a peer
    /// still cut off for the record, enforced on the staggered expiry's guess, and stopped a pod
    /// a round before the record would have held it). The agent's shell applies it; only the
    /// simulator reads this switch.
    pub nudger_reads: bool,
    /// A `not-ready:NoExecute` taint on the Node as last seen keeps each pod's timer for it
    /// through the controller's swap for the unreachable one: the fence counts it
    /// (`fence_plan::Taints::not_ready`), and the quorum counts the node as seen tainted
    /// ([`Round::tainted`]; thirty-ninth session). The agent's shell applies it; only the
    /// simulator reads this switch.
    pub not_ready_kept: bool,
    /// Not cut off, a taint the peers read ([`TaintReads::tainted_from`]) counts no more: the
    /// agent's own view is fresh again, and a taint they read may since have been swapped for
    /// not-ready, or removed (thirty-ninth session, `--not-ready`; seed 0x1cab). A read without
    /// it still bounds the count (`fence_plan::QuorumVerdict::Tainted`). The agent's shell
    /// applies it; only the simulator reads this switch.
    pub own_view_at_return: bool,
    /// A Ready=False the kubelet posted on the Node as last seen, with neither of the
    /// controller's taints, counts as the not-ready taint added at the post
    /// (`state::StoredNode::not_ready_queued_since`): a link cut before the taint came left the
    /// view without it while its timers ran (fortieth session, `--not-ready`; seeds 0xc9, 0xed). The
    /// agent's shell applies it; only the simulator reads this switch.
    pub ready_false_queued: bool,
    /// A pod that tolerates the unreachable taint forever, but not-ready for a while, is stopped
    /// by its not-ready timer when that ends before the controller's swap for the unreachable
    /// taint can cancel it (`fence_plan`'s `not_ready_only`; fortieth session, `--not-ready`;
    /// seed 0x4f3). Applied in `fence_plan` itself; the simulator reverts it on the plans.
    pub not_ready_only: bool,
    /// A peer's read of this node's Node, and its zone record, count the not-ready taint as
    /// tainted too (`api::node::node_read`): a read that found only it no longer moves the
    /// deadlines later as a read without a taint (fortieth session, `--not-ready`; seed 0x1514:
    /// a pod counted from the unreachable taint its agent saw, swapped for not-ready after the
    /// cut, ran 54 s past its deletion). The peers' shell applies it; only the simulator reads
    /// this switch.
    pub not_ready_read: bool,
    /// Cut off, the fence counts no eviction from before the instant a peer's reads of the
    /// controller-manager's leader Lease prove no timer started before (`LeaderReads`), and
    /// after a hold waits, at most `leader::RETURN_READ_WAIT`, while a peer that says it reaches
    /// the API server has not read it since it lost it (the CI run after the fortieth session:
    /// back from an outage of the API server for everyone longer than the controller-manager's
    /// renew deadline, the peers read again seconds before this node did, and the fence stopped
    /// a pod whose timer the controller-manager that took over had started again). The agent's
    /// shell applies it; only the simulator reads this switch.
    pub peer_leader_read: bool,
    /// A node cut off holds, as for [`Fixes::zone_recorded`], while a peer that reaches the API
    /// server reads its Node still Ready and without the taint, and its zone recorded so that
    /// judging it makes a partial disruption of a small zone
    /// ([`ZoneRecord::disrupted_once_judged`], [`recorded_hold`]; forty-second session, seed
    /// 0x47a: of a zone of four, a node cut off 15 s after two others enforced on the staggered
    /// expiry's guess and stopped two pods tolerating 0 s, while the controller, which had
    /// recorded the two Unknown, judged it into a partial disruption and never tainted it).
    pub judged_partial: bool,
    /// While the Node as last seen shows its kubelet's Ready=False or the not-ready taint, the
    /// agent reads its Lease every second, and a failure cuts the node off at once
    /// (`fencing::Link::note_not_ready`). The agent's shell applies it; only the simulator reads
    /// this switch.
    pub not_ready_watched: bool,
    /// A peer's read of this node's Node with its kubelet's Ready=False and without either taint
    /// counts as a read of it queued for the taint ([`queue_read`]): the controller queues it
    /// for the not-ready taint on every pass while that stands. The peers' shell applies it;
    /// only the simulator reads this switch.
    pub ready_false_read: bool,
    /// Two peers read the zone as recorded in each round ([`ZONE_READERS`]), not one: a reader
    /// down since the last round leaves the other's record (forty-third session, seed 0x1eed).
    /// The agent's shell applies it; only the simulator reads this switch.
    pub two_zone_readers: bool,
    /// What the peers read of this node's Node in earlier partitions ([`TaintReads`]) is
    /// forgotten once its own view, not cut off, shows the controller's taint removed: a taint
    /// read later is a new one (forty-third session, `--not-ready`, seed 0x26d5: the rounds of a
    /// partition that ended 131 s before the kubelet posted Ready=False counted the next
    /// partition's not-ready taint from 207 s before it came, and a pod tolerating 255 s was
    /// stopped at once, 6 s before a master disruption removed the taint). The agent's shell
    /// applies it; only the simulator reads this switch.
    pub reads_forgotten: bool,
    /// A peer's read of this node's Node says when the not-ready taint was added
    /// ([`NodeRead::not_ready_added`]), which the fence counts from as from the same taint on its
    /// own view, through the controller's swap for the unreachable one ([`NodeReads`]; forty-fourth
    /// session, `--not-ready`, seed 0xe8: a kubelet posted Ready=False 2.5 s before the cut, and its
    /// agent, whose view lagged, counted a pod tolerating the not-ready taint 25 s from its last
    /// contact, and stopped it 30 s after the controller deleted it). The peers' shell applies
    /// it; only the simulator reads this switch.
    pub not_ready_time_read: bool,
    /// Each pod's timers count from no earlier than its creation (`FencePod::created`): the
    /// controller starts the timer of a pod created on a Node already tainted when it handles the
    /// pod, not at the taint's `timeAdded` (forty-fourth session, `--not-ready`, seed 0x21: n5's
    /// kubelet had posted Ready=False 113 s before pod 10, tolerating the not-ready taint 240 s,
    /// was created on it; the fence, counting from the taint, stopped it at 294 s, 112 s before
    /// its deletion was due, and the kubelet's Ready=True then cancelled it); and one created
    /// after the taint on now was added has no timer of the run's first (seed 0x19e). The
    /// agent's shell applies it; only the simulator reads this switch.
    pub pod_created: bool,
    /// A pod tolerating the unreachable taint forever is planned on the not-ready taint's timer
    /// until the latest instant the controller can swap that taint for the unreachable one,
    /// counted from the latest contact it may have heard (`fence_plan::PlanContact::latest`), not
    /// from the count of the deadlines (forty-fifth session, `--not-ready`, seed 0xf61: back for
    /// 7 s after a cut, too short for the count to move, n0 saw its kubelet's Ready=False swap
    /// the unreachable taint for the not-ready one; cut again, it expected the swap back 40 s
    /// after the earlier contact, dropped the plan of pod 2, tolerating not-ready 21 s, and ran it
    /// 94 s past its deletion). The agent's shell applies it; only the simulator reads this
    /// switch.
    pub swap_latest: bool,
    /// A peer silent in a round that answered "cut off" within [`CUT_OFF_STANDS`] before counts
    /// as that answer where counting it as ready alone would hold a partial disruption of a small
    /// zone ([`Round::cut_off_remembered`]; forty-fifth session, `--not-ready`, seed 0xb23: of a
    /// zone of six, five nodes lost the API server, and the sixth, not Ready and cut off too,
    /// then lost its peers; counted as ready, its silence made the zone partly disrupted, and
    /// n9 held while the controller, which saw the zone fully disrupted, deleted its pod 13).
    /// The agent's shell applies it; only the simulator reads this switch.
    pub cut_off_remembered: bool,
    /// A cut-off peer whose own kubelet's last renewal, as its readers read it, came more than
    /// the monitor period before this node's kubelet's (both as read, each aged on its own
    /// clock) counts as judged before this node ([`Round::silent_before`],
    /// [`PeerReport::kubelet_age`]; forty-sixth session, seed 0xe0e: of a zone of six, three
    /// nodes lost the API server 10–12 s before n4, their contacts within the order's tie of
    /// n4's; n4 guessed enforce and stopped a pod that the controller, which had judged the
    /// three first by their kubelets' renewals, kept). Not while a silent peer of the zone could
    /// make it fully disrupted ([`Round::silent_before`]). The agent's shell applies it; only
    /// the simulator reads this switch.
    pub peer_kubelet_ordered: bool,
    /// A peer's answer that its latest read of the leader Lease found no process leading counts
    /// as this node's own such read for [`leaderless_first`] ([`PeerLeader::leaderless`]), and a
    /// partial disruption of a small zone then holds no node read queued for the taint by its
    /// count either (forty-sixth session, seeds 0xbd5 and 0x2f7d with
    /// `peer_kubelet_ordered`: a node cut off throughout held on its zone's count and record
    /// while an outage cost the controller-manager its lead; the new leader's first pass
    /// tainted it on the zone's fresh token and deleted a pod tolerating 0 s). The agent's shell
    /// applies it; only the simulator reads this switch.
    pub peer_leaderless: bool,
    /// A partial disruption of a small zone, by the answers' count, holds nothing while a peer
    /// that reaches the API server reads the zone recorded with none of its Nodes Ready and a
    /// node of another zone reaches it ([`recorded_full`]; forty-sixth session, `--not-ready`,
    /// seed 0x1304: the fifth node of a zone of five reached the API server with its kubelet's
    /// Ready=False, so the answers counted 4 of 5 cut off and n3 held, while the controller saw
    /// the zone fully disrupted, tainted n3 and deleted a pod tolerating 0 s). The agent's
    /// shell applies it; only the simulator reads this switch.
    pub full_recorded: bool,
    /// Not cut off, an unreachable taint whose time is known (this node's view, or the
    /// `timeAdded` its peers read) and, to the second, no earlier than the latest round in which
    /// a peer read the Node without it (and less than a grace period later) counts from the later
    /// of its time and that round's, even when the count from contact, or from that read less
    /// `fence_plan::READ_SLACK`, is earlier (`fence_plan::after_read`,
    /// `fence_plan::Taints::unreachable_after_read`; forty-seventh session, seeds 0x114, 0x892
    /// and 0xae6: the controller tainted a node cut off for half a minute or more 4 ms to 1.8 s
    /// after the peers' last read without the taint, as its link came back; fencing on the
    /// taint, the agent counted 9–11 s earlier than the taint and stopped a pod whose toleration
    /// had not run when the kubelet's return removed the taint). Cut off, the slack stays: an
    /// agent down near such a deadline would let the pod run on (measured: four more pods ran on
    /// while their agent was down in 1–10,000). The agent's shell applies it; only the simulator
    /// reads this switch.
    pub taint_after_read: bool,
    /// Whether the peers' reads for this node came back in some round ([`ServerReads::ever`]) is
    /// kept in the state file (`peersRead`), and a restarted run begins from it: its SIGTERMs wait
    /// for a read from its first round, as the run before's did (forty-eighth session, seed
    /// 0x19ca: of a zone of five, n4 lost the API server first and its agent started again 24 s
    /// later, as the four others lost it too; one still said it reached the API server though its
    /// read failed, and the new run, which had not yet seen a read come back, sent a SIGTERM
    /// 30 s ahead of its kill, 3.5 s before n4's link came back). The agent's shell applies it;
    /// only the simulator reads this switch.
    pub peers_read_kept: bool,
    /// A peer that reaches the API server reads this node's zone, the only one, recorded with
    /// none of its Nodes Ready and this node untainted, though this node was not the last to
    /// leave Ready (`ZoneRecord::every_zone_down` without `asker_last`): the controller removed
    /// every taint as every zone went down and taints nothing while that stands, so the fence
    /// holds, but still stops each pod whose toleration may have run out while a taint stood
    /// before (`Verdict::stops_due`, `fence_plan::QuorumVerdict::Hold::stop_due`; forty-eighth
    /// session, seed 0x1b9c: n1, judged before two others of its zone of five, counted its silent
    /// peers Ready and SIGTERMed a pod a grace period ahead of a deletion that never came). The
    /// agent's shell applies it; only the simulator reads this switch.
    pub zone_down_due: bool,
    /// Of the peers whose latest answer was not "reachable", the silent ones are asked to read
    /// for this node before those that answered "cut off" ([`Unable`]; forty-ninth session, seed
    /// 0x1def). The agent's shell applies it; only the simulator reads this switch.
    pub silent_readers_first: bool,
    /// Under a hold on every zone down, recorded, for a node that may have been tainted before
    /// (`zone_down_due`), a pod that tolerates the taint for as long as it could have stood,
    /// from the asker's Ready written Unknown to the last Node's, is not stopped
    /// ([`ZoneRecord::tolerated_from`], [`zone_down_tolerated`]; forty-ninth session, seed
    /// 0x2531: the controller tainted n2 and, in the same pass, found every zone down and
    /// removed the taint; the hold stopped pod 5, tolerating 7 s, which no taint since n2's
    /// Unknown write 5 s before could have deleted).
    pub zone_down_window: bool,
}

impl Fixes {
    pub const ALL: Fixes = Fixes {
        settled_every_zone: true,
        unasked_counted: true,
        staggered_expiry: true,
        silent_peer_ignored: true,
        restart_heard: true,
        other_zones_asked: true,
        resumed_cut_off: true,
        wall_scale_carried: true,
        kubelet_after_return: true,
        settled_early: true,
        taint_outlasts_hold: true,
        seen_taint: true,
        silence_ordered: true,
        lease_heard: true,
        everyone_cut_off: true,
        renewal_in_flight: true,
        unheard_at_start: true,
        renewal_counted: true,
        own_zone_asked: true,
        system_scale_written: true,
        readers_able: true,
        taint_settles: true,
        taint_read: true,
        fence_on_taint: true,
        pods_read: true,
        taint_read_settles: true,
        unanswered_handed_on: true,
        silent_remembered: true,
        kubelet_heard_after: true,
        node_path: true,
        return_watched: true,
        cgroup_listed: true,
        relapse_kept: true,
        kubelet_ordered: true,
        sigterm_read: true,
        sigterm_doubt: true,
        leader_read: true,
        zone_recorded: true,
        taint_during_hold: true,
        renewal_exact: true,
        unknown_queued: true,
        node_times_read: true,
        queue_read_settles: true,
        leaderless_first: true,
        master_recorded: true,
        nudger_reads: true,
        not_ready_kept: true,
        own_view_at_return: true,
        ready_false_queued: true,
        not_ready_only: true,
        not_ready_read: true,
        peer_leader_read: true,
        judged_partial: true,
        not_ready_watched: true,
        ready_false_read: true,
        two_zone_readers: true,
        reads_forgotten: true,
        not_ready_time_read: true,
        pod_created: true,
        swap_latest: true,
        cut_off_remembered: true,
        peer_kubelet_ordered: true,
        peer_leaderless: true,
        full_recorded: true,
        taint_after_read: true,
        peers_read_kept: true,
        zone_down_due: true,
        silent_readers_first: true,
        zone_down_window: true,
    };
}

/// The quorum's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuorumPolicy {
    /// Always [`Fixes::ALL`] but in the simulator's regression runs.
    pub fixes: Fixes,
    /// No peer is known at all.
    pub without_peers: Undecided,
    /// Every node of this zone is cut off and no other zone is known to be down too.
    pub whole_zone_cut_off: Undecided,
    /// Peers whose last contact is at most this much after ours count as lost together with this
    /// node: our own last contact may be up to a renew interval older than the heartbeat the
    /// controller last saw, and the controller judges all nodes on the same monitor tick (5 s).
    pub lost_together: Duration,
    /// How long after this node's last contact every peer lost together with it — in this zone
    /// or any other — answers that it is cut off ([`windows`]). Before then, no verdict says
    /// enforce on the strength of peers' answers: a peer that still says "reachable", or a count
    /// that is not yet a disruption, may only not know the same outage yet.
    pub settled_after: Duration,
    /// How long after its own last contact a peer still answers that it reaches the API server
    /// (`unreachableAfter`, [`answer`]): once settled, a peer that says so reached it no earlier
    /// than `settled_after` minus this after this node's last contact ([`settled_early`] asks as
    /// much of a peer before then).
    pub unreachable_after: Duration,
    /// How much later than another node's last contact this node's must be for the controller
    /// to have certainly judged that node first ([`order_tie`]).
    pub order_tie: Duration,
    /// As `order_tie`, against this node's kubelet's last renewal as peers read it instead of its
    /// own last contact ([`order_tie_read`]).
    pub order_tie_read: Duration,
    /// How long this node's kubelet, as its peers read its Lease, must have gone unheard to
    /// prove the node's link cut: `unreachable_after`, and no less than the kubelet's renew
    /// interval (`kubelet_lag`, docs/semantics.md §13), which a kubelet on a working link never
    /// misses ([`kubelet_unheard`]).
    pub unheard_after: Duration,
    /// How long after this node's last contact its next renewal is sent and answered on a
    /// working link: the renew interval, or the kubelet's lag for the first one after a return
    /// (`fencing::next_renewal`), and [`ANSWERED_WITHIN`]. A peer that reached the API server
    /// later than that shows that the API server still answered after this node lost its link,
    /// which for a node seen tainted settles its verdict ([`settled_early`]).
    pub renewed_within: Duration,
    /// Rounds read a change to the zone record within a monitor period of it ([`record_in_time`]
    /// of `[peers] interval` and `nodeMonitorPeriod`; true for the defaults, 3 s and 5 s, which
    /// [`QuorumPolicy::new`] assumes). A record that holds only until a Node recorded not Ready
    /// is posted Ready ([`ZoneRecord::disrupted_once_judged`]) needs it: the controller may taint
    /// this node a monitor period after the pass that sees the post.
    pub record_in_time: bool,
}

impl QuorumPolicy {
    /// The policy for a Lease renew interval, `unreachableAfter` and the kubelet's lag
    /// (`fence_plan::kubelet_lag`), with the two undecided cases' choices: the windows from
    /// [`windows`], every fix on.
    pub fn new(
        renew: Duration,
        unreachable_after: Duration,
        kubelet_lag: Duration,
        without_peers: Undecided,
        whole_zone_cut_off: Undecided,
    ) -> QuorumPolicy {
        let (lost_together, settled_after) = windows(renew, unreachable_after);
        QuorumPolicy {
            fixes: Fixes::ALL,
            without_peers,
            whole_zone_cut_off,
            lost_together,
            settled_after,
            unreachable_after,
            order_tie: order_tie(renew, kubelet_lag),
            order_tie_read: order_tie_read(renew),
            unheard_after: unreachable_after.max(kubelet_lag),
            renewed_within: renew.max(kubelet_lag) + ANSWERED_WITHIN,
            record_in_time: true,
        }
    }
}

/// How far apart two nodes' last contacts must be for the node lifecycle controller to have
/// certainly judged the earlier one first.
///
/// The controller orders nodes by when it saw each one's last Lease renewal, on its 5 s monitor
/// tick. When this agent renews the node's Lease itself (`kubelet_lag` zero), the renewal is its
/// last contact, and only the tick blurs the order. When the kubelet renews it, the kubelet's last
/// stored renewal lies anywhere from `kubelet_lag` before the agent's last contact to one renew
/// interval after it (the agent's next write failed, the kubelet's may have got through just
/// before the cut): two nodes whose contacts are closer than that plus the tick may have been
/// judged in either order.
pub fn order_tie(renew: Duration, kubelet_lag: Duration) -> Duration {
    if kubelet_lag.is_zero() {
        NODE_MONITOR_PERIOD
    } else {
        renew + kubelet_lag + NODE_MONITOR_PERIOD
    }
}

/// How much later than another node's last contact this node's kubelet's last renewal, as peers
/// read its Lease, must be for the controller to have certainly judged that node first. The
/// renewal is stored no earlier than it is stamped, and the controller counts it no earlier than
/// stored (it counts each advance of `renewTime` when it observes it, docs/semantics.md §5.2,
/// §13); the other node's kubelet stored its last renewal no later than its link was cut, at
/// most one renew interval after its agent's last contact (its agent's next request would have
/// been answered). So only that interval and the monitor tick blur the order, not the kubelet's
/// lag before this node's contact that [`order_tie`] allows for.
pub fn order_tie_read(renew: Duration) -> Duration {
    renew + NODE_MONITOR_PERIOD
}

/// The latest moment the control plane may have heard this node, on the caller's monotonic
/// scale: this run's own last contact; or, when this run has none yet, the later of the contact a
/// previous run persisted and this run's start — while no agent ran, the kubelet kept renewing
/// the node's Lease, so the node may have been heard until then (issue 22: an agent restarted in
/// an outage counted from a contact on disk that predated it, saw its peers' later contacts as
/// "not lost together", and enforced). The fence counts its deadlines from the persisted contact,
/// or from the kubelet renewal peers read for this run when later ([`kubelet_renewal`]): never
/// late.
pub fn heard_until<T: Ord + Copy>(this_run: Option<T>, persisted: Option<T>, started: T) -> T {
    match this_run {
        Some(c) => c.max(persisted.unwrap_or(c)),
        None => persisted.map_or(started, |p| p.max(started)),
    }
}

/// The earliest moment this node's kubelet may have gone unheard, on the caller's monotonic
/// scale: this run's own last contact; or, when this run has none yet, the contact a previous run
/// persisted (the kubelet may have stopped renewing right after it, the link cut while no agent
/// ran, or before that run noticed); with neither, this run's start. [`heard_until`] is the
/// latest such moment; this one orders this node's silence against its peers'
/// ([`Round::own_silence_age`]).
pub fn silent_since<T: Ord + Copy>(this_run: Option<T>, persisted: Option<T>, started: T) -> T {
    this_run.or(persisted).unwrap_or(started)
}

/// This node's two ages at a round, from this run's last contact, the one a previous run
/// persisted, the run's heard bound ([`resumed_heard_bound`]) and its kubelet's last renewal as
/// its peers read it this round ([`kubelet_heard`]; it lowers the bound), each turned into an
/// age by `age`: `(own_contact_age, own_silence_age)` of [`Round`] — since the latest moment the node
/// may have been heard ([`heard_until`]), and since the earliest its kubelet may have gone
/// unheard ([`silent_since`]). Both unbounded while no contact is known at all. The agent's
/// quorum task and the simulator both take them from here; `fixes` switches off, in the
/// simulator only, `restart_heard` (the latest contact known, whatever the start) and
/// `silence_ordered` (the silence counted as the contact).
pub fn own_ages<T: Ord + Copy>(
    this_run: Option<T>,
    persisted: Option<T>,
    bound: T,
    kubelet: Option<T>,
    fixes: &Fixes,
    age: impl Fn(T) -> Duration,
) -> (Duration, Duration) {
    let Some(latest) = this_run.max(persisted) else {
        return (Duration::MAX, Duration::MAX);
    };
    // The kubelet last heard before the run's bound, as a peer read its Lease: the node was
    // heard no later than that (or than the contact on disk, if later).
    let bound = match kubelet {
        Some(k) if fixes.lease_heard => bound.min(k),
        _ => bound,
    };
    let heard = if fixes.restart_heard {
        heard_until(this_run, persisted, bound)
    } else {
        latest
    };
    let silent = if fixes.silence_ordered {
        silent_since(this_run, persisted, bound)
    } else {
        heard
    };
    (age(heard), age(silent))
}

/// How long after a nudge's read of this node's Lease was answered a hold does not turn into
/// enforce (`Fixes::renewal_in_flight`): the read's answer sent a renewal at once, which lands
/// within milliseconds when the link is back; a round that hears the peers back meanwhile would
/// stop pods for deadlines long past just before it does. A renewal that does not land leaves
/// the next round's enforce standing.
pub const RENEWAL_IN_FLIGHT: Duration = Duration::from_secs(1);

/// How soon a renewal sent on a working link is answered, at most, for
/// [`QuorumPolicy::renewed_within`]. Answers come within milliseconds; a second leaves room for a
/// loaded API server.
pub const ANSWERED_WITHIN: Duration = Duration::from_secs(1);

/// The most peers a round asks to read this node's kubelet Lease for it ([`lease_readers`]).
pub const LEASE_READERS: usize = 3;

/// The most peers a round asks to read this node's zone as recorded ([`zone_readers`]): one
/// list of up to `zone::RECORD_SCAN` Nodes each, every round of every node cut off (each reader
/// answers every asker of a zone from one list a second). The two asked are the peers likeliest
/// to reach the API server: a reader that went down since the last round leaves the round the
/// other's record (forty-third session, seed 0x1eed: with one, the round after the reader
/// crashed decided on the counts alone and stopped a pod its zone's record had held). A round
/// neither answers with one decides as before the record existed.
pub const ZONE_READERS: usize = 2;

/// How far a kubelet's `renewTime` read back through this run's wall scale may be from the
/// instant it was stamped, when the wall clock was found steady over the span
/// ([`crate::core::clock::steady`]): the tolerance of that check. [`kubelet_heard`] adds it,
/// toward later (heard later: a hold leans that way).
pub const RENEWAL_SLACK: Duration = crate::core::clock::STEADY_WITHIN;

/// Which of a round's peers (`asked`, in the order asked) are asked to read this node's kubelet
/// Lease for it (or, alike, to list its pods), as one flag per peer: none when `skip`;
/// otherwise up to [`LEASE_READERS`], those of other zones first (a partition that cut this node off took its
/// own zone's peers with it more often than any other zone's), and those whose latest answer
/// was not "reachable" (`unable`, [`note_unable`]) after every other: only a peer that reaches
/// the API server reads it (issue 22, seed 0xd6b: the three first of a zone of six were cut off,
/// and the one that reached the API server was never asked). Each read is one GET of a small
/// object by a peer that reaches the API server.
pub fn lease_readers(asked: &[Peer], zone: &str, skip: bool, unable: &Unable) -> Vec<bool> {
    readers(asked, zone, skip, unable, LEASE_READERS)
}

/// Which of a round's peers are asked to read this node's zone as recorded
/// (`peer::Question::zone_record`, [`ZoneRecord`]): the first `most` ([`ZONE_READERS`]; one in
/// the simulator's runs without `Fixes::two_zone_readers`) that [`lease_readers`] would choose,
/// in its order; none when `skip`. Each is one list of the zone's Nodes, so fewer than the
/// Lease's single GETs.
pub fn zone_readers(
    asked: &[Peer],
    zone: &str,
    skip: bool,
    unable: &Unable,
    most: usize,
) -> Vec<bool> {
    readers(asked, zone, skip, unable, most)
}

/// Whether a round asks for its zone as recorded ([`zone_readers`]): with the rule on
/// (`Fixes::zone_recorded`), and only for a zone the peer list (`peers`, this node's zone label
/// `zone`) does not already show larger than a reader lists (`core::zone::RECORD_SCAN`, 100),
/// this node included. A record of a zone larger than [`LARGE_ZONE`] holds nothing (the
/// controller taints it in a partial disruption too), but says whether it is normal, for a node
/// read queued for the taint ([`queue_read`]); with that rule off, no record of one is asked.
pub fn asks_zone_record(fixes: &Fixes, peers: &[Peer], zone: &str) -> bool {
    let most = if fixes.queue_read_settles {
        crate::core::zone::RECORD_SCAN
    } else {
        LARGE_ZONE
    };
    // This node and its peers listed in the zone: at most `most`.
    fixes.zone_recorded && peers.iter().filter(|p| p.zone == zone).count() < most
}

/// [`lease_readers`] and [`zone_readers`], up to `most` peers: those of other zones before
/// those of this node's within each rank, the ranks in [`Unable::rank`]'s order.
fn readers(asked: &[Peer], zone: &str, skip: bool, unable: &Unable, most: usize) -> Vec<bool> {
    let mut flags = vec![false; asked.len()];
    if skip {
        return flags;
    }
    let mut order: Vec<usize> = (0..asked.len()).collect();
    // Stable: the order asked stands within each rank and zone.
    order.sort_by_key(|&i| (unable.rank(&asked[i].node), asked[i].zone == zone));
    for i in order.into_iter().take(most) {
        flags[i] = true;
    }
    flags
}

/// The peers whose latest answer was not "reachable" ([`note_unable`]), asked last to read for
/// this node ([`lease_readers`], [`zone_readers`]). Of those, the silent ones are asked before
/// the ones that answered "cut off" (`Fixes::silent_readers_first`): a peer that answered "cut
/// off" tells this node when it reaches the API server again (a nudge, which takes it out of
/// here), a silent one that comes back cannot, as it never had the question (issue 22, seed
/// 0x1def: of a zone of four all cut off, the first back was cut off from its peers too; a
/// peer's next round asked the two that had said "cut off" for the zone record, enforced on
/// the staggered expiry's guess, and stopped a pod one round before the record held it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unable {
    /// Silent in the latest round that asked them.
    silent: BTreeSet<String>,
    /// Answered "cut off" in the latest round that asked them (and silent ones too, with
    /// `Fixes::silent_readers_first` off).
    cut_off: BTreeSet<String>,
}

impl Unable {
    /// Whether `node`'s latest answer was not "reachable".
    pub fn contains(&self, node: &str) -> bool {
        self.silent.contains(node) || self.cut_off.contains(node)
    }

    /// Takes `node` out: it says it reaches the API server again (a nudge).
    pub fn remove(&mut self, node: &str) {
        self.silent.remove(node);
        self.cut_off.remove(node);
    }

    /// The order in which [`readers`] asks `node`: able first, then silent, then "cut off".
    fn rank(&self, node: &str) -> u8 {
        if self.cut_off.contains(node) {
            2
        } else if self.silent.contains(node) {
            1
        } else {
            0
        }
    }
}

/// Keeps `unable` ([`lease_readers`]) to what `heard` says: a peer that answers "reachable" can
/// read this node's Lease, one that says "cut off" or is silent cannot for now. With
/// `silent_first` (`Fixes::silent_readers_first`) the two are told apart ([`Unable`]).
pub fn note_unable(unable: &mut Unable, heard: &[(Peer, Heard)], silent_first: bool) {
    for (p, h) in heard {
        let node = &p.node;
        match h {
            Heard::Report(r) if r.reachable => unable.remove(node),
            Heard::Silent if silent_first => {
                unable.cut_off.remove(node);
                if !unable.silent.contains(node) {
                    unable.silent.insert(node.clone());
                }
            }
            _ => {
                unable.silent.remove(node);
                if !unable.cut_off.contains(node) {
                    unable.cut_off.insert(node.clone());
                }
            }
        }
    }
}

/// The latest moment this node's kubelet was heard, as the peers that reach the API server read
/// its Lease this round, on the monotonic scale of `now`: the latest `renewTime` reported, placed
/// by this run's wall clock, [`RENEWAL_SLACK`] later. `None` unless `steady`: the kubelet stamps
/// `renewTime` with the node's system clock, which reads as this run's wall scale only when no
/// step of the wall clock came between the previous run's last write and now
/// (`core::clock::steady`). `None` too when no peer reported one, or it reads as later than now.
///
/// A peer reads the Lease while it answers, after the question was sent: a renewal it does not
/// see was not stored by then, so the node was not heard between that renewal and this round.
pub fn kubelet_heard<'a>(
    heard: impl IntoIterator<Item = &'a Heard>,
    now: Moment,
    steady: bool,
) -> Option<Duration> {
    if !steady {
        return None;
    }
    now.mono_of_past(latest_renewal(heard)?)
        .map(|m| (m + RENEWAL_SLACK).min(now.mono))
}

/// How long ago this node's kubelet last renewed its Lease, at `now` ([`Round::own_kubelet_age`]):
/// `read` is the latest renewal peers read for this run in earlier rounds, as
/// [`kubelet_renewal`] gives it ([`RENEWAL_SLACK`] earlier than its `renewTime`), placed by this
/// run's wall clock. `None` unless the clock held since this run began (`steady_run`,
/// `core::clock::steady` against this run's own scale) and the renewal was stamped after the run
/// began (`started`, on its wall scale): a stamp from before may have been made before a step of
/// the clock, and read as later than it was. `None` too when it reads as later than now.
pub fn kubelet_age(
    read: Option<SystemTime>,
    now: Moment,
    started: SystemTime,
    steady_run: bool,
) -> Option<Duration> {
    let read = read.filter(|r| steady_run && *r >= started)?;
    now.mono_of_past(read).map(|m| now.mono.saturating_sub(m))
}

/// What this node answers a peer of its own kubelet's last renewal ([`PeerReport::kubelet_age`]):
/// the age at `now` of the latest renewal its readers read for this run (`read`: the stamp and
/// when the answer came, on the caller's monotonic scale), as [`kubelet_age`] places it, when
/// that answer came after this node's last contact (`contact`; the rounds that ask for the read
/// run once its requests fail, so such a read saw the Lease after the link was lost, when the
/// kubelet could renew it no more). `None` otherwise: a read from before is of an earlier
/// partition, and the kubelet has renewed since.
pub fn kubelet_answered<T: Ord + Copy>(
    read: Option<(SystemTime, T)>,
    contact: Option<T>,
    now: Moment,
    started: SystemTime,
    steady_run: bool,
) -> Option<Duration> {
    let (stamped, arrived) = read?;
    if contact.is_some_and(|c| arrived <= c) {
        return None;
    }
    kubelet_age(Some(stamped), now, started, steady_run)
}

/// The latest `renewTime` of this node's kubelet Lease the peers reported this round.
fn latest_renewal<'a>(heard: impl IntoIterator<Item = &'a Heard>) -> Option<SystemTime> {
    heard
        .into_iter()
        .filter_map(|h| match h {
            Heard::Report(r) => r.kubelet_renewed,
            Heard::Silent => None,
        })
        .max()
}

/// The kubelet renewal the peers read this round as the fence counts its deadlines from it
/// (`fencing::Heartbeat`, as a Ready heartbeat seen on the Node): the latest `renewTime`
/// reported, [`RENEWAL_SLACK`] earlier. The controller-manager saw that renewal no earlier than
/// it was stored (it counts each advance of `renewTime` when it observes it, docs/semantics.md
/// §5.2, §13), so the node's grace period runs from no earlier than that: a fence that
/// counts from it is never late, and no longer counts from a contact on disk that may be minutes
/// older (a run that began after its agent was down). `None` unless `steady`
/// ([`kubelet_heard`]).
pub fn kubelet_renewal<'a>(
    heard: impl IntoIterator<Item = &'a Heard>,
    steady: bool,
) -> Option<SystemTime> {
    let latest = latest_renewal(heard).filter(|_| steady)?;
    latest.checked_sub(RENEWAL_SLACK)
}

/// How long this node's kubelet has gone unheard, when that proves the node's link cut: its
/// last renewal as peers that reach the API server read it ([`kubelet_heard`]) is older at `now`
/// than `unheard_after` ([`QuorumPolicy::unheard_after`]), so the kubelet has missed a renewal
/// it makes on a working link. A run that has had no answer of its own yet counts this as a
/// failed request (`Fixes::unheard_at_start`): a request sent into a link that hangs answers
/// only at its timeout, and the link may have been cut long before this run began. `None` when
/// the peers read no renewal, a recent one, or none placeable (`steady`, [`kubelet_heard`]).
pub fn kubelet_unheard<'a>(
    heard: impl IntoIterator<Item = &'a Heard>,
    now: Moment,
    steady: bool,
    unheard_after: Duration,
) -> Option<Duration> {
    let age = now.mono.saturating_sub(kubelet_heard(heard, now, steady)?);
    (age > unheard_after).then_some(age)
}

/// The peers a start with no answer yet asks to read its kubelet Lease (`Fixes::unheard_at_start`):
/// those of `asked` (the round's selection, [`select`]) that [`lease_readers`] flags.
pub fn start_readers(asked: &[Peer], zone: &str, unable: &Unable) -> Vec<Peer> {
    asked
        .iter()
        .zip(lease_readers(asked, zone, false, unable))
        .filter(|(_, read)| *read)
        .map(|(p, _)| p.clone())
        .collect()
}

/// The `started` bound [`heard_until`] takes for a run that started at `started`: that instant,
/// while no agent ran the kubelet kept renewing the node's Lease; but when the previous run
/// stopped while cut off, the kubelet (which shares the node's link) was not heard after that
/// run's last contact either, and the contact it persisted is the bound (unless the link came
/// back and went again while no agent ran: then this run's first contact comes soon).
pub fn resumed_heard_bound<T: Ord + Copy>(
    started: T,
    persisted: Option<T>,
    stopped_cut_off: bool,
) -> T {
    match persisted {
        Some(contact) if stopped_cut_off => contact.min(started),
        _ => started,
    }
}

/// What each peer last said of its reach, across the rounds of a run (docs/fence.md §5): which
/// peers silent in a round gave an answer "reachable" that still says so.
///
/// A peer that answered "reachable" with its last contact `age` old, in a round sent at `t`,
/// reached the API server at `t − age` or later (it answered after the round was sent). Until
/// that contact is `unreachableAfter` old it would answer "reachable" again, whether or not its
/// link held since ([`answer`]): it is what a peer that lost its link right after that answer
/// says. So when such a peer is silent in a later round (its agent restarting, say, or the link
/// to it lost), that answer still stands as evidence that a control plane was live after this
/// node lost it ([`Round::silent_reaching`]), where silence alone is none. A later answer "cut
/// off" replaces it. Only that evidence is carried over: the silent peer is counted as silent
/// in everything else.
///
/// It also keeps each peer's latest answer "cut off", for [`CUT_OFF_STANDS`]
/// ([`Round::cut_off_remembered`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Remembered {
    /// Per peer node, its latest answer (one map: a round looks each peer up once). Hashed: a
    /// round of a zone cut off looks up every peer it asked, and the map holds them all.
    latest: std::collections::HashMap<
        String,
        Latest,
        std::hash::BuildHasherDefault<crate::core::zone::Fnv>,
    >,
}

/// A peer's latest answer, as [`Remembered`] keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Latest {
    /// "Reachable": the earliest instant, on the caller's monotonic scale, it puts its contact
    /// at.
    Reached(Duration),
    /// "Cut off", placing the peer in this node's own zone: all [`Round::cut_off_counted`] counts
    /// it by, with when the round it answered was sent.
    CutOff {
        sent_at: Duration,
        excluded: bool,
        last_contact_age: Option<Duration>,
    },
}

/// How long a peer's answer "cut off" stands for it while it is silent
/// ([`Round::cut_off_remembered`]).
///
/// A silent peer counts as ready: most likely it is this node that cannot reach it, and an
/// enforce made on silence would stop pods everywhere a peer link breaks. But where every other
/// node of a small zone is cut off, that count is what makes the zone partly disrupted, and a
/// partial disruption holds: the silence of a peer that said "cut off" a moment ago then holds
/// pods the controller, which sees the zone fully disrupted, deletes. A node that answered "cut
/// off" had been unheard by the control plane for `unreachableAfter` at least; to count as ready
/// again it must come back and its kubelet post Ready=True. Nothing bounds when that happens, so
/// the 30 s is a choice, not a proof: it spans what is left, after such a round, of the grace
/// period (40 s by default) before the controller judges this node, which is the judgement the
/// hold is about, and no more. A peer silent longer (back, perhaps, behind a broken peer link)
/// counts as silent again.
pub const CUT_OFF_STANDS: Duration = Duration::from_secs(30);

impl Remembered {
    /// Notes the answers "reachable" of a round sent at `sent_at` ([`Remembered::reaching`]);
    /// [`RoundBasis::round`] keeps those "cut off" of its own small zone too.
    pub fn note<'a>(
        &mut self,
        sent_at: Duration,
        heard: impl IntoIterator<Item = &'a (Peer, Heard)>,
    ) {
        self.note_in(sent_at, heard, None);
    }

    /// [`Remembered::note`], keeping the answers "cut off" that place their peer in zone
    /// `own_zone` (`None`: none, as for a zone too large to hold on a partial disruption).
    fn note_in<'a>(
        &mut self,
        sent_at: Duration,
        heard: impl IntoIterator<Item = &'a (Peer, Heard)>,
        own_zone: Option<&str>,
    ) {
        for (peer, h) in heard {
            let Heard::Report(r) = h else {
                continue;
            };
            let answer = if r.reachable {
                Latest::Reached(sent_at.saturating_sub(r.last_contact_age.unwrap_or(Duration::MAX)))
            } else if own_zone == Some(r.zone.as_str()) {
                Latest::CutOff {
                    sent_at,
                    excluded: r.excluded,
                    last_contact_age: r.last_contact_age,
                }
            } else {
                self.latest.remove(&peer.node);
                continue;
            };
            // Updated in place: a round of a zone cut off notes every peer, every few seconds.
            match (self.latest.get_mut(&peer.node), answer) {
                (Some(Latest::Reached(known)), Latest::Reached(at)) => *known = (*known).max(at),
                (Some(known), answer) => *known = answer,
                (None, answer) => {
                    self.latest.insert(peer.node.clone(), answer);
                }
            }
        }
    }

    /// What a peer `h` heard from in a round sent at `sent_at` answered as its latest answer, when
    /// it is silent in it, that answer was "cut off" (placing it in this node's zone: all that are
    /// kept), and it came in a round sent at most [`CUT_OFF_STANDS`] before: whether it is
    /// excluded, and its contact's age, older by the time between the two rounds.
    fn cut_off_standing(
        &self,
        sent_at: Duration,
        (peer, h): (&Peer, &Heard),
    ) -> Option<(bool, Option<Duration>)> {
        if !matches!(h, Heard::Silent) {
            return None;
        }
        match self.latest.get(&peer.node)? {
            Latest::CutOff {
                sent_at: then,
                excluded,
                last_contact_age,
            } if sent_at.saturating_sub(*then) <= CUT_OFF_STANDS => {
                let since = sent_at.saturating_sub(*then);
                Some((*excluded, last_contact_age.map(|a| a.saturating_add(since))))
            }
            _ => None,
        }
    }

    /// How many of the peers silent in a round sent at `sent_at` gave an answer "reachable" that
    /// still says so ([`Round::silent_reaching`]).
    pub fn reaching(
        &self,
        sent_at: Duration,
        heard: &[(Peer, Heard)],
        unreachable_after: Duration,
    ) -> usize {
        heard
            .iter()
            .filter(|(peer, h)| {
                matches!(h, Heard::Silent)
                    && matches!(self.latest.get(&peer.node), Some(Latest::Reached(at))
                        if reaches(Some(sent_at.saturating_sub(*at)), unreachable_after))
            })
            .count()
    }
}

/// One round of questions: what this node knows of its zone and what its peers said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round {
    /// This node's zone.
    pub zone: String,
    /// Nodes in this zone as counted: this node (unless excluded) and the peers listed in it.
    pub zone_size: usize,
    /// This node counts in its zone: false when its Node is labelled
    /// `node.kubernetes.io/exclude-disruption` (`core::zone::round`). It is judged by its zone's
    /// state all the same.
    pub this_node_counted: bool,
    /// How many other zones are known (from the peer list).
    pub other_zones: usize,
    /// How long ago this node's own last contact was, at the round: the latest moment it may
    /// have been heard ([`heard_until`]), against which peers count as lost together with it.
    pub own_contact_age: Duration,
    /// How long ago this node's kubelet may first have gone unheard, at the round: the same
    /// contact, but for a run with no contact of its own yet, the one a previous run persisted
    /// ([`silent_since`]). Never less than `own_contact_age`. Which peers went silent *before*
    /// this node (the staggered expiry, docs/fence.md §5) is counted against it: counted against
    /// a restart, a node judged first would take the peers cut off with it for ones judged
    /// before it, and hold while the controller tainted it.
    pub own_silence_age: Duration,
    /// What each asked peer said, with the zone the peer list gives it.
    pub heard: Vec<(String, Heard)>,
    /// This node's Node carried the unreachable NoExecute taint when last seen: the control
    /// plane judged it already, and a later partial disruption of its zone removes no taint. Or
    /// the not-ready one, which the controller swaps for the unreachable one as soon as the node
    /// goes Unknown, outside the zone's rate limiter (docs/semantics.md §4.3): a partial
    /// disruption holds such a node no more, and pods keep the timers the not-ready taint started.
    pub tainted: bool,
    /// How many peers silent in this round answered "reachable" earlier in this run with a
    /// contact that still says so ([`Remembered`]): as a peer answering "reachable" now, each
    /// is evidence that a control plane was live after this node lost it. Counted for that
    /// alone (the staggered expiry's and a tainted node's "some peer reaches the API server",
    /// `Fixes::silent_remembered`).
    pub silent_reaching: usize,
    /// How long ago this node's kubelet last renewed its Lease, at the round, as peers read it
    /// in earlier rounds of this run ([`kubelet_age`]); `None` when none did. The controller
    /// counted that renewal no earlier, so this node went unheard no earlier: the staggered
    /// expiry orders its peers' silence against it as well as against `own_silence_age`
    /// ([`Round::silent_before`]).
    pub own_kubelet_age: Option<Duration>,
    /// While the latest read this run made of the controller-manager's leader Lease proved that
    /// no process leads (`core::leader::Leader::leaderless`): the `lastTransitionTime` of the
    /// Ready=Unknown this node's own view of its Node last showed, if any. The next leader's
    /// first pass queues every node recorded Unknown, and its tainting worker may take the first
    /// of each zone on the zone's fresh token before that pass sets the zone's rate from its
    /// state (docs/semantics.md §5.2): until then the zone as recorded stops no taint of a node
    /// whose peers read that same Unknown ([`leaderless_first`]). An Unknown written later was
    /// written by a leader that has made its first pass.
    pub leaderless_unknown: Option<SystemTime>,
    /// The peers of this node's zone silent in this round whose answer "cut off" within
    /// [`CUT_OFF_STANDS`] before still stands ([`Remembered`]), in a zone small enough to hold on
    /// a partial disruption; empty otherwise. A partial disruption holds only if it holds with
    /// them counted as those answers too ([`Round::cut_off_counted`]): silence alone holds
    /// nothing.
    pub cut_off_remembered: Vec<StandingCutOff>,
}

/// A silent peer's answer "cut off" that still stands ([`Round::cut_off_remembered`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StandingCutOff {
    /// Its entry in [`Round::heard`].
    pub index: usize,
    /// What it answered, its contact aged by the time since.
    pub excluded: bool,
    pub last_contact_age: Option<Duration>,
}

/// The quorum's answer: would the control plane evict this node's pods?
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Yes: stop them on time.
    Enforce { reason: String },
    /// No: keep them running.
    Hold { reason: String },
    /// Not yet known: peers that lost the API together with this node may not show it yet.
    /// Nothing is stopped meanwhile, and it is no evidence of a hold.
    Pending { reason: String },
}

impl Round {
    /// The round with each peer of [`Round::cut_off_remembered`] counted as its answer "cut off"
    /// (the answer's contact aged since); `None` when there is none. Nothing [`decide`] reads
    /// of a peer's answer but its zone, exclusion, reach and contact: the name is left empty.
    pub fn cut_off_counted(&self) -> Option<Round> {
        if self.cut_off_remembered.is_empty() {
            return None;
        }
        let mut round = self.clone();
        round.cut_off_remembered = Vec::new();
        for s in &self.cut_off_remembered {
            if let Some((zone, h)) = round.heard.get_mut(s.index) {
                *h = Heard::Report(PeerReport {
                    excluded: s.excluded,
                    ..reach_only(String::new(), zone.clone(), false, s.last_contact_age)
                });
            }
        }
        Some(round)
    }

    /// The round with this node's kubelet unheard for `age` ([`Round::own_silence_age`]; at
    /// least the contact's age).
    pub fn silent_for(mut self, age: Duration) -> Round {
        self.own_silence_age = age.max(self.own_contact_age);
        self
    }

    /// The round of a node whose Node carried the unreachable NoExecute taint when last seen
    /// ([`Round::tainted`]).
    pub fn tainted(mut self, tainted: bool) -> Round {
        self.tainted = tainted;
        self
    }

    /// The round with `n` silent peers whose earlier answer "reachable" still says so
    /// ([`Round::silent_reaching`]).
    /// The round with this node's kubelet last renewed `age` ago ([`Round::own_kubelet_age`]).
    pub fn kubelet_renewed(mut self, age: Option<Duration>) -> Round {
        self.own_kubelet_age = age;
        self
    }

    /// Whether a peer's answer shows that the controller certainly judged it before this node
    /// (docs/fence.md §5, staggered expiry): it never had a contact, or its last contact is older
    /// than this node's silence by more than the order tie ([`order_tie`]), or older than this
    /// node's kubelet's last renewal as peers read it by more than [`order_tie_read`]; or its own
    /// kubelet's last renewal, as its readers read it ([`PeerReport::kubelet_age`]), is older
    /// than this node's by more than the monitor period ([`NODE_MONITOR_PERIOD`]: the
    /// controller counts a renewal on the pass that observes it, so of two renewals that far
    /// apart it counted the earlier on an earlier pass, even if one was stored a few seconds
    /// after it was stamped).
    pub fn silent_before(&self, r: &PeerReport, policy: &QuorumPolicy) -> bool {
        let Some(a) = r.last_contact_age else {
            return true;
        };
        a > self.own_silence_age.saturating_add(policy.order_tie)
            || (policy.fixes.kubelet_ordered
                && self
                    .own_kubelet_age
                    .is_some_and(|k| a > k.saturating_add(policy.order_tie_read)))
            || (policy.fixes.peer_kubelet_ordered
                && self
                    .own_kubelet_age
                    .zip(r.kubelet_age)
                    .is_some_and(|(k, p)| p > k.saturating_add(NODE_MONITOR_PERIOD))
                && self.peers_ordered())
    }

    /// Whether the peers' own kubelet renewals may order them ([`Round::silent_before`]): no
    /// peer of this node's zone is silent, or one (not excluded) says it reaches the API server.
    /// A silent one may be cut off from everything without ever having said so, and make the
    /// zone fully disrupted, where the controller taints at the normal rate: the hold the order
    /// makes would rest on its silence. A node of the zone that reaches the API server keeps the
    /// zone from full disruption, whatever the silent ones are.
    fn peers_ordered(&self) -> bool {
        let mut silent = false;
        for (z, h) in &self.heard {
            match h {
                _ if *z != self.zone => {}
                Heard::Silent => silent = true,
                Heard::Report(r) if r.reachable && !r.excluded => return true,
                Heard::Report(_) => {}
            }
        }
        !silent
    }

    /// The round of a node whose run last read the leader Lease with no process leading, its
    /// own view showing its Ready condition Unknown since `unknown`
    /// ([`Round::leaderless_unknown`]).
    pub fn leaderless_unknown(mut self, unknown: Option<SystemTime>) -> Round {
        self.leaderless_unknown = unknown;
        self
    }

    pub fn silent_reaching(mut self, n: usize) -> Round {
        self.silent_reaching = n;
        self
    }
}

impl Verdict {
    pub fn is_hold(&self) -> bool {
        matches!(self, Verdict::Hold { .. })
    }
    pub fn is_enforce(&self) -> bool {
        matches!(self, Verdict::Enforce { .. })
    }
    /// An enforce (or one pending) that the staggered expiry only guesses: this node may have
    /// been tainted while its zone still counted as healthy, or judged once the zone was
    /// partially disrupted and never tainted (docs/fence.md §5, *Staggered expiry*). Read from
    /// the reason, which the state file keeps with the verdict, so a restart resumes it.
    pub fn in_doubt(&self) -> bool {
        matches!(self, Verdict::Enforce { reason } | Verdict::Pending { reason }
            if reason.contains(IN_DOUBT) || reason.contains(LEADERLESS_DOUBT))
    }
    /// A hold on every zone down, recorded, for a node that may have been tainted before
    /// (`Fixes::zone_down_due`): the fence still stops each pod whose toleration may have run
    /// out while that taint stood (`fence_plan::QuorumVerdict::Hold::stop_due`).
    pub fn stops_due(&self) -> bool {
        matches!(self, Verdict::Hold { reason } if reason.contains(ZONE_DOWN_DUE))
    }
    pub fn reason(&self) -> &str {
        match self {
            Verdict::Enforce { reason }
            | Verdict::Hold { reason }
            | Verdict::Pending { reason } => reason,
        }
    }
    /// The verdict a word of [`Verdict::word`] names, with `reason` (as the state file keeps it).
    pub fn from_word(word: &str, reason: String) -> Option<Verdict> {
        match word {
            "enforce" => Some(Verdict::Enforce { reason }),
            "hold" => Some(Verdict::Hold { reason }),
            "pending" => Some(Verdict::Pending { reason }),
            _ => None,
        }
    }

    /// The word used in logs, metrics and `status`.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Enforce { .. } => "enforce",
            Verdict::Hold { .. } => "hold",
            Verdict::Pending { .. } => "pending",
        }
    }
}

fn undecided(choice: Undecided, reason: String) -> Verdict {
    match choice {
        Undecided::Enforce => Verdict::Enforce { reason },
        Undecided::Hold => Verdict::Hold { reason },
    }
}

/// Decides as the node lifecycle controller's zone rules would (docs/semantics.md §5.5) at the
/// moment it could first taint this node. A peer that answers "cut off" counts as not ready when it
/// lost the API no later than `lost_together` after this node; a peer that answers "reachable" as
/// ready; a silent peer as ready too (it is most likely this node that cannot reach it), so
/// silence never holds the fence: where that count alone would hold a partial disruption of a
/// small zone, a silent peer that answered "cut off" within [`CUT_OFF_STANDS`] counts as that
/// answer ([`Round::cut_off_remembered`]).
///
/// No verdict says enforce on the strength of what peers answered before `settled_after` (in any
/// zone): in an outage of the whole control plane, a peer whose last contact came a little after
/// ours still says "reachable" for a while, and a count that is not yet a disruption may still
/// become one. Until then the verdict is pending, which stops nothing.
///
/// `peers_known` is false when the peer list is empty: `without_peers` decides.
pub fn decide(round: &Round, policy: &QuorumPolicy, peers_known: bool) -> Verdict {
    decide_or_ask(round, policy, peers_known).0
}

/// [`decide`], and whether that verdict holds because every node known is cut off, on the answers
/// of only some peers of the other zones (the round asks two of each, [`select`]) or of this
/// zone (`peers.ask` of them). The control plane stops evicting only when every zone is fully
/// disrupted: one node of another zone that reaches the API server keeps this zone evicted, and
/// one of this zone keeps it partly disrupted, which a zone of more than 50 nodes still is
/// (`Fixes::own_zone_asked`). When it says so, the caller asks every peer not asked yet
/// ([`unasked`]) and decides again on all the answers.
pub fn decide_or_ask(round: &Round, policy: &QuorumPolicy, peers_known: bool) -> (Verdict, bool) {
    let (verdict, everyone) = decide_counted(round, policy, peers_known);
    let verdict = match verdict {
        Verdict::Pending { .. } if policy.fixes.settled_early => {
            settled_early(round, policy, peers_known).unwrap_or(verdict)
        }
        verdict => verdict,
    };
    // What the early settling leaves pending, a taint a peer read this round settles.
    let verdict = match verdict {
        Verdict::Pending { .. }
            if policy.fixes.taint_read_settles
                && taint_read(round.heard.iter().map(|(_, h)| h)) == Some(true) =>
        {
            settled_by_taint(round, policy, peers_known).unwrap_or(verdict)
        }
        verdict => verdict,
    };
    // And a node read queued for the taint, in a zone recorded normal or with no leader.
    let verdict = match verdict {
        Verdict::Pending { .. }
            if policy.fixes.queue_read_settles && queue_read(round, &policy.fixes) =>
        {
            settled_by_queue(round, policy, peers_known).unwrap_or(verdict)
        }
        verdict => verdict,
    };
    let asked_here = round.heard.iter().filter(|(z, _)| *z == round.zone).count();
    let unasked_here = round
        .zone_size
        .saturating_sub(usize::from(round.this_node_counted) + asked_here);
    let rest = round.other_zones > 0 || (policy.fixes.own_zone_asked && unasked_here > 0);
    let verdict = rests_on_silence(verdict, round, policy, peers_known);
    let verdict = match verdict {
        Verdict::Enforce { .. } => zone_down_before(round, policy).unwrap_or(verdict),
        verdict => verdict,
    };
    (verdict, everyone && rest)
}

/// An enforce turned into a hold that still stops what may have been deleted
/// (`Fixes::zone_down_due`, [`Verdict::stops_due`]; docs/fence.md §5, *Every zone down,
/// recorded*): a peer that reaches the API server read this node's zone, the only one, recorded
/// with none of its Nodes Ready and this node untainted, though another node left Ready after
/// this one (otherwise [`recorded_hold`] holds it whole), and read this node's Node with the
/// controller's Ready=Unknown. The controller removed every taint as every zone went down and
/// taints nothing while that stands (docs/semantics.md §5.5); a taint it added before may have deleted a pod, and the
/// fence stops each pod whose deletion may have come by this round. `None` for a node seen
/// tainted, and while no controller-manager leads; the caller asks only of an enforce.
fn zone_down_before(round: &Round, policy: &QuorumPolicy) -> Option<Verdict> {
    let record = zone_down_record(round, policy)?;
    let (not_ready, size, z) = (record.not_ready, record.size, &round.zone);
    let window = match least_tolerated(round).filter(|_| policy.fixes.zone_down_window) {
        Some(s) => format!(
            ", but none tolerating the taint {s}s or more: every Ready was written Unknown, the last {}s after this node's, and no taint stood longer",
            s.saturating_sub(2)
        ),
        None => String::new(),
    };
    Some(Verdict::Hold {
        reason: format!(
            "a peer that reaches the API server reads {not_ready} of the {size} node(s) of zone {z} recorded not Ready (fully disrupted, and no Node outside it: every zone is down) and this node's Node without node.kubernetes.io/unreachable: the control plane taints nothing there while that stands, but {ZONE_DOWN_DUE}{window}"
        ),
    })
}

/// The record [`zone_down_before`] holds on, with the rules for it on: `None` for a node seen
/// tainted, and while no controller-manager leads.
fn zone_down_record(round: &Round, policy: &QuorumPolicy) -> Option<ZoneRecord> {
    let f = &policy.fixes;
    if !(f.zone_down_due && f.zone_recorded && f.master_recorded)
        || seen_tainted(round, policy)
        || leaderless_first(round, f)
    {
        return None;
    }
    // The same reader read this node's Node written Unknown by the controller: it was judged,
    // and a Node never judged (its kubelet never posted) was never tainted either.
    reaching_reports(round).find_map(|r| {
        r.zone_recorded
            .filter(|z| !z.tainted && z.only_zone && z.none_ready() && !z.asker_last)
            .filter(|_| {
                r.node_read
                    .is_some_and(|n| !n.tainted && n.unknown_since.is_some())
            })
    })
}

/// Under a hold of [`zone_down_before`] ([`Verdict::stops_due`]), the toleration in seconds from
/// which no pod of this node can have been deleted ([`ZoneRecord::tolerated_from`], passed to
/// [`planning`]; `Fixes::zone_down_window`): the least its readers' records give, `None` when
/// one gives none (every pod the hold finds due is stopped, as before).
pub fn zone_down_tolerated(round: &Round, policy: &QuorumPolicy) -> Option<u64> {
    if !policy.fixes.zone_down_window {
        return None;
    }
    zone_down_record(round, policy)?;
    least_tolerated(round)
}

/// The least [`ZoneRecord::tolerated_from`] of the round's records of every zone down, from
/// peers that reach the API server; `None` when one gives none.
fn least_tolerated(round: &Round) -> Option<u64> {
    reaching_reports(round)
        .filter_map(|r| r.zone_recorded)
        .filter(|z| z.only_zone && z.none_ready())
        .map(|z| z.tolerated_from())
        .try_fold(u64::MAX, |least, t| t.map(|t| least.min(t)))
}

/// What one round of this node is built on besides its peers' answers. The agent's quorum task
/// (`agent::quorum`) and the simulator (`sim::world`) each fill it from their own state, and both
/// build the round and choose whom else to ask here, so that the simulator runs the agent's
/// code for it.
///
/// - `zone` and `peers`: this node's zone and every peer listed ([`crate::core::zone::round`]
///   places the answers);
/// - `seen` and `reads`: whether the round is of a node tainted ([`round_tainted`]);
/// - `ages`: this node's `(own_contact_age, own_silence_age)` given the answers ([`own_ages`]);
/// - `kubelet_age`: [`Round::kubelet_renewed`]; `leaderless`: [`Round::leaderless_unknown`];
/// - `unreachable_after`: how long a peer's answer "reachable" still says so
///   ([`Remembered::reaching`]).
pub struct RoundBasis<'a> {
    pub zone: &'a crate::core::zone::NodeZone,
    pub peers: &'a [Peer],
    pub seen: bool,
    pub reads: &'a TaintReads,
    pub ages: &'a Ages<'a>,
    pub kubelet_age: Option<Duration>,
    pub leaderless: Option<SystemTime>,
    pub unreachable_after: Duration,
}

/// [`RoundBasis::ages`]: this node's two ages given what its peers said.
pub type Ages<'a> = dyn Fn(&[(Peer, Heard)]) -> (Duration, Duration) + Sync + 'a;

impl RoundBasis<'_> {
    /// The round on the answers heard so far in a round sent at `sent_at` (the caller's
    /// monotonic scale), which are noted in `remembered` first.
    pub fn round(
        &self,
        heard: &[(Peer, Heard)],
        remembered: &mut Remembered,
        sent_at: Duration,
    ) -> Round {
        let (own_contact_age, own_silence_age) = (self.ages)(heard);
        let tainted = round_tainted(self.seen, self.reads, heard.iter().map(|(_, h)| h));
        // Built before the answers are noted: it reads the memory for the peers silent in it,
        // which noting them leaves as it is.
        let key = self.zone.key.as_str();
        let (round, standing) = crate::core::zone::round_marking(
            self.zone,
            self.peers,
            heard,
            own_contact_age,
            // Only peers placed in this node's zone can make it fully disrupted.
            |p, z, h| {
                if z == key {
                    remembered.cut_off_standing(sent_at, (p, h))
                } else {
                    None
                }
            },
        );
        let mut round = round
            .silent_for(own_silence_age)
            .tainted(tainted)
            .silent_reaching(remembered.reaching(sent_at, heard, self.unreachable_after))
            .kubelet_renewed(self.kubelet_age)
            .leaderless_unknown(self.leaderless);
        // Only a small zone holds on a partial disruption (`decide`).
        let small = round.zone_size <= LARGE_ZONE;
        if small {
            round.cut_off_remembered = (standing.into_iter())
                .map(|(index, (excluded, last_contact_age))| StandingCutOff {
                    index,
                    excluded,
                    last_contact_age,
                })
                .collect();
        }
        remembered.note_in(sent_at, heard.iter(), small.then_some(key));
        round
    }

    /// [`decide_or_ask`] on `round`, built on `heard`: its verdict, and the peers not asked yet
    /// that the caller asks before deciding again ([`RoundBasis::round`] on `heard` extended by
    /// [`rest_counted`], then [`decide`]); none when the verdict stands as it is.
    pub fn decide_or_ask(
        &self,
        round: &Round,
        heard: &[(Peer, Heard)],
        policy: &QuorumPolicy,
        peers_known: bool,
    ) -> (Verdict, Vec<Peer>) {
        let (verdict, ask_more) = decide_or_ask(round, policy, peers_known);
        if !(ask_more && policy.fixes.other_zones_asked) {
            return (verdict, Vec::new());
        }
        let (zone, own_zone) = (&self.zone.listed, policy.fixes.own_zone_asked);
        (verdict, unasked(self.peers, zone, heard, own_zone))
    }
}

/// [`decide`] by the counts alone, silent peers counted as reaching the API server; and whether
/// it holds because every node known is cut off.
fn decide_counted(round: &Round, policy: &QuorumPolicy, peers_known: bool) -> (Verdict, bool) {
    let mut everyone = false;
    let verdict = counted(round, policy, peers_known, &mut everyone);
    (verdict, everyone)
}

/// [`decide_counted`]'s verdict; `everyone` is set when it holds because every node known is cut
/// off.
fn counted(
    round: &Round,
    policy: &QuorumPolicy,
    peers_known: bool,
    everyone: &mut bool,
) -> Verdict {
    if !peers_known {
        return undecided(
            policy.without_peers,
            "no peers known: a node alone cannot tell its own partition from a control-plane outage (peers.withoutPeers)".into(),
        );
    }
    let cut_off = |h: &Heard| match h {
        Heard::Report(r) if !r.reachable => match r.last_contact_age {
            // Its last contact is at most `lost_together` after ours.
            // Saturating: an age may be `Duration::MAX` (no contact known).
            Some(age) => age.saturating_add(policy.lost_together) >= round.own_contact_age,
            None => true,
        },
        _ => false,
    };
    let answered = |h: &Heard| matches!(h, Heard::Report(_));
    let reaching = |h: &Heard| matches!(h, Heard::Report(r) if r.reachable);
    if round.heard.iter().all(|(_, h)| !answered(h)) {
        // Silence is no answer a peer could change by noticing the outage: nothing to wait for.
        return Verdict::Enforce {
            reason: "no peer answers: this node is cut off from its peers as well, so the control plane sees it alone".into(),
        };
    }
    // A node seen tainted was judged already: a partial disruption of its zone that followed
    // keeps that taint (docs/semantics.md §5.5).
    let judged = seen_tainted(round, policy);
    let settled = round.own_contact_age >= policy.settled_after;
    // An enforce that rests on peers' answers, once they are settled.
    let enforce_when_settled = |reason: String| {
        if settled {
            Verdict::Enforce { reason }
        } else {
            Verdict::Pending {
                reason: format!(
                    "{reason} — not settled yet: peers that lost the API together with this node, in any zone, may not know it yet (settled {}s after last contact)",
                    policy.settled_after.as_secs()
                ),
            }
        }
    };
    let zone = |z: &str| {
        if z.is_empty() {
            "(no zone)".to_string()
        } else {
            z.to_string()
        }
    };
    let own: Vec<&Heard> = round
        .heard
        .iter()
        .filter(|(z, _)| *z == round.zone)
        .map(|(_, h)| h)
        .collect();
    let others: Vec<&Heard> = round
        .heard
        .iter()
        .filter(|(z, _)| *z != round.zone)
        .map(|(_, h)| h)
        .collect();
    // This node counts itself, unless excluded (`core::zone::round`): it is the one cut off.
    let me = usize::from(round.this_node_counted);
    // A stale list may know fewer nodes than answered.
    let size = round.zone_size.max(me + own.len());
    let asked_cut = own.iter().filter(|h| cut_off(h)).count();
    // A zone larger than `peers.ask` + 1 is only partly asked. The peers not asked are counted
    // as the asked ones are, in the same proportion (rounded to the nearer; every one when every
    // peer asked is cut off, none when none is): counting them as ready would make a zone of
    // more than 51 nodes never fully disrupted, and an outage of the whole control plane would
    // read as a partial disruption of a large zone, which the controller still evicts.
    let unasked = size - me - own.len();
    let unasked_cut_of = |asked_cut: usize| {
        if own.is_empty() || !policy.fixes.unasked_counted {
            0
        } else {
            (2 * unasked * asked_cut + own.len()) / (2 * own.len())
        }
    };
    let unasked_cut = unasked_cut_of(asked_cut);
    let not_ready = me + asked_cut + unasked_cut;
    let ready = size - not_ready;
    let z = zone(&round.zone);
    if ready == 0 {
        // Full disruption of this zone. The controller keeps evicting there unless every zone is
        // fully disrupted (then it even removes the taints).
        if others.iter().any(|h| reaching(h)) {
            if size == 0 {
                // This node is excluded and no node of its zone counts: the controller has no
                // state for the zone, whose queue keeps the normal rate (`addPodEvictorForNewZone`),
                // and not every counted zone is down.
                return enforce_when_settled(format!(
                    "zone {z} counts no node (this one is labelled node.kubernetes.io/exclude-disruption) and another zone reaches the API server: the control plane taints at the normal rate"
                ));
            }
            let reason = format!(
                "all {size} node(s) of zone {z} are cut off while another zone reaches the API server: the control plane evicts a fully disrupted zone (peers.wholeZoneCutOff)"
            );
            return match policy.whole_zone_cut_off {
                Undecided::Enforce if !policy.fixes.settled_every_zone => {
                    Verdict::Enforce { reason }
                }
                Undecided::Enforce => enforce_when_settled(reason),
                Undecided::Hold => undecided(Undecided::Hold, reason),
            };
        }
        if round.other_zones == 0 || other_zones_down(round, &policy.fixes, cut_off) {
            *everyone = true;
            return Verdict::Hold {
                reason: format!(
                    "every node known ({size} in zone {z}{}) is cut off: the control plane is down or sees every zone down, and then evicts nothing",
                    if round.other_zones == 0 {
                        String::new()
                    } else {
                        format!(
                            ", and every peer asked in {} other zone(s)",
                            round.other_zones
                        )
                    }
                ),
            };
        }
        // The other zones' peers all cut off, some after this node: no node reaches the API
        // server either.
        if policy.fixes.everyone_cut_off && nobody_reaches(round, &policy.fixes) {
            *everyone = true;
            return nobody_reaches_hold(round, &z);
        }
        return undecided(
            policy.whole_zone_cut_off,
            format!(
                "all {size} node(s) of zone {z} are cut off and no other zone answers: either the zone lost its link to a healthy control plane (which evicts it) or the control plane is down (peers.wholeZoneCutOff)"
            ),
        );
    }
    // Every peer cut off, but some of them after this node (the rule above counts those as
    // ready): still no node reaches the API server.
    if policy.fixes.everyone_cut_off && nobody_reaches(round, &policy.fixes) {
        *everyone = true;
        return nobody_reaches_hold(round, &z);
    }
    if partially_disrupted(not_ready, size) {
        if size <= LARGE_ZONE {
            // docs/fence.md §5, staggered expiry. The controller judged this node when its own
            // grace period ended, counting the nodes of the zone judged by then; if the zone still counted as healthy, this node
            // was queued for the taint, and a partial disruption that follows stops the queue
            // but removes no taint already added. Held only when that count was certainly a
            // disruption already: peers whose contact is older than ours by more than the order
            // tie went silent first.
            let first = own
                .iter()
                .filter(|h| match h {
                    Heard::Report(r) if cut_off(h) => round.silent_before(r, policy),
                    _ => false,
                })
                .count()
                + me;
            let disrupted_first = partially_disrupted(first, size);
            // Only a live control plane taints: a peer must say it reaches the API server (once
            // settled, it did after this node lost it). Without one, the nodes counted ready may
            // be silent ones in an outage of the whole control plane, where nothing is evicted.
            // A peer silent now whose earlier answer "reachable" still says so is the same
            // evidence (`Remembered`).
            let remembered = policy.fixes.silent_remembered && round.silent_reaching > 0;
            let answering = round.heard.iter().any(|(_, h)| reaching(h));
            let live = answering || remembered;
            let evidence = if answering {
                String::new()
            } else {
                format!(
                    " (no peer answering says it reaches the API server, but {} silent now said so within the last {}s)",
                    round.silent_reaching,
                    policy.unreachable_after.as_secs()
                )
            };
            if policy.fixes.staggered_expiry && judged && live {
                return enforce_when_settled(format!(
                    "{not_ready} of {size} node(s) in zone {z} are cut off (partial disruption), but this node was tainted before: a partial disruption keeps taints already added{evidence}"
                ));
            }
            if let Some(v) = recorded_hold(round, policy, judged, &z) {
                return v;
            }
            // No leader: the next one's first pass queues this node afresh, and its worker may
            // take it on the zone's fresh token before that pass sets the zone's rate, whatever
            // the order of the silence (`Fixes::peer_leaderless`).
            if policy.fixes.peer_leaderless && live && leaderless_first(round, &policy.fixes) {
                return enforce_when_settled(format!(
                    "{not_ready} of {size} node(s) in zone {z} are cut off (partial disruption), {first} of them before this node, but {LEADERLESS_DOUBT}{evidence}"
                ));
            }
            // A record read this round with none of the zone's Nodes Ready: fully disrupted,
            // whatever the answers count (a node that reaches the API server may have posted
            // Ready=False), and with a node of another zone reaching the API server the
            // controller taints it at the normal rate (`Fixes::full_recorded`).
            let elsewhere = round
                .heard
                .iter()
                .any(|(zone, h)| *zone != round.zone && reaching(h));
            if policy.fixes.full_recorded && elsewhere && recorded_full(round) {
                return enforce_when_settled(format!(
                    "{not_ready} of {size} node(s) in zone {z} are cut off (partial disruption), {first} of them before this node, but a peer that reaches the API server reads none of the zone's Nodes recorded Ready: fully disrupted, the zone is tainted at the normal rate while another zone reaches the API server{evidence}"
                ));
            }
            if policy.fixes.staggered_expiry && !disrupted_first && live {
                return enforce_when_settled(format!(
                    "{not_ready} of {size} node(s) in zone {z} are cut off (partial disruption), but only {first} had certainly gone silent when the control plane judged this node: {IN_DOUBT}, and a partial disruption keeps taints already added{evidence}"
                ));
            }
            // Silence alone holds nothing: not if the peers silent now that said "cut off" a
            // moment ago, counted so, make it no hold (`CUT_OFF_STANDS`), with a peer of another
            // zone that says it reaches the API server: this zone is then fully disrupted while
            // the control plane lives. Without one, what that round leaves to
            // `peers.wholeZoneCutOff` holds here, as it did before; but the peers not asked yet
            // are asked first (`decide_or_ask`), as they are when every node asked is cut off.
            // Counted so, they can only make the zone fully disrupted or leave it partly so,
            // which holds here again: the round is counted again only for the first.
            let standing = round.cut_off_remembered.len();
            let full_then =
                me + asked_cut + standing + unasked_cut_of(asked_cut + standing) >= size;
            if policy.fixes.cut_off_remembered
                && standing > 0
                && full_then
                && let Some(remembered) = round.cut_off_counted()
            {
                let mut everyone_there = false;
                let verdict = counted(&remembered, policy, peers_known, &mut everyone_there);
                let live_elsewhere = (remembered.heard.iter())
                    .any(|(zone, h)| *zone != remembered.zone && reaching(h));
                let silent = |reason: String| {
                    format!(
                        "{reason} (counting the peer(s) silent now that answered \"cut off\" within the last {}s as cut off)",
                        CUT_OFF_STANDS.as_secs()
                    )
                };
                match verdict {
                    // Held there because every node asked is cut off: the peers not asked yet
                    // may show a zone that reaches the API server.
                    Verdict::Hold { .. } => *everyone |= everyone_there,
                    _ if !live_elsewhere => *everyone = true,
                    Verdict::Enforce { reason } => {
                        return Verdict::Enforce {
                            reason: silent(reason),
                        };
                    }
                    Verdict::Pending { reason } => {
                        return Verdict::Pending {
                            reason: silent(reason),
                        };
                    }
                }
            }
            return Verdict::Hold {
                reason: format!(
                    "{not_ready} of {size} node(s) in zone {z} are cut off (partial disruption), {first} of them before this node: the control plane stops evicting in a zone of {LARGE_ZONE} nodes or fewer"
                ),
            };
        }
        // More peers may yet show the same outage: the zone may be fully disrupted, and every
        // zone with it.
        let reason = format!(
            "{not_ready} of {size} node(s) in zone {z} are cut off (partial disruption), but a zone of more than {LARGE_ZONE} nodes is still evicted, more slowly"
        );
        if !policy.fixes.settled_every_zone {
            return Verdict::Enforce { reason };
        }
        return enforce_when_settled(reason);
    }
    if let Some(v) = recorded_hold(round, policy, judged, &z) {
        return v;
    }
    let reaching_peers = own.iter().filter(|h| reaching(h)).count();
    enforce_when_settled(format!(
        "{not_ready} of {size} node(s) in zone {z} cut off, {reaching_peers} peer(s) answer that they reach the API server: the control plane sees a healthy zone and evicts this node"
    ))
}

/// Whether no node known reaches the API server: every peer asked says it is cut off, each one
/// of this zone and, in every other zone, at least one and every one that answers (a silent one
/// there is no sign that its zone is up, as `silent_peer_ignored` has it) — whenever each lost
/// it, before this node or after. The peers of this zone not asked count as the asked ones
/// (`unasked_counted`). With either of those two fixes reverted (the simulator's regression
/// runs), this counts as the old rule did: a silent peer elsewhere, or a peer not asked here,
/// as reaching the API server.
///
/// The rule for peers lost *together* with this node holds the fence as well (`counted`): the
/// controller then evicts nothing. Peers that lost the API server later counted as ready when
/// the controller judged this node, so it may have tainted it in a healthy zone; but once no node
/// reaches the API server, that is either an outage of the control plane or a partition of every
/// node from a live one. An outage that every peer reports has lasted `unreachableAfter` (15 s)
/// past the last peer's contact, which with a few peers' contacts spread over a renew interval
/// is mostly longer than the controller-manager's leader renew deadline (10 s): it restarts, and
/// a restarted one starts every toleration's count anew (docs/semantics.md §5.2). A shorter one
/// keeps its timers, and deletes as soon as the API server answers. A live control plane cut off
/// from every node sees every zone fully disrupted a grace period later and removes its taints.
/// In every case no replacement can start on any node before one reaches the API server again,
/// and then this node's peers say so (and nudge it) and it enforces at once on the deadlines it
/// had (`Gate`), a round at most after the return. The fence bets on the outage, as for peers
/// lost together (docs/fence.md §5).
fn nobody_reaches(round: &Round, fixes: &Fixes) -> bool {
    let cut_off = |h: &Heard| matches!(h, Heard::Report(r) if !r.reachable);
    let mut own = round.heard.iter().filter(|(z, _)| *z == round.zone);
    let me = usize::from(round.this_node_counted);
    if !fixes.unasked_counted && round.zone_size > me + own.clone().count() {
        return false;
    }
    own.all(|(_, h)| cut_off(h))
        && (round.other_zones == 0 || other_zones_down(round, fixes, cut_off))
        && round
            .heard
            .iter()
            .any(|(_, h)| matches!(h, Heard::Report(_)))
}

/// Whether every other zone asked is down by `cut_off`: at least one of its peers answers, and
/// every one that does is cut off. A silent peer beside them — a restarting agent, say — is no
/// sign that its zone is up (`silent_peer_ignored`; with that fix reverted, a silent peer
/// counts as up, as the rule before it had).
fn other_zones_down(round: &Round, fixes: &Fixes, cut_off: impl Fn(&Heard) -> bool) -> bool {
    let mut zones: std::collections::BTreeMap<&str, (bool, bool)> = Default::default();
    for (z, h) in round.heard.iter().filter(|(z, _)| *z != round.zone) {
        let (heard_one, all_cut) = zones.entry(z.as_str()).or_insert((false, true));
        if matches!(h, Heard::Report(_)) || !fixes.silent_peer_ignored {
            *heard_one = true;
            *all_cut &= cut_off(h);
        }
    }
    !zones.is_empty() && zones.values().all(|&(one, all)| one && all)
}

/// The hold [`nobody_reaches`] gives, for zone `z` as the reasons name it.
fn nobody_reaches_hold(round: &Round, z: &str) -> Verdict {
    Verdict::Hold {
        reason: format!(
            "no node known reaches the API server (every peer asked in zone {z}{} says it is cut off, whenever it lost it): no replacement can start anywhere, and the control plane is down or sees every zone down, and then evicts nothing",
            if round.other_zones == 0 {
                String::new()
            } else {
                format!(" and in {} other zone(s)", round.other_zones)
            }
        ),
    }
}

/// A pending enforce, decided before the answers settle (docs/fence.md §5): what a peer says
/// can still change before then only for a peer that says it reaches the API server while its
/// last contact came no later after this node's than a settled "reachable" proves
/// (`settled_after` − `unreachable_after`, at least `lost_together`) — it may have lost the API
/// together with this node and not know it yet. Every other answer is final: a peer whose
/// contact is later than that reached the API server after any outage that began when this node
/// lost it, as late as the settled rule would know, and one that says "cut off" stays so (a
/// return only makes it count as ready). So the verdict is
/// settled already when it says enforce whichever of those peers turn out cut off: counted as
/// the settled rule counts, with every number of them in this zone (those that went silent
/// before this node apart, as the staggered expiry tells them apart) and all or none of them in
/// the other zones (the other zones count only through "one reaches the API server" and "all
/// are down"). An outage of the whole control plane as this node lost it leaves no such peer
/// answering after it, so "all cut off" holds and the verdict stays pending. Only an enforce is
/// settled early: a hold would move the fence's deadlines (`Gate::not_before`).
fn settled_early(round: &Round, policy: &QuorumPolicy, peers_known: bool) -> Option<Verdict> {
    let own_age = round.own_contact_age;
    // Not settled yet: "reachable", its last contact no later after ours than a peer's that says
    // so once settled (at least `lost_together`).
    let after = policy
        .settled_after
        .saturating_sub(policy.unreachable_after)
        .max(policy.lost_together);
    // A node seen tainted was judged before it was cut off: what is left to know is whether the
    // control plane still answers, which a peer's contact later than this node's own next
    // renewal would have been shows (`QuorumPolicy::renewed_within`).
    let after = if seen_tainted(round, policy) {
        policy.renewed_within
    } else {
        after
    };
    let unsure = |h: &Heard| {
        matches!(h, Heard::Report(r) if r.reachable
            && r.last_contact_age.is_none_or(|a| a.saturating_add(after) >= own_age))
    };
    // As `counted` tells a peer of this zone that went silent before this node.
    let first = |h: &Heard| matches!(h, Heard::Report(r) if round.silent_before(r, policy));
    let (mut own_first, mut own_rest, mut elsewhere) = (Vec::new(), Vec::new(), Vec::new());
    for (i, (zone, h)) in round.heard.iter().enumerate() {
        if !unsure(h) {
            continue;
        }
        match (*zone == round.zone, first(h)) {
            (true, true) => own_first.push(i),
            (true, false) => own_rest.push(i),
            (false, _) => elsewhere.push(i),
        }
    }
    // The rules alone, with no bet: the two undecided cases hold, and a silent peer counts as
    // cut off (it may have lost the API with this node too; the settled rule counts it as
    // reaching the API server and says so, `rests_on_silence`).
    let settled = QuorumPolicy {
        settled_after: Duration::ZERO,
        without_peers: Undecided::Hold,
        whole_zone_cut_off: Undecided::Hold,
        ..*policy
    };
    let mut base = silent_cut_off(round);
    // Each count of them cut off, on one copy of the round whose flags are set for each; every
    // one of them cut off first, the count an outage of everyone gives.
    let flip = |r: &mut Round, a: usize, b: usize, others_cut: bool| {
        for (k, &i) in own_first.iter().enumerate() {
            set_reachable(&mut r.heard[i].1, k >= a);
        }
        for (k, &i) in own_rest.iter().enumerate() {
            set_reachable(&mut r.heard[i].1, k >= b);
        }
        for &i in &elsewhere {
            set_reachable(&mut r.heard[i].1, !others_cut);
        }
        decide_counted(r, &settled, peers_known).0.is_enforce()
    };
    for a in (0..=own_first.len()).rev() {
        for b in (0..=own_rest.len()).rev() {
            for others_cut in [true, false] {
                if !flip(&mut base, a, b, others_cut) {
                    return None;
                }
            }
        }
    }
    // The reason of the settled rule, on the answers as they are.
    let as_settled = QuorumPolicy {
        settled_after: Duration::ZERO,
        ..*policy
    };
    let Verdict::Enforce { reason } = decide_counted(round, &as_settled, peers_known).0 else {
        return None;
    };
    let unsure = own_first.len() + own_rest.len() + elsewhere.len();
    let settled_after = policy.settled_after.as_secs();
    let reason = if seen_tainted(round, policy) {
        format!(
            "{reason} — this node was seen tainted NoExecute by the node controller (unreachable, or not-ready, which it swaps for unreachable), and a peer that reached the API server more than {:.1}s after this node's last contact shows a live control plane",
            policy.renewed_within.as_secs_f64()
        )
    } else {
        reason
    };
    Some(Verdict::Enforce {
        reason: if unsure == 0 {
            format!(
                "{reason} — settled before {settled_after}s: every peer that answers reached the API server after this node lost it, or says it is cut off"
            )
        } else {
            format!(
                "{reason} — settled before {settled_after}s: {unsure} peer(s) may not know yet that they lost the API with this node, and this holds whichever way they answer"
            )
        },
    })
}

/// A pending enforce, settled because a peer that reaches the API server read this node's Node
/// with the unreachable taint in this round (docs/fence.md §5, *Peers read the Node*). The read
/// was answered after the round was sent, so the control plane was up then and had judged this
/// node; the taint-eviction controller deletes each pod once its toleration has run
/// (docs/semantics.md §4.3), and only this node's kubelet heard again, or every zone fully
/// disrupted, removes the taint (docs/semantics.md §5.5). What the
/// peers that lost the API server with this node will say no longer matters. The verdict is
/// the settled rule's on the answers as they are: `None` when that does not enforce.
fn settled_by_taint(round: &Round, policy: &QuorumPolicy, peers_known: bool) -> Option<Verdict> {
    settled_now(
        round,
        policy,
        peers_known,
        "a peer that reaches the API server read this node's Node with the node controller's NoExecute taint (node.kubernetes.io/unreachable, or not-ready)",
    )
}

/// Whether a peer that reaches the API server read this node's Node, in this round, recorded
/// Ready=Unknown without the unreachable taint (queued for it), or with its kubelet's
/// Ready=False and neither taint (queued for the not-ready one, `Fixes::ready_false_read`), none
/// read it tainted, and, in the same round, its zone recorded normal ([`ZoneRecord::normal`])
/// and never otherwise; or no controller-manager leads ([`leaderless_first`]). A round whose
/// reader read no record (it
/// failed, or the zone is larger than a record is asked for, [`asks_zone_record`]) is no such
/// round.
fn queue_read(round: &Round, fixes: &Fixes) -> bool {
    let reads = || reaching_reports(round);
    let ready_false = || {
        fixes.ready_false_read
            && reads().any(|r| r.node_read.is_some_and(|n| n.ready_false && !n.tainted))
    };
    (read_queued(round).next().is_some() || ready_false())
        && !reads().any(|r| r.node_read.is_some_and(|n| n.tainted))
        && (leaderless_first(round, fixes)
            || (reads().any(|r| r.zone_recorded.is_some())
                && reads().all(|r| r.zone_recorded.is_none_or(|z| z.normal()))))
}

/// The answers in `round` of the peers that say they reach the API server.
fn reaching_reports(round: &Round) -> impl Iterator<Item = &PeerReport> {
    round.heard.iter().filter_map(|(_, h)| match h {
        Heard::Report(r) if r.reachable => Some(r),
        _ => None,
    })
}

/// The Ready=Unknown `lastTransitionTime` of each read of this node's Node without the taint in
/// `round`, by a peer that reaches the API server: each read of it queued for the taint.
fn read_queued(round: &Round) -> impl Iterator<Item = SystemTime> + '_ {
    reaching_reports(round)
        .filter_map(|r| r.node_read)
        .filter(|n| !n.tainted)
        .filter_map(|n| n.unknown_since)
}

/// Whether a peer that reaches the API server read, this round, this node's zone recorded with
/// none of its Nodes Ready and this node untainted ([`ZoneRecord::none_ready`]).
fn recorded_full(round: &Round) -> bool {
    reaching_reports(round).any(|r| {
        r.zone_recorded
            .is_some_and(|z| !z.tainted && z.none_ready())
    })
}

/// Whether the zone as recorded stops no taint of this node because no controller-manager
/// leads ([`Round::leaderless_unknown`]) and a peer that reaches the API server read this node's
/// Node, in this round, without the taint and with the Ready=Unknown this node's own view showed
/// then: the next leader's first pass may taint it first. Or (`Fixes::peer_leaderless`) a peer
/// that reaches the API server says its latest read of the leader Lease found no process
/// leading ([`PeerLeader::leaderless`]), and one read this node's Node, in this round, recorded
/// Unknown without the taint: no leader has written that Unknown since the lapse, so the next
/// leader's first pass queues it afresh.
fn leaderless_first(round: &Round, fixes: &Fixes) -> bool {
    if fixes.peer_leaderless
        && reaching_reports(round).any(|r| r.leader.leaderless)
        && read_queued(round).next().is_some()
    {
        return true;
    }
    let Some(unknown) = round.leaderless_unknown.filter(|_| fixes.leaderless_first) else {
        return false;
    };
    read_queued(round).any(|u| u == unknown)
}

/// A pending enforce, settled because a peer that reaches the API server read this node's Node
/// queued for the taint ([`queue_read`]; docs/fence.md §5, *A node read queued for the taint*),
/// or, with its kubelet's Ready=False, for the not-ready one (`Fixes::ready_false_read`).
/// The read was answered after the round was sent, so the API server was up then; the
/// controller wrote the node Unknown, and on every monitor pass queues it for the NoExecute
/// taint until its kubelet posts Ready, which it cannot while cut off (docs/semantics.md §5.5).
/// In a zone recorded normal the queue's worker takes it as soon as the zone's limiter gives a
/// token, so its taint can come at any moment; with no leader, the next one's first pass may.
/// The verdict is the settled rule's on the answers as they are: `None` when that does not
/// enforce.
fn settled_by_queue(round: &Round, policy: &QuorumPolicy, peers_known: bool) -> Option<Verdict> {
    let how = if leaderless_first(round, &policy.fixes) {
        "no controller-manager leads, and the next one's first pass may take it first"
    } else {
        "its zone is recorded normal"
    };
    let read = if read_queued(round).next().is_some() {
        "Ready Unknown and without node.kubernetes.io/unreachable"
    } else {
        "its kubelet's Ready=False and without node.kubernetes.io/not-ready"
    };
    settled_now(
        round,
        policy,
        peers_known,
        &format!(
            "a peer that reaches the API server read this node's Node with {read}: it is queued for the taint, and {how}"
        ),
    )
}

/// The settled rule's verdict on the answers as they are, settled for `why`: `None` when that
/// does not enforce.
fn settled_now(
    round: &Round,
    policy: &QuorumPolicy,
    peers_known: bool,
    why: &str,
) -> Option<Verdict> {
    let as_settled = QuorumPolicy {
        settled_after: Duration::ZERO,
        ..*policy
    };
    let Verdict::Enforce { reason } = decide_counted(round, &as_settled, peers_known).0 else {
        return None;
    };
    Some(Verdict::Enforce {
        reason: format!("{reason} — settled: {why}"),
    })
}

/// A hold on the zone as the control plane records it (`Fixes::zone_recorded`): a peer that
/// reaches the API server read this node's Node without the unreachable taint and, in the same
/// read, its zone partially disrupted. The controller stopped tainting in it at the pass that
/// recorded it so, and the read came after: this node was not tainted before, and is not while
/// the record stands. Or every zone down since the pass that judged this node
/// (`Fixes::master_recorded`, [`ZoneRecord::every_zone_down`]): the controller removed every
/// taint and taints nothing while that stands. `None` for a node seen tainted, and while no
/// controller-manager leads ([`leaderless_first`]). `z`: the zone as [`counted`] names it.
fn recorded_hold(round: &Round, policy: &QuorumPolicy, judged: bool, z: &str) -> Option<Verdict> {
    if judged || !policy.fixes.zone_recorded || leaderless_first(round, &policy.fixes) {
        return None;
    }
    let down = |z: &ZoneRecord| policy.fixes.master_recorded && z.every_zone_down();
    let once_judged = |z: &ZoneRecord| {
        policy.fixes.judged_partial && policy.record_in_time && z.disrupted_once_judged()
    };
    let record = reaching_reports(round).find_map(|r| {
        r.zone_recorded
            .filter(|z| !z.tainted && (z.stops_tainting() || down(z) || once_judged(z)))
    })?;
    let (not_ready, size) = (record.not_ready, record.size);
    let reason = if record.stops_tainting() || down(&record) {
        let state = if down(&record) {
            "fully disrupted, and no Node outside it: every zone is down"
        } else {
            "partial disruption"
        };
        format!(
            "a peer that reaches the API server reads {not_ready} of the {size} node(s) of zone {z} recorded not Ready ({state}) and this node's Node without node.kubernetes.io/unreachable: the control plane taints nothing there while that stands"
        )
    } else {
        format!(
            "a peer that reaches the API server reads {not_ready} of the {size} node(s) of zone {z} recorded not Ready and this node's Node still Ready, without node.kubernetes.io/unreachable: the pass that judges it records a partial disruption, and the control plane taints nothing there while that stands"
        )
    };
    Some(Verdict::Hold { reason })
}

/// Whether `round` is of a node seen tainted, with the rules for one on (`Fixes::taint_settles`).
fn seen_tainted(round: &Round, policy: &QuorumPolicy) -> bool {
    round.tainted && policy.fixes.taint_settles
}

/// What a hold on every zone down says when this node may have been tainted before
/// ([`Verdict::stops_due`], `Fixes::zone_down_due`).
const ZONE_DOWN_DUE: &str = "this node left Ready before another did and may have been tainted before: each pod whose toleration may have run out by now is stopped";

/// What the staggered expiry's guess says in its verdict's reason ([`Verdict::in_doubt`]).
const IN_DOUBT: &str = "it may have been tainted while the zone still counted as healthy";

/// What a partial disruption's count says while no controller-manager leads and this node is
/// read queued for the taint ([`leaderless_first`]): a guess too ([`Verdict::in_doubt`]), whose
/// SIGTERMs wait for a read of the taint.
const LEADERLESS_DOUBT: &str = "no controller-manager leads, and the next one's first pass may taint this node on the zone's fresh token before it sets the zone's rate";

/// Whether the API server answered the peers after a round was sent, as their reads for this
/// node show (docs/fence.md §5, *The SIGTERM waits for a read*). A peer says it reaches the API
/// server for `unreachableAfter` after its last contact, so an outage of the API server for
/// everyone looks, to the peers' answers, like a working control plane for that long; a read a
/// peer made for the question (this node's Node, its kubelet Lease, its pods) is an answer of
/// the API server after the question left. Kept across the rounds of a run; whether reads ever
/// came back is kept across restarts too (the state file's `peersRead`,
/// [`Fixes::peers_read_kept`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerReads {
    /// A read of a peer that reaches the API server came back in some round of this run, or of a
    /// run before it: the peers read for this node (none of a build older than the reads, or
    /// without the RBAC for them, ever does, and then nothing waits for one).
    pub ever: bool,
    /// The latest round: a peer said it reaches the API server, and none of those that did read
    /// from it, though peers did in an earlier round.
    pub unread: bool,
}

impl ServerReads {
    /// Notes the answers of a round (and of its questions asked beside it); true when anything
    /// changed.
    pub fn note<'a>(&mut self, heard: impl IntoIterator<Item = &'a Heard>) -> bool {
        let (mut claimed, mut read) = (false, false);
        for h in heard {
            if let Heard::Report(r) = h
                && r.reachable
            {
                claimed = true;
                read |= r.node_read.is_some() || r.kubelet_renewed.is_some() || r.pods.is_some();
            }
        }
        let before = *self;
        self.ever |= read;
        self.unread = claimed && !read && self.ever;
        *self != before
    }
}

/// Whether the SIGTERMs not sent yet wait (`fencing::Steps::wait_sigterm`, docs/fence.md §5,
/// *The SIGTERM waits for a read*), under the quorum's `verdict`: only an enforce, and then
/// while the latest round is unread ([`ServerReads::unread`]), or while the verdict is in doubt
/// ([`Verdict::in_doubt`]) and no peer has read the taint on this node's Node (`tainted_read`,
/// [`TaintReads::tainted`]) though peers' reads come back in this run.
pub fn sigterm_waits(
    verdict: Option<&Verdict>,
    server: &ServerReads,
    tainted_read: bool,
    fixes: &Fixes,
) -> bool {
    let Some(v) = verdict.filter(|v| v.is_enforce()) else {
        return false;
    };
    (fixes.sigterm_read && server.unread)
        || (fixes.sigterm_doubt && v.in_doubt() && server.ever && !tainted_read)
}

/// What the round's peers that reach the API server read of this node's Node
/// (`PeerReport::node_read`): `Some(true)` when any read the unreachable taint, `Some(false)`
/// when some read the Node and none found it, `None` when none read it.
pub fn taint_read<'a>(heard: impl IntoIterator<Item = &'a Heard>) -> Option<bool> {
    heard
        .into_iter()
        .filter_map(|h| match h {
            Heard::Report(r) if r.reachable => r.node_read.map(|n| n.tainted),
            _ => None,
        })
        .reduce(|a, b| a || b)
}

/// Whether a round is of a node tainted ([`Round::tainted`]): seen so on its own Node (`seen`),
/// or read so by its peers — in this round (`heard`), or, when no peer read the Node in it, in
/// the latest round that did (`reads`).
pub fn round_tainted<'a>(
    seen: bool,
    reads: &TaintReads,
    heard: impl IntoIterator<Item = &'a Heard>,
) -> bool {
    seen || taint_read(heard).unwrap_or(reads.tainted)
}

/// `round` with every silent peer counted as one that lost the API together with this node.
fn silent_cut_off(round: &Round) -> Round {
    let mut r = round.clone();
    for (_, h) in &mut r.heard {
        if matches!(h, Heard::Silent) {
            *h = Heard::Report(reach_only(
                String::new(),
                String::new(),
                false,
                Some(round.own_contact_age),
            ));
        }
    }
    r
}

/// Sets what a peer's answer says of its reach (a silent peer stays silent).
fn set_reachable(h: &mut Heard, reachable: bool) {
    if let Heard::Report(report) = h {
        report.reachable = reachable;
    }
}

/// A silent peer counts as one that may reach the API server (never twice before never
/// needlessly). When an enforce (or a pending enforce) turns on that — counted cut off, the silent
/// peers would make it a hold — its reason says so: an outage of the whole control plane that
/// also silenced a peer (a restarting agent, say) reads as a healthy zone, or as a partial
/// disruption of a large one.
fn rests_on_silence(
    verdict: Verdict,
    round: &Round,
    policy: &QuorumPolicy,
    peers_known: bool,
) -> Verdict {
    let silent = round
        .heard
        .iter()
        .filter(|(_, h)| matches!(h, Heard::Silent))
        .count();
    let answered = round.heard.len() - silent;
    if verdict.is_hold() || silent == 0 || answered == 0 {
        return verdict;
    }
    let all_cut = silent_cut_off(round);
    if !decide_counted(&all_cut, policy, peers_known).0.is_hold() {
        return verdict;
    }
    let note = format!(
        "; it rests on {silent} silent peer(s), counted as reaching the API server: were they cut off too, this node would hold"
    );
    match verdict {
        Verdict::Enforce { reason } => Verdict::Enforce {
            reason: reason + &note,
        },
        Verdict::Pending { reason } => Verdict::Pending {
            reason: reason + &note,
        },
        hold => hold,
    }
}

/// The quorum across the rounds of one partition: the latest verdict, and when a round last said
/// hold, from which the fence counts its deadlines once the verdict turns to enforce.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gate {
    pub verdict: Option<Verdict>,
    /// When the latest round that said hold was sent, on the caller's monotonic scale.
    pub held_at: Option<Duration>,
    /// When the first round of this partition that said hold was sent: a taint the control plane
    /// could add before then may outlast the hold (`fence_plan::QuorumVerdict::Enforce`).
    pub held_from: Option<Duration>,
}

impl Gate {
    /// Records the verdict of a round sent at `sent_at`; true when it differs from the last one
    /// (in word or reason), so the caller logs it once. The verdict in force is then
    /// [`Gate::verdict`].
    ///
    /// A pending verdict does not replace an enforce: pending is an enforce not yet settled, and
    /// a round becomes unsettled after an enforce only when the agent restarts (it then counts
    /// its peers from its start, [`heard_until`]) — the enforce it resumed from its state file
    /// was settled (issue 22, seed 0x11d: a restart mid-partition held the node's pods until its
    /// rounds settled again, 12 s past their deletion). A hold replaces it at once.
    pub fn record(&mut self, sent_at: Duration, verdict: Verdict) -> bool {
        if matches!(verdict, Verdict::Pending { .. })
            && self.verdict.as_ref().is_some_and(Verdict::is_enforce)
        {
            return false;
        }
        if verdict.is_hold() {
            self.held_at = Some(self.held_at.map_or(sent_at, |h| h.max(sent_at)));
            self.held_from = Some(self.held_from.map_or(sent_at, |h| h.min(sent_at)));
        }
        let changed = self.verdict.as_ref() != Some(&verdict);
        self.verdict = Some(verdict);
        changed
    }

    /// After a hold, the earliest moment the control plane could have resumed tainting this node
    /// (docs/fence.md §5): the peers still said "cut off" when the last holding round was sent,
    /// but a write of theirs already on the wire could have reached the API server up to one
    /// request timeout earlier, and the controller taints nothing before it sees the zone healthy.
    ///
    /// Whatever the hold was — a partial disruption or every zone down — no grace period is
    /// added. Leaving the state where every zone is fully disrupted, the controller does reset
    /// every node's probe timestamp (`handleDisruption`), but that only delays marking *again* a
    /// node whose stored Ready condition is still True; a node it already marked Unknown is
    /// queued for the NoExecute taint on its next monitor pass (`processTaintBaseEviction` acts
    /// on the stored condition) and tainted as soon as the zone's rate limiter allows. This node
    /// cannot tell which, so it counts from the resumption: never late — for a node the control
    /// plane could not taint before the hold began. One it could is planned from that first
    /// moment instead (`fence_plan::QuorumVerdict::Enforce`, [`Gate::held_from`]).
    pub fn not_before(&self, request_timeout: Duration) -> Option<Duration> {
        self.held_at.map(|h| h.saturating_sub(request_timeout))
    }
}

/// What the peers' reads of this node's Node said (`PeerReport::node_read`, docs/fence.md
/// §5), across the rounds of a run: kept through a return of the link, since a taint the
/// control plane added stays until this node's kubelet is heard again and the controller removes
/// it, and only a later read tells; forgotten once this node's own view, not cut off, shows the
/// taint removed (`Fixes::reads_forgotten`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaintReads {
    /// When the latest round was sent in which a peer that reaches the API server read the Node
    /// without the unreachable taint.
    ///
    /// A peer reads the Node after the question left this node, and a read of the API server
    /// sees every write stored before it: the control plane had not added the taint when that
    /// round was sent. Any taint that deletes a pod of this node comes later, and the
    /// taint-eviction controller starts a pod's toleration no earlier than it sees the taint, so
    /// nothing is deleted before this instant plus the toleration. That holds whatever was on the
    /// Node before (a taint seen then was removed since) and whatever earlier rounds read.
    pub untainted_at: Option<Duration>,
    /// The latest round in which a peer read the Node found the taint: added after
    /// `untainted_at` (when known), and still there until a later read says otherwise.
    pub tainted: bool,
}

impl TaintReads {
    /// Notes the reads of a round sent at `sent_at` whose answers are `heard` ([`taint_read`]);
    /// true when anything changed.
    pub fn note<'a>(
        &mut self,
        sent_at: Duration,
        heard: impl IntoIterator<Item = &'a Heard>,
    ) -> bool {
        let before = *self;
        match taint_read(heard) {
            Some(false) if self.untainted_at.is_none_or(|u| u < sent_at) => {
                self.untainted_at = Some(sent_at);
                self.tainted = false;
            }
            Some(true) => self.tainted = true,
            _ => {}
        }
        *self != before
    }

    /// Where a taint the peers read counts from, for the fence's `tainted` (`fence_plan::plan`):
    /// the latest round that read the Node without it, the earliest the taint can have been
    /// added, less `fence_plan::READ_SLACK` as every count from such a read. `None` when the
    /// latest read found none, or no earlier read found the Node without it (the plan's own
    /// count stands).
    pub fn tainted_from(&self) -> Option<Duration> {
        self.untainted_at
            .filter(|_| self.tainted)
            .map(|u| u.saturating_sub(crate::core::fence_plan::READ_SLACK))
    }
}

/// The verdict the fence plans with while cut off (docs/fence.md §5): nothing is stopped before
/// the quorum says the control plane evicts (no verdict yet, hold and pending all hold); after a
/// hold held at `held_at`, eviction times count from [`Gate::not_before`], unless the hold began
/// (`held_from`) after this node could be tainted; and never before `untainted_at`
/// ([`TaintReads::untainted_at`]). A hold that still stops what was due stops no pod tolerating
/// the taint `tolerated_from` seconds or more ([`zone_down_tolerated`]).
///
/// `read_tainted`: a peer read this node's Node with the unreachable taint in this run
/// ([`TaintReads::tainted`]). With no read without it since the hold began, the taint may have
/// come during the hold, whose bet (that the control plane taints nothing) it contradicts: the
/// hold's end then moves no deadline ([`Fixes::taint_during_hold`]).
pub fn planning(
    verdict: Option<&Verdict>,
    (held_at, held_from): (Option<Duration>, Option<Duration>),
    (untainted_at, tolerated_from): (Option<Duration>, Option<u64>),
    read_tainted: bool,
    request_timeout: Duration,
) -> crate::core::fence_plan::QuorumVerdict {
    use crate::core::fence_plan::QuorumVerdict;
    let during_hold = read_tainted && untainted_at.is_none_or(|u| held_from.is_some_and(|h| u < h));
    // A hold that still stops what was due (`Verdict::stops_due`): due by the latest hold's
    // round, whose peers read the zone as recorded.
    let stop_due = held_at
        .filter(|_| verdict.is_some_and(Verdict::stops_due))
        .map(|by| crate::core::fence_plan::StopDue {
            by,
            untainted: untainted_at,
            tolerated_from,
        });
    let held_at = held_at.filter(|_| !during_hold);
    match verdict {
        None => QuorumVerdict::Hold {
            reason: "the peer quorum has not answered yet".into(),
            stop_due: None,
        },
        Some(Verdict::Enforce { .. }) => QuorumVerdict::Enforce {
            not_before: Gate {
                verdict: None,
                held_at,
                held_from,
            }
            .not_before(request_timeout),
            held_from,
            untainted: untainted_at,
        },
        Some(v) => QuorumVerdict::Hold {
            reason: format!("quorum {}: {}", v.word(), v.reason()),
            stop_due,
        },
    }
}

/// When the quorum task next asks its peers, on the caller's monotonic scale (docs/fence.md
/// §5): only while `asking` (this node is cut off and the fence is not off); `interval` after
/// the round of this partition sent at `last_round`, at `now` when none was. `None` while not
/// asking: the task sleeps until one of its inputs moves.
pub fn next_round(
    asking: bool,
    last_round: Option<Duration>,
    interval: Duration,
    now: Duration,
) -> Option<Duration> {
    asking.then(|| last_round.map_or(now, |t| t + interval))
}
