//! The fence task's decisions, one tick at a time (docs/fence.md). The task (`agent::fence_task`)
//! gathers what it observed, asks these, and carries out the answers; it decides nothing itself.
//!
//! - [`Link`]: the last contact and whether this node is reachable or cut off (rule 1), with the
//!   start and end of each partition;
//! - [`Steps`]: which SIGTERMs and kills are due in this partition;
//! - [`Durability`]: what must be written to disk now;
//! - [`Retry`]: when the fence's own API work is tried again after a failure.
//!
//! All times are one clock's (`core::clock::Moment`): monotonic durations order and measure, wall
//! times only anchor what is persisted and what the API server stamps.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use crate::core::clock::Moment;
use crate::core::contact;
use crate::core::fence_plan::{FencePolicy, Plan, PodPlan, QuorumVerdict};

/// Our Node's Ready heartbeat as last seen: the time the API server stored (a wall time, from
/// the writer's clock) and when that version of the Node reached us (monotonic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Heartbeat {
    pub stamped: SystemTime,
    pub arrived: Duration,
}

impl Heartbeat {
    /// The contact it proves, on the monotonic scale: its stamp, but never later than its
    /// arrival. A stamp in the future (the wall clock stepped back, or the writer's runs ahead)
    /// would otherwise count as fresh contact on every tick for as long as it stays in the
    /// future, and a node cut off for that long would never be judged so.
    pub fn contact(&self, now: Moment) -> Duration {
        now.mono_at(self.stamped).min(self.arrived)
    }

    /// Of two heartbeats, the one that proves the later contact at `now`.
    pub fn latest(a: Option<Heartbeat>, b: Option<Heartbeat>, now: Moment) -> Option<Heartbeat> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.contact(now) > a.contact(now) {
                b
            } else {
                a
            }),
            (a, b) => a.or(b),
        }
    }
}

/// What one tick observed about contact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// Send time of our latest write the control plane stored, in this run.
    pub own: Option<Duration>,
    pub heartbeat: Option<Heartbeat>,
    /// The latest request of this run failed (no answer, or an error a proxy gives).
    pub failed: bool,
}

/// A change of partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Cut off from now on; fencing starts.
    CutOff,
    /// Reachable again after a partition that began at `since` (wall time, for the record).
    Reconnected { since: SystemTime },
}

/// One tick's judgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judged {
    /// The last contact, on the monotonic scale.
    pub last_contact: Option<Duration>,
    /// The contact the fence's deadlines count from (`fence_plan::plan` takes the kubelet's lag
    /// off it): the last contact, or, while contact has not yet lasted the kubelet's lag since it
    /// came back after a failure, the one counted before that failure ([`Link::counted`]).
    pub counted: Option<Duration>,
    /// It moved on this tick (to be written down).
    pub moved: bool,
    /// Our own write was stored within `unreachableAfter`.
    pub reachable: bool,
    /// Cut off (rule 1): fencing applies. Never true together with `reachable`; both false while
    /// a fresh start gives the API server its chance.
    pub cut_off: bool,
    pub transition: Option<Transition>,
}

/// The contact with the control plane across ticks and restarts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    last_contact: Option<Duration>,
    /// A start with no partition on record: the API server gets its chance from here.
    started: Option<Duration>,
    /// The wall time the current partition began.
    cut_off_since: Option<SystemTime>,
    /// How long the kubelet may take to renew the node's Lease once its link is back
    /// (`FencePolicy::kubelet_lag`; zero when the agent renews it itself).
    kubelet_lag: Duration,
    /// A request failed since the last contact.
    failed: bool,
    /// The first contact after the latest failure, and the contact counted just before it.
    resumed: Option<(Duration, Option<Duration>)>,
    /// The previous run stopped cut off by a relapse ([`Link::with_unproven_return`]): this run
    /// is cut off at once, until contact comes back.
    relapse_on_record: bool,
    /// The latest renewal of the kubelet's Lease its peers read ([`Link::note_renewal`]), on
    /// the monotonic scale, counted as the kubelet's own ([`Link::counted`]).
    renewed: Option<Duration>,
    /// The Node as last seen shows its kubelet's Ready=False, or the not-ready taint
    /// ([`Link::note_not_ready`]): a failure cuts the node off at once.
    not_ready: bool,
}

impl Link {
    /// After a start at `now`, from what the previous run left: its last contact and, when it
    /// ended cut off, when that partition began (it goes on at once).
    pub fn resume(
        last_contact: Option<SystemTime>,
        cut_off_since: Option<SystemTime>,
        now: Moment,
    ) -> Link {
        Link {
            last_contact: last_contact.map(|wall| now.mono_at(wall)),
            started: cut_off_since.is_none().then_some(now.mono),
            cut_off_since,
            kubelet_lag: Duration::ZERO,
            failed: false,
            resumed: None,
            relapse_on_record: false,
            renewed: None,
            not_ready: false,
        }
    }

