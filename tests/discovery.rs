//! Peer discovery (`nodewarden::api::peers::discover`) against the API test server: the peer set
//! is exactly the Service's endpoints but this node's, follows the watch, skips what it cannot
//! use with one log line, and survives an unreachable API server unchanged. Also the test
//! server's EndpointSlices themselves (validation, label selectors, kubectl), since the tests
//! above prove nothing if the server is lenient where the real one is strict.

mod support;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::api::ListParams;
use nodewarden::api::peers::discover;
use nodewarden::core::quorum::Peer;
use serde_json::{Value, json};
use support::apiserver::{ApiServer, Fault};
use tokio::sync::watch;
use tokio::time::Instant;

const SERVICE: &str = "nodewarden-peers";
const ME: &str = "me";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Log records (level and message) of this test process, so a test can count its warnings. Each
/// test uses its own namespace, which the messages name.
fn captured() -> &'static Arc<Mutex<Vec<String>>> {
    static LINES: OnceLock<Arc<Mutex<Vec<String>>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let lines = Arc::new(Mutex::new(Vec::new()));
        // Another test of this binary may have installed it first: same sink either way.
        let _ = log::set_boxed_logger(Box::new(Capture(lines.clone())));
        log::set_max_level(log::LevelFilter::Info);
        lines
    })
}

struct Capture(Arc<Mutex<Vec<String>>>);

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.target().starts_with("nodewarden")
    }
    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            let line = format!("{} {}", r.level(), r.args());
            match self.0.lock() {
                Ok(mut l) => l.push(line),
                Err(p) => p.into_inner().push(line),
            }
        }
    }
    fn flush(&self) {}
}

fn log_lines(containing: &str) -> Vec<String> {
    let lines = match captured().lock() {
        Ok(l) => l.clone(),
        Err(p) => p.into_inner().clone(),
    };
    lines
        .into_iter()
        .filter(|l| l.contains(containing))
        .collect()
}

fn ep(node: Option<&str>, address: &str, zone: Option<&str>) -> Value {
    let mut e = json!({ "addresses": [address], "conditions": { "ready": true, "serving": true, "terminating": false } });
    if let Some(n) = node {
        e["nodeName"] = json!(n);
    }
    if let Some(z) = zone {
        e["zone"] = json!(z);
    }
    e
}

fn slice(
    ns: &str,
    name: &str,
    service: &str,
    address_type: &str,
    port: i64,
    endpoints: Vec<Value>,
) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": { "name": name, "namespace": ns,
                      "labels": { "kubernetes.io/service-name": service,
                                  "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io" } },
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": [{ "name": "metrics", "port": 9842, "protocol": "TCP" },
                  { "name": "peer", "port": port, "protocol": "TCP" }],
    })
}

fn peer(node: &str, address: &str, zone: &str) -> Peer {
    Peer {
        node: node.into(),
        address: address.parse().expect("test address"),
        zone: zone.into(),
    }
}

