//! The watch keeps only what is read (issue 12): realistic Pods and a realistic Node, decoded as
//! the watches decode them (`api::slim`), hold no field outside an explicit allow-list, and every
//! reader (the fence's conversions, `status`'s snapshot, the reporter's other-writer check, the
//! quorum's zone) sees the same thing in the compact object as in the whole one. The pod watch
//! lists in pages, end to end against the API test server.

#[path = "support/apiserver/mod.rs"]
mod apiserver;
#[path = "support/realistic.rs"]
mod realistic;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Node;
use nodewarden::agent::{fence_task, quorum, reporter, snapshot};
use nodewarden::api::slim::{SlimNode, SlimPod};
use nodewarden::core::fence_plan::FencePod;
use nodewarden::core::resources::Effective;
use serde_json::Value;

const NODE: &str = "n1";

/// A path pattern: object keys, `[]` for any list item, `*` for any key of a free-form map.
type Pattern = &'static [&'static str];

/// `apiVersion` and `kind` are constants of the API types (written when serialised, never
/// stored).
const POD_ALLOWED: &[Pattern] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata", "name"],
    &["metadata", "namespace"],
    &["metadata", "uid"],
    &["metadata", "resourceVersion"],
    // The fence counts a pod created on a tainted Node from its creation (`FencePod::created`).
    &["metadata", "creationTimestamp"],
    &["metadata", "annotations", "kubernetes.io/config.mirror"],
    &["metadata", "annotations", "kubernetes.io/config.source"],
    &["metadata", "annotations", "nodewarden.io/fence"],
    &["metadata", "ownerReferences", "[]", "kind"],
    &["metadata", "ownerReferences", "[]", "controller"],
    &["spec", "tolerations", "[]", "key"],
    &["spec", "tolerations", "[]", "operator"],
    &["spec", "tolerations", "[]", "value"],
    &["spec", "tolerations", "[]", "effect"],
    &["spec", "tolerations", "[]", "tolerationSeconds"],
    &["spec", "terminationGracePeriodSeconds"],
    &["spec", "containers", "[]", "name"],
    &["spec", "containers", "[]", "restartPolicy"],
    &["spec", "containers", "[]", "resources", "requests", "*"],
    &["spec", "containers", "[]", "resources", "limits", "*"],
    &["spec", "initContainers", "[]", "name"],
    &["spec", "initContainers", "[]", "restartPolicy"],
    &["spec", "initContainers", "[]", "resources", "requests", "*"],
    &["spec", "initContainers", "[]", "resources", "limits", "*"],
    &["spec", "resources", "requests", "*"],
    &["spec", "resources", "limits", "*"],
    &["spec", "overhead", "*"],
    &["status", "phase"],
    &["status", "qosClass"],
    // Only for a pod resized in place, and only the statuses that change its count.
    &["status", "conditions", "[]", "type"],
    &["status", "conditions", "[]", "status"],
    &["status", "conditions", "[]", "reason"],
    &["status", "containerStatuses", "[]", "name"],
    &[
        "status",
        "containerStatuses",
        "[]",
        "resources",
        "requests",
        "*",
    ],
    &[
        "status",
        "containerStatuses",
        "[]",
        "resources",
        "limits",
        "*",
    ],
    &[
        "status",
        "containerStatuses",
        "[]",
        "allocatedResources",
        "*",
    ],
    &["status", "initContainerStatuses", "[]", "name"],
    &[
        "status",
        "initContainerStatuses",
        "[]",
        "resources",
        "requests",
        "*",
    ],
    &[
        "status",
        "initContainerStatuses",
        "[]",
        "resources",
        "limits",
        "*",
    ],
    &[
        "status",
        "initContainerStatuses",
        "[]",
        "allocatedResources",
        "*",
    ],
];

const NODE_ALLOWED: &[Pattern] = &[
    &["apiVersion"],
    &["kind"],
    &["metadata", "name"],
    &["metadata", "uid"],
    &["metadata", "resourceVersion"],
    &["metadata", "labels", "topology.kubernetes.io/zone"],
    &["metadata", "labels", "topology.kubernetes.io/region"],
    &[
        "metadata",
        "labels",
        "failure-domain.beta.kubernetes.io/zone",
    ],
    &[
        "metadata",
        "labels",
        "failure-domain.beta.kubernetes.io/region",
    ],
    &[
        "metadata",
        "labels",
        "node.kubernetes.io/exclude-disruption",
    ],
    &["metadata", "managedFields", "[]", "manager"],
    &["metadata", "managedFields", "[]", "subresource"],
    &[
        "metadata",
        "managedFields",
        "[]",
        "fieldsV1",
        "f:status",
        "f:conditions",
        "*",
    ],
    &["spec", "taints", "[]", "key"],
    &["spec", "taints", "[]", "value"],
    &["spec", "taints", "[]", "effect"],
    &["spec", "taints", "[]", "timeAdded"],
    &["status", "conditions", "[]", "type"],
    &["status", "conditions", "[]", "status"],
    &["status", "conditions", "[]", "reason"],
    &["status", "conditions", "[]", "message"],
    &["status", "conditions", "[]", "lastHeartbeatTime"],
    &["status", "conditions", "[]", "lastTransitionTime"],
    &["status", "allocatable", "*"],
];

/// Every leaf of `v` (an empty object or list counts as one; an empty string is a required
/// field of an API type left empty, holding nothing) as its path.
fn leaves(v: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                path.push(k.clone());
                leaves(v, path, out);
                path.pop();
            }
        }
        Value::Array(a) if !a.is_empty() => {
            path.push("[]".into());
            for v in a {
                leaves(v, path, out);
            }
            path.pop();
        }
        Value::String(s) if s.is_empty() => {}
        _ => out.push(path.clone()),
    }
}

fn allowed(path: &[String], allow: &[Pattern]) -> bool {
    allow.iter().any(|p| {
        p.len() == path.len()
            && p.iter()
                .zip(path)
                .all(|(p, s)| *p == "*" || *p == s.as_str())
    })
}

/// The paths of `v` outside `allow`.
fn outside(v: &Value, allow: &[Pattern]) -> Vec<String> {
    let mut all = Vec::new();
    leaves(v, &mut Vec::new(), &mut all);
    assert!(!all.is_empty(), "nothing kept at all: {v}");
    all.into_iter()
        .filter(|p| !allowed(p, allow))
        .map(|p| p.join("."))
        .collect()
}

#[test]
fn realistic_pods_are_several_kilobytes_of_json() {
    // The issue measured about 6.4 KB; these, with every part it names, are about 9 KB.
    for (shape, pod) in realistic::pod_shapes(NODE) {
        let len = pod.to_string().len();
        assert!((6_000..12_000).contains(&len), "{shape}: {len} bytes");
    }
    let len = realistic::node(NODE).to_string().len();
    assert!((8_000..16_000).contains(&len), "node: {len} bytes");
    // The harness's shapes (issue 25): each at least as heavy as the measured pods (6.4 KB),
    // and each heavier one adds what it is named after.
    let len = |shape: &str| {
        realistic::shaped_pod(shape, 3, NODE)
            .expect(shape)
            .to_string()
            .len()
    };
    for shape in realistic::SHAPES {
        assert!(len(shape) >= 6_400, "{shape}: {} bytes", len(shape));
    }
    assert!(len("heavy") > len("realistic") + 24 * 25);
    for shape in ["sidecars", "last-applied", "tolerations"] {
        assert!(len(shape) > len("heavy") + 1_500, "{shape}: {}", len(shape));
    }
    assert!(realistic::shaped_pod("no such shape", 0, NODE).is_none());
}

