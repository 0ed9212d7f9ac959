//! The connected agent against the strict API test server: request cadence over a paused-clock
//! hour, patch bodies carrying only owned conditions, a concurrent administrator using real
//! `kubectl taint`, conflict storms, server errors, a black hole, dropped watches, and another
//! writer of an owned condition.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nodewarden::agent::connected;
use nodewarden::config::Config;
use nodewarden::core::ownership;
use nodewarden::core::quorum::ZoneRecord;
use nodewarden::observe::http::Health;
use serde_json::{Value, json};
use support::apiserver::{ApiServer, Fault};
use support::switch::Switch;

const NODE: &str = "n1";
const LEASE_PATH: &str =
    "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/nodewarden-n1";
const LEASES_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
const STATUS_PATH: &str = "/api/v1/nodes/n1/status";
const NODE_PATH: &str = "/api/v1/nodes/n1";
const DISK_TAINT: &str = "node.kubernetes.io/disk-pressure";

fn config(update: Duration, report: Duration, transition: Duration) -> Config {
    let mut c = Config::defaults();
    c.node_name = Some(NODE.into());
    c.node_status_update_frequency = update;
    c.node_status_report_frequency = report;
    c.eviction_pressure_transition_period = transition;
    c.state_directory = fresh_state_directory();
    c
}

/// A state directory no other test (nor an earlier run under a reused PID) has written: the
/// agent resumes from what it finds there.
fn fresh_state_directory() -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("nodewarden-test-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A node as a kubelet would have registered it, with a Ready condition and an admin taint.
fn seed(server: &ApiServer) {
    server.create_node(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE},
        "spec": {"taints": [{"key": "dedicated", "value": "edge", "effect": "NoSchedule"}]},
        "status": {"conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
            "lastHeartbeatTime": "2026-11-29T00:00:00Z", "lastTransitionTime": "2026-11-29T00:00:00Z"
        }]}
    }));
}

fn count(server: &ApiServer, method: &str, path: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.method == method && r.path == path)
        .count()
}

