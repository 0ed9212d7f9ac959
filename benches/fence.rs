//! Fence costs: planning 1,000 pods, and the resident memory and idle CPU of the real agent with
//! 0, 110 and 1,000 pods known (the release binary, connected to the API test server on loopback,
//! until it has written every pod to its state directory; then `VmHWM` from `/proc/<pid>/status`
//! and the CPU time (`utime + stime` of `/proc/<pid>/stat`) it uses over 10 idle seconds).
//!
//! Run with `cargo bench --bench fence` (as any user; nothing is killed: the fence is in dry-run
//! and never cut off). `NODEWARDEN_BASELINE_BIN=<path>` measures another build of the agent in
//! the same run, for a before/after ratio on this noisy machine.

#[path = "../tests/support/apiserver/mod.rs"]
mod apiserver;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nodewarden::core::fence_plan::{FencePod, FencePolicy, Mode, QuorumVerdict, plan};
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
            created: None,
        })
        .collect()
}

fn planning() {
    let pods = pods(1000);
    let policy = FencePolicy {
        node_monitor_grace_period: Duration::from_secs(40),
        node_monitor_period: Duration::ZERO,
        safety_margin: Duration::from_secs(2),
        grace_cap: Duration::from_secs(30),
        mode: Mode::Enforce,
        kubelet_lag: Duration::ZERO,
    };
    let mut times = Vec::with_capacity(200);
    for _ in 0..200 {
        let start = Instant::now();
        let plans = plan(
            &pods,
            Duration::from_secs(1000),
            None,
            None,
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

/// CPU seconds (user + system) the process has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the whole line; clock ticks are 100 per second
    // on Linux/x86_64.
    (ticks(11) + ticks(12)) / 100.0
}

fn resident_with(bin: &str, label: &str, n: usize) {
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
        let before = cpu_seconds(pid);
        tokio::time::sleep(Duration::from_secs(10)).await;
        let idle_ms_per_s = (cpu_seconds(pid) - before) * 1000.0 / 10.0;
        println!(
            "{label}: agent with {n:>5} pods known: VmHWM {}, idle CPU {idle_ms_per_s:.1} ms/s",
            hwm.split_whitespace().skip(1).collect::<Vec<_>>().join(" ")
        );
        // Our own child, by PID (kill_on_drop would also do it).
        let _ = child.start_kill();
        let _ = child.wait().await;
        drop(lb);
    });
}

fn main() {
    planning();
    let baseline = std::env::var("NODEWARDEN_BASELINE_BIN").ok();
    for n in [0, 110, 1000] {
        resident_with(env!("CARGO_BIN_EXE_nodewarden"), "this build", n);
        if let Some(bin) = &baseline {
            resident_with(bin, "baseline", n);
        }
    }
}
