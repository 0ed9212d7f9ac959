//! Connected mode with outside clients on loopback: a concurrent administrator running real
//! `kubectl taint` while the agent adds and removes its own taint, and the real `nodewarden`
//! binary against the API test server with real disk pressure on a tmpfs, observed through
//! `kubectl get node -o json`.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nodewarden::agent::connected;
use nodewarden::config::Config;
use nodewarden::observe::http::Health;
use serde_json::{Value, json};
use support::apiserver::ApiServer;
use support::switch::Switch;
use support::{Agent, Tmpfs, free_port, in_ci, is_root, require, write_config};

const NODE: &str = "n1";
const DISK: &str = "node.kubernetes.io/disk-pressure";

use support::kubectl::available as kubectl_available;

/// kubectl's success and its stdout (with stderr appended when it failed, for the message).
async fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> (bool, String) {
    let (ok, out, err) = support::kubectl::run(kubeconfig, cache, args).await;
    if ok {
        (ok, out)
    } else {
        (ok, format!("{out}{err}"))
    }
}

fn taints(node: &Value) -> Vec<(String, String, String)> {
    node["spec"]["taints"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    (
                        t["key"].as_str().unwrap_or("").to_string(),
                        t["value"].as_str().unwrap_or("").to_string(),
                        t["effect"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn administrator_taints_survive_a_concurrent_agent_exactly_once() {
    if !require(kubectl_available(), "kubectl") {
        return;
    }
    let server = ApiServer::new();
    server.create_node(ApiServer::node_json(NODE));
    let lb = server.serve_loopback();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = lb.write_kubeconfig(dir.path());
    let cache = dir.path().join("cache");

    let mut config = Config::defaults();
    config.node_name = Some(NODE.into());
    config.node_status_update_frequency = Duration::from_millis(200);
    config.node_status_report_frequency = Duration::from_secs(60);
    config.eviction_pressure_transition_period = Duration::ZERO;
    config.state_directory = dir.path().join("state");
    let pressure = Arc::new(AtomicBool::new(false));
    let health = Arc::new(Health::new(Duration::from_secs(30)));
    let stop = Arc::new(tokio::sync::Notify::new());
    let stop_wait = stop.clone();
    let agent = tokio::spawn({
        let client = server.client();
        let source = Switch(pressure.clone());
        async move {
            connected::run(&config, client, source, health, async move {
                stop_wait.notified().await;
                "test end"
            })
            .await
        }
    });

    // The agent flips its taint on and off while the administrator works.
    let flipping = Arc::new(AtomicBool::new(true));
    let flipper = tokio::spawn({
        let (pressure, flipping) = (pressure.clone(), flipping.clone());
        async move {
            let mut on = false;
            for _ in 0..200 {
                if !flipping.load(Ordering::SeqCst) {
                    break;
                }
                on = !on;
                pressure.store(on, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(350)).await;
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    for args in [
        ["taint", "nodes", NODE, "key1=value1:NoSchedule"],
        ["taint", "nodes", NODE, "key1=value1:NoExecute"],
        ["taint", "nodes", NODE, "key2=value2:NoSchedule"],
    ] {
        let (ok, out) = kubectl(&kubeconfig, &cache, &args).await;
        assert!(ok, "kubectl {args:?}: {out}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // End with pressure on: our taint must be there exactly once, next to the administrator's.
    flipping.store(false, Ordering::SeqCst);
    flipper.await.expect("flipper");
    pressure.store(true, Ordering::SeqCst);
    let want_admin = [
        (
            "key1".to_string(),
            "value1".to_string(),
            "NoSchedule".to_string(),
        ),
        (
            "key1".to_string(),
            "value1".to_string(),
            "NoExecute".to_string(),
        ),
        (
            "key2".to_string(),
            "value2".to_string(),
            "NoSchedule".to_string(),
        ),
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    let settled = loop {
        let t = taints(&server.node(NODE).expect("node"));
        let ours = t.iter().filter(|x| x.0 == DISK).count();
        if ours == 1 && want_admin.iter().all(|w| t.contains(w)) {
            break t;
        }
        assert!(Instant::now() < deadline, "never settled: {t:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for w in &want_admin {
        assert_eq!(
            settled.iter().filter(|t| *t == w).count(),
            1,
            "{w:?} once in {settled:?}"
        );
    }
    assert_eq!(settled.len(), 4, "{settled:?}");
    // And with pressure off, ours goes and theirs stay.
    pressure.store(false, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let t = taints(&server.node(NODE).expect("node"));
        if !t.iter().any(|x| x.0 == DISK) {
            assert_eq!(t.len(), 3, "{t:?}");
            assert!(want_admin.iter().all(|w| t.contains(w)), "{t:?}");
            break;
        }
        assert!(Instant::now() < deadline, "our taint never removed: {t:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.notify_one();
    agent.await.expect("agent task").expect("agent ran");
}

#[tokio::test]
async fn the_real_binary_reports_and_taints_real_disk_pressure_seen_through_kubectl() {
    if !require(is_root(), "root (to mount a tmpfs)") || !require(kubectl_available(), "kubectl") {
        return;
    }
    let _ = in_ci();
    let server = ApiServer::new();
    server.create_node(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}));
    let lb = server.serve_loopback();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = lb.write_kubeconfig(dir.path());
    let cache = dir.path().join("cache");
    let fs = Tmpfs::mount("8m", 4096);
    let config = write_config(
        dir.path(),
        &format!(
            "nodeName = \"{NODE}\"\nkubeconfig = \"{kc}\"\nhealthAddress = \"127.0.0.1:{port}\"\n\
             stateDirectory = \"{state}\"\nnodefsPath = \"{p}\"\nimagefsPath = \"{p}\"\n\
             nodeStatusUpdateFrequency = \"1s\"\nevictionPressureTransitionPeriod = \"3s\"\n\
             [evictionHard]\n\"nodefs.available\" = \"50%\"\n\
             [logging]\ntarget = \"stderr\"\n",
            kc = kubeconfig.display(),
            port = free_port(),
            state = dir.path().join("state").display(),
            p = fs.path().display()
        ),
    );
    let agent = tokio::task::spawn_blocking(move || {
        let mut a = Agent::start(&config, &[]);
        let first = a.wait_for(&["API server reachable"], Duration::from_secs(15));
        (a, first.is_some())
    })
    .await
    .expect("start agent");
    assert!(
        agent.1,
        "agent never reached the API server:\n{}",
        agent.0.dump()
    );

    let get_node = |cache: &Path| {
        let (kc, cache) = (kubeconfig.clone(), cache.to_path_buf());
        async move {
            let (ok, out) = kubectl(&kc, &cache, &["get", "node", NODE, "-o", "json"]).await;
            assert!(ok, "kubectl get node: {out}");
            serde_json::from_str::<Value>(&out).expect("kubectl printed JSON")
        }
    };
    let disk = |node: &Value| {
        node["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "DiskPressure").cloned())
            .unwrap_or(Value::Null)
    };
    // Before pressure: False, no taint.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let n = get_node(&cache).await;
        if disk(&n)["status"] == "False" {
            assert!(taints(&n).iter().all(|t| t.0 != DISK));
            break;
        }
        assert!(Instant::now() < deadline, "no DiskPressure condition: {n}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let fill = fs.path().join("fill");
    std::fs::write(&fill, vec![0u8; 6 << 20]).expect("fill tmpfs");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let n = get_node(&cache).await;
        let has_taint = taints(&n)
            .iter()
            .any(|t| t.0 == DISK && t.2 == "NoSchedule");
        if disk(&n)["status"] == "True" && has_taint {
            assert_eq!(disk(&n)["reason"], "KubeletHasDiskPressure");
            break;
        }
        assert!(Instant::now() < deadline, "pressure never visible: {n}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    std::fs::remove_file(&fill).expect("free tmpfs");
    let freed = Instant::now();
    let deadline = freed + Duration::from_secs(20);
    let cleared_after = loop {
        let n = get_node(&cache).await;
        let has_taint = taints(&n).iter().any(|t| t.0 == DISK);
        if disk(&n)["status"] == "False" && !has_taint {
            break freed.elapsed();
        }
        assert!(Instant::now() < deadline, "pressure never cleared: {n}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        cleared_after >= Duration::from_secs(2),
        "taint removed {cleared_after:?} after the free: inside the 3 s transition period"
    );
    let (mut a, _) = agent;
    let (_, status) = tokio::task::spawn_blocking(move || a.terminate(Duration::from_secs(5)))
        .await
        .expect("join")
        .expect("agent exits on SIGTERM");
    assert!(status.success());
}