fn taint_keys(node: &Value) -> Vec<String> {
    node["spec"]["taints"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    format!(
                        "{}={}:{}",
                        t["key"].as_str().unwrap_or(""),
                        t["value"].as_str().unwrap_or(""),
                        t["effect"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn condition(node: &Value, ty: &str) -> Value {
    node["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == ty).cloned())
        .unwrap_or(Value::Null)
}

async fn run_for(
    server: &ApiServer,
    config: Config,
    source: Switch,
    health: Arc<Health>,
    until: Duration,
) {
    let shutdown = async move {
        tokio::time::sleep(until).await;
        "test end"
    };
    connected::run(&config, server.client(), source, health, shutdown)
        .await
        .expect("agent ran");
}

/// The API server with the Node, and an agent's health, pressure source (no pressure) and
/// configuration: status computed every 10 s, reported every minute, a 5 min transition period.
fn idle_node() -> (ApiServer, Arc<Health>, Switch, Config) {
    let server = ApiServer::new();
    seed(&server);
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let source = Switch(Arc::new(AtomicBool::new(false)));
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(300),
    );
    (server, health, source, cfg)
}

/// The renewals of our Lease (PUT) that reached the server from `from` on, in order: when, as
/// an offset from `from`, and the status answered (none while unanswered).
fn lease_puts(
    requests: &[support::apiserver::Recorded],
    from: tokio::time::Instant,
) -> Vec<(Duration, Option<u16>)> {
    requests
        .iter()
        .filter(|r| r.path == LEASE_PATH && r.method == "PUT" && r.at >= from)
        .map(|r| (r.at - from, r.status))
        .collect()
}

/// Of [`lease_puts`], those the server stored: when, as offsets from `from`.
fn stored_renewals(
    requests: &[support::apiserver::Recorded],
    from: tokio::time::Instant,
) -> Vec<Duration> {
    lease_puts(requests, from)
        .into_iter()
        .filter(|(_, status)| *status == Some(200))
        .map(|(at, _)| at)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn an_idle_hour_costs_one_lease_renewal_per_10s_and_one_status_patch_per_minute() {
    let (server, health, source, cfg) = idle_node();
    // Stop just before the hour so no timer races the end.
    run_for(
        &server,
        cfg,
        source,
        health.clone(),
        Duration::from_secs(3595),
    )
    .await;

    // Lease: ticks at 0, 10, …, 3590 = 360; the first one creates it.
    assert_eq!(count(&server, "POST", LEASES_PATH), 1, "one create");
    assert_eq!(
        count(&server, "PUT", LEASE_PATH),
        359,
        "one renewal per 10 s"
    );
    // Status: the first report at once, then one per report interval: 0, 60, …, 3540.
    assert_eq!(count(&server, "PATCH", STATUS_PATH), 60);
    // Nothing to taint: one read at start (reconcile), no taint write.
    assert_eq!(count(&server, "PATCH", NODE_PATH), 0);

    for r in server.requests().iter().filter(|r| r.path == STATUS_PATH) {
        assert_eq!(
            r.content_type.as_deref(),
            Some("application/strategic-merge-patch+json")
        );
        let body = r.body_json();
        assert_eq!(
            body.as_object().map(|o| o.len()),
            Some(1),
            "only status: {body}"
        );
        let types: Vec<&str> = body["status"]["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert_eq!(
            types,
            ["MemoryPressure", "DiskPressure", "PIDPressure"],
            "only owned conditions"
        );
    }
    let node = server.node(NODE).expect("node");
    assert_eq!(
        condition(&node, "Ready")["reason"],
        "KubeletReady",
        "others' conditions untouched"
    );
    assert_eq!(condition(&node, "DiskPressure")["status"], "False");
    assert_eq!(
        condition(&node, "DiskPressure")["reason"],
        "KubeletHasNoDiskPressure"
    );
    assert_ne!(
        condition(&node, "DiskPressure")["lastHeartbeatTime"],
        condition(&node, "DiskPressure")["lastTransitionTime"],
        "heartbeats moved on the server"
    );
    assert_eq!(taint_keys(&node), ["dedicated=edge:NoSchedule"]);
    let lease = server
        .lease("kube-node-lease", "nodewarden-n1")
        .expect("lease");
    assert_eq!(lease["spec"]["holderIdentity"], NODE);
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 40);
    assert_eq!(lease["metadata"]["ownerReferences"][0]["kind"], "Node");
    assert_eq!(
        lease["metadata"]["ownerReferences"][0]["uid"],
        node["metadata"]["uid"]
    );
    // Three condition events at start (each condition created False).
    assert_eq!(server.events().len(), 3);
    // `/metrics` counts the agent's own requests: the ones the server saw.
    let metrics = health.metrics.render(None);
    for series in [
        "nodewarden_api_requests_total{verb=\"update\",resource=\"leases\",outcome=\"ok\"} 359\n",
        "nodewarden_api_requests_total{verb=\"patch\",resource=\"nodes/status\",outcome=\"ok\"} 60\n",
    ] {
        assert!(metrics.contains(series), "{series} in {metrics}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_change_is_reported_at_once_and_tainted_then_untainted_after_the_transition_period() {
    let server = ApiServer::new();
    seed(&server);
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let pressure = Arc::new(AtomicBool::new(false));
    let source = Switch(pressure.clone());
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(30),
    );
    let s2 = server.clone();
    let flipper = async move {
        tokio::time::sleep(Duration::from_secs(125)).await;
        pressure.store(true, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(20)).await;
        let node = s2.node(NODE).expect("node");
        assert_eq!(condition(&node, "DiskPressure")["status"], "True");
        assert_eq!(
            taint_keys(&node),
            [
                "dedicated=edge:NoSchedule",
                "node.kubernetes.io/disk-pressure=:NoSchedule"
            ]
        );
        pressure.store(false, Ordering::SeqCst);
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(295));
    tokio::join!(agent, flipper);

    let patches: Vec<(Duration, String)> = {
        let all = server.requests();
        let start = all.first().map(|r| r.at).expect("requests");
        all.iter()
            .filter(|r| r.method == "PATCH" && r.path == STATUS_PATH)
            .map(|r| {
                let disk = r.body_json()["status"]["conditions"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["type"] == "DiskPressure").cloned())
                    .unwrap_or(Value::Null);
                (
                    r.at - start,
                    disk["status"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let times: Vec<u64> = patches.iter().map(|p| p.0.as_secs()).collect();
    // 0, 60, 120 idle; 130 the change (sampled at 130 after the flip at 125), then once per
    // minute after the last report; pressure last seen at 140, False at 170 (= 140 + 30).
    assert_eq!(times, [0, 60, 120, 130, 170, 230, 290], "{patches:?}");
    assert_eq!(patches[3].1, "True");
    assert_eq!(patches[4].1, "False");
    let node = server.node(NODE).expect("node");
    assert_eq!(
        taint_keys(&node),
        ["dedicated=edge:NoSchedule"],
        "our taint removed, the admin's kept"
    );
    let taint_writes: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path == NODE_PATH)
        .map(|r| r.body_json())
        .collect();
    // With no other writer, no attempt is wasted on a conflict: one add, one remove.
    let node_writes: Vec<_> = server
        .requests()
        .iter()
        .filter(|r| r.path.starts_with(NODE_PATH))
        .map(|r| {
            format!(
                "{} {} {:?} {}",
                r.method,
                r.path,
                r.status,
                String::from_utf8_lossy(&r.body)
                    .chars()
                    .take(80)
                    .collect::<String>()
            )
        })
        .collect();
    assert_eq!(taint_writes.len(), 2, "{node_writes:#?}");
    for w in &taint_writes {
        assert!(
            w["metadata"]["resourceVersion"].is_string(),
            "optimistic concurrency: {w}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn conflicts_server_errors_and_throttling_are_retried_within_the_backoff_cap() {
    let server = ApiServer::new();
    seed(&server);
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let pressure = Arc::new(AtomicBool::new(true));
    let source = Switch(pressure.clone());
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(300),
    );
    server
        .faults()
        .fail_next(("PATCH", STATUS_PATH), 6, Fault::Status500);
    server
        .faults()
        .fail_next(("PATCH", NODE_PATH), 8, Fault::Status409);
    server.faults().fail_next(
        ("POST", "/api/v1/namespaces/default/events"),
        3,
        Fault::Status429 {
            retry_after_secs: 3,
        },
    );
    server
        .faults()
        .fail_next(("PUT", LEASE_PATH), 4, Fault::Status409);
    run_for(&server, cfg, source, health, Duration::from_secs(120)).await;

    let node = server.node(NODE).expect("node");
    assert_eq!(
        condition(&node, "DiskPressure")["status"],
        "True",
        "no transition lost"
    );
    assert_eq!(
        taint_keys(&node),
        [
            "dedicated=edge:NoSchedule",
            "node.kubernetes.io/disk-pressure=:NoSchedule"
        ]
    );
    assert_eq!(server.events().len(), 3, "every event delivered once");
    let all = server.requests();
    // Retries of the status PATCH never wait longer than the cap (the 10 s renew interval).
    let status: Vec<_> = all.iter().filter(|r| r.path == STATUS_PATH).collect();
    for pair in status.windows(2) {
        if pair[0].status.is_some_and(|s| s >= 500) {
            let gap = pair[1].at - pair[0].at;
            assert!(
                gap <= Duration::from_secs(10),
                "retry after {gap:?} exceeds the cap"
            );
        }
    }
    assert!(status.iter().any(|r| r.status == Some(200)));
    // Leases: a 409 makes the keeper read the Lease again before retrying.
    let lease_gets = all
        .iter()
        .filter(|r| r.method == "GET" && r.path == LEASE_PATH)
        .count();
    assert!(lease_gets >= 2, "re-read after conflicts, saw {lease_gets}");
}

#[tokio::test(start_paused = true)]
async fn a_black_holed_server_and_dropped_watches_are_recovered_within_one_renew_interval() {
    let server = ApiServer::new();
    seed(&server);
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let pressure = Arc::new(AtomicBool::new(false));
    let source = Switch(pressure.clone());
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(300),
    );
    let s2 = server.clone();
    let chaos = async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        for route in [
            ("PUT", LEASE_PATH),
            ("PATCH", STATUS_PATH),
            ("GET", NODE_PATH),
            ("PATCH", NODE_PATH),
        ] {
            s2.faults().black_hole(route, true);
        }
        s2.drop_watches();
        // Pressure appears while the server is a black hole.
        tokio::time::sleep(Duration::from_secs(20)).await;
        pressure.store(true, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_secs(100)).await;
        s2.faults().clear();
        let back = tokio::time::Instant::now();
        tokio::time::sleep(Duration::from_secs(60)).await;
        // While the agent runs: on shutdown it closes its watches.
        (back, s2.open_watches())
    };
    let agent = run_for(
        &server,
        cfg,
        source,
        health.clone(),
        Duration::from_secs(220),
    );
    let ((), (back, open_watches)) = tokio::join!(agent, chaos);
    let all = server.requests();
    let first_renewal_after = stored_renewals(&all, back)
        .into_iter()
        .min()
        .expect("renewed after the server returned");
    assert!(
        first_renewal_after <= Duration::from_secs(10),
        "resumed after {first_renewal_after:?}"
    );
    let first_status_after = all
        .iter()
        .filter(|r| r.path == STATUS_PATH && r.at >= back && r.status == Some(200))
        .map(|r| r.at - back)
        .min()
        .expect("status written after the server returned");
    assert!(
        first_status_after <= Duration::from_secs(10),
        "status resumed after {first_status_after:?}"
    );
    let node = server.node(NODE).expect("node");
    assert_eq!(
        condition(&node, "DiskPressure")["status"],
        "True",
        "the transition made while cut off"
    );
    assert!(taint_keys(&node).iter().any(|t| t.starts_with(DISK_TAINT)));
    let metrics = health.metrics.render(None);
    assert!(metrics.contains("nodewarden_api_reachable 1"), "{metrics}");
    // The node watch was restarted after the drop: it is open again.
    assert!(open_watches >= 1, "watches re-established");
}

#[tokio::test(start_paused = true)]
async fn the_lease_is_created_with_the_node_as_owner_even_before_the_node_was_read() {
    let server = ApiServer::new();
    seed(&server);
    let uid = server.node(NODE).expect("node")["metadata"]["uid"].clone();
    // Every read of the Node is slow (the start-up GET and the watch's list), and the first two
    // GETs fail: the heartbeat's first tick runs before any of them has told it the UID.
    server
        .faults()
        .latency(("GET", NODE_PATH), Duration::from_secs(2))
        .latency(("GET", "/api/v1/nodes"), Duration::from_secs(2))
        .fail_next(("GET", NODE_PATH), 2, Fault::Status500);
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let source = Switch(Arc::new(AtomicBool::new(false)));
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(300),
    );
    run_for(&server, cfg, source, health, Duration::from_secs(35)).await;

    let lease_writes: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with(LEASES_PATH) && r.method != "GET")
        .collect();
    let first = lease_writes.first().expect("the Lease was written");
    assert_eq!(
        (first.method.as_str(), first.status),
        ("POST", Some(201)),
        "the first write creates it"
    );
    let want = json!([{"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": uid}]);
    for create in lease_writes.iter().filter(|r| r.method == "POST") {
        assert_eq!(
            create.body_json()["metadata"]["ownerReferences"],
            want,
            "every create carries the owner"
        );
    }
    let lease = server
        .lease("kube-node-lease", "nodewarden-n1")
        .expect("lease");
    assert_eq!(lease["metadata"]["ownerReferences"], want);
}

#[tokio::test(start_paused = true)]
async fn another_writer_of_an_owned_condition_is_detected_without_a_write_war() {
    let (server, health, source, cfg) = idle_node();
    let s2 = server.clone();
    let h2 = health.clone();
    let writer = async move {
        tokio::time::sleep(Duration::from_secs(15)).await;
        s2.update_node_status_as("kubelet", NODE, |node| {
            let conds = node["status"]["conditions"]
                .as_array_mut()
                .expect("conditions");
            for c in conds.iter_mut().filter(|c| c["type"] == "DiskPressure") {
                c["status"] = json!("True");
                c["reason"] = json!("KubeletHasDiskPressure");
                c["lastHeartbeatTime"] = json!("2099-01-01T00:00:00Z");
            }
        })
        .expect("second writer's update");
        tokio::time::sleep(Duration::from_secs(5)).await;
        h2.metrics.render(None)
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(50));
    let ((), metrics) = tokio::join!(agent, writer);
    assert!(
        metrics.contains("nodewarden_foreign_condition_writers 1"),
        "{metrics}"
    );
    // No write war: between the foreign write (15 s) and the next report (60 s) we did not patch.
    let patches_after: Vec<_> = server
        .requests()
        .iter()
        .filter(|r| r.path == STATUS_PATH && r.method == "PATCH")
        .map(|r| r.at)
        .collect();
    assert_eq!(
        patches_after.len(),
        1,
        "only the first report in 50 s: {patches_after:?}"
    );
}

/// The MemoryPressure entry of a status PATCH body, if it carries one.
fn sent_memory_pressure(body: &Value) -> Option<Value> {
    body["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "MemoryPressure").cloned())
}

#[tokio::test(start_paused = true)]
async fn after_another_writer_is_detected_no_write_of_ours_touches_its_condition() {
    let server = ApiServer::new();
    seed(&server);
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let pressure = Arc::new(AtomicBool::new(false));
    let source = Switch(pressure.clone());
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(30),
    );
    let s2 = server.clone();
    let h2 = health.clone();
    // A node-problem-detector that re-patches MemoryPressure with its own reason every 20 s,
    // as it does on a real node; the disk fills meanwhile, so another owned condition changes.
    let npd = async move {
        tokio::time::sleep(Duration::from_secs(15)).await;
        let mut detected_at = None;
        for round in 0..8u32 {
            s2.update_node_status_as("node-problem-detector", NODE, |node| {
                let conds = node["status"]["conditions"]
                    .as_array_mut()
                    .expect("conditions");
                for c in conds.iter_mut().filter(|c| c["type"] == "MemoryPressure") {
                    c["status"] = json!("True");
                    c["reason"] = json!("NPDMemoryPressure");
                    c["message"] = json!(format!("round {round}"));
                }
            })
            .expect("node-problem-detector's update");
            for _ in 0..20 {
                if detected_at.is_none()
                    && h2
                        .metrics
                        .render(None)
                        .contains("nodewarden_foreign_condition_writers 1")
                {
                    detected_at = Some(tokio::time::Instant::now());
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            if round == 3 {
                pressure.store(true, Ordering::SeqCst);
            }
        }
        detected_at
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(200));
    let ((), detected_at) = tokio::join!(agent, npd);
    let detected_at = detected_at.expect("the other writer was detected");

    let after: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path == STATUS_PATH && r.at >= detected_at)
        .map(|r| r.body_json())
        .collect();
    for body in &after {
        let mine = sent_memory_pressure(body);
        assert!(
            mine.as_ref()
                .is_none_or(|c| c.get("status").is_none() && c.get("reason").is_none()),
            "a write after detection changes MemoryPressure: {body}"
        );
        // The documented choice: not even a heartbeat of ours on a condition we do not hold.
        assert_eq!(mine, None, "MemoryPressure left out whole: {body}");
    }
    // The other owned conditions are still reported: the disk pressure at once, and the
    // periodic reports go on (200 s with a 60 s report frequency).
    let disk_true = after.iter().any(|b| {
        b["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "DiskPressure" && c["status"] == "True")
        })
    });
    assert!(
        disk_true,
        "DiskPressure=True reported after detection: {after:#?}"
    );
    assert!(after.len() >= 3, "reports go on: {after:#?}");
    let node = server.node(NODE).expect("node");
    let held = condition(&node, "MemoryPressure");
    assert_eq!(held["status"], "True", "{held}");
    assert_eq!(held["reason"], "NPDMemoryPressure", "{held}");
    assert_eq!(condition(&node, "DiskPressure")["status"], "True");
}

#[tokio::test(start_paused = true)]
async fn start_up_refuses_a_missing_node_and_denied_access_naming_verb_and_resource() {
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(300),
    );
    let server = ApiServer::new();
    let err = connected::run(
        &cfg,
        server.client(),
        Switch(Arc::new(AtomicBool::new(false))),
        health.clone(),
        async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            "test end"
        },
    )
    .await
    .expect_err("no such node");
    let text = err.to_string();
    assert!(
        text.contains("node n1 does not exist") && text.contains("get nodes/n1: 404"),
        "{text}"
    );

    let server = ApiServer::new();
    seed(&server);
    server.deny("get", "nodes", "");
    let err = connected::run(
        &cfg,
        server.client(),
        Switch(Arc::new(AtomicBool::new(false))),
        health,
        async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            "test end"
        },
    )
    .await
    .expect_err("forbidden");
    let text = err.to_string();
    assert!(
        text.contains("access denied") && text.contains("get nodes/n1: 403"),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stale_owned_taint_is_fixed_at_start_and_the_kubelets_lease_is_never_ours() {
    let server = ApiServer::new();
    server.create_node(json!({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE},
        "spec": {"taints": [
            {"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "edge", "effect": "NoSchedule"}
        ]}
    }));
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(300),
    );
    run_for(
        &server,
        cfg.clone(),
        Switch(Arc::new(AtomicBool::new(false))),
        health.clone(),
        Duration::from_secs(15),
    )
    .await;
    let node = server.node(NODE).expect("node");
    assert_eq!(
        taint_keys(&node),
        ["dedicated=edge:NoSchedule"],
        "no pressure, so our taint goes"
    );

    let mut kubelet_lease = cfg;
    kubelet_lease.lease_name = Some(NODE.into());
    let err = connected::run(
        &kubelet_lease,
        server.client(),
        Switch(Arc::new(AtomicBool::new(false))),
        health,
        async { "never runs" },
    )
    .await
    .expect_err("the kubelet's lease is refused");
    assert!(err.to_string().contains("is the kubelet's Lease"), "{err}");
}

/// A pod bound to `node`, in the API server's stored shape.
fn resource_pod(name: &str, node: &str, spec: Value, status: Value) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": spec,
        "status": status,
    });
    pod["spec"]["nodeName"] = json!(node);
    pod
}

