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
//! - the pod's `creationTimestamp`: the fence (a pod created on a Node already tainted has its
//!   taint eviction timer start no earlier, docs/semantics.md §4.3). It has its slot in the
//!   metadata whether kept or not.
//! - the controller owner's kind: the fence (DaemonSet pods, docs/semantics.md §11).
//! - the annotations in [`POD_ANNOTATIONS`]: mirror/static pods and the opt-out (fence).
//! - the tolerations that may tolerate `node.kubernetes.io/unreachable:NoExecute` (in their
//!   order), terminationGracePeriodSeconds, phase: the fence's plan. The first toleration that
//!   tolerates that taint decides when the pod is evicted (docs/semantics.md §4.1), so the others
//!   (a DaemonSet-like pod carries dozens) can change no plan and are not kept, neither here nor
//!   in the fence's view and the state file; `explain` reads the pod from the API server and
//!   shows them all. A toleration this agent cannot read is kept, so the fence leaves that pod
//!   out as before.
//! - each container's and init container's name, resources and restartPolicy (sidecars), the
//!   pod-level `spec.resources`, `spec.overhead` and `status.qosClass`: QoS and the effective
//!   requests `status` shows.
//! - of a pod resized in place, the container statuses (`resources`, `allocatedResources`) that
//!   change its effective requests or limits, and whether the `PodResizePending` condition says
//!   Infeasible ([`SlimResize`]): nothing for the other pods, although a 1.35+ kubelet reports
//!   `resources` for every running container.
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
use crate::core::taint;

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
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SlimPod {
    /// name, namespace, uid, resourceVersion, the kept annotations and the controller owner
    /// reference (its `kind` and `controller` only: the rest of it is read by nobody).
    pub metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<SlimPodSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<SlimPodStatus>,
}

impl<'de> Deserialize<'de> for SlimPod {
    /// The pod as served, then its container statuses reduced to those that change the pod's
    /// count (which needs the spec and the whole status at hand, in whatever order they come).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct WirePod<'a> {
            #[serde(default, deserialize_with = "pod_meta")]
            metadata: ObjectMeta,
            #[serde(default)]
            spec: Option<SlimPodSpec>,
            #[serde(default, borrow)]
            status: Option<WirePodStatus<'a>>,
        }
        let pod = WirePod::deserialize(d)?;
        let status = pod.status.map(|s| SlimPodStatus {
            resize: kept_resize(pod.spec.as_ref(), &s),
            phase: s.phase,
            qos_class: s.qos_class,
        });
        Ok(SlimPod {
            metadata: pod.metadata,
            spec: pod.spec,
            status,
        })
    }
}

/// The parts of a PodSpec the fence and `status` read.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimPodSpec {
    /// Only the fence's: see [`SlimToleration::may_tolerate_controller_taint`].
    #[serde(
        default,
        deserialize_with = "controller_taint_tolerations",
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

/// The pod's phase (terminal pods are not fenced), the QoS class the API server set (fixed at
/// creation: `ValidatePodResize` refuses a resize that would change it, docs/semantics.md §11),
/// and the container statuses that change
/// the pod's count; the values the API defines are not allocated.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimPodStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<Cow<'static, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qos_class: Option<Cow<'static, str>>,
    /// `None` unless a container is being resized in place in a way that changes the count
    /// (see [`SlimResize`]): 8 bytes for a pod that is not.
    #[serde(flatten)]
    pub resize: Option<Box<SlimResize>>,
}

/// What an in-place resize (GA in 1.35) changes in a pod's count, as upstream's `PodRequests`
/// / `PodLimits` with `UseStatusResources` read it (`core::resources`; upstream
/// `staging/src/k8s.io/component-helpers/resource/helpers.go`): the statuses of the
/// app containers and sidecars whose `resources` / `allocatedResources` change what they count
/// for, and whether the resize is Infeasible. A kubelet of 1.35+ reports `resources` for every
/// running container, equal to the spec outside a resize: such statuses are dropped while
/// decoding (`core::resources::status_changes_count`), so that every pod does not pay for them.
/// Serialised as the pod status fields it came from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimResize {
    /// The `PodResizePending` condition has reason `Infeasible` (`IsPodResizeInfeasible`).
    pub infeasible: bool,
    /// The kept statuses, in the order of the spec's containers then init containers.
    pub containers: Box<[SlimContainerStatus]>,
}

