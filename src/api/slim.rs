//! What the agent keeps of the pods bound to its node and of its own Node: each object is decoded
//! straight from the API server's JSON into the few fields the fence, the reporter, the quorum
//! and `status` read, so the rest (managedFields, env, volumes, images, probes, status
//! conditions, the last-applied annotation, …) is skipped while parsing and never allocated —
//! neither in the watch cache nor while a list page is decoded (issue 12: a realistic pod is
//! about 6.4 KB of JSON; what is kept of it is a few hundred bytes).
//!
//! [`SlimPod`] is the watch cache's own compact type, and the one the fence's conversions
//! (`agent::fence_task::fence_pod`, `agent::snapshot::pod_resources`) read: no API `Pod` is
//! rebuilt from it (issue 23).
//! [`SlimNode`] wraps an API `Node` holding only what is read (there is one Node, so its size
//! matters less than its managedFields and images, which are dropped).
//!
//! What is kept, and who reads it:
//! - Pod identity (name, namespace, uid, resourceVersion): the store's keys, the fence, `status`.
//! - the controller owner's kind: the fence (DaemonSet pods, docs/semantics.md §11).
//! - the annotations in [`POD_ANNOTATIONS`]: mirror/static pods and the opt-out (fence).
//! - tolerations, terminationGracePeriodSeconds, phase: the fence's plan.
//! - each container's and init container's name, resources and restartPolicy (sidecars), the
//!   pod-level `spec.resources`, `spec.overhead` and `status.qosClass`: QoS and the effective
//!   requests `status` shows.
//! - Node: name, uid, resourceVersion (the reporter's writes), the zone label (quorum), the
//!   condition types each writer of the `status` subresource owns (the reporter's other-writer
//!   check, from managedFields), taints, conditions and allocatable.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{
    Node, NodeCondition, NodeSpec, NodeStatus, Pod, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, ObjectMeta, OwnerReference,
};
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::core::fence_plan::OPT_OUT_ANNOTATION;

/// The GA zone label (`core::zone` forms the controller's zone key from it and the region).
pub const ZONE_LABEL: &str = crate::core::zone::ZONE_LABEL;

/// The pod annotations the fence reads; every other annotation is skipped while decoding.
pub const POD_ANNOTATIONS: &[&str] = &[
    "kubernetes.io/config.mirror",
    "kubernetes.io/config.source",
    OPT_OUT_ANNOTATION,
];

/// The Node labels the agent reads: the zone key's and the exclusion from the zone counts
/// (docs/semantics.md §5.5).
pub const NODE_LABELS: &[&str] = crate::core::zone::LABELS;

/// A Pod as the watch cache keeps it (see the module doc for what is kept and why).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct SlimPod {
    /// name, namespace, uid, resourceVersion, the kept annotations and the controller owner
    /// reference (its `kind` and `controller` only: the rest of it is read by nobody).
    #[serde(default, deserialize_with = "pod_meta")]
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<SlimPodSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SlimPodStatus>,
}

/// The parts of a PodSpec the fence and `status` read.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimPodSpec {
    #[serde(
        default,
        deserialize_with = "shrunk",
        skip_serializing_if = "Option::is_none"
    )]
    pub tolerations: Option<Vec<SlimToleration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub containers: Vec<SlimContainer>,
    #[serde(
        default,
        deserialize_with = "shrunk",
        skip_serializing_if = "Option::is_none"
    )]
    pub init_containers: Option<Vec<SlimContainer>>,
    /// Pod-level resources (docs/semantics.md §11: they take precedence for QoS and requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<SlimResources>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<ResourceAmounts>,
}

/// A container's name (named in conversion errors), resources and restartPolicy (`Always` on
/// an init container makes it a sidecar).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimContainer {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<SlimResources>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
}

/// Requests and limits (resource claims are not read).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct SlimResources {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ResourceAmounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ResourceAmounts>,
}

/// A resource list (`cpu: 100m`, …) as the pairs it holds, in the server's order: a map of two
/// entries would cost a whole B-tree node (about half a kilobyte) per list, four lists a pod.
/// Each pair is a name (the common ones not allocated) and the quantity's text, in one boxed
/// slice: about 40 bytes a pair and one small allocation, where `(String, Quantity)` in a `Vec`
/// took 48 bytes, two allocations and the vector's slack.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceAmounts(pub Box<[(Cow<'static, str>, Box<str>)]>);

/// Resource names nearly every container uses: kept without an allocation of their own.
const COMMON_RESOURCES: [&str; 4] = ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu"];

impl ResourceAmounts {
    /// The quantity's text of `name`; the last one when the list names it twice, as a decoded
    /// map keeps it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k.as_ref() == name)
            .map(|(_, v)| v.as_ref())
    }
}

impl Serialize for ResourceAmounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k.as_ref(), v.as_ref())))
    }
}