#[test]
fn the_pod_cache_keeps_no_field_outside_the_allow_list() {
    for (shape, full) in realistic::pod_shapes(NODE) {
        let slim: SlimPod = serde_json::from_value(full.clone()).expect(shape);
        let kept = serde_json::to_value(&slim).expect("serialise");
        assert_eq!(outside(&kept, POD_ALLOWED), Vec::<String>::new(), "{shape}");
        // The fence's conversions read this compact pod itself (no API Pod is rebuilt from it),
        // so what they are handed is what was checked above.
        let (full_len, kept_len) = (full.to_string().len(), kept.to_string().len());
        assert!(
            kept_len * 5 < full_len,
            "{shape}: kept {kept_len} of {full_len} bytes"
        );
    }
}

#[test]
fn the_allow_list_guard_catches_a_kept_field() {
    // The guard itself can fail: the whole pod has fields outside the list.
    let full = realistic::pod(0, NODE);
    let out = outside(&full, POD_ALLOWED);
    for field in [
        "metadata.managedFields.[].manager",
        "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration",
        "spec.containers.[].env.[].name",
        "spec.volumes.[].name",
        "status.containerStatuses.[].imageID",
        "metadata.labels.app",
    ] {
        assert!(
            out.iter().any(|p| p == field),
            "{field} not flagged in {out:?}"
        );
    }
}

/// `node.kubernetes.io/unreachable:NoExecute`, the one taint the fence plans for.
fn unreachable() -> nodewarden::core::taint::Taint {
    use nodewarden::core::taint::{Effect, Taint, keys};
    Taint::new(keys::UNREACHABLE, "", Effect::NoExecute)
}

fn not_ready() -> nodewarden::core::taint::Taint {
    use nodewarden::core::taint::{Effect, Taint, keys};
    Taint::new(keys::NOT_READY, "", Effect::NoExecute)
}

/// Every toleration of a pod's whole JSON, read by this test's own code.
fn all_tolerations(v: &Value) -> Vec<nodewarden::core::taint::Toleration> {
    use nodewarden::core::taint::{Effect, Operator, Toleration};
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    v["spec"]["tolerations"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| Toleration {
            key: text(&t["key"]),
            operator: Operator::parse(t["operator"].as_str().unwrap_or("")).expect("operator"),
            value: text(&t["value"]),
            effect: t["effect"]
                .as_str()
                .filter(|e| !e.is_empty())
                .map(|e| Effect::parse(e).expect("effect")),
            toleration_seconds: t["tolerationSeconds"].as_i64(),
        })
        .collect()
}

/// What the fence and `status` must see of a pod, read from its whole JSON by this test's own
/// code: an oracle that shares no reading code with the agent's conversions (the QoS and
/// effective-resource arithmetic are the core's, tested on their own).
fn read_whole(v: &Value) -> (FencePod, Effective) {
    use nodewarden::core::qos::{self, QosClass};
    use nodewarden::core::quantity::Quantity;
    use nodewarden::core::resources::{
        self, ContainerAmounts, PodAmounts, ResourceList, StatusAmounts,
    };
    let items = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let annotation = |k: &str| v["metadata"]["annotations"][k].as_str();
    // The fence keeps, in order, the tolerations that tolerate the unreachable or the not-ready
    // taint (the core's matcher, tested on its own): the others can change no plan.
    let tolerations = all_tolerations(v)
        .into_iter()
        .filter(|t| t.tolerates(&unreachable()) || t.tolerates(&not_ready()))
        .collect();
    let list = |m: &Value| -> ResourceList {
        m.as_object()
            .into_iter()
            .flatten()
            .map(|(k, q)| (k.clone(), text(q).parse::<Quantity>().expect("quantity")))
            .collect()
    };
    // Every status, as upstream's `PodRequests` with `UseStatusResources` reads them: matched
    // to its container by name, read where it reports `resources`.
    let statuses: Vec<Value> = items(&v["status"]["containerStatuses"])
        .into_iter()
        .chain(items(&v["status"]["initContainerStatuses"]))
        .collect();
    let container = |c: &Value| ContainerAmounts {
        requests: list(&c["resources"]["requests"]),
        limits: list(&c["resources"]["limits"]),
        sidecar: c["restartPolicy"] == "Always",
        status: statuses
            .iter()
            .rev()
            .find(|s| s["name"] == c["name"] && s.get("resources").is_some())
            .map(|s| StatusAmounts {
                requests: list(&s["resources"]["requests"]),
                limits: list(&s["resources"]["limits"]),
                allocated: list(&s["allocatedResources"]),
            }),
    };
    let resize_infeasible = items(&v["status"]["conditions"])
        .iter()
        .find(|c| c["type"] == "PodResizePending")
        .is_some_and(|c| c["reason"] == "Infeasible");
    let nanos = |l: &ResourceList, k: &str| l.get(k).map_or(0, |q| q.as_nanos());
    let all: Vec<Value> = items(&v["spec"]["initContainers"])
        .into_iter()
        .chain(items(&v["spec"]["containers"]))
        .collect();
    let qos = v["status"]["qosClass"]
        .as_str()
        .map(|q| QosClass::parse(q).expect("qos class"))
        .unwrap_or_else(|| {
            let each: Vec<qos::ContainerResources> = all
                .iter()
                .map(|c| {
                    let a = container(c);
                    qos::ContainerResources {
                        requests: qos::CpuMemory {
                            cpu: nanos(&a.requests, "cpu"),
                            memory: nanos(&a.requests, "memory"),
                        },
                        limits: qos::CpuMemory {
                            cpu: nanos(&a.limits, "cpu"),
                            memory: nanos(&a.limits, "memory"),
                        },
                    }
                })
                .collect();
            qos::compute_qos(&each)
        });
    let pod = FencePod {
        uid: text(&v["metadata"]["uid"]),
        namespace: text(&v["metadata"]["namespace"]),
        name: text(&v["metadata"]["name"]),
        tolerations,
        termination_grace_seconds: v["spec"]["terminationGracePeriodSeconds"]
            .as_i64()
            .unwrap_or(30),
        owner_kind: items(&v["metadata"]["ownerReferences"])
            .iter()
            .find(|o| o["controller"] == true)
            .map(|o| text(&o["kind"])),
        static_or_mirror: annotation("kubernetes.io/config.mirror").is_some()
            || annotation("kubernetes.io/config.source").is_some_and(|s| s != "api"),
        qos,
        opted_out: matches!(
            annotation("nodewarden.io/fence"),
            Some("false" | "disabled")
        ),
        terminal: matches!(v["status"]["phase"].as_str(), Some("Succeeded" | "Failed")),
        created: v["metadata"]["creationTimestamp"]
            .as_str()
            .and_then(|t| humantime::parse_rfc3339(t).ok()),
    };
    let amounts = PodAmounts {
        containers: items(&v["spec"]["containers"])
            .iter()
            .map(container)
            .collect(),
        init_containers: items(&v["spec"]["initContainers"])
            .iter()
            .map(container)
            .collect(),
        overhead: list(&v["spec"]["overhead"]),
        pod_requests: list(&v["spec"]["resources"]["requests"]),
        pod_limits: list(&v["spec"]["resources"]["limits"]),
        resize_infeasible,
    };
    (pod, resources::effective(&amounts))
}

