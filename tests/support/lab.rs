//! A five-node lab for the peer quorum end to end: real agent processes, each in a network
//! namespace of its own with two links — one to an `api` bridge, one to a `peer` bridge — and the
//! API test server listening on the `api` bridge's address in the host namespace. Every agent has
//! its own state directory, its own cgroup sandbox with two fake pods (real processes) and its own
//! Node object; they all share one peer key.
//!
//! Partitions are made with `ip` only, on links this lab created: a node loses the API when its
//! port on the `api` bridge goes down, every link when both its ports do, and everyone loses the
//! API when the `api` bridge itself goes down. Packets are dropped, not refused, so connections
//! hang as in a real partition.
//!
//! Addressing: one lab id `L` per lab, taken by creating the bridge `nwq<L>a` (the kernel refuses
//! a name that exists, so labs of parallel test processes never share an id). The `api` subnet is
//! 10.214.L.0/24, the `peer` subnet 10.215.L.0/24; node `i` is `.i` on both, the host is `.254`.
//! The host has an address on the `peer` bridge too, so the test itself can talk to the peer
//! endpoints and the health servers, and play fake peers at extra host addresses.
//!
//! Everything is torn down on drop: agents killed (by PID), pods killed (by the sandboxes),
//! namespaces (and with them the veth pairs) and bridges deleted.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use nodewarden::core::qos::QosClass;
use nodewarden::terminate::{CgroupDriver, CgroupVersion};
use serde_json::{Value, json};

use super::apiserver::ApiServer;
use super::cgroup::CgroupSandbox;
use super::{Agent, field};

/// The peer endpoint's port on every node.
pub const PEER_PORT: u16 = 9843;
/// The health server's (`/metrics`) port on every node, on its peer-bridge address.
pub const HEALTH_PORT: u16 = 9842;
/// `nodeMonitorGracePeriod` of every agent. Every agent counts no `nodeMonitorPeriod` ("0s"): the
/// tests' bounds count the taint from the end of this grace period.
pub const GRACE: Duration = Duration::from_secs(4);
/// `[fence] safetyMargin`.
pub const MARGIN: Duration = Duration::from_millis(500);
/// `[fence] gracePeriodCap` ([`LabSpec::grace_cap`]).
pub const CAP: Duration = Duration::from_secs(1);
/// The agents' `[fence] unreachableAfter` ([`LabSpec::unreachable_after`]).
pub const UNREACHABLE_AFTER: Duration = Duration::from_millis(2500);
/// The agent's API request timeout: min(nodeStatusUpdateFrequency, lease duration) = 1 s here.
pub const API_REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
/// `[peers] timeout`.
pub const PEER_TIMEOUT: Duration = Duration::from_millis(500);
/// `[peers] interval`.
pub const PEER_INTERVAL: Duration = Duration::from_secs(1);

/// Runs `ip` and fails the test when it fails.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `ip` during teardown, where a failure is only worth a warning.
fn ip_quiet(args: &[&str]) {
    if let Ok(out) = Command::new("ip").args(args).output()
        && !out.status.success()
    {
        eprintln!(
            "warning: ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
}

/// The API test server served on `addr` from a thread of its own.
pub struct Server {
    pub api: ApiServer,
    pub kubeconfig: PathBuf,
    /// Where it listens.
    pub addr: SocketAddr,
    /// A second address it listens on, when asked for: the one a node's kubelet reaches it by
    /// (`LabSpec::kubelet_server`).
    pub also: Option<SocketAddr>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Served on `addr` (its kubeconfig names it) and, when given, on `also` too.
    pub fn start(addr: SocketAddr, also: Option<SocketAddr>, dir: &Path) -> Server {
        let api = ApiServer::new();
        let (tx, rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = api.clone();
        let dir = dir.to_path_buf();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let lb = server
                    .serve_on(addr)
                    .expect("bind on the api bridge's address");
                let second = also.map(|a| {
                    server
                        .serve_on(a)
                        .expect("bind on the api bridge's second address")
                });
                let _ = tx.send((
                    lb.write_kubeconfig(&dir),
                    lb.addr(),
                    second.as_ref().map(|s| s.addr()),
                ));
                let _ = stop_rx.await;
                drop(second);
                drop(lb);
            });
        });
        let (kubeconfig, addr, also) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("server started");
        Server {
            api,
            kubeconfig,
            addr,
            also,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The PIDs listed in a cgroup tree's `cgroup.procs` files.
fn tree_pids(dir: &Path) -> Vec<String> {
    let mut pids = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if let Ok(text) = std::fs::read_to_string(d.join("cgroup.procs")) {
            pids.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string),
            );
        }
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(e.path());
                }
            }
        }
    }
    pids
}