impl<'de> Deserialize<'de> for ResourceAmounts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = ResourceAmounts;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of resource names to quantities")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(2).min(16));
                while let Some((k, v)) = map.next_entry::<String, Quantity>()? {
                    pairs.push((intern(k, &COMMON_RESOURCES), v.0.into_boxed_str()));
                }
                Ok(ResourceAmounts(pairs.into_boxed_slice()))
            }
        }
        d.deserialize_map(Pairs)
    }
}

/// The pod's phase (terminal pods are not fenced) and the QoS class the API server set; the
/// values the API defines are not allocated.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimPodStatus {
    #[serde(
        default,
        deserialize_with = "phase",
        skip_serializing_if = "Option::is_none"
    )]
    pub phase: Option<Cow<'static, str>>,
    #[serde(
        default,
        deserialize_with = "qos_class",
        skip_serializing_if = "Option::is_none"
    )]
    pub qos_class: Option<Cow<'static, str>>,
}

/// A toleration as kept: the same fields as the API's, decoded by the API type (so the same
/// input is refused), with the usual keys, operators and effects not allocated (each would be a
/// 32-byte allocation, three or four per toleration, for every pod of the cache).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimToleration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<Cow<'static, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operator: Option<Cow<'static, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Box<str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<Cow<'static, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// Toleration keys most pods carry (the ones admission adds, and the node conditions' taints).
const TOLERATION_KEYS: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/network-unavailable",
    "node-role.kubernetes.io/control-plane",
];
const OPERATORS: &[&str] = &["Exists", "Equal"];
const EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "PreferNoSchedule"];
const PHASES: &[&str] = &["Pending", "Running", "Succeeded", "Failed", "Unknown"];
const QOS_CLASSES: &[&str] = &["Guaranteed", "Burstable", "BestEffort"];

/// `text` as one of the `known` constants when it is one, else as itself.
fn intern(text: String, known: &'static [&'static str]) -> Cow<'static, str> {
    match known.iter().find(|k| **k == text) {
        Some(k) => Cow::Borrowed(*k),
        None => Cow::Owned(text),
    }
}

fn phase<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'static, str>>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.map(|s| intern(s, PHASES)))
}

fn qos_class<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'static, str>>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.map(|s| intern(s, QOS_CLASSES)))
}

impl<'de> Deserialize<'de> for SlimToleration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let t = Toleration::deserialize(d)?;
        Ok(SlimToleration {
            key: t.key.map(|k| intern(k, TOLERATION_KEYS)),
            operator: t.operator.map(|o| intern(o, OPERATORS)),
            value: t.value.map(String::into_boxed_str),
            effect: t.effect.map(|e| intern(e, EFFECTS)),
            toleration_seconds: t.toleration_seconds,
        })
    }
}

impl k8s_openapi::Resource for SlimPod {
    const API_VERSION: &'static str = <Pod as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <Pod as k8s_openapi::Resource>::GROUP;
    const KIND: &'static str = <Pod as k8s_openapi::Resource>::KIND;
    const VERSION: &'static str = <Pod as k8s_openapi::Resource>::VERSION;
    const URL_PATH_SEGMENT: &'static str = <Pod as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = <Pod as k8s_openapi::Resource>::Scope;
}

impl k8s_openapi::Metadata for SlimPod {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Our Node holding only what the agent reads (see the module doc).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimNode(pub Node);

impl SlimNode {
    pub fn into_node(self) -> Node {
        self.0
    }
}

impl k8s_openapi::Resource for SlimNode {
    const API_VERSION: &'static str = <Node as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <Node as k8s_openapi::Resource>::GROUP;
    const KIND: &'static str = <Node as k8s_openapi::Resource>::KIND;
    const VERSION: &'static str = <Node as k8s_openapi::Resource>::VERSION;
    const URL_PATH_SEGMENT: &'static str = <Node as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = <Node as k8s_openapi::Resource>::Scope;
}

impl k8s_openapi::Metadata for SlimNode {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.0.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

impl<'de> Deserialize<'de> for SlimNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = WireNode::deserialize(d)?;
        let meta = wire.metadata.unwrap_or_default();
        let spec = wire.spec.unwrap_or_default();
        let status = wire.status.unwrap_or_default();
        Ok(SlimNode(Node {
            metadata: ObjectMeta {
                name: meta.name,
                uid: meta.uid,
                resource_version: meta.resource_version,
                labels: meta.labels,
                managed_fields: meta.managed_fields,
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec {
                taints: spec.taints,
                ..NodeSpec::default()
            }),
            status: Some(NodeStatus {
                conditions: status.conditions,
                allocatable: status.allocatable,
                ..NodeStatus::default()
            }),
        }))
    }
}

#[derive(Deserialize)]
struct WireNode {
    #[serde(default)]
    metadata: Option<NodeMeta>,
    #[serde(default)]
    spec: Option<WireNodeSpec>,
    #[serde(default)]
    status: Option<WireNodeStatus>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default, deserialize_with = "node_labels")]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "status_condition_managers")]
    managed_fields: Option<Vec<ManagedFieldsEntry>>,
}

#[derive(Default, Deserialize)]
struct WireNodeSpec {
    #[serde(default)]
    taints: Option<Vec<Taint>>,
}

