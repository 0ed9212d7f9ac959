//! The ValidatingAdmissionPolicy in `packaging/kubernetes/` run as kube-apiserver would run it:
//! its CEL expressions, read from the manifest, compiled and evaluated by a real CEL
//! implementation (cel-cpp through PyPI `cel-expr-python`, with the optional-types library
//! Kubernetes enables) against admission requests from the agent, the kubelet and an
//! administrator. `tests/support/admission_policy.py` holds the apiserver's part: the
//! declarations, matchConditions, variables, validations and message rules; its module doc says
//! where it differs from the apiserver.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::require;

const AGENT: &str = "system:serviceaccount:nodewarden:nodewarden";
/// The claim kube-apiserver adds to a projected ServiceAccount token's `userInfo.extra` when the
/// pod it is bound to runs on a node (ServiceAccountTokenPodNodeInfo).
const NODE_NAME_CLAIM: &str = "authentication.kubernetes.io/node-name";
const ONLY_TAINTS: &str = "nodewarden may change only the taints in a Node's spec";
/// The taint the agent writes under memory pressure (config/defaults.rs).
const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";

/// Kubernetes versions whose NodeSpec the policy must cover, as in tests/manifests.rs.
const KUBERNETES_VERSIONS: [&str; 3] = ["1.30.0", "1.32.0", "1.33.0"];
/// The newest NodeSpec schema kubernetes-validate ships: fields added there are guarded too.
const NEWEST_SCHEMA: &str = "1.37.0";

fn manifest(file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("packaging/kubernetes")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("parse {path:?}: {e}"))
}

fn policy() -> Value {
    manifest("validatingadmissionpolicy.yaml")
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/admission_policy.py")
}

fn python_imports(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

fn cel_available() -> bool {
    require(
        python_imports("cel_expr_python.cel"),
        "python3 with cel-expr-python (PyPI; .ci/install-manifests.sh)",
    )
}

/// Runs the evaluator with `input` on stdin, bounded to 60 s (killed by PID after that); returns
/// its JSON answer.
fn evaluator(input: &Value) -> Value {
    let body = serde_json::to_vec(input).expect("serialise input");
    let ran = support::command::run_with_input(
        Command::new("python3").arg(script()),
        &body,
        Duration::from_secs(60),
    );
    assert!(
        ran.ok,
        "the evaluator failed ({:?}):\n{}",
        ran.code, ran.stderr
    );
    serde_json::from_str(&ran.stdout).unwrap_or_else(|e| {
        panic!(
            "the evaluator's answer is not JSON ({e}):\n{}\n{}",
            ran.stdout, ran.stderr
        )
    })
}

/// Every CEL expression in a policy spec, by the location the evaluator reports.
fn expression_locations(spec: &Value) -> BTreeSet<String> {
    let list = |key: &str| spec[key].as_array().cloned().unwrap_or_default();
    let mut out = BTreeSet::new();
    for (i, m) in list("matchConditions").iter().enumerate() {
        out.insert(format!(
            "matchConditions[{i}] ({})",
            m["name"].as_str().unwrap()
        ));
    }
    for (i, v) in list("variables").iter().enumerate() {
        out.insert(format!("variables[{i}] ({})", v["name"].as_str().unwrap()));
    }
    for (i, v) in list("validations").iter().enumerate() {
        out.insert(format!("validations[{i}].expression"));
        if v.get("messageExpression").is_some() {
            out.insert(format!("validations[{i}].messageExpression"));
        }
    }
    out
}

/// Compiles every expression of `spec`; returns (compiled locations, errors as (location, text)).
fn compile(spec: &Value) -> (BTreeSet<String>, Vec<(String, String)>) {
    let answer = evaluator(&json!({ "mode": "compile", "spec": spec }));
    let compiled = answer["compiled"]
        .as_array()
        .expect("compiled list")
        .iter()
        .map(|c| c.as_str().expect("a location").to_string())
        .collect();
    let errors = answer["errors"]
        .as_array()
        .expect("errors list")
        .iter()
        .map(|e| {
            (
                e["at"].as_str().expect("at").to_string(),
                e["error"].as_str().expect("error").to_string(),
            )
        })
        .collect();
    (compiled, errors)
}

// ---- admission requests ----

/// Who sends a request: the username, groups and `extra` of its authenticated identity.
struct User {
    name: &'static str,
    groups: &'static [&'static str],
    /// `None` leaves `extra` out entirely, as the apiserver's JSON does for an identity without
    /// extras (the field is `omitempty`).
    extra: Option<Value>,
}

