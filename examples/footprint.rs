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
//! Before those, "where the heap goes" with `--heap-pods` realistic pods, through the agent's
//! own code (a counting allocator); after the connected run with `--partition-pods` pods, a
//! partition (the API test server stops answering) with the fence in dry-run at short settings.
//!
//! Usage: `footprint --bin PATH [--baseline PATH] [--exporter PATH] [--pods 0,110,1000]
//!         [--peer-seconds 60] [--idle-seconds 20] [--heap-pods 1000] [--only-heap]
//!         [--partition-pods 1000] [--partition-window 20] [--shape realistic] [--perf]
//!         [--no-watch-list]`
//!
//! `--no-watch-list` turns the API test server's WatchList gate off (as Kubernetes 1.33 ships
//! it): the agent then lists the pods in pages instead of one streaming list.
//!
//! `--shape` picks the pods (`realistic::SHAPES`: `heavy` is issue 25's measurement, the others
//! add sidecars, a long last-applied annotation or many tolerations to it).
//!
//! `--perf` also attaches `perf stat -e task-clock,context-switches` to each connected agent for
//! its idle window (the same window as the schedstat figures) and prints its figures below.

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

/// Counts the bytes live on the heap, and their peak since the last [`Counting::reset_peak`], for
/// the "where the bytes go" table (every allocation of the process; that table is measured
/// before any other thread starts).
struct Counting;

/// What glibc's malloc takes for an allocation of `size` bytes on x86_64: the size asked for
/// plus an 8-byte header, rounded up to 16, at least 32 bytes (a 3-byte `"cpu"` costs 32).
fn chunk(size: usize) -> usize {
    ((size + 8 + 15) & !15).max(32)
}

static LIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static PEAK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only counters are added.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { std::alloc::System.alloc(layout) };
        if !p.is_null() {
            Counting::grew(chunk(layout.size()));
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) };
        LIVE.fetch_sub(chunk(layout.size()), std::sync::atomic::Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        let p = unsafe { std::alloc::System.realloc(ptr, layout, new) };
        if !p.is_null() {
            LIVE.fetch_sub(chunk(layout.size()), std::sync::atomic::Ordering::Relaxed);
            Counting::grew(chunk(new));
        }
        p
    }
}

