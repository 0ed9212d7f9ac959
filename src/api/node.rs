//! Writes to our Node: the status PATCH carrying only the conditions we own (strategic merge,
//! merge key `type`, so other writers' conditions are untouched) and the taint read-modify-write
//! guarded by `resourceVersion` (docs/architecture.md §6).

use std::time::SystemTime;

use k8s_openapi::api::core::v1::{Node, Taint as ApiTaint};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

use crate::api::{ApiError, FIELD_MANAGER, Requests};
use crate::config::TaintSpec;
use crate::core::clock::rfc3339;
use crate::core::condition::NodeCondition;
use crate::core::taint::{Effect, Taint};
use crate::core::taint_plan;

/// The strategic-merge patch body for our conditions: only the owned types, never the whole list.
/// When nothing but heartbeats moved (`heartbeat_only`), each entry carries just its `type` (the
/// merge key) and `lastHeartbeatTime`: the server merges it into the stored condition.
///
/// Serialised straight from the conditions (the times formatted into the output), with the keys
/// in the order a `serde_json::Value` would write them: the same bytes as building the JSON
/// value first, without a map and a string per field on every report.
pub fn conditions_patch(conditions: &[NodeCondition], heartbeat_only: bool) -> ConditionsPatch<'_> {
    ConditionsPatch {
        conditions,
        heartbeat_only,
    }
}

/// `{"status": {"conditions": [...]}}` of [`conditions_patch`].
#[derive(Clone, Copy, Debug)]
pub struct ConditionsPatch<'a> {
    conditions: &'a [NodeCondition],
    heartbeat_only: bool,
}

impl Serialize for ConditionsPatch<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Status<'a>(&'a ConditionsPatch<'a>);
        struct Entry<'a>(&'a NodeCondition, bool);
        struct Time(std::time::SystemTime);
        impl Serialize for Status<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry(
                    "conditions",
                    &Entries(self.0.conditions, self.0.heartbeat_only),
                )?;
                m.end()
            }
        }
        struct Entries<'a>(&'a [NodeCondition], bool);
        impl Serialize for Entries<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().map(|c| Entry(c, self.1)))
            }
        }
        impl Serialize for Entry<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let c = self.0;
                // Keys in sorted order, as a `serde_json::Map` holds them.
                if self.1 {
                    let mut m = s.serialize_map(Some(2))?;
                    m.serialize_entry("lastHeartbeatTime", &Time(c.last_heartbeat_time))?;
                    m.serialize_entry("type", &c.condition_type)?;
                    return m.end();
                }
                let mut m = s.serialize_map(Some(6))?;
                m.serialize_entry("lastHeartbeatTime", &Time(c.last_heartbeat_time))?;
                m.serialize_entry("lastTransitionTime", &Time(c.last_transition_time))?;
                m.serialize_entry("message", &c.message)?;
                m.serialize_entry("reason", &c.reason)?;
                m.serialize_entry("status", c.status.as_str())?;
                m.serialize_entry("type", &c.condition_type)?;
                m.end()
            }
        }
        impl Serialize for Time {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                // `core::clock::rfc3339`, written out without a string of its own.
                s.collect_str(&humantime::format_rfc3339_seconds(self.0))
            }
        }
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("status", &Status(self))?;
        m.end()
    }
}

/// PATCH `nodes/<name>/status` with our conditions. Returns the node as the server stored it.
pub async fn patch_conditions(
    requests: &Requests,
    api: &Api<Node>,
    name: &str,
    conditions: &[NodeCondition],
    heartbeat_only: bool,
) -> Result<Node, ApiError> {
    let body = conditions_patch(conditions, heartbeat_only);
    let pp = PatchParams::default();
    let pp = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..pp
    };
    requests
        .call(
            "patch",
            format!("nodes/{name}/status"),
            api.patch_status(name, &pp, &Patch::Strategic(&body)),
        )
        .await
}

/// A node taint in our terms. Taints with an effect we do not know cannot be ours, so they are
/// returned as `None` and always kept as they are.
pub fn to_core(t: &ApiTaint) -> Option<Taint> {
    Some(Taint {
        key: t.key.clone(),
        value: t.value.clone().unwrap_or_default(),
        effect: Effect::parse(&t.effect)?,
        time_added: t.time_added.as_ref().map(|ts| ts.0.to_string()),
    })
}