    /// The same link after a previous run that stopped cut off while a return was unproven
    /// (a relapse, docs/fence.md §2): `before` is the contact its deadlines counted from, earlier
    /// than the last contact ([`Link::counted_before_return`] gave it). The return stays
    /// unproven, so this run counts from `before` too, and it is cut off at once rather than
    /// `unreachableAfter` after the last contact. Nothing changes without a partition on record
    /// or without a contact after `before`.
    pub fn with_unproven_return(self, before: Option<SystemTime>, now: Moment) -> Link {
        match (before, self.last_contact, self.cut_off_since) {
            (Some(before), Some(last), Some(_)) if now.mono_at(before) < last => Link {
                resumed: Some((last, Some(now.mono_at(before)))),
                relapse_on_record: true,
                ..self
            },
            _ => self,
        }
    }

    /// While cut off by a relapse (the return not proven), the contact the deadlines count
    /// from, as a wall time, for the state file: a restart resumes from it
    /// ([`Link::with_unproven_return`]). `None` otherwise.
    pub fn counted_before_return(&self, now: Moment) -> Option<SystemTime> {
        if self.cut_off_since.is_none() || !self.unproven() {
            return None;
        }
        let (_, before) = self.resumed?;
        before.map(|b| now.wall_at(b))
    }

    /// The same link after earlier runs, since the contact on disk, ran `waited` in all without
    /// an answer (`state::load` reads it from the contact file, [`Link::unanswered`] gave it):
    /// this run counts its own wait from its start on top of theirs, so a run killed before it
    /// knew itself cut off hands its wait on rather than starting `unreachableAfter` afresh
    /// (docs/fence.md §6, *A wait handed on*). The time no agent ran counts for nothing: the
    /// kubelet may have been heard then.
    pub fn with_unanswered(self, waited: Duration) -> Link {
        Link {
            started: self.started.map(|s| s.saturating_sub(waited)),
            ..self
        }
    }

    /// The same link, counting the fence's deadlines with the kubelet's `lag` in mind
    /// ([`Link::counted`]).
    pub fn with_kubelet_lag(self, lag: Duration) -> Link {
        Link {
            kubelet_lag: lag,
            ..self
        }
    }

    /// The contact the fence's deadlines count from. The control plane judges the node by the
    /// kubelet's renewals of the node's Lease, which come every `kubelet_lag` at most while its
    /// link is up: the last one stored is no older than the last contact minus that lag, which
    /// the plan takes off. After a failure, though, the link may have been down, and the kubelet
    /// renews again only on its next try, up to `kubelet_lag` after the link came back: a contact
    /// less than that after the first one past the failure proves nothing of the kubelet, and the
    /// contact counted before the failure stands (issue 22, seed 0xd0: a link back for 5.5 s
    /// between two cuts, no renewal of the kubelet stored in it, a pod stopped 14 s after its
    /// deletion). With no contact counted before the failure (a start into an outage), the
    /// last contact counts, as it always did: nothing else is known to count from.
    ///
    /// A renewal of the kubelet's Lease its peers read ([`Link::note_renewal`]), though, is the
    /// kubelet's own, not this agent's contact: the control plane heard the node no earlier than
    /// it, whatever failed before, so the count is never earlier than that renewal plus the lag
    /// the plan takes off (docs/fence.md §6, *Deadlines from the renewal read*; issue 22, seed
    /// 0x11f: an agent restarted while cut off was read its kubelet's renewal 9 s after the
    /// contact on disk, but its partition on record made the read a return not yet proven; the
    /// fence counted from the contact on disk, less the lag, and stopped a pod 19 s before the
    /// zone's partial disruption held it).
    pub fn counted(&self) -> Option<Duration> {
        let contact = match self.resumed {
            Some((_, before)) if self.unproven() => before.or(self.last_contact),
            _ => self.last_contact,
        };
        contact.max(self.renewed.map(|r| r + self.kubelet_lag))
    }

    /// Whether contact came back after a failure less than the kubelet's lag ago: no contact
    /// since proves the kubelet renewed, and the control plane may still count from the one
    /// before the failure ([`Link::counted`]).
    pub fn unproven(&self) -> bool {
        matches!(self.resumed, Some((first, _)) if self.last_contact < Some(first + self.kubelet_lag))
    }

    /// Notes the latest renewal of the kubelet's Lease the peers read for a run with no contact of
    /// its own (`core::quorum::kubelet_renewal`: a second before its `renewTime`, placed on a
    /// steady wall clock), which [`Link::counted`] counts as the kubelet's own. An earlier read,
    /// or none, changes nothing.
    pub fn note_renewal(&mut self, read: Option<Heartbeat>, now: Moment) {
        self.renewed = self.renewed.max(read.map(|h| h.contact(now)));
    }

