//! Zones as the node lifecycle controller counts them (docs/semantics.md §5.5): the key it groups
//! nodes by, which nodes it leaves out of the zone counts, and the quorum round built on both.
//! Pure: Node labels and the peers' answers in; a zone key, a flag and a `quorum::Round` out.
//!
//! Upstream: `GetZoneKey` (`staging/src/k8s.io/component-helpers/node/topology/helpers.go`) and
//! `monitorNodeHealth` / `isNodeExcludedFromDisruptionChecks`
//! (`pkg/controller/nodelifecycle/node_lifecycle_controller.go`).

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, SystemTime};

use crate::core::quorum::{Heard, Peer, Round};

/// The GA zone label. The only one an EndpointSlice endpoint's `zone` carries.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// The GA region label.
pub const REGION_LABEL: &str = "topology.kubernetes.io/region";
/// The deprecated zone label; `GetZoneKey` still reads it first.
pub const BETA_ZONE_LABEL: &str = "failure-domain.beta.kubernetes.io/zone";
/// The deprecated region label; `GetZoneKey` still reads it first.
pub const BETA_REGION_LABEL: &str = "failure-domain.beta.kubernetes.io/region";
/// A node carrying this label (any value, even empty) is left out of its zone's counts
/// (`labelNodeDisruptionExclusion`).
pub const EXCLUDE_DISRUPTION_LABEL: &str = "node.kubernetes.io/exclude-disruption";

/// Every Node label this module reads.
pub const LABELS: &[&str] = &[
    ZONE_LABEL,
    REGION_LABEL,
    BETA_ZONE_LABEL,
    BETA_REGION_LABEL,
    EXCLUDE_DISRUPTION_LABEL,
];

/// The zone key of a region and a zone label value.
///
/// `GetZoneKey` returns "" when both are empty and `region + ":\x00:" + zone` otherwise. This key
/// is `zone` when the region is empty and `region/zone` otherwise: a label value cannot contain
/// `/` or `:` (the API server's label value rule), so two nodes share this key exactly when they
/// share upstream's. It stays printable (logs, `status`, the state file), and for a cluster
/// without region labels it is the zone label itself, as an EndpointSlice names it.
pub fn key(region: &str, zone: &str) -> String {
    if region.is_empty() {
        zone.to_string()
    } else {
        format!("{region}/{zone}")
    }
}

/// The zone key of a Node's labels, as `GetZoneKey` forms it: each of zone and region from the
/// deprecated `failure-domain.beta.kubernetes.io/*` label when that label is present (even with
/// an empty value), otherwise from the GA `topology.kubernetes.io/*` label, otherwise "".
pub fn zone_key(labels: Option<&BTreeMap<String, String>>) -> String {
    let Some(labels) = labels else {
        return String::new();
    };
    let read = |beta: &str, ga: &str| {
        labels
            .get(beta)
            .or_else(|| labels.get(ga))
            .map_or("", String::as_str)
    };
    key(
        read(BETA_REGION_LABEL, REGION_LABEL),
        read(BETA_ZONE_LABEL, ZONE_LABEL),
    )
}

/// Whether the controller leaves a Node out of its zone's counts
/// (`isNodeExcludedFromDisruptionChecks`: the label is present, whatever its value).
pub fn excluded(labels: Option<&BTreeMap<String, String>>) -> bool {
    labels.is_some_and(|l| l.contains_key(EXCLUDE_DISRUPTION_LABEL))
}

/// A Node as a peer lists it for [`record`]: its name, its zone key ([`zone_key`]) and whether it
/// is [`excluded`], whether its Ready condition is True (and if not, since when: the
/// condition's `lastTransitionTime`, `down_since`), and whether it carries
/// `node.kubernetes.io/unreachable:NoExecute`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub name: String,
    pub key: String,
    pub excluded: bool,
    pub ready: bool,
    pub down_since: Option<SystemTime>,
    /// It carries one of the node controller's NoExecute taints (the wire's
    /// `unreachableTainted`; the not-ready one too since the fortieth session).
    pub unreachable_tainted: bool,
    /// Its Ready condition is Unknown: the controller wrote it, and `down_since` is on the
    /// controller's clock (false from [`Listed::of`]; the reader sets it).
    pub unknown: bool,
}

impl Listed {
    /// A Node of `name` with `labels`, as [`Listed`] keeps it: `down_since` is kept only while
    /// not `ready`.
    pub fn of(
        name: &str,
        labels: Option<&BTreeMap<String, String>>,
        (ready, down_since): (bool, Option<SystemTime>),
        unreachable_tainted: bool,
    ) -> Listed {
        Listed {
            name: name.to_string(),
            key: zone_key(labels),
            excluded: excluded(labels),
            ready,
            down_since: down_since.filter(|_| !ready),
            unreachable_tainted,
            unknown: false,
        }
    }
}