/// The agent with a projected token bound to a pod on `node`.
fn agent_on(node: &str) -> User {
    User {
        name: AGENT,
        groups: &[
            "system:serviceaccounts",
            "system:serviceaccounts:nodewarden",
            "system:authenticated",
        ],
        extra: Some(json!({
            "authentication.kubernetes.io/credential-id": ["JTI=0d8f4c0e-1b7e-4a55-9b0c-2f7a1c9d3e11"],
            NODE_NAME_CLAIM: [node],
            "authentication.kubernetes.io/node-uid": ["7c1e2a44-5b9d-4f0e-8a3b-6d2c1f0e9a77"],
            "authentication.kubernetes.io/pod-name": ["nodewarden-x7k2p"],
            "authentication.kubernetes.io/pod-uid": ["3f9a6b21-8c4d-4e7f-a1b2-c3d4e5f60718"],
        })),
    }
}

/// The agent with a pod-bound token that has no node claim (a 1.30/1.31 cluster with
/// ServiceAccountTokenPodNodeInfo turned off).
fn agent_with_pod_bound_token_without_node_claim() -> User {
    User {
        name: AGENT,
        groups: &[
            "system:serviceaccounts",
            "system:serviceaccounts:nodewarden",
            "system:authenticated",
        ],
        extra: Some(json!({
            "authentication.kubernetes.io/pod-name": ["nodewarden-x7k2p"],
            "authentication.kubernetes.io/pod-uid": ["3f9a6b21-8c4d-4e7f-a1b2-c3d4e5f60718"],
        })),
    }
}

/// The kubelet of node-a (the NodeRestriction admission plugin, not this policy, limits it).
fn kubelet_of_node_a() -> User {
    User {
        name: "system:node:node-a",
        groups: &["system:nodes", "system:authenticated"],
        extra: None,
    }
}

fn administrator() -> User {
    User {
        name: "kubernetes-admin",
        groups: &["kubeadm:cluster-admins", "system:authenticated"],
        extra: None,
    }
}

/// What is written: the Node object or its `status` subresource. Either way admission sees
/// the whole Node, old and new.
#[derive(Clone, Copy)]
enum Target {
    Node,
    Status,
}

fn taint(key: &str, effect: &str) -> Value {
    json!({ "key": key, "effect": effect })
}

/// A Node as the apiserver hands it to admission: JSON with empty and false fields left out.
fn node(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": "7c1e2a44-5b9d-4f0e-8a3b-6d2c1f0e9a77",
            "resourceVersion": "4711",
            "labels": { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux" },
        },
        "spec": spec,
        "status": {
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady" }],
        },
    })
}

/// A typical NodeSpec: a pod CIDR and a provider ID, no taints, schedulable.
fn usual_spec() -> Value {
    json!({
        "podCIDR": "10.244.1.0/24",
        "podCIDRs": ["10.244.1.0/24"],
        "providerID": "fixture:///zone-1/node-instance",
    })
}

fn with(mut value: Value, pointer: &str, field: &str, new: Value) -> Value {
    value
        .pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer} in fixture"))
        .as_object_mut()
        .expect("an object")
        .insert(field.to_string(), new);
    value
}

fn without(mut value: Value, pointer: &str, field: &str) -> Value {
    let removed = value
        .pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer} in fixture"))
        .as_object_mut()
        .expect("an object")
        .remove(field);
    assert!(
        removed.is_some(),
        "{pointer}/{field} was not in the fixture"
    );
    value
}