/// What a taint write did.
#[derive(Clone, Debug, PartialEq)]
pub enum TaintWrite {
    /// The node already carried exactly the taints we want.
    Unchanged,
    /// Written; the node's taints afterwards, and the Node as the server stored it.
    Written(Vec<String>, Box<Node>),
}

/// Brings the node's owned taints to `desired`, keeping every other taint exactly (value,
/// effect, `timeAdded`, order). Read-modify-write with the node's `resourceVersion` as a
/// precondition in the patch, so a concurrent writer makes the server answer 409 instead of
/// losing its change; on 409 the node is read again, up to `attempts` times. `cached` (the Node
/// as the watch last saw it) saves the first read; a stale cache only costs one 409.
// The request's parts and the taints' are each one argument; a struct of them would only be
// unpacked again here.
#[allow(clippy::too_many_arguments)]
pub async fn reconcile_taints(
    requests: &Requests,
    api: &Api<Node>,
    name: &str,
    cached: Option<Node>,
    owned: &[TaintSpec],
    desired: &[TaintSpec],
    time_added: std::time::SystemTime,
    attempts: u32,
) -> Result<TaintWrite, ApiError> {
    let mut last_conflict = None;
    let mut cached = cached;
    for _ in 0..attempts.max(1) {
        let node = match cached.take() {
            Some(n) => n,
            None => {
                requests
                    .call("get", format!("nodes/{name}"), api.get(name))
                    .await?
            }
        };
        let raw: Vec<ApiTaint> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default();
        // Our view of each taint; unknown effects are never ours and never touched.
        let current: Vec<Option<Taint>> = raw.iter().map(to_core).collect();
        let known: Vec<Taint> = current.iter().flatten().cloned().collect();
        let Some(next) = taint_plan::plan_taints(&known, owned, desired, &rfc3339(time_added))
        else {
            return Ok(TaintWrite::Unchanged);
        };
        // Rebuild the list: every taint we keep is the server's own JSON, untouched; only the
        // taints we add are new.
        let mut out: Vec<Value> = Vec::with_capacity(next.len() + raw.len());
        for (api_taint, core) in raw.iter().zip(&current) {
            let keep = match core {
                None => true,
                Some(t) => next.iter().any(|n| n.key == t.key && n.effect == t.effect),
            };
            if keep {
                // Serialising a typed taint cannot fail; the fallback keeps its identity anyway.
                out.push(serde_json::to_value(api_taint).unwrap_or_else(|_| {
                    json!({"key": api_taint.key, "value": api_taint.value, "effect": api_taint.effect})
                }));
            }
        }
        for t in next
            .iter()
            .filter(|n| !known.iter().any(|k| k.key == n.key && k.effect == n.effect))
        {
            out.push(json!({
                "key": t.key,
                "effect": t.effect.as_str(),
                "timeAdded": t.time_added,
            }));
        }
        let rv = node.metadata.resource_version.clone().unwrap_or_default();
        // spec.taints has no patch strategy: a strategic-merge patch replaces the list. The
        // resourceVersion in the body is a precondition: stale → 409.
        let body = json!({
            "metadata": { "resourceVersion": rv },
            "spec": { "taints": out },
        });
        let pp = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PatchParams::default()
        };
        match requests
            .call(
                "patch",
                format!("nodes/{name}"),
                api.patch(name, &pp, &Patch::Strategic(&body)),
            )
            .await
        {
            Ok(written) => {
                let after = written
                    .spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .map(|ts| {
                        ts.iter()
                            .filter_map(to_core)
                            .map(|t| t.to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                return Ok(TaintWrite::Written(after, Box::new(written)));
            }
            Err(e) if e.is_conflict() => last_conflict = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_conflict.unwrap_or(ApiError::Status {
        verb: "patch",
        resource: format!("nodes/{name}"),
        code: 409,
        reason: "Conflict".to_string(),
        message: "gave up after repeated conflicts".to_string(),
        retry_after: None,
    }))
}

/// Reads other nodes' Nodes for the peers that ask (`peer::TaintFn`, `peer::ZoneFn`,
/// docs/fence.md §5): a node cut off learns whether the control plane has tainted it yet, and how
/// it records its zone.
pub struct NodeTaints {
    api: Api<crate::api::slim::SlimNode>,
    requests: Requests,
    /// A refusal (403) was logged: the agent's identity may not read other nodes.
    refused_logged: std::sync::atomic::AtomicBool,
    /// The same for a list of Nodes.
    list_refused_logged: std::sync::atomic::AtomicBool,
    /// Each zone's latest list, by zone key ([`NodeTaints::zone_record`]).
    zones: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<ZoneSlot>>>,
}

/// A zone's latest list, held while it is made.
type ZoneSlot = tokio::sync::Mutex<Option<ZoneList>>;

/// The Nodes of a zone as listed at `listed_at`, each kept as `core::zone::record` reads it, and
/// whether they are every Node of the cluster (`whole`, [`NodeTaints::whole`]).
struct ZoneList {
    listed_at: tokio::time::Instant,
    nodes: Vec<crate::core::zone::Listed>,
    whole: bool,
}

/// How long a zone's list answers the askers of that zone: a second, so that the askers of a
/// partition, which choose the same few readers, make one list a second between them, and each
/// asker's answer is still of its round (rounds are seconds apart). The asker's Node is read
/// afresh in the same answer beside it (`Question::taint`), and a taint found there holds no
/// node (`core::quorum::round_tainted`).
const ZONE_FRESH: std::time::Duration = crate::core::quorum::ZONE_RECORD_FRESH;

/// Zones whose lists are kept at once at most: a reader answers the askers of its own zone and
/// of a few others; a holder of the peers' key naming made-up zones gets no more lists than this
/// a second.
const ZONES_KEPT: usize = 8;

/// Nodes per page of a zone's list ([`NodeTaints::zone_record`]): a page's body is held whole
/// before it is read, and a Node as the API server returns it runs to tens of kilobytes.
const ZONE_PAGE: u32 = 25;

impl NodeTaints {
    /// Reads through `client`, each request counted by `requests`.
    pub fn new(client: kube::Client, requests: &Requests) -> NodeTaints {
        NodeTaints {
            api: Api::all(client),
            requests: requests.clone(),
            refused_logged: std::sync::atomic::AtomicBool::new(false),
            list_refused_logged: std::sync::atomic::AtomicBool::new(false),
            zones: std::sync::Mutex::default(),
        }
    }

    /// Node `asker`'s zone, whose key is `key`, as the API server records it
    /// (`core::zone::record`), from a list of the zone's Nodes made at most [`ZONE_FRESH`] ago
    /// for any asker of that zone, or made now: the Nodes `core::zone::record_selector` selects,
    /// in pages of [`ZONE_PAGE`], all within `bound`. One list at a time per zone: an asker that
    /// finds one under way waits for it. `None` when `asker` is no node name or `key` no zone
    /// key, when a page fails, when more than `core::zone::RECORD_SCAN` Nodes are listed, when
    /// the list does not hold `asker` in that zone, or when [`ZONES_KEPT`] other zones' lists
    /// are fresh. Every page of one list is served from the same resourceVersion, so the counts
    /// and the asker's taint are of one moment. Counted under `nodes`; a refusal is logged
    /// once: the agent's identity needs `list` on nodes (the packaged ClusterRole grants it).
    pub async fn zone_record(
        &self,
        asker: &str,
        key: &str,
        bound: std::time::Duration,
    ) -> Option<crate::core::quorum::ZoneRecord> {
        use crate::core::zone;
        // No text from a holder of the peers' key goes into a selector unchecked: a key is label
        // values joined by `/` (`zone::key`).
        if !crate::core::names::is_dns_subdomain(asker)
            || key.split('/').count() > 2
            || key
                .split('/')
                .any(|v| !crate::core::names::label_value_errors(v).is_empty())
        {
            return None;
        }
        let deadline = tokio::time::Instant::now() + bound;
        let slot = self.zone_slot(key)?;
        let mut kept = tokio::time::timeout_at(deadline, slot.lock()).await.ok()?;
        let fresh = kept
            .as_ref()
            .is_some_and(|k| k.listed_at.elapsed() < ZONE_FRESH);
        if !fresh {
            *kept = None;
            let listed_at = tokio::time::Instant::now();
            let nodes = self.list_zone(key, deadline).await?;
            let whole = self.whole(&nodes, key, deadline).await;
            *kept = Some(ZoneList {
                listed_at,
                nodes,
                whole,
            });
        }
        let list = kept.as_ref()?;
        zone::record(&list.nodes, asker, key, list.whole)
    }

    /// Whether `nodes`, zone `key`'s list, are every Node of the cluster, when that matters: only
    /// while none of the zone's Nodes counted is Ready (`quorum::ZoneRecord::only_zone`). A key
    /// with no zone part was listed whole; any other asks for one Node outside the zone
    /// (`core::zone::outside_selector`) within `deadline`. False when it finds one or fails.
    async fn whole(
        &self,
        nodes: &[crate::core::zone::Listed],
        key: &str,
        deadline: tokio::time::Instant,
    ) -> bool {
        let mut counted = nodes.iter().filter(|n| n.key == key && !n.excluded);
        if counted.clone().next().is_none() || counted.any(|n| n.ready) {
            return false;
        }
        let Some(outside) = crate::core::zone::outside_selector(key) else {
            return true;
        };
        let params = kube::api::ListParams::default().labels(&outside).limit(1);
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let page = self
            .requests
            .call_within(left, "list", "nodes", self.api.list(&params));
        match page.await {
            Ok(page) => page.items.is_empty(),
            Err(e) => {
                crate::api::peer_read_failed(
                    &e,
                    &self.list_refused_logged,
                    "the Nodes outside a peer's zone",
                    "peers cut off cannot learn from this node whether every zone is down, and decide without it; grant list on nodes",
                );
                false
            }
        }
    }

    /// The slot of zone `key`'s list, made when there is none; `None` when [`ZONES_KEPT`]
    /// zones have slots and none of them is idle with a list no longer fresh.
    fn zone_slot(&self, key: &str) -> Option<std::sync::Arc<ZoneSlot>> {
        let mut zones = self.zones.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = zones.get(key) {
            return Some(slot.clone());
        }
        if zones.len() >= ZONES_KEPT {
            let idle = |slot: &std::sync::Arc<ZoneSlot>| {
                slot.try_lock().is_ok_and(|k| {
                    k.as_ref()
                        .is_none_or(|k| k.listed_at.elapsed() >= ZONE_FRESH)
                })
            };
            let stale = zones
                .iter()
                .find(|(_, s)| idle(s))
                .map(|(k, _)| k.clone())?;
            zones.remove(&stale);
        }
        let slot = std::sync::Arc::new(ZoneSlot::new(None));
        zones.insert(key.to_string(), slot.clone());
        Some(slot)
    }

    /// The Nodes of zone `key`'s selector, page by page until `deadline`; `None` when a page
    /// fails or more than `zone::RECORD_SCAN` are listed.
    async fn list_zone(
        &self,
        key: &str,
        deadline: tokio::time::Instant,
    ) -> Option<Vec<crate::core::zone::Listed>> {
        use crate::core::zone;
        let mut params = kube::api::ListParams::default().limit(ZONE_PAGE);
        if let Some(selector) = zone::record_selector(key) {
            params = params.labels(&selector);
        }
        let mut listed = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let page = self
                .requests
                .call_within(left, "list", "nodes", self.api.list(&params))
                .await;
            let page = match page {
                Ok(page) => page,
                Err(e) => {
                    crate::api::peer_read_failed(
                        &e,
                        &self.list_refused_logged,
                        "the Nodes of a peer's zone",
                        "peers cut off cannot learn from this node how the control plane records their zone, and decide without it; grant list on nodes",
                    );
                    return None;
                }
            };
            listed.extend(page.items.iter().map(|n| listed_node(&n.0)));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                None => return Some(listed),
                Some(_) if listed.len() >= zone::RECORD_SCAN => return None,
                Some(token) => params = params.continue_token(&token),
            }
        }
    }

    /// Whether Node `node` carries one of the node controller's NoExecute taints, with the
    /// unreachable one's `timeAdded` and its Ready=Unknown's `lastTransitionTime`
    /// ([`node_read`]), read within `bound`; `None` when `node` is no node name, the read fails
    /// or there is no such Node. Counted under one resource, `nodes/*`, so that the request
    /// metric's labels do not grow with the cluster. A refusal is logged once: the agent's
    /// identity needs `get` on nodes (the packaged ClusterRole grants it).
    pub async fn read(
        &self,
        node: &str,
        bound: std::time::Duration,
    ) -> Option<crate::core::quorum::NodeRead> {
        // As `KubeletLeases::renew_time`: no name from a holder of the peers' key goes into a
        // request path unchecked.
        if !crate::core::names::is_dns_subdomain(node) {
            return None;
        }
        let read = self
            .requests
            .call_within(bound, "get", "nodes/*", self.api.get_opt(node))
            .await;
        match read {
            Ok(found) => Some(node_read(&found?.into_node())),
            Err(e) => {
                crate::api::peer_read_failed(
                    &e,
                    &self.refused_logged,
                    "a peer's Node",
                    "peers cut off cannot learn from this node whether they are tainted yet, and count their deadlines from their contact; grant get on nodes",
                );
                None
            }
        }
    }
}

/// A Node as `core::zone::record` reads it.
fn listed_node(node: &Node) -> crate::core::zone::Listed {
    let condition = ready_condition(node);
    let ready = condition.is_some_and(|c| c.status == "True");
    let since = condition
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| SystemTime::from(t.0));
    crate::core::zone::Listed {
        unknown: condition.is_some_and(|c| c.status == "Unknown"),
        ..crate::core::zone::Listed::of(
            node.metadata.name.as_deref().unwrap_or_default(),
            node.metadata.labels.as_ref(),
            (ready, since),
            carries_controller_taint(node),
        )
    }
}

