//! Durable state in the state directory: what the fence must still know after a restart in the
//! middle of a partition — the pods bound to this node, the last contact (a wall-clock anchor),
//! the pods fenced, and the Events not yet sent — and, for `nodewarden status`, what the Node
//! last looked like (conditions, taints, allocatable) and each pod's requests and limits, so the
//! person at the node sees them while the API server is unreachable. One versioned JSON file,
//! and beside it the last contact alone, which moves with every Lease renewal ([`CONTACT_FILE`]).
//! Both are written atomically (temp file, fsync, rename, fsync of the directory), so a crash
//! leaves the old or the new file, never a torn one, and private (files 0600, a directory we
//! create 0700, whatever the umask): they name every pod on the node. A state file that cannot
//! be read or parsed is moved aside and reported; nothing is inferred from it. One written by a
//! newer release (a format version above [`VERSION`]) is left exactly as it is, and nothing is
//! saved while it is there, so going back to that release after a rollback loses nothing.
//! Within a file this build reads, an entry it could not have written (a pod, a held Event) is
//! left out on its own, and logged.
//!
//! Every wall time in these files is on the scale of the run that wrote it: the wall clock read
//! at its start plus monotonic time since (`agent::clock`). Each file also names that scale
//! against the node's boot clock (`core::clock::Scale`), and [`load`] carries its times onto the
//! reading run's scale, so a wall-clock step between two runs moves no deadline (issue 22, seed
//! 0x14e8). Across a reboot nothing relates the two, and the times are taken as they read.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::bounded;
use crate::core::clock::{Scale, carried};
use crate::core::condition::{ConditionStatus, NodeCondition};
use crate::core::event::PendingEvent;
use crate::core::fence_plan::FencePod;
use crate::core::quantity::Quantity;
use crate::core::resources::{Amounts, Effective};

/// The file name inside the state directory.
pub const STATE_FILE: &str = "state.json";
/// The last contact alone: one line, the RFC 3339 time, then the writer's scale
/// (`core::clock::Scale::to_text`; earlier builds wrote the time alone). It advances with every
/// Lease renewal, so it is written on its own: rewriting the whole state (every pod) that often
/// would wear the flash storage of edge nodes for nothing. `load` takes the later of the two.
/// While the agent waits for an answer past that contact, a second line says for how long
/// (`unanswered 5450ms`, `core::fencing::Link::unanswered`): the next run counts its own wait on
/// top of it. An earlier build cannot read a file with that line and keeps the state file's
/// older contact, which can only make the fence act earlier.
pub const CONTACT_FILE: &str = "last-contact";
/// How current the fence's pod view was at its last change (`core::pod_view`): one line,
/// `current` or `stale since <RFC 3339>`, written by the fence when that changes, for `status`.
/// Its own file: it changes rarely and no restart reads it, so the state's format stays as is.
pub const POD_VIEW_FILE: &str = "pod-view";
/// The format version this build writes.
pub const VERSION: u32 = 10;
/// Older versions this build reads: version 1 lacks the Node and the pods' resources, version 2
/// the conditions as decided, version 3 the peers and the quorum, version 4 the wall scale,
/// version 5 when the quorum's first hold began, version 6 when each of the Node's taints was
/// added, version 7 the contact a relapse counts from, version 8 the first taint of a run the
/// controller swapped, version 9 whether the peers' reads for this node ever came back; all then
/// read as empty.
const READS: [u32; 10] = [1, 2, 3, 4, 5, 6, 7, 8, 9, VERSION];

/// Everything persisted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct State {
    pub version: u32,
    pub node: String,
    /// RFC 3339 with nanoseconds: the latest moment the control plane provably heard from us.
    pub last_contact: Option<String>,
    /// Each entry read on its own: see [`StoredPod`].
    #[serde(deserialize_with = "read_pods")]
    pub pods: Vec<StoredPod>,
    /// UIDs of pods fenced (stopped and kept stopped).
    pub fenced: Vec<String>,
    /// The fence's own Events not yet delivered.
    #[serde(with = "held_events")]
    pub pending_events: Vec<PendingEvent>,
    /// Our Node as last seen (since version 2).
    #[serde(default)]
    pub node_status: Option<StoredNode>,
    /// Condition-transition Events not yet delivered (since version 2); `pending_events` holds
    /// the fence's own.
    #[serde(default, with = "held_events")]
    pub condition_events: Vec<PendingEvent>,
    /// Our conditions as the sampling loop last decided them (since version 3), written before
    /// the reporter sends a change: a restart resumes from them where the Node as last seen does
    /// not show them yet, so a decision made just before a crash is not made (and announced)
    /// twice.
    #[serde(default)]
    pub decided: Vec<StoredCondition>,
    /// This node's zone key (`core::zone::zone_key`: region and zone labels) and its peers, so the
    /// quorum knows whom to ask while cut off, after a restart too (since version 4).
    #[serde(default)]
    pub zone: Option<String>,
    #[serde(default)]
    pub peers: Vec<StoredPeer>,
    /// The peer quorum during the current partition (since version 4): a restart while holding
    /// keeps holding, and keeps counting deadlines from the end of the hold.
    #[serde(default)]
    pub quorum: Option<StoredQuorum>,
    /// RFC 3339: since when this node has been cut off, while it is (since version 4). A restart
    /// that finds it goes on fencing at once; one that does not first gives the API server
    /// `unreachableAfter` to answer: the contact on disk being old only means the agent was not
    /// running, and the control plane hears the kubelet, not us.
    #[serde(default)]
    pub cut_off_since: Option<String>,
    /// RFC 3339: while cut off by a relapse (a failure before the return proved the kubelet
    /// renewed, docs/fence.md §2), the contact the deadlines count from, earlier than
    /// `lastContact` (since version 8). A restart resumes the relapse from it
    /// (`core::fencing::Link::with_unproven_return`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_from: Option<String>,
    /// The scale of the run that wrote the file's times (`core::clock::Scale::to_text`; since
    /// version 5). Absent when that run could not read the boot clock, and in older files, whose
    /// bytes are then written back as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_scale: Option<String>,
    /// Whether a read a peer made for this node (its Node, its kubelet's Lease, its pods) ever
    /// came back in a round of this run or of one before it (`core::quorum::ServerReads::ever`;
    /// since version 10, absent while false): a restarted run's SIGTERMs wait for the peers'
    /// reads from its first round, as the run before's did (docs/fence.md §5, *The SIGTERM
    /// waits for a read*).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub peers_read: bool,
    /// Not in this file: how long the runs since `last_contact` waited without an answer, from
    /// the contact file when its contact is the one `load` took ([`CONTACT_FILE`]).
    #[serde(skip)]
    pub unanswered: Option<Duration>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredPeer {
    pub node: String,
    /// `ip:port`.
    pub address: String,
    pub zone: String,
}