/// Number of processes in a cgroup tree (0: the pod is stopped).
pub fn pod_processes(dir: &Path) -> usize {
    tree_pids(dir).len()
}

/// Processes in a cgroup tree that have not exited (zombies awaiting the test's reaping are
/// gone as far as the pod is concerned).
pub fn live_processes(dir: &Path) -> usize {
    tree_pids(dir)
        .iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .and_then(|(_, rest)| rest.trim_start().chars().next())
                })
                .is_some_and(|state| state != 'Z')
        })
        .count()
}

/// One fake pod of a node: its Pod object's name and its cgroup.
pub struct LabPod {
    /// `<node>-short` or `<node>-forever`.
    pub name: String,
    /// Its unreachable `tolerationSeconds`; `None` tolerates forever (never fenced).
    pub toleration: Option<Duration>,
    /// The pod cgroup in the real hierarchy.
    pub dir: PathBuf,
}

impl LabPod {
    /// Whether any of its processes is still running.
    pub fn alive(&self) -> bool {
        pod_processes(&self.dir) > 0
    }
}

/// One node of the lab.
pub struct LabNode {
    /// `n1` … `n5`: the Node name.
    pub name: String,
    /// The network namespace the agent runs in.
    pub netns: String,
    /// Host end of its link to the `api` bridge.
    api_port: String,
    /// Host end of its link to the `peer` bridge.
    peer_port: String,
    pub api_ip: Ipv4Addr,
    pub peer_ip: Ipv4Addr,
    /// Its files: config, state directory.
    pub dir: PathBuf,
    pub config: PathBuf,
    pub state: PathBuf,
    pub pods: Vec<LabPod>,
    pub agent: Option<Agent>,
    sandbox: CgroupSandbox,
}

impl LabNode {
    /// The prefix that runs a command in this node's namespace (mounts untouched, so the
    /// host's cgroup hierarchy stays visible).
    pub fn enter(&self) -> Vec<String> {
        vec![
            "nsenter".into(),
            format!("--net=/run/netns/{}", self.netns),
            "--".into(),
        ]
    }

    /// Its peer endpoint.
    pub fn peer_addr(&self) -> SocketAddrV4 {
        SocketAddrV4::new(self.peer_ip, PEER_PORT)
    }

    /// Its health server (`/metrics`).
    pub fn health_addr(&self) -> SocketAddrV4 {
        SocketAddrV4::new(self.peer_ip, HEALTH_PORT)
    }