/// The AdmissionRequest of an UPDATE (a PATCH reaches admission as one) of `new` over `old`.
fn update_request(user: &User, target: Target, new: &Value) -> Value {
    let resource = json!({ "group": "", "version": "v1", "resource": "nodes" });
    let kind = json!({ "group": "", "version": "v1", "kind": "Node" });
    let sub = match target {
        Target::Node => "",
        Target::Status => "status",
    };
    let mut user_info = json!({
        "username": user.name,
        "uid": "5a0c9e1d-2b3f-4c6a-8d7e-9f0a1b2c3d4e",
        "groups": user.groups,
    });
    if let Some(extra) = &user.extra {
        user_info["extra"] = extra.clone();
    }
    let mut request = json!({
        "uid": "b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d5e",
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": new["metadata"]["name"],
        "operation": "UPDATE",
        "userInfo": user_info,
        "options": { "apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions" },
    });
    if !sub.is_empty() {
        request["subResource"] = json!(sub);
        request["requestSubResource"] = json!(sub);
    }
    request
}

/// Whether the policy's matchConstraints select `request` (resource rules only: the policy has
/// no selectors, which `match_constraints_select_node_updates_and_nothing_narrower` checks).
fn constraints_select(spec: &Value, request: &Value) -> bool {
    let has = |list: &Value, want: &str| {
        list.as_array()
            .is_some_and(|l| l.iter().any(|x| x == want || x == "*"))
    };
    let resource = match request["subResource"].as_str() {
        Some(sub) if !sub.is_empty() => {
            format!(
                "{}/{sub}",
                request["resource"]["resource"].as_str().unwrap()
            )
        }
        _ => request["resource"]["resource"]
            .as_str()
            .unwrap()
            .to_string(),
    };
    spec["matchConstraints"]["resourceRules"]
        .as_array()
        .expect("resourceRules")
        .iter()
        .any(|rule| {
            has(
                &rule["apiGroups"],
                request["resource"]["group"].as_str().unwrap(),
            ) && has(
                &rule["apiVersions"],
                request["resource"]["version"].as_str().unwrap(),
            ) && has(&rule["operations"], request["operation"].as_str().unwrap())
                && has(&rule["resources"], &resource)
        })
}

#[derive(Debug, PartialEq)]
struct Violation {
    /// Index into `spec.validations`.
    validation: usize,
    reason: String,
    message: String,
}

#[derive(Debug, PartialEq)]
enum Outcome {
    /// A matchCondition was false: the policy says nothing.
    NotApplied,
    Allowed,
    Denied(Vec<Violation>),
    /// An expression failed to evaluate; with `failurePolicy: Fail` the request is rejected.
    Failed(Vec<String>),
}

fn violation(validation: usize, message: &str) -> Violation {
    Violation {
        validation,
        reason: "Forbidden".to_string(),
        message: message.to_string(),
    }
}

fn wrong_node(token_node: &str, object: &str) -> Violation {
    violation(
        0,
        &format!(
            "nodewarden may change only the Node its pod runs on: token bound to node \
             {token_node}, object {object}"
        ),
    )
}

/// Runs the policy on an UPDATE of `old` to `new` by `user`. `None` when skipped (outside CI
/// without the evaluator).
fn admit(user: &User, target: Target, old: &Value, new: &Value) -> Option<Outcome> {
    if !cel_available() {
        return None;
    }
    let spec = &policy()["spec"];
    let request = update_request(user, target, new);
    assert!(
        constraints_select(spec, &request),
        "the fixture request is not one the policy's matchConstraints select: {request}"
    );
    let answer = evaluator(&json!({
        "mode": "evaluate",
        "spec": spec,
        "request": request,
        "object": new,
        "oldObject": old,
    }));
    let errors: Vec<String> = answer["errors"]
        .as_array()
        .expect("errors list")
        .iter()
        .map(|e| {
            format!(
                "{}: {}",
                e["at"].as_str().unwrap(),
                e["error"].as_str().unwrap()
            )
        })
        .collect();
    if !errors.is_empty() {
        return Some(Outcome::Failed(errors));
    }
    if answer["matched"] != json!(true) {
        return Some(Outcome::NotApplied);
    }
    let violations: Vec<Violation> = answer["violations"]
        .as_array()
        .expect("violations list")
        .iter()
        .map(|v| Violation {
            validation: v["validation"].as_u64().expect("index") as usize,
            reason: v["reason"].as_str().expect("reason").to_string(),
            message: v["message"].as_str().expect("message").to_string(),
        })
        .collect();
    Some(if violations.is_empty() {
        Outcome::Allowed
    } else {
        Outcome::Denied(violations)
    })
}

