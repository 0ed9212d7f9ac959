//! End-to-end tests of `nodewarden explain` through `explain_files`, on the fixtures in
//! `tests/data/explain/`. Expected values are derived from docs/semantics.md §2–4, §8, §11–12.

use std::path::PathBuf;

use nodewarden::cli::explain::{
    ExplainError, ExplainReport, ObjectError, Problem, explain_files, explain_str,
    explain_str_gated, render_text,
};
use serde_json::json;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/explain")
        .join(name)
}

fn explain(node: &str, pod: &str) -> Result<ExplainReport, ExplainError> {
    explain_files(&fixture(node), &fixture(pod))
}

fn report_json(node: &str, pod: &str) -> serde_json::Value {
    match explain(node, pod) {
        Ok(report) => serde_json::to_value(report).expect("a report always serializes"),
        Err(e) => panic!("explain {node} {pod} failed: {e}"),
    }
}

fn rejected(node: &str, pod: &str) -> Vec<ObjectError> {
    match explain(node, pod) {
        Err(ExplainError::Rejected(objects)) => objects,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// Field paths of the errors of one rejected object, in order.
fn paths(object: &ObjectError) -> Vec<String> {
    match &object.problem {
        Problem::Decode(errs) | Problem::Invalid(errs) => {
            errs.iter().map(|e| e.path.clone()).collect()
        }
        other => panic!("expected field errors, got {other:?}"),
    }
}

const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

#[test]
fn deployment_pod_on_an_unreachable_node_waits_the_default_300_seconds() {
    let uid_ = "1f0e7a52_3c4d_4b8e_9a6f_0123456789ab";
    assert_eq!(
        report_json("node-unreachable.yaml", "pod-deployment.yaml"),
        json!({
            // requests < limits (§11 step 4).
            "qosClass": "Burstable",
            "cgroup": {
                "systemd": format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice"),
                "cgroupfs": "/kubepods/burstable/pod1f0e7a52-3c4d-4b8e-9a6f-0123456789ab",
            },
            "taints": [
                // The default unreachable toleration is the third in the pod's list.
                {"taint": "node.kubernetes.io/unreachable:NoExecute", "toleratedBy": 2},
                // Same key, other effect: a distinct taint the NoExecute toleration does not cover.
                {"taint": "node.kubernetes.io/unreachable:NoSchedule", "toleratedBy": null},
                // The user's dedicated=gpu toleration has effect NoSchedule, not PreferNoSchedule.
                {"taint": "dedicated=gpu:PreferNoSchedule", "toleratedBy": null},
            ],
            "schedulable": false,
            "untoleratedPreferNoSchedule": 1,
            "noExecute": {"outcome": "evictAfter", "seconds": 300},
        })
    );
}

#[test]
fn daemonset_pod_tolerates_unreachable_forever_and_is_guaranteed() {
    let report = report_json("node-unreachable.yaml", "pod-daemonset.json");
    assert_eq!(
        report,
        json!({
            // Equal requests and limits spelled differently (0.1 = 100m, 16Mi = 16777216,
            // 1 = 1000m, 1Gi = 1073741824) compare equal; ephemeral-storage is ignored.
            "qosClass": "Guaranteed",
            "cgroup": {
                "systemd": "/kubepods.slice/kubepods-poda8b7c6d5_e4f3_4a2b_9c1d_0e9f8a7b6c5d.slice",
                "cgroupfs": "/kubepods/poda8b7c6d5-e4f3-4a2b-9c1d-0e9f8a7b6c5d",
            },
            "taints": [
                {"taint": "node.kubernetes.io/unreachable:NoExecute", "toleratedBy": 1},
                {"taint": "node.kubernetes.io/unreachable:NoSchedule", "toleratedBy": null},
                {"taint": "dedicated=gpu:PreferNoSchedule", "toleratedBy": null},
            ],
            "schedulable": false,
            "untoleratedPreferNoSchedule": 1,
            "noExecute": {"outcome": "never"},
        })
    );
}

#[test]
fn besteffort_pod_without_tolerations_on_a_clean_node() {
    assert_eq!(
        report_json("node-plain.json", "pod-besteffort.yaml"),
        json!({
            "qosClass": "BestEffort",
            "cgroup": {
                "systemd": "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0c1d2e3f_4a5b_4c6d_8e7f_901234567890.slice",
                "cgroupfs": "/kubepods/besteffort/pod0c1d2e3f-4a5b-4c6d-8e7f-901234567890",
            },
            "taints": [],
            "schedulable": true,
            "untoleratedPreferNoSchedule": 0,
            "noExecute": {"outcome": "never"},
        })
    );
}

#[test]
fn pod_without_tolerations_is_evicted_now_from_an_unreachable_node() {
    let report = report_json("node-unreachable.yaml", "pod-besteffort.yaml");
    assert_eq!(report["noExecute"], json!({"outcome": "evictNow"}));
    assert_eq!(report["schedulable"], json!(false));
    assert_eq!(report["untoleratedPreferNoSchedule"], json!(1));
}

#[test]
fn status_qos_class_wins_over_the_spec() {
    let report = report_json("node-plain.json", "pod-status-qos.yaml");
    assert_eq!(report["qosClass"], json!("Guaranteed"));
    assert_eq!(
        report["cgroup"]["cgroupfs"],
        json!("/kubepods/pod11111111-2222-4333-8444-555555555555")
    );
}

#[test]
fn pod_level_resources_decide_alone() {
    let report = report_json("node-plain.json", "pod-level-resources.yaml");
    assert_eq!(report["qosClass"], json!("Guaranteed"));
}

#[test]
fn invalid_node_taints_are_all_reported_like_the_api_server() {
    let objects = rejected("node-invalid.yaml", "pod-besteffort.yaml");
    assert_eq!(objects.len(), 1, "only the node is wrong");
    let unsupported = "Unsupported value: \"NoRun\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"";
    assert_eq!(
        objects[0].to_string(),
        format!(
            "Node \"n1\" is invalid: [\
             spec.taints[0].effect: {unsupported}, \
             spec.taints[1].key: Invalid value: \"\": name part must be non-empty, \
             spec.taints[1].key: Invalid value: \"\": {NAME_PART_MSG}, \
             spec.taints[2].effect: {unsupported}, \
             spec.taints[2]: Duplicate value: core.Taint{{Key:\"example.com/ok\", Value:\"again\", Effect:\"NoRun\", TimeAdded:(*v1.Time)(nil)}}: taints must be unique by key and effect pair]"
        )
    );
}

#[test]
fn invalid_pod_tolerations_and_resources_are_all_reported() {
    let objects = rejected("node-plain.json", "pod-invalid.yaml");
    assert_eq!(objects.len(), 1);
    let text = objects[0].to_string();
    assert!(
        text.starts_with("Pod \"bad-tolerations\" is invalid: ["),
        "{text}"
    );
    for expected in [
        "spec.tolerations[0].operator: Invalid value: core.Toleration{Key:\"node.kubernetes.io/not-ready\", Operator:\"Exists\", Value:\"true\", Effect:\"NoExecute\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'",
        "spec.tolerations[1].operator: Unsupported value: \"Gt\": supported values: \"Equal\", \"Exists\"",
        "spec.tolerations[2].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        "spec.tolerations[2].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        "spec.containers[0].resources.requests[cpu]: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
        "metadata.uid: Required value: needed to name the pod's cgroup",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in {text}");
    }
    assert_eq!(
        paths(&objects[0]),
        vec![
            "spec.tolerations[0].operator",
            "spec.tolerations[1].operator",
            "spec.tolerations[2].operator",
            "spec.tolerations[2].effect",
            "spec.containers[0].resources.requests[cpu]",
            "metadata.uid",
        ]
    );
}

#[test]
fn wrong_types_fail_decoding_with_field_paths_before_any_validation() {
    let objects = rejected("node-plain.json", "pod-wrong-types.yaml");
    assert_eq!(objects.len(), 1);
    assert!(matches!(objects[0].problem, Problem::Decode(_)));
    let text = objects[0].to_string();
    assert!(
        text.starts_with("Pod \"wrong-types\" cannot be handled as a Pod: ["),
        "{text}"
    );
    assert!(text.contains("spec.tolerations[0].tolerationSeconds: Invalid value: \"300\": must be an integer (int64)"), "{text}");
    assert!(
        text.contains("spec.tolerations[1]: Invalid value: \"just-a-string\": must be an object"),
        "{text}"
    );
    assert!(
        text.contains("spec.tolerations[2].key: Invalid value: [\"a\",\"b\"]: must be a string"),
        "{text}"
    );
    assert!(text.contains("spec.containers[0].resources.requests[cpu]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"), "{text}");
    assert_eq!(paths(&objects[0]).len(), 4);
}

#[test]
fn both_objects_are_checked_before_failing() {
    let objects = rejected("node-invalid.yaml", "pod-invalid.yaml");
    let kinds: Vec<&str> = objects.iter().map(|o| o.kind).collect();
    assert_eq!(kinds, vec!["Node", "Pod"]);
    let err = explain("node-invalid.yaml", "pod-invalid.yaml").expect_err("invalid");
    assert_eq!(err.to_string().lines().count(), 2, "one line per object");
}

#[test]
fn a_file_of_the_wrong_kind_is_rejected() {
    let objects = rejected("node-plain.json", "deployment.yaml");
    assert_eq!(
        objects[0].to_string(),
        "Pod \"web\" cannot be handled as a Pod: kind: Unsupported value: \"Deployment\": supported values: \"Pod\""
    );
    // A Pod given as the node.
    let objects = rejected("pod-besteffort.yaml", "pod-besteffort.yaml");
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0].kind, "Node");
}