#[tokio::test(start_paused = true)]
async fn status_shows_the_nodes_conditions_and_taints_and_the_pods_requests_against_allocatable() {
    let server = ApiServer::new();
    server.create_namespace("shop");
    server.create_node(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE},
        "spec": {"taints": [{"key": "dedicated", "value": "edge", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110", "nvidia.com/gpu": "2"},
            "conditions": [{
                "type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": "2026-11-29T00:00:00Z", "lastTransitionTime": "2026-11-29T00:00:00Z"
            }]
        }
    }));
    // Burstable: a 1-cpu init container before a sidecar (100m, 64Mi) beside one app container
    // (200m, 128Mi, one GPU), plus 50m of RuntimeClass overhead: cpu max(300m, 1) + 50m = 1050m.
    server.create_pod(resource_pod(
        "web",
        NODE,
        json!({
            "initContainers": [
                {"name": "migrate", "image": "m", "resources": {"requests": {"cpu": "1"}}},
                {"name": "proxy", "image": "p", "restartPolicy": "Always",
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
            ],
            "containers": [{"name": "app", "image": "a", "resources": {
                "requests": {"cpu": "200m", "memory": "128Mi", "nvidia.com/gpu": "1"},
                "limits": {"memory": "256Mi", "nvidia.com/gpu": "1"}}}],
            "overhead": {"cpu": "50m"}
        }),
        json!({"phase": "Running", "qosClass": "Burstable"}),
    ));
    server.create_pod(resource_pod(
        "db",
        NODE,
        json!({"containers": [{"name": "db", "image": "d", "resources": {
            "requests": {"cpu": "500m", "memory": "1Gi"},
            "limits": {"cpu": "500m", "memory": "1Gi"}}}]}),
        json!({"phase": "Running", "qosClass": "Guaranteed"}),
    ));
    // Neither counts: a finished Job pod, and a pod of another node.
    server.create_pod(resource_pod(
        "job",
        NODE,
        json!({"containers": [{"name": "j", "image": "j",
            "resources": {"requests": {"cpu": "4"}}}]}),
        json!({"phase": "Succeeded", "qosClass": "Burstable"}),
    ));
    server.create_pod(resource_pod(
        "elsewhere",
        "n2",
        json!({"containers": [{"name": "e", "image": "e",
            "resources": {"requests": {"cpu": "3"}}}]}),
        json!({"phase": "Running", "qosClass": "Burstable"}),
    ));

    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(
        Duration::from_secs(1),
        Duration::from_secs(60),
        Duration::ZERO,
    );
    cfg.state_directory = dir.path().join("state");
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let metrics = health.clone();
    let status_cfg = cfg.clone();
    // Disk pressure on: DiskPressure turns True and our taint is added.
    let agent = tokio::spawn({
        let server = server.clone();
        async move {
            run_for(
                &server,
                cfg,
                Switch(Arc::new(AtomicBool::new(true))),
                health,
                Duration::from_secs(30),
            )
            .await
        }
    });
    let cpu_requests = |r: &nodewarden::cli::status::StatusReport| {
        r.resources
            .iter()
            .find(|row| row.resource == "cpu")
            .map(|row| row.requests.clone())
    };
    let read = || {
        nodewarden::cli::status::report(&status_cfg, NODE, std::time::SystemTime::now(), None)
            .expect("state readable")
    };
    // Written on change, at most every 5 s while connected: wait for the tainted Node.
    let mut report = read();
    for _ in 0..100 {
        if report.taints.iter().any(|t| t.key == DISK_TAINT) && !report.resources.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        report = read();
    }
    let conditions: Vec<(&str, &str, bool)> = report
        .conditions
        .iter()
        .map(|c| (c.type_.as_str(), c.status.as_str(), c.ours))
        .collect();
    assert!(
        conditions.contains(&("Ready", "True", false)),
        "{conditions:?}"
    );
    assert!(
        conditions.contains(&("DiskPressure", "True", true)),
        "{conditions:?}"
    );
    let taints: Vec<(&str, bool)> = report
        .taints
        .iter()
        .map(|t| (t.key.as_str(), t.ours))
        .collect();
    assert_eq!(taints, [("dedicated", false), (DISK_TAINT, true)]);
    assert_eq!(report.pod_count, 2, "the finished pod is not counted");
    assert_eq!(report.pod_capacity.as_deref(), Some("110"));
    // Issue 21: how current the pod view is, as the fence wrote it down.
    assert_eq!(report.pod_view, "current");
    assert!(
        nodewarden::cli::status::text(&report).contains("\npod view: current\n"),
        "{}",
        nodewarden::cli::status::text(&report)
    );
    // Local allocatable beside the Node's, as read from the API server; flagged where they differ
    // (the local figure depends on this machine, the Node's is the test's 4Gi).
    assert!(report.allocatable.node_known);
    let memory = report
        .allocatable
        .resources
        .iter()
        .find(|l| l.resource == "memory")
        .expect("local memory allocatable");
    assert_eq!(memory.node.as_deref(), Some("4Gi"));
    assert_eq!(memory.differs, memory.allocatable != "4Gi");
    let row = |name: &str| {
        report
            .resources
            .iter()
            .find(|r| r.resource == name)
            .unwrap_or_else(|| panic!("no {name} row: {:?}", report.resources))
    };
    let cpu = row("cpu");
    assert_eq!(cpu.requests, "1550m");
    assert_eq!(cpu.requests_percent, Some(77));
    assert_eq!(cpu.limits, "500m");
    let qos: Vec<(&str, &str)> = cpu
        .by_qos
        .iter()
        .map(|q| (q.qos_class.as_str(), q.requests.as_str()))
        .collect();
    assert_eq!(
        qos,
        [
            ("Guaranteed", "500m"),
            ("Burstable", "1050m"),
            ("BestEffort", "0")
        ]
    );
    let memory = row("memory");
    assert_eq!(memory.requests, "1216Mi");
    assert_eq!(memory.limits, "1280Mi");
    let gpu = row("nvidia.com/gpu");
    assert_eq!(
        (gpu.requests.as_str(), gpu.requests_percent),
        ("1", Some(50))
    );
    // What a partition now would do (enforce, the default, once the quorum allows): the two
    // running pods tolerate no unreachable taint, the finished one is never stopped.
    let text = metrics.metrics.render(None);
    for line in [
        "nodewarden_fence_plan_pods{plan=\"stop\"} 2",
        "nodewarden_fence_plan_pods{plan=\"never\"} 1",
        "nodewarden_fence_quorum_verdict{verdict=\"not_consulted\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }

    // A pod going away is reflected without a restart.
    server
        .delete("pods", "shop", "db", Some(0))
        .expect("delete db");
    let _ = server.finish_pod_deletion("shop", "db");
    for _ in 0..100 {
        if cpu_requests(&report).as_deref() == Some("1050m") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        report = read();
    }
    assert_eq!(cpu_requests(&report).as_deref(), Some("1050m"));
    assert_eq!(report.pod_count, 1);
    agent.await.expect("agent task");
}

/// Issue 27 item 3: a pod resized in place (GA in 1.35) counts as the 1.35+ scheduler counts it
/// (`PodRequests` with `UseStatusResources`): the larger of the spec and what the kubelet
/// allocated or applied, and not the spec while the resize is Infeasible; its QoS class stays
/// the one the API server fixed.
#[tokio::test(start_paused = true)]
async fn status_counts_a_pod_resized_in_place_as_the_scheduler_does() {
    let server = ApiServer::new();
    server.create_namespace("shop");
    server.create_node(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    }));
    // `web` (Burstable) was resized from 2 cpu down to 500m: the kubelet allocated the 500m at
    // once, the runtime still applies 2. `batch` (Guaranteed) asked for 16 cpu, which this
    // 4-cpu node can never give: Infeasible, so it keeps its 1 cpu.
    server.create_pod(resource_pod(
        "web",
        NODE,
        json!({"containers": [{"name": "app", "image": "a", "resources": {
            "requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}}}]}),
        json!({"phase": "Running", "qosClass": "Burstable"}),
    ));
    let guaranteed = |cpu: &str| json!({"cpu": cpu, "memory": "1Gi"});
    server.create_pod(resource_pod(
        "batch",
        NODE,
        json!({"containers": [{"name": "worker", "image": "w", "resources": {
            "requests": guaranteed("16"), "limits": guaranteed("16")}}]}),
        json!({"phase": "Running", "qosClass": "Guaranteed"}),
    ));
    let kubelet = |name: &str, status: Value| {
        server
            .update_pod_status_as("kubelet", "shop", name, |p| {
                for (k, v) in status.as_object().into_iter().flatten() {
                    p["status"][k] = v.clone();
                }
            })
            .unwrap_or_else(|e| panic!("kubelet status of {name}: {e}"))
    };
    let web_actual = |cpu: &str| {
        json!({"containerStatuses": [{"name": "app", "image": "a", "imageID": "", "ready": true,
            "restartCount": 0, "state": {"running": {"startedAt": "2026-11-30T10:00:00Z"}},
            "allocatedResources": {"cpu": "500m", "memory": "256Mi"},
            "resources": {"requests": {"cpu": cpu, "memory": "256Mi"},
                          "limits": {"memory": "512Mi"}}}]})
    };
    kubelet("web", web_actual("2"));
    kubelet(
        "batch",
        json!({
            "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Infeasible",
                "message": "Node didn't have enough capacity: cpu, requested: 16000, capacity: 4000",
                "lastProbeTime": null, "lastTransitionTime": "2026-11-30T11:00:00Z"}],
            "containerStatuses": [{"name": "worker", "image": "w", "imageID": "", "ready": true,
                "restartCount": 0, "state": {"running": {"startedAt": "2026-11-30T10:00:00Z"}},
                "allocatedResources": guaranteed("1"),
                "resources": {"requests": guaranteed("1"), "limits": guaranteed("1")}}]
        }),
    );

    let mut cfg = config(
        Duration::from_secs(1),
        Duration::from_secs(60),
        Duration::ZERO,
    );
    let dir = tempfile::tempdir().expect("tempdir");
    cfg.state_directory = dir.path().join("state");
    let status_cfg = cfg.clone();
    let agent = tokio::spawn({
        let server = server.clone();
        async move {
            let health = Arc::new(Health::new(Duration::from_secs(30)));
            run_for(
                &server,
                cfg,
                Switch(Arc::new(AtomicBool::new(false))),
                health,
                Duration::from_secs(30),
            )
            .await
        }
    });
    let read = || {
        nodewarden::cli::status::report(&status_cfg, NODE, std::time::SystemTime::now(), None)
            .expect("state readable")
    };
    // (requests, requests %, limits, Guaranteed requests, Burstable requests) of cpu.
    let cpu = |r: &nodewarden::cli::status::StatusReport| {
        r.resources
            .iter()
            .find(|row| row.resource == "cpu")
            .map(|c| {
                (
                    c.requests.clone(),
                    c.requests_percent,
                    c.limits.clone(),
                    c.by_qos[0].requests.clone(),
                    c.by_qos[1].requests.clone(),
                )
            })
    };
    let wait_for = |want: &'static str| async move {
        let mut report = read();
        for _ in 0..100 {
            if cpu(&report).is_some_and(|c| c.0 == want) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            report = read();
        }
        report
    };
    // web: max(spec 500m, allocated 500m, actual 2) = 2; batch: the actual 1, not the spec's
    // 16. From the specs alone: 16500m requested and 16 cpu of limits.
    let report = wait_for("3").await;
    assert_eq!(
        cpu(&report),
        Some((
            "3".to_string(),
            Some(75),
            "1".to_string(),
            "1".to_string(),
            "2".to_string()
        )),
        "{:?}",
        report.resources
    );
    let memory = report
        .resources
        .iter()
        .find(|r| r.resource == "memory")
        .expect("memory row");
    assert_eq!(
        (memory.requests.as_str(), memory.limits.as_str()),
        ("1280Mi", "1536Mi")
    );
    assert_eq!(report.pod_count, 2);

    // The runtime applies the downsize: web's status now equals its spec and counts 500m.
    kubelet("web", web_actual("500m"));
    let report = wait_for("1500m").await;
    assert_eq!(
        cpu(&report).map(|c| (c.0, c.4)),
        Some(("1500m".to_string(), "500m".to_string())),
        "{:?}",
        report.resources
    );
    agent.await.expect("agent task");
}

#[tokio::test(start_paused = true)]
async fn a_condition_event_held_while_cut_off_survives_a_restart_and_is_sent_once() {
    const EVENTS_PATH: &str = "/api/v1/namespaces/default/events";
    let server = ApiServer::new();
    server.create_namespace("default");
    seed(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(
        Duration::from_secs(1),
        Duration::from_secs(60),
        Duration::ZERO,
    );
    cfg.state_directory = dir.path().join("state");
    let pressure = Arc::new(AtomicBool::new(false));
    // First run: Events go nowhere (requests hang until they time out), and disk pressure
    // appears; the transition's Event waits in the queue, and so in the state file.
    server.faults().black_hole(("POST", EVENTS_PATH), true);
    let first = {
        let (server, cfg, pressure) = (server.clone(), cfg.clone(), pressure.clone());
        tokio::spawn(async move {
            let health = Arc::new(Health::new(Duration::from_secs(30)));
            run_for(
                &server,
                cfg,
                Switch(pressure),
                health,
                Duration::from_secs(40),
            )
            .await;
        })
    };
    tokio::time::sleep(Duration::from_secs(5)).await;
    pressure.store(true, Ordering::SeqCst);
    first.await.expect("first run");
    let held = match nodewarden::state::load(&cfg.state_directory, None) {
        nodewarden::state::Loaded::Found(s) => s.condition_events,
        other => panic!("no state after the first run: {other:?}"),
    };
    let reasons: Vec<&str> = held.iter().map(|e| e.reason.as_str()).collect();
    assert!(
        reasons.contains(&"NodeHasDiskPressure"),
        "the undelivered transition is on disk: {reasons:?}"
    );
    let at = held
        .iter()
        .find(|e| e.reason == "NodeHasDiskPressure")
        .map(|e| e.at)
        .expect("a time");
    assert!(
        server
            .events()
            .iter()
            .all(|e| e["reason"] != "NodeHasDiskPressure"),
        "nothing was delivered while Events were black-holed"
    );
    let node = server.node(NODE).expect("node");
    let since = condition(&node, "DiskPressure")["lastTransitionTime"].clone();
    assert_eq!(condition(&node, "DiskPressure")["status"], "True");

    // Second run, Events accepted again: the held Event is sent with its original time, once.
    server.faults().clear();
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    run_for(
        &server,
        cfg.clone(),
        Switch(pressure.clone()),
        health,
        Duration::from_secs(20),
    )
    .await;
    let sent: Vec<Value> = server
        .events()
        .into_iter()
        .filter(|e| e["reason"] == "NodeHasDiskPressure")
        .collect();
    assert_eq!(
        sent.len(),
        1,
        "sent exactly once, and the restart under the same pressure is no new transition: {sent:#?}"
    );
    let node = server.node(NODE).expect("node");
    assert_eq!(
        condition(&node, "DiskPressure")["lastTransitionTime"],
        since,
        "a restart keeps the transition time of an unchanged condition (docs/semantics.md §6.3)"
    );
    assert_eq!(
        sent[0]["firstTimestamp"],
        json!(nodewarden::core::clock::rfc3339(at)),
        "with the time of the transition, not of the restart"
    );
    match nodewarden::state::load(&cfg.state_directory, None) {
        nodewarden::state::Loaded::Found(s) => assert!(
            s.condition_events.is_empty(),
            "delivered Events leave the state file: {:?}",
            s.condition_events
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn sending_one_event_twice_creates_it_once_and_same_instant_events_apart() {
    use nodewarden::api::events::{EVENT_NAMESPACE, PendingEvent, send};
    let server = ApiServer::new();
    server.create_namespace(EVENT_NAMESPACE);
    let api: kube::Api<k8s_openapi::api::core::v1::Event> =
        kube::Api::namespaced(server.client(), EVENT_NAMESPACE);
    let requests = nodewarden::api::Requests::default();
    let at = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let event = |reason: &str| PendingEvent {
        reason: reason.into(),
        message: format!("Node n1 status is now: {reason}"),
        warning: false,
        at,
    };
    // A retry after a lost answer, or after a restart, is the same Event.
    for _ in 0..2 {
        send(&requests, &api, NODE, None, &event("NodeHasDiskPressure"))
            .await
            .expect("sent");
    }
    // Another condition flipping in the same cycle is another Event.
    send(
        &requests,
        &api,
        NODE,
        None,
        &event("NodeHasInsufficientPID"),
    )
    .await
    .expect("sent");
    let mut reasons: Vec<String> = server
        .events()
        .iter()
        .map(|e| e["reason"].as_str().unwrap_or_default().to_string())
        .collect();
    reasons.sort();
    assert_eq!(reasons, ["NodeHasDiskPressure", "NodeHasInsufficientPID"]);
}

/// Real time, not a paused clock: the fence compares the wall-clock time of the last answer with
/// its own clock, which a paused runtime lets run ahead.
#[tokio::test]
async fn idle_only_the_small_contact_file_is_rewritten() {
    use std::os::unix::fs::MetadataExt;
    let server = ApiServer::new();
    seed(&server);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(
        Duration::from_secs(1),
        Duration::from_secs(60),
        Duration::ZERO,
    );
    // The Lease is renewed every second: the last contact moves every second.
    cfg.node_lease_duration_seconds = 4;
    cfg.state_directory = dir.path().join("state");
    let state_dir = cfg.state_directory.clone();
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let agent = tokio::spawn({
        let server = server.clone();
        async move {
            run_for(
                &server,
                cfg,
                Switch(Arc::new(AtomicBool::new(false))),
                health,
                Duration::from_secs(60),
            )
            .await
        }
    });
    let inode = |name: &str| {
        std::fs::metadata(state_dir.join(name))
            .map(|m| m.ino())
            .ok()
    };
    let started = std::time::Instant::now();
    while (inode(nodewarden::state::STATE_FILE).is_none()
        || inode(nodewarden::state::CONTACT_FILE).is_none())
        && started.elapsed() < Duration::from_secs(15)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Start-up settles first: the first report, its Events sent and the Node seen again each
    // change the state, and each change is written within a fraction of a second.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let state_before = inode(nodewarden::state::STATE_FILE).expect("state written");
    let contact_before = inode(nodewarden::state::CONTACT_FILE).expect("contact written");
    // Six renewals later: the contact moved, nothing else changed.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        inode(nodewarden::state::STATE_FILE),
        Some(state_before),
        "the whole state is not rewritten when only the contact moves"
    );
    assert_ne!(
        inode(nodewarden::state::CONTACT_FILE),
        Some(contact_before),
        "the contact file follows the renewals"
    );
    agent.abort();
}

/// The last contact the fence keeps on disk (the later of the state file and the contact file).
fn saved_contact(cfg: &Config) -> Option<std::time::SystemTime> {
    match nodewarden::state::load(&cfg.state_directory, None) {
        nodewarden::state::Loaded::Found(s) => s
            .last_contact
            .as_deref()
            .and_then(nodewarden::state::parse_time),
        _ => None,
    }
}

/// Every route the agent writes or reads besides watches.
const ALL_ROUTES: [(&str, &str); 6] = [
    ("PUT", LEASE_PATH),
    ("GET", LEASE_PATH),
    ("POST", LEASES_PATH),
    ("PATCH", STATUS_PATH),
    ("GET", NODE_PATH),
    ("PATCH", NODE_PATH),
];

/// After `after`, every route of [`ALL_ROUTES`] hangs for `lasting`; returns the instant they
/// answer again.
async fn black_hole_everything(
    server: &ApiServer,
    after: Duration,
    lasting: Duration,
) -> tokio::time::Instant {
    tokio::time::sleep(after).await;
    for route in ALL_ROUTES {
        server.faults().black_hole(route, true);
    }
    tokio::time::sleep(lasting).await;
    server.faults().clear();
    tokio::time::Instant::now()
}

#[tokio::test(start_paused = true)]
async fn error_answers_are_not_contact_the_metric_drops_and_the_last_contact_stands_still() {
    let (server, health, source, cfg) = idle_node();
    let (s2, h2, c2) = (server.clone(), health.clone(), cfg.clone());
    let probe = async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(
            h2.metrics
                .render(None)
                .contains("nodewarden_api_reachable 1")
        );
        let before = saved_contact(&c2).expect("contact saved while connected");
        // A proxy in front of an absent control plane: 500 and 503 for everything, 20 s long.
        for (i, route) in ALL_ROUTES.into_iter().enumerate() {
            let fault = if i % 2 == 0 {
                Fault::Status500
            } else {
                Fault::Status503
            };
            s2.faults().fail_next(route, 10_000, fault);
        }
        let mut seen = Vec::new();
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            seen.push(h2.metrics.render(None));
        }
        let during = saved_contact(&c2).expect("contact still on disk");
        s2.faults().clear();
        tokio::time::sleep(Duration::from_secs(25)).await;
        let after = saved_contact(&c2).expect("contact on disk after recovery");
        let metric_after = h2.metrics.render(None);
        (before, seen, during, after, metric_after)
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(80));
    let ((), (before, seen, during, after, metric_after)) = tokio::join!(agent, probe);
    // From the first renewal answered 5xx (within one 10 s renew interval) the metric says 0.
    for (i, m) in seen.iter().enumerate().skip(11) {
        assert!(
            m.contains("nodewarden_api_reachable 0"),
            "second {} of errors: {m}",
            i + 1
        );
    }
    // The only contact on disk is from before the errors, however many 5xx came back since.
    assert!(
        during <= before + Duration::from_secs(1),
        "contact moved during 5xx answers: {before:?} → {during:?}"
    );
    assert!(after > during, "contact resumes after recovery");
    assert!(
        metric_after.contains("nodewarden_api_reachable 1"),
        "{metric_after}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hung_request_delays_the_lease_by_at_most_one_renew_interval() {
    let (server, health, source, mut cfg) = idle_node();
    // A 4 s Lease: renewed every second.
    cfg.node_lease_duration_seconds = 4;
    let (s2, h2) = (server.clone(), health.clone());
    let chaos = async move {
        let back =
            black_hole_everything(&s2, Duration::from_secs(20), Duration::from_secs(30)).await;
        let mut metric = Vec::new();
        // Requests still hanging from the outage time out after this: none may flip the state.
        for _ in 0..15 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            metric.push(h2.metrics.render(None));
        }
        (back, metric)
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(70));
    let ((), (back, metric)) = tokio::join!(agent, chaos);
    let all = server.requests();
    let first_renewal_after = stored_renewals(&all, back)
        .into_iter()
        .min()
        .expect("renewed after the server returned");
    // At most one renew interval for the hung renewal to time out, and the next one is sent.
    assert!(
        first_renewal_after <= Duration::from_millis(1100),
        "first renewal {first_renewal_after:?} after the black hole ended (renew interval 1 s)"
    );
    // Every later renewal keeps the 1 s pace: no gap near the 4 s Lease duration.
    let renewals: Vec<_> = lease_puts(&all, back)
        .into_iter()
        .map(|(at, _)| at)
        .collect();
    for pair in renewals.windows(2) {
        assert!(
            pair[1] - pair[0] <= Duration::from_millis(1100),
            "{renewals:?}"
        );
    }
    // Reachable again from the first renewal, and no stale timeout of a request sent during the
    // outage turns it back.
    for (i, m) in metric.iter().enumerate().skip(1) {
        assert!(
            m.contains("nodewarden_api_reachable 1"),
            "{}s after recovery: {m}",
            i + 1
        );
    }
}

/// Issue 21: while the API server stores our writes but does not answer the pod watch, `/readyz`
/// fails once the view has lagged contact for longer than its bound (two request timeouts: 20 s
/// here), and the view's age says for how long; both recover once the watch is answered.
#[tokio::test(start_paused = true)]
async fn readiness_fails_while_our_writes_are_stored_but_the_pod_watch_is_not_answered() {
    let server = ApiServer::new();
    seed(&server);
    // Its lists and its watches: the initial state comes by either (a streaming list is a watch).
    let pod_watch = |on: bool| {
        server
            .faults()
            .black_hole(("LIST", "/api/v1/pods"), on)
            .black_hole(("WATCH", "/api/v1/pods"), on);
    };
    pod_watch(true);
    let health = Arc::new(Health::new(Duration::from_secs(300)));
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(300),
    );
    let agent = tokio::spawn({
        let (server, health) = (server.clone(), health.clone());
        async move {
            run_for(
                &server,
                cfg,
                Switch(Arc::new(AtomicBool::new(false))),
                health,
                Duration::from_secs(200),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        health.metrics.reachable(),
        Some(true),
        "our writes are stored"
    );
    assert!(
        health.is_ready(),
        "within the bound the watch gets its chance"
    );
    tokio::time::sleep(Duration::from_secs(25)).await;
    assert!(!health.is_ready(), "connected with a pod view 30 s old");
    assert!(health.pod_view_lagging());
    assert!(
        health
            .render_metrics()
            .contains("\nnodewarden_pod_view_lagging 1\n")
    );
    let age = health.pod_view_age().expect("connected");
    assert!(age >= Duration::from_secs(29), "{age:?}");
    // The pod watch is answered again: within one retry (30 s at most) the view is current.
    pod_watch(false);
    let mut ready = false;
    for _ in 0..80 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        if health.is_ready() {
            ready = true;
            break;
        }
    }
    assert!(
        ready,
        "the view never caught up: {:?}",
        health.pod_view_age()
    );
    assert_eq!(health.pod_view_age(), Some(Duration::ZERO));
    assert!(
        health
            .render_metrics()
            .contains("\nnodewarden_pod_view_lagging 0\n")
    );
    agent.abort();
}

/// node-problem-detector's MemoryPressure True, as it writes it (PUT of the status as its own
/// manager), its heartbeat at `heartbeat_at` seconds of its clock: its resync re-sends the
/// condition with a new `lastHeartbeatTime` and nothing else changed.
fn npd_memory_pressure(server: &ApiServer, heartbeat_at: u64) {
    let stamp = |s: u64| {
        nodewarden::core::clock::rfc3339(
            std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s),
        )
    };
    server
        .update_node_status_as("node-problem-detector", NODE, |node| {
            let conds = node["status"]["conditions"]
                .as_array_mut()
                .expect("conditions");
            conds.retain(|c| c["type"] != "MemoryPressure");
            conds.push(json!({
                "type": "MemoryPressure", "status": "True", "reason": "NPDMemoryPressure",
                "message": "memory is low", "lastHeartbeatTime": stamp(heartbeat_at),
                "lastTransitionTime": stamp(0),
            }));
        })
        .expect("node-problem-detector's update");
}

/// Status PATCHes of ours that carry MemoryPressure, with when they were sent.
fn memory_pressure_writes(server: &ApiServer) -> Vec<(tokio::time::Instant, Value)> {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path == STATUS_PATH)
        .filter_map(|r| sent_memory_pressure(&r.body_json()).map(|c| (r.at, c)))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_writer_that_keeps_heartbeating_is_never_fought_even_right_after_a_restart() {
    let logs = reporter_logs();
    let server = ApiServer::new();
    seed(&server);
    // node-problem-detector already holds MemoryPressure when nodewarden (re)starts, and goes on
    // heartbeating it every 5 minutes (its default `--k8s-exporter-heartbeat-period`) for 40
    // minutes: more than two of nodewarden's 15-minute windows.
    npd_memory_pressure(&server, 0);
    // The Node watch's first list is slow (a busy API server): sampling decides before it
    // arrives, and the first report must still not write a condition it does not know is free.
    server
        .faults()
        .latency(("LIST", "/api/v1/nodes"), Duration::from_secs(3));
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let source = Switch(Arc::new(AtomicBool::new(false)));
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(30),
    );
    let (s2, h2) = (server.clone(), health.clone());
    let npd = async move {
        let mut metrics = Vec::new();
        for beat in 1..=8u64 {
            tokio::time::sleep(Duration::from_secs(300)).await;
            npd_memory_pressure(&s2, beat * 300);
            tokio::time::sleep(Duration::from_secs(1)).await;
            metrics.push(h2.metrics.render(None));
        }
        metrics
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(2450));
    let ((), metrics) = tokio::join!(agent, npd);

    let fought = memory_pressure_writes(&server);
    assert!(
        fought.is_empty(),
        "nodewarden wrote MemoryPressure under a live writer: {fought:?}"
    );
    for m in &metrics {
        assert!(m.contains("nodewarden_foreign_condition_writers 1"), "{m}");
    }
    let node = server.node(NODE).expect("node");
    let held = condition(&node, "MemoryPressure");
    assert_eq!(held["reason"], "NPDMemoryPressure", "{held}");
    // Reported once (WARN, naming the writer), never taken back.
    let said: Vec<_> = logs
        .records()
        .into_iter()
        .filter(|r| r.condition == "MemoryPressure")
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(
        (said[0].level, said[0].writer.as_str()),
        (log::Level::Warn, "node-problem-detector")
    );
    // The other owned conditions were reported all along: at once, then once a minute.
    let reports = count(&server, "PATCH", STATUS_PATH);
    assert!((40..=42).contains(&reports), "{reports} reports in 2450 s");
    assert_eq!(condition(&node, "DiskPressure")["status"], "False");
}

#[tokio::test(start_paused = true)]
async fn a_writer_that_stops_is_taken_over_fifteen_silent_minutes_after_its_last_heartbeat() {
    let logs = reporter_logs();
    let server = ApiServer::new();
    seed(&server);
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let source = Switch(Arc::new(AtomicBool::new(false)));
    let cfg = config(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(30),
    );
    let start = tokio::time::Instant::now();
    let (s2, h2) = (server.clone(), health.clone());
    // node-problem-detector flips MemoryPressure at 15 s, heartbeats once at 5 min 15 s, then
    // stops (killed, uninstalled): its managedFields stay on the Node.
    let npd = async move {
        tokio::time::sleep(Duration::from_secs(15)).await;
        npd_memory_pressure(&s2, 15);
        tokio::time::sleep(Duration::from_secs(300)).await;
        npd_memory_pressure(&s2, 315);
        let last_life = tokio::time::Instant::now();
        // Sampled just before and after the window closes.
        tokio::time::sleep(Duration::from_secs(895)).await;
        let before = h2.metrics.render(None);
        let managers_before = managers(&s2.node(NODE).expect("node"));
        tokio::time::sleep(Duration::from_secs(10)).await;
        let after = h2.metrics.render(None);
        (last_life, before, managers_before, after)
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(1400));
    let ((), (last_life, before, managers_before, after)) = tokio::join!(agent, npd);
    let released = last_life + ownership::OTHER_WRITER_SILENCE;

    assert!(
        before.contains("nodewarden_foreign_condition_writers 1"),
        "{before}"
    );
    // All along, managedFields named node-problem-detector: they are not life.
    assert!(
        managers_before.iter().any(|m| m == "node-problem-detector"),
        "{managers_before:?}"
    );
    assert!(
        after.contains("nodewarden_foreign_condition_writers 0"),
        "the gauge drops once the writer is taken over: {after}"
    );
    let writes = memory_pressure_writes(&server);
    // Ours at start, then nothing while node-problem-detector showed life, and ours again once it
    // has been silent for the window: at once, not at the next periodic report.
    let during: Vec<_> = writes
        .iter()
        .filter(|(at, _)| *at > start + Duration::from_secs(15) && *at < released)
        .collect();
    assert!(during.is_empty(), "fought a live writer: {during:?}");
    let (taken_at, taken) = writes
        .iter()
        .find(|(at, _)| *at >= released)
        .expect("MemoryPressure written again after the window");
    assert!(
        *taken_at - released < Duration::from_secs(2),
        "taken over {:?} after the window",
        *taken_at - released
    );
    assert_eq!(taken["status"], "False", "{taken}");
    assert_eq!(taken["reason"], "KubeletHasSufficientMemory", "{taken}");
    let node = server.node(NODE).expect("node");
    let mine = condition(&node, "MemoryPressure");
    assert_eq!(mine["status"], "False", "{mine}");
    assert_eq!(mine["reason"], "KubeletHasSufficientMemory", "{mine}");
    // Said once, at INFO, naming the condition and the writer.
    let taken_back: Vec<_> = logs
        .records()
        .into_iter()
        .filter(|r| {
            r.condition == "MemoryPressure" && r.message.contains("writes the condition again")
        })
        .collect();
    assert_eq!(taken_back.len(), 1, "{taken_back:?}");
    assert_eq!(taken_back[0].level, log::Level::Info);
    assert_eq!(taken_back[0].writer, "node-problem-detector");
}

/// The managers the Node's managedFields name.
fn managers(node: &Value) -> Vec<String> {
    node["metadata"]["managedFields"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .filter_map(|m| m["manager"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// One record of the reporter's log.
#[derive(Clone, Debug)]
struct LogRecord {
    level: log::Level,
    message: String,
    condition: String,
    writer: String,
}

/// Keeps the reporter's log records. The logger is global to the test process (nextest runs
/// each test in its own), so a test reads only the records about the condition it exercises.
#[derive(Default)]
struct ReporterLogs(std::sync::Mutex<Vec<LogRecord>>);

impl ReporterLogs {
    fn records(&self) -> Vec<LogRecord> {
        self.0.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl log::Log for ReporterLogs {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        if !record.target().starts_with("nodewarden::agent::reporter") {
            return;
        }
        let field = |name: &str| {
            record
                .key_values()
                .get(log::kv::Key::from_str(name))
                .map(|v| v.to_string())
                .unwrap_or_default()
        };
        if let Ok(mut r) = self.0.lock() {
            r.push(LogRecord {
                level: record.level(),
                message: record.args().to_string(),
                condition: field("condition"),
                writer: field("writer"),
            });
        }
    }
    fn flush(&self) {}
}

fn reporter_logs() -> &'static ReporterLogs {
    static LOGS: std::sync::OnceLock<&'static ReporterLogs> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static ReporterLogs = Box::leak(Box::default());
        let _ = log::set_logger(logs);
        log::set_max_level(log::LevelFilter::Info);
        logs
    })
}

/// docs/fence.md §2: after a failure, a renewal that hangs across the API server's return is
/// dropped once a probe (a read of the Lease, every second) is answered, and another is stored at
/// once, rather than at that renewal's 10 s timeout. The probes stop once renewals are stored;
/// the return is then watched by a read a second until the renewal a kubelet's lag later
/// (docs/fence.md §2, *A relapse*), and nothing reads the Lease after that.
#[tokio::test(start_paused = true)]
async fn a_renewal_hung_across_the_return_is_dropped_once_a_probe_is_answered() {
    let (server, health, source, cfg) = idle_node();
    let s2 = server.clone();
    let chaos = async move {
        // Renewals at 0, 10 and 20 s are stored; the one at 30 s hangs until its 10 s timeout,
        // the next goes out a second later (41 s) and hangs until 51 s: the black hole ends
        // while it hangs.
        black_hole_everything(&s2, Duration::from_millis(20_500), Duration::from_secs(22)).await
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(80));
    let ((), back) = tokio::join!(agent, chaos);
    let all = server.requests();
    let stored = stored_renewals(&all, back);
    let first = *stored.first().expect("a renewal stored after the return");
    assert!(
        first <= Duration::from_millis(1100),
        "first renewal stored {first:?} after the return (a probe a second): {stored:?}"
    );
    // While cut off, about one probe a second (each bounded by a second), not a burst.
    let probes_during = all
        .iter()
        .filter(|r| r.path == LEASE_PATH && r.method == "GET" && r.at < back)
        .count();
    assert!(
        (1..=12).contains(&probes_during),
        "{probes_during} probes in the 22 s cut off"
    );
    // Connected again: a read a second while the return is watched, about ten.
    let stored_at = back + first;
    let watch_ends = stored_at + Duration::from_millis(10_400);
    let watched = all
        .iter()
        .filter(|r| r.path == LEASE_PATH && r.method == "GET")
        .filter(|r| r.at > stored_at && r.at <= watch_ends)
        .count();
    assert!(
        (8..=11).contains(&watched),
        "{watched} reads while the return was watched"
    );
    // Then no more reads.
    let settled = watch_ends + Duration::from_secs(1);
    let probes_after: Vec<_> = all
        .iter()
        .filter(|r| r.path == LEASE_PATH && r.method == "GET" && r.at >= settled)
        .map(|r| r.at - back)
        .collect();
    assert!(
        probes_after.is_empty(),
        "probes after the return: {probes_after:?}"
    );
}

/// What the agent's metrics say 2.5 s after every route but the watches hangs, 15 s into a run
/// whose Node's kubelet posted Ready `status` at 12 s (the watch delivers it at once).
async fn metrics_as_a_link_hangs(status: &'static str) -> String {
    let (server, health, source, cfg) = idle_node();
    let (s2, h2) = (server.clone(), health.clone());
    let chaos = async move {
        tokio::time::sleep(Duration::from_secs(12)).await;
        s2.update_node_status_as("kubelet", NODE, |n| {
            let conditions = n["status"]["conditions"].as_array_mut();
            for c in conditions.into_iter().flatten() {
                if c["type"] == "Ready" {
                    c["status"] = json!(status);
                    c["reason"] = json!("KubeletNotReady");
                    c["lastTransitionTime"] = json!("2026-11-29T00:00:12Z");
                }
            }
        })
        .expect("the kubelet's post");
        tokio::time::sleep(Duration::from_secs(3)).await;
        for route in ALL_ROUTES {
            s2.faults().black_hole(route, true);
        }
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let seen = h2.metrics.render(None);
        s2.faults().clear();
        seen
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(25));
    let ((), seen) = tokio::join!(agent, chaos);
    seen
}

/// A Node whose kubelet posted Ready=False has its Lease read every second, and the first read
/// that goes unanswered cuts it off (docs/fence.md §2, *A Node not Ready*): the controller may
/// add the not-ready taint at any pass, and delete the pods that tolerate it for a while while
/// the kubelet no longer hears. 2.5 s into a hang that began 5 s after its last renewal, such a
/// node is cut off; a Ready one is not, until `unreachableAfter` has passed.
#[tokio::test(start_paused = true)]
async fn a_node_not_ready_is_cut_off_by_the_first_read_a_hung_link_leaves_unanswered() {
    let not_ready = metrics_as_a_link_hangs("False").await;
    assert!(
        not_ready.contains("nodewarden_api_reachable 0"),
        "{not_ready}"
    );
    // Without peers the quorum holds: its verdict is reported once the node is cut off.
    assert!(
        not_ready.contains("nodewarden_quorum_verdict{verdict=\"hold\"} 1"),
        "{not_ready}"
    );
    let ready = metrics_as_a_link_hangs("True").await;
    assert!(ready.contains("nodewarden_api_reachable 1"), "{ready}");
    assert!(
        !ready.contains("nodewarden_quorum_verdict{verdict=\"hold\"} 1"),
        "{ready}"
    );
}

/// The Lease renewals (PUT) from 15.5 s on, as offsets from then, with their statuses, when the
/// three after that are refused (503) and the Lease lasts `lease_seconds`.
async fn renewals_after_three_refusals(lease_seconds: u32) -> Vec<(Duration, Option<u16>)> {
    let (server, health, source, mut cfg) = idle_node();
    cfg.node_lease_duration_seconds = lease_seconds;
    let s2 = server.clone();
    let chaos = async move {
        tokio::time::sleep(Duration::from_millis(15_500)).await;
        s2.faults()
            .fail_next(("PUT", LEASE_PATH), 3, Fault::Status503);
        tokio::time::Instant::now()
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(40));
    let ((), from) = tokio::join!(agent, chaos);
    lease_puts(&server.requests(), from)
}

/// Asserts that `puts` begins with three refusals and a renewal stored, each `gap` after the one
/// before (within 100 ms).
fn assert_refused_three_times_then_stored(puts: &[(Duration, Option<u16>)], gap: Duration) {
    let statuses: Vec<_> = puts.iter().take(4).map(|(_, s)| *s).collect();
    assert_eq!(
        statuses,
        [Some(503), Some(503), Some(503), Some(200)],
        "{puts:?}"
    );
    for pair in puts[..4].windows(2) {
        let between = pair[1].0 - pair[0].0;
        assert!(
            between >= gap && between <= gap + Duration::from_millis(100),
            "{puts:?}"
        );
    }
}

/// After a renewal a proxy refused (503), the next goes out a second later, not a renew
/// interval later (docs/fence.md §2); with a Lease so short that it renews more often than that,
/// on its own cadence.
#[tokio::test(start_paused = true)]
async fn a_refused_renewal_is_tried_again_a_second_later() {
    // Default Lease (40 s, renewed every 10 s): 20 s refused; 21 s, 22 s refused; 23 s stored.
    let puts = renewals_after_three_refusals(40).await;
    assert_refused_three_times_then_stored(&puts, Duration::from_secs(1));
    // A 2 s Lease, renewed every 500 ms: the retries keep that pace.
    let puts = renewals_after_three_refusals(2).await;
    assert_refused_three_times_then_stored(&puts, Duration::from_millis(500));
}

/// An API server that answers reads at once but stores writes slowly (3 s) after a failure: the
/// probe drops the renewal after a failure once, and the renewal it sends is left to finish, so
/// renewals are stored again, each renew interval, and none is dropped while they are.
#[tokio::test(start_paused = true)]
async fn a_slow_api_server_after_a_failure_has_its_renewals_stored() {
    let (server, health, source, cfg) = idle_node();
    let s2 = server.clone();
    let chaos = async move {
        tokio::time::sleep(Duration::from_millis(15_500)).await;
        s2.faults()
            .fail_next(("PUT", LEASE_PATH), 1, Fault::Status503)
            .latency(("PUT", LEASE_PATH), Duration::from_secs(3));
        tokio::time::Instant::now()
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(90));
    let ((), from) = tokio::join!(agent, chaos);
    let puts = lease_puts(&server.requests(), from);
    // 20 s: refused (answered after its 3 s delay); 24 s: probed, dropped by the probe answered
    // at 25 s; 25 s: stored at 28 s. Then one every renew interval (the first a kubelet's lag
    // after that answer), each 3 s in flight, none dropped: only the one in flight at the end
    // is unanswered.
    assert_eq!(
        puts.iter().take(3).map(|(_, s)| *s).collect::<Vec<_>>(),
        [Some(503), None, Some(200)],
        "{puts:?}"
    );
    let (at, _) = puts[1];
    assert!(
        at >= Duration::from_millis(8500) && at <= Duration::from_millis(8600),
        "the renewal after the refusal went out a second after its answer: {puts:?}"
    );
    let rest = &puts[3..puts.len() - 1];
    assert!(rest.len() >= 4, "{puts:?}");
    assert!(rest.iter().all(|(_, s)| *s == Some(200)), "{puts:?}");
    assert!(
        puts.last()
            .is_some_and(|(at, _)| *at >= Duration::from_secs(72)),
        "{puts:?}"
    );
}

/// The kube-controller-manager's leader Lease (`[fence] controllerManagerLease`, docs/fence.md
/// §7) is read at the start and every 5 minutes after while connected, whether or not it exists;
/// every 10 s once a read proves nobody leads (no holder, or a holder whose renewal has not moved
/// for longer than the Lease lasts); not at all when the key is `""` or the fence is off.
#[tokio::test(start_paused = true)]
async fn the_controller_managers_lease_is_read_every_five_minutes_and_every_ten_seconds_while_nobody_leads()
 {
    const PATH: &str =
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager";
    let reads = |with: fn(&mut Config), holder: Option<&'static str>| async move {
        let (server, health, source, mut cfg) = idle_node();
        if let Some(holder) = holder {
            server.create_namespace("kube-system");
            server.create_lease(json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                         "renewTime": "2026-11-29T00:00:00.000000Z"}
            }));
        }
        with(&mut cfg);
        run_for(&server, cfg, source, health, Duration::from_secs(655)).await;
        count(&server, "GET", PATH)
    };
    // A holder that never renews: read at 0 and 300 s, which proves it gone, then every 10 s
    // (310, ..., 650 s).
    assert_eq!(reads(|_| {}, Some("cm-a")).await, 2 + 35);
    // At 0, 5 and 10 minutes.
    assert_eq!(
        reads(|_| {}, None).await,
        3,
        "a missing Lease is read again"
    );
    // Released: nobody leads, read every 10 s (at 0, 10, ..., 650 s).
    assert_eq!(reads(|_| {}, Some("")).await, 66);
    assert_eq!(
        reads(|c| c.fence.controller_manager_lease = None, Some("cm-a")).await,
        0
    );
    assert_eq!(
        reads(
            |c| c.fence.mode = nodewarden::core::fence_plan::Mode::Off,
            Some("cm-a")
        )
        .await,
        0
    );
}