impl Counting {
    fn grew(by: usize) {
        let now = LIVE.fetch_add(by, std::sync::atomic::Ordering::Relaxed) + by;
        PEAK.fetch_max(now, std::sync::atomic::Ordering::Relaxed);
    }
    fn live() -> usize {
        LIVE.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// The peak from now on starts at what is live now; returns that.
    fn reset_peak() -> usize {
        let now = Counting::live();
        PEAK.store(now, std::sync::atomic::Ordering::Relaxed);
        now
    }
    fn peak() -> usize {
        PEAK.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

struct Opts {
    bin: PathBuf,
    baseline: Option<PathBuf>,
    exporter: Option<PathBuf>,
    pods: Vec<usize>,
    peer_seconds: u64,
    idle_seconds: u64,
    /// Pods of the "where the heap goes" table (0: not measured).
    heap_pods: usize,
    /// Only the heap table (`--only-heap`).
    only_heap: bool,
    /// Pods known during the partition run, one of `pods` (0: no partition run).
    partition_pods: usize,
    /// Seconds measured after the last pod's planned kill.
    partition_window: u64,
    /// The pods' shape, one of `realistic::SHAPES` (`--shape`, default `realistic`).
    shape: String,
    /// Also count the idle window with `perf stat` attached to the agent (`--perf`).
    perf: bool,
    /// The API test server without streaming lists (`--no-watch-list`: the WatchList gate off,
    /// as Kubernetes 1.33 ships it), so the pods are listed in pages.
    no_watch_list: bool,
}

fn opts() -> Result<Opts, String> {
    let mut o = Opts {
        bin: PathBuf::new(),
        baseline: None,
        exporter: None,
        pods: vec![0, 110, 1000],
        peer_seconds: 60,
        idle_seconds: 20,
        heap_pods: 1000,
        only_heap: false,
        partition_pods: 1000,
        partition_window: 20,
        shape: "realistic".into(),
        perf: false,
        no_watch_list: false,
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
                    .filter(|n| !n.trim().is_empty())
                    .map(|n| n.trim().parse().map_err(|e| format!("--pods {n}: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--peer-seconds" => {
                o.peer_seconds = value()?.parse().map_err(|e| format!("{a}: {e}"))?
            }
            "--idle-seconds" => {
                o.idle_seconds = value()?.parse().map_err(|e| format!("{a}: {e}"))?
            }
            "--only-heap" => o.only_heap = true,
            "--perf" => o.perf = true,
            "--no-watch-list" => o.no_watch_list = true,
            "--partition-pods" => {
                o.partition_pods = value()?.parse().map_err(|e| format!("{a}: {e}"))?
            }
            "--partition-window" => {
                o.partition_window = value()?.parse().map_err(|e| format!("{a}: {e}"))?
            }
            "--shape" => {
                o.shape = value()?;
                if realistic::shaped_pod(&o.shape, 0, NODE).is_none() {
                    return Err(format!("--shape: one of {:?}", realistic::SHAPES));
                }
            }
            "--heap-pods" => o.heap_pods = value()?.parse().map_err(|e| format!("{a}: {e}"))?,
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

/// Over every thread of the process: nanoseconds on a CPU (`schedstat`, exact where `utime` and
/// `stime` count 10 ms ticks) and voluntary context switches (each a sleep, so one per wake-up).
/// A thread that exits within a window takes its share with it (tokio's blocking threads, after
/// 10 s idle).
fn thread_totals(pid: u32) -> (u64, u64) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0);
    };
    let (mut ns, mut switches) = (0, 0);
    for t in tasks.flatten() {
        let dir = t.path();
        ns += std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
            .unwrap_or(0u64);
        switches += std::fs::read_to_string(dir.join("status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0u64);
    }
    (ns, switches)
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
    format!("{:.2} MiB", kib as f64 / 1024.0)
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

/// The `i`th pod of `shape` on our node (the shape was checked when the options were read).
fn shaped(shape: &str, i: usize) -> Value {
    realistic::shaped_pod(shape, i, NODE).unwrap_or_else(|| realistic::pod(i, NODE))
}

/// Seeds `server` up to `n` realistic pods bound to our node, each written by three managers.
fn seed_pods(server: &apiserver::ApiServer, shape: &str, from: usize, n: usize) {
    for i in from..n {
        let mut pod = realistic::for_create(shaped(shape, i));
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

/// Where the heap goes with `n` realistic pods, through the agent's own code: the watch cache
/// (pods decoded as the pod watch decodes them, `api::slim`, into a reflector store), one list
/// page while it is decoded, the fence's conversion (`agent::fence_task::convert_pods`: the planner's
/// view and each pod's requests and limits) and one state write (`agent::fence_task::persist`). Live
/// bytes from a counting allocator; "transient" is the peak above what was live before the step.
fn where_bytes_go(n: usize, shape: &str) {
    use kube::runtime::{reflector, watcher};
    use nodewarden::agent::{fence_task, quorum::QuorumView};
    use nodewarden::api::slim::SlimPod;

    let page_size = nodewarden::api::watch::PAGE_SIZE as usize;
    let served: Vec<String> = (0..n).map(|i| shaped(shape, i).to_string()).collect();
    let json_bytes: usize = served.iter().map(String::len).sum();
    // (what, bytes, whether it grows with the pods).
    let mut rows: Vec<(String, usize, bool)> = Vec::new();

    // One list page as the API server sends it, decoded into the compact pods.
    let page = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"metadata\":{{\"resourceVersion\":\"1\"}},\"items\":[{}]}}",
        served[..n.min(page_size)].join(",")
    );
    let base = Counting::reset_peak();
    let decoded: Result<kube::core::ObjectList<SlimPod>, _> = serde_json::from_str(&page);
    let page_decode = Counting::peak() - base;
    drop(decoded);
    rows.push((
        format!(
            "one list page of {} pods: body as served ({} B) + its decoding, transient",
            n.min(page_size),
            page.len()
        ),
        page.len() + page_decode,
        false,
    ));
    drop(page);

    let base = Counting::live();
    let mut writer: reflector::store::Writer<SlimPod> = Default::default();
    for (i, text) in served.iter().enumerate() {
        match serde_json::from_str::<SlimPod>(text) {
            Ok(pod) => writer.apply_watcher_event(&watcher::Event::Apply(pod)),
            Err(e) => panic!("realistic pod {i} does not decode as the watch decodes it: {e}"),
        }
    }
    let store = writer.as_reader();
    rows.push((
        "watch cache (compact pods in the reflector store), kept".into(),
        Counting::live() - base,
        true,
    ));

    let base = Counting::reset_peak();
    let mut malformed = Default::default();
    let (pods, resources) = fence_task::convert_pods(&store, &mut malformed);
    let converted = Counting::live() - base;
    let convert_peak = Counting::peak() - base;
    assert_eq!(pods.len(), n, "every realistic pod converts");
    let before = Counting::live();
    let resources_len = resources.len();
    drop(resources);
    let resources_bytes = before - Counting::live();
    rows.push((
        "fence: planner view (`FencePod`s), kept".into(),
        converted - resources_bytes,
        true,
    ));
    rows.push((
        format!("fence: requests and limits of {resources_len} pods, kept"),
        resources_bytes,
        true,
    ));
    rows.push((
        "fence: converting, transient above what it keeps".into(),
        convert_peak - converted,
        true,
    ));
    let (pods, resources) = fence_task::convert_pods(&store, &mut malformed);

    let dir = tempfile::tempdir().expect("tempdir");
    let quorum = QuorumView::default();
    let base = Counting::reset_peak();
    let written = fence_task::persist(
        dir.path(),
        NODE,
        Some(std::time::SystemTime::now()),
        fence_task::stored_pods(&pods, &resources),
        None,
        &Default::default(),
        fence_task::Held {
            fence_events: &[],
            condition_events: &[],
            decided: &[],
            quorum: &quorum,
            cut_off_since: None,
            counted_before: None,
            wall_scale: None,
        },
    );
    let write_peak = Counting::peak() - base;
    if let Err(e) = written {
        panic!("writing the state: {e}");
    }
    let file = std::fs::metadata(dir.path().join(nodewarden::state::STATE_FILE))
        .map(|m| m.len())
        .unwrap_or(0);
    rows.push((
        format!("one state write ({file} B file), transient"),
        write_peak,
        true,
    ));
    drop((pods, resources, store, writer));

    println!(
        "\n## Where the heap goes, {n} pods of shape {shape} ({:.1} KB of JSON each)\n",
        json_bytes as f64 / n.max(1) as f64 / 1000.0
    );
    println!("| what | bytes | per pod |\n|---|---|---|");
    for (what, bytes, per_pod) in rows {
        let each = if per_pod {
            (bytes / n.max(1)).to_string()
        } else {
            "-".to_string()
        };
        println!("| {what} | {bytes} | {each} |");
    }
}

/// One connected run's figures.
struct Connected {
    hwm: u64,
    rss: u64,
    /// CPU seconds per hour while idle, from the threads' schedstat.
    cpu_h: f64,
    /// Wake-ups a second while idle.
    wakes: f64,
    /// Seconds until every pod was known.
    known: f64,
    anon: u64,
    file: u64,
    /// VmHWM after a pod change (one state write) and a relist (the watch's resourceVersion
    /// compacted away: 410, then a full list), and VmRSS then.
    hwm_after_relist: u64,
    rss_after_relist: u64,
    /// RssAnon and RssFile then.
    anon_after_relist: u64,
    file_after_relist: u64,
    /// `perf stat` over the idle window: task-clock in ms and context switches.
    perf: Option<(f64, u64)>,
}

/// `perf stat -e task-clock,context-switches -p PID -- sleep SECS`: the task-clock in ms and the
/// context switches of the process over that window; `None` (with the reason on stderr) when
/// perf is missing or refused.
fn perf_stat(pid: u32, secs: u64) -> Option<(f64, u64)> {
    let out = std::process::Command::new("perf")
        .args(["stat", "-x", ",", "-e", "task-clock,context-switches", "-p"])
        .arg(pid.to_string())
        .args(["--", "sleep"])
        .arg(secs.to_string())
        .output()
        .map_err(|e| eprintln!("footprint: perf: {e}"))
        .ok()?;
    // CSV on stderr: value,unit,event,…
    let text = String::from_utf8_lossy(&out.stderr);
    let field = |event: &str| {
        text.lines().find_map(|l| {
            let cols: Vec<&str> = l.split(',').collect();
            (cols.get(2).is_some_and(|e| e.starts_with(event)))
                .then(|| cols.first().and_then(|v| v.trim().parse::<f64>().ok()))
                .flatten()
        })
    };
    match (field("task-clock"), field("context-switches")) {
        (Some(ms), Some(cs)) => Some((ms, cs as u64)),
        _ => {
            eprintln!("footprint: perf stat gave no figures: {text}");
            None
        }
    }
}

/// One connected run: memory, idle CPU and wake-ups, and how long it took to know every pod.
fn connected(
    o: &Opts,
    server: &apiserver::ApiServer,
    kubeconfig: &Path,
    bin: &Path,
    n: usize,
) -> Connected {
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
    let agent = start_knowing(bin, &config, &dir.path().join("state"), n);
    let known = started.elapsed().as_secs_f64();
    // Settled: the status and the Lease written a few times.
    std::thread::sleep(Duration::from_secs(5));
    let rss = status_kib(agent.pid(), "VmRSS:");
    let (anon, file) = (
        status_kib(agent.pid(), "RssAnon:"),
        status_kib(agent.pid(), "RssFile:"),
    );
    let (ns0, switches0) = thread_totals(agent.pid());
    let t0 = Instant::now();
    let perf = if o.perf {
        perf_stat(agent.pid(), o.idle_seconds)
    } else {
        std::thread::sleep(Duration::from_secs(o.idle_seconds));
        None
    };
    let (ns1, switches1) = thread_totals(agent.pid());
    let secs = t0.elapsed().as_secs_f64();
    let hwm = status_kib(agent.pid(), "VmHWM:");
    if n > 0 {
        relist(server, n);
    }
    let (hwm_after_relist, rss_after_relist) = (
        status_kib(agent.pid(), "VmHWM:"),
        status_kib(agent.pid(), "VmRSS:"),
    );
    let (anon_after_relist, file_after_relist) = (
        status_kib(agent.pid(), "RssAnon:"),
        status_kib(agent.pid(), "RssFile:"),
    );
    agent.stop();
    Connected {
        hwm_after_relist,
        rss_after_relist,
        anon_after_relist,
        file_after_relist,
        hwm,
        rss,
        cpu_h: ns1.saturating_sub(ns0) as f64 / 1e9 / secs * 3600.0,
        wakes: switches1.saturating_sub(switches0) as f64 / secs,
        known,
        anon,
        file,
        perf,
    }
}

/// One pod changed (a toleration of the unreachable taint added, so the fence's view and the
/// state file change) while the watches are down and the change history compacted: the agent's
/// pod watch is refused once (503, as from an API server starting), then resumes at a
/// resourceVersion the server no longer has (410) and lists every pod again (in pages, or by a
/// streaming list). Returns once the list was served and 5 s more passed
/// (bounded: 60 s for the list).
fn relist(server: &apiserver::ApiServer, n: usize) {
    let name = shaped("realistic", n - 1)["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The watch may not come back until the history is gone (else it would see the change).
    let watch = ("WATCH", "/api/v1/pods");
    server
        .faults()
        .fail_next(watch, u32::MAX, apiserver::Fault::Status503);
    server.clear_requests();
    server.drop_watches();
    server
        .update_pod_as("kube-controller-manager", "shop", &name, |o| {
            if let Some(ts) = o["spec"]["tolerations"].as_array_mut() {
                // One the fence keeps (it may tolerate the unreachable taint), so the state
                // file is written again; a later one never decides the plan.
                ts.push(serde_json::json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1000 + ts.len()}));
            }
        })
        .unwrap_or_else(|e| panic!("changing pod {name}: {e}"));
    // The agent's watch, re-opened at once, is refused before the history goes, every run: a
    // relist with or without a 503 in front of it (kube's client retries one, with a backoff)
    // ran different code, and the peak after the relist differed by the pages of that code
    // (0.2 MiB of the binary, as the agent's reconnect won or lost the race with this thread).
    pod_request_seen(
        server,
        "the agent's pod watch refused (503)",
        Duration::from_secs(30),
        |r| r.param("watch") == Some("true") && r.status == Some(503),
    );
    server.compact(0);
    server.faults().clear();
    // A list page, or a streaming list (a watch that sends every pod first).
    pod_request_seen(
        server,
        "the agent listing the pods again",
        Duration::from_secs(60),
        |r| {
            (r.param("watch").is_none() || r.param("sendInitialEvents") == Some("true"))
                && r.status == Some(200)
        },
    );
    std::thread::sleep(Duration::from_secs(5));
}

/// Waits (bounded by `timeout`) until the API server has recorded a GET of the pods that `test`
/// accepts.
fn pod_request_seen(
    server: &apiserver::ApiServer,
    what: &str,
    timeout: Duration,
    test: impl Fn(&apiserver::Recorded) -> bool,
) {
    wait_until(what, timeout, || {
        server
            .requests()
            .iter()
            .any(|r| r.method == "GET" && r.path.ends_with("/pods") && test(r))
    });
}

/// The counter `nodewarden_fence_actions_total{action="<action>"}`, 0 when absent.
fn fence_actions(port: u16, action: &str) -> Option<u64> {
    let body = http_get(port, "/metrics")?;
    let prefix = format!("nodewarden_fence_actions_total{{action=\"{action}\"}} ");
    Some(
        String::from_utf8_lossy(&body)
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map_or(0, |v| v as u64),
    )
}

/// Shortens the `node.kubernetes.io/unreachable` toleration of the first `n` pods to 1–10 s (as
/// kube-controller-manager would write it), so a partition's deadlines fall within a minute.
fn shorten_tolerations(server: &apiserver::ApiServer, n: usize) {
    for i in 0..n {
        let pod = realistic::pod(i, NODE);
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        server
            .update_pod_as("kube-controller-manager", "shop", name, |o| {
                if let Some(ts) = o["spec"]["tolerations"].as_array_mut() {
                    for t in ts {
                        if t["key"] == "node.kubernetes.io/unreachable" {
                            t["tolerationSeconds"] = Value::from(1 + (i % 10) as i64);
                        }
                    }
                }
            })
            .unwrap_or_else(|e| panic!("shortening pod {i}'s toleration: {e}"));
    }
}

/// A partition with `n` pods known: the agent in dry-run at short settings (Lease 8 s, so
/// renewals every 2 s; cut off after 3 s without an answer; nodeMonitorGracePeriod 6 s; no peers
/// needed), connected until every pod is on disk; then the API test server stops answering
/// (every request black-holed, the watches ended) until the fence has planned and "would kill"
/// every pod, and `window` more seconds. Returns (VmHWM before the cut, VmHWM at the end, VmRSS
/// at the end, CPU seconds per hour from the cut to the end, seconds from the cut until every
/// pod was "killed", the kills counted).
fn partition(
    server: &apiserver::ApiServer,
    kubeconfig: &Path,
    bin: &Path,
    n: usize,
    window: u64,
) -> (u64, u64, u64, f64, f64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "nodeName = \"{NODE}\"\nkubeconfig = \"{}\"\nhealthAddress = \"127.0.0.1:{port}\"\n\
             stateDirectory = \"{}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             nodeLeaseDurationSeconds = 8\n\
             [logging]\ntarget = \"stderr\"\nlevel = \"warn\"\n\
             [fence]\nmode = \"dry-run\"\nunreachableAfter = \"3s\"\nnodeMonitorGracePeriod = \"6s\"\n\
             safetyMargin = \"1s\"\n[peers]\nwithoutPeers = \"enforce\"\n",
            kubeconfig.display(),
            dir.path().join("state").display()
        ),
    )
    .expect("config");
    let agent = start_knowing(bin, &config, &dir.path().join("state"), n);
    std::thread::sleep(Duration::from_secs(3));
    let hwm_before = status_kib(agent.pid(), "VmHWM:");
    let cpu0 = cpu_seconds(agent.pid());
    let cut = Instant::now();
    for method in ["GET", "PUT", "PATCH", "POST", "DELETE"] {
        for len in 1..=10 {
            let pattern = vec!["*"; len].join("/");
            server.faults().black_hole((method, pattern.as_str()), true);
        }
    }
    server.drop_watches();
    wait_until(
        &format!("the fence planning to kill {n} pods"),
        Duration::from_secs(180),
        || fence_actions(port, "would_kill").unwrap_or(0) >= n as u64,
    );
    let all_killed = cut.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_secs(window));
    let cpu = cpu_seconds(agent.pid()) - cpu0;
    let per_hour = cpu / cut.elapsed().as_secs_f64() * 3600.0;
    let (hwm, rss) = (
        status_kib(agent.pid(), "VmHWM:"),
        status_kib(agent.pid(), "VmRSS:"),
    );
    let kills = fence_actions(port, "would_kill").unwrap_or(0);
    agent.stop();
    server.faults().clear();
    (hwm_before, hwm, rss, per_hour, all_killed, kills)
}

/// Starts the agent on `config` and waits (bounded) until its state file in `state_dir` holds
/// `n` pods.
fn start_knowing(bin: &Path, config: &Path, state_dir: &Path, n: usize) -> Started {
    let agent = Started::spawn(
        Command::new(bin)
            .args(["run", "--config"])
            .arg(config)
            .stderr(Stdio::null()),
    );
    let state = state_dir.join("state.json");
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
    agent
}

fn main() {
    let o = match opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("footprint: {e}");
            std::process::exit(2);
        }
    };
    if o.heap_pods > 0 {
        where_bytes_go(o.heap_pods, &o.shape);
    }
    if o.only_heap {
        return;
    }
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
    server.set_watch_list(!o.no_watch_list);
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
        "\n## Connected, dry-run, pods of shape {}, idle CPU over {} s\n",
        o.shape, o.idle_seconds
    );
    println!(
        "| pods | served JSON per pod | build | VmHWM | steady VmRSS | of which heap and stacks (RssAnon) / the binary's pages (RssFile) | idle CPU | wake-ups | all pods known after | VmHWM after a pod change (state write) and a relist | VmRSS then (RssAnon / RssFile) |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let mut seeded = 0;
    let mut partitions = Vec::new();
    let mut perf_rows = Vec::new();
    for &n in &o.pods {
        let t = Instant::now();
        seed_pods(&server, &o.shape, seeded, n);
        seeded = seeded.max(n);
        let per_pod = {
            let pods = server.pods();
            let total: usize = pods.iter().map(|p| p.to_string().len()).sum();
            total / pods.len().max(1)
        };
        eprintln!("seeded {n} pods in {:.1} s", t.elapsed().as_secs_f64());
        for (label, bin) in &builds {
            let c = connected(&o, &server, &kubeconfig, bin, n);
            println!(
                "| {n} | {} | {label} | {} | {} | {} / {} | {:.2} s/h ({:.3}% of a core) | {:.1}/s | {:.1} s | {} | {} ({} / {}) |",
                if n == 0 {
                    "-".to_string()
                } else {
                    format!("{:.1} KB", per_pod as f64 / 1000.0)
                },
                mib(c.hwm),
                mib(c.rss),
                mib(c.anon),
                mib(c.file),
                c.cpu_h,
                c.cpu_h / 36.0,
                c.wakes,
                c.known,
                mib(c.hwm_after_relist),
                mib(c.rss_after_relist),
                mib(c.anon_after_relist),
                mib(c.file_after_relist)
            );
            if let Some((ms, switches)) = c.perf {
                let secs = o.idle_seconds as f64;
                perf_rows.push(format!(
                    "| {n} | {label} | {ms:.1} ms ({:.4}% of a core) | {switches} ({:.2}/s) |",
                    ms / 1000.0 / secs * 100.0,
                    switches as f64 / secs
                ));
            }
        }
        if n > 0 && n == o.partition_pods {
            shorten_tolerations(&server, n);
            for (label, bin) in &builds {
                partitions.push((
                    n,
                    *label,
                    partition(&server, &kubeconfig, bin, n, o.partition_window),
                ));
            }
        }
    }

    if !perf_rows.is_empty() {
        println!(
            "\n`perf stat -e task-clock,context-switches -p PID -- sleep {}` over the same windows:\n",
            o.idle_seconds
        );
        println!("| pods | build | task-clock | context switches |\n|---|---|---|---|");
        for r in &perf_rows {
            println!("{r}");
        }
    }

    if !partitions.is_empty() {
        println!(
            "\n## A partition with pods fenced, dry-run (Lease 8 s, unreachableAfter 3 s, nodeMonitorGracePeriod 6 s, tolerations of the unreachable taint 1–10 s), measured from the cut to {} s after the last pod's \"would kill\"\n",
            o.partition_window
        );
        println!(
            "| pods | build | every pod \"killed\" after the cut | kills counted | CPU during the partition | VmHWM before the cut | VmHWM at the end | VmRSS at the end |\n|---|---|---|---|---|---|---|---|"
        );
        for (n, label, (hwm0, hwm, rss, cpu_h, after, kills)) in partitions {
            println!(
                "| {n} | {label} | {after:.1} s | {kills} | {cpu_h:.1} s/h ({:.2}% of a core) | {} | {} | {} |",
                cpu_h / 36.0,
                mib(hwm0),
                mib(hwm),
                mib(rss)
            );
        }
    }
}
