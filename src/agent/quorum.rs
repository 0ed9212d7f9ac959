//! The quorum task (docs/fence.md §5): while this node is cut off from the API server, it asks
//! its peers every `[peers] interval` whether they still reach it, and publishes the verdict
//! `core::quorum::decide` draws from their answers, for the fence to act on. While connected it
//! keeps the zone and the peer list current (the fence persists them, so a restart while cut off
//! still knows whom to ask) and asks nobody. Each change of verdict is logged once with its reason
//! and counted in `nodewarden_quorum_verdict`.
//!
//! Nudges ([`Nudges`]): once this node reaches the API server again, it tells the peers it had
//! answered "cut off" since; a cut-off node so told reads its own Lease at once and renews if that
//! is answered, and otherwise asks its peers at once rather than at its next round.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Node;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use crate::agent::clock::Clock;
use crate::agent::wake::Wake;
use crate::api::reachability::Reachability;
pub use crate::api::slim::ZONE_LABEL;
use crate::config::Config;
pub use crate::core::quorum::select;
use crate::core::quorum::{
    Gate, Heard, Peer, PeerReport, QuorumPolicy, Remembered, Round, RoundBasis, TaintReads, Unable,
    Verdict, asks_zone_record, decide, lease_readers, next_round, note_unable, rest_counted,
    zone_readers,
};
use crate::core::zone::NodeZone;
use crate::observe::http::Health;
use crate::state::{State, StoredQuorum};

/// Asks the given peers at once and says what each said (a failed check is `Silent`).
pub type AskFuture = Pin<Box<dyn Future<Output = Vec<(Peer, Heard)>> + Send>>;
/// Asks the given peers as a node of the zone given, asking those flagged to read this node's
/// kubelet Lease for it (`core::quorum::lease_readers`) and its zone as recorded
/// (`core::quorum::zone_readers`).
pub type Asker = Arc<dyn Fn(Vec<Peer>, Readers, String, Listing) -> AskFuture + Send + Sync>;

/// Which of the peers asked read this node's kubelet Lease, and which its zone as recorded, one
/// flag per peer each.
pub type Readers = (Vec<bool>, Vec<bool>);

/// The pods a round asks about (`core::unlisted`), and which of its peers are asked to list
/// them, one flag per peer (`core::quorum::lease_readers`' choice).
pub type Listing = (Vec<String>, Vec<bool>);

/// Tells the given peers at once that this node reaches the API server again
/// (`peer::tell_back`), as a node of the zone given; ends when each answered or timed out.
pub type TellFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
pub type Teller = Arc<dyn Fn(Vec<Peer>, String) -> TellFuture + Send + Sync>;

/// Reads this node's Lease once, bounded by the duration given: true when the API server answered
/// (`api::lease::LeaseProbe::once`).
pub type ProbeFuture = Pin<Box<dyn Future<Output = bool> + Send>>;
pub type Prober = Arc<dyn Fn(Duration) -> ProbeFuture + Send + Sync>;

/// Askers remembered at most: far more than a peer list holds, so a holder of the key asking
/// under made-up names cannot grow the set further.
const MAX_ASKERS: usize = 1024;

/// What the peer endpoint and the quorum task share (docs/fence.md §5): the peers this node
/// answered "cut off", to tell once it reaches the API server again, and the word of a peer
/// that reaches it again, with its name (`back_from`: the next round asks it first to read for
/// this node).
#[derive(Debug, Default)]
pub struct Nudges {
    askers: Mutex<BTreeSet<String>>,
    back: Notify,
    back_from: Mutex<BTreeSet<String>>,
}

impl Nudges {
    /// The peer endpoint answered `question` with `report`.
    pub fn answered(&self, question: &crate::peer::Question, report: &PeerReport) {
        if !report.reachable {
            let mut askers = self.askers.lock().unwrap_or_else(|p| p.into_inner());
            if askers.len() < MAX_ASKERS {
                askers.insert(question.from.clone());
            }
        }
        if question.back {
            log::debug!(peer = question.from.as_str(); "peer {} reaches the API server again", question.from);
            let mut back = self.back_from.lock().unwrap_or_else(|p| p.into_inner());
            if back.len() < MAX_ASKERS {
                back.insert(question.from.clone());
            }
            drop(back);
            self.back.notify_one();
        }
    }

