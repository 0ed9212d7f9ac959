//! The fence end to end, with a real partition: the agent binary in a network namespace, the API
//! test server on the host end of a veth pair, fake pods as real processes in a per-test cgroup
//! sandbox with matching Pod objects. Cutting the link must stop each pod by the moment the
//! control plane could delete it — never before its planned SIGTERM, never one that tolerates
//! forever; healing first kills nothing; a SIGKILLed agent restarted mid-partition keeps its
//! deadlines; dry-run kills nothing and logs every plan.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use nodewarden::core::qos::QosClass;
use nodewarden::terminate::{CgroupDriver, CgroupVersion};
use serde_json::{Value, json};
use support::apiserver::ApiServer;
use support::cgroup::CgroupSandbox;
use support::lab::{Server, live_processes, pod_processes};
use support::netns::Netns;
use support::{Agent, field, free_port, is_root, require, write_config};

const NODE: &str = "n1";
/// The fence's settings in these tests (short, so a test takes seconds).
const GRACE: Duration = Duration::from_secs(4);
/// How long before the scene began its pods were created: before any taint or contact a test
/// backdates. The controller starts the timer of a pod created on a Node already tainted no
/// earlier than its creation, and the fence counts so (`FencePod::created`); a scene's pods are
/// the node's pods from before.
const SCENE_PODS_CREATED: Duration = Duration::from_secs(600);
const UNREACHABLE_AFTER: &str = "2500ms";
const MARGIN: Duration = Duration::from_millis(500);
const CAP: Duration = Duration::from_secs(1);

/// One fake pod: its Pod object and its processes.
struct FakePod {
    name: &'static str,
    dir: PathBuf,
    marker: PathBuf,
    /// Whether the control plane would delete it; then the delay after grace.
    evicted_after: Option<Duration>,
    handles_term: bool,
}

fn pod_json(name: &str, tolerations: Value, extra_meta: Value) -> Value {
    let mut meta = json!({"name": name, "namespace": "default"});
    if let (Some(m), Some(extra)) = (meta.as_object_mut(), extra_meta.as_object()) {
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 30,
            "tolerations": tolerations,
            "containers": [{"name": "c", "image": "busybox"}]
        }
    })
}

struct Scene {
    _netns_guard: (),
    netns: Netns,
    server: Server,
    sandbox: CgroupSandbox,
    pods: Vec<FakePod>,
    dir: tempfile::TempDir,
    config: PathBuf,
}

/// Creates a Pod object and its processes in the sandbox (a shell loop that handles SIGTERM by
/// writing its marker file, or ignores it). The server assigns the UID, as the real one does;
/// the pod's cgroup is named after it. Created `created_ago` before now (a scene's pods:
/// [`SCENE_PODS_CREATED`]), or now.
fn spawn_pod(
    api: &ApiServer,
    sandbox: &mut CgroupSandbox,
    dir: &Path,
    name: &'static str,
    (tolerations, meta): (Value, Value),
    handles_term: bool,
    created_ago: Option<Duration>,
) -> FakePod {
    let obj = pod_json(name, tolerations, meta);
    let created = match created_ago {
        Some(ago) => {
            let at = humantime::format_rfc3339_seconds(SystemTime::now() - ago).to_string();
            api.create_pod_created(obj, &at)
        }
        None => api.create_pod(obj),
    };
    let uid = created["metadata"]["uid"]
        .as_str()
        .expect("server-assigned uid")
        .to_string();
    let container = sandbox.container_dir(&uid, QosClass::BestEffort, "c0");
    let marker = dir.join(format!("{name}.term"));
    let script = if handles_term {
        "trap 'echo done > \"$M\"; exit 0' TERM; while :; do sleep 0.05; done"
    } else {
        "trap '' TERM; while :; do sleep 0.05; done"
    };
    sandbox.spawn_in(&container, script, &[("M", &marker)]);
    FakePod {
        name,
        dir: sandbox.pod_dir(&uid, QosClass::BestEffort),
        marker,
        evicted_after: None,
        handles_term,
    }
}

/// Sets up the partitionable world with six pods: tolerationSeconds 0 (handles SIGTERM), 4 s
/// (ignores SIGTERM), forever, a DaemonSet pod, a mirror pod and an opted-out pod. The server
/// UIDs match the sandbox's pod cgroups.
fn scene(mode: &str, short: u64, grace: Duration) -> Option<Scene> {
    if !require(is_root(), "root (network namespaces, cgroups)") {
        return None;
    }
    let sandbox = CgroupSandbox::create(CgroupVersion::V2, CgroupDriver::Systemd)?;
    let netns = Netns::create();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(SocketAddr::new(netns.host_ip.into(), 0), None, dir.path());
    server
        .api
        .create_node(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}}));
    let ne = |s: Option<i64>| {
        let mut t = json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"});
        if let Some(s) = s {
            t["tolerationSeconds"] = json!(s);
        }
        t
    };
    let specs: [(&'static str, Value, Value, Option<Duration>, bool); 6] = [
        (
            "zero",
            json!([ne(Some(0))]),
            json!({}),
            Some(Duration::ZERO),
            true,
        ),
        (
            // The not-ready taint's timer too, as admission adds both (only a test that adds
            // that taint reads it).
            "short",
            json!([ne(Some(short as i64)), {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": short}]),
            json!({}),
            Some(Duration::from_secs(short)),
            false,
        ),
        ("forever", json!([ne(None)]), json!({}), None, true),
        (
            "daemon",
            json!([]),
            json!({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "0d5a0000-0000-4000-8000-000000000001", "controller": true}]}),
            None,
            true,
        ),
        (
            "mirror",
            json!([]),
            json!({"annotations": {"kubernetes.io/config.mirror": "abc", "kubernetes.io/config.source": "file"}}),
            None,
            true,
        ),
        (
            "optout",
            json!([]),
            json!({"annotations": {"nodewarden.io/fence": "false"}}),
            None,
            true,
        ),
    ];
    let mut sandbox = sandbox;
    let mut pods = Vec::new();
    for (name, tol, meta, evicted_after, handles_term) in specs {
        let p = FakePod {
            name,
            evicted_after,
            handles_term,
            ..spawn_pod(
                &server.api,
                &mut sandbox,
                dir.path(),
                name,
                (tol, meta),
                handles_term,
                Some(SCENE_PODS_CREATED),
            )
        };
        pods.push(p);
    }
    let config = write_config(
        dir.path(),
        &format!(
            "nodeName = \"{NODE}\"\nkubeconfig = \"{kc}\"\nhealthAddress = \"127.0.0.1:{port}\"\n\
             onlyStatusReporter = true\nleaseName = \"{NODE}\"\n\
             stateDirectory = \"{state}\"\nnodefsPath = \"/\"\nimagefsPath = \"/\"\n\
             nodeStatusUpdateFrequency = \"1s\"\nnodeLeaseDurationSeconds = 4\n\
             [fence]\ncgroupRoot = \"{cg}\"\nmode = \"{mode}\"\nnodeMonitorGracePeriod = \"{g}s\"\nnodeMonitorPeriod = \"0s\"\n\
             unreachableAfter = \"{UNREACHABLE_AFTER}\"\nsafetyMargin = \"{m}ms\"\ngracePeriodCap = \"{c}s\"\ncgroupVersion = \"v2\"\ncgroupDriver = \"systemd\"\n\
             [peers]\nwithoutPeers = \"{without}\"\n\
             [logging]\ntarget = \"stderr\"\n",
            // A node alone, whose operator knows the control plane evicts it (the quorum's own
            // cases are in tests/quorum_e2e.rs). No kubelet runs here: the agent renews the
            // node's own Lease, the one the control plane judges the node by, so its plans count
            // from its own last contact (no kubelet lag). And with no monitor period counted
            // before the taint: the bounds below count it from the grace period's end.
            without = "enforce",
            kc = server.kubeconfig.display(),
            port = free_port(),
            state = dir.path().join("state").display(),
            cg = sandbox.root().display(),
            g = grace.as_secs(),
            m = MARGIN.as_millis(),
            c = CAP.as_secs(),
        ),
    );
    Some(Scene {
        _netns_guard: (),
        netns,
        server,
        sandbox,
        pods,
        dir,
        config,
    })
}

/// Starts the agent in the namespace and waits until it knows all six pods on disk.
fn start_agent(s: &Scene) -> Agent {
    let mut agent = Agent::start_in(&s.netns.enter(), &s.config, &[]);
    let state = s.dir.path().join("state").join("state.json");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pods = std::fs::read(&state)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["pods"].as_array().map(|a| a.len()))
            .unwrap_or(0);
        if pods == 6 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the agent never persisted the pods ({}):\n{}",
            std::fs::read_to_string(&state).unwrap_or_else(|e| e.to_string()),
            {
                agent.wait_for(&["\u{0}"], Duration::from_secs(1));
                agent.dump()
            }
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Let a couple of renewals land so last contact is current.
    std::thread::sleep(Duration::from_millis(1500));
    agent
}