// ---- the expressions compile ----

#[test]
fn every_expression_compiles_with_the_result_type_kubernetes_requires() {
    if !cel_available() {
        return;
    }
    let spec = &policy()["spec"];
    let (compiled, errors) = compile(spec);
    assert!(
        errors.is_empty(),
        "the policy does not compile: {errors:#?}"
    );
    let expected = expression_locations(spec);
    // 1 matchCondition, 1 variable, 2 validations, 1 messageExpression today.
    assert!(expected.len() >= 5, "{expected:?}");
    assert_eq!(compiled, expected, "every expression was compiled");
}

#[test]
fn a_misspelt_or_mistyped_expression_fails_to_compile() {
    // Proves the check above can fail: each broken copy of the policy names its one error.
    if !cel_available() {
        return;
    }
    let spec = policy()["spec"].clone();
    let broken = |pointer: &str, from: &str, to: &str| {
        let mut s = spec.clone();
        let slot = s
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer}"));
        let text = slot.as_str().expect("an expression").to_string();
        let changed = if from.is_empty() {
            to.to_string()
        } else {
            text.replacen(from, to, 1)
        };
        assert_ne!(changed, text, "{from:?} is in {pointer}");
        *slot = json!(changed);
        s
    };
    // (broken copy, where the one error must be, a word it must contain)
    let cases = [
        (
            broken("/variables/0/expression", ".orValue(", ".orValu("),
            "variables[0] (tokenNode)",
            "orValu",
        ),
        (
            broken("/validations/0/messageExpression", ".size()", ".sise()"),
            "validations[0].messageExpression",
            "sise",
        ),
        (
            broken("/matchConditions/0/expression", "==", "="),
            "matchConditions[0] (is-nodewarden)",
            "Syntax error",
        ),
        // An optional where Kubernetes requires a bool.
        (
            broken("/validations/1/expression", "", "object.spec.?podCIDR"),
            "validations[1].expression",
            "must evaluate to BOOL",
        ),
        // A string plus an int has no overload.
        (
            broken(
                "/validations/0/messageExpression",
                "object.metadata.name",
                "1",
            ),
            "validations[0].messageExpression",
            "_+_",
        ),
    ];
    for (spec, at, needle) in cases {
        let (_, errors) = compile(&spec);
        assert!(
            errors.len() == 1 && errors[0].0 == at && errors[0].1.contains(needle),
            "expected one error at {at} mentioning {needle:?}, got {errors:#?}"
        );
    }
}

// ---- the agent on its own node ----

#[test]
fn the_agent_may_taint_its_own_node() {
    let old = node("node-a", usual_spec());
    let new = with(
        old.clone(),
        "/spec",
        "taints",
        json!([taint(MEMORY_PRESSURE, "NoSchedule")]),
    );
    let Some(outcome) = admit(&agent_on("node-a"), Target::Node, &old, &new) else {
        return;
    };
    assert_eq!(outcome, Outcome::Allowed);
}

