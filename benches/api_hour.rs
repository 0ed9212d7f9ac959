//! API requests and bytes sent per node-hour, at the default settings, measured against the API
//! test server in process on a paused clock (an hour takes a second or two). Two scenarios: idle,
//! and one pressure change per minute. Printed next to the kubelet's figures for the same
//! settings, computed from its documented cadence (Lease update every 10 s; status PATCH once per
//! report interval and on change) and the size of the patch it sends when only heartbeats moved,
//! plus the watches it keeps like ours: at least its Node, its pods and the Services, each listed
//! once at start and re-opened every 5–10 min (client-go's reflector draws each watch's timeout
//! at random in [5 min, 10 min): 8 an hour on average). Last, a markdown table of both,
//! extrapolated to the API server of a 5,000-node cluster.
//!
//! Run with `cargo bench --bench api_hour`.

#[path = "../tests/support/apiserver/mod.rs"]
mod apiserver;

#[path = "../tests/support/switch.rs"]
mod switch;

use switch::Switch;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nodewarden::agent::connected;
use nodewarden::config::Config;
use nodewarden::observe::http::Health;
use serde_json::json;

struct Tally {
    by_kind: BTreeMap<String, (usize, usize)>,
    requests: usize,
    bytes: usize,
}

fn kind(method: &str, path: &str, query: Option<&str>) -> String {
    let watch = query.is_some_and(|q| q.contains("watch=true") || q.contains("watch=1"));
    let what = if path.contains("/leases") {
        "lease"
    } else if path.ends_with("/status") {
        "node status"
    } else if path.contains("/events") {
        "event"
    } else if path.contains("/pods") {
        "pods"
    } else {
        "node"
    };
    format!("{method} {what}{}", if watch { " (watch)" } else { "" })
}

fn hour(change_every_minute: bool) -> Tally {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = apiserver::ApiServer::new();
        server.create_node(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}));
        let mut config = Config::defaults();
        config.node_name = Some("n1".into());
        config.state_directory = std::env::temp_dir().join("nodewarden-bench-state");
        if change_every_minute {
            // A condition change every minute needs the transition period out of the way.
            config.eviction_pressure_transition_period = Duration::ZERO;
        }
        let pressure = Arc::new(AtomicBool::new(false));
        let flipper = {
            let pressure = pressure.clone();
            async move {
                if !change_every_minute {
                    return;
                }
                for _ in 0..59 {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    pressure.fetch_xor(true, Ordering::SeqCst);
                }
            }
        };
        let health = Arc::new(Health::new(Duration::from_secs(60)));
        let agent = connected::run(&config, server.client(), Switch(pressure), health, async {
            tokio::time::sleep(Duration::from_secs(3595)).await;
            "hour over"
        });
        let (r, ()) = tokio::join!(agent, flipper);
        r.expect("agent ran");
        let mut t = Tally {
            by_kind: BTreeMap::new(),
            requests: 0,
            bytes: 0,
        };
        for r in server.requests() {
            let k = kind(&r.method, &r.path, r.query.as_deref());
            // Bytes on the wire from the agent: request line, the headers kube sends and the body
            // are approximated by path + query + body (headers are the same for every client).
            let size = r.path.len() + r.query.as_deref().map_or(0, str::len) + r.body.len();
            let e = t.by_kind.entry(k).or_default();
            e.0 += 1;
            e.1 += size;
            t.requests += 1;
            t.bytes += size;
        }
        t
    })
}

/// The patch a kubelet sends when only heartbeats changed: `$setElementOrder/conditions` with
/// every condition type and each condition's `lastHeartbeatTime` (the strategic-merge diff of
/// its five conditions). Its Lease update carries the whole Lease. Its Event for a condition's
/// transition. Each with its path: (status, Lease, Event) bytes.
fn kubelet_model() -> (usize, usize, usize) {
    let ts = "2026-11-29T18:00:00Z";
    let types = ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"];
    let order: Vec<_> = types.iter().map(|t| json!({"type": t})).collect();
    let conds: Vec<_> = types
        .iter()
        .map(|t| json!({"type": t, "lastHeartbeatTime": ts}))
        .collect();
    let status = json!({"status": {"$setElementOrder/conditions": order, "conditions": conds}});
    let lease = json!({
        "kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
        "metadata": {"name": "worker-1", "namespace": "kube-node-lease", "uid": "2f0c6f1e-8d0b-4a57-9a8e-6b1f8c3d9e21",
            "resourceVersion": "123456", "creationTimestamp": ts,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "worker-1", "uid": "7d1f5c2a-1b3e-4f6a-8c9d-0e1f2a3b4c5d"}]},
        "spec": {"holderIdentity": "worker-1", "leaseDurationSeconds": 40, "renewTime": "2026-11-29T18:00:00.000000Z"}
    });
    // An Event as the kubelet's recorder posts it for a node condition's transition.
    let event = json!({
        "kind": "Event", "apiVersion": "v1",
        "metadata": {"name": "worker-1.187a3c5e2f9d1b04", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": "worker-1", "uid": "worker-1"},
        "reason": "NodeHasDiskPressure",
        "message": "Node worker-1 status is now: NodeHasDiskPressure",
        "source": {"component": "kubelet", "host": "worker-1"},
        "firstTimestamp": ts, "lastTimestamp": ts, "count": 1, "type": "Normal",
        "eventTime": null, "reportingComponent": "kubelet", "reportingInstance": "worker-1"
    });
    (
        serde_json::to_vec(&status).map_or(0, |v| v.len()) + "/api/v1/nodes/worker-1/status".len(),
        serde_json::to_vec(&lease).map_or(0, |v| v.len())
            + "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/worker-1".len(),
        serde_json::to_vec(&event).map_or(0, |v| v.len())
            + "/api/v1/namespaces/default/events".len(),
    )
}