/// The discovery task over `server`, and the receiving end of its set (which starts at
/// `initial`, as a set restored from the state directory would). Aborted on drop.
struct Discovery {
    rx: watch::Receiver<Vec<Peer>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Discovery {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn start(server: &ApiServer, ns: &str, initial: Vec<Peer>) -> Discovery {
    captured();
    let (tx, rx) = watch::channel(initial);
    let client = server.client();
    let ns = ns.to_string();
    let task = tokio::spawn(async move { discover(client, &ns, SERVICE, "peer", ME, tx).await });
    Discovery { rx, task }
}

/// Waits (at most `within`, at most 1000 changes) for a set satisfying `pred`; the last set
/// seen when it does not come.
async fn wait_for(
    rx: &mut watch::Receiver<Vec<Peer>>,
    within: Duration,
    pred: impl Fn(&[Peer]) -> bool,
) -> Result<Vec<Peer>, Vec<Peer>> {
    let deadline = Instant::now() + within;
    for _ in 0..1000 {
        {
            let current = rx.borrow_and_update();
            if pred(&current) {
                return Ok(current.clone());
            }
        }
        match tokio::time::timeout_at(deadline, rx.changed()).await {
            Ok(Ok(())) => continue,
            _ => break,
        }
    }
    Err(rx.borrow().clone())
}

fn server(ns: &str) -> ApiServer {
    let s = ApiServer::new();
    s.create_namespace(ns);
    s
}

fn slices_path(ns: &str) -> String {
    format!("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices")
}

// ---------------------------------------------------------------------------------------------
// The peer set
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn the_peer_set_is_every_endpoint_of_the_service_but_mine_with_zones_and_ports() {
    let ns = "nw-set";
    let s = server(ns);
    let mut not_ready = ep(Some("n3"), "10.0.0.3", Some("z2"));
    not_ready["conditions"] = json!({ "ready": false, "serving": false, "terminating": false });
    let mut terminating = ep(Some("n4"), "10.0.0.4", Some("z1"));
    terminating["conditions"] = json!({ "ready": false, "serving": true, "terminating": true });
    s.create_endpoint_slice(slice(
        ns,
        "peers-v4",
        SERVICE,
        "IPv4",
        9843,
        vec![
            ep(Some(ME), "10.0.0.1", Some("z1")),
            ep(Some("n2"), "10.0.0.2", Some("z1")),
            not_ready,
            terminating,
            ep(None, "10.0.0.5", Some("z1")),
        ],
    ));
    s.create_endpoint_slice(slice(
        ns,
        "peers-v6",
        SERVICE,
        "IPv6",
        9843,
        vec![
            ep(Some("n5"), "fd00::5", Some("z2")),
            ep(Some("n6"), "fd00::6", None),
        ],
    ));
    s.create_endpoint_slice(slice(
        ns,
        "other",
        "other-service",
        "IPv4",
        9843,
        vec![ep(Some("n7"), "10.0.0.7", Some("z1"))],
    ));
    let mut d = start(&s, ns, Vec::new());
    let set = wait_for(&mut d.rx, Duration::from_secs(5), |p| !p.is_empty()).await;
    assert_eq!(
        set,
        Ok(vec![
            peer("n2", "10.0.0.2:9843", "z1"),
            peer("n3", "10.0.0.3:9843", "z2"),
            peer("n5", "[fd00::5]:9843", "z2"),
            peer("n6", "[fd00::6]:9843", ""),
        ])
    );
    // It asked for this Service's slices only, by label, in its namespace.
    let lists: Vec<_> = s
        .requests()
        .into_iter()
        .filter(|r| r.path == slices_path(ns) && r.param("watch").is_none())
        .collect();
    assert!(!lists.is_empty());
    for r in &lists {
        assert_eq!(
            r.param("labelSelector"),
            Some("kubernetes.io/service-name=nodewarden-peers")
        );
    }
}

#[tokio::test]
async fn an_empty_list_is_a_real_answer_and_replaces_a_restored_set() {
    let ns = "nw-empty";
    let s = server(ns);
    let restored = vec![peer("n2", "10.0.0.2:9843", "z1")];
    let mut d = start(&s, ns, restored);
    assert_eq!(
        wait_for(&mut d.rx, Duration::from_secs(5), |p| p.is_empty()).await,
        Ok(Vec::new())
    );
}

#[tokio::test]
async fn watch_updates_arrive_within_two_seconds() {
    let ns = "nw-watch";
    let s = server(ns);
    s.create_endpoint_slice(slice(
        ns,
        "peers-a",
        SERVICE,
        "IPv4",
        9843,
        vec![
            ep(Some("n2"), "10.0.0.2", Some("z1")),
            ep(Some("n3"), "10.0.0.3", Some("z1")),
        ],
    ));
    let mut d = start(&s, ns, Vec::new());
    wait_for(&mut d.rx, Duration::from_secs(5), |p| p.len() == 2)
        .await
        .expect("the first set");

    // An endpoint added.
    s.update_endpoint_slice_as("endpointslice-controller", ns, "peers-a", |o| {
        o["endpoints"].as_array_mut().expect("endpoints").push(ep(
            Some("n4"),
            "10.0.0.4",
            Some("z2"),
        ))
    })
    .expect("update");
    let asked = Instant::now();
    let set = wait_for(&mut d.rx, Duration::from_secs(2), |p| p.len() == 3).await;
    eprintln!("an added endpoint arrived after {:?}", asked.elapsed());
    assert_eq!(
        set,
        Ok(vec![
            peer("n2", "10.0.0.2:9843", "z1"),
            peer("n3", "10.0.0.3:9843", "z1"),
            peer("n4", "10.0.0.4:9843", "z2"),
        ])
    );

    // One removed.
    s.update_endpoint_slice_as("endpointslice-controller", ns, "peers-a", |o| {
        o["endpoints"]
            .as_array_mut()
            .expect("endpoints")
            .retain(|e| e["nodeName"] != "n3")
    })
    .expect("update");
    let set = wait_for(&mut d.rx, Duration::from_secs(2), |p| p.len() == 2).await;
    assert_eq!(
        set,
        Ok(vec![
            peer("n2", "10.0.0.2:9843", "z1"),
            peer("n4", "10.0.0.4:9843", "z2")
        ])
    );

    // A zone changed.
    s.update_endpoint_slice_as("endpointslice-controller", ns, "peers-a", |o| {
        o["endpoints"][0]["zone"] = json!("z3")
    })
    .expect("update");
    let set = wait_for(&mut d.rx, Duration::from_secs(2), |p| {
        p.first().is_some_and(|p| p.zone == "z3")
    })
    .await;
    assert_eq!(
        set,
        Ok(vec![
            peer("n2", "10.0.0.2:9843", "z3"),
            peer("n4", "10.0.0.4:9843", "z2")
        ])
    );

    // A second slice appears, then the first is deleted: all slices make the set.
    s.create_endpoint_slice(slice(
        ns,
        "peers-b",
        SERVICE,
        "IPv4",
        9843,
        vec![ep(Some("n9"), "10.0.0.9", Some("z1"))],
    ));
    let set = wait_for(&mut d.rx, Duration::from_secs(2), |p| p.len() == 3).await;
    assert!(set.is_ok_and(|p| p.iter().any(|p| p.node == "n9")));
    s.delete("endpointslices", ns, "peers-a", None)
        .expect("delete");
    let set = wait_for(&mut d.rx, Duration::from_secs(2), |p| p.len() == 1).await;
    assert_eq!(set, Ok(vec![peer("n9", "10.0.0.9:9843", "z1")]));

    // A slice of another service changes nothing.
    s.create_endpoint_slice(slice(
        ns,
        "other",
        "other-service",
        "IPv4",
        9843,
        vec![ep(Some("n7"), "10.0.0.7", Some("z1"))],
    ));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!d.rx.has_changed().expect("sender alive"));
    assert_eq!(*d.rx.borrow(), vec![peer("n9", "10.0.0.9:9843", "z1")]);
}

/// The API server refuses "not-an-ip" in an IPv4 slice (shown below), so what reaches the agent
/// malformed is what the server admits and Rust will not read: an IPv4 address with leading
/// zeros, a port out of range (EndpointSlice ports are not range-checked upstream) and an FQDN
/// slice. ("not-an-ip" itself is covered by the unit tests of `api::peers`.)
#[tokio::test]
async fn a_malformed_endpoint_is_skipped_with_one_log_line_and_the_rest_kept() {
    let ns = "nw-malformed";
    let s = server(ns);
    let refused = s.try_create(
        "endpointslices",
        slice(
            ns,
            "bad",
            SERVICE,
            "IPv4",
            9843,
            vec![ep(Some("n1"), "not-an-ip", None)],
        ),
    );
    assert_eq!(refused.expect_err("refused")["code"], 422);

    s.create_endpoint_slice(slice(
        ns,
        "peers-a",
        SERVICE,
        "IPv4",
        9843,
        vec![
            ep(Some("n2"), "10.0.0.2", Some("z1")),
            ep(Some("n3"), "010.0.0.3", Some("z1")),
        ],
    ));
    s.create_endpoint_slice(slice(
        ns,
        "peers-port",
        SERVICE,
        "IPv4",
        70000,
        vec![ep(Some("n4"), "10.0.0.4", Some("z1"))],
    ));
    let fqdn = slice(
        ns,
        "peers-fqdn",
        SERVICE,
        "FQDN",
        9843,
        vec![ep(Some("n5"), "n5.example.com", Some("z1"))],
    );
    s.create_endpoint_slice(fqdn);
    let mut d = start(&s, ns, Vec::new());
    let set = wait_for(&mut d.rx, Duration::from_secs(5), |p| !p.is_empty()).await;
    assert_eq!(set, Ok(vec![peer("n2", "10.0.0.2:9843", "z1")]));

    // Three more changes of the slice: the problem is logged once, not once per change.
    for zone in ["z2", "z3", "z4"] {
        s.update_endpoint_slice_as("endpointslice-controller", ns, "peers-a", |o| {
            o["endpoints"][0]["zone"] = json!(zone)
        })
        .expect("update");
        let set = wait_for(&mut d.rx, Duration::from_secs(2), |p| {
            p.first().is_some_and(|p| p.zone == zone)
        })
        .await;
        assert!(set.is_ok(), "{zone}: {set:?}");
    }
    let bad_address = log_lines(&format!("{ns}/peers-a: endpoint of node n3"));
    assert_eq!(bad_address.len(), 1, "{bad_address:?}");
    assert!(bad_address[0].starts_with("WARN"), "{bad_address:?}");
    assert!(bad_address[0].contains("\"010.0.0.3\""), "{bad_address:?}");
    assert_eq!(log_lines(&format!("{ns}/peers-port:")).len(), 1);
    assert_eq!(log_lines(&format!("{ns}/peers-fqdn:")).len(), 1);

    // Fixed, the endpoint joins; broken again, it is logged again.
    s.update_endpoint_slice_as("endpointslice-controller", ns, "peers-a", |o| {
        o["endpoints"][1]["addresses"] = json!(["10.0.0.3"])
    })
    .expect("update");
    let set = wait_for(&mut d.rx, Duration::from_secs(2), |p| p.len() == 2).await;
    assert!(set.is_ok(), "{set:?}");
    s.update_endpoint_slice_as("endpointslice-controller", ns, "peers-a", |o| {
        o["endpoints"][1]["addresses"] = json!(["010.0.0.3"])
    })
    .expect("update");
    let set = wait_for(&mut d.rx, Duration::from_secs(2), |p| p.len() == 1).await;
    assert!(set.is_ok(), "{set:?}");
    assert_eq!(
        log_lines(&format!("{ns}/peers-a: endpoint of node n3")).len(),
        2
    );
}

#[tokio::test]
async fn an_unreachable_api_server_keeps_the_last_set() {
    let ns = "nw-outage";
    let s = server(ns);
    s.create_endpoint_slice(slice(
        ns,
        "peers-a",
        SERVICE,
        "IPv4",
        9843,
        vec![
            ep(Some("n2"), "10.0.0.2", Some("z1")),
            ep(Some("n3"), "10.0.0.3", Some("z1")),
        ],
    ));
    let mut d = start(&s, ns, Vec::new());
    let before = wait_for(&mut d.rx, Duration::from_secs(5), |p| p.len() == 2)
        .await
        .expect("the first set");
    let path = slices_path(ns);

    // 500s on every list, and a forced re-list: the watch is cut and its resourceVersion
    // compacted away, so the agent must list again, and that list fails, again and again.
    // No await from here to the sleep: the agent (on this thread) sees all of it at once.
    s.faults()
        .fail_next(("LIST", path.as_str()), 10_000, Fault::Status500);
    s.clear_requests();
    s.drop_watches();
    s.update_endpoint_slice_as("endpointslice-controller", ns, "peers-a", |o| {
        o["endpoints"] = json!([ep(Some("n9"), "10.0.0.9", Some("z9"))])
    })
    .expect("update");
    s.compact(0);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !d.rx.has_changed().expect("sender alive"),
        "{:?}",
        *d.rx.borrow()
    );
    assert_eq!(*d.rx.borrow(), before);
    let failed_lists = s
        .requests()
        .iter()
        .filter(|r| r.path == path && r.param("watch").is_none() && r.status == Some(500))
        .count();
    eprintln!("{failed_lists} lists answered 500 in 3 s");
    // Retried, with backoff (800 ms, doubling, jittered): not a hot loop.
    assert!(
        (1..=8).contains(&failed_lists),
        "{failed_lists} failed lists"
    );
    assert_eq!(log_lines(&format!("{ns}/{SERVICE}: watch failed")).len(), 1);

