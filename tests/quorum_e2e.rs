//! The peer quorum end to end (issue 9): five real agents, each in a network namespace of its own
//! with a link to the API server's bridge and a link to the peers' bridge, fake pods as real
//! processes in a cgroup sandbox per node, and partitions made for real (`support::lab`).
//!
//! Each test is one row of the controller's zone rules (docs/semantics.md §5.5) as a node cut off
//! from the API server must mirror them (docs/fence.md §5): alone → the control plane evicts, so
//! the fence stops on time; the API down for everyone, or a partial disruption of a small zone (3
//! of 5) → it evicts nothing, so neither does anyone here; peer traffic that is forged, stale,
//! replayed or unsigned never counts.

mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use support::lab::{
    API_REQUEST_TIMEOUT, GRACE, Lab, LabSpec, PEER_INTERVAL, PEER_PORT, PEER_TIMEOUT, StopPlan,
    hex, http_exchange, latest_stop_plan, metric, random_hex, verdicts,
};
use support::{agent_bin, is_root, require};

/// The `tolerationSeconds` of the pods a peer-confirmed enforce must stop on time. A verdict of
/// enforce from peers' answers is `pending` until peers that lost the API together with this node
/// would know it (here 1 s renew + 5 s monitor period, then the longer of `unreachableAfter`
/// (2.5 s) and 1 s renew + 1 s request timeout = 8.5 s after the last contact; the agent warns
/// about it at start): with a 4 s grace and a 0.5 s margin, a pod tolerating less than 5 s would
/// be stopped after the control plane could delete it. 8 s: eviction 12 s and SIGTERM 10.5 s
/// after the last contact, so the SIGTERM is on plan even when the first settled round (about
/// 9 s) comes late under load.
const ENFORCED_TOLERATION: Duration = Duration::from_secs(8);

/// Slack for the test's own observation: pods are polled every 20 ms, and plan times are logged
/// to the millisecond.
const POLL: Duration = Duration::from_millis(20);

fn lab(spec: LabSpec) -> Option<Lab> {
    if !require(is_root(), "root (network namespaces, bridges, cgroups)") {
        return None;
    }
    Some(Lab::build(&spec))
}

/// The lab of five nodes in one zone whose `-short` pods tolerate `toleration`, every agent
/// started.
fn started(toleration: Duration) -> Option<Lab> {
    let mut lab = lab(LabSpec {
        toleration,
        ..LabSpec::default()
    })?;
    lab.start_all();
    Some(lab)
}

/// Watches every pod of every node until `until` (wall clock); returns the moment each pod that
/// stopped was first seen without a process.
fn watch_pods(lab: &mut Lab, until: SystemTime) -> BTreeMap<String, SystemTime> {
    let mut stopped = BTreeMap::new();
    // Bounded by `until`, itself at most a minute away in every test.
    let hard_stop = Instant::now() + Duration::from_secs(60);
    while SystemTime::now() < until && Instant::now() < hard_stop {
        for n in &lab.nodes {
            for p in &n.pods {
                if !stopped.contains_key(&p.name) && !p.alive() {
                    stopped.insert(p.name.clone(), SystemTime::now());
                }
            }
        }
        lab.reap();
        std::thread::sleep(POLL);
    }
    stopped
}

/// Waits for node `i` to log the verdict `verdict`; returns the line and when it arrived.
fn expect_verdict(lab: &mut Lab, i: usize, verdict: &str, within: Duration) -> (String, Instant) {
    let needle = format!("quorum verdict: {verdict}");
    let node = lab.node(i);
    let name = node.name.clone();
    let found = node.agent().wait_for(&[&needle], within);
    found.unwrap_or_else(|| panic!("{name} never logged {needle:?}:\n{}", node.log()))
}

/// Waits for each of n1, n2 and n3 to log `verdict` (within 15 s) and checks that its reason
/// says `because`.
fn expect_verdicts_saying(lab: &mut Lab, verdict: &str, because: &str) {
    for i in 1..=3 {
        let (line, _) = expect_verdict(lab, i, verdict, Duration::from_secs(15));
        assert!(
            line.contains(because),
            "n{i} said {verdict} for another reason than {because:?}: {line}"
        );
    }
}

/// How many peers answered the round a verdict line reports.
fn answered(line: &str) -> usize {
    support::field(line, "answered")
        .and_then(|a| a.parse().ok())
        .unwrap_or(0)
}

/// Waits for node `i` to hold on its peers' word: a hold verdict drawn from at least two answers
/// (this node and two peers cut off are the three of five of a partial disruption), never the
/// `withoutPeers` fallback of a node that heard nobody.
fn expect_hold_from_answers(lab: &mut Lab, i: usize, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (line, _) = expect_verdict(lab, i, "hold", left);
        if answered(&line) >= 2 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "n{i} held without its peers' answers: {line}"
        );
    }
}

/// Asserts that the given nodes never said enforce in this partition: a transient enforce that
/// happened to kill nothing (because it was corrected before the first SIGTERM) is still a
/// wrong verdict.
fn assert_never_enforced(lab: &mut Lab, nodes: &[usize]) {
    for &i in nodes {
        let v = verdicts(&lab.node(i).log());
        assert!(
            v.iter().all(|(v, _)| v != "enforce"),
            "n{i} said enforce where the control plane evicts nothing: {v:?}"
        );
    }
}

/// Asserts that no pod except those in `allowed` stopped, and no agent but those in `allowed`'s
/// nodes sent a SIGTERM.
fn assert_only_stopped(lab: &mut Lab, stopped: &BTreeMap<String, SystemTime>, allowed: &[&str]) {
    for (pod, at) in stopped {
        assert!(
            allowed.contains(&pod.as_str()),
            "{pod} was stopped at {at:?}, which nothing allows"
        );
    }
    // Each stop allowed and seen was the fence's doing, and it said so.
    for pod in allowed {
        let Some(node) = lab
            .nodes
            .iter_mut()
            .find(|n| pod.starts_with(&format!("{}-", n.name)))
        else {
            panic!("no node owns {pod}");
        };
        let log = node.log();
        assert!(
            !stopped.contains_key(*pod) || log.contains(&format!("SIGTERM to pod default/{pod} ")),
            "{pod} stopped without the fence's SIGTERM record:\n{log}"
        );
    }
    for n in &mut lab.nodes {
        let log = n.log();
        let own: Vec<&&str> = allowed
            .iter()
            .filter(|p| p.starts_with(&format!("{}-", n.name)))
            .collect();
        if own.is_empty() {
            assert!(
                !log.contains("SIGTERM to pod") && !log.contains("action=kill"),
                "{} stopped a pod:\n{log}",
                n.name
            );
        }
        for p in &n.pods {
            if !allowed.contains(&p.name.as_str()) {
                assert!(p.alive(), "{} is not running", p.name);
            }
        }
    }
}

/// The fence's promise for a pod stopped while the control plane evicts: stopped by the moment
/// the control plane could delete it (`bound`, from the test's own clock) and by its planned
/// eviction time, never before its planned SIGTERM.
fn assert_stopped_on_time(pod: &str, at: SystemTime, plan: StopPlan, bound: SystemTime) {
    assert!(
        at <= bound,
        "{pod} stopped {:?} after the control plane could delete it",
        at.duration_since(bound).unwrap_or_default()
    );
    assert!(
        at <= plan.eviction_time + POLL,
        "{pod} stopped {:?} after its planned eviction time",
        at.duration_since(plan.eviction_time).unwrap_or_default()
    );
    assert!(
        at + POLL >= plan.sigterm_at,
        "{pod} stopped {:?} before its planned SIGTERM",
        plan.sigterm_at.duration_since(at).unwrap_or_default()
    );
    let ms = |a: SystemTime, b: SystemTime| match a.duration_since(b) {
        Ok(d) => d.as_millis() as i128,
        Err(e) => -(e.duration().as_millis() as i128),
    };
    eprintln!(
        "{pod}: stopped {} ms after its planned SIGTERM, {} ms before its eviction time, {} ms before the bound",
        ms(at, plan.sigterm_at),
        ms(plan.eviction_time, at),
        ms(bound, at)
    );
}

