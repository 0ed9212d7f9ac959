//! Tests of the in-memory API test server itself (tests/support/apiserver): it must answer as
//! the real API server does, or the tests built on it prove nothing.

mod support;

use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::Duration;
use support::apiserver::{ApiServer, Fault};
use tower::ServiceExt;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// An answer: status, headers, JSON body.
struct Answer {
    status: u16,
    headers: http::HeaderMap,
    body: Value,
}

async fn call(
    s: &ApiServer,
    method: &str,
    uri: &str,
    content_type: Option<&str>,
    body: &str,
) -> Answer {
    let mut b = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("User-Agent", "tester/1.0");
    if let Some(ct) = content_type {
        b = b.header("Content-Type", ct);
    }
    let req = b
        .body(kube::client::Body::from(body.as_bytes().to_vec()))
        .expect("request");
    let resp = s.service().oneshot(req).await.expect("infallible");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        body,
    }
}

async fn get(s: &ApiServer, uri: &str) -> Answer {
    call(s, "GET", uri, None, "").await
}

async fn put(s: &ApiServer, uri: &str, body: &Value) -> Answer {
    call(s, "PUT", uri, Some("application/json"), &body.to_string()).await
}

async fn post(s: &ApiServer, uri: &str, body: &Value) -> Answer {
    call(s, "POST", uri, Some("application/json"), &body.to_string()).await
}

const SMP: &str = "application/strategic-merge-patch+json";
const MERGE: &str = "application/merge-patch+json";
const JSONPATCH: &str = "application/json-patch+json";

async fn patch(s: &ApiServer, uri: &str, ct: &str, body: &Value) -> Answer {
    call(s, "PATCH", uri, Some(ct), &body.to_string()).await
}

fn rv(obj: &Value) -> u64 {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .expect("a numeric resourceVersion")
}

fn node_with(name: &str, spec: Value, status: Value) -> Value {
    json!({ "apiVersion": "v1", "kind": "Node", "metadata": { "name": name }, "spec": spec, "status": status })
}

fn cond(t: &str, status: &str) -> Value {
    json!({ "type": t, "status": status, "reason": format!("{t}Reason"), "message": "m",
            "lastHeartbeatTime": "2025-01-01T00:00:00Z", "lastTransitionTime": "2025-01-01T00:00:00Z" })
}

fn seeded() -> ApiServer {
    let s = ApiServer::new();
    s.create_node(node_with(
        "n1",
        json!({ "taints": [{ "key": "a", "value": "1", "effect": "NoSchedule" }] }),
        json!({ "conditions": [cond("Ready", "True")] }),
    ));
    s
}

fn pod(ns: &str, name: &str, node: &str, tolerations: Value) -> Value {
    json!({ "apiVersion": "v1", "kind": "Pod", "metadata": { "name": name, "namespace": ns },
            "spec": { "nodeName": node, "containers": [{ "name": "c", "image": "busybox" }], "tolerations": tolerations } })
}