    // The server answers again: the change made during the outage arrives.
    s.faults().clear();
    let cleared = Instant::now();
    let set = wait_for(&mut d.rx, Duration::from_secs(15), |p| p.len() == 1).await;
    eprintln!(
        "the set caught up {:?} after the server recovered",
        cleared.elapsed()
    );
    assert_eq!(set, Ok(vec![peer("n9", "10.0.0.9:9843", "z9")]));
    assert_eq!(
        log_lines(&format!("{ns}/{SERVICE}: watch recovered")).len(),
        1
    );

    // A black hole: requests accepted and never answered. The set stays while slices change.
    s.faults()
        .black_hole(("LIST", path.as_str()), true)
        .black_hole(("WATCH", path.as_str()), true);
    s.drop_watches();
    s.update_endpoint_slice_as("endpointslice-controller", ns, "peers-a", |o| {
        o["endpoints"] = json!([])
    })
    .expect("update");
    s.compact(0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        !d.rx.has_changed().expect("sender alive"),
        "{:?}",
        *d.rx.borrow()
    );
    assert_eq!(*d.rx.borrow(), vec![peer("n9", "10.0.0.9:9843", "z9")]);
    let unanswered = s
        .requests()
        .iter()
        .filter(|r| r.path == path && r.status.is_none())
        .count();
    assert!(unanswered >= 1, "the agent asked and got no answer");
}