    pub fn pod(&self, suffix: &str) -> &LabPod {
        let name = format!("{}-{suffix}", self.name);
        self.pods
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("{} has no pod {name}", self.name))
    }

    pub fn agent(&mut self) -> &mut Agent {
        let name = self.name.clone();
        self.agent
            .as_mut()
            .unwrap_or_else(|| panic!("{name}: agent not running"))
    }

    /// Starts (or restarts) the agent in the namespace.
    pub fn start_agent(&mut self) {
        self.agent = Some(Agent::start_in(&self.enter(), &self.config, &[]));
    }

    /// SIGKILL to the agent, by PID.
    pub fn kill_agent(&mut self) {
        if let Some(mut a) = self.agent.take() {
            a.kill_hard();
        }
    }

    /// How many pods the agent has written to its state file.
    pub fn pods_on_disk(&self) -> usize {
        std::fs::read(self.state.join("state.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["pods"].as_array().map(|a| a.len()))
            .unwrap_or(0)
    }

    /// Reaps pod processes that exited (they are children of the test).
    pub fn reap(&mut self) {
        self.sandbox.reap();
    }

    /// Every log line of the agent so far (drains what is pending).
    pub fn log(&mut self) -> String {
        match self.agent.as_mut() {
            Some(a) => a.drained_dump(),
            None => String::new(),
        }
    }
}

/// How the lab is set up.
#[derive(Clone, Debug)]
pub struct LabSpec {
    /// Number of nodes.
    pub nodes: usize,
    /// The `tolerationSeconds` of each node's `-short` pod.
    pub toleration: Duration,
    /// Whether the agents get a `[peers]` table (the quorum); without it they fence alone.
    pub peers: bool,
    /// `(asker, peer, host octet)`: in `asker`'s static list, `peer` is listed at
    /// 10.215.L.<octet>:9843, an extra address of the host on the peer bridge, where the test can
    /// run a relay or an impostor. Node numbers are 1-based.
    pub redirects: Vec<(usize, usize, u8)>,
    /// Node `i`'s zone label is `zones[i - 1]`; nodes past the list's end are in `zone-a`.
    pub zones: Vec<&'static str>,
    /// Nodes (1-based) labelled `node.kubernetes.io/exclude-disruption`.
    pub excluded: Vec<usize>,
    /// Nodes (1-based) whose fence runs in `dry-run` mode; the others enforce.
    pub dry_run: Vec<usize>,
    /// The agents' `[peers] interval`: [`PEER_INTERVAL`] unless a test needs rounds further apart.
    pub peer_interval: Duration,
    /// The agents' `[fence] gracePeriodCap`: [`CAP`] unless a test needs SIGTERMs further ahead
    /// of their kills.
    pub grace_cap: Duration,
    /// The agents' `[fence] unreachableAfter`: [`UNREACHABLE_AFTER`] unless a test needs peers
    /// that say they reach the API server for longer after their last contact.
    pub unreachable_after: Duration,
    /// The API server listens on a second address of the host, 10.214.L.253, which every agent
    /// is told is its kubelet's (`[fence] kubeletServer`): [`Lab::cut_agent_path`] cuts the
    /// agent's own path (the kubeconfig's address) and leaves that one.
    pub kubelet_server: bool,
    /// The agents' `[fence] nodeMonitorPeriod`: zero (the taint counted from the grace period's
    /// end, [`GRACE`]) unless a test needs the rules that take a monitor period longer than a
    /// round and the peer reader's second (docs/fence.md §5, *Judged into a partial
    /// disruption*).
    pub monitor_period: Duration,
}

impl LabSpec {
    /// The zone of node `i` (1-based).
    pub fn zone(&self, i: usize) -> &'static str {
        self.zones.get(i - 1).copied().unwrap_or("zone-a")
    }
}

impl Default for LabSpec {
    fn default() -> Self {
        LabSpec {
            nodes: 5,
            toleration: Duration::from_secs(2),
            peers: true,
            redirects: Vec::new(),
            zones: Vec::new(),
            excluded: Vec::new(),
            dry_run: Vec::new(),
            peer_interval: PEER_INTERVAL,
            grace_cap: CAP,
            unreachable_after: UNREACHABLE_AFTER,
            kubelet_server: false,
            monitor_period: Duration::ZERO,
        }
    }
}