#[test]
fn the_fence_and_status_see_the_same_pod_stripped() {
    let mut fenced = 0;
    // Four of each shape: `resizing` varies with the pod's index.
    let heavy = realistic::SHAPES
        .iter()
        .flat_map(|s| (8..12).map(move |i| (*s, realistic::shaped_pod(s, i, NODE).expect(s))));
    for (shape, full_json) in realistic::pod_shapes(NODE).into_iter().chain(heavy) {
        let (want_pod, want_resources) = read_whole(&full_json);
        let slim: SlimPod = serde_json::from_value(full_json).expect(shape);
        let got = fence_task::fence_pod(&slim);
        assert_eq!(got.as_ref(), Some(&want_pod), "{shape}");
        fenced += usize::from(got.is_some());
        assert_eq!(
            snapshot::pod_resources(&slim),
            Ok(want_resources),
            "{shape}"
        );
    }
    assert_eq!(
        fenced,
        6 + 4 * realistic::SHAPES.len(),
        "every shape converts"
    );
}

/// Since 1.35 every running container reports `resources` and `allocatedResources`; the cache
/// keeps a status only where it changes the pod's count (issue 27 item 3, issue 25's memory).
#[test]
fn only_a_resize_that_changes_the_count_keeps_container_statuses() {
    let decode = |shape: &str, i: usize| -> SlimPod {
        let full = realistic::shaped_pod(shape, i, NODE).expect(shape);
        assert!(
            full["status"]["containerStatuses"][0]["resources"].is_object(),
            "{shape} {i}: the kubelet reports resources"
        );
        serde_json::from_value(full).expect(shape)
    };
    for shape in [
        "realistic",
        "heavy",
        "sidecars",
        "last-applied",
        "tolerations",
    ] {
        for i in 0..4 {
            let slim = decode(shape, i);
            let status = slim.status.as_ref().expect("status");
            assert_eq!(status.resize, None, "{shape} {i}: equal to the spec");
        }
    }
    let cpu = |slim: &SlimPod| {
        snapshot::pod_resources(slim).expect("resources").requests["cpu"].to_string()
    };
    // app 100m resized (spec below), proxy 100m.
    for (i, kept, infeasible, count, spec_only) in [
        (0, true, false, "200m", "150m"), // downsize not applied: the actual 100m counts
        (1, true, true, "200m", "64100m"), // Infeasible: the spec's 64 is not counted
        (2, false, false, "1100m", "1100m"), // Deferred upsize: the spec is the larger
        (3, false, false, "200m", "200m"),
    ] {
        let slim = decode("resizing", i);
        // Kept as the status fields it came from, and nothing else of them.
        let json = serde_json::to_value(&slim).expect("serialise");
        assert_eq!(outside(&json, POD_ALLOWED), Vec::<String>::new(), "{i}");
        let again: SlimPod = serde_json::from_value(json).expect("decode again");
        assert_eq!(
            again, slim,
            "resizing {i}: what is kept reads back the same"
        );
        let resize = slim.status.as_ref().and_then(|s| s.resize.as_deref());
        assert_eq!(resize.is_some(), kept, "resizing {i}");
        if let Some(r) = resize {
            assert_eq!(r.infeasible, infeasible, "resizing {i}");
            let names: Vec<&str> = r.containers.iter().map(|c| &*c.name).collect();
            assert_eq!(names, ["app"], "resizing {i}: the proxy is not resized");
        }
        assert_eq!(cpu(&slim), count, "resizing {i}");
        let mut without = slim.clone();
        if let Some(s) = without.status.as_mut() {
            s.resize = None;
        }
        assert_eq!(
            cpu(&without),
            spec_only,
            "resizing {i}: counted from the spec"
        );
    }
}

#[test]
fn the_shapes_differ_where_the_fence_looks() {
    // Each shape exercises what it is named after (else the equality above proves little).
    let conv: Vec<_> = realistic::pod_shapes(NODE)
        .into_iter()
        .map(|(_, v)| {
            let slim: SlimPod = serde_json::from_value(v).expect("decode");
            (
                fence_task::fence_pod(&slim).expect("converts"),
                snapshot::pod_resources(&slim).expect("resources"),
            )
        })
        .collect();
    let [deploy, sidecar, pod_level, mirror, daemon, tolerant] = &conv[..] else {
        panic!("six shapes");
    };
    assert_eq!(deploy.0.owner_kind.as_deref(), Some("ReplicaSet"));
    assert_ne!(sidecar.1, deploy.1, "the sidecar adds to the requests");
    assert_ne!(
        pod_level.1, deploy.1,
        "pod-level resources and overhead count"
    );
    assert_ne!(pod_level.0.qos, deploy.0.qos);
    assert!(mirror.0.static_or_mirror);
    assert_eq!(daemon.0.owner_kind.as_deref(), Some("DaemonSet"));
    assert!(daemon.0.opted_out && daemon.0.terminal);
    // Of its seven tolerations, the three that tolerate the unreachable or the not-ready taint
    // (`Exists` with no key, and each key's own), in order: the first of each decides.
    let kept: Vec<_> = tolerant.0.tolerations.iter().map(|t| &t.key[..]).collect();
    assert_eq!(
        kept,
        [
            "",
            "node.kubernetes.io/unreachable",
            "node.kubernetes.io/not-ready"
        ]
    );
    assert_eq!(tolerant.0.termination_grace_seconds, 120);
}

