//! The resources the test server serves, with the per-type facts the real registry strategies
//! encode: scope, subresources, create-on-update, generation, field labels, strategic-merge list
//! strategies (from the Go struct tags) and the JSON shape used to reject mistyped bodies.

/// How a list field merges in a strategic-merge patch (the `patchStrategy`/`patchMergeKey` tags).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ListStrategy {
    /// No strategy: the patch's list replaces the whole list (e.g. `spec.taints`, `spec.tolerations`).
    Replace,
    /// `patchStrategy:"merge"` with a `patchMergeKey` (e.g. `status.conditions` by `type`).
    MergeByKey(&'static str),
    /// `patchStrategy:"merge"` on a list of scalars (e.g. `metadata.finalizers`): set union.
    MergePrimitives,
}

/// JSON shape of a field, enough to answer mistyped bodies as the real decoder does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// A JSON string.
    Str,
    /// A JSON integer.
    Int,
    /// A JSON integer that fits Go's `int32` (larger ones fail to decode, as in the real server).
    Int32,
    /// A JSON boolean.
    Bool,
    /// An object with free-form string values (labels, annotations).
    StrMap,
    /// An object whose known fields are checked by path.
    Object,
    /// A list of objects.
    ObjList,
    /// A list of strings.
    StrList,
}

/// One served resource.
#[derive(Debug)]
pub struct Resource {
    /// API group, "" for core.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Plural resource name.
    pub plural: &'static str,
    /// Singular resource name (discovery).
    pub singular: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Whether a `status` subresource exists (then the main resource ignores `.status` on
    /// update and the subresource ignores everything but `.status`).
    pub status_subresource: bool,
    /// `AllowCreateOnUpdate` of the registry strategy (true only for events here).
    pub create_on_update: bool,
    /// Whether `metadata.generation` is maintained (pods, with pod generation tracking).
    pub generation: bool,
    /// Whether a delete returns the object (`ReturnDeletedObject`, pods) instead of a Status.
    pub return_deleted_object: bool,
    /// Field labels accepted by `fieldSelector` (beyond none: each resource lists its own).
    pub field_labels: &'static [&'static str],
    /// Short names for discovery.
    pub short_names: &'static [&'static str],
    /// Strategic-merge list strategies by dotted path (`[]` for list items).
    pub list_strategies: &'static [(&'static str, ListStrategy)],
    /// Known field shapes by dotted path (`[]` for list items).
    pub shapes: &'static [(&'static str, Shape)],
}

const META_SHAPES: [(&str, Shape); 12] = [
    ("metadata", Shape::Object),
    ("metadata.name", Shape::Str),
    ("metadata.generateName", Shape::Str),
    ("metadata.namespace", Shape::Str),
    ("metadata.resourceVersion", Shape::Str),
    ("metadata.uid", Shape::Str),
    ("metadata.labels", Shape::StrMap),
    ("metadata.annotations", Shape::StrMap),
    ("metadata.finalizers", Shape::StrList),
    ("metadata.ownerReferences", Shape::ObjList),
    ("metadata.ownerReferences[].uid", Shape::Str),
    ("metadata.ownerReferences[].name", Shape::Str),
];

const META_STRATEGIES: [(&str, ListStrategy); 2] = [
    ("metadata.ownerReferences", ListStrategy::MergeByKey("uid")),
    ("metadata.finalizers", ListStrategy::MergePrimitives),
];

macro_rules! concat_slices {
    ($t:ty; $a:expr, $b:expr) => {{
        const A: &[$t] = &$a;
        const B: &[$t] = &$b;
        const N: usize = A.len() + B.len();
        const OUT: [$t; N] = {
            let mut out = [A[0]; N];
            let mut i = 0;
            while i < A.len() {
                out[i] = A[i];
                i += 1;
            }
            let mut j = 0;
            while j < B.len() {
                out[A.len() + j] = B[j];
                j += 1;
            }
            out
        };
        &OUT
    }};
}