/// The lab: bridges, nodes, the API server.
pub struct Lab {
    /// The lab id `L` (third octet of both subnets).
    pub id: u8,
    api_bridge: String,
    peer_bridge: String,
    pub nodes: Vec<LabNode>,
    /// How many nodes the spec asked for: teardown removes their links and namespaces by name
    /// even when building stopped half way.
    planned: usize,
    pub server: Server,
    /// The shared peer key file (48 random bytes).
    pub key_file: PathBuf,
    pub dir: tempfile::TempDir,
}

/// Picks a free lab id by creating the `api` bridge: the kernel refuses an existing name, so two
/// test processes never get the same id.
fn take_lab_id() -> (u8, String) {
    let start = (std::process::id() % 240) as u16;
    for k in 0..240u16 {
        let id = ((start + k) % 240 + 1) as u8;
        let name = format!("nwq{id}a");
        // nf_call_iptables 0: a host whose br_netfilter filters bridged frames must not decide
        // which of our packets pass.
        let out = Command::new("ip")
            .args([
                "link",
                "add",
                &name,
                "type",
                "bridge",
                "nf_call_iptables",
                "0",
            ])
            .output()
            .expect("run ip");
        if out.status.success() {
            return (id, name);
        }
    }
    panic!("no free lab id: 240 bridges named nwq<id>a exist");
}

fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    let mut f = std::fs::File::open("/dev/urandom").expect("open /dev/urandom");
    f.read_exact(&mut buf).expect("read /dev/urandom");
    buf
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `n` random bytes as hex.
pub fn random_hex(n: usize) -> String {
    hex(&random_bytes(n))
}

impl Lab {
    /// Builds the network, the API server, the Node and Pod objects, the pods' processes and
    /// every agent's configuration; starts no agent (see [`start_all`](Self::start_all)).
    pub fn build(spec: &LabSpec) -> Lab {
        let (id, api_bridge) = take_lab_id();
        let peer_bridge = format!("nwq{id}p");
        let dir = tempfile::tempdir().expect("tempdir");
        // From here on the Lab owns what exists, so a failing step still tears it down.
        let mut lab = Lab {
            id,
            api_bridge: api_bridge.clone(),
            peer_bridge: peer_bridge.clone(),
            nodes: Vec::new(),
            planned: spec.nodes,
            server: Server {
                api: ApiServer::new(),
                kubeconfig: PathBuf::new(),
                addr: SocketAddr::from(([0, 0, 0, 0], 0)),
                also: None,
                stop: None,
                thread: None,
            },
            key_file: dir.path().join("peer.key"),
            dir,
        };
        ip(&[
            "link",
            "add",
            &peer_bridge,
            "type",
            "bridge",
            "nf_call_iptables",
            "0",
        ]);
        let host_api = lab.api_host();
        ip(&["addr", "add", &format!("{host_api}/24"), "dev", &api_bridge]);
        ip(&[
            "addr",
            "add",
            &format!("{}/24", lab.peer_host()),
            "dev",
            &peer_bridge,
        ]);
        for (_, _, octet) in &spec.redirects {
            ip(&[
                "addr",
                "add",
                &format!("{}/24", lab.peer_ip(*octet)),
                "dev",
                &peer_bridge,
            ]);
        }
        ip(&["link", "set", &api_bridge, "up"]);
        ip(&["link", "set", &peer_bridge, "up"]);
        std::fs::write(&lab.key_file, hex(&random_bytes(48))).expect("write the key");

        let also = spec.kubelet_server.then(|| {
            let kubelets = Ipv4Addr::new(10, 214, id, 253);
            ip(&["addr", "add", &format!("{kubelets}/24"), "dev", &api_bridge]);
            SocketAddr::new(kubelets.into(), 0)
        });
        lab.server = Server::start(SocketAddr::new(host_api.into(), 0), also, lab.dir.path());
        for i in 1..=spec.nodes {
            let node = lab.add_node(i);
            lab.nodes.push(node);
        }
        for i in 1..=spec.nodes {
            lab.seed_node(i, spec.toleration, spec.zone(i), spec.excluded.contains(&i));
        }
        for i in 1..=spec.nodes {
            let config = lab.config_text(i, spec);
            std::fs::write(&lab.nodes[i - 1].config, config).expect("write config");
        }
        lab
    }