/// After a return, the fence waits at most 2 s for the first read of the controller-manager's
/// leader Lease (docs/fence.md §7): a read that fails on the way is tried again within that
/// wait, 500 ms later, not after the 10 s a failed read waits otherwise. The holder renews
/// nothing, so the read that comes back proves its lead lapsed.
#[tokio::test(start_paused = true)]
async fn a_failed_read_of_the_controller_managers_lease_after_a_return_is_tried_again_within_the_fences_wait()
 {
    const PATH: &str =
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager";
    let (server, health, source, cfg) = idle_node();
    server.create_namespace("kube-system");
    server.create_lease(json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
        "spec": {"holderIdentity": "cm-a", "leaseDurationSeconds": 15,
                 "renewTime": "2026-11-29T00:00:00.000000Z"}
    }));
    let (s2, h2) = (server.clone(), health.clone());
    let chaos = async move {
        tokio::time::sleep(Duration::from_secs(20)).await;
        s2.faults().black_hole(("GET", PATH), true);
        // 45 s without an answer: past the 40 s Lease, so cut off.
        let back = black_hole_everything(&s2, Duration::ZERO, Duration::from_secs(45)).await;
        let cut_off = h2.metrics.render(None);
        // The return's read of the controller-manager's Lease fails once.
        s2.faults().fail_next(("GET", PATH), 1, Fault::Status503);
        (back, cut_off)
    };
    let agent = run_for(&server, cfg, source, health, Duration::from_secs(80));
    let ((), (back, cut_off)) = tokio::join!(agent, chaos);
    assert!(cut_off.contains("nodewarden_api_reachable 0"), "{cut_off}");
    let reads: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == PATH && r.method == "GET" && r.at >= back)
        .map(|r| (r.at - back, r.status))
        .collect();
    assert!(reads.len() >= 2, "{reads:?}");
    assert_eq!(
        reads.iter().take(2).map(|(_, s)| *s).collect::<Vec<_>>(),
        [Some(503), Some(200)],
        "{reads:?}"
    );
    // The first read goes out once contact is back (a renewal stored within a second), and the
    // second half a second after the first was answered: both within the fence's wait.
    assert!(reads[0].0 <= Duration::from_millis(1500), "{reads:?}");
    let gap = reads[1].0 - reads[0].0;
    assert!(
        gap >= Duration::from_millis(500) && gap <= Duration::from_millis(600),
        "{reads:?}"
    );
    // The holder never renewed, so that read proved its lead lapsed: from then on, a read every
    // 10 s.
    let next = reads.get(2).map(|(at, _)| *at - reads[1].0);
    assert!(
        next.is_some_and(|n| n >= Duration::from_secs(10) && n <= Duration::from_millis(10_100)),
        "{reads:?}"
    );
}