/// Only the tolerations that may tolerate `node.kubernetes.io/unreachable:NoExecute` or
/// `node.kubernetes.io/not-ready:NoExecute` are kept (issue 25: about 300 B each between the cache
/// and the fence's view), so the fence's plan is the one all of them give.
#[test]
fn only_tolerations_of_the_node_controllers_taints_are_kept() {
    use nodewarden::core::taint::{not_ready_delay, unreachable_delay};
    let unreachable = "node.kubernetes.io/unreachable";
    let cases = [
        (serde_json::json!({"operator": "Exists"}), true),
        (
            serde_json::json!({"operator": "Exists", "effect": "NoExecute"}),
            true,
        ),
        (
            serde_json::json!({"key": unreachable, "operator": "Exists"}),
            true,
        ),
        (
            serde_json::json!({"key": unreachable, "effect": "NoExecute"}),
            true,
        ),
        (
            serde_json::json!({"key": unreachable, "operator": "Equal", "value": "", "effect": "NoExecute", "tolerationSeconds": 5}),
            true,
        ),
        (
            serde_json::json!({"key": unreachable, "value": "x", "effect": "NoExecute"}),
            false,
        ),
        (
            serde_json::json!({"key": unreachable, "operator": "Exists", "effect": "NoSchedule"}),
            false,
        ),
        (
            serde_json::json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}),
            true,
        ),
        (
            serde_json::json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 9}),
            false,
        ),
        (
            serde_json::json!({"key": "node.kubernetes.io/not-ready", "operator": "Equal", "value": "x", "effect": "NoExecute"}),
            false,
        ),
        (
            serde_json::json!({"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoExecute"}),
            false,
        ),
        (
            serde_json::json!({"key": unreachable, "operator": "Lt", "value": "5", "effect": "NoExecute"}),
            false,
        ),
        (
            serde_json::json!({"operator": "Exists", "effect": "PreferNoSchedule"}),
            false,
        ),
    ];
    for (toleration, kept) in &cases {
        let mut pod = realistic::pod(1, NODE);
        pod["spec"]["tolerations"] = serde_json::json!([toleration]);
        let slim: SlimPod = serde_json::from_value(pod).expect("decode");
        let n = slim
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_ref())
            .map(Vec::len);
        assert_eq!(n, Some(usize::from(*kept)), "{toleration}");
    }
    // Unreadable ones stay, so the fence still leaves such a pod out.
    for unreadable in [
        serde_json::json!({"key": "k", "operator": "Sometimes"}),
        serde_json::json!({"key": "k", "operator": "Exists", "effect": "NoRun"}),
    ] {
        let mut pod = realistic::pod(1, NODE);
        pod["spec"]["tolerations"] =
            serde_json::json!([{"key": "a", "effect": "NoSchedule"}, unreadable]);
        let slim: SlimPod = serde_json::from_value(pod).expect("decode");
        let n = slim
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_ref())
            .map(Vec::len);
        assert_eq!(n, Some(1), "{unreadable}");
        assert_eq!(fence_task::fence_pod(&slim), None, "{unreadable}");
    }
    // Every shape, and all the cases in one pod in either order: the plan is the one all the
    // tolerations give.
    let mut all_cases = realistic::pod(2, NODE);
    all_cases["spec"]["tolerations"] = cases.iter().map(|(t, _)| t.clone()).collect();
    let mut reversed = all_cases.clone();
    reversed["spec"]["tolerations"] = cases.iter().rev().map(|(t, _)| t.clone()).collect();
    let shaped = realistic::SHAPES
        .iter()
        .map(|s| (*s, realistic::shaped_pod(s, 4, NODE).expect(s)));
    let mut delays = Vec::new();
    for (shape, full) in realistic::pod_shapes(NODE)
        .into_iter()
        .chain(shaped)
        .chain([("all cases", all_cases), ("all cases reversed", reversed)])
    {
        let all = all_tolerations(&full);
        let slim: SlimPod = serde_json::from_value(full).expect(shape);
        let fenced = fence_task::fence_pod(&slim).expect(shape);
        assert!(fenced.tolerations.len() <= all.len(), "{shape}");
        assert_eq!(
            unreachable_delay(&fenced.tolerations),
            unreachable_delay(&all),
            "{shape}"
        );
        assert_eq!(
            not_ready_delay(&fenced.tolerations),
            not_ready_delay(&all),
            "{shape}"
        );
        delays.push((unreachable_delay(&all), not_ready_delay(&all)));
    }
    // The comparison can fail: the two orders of the cases plan differently.
    let [.., forward, backward] = &delays[..] else {
        panic!("two at least");
    };
    assert_ne!(forward, backward);
    // The 32-toleration shape keeps the two admission added.
    let slim: SlimPod =
        serde_json::from_value(realistic::shaped_pod("tolerations", 0, NODE).expect("shape"))
            .expect("decode");
    let kept = slim.spec.and_then(|s| s.tolerations).unwrap_or_default();
    assert_eq!(kept.len(), 2, "{kept:?}");
}

#[test]
fn the_node_watch_keeps_no_field_outside_the_allow_list() {
    let full = realistic::node(NODE);
    let slim: SlimNode = serde_json::from_value(full.clone()).expect("decode");
    let kept = serde_json::to_value(slim.into_node()).expect("serialise");
    assert_eq!(outside(&kept, NODE_ALLOWED), Vec::<String>::new());
    assert!(!outside(&full, NODE_ALLOWED).is_empty());
    let (full_len, kept_len) = (full.to_string().len(), kept.to_string().len());
    assert!(
        kept_len * 4 < full_len,
        "kept {kept_len} of {full_len} bytes"
    );
}

#[test]
fn the_reporter_fence_and_quorum_see_the_same_node_stripped() {
    let full_json = realistic::node(NODE);
    let full: Node = serde_json::from_value(full_json.clone()).expect("decode");
    let slim = serde_json::from_value::<SlimNode>(full_json)
        .expect("decode")
        .into_node();
    assert_eq!(snapshot::node(&slim), snapshot::node(&full));
    assert_eq!(slim.metadata.uid, full.metadata.uid);
    assert_eq!(
        slim.metadata.resource_version,
        full.metadata.resource_version
    );
    let zone = |n: &Node| {
        n.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(quorum::ZONE_LABEL))
            .cloned()
    };
    assert_eq!(zone(&slim).as_deref(), Some("zone-a"));
    assert_eq!(zone(&slim), zone(&full));
    // The zone key (region and zone) is the same from both.
    let key = |n: &Node| nodewarden::core::zone::zone_key(n.metadata.labels.as_ref());
    assert_eq!(key(&slim), "eu-west-1/zone-a");
    assert_eq!(key(&slim), key(&full));
    // The taints the reporter rewrites are kept whole (timeAdded included).
    assert_eq!(
        slim.spec.as_ref().and_then(|s| s.taints.clone()),
        full.spec.as_ref().and_then(|s| s.taints.clone())
    );
    // What other-writer detection reads is the same in both: every condition whole (a change of
    // message or transition time is another writer's life too), and the managers of the
    // conditions (node-problem-detector on KernelDeadlock, the kubelet on DiskPressure).
    let want = reporter::observation(&full);
    let manager_of = |ty: &str| -> Vec<&str> {
        want.managers
            .iter()
            .filter(|m| m.condition_types.iter().any(|t| t == ty))
            .map(|m| m.manager.as_str())
            .collect()
    };
    assert!(
        manager_of("KernelDeadlock").contains(&"node-problem-detector"),
        "{want:?}"
    );
    assert!(manager_of("DiskPressure").contains(&"kubelet"), "{want:?}");
    assert!(
        want.conditions
            .iter()
            .all(|c| !c.message.is_empty() && c.last_transition_time.is_some()),
        "{want:?}"
    );
    assert_eq!(reporter::observation(&slim), want);
}