#[test]
fn text_that_is_not_yaml_is_a_syntax_error_naming_the_file() {
    let objects = rejected("garbage.txt", "pod-besteffort.yaml");
    assert!(matches!(objects[0].problem, Problem::Syntax(_)));
    let text = objects[0].to_string();
    assert!(text.starts_with("Node \""), "{text}");
    assert!(
        text.contains("garbage.txt\" is not valid YAML or JSON"),
        "{text}"
    );
}

#[test]
fn a_document_that_is_not_a_mapping_is_rejected() {
    let objects = rejected("list.yaml", "pod-besteffort.yaml");
    assert_eq!(objects[0].problem, Problem::NotAnObject("a list"));
    let err = explain_str("", "kind: Pod", "n", "p").expect_err("empty node");
    assert!(
        err.to_string()
            .contains("Node \"n\" cannot be handled as a Node: the document is empty"),
        "{err}"
    );
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let err = explain("no-such-node.yaml", "pod-besteffort.yaml").expect_err("missing");
    assert!(matches!(err, ExplainError::Read { kind: "Node", .. }));
    assert!(err.to_string().contains("no-such-node.yaml"), "{err}");
}

#[test]
fn explain_str_accepts_json_and_yaml_and_uses_the_fallback_name() {
    let node = r#"{"kind": "Node", "spec": {"taints": [{"key": "k", "effect": "NoBad"}]}}"#;
    let err = explain_str(node, "kind: Pod", "fallback-node", "p").expect_err("invalid");
    let text = err.to_string();
    assert!(
        text.contains(
            "Node \"fallback-node\" is invalid: spec.taints[0].effect: Unsupported value: \"NoBad\""
        ),
        "{text}"
    );
    assert!(
        text.contains("Pod \"p\" is invalid: metadata.uid: Required value"),
        "{text}"
    );
}