/// `count` Nodes `{prefix}-00`… in zone `zone`, the first `unknown` of them recorded
/// Ready=Unknown (as the node lifecycle controller writes it), the rest Ready=True.
fn zone_nodes(server: &ApiServer, prefix: &str, zone: &str, count: usize, unknown: usize) {
    for i in 0..count {
        let status = if i < unknown { "Unknown" } else { "True" };
        server.create_node(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": format!("{prefix}-{i:02}"),
                         "labels": {"topology.kubernetes.io/zone": zone}},
            "status": {"conditions": [{
                "type": "Ready", "status": status, "reason": "Test",
                "lastHeartbeatTime": "2026-11-29T00:00:00Z",
                "lastTransitionTime": "2026-11-29T00:00:00Z"
            }]}
        }));
    }
}

/// A Node `name` with `labels` whose Ready condition is `status` since `since` (none at all
/// when `status` is empty).
fn node_since(server: &ApiServer, name: &str, labels: Value, status: &str, since: &str) {
    let conditions = if status.is_empty() {
        json!([])
    } else {
        json!([{
            "type": "Ready", "status": status, "reason": "Test",
            "lastHeartbeatTime": since, "lastTransitionTime": since
        }])
    };
    server.create_node(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": conditions}
    }));
}

/// A zone none of whose Nodes is Ready is recorded with the two facts that make it master
/// disruption for the asker (docs/fence.md §5, *Every zone down, recorded*): no Node outside it, which a
/// list of one Node outside the zone label shows (a cluster with no zone label is listed whole
/// already), and whether the asker's Ready left True no earlier than every other's. A Node of
/// another zone, a later transition or a missing Ready condition each make the fact false.
#[tokio::test(start_paused = true)]
async fn a_zone_with_no_node_ready_is_recorded_with_whether_it_is_the_only_one_and_the_asker_last()
{
    let server = ApiServer::new();
    let zs = json!({"topology.kubernetes.io/zone": "zs"});
    let at = |s: u32| format!("2026-11-29T00:00:{s:02}Z");
    for (name, since) in [("s-0", 10), ("s-1", 5), ("s-2", 10)] {
        node_since(&server, name, zs.clone(), "Unknown", &at(since));
    }
    let reader = nodewarden::api::node::NodeTaints::new(
        server.client(),
        &nodewarden::api::Requests::default(),
    );
    let bound = Duration::from_secs(2);
    let record = |only_zone, asker_last| down(3, only_zone, asker_last);
    // The only zone, every Ready Unknown: how many seconds after the asker's the last was
    // written (forty-ninth session).
    let after = |r: Option<ZoneRecord>, s: u64| {
        r.map(|r| ZoneRecord {
            last_down_after: Some(s),
            ..r
        })
    };
    // s-0 and s-2 left Ready last, in the same second; s-1 five seconds before them.
    assert_eq!(
        reader.zone_record("s-0", "zs", bound).await,
        after(record(true, true), 0)
    );
    assert_eq!(
        reader.zone_record("s-2", "zs", bound).await,
        after(record(true, true), 0)
    );
    assert_eq!(
        reader.zone_record("s-1", "zs", bound).await,
        after(record(true, false), 5)
    );
    // The zone's list and one list outside it, which found nothing; the askers within the
    // second were answered from those.
    assert_eq!(node_lists(&server), 2);
    let text = serde_json::to_string(&after(record(true, false), 5)).expect("json");
    assert!(
        text.ends_with(r#""unreachableTainted":false,"onlyZone":true,"lastDownAfterSeconds":5}"#),
        "{text}"
    );
    // A Ready=False among them, posted by its kubelet on its own clock: no seconds counted.
    server
        .update_node_status_as("kubelet", "s-2", |n| {
            n["status"]["conditions"][0]["status"] = json!("False");
        })
        .unwrap_or_else(|e| panic!("False: {e:?}"));
    tokio::time::advance(Duration::from_millis(1_100)).await;
    assert_eq!(
        reader.zone_record("s-1", "zs", bound).await,
        record(true, false)
    );
    // A Node of another zone, Ready or not: the zone is not the only one.
    let zt = json!({"topology.kubernetes.io/zone": "zt"});
    node_since(&server, "t-0", zt, "Unknown", &at(1));
    tokio::time::advance(Duration::from_millis(1_100)).await;
    assert_eq!(
        reader.zone_record("s-0", "zs", bound).await,
        record(false, true)
    );
    // A Node with no zone label is outside it too.
    let unlabelled = ApiServer::new();
    for (name, labels, status) in [
        ("u-0", json!({}), "Unknown"),
        ("u-1", json!({}), ""),
        ("s-0", zs.clone(), "Unknown"),
    ] {
        let since = if status.is_empty() {
            String::new()
        } else {
            at(10)
        };
        node_since(&unlabelled, name, labels, status, &since);
    }
    let reader = nodewarden::api::node::NodeTaints::new(
        unlabelled.client(),
        &nodewarden::api::Requests::default(),
    );
    let one = |only_zone, asker_last| down(1, only_zone, asker_last);
    assert_eq!(
        reader.zone_record("s-0", "zs", bound).await,
        one(false, true)
    );
    // The unlabelled zone is listed whole, with no list more: every Node is in it, u-1 has no
    // Ready condition (not Ready, and no time, so no asker is known to be last), and s-0 is in
    // another zone.
    let before = node_lists(&unlabelled);
    let pair = |only_zone| down(2, only_zone, false);
    assert_eq!(reader.zone_record("u-0", "", bound).await, pair(false));
    assert_eq!(node_lists(&unlabelled) - before, 1);
}

/// A peer reads the asker's Node as tainted with either of the node controller's NoExecute taints:
/// the not-ready one keeps its timers through the swap for the unreachable one, so a read that
/// finds it is no read without a taint (fortieth session). Each one's `timeAdded` is read as its
/// own (the not-ready one's since the forty-fourth session); a NoSchedule taint of either key is
/// not the controller's eviction taint. The zone
/// record says the same of the asker. The kubelet's Ready=False is read with each, and a Ready
/// Node reads without it.
#[tokio::test(start_paused = true)]
async fn a_peer_reads_either_of_the_controllers_noexecute_taints_as_tainted() {
    let server = ApiServer::new();
    let zs = json!({"topology.kubernetes.io/zone": "zs"});
    node_since(&server, "s-0", zs.clone(), "False", "2026-11-29T00:00:10Z");
    node_since(&server, "s-1", zs, "True", "2026-11-29T00:00:10Z");
    let reader = nodewarden::api::node::NodeTaints::new(
        server.client(),
        &nodewarden::api::Requests::default(),
    );
    let bound = Duration::from_secs(2);
    let added = "2026-11-29T00:00:15Z";
    let mut seen = Vec::new();
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
    ] {
        server
            .update_node_as("kube-controller-manager", "s-0", |n| {
                n["spec"]["taints"] = json!([{"key": key, "effect": effect, "timeAdded": added}]);
            })
            .unwrap_or_else(|e| panic!("taint: {e:?}"));
        let read = reader.read("s-0", bound).await.expect("a read");
        tokio::time::advance(Duration::from_millis(1_100)).await;
        let record = reader
            .zone_record("s-0", "zs", bound)
            .await
            .expect("a record");
        seen.push((
            read.tainted,
            read.taint_added.is_some(),
            read.not_ready_added.is_some(),
            record.tainted,
            read.ready_false,
        ));
    }
    assert_eq!(
        seen,
        [
            (true, false, true, true, true),
            (false, false, false, false, true),
            (true, true, false, true, true)
        ]
    );
    let ready = reader.read("s-1", bound).await.expect("a read");
    assert!(!ready.ready_false && !ready.tainted, "{ready:?}");
}