// ---------------------------------------------------------------------------------------------
// The test server's EndpointSlices
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn the_test_server_selects_slices_by_label_strictly() {
    let ns = "nw-select";
    let s = server(ns);
    for (name, service) in [("a", SERVICE), ("b", SERVICE), ("c", "other-service")] {
        s.create_endpoint_slice(slice(
            ns,
            name,
            service,
            "IPv4",
            9843,
            vec![ep(Some("n2"), "10.0.0.2", None)],
        ));
    }
    let api: Api<EndpointSlice> = Api::namespaced(s.client(), ns);
    let names = |list: kube::core::ObjectList<EndpointSlice>| -> Vec<String> {
        list.items
            .into_iter()
            .filter_map(|i| i.metadata.name)
            .collect()
    };
    let ours = api
        .list(&ListParams::default().labels("kubernetes.io/service-name=nodewarden-peers"))
        .await
        .expect("list");
    assert_eq!(names(ours), ["a", "b"]);
    let none = api
        .list(&ListParams::default().labels("kubernetes.io/service-name=nodewarden"))
        .await
        .expect("list");
    assert!(names(none).is_empty());
    let all = api.list(&ListParams::default()).await.expect("list");
    assert_eq!(names(all), ["a", "b", "c"]);
    // Another namespace holds none of them.
    s.create_namespace("elsewhere");
    let elsewhere: Api<EndpointSlice> = Api::namespaced(s.client(), "elsewhere");
    assert!(names(elsewhere.list(&ListParams::default()).await.expect("list")).is_empty());
}