/// The kubelet's watches counted in the model (it keeps more: CSIDrivers, RuntimeClasses and,
/// with the default change detection, one per ConfigMap and Secret its pods mount): its Node, its
/// pods, the Services. Each: the path and query of its watch request, and of its initial list.
const KUBELET_WATCHES: [(&str, &str); 3] = [
    (
        "/api/v1/nodes",
        "allowWatchBookmarks=true&fieldSelector=metadata.name%3Dworker-1&resourceVersion=123456&timeoutSeconds=437&watch=true",
    ),
    (
        "/api/v1/pods",
        "allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dworker-1&resourceVersion=123456&timeoutSeconds=512&watch=true",
    ),
    (
        "/api/v1/services",
        "allowWatchBookmarks=true&resourceVersion=123456&timeoutSeconds=349&watch=true",
    ),
];
/// Watch requests per watch and hour: a timeout drawn uniformly in [300 s, 600 s), 450 s mean.
const KUBELET_WATCHES_PER_HOUR: usize = 8;

/// The kubelet's watch requests and their initial lists in an hour that begins with its start,
/// as ours does: (requests, bytes).
fn kubelet_watches() -> (usize, usize) {
    let mut requests = 0;
    let mut bytes = 0;
    for (path, query) in KUBELET_WATCHES {
        let list_query = query
            .split('&')
            .filter(|q| q.starts_with("fieldSelector"))
            .collect::<Vec<_>>()
            .join("&");
        requests += 1 + KUBELET_WATCHES_PER_HOUR;
        bytes +=
            path.len() + list_query.len() + KUBELET_WATCHES_PER_HOUR * (path.len() + query.len());
    }
    (requests, bytes)
}

/// Nodes of the cluster the per-node figures are extrapolated to.
const CLUSTER_NODES: f64 = 5000.0;

fn main() {
    let (status_bytes, lease_bytes, event_bytes) = kubelet_model();
    // (scenario, nodewarden requests and bytes, kubelet requests and bytes), per node-hour.
    let mut rows: Vec<(&str, usize, usize, usize, usize)> = Vec::new();
    for (name, change) in [("idle", false), ("one pressure change per minute", true)] {
        let t = hour(change);
        println!(
            "== nodewarden, {name}: {} requests, {} bytes per node-hour",
            t.requests, t.bytes
        );
        for (k, (n, b)) in &t.by_kind {
            println!("   {k:<26} {n:>5} requests {b:>9} bytes");
        }
        let status_patches = if change { 60 + 59 } else { 60 };
        // The kubelet records an Event on each transition of a pressure condition
        // (NodeHasDiskPressure, NodeHasNoDiskPressure, ...), as nodewarden does.
        let events = if change { 59 } else { 0 };
        let (watch_requests, watch_bytes) = kubelet_watches();
        let kubelet_requests = 360 + status_patches + events + watch_requests;
        let kubelet_bytes =
            360 * lease_bytes + status_patches * status_bytes + events * event_bytes + watch_bytes;
        println!(
            "   kubelet, same settings:  {kubelet_requests} requests ({} Lease + {status_patches} status + {events} Events + {watch_requests} lists and watches), {kubelet_bytes} bytes (status patch {status_bytes} B, Lease update {lease_bytes} B, Event {event_bytes} B)",
            360
        );
        rows.push((name, t.requests, t.bytes, kubelet_requests, kubelet_bytes));
    }
    // The same per node-hour figures at the API server of a cluster of `CLUSTER_NODES` nodes:
    // every node's agent and kubelet alike, spread over the hour.
    println!(
        "\n| scenario | nodewarden requests / node-hour | bytes | kubelet requests / node-hour | bytes | {CLUSTER_NODES:.0} nodes: nodewarden requests/s | kubelet requests/s | both | nodewarden KB/s | kubelet KB/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let per_second = |per_node_hour: usize| per_node_hour as f64 * CLUSTER_NODES / 3600.0;
    for (name, nw_req, nw_bytes, k_req, k_bytes) in rows {
        println!(
            "| {name} | {nw_req} | {nw_bytes} | {k_req} | {k_bytes} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
            per_second(nw_req),
            per_second(k_req),
            per_second(nw_req + k_req),
            per_second(nw_bytes) / 1000.0,
            per_second(k_bytes) / 1000.0
        );
    }
}