#[test]
fn negative_toleration_seconds_are_accepted_and_evict_now() {
    let node = "kind: Node\nspec:\n  taints:\n  - {key: node.kubernetes.io/unreachable, effect: NoExecute}\n";
    let pod = "kind: Pod\nmetadata: {uid: abc-123}\nspec:\n  tolerations:\n  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: -1}\n";
    let report = explain_str(node, pod, "n", "p").expect("valid");
    assert_eq!(
        serde_json::to_value(report).expect("serializes")["noExecute"],
        json!({"outcome": "evictNow"})
    );
}

#[test]
fn human_text_names_each_taint_and_the_outcome() {
    let report = explain("node-unreachable.yaml", "pod-deployment.yaml").expect("valid");
    let text = render_text(&report);
    assert!(text.contains("QoS class:  Burstable"), "{text}");
    assert!(
        text.contains("/kubepods/burstable/pod1f0e7a52-3c4d-4b8e-9a6f-0123456789ab (cgroupfs)"),
        "{text}"
    );
    assert!(
        text.contains("node.kubernetes.io/unreachable:NoExecute  tolerated by spec.tolerations[2]"),
        "{text}"
    );
    assert!(
        text.contains("node.kubernetes.io/unreachable:NoSchedule  NOT tolerated"),
        "{text}"
    );
    assert!(text.contains("schedulable: no"), "{text}");
    assert!(text.contains("NoExecute:  evicted after 300s"), "{text}");
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    /// YAML-ish fragments that hit the decoder's type branches: right and wrong types in the
    /// fields explain reads.
    fn fragment() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "kind: Node",
            "kind: Pod",
            "kind: 3",
            "metadata: {uid: a-b, name: x}",
            "metadata: 1",
            "metadata: {uid: [1]}",
            "spec: {taints: [{key: k, effect: NoExecute}]}",
            "spec: {taints: 7}",
            "spec: {taints: [null, 1, {key: 1}]}",
            "spec: {tolerations: [{operator: Exists}, {key: k, tolerationSeconds: 1.5}]}",
            "spec: {containers: [{resources: {requests: {cpu: 1e999}, limits: {memory: -1}}}]}",
            "spec: {containers: [{resources: {limits: {cpu: {a: b}}}}], resources: 3}",
            "status: {qosClass: Nope}",
            "status: []",
            "spec: null",
            "---",
            "- 1",
            "? a",
        ])
        .prop_map(str::to_owned)
    }

    proptest! {
        #[test]
        fn explain_never_panics_on_arbitrary_text(node in ".{0,200}", pod in ".{0,200}") {
            let _ = explain_str(&node, &pod, "n", "p");
        }

        #[test]
        fn explain_never_panics_on_mixed_fragments(
            node in prop::collection::vec(fragment(), 0..5),
            pod in prop::collection::vec(fragment(), 0..5),
        ) {
            let _ = explain_str(&node.join("\n"), &pod.join("\n"), "n", "p");
        }
    }
}