    /// The peers that said they reach the API server again since the last call.
    fn take_back(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.back_from.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The askers answered "cut off" since the last call.
    fn take_askers(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.askers.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What the fence, the peer endpoint and `status` see of the quorum.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuorumView {
    /// This node's zone key as the controller forms it from the region and zone labels
    /// (`core::zone::zone_key`; "" when it has neither), `None` until known.
    pub zone: Option<String>,
    /// This node is labelled `node.kubernetes.io/exclude-disruption`: left out of its zone's
    /// counts, its own and its peers' (`core::zone::round`). Not persisted: after a restart it is
    /// false until the Node is read.
    pub excluded: bool,
    /// The peers known (never this node), sorted by node.
    pub peers: Vec<Peer>,
    /// The verdict of the current partition; `None` while connected.
    pub verdict: Option<Verdict>,
    /// When the latest round that said hold was sent, on both clocks.
    pub held_at: Option<(Instant, SystemTime)>,
    /// When the first round of this partition that said hold was sent, on both clocks.
    pub held_from: Option<(Instant, SystemTime)>,
    /// Under a hold that still stops what was due (`Verdict::stops_due`), the toleration in
    /// seconds from which no pod can have been deleted (`core::quorum::zone_down_tolerated`),
    /// read in the round that decided it. Not persisted: a restart stops every pod due, as
    /// before the window was read, until its first round.
    pub stop_due_tolerated: Option<u64>,
    /// This node's kubelet renewal as peers last read it for this run, while it had no contact
    /// of its own (`core::quorum::kubelet_renewal`), and when the answer came: the fence counts
    /// from it as from a Ready heartbeat seen. Not persisted.
    pub kubelet_renewed: Option<(SystemTime, Instant)>,
    /// This node's kubelet renewal as peers last read it in any round of this run, and when the
    /// answer came: the fence counts from it when it came after this run's own requests failed
    /// (`core::fencing::counted_with_kubelet`). Not persisted.
    pub kubelet_read: Option<(SystemTime, Instant)>,
    /// When the latest round of this run was sent in which a peer that reaches the API server
    /// read this node's Node without the unreachable taint (`core::quorum::TaintReads`): the
    /// fence counts no deadline from before it. Not persisted: a restart counts without it, as
    /// before the first such round (earlier, never later).
    pub untainted_at: Option<Instant>,
    /// The latest round in which a peer read this node's Node found the unreachable taint: the
    /// fence counts from `untainted_at` as from a taint it saw itself. Not persisted.
    pub tainted_read: bool,
    /// The times the peers read on this node's Node in this partition (`core::quorum::NodeReads`):
    /// the fence counts from them as from the same times on its own view. Cleared when the
    /// partition ends (the agent's own view is fresh again); not persisted.
    pub node_reads: crate::core::quorum::NodeReads<Instant>,
    /// Whether the peers' reads of the API server came back in this run, and whether the latest
    /// round's peers say they reach it but none of their reads came back
    /// (`core::quorum::ServerReads`): the fence's SIGTERMs may wait on it
    /// (`core::quorum::sigterm_waits`). The latest round's word is cleared while connected; not
    /// persisted.
    pub server_reads: crate::core::quorum::ServerReads,
    /// What the peers' reads of the controller-manager's leader Lease prove to this node, on
    /// this run's monotonic scale, and whether a peer in the latest round that says it reaches
    /// the API server has not read it since it lost it (`core::quorum::LeaderReads`): the fence
    /// counts no eviction from before the first, and after a hold waits a moment on the second.
    /// The latest round's word is cleared while connected; not persisted.
    pub leader_reads: crate::core::quorum::LeaderReads,
    /// What the latest round's peers listed of the pods it asked about (`core::unlisted`): the
    /// fence plans the pods found and asks no more about the UIDs settled. Taken by the fence
    /// (as `kubelet_renewed`); the pods it plans are persisted with its others.
    pub pods_read: Option<crate::core::unlisted::PodsRead>,
    /// What this partition's probes of the kubelet's path said (`core::fencing::NodePath`): while
    /// the latest was answered ready, the fence holds and the peer endpoint answers "reachable";
    /// the kubelet's renewal they bound moves the deadlines. Cleared when the partition ends;
    /// not persisted (a restarted run probes at its first round).
    pub node_path: crate::core::fencing::NodePath<Instant>,
}

impl QuorumView {
    /// What the state file keeps of the current partition.
    pub fn stored(&self) -> Option<StoredQuorum> {
        let v = self.verdict.as_ref()?;
        Some(StoredQuorum {
            verdict: v.word().to_string(),
            reason: v.reason().to_string(),
            held_at: self
                .held_at
                .map(|(_, wall)| crate::state::format_time(wall)),
            held_from: self
                .held_from
                .map(|(_, wall)| crate::state::format_time(wall)),
        })
    }
}

/// What the quorum task needs.
pub struct QuorumInputs {
    /// Peers from discovery or the static list (this node already left out).
    pub peers: watch::Receiver<Vec<Peer>>,
    pub node: watch::Receiver<Option<Arc<Node>>>,
    pub reach: Arc<Reachability>,
    /// `None` when no peer can be asked (no key): no peers known.
    pub ask: Option<Asker>,
    /// The last contact a previous run persisted, on this run's monotonic clock: a restart in
    /// the middle of a partition counts from it until the API server answers again.
    pub contact_before: Option<Instant>,
    /// The latest moment the node may have been heard before this run's own contacts, which
    /// `core::quorum::heard_until` counts from while this run has none: when this run started
    /// (the kubelet kept renewing while no agent ran); or, when the previous run stopped while
    /// cut off, the contact it persisted (`core::quorum::resumed_heard_bound`).
    pub heard_bound: Instant,
    /// The wall scale the previous run wrote its last contact on (`state::contact_scale`): a
    /// kubelet renewal its peers read for this run is placed by this run's wall clock only when
    /// no step came between (`core::clock::steady`).
    pub previous_scale: Option<crate::core::clock::Scale>,
    /// Whether the fence judges this node cut off (`core::fencing::Link`): the quorum is asked
    /// exactly while the fence needs it, by the one rule. `None` until the fence's first
    /// judgement: a verdict carried over from a previous run is neither cleared nor renewed
    /// before then.
    pub cut_off: watch::Receiver<Option<bool>>,
    /// Whether this node's Node carried the unreachable or the not-ready NoExecute taint when the
    /// fence last saw it (`core::quorum::Round::tainted`; `state::StoredNode::controller_tainted`).
    pub tainted: watch::Receiver<bool>,
    /// What the reads of the controller-manager's leader Lease prove (`agent::leader`): a round
    /// while the latest showed no process leading carries
    /// `core::quorum::Round::leaderless_unknown`.
    pub leader: watch::Receiver<crate::agent::leader::LeaderView>,
    /// The pods whose cgroups run here that the fence's view lacks (`core::unlisted::unlisted`):
    /// every question of a round asks about them.
    pub unlisted: watch::Receiver<Vec<String>>,
    /// Shared with the peer endpoint ([`Nudges`]).
    pub nudges: Arc<Nudges>,
    /// `None` when no peer can be told (no key).
    pub tell: Option<Teller>,
    /// A read of this node's Lease, when a peer says it reaches the API server again.
    pub probe: Option<Prober>,
    /// A read of `/readyz` over the kubelet's path (`api::node_path_ready`), once a round;
    /// `None`: nothing probes it.
    pub node_path: Option<Prober>,
    /// Has the heartbeat renew at once (`agent::heartbeat`).
    pub renew_now: Arc<Notify>,
}

/// A persisted wall-clock time as the same instant on the agent's clock (never in the future).
fn instant_of(clock: &Clock, wall: SystemTime) -> Instant {
    clock.instant_of(clock.now().mono_at(wall))
}

/// The persisted last contact on the agent's clock; none when it reads as later than now (the
/// wall clock was stepped back since it was written): its age is not known, and taken for now it
/// would have this agent tell its peers it reaches the API server (issue 22, seed 0xd9d).
pub fn contact_before(persisted: Option<&State>, clock: &Clock) -> Option<Instant> {
    persisted?
        .last_contact
        .as_deref()
        .and_then(crate::state::parse_time)
        .and_then(|wall| clock.now().mono_of_past(wall))
        .map(|mono| clock.instant_of(mono))
}

/// The quorum view a previous run left in the state directory: zone, peers, and the verdict of a
/// partition still going on (a restart while holding keeps holding until a round says otherwise).
pub fn resume(persisted: Option<&State>, clock: &Clock) -> QuorumView {
    let Some(s) = persisted else {
        return QuorumView::default();
    };
    let verdict = s.quorum.as_ref().and_then(|q| {
        Verdict::from_word(&q.verdict, format!("{} (as before the restart)", q.reason))
    });
    // The hold's time survives the restart: a partition that turns from hold to enforce after
    // it counts from the latest hold, as it would have without the restart.
    let read = |t: Option<&str>| {
        t.and_then(crate::state::parse_time)
            .map(|wall| (instant_of(clock, wall), wall))
    };
    let held_at = read(s.quorum.as_ref().and_then(|q| q.held_at.as_deref()));
    let held_from = read(s.quorum.as_ref().and_then(|q| q.held_from.as_deref()));
    QuorumView {
        zone: s.zone.clone(),
        excluded: false,
        peers: s.peers.iter().filter_map(|p| p.to_peer()).collect(),
        verdict,
        held_at,
        held_from,
        stop_due_tolerated: None,
        kubelet_renewed: None,
        kubelet_read: None,
        untainted_at: None,
        tainted_read: false,
        node_reads: Default::default(),
        // Whether the peers ever read for this node goes on; the latest round's word does not.
        server_reads: crate::core::quorum::ServerReads {
            ever: s.peers_read,
            unread: false,
        },
        leader_reads: Default::default(),
        pods_read: None,
        node_path: Default::default(),
    }
}

/// The settings the core decides with, from the configuration.
pub fn policy(config: &Config) -> QuorumPolicy {
    QuorumPolicy {
        record_in_time: crate::core::quorum::record_in_time(
            config.peers.interval,
            config.fence.node_monitor_period,
        ),
        ..QuorumPolicy::new(
            crate::agent::heartbeat::renew_interval(config.node_lease_duration_seconds),
            config.fence.unreachable_after,
            crate::core::fence_plan::FencePolicy::from(config).kubelet_lag,
            config.peers.without_peers,
            config.peers.whole_zone_cut_off,
        )
    }
}

/// What the quorum task reads of the configuration, built once when the agent connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuorumSettings {
    /// The settings the core decides with ([`policy`]).
    pub policy: QuorumPolicy,
    /// Whether the fence acts at all (`[fence] mode` other than `off`); when it does not, nobody
    /// is asked.
    pub fencing: bool,
    /// How often the peers are asked while cut off (`[peers] interval`).
    pub interval: Duration,
    /// At most this many peers of this node's zone are asked per round (`[peers] ask`).
    pub ask: usize,
    /// The kubelet's Lease renew interval, by which the probes of its path bound its renewals
    /// (`core::fencing::NodePath::note`).
    pub renew: Duration,
}

impl QuorumSettings {
    /// The quorum task's settings from the configuration.
    pub fn new(config: &Config) -> QuorumSettings {
        QuorumSettings {
            policy: policy(config),
            fencing: config.fence.mode != crate::core::fence_plan::Mode::Off,
            interval: config.peers.interval,
            ask: config.peers.ask,
            renew: crate::agent::heartbeat::renew_interval(config.node_lease_duration_seconds),
        }
    }
}

fn zone_of(node: &Node) -> NodeZone {
    NodeZone::of(node.metadata.labels.as_ref())
}

/// One round's questions, the round they make and its verdict. The list names each peer's zone
/// label only (an EndpointSlice carries no region): whom to ask is chosen by label
/// (`core::quorum::select`), and each answer places its peer by its zone key. When those answers would make every zone down on
/// the word of two peers of each other zone, the rest of those zones are asked too before this
/// node holds (`core::quorum::RoundBasis::decide_or_ask`).
///
/// The round is built on the answers by `basis` (`core::quorum::RoundBasis::round`, which the
/// simulator runs too). This node's two ages come from its `ages`, given what the peers said:
/// a restarted agent with no contact of its own asks a few of them to read its kubelet Lease
/// (`has_contact` false, `core::quorum::lease_readers`), and what they read bounds when it was
/// last heard. A peer silent in it whose latest answer "reachable" still says so is evidence of
/// a live control plane all the same (`remembered`, the round sent at `sent_at` on the
/// monotonic scale; `core::quorum::Round::silent_reaching`).
async fn ask_round(
    ask: Option<&Asker>,
    basis: &RoundBasis<'_>,
    pods: &[String],
    (ask_at_most, has_contact, unable): (usize, bool, &mut Unable),
    (policy, known): (&QuorumPolicy, bool),
    (remembered, sent_at): (&mut Remembered, Duration),
) -> (Round, Verdict) {
    let (zone, peers) = (basis.zone, basis.peers);
    let mut heard = match (ask, peers.is_empty()) {
        (Some(ask), false) => {
            let chosen = select(peers, &zone.listed, ask_at_most);
            let lease = lease_readers(&chosen, &zone.listed, has_contact, unable);
            // As few peers list this node's pods as read its Lease, chosen alike: each list is
            // of every pod bound to this node.
            let listers = lease_readers(&chosen, &zone.listed, pods.is_empty(), unable);
            // And one reads the zone as recorded, unless the list shows it large.
            let skip = !asks_zone_record(&policy.fixes, peers, &zone.listed);
            let zoned = zone_readers(
                &chosen,
                &zone.listed,
                skip,
                unable,
                crate::core::quorum::ZONE_READERS,
            );
            let readers = (lease, zoned);
            ask(chosen, readers, zone.key.clone(), (pods.to_vec(), listers)).await
        }
        _ => Vec::new(),
    };
    // Only a run with no contact of its own has its Lease read in the round's questions (a run
    // with one asks in a question of its own, `read_lease`), only a round that asks about pods
    // has them listed (`lease_readers`), and the zone's reader is chosen alike.
    if !has_contact || !pods.is_empty() || policy.fixes.zone_recorded {
        note_unable(unable, &heard, true);
    }
    let round = basis.round(&heard, remembered, sent_at);
    let (verdict, rest) = basis.decide_or_ask(&round, &heard, policy, known);
    let Some(ask) = ask.filter(|_| !rest.is_empty()) else {
        return (round, verdict);
    };
    let answers = ask(
        rest,
        Readers::default(),
        zone.key.clone(),
        Listing::default(),
    )
    .await;
    heard.extend(rest_counted(&zone.listed, answers));
    let round = basis.round(&heard, remembered, sent_at);
    let verdict = decide(&round, policy, known);
    (round, verdict)
}

/// A round's `core::quorum::Round::leaderless_unknown`: while the latest read of the
/// controller-manager's leader Lease proved that no process leads, the `lastTransitionTime` of
/// the Ready=Unknown on this node's own view of its Node (`node`, the latest the watch gave).
fn leaderless_unknown(
    leader: &crate::agent::leader::LeaderView,
    node: Option<&Node>,
) -> Option<SystemTime> {
    if !leader.leaderless {
        return None;
    }
    node.and_then(|n| crate::api::node::node_read(n).unknown_since)
}

/// Has `readers` (when any) read this node's kubelet Lease, in a question of its own
/// (`QuorumView::kubelet_read`, docs/fence.md §5, *The kubelet heard after this agent*).
async fn read_lease(
    ask: Option<&Asker>,
    readers: Option<Vec<Peer>>,
    zone: &NodeZone,
) -> Vec<(Peer, Heard)> {
    match (ask, readers) {
        (Some(ask), Some(readers)) if !readers.is_empty() => {
            ask_reading_lease(ask, readers, zone).await
        }
        _ => Vec::new(),
    }
}

/// Asks `readers` as a node of `zone`, each to read this node's kubelet Lease for it.
fn ask_reading_lease(ask: &Asker, readers: Vec<Peer>, zone: &NodeZone) -> AskFuture {
    let flags = vec![true; readers.len()];
    ask(
        readers,
        (flags, Vec::new()),
        zone.key.clone(),
        Listing::default(),
    )
}

/// This node's zone and peers as the view has them.
fn zone_and_peers(view: &watch::Sender<QuorumView>) -> (NodeZone, Vec<Peer>) {
    let v = view.borrow();
    (
        NodeZone::from_key(v.zone.as_deref().unwrap_or_default(), v.excluded),
        v.peers.clone(),
    )
}

/// Whether peers read this node's kubelet Lease for a start (`probe_at_start`): the fence acts
/// (`fencing`), judges the node not cut off (yet), and this run, started at `started`, has had no
/// answer from the API server while a previous run left a contact to count from — a start whose
/// first requests may hang until their timeout in a link cut long before it
/// (`Fixes::unheard_at_start`). Only within `unreachableAfter` of the start: after that the fence
/// counts the node cut off without any failure (`core::contact::cut_off`), and a read could
/// change nothing.
fn probing(inputs: &QuorumInputs, policy: &QuorumPolicy, fencing: bool, started: Instant) -> bool {
    fencing
        && *inputs.cut_off.borrow() == Some(false)
        && policy.fixes.unheard_at_start
        && inputs.contact_before.is_some()
        && inputs.reach.state() == crate::api::reachability::State::Unknown
        && Instant::now() < started + policy.unreachable_after
}

/// At a start with no answer from the API server yet: up to `LEASE_READERS` of the peers a round
/// would ask (`core::quorum::lease_readers`) read this node's kubelet Lease, and a kubelet unheard
/// for longer than a working link allows (`core::quorum::kubelet_unheard`) counts as a failed
/// request of this run. The fence then judges the node cut off at once, counting from the contact
/// on disk, instead of at the first request's timeout (issue 22, seed 0x11d4).
async fn probe_at_start(
    inputs: &QuorumInputs,
    view: &watch::Sender<QuorumView>,
    peers: &[Peer],
    zone: &NodeZone,
    (ask_at_most, unable): (usize, &mut Unable),
    policy: &QuorumPolicy,
    clock: &Clock,
) {
    let Some(ask) = inputs.ask.as_ref().filter(|_| !peers.is_empty()) else {
        return;
    };
    let chosen = select(peers, &zone.listed, ask_at_most);
    let readers = crate::core::quorum::start_readers(&chosen, &zone.listed, unable);
    let sent = Instant::now();
    let heard = ask_reading_lease(ask, readers, zone).await;
    note_unable(unable, &heard, true);
    let now = Instant::now();
    let steady = steady_now(clock, inputs.previous_scale);
    let steady_run = steady_now(clock, clock.scale());
    note_renewal(
        view,
        heard.iter().map(|(_, h)| h),
        (steady, steady_run),
        false,
    );
    let heard = heard.iter().map(|(_, h)| h);
    let after = policy.unheard_after;
    if let Some(age) = crate::core::quorum::kubelet_unheard(heard, clock.at(now), steady, after) {
        inputs.reach.record_kubelet_unheard(age, sent);
    }
}

/// How long ago, at `now`, this node's kubelet last renewed its Lease as earlier rounds' peers
/// read it (`QuorumView::kubelet_read`), for the staggered expiry to order this node's silence by
/// (`core::quorum::kubelet_age`): only a renewal stamped since `started` (this task's start), on
/// a clock that held since this run began.
fn kubelet_age(
    view: &watch::Sender<QuorumView>,
    clock: &Clock,
    started: Instant,
    now: Instant,
) -> Option<Duration> {
    crate::core::quorum::kubelet_age(
        view.borrow().kubelet_read.map(|(t, _)| t),
        clock.at(now),
        clock.at(started).wall,
        steady_now(clock, clock.scale()),
    )
}

/// What this node answers a peer, at `now`, of its own kubelet's last renewal as its readers
/// read it (`core::quorum::PeerReport::kubelet_age`, `core::quorum::kubelet_answered`): the
/// age of `QuorumView::kubelet_read` when that read came after this run's last contact
/// (`contact`), stamped since `started` on a clock that held since.
pub(crate) fn kubelet_answered(
    view: &QuorumView,
    clock: &Clock,
    started: Instant,
    contact: Option<Instant>,
    now: Instant,
) -> Option<Duration> {
    crate::core::quorum::kubelet_answered(
        view.kubelet_read,
        contact,
        clock.at(now),
        clock.at(started).wall,
        steady_now(clock, clock.scale()),
    )
}

/// Whether the node's system clock has read as this run's wall scale since the previous run's
/// last write (`previous`, its contact file's scale): a kubelet renewal its peers read is then
/// placed on this run's clock (`core::clock::steady`). With `previous` this run's own scale, since
/// this run began: enough for a renewal stamped after this run's own last contact.
fn steady_now(clock: &Clock, previous: Option<crate::core::clock::Scale>) -> bool {
    let system_offset = crate::core::clock::wall_offset_ms(clock.now().wall, SystemTime::now());
    crate::core::clock::steady(clock.scale(), previous, system_offset)
}

/// Keeps in the view the latest kubelet renewal the peers read for this run, for the fence to
/// count from (`core::quorum::kubelet_renewal`): as a heartbeat seen while this run has had no
/// contact of its own (`has_contact` false; placed on this run's clock when `steady` since the
/// previous run's last write), and from any round for the fence to count from when it came after
/// this run's own requests failed (`QuorumView::kubelet_read`; stamped during this run, placed
/// when the clock held `steady_run` since this run began).
fn note_renewal<'a>(
    view: &watch::Sender<QuorumView>,
    heard: impl IntoIterator<Item = &'a Heard> + Clone,
    (steady, steady_run): (bool, bool),
    has_contact: bool,
) {
    let arrived = Instant::now();
    let read = crate::core::quorum::kubelet_renewal(heard.clone(), steady_run);
    let renewed = crate::core::quorum::kubelet_renewal(heard, steady).filter(|_| !has_contact);
    let later = |kept: Option<(SystemTime, Instant)>, new: Option<SystemTime>| {
        new.filter(|n| kept.is_none_or(|(t, _)| t < *n))
            .map(|n| (n, arrived))
    };
    view.send_if_modified(|v| {
        let read = later(v.kubelet_read, read);
        let renewed = later(v.kubelet_renewed, renewed);
        v.kubelet_read = read.or(v.kubelet_read);
        v.kubelet_renewed = renewed.or(v.kubelet_renewed);
        read.is_some() || renewed.is_some()
    });
}

/// Notes a probe of the kubelet's path or what a round's peers read of the Node (`change`:
/// `core::fencing::NodePath::note`, `note_taint`), and logs when the fence's hold on it begins or
/// ends.
fn update_node_path(
    view: &watch::Sender<QuorumView>,
    change: impl FnOnce(&mut crate::core::fencing::NodePath<Instant>),
) {
    let was = view.borrow().node_path;
    view.send_if_modified(|v| {
        change(&mut v.node_path);
        v.node_path != was
    });
    let now = view.borrow().node_path;
    match (was.answers(), now.answers()) {
        (false, true) => log::warn!(
            kubelet_path = "ready";
            "{}: the fence stops nothing while it does, and this agent answers its peers that it reaches the API server",
            crate::core::fencing::NODE_PATH_HOLDS
        ),
        (true, false) => {
            let (kubelet_path, why) = if now.taint_read == Some(true) {
                (
                    "tainted",
                    "the kubelet's path to the API server (fence.kubeletServer) answers, but a peer read the unreachable taint on this node's Node",
                )
            } else {
                (
                    "failed",
                    "the kubelet's path to the API server (fence.kubeletServer) no longer answers ready",
                )
            };
            log::warn!(
                kubelet_path = kubelet_path;
                "{why}: the fence plans on the peers' verdict again{}",
                match now.kubelet_by {
                    Some(by) => format!(
                        ", counting from the kubelet's renewal by {:.1}s ago at the latest",
                        Instant::now().saturating_duration_since(by).as_secs_f64()
                    ),
                    None => String::new(),
                }
            );
        }
        _ => {}
    }
}

/// The quorum task. Runs until dropped.
pub async fn run(
    settings: QuorumSettings,
    node: String,
    mut inputs: QuorumInputs,
    view: watch::Sender<QuorumView>,
    health: Arc<Health>,
    clock: Clock,
) {
    let QuorumSettings {
        policy,
        fencing,
        interval,
        ask: ask_at_most,
        renew,
    } = settings;
    let mono = |t: Instant| clock.mono_of(t);
    let mut gate = {
        let v = view.borrow();
        Gate {
            verdict: v.verdict.clone(),
            held_at: v.held_at.map(|(t, _)| mono(t)),
            held_from: v.held_from.map(|(t, _)| mono(t)),
        }
    };
    if let Some(v) = &gate.verdict {
        health.metrics.record_quorum(Some(v.word()));
    }
    // When the latest round of this partition was sent (monotonic).
    let mut last_round: Option<Duration> = None;
    // Wakes on a change of the Node, the peers or the fence's judgement, and while cut off at
    // each round (`core::quorum::next_round`); asleep otherwise.
    // A contact wakes it too: the peers it answered "cut off" are told then.
    let mut wake = Wake::default()
        .watch(&inputs.node)
        .watch(&inputs.peers)
        .watch(&inputs.cut_off)
        .watch(&inputs.reach.subscribe_contact());
    let mut first = true;
    // A peer said it reaches the API server again, since the last round.
    let mut nudged = false;
    // The kubelet renewal its peers read for it, as last logged.
    let mut kubelet_logged: Option<Instant> = None;
    // What the peers read of this node's Node in this run, kept through returns of the link, and
    // whether a read without the taint was logged in this partition.
    let mut reads = TaintReads::default();
    let mut untainted_logged = false;
    // Whether our own view of our Node last showed one of the controller's NoExecute taints.
    let mut own_tainted = false;
    // And the times they read on it, of this partition only.
    let mut node_reads = crate::core::quorum::NodeReads::default();
    // Whether the peers that say they reach the API server read from it (kept through returns
    // of the link; the latest round's word cleared with the partition). Whether they ever did
    // comes from the run before (`resume`, the state file's `peersRead`).
    let mut server_reads = view.borrow().server_reads;
    // What the peers' reads of the controller-manager's leader Lease prove (kept through returns
    // of the link; the latest round's pending read cleared with the partition).
    let mut leader_reads = crate::core::quorum::LeaderReads::default();
    // When a nudge's read of this node's Lease was last answered: the renewal it sent is in
    // flight for a moment (`core::quorum::RENEWAL_IN_FLIGHT`).
    let mut read_answered: Option<Instant> = None;
    // When a run with no answer from the API server yet next has peers read its kubelet's
    // Lease (`probe_at_start`).
    let mut next_probe: Option<Duration> = None;
    let started = Instant::now();
    // The peers whose latest answer was not "reachable": asked last to read this node's Lease
    // (`core::quorum::lease_readers`), the silent ones before those that said "cut off".
    let mut unable = Unable::default();
    // What each peer last answered "reachable": evidence of a live control plane while a silent
    // peer's answer still says so (`core::quorum::Remembered`).
    let mut remembered = Remembered::default();
    // The probe of the kubelet's path in flight, with when it was sent: it runs beside the
    // rounds, whose verdicts never wait for it (`QuorumView::node_path`).
    let mut path_probe: Option<(Instant, ProbeFuture)> = None;
    loop {
        if !std::mem::take(&mut first) {
            let asking = *inputs.cut_off.borrow() == Some(true) && fencing;
            let probing = probing(&inputs, &policy, fencing, started);
            let round = next_round(asking, last_round, interval, clock.now().mono)
                .or(next_probe.filter(|_| probing))
                .map(|t| clock.instant_of(t));
            tokio::select! {
                _ = wake.any() => {}
                () = inputs.nudges.back.notified() => nudged = true,
                _ = tokio::time::sleep_until(round.unwrap_or_else(Instant::now)), if round.is_some() => {}
                ready = async {
                    match path_probe.as_mut() {
                        Some((_, probe)) => probe.await,
                        None => std::future::pending().await,
                    }
                }, if path_probe.is_some() => {
                    if let Some((sent, _)) = path_probe.take() {
                        update_node_path(&view, |p| p.note(ready, sent, renew));
                    }
                    continue;
                }
            }
        }
        // Zone and peers, whenever they change.
        if inputs.node.has_changed().unwrap_or(false)
            && let Some(n) = inputs.node.borrow_and_update().clone()
        {
            let zone = zone_of(&n);
            view.send_if_modified(|v| {
                let changed =
                    v.zone.as_deref() != Some(zone.key.as_str()) || v.excluded != zone.excluded;
                v.zone = Some(zone.key.clone());
                v.excluded = zone.excluded;
                changed
            });
        }
        if inputs.peers.has_changed().unwrap_or(false) {
            let peers: Vec<Peer> = inputs
                .peers
                .borrow_and_update()
                .iter()
                .filter(|p| p.node != node)
                .cloned()
                .collect();
            view.send_if_modified(|v| {
                let changed = v.peers != peers;
                v.peers = peers.clone();
                changed
            });
        }

        let own = inputs.reach.last_contact().max(inputs.contact_before);
        let now = Instant::now();
        // What the peer endpoint answers now (`core::quorum::answer`): once "reachable", the
        // peers it answered "cut off" are told.
        let own_age = own.map(|c| now.saturating_duration_since(c));
        if crate::core::quorum::reaches(own_age, policy.unreachable_after) {
            tell_askers(&inputs, &view);
        }
        let Some(cut_off) = *inputs.cut_off.borrow_and_update() else {
            continue;
        };
        let nudged = std::mem::take(&mut nudged);
        // A peer that says it is back is no longer one whose latest answer was "cut off": the
        // next round asks it first to read for this node (`core::quorum::zone_readers`,
        // `Fixes::nudger_reads`).
        for peer in inputs.nudges.take_back() {
            unable.remove(&peer);
        }
        if !cut_off || !fencing {
            if gate.verdict.is_some() && !cut_off {
                log::info!(verdict = "none"; "quorum verdict cleared: the API server answers again");
                gate = Gate::default();
                health.metrics.record_quorum(None);
                view.send_modify(|v| {
                    v.verdict = None;
                    v.held_at = None;
                    v.held_from = None;
                    v.stop_due_tolerated = None;
                    // What this partition's peers listed is of this partition only.
                    v.pods_read = None;
                    v.server_reads.unread = false;
                    v.leader_reads.pending = false;
                });
                server_reads.unread = false;
                leader_reads.pending = false;
                untainted_logged = false;
            }
            if !cut_off {
                // So are the probes of the kubelet's path: the agent's own contact answers now.
                path_probe = None;
                view.send_if_modified(|v| {
                    let was = v.node_path;
                    v.node_path = Default::default();
                    v.node_path != was
                });
                // And the times the peers read on this node's Node: its own view is fresh again,
                // and a taint they read then may be gone (issue 22, seed 0xfe5 with path cuts).
                node_reads = Default::default();
                view.send_if_modified(|v| {
                    let was = v.node_reads;
                    v.node_reads = Default::default();
                    v.node_reads != was
                });
                // And what they read of it in earlier partitions, once our own view shows the
                // controller's taint removed: any taint read later is a new one, added after this
                // view, and a read without one from before bounds it no better than the view
                // (`Fixes::reads_forgotten`; issue 22, seed 0x26d5 with `--not-ready`).
                let tainted_now = *inputs.tainted.borrow();
                if std::mem::replace(&mut own_tainted, tainted_now)
                    && !tainted_now
                    && reads != TaintReads::default()
                {
                    reads = TaintReads::default();
                    view.send_modify(|v| {
                        v.untainted_at = None;
                        v.tainted_read = false;
                    });
                }
            }
            last_round = None;
            let now = clock.now().mono;
            if probing(&inputs, &policy, fencing, started) && next_probe.is_none_or(|t| now >= t) {
                next_probe = Some(now + interval);
                let (zone, peers) = zone_and_peers(&view);
                let readers = (ask_at_most, &mut unable);
                probe_at_start(&inputs, &view, &peers, &zone, readers, &policy, &clock).await;
            }
            continue;
        }
        if nudged {
            if let Some(probe) = &inputs.probe
                && probe(crate::core::fencing::NUDGE_PROBE).await
            {
                log::info!(
                    "a peer reaches the API server again, and so does this node's read of its Lease: renewing at once"
                );
                read_answered = Some(Instant::now());
                inputs.renew_now.notify_one();
                continue;
            }
            log::info!(
                "a peer reaches the API server again, and this node's read of its Lease is not answered: asking the peers now"
            );
        } else if next_round(true, last_round, interval, mono(now)).is_some_and(|t| mono(now) < t) {
            continue;
        }
        let now = Instant::now();
        last_round = Some(mono(now));

        let (zone, peers) = zone_and_peers(&view);
        // Peers count as lost together with this node against the latest moment it may have
        // been heard (no later than its kubelet's last renewal, when peers read that for it);
        // which went silent before it, against the earliest its kubelet may have gone unheard.
        let this_run = inputs.reach.last_contact();
        let steady = steady_now(&clock, inputs.previous_scale);
        let kubelet = |heard: &mut dyn Iterator<Item = &Heard>| {
            crate::core::quorum::kubelet_heard(heard, clock.at(now), steady)
                .map(|mono| clock.instant_of(mono))
        };
        let ages = |heard: &[(Peer, Heard)]| {
            crate::core::quorum::own_ages(
                this_run,
                inputs.contact_before,
                inputs.heard_bound,
                kubelet(&mut heard.iter().map(|(_, h)| h)),
                &policy.fixes,
                |t| now.saturating_duration_since(t),
            )
        };
        let sent = (now, clock.at(now).wall);
        // And against the kubelet's last renewal the earlier rounds' peers read (this round's
        // read arrives beside it).
        let kubelet_age = kubelet_age(&view, &clock, started, now);
        let known = inputs.ask.is_some() && !peers.is_empty();
        let tainted = *inputs.tainted.borrow();
        let leaderless =
            leaderless_unknown(&inputs.leader.borrow(), inputs.node.borrow().as_deref());
        let asked = inputs.unlisted.borrow().clone();
        // A run with a contact of its own has its kubelet Lease read in a question of its own,
        // beside the round's: a peer that reads it answers up to the read's bound later, and a
        // round's answer that late would count as silence.
        let readers = this_run.map(|_| {
            let chosen = select(&peers, &zone.listed, ask_at_most);
            let flags = lease_readers(&chosen, &zone.listed, false, &unable);
            chosen
                .into_iter()
                .zip(flags)
                .filter(|(_, f)| *f)
                .map(|(p, _)| p)
                .collect()
        });
        // And the kubelet's path is probed beside them (one probe at a time), its answer noted when
        // it comes.
        if let Some(probe) = &inputs.node_path
            && path_probe.is_none()
        {
            path_probe = Some((now, probe(crate::api::NODE_PATH_BOUND)));
        }
        let basis = RoundBasis {
            zone: &zone,
            peers: &peers,
            seen: tainted,
            reads: &reads,
            ages: &ages,
            kubelet_age,
            leaderless,
            unreachable_after: policy.unreachable_after,
        };
        let ((round, decided), read) = tokio::join!(
            ask_round(
                inputs.ask.as_ref(),
                &basis,
                &asked,
                (ask_at_most, this_run.is_some(), &mut unable),
                (&policy, known),
                (&mut remembered, mono(now)),
            ),
            read_lease(inputs.ask.as_ref(), readers, &zone),
        );
        let taint = crate::core::quorum::taint_read(round.heard.iter().map(|(_, h)| h));
        update_node_path(&view, |p| p.note_taint(taint));
        note_renewal(
            &view,
            round
                .heard
                .iter()
                .map(|(_, h)| h)
                .chain(read.iter().map(|(_, h)| h)),
            (steady, steady_now(&clock, clock.scale())),
            this_run.is_some(),
        );
        if let Some(k) =
            kubelet(&mut round.heard.iter().map(|(_, h)| h)).filter(|k| *k < inputs.heard_bound)
            && kubelet_logged != Some(k)
        {
            kubelet_logged = Some(k);
            log::info!(
                "peers read this node's kubelet Lease: its last renewal was {:.1}s before this round, earlier than this run's start (or the contact on disk); the node counts as heard until that renewal",
                now.saturating_duration_since(k).as_secs_f64()
            );
        }
        // The pods the peers listed, for the fence, which knows its view (`unlisted::read`
        // leaves out none here: the fence leaves out those it holds).
        let pods = crate::core::unlisted::read(&asked, &[], round.heard.iter().map(|(_, h)| h));
        if !pods.found.is_empty() || !pods.settled.is_empty() {
            view.send_modify(|v| v.pods_read = Some(pods));
        }
        // What the peers read of this node's Node bounds every deadline, whatever the verdict
        // (`TaintReads`).
        let was_tainted = reads.tainted;
        if reads.note(mono(sent.0), round.heard.iter().map(|(_, h)| h)) {
            let untainted_at = reads.untainted_at.map(|u| clock.instant_of(u));
            view.send_modify(|v| {
                v.untainted_at = untainted_at;
                v.tainted_read = reads.tainted;
            });
            match (was_tainted, reads.tainted) {
                (false, true) => log::warn!(
                    "a peer read this node's Node with the node controller's NoExecute taint (node.kubernetes.io/unreachable, or not-ready): the control plane has tainted it; the fence counts each pod's toleration from the latest round that read it without (or, with none, from its own count)"
                ),
                (true, false) => log::info!(
                    "a peer read this node's Node without node.kubernetes.io/unreachable:NoExecute again: the taint was removed; the fence counts no toleration from before this round"
                ),
                _ if !untainted_logged => log::info!(
                    "a peer read this node's Node without node.kubernetes.io/unreachable:NoExecute: the fence counts no toleration from before the latest such round (less {}s); logged once a partition",
                    crate::core::fence_plan::READ_SLACK.as_secs()
                ),
                _ => log::debug!(
                    "a peer read this node's Node without node.kubernetes.io/unreachable:NoExecute: the fence counts no toleration from before this round"
                ),
            }
            untainted_logged = true;
        }
        // And the times they read on it, first heard as the round's answers came.
        if node_reads.note(mono(Instant::now()), round.heard.iter().map(|(_, h)| h)) {
            let kept = node_reads.map(|t| clock.instant_of(t));
            view.send_modify(|v| v.node_reads = kept);
            let shown =
                |r: crate::core::quorum::ReadTime<Duration>| crate::core::clock::rfc3339(r.wall);
            match (node_reads.taint_added, node_reads.queued_since) {
                (Some(t), _) => log::info!(
                    "peers read this node's Node: node.kubernetes.io/unreachable:NoExecute added {}; the fence counts from that time as from a taint on its own view of its Node",
                    shown(t)
                ),
                (None, Some(u)) => log::info!(
                    "peers read this node's Node: Ready=Unknown written {} and no unreachable taint, so the controller has queued the node for the taint; the fence counts from that write as from one on its own view of its Node",
                    shown(u)
                ),
                (None, None) => log::info!(
                    "peers read this node's Node with no time to count from (neither a timed unreachable taint nor Ready=Unknown)"
                ),
            }
        }
        // What the peers' reads of the controller-manager's leader Lease prove: cut off, this node
        // reads nothing itself (`agent::leader`).
        let proven = leader_reads.timers_from;
        if leader_reads.note(mono(sent.0), round.heard.iter().map(|(_, h)| h)) {
            view.send_modify(|v| v.leader_reads = leader_reads);
            if leader_reads.timers_from != proven {
                log::info!(
                    "a peer's reads of the controller-manager's leader Lease prove that no taint eviction timer running now started before {}: the fence counts no eviction from earlier",
                    crate::core::clock::rfc3339(
                        clock
                            .at(clock.instant_of(leader_reads.timers_from.unwrap_or_default()))
                            .wall
                    )
                );
            }
        }
        // Whether the API server answered the peers that say they reach it, published before the
        // verdict it qualifies.
        let was_unread = server_reads.unread;
        if server_reads.note(
            round
                .heard
                .iter()
                .map(|(_, h)| h)
                .chain(read.iter().map(|(_, h)| h)),
        ) {
            view.send_modify(|v| v.server_reads = server_reads);
        }
        match (was_unread, server_reads.unread) {
            (false, true) => log::warn!(
                "the peers say they reach the API server, but none of their reads of it came back this round: the API server may have stopped answering everyone, which they cannot tell yet"
            ),
            (true, false) => log::info!(
                "the latest round's peers read from the API server again, or none says it reaches it"
            ),
            _ => {}
        }
        // A hold about to turn into enforce just after a nudge's read was answered: the renewal
        // it sent is in flight, and enforcing now would stop pods for deadlines long past
        // milliseconds before it lands. The next round decides again.
        if gate.verdict.as_ref().is_some_and(Verdict::is_hold)
            && decided.is_enforce()
            && read_answered.is_some_and(|t| now < t + crate::core::quorum::RENEWAL_IN_FLIGHT)
        {
            log::info!(
                "the peers' answers would turn the hold into enforce, but the renewal this node sent on its answered read is in flight: deciding again next round"
            );
            continue;
        }
        let changed = gate.record(mono(sent.0), decided.clone());
        // The verdict in force: a pending one leaves a resumed enforce standing (`Gate::record`).
        let verdict = gate.verdict.clone().unwrap_or(decided);
        let word = verdict.word();
        if changed {
            let answered = round
                .heard
                .iter()
                .filter(|(_, h)| matches!(h, Heard::Report(_)))
                .count();
            log::warn!(
                verdict = word, reason = verdict.reason(),
                asked = round.heard.len(), answered = answered;
                "quorum verdict: {word} ({}; {answered} of {} peer(s) asked answered)",
                verdict.reason(), round.heard.len()
            );
            health.metrics.record_quorum(Some(word));
        }
        let held_at = if verdict.is_hold() {
            Some(sent)
        } else {
            view.borrow().held_at
        };
        // The first hold of the partition (`Gate::held_from`), on both clocks.
        let held_from = view
            .borrow()
            .held_from
            .or(verdict.is_hold().then_some(sent));
        // How long a taint could have stood before every zone went down, for the hold that stops
        // what was due.
        let tolerated = verdict
            .stops_due()
            .then(|| crate::core::quorum::zone_down_tolerated(&round, &policy))
            .flatten();
        view.send_if_modified(|v| {
            let changed = v.verdict.as_ref() != Some(&verdict)
                || v.held_at != held_at
                || v.held_from != held_from
                || v.stop_due_tolerated != tolerated;
            v.verdict = Some(verdict.clone());
            v.held_at = held_at;
            v.held_from = held_from;
            v.stop_due_tolerated = tolerated;
            changed
        });
    }
}

/// Tells the peers this node answered "cut off" that it reaches the API server again, without
/// waiting for their answers (each is bounded by the peer timeout).
fn tell_askers(inputs: &QuorumInputs, view: &watch::Sender<QuorumView>) {
    let askers = inputs.nudges.take_askers();
    let Some(tell) = inputs.tell.as_ref().filter(|_| !askers.is_empty()) else {
        return;
    };
    let (told, zone): (Vec<Peer>, String) = {
        let v = view.borrow();
        (
            v.peers
                .iter()
                .filter(|p| askers.contains(&p.node))
                .cloned()
                .collect(),
            v.zone.clone().unwrap_or_default(),
        )
    };
    if told.is_empty() {
        return;
    }
    log::info!(
        told = told.len();
        "reaching the API server again: telling {} peer(s) it answered \"cut off\"", told.len()
    );
    tokio::spawn(tell(told, zone));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(node: &str, zone: &str) -> Peer {
        Peer {
            node: node.into(),
            address: "10.0.0.1:9843".parse().expect("address"),
            zone: zone.into(),
        }
    }

    /// `record_in_time` follows `[peers] interval` and `nodeMonitorPeriod`: rounds 3 s apart
    /// (config.example.toml's) read the record in time against a 5 s monitor period, 4 s apart
    /// do not.
    #[test]
    fn the_policy_reads_the_record_in_time_only_with_rounds_well_within_a_monitor_period() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
        let mut config = match crate::config::load(&path) {
            Ok(loaded) => loaded,
            Err(e) => panic!("config.example.toml must load: {e}"),
        };
        assert_eq!(config.peers.interval, Duration::from_secs(3));
        assert!(policy(&config).record_in_time);
        config.peers.interval = Duration::from_secs(4);
        assert!(!policy(&config).record_in_time);
        config.peers.interval = Duration::from_secs(1);
        config.fence.node_monitor_period = Duration::from_secs(2);
        assert!(!policy(&config).record_in_time);
    }

