//! `nodewarden nodes` (and `kubectl nodewarden nodes`): the fleet at a glance from the API alone.
//! For each Node: the conditions and taints nodewarden wrote (by the Node's managedFields, the
//! API server's own record of which manager set which field) with their ages, the age of its
//! Lease (`nodewarden-<node>`, docs/semantics.md §13; older than its duration: cut off?), and its
//! latest fence and quorum Events (written by the agent as component `nodewarden`, `api::events`).

use std::fmt::Write;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::api::FIELD_MANAGER;

/// Any one list from the API server: a person is waiting.
const LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// The three lists `nodes` reads: Nodes, Leases in the lease namespace, Events about Nodes.
pub struct Fleet {
    pub nodes: Value,
    pub leases: Value,
    pub events: Value,
}

/// Reads the three lists (each bounded by [`LIST_TIMEOUT`]).
pub async fn read(client: &kube::Client, lease_namespace: &str) -> Result<Fleet, String> {
    let list = |path: String| async move {
        let request = http::Request::get(path.as_str())
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        let text = tokio::time::timeout(LIST_TIMEOUT, client.request_text(request))
            .await
            .map_err(|_| format!("{path}: no answer within {}s", LIST_TIMEOUT.as_secs()))?
            .map_err(|e| {
                format!(
                    "{path}: {}",
                    crate::api::kubeconfig::redact_quoted(&e.to_string())
                )
            })?;
        serde_json::from_str::<Value>(&text).map_err(|e| format!("{path}: {e}"))
    };
    Ok(Fleet {
        nodes: list("/api/v1/nodes".into()).await?,
        leases: list(format!(
            "/apis/coordination.k8s.io/v1/namespaces/{lease_namespace}/leases"
        ))
        .await?,
        events: list(format!(
            "/api/v1/namespaces/{}/events",
            crate::api::events::EVENT_NAMESPACE
        ))
        .await?,
    })
}

fn items(list: &Value) -> &[Value] {
    list.get("items")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn str_at<'v>(v: &'v Value, pointer: &str) -> &'v str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn parse_time(s: &str) -> Option<SystemTime> {
    crate::state::parse_time(s)
}

/// "40s", "5m", "3h", "2d": the largest unit, as kubectl prints ages.
fn age(now: SystemTime, then: Option<SystemTime>) -> String {
    let Some(secs) = then
        .and_then(|t| now.duration_since(t).ok())
        .map(|d| d.as_secs())
    else {
        return "?".into();
    };
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// The fieldsV1 of nodewarden's entries in the object's managedFields, as one JSON text to
/// search for the keys it owns.
fn ours(node: &Value) -> String {
    node.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter(|e| e.get("manager").and_then(Value::as_str) == Some(FIELD_MANAGER))
                .filter_map(|e| e.get("fieldsV1"))
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The table, one row per Node, sorted by name as the API lists them.
pub fn text(fleet: &Fleet, now: SystemTime) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<20} {:<36} {:<44} {:<16} {:<36} LAST QUORUM EVENT",
        "NODE", "CONDITIONS (NODEWARDEN)", "TAINTS (NODEWARDEN)", "LEASE", "LAST FENCE EVENT"
    );
    for node in items(&fleet.nodes) {
        let name = str_at(node, "/metadata/name");
        let owned = ours(node);
        // managedFields key a condition by its type: k:{"type":"DiskPressure"} (escaped in
        // the JSON text searched here).
        let conditions: Vec<String> = node
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter(|c| {
                owned.contains(&format!(
                    "k:{{\\\"type\\\":\\\"{}\\\"}}",
                    str_at(c, "/type")
                ))
            })
            .map(|c| {
                format!(
                    "{}={} {}",
                    str_at(c, "/type"),
                    str_at(c, "/status"),
                    age(now, parse_time(str_at(c, "/lastTransitionTime")))
                )
            })
            .collect();
        let taints: Vec<String> = node
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .map(|t| {
                let key = str_at(t, "/key");
                let mark = if owned.contains(&format!("\\\"key\\\":\\\"{key}\\\"")) {
                    "*"
                } else {
                    ""
                };
                format!("{mark}{key}:{}", str_at(t, "/effect"))
            })
            .collect();
        let lease = items(&fleet.leases)
            .iter()
            .find(|l| str_at(l, "/metadata/name") == format!("nodewarden-{name}"))
            .map_or_else(
                || "none".to_string(),
                |l| {
                    let renewed = parse_time(str_at(l, "/spec/renewTime"));
                    let duration = l
                        .pointer("/spec/leaseDurationSeconds")
                        .and_then(Value::as_u64)
                        .unwrap_or(40);
                    let stale = renewed
                        .and_then(|r| now.duration_since(r).ok())
                        .is_none_or(|a| a > Duration::from_secs(duration));
                    let shown = age(now, renewed);
                    if stale {
                        format!("{shown} (cut off?)")
                    } else {
                        shown
                    }
                },
            );
        let latest = |wanted: &dyn Fn(&str) -> bool| {
            items(&fleet.events)
                .iter()
                .filter(|e| {
                    str_at(e, "/involvedObject/kind") == "Node"
                        && str_at(e, "/involvedObject/name") == name
                        && (str_at(e, "/reportingComponent") == FIELD_MANAGER
                            || str_at(e, "/source/component") == FIELD_MANAGER)
                        && wanted(str_at(e, "/reason"))
                })
                .filter_map(|e| {
                    let at = parse_time(str_at(e, "/lastTimestamp"))
                        .or_else(|| parse_time(str_at(e, "/eventTime")))
                        .or_else(|| parse_time(str_at(e, "/metadata/creationTimestamp")));
                    Some((at?, str_at(e, "/reason")))
                })
                .max_by_key(|(at, _)| *at)
                .map_or_else(
                    || "-".to_string(),
                    |(at, reason)| format!("{reason} {} ago", age(now, Some(at))),
                )
        };
        let fence = latest(&|r| r.starts_with("NodewardenFence"));
        let quorum = latest(&|r| r.contains("Quorum"));
        let or_none = |v: Vec<String>| {
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(",")
            }
        };
        let _ = writeln!(
            out,
            "{name:<20} {:<36} {:<44} {lease:<16} {fence:<36} {quorum}",
            or_none(conditions),
            or_none(taints),
        );
    }
    let _ = writeln!(out, "(* a taint nodewarden wrote)");
    out
}