#[test]
fn a_taint_time_that_is_not_rfc_3339_is_refused_like_the_api_server_decodes_it() {
    let node = |time: &str| {
        format!(
            "apiVersion: v1\nkind: Node\nmetadata: {{name: n}}\nspec:\n  taints:\n  - {{key: node.kubernetes.io/unreachable, effect: NoExecute, timeAdded: \"{time}\"}}\n"
        )
    };
    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, uid: 0b1c2d3e-0000-4000-8000-000000000001}\nspec:\n  containers: [{name: c, image: x}]\n";
    for bad in [
        "9999-99-99T99:99:99Z",
        "yesterday",
        "",
        "2024-01-02 03:04:05",
    ] {
        let err = explain_str(&node(bad), pod, "n", "p").expect_err(bad);
        let text = err.to_string();
        assert!(
            text.contains(
                "Node \"n\" cannot be handled as a Node: spec.taints[0].timeAdded: Invalid value"
            ),
            "{bad:?}: {text}"
        );
    }
    for good in ["2024-01-02T03:04:05Z", "2024-01-02T03:04:05+02:00"] {
        assert!(explain_str(&node(good), pod, "n", "p").is_ok(), "{good}");
    }
}

/// KEP-5471: with `TaintTolerationComparisonOperators` off (the default), an API server refuses
/// `Lt`/`Gt`; explain refuses the pod the same way and says why and what the fence does.
#[test]
fn lt_and_gt_are_refused_with_the_gate_off_and_the_reason_is_given() {
    let node = "kind: Node\nspec:\n  taints:\n  - {key: example.com/sla, value: \"950\", effect: NoSchedule}\n";
    let pod = "kind: Pod\nmetadata: {uid: abc-123}\nspec:\n  tolerations:\n  - {key: example.com/sla, operator: Gt, value: \"900\", effect: NoSchedule}\n";
    let err = explain_str(node, pod, "n", "p").expect_err("gate off");
    let text = err.to_string();
    assert!(
        text.contains("spec.tolerations[0].operator: Unsupported value: \"Gt\""),
        "{text}"
    );
    assert!(
        text.contains("need the TaintTolerationComparisonOperators feature gate"),
        "{text}"
    );
    assert!(text.contains("so does the fence"), "{text}");
}

#[test]
fn lt_and_gt_compare_integers_with_the_gate_on() {
    let gates = nodewarden::core::features::FeatureGates {
        taint_toleration_comparison_operators: true,
    };
    let node = "kind: Node\nspec:\n  taints:\n  - {key: example.com/sla, value: \"950\", effect: NoSchedule}\n  - {key: example.com/cost, value: \"0100\", effect: NoSchedule}\n  - {key: node.kubernetes.io/unreachable, effect: NoExecute}\n";
    let pod = "kind: Pod\nmetadata: {uid: abc-123}\nspec:\n  tolerations:\n  - {key: example.com/sla, operator: Gt, value: \"900\", effect: NoSchedule}\n  - {key: example.com/cost, operator: Lt, value: \"200\"}\n  - {key: node.kubernetes.io/unreachable, operator: Lt, value: \"5\", effect: NoExecute, tolerationSeconds: 60}\n  - {key: example.com/other, operator: Gt, value: \"007\"}\n";
    let report = explain_str_gated(node, pod, "n", "p", &gates).expect("gate on");
    let json = serde_json::to_value(&report).expect("serializes");
    // 950 > 900; "0100" is not canonical, so the Lt toleration does not match it; the
    // unreachable taint's empty value is no integer: untolerated, evict now.
    assert_eq!(json["taints"][0]["toleratedBy"], json!(0));
    assert_eq!(json["taints"][1]["toleratedBy"], json!(null));
    assert_eq!(json["taints"][2]["toleratedBy"], json!(null));
    assert_eq!(json["schedulable"], json!(false));
    assert_eq!(json["noExecute"], json!({"outcome": "evictNow"}));
    let notes = report.notes.join("\n");
    assert!(
        notes.contains("spec.tolerations[0] (Gt): tolerates a taint whose value is a canonical 64-bit integer greater than 900"),
        "{notes}"
    );
    assert!(
        notes.contains("spec.tolerations[3] (Gt): its value \"007\" is not a canonical 64-bit integer, so it tolerates no taint"),
        "{notes}"
    );
    assert!(render_text(&report).contains("note:"));
    // Without comparison tolerations the JSON shape is unchanged (no `notes`).
    let plain = explain("node-unreachable.yaml", "pod-deployment.yaml").expect("valid");
    assert!(
        serde_json::to_value(&plain)
            .expect("serializes")
            .get("notes")
            .is_none()
    );
}