impl StoredPeer {
    pub fn from_peer(p: &crate::core::quorum::Peer) -> StoredPeer {
        StoredPeer {
            node: p.node.clone(),
            address: p.address.to_string(),
            zone: p.zone.clone(),
        }
    }
    /// `None` when the address does not parse (the entry is then skipped, not guessed at).
    pub fn to_peer(&self) -> Option<crate::core::quorum::Peer> {
        Some(crate::core::quorum::Peer {
            node: self.node.clone(),
            address: self.address.parse().ok()?,
            zone: self.zone.clone(),
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredQuorum {
    /// `enforce`, `hold` or `pending`.
    pub verdict: String,
    pub reason: String,
    /// RFC 3339: when the latest round that said hold was sent.
    pub held_at: Option<String>,
    /// RFC 3339: when the first round of the partition that said hold was sent (since version
    /// 6; absent before, and then a hold counts as having begun before this node could be
    /// tainted, as earlier builds counted it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_from: Option<String>,
}

/// What `status` shows of the Node: every condition (ours and others'), every taint, allocatable.
/// Heartbeat times are left out: they change every report and say nothing to a reader.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredNode {
    pub conditions: Vec<StoredCondition>,
    pub taints: Vec<StoredTaint>,
    /// Resource name → quantity, as the API spells them.
    pub allocatable: BTreeMap<String, String>,
    /// The first taint of the Node's unbroken run of the node controller's NoExecute taints, when
    /// the controller swapped it for the other since (unreachable for not-ready, or back), as
    /// this agent's views showed the run (since version 9; [`StoredNode::carry_run`]): the
    /// timers it started go on (docs/semantics.md §4.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swapped_from: Option<StoredTaint>,
}

impl StoredNode {
    /// The first taint this Node carries that `is` names (by key and effect).
    fn taint(&self, is: fn(&str, &str) -> bool) -> Option<&StoredTaint> {
        self.taints.iter().find(|t| is(&t.key, &t.effect))
    }

    /// The `node.kubernetes.io/unreachable:NoExecute` taint this Node carries, if any.
    fn unreachable_taint(&self) -> Option<&StoredTaint> {
        self.taint(crate::core::taint::is_unreachable_no_execute)
    }

    /// Whether this Node carries the `node.kubernetes.io/unreachable:NoExecute` taint, with a
    /// `timeAdded` or without one (added by hand, say).
    pub fn unreachable_tainted(&self) -> bool {
        self.unreachable_taint().is_some()
    }

    /// The `timeAdded` of the `node.kubernetes.io/unreachable:NoExecute` taint this Node carries,
    /// as the API server wrote it; `None` without that taint or its time.
    pub fn unreachable_added(&self) -> Option<&str> {
        self.unreachable_taint()
            .and_then(|t| t.time_added.as_deref())
    }

    /// [`StoredNode::unreachable_added`] on the monotonic scale of `now`, read on this node's wall
    /// clock (one in our future maps to now, `Moment::mono_at`).
    pub fn unreachable_added_at(&self, now: crate::core::clock::Moment) -> Option<Duration> {
        on_scale(self.unreachable_added(), now)
    }

    /// The `timeAdded` of the `node.kubernetes.io/not-ready:NoExecute` taint this Node carries, as
    /// the API server wrote it; `None` without that taint or its time.
    pub fn not_ready_added(&self) -> Option<&str> {
        self.taint(crate::core::taint::is_not_ready_no_execute)
            .and_then(|t| t.time_added.as_deref())
    }

    /// [`StoredNode::not_ready_added`] on the monotonic scale of `now`, as
    /// [`StoredNode::unreachable_added_at`].
    pub fn not_ready_added_at(&self, now: crate::core::clock::Moment) -> Option<Duration> {
        on_scale(self.not_ready_added(), now)
    }

    /// The node controller's NoExecute taint this Node carries: the unreachable one or the
    /// not-ready one (never both: the controller swaps them).
    fn controller_taint(&self) -> Option<&StoredTaint> {
        self.taint(crate::core::taint::is_controller_no_execute)
    }

    /// Carries [`StoredNode::swapped_from`] over from `previous`, the view of the same Node before
    /// this one (this run's, or the state file's): the run's first taint while this view still
    /// carries one of the two, the previous view's own when this one carries the other. A view
    /// without either ends the run (every timer it started is cancelled).
    pub fn carry_run(&mut self, previous: Option<&StoredNode>) {
        let not_ready = |t: &StoredTaint| t.key == crate::core::taint::keys::NOT_READY;
        let kind = |t: &StoredTaint| (t.clone(), not_ready(t));
        let kept = previous.and_then(|p| p.swapped_from.as_ref()).map(kind);
        let before = previous.and_then(StoredNode::controller_taint).map(kind);
        let now = self.controller_taint().map(not_ready);
        self.swapped_from =
            crate::core::fence_plan::run_first(kept.as_ref(), before.as_ref(), now).map(|(t, _)| t);
    }

    /// [`StoredNode::swapped_from`]'s `timeAdded`, on the control plane's clock.
    pub fn swapped_from_added(&self) -> Option<SystemTime> {
        self.swapped_from
            .as_ref()
            .and_then(|t| t.time_added.as_deref())
            .and_then(parse_time)
    }

    /// [`StoredNode::swapped_from`] on the monotonic scale of `now` (as
    /// [`StoredNode::unreachable_added_at`]), and whether it is the not-ready taint.
    pub fn swapped_from_at(&self, now: crate::core::clock::Moment) -> Option<(Duration, bool)> {
        let first = self.swapped_from.as_ref()?;
        let at = on_scale(first.time_added.as_deref(), now)?;
        Some((at, first.key == crate::core::taint::keys::NOT_READY))
    }

    /// Whether this Node carries a NoExecute taint of the node controller's: the unreachable one,
    /// or the not-ready one, which the controller swaps for the unreachable one as soon as the
    /// node goes Unknown, whatever its zone's state (docs/semantics.md §4.3, §5.5).
    pub fn controller_tainted(&self) -> bool {
        self.controller_taint().is_some()
    }

    /// Whether this Node's Ready condition is False, or it carries the not-ready NoExecute taint:
    /// the controller may add that taint at any pass, or has, and deletes each pod that tolerates
    /// it for a while once the while ends, whether or not the kubelet still hears
    /// (`core::fencing::Link::note_not_ready`; docs/fence.md §2, *A Node not Ready*).
    pub fn not_ready(&self) -> bool {
        self.ready("False").is_some()
            || self
                .taint(crate::core::taint::is_not_ready_no_execute)
                .is_some()
    }

    /// While this Node's Ready condition is Unknown (only the node lifecycle controller writes
    /// that, and only the kubelet's posted status turns it True again), its
    /// `lastTransitionTime` as the API server sent it: when the controller wrote it. `None`
    /// otherwise, or without that time.
    pub fn ready_unknown_since(&self) -> Option<&str> {
        self.ready_since("Unknown")
    }

    /// While this Node's Ready condition is False (only the kubelet posts that, when it finds the
    /// node not ready), its `lastTransitionTime` as the API server sent it: when the kubelet
    /// posted the change, on this node's own clock. `None` otherwise, or without that time.
    pub fn ready_false_since(&self) -> Option<&str> {
        self.ready_since("False")
    }

    /// The `lastTransitionTime` of this Node's Ready condition while its status is `status`.
    fn ready_since(&self, status: &str) -> Option<&str> {
        self.ready(status)
            .and_then(|c| c.last_transition_time.as_deref())
    }

    /// This Node's Ready condition, while its status is `status`.
    fn ready(&self, status: &str) -> Option<&StoredCondition> {
        self.conditions
            .iter()
            .find(|c| c.type_ == "Ready" && c.status == status)
    }

    /// [`StoredNode::ready_false_since`] while this Node carries neither of the node controller's
    /// NoExecute taints: from then on the controller may queue it for the not-ready taint, on
    /// its first pass that reads the False (docs/semantics.md §5.5), and the taint's timers
    /// start when the queue's worker adds it. The earliest that taint may count from, for a node
    /// cut off before its view showed it (docs/fence.md §3).
    pub fn not_ready_queued_since(&self) -> Option<&str> {
        self.ready_false_since()
            .filter(|_| !self.controller_tainted())
    }

    /// [`StoredNode::not_ready_queued_since`] on the monotonic scale of `now`, read on this node's
    /// wall clock (the kubelet's own), as [`StoredNode::unreachable_added_at`].
    pub fn not_ready_queued_at(&self, now: crate::core::clock::Moment) -> Option<Duration> {
        on_scale(self.not_ready_queued_since(), now)
    }

    /// [`StoredNode::ready_unknown_since`] while this Node does not carry the unreachable taint:
    /// when the controller queued it for that taint (`core::fence_plan::queued_contact`). A Node
    /// seen tainted counts from the taint's own time instead, never earlier than that write.
    pub fn queued_since(&self) -> Option<&str> {
        self.ready_unknown_since()
            .filter(|_| !self.unreachable_tainted())
    }

    /// [`StoredNode::queued_since`] on the monotonic scale of `now`, read on this node's wall
    /// clock, as [`StoredNode::unreachable_added_at`].
    pub fn queued_at(&self, now: crate::core::clock::Moment) -> Option<Duration> {
        on_scale(self.queued_since(), now)
    }
}

/// An RFC 3339 time the API server wrote, on the monotonic scale of `now`, read on this node's
/// wall clock (one in our future maps to now, `Moment::mono_at`); `None` without one, or one that
/// does not parse.
fn on_scale(text: Option<&str>, now: crate::core::clock::Moment) -> Option<Duration> {
    text.and_then(parse_time).map(|wall| now.mono_at(wall))
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    /// RFC 3339, as the API server sent it.
    pub last_transition_time: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredTaint {
    pub key: String,
    pub value: String,
    pub effect: String,
    /// RFC 3339, the taint's `timeAdded` as the API server sent it (since version 7; the
    /// controller sets it on NoExecute taints): a restart while cut off counts from an
    /// unreachable taint the Node carried (docs/fence.md §3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
}

/// One pod as the state file holds it: the fence's view of it, whose fields are defined once, by
/// the serde attributes of [`FencePod`] itself, and its effective requests and limits (since
/// version 2; resource name → quantity), which only `status` reads.
///
/// An entry this build could not have written (an operator, effect or QoS class it does not
/// know, a field it does not know or lacks) is left out when the file is read, and logged; the
/// rest of the file stands. A pod left out is not fenced: nothing unjustified is done.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredPod {
    pub pod: FencePod,
    pub resources: Effective,
}

impl Serialize for StoredPod {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PodEntry {
            pod: &self.pod,
            requests: AmountsView(Some(&self.resources.requests)),
            limits: AmountsView(Some(&self.resources.limits)),
        }
        .serialize(s)
    }
}

/// A pod's entry as written, from borrowed data ([`StoredPod`] and [`PodsView`] both write
/// through it): the pod's own fields, then its requests and limits, empty when not known.
#[derive(Serialize)]
struct PodEntry<'a> {
    #[serde(flatten)]
    pod: &'a FencePod,
    requests: AmountsView<'a>,
    limits: AmountsView<'a>,
}

/// Reads [`State::pods`]: each entry on its own (see [`StoredPod`]), one at a time, so that only
/// one entry is ever held in its generic JSON form.
fn read_pods<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<StoredPod>, D::Error> {
    struct Pods;
    impl<'de> serde::de::Visitor<'de> for Pods {
        type Value = Vec<StoredPod>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of pods")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut pods = Vec::new();
            while let Some(entry) =
                seq.next_element::<serde_json::Map<String, serde_json::Value>>()?
            {
                let uid = entry.get("uid").and_then(|u| u.as_str()).map(str::to_owned);
                match read_pod(entry) {
                    Ok(pod) => pods.push(pod),
                    Err(e) => {
                        let uid = bounded::excerpt(uid.as_deref().unwrap_or("?"));
                        log::warn!(
                            pod_uid = uid.as_str();
                            "the state file's entry for pod {uid:?} is not one this build writes ({e}); that pod is not fenced"
                        );
                    }
                }
            }
            Ok(pods)
        }
    }
    d.deserialize_seq(Pods)
}