#[test]
fn malformed_kept_fields_are_errors_and_dropped_ones_are_not_read() {
    let mut pod = realistic::pod(0, NODE);
    // A field nobody reads may be anything: it is skipped unread.
    pod["spec"]["volumes"] = serde_json::json!("not a list");
    pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
        serde_json::json!({"an": ["object"]});
    assert!(serde_json::from_value::<SlimPod>(pod.clone()).is_ok());
    // A kept one is checked.
    pod["spec"]["tolerations"] = serde_json::json!("nope");
    let err = serde_json::from_value::<SlimPod>(pod).expect_err("tolerations are read");
    assert!(err.to_string().contains("invalid type"), "{err}");
    // null where a map or list may be.
    let mut pod = realistic::pod(1, NODE);
    pod["metadata"]["annotations"] = Value::Null;
    pod["metadata"]["ownerReferences"] = Value::Null;
    pod["spec"]["containers"][0]["resources"] = Value::Null;
    let slim: SlimPod = serde_json::from_value(pod).expect("nulls");
    assert!(slim.metadata.annotations.is_none() && slim.metadata.owner_references.is_none());
}

#[tokio::test(flavor = "current_thread")]
async fn the_pod_watch_lists_in_pages_and_fills_the_store() {
    for streaming in [true, false] {
        lists_and_fills(streaming).await;
    }
}