    /// The defaults' policy with the kubelet renewing the Lease (10 s renew, 15 s unreachable).
    fn kubelet_policy() -> QuorumPolicy {
        QuorumPolicy::new(
            Duration::from_secs(10),
            Duration::from_secs(15),
            Duration::from_secs(10),
            crate::core::quorum::Undecided::Hold,
            crate::core::quorum::Undecided::Enforce,
        )
    }

    /// Peer `p`'s answer, in the zone the list gives it.
    fn answered(
        p: Peer,
        reachable: bool,
        age: Duration,
        kubelet_renewed: Option<SystemTime>,
    ) -> (Peer, Heard) {
        let report = crate::core::quorum::PeerReport {
            node: p.node.clone(),
            zone: p.zone.clone(),
            excluded: false,
            reachable,
            last_contact_age: Some(age),
            kubelet_renewed,
            node_read: None,
            zone_recorded: None,
            pods: None,
            leader: Default::default(),
            kubelet_age: None,
        };
        (p, Heard::Report(report))
    }

    /// The rounds carry what each peer last answered "reachable" from one to the next
    /// (`core::quorum::Remembered`): zone a of four, this node and two peers cut off together
    /// (none certainly before it), the fourth reaching the API server in the first round and
    /// silent in the second (its agent restarting).
    #[tokio::test]
    async fn a_peer_that_reached_the_api_server_and_falls_silent_still_counts_as_evidence() {
        let peers = vec![peer("p1", "a"), peer("p2", "a"), peer("up", "a")];
        let asker = |up_answers: bool| -> Asker {
            Arc::new(
                move |asked: Vec<Peer>, _lease, _zone: String, _pods| -> AskFuture {
                    let heard = asked
                        .into_iter()
                        .map(|p| match p.node.as_str() {
                            "up" if up_answers => answered(p, true, Duration::from_secs(2), None),
                            "up" => (p, Heard::Silent),
                            _ => answered(p, false, Duration::from_secs(33), None),
                        })
                        .collect();
                    Box::pin(std::future::ready(heard))
                },
            )
        };
        let policy = kubelet_policy();
        let zone = NodeZone::from_key("a", false);
        let own = Duration::from_secs(35);
        let ages = |_: &[(Peer, Heard)]| (own, own);
        let reads = TaintReads::default();
        let basis = basis_in(&zone, &peers, false, &reads, &ages, None);
        let round = async |ask: Asker, memory: &mut Remembered, sent_at: u64| {
            ask_round(
                Some(&ask),
                &basis,
                &[],
                (10, true, &mut Unable::default()),
                (&policy, true),
                (memory, Duration::from_secs(sent_at)),
            )
            .await
            .1
        };
        let mut memory = Remembered::default();
        let first = round(asker(true), &mut memory, 200).await;
        assert!(first.is_enforce(), "{first:?}");
        // Three seconds later: the same memory still counts the silent peer's answer; a fresh one
        // (a round with nothing before it) holds the partial disruption.
        let second = round(asker(false), &mut memory, 203).await;
        assert!(second.is_enforce(), "{second:?}");
        assert!(
            second.reason().contains("1 silent now said so"),
            "{second:?}"
        );
        let fresh = round(asker(false), &mut Remembered::default(), 203).await;
        assert!(fresh.is_hold(), "{fresh:?}");
        // Its contact 16 s old, the answer no longer says so.
        let late = round(asker(false), &mut memory, 214).await;
        assert!(late.is_hold(), "{late:?}");
    }