fn read_pod(
    mut entry: serde_json::Map<String, serde_json::Value>,
) -> Result<StoredPod, serde_json::Error> {
    // Requests and limits are the entry's, not the pod's: taken out before the pod is read.
    let mut amounts = |name: &str| -> Result<Amounts, serde_json::Error> {
        let Some(value) = entry.remove(name) else {
            return Ok(Amounts::default());
        };
        let text: BTreeMap<String, String> = serde_json::from_value(value)?;
        // A quantity this build cannot parse is left out: `status` sums the others.
        Ok(text
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.parse::<Quantity>().ok()?)))
            .collect())
    };
    let resources = Effective {
        requests: amounts("requests")?,
        limits: amounts("limits")?,
    };
    Ok(StoredPod {
        pod: serde_json::from_value(serde_json::Value::Object(entry))?,
        resources,
    })
}

/// Held Events as the state file keeps them: in memory each is a [`PendingEvent`], formatted
/// only when written and parsed once when read. An entry whose time this build cannot read is
/// left out, and logged.
mod held_events {
    use super::*;

    /// An Event's entry, the one definition of its form on disk: borrowed when written, owned
    /// when read. `at` is RFC 3339 with nanoseconds ([`format_time`]).
    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Entry<'a> {
        reason: Cow<'a, str>,
        message: Cow<'a, str>,
        warning: bool,
        at: Cow<'a, str>,
    }

    pub fn serialize<S: Serializer>(events: &[PendingEvent], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(events.iter().map(|e| Entry {
            reason: Cow::Borrowed(&e.reason),
            message: Cow::Borrowed(&e.message),
            warning: e.warning,
            at: Cow::Owned(format_time(e.at)),
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PendingEvent>, D::Error> {
        Ok(Vec::<Entry<'static>>::deserialize(d)?
            .into_iter()
            .filter_map(|e| {
                let Some(at) = parse_time(&e.at) else {
                    let shown = bounded::excerpt(&e.at);
                    log::warn!(
                        reason = e.reason.as_ref();
                        "a held {} Event's time {shown:?} is not one this build writes; it is not sent",
                        e.reason
                    );
                    return None;
                };
                Some(PendingEvent {
                    reason: e.reason.into_owned(),
                    message: e.message.into_owned(),
                    warning: e.warning,
                    at,
                })
            })
            .collect())
    }
}

impl StoredCondition {
    /// A decided condition, with its transition time to the nanosecond.
    pub fn from_condition(c: &NodeCondition) -> StoredCondition {
        StoredCondition {
            type_: c.condition_type.clone(),
            status: c.status.as_str().to_string(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_transition_time: Some(format_time(c.last_transition_time)),
        }
    }

    /// As the decisions hold it; `None` for a status or time this build does not read. The
    /// heartbeat (not stored) is the transition time until the next decision sets it.
    pub fn to_condition(&self) -> Option<NodeCondition> {
        let status = match self.status.as_str() {
            "True" => ConditionStatus::True,
            "False" => ConditionStatus::False,
            "Unknown" => ConditionStatus::Unknown,
            _ => return None,
        };
        let since = parse_time(self.last_transition_time.as_deref()?)?;
        Some(NodeCondition {
            condition_type: self.type_.clone(),
            status,
            reason: self.reason.clone(),
            message: self.message.clone(),
            last_heartbeat_time: since,
            last_transition_time: since,
        })
    }
}

/// The state as [`save_view`] writes it, from the fence's own data, borrowed: the same bytes as
/// [`save`] writes for the equal [`State`] (same fields in the same order), without first copying
/// every pod into a [`StoredPod`] (issue 12: about 2 KB a pod, all at once, with each write).
/// Pods and held Events are written through the same code as [`State`]'s.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateView<'a> {
    pub version: u32,
    pub node: &'a str,
    pub last_contact: Option<String>,
    pub pods: PodsView<'a>,
    pub fenced: &'a BTreeSet<String>,
    #[serde(serialize_with = "held_events::serialize")]
    pub pending_events: &'a [PendingEvent],
    pub node_status: Option<&'a StoredNode>,
    #[serde(serialize_with = "held_events::serialize")]
    pub condition_events: &'a [PendingEvent],
    pub decided: &'a [StoredCondition],
    pub zone: Option<&'a str>,
    pub peers: Vec<StoredPeer>,
    pub quorum: Option<StoredQuorum>,
    pub cut_off_since: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_scale: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub peers_read: bool,
}

/// The pods as [`StoredPod`]s of the same pods and resources are written: each with its requests
/// and limits when `resources` has its UID.
#[derive(Clone, Copy)]
pub struct PodsView<'a> {
    pub pods: &'a [FencePod],
    pub resources: &'a BTreeMap<String, Effective>,
}

impl Serialize for PodsView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.pods.iter().map(|p| {
            let resources = self.resources.get(&p.uid);
            PodEntry {
                pod: p,
                requests: AmountsView(resources.map(|e| &e.requests)),
                limits: AmountsView(resources.map(|e| &e.limits)),
            }
        }))
    }
}