    /// Why a failure cuts the node off at once rather than `unreachableAfter` after its last
    /// contact, for the log: a return not yet proven ([`Link::unproven`], a relapse), or a Node
    /// not Ready ([`Link::note_not_ready`]). `None` when it waits for `unreachableAfter`.
    pub fn cut_at_once(&self) -> Option<&'static str> {
        if self.unproven() {
            Some("a request failed before the return proved the kubelet renewed")
        } else if self.not_ready {
            Some("a request failed while our Node is not Ready")
        } else {
            None
        }
    }

    /// Notes whether the Node as last seen shows its kubelet's Ready=False or carries the
    /// not-ready taint: the controller may add that taint, or has, and deletes each pod that
    /// tolerates it for a while once that while ends, whether or not the kubelet still hears.
    pub fn note_not_ready(&mut self, not_ready: bool) {
        self.not_ready = not_ready;
    }

    /// Folds in one tick's observations; `after` is `unreachableAfter`.
    pub fn judge(&mut self, seen: &Seen, now: Moment, after: Duration) -> Judged {
        let contact = seen.own.max(seen.heartbeat.map(|h| h.contact(now)));
        let moved = contact > self.last_contact;
        if moved {
            // A partition on record counts as a failure too: a request that hangs for its
            // whole timeout may cut the node off before any has failed.
            let failed = std::mem::take(&mut self.failed) || self.cut_off_since.is_some();
            self.relapse_on_record = false;
            if failed && !self.kubelet_lag.is_zero() {
                let before = self.counted();
                self.resumed = contact.map(|first| (first, before));
            }
            self.last_contact = contact;
        }
        // After the contact it may have proved: the latest request failed.
        self.failed |= seen.failed;
        // A relapse (docs/fence.md §2): a request fails while contact back after a failure has
        // not yet proved the kubelet renewed. The control plane may still count from the contact
        // before that failure, and deadlines counted from it do not wait for `after` to pass
        // since the return: the node is cut off again at once. So is a Node not Ready that a
        // request fails for (docs/fence.md §2, *A Node not Ready*): the not-ready taint's timers
        // may end at any moment, and the kubelet no longer hears the deletions.
        let relapsed = ((seen.failed || self.relapse_on_record) && self.unproven())
            || (seen.failed && self.not_ready);
        let reachable =
            !relapsed && seen.own.is_some() && !contact::older_than(seen.own, now.mono, after);
        let cut_off = (relapsed
            || contact::cut_off(
                seen.own,
                self.last_contact,
                self.started,
                seen.failed,
                now.mono,
                after,
            ))
            && self.last_contact.is_some();
        let transition = match (reachable, cut_off, self.cut_off_since) {
            (true, _, Some(since)) => {
                self.cut_off_since = None;
                Some(Transition::Reconnected { since })
            }
            (false, true, None) => {
                self.cut_off_since = Some(now.wall);
                Some(Transition::CutOff)
            }
            _ => None,
        };
        Judged {
            last_contact: self.last_contact,
            counted: self.counted(),
            moved,
            reachable,
            cut_off,
            transition,
        }
    }

    /// The first instant after `now` at which `judge` answers differently for the observations
    /// a tick just judged: its own contact growing older than `after` (no longer reachable), or
    /// the latest contact, counted from no earlier than a clean start, doing so (cut off).
    /// `None` when time passing alone changes nothing: already cut off (only new contact ends a
    /// partition), or nothing to count from. A task that sleeps between ticks wakes at this
    /// instant or on a new observation, whichever comes first.
    pub fn next_change(&self, seen: &Seen, now: Duration, after: Duration) -> Option<Duration> {
        if self.cut_off_since.is_some() {
            return None;
        }
        // `contact::older_than` is strict: each judgement flips just past `contact + after`.
        let past = |c: Duration| c + after + Duration::from_nanos(1);
        let anchor = if seen.failed { None } else { self.started };
        let expires = seen.own.map(past);
        // Never cut off without a contact to count deadlines from (see `judge`).
        let cuts = self
            .last_contact
            .is_some()
            .then(|| self.last_contact.max(anchor).map(past))
            .flatten();
        [expires, cuts]
            .into_iter()
            .flatten()
            .filter(|t| *t > now)
            .min()
    }

    /// How long this run (with the earlier runs it took over from, [`Link::with_unanswered`])
    /// has gone without an answer since the last contact, once that is worth a record for the
    /// next run: while not cut off (a partition on record goes on at once anyway), from a start
    /// that has had no contact yet, or past the last contact once the next renewal is overdue —
    /// sent `renew` after it (the kubelet's lag after the first contact past a failure,
    /// [`next_renewal`]) and not answered within [`UNANSWERED_RECORD_EVERY`]. `None` otherwise,
    /// and when there is no contact to count from. Connected, the contact moves with every
    /// renewal, and no wait is ever recorded.
    pub fn unanswered(&self, now: Duration, renew: Duration) -> Option<Duration> {
        let (anchor, threshold) = self.unanswered_anchor(renew)?;
        let waited = now.saturating_sub(anchor);
        (waited > threshold).then_some(waited)
    }

    /// The first instant [`Link::unanswered`] gives a wait, for a task that sleeps between ticks.
    pub fn unanswered_from(&self, renew: Duration) -> Option<Duration> {
        let (anchor, threshold) = self.unanswered_anchor(renew)?;
        Some(anchor + threshold + Duration::from_nanos(1))
    }

    /// What [`Link::unanswered`] counts from, and how long past it a wait is recorded.
    fn unanswered_anchor(&self, renew: Duration) -> Option<(Duration, Duration)> {
        if self.cut_off_since.is_some() {
            return None;
        }
        let last = self.last_contact?;
        Some(match self.started {
            // No contact in this run yet: from its start, less what earlier runs waited.
            Some(start) if start >= last => (start, UNANSWERED_RECORD_EVERY),
            _ => {
                let returned = self
                    .resumed
                    .is_some_and(|(first, _)| Some(first) == self.last_contact);
                let next = next_renewal(renew, self.kubelet_lag, returned);
                (last, next + UNANSWERED_RECORD_EVERY)
            }
        })
    }

    /// The last contact as a wall time at `now`, for the state file and the records.
    pub fn last_contact_wall(&self, now: Moment) -> Option<SystemTime> {
        self.last_contact.map(|c| now.wall_at(c))
    }

    /// When the current partition began, if cut off.
    pub fn cut_off_since(&self) -> Option<SystemTime> {
        self.cut_off_since
    }
}