/// The label selector a peer lists an asker's zone with ([`record`]): the GA zone label's value
/// that `key` ends with, the label an EndpointSlice names too. A zone key names a zone label
/// that may be the deprecated one ([`zone_key`]), and a node may carry both with different
/// values, so the list is a superset that [`record`] narrows to the key; a Node that carries only
/// the deprecated label is not listed (docs/fence.md §5, *The zone as recorded*). A key with no
/// zone part gets no selector: `!label` would miss a label present with an empty value, and an
/// unlabelled zone is then listed whole, page by page, up to [`RECORD_SCAN`].
pub fn record_selector(key: &str) -> Option<String> {
    let zone = zone_of_key(key);
    (!zone.is_empty()).then(|| format!("{ZONE_LABEL}={zone}"))
}

/// The zone label value a key ([`key`]) ends with: the part after the `/`, or the whole key
/// without one (a label value holds no `/`).
fn zone_of_key(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or_default()
}

/// The most Nodes a peer reads to record an asker's zone ([`record`]): past it, or past a zone of
/// more than [`LARGE_ZONE`](crate::core::quorum::LARGE_ZONE) nodes, it answers without a record, which a large zone does not need
/// (it is tainted in a partial disruption too).
pub const RECORD_SCAN: usize = 100;

/// The asker's zone as the API server stores it (`quorum::ZoneRecord`), from a list of Nodes
/// that holds every Node of zone `key` (and maybe others: left out of the counts, they show the
/// zone is not the only one): [`tally`] of it, each Node placed by its key and named the asker or
/// not. `whole`: the list holds every Node of the
/// cluster ([`outside_selector`] found none beyond it).
pub fn record<'a>(
    nodes: impl IntoIterator<Item = &'a Listed>,
    asker: &str,
    key: &str,
    whole: bool,
) -> Option<crate::core::quorum::ZoneRecord> {
    let counted = nodes.into_iter().map(|n| Counted {
        asker: n.name == asker,
        in_zone: n.key == key,
        excluded: n.excluded,
        ready: n.ready,
        down_since: n.down_since,
        unreachable_tainted: n.unreachable_tainted,
        unknown: n.unknown && !n.ready,
    });
    tally(counted, whole)
}

/// One Node as [`tally`] counts it for one asker: whether it is the asker, whether it is in the
/// asker's zone, and the rest as [`Listed`] has it.
#[derive(Clone, Copy, Debug)]
pub struct Counted {
    pub asker: bool,
    pub in_zone: bool,
    pub excluded: bool,
    pub ready: bool,
    pub down_since: Option<SystemTime>,
    /// It carries one of the node controller's NoExecute taints (the wire's
    /// `unreachableTainted`; the not-ready one too since the fortieth session).
    pub unreachable_tainted: bool,
    /// Its Ready condition is Unknown, written by the controller ([`Listed::unknown`]).
    pub unknown: bool,
}

/// The asker's zone as stored, from every Node of it in `nodes` (the peers' reader lists them,
/// [`record`]; the simulator has them): the Nodes of the zone the controller counts (not
/// excluded, [`excluded`]), how many of those have a Ready condition that is not True
/// (`ComputeZoneState` counts a missing one as not ready too), and whether the asker's Node
/// carries the unreachable taint. `None` when the asker is not among them: a list without it
/// holds no answer about it, and an asker whose labels moved it to another zone asks about a zone
/// it is no longer in.
///
/// When none of the zone's counted Nodes is Ready, two facts more (`quorum::ZoneRecord`):
/// `only_zone`, when `nodes` are every Node of the cluster (`whole`) and all are in the zone;
/// and `asker_last`, when the asker's Ready left True no earlier than any other counted Node's
/// did (each one's `down_since`; a Node without that time leaves it false). And `asker_ready`,
/// when the asker counts and its Ready is True. And with `only_zone`, when every counted Node's
/// Ready is Unknown with its time and the asker's is known, `last_down_after`: the latest of
/// those times less the asker's, in whole seconds (zero when the asker's is the latest).
pub fn tally(
    nodes: impl IntoIterator<Item = Counted>,
    whole: bool,
) -> Option<crate::core::quorum::ZoneRecord> {
    let mut record = crate::core::quorum::ZoneRecord {
        not_ready: 0,
        size: 0,
        tainted: false,
        only_zone: false,
        asker_last: false,
        asker_ready: false,
        last_down_after: None,
    };
    let (mut found, mut alone) = (false, whole);
    // The asker's own down time; the latest of the others', and whether one had none.
    let (mut own, mut latest, mut untimed) = (None, None, false);
    // The latest Unknown write of every counted Node, and whether one was not Unknown or untimed.
    let (mut last_unknown, mut not_unknown, mut own_unknown) = (None, false, false);
    for n in nodes {
        if !n.in_zone {
            alone = false;
            continue;
        }
        if n.asker {
            found = true;
            record.tainted = n.unreachable_tainted;
            own = n.down_since;
            own_unknown = n.unknown;
            record.asker_ready = n.ready && !n.excluded;
        }
        if n.excluded {
            continue;
        }
        record.size += 1;
        record.not_ready += usize::from(!n.ready);
        not_unknown |= !n.unknown || n.down_since.is_none();
        last_unknown = last_unknown.max(n.down_since);
        if !n.ready && !n.asker {
            untimed |= n.down_since.is_none();
            latest = latest.max(n.down_since);
        }
    }
    let down = record.none_ready();
    record.only_zone = down && alone;
    record.asker_last = down && !untimed && own.is_some_and(|own| latest.is_none_or(|t| t <= own));
    record.last_down_after = own
        .zip(last_unknown)
        .filter(|_| record.only_zone && own_unknown && !not_unknown)
        .map(|(own, last)| last.duration_since(own).map_or(0, |d| d.as_secs()));
    found.then_some(record)
}

