//! Pods and Nodes shaped as a real API server returns them (issue 12), for the pod-cache guard
//! and the footprint harness: managedFields of three managers (kubectl-client-side-apply,
//! kube-controller-manager, and the kubelet on the `status` subresource), two containers with a
//! dozen env vars each, volumes (projected service-account token, configMap, emptyDir), a
//! last-applied-configuration annotation and a full status — about 9 KB of JSON per pod (the issue
//! estimated 6.4 KB). The
//! Node has ~30 images, full conditions, addresses, nodeInfo and managedFields.
//!
//! `pod` and `node` return the object as served (with uid, resourceVersion and managedFields);
//! `for_create` removes what a server sets itself, for seeding the API test server. The shapes
//! the fence cares about (sidecars, pod-level resources, mirror and DaemonSet pods, every kind of
//! toleration) are variations of the same pod in `pod_shapes`.

#![allow(dead_code)]

use serde_json::{Map, Value, json};

/// The uid of the `i`th generated object of a kind.
fn uid(kind: u32, i: usize) -> String {
    format!("{kind:08x}-5c1e-4d2a-9b7f-{i:012x}")
}

/// The fieldsV1 tree of a JSON value, as the API server records what a manager set: `f:` per
/// field, `k:{"name":…}` per named list item (with `.`), `v:` per string list item.
pub fn fields_v1(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (format!("f:{k}"), fields_v1(v)))
                .collect(),
        ),
        Value::Array(items) => {
            let mut out = Map::new();
            for item in items {
                match item {
                    Value::Object(o) => {
                        let key = ["name", "type", "key", "containerPort", "mountPath"]
                            .iter()
                            .find_map(|k| o.get(*k).map(|v| json!({ *k: v })));
                        let Some(key) = key else { continue };
                        let mut inner = match fields_v1(item) {
                            Value::Object(m) => m,
                            _ => Map::new(),
                        };
                        inner.insert(".".into(), json!({}));
                        out.insert(format!("k:{key}"), Value::Object(inner));
                    }
                    Value::String(s) => {
                        out.insert(format!("v:{}", json!(s)), json!({}));
                    }
                    _ => {}
                }
            }
            Value::Object(out)
        }
        _ => json!({}),
    }
}

fn env(app: &str, c: &str) -> Value {
    let mut vars = vec![
        json!({"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": format!("{app}-db"), "key": "password"}}}),
    ];
    for (k, v) in [
        ("LOG_LEVEL", "info"),
        ("LOG_FORMAT", "json"),
        ("HTTP_PORT", "8080"),
        ("METRICS_PORT", "9090"),
        ("CACHE_TTL", "300"),
        ("REGION", "eu-west-1"),
        ("GOMAXPROCS", "2"),
        ("GOMEMLIMIT", "200MiB"),
        ("OTEL_ENDPOINT", "otel:4317"),
        ("COMPONENT", c),
        ("TZ", "UTC"),
    ] {
        vars.push(json!({"name": k, "value": v}));
    }
    Value::Array(vars)
}

fn container(app: &str, name: &str, image: &str, port: u16) -> Value {
    json!({
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"containerPort": port, "protocol": "TCP"}],
        "env": env(app, name),
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app", "readOnly": true},
            {"name": "kube-api-access-x7k2p", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}
        ],
        "terminationMessagePolicy": "File"
    })
}

fn container_status(name: &str, image: &str, i: usize) -> Value {
    json!({
        "name": name,
        "image": image,
        "imageID": format!("{}@sha256:{:064x}", image.split(':').next().unwrap_or(image), i * 7919 + name.len()),
        "containerID": format!("containerd://{:064x}", i * 104729 + name.len()),
        "ready": true,
        "started": true,
        "restartCount": 0,
        "state": {"running": {"startedAt": "2026-11-30T10:00:07Z"}},
        "lastState": {}
    })
}

/// What a kubelet of 1.35+ (in-place resize GA) reports of each container outside a resize:
/// `resources` as applied and `allocatedResources` (the requests it admitted), both the spec's.
fn report_resources(pod: &mut Value) {
    let spec: Vec<Value> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| pod["spec"][*k].as_array().cloned().unwrap_or_default())
        .collect();
    for list in ["containerStatuses", "initContainerStatuses"] {
        for status in pod["status"][list].as_array_mut().into_iter().flatten() {
            let Some(c) = spec.iter().find(|c| c["name"] == status["name"]) else {
                continue;
            };
            let r = &c["resources"];
            status["resources"] = r.clone();
            if r.get("requests").is_some() {
                status["allocatedResources"] = r["requests"].clone();
            }
        }
    }
}

