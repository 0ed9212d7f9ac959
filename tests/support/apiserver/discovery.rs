//! `/version` and the legacy discovery documents (`/api`, `/api/v1`, `/apis`, `/apis/<g>`,
//! `/apis/<g>/<v>`). Aggregated discovery (`apidiscovery.k8s.io/v2`) is not served: clients that
//! ask for it also accept `application/json`, and fall back to these documents when they get it,
//! as they do with a real server that has aggregated discovery off.

use serde_json::{Value, json};

use super::resources::{ALL, Resource};

/// The version the test server claims (the oldest API server nodewarden supports).
pub const GIT_VERSION: &str = "v1.33.0";

/// `GET /version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `GET /api`.
pub fn api_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443" }],
    })
}

fn groups() -> Vec<&'static str> {
    let mut gs: Vec<&str> = ALL
        .iter()
        .map(|r| r.group)
        .filter(|g| !g.is_empty())
        .collect();
    gs.dedup();
    gs
}

fn group_doc(group: &str) -> Value {
    let gv = json!({ "groupVersion": format!("{group}/v1"), "version": "v1" });
    json!({ "name": group, "versions": [gv.clone()], "preferredVersion": gv })
}

/// `GET /apis`.
pub fn api_group_list() -> Value {
    let groups: Vec<Value> = groups().into_iter().map(group_doc).collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// `GET /apis/<group>`.
pub fn api_group(group: &str) -> Option<Value> {
    groups().contains(&group).then(|| {
        let mut g = group_doc(group);
        g["kind"] = json!("APIGroup");
        g["apiVersion"] = json!("v1");
        g
    })
}

fn resource_entries(r: &Resource) -> Vec<Value> {
    let mut out = vec![json!({
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        // deletecollection is not implemented, so it is not advertised.
        "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
        "shortNames": r.short_names,
    })];
    if r.status_subresource {
        out.push(json!({
            "name": format!("{}/status", r.plural),
            "singularName": "",
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    out
}

/// `GET /api/v1` or `GET /apis/<group>/<version>`.
pub fn api_resource_list(group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = ALL
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .flat_map(|r| resource_entries(r))
        .collect();
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources }),
    )
}