/// `nodewarden status --output json` for a node (it reads the state directory only).
fn status_json(node: &support::lab::LabNode) -> Value {
    let out = std::process::Command::new(agent_bin())
        .args(["status", "--output", "json", "--config"])
        .arg(&node.config)
        .output()
        .expect("run nodewarden status");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "status --output json of {}: {e}\n{}",
            node.name,
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Node `i`'s stop plan for its `-short` pod, from its log.
fn short_plan(lab: &mut Lab, i: usize) -> StopPlan {
    let pod = format!("{}-short", lab.node(i).name);
    stop_plan(lab, i, &pod)
}

/// Node `i`'s latest stop plan for `pod`, from its log.
fn stop_plan(lab: &mut Lab, i: usize, pod: &str) -> StopPlan {
    let log = lab.node(i).log();
    latest_stop_plan(&log, pod).unwrap_or_else(|| panic!("no stop plan for {pod}:\n{log}"))
}

/// Watches every pod until a second past `bound`, and asserts that node `i`'s `pod` stopped on
/// time by its logged plan (`assert_stopped_on_time`); every pod that stopped, and when `pod` did.
fn expect_stopped_on_time(
    lab: &mut Lab,
    i: usize,
    pod: &str,
    bound: SystemTime,
) -> (BTreeMap<String, SystemTime>, SystemTime) {
    let stopped = watch_pods(lab, bound + Duration::from_secs(1));
    let at = *stopped
        .get(pod)
        .unwrap_or_else(|| panic!("{pod} never stopped:\n{}", lab.node(i).log()));
    let plan = stop_plan(lab, i, pod);
    assert_stopped_on_time(pod, at, plan, bound);
    (stopped, at)
}

/// The lab itself, before any quorum: every agent registers and renews its Lease over its `api`
/// link; the peer bridge joins the namespaces; each kind of cut drops exactly the links it says.
#[test]
fn the_lab_joins_five_agents_and_cuts_exactly_the_links_it_says() {
    let Some(mut lab) = lab(LabSpec {
        peers: false,
        ..LabSpec::default()
    }) else {
        return;
    };
    lab.start_all();
    let renew_time = |lab: &Lab, node: &str| {
        lab.server
            .api
            .lease("kube-node-lease", node)
            .and_then(|l| l["spec"]["renewTime"].as_str().map(str::to_string))
    };
    let first: Vec<Option<String>> = (1..=5)
        .map(|i| renew_time(&lab, &format!("n{i}")))
        .collect();
    std::thread::sleep(Duration::from_millis(2200));
    for i in 1..=5 {
        let name = format!("n{i}");
        assert!(lab.server.api.node(&name).is_some(), "{name} has no Node");
        let now = renew_time(&lab, &name);
        assert!(
            now.is_some() && now != first[i - 1],
            "{name} did not renew its Lease: {:?} then {now:?}",
            first[i - 1]
        );
    }
    let api = lab.server.addr;
    let health = |lab: &Lab, i: usize| SocketAddr::from(lab.nodes[i - 1].health_addr());
    // Every namespace reaches the API server and every other node over the peer bridge.
    for i in 1..=5 {
        assert!(lab.can_connect(i, api), "n{i} cannot reach the API server");
        let j = i % 5 + 1;
        assert!(
            lab.can_connect(i, health(&lab, j)),
            "n{i} cannot reach n{j} over the peer bridge"
        );
    }
    // Only across the bridges: the api subnet is not reachable over the peer link.
    let n2_api_side = SocketAddr::new(lab.nodes[1].api_ip.into(), 9);
    lab.cut_api(1);
    assert!(!lab.can_connect(1, api), "n1 still reaches the API server");
    assert!(
        !lab.can_connect(1, n2_api_side),
        "n1 reaches the api subnet"
    );
    assert!(lab.can_connect(1, health(&lab, 2)), "n1 lost its peers");
    assert!(lab.can_connect(2, api), "n2 lost the API server with n1");
    lab.cut_all(1);
    assert!(!lab.can_connect(1, health(&lab, 2)), "n1 still reaches n2");
    assert!(
        lab.can_connect(2, health(&lab, 3)),
        "n2 lost its peers with n1"
    );
    lab.api_down();
    assert!(
        !lab.can_connect(2, api),
        "the API server is still up for n2"
    );
    assert!(lab.can_connect(2, health(&lab, 3)), "n2 lost its peers");
    lab.api_up();
    assert!(lab.can_connect(2, api), "the API server did not come back");
    lab.heal_api(1);
    assert!(lab.can_connect(1, api), "n1's API link did not come back");
}

/// Scenario 1: a node that loses the API while its peers keep it is the one the control plane
/// evicts from: it stops its briefly-tolerating pod by the eviction time, keeps the one that
/// tolerates forever, and nobody else kills anything.
#[test]
fn a_node_alone_without_the_api_fences_on_time_and_the_others_kill_nothing() {
    let tol = ENFORCED_TOLERATION;
    let Some(mut lab) = started(tol) else {
        return;
    };
    let cut_at = SystemTime::now();
    lab.cut_api(1);
    let (line, _) = expect_verdict(&mut lab, 1, "enforce", Duration::from_secs(12));
    assert!(support::field(&line, "reason").is_some(), "{line}");
    assert!(
        answered(&line) >= 1,
        "enforce without a peer's word: {line}"
    );
    eprintln!(
        "n1: enforce {} ms after the cut",
        SystemTime::now()
            .duration_since(cut_at)
            .unwrap_or_default()
            .as_millis()
    );
    let bound = cut_at + GRACE + tol;
    let (stopped, _) = expect_stopped_on_time(&mut lab, 1, "n1-short", bound);
    assert_only_stopped(&mut lab, &stopped, &["n1-short", "n2-short", "n3-short"]);
    let v = verdicts(&lab.node(1).log());
    assert!(
        v.iter().all(|(v, _)| v != "hold"),
        "n1 held while its peers reached the API: {v:?}"
    );
}

/// n1's own path to the API server is cut while its node's Lease goes on being renewed, as a
/// kubelet on a path of its own renews it (the packaged DaemonSet reaches the API server through
/// the `kubernetes` Service, the kubelet through its kubeconfig): the control plane hears the
/// node. Its peers read those renewals, later than n1's last contact by more than a renew
/// interval, and its deadlines count from the latest (docs/fence.md §5, *The kubelet heard after
/// this agent*): n1 stops nothing, and says why. Counting from its own last contact, as before,
/// it stopped `n1-short` by the same bound as the test above.
#[test]
fn an_agent_cut_off_alone_while_its_kubelet_renews_stops_nothing() {
    let tol = ENFORCED_TOLERATION;
    let Some(mut lab) = started(tol) else {
        return;
    };
    let cut_at = SystemTime::now();
    lab.cut_api(1);
    // As n1's kubelet: a renewal of its Lease every half second (its renew interval is 1 s
    // here), bounded by a minute.
    let (stop, renewer) = renew_as_kubelet(&lab, "n1");
    // The bound by which the test above stops n1-short, and two seconds more.
    let until = cut_at + GRACE + tol + Duration::from_secs(2);
    let stopped = watch_pods(&mut lab, until);
    stop.store(true, Ordering::Relaxed);
    renewer.join().expect("renewer");
    let log = lab.node(1).log();
    assert!(
        !stopped.contains_key("n1-short"),
        "n1-short stopped though the node's Lease was renewed:\n{log}"
    );
    assert!(
        log.contains("the kubelet reaches the API server while this agent's own requests fail"),
        "{log}"
    );
    assert_only_stopped(&mut lab, &stopped, &[]);
}

/// Renews `node`'s Lease every half second from the test, as its kubelet on a path of its own
/// would (the lab's renew interval is 1 s), until the returned flag is set or a minute passes.
fn renew_as_kubelet(
    lab: &Lab,
    node: &'static str,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (api, flag) = (lab.server.api.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !flag.load(Ordering::Relaxed) && Instant::now() < deadline {
            let now = humantime::format_rfc3339_micros(SystemTime::now()).to_string();
            let renewed = api.update_lease_as("kubelet", "kube-node-lease", node, |l| {
                l["spec"]["renewTime"] = Value::String(now);
            });
            assert!(renewed.is_ok(), "renewal: {renewed:?}");
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    (stop, thread)
}

/// Three nodes of one zone. n1's agent loses its own path to the API server (the kubeconfig's
/// address), while the path its kubelet takes (the server's second address, `[fence]
/// kubeletServer`) still answers and, as its kubelet, the test renews n1's Lease; n2 and n3
/// lose the API server altogether. This is the simulator's seed 0x420 with `--agent-path-cuts`
/// (issue 22): answering "cut off" for its agent's failed path, n1 made every node of the zone
/// known cut off, and n2 and n3 held, while the control plane, which hears n1, saw two of three
/// nodes cut off (no disruption: that takes more than two) and evicted them. Now each round of
/// n1 reads `/readyz` over the kubelet's path (docs/fence.md §5, *The kubelet's path probed*):
/// answered, n1 stops nothing and says why, and answers its peers that it reaches the API
/// server; n2 and n3 enforce and stop their pods on time.
#[test]
fn an_agent_whose_kubelets_path_answers_holds_and_its_cut_off_peers_enforce() {
    let tol = ENFORCED_TOLERATION;
    let Some(mut lab) = lab(LabSpec {
        nodes: 3,
        toleration: tol,
        kubelet_server: true,
        ..LabSpec::default()
    }) else {
        return;
    };
    lab.start_all();
    let also = lab.server.also.expect("a second address");
    assert!(lab.can_connect(1, also) && lab.can_connect(1, lab.server.addr));
    let cut_at = SystemTime::now();
    lab.cut_agent_path(1);
    lab.cut_api(2);
    lab.cut_api(3);
    // Exactly n1's agent's own path is gone.
    assert!(lab.can_connect(1, also) && !lab.can_connect(1, lab.server.addr));
    assert!(!lab.can_connect(2, also) && !lab.can_connect(3, also));
    let (stop, renewer) = renew_as_kubelet(&lab, "n1");
    let bound = cut_at + GRACE + tol;
    let stopped = watch_pods(&mut lab, bound + Duration::from_secs(1));
    stop.store(true, Ordering::Relaxed);
    renewer.join().expect("renewer");
    for (i, pod) in [(2, "n2-short"), (3, "n3-short")] {
        let at = *stopped.get(pod).unwrap_or_else(|| {
            panic!(
                "{pod} never stopped:\n{}\n--- n1 ---\n{}",
                lab.node(i).log(),
                lab.node(1).log()
            )
        });
        let plan = stop_plan(&mut lab, i, pod);
        assert_stopped_on_time(pod, at, plan, bound);
        let v = verdicts(&lab.node(i).log());
        assert!(
            v.iter().any(|(v, r)| v == "enforce"
                && r.contains("1 peer(s) answer that they reach the API server")),
            "n{i}: {v:?}"
        );
    }
    let log = lab.node(1).log();
    assert!(
        !stopped.contains_key("n1-short"),
        "n1-short stopped though its kubelet's path answered:\n{log}"
    );
    assert!(
        log.contains("the kubelet's path to the API server (fence.kubeletServer) answers ready"),
        "{log}"
    );
    assert!(gets(&lab, "/readyz") >= 2, "the probes reached the server");
    assert_only_stopped(&mut lab, &stopped, &["n2-short", "n3-short"]);
}

/// The lab with n1 alone in zone-x, its `-short` pod tolerating `tol`, every agent started.
fn n1_alone(tol: Duration) -> Option<Lab> {
    let mut lab = lab(LabSpec {
        toleration: tol,
        zones: vec!["zone-x"],
        ..LabSpec::default()
    })?;
    lab.start_all();
    Some(lab)
}

/// Watches every pod until 2 s past `bound` and asserts that n1's `-short` pod stopped by then;
/// every pod that stopped, and n1's log.
fn n1_short_stopped_by(lab: &mut Lab, bound: SystemTime) -> (BTreeMap<String, SystemTime>, String) {
    let stopped = watch_pods(lab, bound + Duration::from_secs(2));
    let log = lab.node(1).log();
    let at = *stopped
        .get("n1-short")
        .unwrap_or_else(|| panic!("n1-short never stopped:\n{log}"));
    assert!(
        at <= bound,
        "n1-short stopped {:?} after the control plane could delete it:\n{log}",
        at.duration_since(bound).unwrap_or_default()
    );
    (stopped, log)
}

/// n1, alone in its zone, is cut off from the API server while the four nodes of zone-a reach
/// it. Its verdict (its whole zone cut off: `peers.wholeZoneCutOff`, enforce by default) would be
/// pending until peers lost together with it would know (8.5 s after its last contact). Its Node
/// is tainted once the grace period has passed since the cut, as the controller would: the next
/// round's peers read the taint, and that settles the verdict at once (docs/fence.md §5, *Peers
/// read the Node*). Its pod tolerating 3 s is stopped by the taint plus those 3 s, which the
/// settled window would have missed.
#[test]
fn a_taint_the_peers_read_settles_a_pending_enforce_at_once() {
    let tol = Duration::from_secs(3);
    let Some(mut lab) = n1_alone(tol) else {
        return;
    };
    let cut_at = SystemTime::now();
    lab.cut_api(1);
    let (line, _) = expect_verdict(&mut lab, 1, "pending", Duration::from_secs(6));
    assert!(line.contains("peers.wholeZoneCutOff"), "{line}");
    let wait = (cut_at + GRACE)
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    std::thread::sleep(wait);
    let tainted_at = SystemTime::now();
    let added = humantime::format_rfc3339_seconds(tainted_at).to_string();
    support::taint_unreachable(&lab.server.api, "n1", &added);
    let (stopped, log) = n1_short_stopped_by(&mut lab, tainted_at + tol);
    let settled = verdicts(&log)
        .into_iter()
        .find(|(v, _)| v == "enforce")
        .unwrap_or_else(|| panic!("never enforced:\n{log}"));
    assert!(
        settled
            .1
            .contains("settled: a peer that reaches the API server read this node's Node"),
        "{settled:?}"
    );
    assert_only_stopped(&mut lab, &stopped, &["n1-short"]);
    // The state file keeps that the peers' reads came back: a restart's SIGTERMs would wait for
    // them from its first round (docs/fence.md §5, *The SIGTERM waits for a read*). Written at
    // once while cut off, with the kill at the latest.
    let state = std::fs::read_to_string(lab.node(1).state.join("state.json")).unwrap_or_default();
    assert!(state.contains("\"peersRead\": true"), "{state}");
}

/// n1, alone in its zone, is cut off from the API server, and its agent is SIGKILLed at once.
/// While it is down the control plane taints n1 (here a second after the cut: one whose view of
/// n1 went stale earlier than the agent's own contact, which no agent can see). The restarted
/// run has no view of the taint: its Node on disk is from before the cut, and no round of this
/// run read the Node without the taint. The peers' answers carry the taint's `timeAdded`
/// (docs/fence.md §5, *The times the peers read*), and the fence counts the pod's toleration from
/// it: the pod tolerating 6 s is stopped by the taint plus 6 s. Counted from its last contact
/// instead (a grace period of 4 s later), it would be stopped about 2 s after its deletion.
#[test]
fn a_run_restarted_while_cut_off_counts_from_the_taint_time_its_peers_read() {
    let tol = Duration::from_secs(6);
    let Some(mut lab) = n1_alone(tol) else {
        return;
    };
    lab.cut_api(1);
    lab.node(1).kill_agent();
    std::thread::sleep(Duration::from_secs(1));
    // The API server's times are to the second: `timeAdded` is no later than now.
    let added = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let added_at = humantime::parse_rfc3339(&added).expect("a time");
    support::taint_unreachable(&lab.server.api, "n1", &added);
    lab.node(1).start_agent();
    let bound = added_at + tol;
    let (stopped, log) = n1_short_stopped_by(&mut lab, bound);
    assert!(
        log.contains("peers read this node's Node: node.kubernetes.io/unreachable:NoExecute added"),
        "{log}"
    );
    let plan = latest_stop_plan(&log, "n1-short")
        .unwrap_or_else(|| panic!("no stop plan for n1-short:\n{log}"));
    assert!(plan.eviction_time <= bound + POLL, "{plan:?}");
    assert_only_stopped(&mut lab, &stopped, &["n1-short"]);
}

/// n1's pod watch never delivers a pod bound to it as its link is cut, though its kubelet runs
/// the pod: here the pod is created in the API server just after the cut and its process started
/// in its cgroup, as a kubelet whose watch delivered it first would have. n1 finds the cgroup its
/// view lacks and asks its peers about it; one that reaches the API server lists n1's pods and
/// answers with it, and the fence plans and stops it on time with the others (docs/fence.md §5,
/// *Pods the view missed*). Without the list, it would run on past its deletion.
#[test]
fn a_pod_the_watch_missed_before_the_cut_is_listed_by_a_peer_and_stopped_on_time() {
    let tol = ENFORCED_TOLERATION;
    let Some(mut lab) = started(tol) else {
        return;
    };
    let cut_at = cut_with_a_late_pod(&mut lab, tol);
    let bound = cut_at + GRACE + tol;
    let (stopped, _) = expect_stopped_on_time(&mut lab, 1, "n1-late", bound);
    let log = lab.node(1).log();
    assert!(
        log.contains("pod default/n1-late runs here but the pod watch had not delivered it"),
        "{log}"
    );
    // Asked of three peers a round (`quorum::LEASE_READERS`) until one listed it: one round, or
    // two when the next was sent as the first was answered.
    let lists = lists_of_pods(&lab, "n1");
    assert!((1..=6).contains(&lists), "{lists} lists of n1's pods");
    assert_only_stopped(
        &mut lab,
        &stopped,
        &["n1-late", "n1-short", "n2-short", "n3-short"],
    );
}

/// Every pod watch lags 20 s behind the API server (a watch cache fallen behind; lists stay
/// current). A pod is bound to n1 and started in its cgroup, as a kubelet whose watch came first
/// would have: n1's agent sees the cgroup appear that its view lacks and lists its node's pods at
/// once, while its link is up. n1 then loses every link, so no peer can list the pod for it, and
/// the fence stops it on time all the same (docs/fence.md §5, *Pods the view missed*). Without
/// that list the pod would be unknown to the fence and never stopped.
#[test]
fn a_pod_whose_cgroup_appears_before_the_watch_delivers_it_is_listed_at_once() {
    let tol = ENFORCED_TOLERATION;
    let Some(mut lab) = started(tol) else {
        return;
    };
    lab.server
        .api
        .faults()
        .watch_lag("pods", Duration::from_secs(20));
    // The first list fails: the next goes out at the fence's idle tick, 10 s later, not at once
    // (a list answered by an error at once must not turn into a list every tick).
    lab.server.api.faults().fail_next(
        ("LIST", "/api/v1/pods"),
        1,
        support::apiserver::Fault::Status500,
    );
    let before = lists_of_pods(&lab, "n1");
    let added = Instant::now();
    lab.add_pod(1, "n1-late", Some(tol));
    let listed = "pod default/n1-late runs here but the pod watch had not delivered it: this node's pods were listed";
    let found = lab
        .node(1)
        .agent()
        .wait_for(&[listed], Duration::from_secs(15));
    let Some((_, at)) = found else {
        panic!("{}", lab.node(1).log())
    };
    assert!(
        at.duration_since(added) > Duration::from_secs(9),
        "listed again {:?} after a failure",
        at.duration_since(added)
    );
    assert_eq!(
        lists_of_pods(&lab, "n1") - before,
        2,
        "one failed list of n1's pods and one answered"
    );
    let cut_at = SystemTime::now();
    lab.cut_all(1);
    let (stopped, _) = expect_stopped_on_time(&mut lab, 1, "n1-late", cut_at + GRACE + tol);
    assert!(stopped.contains_key("n1-short"), "{stopped:?}");
}

/// How many lists of `node`'s pods the API server has answered (its watches apart).
fn lists_of_pods(lab: &Lab, node: &str) -> usize {
    let selector = format!("spec.nodeName={node}");
    lab.server
        .api
        .requests()
        .iter()
        .filter(|r| {
            r.method == "GET"
                && r.path == "/api/v1/pods"
                && r.query_pairs
                    .iter()
                    .any(|(k, v)| k == "fieldSelector" && *v == selector)
                && !r.query_pairs.iter().any(|(k, _)| k == "watch")
        })
        .count()
}

/// Cuts n1 from the API server, then binds `n1-late` (tolerating `toleration`) to it with its
/// process started, as a kubelet whose watch came first would have, and waits for n1 to enforce;
/// when the cut was made.
fn cut_with_a_late_pod(lab: &mut Lab, toleration: Duration) -> SystemTime {
    let cut_at = SystemTime::now();
    lab.cut_api(1);
    lab.add_pod(1, "n1-late", Some(toleration));
    expect_verdict(lab, 1, "enforce", Duration::from_secs(12));
    cut_at
}

/// The same in `dry-run`: the fence finds the pods' cgroups to read which run, and a pod a peer
/// listed is planned and reported as it would be stopped; nothing is stopped.
#[test]
fn in_dry_run_a_pod_the_watch_missed_is_listed_and_reported_as_it_would_be_stopped() {
    let tol = ENFORCED_TOLERATION;
    let Some(mut lab) = lab(LabSpec {
        toleration: tol,
        dry_run: vec![1],
        ..LabSpec::default()
    }) else {
        return;
    };
    lab.start_all();
    let cut_at = cut_with_a_late_pod(&mut lab, tol);
    let would = "dry-run: would kill pod default/n1-late";
    let node = lab.node(1);
    let found = node.agent().wait_for(&[would], Duration::from_secs(12));
    let log = node.log();
    assert!(found.is_some(), "{log}");
    assert!(
        log.contains("pod default/n1-late runs here but the pod watch had not delivered it"),
        "{log}"
    );
    let stopped = watch_pods(&mut lab, cut_at + GRACE + tol + Duration::from_secs(1));
    assert!(
        !stopped.keys().any(|p| p.starts_with("n1-")),
        "dry-run stopped {stopped:?}"
    );
}

/// A node whose Node carries the unreachable taint when its link is cut was judged already. A
/// peer heard after this node's own next renewal would have landed (renew 1 s, no kubelet lag,
/// and a second) shows the control plane still answers, and settles its verdict: it need not wait
/// until peers lost together with it would know (8.5 s after its last contact, as
/// `ENFORCED_TOLERATION` says), which the pods of a node tainted earlier may not outlast
/// (docs/fence.md §5, *A node seen tainted*). A round before that peer is heard may settle it
/// already, its peers having read the taint on the Node (*Peers read the Node*): either way, long
/// before the 8.5 s.
#[test]
fn a_node_seen_tainted_settles_on_a_peer_heard_after_its_own_next_renewal() {
    seen_tainted_settles("node.kubernetes.io/unreachable", |line| {
        line.contains("seen tainted")
            || line.contains("settled: a peer that reaches the API server read this node's Node")
    });
}

/// The same with the not-ready taint: the controller swaps it for the unreachable one as the node
/// goes Unknown, outside the zone's rate limiter, so the node counts as seen tainted (docs/fence.md
/// §5). Its peers' reads count the not-ready taint too (since the fortieth session,
/// `Fixes::not_ready_read`), so a round that reads it may settle it first, as for the unreachable
/// one: whichever comes first, long before the 8.5 s.
#[test]
fn a_node_seen_with_the_not_ready_taint_settles_as_one_seen_tainted() {
    seen_tainted_settles("node.kubernetes.io/not-ready", |line| {
        line.contains("seen tainted NoExecute by the node controller")
            || line.contains(
                "settled: a peer that reaches the API server read this node's Node with the node controller's NoExecute taint",
            )
    });
}

/// n1's Node carries the node controller's NoExecute taint `key` when its link is cut: its
/// verdict is enforce, settled long before peers lost together with it would know, with a reason
/// `settled_by` accepts, and it never holds.
fn seen_tainted_settles(key: &str, settled_by: impl Fn(&str) -> bool) {
    let Some(mut lab) = started(Duration::from_secs(30)) else {
        return;
    };
    let name = lab.node(1).name.clone();
    let added = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let state = lab.node(1).state.clone();
    support::taint_seen(&lab.server.api, &name, key, &added, &state);
    let cut_at = Instant::now();
    lab.cut_api(1);
    let (line, at) = expect_verdict(&mut lab, 1, "enforce", Duration::from_secs(12));
    assert!(settled_by(&line), "{line}");
    // Settled by the rule for peers lost together, it would be no sooner than 8.5 s after the
    // last contact, which is at most a renewal (1 s) before the cut.
    assert!(
        at < cut_at + Duration::from_millis(7_500),
        "enforce {} ms after the cut: {line}",
        at.duration_since(cut_at).as_millis()
    );
    let v = verdicts(&lab.node(1).log());
    assert!(
        v.iter().all(|(v, _)| v != "hold"),
        "n1 held while its peers reached the API: {v:?}"
    );
}

/// Scenario 2: the API server unreachable for everyone — the controller evicts nothing when every
/// zone is down, so nobody here does either, well past every eviction time. n5 is labelled
/// `node.kubernetes.io/exclude-disruption`: it still answers, and every agent, n5 too, counts a
/// zone of four (docs/semantics.md §5.5).
#[test]
fn the_api_down_for_everyone_kills_nothing() {
    let Some(mut lab) = lab(LabSpec {
        excluded: vec![5],
        ..LabSpec::default()
    }) else {
        return;
    };
    lab.start_all();
    let cut_at = SystemTime::now();
    lab.api_down();
    for i in 1..=5 {
        expect_hold_from_answers(&mut lab, i, Duration::from_secs(8));
    }
    let stopped = watch_pods(
        &mut lab,
        cut_at + GRACE + Duration::from_secs(2) + Duration::from_secs(3),
    );
    assert_only_stopped(&mut lab, &stopped, &[]);
    assert_never_enforced(&mut lab, &[1, 2, 3, 4, 5]);
    for i in [1, 5] {
        let v = verdicts(&lab.node(i).log());
        assert!(
            v.iter()
                .any(|(v, r)| v == "hold" && r.contains("(4 in zone zone-a)")),
            "n{i} did not leave the excluded n5 out of its zone: {v:?}"
        );
    }
    for series in [
        "nodewarden_fence_quorum_verdict{verdict=\"hold\"}",
        "nodewarden_quorum_verdict{verdict=\"hold\"}",
    ] {
        assert_eq!(metric(&lab.nodes[0], series), Some(1.0), "n1's {series}");
    }
}

/// Issue 22, seed 0x147d of the simulator: n1, cut off alone, enforces on its peers' word; then
/// the API server goes down for everyone. The peers still say they reach it for
/// `unreachableAfter` (8 s here) after their last contacts, but their reads of n1's Node fail.
/// Each round that read the Node without the taint moved n1-short's deadlines to count from it,
/// less 10 s (`READ_SLACK`): its SIGTERM falls 3.3–4.5 s after the outage began, 10 s ahead of its
/// kill, while the peers still say they reach the API server. The SIGTERM waits (docs/fence.md
/// §5, *The SIGTERM waits for a read*), n1 holds before the kill's time, and nothing is stopped.
/// Sent on plan, as before, it stopped a pod the control plane, down, never deletes.
#[test]
fn a_sigterm_waits_while_the_peers_read_nothing_from_the_api_server_and_the_hold_stops_nothing() {
    let Some(mut lab) = lab(LabSpec {
        toleration: Duration::from_secs(25),
        grace_cap: Duration::from_secs(10),
        unreachable_after: Duration::from_secs(8),
        ..LabSpec::default()
    }) else {
        return;
    };
    lab.start_all();
    lab.cut_api(1);
    expect_verdict(&mut lab, 1, "enforce", Duration::from_secs(30));
    // A few rounds that read the Node, so that the deadlines count from the reads, not from
    // n1's last contact.
    std::thread::sleep(Duration::from_secs(3));
    let down = SystemTime::now();
    lab.api_down();
    let stopped = watch_pods(&mut lab, down + Duration::from_secs(16));
    let log = lab.node(1).log();
    assert!(
        log.contains("none of their reads of it came back"),
        "n1 never said its peers' reads failed:\n{log}"
    );
    assert!(
        log.contains("SIGTERMs not sent yet wait for a round in which a peer reads"),
        "n1 never said its SIGTERMs wait:\n{log}"
    );
    let v = verdicts(&log);
    assert!(
        v.last().is_some_and(|(w, _)| w == "hold"),
        "n1 did not hold once its peers knew the outage: {v:?}"
    );
    assert_only_stopped(&mut lab, &stopped, &[]);
}

/// Scenario 2b (issue 21): the API server gone for everyone, in two zones, where the one agent
/// of `zone-b` notices a second and a half after the four of `zone-a` (its last renewal came
/// later: here its link goes a little later, which the control plane cannot tell from a later
/// renewal). Every zone is down, so the controller evicts nothing; until `zone-b`'s agent knows,
/// it still answers "reachable", and an answer it could still change must never make `zone-a`
/// say enforce.
#[test]
fn the_api_down_in_two_zones_is_never_enforced_while_the_last_zone_notices() {
    let Some(mut lab) = lab(LabSpec {
        zones: vec!["zone-a", "zone-a", "zone-a", "zone-a", "zone-b"],
        ..LabSpec::default()
    }) else {
        return;
    };
    lab.start_all();
    let cut_at = SystemTime::now();
    for i in 1..=4 {
        lab.cut_api(i);
    }
    std::thread::sleep(Duration::from_millis(1500));
    lab.cut_api(5);
    for i in 1..=5 {
        expect_hold_from_answers(&mut lab, i, Duration::from_secs(12));
    }
    let stopped = watch_pods(
        &mut lab,
        cut_at + GRACE + Duration::from_secs(2) + Duration::from_secs(4),
    );
    assert_only_stopped(&mut lab, &stopped, &[]);
    assert_never_enforced(&mut lab, &[1, 2, 3, 4, 5]);
}

/// Three of five nodes of one zone lose the API one after another: n2 and n3 first, n1 once
/// more than the order tie (one 5 s monitor period) plus a renewal later, so that the controller
/// certainly judged n2 and n3 first. It judged the first of those while the zone still counted
/// as healthy and tainted it; by the time it came to n1, three of five were not ready (a partial
/// disruption), so n1 is kept: n1 holds, and n2 and n3 (either may have been the first) fence.
/// Returns when n1 was cut off. Only n1's pods are watched by the callers.
fn cut_two_then_n1(lab: &mut Lab) -> SystemTime {
    lab.cut_api(2);
    lab.cut_api(3);
    std::thread::sleep(Duration::from_secs(7));
    let cut_at = SystemTime::now();
    lab.cut_api(1);
    cut_at
}

/// The pods of [`cut_two_then_n1`]'s first two nodes that their fences may stop (by the
/// fence's own SIGTERM, checked): either may be the one the controller tainted.
const FIRST_TWO: &[&str] = &["n2-short", "n3-short"];

/// Scenario 3: three of five nodes of one zone lose the API — ≥ 55 % and more than two of a zone
/// of ≤ 50 nodes is a partial disruption, in which the controller taints no node it judges from
/// then on ([`cut_two_then_n1`]): the last of the three holds and kills nothing.
#[test]
fn three_of_five_one_after_another_the_last_holds_and_kills_nothing() {
    let Some(mut lab) = lab(LabSpec::default()) else {
        return;
    };
    lab.start_all();
    let cut_at = cut_two_then_n1(&mut lab);
    expect_hold_from_answers(&mut lab, 1, Duration::from_secs(8));
    let stopped = watch_pods(
        &mut lab,
        cut_at + GRACE + Duration::from_secs(2) + Duration::from_secs(3),
    );
    assert_only_stopped(&mut lab, &stopped, FIRST_TWO);
    assert_never_enforced(&mut lab, &[1]);
    for i in 4..=5 {
        let log = lab.node(i).log();
        assert!(
            !log.contains("cut off from the API server"),
            "n{i} kept the API and must not be cut off:\n{log}"
        );
    }
}

/// Issue 22, seed 0xd97 of the simulator: the staggered expiry's guess. n1, n2 and n3 lose the
/// API server together, three of five: any of them may be the one the control plane judged
/// while the zone still counted as healthy, so all three enforce (docs/fence.md §5, *Staggered
/// expiry*), and the others are never tainted. Their peers read their Nodes every round; the lab
/// has no node lifecycle controller, so none carries the taint. Their `-short` pods tolerate
/// 15 s with 8 s of SIGTERM grace: counted from the latest read without the taint less 10 s,
/// each SIGTERM is due at once, while its kill recedes with every read. Under a guessed enforce
/// the SIGTERM waits until a peer reads the taint (§5, *The SIGTERM waits for a read*): nothing
/// is stopped; once the test taints n2's Node, n2-short is stopped by its deletion, and the
/// others run on.
#[test]
fn under_a_guessed_enforce_a_sigterm_waits_for_the_taint_then_stops_on_time() {
    let tol = Duration::from_secs(15);
    let Some(mut lab) = lab(LabSpec {
        toleration: tol,
        grace_cap: Duration::from_secs(8),
        ..LabSpec::default()
    }) else {
        return;
    };
    lab.start_all();
    for i in 1..=3 {
        lab.cut_api(i);
    }
    expect_verdicts_saying(
        &mut lab,
        "enforce",
        "may have been tainted while the zone still counted as healthy",
    );
    let early = watch_pods(&mut lab, SystemTime::now() + Duration::from_secs(10));
    assert!(
        early.is_empty(),
        "stopped under a guessed enforce with the Node read untainted: {early:?}\n{}",
        lab.node(2).log()
    );
    for i in 1..=3 {
        let log = lab.node(i).log();
        assert!(
            log.contains("wait until a peer reads the unreachable taint"),
            "n{i} never said its SIGTERMs wait:\n{log}"
        );
    }
    let tainted_at = SystemTime::now();
    let added = humantime::format_rfc3339_seconds(tainted_at).to_string();
    support::taint_unreachable(&lab.server.api, "n2", &added);
    let (stopped, _) = expect_stopped_on_time(&mut lab, 2, "n2-short", tainted_at + tol);
    assert_only_stopped(&mut lab, &stopped, &["n2-short"]);
}

/// Scenario 4: a node that loses every link hears from no peer — it is alone, so the control
/// plane evicts its pods, and it fences on time.
#[test]
fn a_node_without_any_link_fences_on_time() {
    let Some(mut lab) = lab(LabSpec::default()) else {
        return;
    };
    lab.start_all();
    let cut_at = SystemTime::now();
    lab.cut_all(1);
    let (line, _) = expect_verdict(&mut lab, 1, "enforce", Duration::from_secs(6));
    // Alone: asked its peers and heard none.
    assert!(
        support::field(&line, "asked").is_some_and(|a| a != "0") && answered(&line) == 0,
        "{line}"
    );
    let bound = cut_at + GRACE + Duration::from_secs(2);
    let (stopped, _) = expect_stopped_on_time(&mut lab, 1, "n1-short", bound);
    assert_only_stopped(&mut lab, &stopped, &["n1-short", "n2-short", "n3-short"]);
}

/// Reads one HTTP/1.1 request (headers and a `Content-Length` body) from `s`, bounded (8 KiB,
/// the stream's read timeout).
fn read_request(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 2048];
    while buf.len() < 8192 {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some(end) = text.find("\r\n\r\n") {
            let len = header(&text[..end], "content-length")
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return Some(buf);
            }
        }
    }
    None
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