/// Each row: what is wrong, the slice, the answer's code and (for 422) a cause field.
#[test]
fn the_test_server_validates_endpoint_slices_as_the_api_server_does() {
    let ns = "nw-valid";
    let s = server(ns);
    let base = || {
        slice(
            ns,
            "s",
            SERVICE,
            "IPv4",
            9843,
            vec![ep(Some("n2"), "10.0.0.2", None)],
        )
    };
    let with = |f: &dyn Fn(&mut Value)| {
        let mut o = base();
        f(&mut o);
        o
    };
    let many: Vec<String> = (1..=101)
        .map(|i| format!("10.0.1.{}", i % 250 + 1))
        .collect();
    let cases: Vec<(&str, Value, u64, &str)> = vec![
        (
            "no addressType",
            with(&|o| o["addressType"] = Value::Null),
            422,
            "addressType",
        ),
        (
            "addressType IP (deprecated)",
            with(&|o| o["addressType"] = json!("IP")),
            422,
            "addressType",
        ),
        (
            "no address",
            with(&|o| o["endpoints"][0]["addresses"] = json!([])),
            422,
            "endpoints[0].addresses",
        ),
        (
            "101 addresses",
            with(&|o| o["endpoints"][0]["addresses"] = json!(many)),
            422,
            "endpoints[0].addresses",
        ),
        (
            "not an IP",
            with(&|o| o["endpoints"][0]["addresses"] = json!(["not-an-ip"])),
            422,
            "endpoints[0].addresses[0]",
        ),
        (
            "IPv6 in an IPv4 slice",
            with(&|o| o["endpoints"][0]["addresses"] = json!(["fd00::1"])),
            422,
            "endpoints[0].addresses[0]",
        ),
        (
            "loopback",
            with(&|o| o["endpoints"][0]["addresses"] = json!(["127.0.0.1"])),
            422,
            "endpoints[0].addresses[0]",
        ),
        (
            "link-local",
            with(&|o| o["endpoints"][0]["addresses"] = json!(["169.254.1.1"])),
            422,
            "endpoints[0].addresses[0]",
        ),
        (
            "bad node name",
            with(&|o| o["endpoints"][0]["nodeName"] = json!("N_2")),
            422,
            "endpoints[0].nodeName",
        ),
        (
            "port name of 64 characters",
            with(&|o| o["ports"][1]["name"] = json!("p".repeat(64))),
            422,
            "ports[1].name",
        ),
        (
            "port name not a DNS label",
            with(&|o| o["ports"][1]["name"] = json!("Peer")),
            422,
            "ports[1].name",
        ),
        (
            "duplicate port name",
            with(&|o| o["ports"][1]["name"] = json!("metrics")),
            422,
            "ports[1].name",
        ),
        (
            "protocol HTTP",
            with(&|o| o["ports"][1]["protocol"] = json!("HTTP")),
            422,
            "ports[1].protocol",
        ),
        (
            "port beyond int32",
            with(&|o| o["ports"][1]["port"] = json!(1_i64 << 31)),
            400,
            "",
        ),
        (
            "addresses not strings",
            with(&|o| o["endpoints"][0]["addresses"] = json!([1])),
            400,
            "",
        ),
    ];
    for (what, obj, code, field) in cases {
        let status = s
            .try_create("endpointslices", obj)
            .expect_err(&format!("{what}: refused"));
        assert_eq!(status["code"], code, "{what}: {status}");
        if code == 422 {
            let causes = status["details"]["causes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(
                causes.iter().any(|c| c["field"] == field),
                "{what}: {status}"
            );
        }
    }

    // What upstream admits: FQDN slices, an IPv4-mapped IPv6 address or leading zeros in an
    // IPv4 slice, any int32 port; port name and protocol are defaulted.
    let mut fqdn = with(&|o| o["endpoints"][0]["addresses"] = json!(["n2.example.com"]));
    fqdn["addressType"] = json!("FQDN");
    fqdn["metadata"]["name"] = json!("fqdn");
    s.try_create("endpointslices", fqdn).expect("FQDN slice");
    let odd = with(&|o| {
        o["metadata"]["name"] = json!("odd");
        o["endpoints"] = json!([
            ep(Some("n2"), "010.0.0.2", None),
            ep(Some("n3"), "::ffff:10.0.0.3", None)
        ]);
        o["ports"] = json!([{ "port": 70000 }]);
    });
    let stored = s.try_create("endpointslices", odd).expect("admitted");
    assert_eq!(
        stored["ports"],
        json!([{ "name": "", "port": 70000, "protocol": "TCP" }])
    );
    assert_eq!(stored["metadata"]["generation"], 1);

    // Updates: addressType is immutable; a change bumps generation, unchanged endpoints are not
    // validated again.
    let changed =
        s.update_endpoint_slice_as("test", ns, "odd", |o| o["addressType"] = json!("IPv6"));
    let status = changed.expect_err("immutable");
    assert_eq!(status["code"], 422, "{status}");
    let updated = s
        .update_endpoint_slice_as("test", ns, "odd", |o| {
            o["endpoints"][0]["zone"] = json!("z1")
        })
        .expect("update");
    assert_eq!(updated["metadata"]["generation"], 2);
    let same = s
        .update_endpoint_slice_as("test", ns, "odd", |o| {
            o["endpoints"][0]["zone"] = json!("z1")
        })
        .expect("no-op update");
    assert_eq!(
        same["metadata"]["resourceVersion"],
        updated["metadata"]["resourceVersion"]
    );
}