/// One kept container status: the container's name (statuses are matched to containers by name,
/// as upstream does), what the runtime reports as applied, and what the kubelet admitted.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SlimContainerStatus {
    pub name: Box<str>,
    /// Reported under `initContainerStatuses` (a sidecar's status).
    #[serde(skip)]
    pub init: bool,
    /// `resources` (requests and limits).
    pub resources: SlimResources,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocated_resources: Option<ResourceAmounts>,
}

impl Serialize for SlimResize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        if self.infeasible {
            map.serialize_entry(
                "conditions",
                &[BTreeMap::from([
                    ("type", RESIZE_PENDING),
                    ("status", "True"),
                    ("reason", INFEASIBLE),
                ])],
            )?;
        }
        let of = |init: bool| -> Vec<&SlimContainerStatus> {
            self.containers.iter().filter(|c| c.init == init).collect()
        };
        for (key, init) in [
            ("containerStatuses", false),
            ("initContainerStatuses", true),
        ] {
            let list = of(init);
            if !list.is_empty() {
                map.serialize_entry(key, &list)?;
            }
        }
        map.end()
    }
}

/// `v1.PodResizePending` and `v1.PodReasonInfeasible`.
const RESIZE_PENDING: &str = "PodResizePending";
const INFEASIBLE: &str = "Infeasible";

/// A pod status as served, decoded into what [`SlimPodStatus`] keeps and what it is computed
/// from; the rest (the conditions' times and messages, container states, image IDs, …) is
/// skipped unread. The statuses' names and quantities borrow the served text where they can:
/// every pod's are read, few are kept.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePodStatus<'a> {
    #[serde(default, deserialize_with = "phase")]
    phase: Option<Cow<'static, str>>,
    #[serde(default, deserialize_with = "qos_class")]
    qos_class: Option<Cow<'static, str>>,
    #[serde(default, rename = "conditions", deserialize_with = "resize_infeasible")]
    infeasible: bool,
    #[serde(default, borrow, deserialize_with = "null_as_empty")]
    container_statuses: Vec<WireContainerStatus<'a>>,
    #[serde(default, borrow, deserialize_with = "null_as_empty")]
    init_container_statuses: Vec<WireContainerStatus<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireContainerStatus<'a> {
    #[serde(default, borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    resources: Option<WireResources<'a>>,
    #[serde(default, borrow)]
    allocated_resources: Option<WireAmounts<'a>>,
}

#[derive(Deserialize)]
struct WireResources<'a> {
    #[serde(default, borrow)]
    requests: Option<WireAmounts<'a>>,
    #[serde(default, borrow)]
    limits: Option<WireAmounts<'a>>,
}

/// A resource list as served, in order, borrowing its text where it can.
struct WireAmounts<'a>(Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'de: 'a, 'a> Deserialize<'de> for WireAmounts<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
        struct Pairs<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Pairs<'a> {
            type Value = WireAmounts<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of resource names to quantities")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(2).min(16));
                while let Some((Text(k), Text(v))) = map.next_entry::<Text, Text>()? {
                    pairs.push((k, v));
                }
                Ok(WireAmounts(pairs))
            }
        }
        d.deserialize_map(Pairs(std::marker::PhantomData))
    }
}