/// A test-run TCP service on the host's side of the peer bridge: accepts until dropped (bounded
/// by its stop flag and a one-minute lifetime), one thread per connection.
struct Service {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Connections served.
    served: Arc<AtomicUsize>,
}

impl Service {
    fn start(addr: SocketAddrV4, handle: impl Fn(TcpStream) + Send + Sync + 'static) -> Service {
        let listener = TcpListener::bind(addr).expect("bind the test service");
        listener.set_nonblocking(true).expect("nonblocking");
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicUsize::new(0));
        let handle = Arc::new(handle);
        let thread = {
            let stop = stop.clone();
            let served = served.clone();
            std::thread::spawn(move || {
                let end = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::SeqCst) && Instant::now() < end {
                    match listener.accept() {
                        Ok((s, _)) => {
                            served.fetch_add(1, Ordering::SeqCst);
                            let handle = handle.clone();
                            std::thread::spawn(move || {
                                let _ = s.set_nonblocking(false);
                                let _ = s.set_read_timeout(Some(Duration::from_secs(3)));
                                let _ = s.set_write_timeout(Some(Duration::from_secs(3)));
                                handle(s);
                            });
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })
        };
        Service {
            stop,
            thread: Some(thread),
            served,
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// Hex HMAC-SHA256 of `message` under `key`, computed here with ring itself (not through the
/// crate's signing code), so the test is an independent peer.
fn hmac_hex(key: &[u8], message: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    hex(ring::hmac::sign(&key, message.as_bytes()).as_ref())
}

fn sha256_hex(body: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, body).as_ref())
}

/// A question as raw HTTP: signed with `key` at unix time `ts` over the protocol's canonical
/// string, or with no signature headers at all when `key` is `None`.
fn question(to: SocketAddrV4, key: Option<&[u8]>, ts: u64) -> Vec<u8> {
    question_with(to, key, ts, r#"{"from":"n9","zone":"zone-a"}"#)
}

/// [`question`] with the body given.
fn question_with(to: SocketAddrV4, key: Option<&[u8]>, ts: u64, body: &str) -> Vec<u8> {
    let nonce = random_hex(16);
    let auth = match key {
        Some(key) => {
            let message = format!(
                "nodewarden-v1\nPOST\n/v1/contact\n{ts}\n{nonce}\n{}",
                sha256_hex(body.as_bytes())
            );
            format!(
                "X-Nodewarden-Timestamp: {ts}\r\nX-Nodewarden-Nonce: {nonce}\r\n\
                 X-Nodewarden-Signature: {}\r\n",
                hmac_hex(key, &message)
            )
        }
        None => String::new(),
    };
    format!(
        "POST /v1/contact HTTP/1.1\r\nHost: {to}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n{auth}Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A node that reaches the API server reads the asker's kubelet Lease for it when the question
/// asks (docs/fence.md §5): n1 answers a question from n2 with `"lease":true` with the
/// `renewTime` of `kube-node-lease/n2` as the API server holds it (n2, cut off, no longer renews
/// it); without `lease`, for a node with no Lease, or for a name that is no node's, the answer
/// has none.
#[test]
fn a_peer_reads_the_askers_kubelet_lease_from_the_api_server() {
    let Some(mut lab) = lab(LabSpec::default()) else {
        return;
    };
    lab.start_all();
    lab.cut_api(2);
    // A renewal n2 sent just before the cut is answered or lost within its request timeout.
    std::thread::sleep(API_REQUEST_TIMEOUT + Duration::from_millis(200));
    let stored = lab
        .server
        .api
        .lease("kube-node-lease", "n2")
        .and_then(|l| l["spec"]["renewTime"].as_str().map(str::to_string))
        .expect("n2's Lease has a renewTime");
    let ask = ask_n1(&lab);
    let read = ask(r#"{"from":"n2","zone":"zone-a","lease":true}"#);
    assert_eq!(read["reachable"], true, "{read}");
    assert_eq!(
        read["kubeletRenewTime"].as_str(),
        Some(stored.as_str()),
        "{read}"
    );
    let unasked = ask(r#"{"from":"n2","zone":"zone-a"}"#);
    assert!(unasked.get("kubeletRenewTime").is_none(), "{unasked}");
    let unknown = ask(r#"{"from":"n9","zone":"zone-a","lease":true}"#);
    assert!(unknown.get("kubeletRenewTime").is_none(), "{unknown}");
    // n9 has no Lease and no agent: the only read of it is n1's, for the question.
    let leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
    assert_eq!(gets(&lab, &format!("{leases}/n9")), 1);
    // A name that is no node's is not put into a request path.
    let odd = ask(r#"{"from":"n2/../n3","zone":"zone-a","lease":true}"#);
    assert!(odd.get("kubeletRenewTime").is_none(), "{odd}");
    assert_eq!(strays(&lab, "/leases/n2"), 0);
}

/// A question with `taint` has a node that reaches the API server read the asker's Node from it
/// (`GET /api/v1/nodes/<asker>`) and say whether it carries the unreachable NoExecute taint; a
/// question without it, a Node that does not exist, or a name that is no node's reads nothing
/// into the answer (docs/fence.md §5, *Peers read the Node*).
#[test]
fn a_peer_reads_the_askers_node_from_the_api_server() {
    let Some(mut lab) = lab(LabSpec::default()) else {
        return;
    };
    lab.start_all();
    let ask = ask_n1(&lab);
    let read = ask(r#"{"from":"n2","zone":"zone-a","taint":true}"#);
    assert_eq!(read["reachable"], true, "{read}");
    assert_eq!(read["unreachableTainted"], false, "{read}");
    let added = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    support::taint_unreachable(&lab.server.api, "n2", &added);
    let tainted = ask(r#"{"from":"n2","zone":"zone-a","taint":true}"#);
    assert_eq!(tainted["unreachableTainted"], true, "{tainted}");
    let unasked = ask(r#"{"from":"n2","zone":"zone-a"}"#);
    assert!(unasked.get("unreachableTainted").is_none(), "{unasked}");
    let unknown = ask(r#"{"from":"n9","zone":"zone-a","taint":true}"#);
    assert!(unknown.get("unreachableTainted").is_none(), "{unknown}");
    assert_eq!(gets(&lab, "/api/v1/nodes/n9"), 1);
    let odd = ask(r#"{"from":"n2/../n3","zone":"zone-a","taint":true}"#);
    assert!(odd.get("unreachableTainted").is_none(), "{odd}");
    assert_eq!(strays(&lab, "/nodes/n2"), 0);
}

/// n1 is cut off from the API server while its four peers reach it; nothing here plays the
/// controller, so no taint comes. Its peers read its Node untainted round after round, and no
/// deadline counts from before such a read, less `READ_SLACK` (10 s): its pod tolerating 15 s is
/// never due while the reads go on, well past the moment it was due by the count from its last
/// contact (the cut + 4 s grace + 15 s). Once n1's Node carries the taint, as the controller
/// adds it, the peers' next reads say so and the pod is stopped by the time the control plane
/// could delete it for that taint (docs/fence.md §5, *Peers read the Node*).
#[test]
fn a_node_its_peers_read_untainted_stops_nothing_until_the_taint_comes_then_stops_on_time() {
    let tol = Duration::from_secs(15);
    let Some(mut lab) = started(tol) else {
        return;
    };
    let cut_at = SystemTime::now();
    lab.cut_api(1);
    expect_verdict(&mut lab, 1, "enforce", Duration::from_secs(12));
    let due_by_contact = cut_at + GRACE + tol;
    let early = watch_pods(&mut lab, due_by_contact + Duration::from_secs(5));
    assert!(
        early.is_empty(),
        "stopped while the peers read the Node untainted: {early:?}\n{}",
        lab.node(1).log()
    );
    assert!(
        lab.node(1)
            .log()
            .contains("without node.kubernetes.io/unreachable:NoExecute"),
        "{}",
        lab.node(1).log()
    );
    // Each round (one a second) moved the deadlines; the plans were logged with the verdicts,
    // not at every round.
    let logged = lab
        .node(1)
        .log()
        .matches("fence plan for default/n1-short")
        .count();
    assert!(
        (1..=3).contains(&logged),
        "{logged} records of n1-short's plan:\n{}",
        lab.node(1).log()
    );
    let tainted_at = SystemTime::now();
    let added = humantime::format_rfc3339_seconds(tainted_at).to_string();
    support::taint_unreachable(&lab.server.api, "n1", &added);
    let bound = tainted_at + tol;
    let (stopped, at) = expect_stopped_on_time(&mut lab, 1, "n1-short", bound);
    // Counted from the last round read without the taint (at most a round before it came), less
    // the slack: no sooner than 15 - 10 - 1 s round - 0.5 s margin - 1 s SIGTERM grace after it.
    assert!(
        at + POLL >= tainted_at + Duration::from_millis(2_500),
        "stopped {:?} after the taint",
        at.duration_since(tainted_at).unwrap_or_default()
    );
    assert!(
        lab.node(1).log().contains(
            "with the node controller's NoExecute taint (node.kubernetes.io/unreachable, or not-ready): the control plane has tainted it"
        ),
        "{}",
        lab.node(1).log()
    );
    assert_only_stopped(&mut lab, &stopped, &["n1-short"]);
}

/// n1 reaches the API server, but its Node carries the unreachable taint, added 12 s ago as if
/// its kubelet had gone silent: the control plane deletes its pod tolerating 15 s in 3 s whether
/// or not the link holds. The fence stops it by then without being cut off, with at most a
/// second of SIGTERM grace, and keeps it stopped until the taint is gone; then the pod, still in
/// the API, is released to the kubelet (docs/fence.md §3, *A taint while not cut off*).
#[test]
fn a_node_not_cut_off_whose_node_carries_the_taint_stops_each_pod_by_its_deletion() {
    let tol = Duration::from_secs(15);
    let Some(mut lab) = started(tol) else {
        return;
    };
    let tainted_at = SystemTime::now() - Duration::from_secs(12);
    let added = humantime::format_rfc3339_seconds(tainted_at).to_string();
    support::taint_unreachable(&lab.server.api, "n1", &added);
    // `timeAdded` has whole seconds: the deletion can come that much sooner.
    let added_at = humantime::parse_rfc3339(&added).expect("timeAdded");
    let bound = added_at + tol;
    let stopped = watch_pods(&mut lab, bound + Duration::from_secs(1));
    let at = *stopped
        .get("n1-short")
        .unwrap_or_else(|| panic!("n1-short never stopped:\n{}", lab.node(1).log()));
    assert!(
        at <= bound,
        "stopped {:?} after the deletion",
        at.duration_since(bound).unwrap_or_default()
    );
    // Stopped as late as it can be: the margin (0.5 s) and a second of SIGTERM grace.
    assert!(
        at + POLL + Duration::from_millis(1_500) >= bound,
        "stopped {:?} before the deletion",
        bound.duration_since(at).unwrap_or_default()
    );
    let log = lab.node(1).log();
    assert!(
        log.contains("not cut off, but this node's Node carries"),
        "{log}"
    );
    assert!(!log.contains("cut off from the API server"), "{log}");
    assert_only_stopped(&mut lab, &stopped, &["n1-short"]);
    lab.server
        .api
        .update_node_as("kube-controller-manager", "n1", |n| {
            n["spec"]["taints"] = serde_json::json!([]);
        })
        .unwrap_or_else(|e| panic!("untaint: {e:?}"));
    let node = lab.node(1);
    let released = node.agent().wait_for(
        &["still exists upstream: fence lifted"],
        Duration::from_secs(10),
    );
    assert!(released.is_some(), "never released:\n{}", node.log());
    assert!(
        node.log()
            .contains("no longer carries node.kubernetes.io/unreachable:NoExecute"),
        "{}",
        node.log()
    );
}

/// Asks n1's peer endpoint the question `body`, signed with the lab's key; its answer's body.
fn ask_n1(lab: &Lab) -> impl Fn(&str) -> Value {
    let key = std::fs::read(&lab.key_file).expect("read the peers' key");
    let n1 = lab.nodes[0].peer_addr();
    move |body: &str| -> Value {
        let (status, text) =
            http_exchange(n1.into(), &question_with(n1, Some(&key), unix_now(), body))
                .expect("n1 answers");
        assert_eq!(status, 200, "{text}");
        let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
    }
}

/// How many GETs of `path` the API server has had.
fn gets(lab: &Lab, path: &str) -> usize {
    lab.server
        .api
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == path)
        .count()
}

/// How many requests went to a path that put the name `n2/../n3` under `prefix` (`n2/..` as it
/// is, or with its slashes escaped).
fn strays(lab: &Lab, prefix: &str) -> usize {
    let (raw, escaped) = (format!("{prefix}/.."), format!("{prefix}%2F"));
    lab.server
        .api
        .requests()
        .iter()
        .filter(|r| r.path.contains(&raw) || r.path.contains(&escaped))
        .count()
}

/// Sends `request` to `to` and checks it is refused with 401 and `reason` as the body.
fn expect_refused(to: SocketAddrV4, request: &[u8], reason: &str) -> Result<(), String> {
    let (status, text) =
        http_exchange(to.into(), request).map_err(|e| format!("{to}: {e} ({reason})"))?;
    if status != 401 || !text.trim_end().ends_with(reason) {
        return Err(format!("expected 401 {reason}, got: {text}"));
    }
    Ok(())
}

/// Scenario 5: forged (wrong key), replayed, unsigned and stale (the right key, two minutes old)
/// requests to n1's peer endpoint are rejected with their reason and counted; impostors answering n2 in the name of n3, n4 and n5 (with a key that is
/// not the peers') are not believed — if they were, n2 would see four of five nodes cut off and
/// hold; it enforces on time instead. n2 asks n1 through a relay the test runs, which keeps a
/// copy of a valid request to replay.
#[test]
fn forged_replayed_and_unsigned_peer_traffic_is_rejected_counted_and_changes_no_verdict() {
    let tol = ENFORCED_TOLERATION;
    let spec = LabSpec {
        toleration: tol,
        redirects: vec![(2, 1, 101), (2, 3, 103), (2, 4, 104), (2, 5, 105)],
        ..LabSpec::default()
    };
    let Some(mut lab) = lab(spec) else {
        return;
    };
    lab.start_all();
    let n1 = lab.nodes[0].peer_addr();
    // The relay: n2 → test → n1, keeping the first request it carries.
    let captured: Arc<Mutex<Option<Vec<u8>>>> = Arc::new(Mutex::new(None));
    let relay = {
        let captured = captured.clone();
        Service::start(
            SocketAddrV4::new(lab.peer_ip(101), PEER_PORT),
            move |mut s| {
                let Some(request) = read_request(&mut s) else {
                    return;
                };
                if let Ok(mut c) = captured.lock()
                    && c.is_none()
                {
                    *c = Some(request.clone());
                }
                if let Ok((_, answer)) = http_exchange(n1.into(), &request) {
                    let _ = s.write_all(answer.as_bytes());
                }
            },
        )
    };
    // The impostors: well-formed answers as n3, n4, n5 saying they lost the API long ago,
    // fresh, bound to the question's nonce, signed over the protocol's string with a key that is
    // not the peers'.
    let wrong_key = random_hex(48).into_bytes();
    let impostors: Vec<Service> = [3u8, 4, 5]
        .into_iter()
        .map(|k| {
            let wrong_key = wrong_key.clone();
            Service::start(SocketAddrV4::new(lab.peer_ip(100 + k), PEER_PORT), move |mut s| {
                let Some(request) = read_request(&mut s) else {
                    return;
                };
                let text = String::from_utf8_lossy(&request).into_owned();
                let head = text.split("\r\n\r\n").next().unwrap_or_default();
                let nonce = header(head, "x-nodewarden-nonce").unwrap_or_default();
                let body = format!(
                    r#"{{"node":"n{k}","zone":"zone-a","reachable":false,"lastContactAgeMillis":600000}}"#
                );
                let ts = unix_now();
                let message = format!(
                    "nodewarden-v1\nanswer\n{nonce}\n{ts}\n{}",
                    sha256_hex(body.as_bytes())
                );
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     X-Nodewarden-Timestamp: {ts}\r\nX-Nodewarden-Signature: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len(),
                    hmac_hex(&wrong_key, &message)
                );
                let _ = s.write_all(answer.as_bytes());
            })
        })
        .collect();

    let cut_at = SystemTime::now();
    lab.cut_api(2);
    let bound = cut_at + GRACE + tol;
    // While n2 decides and acts: forged and unsigned requests at n1, and the captured one
    // replayed, from a thread, so the pods are watched meanwhile.
    let key = std::fs::read(&lab.key_file).expect("read the peers' key");
    let traffic = {
        let captured = captured.clone();
        let wrong_key = wrong_key.clone();
        std::thread::spawn(move || -> Result<[usize; 4], String> {
            // forged (wrong key), unsigned, stale (the right key, two minutes old), replayed
            let mut sent = [0usize; 4];
            // Until about when n2 settles on its verdict (8.5 s after its last contact) and acts.
            let until = Instant::now() + Duration::from_secs(10);
            while Instant::now() < until {
                let now = unix_now();
                expect_refused(n1, &question(n1, Some(&wrong_key), now), "bad_signature")?;
                sent[0] += 1;
                expect_refused(n1, &question(n1, None, now), "unsigned")?;
                sent[1] += 1;
                expect_refused(n1, &question(n1, Some(&key), now - 120), "stale")?;
                sent[2] += 1;
                let copy = captured.lock().ok().and_then(|c| c.clone());
                if let Some(request) = copy
                    && sent[3] < 3
                {
                    expect_refused(n1, &request, "replayed")?;
                    sent[3] += 1;
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            Ok(sent)
        })
    };
    let stopped = watch_pods(&mut lab, bound + Duration::from_secs(1));
    let sent = match traffic.join() {
        Ok(Ok(sent)) => sent,
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => panic!("the traffic thread panicked"),
    };
    assert!(
        sent[3] > 0,
        "n2 never asked n1 through the relay:\n{}",
        lab.node(2).log()
    );
    expect_verdict(&mut lab, 2, "enforce", Duration::from_secs(2));
    let at = *stopped
        .get("n2-short")
        .unwrap_or_else(|| panic!("n2-short never stopped:\n{}", lab.node(2).log()));
    let plan = short_plan(&mut lab, 2);
    assert_stopped_on_time("n2-short", at, plan, bound);
    assert_only_stopped(&mut lab, &stopped, &["n2-short"]);
    let v = verdicts(&lab.node(2).log());
    assert!(
        v.iter().all(|(v, _)| v != "hold"),
        "n2 believed the impostors: {v:?}"
    );
    for (i, s) in impostors.iter().enumerate() {
        assert!(
            s.served.load(Ordering::SeqCst) > 0,
            "n2 never asked impostor n{}",
            i + 3
        );
    }
    assert!(relay.served.load(Ordering::SeqCst) > 0);
    let n1_node = &lab.nodes[0];
    let count = |result: &str| {
        metric(
            n1_node,
            &format!("nodewarden_peer_requests_total{{result=\"{result}\"}}"),
        )
        .unwrap_or(0.0)
    };
    for (result, n) in ["bad_signature", "unsigned", "stale", "replayed"]
        .into_iter()
        .zip(sent)
    {
        let counted = count(result);
        assert!(counted >= n as f64, "{result}: {n} sent, {counted} counted");
    }
    eprintln!("sent to n1 (forged, unsigned, stale, replayed): {sent:?}");
    assert!(count("accepted") >= 1.0, "n2's own questions were accepted");
    let n2_rejected = metric(
        &lab.nodes[1],
        "nodewarden_peer_answers_total{result=\"bad_signature\"}",
    )
    .unwrap_or(0.0);
    assert!(
        n2_rejected >= 3.0,
        "n2 counted {n2_rejected} answers with a bad signature"
    );
}

/// Scenario 6: n1, n2, n3 lose the API (hold); n2 and n3 get it back while n1 stays cut off.
/// The control plane may resume tainting n1 only once the zone is healthy again, so n1's
/// eviction times count from then: from the moment the last round that still said hold was sent,
/// minus one API request timeout (a peer's write already on the wire may have landed that much
/// earlier) — never from its own last contact.
#[test]
fn peers_regaining_the_api_turn_hold_into_enforce_with_deadlines_from_the_last_hold() {
    // Long enough that the SIGTERM (eviction − 1.5 s) falls well after the enforce verdict.
    let tol = Duration::from_secs(5);
    let Some(mut lab) = started(tol) else {
        return;
    };
    let cut_at = cut_two_then_n1(&mut lab);
    expect_hold_from_answers(&mut lab, 1, Duration::from_secs(8));
    // Hold well past n1's eviction time as counted from its last contact (cut + grace + tol =
    // 9 s): counted from there, it would kill at once when the verdict turns.
    let heal_wall = cut_at + Duration::from_secs(11);
    let stopped_while_held = watch_pods(&mut lab, heal_wall);
    assert_only_stopped(&mut lab, &stopped_while_held, FIRST_TWO);
    let healed_at = SystemTime::now();
    lab.heal_api(2);
    lab.heal_api(3);
    let (_, enforce_at) = expect_verdict(&mut lab, 1, "enforce", Duration::from_secs(8));
    let enforce_wall = SystemTime::now() - enforce_at.elapsed();
    let stopped = watch_pods(&mut lab, enforce_wall + tol + Duration::from_secs(1));
    let at = *stopped
        .get("n1-short")
        .unwrap_or_else(|| panic!("n1-short never stopped:\n{}", lab.node(1).log()));
    let plan = short_plan(&mut lab, 1);
    // A round whose answers all came before n2 and n3 wrote again after the heal said hold, so
    // one sent no later than the heal − one peer timeout did; rounds are one interval apart, so
    // the last hold round was sent no earlier than the heal − one interval − one peer timeout
    // (less 300 ms of scheduling), and before the enforce verdict.
    let held_earliest = healed_at - PEER_INTERVAL - PEER_TIMEOUT - Duration::from_millis(300);
    let earliest = held_earliest - API_REQUEST_TIMEOUT + tol;
    let latest = enforce_wall - API_REQUEST_TIMEOUT + tol + Duration::from_millis(50);
    // The agent's own account of that round (status, from its state file), and the rule applied
    // to it exactly.
    let report = status_json(&lab.nodes[0]);
    assert_eq!(report["quorum"]["verdict"], "enforce", "{report:#}");
    let held_at = report["quorum"]["heldAt"]
        .as_str()
        .and_then(|t| humantime::parse_rfc3339(t).ok())
        .unwrap_or_else(|| panic!("no heldAt after a hold: {report:#}"));
    assert!(
        held_at >= held_earliest && held_at <= enforce_wall,
        "the last hold round at {held_at:?}: heal {healed_at:?}, enforce {enforce_wall:?}"
    );
    let by_rule = held_at - API_REQUEST_TIMEOUT + tol;
    let off = by_rule
        .duration_since(plan.eviction_time)
        .or_else(|_| plan.eviction_time.duration_since(by_rule))
        .unwrap_or_default();
    assert!(
        off <= Duration::from_millis(5),
        "eviction {:?}, the rule says {by_rule:?} (last hold {held_at:?})",
        plan.eviction_time
    );
    assert!(
        plan.eviction_time >= earliest,
        "eviction {:?} before the rule allows ({:?} early)\n{}",
        plan.eviction_time,
        earliest
            .duration_since(plan.eviction_time)
            .unwrap_or_default(),
        lab.node(1).log()
    );
    assert!(
        plan.eviction_time <= latest,
        "eviction {:?} later than the rule ({:?} late)",
        plan.eviction_time,
        plan.eviction_time
            .duration_since(latest)
            .unwrap_or_default()
    );
    eprintln!(
        "n1: enforce {} ms after the heal; eviction {} ms after the earliest the rule allows, {} ms before the latest",
        enforce_wall
            .duration_since(healed_at)
            .unwrap_or_default()
            .as_millis(),
        plan.eviction_time
            .duration_since(earliest)
            .unwrap_or_default()
            .as_millis(),
        latest
            .duration_since(plan.eviction_time)
            .unwrap_or_default()
            .as_millis()
    );
    assert_stopped_on_time("n1-short", at, plan, latest);
    assert_only_stopped(&mut lab, &stopped, &["n1-short", "n2-short", "n3-short"]);
    // Pending (peers cut off together may not know it yet) may come first; then hold, and
    // enforce only after the heal.
    let v: Vec<String> = verdicts(&lab.node(1).log())
        .into_iter()
        .map(|(v, _)| v)
        .filter(|v| v != "pending")
        .collect();
    let first_enforce = v.iter().position(|v| v == "enforce");
    assert!(
        v.first().map(String::as_str) == Some("hold") && first_enforce.is_some(),
        "n1's verdicts: {v:?}"
    );
}

/// Scenario 6, with rounds 30 s apart: n2 and n3, back once n1's verdicts are settled, tell n1 at
/// once that they reach the API server (they had answered it "cut off"); n1's own read of its
/// Lease hangs (its link is down), so it asks its peers then, not at its next round, and says
/// enforce seconds after the heal.
#[test]
fn peers_back_tell_a_cut_off_node_which_asks_them_at_once() {
    let Some(mut lab) = lab(LabSpec {
        peer_interval: Duration::from_secs(30),
        ..LabSpec::default()
    }) else {
        return;
    };
    lab.start_all();
    let cut_at = cut_two_then_n1(&mut lab);
    // n1's first round, as soon as it counts itself cut off: pending or hold, as its peers answer.
    let node = lab.node(1);
    let first = node
        .agent()
        .wait_for(&["quorum verdict: "], Duration::from_secs(8))
        .map(|(line, _)| line)
        .unwrap_or_else(|| panic!("n1 never asked its peers:\n{}", node.log()));
    assert_eq!(answered(&first), 4, "{first}");
    assert!(!first.contains("quorum verdict: enforce"), "{first}");
    // Past the moment its verdicts settle (8.5 s after its last contact, before the cut).
    let settled = cut_at + Duration::from_secs(10);
    std::thread::sleep(
        settled
            .duration_since(SystemTime::now())
            .unwrap_or_default(),
    );
    let healed = Instant::now();
    lab.heal_api(2);
    lab.heal_api(3);
    // Without the nudges, n1 would ask again only 30 s after its first round.
    let (line, at) = expect_verdict(&mut lab, 1, "enforce", Duration::from_secs(8));
    let after = at.duration_since(healed);
    assert!(
        after < Duration::from_secs(5),
        "enforce {after:?} after the heal: {line}"
    );
    let log = lab.node(1).log();
    assert!(
        log.contains("a peer reaches the API server again, and this node's read of its Lease is not answered: asking the peers now"),
        "{log}"
    );
    let told = [2, 3]
        .iter()
        .filter(|&&i| {
            lab.node(i)
                .log()
                .contains("reaching the API server again: telling")
        })
        .count();
    assert!(
        told >= 1,
        "neither n2 nor n3 told its peers:\n{}",
        lab.node(2).log()
    );
    eprintln!("n1: enforce {} ms after the heal", after.as_millis());
}

/// Scenario 7: as 3, then n1 is SIGKILLed and restarted while still cut off: it holds again
/// (peers and zone known without the API) and kills nothing, and `status` says why.
/// An agent restarted into a link cut while it was down (the simulator's seed 0x11d4): its first
/// Lease renewal goes into the dead link and would fail only at its timeout (1 s here). Its peers
/// read its Lease for it at its start (in the lab the agent renews it itself), unrenewed for
/// longer than `unreachableAfter` (2.5 s), and the agent counts itself cut off on that read: the
/// line that says the API server is unreachable names the read, not a timeout.
#[test]
fn an_agent_restarted_into_a_cut_link_is_cut_off_by_its_peers_read_of_its_lease() {
    let Some(mut lab) = lab(LabSpec::default()) else {
        return;
    };
    lab.start_all();
    lab.node(1).kill_agent();
    lab.cut_api(1);
    std::thread::sleep(Duration::from_secs(4));
    lab.node(1).start_agent();
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut log = String::new();
    while !log.contains("cut off from the API server") {
        assert!(
            Instant::now() < deadline,
            "n1 never cut off after its restart:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
        log.push_str(&lab.node(1).log());
    }
    let unreachable: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("API server unreachable"))
        .collect();
    assert!(
        unreachable
            .first()
            .is_some_and(|l| { l.contains("peers read this node's kubelet Lease last renewed") }),
        "{log}"
    );
}

#[test]
fn an_agent_restarted_while_holding_keeps_holding() {
    let Some(mut lab) = lab(LabSpec::default()) else {
        return;
    };
    lab.start_all();
    let cut_at = cut_two_then_n1(&mut lab);
    expect_hold_from_answers(&mut lab, 1, Duration::from_secs(8));
    lab.node(1).kill_agent();
    lab.node(1).start_agent();
    expect_hold_from_answers(&mut lab, 1, Duration::from_secs(8));
    let stopped = watch_pods(
        &mut lab,
        cut_at + GRACE + Duration::from_secs(2) + Duration::from_secs(3),
    );
    assert_only_stopped(&mut lab, &stopped, FIRST_TWO);
    assert_never_enforced(&mut lab, &[1]);
    let report = status_json(&lab.nodes[0]);
    assert_eq!(report["quorum"]["verdict"], "hold", "{report:#}");
    assert!(report["quorum"]["reason"].is_string(), "{report:#}");
}

/// Issue 22, seeds 0xefd and 0x18ec of the simulator: n1 is cut off alone and the control plane
/// taints its Node; then the API server is down for everyone for 20 s, longer than the
/// controller-manager's renew deadline, and the controller-manager (here a thread of the test
/// renewing `kube-system/kube-controller-manager` every second as holder `cm-a`) renews nothing.
/// Back, n1 finds its Node still tainted, its toleration of 14 s long run from the taint's
/// `timeAdded`. The controller-manager that takes over starts every toleration again, and
/// removes the taint once it sees the kubelet (here 3 s after the return). n1's read of the
/// Lease at the return shows `cm-a`'s last renewal from before the outage, 19 s or more ago: no
/// taint eviction timer runs, so none that deletes a pod started before that read (docs/fence.md
/// §7, *The controller-manager's Lease*). Nothing is stopped. Counted from `timeAdded`, as before,
/// n1-short was stopped at the return.
#[test]
fn back_after_the_controller_managers_lead_lapsed_a_taint_counts_from_the_read_that_proves_it() {
    lapsed_lead(Duration::ZERO);
}

/// As above, but n1's link comes back 4 s after the API server does (the CI run after the
/// fortieth session met this order by chance: n1's own requests came back seconds after its
/// peers'). Still cut off, n1 hears its peers reach the API server again and enforce, on a
/// taint whose toleration ran out during the outage. Their answers carry what their own reads
/// of the leader Lease prove, made as each came back (`core::quorum::LeaderReads`): no timer
/// started before them, and nothing is stopped. Without it, n1-short was stopped at the
/// peers' first round.
#[test]
fn cut_off_past_the_controller_managers_lapsed_lead_a_taint_counts_from_the_peers_read() {
    lapsed_lead(Duration::from_secs(4));
}

/// The two tests above: n1's link heals `cut_off_after` after the API server comes back.
fn lapsed_lead(cut_off_after: Duration) {
    let tol = Duration::from_secs(14);
    let Some(mut lab) = lab(LabSpec {
        toleration: tol,
        ..LabSpec::default()
    }) else {
        return;
    };
    let api = lab.server.api.clone();
    api.create_namespace("kube-system");
    let stamp = |t: SystemTime| humantime::format_rfc3339_micros(t).to_string();
    api.create_lease(serde_json::json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "cm-a",
            "leaseDurationSeconds": 15,
            "acquireTime": stamp(SystemTime::now()),
            "renewTime": stamp(SystemTime::now()),
            "leaseTransitions": 0,
        },
    }));
    let stop = Arc::new(AtomicBool::new(false));
    let renewer = {
        let (api, flag) = (api.clone(), stop.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(90);
            while !flag.load(Ordering::Relaxed) && Instant::now() < deadline {
                let now = stamp(SystemTime::now());
                let renewed = api.update_lease_as(
                    "kube-controller-manager",
                    "kube-system",
                    "kube-controller-manager",
                    |l| l["spec"]["renewTime"] = Value::String(now),
                );
                assert!(renewed.is_ok(), "renewal: {renewed:?}");
                std::thread::sleep(Duration::from_secs(1));
            }
        })
    };
    lab.start_all();
    let cut_at = SystemTime::now();
    lab.cut_api(1);
    std::thread::sleep(Duration::from_secs(1));
    support::taint_unreachable(
        &api,
        "n1",
        &humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
    );
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    renewer.join().expect("renewer");
    lab.api_down();
    let stopped = watch_pods(&mut lab, cut_at + Duration::from_secs(23));
    assert_only_stopped(&mut lab, &stopped, &[]);
    lab.api_up();
    if !cut_off_after.is_zero() {
        let stopped = watch_pods(&mut lab, SystemTime::now() + cut_off_after);
        let log = lab.node(1).log();
        let peers: String = (2..=5)
            .flat_map(|i| {
                lab.node(i)
                    .log()
                    .lines()
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .filter(|l| l.contains("Lease") || l.contains("reachable"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            stopped.is_empty(),
            "stopped {stopped:?} while cut off:\n{log}\nthe peers' lines on contact and Leases:\n{peers}"
        );
        assert!(
            log.contains("a peer's reads of the controller-manager's leader Lease prove"),
            "n1 never heard its peers' read of the lapsed Lease:\n{log}"
        );
    }
    lab.heal_api(1);
    let back = Instant::now();
    let mut log = String::new();
    while back.elapsed() < Duration::from_secs(5) && !log.contains("stopped renewing longer ago") {
        std::thread::sleep(Duration::from_millis(100));
        log = lab.node(1).log();
    }
    assert!(
        log.contains("its holder cm-a stopped renewing longer ago than the Lease lasts"),
        "n1 never read the lapsed Lease:\n{log}"
    );
    let stopped = watch_pods(&mut lab, SystemTime::now() + Duration::from_secs(3));
    api.update_node_as("kube-controller-manager", "n1", |n| {
        n["spec"]["taints"] = serde_json::json!([]);
    })
    .unwrap_or_else(|e| panic!("untaint: {e:?}"));
    let later = watch_pods(&mut lab, SystemTime::now() + tol + Duration::from_secs(2));
    let log = lab.node(1).log();
    assert!(
        stopped.is_empty() && later.is_empty(),
        "stopped {stopped:?} {later:?}:\n{log}"
    );
    assert!(
        log.contains("no earlier than the read of the controller-manager's leader Lease"),
        "n1's plan never said what it counted from:\n{log}"
    );
    assert_only_stopped(&mut lab, &later, &[]);
}

/// Records node `node`'s Ready condition as `status`, as its kubelet ("True") or the node
/// lifecycle controller ("Unknown") writes it to the status subresource. The lab's Nodes carry
/// no Ready condition until a test writes one: the agents never write it.
fn record_ready(lab: &Lab, node: &str, status: &str) {
    let manager = if status == "True" {
        "kubelet"
    } else {
        "kube-controller-manager"
    };
    lab.server
        .api
        .update_node_status_as(manager, node, |n| {
            let mut conditions: Vec<Value> = n["status"]["conditions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|c| c["type"] != "Ready")
                .collect();
            let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
            conditions.push(serde_json::json!({
                "type": "Ready", "status": status, "reason": "Test",
                "lastHeartbeatTime": now, "lastTransitionTime": now
            }));
            n["status"]["conditions"] = Value::Array(conditions);
        })
        .unwrap_or_else(|e| panic!("record {node} Ready={status}: {e:?}"));
}

/// How many lists of Nodes by the zone label the API server has had.
fn zone_lists(lab: &Lab) -> usize {
    lab.server
        .api
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == "/api/v1/nodes")
        .filter(|r| {
            r.param("labelSelector")
                .is_some_and(|s| s.contains("topology.kubernetes.io/zone"))
        })
        .count()
}

/// A question with `zoneRecord` has a node that reaches the API server list the asker's zone
/// (`GET /api/v1/nodes?labelSelector=topology.kubernetes.io/zone=…`) and say how many of its
/// Nodes counted in disruption checks are recorded not Ready, of how many, and whether the
/// asker's Node carries the unreachable NoExecute taint (docs/fence.md §5, *The zone as
/// recorded*). One list answers the askers of a zone for a second. A question without it, an
/// asker not in that zone, a name that is no node's or a zone that is no label value reads
/// nothing into the answer.
#[test]
fn a_peer_reads_the_askers_zone_as_the_api_server_records_it() {
    let Some(mut lab) = lab(LabSpec {
        excluded: vec![5],
        ..LabSpec::default()
    }) else {
        return;
    };
    lab.start_all();
    for i in 1..=5 {
        record_ready(&lab, &format!("n{i}"), "True");
    }
    record_ready(&lab, "n2", "Unknown");
    record_ready(&lab, "n3", "Unknown");
    // n5 is excluded: its Unknown is not counted, nor is it.
    record_ready(&lab, "n5", "Unknown");
    let ask = ask_n1(&lab);
    let read = ask(r#"{"from":"n2","zone":"zone-a","zoneRecord":true}"#);
    assert_eq!(read["reachable"], true, "{read}");
    assert_eq!(
        read["zoneRecord"],
        serde_json::json!({"notReady": 2, "size": 4, "unreachableTainted": false}),
        "{read}"
    );
    assert_eq!(zone_lists(&lab), 1);
    // Within a second the same list answers every asker of the zone: n3 reads its own taint
    // from it, and no second list is made.
    let again = ask(r#"{"from":"n3","zone":"zone-a","zoneRecord":true}"#);
    assert_eq!(again["zoneRecord"]["notReady"], 2, "{again}");
    assert_eq!(zone_lists(&lab), 1);
    // n4 counts and is still recorded Ready, which the record says (docs/fence.md §5, *Judged
    // into a partial disruption*).
    let ready = ask(r#"{"from":"n4","zone":"zone-a","zoneRecord":true}"#);
    assert_eq!(
        ready["zoneRecord"],
        serde_json::json!({"notReady": 2, "size": 4, "unreachableTainted": false,
                           "askerReady": true}),
        "{ready}"
    );
    assert_eq!(zone_lists(&lab), 1);
    let added = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    support::taint_unreachable(&lab.server.api, "n2", &added);
    // A list older than a second is made again.
    std::thread::sleep(Duration::from_millis(1100));
    let tainted = ask(r#"{"from":"n2","zone":"zone-a","zoneRecord":true,"taint":true}"#);
    assert_eq!(
        tainted["zoneRecord"]["unreachableTainted"], true,
        "{tainted}"
    );
    assert_eq!(tainted["unreachableTainted"], true, "{tainted}");
    assert_eq!(zone_lists(&lab), 2);
    let unasked = ask(r#"{"from":"n2","zone":"zone-a"}"#);
    assert!(unasked.get("zoneRecord").is_none(), "{unasked}");
    // A name the zone's list does not hold gets no record (from the same list).
    let unknown = ask(r#"{"from":"n9","zone":"zone-a","zoneRecord":true}"#);
    assert!(unknown.get("zoneRecord").is_none(), "{unknown}");
    assert_eq!(zone_lists(&lab), 2);
    // n2 is not in zone-b: the list of zone-b does not hold it.
    let elsewhere = ask(r#"{"from":"n2","zone":"zone-b","zoneRecord":true}"#);
    assert!(elsewhere.get("zoneRecord").is_none(), "{elsewhere}");
    assert_eq!(zone_lists(&lab), 3);
    // Neither a name nor a zone from a holder of the key goes into a request unchecked.
    let odd = ask(r#"{"from":"n2/../n3","zone":"zone-a","zoneRecord":true}"#);
    assert!(odd.get("zoneRecord").is_none(), "{odd}");
    let injected = ask(r#"{"from":"n2","zone":"zone-a,x=y","zoneRecord":true}"#);
    assert!(injected.get("zoneRecord").is_none(), "{injected}");
    assert_eq!(
        zone_lists(&lab),
        3,
        "a list was made for a name or zone refused"
    );
    // Every counted Node of zone-a not Ready, n1 and n4 a second and more after n2 and n3: the
    // record adds that no Node is outside the zone (one list more, of one Node outside its
    // label) and, for n4, that it left Ready last (docs/fence.md §5, *Every zone down,
    // recorded*); n2 left earlier. Every Ready is the controller's Unknown: the record adds how
    // many seconds after the asker's the last was written (*How long a taint could have
    // stood*), none for n4, and at least the 1.1 s slept since n2's.
    record_ready(&lab, "n1", "Unknown");
    record_ready(&lab, "n4", "Unknown");
    std::thread::sleep(Duration::from_millis(1100));
    let last = ask(r#"{"from":"n4","zone":"zone-a","zoneRecord":true}"#);
    assert_eq!(
        last["zoneRecord"],
        serde_json::json!({"notReady": 4, "size": 4, "unreachableTainted": false,
                           "onlyZone": true, "askerLast": true, "lastDownAfterSeconds": 0}),
        "{last}"
    );
    assert_eq!(zone_lists(&lab), 5);
    let earlier = ask(r#"{"from":"n2","zone":"zone-a","zoneRecord":true}"#);
    assert_eq!(earlier["zoneRecord"]["onlyZone"], true, "{earlier}");
    assert!(
        earlier["zoneRecord"].get("askerLast").is_none(),
        "{earlier}"
    );
    let seconds = earlier["zoneRecord"]["lastDownAfterSeconds"].as_u64();
    assert!(seconds.is_some_and(|s| (1..=10).contains(&s)), "{earlier}");
    assert_eq!(zone_lists(&lab), 5);
}

/// Judged into a partial disruption (docs/fence.md §5, forty-second session): n1, n2 and n3 lose
/// the API server together, three of five, so by their peers' answers alone each enforces on
/// the staggered expiry's guess. The test plays the node lifecycle controller: it records n1
/// and n2 Unknown and leaves n3 Ready, as when the controller judged those two first. Judging
/// n3 then makes three of five not Ready, a partial disruption in which the controller taints
/// nothing, so n3 holds on the record that shows its Node still Ready, and its `-short` pod
/// (tolerating 5 s, less than `READ_SLACK`: due at once on the guess) is not stopped. Once the
/// test records n3 Unknown too, n3 holds on the partial disruption recorded. The rule needs a
/// monitor period longer than a round (1 s here) and the reader's second: the agents count 3 s.
#[test]
fn a_node_still_recorded_ready_holds_when_judging_it_makes_its_zone_partly_disrupted() {
    let tol = Duration::from_secs(5);
    let Some(mut lab) = lab(LabSpec {
        toleration: tol,
        monitor_period: Duration::from_secs(3),
        ..LabSpec::default()
    }) else {
        return;
    };
    lab.start_all();
    for i in 1..=5 {
        record_ready(&lab, &format!("n{i}"), "True");
    }
    let cut_at = SystemTime::now();
    for i in 1..=3 {
        lab.cut_api(i);
    }
    record_ready(&lab, "n1", "Unknown");
    record_ready(&lab, "n2", "Unknown");
    let (line, _) = expect_verdict(&mut lab, 3, "hold", Duration::from_secs(15));
    assert!(
        line.contains(
            "2 of the 5 node(s) of zone zone-a recorded not Ready and this node's Node still Ready"
        ),
        "{line}"
    );
    let stopped = watch_pods(&mut lab, cut_at + GRACE + tol + Duration::from_secs(15));
    assert!(
        !stopped.contains_key("n3-short"),
        "n3-short stopped: {stopped:?}\n{}",
        lab.node(3).log()
    );
    assert_never_enforced(&mut lab, &[3]);
    record_ready(&lab, "n3", "Unknown");
    let node = lab.node(3);
    let found = node.agent().wait_for(
        &["3 of the 5 node(s) of zone zone-a recorded not Ready (partial disruption)"],
        Duration::from_secs(10),
    );
    assert!(found.is_some(), "{}", node.log());
    assert_never_enforced(&mut lab, &[3]);
}

/// The zone as recorded (docs/fence.md §5, issue 22): n1, n2 and n3 lose the API server
/// together, three of five. Each may be the one the control plane judged while the zone still
/// counted as healthy, so by their peers' answers alone each enforces on that guess (as in
/// `under_a_guessed_enforce_a_sigterm_waits_for_the_taint_then_stops_on_time`), and their
/// `-short` pods, tolerating 5 s, less than `READ_SLACK`, are due at once. The test plays the
/// node lifecycle controller: it records Ready=Unknown on their three Nodes, a partial
/// disruption of a zone of five, in which the controller taints nothing. The peer that reads
/// the record for each of them finds it so and its Node untainted, and all three hold: nothing
/// is stopped. Once the test records n2 and n3 Ready again (one of five not Ready: a healthy
/// zone, whose queue taints n1), n1 enforces and stops n1-short.
#[test]
fn three_cut_off_together_hold_while_their_zone_is_recorded_partly_disrupted() {
    let tol = Duration::from_secs(5);
    let Some(mut lab) = started(tol) else {
        return;
    };
    for i in 1..=5 {
        record_ready(&lab, &format!("n{i}"), "True");
    }
    let cut_at = SystemTime::now();
    for i in 1..=3 {
        lab.cut_api(i);
    }
    for i in 1..=3 {
        record_ready(&lab, &format!("n{i}"), "Unknown");
    }
    expect_verdicts_saying(
        &mut lab,
        "hold",
        "3 of the 5 node(s) of zone zone-a recorded not Ready",
    );
    let stopped = watch_pods(&mut lab, cut_at + GRACE + tol + Duration::from_secs(12));
    assert_only_stopped(&mut lab, &stopped, &[]);
    assert_never_enforced(&mut lab, &[1, 2, 3]);
    let back_at = SystemTime::now();
    record_ready(&lab, "n2", "True");
    record_ready(&lab, "n3", "True");
    let (line, _) = expect_verdict(&mut lab, 1, "enforce", Duration::from_secs(10));
    assert!(
        line.contains("may have been tainted while the zone still counted as healthy"),
        "{line}"
    );
    let stopped = watch_pods(&mut lab, back_at + Duration::from_secs(8));
    assert!(
        stopped.contains_key("n1-short"),
        "n1 enforced but never stopped n1-short: {stopped:?}\n{}",
        lab.node(1).log()
    );
}
