//! The systemd notification protocol in connected mode, end to end: the real binary against the
//! API test server on loopback, with a `NOTIFY_SOCKET` of ours and a 1 s watchdog. READY follows
//! the first sample, and WATCHDOG=1 keeps coming at least twice per interval while the API server
//! refuses connections and while it accepts them but never answers: the watchdog says the
//! sampling loop is alive, never that the control plane is (src/agent/sampling.rs pings on every
//! wake-up and never waits on the API server). STATUS= says when the API server is unreachable
//! and goes back to the connected line when it answers again.

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::apiserver::{ApiServer, Loopback};
use support::{Agent, free_port, write_config};

const NODE: &str = "n1";
/// `WATCHDOG_USEC` as systemd would set it for `WatchdogSec=1s`.
const WATCHDOG: Duration = Duration::from_secs(1);
/// The largest gap allowed between two pings: half the interval (the loop's wake period) plus
/// scheduling slack on a loaded 2-core machine — well inside the interval systemd enforces.
const MAX_GAP: Duration = Duration::from_millis(700);
/// How long each outage lasts after the agent has noticed it.
const OUTAGE_NOTICED_FOR: Duration = Duration::from_secs(3);

/// Datagrams received on our notification socket, each with the moment it arrived, collected by a
/// thread of their own until dropped.
struct Notifications {
    path: PathBuf,
    received: Arc<Mutex<Vec<(Instant, String)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Notifications {
    fn listen(dir: &Path) -> Notifications {
        let path = dir.join("notify.sock");
        let socket = UnixDatagram::bind(&path).expect("bind notify socket");
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .expect("read timeout");
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (received, stop) = (received.clone(), stop.clone());
            move || {
                let started = Instant::now();
                let mut buf = [0u8; 4096];
                // Bounded: the test ends well within this.
                while !stop.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(170) {
                    if let Ok(n) = socket.recv(&mut buf) {
                        let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                        received
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((Instant::now(), text));
                    }
                }
            }
        });
        Notifications {
            path,
            received,
            stop,
            thread: Some(thread),
        }
    }

    fn all(&self) -> Vec<(Instant, String)> {
        self.received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Arrival times of the datagrams carrying the line `line` (e.g. "WATCHDOG=1").
    fn times_of(&self, line: &str) -> Vec<Instant> {
        self.all()
            .into_iter()
            .filter(|(_, m)| m.lines().any(|l| l == line))
            .map(|(at, _)| at)
            .collect()
    }

    /// Waits up to `timeout` for a datagram carrying the line `line`; returns that datagram.
    fn wait_for(&self, line: &str, timeout: Duration) -> Option<(Instant, String)> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(found) = self
                .all()
                .into_iter()
                .find(|(_, m)| m.lines().any(|l| l == line))
            {
                return Some(found);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Every `STATUS=` text sent so far, in order.
    fn statuses(&self) -> Vec<String> {
        self.all()
            .iter()
            .flat_map(|(_, m)| {
                m.lines()
                    .filter_map(|l| l.strip_prefix("STATUS="))
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

impl Drop for Notifications {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the API server's address does.
enum Endpoint {
    /// The API test server answers HTTP (held for its drop, which closes it).
    Serving { _http: Loopback },
    /// Nothing listens: connections are refused.
    Refusing,
    /// A listener that never accepts: the kernel completes the handshake, nobody ever reads the
    /// request or answers it (a black hole, as behind a stateful firewall dropping replies).
    Silent { _listener: TcpListener },
}

/// The API test server on a fixed loopback address, served from a runtime thread of its own, so
/// the test can take its HTTP side away and bring it back on the same address.
struct Api {
    server: ApiServer,
    addr: SocketAddr,
    runtime: tokio::runtime::Handle,
    endpoint: Endpoint,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Api {
    fn start(dir: &Path) -> (Api, PathBuf) {
        let server = ApiServer::new();
        server.create_node(ApiServer::node_json(NODE));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let handle = runtime.handle().clone();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let _ = stop_rx.await;
            });
        });
        let lb = {
            let _entered = handle.enter();
            server.serve_loopback()
        };
        let kubeconfig = lb.write_kubeconfig(dir);
        let api = Api {
            server,
            addr: lb.addr(),
            runtime: handle,
            endpoint: Endpoint::Serving { _http: lb },
            stop: Some(stop_tx),
            thread: Some(thread),
        };
        (api, kubeconfig)
    }

    /// Repeats `bind` until the address is free again (the previous listener is closed by the
    /// runtime thread, a moment after we let go of it).
    fn rebind<T>(&self, mut bind: impl FnMut() -> std::io::Result<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match bind() {
                Ok(t) => return t,
                Err(e) if e.kind() == ErrorKind::AddrInUse && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("rebind {}: {e}", self.addr),
            }
        }
    }

    /// Stops serving: the listener closes and every open connection with it.
    fn refuse(&mut self) {
        self.endpoint = Endpoint::Refusing;
        // Bounded wait until a connection really is refused.
        let deadline = Instant::now() + Duration::from_secs(5);
        while TcpStream::connect_timeout(&self.addr, Duration::from_millis(200)).is_ok() {
            assert!(
                Instant::now() < deadline,
                "{} still accepts connections",
                self.addr
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops serving and leaves a listener that never accepts on the address.
    fn silence(&mut self) {
        self.endpoint = Endpoint::Refusing;
        let addr = self.addr;
        let silent = self.rebind(|| TcpListener::bind(addr));
        self.endpoint = Endpoint::Silent { _listener: silent };
        // Proof that it is a black hole: a connection opens, a request gets no answer.
        let mut probe =
            TcpStream::connect_timeout(&addr, Duration::from_secs(1)).expect("connect to silence");
        probe
            .set_read_timeout(Some(Duration::from_millis(300)))
            .expect("read timeout");
        probe
            .write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .expect("send probe");
        let mut byte = [0u8; 1];
        match probe.read(&mut byte) {
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            other => panic!("the silent listener answered: {other:?}"),
        }
    }

    /// Serves HTTP again on the same address.
    fn restore(&mut self) {
        self.endpoint = Endpoint::Refusing;
        let _entered = self.runtime.enter();
        let (server, addr) = (self.server.clone(), self.addr);
        let lb = self.rebind(|| server.serve_on(addr));
        self.endpoint = Endpoint::Serving { _http: lb };
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        self.endpoint = Endpoint::Refusing;
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The agent's /metrics text.
fn metrics(port: u16) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    if write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return String::new();
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// Polls /metrics until it contains `line` (bounded by `timeout`).
fn wait_for_metric(port: u16, line: &str, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        let text = metrics(port);
        if text.lines().any(|l| l == line) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(text);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A log line containing every needle: one already read, or the next within `timeout`.
fn logged(agent: &mut Agent, needles: &[&str], timeout: Duration) -> bool {
    agent
        .seen
        .iter()
        .any(|l| needles.iter().all(|n| l.contains(n)))
        || agent.wait_for(needles, timeout).is_some()
}

/// Checks that pings kept coming within `[from, to]`: no gap over `MAX_GAP`, counting from `from`
/// to the first ping and from the last ping to `to` (so a silence at either end fails too).
fn assert_pinged_throughout(pings: &[Instant], from: Instant, to: Instant, during: &str) {
    let inside: Vec<Instant> = pings
        .iter()
        .copied()
        .filter(|t| *t >= from && *t <= to)
        .collect();
    let offsets: Vec<Duration> = inside.iter().map(|t| *t - from).collect();
    let mut edges = vec![from];
    edges.extend(&inside);
    edges.push(to);
    let widest = edges
        .windows(2)
        .map(|p| p[1] - p[0])
        .max()
        .unwrap_or_default();
    eprintln!(
        "{during}: {} pings in {:?}, widest gap {widest:?}",
        inside.len(),
        to - from
    );
    for pair in edges.windows(2) {
        assert!(
            pair[1] - pair[0] <= MAX_GAP,
            "{during}: a watchdog gap of {:?} (at {:?} into {:?}) exceeds half the interval plus \
             slack; pings at {offsets:?}",
            pair[1] - pair[0],
            pair[0] - from,
            to - from
        );
    }
    assert!(
        !inside.is_empty(),
        "{during}: no ping at all in {:?}",
        to - from
    );
}

#[derive(Clone, Copy, Debug)]
enum Outage {
    /// The listener is closed: every request fails at once.
    Refused,
    /// Connections open and requests hang until the agent's request timeout.
    BlackHole,
}

#[test]
fn watchdog_pings_continue_while_the_api_server_refuses_or_ignores_requests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let notifications = Notifications::listen(dir.path());
    let (mut api, kubeconfig) = Api::start(dir.path());
    let port = free_port();
    // A 10 s update period but a 1 s watchdog: the loop wakes every 500 ms for the watchdog alone.
    // A 4 s Lease renews every second, so a refused API server is noticed within about a second.
    let config = write_config(
        dir.path(),
        &format!(
            "nodeName = \"{NODE}\"\nkubeconfig = \"{kc}\"\nhealthAddress = \"127.0.0.1:{port}\"\n\
             stateDirectory = \"{state}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             nodeStatusUpdateFrequency = \"10s\"\nnodeLeaseDurationSeconds = 4\n\
             [logging]\ntarget = \"stderr\"\nlevel = \"info\"\n",
            kc = kubeconfig.display(),
            state = dir.path().join("state").display(),
        ),
    );
    let socket_env = notifications.path.display().to_string();
    let usec = WATCHDOG.as_micros().to_string();
    let mut agent = Agent::start(
        &config,
        &[
            ("NOTIFY_SOCKET", socket_env.as_str()),
            ("WATCHDOG_USEC", usec.as_str()),
        ],
    );

    // READY once the first sample is taken, with a status saying the mode and the conditions.
    let (_, ready) = notifications
        .wait_for("READY=1", Duration::from_secs(15))
        .unwrap_or_else(|| {
            panic!(
                "no READY=1: {:?}\n{}",
                notifications.all(),
                agent.drained_dump()
            )
        });
    assert!(
        ready.contains("STATUS=connected: MemoryPressure="),
        "READY carries the connected mode and the conditions: {ready:?}"
    );
    assert!(
        logged(
            &mut agent,
            &["condition=MemoryPressure"],
            Duration::from_secs(2)
        ),
        "READY follows the first sample's records:\n{}",
        agent.drained_dump()
    );
    assert!(
        logged(
            &mut agent,
            &["API server reachable"],
            Duration::from_secs(15)
        ),
        "the agent never reached the API server:\n{}",
        agent.drained_dump()
    );
    if let Err(text) = wait_for_metric(port, "nodewarden_api_reachable 1", Duration::from_secs(10))
    {
        panic!("/metrics never said reachable before the outage:\n{text}");
    }

    for outage in [Outage::Refused, Outage::BlackHole] {
        let from = Instant::now();
        match outage {
            Outage::Refused => api.refuse(),
            Outage::BlackHole => api.silence(),
        }
        // A refusal is noticed at the next renewal; a black hole only when a request times out
        // (10 s, the agent's request timeout).
        let (line, noticed_at) = agent
            .wait_for(&["API server unreachable"], Duration::from_secs(25))
            .unwrap_or_else(|| {
                panic!(
                    "{outage:?}: the agent never said the API server is unreachable:\n{}",
                    agent.drained_dump()
                )
            });
        assert!(line.contains("reachable=false"), "{line}");
        eprintln!("{outage:?}: noticed after {:?}: {line}", noticed_at - from);
        if let Err(text) =
            wait_for_metric(port, "nodewarden_api_reachable 0", Duration::from_secs(5))
        {
            panic!("{outage:?}: /metrics never said unreachable:\n{text}");
        }
        // Keep the API server away for a while after the agent knows it is gone: pings gated on
        // reachability would stop here.
        std::thread::sleep(
            (noticed_at + OUTAGE_NOTICED_FOR).saturating_duration_since(Instant::now()),
        );
        // `systemctl status` says so: STATUS= changes as soon as the loop sees it.
        let statuses = notifications.statuses();
        assert!(
            statuses
                .last()
                .is_some_and(|s| s.starts_with("connected, API server unreachable: ")),
            "{outage:?}: STATUS does not say the API server is unreachable: {statuses:?}"
        );
        let to = Instant::now();
        api.restore();
        assert_pinged_throughout(
            &notifications.times_of("WATCHDOG=1"),
            from,
            to,
            &format!("{outage:?} outage"),
        );
        assert!(
            agent
                .wait_for(&["API server reachable again"], Duration::from_secs(20))
                .is_some(),
            "{outage:?}: the agent never reached the API server again:\n{}",
            agent.drained_dump()
        );
        if let Err(text) =
            wait_for_metric(port, "nodewarden_api_reachable 1", Duration::from_secs(10))
        {
            panic!("{outage:?}: /metrics never said reachable again:\n{text}");
        }
        // Within a few loop wake-ups, STATUS is back to the connected line.
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline
            && !notifications
                .statuses()
                .last()
                .is_some_and(|s| s.starts_with("connected: "))
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        let statuses = notifications.statuses();
        assert!(
            statuses
                .last()
                .is_some_and(|s| s.starts_with("connected: ")),
            "{outage:?}: STATUS still says unreachable after the heal: {statuses:?}"
        );
    }

    // And throughout the run, from the first ping to now.
    let pings = notifications.times_of("WATCHDOG=1");
    let first = *pings.first().expect("pinged");
    assert_pinged_throughout(&pings, first, Instant::now(), "the whole run");

    let (_, status) = agent
        .terminate(Duration::from_secs(5))
        .expect("agent exits on SIGTERM");
    assert!(status.success(), "{status}\n{}", agent.drained_dump());
    assert!(
        notifications
            .wait_for("STOPPING=1", Duration::from_secs(2))
            .is_some(),
        "STOPPING=1 is sent on shutdown"
    );
}