#[tokio::test]
async fn kubectl_gets_endpointslices_from_the_test_server() {
    if !support::require(support::kubectl::available(), "the kubectl binary") {
        return;
    }
    let ns = "nw-kubectl";
    let s = server(ns);
    s.create_endpoint_slice(slice(
        ns,
        "peers-a",
        SERVICE,
        "IPv4",
        9843,
        vec![ep(Some("n2"), "10.0.0.2", Some("z1"))],
    ));
    let lb = s.serve_loopback();
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = lb.write_kubeconfig(dir.path());
    let cache = dir.path().join("cache");
    let (ok, out, err) =
        support::kubectl::run(&kc, &cache, &["get", "endpointslices", "-n", ns]).await;
    assert!(ok, "{err}");
    assert!(out.lines().any(|l| l.starts_with("peers-a ")), "{out}");
    let (ok, out, err) = support::kubectl::run(
        &kc,
        &cache,
        &[
            "get",
            "endpointslices",
            "-n",
            ns,
            "-l",
            "kubernetes.io/service-name=nodewarden-peers",
            "-o",
            "json",
        ],
    )
    .await;
    assert!(ok, "{err}");
    let list: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(list["items"][0]["endpoints"][0]["nodeName"], "n2");
    assert_eq!(list["items"][0]["ports"][1]["name"], "peer");
}