/// The kubelet's fieldsV1 for a pod's status: `containerStatuses` is an atomic list.
fn kubelet_pod_status_fields(status: &Value) -> Value {
    let mut owned = status.clone();
    owned["containerStatuses"] = json!({});
    fields_v1(&json!({ "status": owned }))
}

/// The `i`th pod of a Deployment-like app on `node`, as served.
pub fn pod(i: usize, node: &str) -> Value {
    let app = format!("shop-{}", i % 7);
    let name = format!("{app}-7d4b9c6f5-{i:05}");
    let images = [
        ("app", "registry.example.com/shop/frontend:1.42.3", 8080),
        ("proxy", "registry.example.com/infra/envoy:1.31.2", 9901),
    ];
    let spec = json!({
        "volumes": [
            {"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]}},
            {"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}},
            {"name": "cache", "emptyDir": {"sizeLimit": "256Mi"}}
        ],
        "containers": images.iter().map(|(n, img, port)| container(&app, n, img, *port)).collect::<Vec<_>>(),
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "nodeName": node,
        "securityContext": {"fsGroup": 2000},
        "schedulerName": "default-scheduler",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ],
        "priority": 0,
        "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority"
    });
    let labels = json!({"app": app, "pod-template-hash": "7d4b9c6f5", "tier": "frontend"});
    let applied = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": labels},
        "spec": {"containers": images.iter().map(|(n, img, _)| json!({"name": n, "image": img,
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}})).collect::<Vec<_>>()}
    });
    let status = json!({
        "phase": "Running",
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:00:05Z"},
            {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:00:03Z"},
            {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:00:12Z"},
            {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:00:12Z"},
            {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-30T10:00:00Z"}
        ],
        "hostIP": "10.0.3.17",
        "podIP": format!("10.244.{}.{}", (i / 250) % 250, i % 250 + 2),
        "podIPs": [{"ip": format!("10.244.{}.{}", (i / 250) % 250, i % 250 + 2)}],
        "startTime": "2026-11-30T10:00:00Z",
        "containerStatuses": images.iter().map(|(n, img, _)| container_status(n, img, i)).collect::<Vec<_>>(),
        "qosClass": "Burstable"
    });
    let mut status = status;
    {
        let mut both = json!({"spec": spec, "status": status});
        report_resources(&mut both);
        status = both["status"].take();
    }
    let owner = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-7d4b9c6f5"),
        "uid": uid(0x0e5, i % 7), "controller": true, "blockOwnerDeletion": true}]);
    let managed = json!([
        {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-30T10:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": fields_v1(&json!({"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": {}}, "labels": labels},
             "spec": {"containers": images.iter().map(|(n, img, _)| json!({"name": n, "image": img, "env": env(&app, n),
                "resources": {"requests": {"cpu": "", "memory": ""}, "limits": {"memory": ""}}})).collect::<Vec<_>>()}}))},
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-30T10:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": fields_v1(&json!({"metadata": {"ownerReferences": owner}}))},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-30T10:00:12Z", "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": kubelet_pod_status_fields(&status)}
    ]);
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": format!("{app}-7d4b9c6f5-"),
            "namespace": "shop",
            "uid": uid(0x90d, i),
            "resourceVersion": format!("{}", 100_000 + i),
            "creationTimestamp": "2026-11-30T10:00:00Z",
            "labels": labels,
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": format!("{applied}\n"),
                "kubectl.kubernetes.io/restartedAt": "2026-11-30T09:58:41Z"
            },
            "ownerReferences": owner,
            "managedFields": managed
        },
        "spec": spec,
        "status": status
    })
}

/// Twelve environment variables of 40-character values each (issue 25's measurement).
fn long_env(app: &str, c: &str, i: usize) -> Value {
    Value::Array(
        (0..12)
            .map(|k| {
                let value = format!("{app}.{c}.setting-{k:02}.pod-{i:06}.example.internal");
                json!({"name": format!("SETTING_{k:02}"), "value": format!("{value:.<40.40}")})
            })
            .collect(),
    )
}