/// core/v1 Node.
pub static NODES: Resource = Resource {
    group: "",
    version: "v1",
    plural: "nodes",
    singular: "node",
    kind: "Node",
    namespaced: false,
    status_subresource: true,
    create_on_update: false,
    generation: false,
    return_deleted_object: false,
    field_labels: &["metadata.name", "spec.unschedulable"],
    short_names: &["no"],
    list_strategies: concat_slices!((&str, ListStrategy); META_STRATEGIES, [
        ("status.conditions", ListStrategy::MergeByKey("type")),
        ("status.addresses", ListStrategy::MergeByKey("type")),
        ("spec.podCIDRs", ListStrategy::MergePrimitives),
    ]),
    shapes: concat_slices!((&str, Shape); META_SHAPES, [
        ("spec", Shape::Object),
        ("spec.taints", Shape::ObjList),
        ("spec.taints[].key", Shape::Str),
        ("spec.taints[].value", Shape::Str),
        ("spec.taints[].effect", Shape::Str),
        ("spec.unschedulable", Shape::Bool),
        ("spec.podCIDR", Shape::Str),
        ("spec.podCIDRs", Shape::StrList),
        ("spec.providerID", Shape::Str),
        ("status", Shape::Object),
        ("status.conditions", Shape::ObjList),
        ("status.conditions[].type", Shape::Str),
        ("status.conditions[].status", Shape::Str),
        ("status.conditions[].reason", Shape::Str),
        ("status.conditions[].message", Shape::Str),
        ("status.conditions[].lastHeartbeatTime", Shape::Str),
        ("status.conditions[].lastTransitionTime", Shape::Str),
        ("status.addresses", Shape::ObjList),
        ("status.addresses[].type", Shape::Str),
        ("status.addresses[].address", Shape::Str),
        ("status.capacity", Shape::StrMap),
        ("status.allocatable", Shape::StrMap),
    ]),
};

/// core/v1 Pod.
pub static PODS: Resource = Resource {
    group: "",
    version: "v1",
    plural: "pods",
    singular: "pod",
    kind: "Pod",
    namespaced: true,
    status_subresource: true,
    create_on_update: false,
    generation: true,
    return_deleted_object: true,
    field_labels: &[
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ],
    short_names: &["po"],
    list_strategies: concat_slices!((&str, ListStrategy); META_STRATEGIES, [
        ("spec.containers", ListStrategy::MergeByKey("name")),
        ("spec.initContainers", ListStrategy::MergeByKey("name")),
        ("spec.ephemeralContainers", ListStrategy::MergeByKey("name")),
        ("spec.containers[].env", ListStrategy::MergeByKey("name")),
        ("spec.containers[].ports", ListStrategy::MergeByKey("containerPort")),
        ("spec.containers[].volumeMounts", ListStrategy::MergeByKey("mountPath")),
        ("spec.initContainers[].env", ListStrategy::MergeByKey("name")),
        ("spec.volumes", ListStrategy::MergeByKey("name")),
        ("spec.imagePullSecrets", ListStrategy::MergeByKey("name")),
        ("status.conditions", ListStrategy::MergeByKey("type")),
        ("status.podIPs", ListStrategy::MergeByKey("ip")),
    ]),
    shapes: concat_slices!((&str, Shape); META_SHAPES, [
        ("spec", Shape::Object),
        ("spec.nodeName", Shape::Str),
        ("spec.containers", Shape::ObjList),
        ("spec.containers[].name", Shape::Str),
        ("spec.containers[].image", Shape::Str),
        ("spec.tolerations", Shape::ObjList),
        ("spec.tolerations[].key", Shape::Str),
        ("spec.tolerations[].operator", Shape::Str),
        ("spec.tolerations[].value", Shape::Str),
        ("spec.tolerations[].effect", Shape::Str),
        ("spec.tolerations[].tolerationSeconds", Shape::Int),
        ("spec.terminationGracePeriodSeconds", Shape::Int),
        ("spec.priority", Shape::Int),
        ("spec.hostNetwork", Shape::Bool),
        ("status", Shape::Object),
        ("status.phase", Shape::Str),
        ("status.conditions", Shape::ObjList),
        ("status.conditions[].type", Shape::Str),
        ("status.conditions[].status", Shape::Str),
    ]),
};

/// coordination.k8s.io/v1 Lease.
pub static LEASES: Resource = Resource {
    group: "coordination.k8s.io",
    version: "v1",
    plural: "leases",
    singular: "lease",
    kind: "Lease",
    namespaced: true,
    status_subresource: false,
    create_on_update: false,
    generation: false,
    return_deleted_object: false,
    field_labels: &["metadata.name", "metadata.namespace"],
    short_names: &[],
    list_strategies: &META_STRATEGIES,
    shapes: concat_slices!((&str, Shape); META_SHAPES, [
        ("spec", Shape::Object),
        ("spec.holderIdentity", Shape::Str),
        ("spec.leaseDurationSeconds", Shape::Int),
        ("spec.acquireTime", Shape::Str),
        ("spec.renewTime", Shape::Str),
        ("spec.leaseTransitions", Shape::Int),
    ]),
};

