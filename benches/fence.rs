//! Fence costs: planning 1,000 pods, and the resident memory of the real agent with 0, 110 and
//! 1,000 pods known (the release binary, connected to the API test server on loopback, until it
//! has written every pod to its state directory; then `VmHWM` from `/proc/<pid>/status`).
//!
//! Run with `cargo bench --bench fence` (as any user; nothing is killed: the fence is in dry-run
//! and never cut off).

#[path = "../tests/support/apiserver/mod.rs"]
mod apiserver;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nodewarden::core::fence::{FencePod, FencePolicy, Mode, QuorumVerdict, plan};
use nodewarden::core::qos::QosClass;
use nodewarden::core::taint::{Effect, Toleration};
use serde_json::json;

fn pods(n: usize) -> Vec<FencePod> {
    (0..n)
        .map(|i| FencePod {
            uid: format!("00000000-0000-4000-8000-{i:012}"),
            namespace: "default".into(),
            name: format!("p{i}"),
            tolerations: vec![
                Toleration::exists("node.kubernetes.io/not-ready", Some(Effect::NoExecute))
                    .with_seconds(300),
                Toleration::exists("node.kubernetes.io/unreachable", Some(Effect::NoExecute))
                    .with_seconds(300 - (i % 300) as i64),
                Toleration::equal("dedicated", "edge", Some(Effect::NoSchedule)),
            ],
            termination_grace_seconds: 30,
            owner_kind: Some(
                if i % 10 == 0 {
                    "DaemonSet"
                } else {
                    "ReplicaSet"
                }
                .into(),
            ),
            static_or_mirror: false,
            qos: QosClass::Burstable,
            opted_out: false,
            terminal: false,
        })
        .collect()
}

fn planning() {
    let pods = pods(1000);
    let policy = FencePolicy {
        node_monitor_grace_period: Duration::from_secs(40),
        safety_margin: Duration::from_secs(2),
        grace_cap: Duration::from_secs(30),
        mode: Mode::Enforce,
    };
    let mut times = Vec::with_capacity(200);
    for _ in 0..200 {
        let start = Instant::now();
        let plans = plan(
            &pods,
            Duration::from_secs(1000),
            &policy,
            &QuorumVerdict::NotConsulted,
        );
        times.push(start.elapsed());
        std::hint::black_box(plans);
    }
    times.sort();
    println!(
        "plan 1,000 pods: fastest {:?}, median {:?}, slowest {:?} (200 runs)",
        times[0],
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

fn resident_with(n: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = apiserver::ApiServer::new();
        server.create_node(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}));
        for i in 0..n {
            server.create_pod(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("p{i}"), "namespace": "default",
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "0d5a0000-0000-4000-8000-000000000001", "controller": true}]},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
                    "tolerations": [
                        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}
            }));
        }
        let lb = server.serve_loopback();
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = lb.write_kubeconfig(dir.path());
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("free port");
        let config = dir.path().join("config.toml");
        std::fs::write(
            &config,
            format!(
                "nodeName = \"n1\"\nkubeconfig = \"{}\"\nhealthAddress = \"127.0.0.1:{port}\"\n\
                 stateDirectory = \"{}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
                 [logging]\ntarget = \"stderr\"\nlevel = \"warn\"\n",
                kubeconfig.display(),
                dir.path().join("state").display()
            ),
        )
        .expect("config");
        let bin = env!("CARGO_BIN_EXE_nodewarden");
        let mut child = tokio::process::Command::new(bin)
            .args(["run", "--config"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start the agent");
        let pid = child.id().expect("pid");
        let state = dir.path().join("state").join("state.json");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let known = std::fs::read(&state)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|v| v["pods"].as_array().map(|a| a.len()))
                .unwrap_or(usize::MAX);
            if known == n {
                break;
            }
            assert!(Instant::now() < deadline, "the agent never knew {n} pods");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // A few more cycles with everything known.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let status = std::fs::File::open(format!("/proc/{pid}/status")).expect("status");
        let field = |name: &str| {
            BufReader::new(&status)
                .lines()
                .map_while(Result::ok)
                .find(|l| l.starts_with(name))
                .unwrap_or_default()
        };
        let hwm = field("VmHWM:");
        println!("agent with {n:>5} pods known: {}", hwm.split_whitespace().skip(1).collect::<Vec<_>>().join(" "));
        // Our own child, by PID (kill_on_drop would also do it).
        let _ = child.start_kill();
        let _ = child.wait().await;
        drop(lb);
    });
}

fn main() {
    planning();
    for n in [0, 110, 1000] {
        resident_with(n);
    }
}