/// Amounts as name → quantity strings, by name; none when not known.
struct AmountsView<'a>(Option<&'a Amounts>);

impl Serialize for AmountsView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Text<'a>(&'a Quantity);
        impl Serialize for Text<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self.0)
            }
        }
        s.collect_map(
            self.0
                .into_iter()
                .flat_map(|a| a.iter())
                .map(|(k, q)| (k, Text(q))),
        )
    }
}

/// Formats a wall-clock time for the file (nanosecond precision, so an anchor survives exactly).
pub fn format_time(t: SystemTime) -> String {
    humantime::format_rfc3339_nanos(t).to_string()
}

pub fn parse_time(s: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339(s).ok()
}

/// What reading the state directory found.
#[derive(Debug)]
pub enum Loaded {
    /// No state file: a first start.
    Missing,
    Found(Box<State>),
    /// Written by a newer release, in format `version`, which this build cannot read: left
    /// untouched, and [`save`] and [`save_contact`] refuse to write while it is there.
    Newer {
        path: PathBuf,
        version: u32,
    },
    /// Unreadable or invalid: moved aside to `moved_to`.
    Corrupt {
        error: String,
        moved_to: Option<PathBuf>,
    },
}

/// Why state could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("writing state {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("encoding state: {0}")]
    Encode(#[from] serde_json::Error),
    /// The state file there is a newer release's; overwriting it (or its last contact) would
    /// lose what that release needs after a rollback is undone.
    #[error(
        "not writing state to {}: {} holds format version {version}, newer than this build's {VERSION}; it is kept as it is (move it away to let this build save again)",
        dir.display(),
        STATE_FILE
    )]
    Newer { dir: PathBuf, version: u32 },
}