    pub fn api_host(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, 214, self.id, 254)
    }

    pub fn peer_host(&self) -> Ipv4Addr {
        self.peer_ip(254)
    }

    /// 10.215.L.<octet>.
    pub fn peer_ip(&self, octet: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 215, self.id, octet)
    }

    /// Node `i` (1-based).
    pub fn node(&mut self, i: usize) -> &mut LabNode {
        &mut self.nodes[i - 1]
    }

    /// Creates node `i`'s namespace, its two veth pairs (host ends as bridge ports), its
    /// addresses, its directories and its cgroup sandbox.
    fn add_node(&self, i: usize) -> LabNode {
        let id = self.id;
        let netns = format!("nwq{id}n{i}");
        let api_port = format!("nwq{id}a{i}");
        let peer_port = format!("nwq{id}p{i}");
        let api_ip = Ipv4Addr::new(10, 214, id, i as u8);
        let peer_ip = self.peer_ip(i as u8);
        ip(&["netns", "add", &netns]);
        for (port, inner, bridge, addr) in [
            (&api_port, "api", &self.api_bridge, api_ip),
            (&peer_port, "peer", &self.peer_bridge, peer_ip),
        ] {
            // The namespace end gets a temporary unique name in the host, then its short name
            // inside the namespace.
            let tmp = format!("{port}x");
            ip(&["link", "add", port, "type", "veth", "peer", "name", &tmp]);
            ip(&["link", "set", &tmp, "netns", &netns]);
            ip(&["-n", &netns, "link", "set", &tmp, "name", inner]);
            ip(&[
                "-n",
                &netns,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                inner,
            ]);
            ip(&["-n", &netns, "link", "set", inner, "up"]);
            ip(&["link", "set", port, "master", bridge]);
            ip(&["link", "set", port, "up"]);
        }
        ip(&["-n", &netns, "link", "set", "lo", "up"]);
        let dir = self.dir.path().join(format!("n{i}"));
        std::fs::create_dir_all(&dir).expect("node dir");
        let sandbox = CgroupSandbox::create(CgroupVersion::V2, CgroupDriver::Systemd)
            .expect("a cgroup v2 sandbox (root checked by the caller)");
        LabNode {
            name: format!("n{i}"),
            netns,
            api_port,
            peer_port,
            api_ip,
            peer_ip,
            config: dir.join("config.toml"),
            // Fresh: nothing from an earlier run can leak in.
            state: dir.join("state"),
            dir,
            pods: Vec::new(),
            agent: None,
            sandbox,
        }
    }

    /// Node `i`'s Node object (in `zone`, labelled `exclude-disruption` when `excluded`) and its
    /// two pods: `-short`, owned by a ReplicaSet and tolerating the unreachable taint for
    /// `toleration`, and `-forever`, tolerating it forever.
    fn seed_node(&mut self, i: usize, toleration: Duration, zone: &str, excluded: bool) {
        let name = format!("n{i}");
        let mut labels = json!({"topology.kubernetes.io/zone": zone});
        if excluded {
            labels["node.kubernetes.io/exclude-disruption"] = json!("");
        }
        self.server.api.create_node(json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels}
        }));
        self.add_pod(i, &format!("{name}-short"), Some(toleration));
        self.add_pod(i, &format!("{name}-forever"), None);
    }

    /// A pod named `pod_name` bound to node `i`, tolerating the unreachable taint for
    /// `toleration` and owned by a ReplicaSet (`None`: tolerating it forever, owned by nothing):
    /// created in the API server, and its one process started in its cgroup, as the kubelet would.
    /// Created ten minutes before now, as the lab's pods ran before it began: the tests backdate
    /// taints and contacts by seconds, and a pod younger than a taint counts from its creation
    /// (`FencePod::created`).
    pub fn add_pod(&mut self, i: usize, pod_name: &str, toleration: Option<Duration>) {
        let mut ne = json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"});
        let mut owners = json!([]);
        if let Some(s) = toleration {
            ne["tolerationSeconds"] = json!(s.as_secs());
            owners = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("rs-n{i}"),
                    "uid": format!("0d5a0000-0000-4000-8000-00000000000{i}"), "controller": true}]);
        }
        let before = std::time::SystemTime::now() - Duration::from_secs(600);
        let created = self.server.api.create_pod_created(
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": pod_name, "namespace": "default", "ownerReferences": owners},
                "spec": {
                    "nodeName": format!("n{i}"),
                    "terminationGracePeriodSeconds": 30,
                    "tolerations": [ne],
                    "containers": [{"name": "c", "image": "busybox"}]
                }
            }),
            &humantime::format_rfc3339_seconds(before).to_string(),
        );
        let uid = created["metadata"]["uid"]
            .as_str()
            .expect("server-assigned uid")
            .to_string();
        let node = &mut self.nodes[i - 1];
        let container = node.sandbox.container_dir(&uid, QosClass::BestEffort, "c0");
        // One process that dies at the first SIGTERM and forks nothing: the moment the pod is
        // stopped is the moment its SIGTERM or kill arrived, and ten pods cost nothing.
        node.sandbox.spawn_in(&container, "exec sleep 100000", &[]);
        let dir = node.sandbox.pod_dir(&uid, QosClass::BestEffort);
        node.pods.push(LabPod {
            name: pod_name.to_string(),
            toleration,
            dir,
        });
    }

    fn config_text(&self, i: usize, spec: &LabSpec) -> String {
        let node = &self.nodes[i - 1];
        let mut text = format!(
            // No kubelet in the lab: each agent renews its node's own Lease (no kubelet lag).
            "nodeName = \"{name}\"\nkubeconfig = \"{kc}\"\nhealthAddress = \"{health}\"\n\
             onlyStatusReporter = true\nleaseName = \"{name}\"\n\
             stateDirectory = \"{state}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             nodeStatusUpdateFrequency = \"1s\"\nnodeLeaseDurationSeconds = 4\n\
             [fence]\ncgroupRoot = \"{cg}\"\nmode = \"{mode}\"\nnodeMonitorGracePeriod = \"{g}s\"\n\
             nodeMonitorPeriod = \"{p}ms\"\nunreachableAfter = \"{u}ms\"\nsafetyMargin = \"{m}ms\"\n\
             gracePeriodCap = \"{c}s\"\ncgroupVersion = \"v2\"\ncgroupDriver = \"systemd\"\n",
            name = node.name,
            kc = self.server.kubeconfig.display(),
            health = node.health_addr(),
            state = node.state.display(),
            cg = node.sandbox.root().display(),
            mode = if spec.dry_run.contains(&i) {
                "dry-run"
            } else {
                "enforce"
            },
            g = GRACE.as_secs(),
            p = spec.monitor_period.as_millis(),
            m = MARGIN.as_millis(),
            c = spec.grace_cap.as_secs(),
            u = spec.unreachable_after.as_millis(),
        );
        if spec.peers {
            let mut statics = Vec::new();
            for other in &self.nodes {
                if other.name == node.name {
                    continue;
                }
                let j: usize = other.name[1..].parse().expect("node number");
                let address = spec
                    .redirects
                    .iter()
                    .find(|(asker, peer, _)| *asker == i && *peer == j)
                    .map(|(_, _, octet)| SocketAddrV4::new(self.peer_ip(*octet), PEER_PORT))
                    .unwrap_or_else(|| other.peer_addr());
                statics.push(format!(
                    "  {{ node = \"{}\", address = \"{address}\", zone = \"{}\" }},",
                    other.name,
                    spec.zone(j)
                ));
            }
            text.push_str(&format!(
                "[peers]\nlisten = \"{listen}\"\nkeyFile = \"{key}\"\ntimeout = \"{t}ms\"\n\
                 interval = \"{iv}ms\"\nstatic = [\n{statics}\n]\n",
                listen = node.peer_addr(),
                key = self.key_file.display(),
                t = PEER_TIMEOUT.as_millis(),
                iv = spec.peer_interval.as_millis(),
                statics = statics.join("\n"),
            ));
        }
        if let Some(also) = self.server.also {
            // Into `[fence]`, which the text above ends with when there are no peers; placed
            // before `[peers]` otherwise.
            let line = format!("kubeletServer = \"http://{also}\"\n");
            match text.find("[peers]") {
                Some(at) => text.insert_str(at, &line),
                None => text.push_str(&line),
            }
        }
        text.push_str("[logging]\ntarget = \"stderr\"\n");
        text
    }

    /// Starts every agent and waits (bounded) until each has both its pods on disk and has
    /// renewed its Lease since, so its last contact is current.
    pub fn start_all(&mut self) {
        for n in &mut self.nodes {
            n.start_agent();
        }
        let deadline = Instant::now() + Duration::from_secs(40);
        for k in 0..self.nodes.len() {
            loop {
                if self.nodes[k].pods_on_disk() == 2 {
                    break;
                }
                if Instant::now() >= deadline {
                    let log = self.nodes[k].log();
                    panic!(
                        "{} never persisted its two pods:\n{log}",
                        self.nodes[k].name
                    );
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        // A couple of renewals after the pods are known (renew interval 1 s).
        std::thread::sleep(Duration::from_millis(1500));
    }

    /// Node `i` loses the API server (its `api` port down); its peer link stays.
    pub fn cut_api(&self, i: usize) {
        ip(&["link", "set", &self.nodes[i - 1].api_port, "down"]);
    }

    /// Node `i`'s agent loses its own path to the API server (the kubeconfig's address, a
    /// blackhole route in its namespace); the server's second address, the kubelet's
    /// (`LabSpec::kubelet_server`), and the peer link stay.
    pub fn cut_agent_path(&self, i: usize) {
        let n = &self.nodes[i - 1];
        let to = format!("{}/32", self.api_host());
        ip(&["-n", &n.netns, "route", "add", "blackhole", &to]);
    }

    pub fn heal_agent_path(&self, i: usize) {
        let n = &self.nodes[i - 1];
        let to = format!("{}/32", self.api_host());
        ip(&["-n", &n.netns, "route", "del", "blackhole", &to]);
    }

    pub fn heal_api(&self, i: usize) {
        ip(&["link", "set", &self.nodes[i - 1].api_port, "up"]);
    }

    /// Node `i` loses every link.
    pub fn cut_all(&self, i: usize) {
        self.cut_api(i);
        ip(&["link", "set", &self.nodes[i - 1].peer_port, "down"]);
    }

    /// The API server unreachable for everyone: the `api` bridge itself down.
    pub fn api_down(&self) {
        ip(&["link", "set", &self.api_bridge, "down"]);
    }

    pub fn api_up(&self) {
        ip(&["link", "set", &self.api_bridge, "up"]);
    }

    /// Whether a TCP connection from inside node `i`'s namespace to `to` opens within 1 s
    /// (bash's `/dev/tcp`, bounded by `timeout`).
    pub fn can_connect(&self, i: usize, to: SocketAddr) -> bool {
        let node = &self.nodes[i - 1];
        let status = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", node.netns))
            .args(["--", "timeout", "1", "bash", "-c"])
            .arg(format!("exec 3<>/dev/tcp/{}/{}", to.ip(), to.port()))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run nsenter");
        status.success()
    }

    /// Reaps exited pod processes on every node.
    pub fn reap(&mut self) {
        for n in &mut self.nodes {
            n.reap();
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            n.kill_agent();
        }
        for i in 1..=self.planned.max(self.nodes.len()) {
            // The host ends first: a namespace outlives its name while a killed agent's orphaned
            // TCP sockets still retransmit into a cut link, and its veth pairs with it. Deleting
            // one end of a pair deletes both. By name, so a half-built node goes too; only
            // names that exist are deleted, so nothing is warned about.
            let id = self.id;
            for link in [format!("nwq{id}a{i}"), format!("nwq{id}p{i}")] {
                if Path::new("/sys/class/net").join(&link).exists() {
                    ip_quiet(&["link", "del", &link]);
                }
            }
            let netns = format!("nwq{id}n{i}");
            if Path::new("/run/netns").join(&netns).exists() {
                ip_quiet(&["netns", "del", &netns]);
            }
        }
        ip_quiet(&["link", "del", &self.api_bridge]);
        ip_quiet(&["link", "del", &self.peer_bridge]);
        // The sandboxes (pods) and the server go with the fields.
    }
}

/// One HTTP/1.1 exchange over a fresh connection: writes `request` as is and returns the status
/// code and the whole response text (bounded: 1 MiB, 3 s).
pub fn http_exchange(to: SocketAddr, request: &[u8]) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(3)))?;
    s.set_write_timeout(Some(Duration::from_secs(3)))?;
    s.write_all(request)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > 1 << 20 || response_complete(&buf) {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break;
            }
            Err(e) => return Err(e),
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line in {text:?}")))?;
    Ok((status, text))
}