/// `node`'s Ready condition, as stored.
pub fn ready_condition(node: &Node) -> Option<&k8s_openapi::api::core::v1::NodeCondition> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
}

/// What a peer tells the asker of its Node `node` (`core::quorum::NodeRead`): tainted with
/// either of the node controller's NoExecute taints, the not-ready one too (its timers go on
/// through the swap for the unreachable one, docs/semantics.md §4.3), and each one's
/// `timeAdded`.
pub fn node_read(node: &Node) -> crate::core::quorum::NodeRead {
    let added = |t: Option<&ApiTaint>| {
        t.and_then(|t| t.time_added.as_ref())
            .map(|t| SystemTime::from(t.0))
    };
    let ready = ready_condition(node);
    let unknown = ready.filter(|c| c.status == "Unknown");
    crate::core::quorum::NodeRead {
        tainted: carries_controller_taint(node),
        taint_added: added(unreachable_taint(node)),
        not_ready_added: added(taint_of(node, crate::core::taint::is_not_ready_no_execute)),
        unknown_since: unknown
            .and_then(|c| c.last_transition_time.as_ref())
            .map(|t| SystemTime::from(t.0)),
        ready_false: ready.is_some_and(|c| c.status == "False"),
    }
}

/// The `node.kubernetes.io/unreachable:NoExecute` taint `node` carries.
fn unreachable_taint(node: &Node) -> Option<&ApiTaint> {
    taint_of(node, crate::core::taint::is_unreachable_no_execute)
}

