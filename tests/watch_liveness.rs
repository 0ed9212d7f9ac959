//! How long the agent's watches last and how a dead one is found, over real HTTP on loopback:
//! each watch asks for 450–600 s (so no more re-opens an hour than the kubelet's), a watch kept
//! alive by the API server's BOOKMARKs is never re-opened early, and a watch that falls silent
//! is dropped after the client's read timeout and resumed where it was, without a re-list. Each
//! runs against a server that serves streaming lists (the pods' initial state sent by the watch
//! itself) and, where the two differ, one that does not (Kubernetes 1.33: the pods in pages).

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use nodewarden::api::reachability::State as Reach;
use nodewarden::api::watch::{self, WATCH_TIMEOUT_MAX, WATCH_TIMEOUT_MIN};
use support::apiserver::{ApiServer, Recorded};

const NODE: &str = "n1";

/// The recorded GETs of `collection` (`/api/v1/pods`, `/api/v1/nodes`): (the requests that list
/// it — list pages and streaming lists —, every watch request, streaming lists included). A
/// streaming list refused (422, a server without them) is neither.
fn gets(server: &ApiServer, collection: &str) -> (Vec<Recorded>, Vec<Recorded>) {
    let all: Vec<Recorded> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path == collection && r.status != Some(422))
        .collect();
    let watches: Vec<Recorded> = all
        .iter()
        .filter(|r| r.param("watch") == Some("true"))
        .cloned()
        .collect();
    let lists = all
        .into_iter()
        .filter(|r| r.param("watch") != Some("true") || is_streaming_list(r))
        .collect();
    (lists, watches)
}

fn is_streaming_list(r: &Recorded) -> bool {
    r.param("sendInitialEvents") == Some("true")
}

/// Whether the second watch of `watches` resumed the first where it was: from the
/// resourceVersion the first was opened at, or, after a streaming list, from a revision (the one
/// its BOOKMARK ended the initial events at) without listing again.
fn resumed_where_it_was(watches: &[Recorded]) -> bool {
    let rv = |r: &Recorded| r.param("resourceVersion").map(str::to_string);
    if is_streaming_list(&watches[0]) {
        !is_streaming_list(&watches[1])
            && rv(&watches[1]).is_some_and(|v| !v.is_empty() && v != "0")
    } else {
        rv(&watches[0]).is_some() && rv(&watches[1]) == rv(&watches[0])
    }
}

/// A server with the WatchList gate as `streaming` says (on: Kubernetes 1.34 and later).
fn server_with(streaming: bool) -> ApiServer {
    let server = ApiServer::new();
    server.set_watch_list(streaming);
    server
}

/// The agent's two watches against `server` over HTTP, its client dropping a connection silent
/// for `read_timeout`. Returns the pod store and the task keeping it.
async fn start(
    server: &ApiServer,
    dir: &std::path::Path,
    read_timeout: Duration,
) -> (
    support::apiserver::Loopback,
    watch::Views,
    tokio::task::JoinHandle<()>,
) {
    let lb = server.serve_loopback();
    let kubeconfig = lb.write_kubeconfig(dir);
    let client = nodewarden::api::connect_with(Some(&kubeconfig), read_timeout)
        .await
        .expect("client");
    let (node_tx, _node_rx) = tokio::sync::watch::channel::<Option<Arc<Node>>>(None);
    // No contact signal: these watches live on their own.
    let (_, contact) = tokio::sync::watch::channel(Reach::Unknown);
    let (views, run) = watch::start(
        client,
        nodewarden::api::DEFAULT_REQUEST_TIMEOUT,
        NODE.to_string(),
        node_tx,
        contact,
    );
    (lb, views, tokio::spawn(run))
}