impl WireAmounts<'_> {
    /// The value of `name`, the last one when named twice (as a decoded map keeps it).
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_ref())
    }

    /// The same names with the same quantity texts as `other` (absent = empty).
    fn same_text(this: Option<&Self>, other: Option<&ResourceAmounts>) -> bool {
        let ours = this.map_or(&[][..], |a| &a.0[..]);
        let theirs = other.map_or(&[][..], |a| &a.0[..]);
        ours.iter()
            .all(|(k, _)| this.and_then(|a| a.get(k)) == other.and_then(|o| o.get(k)))
            && theirs
                .iter()
                .all(|(k, _)| this.and_then(|a| a.get(k)) == other.and_then(|o| o.get(k)))
    }

    /// As kept: the common names not allocated, each quantity's text in a box of its own.
    fn kept(&self) -> ResourceAmounts {
        ResourceAmounts(
            self.0
                .iter()
                .map(|(k, v)| (intern(k.to_string(), &COMMON_RESOURCES), v.as_ref().into()))
                .collect(),
        )
    }
}

/// `IsPodResizeInfeasible`: the first `PodResizePending` condition decides. The conditions are
/// read one by one, none kept.
fn resize_infeasible<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    struct Condition<'a> {
        #[serde(default, borrow, rename = "type")]
        type_: Cow<'a, str>,
        #[serde(default, borrow)]
        reason: Option<Cow<'a, str>>,
    }
    struct FirstResizePending;
    impl<'de> Visitor<'de> for FirstResizePending {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of pod conditions")
        }
        fn visit_none<E>(self) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_unit<E>(self) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
            d.deserialize_seq(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
            let mut found = None;
            while let Some(c) = seq.next_element::<Condition>()? {
                if found.is_none() && c.type_ == RESIZE_PENDING {
                    found = Some(c.reason.as_deref() == Some(INFEASIBLE));
                }
            }
            Ok(found.unwrap_or(false))
        }
    }
    d.deserialize_option(FirstResizePending)
}

/// The statuses of `status` that change the pod's count (see [`SlimResize`]); `None` when
/// there are none. A status is matched to its container by name, an init container's status
/// winning over an app container's of the same name as in upstream's map (the API server
/// refuses a pod whose containers share a name). A status whose quantities do not parse is
/// kept, so that the conversion reports it.
fn kept_resize(spec: Option<&SlimPodSpec>, status: &WirePodStatus) -> Option<Box<SlimResize>> {
    let spec = spec?;
    let find = |name: &str| {
        let named = |s: &&WireContainerStatus| s.name == name;
        match status.init_container_statuses.iter().rev().find(named) {
            Some(s) => Some((s, true)),
            None => status
                .container_statuses
                .iter()
                .rev()
                .find(named)
                .map(|s| (s, false)),
        }
    };
    // A regular init container's status is never read (only sidecars': `restartPolicy: Always`).
    let read = spec.containers.iter().chain(
        spec.init_containers
            .iter()
            .flatten()
            .filter(|c| c.restart_policy.as_deref() == Some("Always")),
    );
    let mut kept = Vec::new();
    for c in read {
        let Some((s, init)) = find(&c.name) else {
            continue;
        };
        // `cs.Resources != nil`: without it the status is not read at all.
        let Some(resources) = s.resources.as_ref() else {
            continue;
        };
        if changes_count(
            c,
            resources,
            s.allocated_resources.as_ref(),
            status.infeasible,
        ) {
            kept.push(SlimContainerStatus {
                name: c.name.as_str().into(),
                init,
                resources: SlimResources {
                    requests: resources.requests.as_ref().map(WireAmounts::kept),
                    limits: resources.limits.as_ref().map(WireAmounts::kept),
                },
                allocated_resources: s.allocated_resources.as_ref().map(WireAmounts::kept),
            });
        }
    }
    (!kept.is_empty()).then(|| {
        Box::new(SlimResize {
            infeasible: status.infeasible,
            containers: kept.into_boxed_slice(),
        })
    })
}