/// Whether `every` has passed at `now` since a write at `t` (never written: it has).
fn passed(t: Option<Duration>, now: Duration, every: Duration) -> bool {
    t.is_none_or(|t| now.saturating_sub(t) >= every)
}

/// When `every` will have passed since a write at `t` (never written: at once), as [`passed`]
/// counts it.
fn after(t: Option<Duration>, every: Duration) -> Duration {
    t.map_or(Duration::ZERO, |t| t + every)
}

/// While this run waits for an answer ([`Link::unanswered`]), the wait is written with the last
/// contact this often, and a start with no contact yet records it once it is this long.
pub const UNANSWERED_RECORD_EVERY: Duration = Duration::from_secs(1);

/// After a renewal of our Lease failed, the next one goes out this soon, whatever the renew
/// interval (`agent::heartbeat`): the kubelet retries at once too (docs/fence.md §2).
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// The contact the fence's deadlines count from and the policy it plans with, given the latest
/// renewal of this node's kubelet Lease its peers read (`read`, on the monotonic scale,
/// `quorum::RENEWAL_SLACK` earlier than its `renewTime`; docs/fence.md §5, *The kubelet heard
/// after this agent*): `counted` (`Link::counted`) and `policy`, unless that renewal came more
/// than a renew interval and a second after this run's own last contact (`own`) and moves the
/// count later; then the renewal, planned with [`FencePolicy::kubelet_heard`].
///
/// This agent sends its next request a renew interval after a contact at most, and on a link it
/// shares with the kubelet that request finds the link up if the kubelet could store a renewal
/// later. A renewal stored after it therefore proves that the kubelet reached the API server
/// after this agent's own requests failed: this agent's path is not the node's (the packaged
/// DaemonSet reaches the API server through the `kubernetes` Service, the kubelet through its
/// kubeconfig; or an API priority level throttles this agent's requests alone), or the link came
/// back for a moment this agent did not catch. Either way the control plane heard the node then,
/// and judges it no sooner than a grace period after it: the deadlines count from that renewal
/// (the plan takes `kubelet_lag` off the contact it is given, so it is given the renewal plus
/// that lag). A renewal no later than that proves nothing this run's contact does not, and the
/// count stands.
pub fn counted_with_kubelet(
    counted: Duration,
    own: Option<Duration>,
    read: Option<Duration>,
    renew: Duration,
    policy: &FencePolicy,
) -> (Duration, FencePolicy) {
    match (own, read.map(|k| (k, k + policy.kubelet_lag))) {
        (Some(own), Some((k, from)))
            if k > own + renew + crate::core::quorum::ANSWERED_WITHIN && from > counted =>
        {
            (from, policy.kubelet_heard())
        }
        _ => (counted, *policy),
    }
}

/// What the probes of this node's own path to the API server said in this partition
/// (`fence.kubeletServer`; docs/fence.md §5, *The kubelet's path probed*). While this agent's
/// own requests fail, each round of its quorum reads `/readyz` of the server the kubelet names, as
/// the kubelet reaches it, with the agent's own credentials; a ready answer proves that this
/// node's path to a ready API server works, so the kubelet's renewals are stored and the control
/// plane hears the node. `T` is an instant on one monotonic scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodePath<T> {
    /// When the latest probe that was answered ready was sent.
    pub heard: Option<T>,
    /// When the probes began to be answered ready with none failing since; `None` when the latest
    /// failed, or none was sent.
    pub since: Option<T>,
    /// The latest instant by which the kubelet certainly renewed its Lease: [`NodePath::note`].
    pub kubelet_by: Option<T>,
    /// What the latest round of this partition whose peers read the Node found
    /// (`core::quorum::taint_read`): `Some(true)`, the unreachable taint. Of this partition
    /// only: a taint a peer read in an earlier one may have been removed since.
    pub taint_read: Option<bool>,
}