/// The label selector of the Nodes outside zone `key`'s list ([`record_selector`]): those
/// without its zone label value, unlabelled ones included. A list of it with a limit of one,
/// empty, shows the zone's list to be the whole cluster's (`record`'s `whole`). `None` for a key
/// with no zone part, whose list has no selector and is the whole cluster's already.
pub fn outside_selector(key: &str) -> Option<String> {
    let zone = zone_of_key(key);
    (!zone.is_empty()).then(|| format!("{ZONE_LABEL}!={zone}"))
}

/// This node as the zone counts see it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeZone {
    /// Its zone key ([`zone_key`]).
    pub key: String,
    /// Its `topology.kubernetes.io/zone` label ("" when absent): what the peer list gives every
    /// other node, since an EndpointSlice carries no region.
    pub listed: String,
    /// Labelled `node.kubernetes.io/exclude-disruption` ([`excluded`]).
    pub excluded: bool,
}

impl NodeZone {
    /// This node's zone from its Node's labels.
    pub fn of(labels: Option<&BTreeMap<String, String>>) -> NodeZone {
        NodeZone {
            key: zone_key(labels),
            listed: labels
                .and_then(|l| l.get(ZONE_LABEL))
                .cloned()
                .unwrap_or_default(),
            excluded: excluded(labels),
        }
    }

    /// This node's zone from a key persisted by a previous run ([`key`] keeps the zone label
    /// recoverable: the part after the `/`, or the whole key without one).
    pub fn from_key(key: &str, excluded: bool) -> NodeZone {
        NodeZone {
            key: key.to_string(),
            listed: zone_of_key(key).to_string(),
            excluded,
        }
    }

    /// The zone key of a peer known only from the list, whose zone is a zone label value with no
    /// region: this node's key when the label is this node's, the label alone otherwise. A peer
    /// that answers says its key itself, and that wins ([`round`]).
    pub fn listed_key<'a>(&'a self, listed: &'a str) -> &'a str {
        if listed == self.listed {
            &self.key
        } else {
            listed
        }
    }
}