/// Writes `state` atomically into `dir` (created with mode 0700 if missing), as a file of mode
/// 0600. Refuses ([`StateError::Newer`]) while the state file there is a newer release's.
pub fn save(dir: &Path, state: &State) -> Result<(), StateError> {
    save_serialized(dir, state)
}

/// [`save`] from borrowed data: the same file for the same content, with nothing copied.
pub fn save_view(dir: &Path, state: &StateView<'_>) -> Result<(), StateError> {
    save_serialized(dir, state)
}

/// The JSON goes straight into the temporary file through a small buffer: the whole document
/// (about 0.9 KB a pod) is never held in memory.
fn save_serialized<T: Serialize>(dir: &Path, state: &T) -> Result<(), StateError> {
    refuse_if_newer(dir)?;
    write_atomically(dir, STATE_FILE, |f| {
        let mut w = BufWriter::with_capacity(16 * 1024, f);
        serde_json::to_writer_pretty(&mut w, state).map_err(|e| {
            if e.is_io() {
                // The file, not the encoding, failed: the error names the file.
                Body::Io(e.into())
            } else {
                Body::Encode(e)
            }
        })?;
        w.flush().map_err(Body::Io)
    })
}

/// Writes the last contact alone, atomically (see [`CONTACT_FILE`]), with how long the agent
/// has waited for an answer since, if it has. Refuses like [`save`]: a newer release reads this
/// file too, and a contact moved later would move its deadlines later.
pub fn save_contact(
    dir: &Path,
    last_contact: SystemTime,
    scale: Option<Scale>,
    unanswered: Option<Duration>,
) -> Result<(), StateError> {
    refuse_if_newer(dir)?;
    let mut line = match scale {
        Some(scale) => format!("{} {}\n", format_time(last_contact), scale.to_text()),
        None => format!("{}\n", format_time(last_contact)),
    };
    if let Some(waited) = unanswered {
        line += &format!("{UNANSWERED} {}ms\n", waited.as_millis());
    }
    write_atomically(dir, CONTACT_FILE, |f| {
        f.write_all(line.as_bytes()).map_err(Body::Io)
    })
}

/// Writes how current the pod view is (see [`POD_VIEW_FILE`]): `None` while current.
pub fn save_pod_view(dir: &Path, stale_since: Option<SystemTime>) -> Result<(), StateError> {
    refuse_if_newer(dir)?;
    let line = match stale_since {
        None => "current\n".to_string(),
        Some(t) => format!("stale since {}\n", format_time(t)),
    };
    write_atomically(dir, POD_VIEW_FILE, |f| {
        f.write_all(line.as_bytes()).map_err(Body::Io)
    })
}

/// What [`save_pod_view`] wrote: `Some(None)` current, `Some(Some(t))` stale since `t`; `None`
/// when absent or unreadable (a build before issue 21, or no agent yet).
pub fn load_pod_view(dir: &Path) -> Option<Option<SystemTime>> {
    let text = bounded::read_to_string(&dir.join(POD_VIEW_FILE), bounded::CONTACT).ok()?;
    match text.trim() {
        "current" => Some(None),
        line => line
            .strip_prefix("stale since ")
            .and_then(parse_time)
            .map(Some),
    }
}