impl<T> Default for NodePath<T> {
    fn default() -> NodePath<T> {
        NodePath {
            heard: None,
            since: None,
            kubelet_by: None,
            taint_read: None,
        }
    }
}

/// The fence's hold while [`NodePath::answers`], as each held plan's log line gives it.
pub const NODE_PATH_HOLDS: &str = "this agent's own requests fail, but the kubelet's path to the API server (fence.kubeletServer) answers ready: the control plane hears this node, and its kubelet stops what the API server deletes";

/// How long the probes must have been answered without a failure between for the kubelet to have
/// renewed on the path they found up: a renewal sent while it was down hangs up to the kubelet's
/// request timeout (a renew interval at the defaults), the next goes out a renew interval later at
/// most, and a second covers its answer.
pub fn node_path_window(renew: Duration) -> Duration {
    renew * 2 + crate::core::quorum::ANSWERED_WITHIN
}

impl<T> NodePath<T>
where
    T: Copy + Ord + std::ops::Add<Duration, Output = T> + std::ops::Sub<Duration, Output = T>,
{
    /// Records a probe sent at `at`: answered ready or not. Once the probes have been answered
    /// over [`node_path_window`] without a failure, the kubelet renewed in the last such window
    /// of it: [`NodePath::kubelet_by`] moves to `at` less the window (never back).
    pub fn note(&mut self, answered: bool, at: T, renew: Duration) {
        if !answered {
            self.since = None;
            return;
        }
        let since = *self.since.get_or_insert(at);
        self.heard = Some(self.heard.map_or(at, |h| h.max(at)));
        let window = node_path_window(renew);
        if since + window <= at {
            let by = at - window;
            self.kubelet_by = Some(self.kubelet_by.map_or(by, |k| k.max(by)));
        }
    }

    /// Records what a round's peers read of the Node (`None`: none read it; a read stands until
    /// a later one).
    pub fn note_taint(&mut self, read: Option<bool>) {
        if read.is_some() {
            self.taint_read = read;
        }
    }

    /// The latest probe was answered ready: the control plane hears this node's kubelet, which
    /// stops whatever the API server deletes of its pods itself. The fence holds meanwhile,
    /// unless a peer read the unreachable taint on the Node in this partition's latest round that
    /// read it (the kubelet's path answers, but the control plane judged the node: the kubelet
    /// may be down).
    pub fn answers(&self) -> bool {
        self.since.is_some() && self.taint_read != Some(true)
    }

    /// The verdict a cut-off fence plans with, given the quorum's: a hold with
    /// [`NODE_PATH_HOLDS`] while [`NodePath::answers`], the quorum's otherwise.
    pub fn verdict(&self, quorum: QuorumVerdict) -> QuorumVerdict {
        if self.answers() {
            QuorumVerdict::Hold {
                reason: NODE_PATH_HOLDS.into(),
                stop_due: None,
            }
        } else {
            quorum
        }
    }

    /// How old the latest ready answer is at `now`, for the peers: this node's kubelet reaches the
    /// API server as far as they are concerned (`core::quorum::answer` takes the younger of this
    /// and the agent's own contact). `None` once a peer read the unreachable taint in this
    /// partition: the control plane counts the node not ready, whatever its path answers.
    pub fn heard_age(&self, now: T) -> Option<Duration>
    where
        T: std::ops::Sub<T, Output = Duration>,
    {
        if self.taint_read == Some(true) {
            return None;
        }
        self.heard
            .map(|h| if h <= now { now - h } else { Duration::ZERO })
    }
}

/// While a renewal sent after a failure is not answered, the API server is probed this often (a
/// read of the Lease, bounded by this too); once a probe is answered the hung renewal is dropped
/// and another goes out at once, not on its connection (`agent::heartbeat`, docs/fence.md §2). A
/// request into a link that hangs is never answered once the link is back, so without a probe the
/// agent would hear of the return only at that request's timeout.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// When a peer says it reaches the API server again while this node is cut off
/// (`peer::Question::back`), this node first reads its own Lease, bounded by this: answered, it
/// renews at once and asks nobody; not answered in time (or refused), it asks its peers at once
/// rather than at its next round (`agent::quorum`, docs/fence.md §5). A healthy API server answers
/// a read far sooner; a link that hangs costs no more than this before the round.
pub const NUDGE_PROBE: Duration = Duration::from_millis(250);