/// core/v1 Event.
pub static EVENTS: Resource = Resource {
    group: "",
    version: "v1",
    plural: "events",
    singular: "event",
    kind: "Event",
    namespaced: true,
    status_subresource: false,
    create_on_update: true,
    generation: false,
    return_deleted_object: false,
    field_labels: &[
        "metadata.name",
        "metadata.namespace",
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ],
    short_names: &["ev"],
    list_strategies: &META_STRATEGIES,
    shapes: concat_slices!((&str, Shape); META_SHAPES, [
        ("involvedObject", Shape::Object),
        ("involvedObject.kind", Shape::Str),
        ("involvedObject.name", Shape::Str),
        ("involvedObject.namespace", Shape::Str),
        ("involvedObject.uid", Shape::Str),
        ("reason", Shape::Str),
        ("message", Shape::Str),
        ("type", Shape::Str),
        ("count", Shape::Int),
        ("source", Shape::Object),
        ("source.component", Shape::Str),
        ("source.host", Shape::Str),
    ]),
};

/// discovery.k8s.io/v1 EndpointSlice. No status, no patch strategies on its lists
/// (`endpoints` and `ports` are atomic lists upstream).
pub static ENDPOINT_SLICES: Resource = Resource {
    group: "discovery.k8s.io",
    version: "v1",
    plural: "endpointslices",
    singular: "endpointslice",
    kind: "EndpointSlice",
    namespaced: true,
    status_subresource: false,
    create_on_update: false,
    generation: true,
    return_deleted_object: false,
    field_labels: &["metadata.name", "metadata.namespace"],
    short_names: &[],
    list_strategies: &META_STRATEGIES,
    shapes: concat_slices!((&str, Shape); META_SHAPES, [
        ("addressType", Shape::Str),
        ("endpoints", Shape::ObjList),
        ("endpoints[].addresses", Shape::StrList),
        ("endpoints[].conditions", Shape::Object),
        ("endpoints[].conditions.ready", Shape::Bool),
        ("endpoints[].conditions.serving", Shape::Bool),
        ("endpoints[].conditions.terminating", Shape::Bool),
        ("endpoints[].hostname", Shape::Str),
        ("endpoints[].nodeName", Shape::Str),
        ("endpoints[].zone", Shape::Str),
        ("endpoints[].targetRef", Shape::Object),
        ("endpoints[].deprecatedTopology", Shape::StrMap),
        ("endpoints[].hints", Shape::Object),
        ("endpoints[].hints.forZones", Shape::ObjList),
        ("endpoints[].hints.forZones[].name", Shape::Str),
        ("ports", Shape::ObjList),
        ("ports[].name", Shape::Str),
        ("ports[].port", Shape::Int32),
        ("ports[].protocol", Shape::Str),
        ("ports[].appProtocol", Shape::Str),
    ]),
};

/// Every served resource.
pub static ALL: [&Resource; 5] = [&NODES, &PODS, &LEASES, &EVENTS, &ENDPOINT_SLICES];

impl Resource {
    /// `apiVersion` of its objects (`v1`, `coordination.k8s.io/v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Group-qualified resource as error messages print it (`nodes`, `leases.coordination.k8s.io`).
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// Group-qualified kind as Invalid messages print it (`Node`, `Lease.coordination.k8s.io`).
    pub fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.to_string()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// The list strategy at a dotted path.
    pub fn list_strategy(&self, path: &str) -> ListStrategy {
        self.list_strategies
            .iter()
            .find(|(p, _)| *p == path)
            .map_or(ListStrategy::Replace, |(_, s)| *s)
    }

    /// The known shape at a dotted path.
    pub fn shape(&self, path: &str) -> Option<Shape> {
        self.shapes
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, s)| *s)
    }

    /// Look a resource up by group, version and plural.
    pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static Resource> {
        ALL.iter()
            .copied()
            .find(|r| r.group == group && r.version == version && r.plural == plural)
    }
}