/// The pod shapes the footprint harness can seed (`--shape`), each at least as heavy as the
/// pods of issue 25's measurement (two containers of twelve 40-character env vars, ports,
/// requests and limits, volume mounts, three managers in managedFields, full statuses):
/// - `realistic`: [`pod`] as it is;
/// - `heavy`: [`pod`] with issue 25's env (12 vars × 40 characters a container);
/// - `sidecars`: `heavy` with an init container and three native sidecars (restartPolicy
///   Always, each with env and resources) and their statuses, as a service mesh, a log shipper
///   and a secrets agent add them;
/// - `last-applied`: `heavy` with a `kubectl.kubernetes.io/last-applied-configuration` holding
///   the whole applied object, env included (what `kubectl apply` of a full manifest leaves);
/// - `tolerations`: `heavy` with 32 tolerations (a DaemonSet-like pod tolerating every taint
///   of a mixed fleet), half of them NoExecute with a delay;
/// - `resizing`: `heavy` with three pods in four resized in place (1.35): by `i % 4`, a
///   downsize allocated but not yet applied, an Infeasible upsize, a Deferred upsize, none.
///
/// Every container status reports `resources` and `allocatedResources`, as a 1.35+ kubelet
/// does for running containers.
pub const SHAPES: &[&str] = &[
    "realistic",
    "heavy",
    "sidecars",
    "last-applied",
    "tolerations",
    "resizing",
];