/// Polls `done` every 50 ms until it holds or `within` passes.
async fn wait_until(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

#[test]
fn each_watch_draws_its_timeout_between_the_bounds_and_the_draws_differ() {
    let draws: Vec<u32> = (0..200).map(|_| watch::watch_timeout_secs()).collect();
    let (min, max) = (WATCH_TIMEOUT_MIN.as_secs(), WATCH_TIMEOUT_MAX.as_secs());
    assert!(
        draws.iter().all(|&d| (min..max).contains(&u64::from(d))),
        "{draws:?}"
    );
    let distinct: std::collections::BTreeSet<_> = draws.iter().collect();
    // 200 uniform draws among 150 values: fewer than 50 distinct would be a broken draw.
    assert!(distinct.len() > 50, "{} distinct of 200", distinct.len());
    // At most the kubelet's average of 8 re-opens an hour, whatever the draw.
    assert!(3600 / min <= 8);
}

#[tokio::test]
async fn a_watch_kept_alive_by_bookmarks_lasts_and_a_silent_one_is_resumed_after_the_read_timeout()
{
    for streaming in [true, false] {
        kept_alive_or_resumed(streaming).await;
    }
}

async fn kept_alive_or_resumed(streaming: bool) {
    let dir = tempfile::tempdir().expect("tempdir");

    // Alive: BOOKMARKs every 300 ms, a 2 s read timeout, 5 s watched. Each watch is opened once,
    // asking for its drawn timeout.
    let server = server_with(streaming);
    server.set_bookmark_interval(Duration::from_millis(300));
    server.create_node(ApiServer::node_json(NODE));
    let (_lb, views, task) = start(&server, dir.path(), Duration::from_secs(2)).await;
    assert!(
        wait_until(Duration::from_secs(10), || gets(&server, "/api/v1/pods")
            .1
            .len()
            == 1)
        .await,
        "the pod watch never started: {:?}",
        server.requests()
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    for collection in ["/api/v1/pods", "/api/v1/nodes"] {
        let (lists, watches) = gets(&server, collection);
        assert_eq!(lists.len(), 1, "{collection}: {lists:?}");
        assert_eq!(watches.len(), 1, "{collection} re-opened: {watches:?}");
        let asked: u64 = watches[0]
            .param("timeoutSeconds")
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        assert!(
            (WATCH_TIMEOUT_MIN.as_secs()..WATCH_TIMEOUT_MAX.as_secs()).contains(&asked),
            "{collection}: timeoutSeconds {asked}"
        );
        assert_eq!(watches[0].param("allowWatchBookmarks"), Some("true"));
    }
    task.abort();
    drop(views);

    // Silent: no BOOKMARK within the hour. The same client drops each watch after 2 s of silence
    // and opens it again from the resourceVersion it had, not from a new list; a pod created after
    // that reaches the store.
    let server = server_with(streaming);
    server.set_bookmark_interval(Duration::from_secs(3600));
    server.create_node(ApiServer::node_json(NODE));
    let (_lb, views, task) = start(&server, dir.path(), Duration::from_secs(2)).await;
    let started = Instant::now();
    assert!(
        wait_until(Duration::from_secs(15), || {
            gets(&server, "/api/v1/pods").1.len() >= 2
                && gets(&server, "/api/v1/nodes").1.len() >= 2
        })
        .await,
        "a silent watch was not re-opened within 15 s: {:?}",
        server.requests()
    );
    // Not before the read timeout.
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    for collection in ["/api/v1/pods", "/api/v1/nodes"] {
        let (lists, watches) = gets(&server, collection);
        assert_eq!(lists.len(), 1, "{collection} re-listed: {lists:?}");
        assert_eq!(
            is_streaming_list(&watches[0]),
            streaming && collection == "/api/v1/pods",
            "only the pods are listed by a streaming list, where the server serves one"
        );
        assert!(
            resumed_where_it_was(&watches),
            "{collection} did not resume where it was: {watches:?}"
        );
    }
    server.create_pod(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "late", "namespace": "default"},
        "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "busybox"}]}
    }));
    assert!(
        wait_until(Duration::from_secs(10), || views
            .pods
            .state()
            .iter()
            .any(|p| p.metadata.name.as_deref() == Some("late")))
        .await,
        "a pod created after the re-open never reached the store"
    );
    task.abort();
}

/// Issue 21: the watches' requests are bounded by the request timeout (not the 180 s read
/// timeout) and a watch that has shown nothing since contact was lost is re-opened as soon as
/// contact returns. The API server here hangs every request of the watches (a load balancer in
/// front of a dead control plane); `contact` plays the agent's reachability.
mod after_an_outage {
    use super::*;
    use tokio::sync::watch as channel;

    /// The request timeout of these tests: the agent's is min(status frequency, Lease duration).
    const REQUEST_TIMEOUT: Duration = Duration::from_millis(500);
    /// How soon after contact returns the view must be current here: a few round trips on
    /// loopback, far below `core::pod_view::bound` (1 s here) and the read timeout (180 s).
    const CAUGHT_UP: Duration = Duration::from_millis(900);