fn parse_wall(s: &str) -> SystemTime {
    humantime::parse_rfc3339(s).unwrap_or_else(|e| panic!("bad time {s:?}: {e}"))
}

/// The plan records of one agent run: pod name → (sigterm_at, kill_at, eviction_time).
fn plans(agent: &mut Agent, n: usize) -> Plans {
    let mut out = std::collections::BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while out.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some((line, _)) = agent.wait_for(&["fence plan for default/"], left) else {
            panic!("only {} plan records:\n{}", out.len(), agent.dump());
        };
        let name = field(&line, "pod")
            .unwrap_or_default()
            .trim_start_matches("default/")
            .to_string();
        let plan = match field(&line, "action").as_deref() {
            Some("stop") => Some((
                parse_wall(&field(&line, "sigterm_at").expect("sigterm_at")),
                parse_wall(&field(&line, "kill_at").expect("kill_at")),
                parse_wall(&field(&line, "eviction_time").expect("eviction_time")),
            )),
            _ => None,
        };
        out.insert(name, plan);
    }
    out
}

#[test]
fn a_partition_stops_each_pod_by_its_eviction_time_and_never_one_that_is_kept() {
    let Some(mut s) = scene("enforce", 4, GRACE) else {
        return;
    };
    let mut agent = start_agent(&s);
    let cut_at = SystemTime::now();
    s.netns.cut();
    let plans = plans(&mut agent, 6);
    for (name, plan) in &plans {
        let expected = s
            .pods
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.evicted_after.is_some());
        assert_eq!(
            plan.is_some(),
            expected.unwrap_or(false),
            "{name}: {plan:?}"
        );
    }
    // Watch every pod until the latest deadline has passed by a second.
    let latest = cut_at + GRACE + Duration::from_secs(4) + Duration::from_secs(1);
    let mut stopped: std::collections::BTreeMap<&str, SystemTime> = Default::default();
    while SystemTime::now() < latest {
        for p in &s.pods {
            if !stopped.contains_key(p.name) && pod_processes(&p.dir) == 0 {
                stopped.insert(p.name, SystemTime::now());
            }
        }
        s.sandbox.reap();
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut lateness = Vec::new();
    for p in &s.pods {
        match (p.evicted_after, plans.get(p.name).copied().flatten()) {
            (Some(delay), Some((sigterm_at, kill_at, eviction))) => {
                let at = *stopped.get(p.name).unwrap_or_else(|| {
                    panic!("{} never stopped:\n{}", p.name, agent.drained_dump())
                });
                // Never late: stopped by the moment the control plane could delete it, which
                // is no earlier than the cut + grace + the pod's delay.
                let bound = cut_at + GRACE + delay;
                assert!(
                    at <= bound,
                    "{} stopped {:?} after its eviction bound",
                    p.name,
                    at.duration_since(bound).unwrap_or_default()
                );
                assert!(
                    at <= eviction,
                    "{} stopped after its planned eviction time",
                    p.name
                );
                // Never early: not before its planned SIGTERM.
                assert!(
                    at + Duration::from_millis(20) >= sigterm_at,
                    "{} stopped before its SIGTERM",
                    p.name
                );
                if p.handles_term {
                    assert!(
                        p.marker.exists(),
                        "{} got SIGTERM and ran its handler",
                        p.name
                    );
                } else {
                    // It ignored SIGTERM, so it died at the kill.
                    assert!(
                        at + Duration::from_millis(20) >= kill_at,
                        "{} died before its kill time",
                        p.name
                    );
                    assert!(!p.marker.exists());
                }
                lateness.push((
                    p.name,
                    at.duration_since(sigterm_at.max(if p.handles_term {
                        sigterm_at
                    } else {
                        kill_at
                    }))
                    .unwrap_or_default(),
                ));
            }
            (None, _) => {
                assert!(
                    !stopped.contains_key(p.name),
                    "{} must never be stopped",
                    p.name
                );
                assert!(pod_processes(&p.dir) > 0);
            }
            (Some(_), None) => panic!("{} has no stop plan", p.name),
        }
    }
    eprintln!("stop lateness against plan: {lateness:?}");
    // The fenced pods stay fenced, and the agent said so.
    let log = agent.drained_dump();
    assert!(log.contains("action=kill"), "{log}");
    // The agent's own account of its lateness against each planned SIGTERM and kill.
    let late: Vec<(String, u64)> = log
        .lines()
        .filter(|l| l.contains("action=sigterm") || l.contains("action=kill"))
        .filter_map(|l| Some((field(l, "action")?, field(l, "late_ms")?.parse().ok()?)))
        .collect();
    assert_eq!(
        late.len(),
        4,
        "one SIGTERM and one kill per stopped pod: {late:?}"
    );
    eprintln!("agent-reported lateness (ms): {late:?}");
    assert!(late.iter().all(|(_, ms)| *ms < 1000), "{late:?}");
    // Heal: the fence lifts; both fenced pods still exist upstream.
    s.netns.heal();
    agent
        .wait_for(&["fence lifted"], Duration::from_secs(20))
        .unwrap_or_else(|| panic!("no reconciliation after healing:\n{}", agent.dump()));
    // The Events held while cut off arrive: one per kill, one per lifted fence.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let reasons: Vec<String> = s
            .server
            .api
            .events()
            .iter()
            .filter_map(|e| e["reason"].as_str().map(str::to_string))
            .collect();
        let count = |r: &str| reasons.iter().filter(|x| *x == r).count();
        if count("NodewardenFenced") == 2 && count("NodewardenFenceLifted") == 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "held events not delivered: {reasons:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = &s.server;
    agent.kill_hard();
}

/// The controller tainted the node while its agent was connected (as an outage of the API server
/// ends, before the kubelet renews, say), and the link is cut before the taint is removed: the
/// taint eviction controller deletes the pods for that taint, so the fence counts from its
/// `timeAdded` — not from its later contact — and stops the pod by then.
#[test]
fn a_taint_left_on_the_node_at_the_cut_counts_from_when_it_was_added() {
    taint_left_at_the_cut(
        "node.kubernetes.io/unreachable",
        "taint the Node carried when last seen",
    );
}