/// The record of a zone of `size` Nodes none of which is Ready, the asker untainted, with the
/// two facts as given.
fn down(
    size: usize,
    only_zone: bool,
    asker_last: bool,
) -> Option<nodewarden::core::quorum::ZoneRecord> {
    Some(nodewarden::core::quorum::ZoneRecord {
        not_ready: size,
        size,
        tainted: false,
        only_zone,
        asker_last,
        asker_ready: false,
        last_down_after: None,
    })
}

/// How many lists of Nodes the server has had.
fn node_lists(server: &ApiServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == "/api/v1/nodes")
        .count()
}

/// A reader records an asker's zone from the Nodes the zone label selects (docs/fence.md §5, *The
/// zone as recorded*): in pages of 25, every page of one list; from the same list for a second,
/// whoever asks; not at all from a zone of more than 100 Nodes listed, nor when the list is
/// refused.
#[tokio::test(start_paused = true)]
async fn a_zone_is_recorded_from_its_nodes_in_pages_and_one_list_serves_a_second() {
    let server = ApiServer::new();
    zone_nodes(&server, "a", "za", 30, 10);
    zone_nodes(&server, "b", "zb", 5, 5);
    let reader = nodewarden::api::node::NodeTaints::new(
        server.client(),
        &nodewarden::api::Requests::default(),
    );
    let bound = Duration::from_secs(2);
    let recorded = nodewarden::core::quorum::ZoneRecord {
        not_ready: 10,
        size: 30,
        ..Default::default()
    };
    assert_eq!(
        reader.zone_record("a-00", "za", bound).await,
        Some(recorded)
    );
    // 30 Nodes of the zone in pages of 25: two requests, the second with the first's token.
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path == "/api/v1/nodes")
        .collect();
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[0].param("limit"), Some("25"));
    assert_eq!(
        lists[0].param("labelSelector"),
        Some("topology.kubernetes.io/zone=za")
    );
    assert!(lists[1].param("continue").is_some());
    // Another asker of the zone within the second: the same list. Its Node is Ready, which the
    // record says.
    assert_eq!(
        reader.zone_record("a-29", "za", bound).await,
        Some(nodewarden::core::quorum::ZoneRecord {
            asker_ready: true,
            ..recorded
        })
    );
    assert_eq!(node_lists(&server), 2);
    // A second later the list is made again.
    tokio::time::advance(Duration::from_millis(1_100)).await;
    assert_eq!(
        reader.zone_record("a-05", "za", bound).await,
        Some(recorded)
    );
    assert_eq!(node_lists(&server), 4);
    // zb: every Node not Ready, all since the same second: the asker left Ready no earlier than
    // the others. Another zone exists, which one more list, of one Node outside zb, shows.
    let before = node_lists(&server);
    assert_eq!(
        reader.zone_record("b-01", "zb", bound).await,
        Some(nodewarden::core::quorum::ZoneRecord {
            not_ready: 5,
            size: 5,
            asker_last: true,
            ..Default::default()
        })
    );
    let lists = server.requests();
    let outside = lists.last().expect("a request");
    assert_eq!(node_lists(&server) - before, 2);
    assert_eq!(
        outside.param("labelSelector"),
        Some("topology.kubernetes.io/zone!=zb")
    );
    assert_eq!(outside.param("limit"), Some("1"));
    // A zone of 101 listed Nodes: cut short at the fourth page, no record.
    zone_nodes(&server, "c", "zc", 101, 0);
    let before = node_lists(&server);
    assert_eq!(reader.zone_record("c-00", "zc", bound).await, None);
    assert_eq!(node_lists(&server) - before, 4);
    // Refused: no record.
    server.deny("list", "nodes", "");
    tokio::time::advance(Duration::from_millis(1_100)).await;
    assert_eq!(reader.zone_record("a-00", "za", bound).await, None);
}