#[test]
fn the_agent_may_remove_its_taint_from_its_own_node() {
    let tainted = with(
        node("node-a", usual_spec()),
        "/spec",
        "taints",
        json!([
            taint(MEMORY_PRESSURE, "NoSchedule"),
            taint("example.com/dedicated", "NoExecute")
        ]),
    );
    let new = with(
        tainted.clone(),
        "/spec",
        "taints",
        json!([taint("example.com/dedicated", "NoExecute")]),
    );
    let Some(outcome) = admit(&agent_on("node-a"), Target::Node, &tainted, &new) else {
        return;
    };
    assert_eq!(outcome, Outcome::Allowed);
}

#[test]
fn the_agent_may_write_its_own_node_status() {
    let old = node("node-a", usual_spec());
    let new = with(
        old.clone(),
        "/status",
        "conditions",
        json!([
            { "type": "Ready", "status": "True", "reason": "KubeletReady" },
            { "type": "NodewardenReady", "status": "True", "reason": "AgentRunning" },
        ]),
    );
    let Some(outcome) = admit(&agent_on("node-a"), Target::Status, &old, &new) else {
        return;
    };
    assert_eq!(outcome, Outcome::Allowed);
}

#[test]
fn a_node_without_any_spec_field_may_be_tainted() {
    // Absent on both sides is equal: optional.none() == optional.none().
    let old = node("node-a", json!({}));
    let new = with(
        old.clone(),
        "/spec",
        "taints",
        json!([taint(MEMORY_PRESSURE, "NoSchedule")]),
    );
    let Some(outcome) = admit(&agent_on("node-a"), Target::Node, &old, &new) else {
        return;
    };
    assert_eq!(outcome, Outcome::Allowed);
}

// ---- the agent on another node, or without a node claim ----

#[test]
fn the_agent_may_not_taint_another_node() {
    let old = node("node-b", usual_spec());
    let new = with(
        old.clone(),
        "/spec",
        "taints",
        json!([taint(MEMORY_PRESSURE, "NoSchedule")]),
    );
    let Some(outcome) = admit(&agent_on("node-a"), Target::Node, &old, &new) else {
        return;
    };
    assert_eq!(
        outcome,
        Outcome::Denied(vec![wrong_node("node-a", "node-b")])
    );
}

#[test]
fn the_agent_may_not_write_another_nodes_status() {
    let old = node("node-b", usual_spec());
    let new = with(old.clone(), "/status", "conditions", json!([]));
    let Some(outcome) = admit(&agent_on("node-a"), Target::Status, &old, &new) else {
        return;
    };
    assert_eq!(
        outcome,
        Outcome::Denied(vec![wrong_node("node-a", "node-b")])
    );
}

#[test]
fn a_token_without_the_node_name_claim_is_denied_saying_so() {
    let old = node("node-a", usual_spec());
    let new = with(
        old.clone(),
        "/spec",
        "taints",
        json!([taint(MEMORY_PRESSURE, "NoSchedule")]),
    );
    let Some(outcome) = admit(
        &agent_with_pod_bound_token_without_node_claim(),
        Target::Node,
        &old,
        &new,
    ) else {
        return;
    };
    assert_eq!(
        outcome,
        Outcome::Denied(vec![wrong_node("(none: no node-name claim)", "node-a")])
    );
}

#[test]
fn a_token_with_no_extra_at_all_is_denied() {
    // A token not bound to a pod (a legacy Secret token of the same ServiceAccount) carries no
    // `extra`, and the apiserver's JSON then has no `userInfo.extra` key. The variable's optional
    // chain (`userInfo.?extra[?…]`) makes that an empty claim, so the validation denies it with
    // its message — not an evaluation error that only `failurePolicy: Fail` would stop.
    let old = node("node-a", usual_spec());
    let new = with(
        old.clone(),
        "/spec",
        "taints",
        json!([taint(MEMORY_PRESSURE, "NoSchedule")]),
    );
    let user = User {
        extra: None,
        ..agent_on("node-a")
    };
    let Some(outcome) = admit(&user, Target::Node, &old, &new) else {
        return;
    };
    assert_eq!(policy()["spec"]["failurePolicy"], "Fail");
    match outcome {
        Outcome::Denied(violations) => assert_eq!(
            violations,
            vec![wrong_node("(none: no node-name claim)", "node-a")]
        ),
        other => panic!("a token with no extra was not denied: {other:?}"),
    }
}