/// The `i`th pod of `shape` (one of [`SHAPES`]) on `node`, as served; `None` for another name.
pub fn shaped_pod(shape: &str, i: usize, node: &str) -> Option<Value> {
    let mut p = pod(i, node);
    if shape == "realistic" {
        return Some(p);
    }
    let app = format!("shop-{}", i % 7);
    if let Some(cs) = p["spec"]["containers"].as_array_mut() {
        for c in cs {
            let name = c["name"].as_str().unwrap_or_default().to_string();
            c["env"] = long_env(&app, &name, i);
        }
    }
    match shape {
        "heavy" => {}
        "sidecars" => {
            let sidecar = |name: &str, image: &str, port: u16| {
                let mut c = container(&app, name, image, port);
                c["env"] = long_env(&app, name, i);
                c["restartPolicy"] = json!("Always");
                c["resources"] = json!({"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}});
                c
            };
            p["spec"]["initContainers"] = json!([
                {"name": "init-db", "image": "registry.example.com/shop/migrate:3",
                 "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}, "env": long_env(&app, "init-db", i)},
                sidecar("istio-proxy", "registry.example.com/mesh/proxyv2:1.24.1", 15090),
                sidecar("log-shipper", "registry.example.com/infra/fluent-bit:3.1", 2020),
                sidecar("vault-agent", "registry.example.com/sec/vault:1.18.0", 8200)
            ]);
            p["status"]["initContainerStatuses"] = json!([
                container_status("init-db", "registry.example.com/shop/migrate:3", i),
                container_status("istio-proxy", "registry.example.com/mesh/proxyv2:1.24.1", i),
                container_status(
                    "log-shipper",
                    "registry.example.com/infra/fluent-bit:3.1",
                    i
                ),
                container_status("vault-agent", "registry.example.com/sec/vault:1.18.0", i)
            ]);
            report_resources(&mut p);
        }
        "resizing" => {
            // The app container's cpu request is resized through the `resize` subresource
            // (the spec is the desired amount); the statuses still say 100m, as the kubelet
            // reported them before.
            let pending = |reason: &str| {
                json!({"type": "PodResizePending", "status": "True", "reason": reason,
                       "message": "Node didn't have enough capacity: cpu, requested: 64000, capacity: 8000",
                       "lastProbeTime": null, "lastTransitionTime": "2026-11-30T11:00:00Z"})
            };
            let app = &mut p["spec"]["containers"][0]["resources"]["requests"]["cpu"];
            match i % 4 {
                0 => {
                    // A downsize always fits: allocated at once, applied by the runtime later.
                    *app = json!("50m");
                    p["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] = json!("50m");
                }
                1 => {
                    *app = json!("64");
                    if let Some(cs) = p["status"]["conditions"].as_array_mut() {
                        cs.push(pending("Infeasible"));
                    }
                }
                2 => {
                    *app = json!("1");
                    if let Some(cs) = p["status"]["conditions"].as_array_mut() {
                        cs.push(pending("Deferred"));
                    }
                }
                _ => {}
            }
        }
        "last-applied" => {
            let applied = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": p["metadata"]["name"], "namespace": "shop", "labels": p["metadata"]["labels"]},
                "spec": p["spec"]});
            p["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
                json!(format!("{applied}\n"));
        }
        "tolerations" => {
            let mut ts: Vec<Value> = (0..30)
                .map(|k| {
                    let key = format!("fleet.example.com/pool-{k:02}");
                    if k % 2 == 0 {
                        json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60 * (k + 1)})
                    } else {
                        json!({"key": key, "operator": "Equal", "value": format!("team-{k}"), "effect": "NoSchedule"})
                    }
                })
                .collect();
            if let Some(admitted) = p["spec"]["tolerations"].as_array() {
                ts.extend(admitted.iter().cloned());
            }
            p["spec"]["tolerations"] = Value::Array(ts);
        }
        _ => return None,
    }
    Some(p)
}

/// The shapes of pod the fence treats differently, each a variation of `pod(i, node)`.
pub fn pod_shapes(node: &str) -> Vec<(&'static str, Value)> {
    let mut shapes = vec![("deployment", pod(0, node))];

    let mut sidecar = pod(1, node);
    sidecar["spec"]["initContainers"] = json!([
        {"name": "init-db", "image": "registry.example.com/shop/migrate:3", "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
        {"name": "log-shipper", "image": "registry.example.com/infra/fluent-bit:3.1", "restartPolicy": "Always",
         "resources": {"requests": {"cpu": "20m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
         "env": env("logs", "shipper")}
    ]);
    shapes.push(("sidecar init container", sidecar));

    let mut pod_level = pod(2, node);
    pod_level["spec"]["resources"] = json!({"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}});
    pod_level["spec"]["overhead"] = json!({"cpu": "250m", "memory": "120Mi"});
    pod_level["status"]["qosClass"] = json!("Guaranteed");
    shapes.push(("pod-level resources and overhead", pod_level));

    let mut mirror = pod(3, node);
    mirror["metadata"]["annotations"] = json!({
        "kubernetes.io/config.hash": "3f1c2b7a9d",
        "kubernetes.io/config.mirror": "3f1c2b7a9d",
        "kubernetes.io/config.seen": "2026-11-30T09:59:58.123456789Z",
        "kubernetes.io/config.source": "file"
    });
    mirror["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid(0x40de, 0), "controller": true}]);
    mirror["spec"]["priorityClassName"] = json!("system-node-critical");
    shapes.push(("mirror pod", mirror));

    let mut daemon = pod(4, node);
    daemon["metadata"]["ownerReferences"] = json!([
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "not-a-controller", "uid": uid(0xc0f, 1)},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "node-agent", "uid": uid(0xd5, 4), "controller": true, "blockOwnerDeletion": true}
    ]);
    daemon["metadata"]["annotations"]["nodewarden.io/fence"] = json!("disabled");
    daemon["status"]["qosClass"] = json!("BestEffort");
    daemon["status"]["phase"] = json!("Succeeded");
    shapes.push(("DaemonSet pod, opted out, terminal", daemon));

    let mut tolerant = pod(5, node);
    tolerant["spec"]["tolerations"] = json!([
        {"operator": "Exists"},
        {"key": "dedicated", "operator": "Equal", "value": "edge", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 6000},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "tolerationSeconds": -5},
        {"key": "example.com/gpu", "operator": "Exists"},
        {"key": "zone", "value": "b", "effect": "PreferNoSchedule"},
        {"key": "nodewarden.io/memory-pressure", "operator": "Exists", "effect": "NoExecute"}
    ]);
    tolerant["spec"]["terminationGracePeriodSeconds"] = json!(120);
    tolerant["status"] = json!({"phase": "Pending"});
    shapes.push(("tolerations of every kind, no QoS class yet", tolerant));
    shapes
}

/// A realistic Node named `name` in zone `zone-a`, as served.
pub fn node(name: &str) -> Value {
    let images: Vec<Value> = (0..30)
        .map(|i| {
            json!({
                "names": [
                    format!("registry.example.com/team-{}/service-{i}@sha256:{:064x}", i % 5, i * 31337),
                    format!("registry.example.com/team-{}/service-{i}:v1.{i}.0", i % 5)
                ],
                "sizeBytes": 20_000_000 + i * 1_234_567
            })
        })
        .collect();
    let condition = |t: &str, status: &str, reason: &str, message: &str| {
        json!({"type": t, "status": status, "lastHeartbeatTime": "2026-11-30T10:00:00Z",
               "lastTransitionTime": "2026-11-28T08:00:00Z", "reason": reason, "message": message})
    };
    let conditions = json!([
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available"
        ),
        condition(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure"
        ),
        condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available"
        ),
        condition(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status"
        ),
        condition(
            "KernelDeadlock",
            "False",
            "KernelHasNoDeadlock",
            "kernel has no deadlock"
        ),
        condition(
            "NodewardenMemoryPressure",
            "False",
            "NodewardenHasSufficientMemory",
            "nodewarden: node has sufficient memory available"
        )
    ]);
    let status = json!({
        "capacity": {"cpu": "8", "ephemeral-storage": "101445540Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "32779368Ki", "pods": "110"},
        "allocatable": {"cpu": "7910m", "ephemeral-storage": "93492209510", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "31628392Ki", "pods": "110"},
        "conditions": conditions,
        "addresses": [{"type": "InternalIP", "address": "10.0.3.17"}, {"type": "Hostname", "address": name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": "3b8f0c6e2d1a4f5b9c7e8d6a5b4c3d2e", "systemUUID": "ec2a1b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
            "bootID": "5f4e3d2c-1b0a-4987-8654-3210fedcba98", "kernelVersion": "6.8.0-1019-aws",
            "osImage": "Ubuntu 24.04.1 LTS", "containerRuntimeVersion": "containerd://1.7.22",
            "kubeletVersion": "v1.33.4", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"
        },
        "images": images
    });
    let labels = json!({
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "m6i.2xlarge",
        "topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": "zone-a",
        "node-role.example.com/worker": ""
    });
    let spec = json!({
        "podCIDR": "10.244.3.0/24", "podCIDRs": ["10.244.3.0/24"],
        "providerID": format!("aws:///eu-west-1a/i-0{:016x}", 0xfeed),
        "taints": [
            {"key": "dedicated", "value": "edge", "effect": "NoSchedule"},
            {"key": "nodewarden.io/memory-pressure", "effect": "NoSchedule", "timeAdded": "2026-11-30T09:00:00Z"}
        ]
    });
    let ours = json!({"conditions": [conditions[5]]});
    let npd = json!({"conditions": [conditions[4]]});
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": uid(0x40de, 0),
            "resourceVersion": "99871",
            "creationTimestamp": "2026-11-28T08:00:00Z",
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock"
            },
            "managedFields": [
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-28T08:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": fields_v1(&json!({"metadata": {"labels": labels}, "spec": {"providerID": ""}}))},
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": "2026-11-28T08:00:05Z",
                 "fieldsType": "FieldsV1", "fieldsV1": fields_v1(&json!({"metadata": {"annotations": {"node.alpha.kubernetes.io/ttl": ""}}, "spec": {"podCIDR": "", "podCIDRs": ["10.244.3.0/24"]}}))},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": "2026-11-30T10:00:00Z",
                 "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": fields_v1(&json!({"status": {
                    "conditions": [conditions[0], conditions[1], conditions[2], conditions[3]],
                    "addresses": status["addresses"], "allocatable": status["allocatable"],
                    "capacity": status["capacity"], "daemonEndpoints": status["daemonEndpoints"],
                    "images": status["images"].as_array().map(|a| a.iter().map(|i| json!({"names": i["names"]})).collect::<Vec<_>>()),
                    "nodeInfo": status["nodeInfo"]}}))},
                {"manager": "node-problem-detector", "operation": "Update", "apiVersion": "v1", "time": "2026-11-30T10:00:00Z",
                 "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": fields_v1(&json!({"status": npd}))},
                {"manager": "nodewarden", "operation": "Update", "apiVersion": "v1", "time": "2026-11-30T10:00:00Z",
                 "fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": fields_v1(&json!({"status": ours}))},
                {"manager": "nodewarden", "operation": "Update", "apiVersion": "v1", "time": "2026-11-30T09:00:00Z",
                 "fieldsType": "FieldsV1", "fieldsV1": fields_v1(&json!({"spec": {"taints": {}}}))}
            ]
        },
        "spec": spec,
        "status": status
    })
}

/// `obj` without what the API server sets itself (uid, resourceVersion, creationTimestamp,
/// managedFields), for creating it on the API test server.
pub fn for_create(mut obj: Value) -> Value {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generateName",
        ] {
            m.remove(f);
        }
    }
    obj
}