    fn pod(name: &str) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "busybox"}]}
        })
    }

    /// [`server_with`] holding this node and 30 pods (more than a page of 25): the server and
    /// the pods' names.
    fn seeded_with(streaming: bool) -> (ApiServer, Vec<String>) {
        let server = server_with(streaming);
        server.create_node(ApiServer::node_json(NODE));
        let want: Vec<String> = (0..30).map(|i| format!("p{i:02}")).collect();
        for n in &want {
            server.create_pod(pod(n));
        }
        (server, want)
    }

    fn names(views: &watch::Views) -> std::collections::BTreeSet<String> {
        views
            .pods
            .state()
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect()
    }

    fn hang(server: &ApiServer, on: bool) {
        for route in [
            ("LIST", "/api/v1/pods"),
            ("WATCH", "/api/v1/pods"),
            ("LIST", "/api/v1/nodes"),
            ("WATCH", "/api/v1/nodes"),
        ] {
            server.faults().black_hole(route, on);
        }
    }

    /// The watches with the agent's real read timeout, and the contact channel.
    async fn start_watching(
        server: &ApiServer,
        dir: &std::path::Path,
    ) -> (
        support::apiserver::Loopback,
        watch::Views,
        tokio::task::JoinHandle<()>,
        channel::Sender<Reach>,
    ) {
        let lb = server.serve_loopback();
        let kubeconfig = lb.write_kubeconfig(dir);
        let client =
            nodewarden::api::connect_with(Some(&kubeconfig), nodewarden::api::READ_TIMEOUT)
                .await
                .expect("client");
        let (node_tx, _node_rx) = tokio::sync::watch::channel::<Option<Arc<Node>>>(None);
        let (contact_tx, contact) = channel::channel(Reach::Unknown);
        let (views, run) =
            watch::start(client, REQUEST_TIMEOUT, NODE.to_string(), node_tx, contact);
        (lb, views, tokio::spawn(run), contact_tx)
    }

    /// Contact returns; the view must hold `want` and be current within [`CAUGHT_UP`].
    /// During the outage: a pod created and one (`p00`) deleted, lists answered again; then
    /// contact returns and the view must show exactly `want` with those changes.
    async fn change_then_heal(
        server: &ApiServer,
        views: &watch::Views,
        contact: &channel::Sender<Reach>,
        mut want: Vec<String>,
    ) {
        server.create_pod(pod("after"));
        server
            .delete("pods", "default", "p00", Some(0))
            .expect("delete");
        server
            .faults()
            .latency(("LIST", "/api/v1/pods"), Duration::ZERO);
        want.retain(|n| n != "p00");
        want.push("after".into());
        let want: Vec<&str> = want.iter().map(String::as_str).collect();
        heal_and_expect(server, views, contact, &want).await;
    }

    async fn heal_and_expect(
        server: &ApiServer,
        views: &watch::Views,
        contact: &channel::Sender<Reach>,
        want: &[&str],
    ) {
        hang(server, false);
        contact.send_replace(Reach::Reachable);
        let back = Instant::now();
        let want: std::collections::BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
        let caught_up = wait_until(CAUGHT_UP, || {
            views.pod_view.is_current() && names(views) == want
        })
        .await;
        assert!(
            caught_up,
            "{:?} after contact returned the view is {} with {:?}, not {want:?}; requests: {:?}",
            back.elapsed(),
            if views.pod_view.is_current() {
                "current"
            } else {
                "not current"
            },
            names(views),
            gets(server, "/api/v1/pods")
        );
        assert_eq!(views.pod_view.age(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_list_sent_into_a_hung_server_gives_way_when_contact_returns() {
        for streaming in [true, false] {
            hung_list_gives_way(streaming).await;
        }
    }

    async fn hung_list_gives_way(streaming: bool) {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = server_with(streaming);
        server.create_node(ApiServer::node_json(NODE));
        server.create_pod(pod("before"));
        hang(&server, true);
        let (_lb, views, task, contact) = start_watching(&server, dir.path()).await;
        // The agent's first writes time out too.
        tokio::time::sleep(REQUEST_TIMEOUT).await;
        contact.send_replace(Reach::Unreachable);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!views.pod_view.is_current());
        assert!(views.pod_view.age() >= Duration::from_secs(2));
        // Each hung list was given up after the request timeout: about one per backoff step.
        let lists = gets(&server, "/api/v1/pods").0.len();
        assert!(lists >= 2, "the first list was never given up: {lists}");
        server.create_pod(pod("after"));
        heal_and_expect(&server, &views, &contact, &["before", "after"]).await;
        task.abort();
    }

    #[tokio::test]
    async fn an_outage_starting_mid_list_is_caught_up_when_contact_returns() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Pages (a server without streaming lists): two of 25, the first answered slowly, the
        // second sent into the outage.
        let (server, want) = seeded_with(false);
        server
            .faults()
            .latency(("LIST", "/api/v1/pods"), Duration::from_millis(300));
        let (_lb, views, task, contact) = start_watching(&server, dir.path()).await;
        assert!(
            wait_until(Duration::from_secs(5), || !gets(&server, "/api/v1/pods")
                .0
                .is_empty())
            .await
        );
        hang(&server, true);
        contact.send_replace(Reach::Unreachable);
        tokio::time::sleep(Duration::from_secs(2)).await;
        let pages = gets(&server, "/api/v1/pods").0;
        assert!(
            pages.iter().any(|r| r.param("continue").is_some()),
            "the outage did not start mid-list: {pages:?}"
        );
        assert!(!views.pod_view.is_current());
        change_then_heal(&server, &views, &contact, want).await;
        task.abort();
    }

    #[tokio::test]
    async fn an_outage_starting_mid_relist_is_caught_up_when_contact_returns() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Pages: a server without streaming lists.
        let (server, want) = seeded_with(false);
        server.set_bookmark_interval(Duration::from_secs(3600));
        let (_lb, views, task, contact) = start_watching(&server, dir.path()).await;
        contact.send_replace(Reach::Reachable);
        assert!(wait_until(Duration::from_secs(5), || views.pod_view.is_current()).await);
        // The history compacted and the watches dropped: the resume is answered 410 and the
        // pods are listed again, slowly, and the outage starts after the first page.
        server
            .faults()
            .latency(("LIST", "/api/v1/pods"), Duration::from_millis(300));
        server.compact(0);
        server.drop_watches();
        assert!(
            wait_until(Duration::from_secs(5), || gets(&server, "/api/v1/pods")
                .0
                .len()
                >= 2)
            .await,
            "no re-list: {:?}",
            gets(&server, "/api/v1/pods")
        );
        hang(&server, true);
        contact.send_replace(Reach::Unreachable);
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!views.pod_view.is_current());
        change_then_heal(&server, &views, &contact, want).await;
        task.abort();
    }

    #[tokio::test]
    async fn a_silent_stream_is_resumed_at_once_when_contact_returns_not_after_the_read_timeout() {
        for streaming in [true, false] {
            silent_stream_resumed(streaming).await;
        }
    }

    async fn silent_stream_resumed(streaming: bool) {
        let dir = tempfile::tempdir().expect("tempdir");
        let server = server_with(streaming);
        server.set_bookmark_interval(Duration::from_secs(3600));
        server.create_node(ApiServer::node_json(NODE));
        server.create_pod(pod("before"));
        let (_lb, views, task, contact) = start_watching(&server, dir.path()).await;
        contact.send_replace(Reach::Reachable);
        assert!(wait_until(Duration::from_secs(5), || views.pod_view.is_current()).await);
        // An outage: the open stream says nothing through it.
        contact.send_replace(Reach::Unreachable);
        assert!(
            wait_until(Duration::from_millis(500), || !views.pod_view.is_current()).await,
            "trusted across an outage"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        contact.send_replace(Reach::Reachable);
        assert!(
            wait_until(CAUGHT_UP, || gets(&server, "/api/v1/pods").1.len() == 2
                && views.pod_view.is_current())
            .await,
            "not re-opened: {:?}",
            gets(&server, "/api/v1/pods")
        );
        let (lists, watches) = gets(&server, "/api/v1/pods");
        assert_eq!(lists.len(), 1, "re-listed: {lists:?}");
        assert!(
            resumed_where_it_was(&watches),
            "not resumed where it was: {watches:?}"
        );
        task.abort();
    }

    /// A streaming list whose connection hangs after some of its pods: the view is not current
    /// meanwhile (the pods it has not sent are unknown), and the list is given up once no event
    /// came for the request timeout — not after the client's 180 s read timeout — and sent again.
    #[tokio::test]
    async fn a_streaming_list_that_hangs_mid_way_is_not_current_and_is_given_up_after_the_request_timeout()
     {
        let dir = tempfile::tempdir().expect("tempdir");
        let (server, want) = seeded_with(true);
        server.faults().stall_next_initial_events(10);
        let (_lb, views, task, contact) = start_watching(&server, dir.path()).await;
        contact.send_replace(Reach::Reachable);
        assert!(
            wait_until(Duration::from_secs(5), || !gets(&server, "/api/v1/pods")
                .0
                .is_empty())
            .await
        );
        let stalled = Instant::now();
        tokio::time::sleep(REQUEST_TIMEOUT / 2).await;
        assert!(
            !views.pod_view.is_current(),
            "current with 20 pods not sent yet"
        );
        // A first list fills the store only once it ends (kube's reflector), as with pages.
        assert!(names(&views).is_empty(), "{:?}", names(&views));
        let want: std::collections::BTreeSet<String> = want.into_iter().collect();
        assert!(
            wait_until(Duration::from_secs(10), || views.pod_view.is_current()
                && names(&views) == want)
            .await,
            "not caught up: {} pods, requests {:?}",
            names(&views).len(),
            gets(&server, "/api/v1/pods")
        );
        let given_up = stalled.elapsed();
        assert!(
            given_up < REQUEST_TIMEOUT * 6,
            "given up after {given_up:?}"
        );
        let (lists, _) = gets(&server, "/api/v1/pods");
        assert!(
            lists.len() >= 2 && lists.iter().all(is_streaming_list),
            "{lists:?}"
        );
        task.abort();
    }
}