/// Against a server that serves streaming lists (`streaming`: one watch sends every pod) or not
/// (Kubernetes 1.33: pages of `PAGE_SIZE`).
async fn lists_and_fills(streaming: bool) {
    let server = apiserver::ApiServer::new();
    server.set_watch_list(streaming);
    server.create_namespace("shop");
    server.create_node(realistic::for_create(realistic::node(NODE)));
    let n = 250;
    for i in 0..n {
        server.create_pod(realistic::for_create(realistic::pod(i, NODE)));
    }
    // A pod on another node is not ours.
    server.create_pod(realistic::for_create(realistic::pod(n, "other")));
    let (node_tx, mut node_rx) = tokio::sync::watch::channel::<Option<Arc<Node>>>(None);
    let (_, contact) = tokio::sync::watch::channel(nodewarden::api::reachability::State::Unknown);
    let (views, run) = nodewarden::api::watch::start(
        server.client(),
        nodewarden::api::DEFAULT_REQUEST_TIMEOUT,
        NODE.into(),
        node_tx,
        contact,
    );
    let task = tokio::spawn(run);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while views.pods.state().len() < n || node_rx.borrow_and_update().is_none() {
        assert!(tokio::time::Instant::now() < deadline, "store never filled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    assert_eq!(views.pods.state().len(), n);
    for p in views.pods.state() {
        let kept = serde_json::to_value(&*p).expect("serialise");
        assert_eq!(outside(&kept, POD_ALLOWED), Vec::<String>::new());
        assert_eq!(p.spec.as_ref().map(|s| s.containers.len()), Some(2));
    }
    let node = node_rx.borrow().clone().expect("node");
    assert_eq!(
        node.metadata.labels.as_ref().map(|l| l.len()),
        Some(2),
        "only the zone key's labels (region and zone)"
    );
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/pods" && r.param("watch").is_none())
        .collect();
    let streamed: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/pods" && r.param("sendInitialEvents") == Some("true"))
        .collect();
    if streaming {
        assert_eq!(
            streamed.iter().map(|r| r.status).collect::<Vec<_>>(),
            [Some(200)],
            "one streaming list"
        );
        // A consistent read, as the pages are: no revision the API server's cache may lag.
        assert_eq!(streamed[0].param("resourceVersion"), None, "{streamed:?}");
        assert_eq!(
            streamed[0].param("resourceVersionMatch"),
            Some("NotOlderThan")
        );
        assert!(lists.is_empty(), "no page: {lists:?}");
        return;
    }
    assert_eq!(
        streamed.iter().map(|r| r.status).collect::<Vec<_>>(),
        [Some(422)],
        "asked once, refused, never again"
    );
    let limits: Vec<_> = lists
        .iter()
        .map(|r| r.param("limit").map(str::to_string))
        .collect();
    let page = nodewarden::api::watch::PAGE_SIZE as usize;
    assert!(n > 2 * page, "enough pods for three pages at least");
    assert_eq!(
        limits,
        vec![Some(page.to_string()); n.div_ceil(page)],
        "{lists:?}"
    );
    assert!(lists[0].param("continue").is_none());
    assert!(lists[1..].iter().all(|r| r.param("continue").is_some()));
}

/// The agent's client bounds its read buffers to `api::READ_BUFFER_MAX` (issue 25): list pages
/// and a watch event many times that size still arrive whole, over real HTTP on loopback.
#[tokio::test(flavor = "current_thread")]
async fn responses_larger_than_the_read_buffer_arrive_whole() {
    for streaming in [true, false] {
        larger_than_the_buffer(streaming).await;
    }
}

/// The pods' initial state by one streaming list (`streaming`) or in pages.
async fn larger_than_the_buffer(streaming: bool) {
    let server = apiserver::ApiServer::new();
    server.set_watch_list(streaming);
    server.create_namespace("shop");
    server.create_node(realistic::for_create(realistic::node(NODE)));
    let n = 30;
    let blob = |len: usize| Value::from("x".repeat(len));
    let mut names = Vec::new();
    for i in 0..n {
        let mut pod = realistic::shaped_pod("heavy", i, NODE).expect("heavy");
        if i == 7 {
            // One pod alone larger than the buffer many times over.
            pod["metadata"]["annotations"]["example.com/blob"] = blob(400_000);
        }
        names.push(
            pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
        server.create_pod(realistic::for_create(pod));
    }
    let lb = server.serve_loopback();
    let dir = tempfile::tempdir().expect("tempdir");
    let client = nodewarden::api::connect(Some(&lb.write_kubeconfig(dir.path())))
        .await
        .expect("client");
    let (node_tx, _node_rx) = tokio::sync::watch::channel::<Option<Arc<Node>>>(None);
    let (_, contact) = tokio::sync::watch::channel(nodewarden::api::reachability::State::Unknown);
    let (views, run) = nodewarden::api::watch::start(
        client,
        nodewarden::api::DEFAULT_REQUEST_TIMEOUT,
        NODE.into(),
        node_tx,
        contact,
    );
    let task = tokio::spawn(run);
    poll_until("the store never filled", || views.pods.state().len() == n).await;
    let sizes: Vec<usize> = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/pods" && r.param("watch").is_none())
        .filter_map(|r| r.response_size)
        .collect();
    let buffer = nodewarden::api::READ_BUFFER_MAX;
    let page = nodewarden::api::watch::PAGE_SIZE as usize;
    if streaming {
        // Every pod came as an event of the watch, pod 7's alone many buffers long.
        assert!(sizes.is_empty(), "pages: {sizes:?}");
    } else {
        assert_eq!(sizes.len(), n.div_ceil(page), "pages: {sizes:?}");
        // The first page is also larger than hyper's default buffer (about 400 KB).
        assert!(sizes.iter().all(|s| *s > 3 * buffer), "{sizes:?}");
        assert!(sizes[0] > 500_000, "{sizes:?}");
    }
    // A watch event of the same size: the pod gains a toleration the fence keeps.
    let tolerations = |name: &str| {
        views
            .pods
            .state()
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
            .and_then(|p| p.spec.as_ref()?.tolerations.as_ref().map(Vec::len))
    };
    let before = tolerations(&names[7]).expect("pod 7 and its tolerations");
    server
        .update_pod_as("kube-controller-manager", "shop", &names[7], |o| {
            o["metadata"]["annotations"]["example.com/blob"] = blob(350_000);
            if let Some(ts) = o["spec"]["tolerations"].as_array_mut() {
                ts.push(serde_json::json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 900}));
            }
        })
        .expect("update");
    poll_until("the watch event never arrived", || {
        tolerations(&names[7]) == Some(before + 1)
    })
    .await;
    task.abort();
}

/// Polls `done` every 20 ms; fails with `what` after 30 s.
async fn poll_until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The fence writes its state from borrowed data, streamed into the file (issue 12): the file
/// must be byte for byte the one the owned [`State`] gives through `state::save`, for realistic
/// pods of every shape and every other field set.
#[test]
fn the_streamed_state_file_is_the_one_the_owned_state_gives() {
    use nodewarden::agent::quorum::QuorumView;
    use nodewarden::core::event::PendingEvent;
    use nodewarden::core::quorum::{Peer, Verdict};
    use nodewarden::state::{
        self, State, StoredCondition, StoredNode, StoredPeer, StoredPod, StoredTaint,
    };

    let mut writer: kube::runtime::reflector::store::Writer<SlimPod> = Default::default();
    let mut n = 0;
    for (_, v) in realistic::pod_shapes(NODE) {
        let pod: SlimPod = serde_json::from_value(v).expect("a realistic shape decodes");
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(pod));
        n += 1;
    }
    for i in 0..20 {
        let pod: SlimPod = serde_json::from_value(realistic::pod(1000 + i, NODE))
            .expect("a realistic pod decodes");
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(pod));
        n += 1;
    }
    let (pods, mut resources) =
        fence_task::convert_pods(&writer.as_reader(), &mut Default::default());
    assert_eq!(pods.len(), n, "every pod converts");
    assert!(
        resources
            .values()
            .any(|e| !e.requests.is_empty() && !e.limits.is_empty()),
        "some pods have requests and limits"
    );
    // One pod without known resources: stored with empty maps.
    let missing = pods[0].uid.clone();
    resources.remove(&missing);

    let fenced: std::collections::BTreeSet<String> =
        [pods[1].uid.clone(), pods[2].uid.clone()].into();
    let event = |reason: &str| PendingEvent {
        reason: reason.into(),
        message: format!("{reason} on \"{NODE}\" \u{2014} with quotes and a dash"),
        warning: true,
        at: state::parse_time("2027-01-15T08:00:00.000000001Z").expect("time"),
    };
    let fence_events = vec![event("NodewardenFenced")];
    let condition_events = vec![event("NodeHasDiskPressure"), event("NodeHasNoDiskPressure")];
    let decided = vec![StoredCondition {
        type_: "DiskPressure".into(),
        status: "True".into(),
        reason: "KubeletHasDiskPressure".into(),
        message: "kubelet has disk pressure".into(),
        last_transition_time: Some("2027-01-15T07:59:00Z".into()),
    }];
    let node_status = StoredNode {
        conditions: decided.clone(),
        taints: vec![StoredTaint {
            key: "node.kubernetes.io/disk-pressure".into(),
            value: String::new(),
            effect: "NoSchedule".into(),
            time_added: None,
        }],
        allocatable: [("cpu".to_string(), "2".to_string())].into(),
        swapped_from: None,
    };
    let quorum = QuorumView {
        zone: Some("zone-a".into()),
        excluded: false,
        peers: vec![Peer {
            node: "n2".into(),
            address: "10.0.0.2:10260".parse().expect("address"),
            zone: "zone-a".into(),
        }],
        verdict: Some(Verdict::Hold {
            reason: "peers reach the API server".into(),
        }),
        held_at: Some((tokio::time::Instant::now(), SystemTime::now())),
        held_from: Some((tokio::time::Instant::now(), SystemTime::now())),
        stop_due_tolerated: None,
        kubelet_renewed: None,
        kubelet_read: None,
        untainted_at: None,
        tainted_read: false,
        node_reads: Default::default(),
        // Written as `peersRead`, the streamed write as the owned one.
        server_reads: nodewarden::core::quorum::ServerReads {
            ever: true,
            unread: false,
        },
        leader_reads: Default::default(),
        pods_read: None,
        node_path: Default::default(),
    };
    let contact = SystemTime::UNIX_EPOCH + Duration::new(1_800_000_000, 123_456_789);
    let cut_off = contact + Duration::from_secs(15);
    let scale = nodewarden::core::clock::Scale {
        boot: 0x6b0f_d2c0_a1b2_4e6f_9c3d_2e1f_00aa_11bb,
        wall_minus_boot_ns: 1_799_990_000_000_000_000,
    };

    let streamed = tempfile::tempdir().expect("tempdir");
    fence_task::persist(
        streamed.path(),
        NODE,
        Some(contact),
        fence_task::stored_pods(&pods, &resources),
        Some(&node_status),
        &fenced,
        fence_task::Held {
            fence_events: &fence_events,
            condition_events: &condition_events,
            decided: &decided,
            quorum: &quorum,
            cut_off_since: Some(cut_off),
            counted_before: None,
            wall_scale: Some(scale),
        },
    )
    .expect("the streamed write");

    let owned = State {
        version: state::VERSION,
        node: NODE.into(),
        last_contact: Some(state::format_time(contact)),
        pods: pods
            .iter()
            .map(|p| StoredPod {
                pod: p.clone(),
                resources: resources.get(&p.uid).cloned().unwrap_or_default(),
            })
            .collect(),
        fenced: fenced.iter().cloned().collect(),
        pending_events: fence_events.clone(),
        node_status: Some(node_status.clone()),
        condition_events: condition_events.clone(),
        decided: decided.clone(),
        zone: quorum.zone.clone(),
        peers: quorum.peers.iter().map(StoredPeer::from_peer).collect(),
        quorum: quorum.stored(),
        cut_off_since: Some(state::format_time(cut_off)),
        counted_from: None,
        wall_scale: Some(scale.to_text()),
        peers_read: true,
        unanswered: None,
    };
    let copied = tempfile::tempdir().expect("tempdir");
    state::save(copied.path(), &owned).expect("the owned write");

    let read = |d: &tempfile::TempDir| {
        std::fs::read(d.path().join(state::STATE_FILE)).expect("the state file")
    };
    let (a, b) = (read(&streamed), read(&copied));
    assert!(
        a == b,
        "the streamed file differs from the owned one:\n{}\n---\n{}",
        String::from_utf8_lossy(&a),
        String::from_utf8_lossy(&b)
    );
    // And both are what format 4 always was: the pretty JSON of the owned state.
    assert_eq!(b, serde_json::to_vec_pretty(&owned).expect("encode"));
    match state::load(streamed.path(), None) {
        state::Loaded::Found(s) => assert_eq!(*s, owned),
        other => panic!("the streamed file does not load: {other:?}"),
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(streamed.path().join(state::STATE_FILE))
            .expect("metadata")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

/// A relist (issue 25) is applied to the pod store in place: the pods it lists unchanged stay
/// the very objects stored (so neither the store nor the fence holds a second copy of every
/// pod, and the fence converts none of them again), a changed pod is replaced, a new one added
/// as it comes, and the pods it did not list are removed when it ends — never before.
#[test]
fn a_relist_is_applied_in_place_keeping_the_unchanged_pods() {
    use kube::runtime::reflector::{self, ObjectRef};
    use kube::runtime::watcher::Event;
    use nodewarden::api::watch::PodWriter;

    let (store, writer) = reflector::store::<SlimPod>();
    let mut w = PodWriter::new(writer);
    let pods: Vec<SlimPod> = (0..6)
        .map(|i| serde_json::from_value(realistic::pod(i, NODE)).expect("pod"))
        .collect();
    let key = |p: &SlimPod| {
        ObjectRef::<SlimPod>::new(p.metadata.name.as_deref().unwrap_or_default()).within("shop")
    };
    w.apply(&Event::Init);
    for p in &pods[..5] {
        w.apply(&Event::InitApply(p.clone()));
    }
    w.apply(&Event::InitDone);
    assert_eq!(store.state().len(), 5);
    let first: Vec<Arc<SlimPod>> = pods[..5]
        .iter()
        .map(|p| store.get(&key(p)).expect("listed"))
        .collect();

    // Pod 1 changed, pod 2 gone, pod 5 new.
    let mut changed = pods[1].clone();
    changed.metadata.resource_version = Some("900001".into());
    if let Some(spec) = changed.spec.as_mut() {
        spec.termination_grace_period_seconds = Some(5);
    }
    w.apply(&Event::Init);
    for p in [&pods[0], &changed, &pods[3], &pods[4], &pods[5]] {
        w.apply(&Event::InitApply(p.clone()));
    }
    assert_eq!(
        store.state().len(),
        6,
        "nothing removed before the list ends"
    );
    w.apply(&Event::InitDone);

    assert_eq!(store.state().len(), 5);
    for i in [0, 3, 4] {
        let now = store.get(&key(&pods[i])).expect("still there");
        assert!(
            Arc::ptr_eq(&now, &first[i]),
            "pod {i} is the object stored before"
        );
    }
    assert_eq!(store.get(&key(&pods[1])).as_deref(), Some(&changed));
    assert!(
        store.get(&key(&pods[2])).is_none(),
        "the pod not listed is gone"
    );
    assert_eq!(store.get(&key(&pods[5])).as_deref(), Some(&pods[5]));

    // Watch events in between are applied as they come.
    w.apply(&Event::Delete(pods[5].clone()));
    assert!(store.get(&key(&pods[5])).is_none());
}

/// The fence converts again only the pods the store replaced, and ends up exactly where a whole
/// conversion of the store would, saying whether anything it keeps changed.
#[test]
fn a_refresh_converts_only_replaced_pods_and_matches_a_whole_conversion() {
    use kube::runtime::watcher::Event;
    use nodewarden::agent::fence_task::Converted;

    let mut writer: kube::runtime::reflector::store::Writer<SlimPod> = Default::default();
    let decode =
        |v: Value| -> SlimPod { serde_json::from_value(v).expect("a realistic pod decodes") };
    let n = 200;
    for i in 0..n {
        writer.apply_watcher_event(&Event::Apply(decode(realistic::pod(i, NODE))));
    }
    let store = writer.as_reader();
    let mut c = Converted::default();
    let mut malformed = Default::default();
    // (what happened, whether the kept pods change, how many pods are converted)
    let mut step = |c: &mut Converted, what: &str, changes: bool, conversions: usize| {
        let changed = c.refresh(&store, &mut malformed);
        let whole = fence_task::convert_pods(&store, &mut Default::default());
        assert_eq!((&c.pods, &c.resources), (&whole.0, &whole.1), "{what}");
        assert_eq!(changed, changes, "{what}: changed");
        assert_eq!(c.last_conversions(), conversions, "{what}: conversions");
    };
    step(&mut c, "the first refresh", true, n);
    step(&mut c, "nothing new", false, 0);
    // While the store holds the same pods, a refresh updates the kept vector where it is: a
    // second vector of every pod was a relist's peak above the start's (issue 25).
    let kept_at = c.pods.as_ptr();
    let in_place =
        |c: &Converted, what: &str| assert_eq!(c.pods.as_ptr(), kept_at, "{what}: in place");

    let mut edit = |i: usize, f: &dyn Fn(&mut Value)| {
        let mut v = realistic::pod(i, NODE);
        f(&mut v);
        writer.apply_watcher_event(&Event::Apply(decode(v)));
    };
    edit(5, &|v| {
        v["metadata"]["resourceVersion"] = Value::from("999999")
    });
    step(&mut c, "a new version that changes nothing kept", false, 1);
    in_place(&c, "a new version that changes nothing kept");
    edit(6, &|v| {
        if let Some(ts) = v["spec"]["tolerations"].as_array_mut() {
            ts.push(serde_json::json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 17}));
        }
    });
    step(&mut c, "a toleration the fence cannot use", false, 1);
    in_place(&c, "a toleration the fence cannot use");
    edit(7, &|v| {
        if let Some(ts) = v["spec"]["tolerations"].as_array_mut() {
            ts.push(serde_json::json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 17}));
        }
    });
    edit(11, &|v| {
        v["spec"]["containers"][0]["resources"]["requests"]["memory"] = Value::from("777Mi");
    });
    step(&mut c, "a toleration and a request changed", true, 2);
    in_place(&c, "a toleration and a request changed");
    edit(13, &|v| {
        v["spec"]["tolerations"] = serde_json::json!([{"key": "k", "operator": "Sometimes"}]);
    });
    step(&mut c, "tolerations it cannot read: left out", true, 1);
    in_place(&c, "left out");
    // The pod left out is tried again on every refresh (its problem logged once).
    writer.apply_watcher_event(&Event::Delete(decode(realistic::pod(9, NODE))));
    step(&mut c, "a pod deleted", true, 1);
    writer.apply_watcher_event(&Event::Apply(decode(realistic::pod(n + 1, NODE))));
    step(&mut c, "a pod added", true, 2);
    assert_eq!(c.pods.len(), n - 1, "one left out, one deleted, one added");

    // After a restart the pods come from disk: the first refresh converts every pod and changes
    // nothing when the disk had them right, and says so when it did not.
    let (pods, resources) = fence_task::convert_pods(&store, &mut Default::default());
    let mut fresh = Converted::from_disk(pods.clone(), resources.clone());
    step(&mut fresh, "from disk, as it was", false, n);
    let mut stale = Converted::from_disk(pods[1..].to_vec(), resources);
    step(&mut stale, "from disk, one pod short", true, n);
}

