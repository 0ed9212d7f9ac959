//! The footprint harness (issue 12), run by `benches/footprint.sh` (read that first): the
//! release agent's binary size; standalone beside `prometheus-node-exporter` (the agent sampling
//! once a second while the exporter is scraped once a second, for the same seconds: CPU seconds
//! from `/proc/<pid>/stat` and VmHWM/VmRSS of both, as ratios); and connected in dry-run to the
//! API test server on loopback with 0, 110, 1,000 (and 10,000) realistic pods
//! (`tests/support/realistic.rs`, created through the server's own write path by the managers a
//! cluster has: kubectl-client-side-apply, kube-controller-manager, and the kubelet for status).
//!
//! `--baseline BIN` measures another build in the same run, one after the other, for ratios on
//! this shared, noisy machine. Every process started here is stopped by its PID.
//!
//! Usage: `footprint --bin PATH [--baseline PATH] [--exporter PATH] [--pods 0,110,1000]
//!         [--peer-seconds 60] [--idle-seconds 20]`

#[path = "../tests/support/apiserver/mod.rs"]
mod apiserver;
#[path = "../tests/support/realistic.rs"]
mod realistic;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const NODE: &str = "n1";

struct Opts {
    bin: PathBuf,
    baseline: Option<PathBuf>,
    exporter: Option<PathBuf>,
    pods: Vec<usize>,
    peer_seconds: u64,
    idle_seconds: u64,
}