/// The first taint `node` carries that `is` names (by key and effect).
fn taint_of(node: &Node, is: fn(&str, &str) -> bool) -> Option<&ApiTaint> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .and_then(|t| t.iter().find(|t| is(&t.key, &t.effect)))
}

/// Whether `node` carries a NoExecute taint of the node controller's: the unreachable one, or the
/// not-ready one (fortieth session: a read that found only the not-ready taint counted as a
/// read without a taint, and moved every deadline later, though the timers that taint started
/// go on through its swap; seed 0x1514 with `--not-ready`).
fn carries_controller_taint(node: &Node) -> bool {
    taint_of(node, crate::core::taint::is_controller_no_execute).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::condition::ConditionStatus;
    use std::time::{Duration, SystemTime};

    /// The patch as it was built before it was serialised in place: a JSON value, field by field.
    fn as_value(conditions: &[NodeCondition], heartbeat_only: bool) -> Value {
        let list: Vec<Value> = conditions
            .iter()
            .map(|c| {
                if heartbeat_only {
                    return json!({
                        "type": c.condition_type,
                        "lastHeartbeatTime": rfc3339(c.last_heartbeat_time),
                    });
                }
                json!({
                    "type": c.condition_type,
                    "status": c.status.as_str(),
                    "reason": c.reason,
                    "message": c.message,
                    "lastHeartbeatTime": rfc3339(c.last_heartbeat_time),
                    "lastTransitionTime": rfc3339(c.last_transition_time),
                })
            })
            .collect();
        json!({ "status": { "conditions": list } })
    }

    #[test]
    fn the_conditions_patch_is_byte_for_byte_the_json_value_it_replaces() {
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s);
        let conditions = [
            NodeCondition {
                condition_type: "MemoryPressure".into(),
                status: ConditionStatus::False,
                reason: "KubeletHasSufficientMemory".into(),
                message: "kubelet has \"sufficient\" memory\tavailable \u{e9}".into(),
                last_heartbeat_time: at(10) + Duration::from_millis(700),
                last_transition_time: at(0),
            },
            NodeCondition {
                condition_type: "DiskPressure".into(),
                status: ConditionStatus::True,
                reason: "KubeletHasDiskPressure".into(),
                message: String::new(),
                last_heartbeat_time: at(20),
                last_transition_time: at(5),
            },
        ];
        for list in [&conditions[..], &conditions[..1], &[]] {
            for heartbeat_only in [false, true] {
                let ours = serde_json::to_vec(&conditions_patch(list, heartbeat_only));
                let value = serde_json::to_vec(&as_value(list, heartbeat_only));
                assert_eq!(
                    ours.ok(),
                    value.ok(),
                    "{} conditions, heartbeat only {heartbeat_only}",
                    list.len()
                );
            }
        }
    }

    /// What a peer reads for an asker (`node_read`): the unreachable NoExecute taint and its
    /// `timeAdded` (not the NoSchedule one's), the not-ready NoExecute taint's, Ready's
    /// `lastTransitionTime` only while Ready is Unknown, and whether Ready is False.
    #[test]
    fn a_peer_reads_the_unreachable_taints_time_and_an_unknown_readys_transition() {
        let node = |taints: Value, ready: &str| -> Node {
            serde_json::from_value(json!({
                "metadata": {"name": "n1"},
                "spec": {"taints": taints},
                "status": {"conditions": [{
                    "type": "Ready", "status": ready, "reason": "NodeStatusUnknown",
                    "lastHeartbeatTime": "2027-01-15T07:59:00Z",
                    "lastTransitionTime": "2027-01-15T08:00:00Z",
                }]},
            }))
            .expect("a Node")
        };
        let at = |s: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s);
        let taint = |effect: &str| {
            json!({"key": "node.kubernetes.io/unreachable", "effect": effect,
                   "timeAdded": "2027-01-15T08:00:05Z"})
        };
        let read = node_read(&node(
            json!([taint("NoSchedule"), taint("NoExecute")]),
            "Unknown",
        ));
        assert_eq!(
            (read.tainted, read.taint_added, read.unknown_since),
            (true, Some(at(5)), Some(at(0)))
        );
        assert!(!read.ready_false);
        let read = node_read(&node(json!([taint("NoSchedule")]), "False"));
        assert_eq!(
            (read.tainted, read.taint_added, read.unknown_since),
            (false, None, None)
        );
        assert!(read.ready_false);
        assert!(!node_read(&node(json!([]), "True")).ready_false);
        // The not-ready taint's `timeAdded`, NoExecute's alone, beside no unreachable one's.
        let not_ready = |effect: &str, added: &str| json!({"key": "node.kubernetes.io/not-ready", "effect": effect, "timeAdded": added});
        let read = node_read(&node(
            json!([
                not_ready("NoSchedule", "2027-01-15T08:00:01Z"),
                not_ready("NoExecute", "2027-01-15T08:00:03Z")
            ]),
            "False",
        ));
        assert_eq!(
            (read.tainted, read.not_ready_added, read.taint_added),
            (true, Some(at(3)), None)
        );
        let read = node_read(&node(json!([taint("NoExecute")]), "Unknown"));
        assert_eq!(read.not_ready_added, None);
        let bare = json!([{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]);
        let read = node_read(&node(bare, "Unknown"));
        assert_eq!(
            (read.tainted, read.taint_added, read.unknown_since),
            (true, None, Some(at(0)))
        );
    }
}