/// A not-ready taint left on the Node at the cut: the controller swaps it for the unreachable one
/// as the node goes Unknown, and each pod's timer for it goes on (docs/fence.md §3). The short
/// pod tolerates both for 12 s: stopped 12 s after the not-ready taint, not after the count
/// from contact.
#[test]
fn a_not_ready_taint_left_on_the_node_at_the_cut_keeps_its_timer() {
    taint_left_at_the_cut(
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/not-ready:NoExecute taint the Node carried when last seen",
    );
}

/// A Ready=False the kubelet posted, seen before the cut, with no taint on the Node yet: the
/// controller queues the node for the not-ready taint on its next pass, and a link cut before the
/// taint came leaves this node without it while its timers run (docs/fence.md §3). So the fence
/// counts that taint from the post: the short pod (12 s for either taint) is stopped by the post +
/// 12 s, not by the count from contact.
#[test]
fn a_ready_false_seen_before_the_cut_counts_as_the_not_ready_taint() {
    let Some(mut s) = scene("enforce", SHORT, GRACE) else {
        return;
    };
    let mut agent = start_agent(&s);
    let posted =
        humantime::format_rfc3339_seconds(SystemTime::now() - Duration::from_secs(5)).to_string();
    support::ready_false_seen(&s.server.api, NODE, &posted, &s.dir.path().join("state"));
    let by_post = parse_wall(&posted) + Duration::from_secs(SHORT);
    let plans = short_stopped_after_the_cut(
        &mut s,
        &mut agent,
        by_post,
        "or the Ready=False its kubelet posted",
    );
    // The pod that tolerates unreachable forever has no not-ready toleration: deleted as that
    // taint comes, which counts from the post.
    assert_eq!(
        plans["forever"].map(|(_, _, eviction)| eviction),
        Some(parse_wall(&posted))
    );
    agent.kill_hard();
}

/// A not-ready taint on the Node while the link holds: the control plane deletes each pod its
/// not-ready toleration after that taint, and the link may go in the seconds before, too late
/// for this node to know itself cut off. So the fence stops the pods by then without a cut
/// (docs/fence.md §3): the short pod (12 s) by the taint's time + 12 s, the zero pod and the pod
/// tolerating unreachable forever (neither tolerates not-ready) at once; the exempt ones run on.
#[test]
fn a_not_ready_taint_is_fenced_on_while_connected() {
    let Some((mut s, mut agent, eviction)) = tainted_scene("node.kubernetes.io/not-ready") else {
        return;
    };
    let at = stopped_by(&mut s, &mut agent, "short", eviction);
    let pod = |name: &str| s.pods.iter().find(|p| p.name == name).expect("a pod");
    // Killed at its time less the margin (it ignores SIGTERM), not at once.
    assert!(
        at + MARGIN + Duration::from_millis(700) >= eviction,
        "stopped {:?} early",
        eviction.duration_since(at)
    );
    for name in ["zero", "forever"] {
        assert_eq!(pod_processes(&pod(name).dir), 0, "{name} runs on");
    }
    for name in ["daemon", "mirror", "optout"] {
        assert!(pod_processes(&pod(name).dir) > 0, "{name} was stopped");
    }
    let log = agent.drained_dump();
    assert!(
        log.lines()
            .any(|l| l.contains("fence plan for default/short")
                && l.contains("carries the node controller's NoExecute taint")),
        "{log}"
    );
    assert!(!log.contains("cut off from the API server"), "{log}");
    agent.kill_hard();
}

/// A pod created on a Node already tainted has its timer start when the controller handles the
/// pod, not at the taint's `timeAdded` (docs/semantics.md §4.3; `Fixes::pod_created`, the
/// simulator's seed 0x21): the not-ready taint added 5 s before the scene's pods are planned, a
/// pod created then, tolerating it [`SHORT`] seconds, is planned for its creation + [`SHORT`],
/// runs on past the taint's + [`SHORT`] (when the scene's short pod goes), and is stopped by its
/// own time.
#[test]
fn a_pod_created_on_a_tainted_node_counts_from_its_creation() {
    let Some((mut s, mut agent, by_taint)) = tainted_scene("node.kubernetes.io/not-ready") else {
        return;
    };
    let tolerations = json!([
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": SHORT},
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": SHORT}
    ]);
    let new = spawn_pod(
        &s.server.api,
        &mut s.sandbox,
        s.dir.path(),
        "new",
        (tolerations, json!({})),
        true,
        None,
    );
    let created = s
        .server
        .api
        .pod("default", "new")
        .and_then(|p| {
            p.pointer("/metadata/creationTimestamp")?
                .as_str()
                .map(parse_wall)
        })
        .expect("the server stamped the pod's creation");
    let due = created + Duration::from_secs(SHORT);
    // The server stamps the second; the taint was added 5 s before the scene's plans.
    assert!(
        due >= by_taint + Duration::from_secs(3),
        "{due:?} {by_taint:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let (line, _) = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(found) = agent.wait_for(&["fence plan for default/new"], left) else {
            panic!("no plan for the new pod:\n{}", agent.dump());
        };
        if field(&found.0, "action").as_deref() == Some("stop") {
            break found;
        }
    };
    let eviction = parse_wall(&field(&line, "eviction_time").expect("eviction_time"));
    assert_eq!(eviction, due, "{line}");
    assert!(line.contains("creationTimestamp"), "{line}");
    // Running past the taint's time + SHORT, stopped by its own.
    while SystemTime::now() < by_taint + Duration::from_secs(1) {
        s.sandbox.reap();
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(pod_processes(&new.dir) > 0, "stopped by the taint's time");
    s.pods.push(new);
    stopped_by(&mut s, &mut agent, "new", due);
    agent.kill_hard();
}

/// The short pod's toleration of either taint in [`tainted_scene`].
const SHORT: u64 = 12;

/// The scene with its short pod tolerating either taint [`SHORT`] seconds, the agent started, and
/// the node controller's NoExecute taint `key` added 5 s ago and seen by the agent (on disk):
/// with the taint's time + [`SHORT`], when the control plane deletes the short pod. `None` where
/// the scene cannot be set up (not root, outside CI).
fn tainted_scene(key: &str) -> Option<(Scene, Agent, SystemTime)> {
    let s = scene("enforce", SHORT, GRACE)?;
    let agent = start_agent(&s);
    let added =
        humantime::format_rfc3339_seconds(SystemTime::now() - Duration::from_secs(5)).to_string();
    support::taint_seen(
        &s.server.api,
        NODE,
        key,
        &added,
        &s.dir.path().join("state"),
    );
    Some((s, agent, parse_wall(&added) + Duration::from_secs(SHORT)))
}

/// When the scene's pod `name` had all its processes gone, watched until a second past
/// `eviction`; it must be no later than `eviction`.
fn stopped_by(s: &mut Scene, agent: &mut Agent, name: &str, eviction: SystemTime) -> SystemTime {
    let pod = s.pods.iter().find(|p| p.name == name).expect(name);
    let dir = pod.dir.clone();
    let until = eviction + Duration::from_secs(1);
    let mut stopped = None;
    while SystemTime::now() < until && stopped.is_none() {
        if pod_processes(&dir) == 0 {
            stopped = Some(SystemTime::now());
        }
        s.sandbox.reap();
        std::thread::sleep(Duration::from_millis(10));
    }
    let at = stopped.unwrap_or_else(|| panic!("{name} never stopped:\n{}", agent.drained_dump()));
    assert!(
        at <= eviction,
        "stopped {:?} late",
        at.duration_since(eviction)
    );
    at
}