/// Just the format version, whatever else the file holds: a newer format may add (or drop)
/// fields that [`State`] would reject.
#[derive(Deserialize)]
struct Header {
    version: u32,
}

fn refuse_if_newer(dir: &Path) -> Result<(), StateError> {
    match stored_version(&dir.join(STATE_FILE)) {
        Some(version) if version > VERSION => Err(StateError::Newer {
            dir: dir.to_path_buf(),
            version,
        }),
        _ => Ok(()),
    }
}

/// The format version of the state file at `path`; `None` when there is none or it cannot be
/// read or parsed (such a file is moved aside by [`load`], and may be replaced).
///
/// This runs before every write, the contact's included, so it first reads only the head:
/// [`save`] writes `version` as the first key. Any other shape falls back to parsing the whole
/// file (bounded by [`bounded::STATE`]).
fn stored_version(path: &Path) -> Option<u32> {
    let mut head = [0u8; 32];
    let len = bounded::read_head(path, &mut head).ok()?;
    if let Some(version) = version_in_head(&head[..len]) {
        return Some(version);
    }
    let bytes = bounded::read(path, bounded::STATE).ok()?;
    serde_json::from_slice::<Header>(&bytes)
        .ok()
        .map(|h| h.version)
}

/// The version from the start of a file as [`save`] writes it (`{\n  "version": 2,`); `None`
/// for any other start, including digits that may run past the head.
fn version_in_head(head: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(head).ok()?;
    let rest = text.strip_prefix("{\n  \"version\": ")?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    if !rest[digits..].starts_with(',') {
        return None;
    }
    rest[..digits].parse().ok()
}

/// The contact file's time; `None` when absent or not a time this build writes (then the state
/// file's own, older, last contact stands: the fence can only act earlier, never later).
/// One that exists but cannot be read or is not such a time is logged: it is ignored, and an
/// operator should know why a restart counts from an older contact.
fn load_contact(dir: &Path, to: Option<Scale>) -> Option<(SystemTime, Option<Duration>)> {
    let path = dir.join(CONTACT_FILE);
    let text = match bounded::read_to_string(&path, bounded::CONTACT) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            log::warn!(file = path.display().to_string().as_str(); "cannot read {}: {e}; the state file's last contact stands", path.display());
            return None;
        }
    };
    let (first, rest) = contact_lines(&text);
    let time = contact_line(first).map(|(time, from)| carried(time, from, to));
    let Some(time) = time else {
        let shown = crate::bounded::excerpt(text.trim());
        log::warn!(file = path.display().to_string().as_str(); "{} does not hold a time this build writes ({shown:?}); ignored, the state file's last contact stands", path.display());
        return None;
    };
    let unanswered = match rest.map(unanswered_line) {
        None => None,
        Some(Some(waited)) => Some(waited),
        Some(None) => {
            let shown = crate::bounded::excerpt(text.trim());
            log::warn!(file = path.display().to_string().as_str(); "{}'s second line is not a wait this build writes ({shown:?}); ignored, this run counts its own wait from its start", path.display());
            None
        }
    };
    Some((time, unanswered))
}

/// How far apart the state file's and the contact file's last contact may read and still be the
/// same contact ([`load`]): each file's scale is measured as it is written, from two clock reads.
const SAME_CONTACT: Duration = Duration::from_millis(10);

/// The word before the wait on the contact file's second line.
const UNANSWERED: &str = "unanswered";

/// The contact file's first line, and its second when there is one.
fn contact_lines(text: &str) -> (&str, Option<&str>) {
    let text = text.trim();
    match text.split_once('\n') {
        Some((first, rest)) => (first.trim(), Some(rest.trim())),
        None => (text, None),
    }
}

/// `unanswered <milliseconds>ms`; `None` for anything else.
fn unanswered_line(line: &str) -> Option<Duration> {
    let ms = line
        .strip_prefix(UNANSWERED)?
        .strip_prefix(' ')?
        .strip_suffix("ms")?;
    if !ms.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    ms.parse().ok().map(Duration::from_millis)
}

/// The scale the contact file was written on: the previous run's (`core::clock::Scale`), read
/// at start before this run writes its own. `None` when the file is absent, unreadable (which
/// [`load`] logs), or an earlier build's line without a scale.
pub fn contact_scale(dir: &Path) -> Option<Scale> {
    let text = bounded::read_to_string(&dir.join(CONTACT_FILE), bounded::CONTACT).ok()?;
    contact_line(contact_lines(&text).0)?.1
}

/// The contact file's line: its time and the writer's scale (none in an earlier build's line,
/// the time alone); `None` when either part does not parse.
fn contact_line(line: &str) -> Option<(SystemTime, Option<Scale>)> {
    match line.split_once(' ') {
        Some((time, scale)) => Some((parse_time(time)?, Some(Scale::from_text(scale)?))),
        None => Some((parse_time(line)?, None)),
    }
}

/// A problem with the state directory's permissions, if any: one that others may write to lets
/// them replace the fence's state (its pods, deadlines and held Events). Checked once at start;
/// the directory is not changed (it may be one the operator or systemd's `StateDirectoryMode=`
/// chose).
pub fn directory_problem(dir: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(dir).ok()?.permissions().mode() & 0o777;
    (mode & 0o022 != 0).then(|| {
        format!(
            "state directory {} is writable by its group or by everyone (mode {mode:04o}): another user could replace the fence's state; make it 0700 (systemd: StateDirectoryMode=0700)",
            dir.display()
        )
    })
}

/// Why writing a file's body failed.
enum Body {
    Io(std::io::Error),
    Encode(serde_json::Error),
}