fn opts() -> Result<Opts, String> {
    let mut o = Opts {
        bin: PathBuf::new(),
        baseline: None,
        exporter: None,
        pods: vec![0, 110, 1000],
        peer_seconds: 60,
        idle_seconds: 20,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--bin" => o.bin = value()?.into(),
            "--baseline" => o.baseline = Some(value()?.into()),
            "--exporter" => o.exporter = Some(value()?.into()),
            "--pods" => {
                o.pods = value()?
                    .split(',')
                    .map(|n| n.trim().parse().map_err(|e| format!("--pods {n}: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--peer-seconds" => {
                o.peer_seconds = value()?.parse().map_err(|e| format!("{a}: {e}"))?
            }
            "--idle-seconds" => {
                o.idle_seconds = value()?.parse().map_err(|e| format!("{a}: {e}"))?
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if o.bin.as_os_str().is_empty() {
        return Err("--bin PATH is required".into());
    }
    Ok(o)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A field of `/proc/<pid>/status` in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// CPU seconds (user + system) the process has used so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let hz = clock_ticks();
    // utime and stime are fields 14 and 15 of the whole line (11 and 12 after the name).
    (ticks(11) + ticks(12)) / hz
}

/// Clock ticks per second (the unit of utime and stime).
fn clock_ticks() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64
}

/// A process started here; stopped by its PID (SIGTERM, then SIGKILL after 5 s).
struct Started {
    child: Child,
}

impl Started {
    fn spawn(cmd: &mut Command) -> Started {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {cmd:?}: {e}"));
        Started { child }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// `GET path` over HTTP/1.0 on loopback; the body's length, or `None` on any failure.
fn http_get(port: u16, path: &str) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    buf.starts_with(b"HTTP/1.1 200")
        .then(|| buf[head_end + 4..].to_vec())
        .or_else(|| {
            buf.starts_with(b"HTTP/1.0 200")
                .then(|| buf[head_end + 4..].to_vec())
        })
}

fn samples_total(port: u16) -> Option<u64> {
    let body = http_get(port, "/metrics")?;
    String::from_utf8_lossy(&body).lines().find_map(|l| {
        l.strip_prefix("nodewarden_samples_total ")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|v| v as u64)
    })
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// The standalone agent sampling once a second beside the exporter scraped once a second.
fn side_by_side(o: &Opts, bin: &Path, label: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "nodeName = \"footprint\"\nnodeStatusUpdateFrequency = \"1s\"\nnodefsPath = \"/\"\n\
             imagefsPath = \"/\"\nhealthAddress = \"127.0.0.1:{port}\"\nstateDirectory = \"{}\"\n\
             [logging]\ntarget = \"stderr\"\nlevel = \"warn\"\n",
            dir.path().join("state").display()
        ),
    )
    .expect("config");
    let agent = Started::spawn(
        Command::new(bin)
            .args(["run", "--config"])
            .arg(&config)
            .stderr(Stdio::null()),
    );
    wait_until("the agent's /metrics", Duration::from_secs(20), || {
        samples_total(port).is_some()
    });
    let exporter = o.exporter.as_ref().filter(|p| p.exists()).map(|path| {
        let eport = free_port();
        let e = Started::spawn(
            Command::new(path)
                .args([
                    "--collector.disable-defaults",
                    "--collector.meminfo",
                    "--collector.filesystem",
                    "--collector.pressure",
                    "--collector.loadavg",
                    "--collector.processes",
                ])
                .arg(format!("--web.listen-address=127.0.0.1:{eport}"))
                .stderr(Stdio::null()),
        );
        wait_until("the exporter's /metrics", Duration::from_secs(20), || {
            http_get(eport, "/metrics").is_some()
        });
        (e, eport)
    });
    // Both past their start-up.
    std::thread::sleep(Duration::from_secs(2));
    let cpu0 = cpu_seconds(agent.pid());
    let ecpu0 = exporter.as_ref().map(|(e, _)| cpu_seconds(e.pid()));
    let samples0 = samples_total(port).unwrap_or(0);
    let start = Instant::now();
    let (mut scrapes, mut scraped_bytes) = (0u64, 0usize);
    for i in 1..=o.peer_seconds {
        if let Some((_, eport)) = &exporter
            && let Some(body) = http_get(*eport, "/metrics")
        {
            scrapes += 1;
            scraped_bytes += body.len();
        }
        let next = Duration::from_secs(i);
        if let Some(wait) = next.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds(agent.pid()) - cpu0;
    let samples = samples_total(port).unwrap_or(0).saturating_sub(samples0);
    let (hwm, rss) = (
        status_kib(agent.pid(), "VmHWM:"),
        status_kib(agent.pid(), "VmRSS:"),
    );
    println!(
        "| {label}: nodewarden standalone, sampling every 1 s | {samples} samples | {cpu:.2} s ({:.2} ms/s, {:.1} s/h) | {} | {} |",
        cpu * 1000.0 / secs,
        cpu / secs * 3600.0,
        mib(hwm),
        mib(rss)
    );
    if let (Some((e, _)), Some(ecpu0)) = (&exporter, ecpu0) {
        // utime and stime count whole clock ticks.
        let tick = 1.0 / clock_ticks();
        let ecpu = cpu_seconds(e.pid()) - ecpu0;
        let (ehwm, erss) = (status_kib(e.pid(), "VmHWM:"), status_kib(e.pid(), "VmRSS:"));
        println!(
            "| prometheus-node-exporter, 5 collectors, scraped every 1 s | {scrapes} scrapes ({} KiB each) | {ecpu:.2} s ({:.2} ms/s, {:.1} s/h) | {} | {} |",
            scraped_bytes / scrapes.max(1) as usize / 1024,
            ecpu * 1000.0 / secs,
            ecpu / secs * 3600.0,
            mib(ehwm),
            mib(erss)
        );
        println!(
            "| ratio exporter ÷ nodewarden ({label}) | | CPU {:.1}× ({:.0}–{:.0}× within a tick each) | VmHWM {:.1}× | VmRSS {:.1}× |",
            ecpu / cpu.max(tick / 2.0),
            (ecpu - tick).max(0.0) / (cpu + tick),
            (ecpu + tick) / (cpu - tick).max(tick / 2.0),
            ehwm as f64 / hwm.max(1) as f64,
            erss as f64 / rss.max(1) as f64
        );
    }
    if let Some((e, _)) = exporter {
        e.stop();
    }
    agent.stop();
}

/// Seeds `server` up to `n` realistic pods bound to our node, each written by three managers.
fn seed_pods(server: &apiserver::ApiServer, from: usize, n: usize) {
    for i in from..n {
        let mut pod = realistic::for_create(realistic::pod(i, NODE));
        let owner = pod["metadata"]["ownerReferences"].take();
        if let Some(m) = pod["metadata"].as_object_mut() {
            m.remove("ownerReferences");
        }
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        server
            .try_create_as("pods", pod, "kubectl-client-side-apply", "kubelet")
            .unwrap_or_else(|e| panic!("seeding pod {i}: {e}"));
        server
            .update_pod_as("kube-controller-manager", "shop", &name, |o| {
                o["metadata"]["ownerReferences"] = owner;
            })
            .unwrap_or_else(|e| panic!("owning pod {i}: {e}"));
    }
}

/// One connected run: returns (VmHWM, steady VmRSS, CPU seconds per hour idle, seconds to know
/// every pod).
fn connected(o: &Opts, kubeconfig: &Path, bin: &Path, n: usize) -> (u64, u64, f64, f64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "nodeName = \"{NODE}\"\nkubeconfig = \"{}\"\nhealthAddress = \"127.0.0.1:{port}\"\n\
             stateDirectory = \"{}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             [logging]\ntarget = \"stderr\"\nlevel = \"warn\"\n[fence]\nmode = \"dry-run\"\n",
            kubeconfig.display(),
            dir.path().join("state").display()
        ),
    )
    .expect("config");
    let started = Instant::now();
    let agent = Started::spawn(
        Command::new(bin)
            .args(["run", "--config"])
            .arg(&config)
            .stderr(Stdio::null()),
    );
    let state = dir.path().join("state").join("state.json");
    wait_until(
        &format!("the agent knowing {n} pods"),
        Duration::from_secs(600),
        || {
            std::fs::read(&state)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| v["pods"].as_array().map(Vec::len))
                == Some(n)
        },
    );
    let known_after = started.elapsed().as_secs_f64();
    // Settled: the status and the Lease written a few times.
    std::thread::sleep(Duration::from_secs(5));
    let rss = status_kib(agent.pid(), "VmRSS:");
    let cpu0 = cpu_seconds(agent.pid());
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(o.idle_seconds));
    let cpu = cpu_seconds(agent.pid()) - cpu0;
    let per_hour = cpu / t0.elapsed().as_secs_f64() * 3600.0;
    let hwm = status_kib(agent.pid(), "VmHWM:");
    agent.stop();
    (hwm, rss, per_hour, known_after)
}

fn main() {
    let o = match opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("footprint: {e}");
            std::process::exit(2);
        }
    };
    let mut builds = vec![("this build", o.bin.clone())];
    if let Some(b) = &o.baseline {
        builds.push(("baseline", b.clone()));
    }

    println!("## Binary size\n");
    for (label, bin) in &builds {
        let len = std::fs::metadata(bin).map(|m| m.len()).unwrap_or(0);
        println!("- {label}: {} bytes ({})", len, mib(len / 1024));
    }

    println!(
        "\n## Standalone beside prometheus-node-exporter, {} s\n",
        o.peer_seconds
    );
    println!("| process | work | CPU | VmHWM | VmRSS (end) |\n|---|---|---|---|---|");
    if o.exporter.as_ref().is_none_or(|p| !p.exists()) {
        println!(
            "| (no exporter at {:?}: nodewarden alone) | | | | |",
            o.exporter
        );
    }
    for (label, bin) in &builds {
        side_by_side(&o, bin, label);
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // The server runs on its own thread so the measurements here may block.
    let server = apiserver::ApiServer::new();
    server.create_namespace("shop");
    let node = realistic::for_create(realistic::node(NODE));
    server
        .try_create_as("nodes", node, "kubelet", "kubelet")
        .unwrap_or_else(|e| panic!("seeding the node: {e}"));
    let kdir = tempfile::tempdir().expect("tempdir");
    let (path_tx, path_rx) = std::sync::mpsc::channel();
    {
        let (server, dir) = (server.clone(), kdir.path().to_path_buf());
        std::thread::spawn(move || {
            rt.block_on(async move {
                let lb = server.serve_loopback();
                let _ = path_tx.send(lb.write_kubeconfig(&dir));
                std::future::pending::<()>().await;
                drop(lb);
            })
        });
    }
    let kubeconfig = path_rx.recv().expect("the API test server's kubeconfig");

    println!(
        "\n## Connected, dry-run, realistic pods, idle CPU over {} s\n",
        o.idle_seconds
    );
    println!(
        "| pods | served JSON per pod | build | VmHWM | steady VmRSS | idle CPU | all pods known after |\n|---|---|---|---|---|---|---|"
    );
    let mut seeded = 0;
    for &n in &o.pods {
        let t = Instant::now();
        seed_pods(&server, seeded, n);
        seeded = seeded.max(n);
        let per_pod = {
            let pods = server.pods();
            let total: usize = pods.iter().map(|p| p.to_string().len()).sum();
            total / pods.len().max(1)
        };
        eprintln!("seeded {n} pods in {:.1} s", t.elapsed().as_secs_f64());
        for (label, bin) in &builds {
            let (hwm, rss, cpu_h, known) = connected(&o, &kubeconfig, bin, n);
            println!(
                "| {n} | {} | {label} | {} | {} | {cpu_h:.1} s/h | {known:.1} s |",
                if n == 0 {
                    "-".to_string()
                } else {
                    format!("{:.1} KB", per_pod as f64 / 1000.0)
                },
                mib(hwm),
                mib(rss)
            );
        }
    }
}