/// How long after a renewal of our Lease the next one goes out: every `renew`, but after the
/// first one stored since a failure, no sooner than `kubelet_lag`. That next contact is the first
/// that proves the kubelet renewed too ([`Link::counted`]), and with the kubelet's cadence a
/// little longer than ours (`renew` × 1.04), it would otherwise come a whole interval later.
pub fn next_renewal(renew: Duration, kubelet_lag: Duration, first_after_failure: bool) -> Duration {
    if first_after_failure {
        renew.max(kubelet_lag)
    } else {
        renew
    }
}

/// A step of a pod's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Sigterm,
    Kill,
}

/// One step due now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Due {
    pub uid: String,
    pub step: Step,
    /// How long after its planned instant it is taken.
    pub late: Duration,
    pub dry_run: bool,
    /// The moment the control plane could delete the pod (monotonic).
    pub eviction_time: Duration,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Taken {
    termed: bool,
    killed: bool,
}

/// The steps taken in the current partition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Steps {
    taken: BTreeMap<String, Taken>,
    /// SIGTERMs not sent yet wait for their kills ([`Steps::wait_sigterm`]).
    sigterm_waits: bool,
}

impl Steps {
    /// The steps of `plans` due at `now` and not taken yet, marked taken. A pod in `fenced`
    /// (stopped before a restart, its Event held or sent) is done: acting on it again would
    /// announce it twice.
    pub fn due(&mut self, plans: &[PodPlan], fenced: &BTreeSet<String>, now: Duration) -> Vec<Due> {
        let mut out = Vec::new();
        let waits = self.sigterm_waits;
        for p in plans {
            let Plan::Stop {
                schedule, dry_run, ..
            } = &p.plan
            else {
                continue;
            };
            // Looked up before inserting: a tick while cut off allocates nothing per pod.
            if !self.taken.contains_key(&p.uid) {
                let done = fenced.contains(&p.uid);
                self.taken.insert(
                    p.uid.clone(),
                    Taken {
                        termed: done,
                        killed: done,
                    },
                );
            }
            let Some(taken) = self.taken.get_mut(&p.uid) else {
                continue;
            };
            // A SIGTERM that waits is taken with its kill, and told as late as it is.
            let term_from = if waits {
                schedule.sigterm_at.max(schedule.kill_at)
            } else {
                schedule.sigterm_at
            };
            let mut take = |step, at: Duration, from: Duration, done: &mut bool| {
                if !*done && now >= from {
                    *done = true;
                    out.push(Due {
                        uid: p.uid.clone(),
                        step,
                        late: now - at,
                        dry_run: *dry_run,
                        eviction_time: schedule.eviction_time,
                    });
                }
            };
            take(
                Step::Sigterm,
                schedule.sigterm_at,
                term_from,
                &mut taken.termed,
            );
            take(
                Step::Kill,
                schedule.kill_at,
                schedule.kill_at,
                &mut taken.killed,
            );
        }
        out
    }

    /// The first instant at which `due` has a step of `plans` to take (past when one is due
    /// now); `None` when every step is taken. A task that sleeps while cut off wakes then.
    pub fn next_due(&self, plans: &[PodPlan], fenced: &BTreeSet<String>) -> Option<Duration> {
        plans
            .iter()
            .filter_map(|p| {
                let Plan::Stop { schedule, .. } = &p.plan else {
                    return None;
                };
                let taken = self.taken.get(&p.uid).copied().unwrap_or_else(|| {
                    let done = fenced.contains(&p.uid);
                    Taken {
                        termed: done,
                        killed: done,
                    }
                });
                match (taken.termed, taken.killed) {
                    (false, _) if self.sigterm_waits => Some(schedule.kill_at),
                    (false, _) => Some(schedule.sigterm_at.min(schedule.kill_at)),
                    (true, false) => Some(schedule.kill_at),
                    (true, true) => None,
                }
            })
            .min()
    }

    /// A partition ended: the next one starts from nothing taken, and no SIGTERM waits.
    pub fn clear(&mut self) {
        self.taken.clear();
        self.sigterm_waits = false;
    }

    /// Whether the SIGTERMs not sent yet wait (`core::quorum::sigterm_waits`, docs/fence.md §5,
    /// *The SIGTERM waits for a read*): a SIGTERM is the one step nothing later undoes, sent a
    /// pod's grace period ahead of its kill, and while the latest round's peers say they reach the
    /// API server but none read from it, the verdict it rests on may be about to turn; under the
    /// staggered expiry's guess, until a peer reads the taint, the node may never be tainted. A
    /// waiting SIGTERM goes out as soon as the wait ends, or with its kill, which keeps its time:
    /// a pod is stopped no later than before, with less of its grace period. True when that
    /// changed.
    pub fn wait_sigterm(&mut self, wait: bool) -> bool {
        std::mem::replace(&mut self.sigterm_waits, wait) != wait
    }
}

/// What to write now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    Nothing,
    /// The whole state (it holds the last contact too).
    State,
    /// Only the last contact, to its own small file.
    Contact,
}