/// The answers of a round by peer, looked up once for every peer listed.
type Answered<'a> = HashMap<&'a str, (&'a str, bool), BuildHasherDefault<Fnv>>;

/// FNV-1a, for [`round`]'s lookups by node name: a round looks up every peer listed, every
/// `peers.interval` while cut off (and the simulator runs thousands of agents' rounds), and
/// SipHash's setup costs more than these short names. The names come from the peer list and
/// signed answers, a few hundred at most: a keyed hash would defend against nothing here.
pub(crate) struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// One quorum round's input as the controller counts zones (`monitorNodeHealth` and
/// `handleDisruption`):
///
/// - every peer is placed by the zone key it answers with, or, if silent, by the list
///   ([`NodeZone::listed_key`]);
/// - a peer that answers that it is excluded is left out of every count: the controller adds only
///   non-excluded nodes to `zoneToNodeConditions`, from which the zone states and the
///   all-zones-down state are computed;
/// - this node, when excluded, is left out of its own zone's count too, but is still judged by
///   that zone's state: the controller still queues an excluded node for the NoExecute taint in
///   its zone's queue (`processTaintBaseEviction`, `markNodeForTainting`), whose rate the state of
///   the zone's other nodes sets, and a zone with no counted node keeps the normal rate.
pub fn round(
    me: &NodeZone,
    peers: &[Peer],
    heard: &[(Peer, Heard)],
    own_contact_age: Duration,
) -> Round {
    round_marking(me, peers, heard, own_contact_age, |_, _, _| None::<()>).0
}

/// [`round`], and, for each entry of `heard` the round keeps for which `mark` (given the peer, the
/// zone key it is placed in and what it said) gives something, its index in [`Round::heard`] with
/// what `mark` gave (`quorum::RoundBasis::round` marks the
/// silent peers whose answer "cut off" still stands).
pub fn round_marking<T>(
    me: &NodeZone,
    peers: &[Peer],
    heard: &[(Peer, Heard)],
    own_contact_age: Duration,
    mut mark: impl FnMut(&Peer, &str, &Heard) -> Option<T>,
) -> (Round, Vec<(usize, T)>) {
    let mut answered: Answered = HashMap::with_capacity_and_hasher(heard.len(), Default::default());
    for (p, h) in heard {
        if let Heard::Report(r) = h {
            // The last answer of a peer asked twice wins.
            answered.insert(p.node.as_str(), (r.zone.as_str(), r.excluded));
        }
    }
    // Each peer's zone key, borrowed; none when it answers that it is excluded.
    fn place<'a>(answered: &Answered<'a>, me: &'a NodeZone, p: &'a Peer) -> Option<&'a str> {
        match answered.get(p.node.as_str()) {
            Some((_, true)) => None,
            Some((zone, false)) => Some(zone),
            None => Some(me.listed_key(&p.zone)),
        }
    }
    let place = |p| place(&answered, me, p);
    let mut marks = Vec::new();
    let placed: Vec<(String, Heard)> = heard
        .iter()
        .filter_map(|(p, h)| place(p).map(|z| (p, z, h)))
        .enumerate()
        .map(|(i, (p, z, h))| {
            if let Some(m) = mark(p, z, h) {
                marks.push((i, m));
            }
            (z.to_string(), h.clone())
        })
        .collect();
    let mut round = crate::core::quorum::round(
        &me.key,
        peers.iter().filter_map(place),
        placed,
        own_contact_age,
    );
    if me.excluded {
        round.this_node_counted = false;
        round.zone_size = round.zone_size.saturating_sub(1);
    }
    (round, marks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_key_groups_nodes_exactly_as_get_zone_key_does() {
        // helpers_test.go `Test_GetZoneKey`, each case with the key upstream expects beside ours.
        // (labels, upstream's key, ours)
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
        let table: &[Case] = &[
            (&[], "", ""),
            (
                &[(BETA_ZONE_LABEL, "zone1"), (BETA_REGION_LABEL, "region1")],
                "region1:\0:zone1",
                "region1/zone1",
            ),
            (
                &[(ZONE_LABEL, "zone1"), (REGION_LABEL, "region1")],
                "region1:\0:zone1",
                "region1/zone1",
            ),
            (
                &[
                    (ZONE_LABEL, "zone1"),
                    (REGION_LABEL, "region1"),
                    (BETA_ZONE_LABEL, "zone2"),
                    (BETA_REGION_LABEL, "region2"),
                ],
                "region2:\0:zone2",
                "region2/zone2",
            ),
            // Beyond upstream's table, from the same function: one of the two alone, and a
            // present but empty beta label hiding the GA one.
            (&[(ZONE_LABEL, "zone1")], ":\0:zone1", "zone1"),
            (&[(REGION_LABEL, "region1")], "region1:\0:", "region1/"),
            (&[(BETA_ZONE_LABEL, ""), (ZONE_LABEL, "zone1")], "", ""),
        ];
        let mut seen: BTreeMap<&str, String> = BTreeMap::new();
        for (pairs, upstream, ours) in table {
            let l = labels(pairs);
            assert_eq!(zone_key(Some(&l)), *ours, "{pairs:?}");
            // Same upstream key, same key here; different, different.
            if let Some(before) = seen.insert(upstream, ours.to_string()) {
                assert_eq!(before, *ours, "{pairs:?}");
            }
        }
        let distinct: std::collections::BTreeSet<&String> = seen.values().collect();
        assert_eq!(distinct.len(), seen.len());
        assert_eq!(zone_key(None), "");
    }

    #[test]
    fn the_exclusion_label_counts_whatever_its_value() {
        assert!(excluded(Some(&labels(&[(EXCLUDE_DISRUPTION_LABEL, "")]))));
        assert!(excluded(Some(&labels(&[(
            EXCLUDE_DISRUPTION_LABEL,
            "false"
        )]))));
        assert!(!excluded(Some(&labels(&[(ZONE_LABEL, "a")]))));
        assert!(!excluded(None));
    }
}