// ---- the agent changing its own node's spec beyond taints ----

#[test]
fn the_agent_may_not_cordon_its_own_node() {
    let old = node("node-a", usual_spec());
    let new = with(old.clone(), "/spec", "unschedulable", json!(true));
    let Some(outcome) = admit(&agent_on("node-a"), Target::Node, &old, &new) else {
        return;
    };
    assert_eq!(outcome, Outcome::Denied(vec![violation(1, ONLY_TAINTS)]));
}

#[test]
fn the_agent_may_not_change_its_own_provider_id() {
    let old = node("node-a", usual_spec());
    let new = with(
        old.clone(),
        "/spec",
        "providerID",
        json!("fixture:///zone-1/other-instance"),
    );
    let Some(outcome) = admit(&agent_on("node-a"), Target::Node, &old, &new) else {
        return;
    };
    assert_eq!(outcome, Outcome::Denied(vec![violation(1, ONLY_TAINTS)]));
}

#[test]
fn every_spec_field_but_taints_is_guarded_when_set_changed_or_removed() {
    let usual = node("node-a", usual_spec());
    let cordoned = with(usual.clone(), "/spec", "unschedulable", json!(true));
    let with_external_id = with(usual.clone(), "/spec", "externalID", json!("node-a-ext"));
    let cases: [(&str, Value, Value); 9] = [
        (
            "podCIDR changed",
            usual.clone(),
            with(usual.clone(), "/spec", "podCIDR", json!("10.244.9.0/24")),
        ),
        (
            "podCIDR removed",
            usual.clone(),
            without(usual.clone(), "/spec", "podCIDR"),
        ),
        (
            "podCIDRs gains a family",
            usual.clone(),
            with(
                usual.clone(),
                "/spec",
                "podCIDRs",
                json!(["10.244.1.0/24", "fd00:10:244:1::/64"]),
            ),
        ),
        (
            "providerID removed",
            usual.clone(),
            without(usual.clone(), "/spec", "providerID"),
        ),
        (
            "uncordoned",
            cordoned.clone(),
            without(cordoned, "/spec", "unschedulable"),
        ),
        (
            "configSource set",
            usual.clone(),
            with(
                usual.clone(),
                "/spec",
                "configSource",
                json!({ "configMap": {
                    "namespace": "kube-system", "name": "kubelet", "kubeletConfigKey": "kubelet"
                } }),
            ),
        ),
        ("externalID set", usual.clone(), with_external_id.clone()),
        (
            "externalID changed",
            with_external_id.clone(),
            with(with_external_id, "/spec", "externalID", json!("other")),
        ),
        (
            "cordoned together with a taint",
            usual.clone(),
            with(
                with(usual.clone(), "/spec", "unschedulable", json!(true)),
                "/spec",
                "taints",
                json!([taint(MEMORY_PRESSURE, "NoSchedule")]),
            ),
        ),
    ];
    for (name, old, new) in cases {
        let Some(outcome) = admit(&agent_on("node-a"), Target::Node, &old, &new) else {
            return;
        };
        assert_eq!(
            outcome,
            Outcome::Denied(vec![violation(1, ONLY_TAINTS)]),
            "{name}"
        );
    }
}

#[test]
fn another_node_with_a_spec_change_fails_both_validations() {
    let old = node("node-b", usual_spec());
    let new = with(old.clone(), "/spec", "unschedulable", json!(true));
    let Some(outcome) = admit(&agent_on("node-a"), Target::Node, &old, &new) else {
        return;
    };
    assert_eq!(
        outcome,
        Outcome::Denied(vec![
            wrong_node("node-a", "node-b"),
            violation(1, ONLY_TAINTS)
        ])
    );
}

// ---- everyone else ----