/// Cuts the scene's link, and checks that the short pod is planned for `by` (not for the count
/// from contact, 9 s later) and stopped by then, with `because` in its plan's reason; the plans.
fn short_stopped_after_the_cut(
    s: &mut Scene,
    agent: &mut Agent,
    by: SystemTime,
    because: &str,
) -> Plans {
    let cut_at = SystemTime::now();
    s.netns.cut();
    let plans = plans(agent, 6);
    let (_, _, eviction) = plans["short"].expect("a stop plan for the short pod");
    let off = eviction
        .duration_since(by)
        .or_else(|_| by.duration_since(eviction))
        .unwrap_or_default();
    assert!(
        off <= Duration::from_millis(50),
        "eviction {eviction:?}, expected {by:?}"
    );
    // Counted from contact it would be at least the cut + grace + 12 s: 9 s later.
    assert!(eviction + Duration::from_secs(8) < cut_at + GRACE + Duration::from_secs(SHORT));
    stopped_by(s, agent, "short", eviction);
    let log = agent.drained_dump();
    assert!(
        log.lines()
            .any(|l| l.contains("fence plan for default/short") && l.contains(because)),
        "{log}"
    );
    plans
}

/// The node controller's NoExecute taint `key`, added 5 s ago, is on the Node the agent saw
/// before the cut: the short pod (12 s for either taint) is planned and stopped by the taint's
/// time + 12 s, and its plan's reason says `because`.
fn taint_left_at_the_cut(key: &str, because: &str) {
    let Some((mut s, mut agent, by_taint)) = tainted_scene(key) else {
        return;
    };
    let plans = short_stopped_after_the_cut(&mut s, &mut agent, by_taint, because);
    // The pod that tolerates unreachable forever is never planned for that taint: the swap
    // cancels its timer. It has no not-ready toleration, so that taint deletes it as it comes.
    let forever = plans["forever"].map(|(_, _, eviction)| eviction);
    if key == "node.kubernetes.io/not-ready" {
        assert_eq!(forever, Some(by_taint - Duration::from_secs(SHORT)));
    } else {
        assert_eq!(forever, None);
    }
    agent.kill_hard();
}

#[test]
fn healing_before_any_deadline_kills_nothing() {
    let Some(mut s) = scene("enforce", 30, Duration::from_secs(10)) else {
        return;
    };
    let mut agent = start_agent(&s);
    s.netns.cut();
    // Cut off is declared after 2.5 s; the earliest SIGTERM (the zero-seconds pod, with a 10 s
    // grace here) is due 10 s − 1 s cap − 0.5 s margin = 8.5 s after last contact. Heal at once.
    agent
        .wait_for(&["cut off from the API server"], Duration::from_secs(5))
        .unwrap_or_else(|| panic!("never cut off:\n{}", agent.dump()));
    s.netns.heal();
    agent
        .wait_for(&["API server reachable again"], Duration::from_secs(20))
        .unwrap_or_else(|| panic!("never reconnected:\n{}", agent.dump()));
    std::thread::sleep(Duration::from_secs(3));
    s.sandbox.reap();
    for p in &s.pods {
        assert!(pod_processes(&p.dir) > 0, "{} was stopped", p.name);
        assert!(!p.marker.exists(), "{} got SIGTERM", p.name);
    }
    let log = agent.dump();
    assert!(!log.contains("action=sigterm"), "{log}");
    // One outage, one story (issue 21): each edge is one line — the first failure, the fence's
    // cut-off, and the return, which also says that fencing stops.
    let count = |needle: &str| log.lines().filter(|l| l.contains(needle)).count();
    for (needle, want) in [
        ("API server unreachable", 1),
        ("cut off from the API server", 1),
        ("API server reachable again", 1),
        ("fencing stops", 1),
    ] {
        assert_eq!(count(needle), want, "lines with {needle:?}:\n{log}");
    }
    assert!(
        log.lines()
            .any(|l| l.contains("API server reachable again") && l.contains("fencing stops")),
        "the return and the end of fencing on one line:\n{log}"
    );
    agent.kill_hard();
}

/// The six plans of an agent cut off in `s`, and those of the same agent after a SIGKILL,
/// `down` of waiting and a restart with `env`; the restarted agent comes back with them.
fn plans_across_a_restart(
    s: &Scene,
    down: Duration,
    env: &[(&str, &str)],
) -> (Plans, Plans, Agent) {
    let mut agent = start_agent(s);
    s.netns.cut();
    let before = plans(&mut agent, 6);
    agent.kill_hard();
    std::thread::sleep(down);
    let mut again = Agent::start_in(&s.netns.enter(), &s.config, env);
    let after = plans(&mut again, 6);
    (before, after, again)
}