#[derive(Default, Deserialize)]
struct WireNodeStatus {
    #[serde(default)]
    conditions: Option<Vec<NodeCondition>>,
    #[serde(default)]
    allocatable: Option<BTreeMap<String, Quantity>>,
}

/// A pod's metadata as kept.
fn pod_meta<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct PodMeta {
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        namespace: Option<String>,
        #[serde(default)]
        uid: Option<String>,
        #[serde(default)]
        resource_version: Option<String>,
        #[serde(default, deserialize_with = "pod_annotations")]
        annotations: Option<BTreeMap<String, String>>,
        #[serde(default, deserialize_with = "controller_owner")]
        owner_references: Option<Vec<OwnerReference>>,
    }
    let Some(m) = Option::<PodMeta>::deserialize(d)? else {
        return Ok(ObjectMeta::default());
    };
    Ok(ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        annotations: m.annotations,
        owner_references: m.owner_references,
        ..ObjectMeta::default()
    })
}

fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(shrunk(d)?.unwrap_or_default())
}

/// A list without the slack a decoded `Vec` keeps (JSON gives no length up front, so two
/// tolerations would occupy four slots of 112 bytes, for every pod of the cache).
fn shrunk<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Vec<T>>, D::Error> {
    let mut list = Option::<Vec<T>>::deserialize(d)?;
    if let Some(l) = list.as_mut() {
        l.shrink_to_fit();
    }
    Ok(list)
}

fn pod_annotations<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    d.deserialize_option(KeptEntries(POD_ANNOTATIONS))
}

fn node_labels<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    d.deserialize_option(KeptEntries(NODE_LABELS))
}

/// A string map of which only the listed keys are kept; the other values (a last-applied
/// annotation is a copy of the whole object) are skipped unread. `None` when none is there.
struct KeptEntries(&'static [&'static str]);

impl<'de> Visitor<'de> for KeptEntries {
    type Value = Option<BTreeMap<String, String>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of strings")
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.0.contains(&key.as_str()) {
                kept.insert(key, map.next_value::<String>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok((!kept.is_empty()).then_some(kept))
    }
}

/// The controller owner reference (the only one the fence reads: its kind), without the
/// others; its name, uid and apiVersion are left empty.
fn controller_owner<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<OwnerReference>>, D::Error> {
    #[derive(Deserialize)]
    struct Owner {
        #[serde(default)]
        kind: String,
        #[serde(default)]
        controller: Option<bool>,
    }
    struct Controller;
    impl<'de> Visitor<'de> for Controller {
        type Value = Option<Vec<OwnerReference>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of owner references")
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            // The first controller, as the fence takes it (the API server allows one).
            let mut found = None;
            while let Some(o) = seq.next_element::<Owner>()? {
                if found.is_none() && o.controller == Some(true) {
                    found = Some(OwnerReference {
                        kind: o.kind,
                        controller: Some(true),
                        ..OwnerReference::default()
                    });
                }
            }
            Ok(found.map(|o| vec![o]))
        }
    }
    d.deserialize_option(Controller)
}

/// Of a Node's managedFields, the writers of the `status` subresource that own conditions, each
/// with a `fieldsV1` reduced to `{"f:status": {"f:conditions": {"k:{\"type\":…}": {}}}}` — all
/// the reporter reads to find another writer of our conditions. A kubelet's entry also owns the
/// images list, addresses, nodeInfo…: skipped unread.
fn status_condition_managers<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<ManagedFieldsEntry>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Entry {
        #[serde(default)]
        manager: Option<String>,
        #[serde(default)]
        subresource: Option<String>,
        #[serde(default)]
        fields_v1: Option<Fields>,
    }
    #[derive(Deserialize)]
    struct Fields {
        #[serde(default, rename = "f:status")]
        status: Option<StatusFields>,
    }
    #[derive(Deserialize)]
    struct StatusFields {
        #[serde(default, rename = "f:conditions")]
        conditions: Option<BTreeMap<String, IgnoredAny>>,
    }
    let Some(entries) = Option::<Vec<Entry>>::deserialize(d)? else {
        return Ok(None);
    };
    let kept: Vec<ManagedFieldsEntry> = entries
        .into_iter()
        .filter(|e| e.subresource.as_deref() == Some("status"))
        .filter_map(|e| {
            let keys = e.fields_v1?.status?.conditions?;
            if keys.is_empty() {
                return None;
            }
            let conditions: serde_json::Map<String, serde_json::Value> = keys
                .into_keys()
                .map(|k| (k, serde_json::Value::Object(serde_json::Map::new())))
                .collect();
            Some(ManagedFieldsEntry {
                manager: e.manager,
                subresource: e.subresource,
                fields_v1: Some(FieldsV1(serde_json::json!({
                    "f:status": { "f:conditions": conditions }
                }))),
                ..ManagedFieldsEntry::default()
            })
        })
        .collect();
    Ok((!kept.is_empty()).then_some(kept))
}