/// How often each file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cadence {
    /// A change is written at most this long after it happens, and the state no more often
    /// (a burst of pod events costs one write).
    pub coalesce: Duration,
    /// The last contact alone, while connected.
    pub contact_every: Duration,
    /// The Lease renew interval: an answer is overdue once the next renewal after the last
    /// contact had [`UNANSWERED_RECORD_EVERY`] to be answered ([`Link::unanswered`]).
    pub renew: Duration,
}

/// Changes to the durable state are written at most this long after they happen (and no more
/// often): a burst of pod events costs one write.
pub const COALESCE: Duration = Duration::from_millis(250);
/// The longest the last contact waits to be written while connected (flash storage on edge
/// nodes: at the default 10 s renew interval, one small write per renewal).
pub const CONTACT_WRITE_MAX: Duration = Duration::from_secs(5);

impl Cadence {
    /// The fence task's cadence for a Lease renew interval: changes within [`COALESCE`], the
    /// last contact every half renew interval, at most [`CONTACT_WRITE_MAX`] apart.
    pub fn for_renew(renew: Duration) -> Cadence {
        Cadence {
            coalesce: COALESCE,
            contact_every: (renew / 2).min(CONTACT_WRITE_MAX),
            renew,
        }
    }
}

/// What is on disk and what is not yet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Durability {
    /// Something of the state changed since it was last written.
    dirty: bool,
    /// Only the last contact moved.
    contact_dirty: bool,
    last_state: Option<Duration>,
    last_contact: Option<Duration>,
    /// The wait to write with the contact ([`Durability::unanswered`]).
    unanswered: Option<Duration>,
    /// When a wait was last written, and whether the contact file on disk holds one.
    unanswered_written: Option<Duration>,
    unanswered_on_disk: bool,
    /// The contact moved past the wait on disk: that file counts from an old contact.
    wait_stale: bool,
}

impl Durability {
    /// A state that was not read from disk (or changed at start) must be written.
    pub fn new() -> Durability {
        Durability {
            dirty: true,
            ..Durability::default()
        }
    }

    /// The state changed.
    pub fn changed(&mut self) {
        self.dirty = true;
    }

    /// The last contact moved.
    pub fn contact_moved(&mut self) {
        self.contact_dirty = true;
        self.wait_stale |= self.unanswered_on_disk;
    }

    /// This tick's wait without an answer ([`Link::unanswered`]): written with the last contact
    /// every [`UNANSWERED_RECORD_EVERY`] while there is one. A contact that moves past a wait on
    /// disk is written within that time too, not the contact's own cadence: the wait counts
    /// from the old contact.
    pub fn unanswered(&mut self, waited: Option<Duration>) {
        self.unanswered = waited;
    }

    /// The wait to write with the contact now.
    pub fn record(&self) -> Option<Duration> {
        self.unanswered
    }

    /// Whether anything is unwritten.
    pub fn pending(&self) -> bool {
        self.dirty || self.contact_dirty
    }

    /// The contact file is due for the wait: one to write, or one on disk that a moved contact
    /// makes stale (a failed write of either is retried at the same pace).
    fn wait_due(&self, now: Duration) -> bool {
        (self.unanswered.is_some() && passed(self.unanswered_written, now, UNANSWERED_RECORD_EVERY))
            || (self.wait_stale && passed(self.last_contact, now, UNANSWERED_RECORD_EVERY))
    }

    /// What to write at `now`. While cut off every change is written at once (a kill, a fenced
    /// pod): a restart must plan the very same deadlines and announce nothing twice.
    pub fn due(&self, cut_off: bool, now: Duration, cadence: Cadence) -> Write {
        if self.dirty && (cut_off || passed(self.last_state, now, cadence.coalesce)) {
            Write::State
        } else if (self.contact_dirty && passed(self.last_contact, now, cadence.contact_every))
            || self.wait_due(now)
        {
            Write::Contact
        } else {
            Write::Nothing
        }
    }