    /// One round of a node of zone a with a contact of its own, seen `tainted` or not, its ages
    /// `ages`, its leader Lease read as `leaderless` says (`Round::leaderless_unknown`), under
    /// [`kubelet_policy`]: what [`ask_round`] makes of what `ask` answers.
    async fn round_in_a(
        ask: &Asker,
        peers: &[Peer],
        tainted: bool,
        ages: (Duration, Duration),
        leaderless: Option<SystemTime>,
    ) -> (Round, Verdict) {
        let zone = NodeZone::from_key("a", false);
        let fixed = |_: &[(Peer, Heard)]| ages;
        let reads = TaintReads::default();
        ask_round(
            Some(ask),
            &basis_in(&zone, peers, tainted, &reads, &fixed, leaderless),
            &[],
            (10, true, &mut Unable::default()),
            (&kubelet_policy(), true),
            (&mut Remembered::default(), Duration::ZERO),
        )
        .await
    }

    /// The basis of a round of a node in `zone` under [`kubelet_policy`], its kubelet's renewal
    /// unread.
    fn basis_in<'a>(
        zone: &'a NodeZone,
        peers: &'a [Peer],
        seen: bool,
        reads: &'a TaintReads,
        ages: &'a crate::core::quorum::Ages<'a>,
        leaderless: Option<SystemTime>,
    ) -> RoundBasis<'a> {
        RoundBasis {
            zone,
            peers,
            seen,
            reads,
            ages,
            kubelet_age: None,
            leaderless,
            unreachable_after: kubelet_policy().unreachable_after,
        }
    }

    #[tokio::test]
    async fn a_round_of_a_node_seen_tainted_settles_on_a_peer_heard_after_its_own_next_renewal() {
        // Zone a: this node, cut off 13 s ago, and a1-a4, which all reach the API server, their
        // last contact 1 s ago: 12 s after this node's, later than its own next renewal (10.4 s,
        // the kubelet's lag, and a second), earlier than a peer lost together with it (15 s).
        let own_age = Duration::from_secs(13);
        let ages = (own_age, own_age);
        let peers: Vec<Peer> = (1..5).map(|i| peer(&format!("a{i}"), "a")).collect();
        let ask: Asker = Arc::new(
            |asked: Vec<Peer>, _lease, _zone: String, _pods| -> AskFuture {
                let heard = asked
                    .into_iter()
                    .map(|p| answered(p, true, Duration::from_secs(1), None))
                    .collect();
                Box::pin(std::future::ready(heard))
            },
        );
        let mut verdicts = Vec::new();
        for tainted in [false, true] {
            let (round, v) = round_in_a(&ask, &peers, tainted, ages, None).await;
            assert_eq!(round.tainted, tainted);
            verdicts.push(v);
        }
        // Untainted, the peers may yet be ones lost in an outage with this node: it waits.
        assert_eq!(verdicts[0].word(), "pending", "{verdicts:?}");
        // Seen tainted, the control plane judged it before; a peer heard since its own next
        // renewal would have landed shows the control plane live.
        assert!(verdicts[1].is_enforce(), "{verdicts:?}");
        assert!(
            verdicts[1].reason().contains("seen tainted"),
            "{verdicts:?}"
        );
    }

    #[tokio::test]
    async fn a_node_read_queued_in_a_zone_recorded_disrupted_holds_unless_no_leader_leads() {
        // Zone a: this node, cut off 5 s ago, and a1-a4, which all reach the API server. Every
        // reader finds this node's Node with Ready=Unknown since `written` and no taint, and its
        // zone recorded with 3 of 5 not Ready: a partial disruption of a small zone.
        let written = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let own_age = Duration::from_secs(5);
        let peers: Vec<Peer> = (1..5).map(|i| peer(&format!("a{i}"), "a")).collect();
        let ask: Asker = Arc::new(
            move |asked: Vec<Peer>, _lease, _zone: String, _pods| -> AskFuture {
                let heard = asked
                    .into_iter()
                    .map(|p| {
                        let (p, mut heard) = answered(p, true, Duration::from_secs(1), None);
                        if let Heard::Report(r) = &mut heard {
                            r.node_read = Some(crate::core::quorum::NodeRead {
                                unknown_since: Some(written),
                                ..Default::default()
                            });
                            r.zone_recorded = Some(crate::core::quorum::ZoneRecord {
                                not_ready: 3,
                                size: 5,
                                ..Default::default()
                            });
                        }
                        (p, heard)
                    })
                    .collect();
                Box::pin(std::future::ready(heard))
            },
        );
        // This node's own view of its Node: its Ready condition `status` since `since`.
        let node = |status: &str, since: &str| -> Node {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "n0"},
                "status": {"conditions": [{
                    "type": "Ready",
                    "status": status,
                    "lastTransitionTime": since,
                }]},
            }))
            .expect("a Node")
        };
        // `written`, and 30 s later: an Unknown written since.
        let same = node("Unknown", "2027-01-15T08:00:00Z");
        let later = node("Unknown", "2027-01-15T08:00:30Z");
        let ready = node("True", "2027-01-15T08:00:00Z");
        let leaderless = crate::agent::leader::LeaderView {
            leaderless: true,
            ..Default::default()
        };
        let leading = crate::agent::leader::LeaderView::default();
        let cases = [
            (leading, Some(&same)),
            (leaderless, Some(&same)),
            (leaderless, Some(&later)),
            (leaderless, Some(&ready)),
            (leaderless, None),
        ];
        let mut verdicts = Vec::new();
        for (leader, own) in cases {
            let since = leaderless_unknown(&leader, own);
            let (round, v) = round_in_a(&ask, &peers, false, (own_age, own_age), since).await;
            assert_eq!(round.leaderless_unknown, since);
            verdicts.push(v.word());
        }
        // Led, the record holds; with no leader and the view's Unknown the one the peers read,
        // the next leader's first pass may taint this node first: enforce. An Unknown written
        // since, none, or no view: the record holds.
        assert_eq!(leaderless_unknown(&leaderless, Some(&same)), Some(written));
        assert_eq!(verdicts, ["hold", "enforce", "hold", "hold", "hold"]);
    }

    #[tokio::test]
    async fn a_round_asks_the_rest_of_the_other_zones_before_holding_on_two_of_each() {
        use std::sync::Mutex;
        // Zone a: this node and a1, both cut off. Zone b: b0-b5, of which b3-b5 reach the API
        // server; the first two asked, b0 and b1, are cut off.
        let own_age = Duration::from_secs(40);
        // (Contact and silence alike: this node ran throughout.)
        let ages = (own_age, own_age);
        let mut peers = vec![peer("a1", "a")];
        peers.extend((0..6).map(|i| peer(&format!("b{i}"), "b")));
        let calls: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
        let asker = |reaching: &'static [&'static str]| -> Asker {
            let calls = calls.clone();
            Arc::new(
                move |asked: Vec<Peer>, _lease, _zone: String, _pods| -> AskFuture {
                    calls
                        .lock()
                        .expect("calls")
                        .push(asked.iter().map(|p| p.node.clone()).collect());
                    let heard = asked
                        .into_iter()
                        .map(|p| {
                            let up = reaching.contains(&p.node.as_str());
                            let age = if up { Duration::from_secs(2) } else { own_age };
                            answered(p, up, age, None)
                        })
                        .collect();
                    Box::pin(std::future::ready(heard))
                },
            )
        };
        let policy = kubelet_policy();
        let zone = NodeZone::from_key("a", false);
        let fixed = |_: &[(Peer, Heard)]| ages;
        let reads = TaintReads::default();
        let basis = basis_in(&zone, &peers, false, &reads, &fixed, None);
        let (basis, policy) = (&basis, &policy);
        let ask_once = |ask| async move {
            let mut unable = Unable::default();
            ask_round(
                Some(ask),
                basis,
                &[],
                (50, true, &mut unable),
                (policy, true),
                (&mut Remembered::default(), Duration::ZERO),
            )
            .await
        };
        let ask = asker(&["b3", "b4", "b5"]);
        let (round, v) = ask_once(&ask).await;
        assert_eq!(
            *calls.lock().expect("calls"),
            [vec!["a1", "b0", "b1"], vec!["b2", "b3", "b4", "b5"]]
        );
        assert!(v.is_enforce(), "{v:?}");
        assert_eq!(crate::core::quorum::decide(&round, policy, true), v);
        // Every node of zone b cut off: the same two rounds of questions, and a hold.
        calls.lock().expect("calls").clear();
        let ask = asker(&[]);
        let (_, v) = ask_once(&ask).await;
        assert_eq!(calls.lock().expect("calls").len(), 2);
        assert!(v.is_hold(), "{v:?}");
        // b0 reaches the API server: one round of questions settles it.
        calls.lock().expect("calls").clear();
        let ask = asker(&["b0"]);
        let (_, v) = ask_once(&ask).await;
        assert_eq!(calls.lock().expect("calls").len(), 1);
        assert!(!v.is_hold(), "{v:?}");
    }

    /// A round that would hold because every peer asked of this zone is cut off asks the rest of
    /// the zone first (seed 0x129d of the simulator); a silent one of the rest stays unasked.
    #[tokio::test]
    async fn a_round_asks_the_rest_of_its_zone_before_holding_on_the_peers_asked() {
        use std::sync::Mutex;
        let own_age = Duration::from_secs(40);
        let ages = (own_age, own_age);
        // Zone a: this node and a1-a4; a `peers.ask` of 2 asks a1 and a2, both cut off; a3 is
        // silent and a4 reaches the API server.
        let peers: Vec<Peer> = (1..5).map(|i| peer(&format!("a{i}"), "a")).collect();
        let calls: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
        let logged = calls.clone();
        let ask: Asker = Arc::new(
            move |asked: Vec<Peer>, _lease, _zone: String, _pods| -> AskFuture {
                logged
                    .lock()
                    .expect("calls")
                    .push(asked.iter().map(|p| p.node.clone()).collect());
                let heard = asked
                    .into_iter()
                    .map(|p| match p.node.as_str() {
                        "a3" => (p, Heard::Silent),
                        "a4" => answered(p, true, Duration::from_secs(2), None),
                        _ => answered(p, false, own_age, None),
                    })
                    .collect();
                Box::pin(std::future::ready(heard))
            },
        );
        let policy = kubelet_policy();
        let zone = NodeZone::from_key("a", false);
        let fixed = |_: &[(Peer, Heard)]| ages;
        let reads = TaintReads::default();
        let (round, v) = ask_round(
            Some(&ask),
            &basis_in(&zone, &peers, false, &reads, &fixed, None),
            &[],
            (2, true, &mut Unable::default()),
            (&policy, true),
            (&mut Remembered::default(), Duration::ZERO),
        )
        .await;
        assert_eq!(
            *calls.lock().expect("calls"),
            [vec!["a1", "a2"], vec!["a3", "a4"]]
        );
        assert_eq!(round.heard.len(), 3, "{:?}", round.heard);
        assert!(!v.is_hold(), "{v:?}");
    }

    /// A round of a run with no contact of its own asks three peers, other zones first, to read
    /// its kubelet Lease, and its ages see what they read; a run with a contact asks none in the
    /// round's questions (it asks in a question of its own, `read_lease`).
    #[tokio::test]
    async fn a_round_without_contact_asks_three_peers_to_read_its_kubelet_lease() {
        use std::sync::Mutex;
        let renewed = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut peers: Vec<Peer> = (1..4).map(|i| peer(&format!("a{i}"), "a")).collect();
        peers.extend((0..2).map(|i| peer(&format!("b{i}"), "b")));
        // Each call's peers, each with its flag.
        type Calls = Vec<Vec<(String, bool)>>;
        let flags: Arc<Mutex<Calls>> = Arc::default();
        let record = flags.clone();
        let ask: Asker = Arc::new(
            move |asked: Vec<Peer>, (lease, _): Readers, _zone, _pods| -> AskFuture {
                let named = asked
                    .iter()
                    .map(|p| p.node.clone())
                    .zip(lease.iter().copied());
                record.lock().expect("flags").push(named.collect());
                let heard = asked
                    .into_iter()
                    .zip(lease)
                    .map(|(p, read)| {
                        answered(p, true, Duration::from_secs(1), read.then_some(renewed))
                    })
                    .collect();
                Box::pin(std::future::ready(heard))
            },
        );
        let policy = kubelet_policy();
        let zone = NodeZone::from_key("a", false);
        let read: Mutex<Vec<Option<SystemTime>>> = Mutex::default();
        let ages = |heard: &[(Peer, Heard)]| {
            let latest = heard
                .iter()
                .filter_map(|(_, h)| match h {
                    Heard::Report(r) => r.kubelet_renewed,
                    Heard::Silent => None,
                })
                .max();
            read.lock().expect("read").push(latest);
            (Duration::from_secs(40), Duration::from_secs(40))
        };
        let reads = TaintReads::default();
        for has_contact in [false, true] {
            ask_round(
                Some(&ask),
                &basis_in(&zone, &peers, false, &reads, &ages, None),
                &[],
                (50, has_contact, &mut Unable::default()),
                (&policy, true),
                (&mut Remembered::default(), Duration::ZERO),
            )
            .await;
        }
        let calls = flags.lock().expect("flags").clone();
        let flagged: Vec<Vec<&str>> = calls
            .iter()
            .map(|call| {
                call.iter()
                    .filter(|(_, f)| *f)
                    .map(|(n, _)| n.as_str())
                    .collect()
            })
            .collect();
        assert_eq!(flagged, [vec!["a1", "b0", "b1"], vec![]]);
        assert_eq!(*read.lock().expect("read"), [Some(renewed), None]);
        // The question of its own asks the readers given, each to read the Lease.
        flags.lock().expect("flags").clear();
        let readers = vec![peers[0].clone(), peers[3].clone()];
        let answers = read_lease(Some(&ask), Some(readers), &zone).await;
        assert_eq!(answers.len(), 2);
        assert_eq!(
            *flags.lock().expect("flags"),
            [vec![("a1".to_string(), true), ("b0".to_string(), true)]]
        );
        assert!(read_lease(Some(&ask), None, &zone).await.is_empty());
    }

    /// A round with pods to ask about (`core::unlisted`) asks three of its peers to list them,
    /// chosen as the Lease's readers are, whether or not this run has a contact of its own: other
    /// zones first, and a peer whose latest answer was "cut off" after every other. A round with
    /// none asks nobody to list anything.
    #[tokio::test]
    async fn a_round_with_pods_to_ask_about_asks_three_peers_to_list_them() {
        use std::sync::Mutex;
        let mut peers: Vec<Peer> = (1..4).map(|i| peer(&format!("a{i}"), "a")).collect();
        peers.extend((0..2).map(|i| peer(&format!("b{i}"), "b")));
        type Calls = Vec<(Vec<String>, Vec<String>)>;
        let calls: Arc<Mutex<Calls>> = Arc::default();
        let record = calls.clone();
        let ask: Asker = Arc::new(
            move |asked: Vec<Peer>, _lease, _zone, (pods, listers): Listing| -> AskFuture {
                let listing = asked
                    .iter()
                    .zip(&listers)
                    .filter(|(_, l)| **l)
                    .map(|(p, _)| p.node.clone())
                    .collect();
                record.lock().expect("calls").push((pods, listing));
                // b0 and b1 are cut off, a1 and a2 silent; a3 reaches the API server.
                let heard = asked
                    .into_iter()
                    .map(|p| match p.node.as_str() {
                        "a1" | "a2" => (p, Heard::Silent),
                        node => {
                            let reaches = !node.starts_with('b');
                            answered(p, reaches, Duration::from_secs(1), None)
                        }
                    })
                    .collect();
                Box::pin(std::future::ready(heard))
            },
        );
        let policy = kubelet_policy();
        let zone = NodeZone::from_key("a", false);
        let ages = |_: &[(Peer, Heard)]| (Duration::from_secs(40), Duration::from_secs(40));
        let uids = ["u1".to_string()];
        let mut unable = Unable::default();
        let reads = TaintReads::default();
        for pods in [&uids[..], &uids[..], &[]] {
            ask_round(
                Some(&ask),
                &basis_in(&zone, &peers, false, &reads, &ages, None),
                pods,
                (50, true, &mut unable),
                (&policy, true),
                (&mut Remembered::default(), Duration::ZERO),
            )
            .await;
        }
        let calls = calls.lock().expect("calls").clone();
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            calls,
            [
                (names(&["u1"]), names(&["a1", "b0", "b1"])),
                // b0 and b1 said "cut off": the next round asks a3, then the silent a1 and a2
                // (`Unable`: one that said "cut off" nudges this node when it is back).
                (names(&["u1"]), names(&["a1", "a2", "a3"])),
                (names(&[]), names(&[])),
            ]
        );
    }

    #[test]
    fn the_settings_are_the_configurations_and_a_fence_that_is_off_asks_nobody() {
        use crate::core::fence_plan::Mode;
        let mut config = crate::config::from_str("", None).expect("the defaults");
        config.peers.interval = Duration::from_secs(5);
        config.peers.ask = 7;
        for (mode, fencing) in [
            (Mode::Enforce, true),
            (Mode::DryRun, true),
            (Mode::Off, false),
        ] {
            config.fence.mode = mode;
            let settings = QuorumSettings::new(&config);
            assert_eq!(settings.policy, policy(&config));
            assert_eq!(settings.fencing, fencing, "{mode:?}");
            assert_eq!(
                (settings.interval, settings.ask),
                (Duration::from_secs(5), 7)
            );
        }
    }

    #[test]
    fn the_round_ages_the_kubelet_renewal_earlier_rounds_read_in_this_run() {
        let clock = Clock::start();
        let started = Instant::now();
        let (view, _rx) = watch::channel(QuorumView::default());
        let now = started + Duration::from_secs(30);
        assert_eq!(kubelet_age(&view, &clock, started, now), None);
        // Read 10 s into the run, stamped 5 s into it.
        let stamped = clock.at(started).wall + Duration::from_secs(5);
        view.send_modify(|v| v.kubelet_read = Some((stamped, started + Duration::from_secs(10))));
        assert_eq!(
            kubelet_age(&view, &clock, started, now),
            Some(Duration::from_secs(25))
        );
        // Stamped before this run's quorum task began: not placed.
        let before = clock.at(started).wall - Duration::from_secs(1);
        view.send_modify(|v| v.kubelet_read = Some((before, started)));
        assert_eq!(kubelet_age(&view, &clock, started, now), None);
    }

    #[test]
    fn a_round_asks_up_to_ask_of_this_zone_and_two_of_every_other() {
        let peers: Vec<Peer> = (0..6)
            .map(|i| peer(&format!("a{i}"), "a"))
            .chain((0..3).map(|i| peer(&format!("b{i}"), "b")))
            .chain([peer("c0", "c")])
            .collect();
        let chosen: Vec<String> = select(&peers, "a", 4).into_iter().map(|p| p.node).collect();
        assert_eq!(chosen, ["a0", "a1", "a2", "a3", "b0", "b1", "c0"]);
        // An unlabelled zone is a zone like any other ("" is the controller's key for it).
        let chosen = select(&[peer("x", ""), peer("y", "b")], "", 50);
        assert_eq!(chosen.len(), 2);
    }

    #[test]
    fn a_restart_resumes_the_zone_the_peers_and_a_hold_with_its_time() {
        let held = SystemTime::now() - Duration::from_secs(30);
        let state = State {
            version: crate::state::VERSION,
            node: "n1".into(),
            last_contact: None,
            pods: vec![],
            fenced: vec![],
            pending_events: vec![],
            node_status: None,
            condition_events: vec![],
            decided: vec![],
            zone: Some("site-a".into()),
            peers: vec![
                crate::state::StoredPeer::from_peer(&peer("n2", "site-a")),
                crate::state::StoredPeer {
                    node: "bad".into(),
                    address: "not an address".into(),
                    zone: "site-a".into(),
                },
            ],
            quorum: Some(StoredQuorum {
                verdict: "hold".into(),
                reason: "3 of 5".into(),
                held_at: Some(crate::state::format_time(held)),
                held_from: Some(crate::state::format_time(held - Duration::from_secs(20))),
            }),
            cut_off_since: None,
            counted_from: None,
            wall_scale: None,
            peers_read: true,
            unanswered: None,
        };
        let clock = Clock::start();
        let v = resume(Some(&state), &clock);
        assert_eq!(v.zone.as_deref(), Some("site-a"));
        assert_eq!(
            v.peers,
            vec![peer("n2", "site-a")],
            "an unreadable entry is skipped"
        );
        assert!(v.verdict.as_ref().is_some_and(Verdict::is_hold));
        let (at, wall) = v.held_at.expect("held at");
        assert_eq!(wall, held);
        // And when the partition's first hold began (a taint from before it outlasts it).
        let (from, from_wall) = v.held_from.expect("held from");
        assert_eq!(from_wall, held - Duration::from_secs(20));
        assert_eq!(at.saturating_duration_since(from), Duration::from_secs(20));
        assert_eq!(
            v.stored().and_then(|q| q.held_from),
            Some(crate::state::format_time(from_wall)),
            "written back as read"
        );
        let ago = Instant::now().saturating_duration_since(at);
        assert!(
            ago >= Duration::from_secs(29) && ago <= Duration::from_secs(31),
            "{ago:?}"
        );
        // What the fence plans from it once a round enforces: the latest hold, less a request
        // timeout (issue 21: after a restart, the same anchor as without one).
        let gate = Gate {
            verdict: None,
            held_at: Some(clock.mono_of(at)),
            held_from: None,
        };
        let rt = Duration::from_secs(10);
        assert_eq!(gate.not_before(rt), Some(clock.mono_of(at) - rt));
        // Whether the peers ever read for this node goes on; the latest round's word does not.
        assert!(v.server_reads.ever && !v.server_reads.unread);
        assert!(
            !resume(
                Some(&State {
                    peers_read: false,
                    ..state
                }),
                &clock
            )
            .server_reads
            .ever
        );
        assert_eq!(resume(None, &clock), QuorumView::default());
    }
}