/// Whether `buf` holds a whole HTTP response with a `Content-Length` body (without one, the
/// response ends when the peer closes: every request here says `Connection: close`).
fn response_complete(buf: &[u8]) -> bool {
    let text = String::from_utf8_lossy(buf);
    let Some(end) = text.find("\r\n\r\n") else {
        return false;
    };
    text[..end]
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .is_some_and(|len| buf.len() >= end + 4 + len)
}

/// The value of `metric` (a full series name with labels, e.g.
/// `nodewarden_peer_requests_total{result="unsigned"}`) on node's `/metrics`, if present.
pub fn metric(node: &LabNode, series: &str) -> Option<f64> {
    let req = format!(
        "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        node.health_addr()
    );
    let (status, text) = http_exchange(node.health_addr().into(), req.as_bytes()).ok()?;
    if status != 200 {
        return None;
    }
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(series)?;
        rest.trim().parse().ok()
    })
}

fn parse_wall(s: &str) -> SystemTime {
    humantime::parse_rfc3339(s).unwrap_or_else(|e| panic!("bad time {s:?}: {e}"))
}

/// A stop plan from a `fence plan for …` line.
#[derive(Clone, Copy, Debug)]
pub struct StopPlan {
    pub sigterm_at: SystemTime,
    pub kill_at: SystemTime,
    pub eviction_time: SystemTime,
}

/// The latest stop plan the log shows for `pod` (`default/<pod>`), if any.
pub fn latest_stop_plan(log: &str, pod: &str) -> Option<StopPlan> {
    let needle = format!("fence plan for default/{pod}:");
    log.lines()
        .filter(|l| l.contains(&needle) && field(l, "action").as_deref() == Some("stop"))
        .filter_map(|l| {
            Some(StopPlan {
                sigterm_at: parse_wall(&field(l, "sigterm_at")?),
                kill_at: parse_wall(&field(l, "kill_at")?),
                eviction_time: parse_wall(&field(l, "eviction_time")?),
            })
        })
        .next_back()
}

/// The verdicts (`enforce`/`hold`) an agent logged, in order, with their reasons.
pub fn verdicts(log: &str) -> Vec<(String, String)> {
    log.lines()
        .filter(|l| l.contains("quorum verdict: "))
        .filter_map(|l| Some((field(l, "verdict")?, field(l, "reason").unwrap_or_default())))
        .collect()
}