    /// The first instant at which `due` answers something other than `Write::Nothing`, for a
    /// task that sleeps between ticks (it may be now or past); `None` while nothing is unwritten.
    pub fn next_due(&self, cut_off: bool, cadence: Cadence) -> Option<Duration> {
        // The wait's own pace ([`Durability::wait_due`]), beside the state's and the contact's.
        let recorded = self
            .unanswered
            .map(|_| after(self.unanswered_written, UNANSWERED_RECORD_EVERY));
        let stale = self
            .wait_stale
            .then(|| after(self.last_contact, UNANSWERED_RECORD_EVERY));
        [
            recorded,
            stale,
            self.next_state_or_contact_due(cut_off, cadence),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn next_state_or_contact_due(&self, cut_off: bool, cadence: Cadence) -> Option<Duration> {
        if self.dirty {
            let state = if cut_off {
                Duration::ZERO
            } else {
                after(self.last_state, cadence.coalesce)
            };
            // A contact alone may be due before the whole state is.
            Some(if self.contact_dirty {
                state.min(after(self.last_contact, cadence.contact_every))
            } else {
                state
            })
        } else if self.contact_dirty {
            Some(after(self.last_contact, cadence.contact_every))
        } else {
            None
        }
    }

    /// What a last write before stopping must cover, whatever the cadence.
    pub fn unwritten(&self) -> Write {
        if self.dirty {
            Write::State
        } else if self.contact_dirty || self.unanswered.is_some() {
            Write::Contact
        } else {
            Write::Nothing
        }
    }

    /// `what` was tried at `now` and succeeded or not. A failed write stays due (a failing disk
    /// is retried at the same cadence, never every tick).
    pub fn written(&mut self, what: Write, ok: bool, now: Duration) {
        match what {
            Write::Nothing => {}
            Write::State => {
                self.dirty = !ok;
                self.contact_dirty = !ok;
                self.last_state = Some(now);
                if ok {
                    self.last_contact = Some(now);
                }
            }
            Write::Contact => {
                self.contact_dirty = !ok;
                self.last_contact = Some(now);
                if self.unanswered.is_some() {
                    self.unanswered_written = Some(now);
                }
                if ok {
                    self.unanswered_on_disk = self.unanswered.is_some();
                    self.wait_stale = false;
                }
            }
        }
    }
}

/// When the fence's own API work (reconciling fenced pods, held Events) is tried next: the one
/// retry policy of the agent's API work, shared with the reporter (`core::reporting`).
pub use crate::core::backoff::Retry;

/// What the fence task is waiting for after a tick, for [`next_wake`]: the state the tick left
/// and what it observed. Everything is on the monotonic scale.
#[derive(Clone, Copy, Debug)]
pub struct Waiting<'a> {
    /// The instant the tick ran at.
    pub now: Duration,
    /// The tick's judgement (`Link::judge`).
    pub judged: &'a Judged,
    pub link: &'a Link,
    /// What the tick observed of contact.
    pub seen: &'a Seen,
    /// `unreachableAfter`.
    pub unreachable_after: Duration,
    /// The plans of the current partition (only read while cut off).
    pub plans: Option<&'a [PodPlan]>,
    pub steps: &'a Steps,
    /// Pods stopped and kept dead until the API server answers.
    pub fenced: &'a BTreeSet<String>,
    /// When fenced pods are next swept for respawned processes; `None` while nothing is swept.
    pub sweep_at: Option<Duration>,
    pub durability: &'a Durability,
    pub cadence: Cadence,
    pub retry: &'a Retry,
    /// The fence's own API work (fenced pods to reconcile, held Events) is waiting.
    pub api_work: bool,
    /// Not cut off, the fence plans on the taint its Node carries ([`fences_on_taint`]): its
    /// steps and sweep are due as while cut off.
    pub on_taint: bool,
}

/// Whether the fence, not cut off, plans on the node controller's NoExecute taint its Node
/// carries as last seen, unreachable or not-ready (`fence_plan::QuorumVerdict::Tainted`,
/// docs/fence.md §3). While its Node carries the taint the control plane deletes each pod once
/// its toleration has run, and a link that came back (or, for the not-ready taint, one that never
/// went) may go before this node would count itself cut off (`unreachableAfter` after its last
/// contact): the pod must be stopped by then all the same. While the taint is on the Node, no
/// fenced pod is released to the kubelet either.
pub fn fences_on_taint(judged: &Judged, tainted: bool) -> bool {
    tainted && !judged.cut_off
}

/// The instant the fence task must tick next if none of its inputs moves first: the earliest of
/// a step of the plans, the sweep of fenced pods (both only while cut off or fencing on the
/// taint), the judgement
/// changing with time alone (`Link::next_change`), a write falling due, a wait without an
/// answer becoming worth a record (`Link::unanswered_from`), and the retry of the
/// fence's API work while reachable (at once when no failure pushed it back). It may be at or
/// before `now` (due at once). `None` when nothing is pending: only a new observation can give
/// the task something to do, so it sleeps until one arrives (bounded by the caller).
pub fn next_wake(w: &Waiting<'_>) -> Option<Duration> {
    let cut_off = w.judged.cut_off;
    let fencing = cut_off || w.on_taint;
    let steps = w
        .plans
        .filter(|_| fencing)
        .and_then(|plans| w.steps.next_due(plans, w.fenced));
    let sweep = w.sweep_at.filter(|_| fencing);
    let judgement = w.link.next_change(w.seen, w.now, w.unreachable_after);
    let write = w.durability.next_due(cut_off, w.cadence);
    // A wait without an answer becomes worth recording (`Link::unanswered`).
    let wait = w
        .link
        .unanswered_from(w.cadence.renew)
        .filter(|t| *t > w.now);
    let retry = (w.judged.reachable && w.api_work).then(|| w.retry.next_at().unwrap_or(w.now));
    [steps, sweep, judgement, write, wait, retry]
        .into_iter()
        .flatten()
        .min()
}