/// The nudges (docs/fence.md §5), on the task itself with its inputs faked: a paused clock, a
/// peer list of two, an asker that records when it is called, and a read of the Lease that
/// answers or not.
#[cfg(test)]
mod nudge_tests {
    use super::*;
    use crate::api::ApiError;
    use crate::core::contact::Request;
    use crate::core::quorum::{NodeRead, Undecided, ZoneRecord};
    use crate::peer::Question;

    const INTERVAL: Duration = Duration::from_secs(10);

    struct Harness {
        start: Instant,
        cut_off: watch::Sender<Option<bool>>,
        reach: Arc<Reachability>,
        nudges: Arc<Nudges>,
        renew_now: Arc<Notify>,
        rounds: Arc<Mutex<Vec<Duration>>>,
        told: Arc<Mutex<Vec<Vec<String>>>>,
        probes: Arc<Mutex<Vec<Duration>>>,
        /// What every peer answers: silence (`None`, the default), or whether it reaches the API
        /// server.
        answer: Arc<Mutex<Option<bool>>>,
        /// The kubelet renewal a peer that reaches the API server reads for this node when asked
        /// to.
        kubelet: Arc<Mutex<Option<SystemTime>>>,
        /// The peers each round asked to read this node's kubelet Lease.
        readers: Arc<Mutex<Vec<usize>>>,
        /// The peers each round asked to read this node's zone as recorded.
        zoned: Arc<Mutex<Vec<Vec<String>>>>,
        /// What a peer that reaches the API server reads of this node's Node, and of its zone
        /// when asked to (`None`, the default: nothing).
        recorded: Arc<Mutex<Option<(NodeRead, ZoneRecord)>>>,
        /// Whether a probe of the kubelet's path is answered ready (`None`, the default: every
        /// probe fails at once, and is not recorded), and when each recorded one was sent.
        node_path: Arc<Mutex<Option<bool>>>,
        node_path_probes: Arc<Mutex<Vec<Duration>>>,
        _node: watch::Sender<Option<Arc<Node>>>,
        _peers: watch::Sender<Vec<Peer>>,
        view: watch::Receiver<QuorumView>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for Harness {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    fn peer(node: &str) -> Peer {
        Peer {
            node: node.into(),
            address: "10.0.0.1:9843".parse().expect("address"),
            zone: String::new(),
        }
    }

    fn report(reachable: bool) -> PeerReport {
        PeerReport {
            node: "n0".into(),
            zone: String::new(),
            excluded: false,
            reachable,
            last_contact_age: None,
            kubelet_renewed: None,
            node_read: None,
            zone_recorded: None,
            pods: None,
            leader: Default::default(),
            kubelet_age: None,
        }
    }

    fn question(from: &str, back: bool) -> Question {
        Question {
            from: from.into(),
            zone: String::new(),
            back,
            lease: false,
            taint: false,
            pods: Vec::new(),
            zone_record: false,
        }
    }

    /// The task, cut off or not as `cut_off` says, with a read of the Lease that takes `read`
    /// and is answered or not as `answered` says.
    fn harness(cut_off: bool, read: Duration, answered: bool) -> Harness {
        harness_after(cut_off, read, answered, None)
    }

    /// [`harness`] for a restart whose previous run persisted a contact `contact_before` ago,
    /// on the wall scale this run has.
    fn harness_after(
        cut_off: bool,
        read: Duration,
        answered: bool,
        contact_before: Option<Duration>,
    ) -> Harness {
        let start = Instant::now();
        let clock = Clock::start();
        let rounds = Arc::new(Mutex::new(Vec::new()));
        let told = Arc::new(Mutex::new(Vec::new()));
        let probes = Arc::new(Mutex::new(Vec::new()));
        let since = move || Instant::now() - start;
        let asked = rounds.clone();
        let answer: Arc<Mutex<Option<bool>>> = Arc::default();
        let answers = answer.clone();
        let kubelet: Arc<Mutex<Option<SystemTime>>> = Arc::default();
        let renewed = kubelet.clone();
        let readers: Arc<Mutex<Vec<usize>>> = Arc::default();
        let reading = readers.clone();
        let zoned: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
        let zoning = zoned.clone();
        let recorded: Arc<Mutex<Option<(NodeRead, ZoneRecord)>>> = Arc::default();
        let recording = recorded.clone();
        let ask: Asker = Arc::new(
            move |peers: Vec<Peer>, (lease, zone_flags): Readers, _zone, _pods| -> AskFuture {
                asked.lock().expect("rounds").push(since());
                let n = lease.iter().filter(|l| **l).count();
                reading.lock().expect("readers").push(n);
                let named = peers.iter().zip(&zone_flags).filter(|(_, f)| **f);
                let named = named.map(|(p, _)| p.node.clone()).collect();
                zoning.lock().expect("zoned").push(named);
                let said = *answers.lock().expect("answer");
                let kubelet = *renewed.lock().expect("kubelet");
                let record = *recording.lock().expect("recorded");
                Box::pin(async move {
                    peers
                        .into_iter()
                        .zip(lease.into_iter().chain(std::iter::repeat(false)))
                        .zip(zone_flags.into_iter().chain(std::iter::repeat(false)))
                        .map(|((p, read), zoned)| {
                            let heard = said.map_or(Heard::Silent, |up| {
                                let mut r = report(up);
                                r.kubelet_renewed = kubelet.filter(|_| up && read);
                                if let Some((node, zone)) = record.filter(|_| up) {
                                    r.node_read = Some(node);
                                    r.zone_recorded = zoned.then_some(zone);
                                }
                                Heard::Report(r)
                            });
                            (p, heard)
                        })
                        .collect()
                })
            },
        );
        let tells = told.clone();
        let tell: Teller = Arc::new(move |peers: Vec<Peer>, _zone| -> TellFuture {
            let names = peers.into_iter().map(|p| p.node).collect();
            tells.lock().expect("told").push(names);
            Box::pin(async {})
        });
        let probed = probes.clone();
        let probe: Prober = Arc::new(move |bound| -> ProbeFuture {
            probed.lock().expect("probes").push(since());
            Box::pin(async move {
                tokio::time::sleep(read.min(bound)).await;
                answered && read <= bound
            })
        });
        let node_path: Arc<Mutex<Option<bool>>> = Arc::default();
        let node_path_probes: Arc<Mutex<Vec<Duration>>> = Arc::default();
        let (path, path_probes) = (node_path.clone(), node_path_probes.clone());
        let path_probe: Prober = Arc::new(move |_bound| -> ProbeFuture {
            let ready = *path.lock().expect("node path");
            if ready.is_some() {
                path_probes.lock().expect("node path probes").push(since());
            }
            Box::pin(async move { ready.unwrap_or(false) })
        });
        let (node_tx, node) = watch::channel(None);
        let (peers_tx, peers) = watch::channel(Vec::new());
        // A change, as discovery sends it: the task reads the list on a change only.
        peers_tx.send_replace(vec![peer("a1"), peer("a2")]);
        let (cut_off_tx, cut_off_rx) = watch::channel(Some(cut_off));
        let (_tainted, tainted_rx) = watch::channel(false);
        let reach = Arc::new(Reachability::new("n0"));
        let nudges = Arc::new(Nudges::default());
        let renew_now = Arc::new(Notify::new());
        let inputs = QuorumInputs {
            peers,
            node,
            reach: reach.clone(),
            ask: Some(ask),
            contact_before: contact_before.map(|ago| start - ago),
            heard_bound: start,
            previous_scale: clock.scale(),
            cut_off: cut_off_rx,
            tainted: tainted_rx,
            leader: watch::channel(crate::agent::leader::LeaderView::default()).1,
            unlisted: watch::channel(Vec::new()).1,
            nudges: nudges.clone(),
            tell: Some(tell),
            probe: Some(probe),
            node_path: Some(path_probe),
            renew_now: renew_now.clone(),
        };
        let settings = QuorumSettings {
            policy: QuorumPolicy::new(
                Duration::from_secs(10),
                Duration::from_secs(15),
                Duration::ZERO,
                Undecided::Hold,
                Undecided::Hold,
            ),
            fencing: true,
            interval: INTERVAL,
            ask: 10,
            renew: Duration::from_secs(10),
        };
        let (view_tx, view) = watch::channel(QuorumView::default());
        let health = Arc::new(Health::new(Duration::from_secs(60)));
        let task = tokio::spawn(run(settings, "n0".into(), inputs, view_tx, health, clock));
        Harness {
            start,
            cut_off: cut_off_tx,
            reach,
            nudges,
            renew_now,
            rounds,
            told,
            probes,
            answer,
            kubelet,
            readers,
            zoned,
            recorded,
            node_path,
            node_path_probes,
            _node: node_tx,
            _peers: peers_tx,
            view,
            task,
        }
    }

    async fn at(h: &Harness, t: Duration) {
        tokio::time::sleep_until(h.start + t).await;
    }

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    /// Each round of a cut-off agent probes the kubelet's path beside its questions. While the
    /// latest probe is answered ready, the view says so (the fence holds on it, the peer
    /// endpoint answers with its age); a failed one ends that, keeping the renewal the answers
    /// bounded; the end of the partition clears it.
    #[tokio::test(start_paused = true)]
    async fn each_round_probes_the_kubelets_path_and_the_view_holds_what_it_proved() {
        let h = harness(true, ms(30), true);
        *h.answer.lock().expect("answer") = Some(false);
        *h.node_path.lock().expect("node path") = Some(true);
        at(&h, ms(100)).await;
        let path = || h.view.borrow().node_path;
        assert!(path().answers());
        assert_eq!(path().heard, Some(h.start));
        assert_eq!(path().kubelet_by, None);
        // Rounds every 10 s: the answers span the 21 s window at the fourth round, at 30 s.
        at(&h, ms(30_100)).await;
        assert_eq!(
            *h.node_path_probes.lock().expect("probes"),
            [ms(0), ms(10_000), ms(20_000), ms(30_000)]
        );
        assert_eq!(path().kubelet_by, Some(h.start + ms(9_000)));
        // The peers' questions went out all the same (their reads bound the deadlines too).
        assert_eq!(h.rounds.lock().expect("rounds").len(), 4);
        *h.node_path.lock().expect("node path") = Some(false);
        at(&h, ms(40_100)).await;
        assert!(!path().answers());
        assert_eq!(path().heard, Some(h.start + ms(30_000)));
        assert_eq!(path().kubelet_by, Some(h.start + ms(9_000)));
        // The API server answers this agent again: the partition's probes are over.
        h.cut_off.send_replace(Some(false));
        at(&h, ms(40_200)).await;
        assert_eq!(path(), crate::core::fencing::NodePath::default());
        at(&h, ms(60_000)).await;
        assert_eq!(h.node_path_probes.lock().expect("probes").len(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn a_nudge_while_cut_off_asks_the_peers_once_the_own_read_is_not_answered() {
        // The read hangs past its bound: the round follows the bound.
        let h = harness(true, Duration::from_secs(5), true);
        at(&h, ms(2000)).await;
        h.nudges.answered(&question("a1", true), &report(false));
        at(&h, ms(3000)).await;
        assert_eq!(*h.probes.lock().expect("probes"), [ms(2000)]);
        // The first round at once, the next at the nudge plus the read's bound, not at 10 s.
        assert_eq!(*h.rounds.lock().expect("rounds"), [ms(0), ms(2250)]);
        // Rounds go on every interval from that one.
        at(&h, ms(12300)).await;
        assert_eq!(
            *h.rounds.lock().expect("rounds"),
            [ms(0), ms(2250), ms(12250)]
        );
    }

    /// A peer that says it reaches the API server again is asked first to read for this node in
    /// the next round (`Fixes::nudger_reads`), though its latest answer was "cut off".
    #[tokio::test(start_paused = true)]
    async fn a_peer_that_says_it_is_back_is_asked_first_to_read_for_this_node() {
        let h = harness(true, Duration::from_secs(5), true);
        // Three peers: a round's two zone readers (`ZONE_READERS`) leave one out.
        h._peers
            .send_replace(vec![peer("a1"), peer("a2"), peer("a3")]);
        *h.answer.lock().expect("answer") = Some(false);
        at(&h, ms(100)).await;
        // The first round asks the first two of the list; all answer "cut off".
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(*h.zoned.lock().expect("zoned"), [names(&["a1", "a2"])]);
        at(&h, ms(2000)).await;
        h.nudges.answered(&question("a3", true), &report(false));
        at(&h, ms(3000)).await;
        assert_eq!(*h.rounds.lock().expect("rounds"), [ms(0), ms(2250)]);
        // The one back is asked, and the first of the others.
        assert_eq!(
            h.zoned.lock().expect("zoned").last(),
            Some(&names(&["a1", "a3"]))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_nudge_whose_own_read_is_answered_renews_at_once_and_asks_nobody() {
        let h = harness(true, ms(30), true);
        at(&h, ms(2000)).await;
        let renewed = h.renew_now.notified();
        h.nudges.answered(&question("a1", true), &report(false));
        tokio::time::timeout(ms(100), renewed)
            .await
            .expect("the heartbeat is told to renew within the read's time");
        at(&h, ms(9000)).await;
        assert_eq!(*h.probes.lock().expect("probes"), [ms(2000)]);
        assert_eq!(*h.rounds.lock().expect("rounds"), [ms(0)]);
    }

    /// Under a hold on every zone down that still stops what was due, the view says how long a
    /// taint could have stood, as the round's readers recorded it, for the fence's plan; a
    /// record without the seconds, or the partition's end, leaves none (forty-ninth session,
    /// `core::quorum::zone_down_tolerated`).
    #[tokio::test(start_paused = true)]
    async fn a_hold_on_every_zone_down_publishes_how_long_a_taint_could_have_stood() {
        let h = harness(true, ms(30), true);
        *h.answer.lock().expect("answer") = Some(true);
        let record = |last_down_after| {
            let node = NodeRead {
                tainted: false,
                unknown_since: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000)),
                ..NodeRead::default()
            };
            let zone = ZoneRecord {
                not_ready: 3,
                size: 3,
                only_zone: true,
                last_down_after,
                ..ZoneRecord::default()
            };
            Some((node, zone))
        };
        *h.recorded.lock().expect("recorded") = record(Some(5));
        at(&h, ms(100)).await;
        let seen = || {
            let v = h.view.borrow();
            let due = v.verdict.as_ref().is_some_and(Verdict::stops_due);
            (due, v.stop_due_tolerated)
        };
        assert_eq!(seen(), (true, Some(7)), "{:?}", h.view.borrow().verdict);
        *h.recorded.lock().expect("recorded") = record(None);
        at(&h, INTERVAL + ms(100)).await;
        assert_eq!(seen(), (true, None));
        *h.recorded.lock().expect("recorded") = record(Some(3));
        at(&h, INTERVAL * 2 + ms(100)).await;
        assert_eq!(seen(), (true, Some(5)));
        h.cut_off.send_replace(Some(false));
        at(&h, INTERVAL * 2 + ms(200)).await;
        assert_eq!(seen(), (false, None));
    }

    /// A hold about to turn into enforce within a second of a nudge's answered read waits a
    /// round: the renewal that read sent is in flight (seed 0x1cea of the simulator). A round
    /// after that second records the enforce; without an answered read, at once.
    #[tokio::test(start_paused = true)]
    async fn a_hold_does_not_turn_into_enforce_while_a_renewal_after_a_read_is_in_flight() {
        let word = |h: &Harness| h.view.borrow().verdict.as_ref().map(|v| v.word());
        // Every peer cut off: a hold at the first round.
        let h = harness(true, ms(30), true);
        *h.answer.lock().expect("answer") = Some(false);
        at(&h, ms(100)).await;
        assert_eq!(word(&h), Some("hold"));
        // Peers back; one nudges this node just before the next round (10 s), and its read is
        // answered: the heartbeat renews, but the link stays cut (the renewal never lands).
        *h.answer.lock().expect("answer") = Some(true);
        let renewed = h.renew_now.notified();
        at(&h, INTERVAL - ms(500)).await;
        h.nudges.answered(&question("a1", true), &report(false));
        tokio::time::timeout(ms(100), renewed)
            .await
            .expect("the heartbeat is told to renew");
        at(&h, INTERVAL + ms(100)).await;
        assert_eq!(h.rounds.lock().expect("rounds").len(), 2);
        assert_eq!(word(&h), Some("hold"), "the round within the second waits");
        at(&h, INTERVAL * 2 + ms(100)).await;
        assert_eq!(word(&h), Some("enforce"), "the next round decides");
        // Without a nudge, a hold turns at once.
        let h = harness(true, ms(30), true);
        *h.answer.lock().expect("answer") = Some(false);
        at(&h, ms(100)).await;
        *h.answer.lock().expect("answer") = Some(true);
        at(&h, INTERVAL + ms(100)).await;
        assert_eq!(word(&h), Some("enforce"));
        assert!(h.probes.lock().expect("probes").is_empty());
    }

    /// A restart with no answer from the API server yet (seed 0x11d4 of the simulator): peers
    /// that reach it read this node's kubelet Lease, and a renewal older than a working link
    /// allows (15 s here) counts as a failed request at once; a recent one says nothing, and the
    /// peers read it again a round later, until an answer from the API server or `unreachableAfter`
    /// after the start.
    #[tokio::test(start_paused = true)]
    async fn a_start_without_an_answer_fails_at_once_when_peers_read_the_kubelet_unheard() {
        use crate::api::reachability::State;
        // The contact on disk a minute old, the kubelet last heard 40 s ago.
        let h = harness_after(false, ms(30), false, Some(Duration::from_secs(60)));
        *h.answer.lock().expect("answer") = Some(true);
        let renewed = SystemTime::now() - Duration::from_secs(40);
        *h.kubelet.lock().expect("kubelet") = Some(renewed);
        at(&h, ms(100)).await;
        assert_eq!(h.reach.state(), State::Unreachable);
        // The fence counts from that renewal, a second earlier, not from the contact on disk.
        let read = h.view.borrow().kubelet_renewed.map(|(wall, _)| wall);
        assert_eq!(read, Some(renewed - crate::core::quorum::RENEWAL_SLACK));
        assert_eq!(*h.rounds.lock().expect("rounds"), [ms(0)]);
        assert_eq!(
            *h.readers.lock().expect("readers"),
            [2],
            "each peer asked reads"
        );
        // The kubelet heard 5 s ago: nothing proven, asked again a round later.
        let h = harness_after(false, ms(30), false, Some(Duration::from_secs(60)));
        *h.answer.lock().expect("answer") = Some(true);
        *h.kubelet.lock().expect("kubelet") = Some(SystemTime::now() - Duration::from_secs(5));
        at(&h, INTERVAL + ms(100)).await;
        assert_eq!(h.reach.state(), State::Unknown);
        assert_eq!(*h.rounds.lock().expect("rounds"), [ms(0), INTERVAL]);
        // Answered: no more reading, and a failure read later changes nothing.
        let ok: Result<(), ApiError> = Ok(());
        h.reach.record(&ok, Request::OwnWrite, Instant::now());
        *h.kubelet.lock().expect("kubelet") = Some(SystemTime::now() - Duration::from_secs(40));
        at(&h, INTERVAL * 3).await;
        assert_eq!(h.reach.state(), State::Reachable);
        assert_eq!(h.rounds.lock().expect("rounds").len(), 2);
        // No answer at all: the reading stops once `unreachableAfter` (15 s) has passed since
        // the start, when the fence counts the node cut off without it.
        let h = harness_after(false, ms(30), false, Some(Duration::from_secs(60)));
        *h.answer.lock().expect("answer") = Some(true);
        *h.kubelet.lock().expect("kubelet") = Some(SystemTime::now() - Duration::from_secs(5));
        at(&h, INTERVAL * 3).await;
        assert_eq!(*h.rounds.lock().expect("rounds"), [ms(0), INTERVAL]);
        // No contact on disk (a first start): nobody is asked.
        let h = harness_after(false, ms(30), false, None);
        *h.answer.lock().expect("answer") = Some(true);
        at(&h, INTERVAL * 2).await;
        assert!(h.rounds.lock().expect("rounds").is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_nudge_while_connected_reads_nothing_and_asks_nobody() {
        let h = harness(false, ms(30), false);
        h.nudges.answered(&question("a1", true), &report(true));
        at(&h, ms(1000)).await;
        // Cut off later: the nudge from before is not acted on, the round is the usual first.
        h.cut_off.send_replace(Some(true));
        at(&h, ms(3000)).await;
        assert!(h.probes.lock().expect("probes").is_empty());
        assert_eq!(*h.rounds.lock().expect("rounds"), [ms(1000)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_contact_tells_the_listed_peers_it_answered_cut_off_once() {
        let h = harness(false, ms(30), false);
        // Answered "cut off" to a1 and to a node not in the list; "reachable" to a2.
        h.nudges.answered(&question("a1", false), &report(false));
        h.nudges.answered(&question("x9", false), &report(false));
        h.nudges.answered(&question("a2", false), &report(true));
        at(&h, ms(1000)).await;
        assert!(h.told.lock().expect("told").is_empty());
        let ok: Result<(), ApiError> = Ok(());
        h.reach.record(&ok, Request::OwnWrite, Instant::now());
        at(&h, ms(1100)).await;
        assert_eq!(*h.told.lock().expect("told"), [vec!["a1".to_string()]]);
        // The next contact tells nobody again.
        h.reach.record(&ok, Request::OwnWrite, Instant::now());
        at(&h, ms(2000)).await;
        assert_eq!(h.told.lock().expect("told").len(), 1);
    }
}