/// Writes `name` in `dir` atomically: `body` writes into a temporary file, which is then synced
/// and renamed over the old one. A temporary file whose body failed is removed.
fn write_atomically(
    dir: &Path,
    name: &str,
    body: impl FnOnce(&mut File) -> Result<(), Body>,
) -> Result<(), StateError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StateError::Write { path, source }
    };
    create_private_dir(dir).map_err(io(dir))?;
    let final_path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    {
        // Created 0600 by open(2) itself, so no umask ever lets another user read a byte of it.
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io(&tmp))?;
        // A temporary file left by a crash keeps the mode it was created with (the same name
        // comes back whenever the PID does, as PID 1 in a container does every time): make it
        // private too before anything is written into it.
        let written = f
            .set_permissions(Permissions::from_mode(0o600))
            .map_err(Body::Io)
            .and_then(|()| body(&mut f))
            // A full disk often shows only here.
            .and_then(|()| f.sync_all().map_err(Body::Io));
        drop(f);
        if let Err(e) = written {
            // Nothing half-written is left behind, not even an empty file.
            let _ = fs::remove_file(&tmp);
            return Err(match e {
                Body::Io(source) => StateError::Write { path: tmp, source },
                Body::Encode(e) => StateError::Encode(e),
            });
        }
    }
    if let Err(e) = fs::rename(&tmp, &final_path) {
        let _ = fs::remove_file(&tmp);
        return Err(io(&final_path)(e));
    }
    // The rename is durable only once the directory entry is.
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))?;
    Ok(())
}

/// Creates `dir` with mode 0700 whatever the umask. An existing directory is left as it is: it
/// may be one the operator (or systemd's `StateDirectoryMode=`) chose on purpose.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    // The umask may have taken bits from the mode given to mkdir(2); 0700 is what we mean.
    fs::set_permissions(dir, Permissions::from_mode(0o700))
}

/// The state's times carried onto the scale `to` ([`carried`]): the last contact, the start of
/// the partition and the quorum's hold, from which the fence counts.
fn carry_times(s: &mut State, to: Option<Scale>) {
    let Some(to) = to else { return };
    let from = match s.wall_scale.as_deref().map(|t| (t, Scale::from_text(t))) {
        None => return,
        Some((_, Some(from))) => from,
        Some((text, None)) => {
            let shown = crate::bounded::excerpt(text);
            log::warn!(
                "the state file's wallScale ({shown:?}) is not one this build writes; its times are taken as they read"
            );
            return;
        }
    };
    let carry = |t: &mut Option<String>| {
        if let Some(wall) = t.as_deref().and_then(parse_time) {
            *t = Some(format_time(carried(wall, Some(from), Some(to))));
        }
    };
    carry(&mut s.last_contact);
    carry(&mut s.cut_off_since);
    carry(&mut s.counted_from);
    if let Some(q) = s.quorum.as_mut() {
        carry(&mut q.held_at);
        carry(&mut q.held_from);
    }
    if from.boot == to.boot {
        s.wall_scale = Some(to.to_text());
    }
}

/// Reads the state file; a corrupt one is moved aside (`state.json.corrupt-<unix seconds>`), a
/// newer release's is left untouched ([`Loaded::Newer`]). Its times are carried onto the scale
/// `to` (the reading run's, `agent::clock::Clock::scale`; `None`: taken as they read).
pub fn load(dir: &Path, to: Option<Scale>) -> Loaded {
    let path = dir.join(STATE_FILE);
    let bytes = match bounded::read(&path, bounded::STATE) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Loaded::Missing,
        Err(e) => {
            return Loaded::Corrupt {
                error: format!("cannot read {}: {e}", path.display()),
                moved_to: move_aside(&path),
            };
        }
    };
    // The version first: a newer format may not parse as this build's `State` at all, and it
    // must not be taken for a corrupt file and moved away.
    if let Ok(Header { version }) = serde_json::from_slice::<Header>(&bytes)
        && version > VERSION
    {
        return Loaded::Newer { path, version };
    }
    match serde_json::from_slice::<State>(&bytes) {
        Ok(mut s) if READS.contains(&s.version) => {
            carry_times(&mut s, to);
            let from_state = s.last_contact.as_deref().and_then(parse_time);
            if let Some((contact, unanswered)) = load_contact(dir, to) {
                if from_state.is_none_or(|s| contact > s) {
                    s.last_contact = Some(format_time(contact));
                }
                // The wait counts from the contact file's contact: only when that is the one
                // taken (a state written since holds a later one, and the wait said nothing of
                // it). The two files name the same contact on two scales, each measured as it
                // was written, so they may read a few microseconds apart.
                if from_state.is_none_or(|s| contact + SAME_CONTACT >= s) {
                    s.unanswered = unanswered;
                }
            }
            Loaded::Found(Box::new(s))
        }
        Ok(s) => Loaded::Corrupt {
            error: format!(
                "{}: format version {} is not one this build reads ({READS:?})",
                path.display(),
                s.version
            ),
            moved_to: move_aside(&path),
        },
        Err(e) => Loaded::Corrupt {
            error: format!("{}: {e}", path.display()),
            moved_to: move_aside(&path),
        },
    }
}