#[test]
fn the_policy_does_not_apply_to_anyone_but_the_agent() {
    let own = node("node-a", usual_spec());
    let other = node("node-b", usual_spec());
    let cordon = |n: &Value| with(n.clone(), "/spec", "unschedulable", json!(true));
    let same_name_elsewhere = User {
        name: "system:serviceaccount:kube-system:nodewarden",
        ..agent_on("node-a")
    };
    let cases: [(&str, User, &Value); 4] = [
        ("the kubelet on its own node", kubelet_of_node_a(), &own),
        ("the kubelet on another node", kubelet_of_node_a(), &other),
        ("an administrator", administrator(), &other),
        (
            "a ServiceAccount of the same name in another namespace",
            same_name_elsewhere,
            &other,
        ),
    ];
    for (name, user, old) in cases {
        for target in [Target::Node, Target::Status] {
            let Some(outcome) = admit(&user, target, old, &cordon(old)) else {
                return;
            };
            assert_eq!(outcome, Outcome::NotApplied, "{name}");
        }
    }
}

// ---- the manifests around the expressions ----

#[test]
fn match_constraints_select_node_updates_and_nothing_narrower() {
    let policy = policy();
    let spec = &policy["spec"];
    let constraints = &spec["matchConstraints"];
    for narrowing in [
        "excludeResourceRules",
        "namespaceSelector",
        "objectSelector",
    ] {
        assert!(
            constraints.get(narrowing).is_none(),
            "matchConstraints.{narrowing} would let some Node updates through"
        );
    }
    for target in [Target::Node, Target::Status] {
        let request = update_request(&agent_on("node-a"), target, &node("node-a", json!({})));
        assert!(constraints_select(spec, &request), "{request}");
    }
    assert_eq!(spec["failurePolicy"], "Fail");

    let binding = manifest("validatingadmissionpolicybinding.yaml");
    assert_eq!(binding["spec"]["policyName"], policy["metadata"]["name"]);
    assert_eq!(binding["spec"]["validationActions"], json!(["Deny"]));
    assert!(binding["spec"].get("matchResources").is_none());
    assert!(binding["spec"].get("paramRef").is_none());
}

/// The NodeSpec property names in the OpenAPI schema kubernetes-validate ships for `version`.
fn node_spec_properties(version: &str) -> BTreeSet<String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, os, sys, kubernetes_validate as k\n\
             p = os.path.join(os.path.dirname(k.__file__), 'kubernetes-json-schema',\n\
                 'v' + sys.argv[1] + '-local-strict', 'nodespec-v1.json')\n\
             print(json.dumps(sorted(json.load(open(p))['properties'])))",
            version,
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "no NodeSpec schema for {version}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON list")
}

#[test]
fn the_spec_validation_compares_every_node_spec_field_but_taints() {
    if !require(
        python_imports("kubernetes_validate"),
        "kubernetes-validate (PyPI; .ci/install-manifests.sh)",
    ) {
        return;
    }
    let expression = policy()["spec"]["validations"][1]["expression"]
        .as_str()
        .expect("the second validation")
        .to_string();
    let compared: BTreeSet<String> = expression
        .split("object.spec.?")
        .skip(1)
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
        })
        .filter(|field| {
            // Each field appears as `object.spec.?f` and `oldObject.spec.?f`; take the pairs.
            expression.contains(&format!("object.spec.?{field} == oldObject.spec.?{field}"))
        })
        .collect();
    // Every field of every supported version, and of the newest schema known, is compared;
    // nothing else is.
    let mut all = BTreeSet::new();
    for version in KUBERNETES_VERSIONS.iter().chain(&[NEWEST_SCHEMA]) {
        let mut fields = node_spec_properties(version);
        assert!(fields.remove("taints"), "{version}: NodeSpec has taints");
        let missing: Vec<_> = fields.difference(&compared).collect();
        assert!(
            missing.is_empty(),
            "the second validation must compare every NodeSpec field but taints ({version}): {missing:?} missing"
        );
        all.extend(fields);
    }
    assert_eq!(compared, all, "only NodeSpec fields are compared");
}