/// Reconciling fenced pods after a partition reads the node's pods in pages, decoded as the
/// watch decodes them (a whole-node list of whole Pods was the largest allocation of a run): a
/// fenced pod on the last page is still found upstream.
#[tokio::test]
async fn reconciling_after_a_partition_lists_the_pods_in_pages() {
    use nodewarden::agent::fence_task;
    use nodewarden::observe::http::Health;
    use nodewarden::terminate::Fence;

    let server = apiserver::ApiServer::new();
    server.create_namespace("shop");
    server.create_node(realistic::for_create(realistic::node(NODE)));
    let n = 60;
    let pods: Vec<(String, String)> = (0..n)
        .map(|i| {
            let created = server.create_pod(realistic::for_create(realistic::pod(i, NODE)));
            let field = |f: &str| {
                created["metadata"][f]
                    .as_str()
                    .expect("the server fills it")
                    .to_string()
            };
            (field("name"), field("uid"))
        })
        .collect();
    let page = nodewarden::api::watch::PAGE_SIZE as usize;
    assert!(n > 2 * page, "three pages at least");
    // Last in name order, and among the last created: on the last page either way.
    let (_, last) = pods.iter().max().cloned().expect("pods");
    let gone = "0d5a0000-0000-4000-8000-00000000dead".to_string();
    let mut fenced: std::collections::BTreeSet<String> = [last.clone(), gone.clone()].into();
    let mut fence = Fence::new();
    fence.fence(last.clone(), "/nonexistent/a");
    fence.fence(gone.clone(), "/nonexistent/b");
    let health = Health::new(Duration::from_secs(60));
    let requests = nodewarden::api::Requests::default();
    let outcomes = fence_task::reconcile(
        &server.client(),
        &requests,
        NODE,
        &mut fence,
        &mut fenced,
        &health,
    )
    .await
    .expect("reconciled");
    assert!(fenced.is_empty() && fence.is_empty(), "every fence lifted");
    let reason_of = |uid: &str| {
        outcomes
            .iter()
            .find(|(_, message)| message.contains(uid))
            .map(|(reason, _)| reason.as_str())
    };
    assert_eq!(
        reason_of(&last),
        Some("NodewardenFenceLifted"),
        "{outcomes:?}"
    );
    assert_eq!(
        reason_of(&gone),
        Some("NodewardenFenceDone"),
        "{outcomes:?}"
    );
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/pods" && r.param("watch").is_none())
        .collect();
    assert_eq!(lists.len(), n.div_ceil(page), "{lists:?}");
    assert!(
        lists
            .iter()
            .all(|r| r.param("limit") == Some(&*page.to_string()))
    );
}