#[test]
fn a_restart_mid_partition_keeps_every_deadline() {
    let Some(s) = scene("enforce", 20, GRACE) else {
        return;
    };
    let (before, after, mut again) = plans_across_a_restart(&s, Duration::ZERO, &[]);
    same_plans(&before, &after, Duration::ZERO, &mut again);
    // And the restarted agent still acts on them: the zero-seconds pod stops.
    let zero = s.pods.iter().find(|p| p.name == "zero").expect("zero pod");
    let deadline = Instant::now() + GRACE + Duration::from_secs(3);
    while pod_processes(&zero.dir) > 0 {
        assert!(
            Instant::now() < deadline,
            "the zero-seconds pod was not stopped after the restart:\n{}",
            again.dump()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = &s.server;
    again.kill_hard();
}

type Plans = std::collections::BTreeMap<String, Option<(SystemTime, SystemTime, SystemTime)>>;

/// Every plan of `before` is in `after` with each instant within 200 ms, once `after`'s wall
/// clock, `behind` behind `before`'s, is put back.
fn same_plans(before: &Plans, after: &Plans, behind: Duration, again: &mut Agent) {
    for (name, plan) in before {
        let other = after.get(name).copied().flatten();
        match (plan, other) {
            (None, None) => {}
            (Some((t1, k1, e1)), Some((t2, k2, e2))) => {
                for (a, b, what) in [(t1, t2, "sigterm"), (k1, k2, "kill"), (e1, e2, "eviction")] {
                    let b = b + behind;
                    let diff = a
                        .duration_since(b)
                        .or_else(|_| b.duration_since(*a))
                        .unwrap_or_default();
                    assert!(
                        diff <= Duration::from_millis(200),
                        "{name}: {what} moved by {diff:?} across the restart\nbefore {before:?}\nafter {after:?}\n{}",
                        again.drained_dump()
                    );
                }
            }
            other => panic!("{name}: plan changed across the restart: {other:?}"),
        }
    }
}

/// libfaketime, which moves the wall clock of the process it is preloaded into, and with
/// `FAKETIME_DONT_FAKE_MONOTONIC` neither its monotonic nor its boot clock (Debian's
/// `faketime` package; `.ci/run` installs it).
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// An enforcing scene, when libfaketime is installed (a skip outside CI says why it is not).
fn faketime_scene() -> Option<Scene> {
    if !require(
        Path::new(LIBFAKETIME).exists(),
        "libfaketime (Debian package faketime)",
    ) {
        return None;
    }
    scene("enforce", 20, GRACE)
}

#[test]
fn a_wall_step_back_while_the_agent_is_down_moves_no_deadline() {
    // Issue 22, seed 0x14e8: the node's wall clock stepped back while the agent was down, and
    // the contact on disk read as later than now. The restarted fence took it for now and
    // counted every deadline from its own start. The files now say where their writer stood
    // against the boot clock, and the restart carries their times onto its own clock.
    let Some(s) = faketime_scene() else {
        return;
    };
    // Down long enough after the cut that deadlines counted from the restart would be seconds
    // late.
    let (before, after, mut again) = plans_across_a_restart(
        &s,
        Duration::from_secs(2),
        &[
            ("LD_PRELOAD", LIBFAKETIME),
            ("FAKETIME", "-3600"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    );
    same_plans(&before, &after, Duration::from_secs(3_600), &mut again);
    let _ = &s.server;
    again.kill_hard();
}

/// The contact file names the system clock's place on the boot clock as it reads at each write
/// (issue 22, seeds 0xd6b and 0x1f01 of the simulator): after a step of the wall clock while the
/// agent runs, its next write moves both the time and the scale by the step, and the instant on
/// the boot clock stays the same. A restart then sees the step as made before the previous run's
/// last write, and places its kubelet's renewals on its own clock (`clock::steady`).
#[test]
fn the_contact_file_follows_a_wall_step_made_while_the_agent_runs() {
    let Some(s) = faketime_scene() else {
        return;
    };
    // libfaketime reads the offset from this file at every call (`FAKETIME_NO_CACHE`).
    let step = s.dir.path().join("faketime");
    std::fs::write(&step, "+0\n").expect("write the offset");
    let step_path = step.display().to_string();
    let mut agent = Agent::start_in(
        &s.netns.enter(),
        &s.config,
        &[
            ("LD_PRELOAD", LIBFAKETIME),
            ("FAKETIME_TIMESTAMP_FILE", step_path.as_str()),
            ("FAKETIME_NO_CACHE", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    );
    let file = s.dir.path().join("state").join("last-contact");
    // The file's time and its scale's wall-minus-boot constant (ns).
    let read = || -> Option<(SystemTime, i64)> {
        let text = std::fs::read_to_string(&file).ok()?;
        let mut parts = text.split_whitespace();
        let time = nodewarden::state::parse_time(parts.next()?)?;
        let _boot = parts.next()?;
        Some((time, parts.next()?.parse().ok()?))
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let first = loop {
        if let Some(first) = read() {
            break first;
        }
        assert!(
            Instant::now() < deadline,
            "no contact written:\n{}",
            agent.drained_dump()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    std::fs::write(&step, "-3600\n").expect("step the clock back an hour");
    let hour = 3_600_000_000_000i64;
    let deadline = Instant::now() + Duration::from_secs(20);
    let (time, scale) = loop {
        if let Some((time, scale)) = read()
            && scale < first.1 - hour / 2
        {
            break (time, scale);
        }
        assert!(
            Instant::now() < deadline,
            "the contact file never followed the step: {:?}\n{}",
            read(),
            agent.drained_dump()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    // Moved by the step, within the second `clock::steady` allows.
    let moved = scale - first.1;
    assert!(
        (moved + hour).abs() < 1_000_000_000,
        "scale moved by {moved} ns"
    );
    // The time on the stepped clock: an hour behind the real one, and no later than it reads now.
    let behind = SystemTime::now()
        .duration_since(time)
        .expect("the contact reads as earlier than the real clock");
    assert!(
        behind > Duration::from_secs(3_590) && behind < Duration::from_secs(3_620),
        "{behind:?}"
    );
    agent.kill_hard();
}

#[test]
fn dry_run_kills_nothing_and_logs_every_plan() {
    let Some(mut s) = scene("dry-run", 1, GRACE) else {
        return;
    };
    let mut agent = start_agent(&s);
    let cut_at = Instant::now();
    s.netns.cut();
    let plans = plans(&mut agent, 6);
    assert_eq!(plans.len(), 6);
    // Past every deadline.
    while cut_at.elapsed() < GRACE + Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let would_kill = agent.collect_for(&["dry-run: would kill"], Duration::from_secs(1));
    s.sandbox.reap();
    for p in &s.pods {
        assert!(
            pod_processes(&p.dir) > 0,
            "{} was stopped in dry-run",
            p.name
        );
        assert!(!p.marker.exists(), "{} got SIGTERM in dry-run", p.name);
    }
    let all = format!("{}\n{}", agent.dump(), would_kill.join("\n"));
    for name in ["zero", "short"] {
        assert!(
            all.contains(&format!("would kill pod default/{name}")),
            "{name}:\n{all}"
        );
    }
    agent.kill_hard();
}

/// Issue 10, defect 1: a pod the agent saw shortly before a SIGKILL is on disk, so the agent
/// restarted mid-partition (which cannot ask the API server) still stops it on time. Each round
/// adds a pod, kills the agent that long after, cuts the link and restarts.
#[test]
fn a_pod_seen_just_before_a_sigkill_is_stopped_on_time_after_the_restart() {
    for (round, seen_for) in [
        (0, Duration::from_millis(1000)),
        (1, Duration::from_millis(400)),
    ] {
        let Some(mut s) = scene("enforce", 20, GRACE) else {
            return;
        };
        let mut agent = start_agent(&s);
        let name: &'static str = ["late-a", "late-b"][round];
        let ne0 = json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": 0}]);
        let late = spawn_pod(
            &s.server.api,
            &mut s.sandbox,
            s.dir.path(),
            name,
            (ne0, json!({})),
            true,
            None,
        );
        std::thread::sleep(seen_for);
        let cut_at = SystemTime::now();
        s.netns.cut();
        agent.kill_hard();
        let mut again = Agent::start_in(&s.netns.enter(), &s.config, &[]);
        let plans = plans(&mut again, 7);
        let Some(Some((_, _, eviction))) = plans.get(name).copied() else {
            panic!(
                "round {round}: the pod seen {seen_for:?} before the SIGKILL is unknown after the restart: {plans:?}\n{}",
                again.drained_dump()
            );
        };
        // Never later than the control plane's: grace from the cut at the latest. Never much
        // earlier: the last renewal before the cut was sent at most one renew interval (1 s)
        // before it, and the contact on disk lags it by at most half of one.
        assert!(
            eviction <= cut_at + GRACE,
            "round {round}: eviction {eviction:?} after the cut + grace"
        );
        let early = (cut_at + GRACE)
            .duration_since(eviction)
            .unwrap_or_default();
        assert!(
            early <= Duration::from_millis(1700),
            "round {round}: eviction {early:?} before the cut + grace"
        );
        let deadline = Instant::now() + GRACE + Duration::from_secs(3);
        while pod_processes(&late.dir) > 0 {
            assert!(
                Instant::now() < deadline,
                "round {round}: {name} was not stopped after the restart:\n{}",
                again.dump()
            );
            s.sandbox.reap();
            std::thread::sleep(Duration::from_millis(10));
        }
        let stopped = SystemTime::now();
        assert!(
            stopped <= eviction + Duration::from_millis(50),
            "round {round}: {name} stopped {:?} after its eviction time",
            stopped.duration_since(eviction).unwrap_or_default()
        );
        again.kill_hard();
    }
}

/// Issue 10, the suite: 200 SIGKILLs at pseudo-random instants — 150 while connected (every
/// tenth 0–500 ms after a new pod appears), the last of them at the cut of a real partition,
/// 500 ms after a pod the agent saw appear, then 50 while cut off, as the fence plans, signals,
/// kills and writes its state (the first of those runs lives until its first request fails). Every pod the
/// control plane would delete is stopped by its eviction time and none before its plan; none it
/// would keep is touched; after the link returns, each stop is announced by exactly one Event.
#[test]
fn two_hundred_sigkills_across_a_partition_stop_every_pod_on_time_and_announce_each_once() {
    let Some(mut s) = scene("enforce", 6, GRACE) else {
        return;
    };
    let mut seed: u64 = 0x7369_676b_696c_6c73;
    let mut below = |bound: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % bound
    };
    let started = Instant::now();
    let bound = Duration::from_secs(240);
    let ne = |secs: u64| {
        json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": secs}])
    };
    let mut agent = start_agent(&s);
    let mut kills = 0;
    for round in 0..150 {
        assert!(started.elapsed() < bound, "round {round}: out of time");
        if round == 149 {
            // The last agent has been watching for a second when the last pod appears, 500 ms
            // before the kill that starts the partition: a pod the agent has seen must be
            // durable by then (one coalescing interval, 250 ms, after the watch delivers it).
            std::thread::sleep(Duration::from_millis(1000));
        }
        if round % 10 == 9 {
            let name: &'static str = Box::leak(format!("new-{round}").into_boxed_str());
            let secs = (round / 10 % 3) as u64;
            let p = spawn_pod(
                &s.server.api,
                &mut s.sandbox,
                s.dir.path(),
                name,
                (ne(secs), json!({})),
                true,
                None,
            );
            s.pods.push(FakePod {
                evicted_after: Some(Duration::from_secs(secs)),
                ..p
            });
            let seen_for = if round == 149 { 500 } else { below(500) };
            std::thread::sleep(Duration::from_millis(seen_for));
        } else {
            std::thread::sleep(Duration::from_millis(below(600)));
        }
        if round == 149 {
            // The last pod was seen 0–500 ms ago: the partition starts with this kill.
            s.netns.cut();
        }
        agent.kill_hard();
        kills += 1;
        s.sandbox.reap();
        if round < 149 {
            agent = Agent::start_in(&s.netns.enter(), &s.config, &[]);
        }
    }
    let cut_at = SystemTime::now();
    // The last contact the killed agents left on disk: what every later plan counts from.
    let on_disk = match nodewarden::state::load(&s.dir.path().join("state"), None) {
        nodewarden::state::Loaded::Found(state) => state
            .last_contact
            .as_deref()
            .and_then(nodewarden::state::parse_time),
        _ => None,
    }
    .expect("a last contact on disk at the cut");
    assert!(on_disk <= cut_at, "a contact after the cut: {on_disk:?}");
    // Death instants, watched every 20 ms from a thread of its own.
    let watched: Vec<(String, PathBuf)> = s
        .pods
        .iter()
        .map(|p| (p.name.to_string(), p.dir.clone()))
        .collect();
    let stop_watch = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let stop = stop_watch.clone();
        std::thread::spawn(move || {
            let mut died: std::collections::BTreeMap<String, SystemTime> = Default::default();
            let until = Instant::now() + Duration::from_secs(120);
            while !stop.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < until {
                for (name, dir) in &watched {
                    if !died.contains_key(name) && live_processes(dir) == 0 {
                        died.insert(name.clone(), SystemTime::now());
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            died
        })
    };
    // 50 more while cut off, at any instant of the fence's work.
    let latest = s
        .pods
        .iter()
        .filter_map(|p| p.evicted_after)
        .max()
        .unwrap_or_default();
    for round in 0..50 {
        assert!(
            started.elapsed() < bound,
            "cut-off round {round}: out of time"
        );
        agent = Agent::start_in(&s.netns.enter(), &s.config, &[]);
        // The first run lives until its first request has failed (1 s): a run that began
        // connected gives the API server that chance before it counts as cut off, and records
        // the partition, so that every later restart goes on at once, whenever it is killed.
        let lives = if round == 0 { 2000 } else { below(700) };
        std::thread::sleep(Duration::from_millis(lives));
        agent.kill_hard();
        kills += 1;
        s.sandbox.reap();
    }
    // A last agent sees every deadline through.
    let mut last = Agent::start_in(&s.netns.enter(), &s.config, &[]);
    let all_due = (cut_at + GRACE + latest + Duration::from_secs(2))
        .max(SystemTime::now() + Duration::from_secs(3));
    while SystemTime::now() < all_due {
        assert!(
            started.elapsed() < bound,
            "waiting for the deadlines: out of time"
        );
        s.sandbox.reap();
        std::thread::sleep(Duration::from_millis(100));
    }
    stop_watch.store(true, std::sync::atomic::Ordering::SeqCst);
    let died = watcher.join().expect("watcher");
    for p in &s.pods {
        match (p.evicted_after, died.get(p.name)) {
            (Some(after), Some(at)) => {
                let eviction = cut_at + GRACE + after;
                assert!(
                    *at <= eviction,
                    "{} stopped {:?} after the control plane could delete it ({kills} SIGKILLs)\n{}",
                    p.name,
                    at.duration_since(eviction).unwrap_or_default(),
                    last.drained_dump()
                );
                // Never before its plan: the SIGTERM the last contact on disk allows (20 ms for
                // the watcher's polling).
                let earliest = (on_disk + GRACE + after)
                    .checked_sub(MARGIN + CAP + Duration::from_millis(20))
                    .unwrap_or(on_disk);
                assert!(
                    *at >= earliest,
                    "{} stopped {:?} before its plan",
                    p.name,
                    earliest.duration_since(*at).unwrap_or_default()
                );
            }
            (Some(_), None) => panic!(
                "{} was never stopped ({kills} SIGKILLs):\n{}",
                p.name,
                last.drained_dump()
            ),
            (None, Some(_)) => panic!("{}, which the control plane keeps, was stopped", p.name),
            (None, None) => {}
        }
    }
    // The link returns: the held Events go out, one per stopped pod.
    s.netns.heal();
    let stopped: Vec<&FakePod> = s
        .pods
        .iter()
        .filter(|p| p.evicted_after.is_some())
        .collect();
    let fenced_events = |server: &ApiServer| -> Vec<String> {
        server
            .events()
            .iter()
            .filter(|e| e["reason"] == "NodewardenFenced")
            .filter_map(|e| e["message"].as_str().map(str::to_string))
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while fenced_events(&s.server.api).len() < stopped.len() {
        assert!(
            Instant::now() < deadline,
            "held Events not delivered: {:?}\n{}",
            fenced_events(&s.server.api),
            last.drained_dump()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Time for a duplicate to show if there were one.
    std::thread::sleep(Duration::from_secs(3));
    let events = fenced_events(&s.server.api);
    for p in &stopped {
        let needle = format!("Pod default/{} stopped", p.name);
        let n = events.iter().filter(|m| m.starts_with(&needle)).count();
        assert_eq!(n, 1, "{}: {n} NodewardenFenced Events: {events:?}", p.name);
    }
    eprintln!(
        "{kills} SIGKILLs; last contact on disk {:?} before the cut; {} pods stopped on time, {} Events",
        cut_at.duration_since(on_disk).unwrap_or_default(),
        stopped.len(),
        events.len()
    );
    last.kill_hard();
}

/// An agent stopped for longer than every deadline (an upgrade, a reboot) and started again while
/// the API server answers kills nothing: the old contact on disk only says no agent was running.
/// Before it first gives the API server its chance, the restart would take itself for cut off and
/// stop every pod whose deadline passed while it was down.
#[test]
fn an_agent_started_after_a_long_stop_kills_nothing_while_the_api_server_answers() {
    let Some(s) = scene("enforce", 1, GRACE) else {
        return;
    };
    let mut agent = start_agent(&s);
    agent.kill_hard();
    // Longer than the grace period and every toleration of the scene.
    std::thread::sleep(GRACE + Duration::from_secs(2));
    let mut again = Agent::start_in(&s.netns.enter(), &s.config, &[]);
    std::thread::sleep(Duration::from_secs(4));
    let log = again.drained_dump();
    for p in &s.pods {
        assert!(
            pod_processes(&p.dir) > 0,
            "{} was stopped by an agent whose API server answers:\n{log}",
            p.name
        );
    }
    for never in ["SIGTERM to pod", "cut off from the API server"] {
        assert!(!log.contains(never), "{never:?}:\n{log}");
    }
    again.kill_hard();
}

/// Every route the agent calls, for an API server that accepts and never answers (a load
/// balancer in front of a dead control plane).
fn hang_everything(api: &ApiServer, on: bool) {
    for route in [
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/*/leases/*"),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/*/leases/*"),
        ("POST", "/apis/coordination.k8s.io/v1/namespaces/*/leases"),
        ("GET", "/api/v1/nodes/*"),
        ("PATCH", "/api/v1/nodes/*"),
        ("PATCH", "/api/v1/nodes/*/status"),
        ("LIST", "/api/v1/pods"),
        ("WATCH", "/api/v1/pods"),
        ("LIST", "/api/v1/nodes"),
        ("WATCH", "/api/v1/nodes"),
        ("POST", "/api/v1/namespaces/*/events"),
    ] {
        api.faults().black_hole(route, on);
    }
}

/// Issue 21: an agent SIGKILLed and restarted while the API server hangs every request knows,
/// once the API server answers again, the pods created since (its list sent into the hung server
/// is given up after the request timeout and re-sent as soon as contact returns, not after the
/// client's 180 s read timeout), and the next partition stops them on time.
#[test]
fn after_a_restart_into_a_hung_api_server_a_pod_created_once_it_answers_is_stopped_on_time() {
    let Some(mut s) = scene("enforce", 20, GRACE) else {
        return;
    };
    let mut agent = start_agent(&s);
    agent.kill_hard();
    hang_everything(&s.server.api, true);
    let mut again = Agent::start_in(&s.netns.enter(), &s.config, &[]);
    // Longer than the request timeout (1 s: the Lease renewal fails), shorter than
    // `unreachableAfter` counted from the contact before the SIGKILL.
    std::thread::sleep(Duration::from_millis(1500));
    hang_everything(&s.server.api, false);
    assert!(
        again
            .wait_for(&["API server reachable"], Duration::from_secs(5))
            .is_some(),
        "contact never returned:\n{}",
        again.dump()
    );
    let ne0 = json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
        "effect": "NoExecute", "tolerationSeconds": 0}]);
    let late = spawn_pod(
        &s.server.api,
        &mut s.sandbox,
        s.dir.path(),
        "late",
        (ne0, json!({})),
        true,
        None,
    );
    // The view's bound: two request timeouts (`core::pod_view::bound`).
    std::thread::sleep(Duration::from_secs(2));
    let view =
        std::fs::read_to_string(s.dir.path().join("state").join("pod-view")).unwrap_or_default();
    assert_eq!(view.trim(), "current", "{}", again.dump());
    let cut_at = SystemTime::now();
    s.netns.cut();
    let deadline = Instant::now() + GRACE + Duration::from_secs(3);
    while pod_processes(&late.dir) > 0 {
        assert!(
            Instant::now() < deadline,
            "the pod created after the API server answered again was not stopped:\n{}",
            again.dump()
        );
        s.sandbox.reap();
        std::thread::sleep(Duration::from_millis(10));
    }
    let stopped = SystemTime::now();
    assert!(
        stopped <= cut_at + GRACE + Duration::from_millis(50),
        "stopped {:?} after the cut + grace",
        stopped.duration_since(cut_at + GRACE).unwrap_or_default()
    );
    again.kill_hard();
}

/// Rewrites the scene's config, each `(from, to)` in turn; each `from` must be there (the scene's
/// config changed shape otherwise).
fn rewrite_config(s: &Scene, edits: &[(&str, &str)]) {
    let mut text = std::fs::read_to_string(&s.config).expect("config");
    for (from, to) in edits {
        assert!(
            text.contains(from),
            "the scene's config changed shape: no {from:?} in\n{text}"
        );
        text = text.replace(from, to);
    }
    std::fs::write(&s.config, text).expect("config");
}

/// Issue 22, seed 0x2420 (`Fixes::unanswered_handed_on`): an agent SIGKILLed while its requests
/// hang, before it counted as cut off, hands its wait on in the contact file; the next run counts
/// its own wait on top and knows itself cut off that much sooner, rather than at its first
/// request's bound (the renew interval) or `unreachableAfter` after its start.
#[test]
fn a_run_killed_while_waiting_for_an_answer_hands_its_wait_on_to_the_next() {
    let Some(s) = scene("enforce", 20, GRACE) else {
        return;
    };
    // The defaults' shape: renewals every 10 s (the first request of a start is bounded by that),
    // requests time out after 10 s, cut off after 15 s without an answer.
    rewrite_config(
        &s,
        &[
            (
                "nodeStatusUpdateFrequency = \"1s\"\nnodeLeaseDurationSeconds = 4",
                "nodeStatusUpdateFrequency = \"10s\"\nnodeLeaseDurationSeconds = 40",
            ),
            (
                &format!("unreachableAfter = \"{UNREACHABLE_AFTER}\""),
                "unreachableAfter = \"15s\"",
            ),
            (
                &format!("nodeMonitorGracePeriod = \"{}s\"", GRACE.as_secs()),
                "nodeMonitorGracePeriod = \"40s\"",
            ),
        ],
    );
    let mut agent = start_agent(&s);
    agent.kill_hard();
    hang_everything(&s.server.api, true);
    // A start into a link that hangs: its wait goes to disk with the contact once a second.
    let contact_file = s.dir.path().join("state").join("last-contact");
    let started = Instant::now();
    let mut waiting = Agent::start_in(&s.netns.enter(), &s.config, &[]);
    let recorded = loop {
        let text = std::fs::read_to_string(&contact_file).unwrap_or_default();
        if text.contains("\nunanswered ") {
            break text;
        }
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "no wait written with the contact ({text:?}):\n{}",
            waiting.dump()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        recorded.lines().nth(1).is_some_and(|l| l.ends_with("ms")),
        "{recorded:?}"
    );
    // Killed 8.5 s after its start: before its first request's bound and `unreachableAfter`.
    std::thread::sleep(Duration::from_millis(8_500).saturating_sub(started.elapsed()));
    waiting.kill_hard();
    let log = waiting.drained_dump();
    assert!(
        !log.contains("cut off from the API server"),
        "cut off before the kill:\n{log}"
    );
    let waited_ms: u64 = std::fs::read_to_string(&contact_file)
        .expect("contact file")
        .lines()
        .nth(1)
        .and_then(|l| {
            l.strip_prefix("unanswered ")?
                .strip_suffix("ms")?
                .parse()
                .ok()
        })
        .expect("a wait on disk");
    assert!(
        (6_000..9_000).contains(&waited_ms),
        "the wait on disk: {waited_ms} ms"
    );
    let started = Instant::now();
    let mut again = Agent::start_in(&s.netns.enter(), &s.config, &[]);
    let Some((_, at)) = again.wait_for(&["cut off from the API server"], Duration::from_secs(14))
    else {
        panic!(
            "the restarted agent never counted as cut off:\n{}",
            again.dump()
        );
    };
    let took = at.duration_since(started);
    // 15 s less the wait handed on; without it, 10 s (its first request's bound).
    let expected = Duration::from_millis(15_000 - waited_ms);
    assert!(
        took < expected + Duration::from_millis(1_000) && took < Duration::from_secs(9),
        "cut off {took:?} after the restart, {expected:?} expected from the {waited_ms} ms handed on:\n{}",
        again.dump()
    );
    let log = again.dump();
    assert!(
        log.contains("the previous run waited"),
        "the restart does not say it took the wait over:\n{log}"
    );
    again.kill_hard();
    hang_everything(&s.server.api, false);
}

/// A Node whose kubelet posted Ready=False (docs/fence.md §2, *A Node not Ready*): the controller
/// may add the not-ready taint at any pass and delete the pods that tolerate it for a while, so
/// a failed request (here a renewal, one a second; elsewhere a read of the Lease, one a second
/// while the Node is not Ready) cuts it off: within seconds of the cut rather than
/// `unreachableAfter` (8 s here) after its last contact, which is what the same agent takes
/// with its Node Ready, measured first.
#[test]
fn a_node_not_ready_is_known_cut_off_within_seconds_of_a_cut() {
    let Some(s) = scene("dry-run", 20, GRACE) else {
        return;
    };
    // No deadline comes in the test: the grace period is long.
    rewrite_config(
        &s,
        &[
            (
                &format!("unreachableAfter = \"{UNREACHABLE_AFTER}\""),
                "unreachableAfter = \"8s\"",
            ),
            (
                &format!("nodeMonitorGracePeriod = \"{}s\"", GRACE.as_secs()),
                "nodeMonitorGracePeriod = \"60s\"",
            ),
        ],
    );
    let mut agent = start_agent(&s);
    let cut_off_after_a_cut = |agent: &mut Agent| {
        s.netns.cut();
        let cut = Instant::now();
        let (_, at) = agent
            .wait_for(&["cut off from the API server"], Duration::from_secs(20))
            .unwrap_or_else(|| panic!("never cut off:\n{}", agent.dump()));
        at.duration_since(cut)
    };
    // Ready: `unreachableAfter` after the last renewal (one a second here).
    let ready = cut_off_after_a_cut(&mut agent);
    assert!(
        ready > Duration::from_secs(6),
        "a Ready node cut off {ready:?} after the cut:\n{}",
        agent.dump()
    );
    s.netns.heal();
    agent
        .wait_for(&["API server reachable again"], Duration::from_secs(20))
        .unwrap_or_else(|| panic!("never reachable again:\n{}", agent.dump()));
    let posted = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    support::ready_false_seen(&s.server.api, NODE, &posted, &s.dir.path().join("state"));
    let _ = agent.drained_dump();
    let not_ready = cut_off_after_a_cut(&mut agent);
    // The renewal (a second here) or a read of the Lease (a second, each bounded by a second)
    // fails: about 2 s.
    assert!(
        not_ready < Duration::from_secs(4),
        "a Node not Ready cut off {not_ready:?} after the cut:\n{}",
        agent.dump()
    );
    let log = agent.dump();
    assert!(
        log.contains("cut off from the API server (a request failed while our Node is not Ready"),
        "the reason is not named:\n{log}"
    );
    agent.kill_hard();
    s.netns.heal();
}

/// A link back for a moment and cut again before the next renewal could prove that the kubelet
/// renewed too (docs/fence.md §2, *A relapse*): the control plane may still count from the
/// contact before the first cut, so the agent, which reads its Lease every second until that
/// renewal, knows itself cut off again within seconds rather than `unreachableAfter` after the
/// return. Without the watch it took `unreachableAfter` (8 s here).
#[test]
fn a_link_cut_again_before_its_return_proved_the_kubelet_is_known_cut_off_within_seconds() {
    let Some(s) = scene("dry-run", 20, GRACE) else {
        return;
    };
    // A kubelet renews the node's Lease (the agent renews a Lease of its own): renewals every
    // 5 s, the kubelet's lag 5.2 s. Status is reported rarely, so no other request fails in the
    // window; the grace period is long, so no deadline comes in the test.
    rewrite_config(
        &s,
        &[
            (
                "onlyStatusReporter = true\nleaseName = \"n1\"\n",
                "onlyStatusReporter = false\n",
            ),
            (
                "nodeStatusUpdateFrequency = \"1s\"\nnodeLeaseDurationSeconds = 4",
                "nodeStatusUpdateFrequency = \"30s\"\nnodeLeaseDurationSeconds = 20",
            ),
            (
                &format!("unreachableAfter = \"{UNREACHABLE_AFTER}\""),
                "unreachableAfter = \"8s\"",
            ),
            (
                &format!("nodeMonitorGracePeriod = \"{}s\"", GRACE.as_secs()),
                "nodeMonitorGracePeriod = \"60s\"",
            ),
        ],
    );
    let mut agent = start_agent(&s);
    s.netns.cut();
    agent
        .wait_for(&["cut off from the API server"], Duration::from_secs(20))
        .unwrap_or_else(|| panic!("never cut off:\n{}", agent.dump()));
    // Long enough for the renewal in flight to fail at its bound (the renew interval): the
    // return is then the first renewal stored after a failure, a fresh contact.
    std::thread::sleep(Duration::from_secs(6));
    s.netns.heal();
    agent
        .wait_for(&["lease renewed again"], Duration::from_secs(20))
        .unwrap_or_else(|| panic!("never renewed again:\n{}", agent.dump()));
    s.netns.cut();
    let cut = Instant::now();
    let (line, at) = agent
        .wait_for(&["cut off from the API server"], Duration::from_secs(12))
        .unwrap_or_else(|| panic!("never cut off again:\n{}", agent.dump()));
    let took = at.duration_since(cut);
    // A read a second after the return, unanswered within its second: about 2 s; without the
    // watch, `unreachableAfter` (8 s) after the renewal.
    assert!(
        took < Duration::from_secs(4),
        "cut off again {took:?} after the second cut ({line}):\n{}",
        agent.dump()
    );
    let log = agent.dump();
    assert!(
        log.contains("a read of our Lease went unanswered"),
        "the relapse's failure is not named:\n{log}"
    );
    // Killed in the relapse: the state names the contact its deadlines count from, and the next
    // run resumes the relapse from it, cut off at once (`Link::with_unproven_return`) rather than
    // `unreachableAfter` after the return.
    std::thread::sleep(Duration::from_millis(500));
    agent.kill_hard();
    let state = std::fs::read_to_string(s.dir.path().join("state").join("state.json"))
        .expect("the state file");
    assert!(state.contains("\"countedFrom\""), "{state}");
    let mut again = start_agent(&s);
    again
        .wait_for(
            &["by a failure before the return proved the kubelet renewed: fencing goes on at once"],
            Duration::from_secs(5),
        )
        .unwrap_or_else(|| panic!("the restart did not resume the relapse:\n{}", again.dump()));
    again.kill_hard();
    s.netns.heal();
}