fn move_aside(path: &Path) -> Option<PathBuf> {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let aside = path.with_extension(format!("json.corrupt-{secs}"));
    fs::rename(path, &aside).ok().map(|()| aside)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_condition_written_unknown_gives_when_it_was_written_and_only_then() {
        let ready = |status: &str, at: Option<&str>| StoredNode {
            conditions: vec![StoredCondition {
                type_: "Ready".into(),
                status: status.into(),
                reason: "NodeStatusUnknown".into(),
                message: "Kubelet stopped posting node status.".into(),
                last_transition_time: at.map(str::to_string),
            }],
            taints: vec![],
            allocatable: BTreeMap::new(),
            swapped_from: None,
        };
        let written = ready("Unknown", Some("2026-12-06T07:00:00Z"));
        assert_eq!(written.ready_unknown_since(), Some("2026-12-06T07:00:00Z"));
        let now = crate::core::clock::Moment {
            mono: Duration::from_secs(1_000),
            wall: parse_time("2026-12-06T07:00:30Z").expect("a time"),
        };
        assert_eq!(written.queued_at(now), Some(Duration::from_secs(970)));
        // Tainted, it counts from the taint's time, not from its queueing.
        let tainted = StoredNode {
            taints: vec![StoredTaint {
                key: "node.kubernetes.io/unreachable".into(),
                value: String::new(),
                effect: "NoExecute".into(),
                time_added: Some("2026-12-06T07:00:05Z".into()),
            }],
            ..written.clone()
        };
        assert_eq!(tainted.ready_unknown_since(), Some("2026-12-06T07:00:00Z"));
        assert_eq!(tainted.queued_since(), None);
        assert_eq!(tainted.queued_at(now), None);
        assert_eq!(
            ready("True", Some("2026-12-06T07:00:00Z")).ready_unknown_since(),
            None
        );
        assert_eq!(
            ready("False", Some("2026-12-06T07:00:00Z")).ready_unknown_since(),
            None
        );
        assert_eq!(ready("Unknown", None).queued_at(now), None);
    }

    /// A Ready=False the kubelet posted queues the node for the not-ready taint from the post,
    /// until either of the controller's taints is on the Node (its own time counts then).
    #[test]
    fn a_ready_condition_posted_false_queues_the_not_ready_taint_until_a_taint_is_on() {
        let posted = StoredNode {
            conditions: vec![StoredCondition {
                type_: "Ready".into(),
                status: "False".into(),
                reason: "KubeletNotReady".into(),
                message: "container runtime is down".into(),
                last_transition_time: Some("2026-12-06T07:00:00Z".into()),
            }],
            taints: vec![],
            allocatable: BTreeMap::new(),
            swapped_from: None,
        };
        assert_eq!(posted.ready_false_since(), Some("2026-12-06T07:00:00Z"));
        assert_eq!(posted.ready_unknown_since(), None);
        let now = crate::core::clock::Moment {
            mono: Duration::from_secs(1_000),
            wall: parse_time("2026-12-06T07:00:30Z").expect("a time"),
        };
        assert_eq!(
            posted.not_ready_queued_at(now),
            Some(Duration::from_secs(970))
        );
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tainted = StoredNode {
                taints: vec![StoredTaint {
                    key: key.into(),
                    value: String::new(),
                    effect: "NoExecute".into(),
                    time_added: Some("2026-12-06T07:00:05Z".into()),
                }],
                ..posted.clone()
            };
            assert_eq!(tainted.not_ready_queued_since(), None, "{key}");
        }
        // A NoSchedule taint of the same key is not the controller's NoExecute one.
        let scheduling = StoredNode {
            taints: vec![StoredTaint {
                key: "node.kubernetes.io/not-ready".into(),
                value: String::new(),
                effect: "NoSchedule".into(),
                time_added: None,
            }],
            ..posted.clone()
        };
        assert_eq!(
            scheduling.not_ready_queued_since(),
            Some("2026-12-06T07:00:00Z")
        );
        let mut unknown = posted.clone();
        unknown.conditions[0].status = "Unknown".into();
        assert_eq!(unknown.not_ready_queued_since(), None);
        // Not Ready (the heartbeat reads the Lease every second): posted False, or the not-ready
        // NoExecute taint on, even without its time or once the kubelet posted True again.
        assert!(posted.not_ready());
        assert!(!unknown.not_ready());
        let mut ready = posted.clone();
        ready.conditions[0].status = "True".into();
        assert!(!ready.not_ready());
        let scheduling_ready = StoredNode {
            conditions: ready.conditions.clone(),
            ..scheduling
        };
        assert!(!scheduling_ready.not_ready(), "a NoSchedule taint");
        let tainted = StoredNode {
            taints: vec![StoredTaint {
                key: "node.kubernetes.io/not-ready".into(),
                value: String::new(),
                effect: "NoExecute".into(),
                time_added: None,
            }],
            ..ready.clone()
        };
        assert!(tainted.not_ready());
        let unreachable = StoredNode {
            taints: vec![StoredTaint {
                key: "node.kubernetes.io/unreachable".into(),
                ..tainted.taints[0].clone()
            }],
            ..ready
        };
        assert!(!unreachable.not_ready());
    }

    #[test]
    fn the_head_of_a_saved_file_gives_its_version() {
        let state = State {
            version: VERSION,
            node: "n".into(),
            last_contact: None,
            pods: vec![],
            fenced: vec![],
            pending_events: vec![],
            node_status: None,
            condition_events: vec![],
            decided: vec![],
            zone: None,
            peers: vec![],
            quorum: None,
            cut_off_since: None,
            counted_from: None,
            wall_scale: None,
            peers_read: false,
            unanswered: None,
        };
        let bytes = serde_json::to_vec_pretty(&state).expect("encode");
        assert_eq!(version_in_head(&bytes[..32]), Some(VERSION));
    }

    #[test]
    fn any_other_head_is_left_to_the_full_parse() {
        for head in [
            &b"{\"version\": 3}"[..],            // not the pretty form
            b"{\n  \"node\": \"n\",",            // version not first
            b"{\n  \"version\": 12345678901234", // digits cut by the head
            b"{\n  \"version\": -1,",
            b"",
        ] {
            assert_eq!(
                version_in_head(head),
                None,
                "{}",
                String::from_utf8_lossy(head)
            );
        }
    }
}