/// `core::resources::status_changes_count` on the text of the quantities; true (keep) when one
/// does not parse. A status that repeats the spec's text (what a kubelet reports outside a
/// resize) changes nothing whatever the resize's state, and is settled without parsing.
fn changes_count(
    c: &SlimContainer,
    actual: &WireResources,
    allocated: Option<&WireAmounts>,
    infeasible: bool,
) -> bool {
    use crate::core::resources::{ResourceList, StatusAmounts, status_changes_count};
    let spec = c.resources.as_ref();
    let (spec_requests, spec_limits) = (
        spec.and_then(|r| r.requests.as_ref()),
        spec.and_then(|r| r.limits.as_ref()),
    );
    // max(spec, spec, spec) and, while Infeasible, max(actual = spec, allocated = spec): the
    // spec's own amounts. No allocatedResources (an older kubelet) counts as empty.
    if WireAmounts::same_text(actual.requests.as_ref(), spec_requests)
        && WireAmounts::same_text(actual.limits.as_ref(), spec_limits)
        && (allocated.is_none() || WireAmounts::same_text(allocated, spec_requests))
    {
        return false;
    }
    let ours = |m: Option<&WireAmounts>| -> Option<ResourceList> {
        m.into_iter()
            .flat_map(|m| m.0.iter())
            .map(|(k, q)| Some((k.to_string(), q.parse().ok()?)))
            .collect()
    };
    let theirs = |m: Option<&ResourceAmounts>| -> Option<ResourceList> {
        m.into_iter()
            .flat_map(|m| m.0.iter())
            .map(|(k, q)| Some((k.to_string(), q.parse().ok()?)))
            .collect()
    };
    let parsed = (|| {
        let status = StatusAmounts {
            requests: ours(actual.requests.as_ref())?,
            limits: ours(actual.limits.as_ref())?,
            allocated: ours(allocated)?,
        };
        Some(status_changes_count(
            &theirs(spec_requests)?,
            &theirs(spec_limits)?,
            &status,
            infeasible,
        ))
    })();
    parsed.unwrap_or(true)
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

impl SlimToleration {
    /// The toleration in the core's terms; `None` when its operator or effect is not one this
    /// agent knows. `Lt`/`Gt` are read whatever the comparison gate: they never tolerate the
    /// unreachable taint (its empty value is no integer), so the fence plans such a pod as the
    /// taint-eviction controller does with the gate on or off.
    pub fn to_core(&self) -> Option<taint::Toleration> {
        Some(taint::Toleration {
            key: self.key.as_deref().unwrap_or_default().to_string(),
            operator: taint::Operator::parse(self.operator.as_deref().unwrap_or(""))?,
            value: self.value.as_deref().unwrap_or_default().to_string(),
            effect: match self.effect.as_deref() {
                None | Some("") => None,
                Some(e) => Some(taint::Effect::parse(e)?),
            },
            toleration_seconds: self.toleration_seconds,
        })
    }

    /// Whether the cache keeps this toleration: it tolerates
    /// `node.kubernetes.io/unreachable:NoExecute` or `node.kubernetes.io/not-ready:NoExecute` (the
    /// core's matcher, docs/semantics.md §2.1), or it cannot be read (the fence refuses such a
    /// pod, and must still see why). Dropping the others leaves the first tolerating one of each
    /// taint first, which is all `taint::unreachable_delay` and `taint::not_ready_delay` read.
    pub fn may_tolerate_controller_taint(&self) -> bool {
        static TAINTS: std::sync::LazyLock<[taint::Taint; 2]> = std::sync::LazyLock::new(|| {
            [taint::keys::UNREACHABLE, taint::keys::NOT_READY]
                .map(|key| taint::Taint::new(key, "", taint::Effect::NoExecute))
        });
        self.to_core()
            .is_none_or(|t| TAINTS.iter().any(|taint| t.tolerates(taint)))
    }
}

/// `spec.tolerations` as kept: those [`SlimToleration::may_tolerate_controller_taint`], in order.
fn controller_taint_tolerations<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<SlimToleration>>, D::Error> {
    let mut list = shrunk::<D, SlimToleration>(d)?;
    if let Some(l) = list.as_mut() {
        l.retain(SlimToleration::may_tolerate_controller_taint);
        l.shrink_to_fit();
    }
    Ok(list)
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
        #[serde(default)]
        creation_timestamp: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
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
        creation_timestamp: m.creation_timestamp,
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