/// Bytes allocated by the current thread (tests run on threads of their own), counted by
/// [`ThreadCounting`]; the other tests of this file only pass through it.
mod thread_allocations {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static ALLOCATED: Cell<usize> = const { Cell::new(0) };
    }

    pub struct ThreadCounting;

    fn count(bytes: usize) {
        // `try_with`: an allocation while the thread's locals are torn down is not counted.
        let _ = ALLOCATED.try_with(|c| c.set(c.get().saturating_add(bytes)));
    }

    // SAFETY: every call goes straight to the system allocator with the caller's arguments;
    // counting touches only a thread-local integer and never allocates.
    unsafe impl GlobalAlloc for ThreadCounting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count(layout.size());
            // SAFETY: the caller's contract is System's.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: as above.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count(new_size);
            // SAFETY: as above.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// The bytes this thread allocates while `f` runs, and what `f` returned.
    pub fn during<T>(f: impl FnOnce() -> T) -> (usize, T) {
        let before = ALLOCATED.with(Cell::get);
        let out = f();
        (ALLOCATED.with(Cell::get) - before, out)
    }
}

#[global_allocator]
static ALLOCATOR: thread_allocations::ThreadCounting = thread_allocations::ThreadCounting;

/// While connected, every change of the pods plans them all again for the metrics (what a
/// partition starting now would do). That counts the plans and keeps none: it costs no memory a
/// pod (issue 25: a vector of every plan with each pod's identity copied was the largest
/// transient of a relist at 1,000 heavy pods, 0.2–0.3 MiB), where the plans a partition runs on
/// (`fence_plan::plan`) are kept whole.
#[test]
fn the_connected_plan_metrics_allocate_nothing_a_pod() {
    use kube::runtime::watcher::Event;
    use nodewarden::core::fence_plan::{self, FencePolicy, Mode, QuorumVerdict};
    use nodewarden::observe::metrics::Metrics;

    let policy = FencePolicy {
        node_monitor_grace_period: Duration::from_secs(40),
        node_monitor_period: Duration::ZERO,
        safety_margin: Duration::from_secs(2),
        grace_cap: Duration::from_secs(10),
        mode: Mode::DryRun,
        kubelet_lag: Duration::from_secs(10),
    };
    let verdict = QuorumVerdict::NotConsulted;
    let converted = |n: usize| {
        let mut writer: kube::runtime::reflector::store::Writer<SlimPod> = Default::default();
        for i in 0..n {
            let pod: SlimPod =
                serde_json::from_value(realistic::pod(i, NODE)).expect("a realistic pod decodes");
            writer.apply_watcher_event(&Event::Apply(pod));
        }
        fence_task::convert_pods(&writer.as_reader(), &mut Default::default()).0
    };
    let (few, many) = (converted(10), converted(1000));
    let metrics = Metrics::default();
    let record = |pods: &[FencePod]| {
        thread_allocations::during(|| {
            let plans = fence_plan::plan_each(
                pods,
                Duration::from_secs(100),
                None,
                None,
                &policy,
                &verdict,
            );
            metrics.record_plans(plans.map(|(_, plan)| plan), &verdict, None);
        })
        .0
    };
    // Once before measuring: the metrics' first record makes what it keeps.
    record(&few);
    let (with_few, with_many) = (record(&few), record(&many));
    assert_eq!(
        with_many, with_few,
        "the same bytes for 1,000 pods as for 10"
    );
    // And it counted every pod.
    let text = metrics.render(None);
    let counted: f64 = text
        .lines()
        .filter_map(|l| l.strip_prefix("nodewarden_fence_plan_pods{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(counted, 1000.0, "{text}");
    // The counter sees allocations: the kept plans of 1,000 pods are a vector of them at least.
    let (kept, plans) = thread_allocations::during(|| {
        fence_plan::plan(
            &many,
            Duration::from_secs(100),
            None,
            None,
            &policy,
            &verdict,
        )
    });
    assert_eq!(plans.len(), 1000);
    assert!(
        kept >= 1000 * std::mem::size_of::<fence_plan::PodPlan>(),
        "{kept} B for the kept plans"
    );
}