fn causes(status: &Value) -> Vec<(String, String, String)> {
    status
        .pointer("/details/causes")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let f = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    (f("reason"), f("field"), f("message"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn assert_status(a: &Answer, code: u16, reason: &str) {
    assert_eq!(a.status, code, "body: {}", a.body);
    assert_eq!(a.body["kind"], "Status", "body: {}", a.body);
    assert_eq!(a.body["apiVersion"], "v1");
    assert_eq!(a.body["status"], "Failure");
    assert_eq!(a.body["code"], code);
    assert_eq!(a.body["reason"], reason, "body: {}", a.body);
}

/// Read watch events from a streaming body, one per line, each within `wait`.
struct Events {
    body: http_body_util::combinators::UnsyncBoxBody<bytes::Bytes, std::convert::Infallible>,
    buf: Vec<u8>,
}

impl Events {
    async fn open(s: &ApiServer, uri: &str) -> (u16, Events) {
        let req = http::Request::builder()
            .method("GET")
            .uri(uri)
            .body(kube::client::Body::empty())
            .expect("request");
        let resp = s.service().oneshot(req).await.expect("infallible");
        let status = resp.status().as_u16();
        (
            status,
            Events {
                body: resp.into_body(),
                buf: Vec::new(),
            },
        )
    }

    /// The next event, None when the stream ended, panics when nothing comes within `wait`.
    async fn next(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                // As the API server writes a watch event: its type first (kube decodes the
                // object straight into its type only after the type).
                assert!(
                    line.starts_with(b"{\"type\":\""),
                    "an event line begins with its type: {}",
                    String::from_utf8_lossy(&line)
                );
                return Some(serde_json::from_slice(&line).expect("a JSON event"));
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .expect("a watch event in time");
            match frame {
                Some(Ok(f)) => {
                    if let Ok(data) = f.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
                _ => return None,
            }
        }
    }

    /// Whether nothing arrives within `wait` (the stream stays open and quiet).
    async fn quiet(&mut self, wait: Duration) -> bool {
        self.buf.is_empty() && tokio::time::timeout(wait, self.body.frame()).await.is_err()
    }
}

const WAIT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// resourceVersion and optimistic concurrency
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn resource_version_is_one_global_increasing_counter() {
    let s = ApiServer::new();
    let n = s.create_node(ApiServer::node_json("n1"));
    let l = s.create_lease(json!({ "metadata": { "name": "n1", "namespace": "kube-node-lease" },
                                   "spec": { "holderIdentity": "n1", "leaseDurationSeconds": 40 } }));
    let p = s.create_pod(pod("default", "p1", "n1", json!([])));
    assert!(
        rv(&n) < rv(&l) && rv(&l) < rv(&p),
        "{} {} {}",
        rv(&n),
        rv(&l),
        rv(&p)
    );
    let list = get(&s, "/api/v1/nodes").await;
    assert_eq!(list.status, 200);
    assert_eq!(list.body["kind"], "NodeList");
    // A list carries the store's revision, not the newest node's.
    assert_eq!(
        list.body["metadata"]["resourceVersion"],
        json!(s.resource_version().to_string())
    );
    assert_eq!(s.resource_version(), rv(&p));
    assert!(n["metadata"]["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(
        n["metadata"]["creationTimestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    assert_eq!(p["metadata"]["generation"], 1, "pods have a generation");
    assert!(n["metadata"].get("generation").is_none(), "nodes have none");
}

#[tokio::test]
async fn stale_resource_version_in_update_is_a_409_conflict_status() {
    let s = seeded();
    let old = s.node("n1").expect("node");
    s.update_node_as("other", "n1", |n| {
        n["metadata"]["labels"] = json!({ "x": "1" })
    })
    .expect("update");
    let mut mine = old.clone();
    mine["metadata"]["labels"] = json!({ "mine": "1" });
    let a = put(&s, "/api/v1/nodes/n1", &mine).await;
    assert_status(&a, 409, "Conflict");
    assert_eq!(
        a.body["message"],
        "Operation cannot be fulfilled on nodes \"n1\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(a.body["details"], json!({ "name": "n1", "kind": "nodes" }));
    // With the current resourceVersion it succeeds and bumps it.
    let cur = s.node("n1").expect("node");
    mine["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"].clone();
    let a = put(&s, "/api/v1/nodes/n1", &mine).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(rv(&a.body) > rv(&cur));
}

#[tokio::test]
async fn stale_resource_version_in_a_strategic_patch_is_a_409() {
    let s = seeded();
    let stale = rv(&s.node("n1").expect("node"));
    s.update_node_as("other", "n1", |n| {
        n["metadata"]["labels"] = json!({ "x": "1" })
    })
    .expect("update");
    let body = json!({ "metadata": { "resourceVersion": stale.to_string() }, "status": { "conditions": [cond("MemoryPressure", "False")] } });
    let a = patch(&s, "/api/v1/nodes/n1/status", SMP, &body).await;
    assert_status(&a, 409, "Conflict");
    assert!(
        s.node("n1").expect("node")["status"]["conditions"]
            .as_array()
            .expect("list")
            .len()
            == 1
    );
    // The same patch without a resourceVersion is unconditional and applies.
    let a = patch(
        &s,
        "/api/v1/nodes/n1/status",
        SMP,
        &json!({ "status": { "conditions": [cond("MemoryPressure", "False")] } }),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
}

#[tokio::test]
async fn a_write_that_changes_nothing_does_not_bump_the_resource_version() {
    let s = seeded();
    let before = s.node("n1").expect("node");
    let a = put(&s, "/api/v1/nodes/n1", &before).await;
    assert_eq!(a.status, 200);
    assert_eq!(rv(&a.body), rv(&before));
    let a = patch(
        &s,
        "/api/v1/nodes/n1/status",
        SMP,
        &json!({ "status": { "conditions": [cond("Ready", "True")] } }),
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(rv(&a.body), rv(&before));
    assert_eq!(s.resource_version(), rv(&before));
    // A real change does bump it.
    let a = patch(
        &s,
        "/api/v1/nodes/n1",
        MERGE,
        &json!({ "metadata": { "labels": { "k": "v" } } }),
    )
    .await;
    assert_eq!(rv(&a.body), rv(&before) + 1);
}

// ---------------------------------------------------------------------------------------------
// Patches
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn strategic_patch_merges_conditions_by_type_and_leaves_other_writers_alone() {
    let s = seeded();
    s.update_node_status_as("kubelet", "n1", |n| {
        n["status"]["conditions"] = json!([cond("Ready", "True"), cond("DiskPressure", "False")]);
    })
    .expect("kubelet status");
    let body = json!({ "status": { "conditions": [cond("MemoryPressure", "True"), { "type": "DiskPressure", "status": "True" }] } });
    let a = call(
        &s,
        "PATCH",
        "/api/v1/nodes/n1/status?fieldManager=nodewarden",
        Some(SMP),
        &body.to_string(),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let conds = s.node("n1").expect("node")["status"]["conditions"].clone();
    let types: Vec<&str> = conds
        .as_array()
        .expect("list")
        .iter()
        .map(|c| c["type"].as_str().expect("type"))
        .collect();
    assert_eq!(types, ["Ready", "DiskPressure", "MemoryPressure"]);
    // Merged into the existing entry: the patch's status, the kubelet's other fields kept.
    assert_eq!(conds[1]["status"], "True");
    assert_eq!(conds[1]["reason"], "DiskPressureReason");
    assert_eq!(conds[0], cond("Ready", "True"));
    // managedFields: an entry for our manager on the status subresource naming our keys.
    let mf = s.node("n1").expect("node")["metadata"]["managedFields"].clone();
    let ours = mf
        .as_array()
        .expect("managedFields")
        .iter()
        .find(|e| e["manager"] == "nodewarden")
        .expect("an entry for nodewarden")
        .clone();
    assert_eq!(ours["operation"], "Update");
    assert_eq!(ours["subresource"], "status");
    assert!(ours["time"].is_string());
    let fc = &ours["fieldsV1"]["f:status"]["f:conditions"];
    assert!(fc.get("k:{\"type\":\"MemoryPressure\"}").is_some(), "{mf}");
    assert!(fc.get("k:{\"type\":\"DiskPressure\"}").is_some(), "{mf}");
    assert!(fc.get("k:{\"type\":\"Ready\"}").is_none(), "{mf}");
    // The kubelet keeps the DiskPressure fields we did not set; the one we set moved to us.
    let kubelet = mf
        .as_array()
        .expect("list")
        .iter()
        .find(|e| e["manager"] == "kubelet")
        .expect("kubelet entry")
        .clone();
    let disk = &kubelet["fieldsV1"]["f:status"]["f:conditions"]["k:{\"type\":\"DiskPressure\"}"];
    assert!(
        disk.get("f:reason").is_some() && disk.get("f:status").is_none(),
        "{mf}"
    );
    assert!(
        fc["k:{\"type\":\"DiskPressure\"}"]
            .get("f:status")
            .is_some(),
        "{mf}"
    );
}

#[tokio::test]
async fn strategic_patch_delete_directive_removes_one_condition() {
    let s = seeded();
    patch(
        &s,
        "/api/v1/nodes/n1/status",
        SMP,
        &json!({ "status": { "conditions": [cond("PIDPressure", "False")] } }),
    )
    .await;
    let body =
        json!({ "status": { "conditions": [{ "type": "PIDPressure", "$patch": "delete" }] } });
    let a = patch(&s, "/api/v1/nodes/n1/status", SMP, &body).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        s.node("n1").expect("node")["status"]["conditions"],
        json!([cond("Ready", "True")])
    );
    // An item without the merge key is a malformed patch.
    let a = patch(
        &s,
        "/api/v1/nodes/n1/status",
        SMP,
        &json!({ "status": { "conditions": [{ "status": "True" }] } }),
    )
    .await;
    assert_status(&a, 400, "BadRequest");
}

#[tokio::test]
async fn strategic_patch_replaces_the_whole_taint_list() {
    let s = seeded();
    let body =
        json!({ "spec": { "taints": [{ "key": "b", "value": "2", "effect": "NoExecute" }] } });
    let a = patch(&s, "/api/v1/nodes/n1", SMP, &body).await;
    assert_eq!(a.status, 200, "{}", a.body);
    // spec.taints has no patch strategy: the old taint "a" is gone.
    assert_eq!(
        s.node("n1").expect("node")["spec"]["taints"],
        json!([{ "key": "b", "value": "2", "effect": "NoExecute" }])
    );
    let a = patch(
        &s,
        "/api/v1/nodes/n1",
        SMP,
        &json!({ "spec": { "taints": null } }),
    )
    .await;
    assert_eq!(a.status, 200);
    assert!(s.node("n1").expect("node")["spec"].get("taints").is_none());
}

#[tokio::test]
async fn strategic_patch_accepts_set_element_order() {
    let s = seeded();
    patch(
        &s,
        "/api/v1/nodes/n1/status",
        SMP,
        &json!({ "status": { "conditions": [cond("MemoryPressure", "False")] } }),
    )
    .await;
    let body = json!({ "status": {
        "$setElementOrder/conditions": [{ "type": "MemoryPressure" }, { "type": "Ready" }],
        "conditions": [{ "type": "MemoryPressure", "status": "True" }] } });
    let a = patch(&s, "/api/v1/nodes/n1/status", SMP, &body).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let conds = s.node("n1").expect("node")["status"]["conditions"].clone();
    assert_eq!(conds[0]["type"], "MemoryPressure");
    assert_eq!(conds[0]["status"], "True");
    assert_eq!(conds[1]["type"], "Ready");
    assert!(
        conds[0].get("$patch").is_none()
            && s.node("n1").expect("node")["status"]
                .get("$setElementOrder/conditions")
                .is_none()
    );
}

#[tokio::test]
async fn json_merge_patch_null_deletes_and_lists_are_replaced() {
    let s = seeded();
    patch(
        &s,
        "/api/v1/nodes/n1",
        MERGE,
        &json!({ "metadata": { "labels": { "a": "1", "b": "2" } } }),
    )
    .await;
    let a = patch(
        &s,
        "/api/v1/nodes/n1",
        MERGE,
        &json!({ "metadata": { "labels": { "a": null } } }),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        s.node("n1").expect("node")["metadata"]["labels"],
        json!({ "b": "2" })
    );
    // RFC 7386 has no merge keys: conditions are replaced wholesale.
    let a = patch(
        &s,
        "/api/v1/nodes/n1/status",
        MERGE,
        &json!({ "status": { "conditions": [cond("MemoryPressure", "False")] } }),
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(
        s.node("n1").expect("node")["status"]["conditions"],
        json!([cond("MemoryPressure", "False")])
    );
}

#[tokio::test]
async fn json_patch_test_guards_the_write_and_a_failed_test_is_422() {
    let s = seeded();
    let cur = s.node("n1").expect("node");
    let ok = json!([
        { "op": "test", "path": "/metadata/resourceVersion", "value": cur["metadata"]["resourceVersion"] },
        { "op": "add", "path": "/spec/taints/-", "value": { "key": "b", "effect": "NoSchedule" } },
    ]);
    let a = patch(&s, "/api/v1/nodes/n1", JSONPATCH, &ok).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        a.body["spec"]["taints"].as_array().expect("taints").len(),
        2
    );
    // The same patch again: the resourceVersion moved on, the test fails, nothing is written.
    let a = patch(&s, "/api/v1/nodes/n1", JSONPATCH, &ok).await;
    assert_status(&a, 422, "Invalid");
    let c = causes(&a.body);
    assert_eq!(c.len(), 1);
    assert_eq!(
        c[0].2,
        "testing value /metadata/resourceVersion failed: test failed"
    );
    assert_eq!(
        s.node("n1").expect("node")["spec"]["taints"]
            .as_array()
            .expect("taints")
            .len(),
        2
    );
    // Other operations.
    let ops = json!([
        { "op": "replace", "path": "/spec/taints/0/value", "value": "9" },
        { "op": "copy", "from": "/spec/taints/0", "path": "/spec/taints/-" },
        { "op": "remove", "path": "/spec/taints/2" },
        { "op": "move", "from": "/spec/taints/1", "path": "/spec/taints/0" },
    ]);
    let a = patch(&s, "/api/v1/nodes/n1", JSONPATCH, &ops).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        a.body["spec"]["taints"],
        json!([{ "key": "b", "effect": "NoSchedule" }, { "key": "a", "value": "9", "effect": "NoSchedule" }])
    );
    let a = patch(
        &s,
        "/api/v1/nodes/n1",
        JSONPATCH,
        &json!([{ "op": "remove", "path": "/spec/nothing" }]),
    )
    .await;
    assert_status(&a, 422, "Invalid");
    let a = patch(&s, "/api/v1/nodes/n1", JSONPATCH, &json!({ "op": "add" })).await;
    assert_status(&a, 400, "BadRequest");
}

#[tokio::test]
async fn unsupported_patch_types_are_415() {
    let s = seeded();
    for ct in [
        "application/apply-patch+yaml",
        "text/plain",
        "application/json",
    ] {
        let a = call(
            &s,
            "PATCH",
            "/api/v1/nodes/n1?fieldManager=x",
            Some(ct),
            "{}",
        )
        .await;
        assert_status(&a, 415, "UnsupportedMediaType");
    }
    let a = call(&s, "PATCH", "/api/v1/nodes/n1", Some(SMP), "{not json").await;
    assert_status(&a, 400, "BadRequest");
}

// ---------------------------------------------------------------------------------------------
// Subresources
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn status_subresource_ignores_spec_and_main_resource_ignores_status() {
    let s = seeded();
    let body = json!({ "metadata": { "labels": { "sneaky": "1" } }, "spec": { "taints": [] }, "status": { "conditions": [cond("Ready", "False")] } });
    let a = patch(&s, "/api/v1/nodes/n1/status", SMP, &body).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let n = s.node("n1").expect("node");
    assert_eq!(n["status"]["conditions"][0]["status"], "False");
    assert_eq!(
        n["spec"]["taints"].as_array().expect("taints").len(),
        1,
        "spec untouched via status"
    );
    assert!(
        n["metadata"].get("labels").is_none(),
        "labels untouched via status"
    );

    let a = patch(&s, "/api/v1/nodes/n1", SMP, &json!({ "spec": { "unschedulable": true }, "status": { "conditions": [cond("Ready", "True")] } })).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let n = s.node("n1").expect("node");
    assert_eq!(n["spec"]["unschedulable"], true);
    assert_eq!(
        n["status"]["conditions"][0]["status"], "False",
        "status untouched via the main resource"
    );

    // A status-only change through the main resource is therefore a no-op.
    let before = s.resource_version();
    let a = patch(
        &s,
        "/api/v1/nodes/n1",
        MERGE,
        &json!({ "status": { "conditions": [] } }),
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(s.resource_version(), before);
    let a = get(&s, "/api/v1/nodes/n1/status").await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body["kind"], "Node");
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

async fn taints_answer(s: &ApiServer, taints: Value) -> Answer {
    patch(
        s,
        "/api/v1/nodes/n1",
        SMP,
        &json!({ "spec": { "taints": taints } }),
    )
    .await
}

#[tokio::test]
async fn taints_must_be_unique_by_key_and_effect() {
    let s = seeded();
    let a = taints_answer(&s, json!([{ "key": "k", "value": "1", "effect": "NoSchedule" }, { "key": "k", "value": "2", "effect": "NoSchedule" }])).await;
    assert_status(&a, 422, "Invalid");
    let c = causes(&a.body);
    assert_eq!(c.len(), 1, "{}", a.body);
    assert_eq!(c[0].0, "FieldValueDuplicate");
    assert_eq!(c[0].1, "spec.taints[1]");
    assert!(
        c[0].2
            .ends_with("taints must be unique by key and effect pair"),
        "{}",
        c[0].2
    );
    assert!(
        a.body["message"]
            .as_str()
            .expect("message")
            .starts_with("Node \"n1\" is invalid: spec.taints[1]: Duplicate value: ")
    );
    assert_eq!(a.body["details"]["kind"], "Node");
    // The same key with different effects is fine.
    let a = taints_answer(
        &s,
        json!([{ "key": "k", "effect": "NoSchedule" }, { "key": "k", "effect": "NoExecute" }]),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
}

#[tokio::test]
async fn taint_effect_is_required_and_from_the_enum_and_key_is_a_qualified_name() {
    let s = seeded();
    let a = taints_answer(&s, json!([{ "key": "k", "effect": "Sometimes" }, { "key": "k2" }, { "key": "bad key!", "effect": "NoSchedule" }, { "key": "k3", "value": "-bad", "effect": "NoSchedule" }])).await;
    assert_status(&a, 422, "Invalid");
    let c = causes(&a.body);
    assert_eq!(c[0], ("FieldValueNotSupported".into(), "spec.taints[0].effect".into(),
        "Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".into()));
    assert_eq!(
        c[1],
        (
            "FieldValueRequired".into(),
            "spec.taints[1].effect".into(),
            "Required value".into()
        )
    );
    assert_eq!(c[2].0, "FieldValueInvalid");
    assert_eq!(c[2].1, "spec.taints[2].key");
    assert!(
        c[2].2.starts_with(
            "Invalid value: \"bad key!\": name part must consist of alphanumeric characters"
        ),
        "{}",
        c[2].2
    );
    assert_eq!(c[3].1, "spec.taints[3].value");
    assert_eq!(c.len(), 4, "{}", a.body);
    // Several errors aggregate as "[a, b, ...]".
    assert!(
        a.body["message"]
            .as_str()
            .expect("message")
            .starts_with("Node \"n1\" is invalid: [spec.taints[0].effect: Unsupported value")
    );
    // Nothing was written.
    assert_eq!(s.node("n1").expect("node")["spec"]["taints"][0]["key"], "a");
}

#[tokio::test]
async fn mistyped_fields_are_decode_errors() {
    let s = seeded();
    let mut n = s.node("n1").expect("node");
    n["spec"]["taints"] = json!("a=1:NoSchedule");
    let a = put(&s, "/api/v1/nodes/n1", &n).await;
    assert_status(&a, 400, "BadRequest");
    assert!(
        a.body["message"]
            .as_str()
            .expect("message")
            .contains("cannot unmarshal string into Go struct field Node.spec.taints"),
        "{}",
        a.body
    );
    // Through a patch the decode error is a 422 on field "patch".
    let a = patch(
        &s,
        "/api/v1/nodes/n1",
        MERGE,
        &json!({ "spec": { "taints": { "key": "a" } } }),
    )
    .await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(causes(&a.body)[0].1, "patch");
    let a = call(
        &s,
        "POST",
        "/api/v1/nodes",
        Some("application/json"),
        "{\"metadata\":",
    )
    .await;
    assert_status(&a, 400, "BadRequest");
}

fn tol(v: Value) -> Value {
    v
}

#[tokio::test]
async fn toleration_rules_are_enforced_on_pod_create() {
    let s = ApiServer::new();
    let bad = json!([
        tol(json!({ "operator": "Equal", "value": "x" })),
        tol(
            json!({ "key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5 })
        ),
        tol(json!({ "key": "k", "operator": "Exists", "value": "v" })),
        tol(json!({ "key": "k", "operator": "Lt", "value": "3" })),
        tol(json!({ "key": "k", "effect": "Never" })),
    ]);
    let a = post(
        &s,
        "/api/v1/namespaces/default/pods",
        &pod("default", "p", "n1", bad),
    )
    .await;
    assert_status(&a, 422, "Invalid");
    let c = causes(&a.body);
    let fields: Vec<&str> = c.iter().map(|x| x.1.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.tolerations[0].operator",
            "spec.tolerations[1].effect",
            "spec.tolerations[2].operator",
            "spec.tolerations[3].operator",
            "spec.tolerations[4].effect",
        ],
        "{}",
        a.body
    );
    assert!(
        c[0].2
            .contains("operator must be Exists when `key` is empty")
    );
    assert!(
        c[1].2
            .contains("effect must be 'NoExecute' when `tolerationSeconds` is set")
    );
    assert!(
        c[2].2
            .contains("value must be empty when `operator` is 'Exists'")
    );
    assert_eq!(c[3].0, "FieldValueNotSupported");
    assert!(c[3].2.contains("supported values: \"Equal\", \"Exists\""));
    // Negative tolerationSeconds and duplicate tolerations are accepted (docs/semantics.md §8.2).
    let good = json!([
        { "key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -5 },
        { "key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -5 },
        { "operator": "Exists" },
    ]);
    let a = post(
        &s,
        "/api/v1/namespaces/default/pods",
        &pod("default", "p", "n1", good),
    )
    .await;
    assert_eq!(a.status, 201, "{}", a.body);
}

#[tokio::test]
async fn pod_update_may_only_add_tolerations_or_change_their_seconds() {
    let s = ApiServer::new();
    let t0 =
        json!({ "key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30 });
    s.create_pod(pod("default", "p", "n1", json!([t0.clone()])));
    let uri = "/api/v1/namespaces/default/pods/p";
    // Changing tolerationSeconds and adding one is allowed.
    let a = patch(
        &s,
        uri,
        SMP,
        &json!({ "spec": { "tolerations": [
        { "key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10 },
        { "key": "new", "operator": "Exists" } ] } }),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        a.body["metadata"]["generation"], 2,
        "a spec change bumps the pod generation"
    );
    // Removing one is not.
    let a = patch(
        &s,
        uri,
        SMP,
        &json!({ "spec": { "tolerations": [{ "key": "new", "operator": "Exists" }] } }),
    )
    .await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(
        causes(&a.body)[0],
        (
            "FieldValueForbidden".into(),
            "spec.tolerations".into(),
            "Forbidden: existing toleration can not be modified except its tolerationSeconds"
                .into()
        )
    );
    // Other spec fields are immutable.
    let a = patch(
        &s,
        uri,
        SMP,
        &json!({ "spec": { "nodeName": "elsewhere" } }),
    )
    .await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(causes(&a.body)[0].1, "spec");
}

#[tokio::test]
async fn lease_and_metadata_validation() {
    let s = ApiServer::new();
    let a = post(&s, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
        &json!({ "metadata": { "name": "n1" }, "spec": { "holderIdentity": "n1", "leaseDurationSeconds": 0 } })).await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(causes(&a.body)[0].1, "spec.leaseDurationSeconds");
    assert!(
        a.body["message"]
            .as_str()
            .expect("message")
            .starts_with("Lease.coordination.k8s.io \"n1\" is invalid")
    );
    let a = post(
        &s,
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
        &json!({ "metadata": { "name": "n1" }, "spec": { "holderIdentity": 7 } }),
    )
    .await;
    assert_status(&a, 400, "BadRequest");
    let a = post(
        &s,
        "/api/v1/nodes",
        &json!({ "metadata": { "name": "Bad_Name" } }),
    )
    .await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(causes(&a.body)[0].1, "metadata.name");
    let a = post(&s, "/api/v1/nodes", &json!({ "metadata": {} })).await;
    assert_eq!(
        causes(&a.body)[0],
        (
            "FieldValueRequired".into(),
            "metadata.name".into(),
            "Required value: name or generateName is required".into()
        )
    );
    let a = patch(&s, "/api/v1/nodes/none/status", SMP, &json!({})).await;
    assert_status(&a, 404, "NotFound");
    s.create_node(ApiServer::node_json("n1"));
    let a = patch(
        &s,
        "/api/v1/nodes/n1/status",
        SMP,
        &json!({ "status": { "conditions": [{ "type": "Ready" }] } }),
    )
    .await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(causes(&a.body)[0].1, "status.conditions[0].status");
    let a = post(
        &s,
        "/apis/coordination.k8s.io/v1/namespaces/nowhere/leases",
        &json!({ "metadata": { "name": "x" } }),
    )
    .await;
    assert_status(&a, 404, "NotFound");
    assert_eq!(a.body["message"], "namespaces \"nowhere\" not found");
}

// ---------------------------------------------------------------------------------------------
// Errors, routing, authorization
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn errors_are_status_objects_with_real_reasons() {
    let s = seeded();
    let a = get(&s, "/api/v1/nodes/missing").await;
    assert_status(&a, 404, "NotFound");
    assert_eq!(a.body["message"], "nodes \"missing\" not found");
    assert_eq!(
        a.body["details"],
        json!({ "name": "missing", "kind": "nodes" })
    );
    let a = get(
        &s,
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/missing",
    )
    .await;
    assert_eq!(
        a.body["message"],
        "leases.coordination.k8s.io \"missing\" not found"
    );
    assert_eq!(a.body["details"]["group"], "coordination.k8s.io");
    let a = post(&s, "/api/v1/nodes", &ApiServer::node_json("n1")).await;
    assert_status(&a, 409, "AlreadyExists");
    assert_eq!(a.body["message"], "nodes \"n1\" already exists");
    let a = call(
        &s,
        "POST",
        "/api/v1/nodes/n1",
        Some("application/json"),
        "{}",
    )
    .await;
    assert_status(&a, 405, "MethodNotAllowed");
    let a = get(&s, "/api/v1/configmaps").await;
    assert_status(&a, 404, "NotFound");
    let a = get(&s, "/apis/apps/v1/deployments").await;
    assert_eq!(a.status, 404);
    assert_eq!(a.body["kind"], "Status");
    let a = get(&s, "/api/v1/nodes/n1/proxy").await;
    assert_eq!(a.status, 404);
    let a = get(&s, "/api/v1/nodes?fieldSelector=spec.foo%3Dbar").await;
    assert_status(&a, 400, "BadRequest");
    assert_eq!(a.body["message"], "field label not supported: spec.foo");
    let a = get(&s, "/api/v1/nodes?labelSelector=env+in+%28a%2Cb%29").await;
    assert_status(&a, 400, "BadRequest");
    let a = call(&s, "GET", "/api/v1/nodes", None, "").await;
    assert_eq!(a.status, 200);
    let req = http::Request::builder()
        .uri("/api/v1/nodes")
        .header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(kube::client::Body::empty())
        .expect("request");
    assert_eq!(
        s.service().oneshot(req).await.expect("infallible").status(),
        406
    );
}

#[tokio::test]
async fn denied_verbs_are_403_with_the_real_message() {
    let s = seeded();
    s.deny("patch", "nodes", "status");
    let a = patch(&s, "/api/v1/nodes/n1/status", SMP, &json!({})).await;
    assert_status(&a, 403, "Forbidden");
    assert_eq!(
        a.body["message"],
        "nodes \"n1\" is forbidden: User \"system:serviceaccount:kube-system:nodewarden\" cannot patch resource \"nodes/status\" in API group \"\" at the cluster scope"
    );
    // The main resource is still allowed.
    assert_eq!(
        patch(&s, "/api/v1/nodes/n1", SMP, &json!({})).await.status,
        200
    );
    s.deny("create", "leases", "");
    let a = post(
        &s,
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
        &json!({ "metadata": { "name": "n1" } }),
    )
    .await;
    assert_eq!(
        a.body["message"],
        "leases.coordination.k8s.io is forbidden: User \"system:serviceaccount:kube-system:nodewarden\" cannot create resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"kube-node-lease\""
    );
    s.allow_all();
    assert_eq!(
        patch(&s, "/api/v1/nodes/n1/status", SMP, &json!({}))
            .await
            .status,
        200
    );
}

// ---------------------------------------------------------------------------------------------
// Pods, events, lists
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn pod_deletion_is_graceful_unless_grace_is_zero() {
    let s = ApiServer::new();
    s.create_pod(pod("default", "p1", "n1", json!([])));
    s.create_pod(pod("default", "p2", "n1", json!([])));
    let (_, mut w) = Events::open(
        &s,
        &format!(
            "/api/v1/pods?watch=1&resourceVersion={}",
            s.resource_version()
        ),
    )
    .await;
    let a = call(
        &s,
        "DELETE",
        "/api/v1/namespaces/default/pods/p1",
        Some("application/json"),
        &json!({ "kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 30 })
            .to_string(),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["kind"], "Pod");
    assert_eq!(a.body["metadata"]["deletionGracePeriodSeconds"], 30);
    assert!(a.body["metadata"]["deletionTimestamp"].is_string());
    assert!(
        s.pod("default", "p1").is_some(),
        "no kubelet: the pod stays"
    );
    let e = w.next(WAIT).await.expect("event");
    assert_eq!(e["type"], "MODIFIED");
    s.finish_pod_deletion("default", "p1").expect("finish");
    assert_eq!(w.next(WAIT).await.expect("event")["type"], "DELETED");
    let a = call(
        &s,
        "DELETE",
        "/api/v1/namespaces/default/pods/p2?gracePeriodSeconds=0",
        None,
        "",
    )
    .await;
    assert_eq!(a.status, 200);
    let e = w.next(WAIT).await.expect("event");
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some("p2"))
    );
    assert!(s.pods().is_empty());
    // Deleting a node answers a Success Status.
    s.create_node(ApiServer::node_json("n1"));
    let a = call(&s, "DELETE", "/api/v1/nodes/n1", None, "").await;
    assert_eq!(
        (a.status, a.body["kind"].as_str(), a.body["status"].as_str()),
        (200, Some("Status"), Some("Success"))
    );
    assert_eq!(
        call(&s, "DELETE", "/api/v1/nodes/n1", None, "")
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn events_list_across_namespaces_by_involved_object_as_kubectl_describe_does() {
    let s = seeded();
    let uid = s.node("n1").expect("node")["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string();
    let ev = |name: &str, ns: &str, obj: &str| {
        json!({ "metadata": { "name": name, "namespace": ns },
        "involvedObject": { "kind": "Node", "name": obj, "uid": obj }, "reason": "R", "message": "m", "type": "Normal" })
    };
    s.create_event(ev("e1", "default", "n1"));
    s.create_event(ev("e2", "default", "n2"));
    let a = post(
        &s,
        "/api/v1/namespaces/default/events",
        &ev("e3", "default", "n1"),
    )
    .await;
    assert_eq!(a.status, 201);
    // A node event must not claim a namespaced involved object in another namespace.
    let mut bad = ev("e4", "default", "n1");
    bad["involvedObject"]["namespace"] = json!("kube-system");
    assert_eq!(
        post(&s, "/api/v1/namespaces/default/events", &bad)
            .await
            .status,
        422
    );
    let q = format!(
        "/api/v1/events?fieldSelector=involvedObject.name%3Dn1%2CinvolvedObject.namespace%3D%2CinvolvedObject.kind%3DNode%2CinvolvedObject.uid%3D{uid}&limit=500"
    );
    assert_eq!(
        get(&s, &q).await.body["items"]
            .as_array()
            .expect("items")
            .len(),
        0
    );
    let q = "/api/v1/events?fieldSelector=involvedObject.name%3Dn1%2CinvolvedObject.namespace%3D%2CinvolvedObject.kind%3DNode%2CinvolvedObject.uid%3Dn1";
    let items = get(&s, q).await.body["items"].clone();
    let names: Vec<&str> = items
        .as_array()
        .expect("items")
        .iter()
        .map(|e| e["metadata"]["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["e1", "e3"]);
    assert!(items[0].get("kind").is_none(), "list items carry no kind");
    assert_eq!(s.events().len(), 3);
}

#[tokio::test]
async fn pods_field_selector_on_node_and_phase() {
    let s = ApiServer::new();
    s.create_pod(pod("default", "a", "n1", json!([])));
    s.create_pod(pod("kube-system", "b", "n1", json!([])));
    s.create_pod(pod("default", "c", "n2", json!([])));
    s.update_pod_status_as("kubelet", "default", "a", |p| {
        p["status"]["phase"] = json!("Succeeded")
    })
    .expect("status");
    let q = "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed";
    let items = get(&s, q).await.body["items"].clone();
    let names: Vec<&str> = items
        .as_array()
        .expect("items")
        .iter()
        .map(|e| e["metadata"]["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["b"]);
    let items = get(&s, "/api/v1/namespaces/default/pods").await.body["items"].clone();
    assert_eq!(items.as_array().expect("items").len(), 2);
}

#[tokio::test]
async fn paged_lists_are_consistent_snapshots() {
    let s = ApiServer::new();
    for i in 0..5 {
        s.create_node(ApiServer::node_json(&format!("n{i}")));
    }
    let first = get(&s, "/api/v1/nodes?limit=2").await.body;
    assert_eq!(first["items"].as_array().expect("items").len(), 2);
    assert_eq!(first["metadata"]["remainingItemCount"], 3);
    let token = first["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_string();
    // Changes after the first page do not show in later pages.
    s.update_node_as("x", "n3", |n| {
        n["metadata"]["labels"] = json!({ "changed": "yes" })
    })
    .expect("update");
    s.delete("nodes", "", "n4", None).expect("delete");
    let rest = get(&s, &format!("/api/v1/nodes?limit=10&continue={token}"))
        .await
        .body;
    let items = rest["items"].as_array().expect("items");
    let names: Vec<&str> = items
        .iter()
        .map(|e| e["metadata"]["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["n2", "n3", "n4"]);
    assert!(
        items[1]["metadata"]
            .get("labels")
            .is_some_and(|l| l.get("changed").is_none())
    );
    assert_eq!(
        rest["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
    // Once the history no longer covers the snapshot, the token is expired.
    s.compact(0);
    let a = get(&s, &format!("/api/v1/nodes?limit=10&continue={token}")).await;
    assert_status(&a, 410, "Expired");
    let a = get(&s, "/api/v1/nodes?resourceVersion=999999").await;
    assert_eq!(a.status, 504);
}

// ---------------------------------------------------------------------------------------------
// Watch
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn watch_sends_added_modified_deleted() {
    let s = seeded();
    let (status, mut w) = Events::open(&s, "/api/v1/nodes?watch=1").await;
    assert_eq!(status, 200);
    let e = w.next(WAIT).await.expect("event");
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("n1"))
    );
    s.update_node_as("x", "n1", |n| n["metadata"]["labels"] = json!({ "a": "b" }))
        .expect("update");
    let e = w.next(WAIT).await.expect("event");
    assert_eq!(e["type"], "MODIFIED");
    assert_eq!(e["object"]["metadata"]["labels"]["a"], "b");
    assert_eq!(rv(&e["object"]), s.resource_version());
    s.delete("nodes", "", "n1", None).expect("delete");
    let e = w.next(WAIT).await.expect("event");
    assert_eq!(e["type"], "DELETED");
    assert_eq!(rv(&e["object"]), s.resource_version());
    assert!(w.quiet(Duration::from_secs(30)).await);
}

#[tokio::test(start_paused = true)]
async fn watch_sends_bookmarks_only_when_allowed() {
    let s = seeded();
    s.set_bookmark_interval(Duration::from_secs(10));
    let now = s.resource_version();
    let (_, mut plain) =
        Events::open(&s, &format!("/api/v1/nodes?watch=1&resourceVersion={now}")).await;
    let (_, mut w) = Events::open(
        &s,
        &format!("/api/v1/nodes?watch=1&resourceVersion={now}&allowWatchBookmarks=true"),
    )
    .await;
    let start = tokio::time::Instant::now();
    let e = w.next(Duration::from_secs(15)).await.expect("bookmark");
    assert_eq!(e["type"], "BOOKMARK");
    assert!(start.elapsed() >= Duration::from_secs(10));
    assert_eq!(
        e["object"],
        json!({ "kind": "Node", "apiVersion": "v1", "metadata": { "resourceVersion": now.to_string() } })
    );
    assert!(
        plain.quiet(Duration::from_secs(30)).await,
        "no bookmarks unless asked"
    );
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_sends_the_state_then_a_bookmark_that_ends_it_and_needs_the_gate() {
    let s = seeded();
    s.create_node(ApiServer::node_json("n2"));
    let now = s.resource_version();
    const LIST: &str = "/api/v1/nodes?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
    let (status, mut w) = Events::open(&s, &format!("{LIST}&resourceVersion=0")).await;
    assert_eq!(status, 200);
    let mut added = Vec::new();
    let end = loop {
        let e = w
            .next(WAIT)
            .await
            .expect("an event before the end of the initial ones");
        if e["type"] == "BOOKMARK" {
            break e;
        }
        assert_eq!(e["type"], "ADDED", "{e}");
        added.push(e["object"]["metadata"]["name"].as_str().map(String::from));
    };
    assert_eq!(added, [Some("n1".into()), Some("n2".into())]);
    assert_eq!(
        end["object"],
        json!({ "kind": "Node", "apiVersion": "v1", "metadata": {
            "resourceVersion": now.to_string(),
            "annotations": { "k8s.io/initial-events-end": "true" } } })
    );
    // Then the changes, as any watch.
    s.delete("nodes", "", "n2", None).expect("delete");
    let e = w.next(WAIT).await.expect("event");
    assert_eq!(e["type"], "DELETED");
    // A revision the server has not reached is refused as a list refuses it.
    let a = get(&s, &format!("{LIST}&resourceVersion={}", now + 100)).await;
    assert_status(&a, 504, "Timeout");

    // `validateWatchOptions`: each of the two parameters needs the other.
    let a = get(&s, "/api/v1/nodes?watch=true&sendInitialEvents=true").await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(
        a.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
    );
    let a = get(
        &s,
        "/api/v1/nodes?watch=true&resourceVersionMatch=NotOlderThan",
    )
    .await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(
        a.body["details"]["causes"][0]["message"],
        "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
    );
    // The WatchList gate off (Kubernetes 1.33's default): the streaming list is refused.
    s.set_watch_list(false);
    let a = get(&s, &format!("{LIST}&resourceVersion=0")).await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(
        a.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
    );
    assert_eq!(a.body["details"]["kind"], "ListOptions");
    assert_eq!(a.body["details"]["group"], "meta.k8s.io");
    assert_eq!(
        a.body["details"]["causes"][0]["reason"],
        "FieldValueForbidden"
    );
}

#[tokio::test(start_paused = true)]
async fn watch_resumes_after_a_resource_version_and_a_compacted_one_is_410() {
    let s = ApiServer::with_history(3);
    s.create_node(ApiServer::node_json("n1"));
    let from = s.resource_version();
    for i in 0..2 {
        s.update_node_as("x", "n1", |n| {
            n["metadata"]["labels"] = json!({ "i": i.to_string() })
        })
        .expect("update");
    }
    let (_, mut w) = Events::open(
        &s,
        &format!("/api/v1/nodes?watch=true&resourceVersion={from}"),
    )
    .await;
    for i in 0..2 {
        let e = w.next(WAIT).await.expect("event");
        assert_eq!(e["type"], "MODIFIED");
        assert_eq!(e["object"]["metadata"]["labels"]["i"], i.to_string());
    }
    assert!(
        w.quiet(Duration::from_secs(1)).await,
        "exactly the events after the resourceVersion"
    );
    for i in 2..6 {
        s.update_node_as("x", "n1", |n| {
            n["metadata"]["labels"] = json!({ "i": i.to_string() })
        })
        .expect("update");
    }
    let (status, mut old) = Events::open(
        &s,
        &format!("/api/v1/nodes?watch=true&resourceVersion={from}"),
    )
    .await;
    assert_eq!(
        status, 200,
        "the real server answers 200 and an ERROR event"
    );
    let e = old.next(WAIT).await.expect("error event");
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["kind"], "Status");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
    assert!(
        e["object"]["message"]
            .as_str()
            .expect("message")
            .starts_with(&format!("too old resource version: {from} ("))
    );
    assert!(old.next(WAIT).await.is_none(), "then the stream ends");
}

#[tokio::test(start_paused = true)]
async fn watch_field_selector_filters_and_moves_objects_in_and_out() {
    let s = ApiServer::new();
    s.create_pod(pod("default", "mine", "n1", json!([])));
    s.create_pod(pod("default", "other", "n2", json!([])));
    let (_, mut w) =
        Events::open(&s, "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1").await;
    let e = w.next(WAIT).await.expect("event");
    assert_eq!(e["object"]["metadata"]["name"], "mine");
    s.update_pod_status_as("kubelet", "default", "other", |p| {
        p["status"]["phase"] = json!("Running")
    })
    .expect("status");
    assert!(
        w.quiet(Duration::from_secs(1)).await,
        "other node's pods are filtered out"
    );
    let (_, mut running) = Events::open(
        &s,
        "/api/v1/pods?watch=1&fieldSelector=status.phase%3DRunning",
    )
    .await;
    assert_eq!(
        running.next(WAIT).await.expect("event")["object"]["metadata"]["name"],
        "other"
    );
    s.update_pod_status_as("kubelet", "default", "other", |p| {
        p["status"]["phase"] = json!("Succeeded")
    })
    .expect("status");
    assert_eq!(
        running.next(WAIT).await.expect("event")["type"],
        "DELETED",
        "leaving the selector is DELETED"
    );
    let (_, mut by_name) = Events::open(&s, "/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dmine&labelSelector=app%3Dx").await;
    assert!(
        by_name.quiet(Duration::from_secs(1)).await,
        "label selector applies too"
    );
    let (status, _) =
        Events::open(&s, "/api/v1/pods?watch=1&fieldSelector=spec.hostname%3Dx").await;
    assert_eq!(status, 400);
}

#[tokio::test(start_paused = true)]
async fn drop_watches_and_timeout_seconds_end_streams() {
    let s = seeded();
    let (_, mut a) = Events::open(&s, "/api/v1/nodes?watch=1").await;
    let (_, mut b) = Events::open(&s, "/api/v1/nodes?watch=1&timeoutSeconds=30").await;
    assert_eq!(a.next(WAIT).await.expect("added")["type"], "ADDED");
    assert_eq!(b.next(WAIT).await.expect("added")["type"], "ADDED");
    let start = tokio::time::Instant::now();
    assert!(
        b.next(Duration::from_secs(40)).await.is_none(),
        "timeoutSeconds ends the stream"
    );
    assert!(start.elapsed() >= Duration::from_secs(30));
    assert_eq!(s.open_watches(), 1);
    s.drop_watches();
    assert!(a.next(WAIT).await.is_none());
    assert_eq!(s.open_watches(), 0);
}

// ---------------------------------------------------------------------------------------------
// Fault injection and recording
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn faults_fail_the_next_requests_on_a_route() {
    let s = seeded();
    let route = ("PATCH", "/api/v1/nodes/*/status");
    s.faults()
        .fail_next(route, 1, Fault::Status500)
        .fail_next(
            route,
            1,
            Fault::Status429 {
                retry_after_secs: 3,
            },
        )
        .fail_next(route, 1, Fault::Status409);
    let uri = "/api/v1/nodes/n1/status";
    assert_status(&patch(&s, uri, SMP, &json!({})).await, 500, "InternalError");
    let a = patch(&s, uri, SMP, &json!({})).await;
    assert_status(&a, 429, "TooManyRequests");
    assert_eq!(
        a.headers.get("Retry-After").and_then(|v| v.to_str().ok()),
        Some("3")
    );
    assert_eq!(a.body["details"]["retryAfterSeconds"], 3);
    let a = patch(&s, uri, SMP, &json!({})).await;
    assert_status(&a, 409, "Conflict");
    assert!(
        a.body["message"]
            .as_str()
            .expect("message")
            .starts_with("Operation cannot be fulfilled on nodes \"n1\"")
    );
    assert_eq!(
        patch(&s, uri, SMP, &json!({})).await.status,
        200,
        "only the next N fail"
    );
    assert_eq!(
        get(&s, "/api/v1/nodes/n1").await.status,
        200,
        "other routes unaffected"
    );
    let statuses: Vec<Option<u16>> = s.requests().iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [Some(500), Some(429), Some(409), Some(200), Some(200)]
    );
}

#[tokio::test(start_paused = true)]
async fn latency_and_black_hole_use_the_tokio_clock() {
    let s = seeded();
    s.faults()
        .latency(("GET", "/api/v1/nodes/*"), Duration::from_secs(3));
    let start = tokio::time::Instant::now();
    assert_eq!(get(&s, "/api/v1/nodes/n1").await.status, 200);
    assert!(
        start.elapsed() >= Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    s.faults()
        .latency(("GET", "/api/v1/nodes/*"), Duration::ZERO);
    s.faults().black_hole(("PATCH", "/api/v1/nodes/n1"), true);
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        patch(&s, "/api/v1/nodes/n1", SMP, &json!({})),
    )
    .await;
    assert!(r.is_err(), "a black-holed request never answers");
    let rec = s.requests();
    let last = rec.last().expect("recorded");
    assert_eq!((last.method.as_str(), last.status), ("PATCH", None));
    s.faults().black_hole(("PATCH", "/api/v1/nodes/n1"), false);
    assert_eq!(
        patch(&s, "/api/v1/nodes/n1", SMP, &json!({})).await.status,
        200
    );
}

#[tokio::test]
async fn requests_are_recorded_with_their_answers() {
    let s = seeded();
    s.clear_requests();
    let body = json!({ "metadata": { "labels": { "x": "1" } } });
    let a = call(
        &s,
        "PATCH",
        "/api/v1/nodes/n1?fieldManager=me",
        Some(MERGE),
        &body.to_string(),
    )
    .await;
    assert_eq!(a.status, 200);
    let r = s.requests();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].method, "PATCH");
    assert_eq!(r[0].path, "/api/v1/nodes/n1");
    assert_eq!(r[0].param("fieldManager"), Some("me"));
    assert_eq!(r[0].content_type.as_deref(), Some(MERGE));
    assert_eq!(r[0].body_json(), body);
    assert_eq!(r[0].status, Some(200));
    assert!(r[0].response_size.is_some_and(|n| n > 100));
    let mf = s.node("n1").expect("node")["metadata"]["managedFields"].clone();
    assert!(
        mf.as_array()
            .expect("list")
            .iter()
            .any(|e| e["manager"] == "me"),
        "manager from ?fieldManager"
    );
    call(
        &s,
        "PATCH",
        "/api/v1/nodes/n1",
        Some(MERGE),
        &json!({ "metadata": { "labels": { "y": "1" } } }).to_string(),
    )
    .await;
    let mf = s.node("n1").expect("node")["metadata"]["managedFields"].clone();
    assert!(
        mf.as_array()
            .expect("list")
            .iter()
            .any(|e| e["manager"] == "tester"),
        "manager from the User-Agent: {mf}"
    );
}

// ---------------------------------------------------------------------------------------------
// Through kube::Client
// ---------------------------------------------------------------------------------------------

mod through_kube {
    use super::*;
    use futures_util::StreamExt;
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::Node;
    use kube::api::{Api, Patch, PatchParams, PostParams};
    use kube::runtime::{WatchStreamExt, watcher};

    async fn exercise(s: &ApiServer, client: kube::Client) {
        let nodes: Api<Node> = Api::all(client.clone());
        let n = nodes.get("n1").await.expect("get node");
        assert_eq!(n.metadata.name.as_deref(), Some("n1"));
        let taints = n
            .spec
            .as_ref()
            .and_then(|sp| sp.taints.clone())
            .expect("taints");
        assert_eq!(taints[0].key, "a");

        let pp = PatchParams::apply("nodewarden");
        let status = json!({ "status": { "conditions": [{ "type": "MemoryPressure", "status": "True", "reason": "R", "message": "m" }] } });
        let pp_update = PatchParams {
            field_manager: pp.field_manager.clone(),
            ..PatchParams::default()
        };
        let patched = nodes
            .patch_status("n1", &pp_update, &Patch::Strategic(&status))
            .await
            .expect("patch_status");
        let conds = patched
            .status
            .and_then(|st| st.conditions)
            .expect("conditions");
        assert_eq!(
            conds.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(),
            ["Ready", "MemoryPressure"]
        );

        let err = nodes.get("nope").await.expect_err("404");
        match err {
            kube::Error::Api(e) => {
                assert_eq!(e.code, 404);
                assert_eq!(e.reason, "NotFound");
            }
            other => panic!("unexpected {other:?}"),
        }

        let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
        let lease: Lease = serde_json::from_value(json!({ "metadata": { "name": "n1" },
            "spec": { "holderIdentity": "n1", "leaseDurationSeconds": 40 } }))
        .expect("lease");
        let created = leases
            .create(&PostParams::default(), &lease)
            .await
            .expect("create lease");
        let mut renewed = created.clone();
        renewed.spec.as_mut().expect("spec").lease_duration_seconds = Some(41);
        let replaced = leases
            .replace("n1", &PostParams::default(), &renewed)
            .await
            .expect("replace");
        assert!(
            rv(&serde_json::to_value(&replaced).expect("json"))
                > rv(&serde_json::to_value(&created).expect("json"))
        );
        // `renewed` still carries the old resourceVersion: a stale replace is 409.
        match leases.replace("n1", &PostParams::default(), &renewed).await {
            Err(kube::Error::Api(e)) => {
                assert_eq!(e.code, 409);
                assert_eq!(e.reason, "Conflict");
            }
            other => panic!("expected 409, got {other:?}"),
        }
        assert_eq!(
            s.lease("kube-node-lease", "n1").expect("stored")["spec"]["leaseDurationSeconds"],
            41
        );

        // kube's watcher (list, then watch from the list's resourceVersion) sees an update.
        let mut stream = watcher(nodes.clone(), watcher::Config::default())
            .applied_objects()
            .boxed();
        let first = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("in time")
            .expect("item")
            .expect("ok");
        assert_eq!(first.metadata.name.as_deref(), Some("n1"));
        s.update_node_as("someone", "n1", |n| {
            n["metadata"]["labels"] = json!({ "seen": "yes" })
        })
        .expect("update");
        let mut seen = false;
        for _ in 0..10 {
            let Ok(Some(Ok(n))) = tokio::time::timeout(WAIT, stream.next()).await else {
                break;
            };
            if n.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("seen"))
                .is_some()
            {
                seen = true;
                break;
            }
        }
        assert!(seen, "the watcher saw the update");
        let watches: Vec<_> = s
            .requests()
            .into_iter()
            .filter(|r| r.param("watch").is_some())
            .collect();
        assert!(!watches.is_empty());
        assert_eq!(watches[0].param("allowWatchBookmarks"), Some("true"));
    }

    #[tokio::test]
    async fn in_process_client() {
        let s = seeded();
        exercise(&s, s.client()).await;
    }

    #[tokio::test]
    async fn in_process_client_with_paused_clock() {
        let s = seeded();
        s.faults()
            .latency(("GET", "/api/v1/nodes/n1"), Duration::from_secs(2));
        tokio::time::pause();
        let start = tokio::time::Instant::now();
        let nodes: Api<Node> = Api::all(s.client());
        nodes.get("n1").await.expect("get");
        assert!(start.elapsed() >= Duration::from_secs(2));
    }

    #[tokio::test]
    async fn loopback_client_from_kubeconfig() {
        let s = seeded();
        let lb = s.serve_loopback();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = lb.write_kubeconfig(dir.path());
        let kc = kube::config::Kubeconfig::read_from(&path).expect("kubeconfig");
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("config");
        let client = kube::Client::try_from(config).expect("client");
        exercise(&s, client).await;
        let r = s.requests();
        assert!(
            r.iter()
                .all(|x| x.authorization.as_deref() == Some("Bearer nodewarden-test-token"))
        );
        drop(lb);
    }
}

// ---------------------------------------------------------------------------------------------
// kubectl against the loopback server
// ---------------------------------------------------------------------------------------------

use support::kubectl::{available as kubectl_available, run as kubectl};

/// `/readyz` answers as the real server's health endpoint: `ok` as text whatever the client
/// accepts, 500 naming the failed check when a check fails, 405 for a write, and 401 before
/// anything else when the credential is wrong (authentication runs first, as for every path).
/// kubectl reads it with `get --raw`, and kube's text request is answered.
#[tokio::test]
async fn readyz_answers_as_the_health_endpoint_does() {
    let s = seeded();
    let raw = |s: &ApiServer, method: &'static str, auth: Option<&'static str>| {
        let s = s.clone();
        async move {
            let mut b = http::Request::builder()
                .method(method)
                .uri("/readyz")
                .header("Accept", "text/html");
            if let Some(a) = auth {
                b = b.header("Authorization", a);
            }
            let req = b
                .body(kube::client::Body::from(Vec::new()))
                .expect("request");
            let resp = s.service().oneshot(req).await.expect("infallible");
            let status = resp.status().as_u16();
            let ct = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let bytes = resp.into_body().collect().await.expect("body").to_bytes();
            (status, ct, String::from_utf8_lossy(&bytes).into_owned())
        }
    };
    assert_eq!(
        raw(&s, "GET", None).await,
        (200, "text/plain; charset=utf-8".into(), "ok".into())
    );
    assert_eq!(raw(&s, "POST", None).await.0, 405);
    s.set_ready(false);
    let (status, _, body) = raw(&s, "GET", None).await;
    assert_eq!(status, 500);
    assert!(
        body.contains("[-]etcd failed") && body.contains("readyz check failed"),
        "{body}"
    );
    s.set_ready(true);
    s.require_bearer(Some("t0ken"));
    assert_eq!(raw(&s, "GET", Some("Bearer other")).await.0, 401);
    assert_eq!(raw(&s, "GET", Some("Bearer t0ken")).await.0, 200);
    s.require_bearer(None);
    // The agent's probe of the kubelet's path (`api::node_path_ready`): ready only for a 2xx.
    let requests = nodewarden::api::Requests::new(Duration::from_secs(5));
    let probe = |s: &ApiServer| {
        let (client, requests) = (s.client(), requests.clone());
        async move { nodewarden::api::node_path_ready(&client, &requests, Duration::from_secs(1)).await }
    };
    assert!(probe(&s).await);
    s.set_ready(false);
    assert!(!probe(&s).await);
    s.set_ready(true);
    if !support::require(kubectl_available(), "the kubectl binary") {
        return;
    }
    let lb = s.serve_loopback();
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = lb.write_kubeconfig(dir.path());
    let (ok, out, err) =
        kubectl(&kc, &dir.path().join("cache"), &["get", "--raw", "/readyz"]).await;
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "ok");
}

#[tokio::test]
async fn kubectl_get_describe_and_taint() {
    if !support::require(kubectl_available(), "the kubectl binary") {
        return;
    }
    let s = seeded();
    s.update_node_status_as("kubelet", "n1", |n| {
        n["status"]["conditions"] = json!([cond("Ready", "True"), cond("MemoryPressure", "False")])
    })
    .expect("status");
    let lb = s.serve_loopback();
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = lb.write_kubeconfig(dir.path());
    let cache = dir.path().join("cache");

    let (ok, out, err) = kubectl(&kc, &cache, &["get", "nodes"]).await;
    assert!(ok, "{err}");
    assert!(out.lines().any(|l| l.starts_with("n1 ")), "{out}");

    let (ok, out, err) = kubectl(&kc, &cache, &["get", "node", "n1", "-o", "json"]).await;
    assert!(ok, "{err}");
    let node: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(node["metadata"]["name"], "n1");
    assert_eq!(node["spec"]["taints"][0]["key"], "a");

    let (ok, out, err) = kubectl(&kc, &cache, &["describe", "node", "n1"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("Taints:             a=1:NoSchedule"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("MemoryPressure") && l.contains("False")),
        "{out}"
    );
    let describe_reqs: Vec<String> = s
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        describe_reqs.contains(&"GET /api/v1/events".to_string()),
        "{describe_reqs:?}"
    );
    assert!(describe_reqs.contains(
        &"GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1".to_string()
    ));

    let t = |k: &str, v: &str, e: &str| json!({ "key": k, "value": v, "effect": e });
    let steps: [(&str, Value); 4] = [
        (
            "key1=value1:NoSchedule",
            json!([t("key1", "value1", "NoSchedule"), t("a", "1", "NoSchedule")]),
        ),
        (
            "key1=value1:NoExecute",
            json!([
                t("key1", "value1", "NoExecute"),
                t("key1", "value1", "NoSchedule"),
                t("a", "1", "NoSchedule")
            ]),
        ),
        (
            "key2=value2:NoSchedule",
            json!([
                t("key2", "value2", "NoSchedule"),
                t("key1", "value1", "NoExecute"),
                t("key1", "value1", "NoSchedule"),
                t("a", "1", "NoSchedule")
            ]),
        ),
        (
            "key1:NoSchedule-",
            json!([
                t("key2", "value2", "NoSchedule"),
                t("key1", "value1", "NoExecute"),
                t("a", "1", "NoSchedule")
            ]),
        ),
    ];
    for (arg, want) in steps {
        s.clear_requests();
        let (ok, _, err) = kubectl(&kc, &cache, &["taint", "nodes", "n1", arg]).await;
        assert!(ok, "kubectl taint {arg}: {err}");
        assert_eq!(
            s.node("n1").expect("node")["spec"]["taints"],
            want,
            "after {arg}"
        );
        // What kubectl sent: the whole list as a strategic-merge patch, no resourceVersion.
        let patches: Vec<_> = s
            .requests()
            .into_iter()
            .filter(|r| r.method == "PATCH")
            .collect();
        assert_eq!(patches.len(), 1, "after {arg}");
        assert_eq!(patches[0].content_type.as_deref(), Some(SMP));
        assert_eq!(patches[0].param("fieldManager"), Some("kubectl-taint"));
        let body = patches[0].body_json();
        assert_eq!(body, json!({ "spec": { "taints": want } }), "after {arg}");
        assert!(body.pointer("/metadata/resourceVersion").is_none());
    }
    let mf = s.node("n1").expect("node")["metadata"]["managedFields"].clone();
    assert!(
        mf.as_array()
            .expect("list")
            .iter()
            .any(|e| e["manager"] == "kubectl-taint"
                && e["fieldsV1"]["f:spec"].get("f:taints").is_some()),
        "{mf}"
    );

    // A bad taint is rejected by the server's validation, not by us pretending.
    let (ok, _, err) = kubectl(
        &kc,
        &cache,
        &[
            "patch",
            "node",
            "n1",
            "-p",
            r#"{"spec":{"taints":[{"key":"x","effect":"Bogus"}]}}"#,
        ],
    )
    .await;
    assert!(!ok);
    assert!(err.contains("Unsupported value: \"Bogus\""), "{err}");
    drop(lb);
}

// ---------------------------------------------------------------------------------------------
// Robustness
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn malformed_requests_are_answered_not_panicked_on() {
    let s = seeded();
    s.create_pod(pod("default", "p", "n1", json!([])));
    let bodies = [
        "",
        "null",
        "[]",
        "5",
        "\"x\"",
        "{\"metadata\":5}",
        "{\"metadata\":{\"name\":5}}",
        "{\"spec\":[]}",
        "{\"spec\":{\"taints\":[5]}}",
        "{\"status\":{\"conditions\":{}}}",
        "{\"metadata\":{\"labels\":{\"a\":1}}}",
        "[{\"op\":\"replace\",\"path\":\"\",\"value\":5}]",
        "[{\"op\":\"move\",\"from\":\"/spec\",\"path\":\"/spec/x\"}]",
        "[{\"op\":\"add\",\"path\":\"/spec/taints/99999999999999999999\",\"value\":1}]",
        "{\"$patch\":\"delete\"}",
        "{\"spec\":{\"$retainKeys\":5}}",
        "{\"status\":{\"$setElementOrder/conditions\":5,\"conditions\":[]}}",
    ];
    let uris = [
        "/api/v1/nodes",
        "/api/v1/nodes/n1",
        "/api/v1/nodes/n1/status",
        "/api/v1/namespaces/default/pods/p",
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
        "/api/v1/namespaces/default/events",
    ];
    let mut answered = 0;
    for uri in uris {
        for body in bodies {
            for (method, ct) in [
                ("POST", "application/json"),
                ("PUT", "application/json"),
                ("PATCH", SMP),
                ("PATCH", MERGE),
                ("PATCH", JSONPATCH),
                ("DELETE", "application/json"),
            ] {
                let a = call(&s, method, uri, Some(ct), body).await;
                assert!(
                    a.status == 200
                        || a.status == 201
                        || (400..500).contains(&a.status)
                        || a.status == 500,
                    "{method} {uri} {body}: {}",
                    a.status
                );
                if a.status >= 400 {
                    assert_eq!(
                        a.body["kind"], "Status",
                        "{method} {uri} {body}: {}",
                        a.body
                    );
                }
                answered += 1;
            }
        }
    }
    assert_eq!(answered, uris.len() * bodies.len() * 6);
    // Extreme numbers.
    let a = call(
        &s,
        "DELETE",
        "/api/v1/namespaces/default/pods/p?gracePeriodSeconds=9223372036854775807",
        None,
        "",
    )
    .await;
    assert_eq!(a.status, 200);
    s.create_node(ApiServer::node_json("n9"));
    let (status, mut w) = Events::open(
        &s,
        "/api/v1/nodes?watch=1&timeoutSeconds=18446744073709551615",
    )
    .await;
    assert_eq!(status, 200);
    assert!(w.next(WAIT).await.is_some());
    for q in [
        "/api/v1/nodes?limit=x",
        "/api/v1/nodes?resourceVersion=abc",
        "/api/v1/nodes?continue=zz",
        "/api/v1/nodes?fieldSelector=%ZZ",
        "/api/v1/nodes?watch=1&resourceVersion=-1",
    ] {
        let a = get(&s, q).await;
        assert_eq!(a.status, 400, "{q}: {}", a.body);
    }
}

#[tokio::test(start_paused = true)]
async fn watch_on_an_object_path_watches_that_object_only() {
    let s = seeded();
    s.create_node(ApiServer::node_json("n2"));
    let (status, mut w) = Events::open(&s, "/api/v1/nodes/n2?watch=true").await;
    assert_eq!(status, 200);
    assert_eq!(
        w.next(WAIT).await.expect("added")["object"]["metadata"]["name"],
        "n2"
    );
    s.update_node_as("x", "n1", |n| n["metadata"]["labels"] = json!({ "a": "1" }))
        .expect("update");
    assert!(w.quiet(Duration::from_secs(1)).await);
    s.update_node_as("x", "n2", |n| n["metadata"]["labels"] = json!({ "a": "1" }))
        .expect("update");
    assert_eq!(w.next(WAIT).await.expect("modified")["type"], "MODIFIED");
}

// ---------------------------------------------------------------------------------------------
// Authentication and garbage answers
// ---------------------------------------------------------------------------------------------

async fn get_with(s: &ApiServer, uri: &str, authorization: Option<&str>) -> Answer {
    let mut b = http::Request::builder().method("GET").uri(uri);
    if let Some(a) = authorization {
        b = b.header("Authorization", a);
    }
    let req = b.body(kube::client::Body::empty()).expect("request");
    let resp = s.service().oneshot(req).await.expect("infallible");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    Answer {
        status,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

#[tokio::test]
async fn with_authentication_on_only_the_exact_bearer_token_is_served() {
    let s = seeded();
    let uri = "/api/v1/nodes/n1";
    assert_eq!(get_with(&s, uri, None).await.status, 200, "off by default");
    s.require_bearer(Some("t0ken"));
    for bad in [
        None,
        Some("Bearer t0ken2"),
        Some("Bearer t0ke"),
        Some("bearer t0ken"),
        Some("Basic dDBrZW4="),
    ] {
        let a = get_with(&s, uri, bad).await;
        assert_status(&a, 401, "Unauthorized");
        assert_eq!(a.body["message"], "Unauthorized", "{bad:?}");
    }
    assert_eq!(get_with(&s, uri, Some("Bearer t0ken")).await.status, 200);
    let recorded = s.requests();
    assert_eq!(recorded.last().and_then(|r| r.status), Some(200));
    assert_eq!(
        recorded.iter().filter(|r| r.status == Some(401)).count(),
        5,
        "refusals are recorded"
    );
}

#[tokio::test]
async fn a_garbage_fault_answers_200_with_a_json_string_of_the_asked_size() {
    let s = seeded();
    s.faults().fail_next(
        ("GET", "/api/v1/nodes/*"),
        1,
        Fault::Garbage200 { bytes: 4096 },
    );
    let a = get(&s, "/api/v1/nodes/n1").await;
    assert_eq!(a.status, 200);
    let text = a.body.as_str().expect("a JSON string, not an object");
    assert_eq!(text.len() + 2, 4096);
    assert_eq!(
        s.requests().last().and_then(|r| r.response_size),
        Some(4096)
    );
    // One answer only: the next one is the real Node.
    assert_eq!(get(&s, "/api/v1/nodes/n1").await.body["kind"], "Node");
}

// ---------------------------------------------------------------------------------------------
// The oracle shares no code with what it checks
// ---------------------------------------------------------------------------------------------

/// The test server is the oracle the agent is checked against: it validates with code of its
/// own, and `tests/support` names nothing of the crate under test except the types a test needs
/// to drive the agent (listed here, each with why). A bug in the agent's validator or planner
/// cannot then be agreed with by the server that should catch it.
#[test]
fn tests_support_imports_only_the_listed_types_of_the_crate_under_test() {
    // (file under tests/support, item of `nodewarden` it may name, why)
    const ALLOWED: &[(&str, &str, &str)] = &[
        // The fixture cgroup tree is laid out by QoS class, as the kubelet lays it out.
        (
            "cgroup.rs",
            "core::qos::QosClass",
            "a pod's QoS class names its cgroup",
        ),
        // The fixture builds the layout the terminator is handed.
        (
            "cgroup.rs",
            "terminate::CgroupDriver",
            "the layout handed to the terminator",
        ),
        (
            "cgroup.rs",
            "terminate::CgroupLayout",
            "the layout handed to the terminator",
        ),
        (
            "cgroup.rs",
            "terminate::CgroupVersion",
            "the layout handed to the terminator",
        ),
        (
            "lab.rs",
            "core::qos::QosClass",
            "pods placed in their QoS cgroups",
        ),
        (
            "lab.rs",
            "terminate::CgroupDriver",
            "the agent's configured cgroup driver",
        ),
        (
            "lab.rs",
            "terminate::CgroupVersion",
            "the agent's configured cgroup version",
        ),
        // A scripted sampling source stands in for /proc: the agent's input types.
        (
            "switch.rs",
            "agent::Reading",
            "the sampling edge a test drives",
        ),
        (
            "switch.rs",
            "agent::Source",
            "the sampling edge a test drives",
        ),
        (
            "switch.rs",
            "core::signal::Observation",
            "readings the scripted source returns",
        ),
        (
            "switch.rs",
            "core::signal::Observations",
            "readings the scripted source returns",
        ),
        (
            "switch.rs",
            "core::signal::Signal",
            "readings the scripted source returns",
        ),
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support");
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 20, "read only {} files", files.len());
    // Built so that the needle does not match this test's own source elsewhere.
    let krate = ["node", "warden::"].concat();
    let mut named = std::collections::BTreeSet::new();
    let mut offenders = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .to_string();
        // Code only: a comment may name what it does not use.
        let text: String = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| {
                if l.trim_start().starts_with("//") {
                    ""
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        for (at, _) in text.match_indices(&krate) {
            // The path after `nodewarden::`, with a `{A, B}` group expanded.
            let rest = &text[at + krate.len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || "_:{}, \n".contains(c)))
                .unwrap_or(rest.len());
            let path_text: String = rest[..end].split_whitespace().collect();
            let items: Vec<String> = match path_text.split_once('{') {
                Some((base, group)) => group
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(|s| format!("{base}{s}"))
                    .collect(),
                None => vec![path_text.trim_end_matches([',', '}']).to_string()],
            };
            for item in items {
                if ALLOWED.iter().any(|(f, i, _)| *f == rel && *i == item) {
                    named.insert((rel.clone(), item));
                } else {
                    let line = text[..at].matches('\n').count() + 1;
                    offenders.push(format!("tests/support/{rel}:{line}: {item}"));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "tests/support names items of the crate under test that are not on the list (the \
         test server must validate with its own code): {offenders:#?}"
    );
    let unused: Vec<_> = ALLOWED
        .iter()
        .filter(|(f, i, _)| !named.contains(&(f.to_string(), i.to_string())))
        .collect();
    assert!(unused.is_empty(), "listed but no longer named: {unused:#?}");
}

/// The oracle's name rules against the upstream table tests
/// (`staging/src/k8s.io/apimachinery/pkg/util/validation/validation_test.go`:
/// `TestIsQualifiedName`, `TestIsValidLabelValue`, `TestIsDNS1123Label`,
/// `TestIsDNS1123Subdomain`).
#[test]
fn the_oracles_name_rules_follow_the_upstream_tables() {
    use support::apiserver::names::{
        dns_label_errors, dns_subdomain_errors, label_value_errors, qualified_name_errors,
    };
    let a = |n: usize| "a".repeat(n);
    for ok in [
        "simple".to_string(),
        "now-with-dashes".into(),
        "1-starts-with-num".into(),
        "1234".into(),
        "simple/simple".into(),
        "now-with-dashes/simple".into(),
        "now.with.dots/now-with-dashes".into(),
        "now-with.dashes-and.dots/now_with.dashes-and_dots".into(),
        "new.io/and-this.is_CAPS".into(),
        "k8s.io/Kube.Proxy".into(),
        a(63),
        format!("{}/{}", a(253), a(63)),
    ] {
        assert_eq!(qualified_name_errors(&ok), Vec::<String>::new(), "{ok:?}");
    }
    for bad in [
        "nospecialchars%^=@".to_string(),
        "cantendwithadash-".into(),
        "-cantstartwithadash-".into(),
        "only/one/slash".into(),
        "Example.com/abc".into(),
        "example_com/abc".into(),
        "example.com/".into(),
        "/simple".into(),
        "".into(),
        a(64),
        format!("{}/abc", a(254)),
    ] {
        assert!(!qualified_name_errors(&bad).is_empty(), "{bad:?} must fail");
    }
    for ok in [
        "",
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "end-with-num-1",
        "1234",
        "UpperCase",
        "a.b_c-d",
    ] {
        assert_eq!(label_value_errors(ok), Vec::<String>::new(), "{ok:?}");
    }
    for bad in [
        a(64),
        "nospecialchars%^=@".into(),
        "Tama-nui-te-rā.is.Māori.sun".into(),
        "\\backslashes".into(),
        "-starts-with-dash".into(),
        "ends-with-dash-".into(),
        ".starts.with.dot".into(),
        "ends.with.dot.".into(),
        "a/b".into(),
    ] {
        assert!(!label_value_errors(&bad).is_empty(), "{bad:?} must fail");
    }
    for ok in [
        "a",
        "ab",
        "abc",
        "a1",
        "a-1",
        "a--1--2--b",
        "0",
        "01",
        "012",
        "1a",
        "1-a",
        a(63).as_str(),
    ] {
        assert_eq!(dns_label_errors(ok), Vec::<String>::new(), "{ok:?}");
        assert_eq!(dns_subdomain_errors(ok), Vec::<String>::new(), "{ok:?}");
    }
    for bad in [
        "",
        "A",
        "ABC",
        "aBc",
        "A1",
        "A-1",
        "1-A",
        "-",
        "a-",
        "-a",
        "1-",
        "-1",
        "_",
        "a_",
        "_a",
        "a_b",
        "1_",
        "_1",
        "1_2",
        "*",
        "a*",
        "*a",
        "a*b",
        "a.a",
        "1.1",
        "a b",
        &a(64),
    ] {
        assert!(!dns_label_errors(bad).is_empty(), "{bad:?} must fail");
    }
    // A valid subdomain with dots is named as such, not as a pattern mismatch.
    assert_eq!(
        dns_label_errors("a.b"),
        vec!["must not contain dots".to_string()]
    );
    for ok in [
        "a.a",
        "ab.a",
        "a-1.a1",
        "a--1--2--b.0",
        "1.a",
        "0.1.2",
        format!("{}.{}", a(63), a(63)).as_str(),
    ] {
        assert_eq!(dns_subdomain_errors(ok), Vec::<String>::new(), "{ok:?}");
    }
    for bad in [
        "",
        "A",
        "a.",
        ".a",
        "a..b",
        "-.a",
        "a.-",
        "a_b.c",
        "a.B",
        &a(254),
    ] {
        assert!(!dns_subdomain_errors(bad).is_empty(), "{bad:?} must fail");
    }
    // The messages are the API server's, word for word (RegexError's punctuation included).
    assert_eq!(
        label_value_errors("-x"),
        vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string()]
    );
}
