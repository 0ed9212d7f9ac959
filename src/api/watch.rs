//! Watches of our Node and of the pods bound to it, restarted with kube's default backoff. The
//! pods are kept in memory (a reflector store of [`SlimPod`]); the latest Node is published on a
//! channel so the reporter can react to changes (a vanished owned taint, another writer's
//! condition). Both are decoded into only the fields the agent reads (`api::slim`), and the
//! pods' initial state comes one pod at a time, as a streaming list (`sendInitialEvents`,
//! docs/semantics.md §15: the watch itself sends every pod, then a BOOKMARK that marks the end),
//! or, from an API server that refuses one (the WatchList gate off, as Kubernetes 1.33 ships), in
//! pages of [`PAGE_SIZE`] for the rest of the run; so neither a whole-node list nor a whole Pod is
//! ever held (issues 12 and 25).
//!
//! Every request of a watch is bounded by the request timeout (`api::watch_view`), and how
//! current each view is is kept by its [`ViewTracker`] (`core::pod_view`). Failures are retried
//! with a capped, jittered backoff — and at once when contact with the control plane returns:
//! a watch that has shown nothing since contact was lost is then dropped and re-opened (issue
//! 21), resuming from its resourceVersion (the API server's 410 makes it list again).

use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::{self, Lookup, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use tokio::sync::watch;

use crate::api::reachability::State as Reach;
use crate::api::slim::{SlimNode, SlimPod};
use crate::api::watch_view::{ViewTracker, bounded_client};
use crate::core::backoff::{Backoff, Jitter};
use crate::core::resource_version::{self, Watermark};

/// Objects per page of the initial list (and of every relist) when the API server does not serve
/// streaming lists, and of the fence's reconciliation. kube's default is 500: a page of
/// 500 realistic pods is 3–5 MB of JSON, which kube-client holds twice (bytes and text) while it
/// decodes it. That page is the agent's largest transient allocation, and during a relist it
/// comes on top of every pod already known (issue 25: at 25 a page of heavy pods, about 280 KB
/// of JSON held twice, VmHWM rose 0.5–0.7 MiB above the start's during a relist at 1,000
/// pods; at 10, 0.07–0.25 MiB, one page of 10 heavy pods held twice, 116 KB a copy; at 5, about
/// 90 KiB less, for twice the list requests; BENCHMARKS.md). 10 costs one list request per 10
/// pods at start and relist (eleven for the kubelet's default 110 pods) and 10–40 % more time to
/// know 1,000 pods on loopback.
pub const PAGE_SIZE: u32 = 10;

/// The shortest and (exclusive) longest time a watch request asks to last (`timeoutSeconds`).
/// Each watch draws its own in between once, at start (client-go's reflector draws one in
/// [5 min, 10 min) at each re-open): a cluster's agents that all re-opened their watches at once
/// (after an API server restart) drift apart instead of coming back together. The floor is
/// above client-go's so that no draw re-opens a watch more often than the kubelet's average of 8
/// an hour (issue 12: API requests no more than the kubelet's). A connection that dies silently
/// is found sooner than the watch's end, by the client's [`crate::api::READ_TIMEOUT`].
pub const WATCH_TIMEOUT_MIN: Duration = Duration::from_secs(450);
/// See [`WATCH_TIMEOUT_MIN`].
pub const WATCH_TIMEOUT_MAX: Duration = Duration::from_secs(600);

/// A watch's `timeoutSeconds`, drawn uniformly in [[`WATCH_TIMEOUT_MIN`],
/// [`WATCH_TIMEOUT_MAX`]) at each call.
pub fn watch_timeout_secs() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    // The standard library's per-process random hash keys: random enough to spread re-opens,
    // without a dependency for it.
    let draw = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let (min, max) = (WATCH_TIMEOUT_MIN.as_secs(), WATCH_TIMEOUT_MAX.as_secs());
    u32::try_from(min + draw % (max - min)).unwrap_or(u32::MAX)
}

/// A failed watch is retried after this backoff (kube-runtime's default policy: 800 ms doubling
/// to 30 s), or at once when contact returns.
const RETRY: Backoff = Backoff {
    base: Duration::from_millis(800),
    cap: Duration::from_secs(30),
};

/// The in-memory views the watches maintain.
#[derive(Clone)]
pub struct Views {
    pub pods: Store<SlimPod>,
    /// A counter bumped after every change the pod watch applied to `pods`.
    pub pods_changed: watch::Receiver<u64>,
    /// How current `pods` is (`core::pod_view`).
    pub pod_view: Arc<ViewTracker>,
}

/// The store, and the future that keeps it and the Node current (run it as a task; it never
/// ends). `node_tx` gets every version of our Node; `contact` is the agent's reachability
/// (`Reachability::subscribe`), whose losses and returns the watches follow; `request_timeout`
/// bounds every request but an accepted watch stream (`api::watch_view`).
pub fn start(
    client: kube::Client,
    request_timeout: std::time::Duration,
    node_name: String,
    node_tx: watch::Sender<Option<Arc<Node>>>,
    contact: watch::Receiver<Reach>,
) -> (Views, impl std::future::Future<Output = ()>) {
    let (pod_store, pod_writer) = reflector::store::<SlimPod>();
    let (pods_tx, pods_changed) = watch::channel(0u64);
    let views = Views {
        pods: pod_store,
        pods_changed,
        pod_view: ViewTracker::new(),
    };
    let run = run(
        client,
        request_timeout,
        node_name,
        node_tx,
        pods_tx,
        pod_writer,
        views.pod_view.clone(),
        contact,
    );
    (views, run)
}

/// One watch's retry state in [`run`].
struct Retry {
    /// When the failed watch is polled again; `None`: it is being polled.
    at: Option<tokio::time::Instant>,
    /// Failures in a row.
    attempt: u32,
    /// Re-opened after contact returned: the failure that dropping its requests causes is
    /// retried at once.
    reopened: bool,
}

impl Retry {
    fn new() -> Retry {
        Retry {
            at: None,
            attempt: 0,
            reopened: false,
        }
    }

    fn succeeded(&mut self) {
        self.attempt = 0;
        self.reopened = false;
    }

    fn failed(&mut self, jitter: &mut Jitter) {
        if std::mem::take(&mut self.reopened) {
            return;
        }
        let delay = RETRY.delay(self.attempt, jitter.draw());
        self.attempt = self.attempt.saturating_add(1);
        self.at = Some(tokio::time::Instant::now() + delay);
    }

    /// Contact returned: a watch not current is re-opened now, whatever it had in flight.
    fn contact_returned(&mut self, view: &ViewTracker) -> bool {
        if !view.needs_reopen() {
            return false;
        }
        view.reopen();
        self.reopened = self.at.is_none();
        self.at = None;
        self.attempt = 0;
        true
    }
}

/// Sleeps until `at`; never when `None`.
async fn until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The watcher settings of the pod watch: only pods bound to `node_name`, listed by a streaming
/// list (`streaming`) or in pages.
pub fn pod_config(node_name: &str, streaming: bool) -> watcher::Config {
    let config = watcher::Config::default()
        .fields(&format!("spec.nodeName={node_name}"))
        .page_size(PAGE_SIZE)
        .timeout(watch_timeout_secs());
    if streaming {
        config.streaming_lists()
    } else {
        config
    }
}

/// Whether the API server refused a streaming list: the WatchList feature gate off (Kubernetes
/// 1.33's default, and every release before 1.32) answers 422 Invalid naming `sendInitialEvents`;
/// a server older than streaming lists names `resourceVersionMatch` instead.
pub fn refuses_streaming_lists(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::WatchStartFailed(kube::Error::Api(status)) => {
            matches!(status.code, 400 | 422)
                && (status.message.contains("sendInitialEvents")
                    || status.message.contains("resourceVersionMatch"))
        }
        _ => false,
    }
}

/// The pod watch's events, in order (`in_order`), the initial state by a streaming list or in
/// pages.
fn pod_events(
    pods: &Api<SlimPod>,
    node_name: &str,
    streaming: bool,
) -> futures_util::stream::BoxStream<'static, Result<watcher::Event<SlimPod>, watcher::Error>> {
    in_order(
        watcher(pods.clone(), pod_config(node_name, streaming)),
        "pod",
    )
    .boxed()
}

/// The watcher settings of the Node watch: our Node only.
pub fn node_config(node_name: &str) -> watcher::Config {
    watcher::Config::default()
        .fields(&format!("metadata.name={node_name}"))
        .timeout(watch_timeout_secs())
}

// Called once, from `start`, with what it took apart.
#[allow(clippy::too_many_arguments)]
async fn run(
    client: kube::Client,
    request_timeout: std::time::Duration,
    node_name: String,
    node_tx: watch::Sender<Option<Arc<Node>>>,
    pods_tx: watch::Sender<u64>,
    pod_writer: reflector::store::Writer<SlimPod>,
    pod_view: Arc<ViewTracker>,
    mut contact: watch::Receiver<Reach>,
) {
    let node_view = ViewTracker::new();
    let nodes: Api<SlimNode> = Api::all(bounded_client(
        client.clone(),
        request_timeout,
        node_view.clone(),
    ));
    let pods: Api<SlimPod> = Api::all(bounded_client(client, request_timeout, pod_view.clone()));
    let node_cfg = node_config(&node_name);
    // The Node is not cached here: the channel holds its latest version.
    let node_stream = in_order(watcher(nodes, node_cfg), "node").applied_objects();
    let mut pod_writer = PodWriter::new(pod_writer);
    // A streaming list until the API server refuses one; then pages, for the rest of the run.
    let mut streaming = true;
    let mut pod_stream = pod_events(&pods, &node_name, streaming);
    tokio::pin!(node_stream);
    let mut node_failing = false;
    let mut pods_failing = false;
    let (mut node_retry, mut pod_retry) = (Retry::new(), Retry::new());
    let mut jitter = Jitter::new(crate::api::jitter_seed());
    let mut reach = *contact.borrow_and_update();
    let mut contact_open = true;
    loop {
        tokio::select! {
            changed = contact.changed(), if contact_open => {
                if changed.is_err() {
                    contact_open = false;
                    continue;
                }
                let now = *contact.borrow_and_update();
                let was = std::mem::replace(&mut reach, now);
                match now {
                    Reach::Unreachable if was != Reach::Unreachable => {
                        node_view.contact_lost();
                        pod_view.contact_lost();
                    }
                    Reach::Reachable if was != Reach::Reachable => {
                        let n = node_retry.contact_returned(&node_view);
                        if pod_retry.contact_returned(&pod_view) || n {
                            log::info!("contact returned: re-opening the watches that have shown nothing since it was lost");
                        }
                    }
                    _ => {}
                }
            }
            () = until(node_retry.at) => node_retry.at = None,
            () = until(pod_retry.at) => pod_retry.at = None,
            Some(item) = node_stream.next(), if node_retry.at.is_none() => match item {
                Ok(node) => {
                    node_retry.succeeded();
                    if node_failing {
                        log::info!("node watch recovered");
                        node_failing = false;
                    }
                    node_tx.send_replace(Some(Arc::new(node.into_node())));
                }
                Err(e) => {
                    node_retry.failed(&mut jitter);
                    if !node_failing {
                        // Bounded: a decoding error can quote what the server sent.
                        let e = crate::api::excerpt(&crate::api::with_causes(&e));
                        log::warn!(error = e.as_str(); "node watch failed: {e}; retrying with backoff (at once when contact returns)");
                        node_failing = true;
                    }
                }
            },
            Some(item) = pod_stream.next(), if pod_retry.at.is_none() => match item {
                // A list begins: it proves nothing yet. Taken for a recovery, it reset the
                // backoff and logged "recovered" before every failed retry (once a second while
                // the API server refused connections).
                Ok(event @ watcher::Event::Init) => pod_writer.apply(&event),
                Ok(event) => {
                    // Applied before anything else sees the change, as kube's `reflector` does.
                    pod_writer.apply(&event);
                    if matches!(event, watcher::Event::InitDone) {
                        pod_view.initial_events_ended();
                    }
                    pod_retry.succeeded();
                    // The reflector applied the event to the store before yielding it.
                    pods_tx.send_modify(|n| *n = n.wrapping_add(1));
                    if pods_failing {
                        log::info!("pod watch recovered");
                        pods_failing = false;
                    }
                }
                Err(e) if streaming && refuses_streaming_lists(&e) => {
                    streaming = false;
                    pod_stream = pod_events(&pods, &node_name, streaming);
                    let e = crate::api::excerpt(&crate::api::with_causes(&e));
                    log::info!(error = e.as_str(); "the API server does not serve streaming lists ({e}): listing pods in pages of {PAGE_SIZE} from now on");
                }
                Err(e) => {
                    pod_retry.failed(&mut jitter);
                    if !pods_failing {
                        // Bounded: a decoding error can quote what the server sent.
                        let e = crate::api::excerpt(&crate::api::with_causes(&e));
                        log::warn!(error = e.as_str(); "pod watch failed: {e}; retrying with backoff (at once when contact returns)");
                        pods_failing = true;
                    }
                }
            },
            else => std::future::pending::<()>().await,
        }
    }
}

/// The pod store's writer, which applies a relist in place (issue 25). kube's reflector collects
/// every listed object into a second map and swaps it in when the list ends, so during a relist
/// (after a 410, or a watch that could not resume) every pod is held twice — and the fence then
/// converts every pod again, all of them new objects. Here the first list goes through the
/// reflector's own path (the store is empty then, and its end makes the store ready); a later
/// list replaces only the objects that differ from the stored ones, keeps the very objects that
/// did not change, and at its end removes those it did not list. A reader during a relist sees
/// the stored pods with the changed ones already replaced, never one missing that the list has
/// not yet reached (as before: kube's store showed the old pods until the end).
pub struct PodWriter {
    writer: reflector::store::Writer<SlimPod>,
    reader: Store<SlimPod>,
    /// Whether a first list has completed (the store is ready).
    listed_once: bool,
    /// The stored objects (their addresses) a relist in progress has listed so far; `None`
    /// outside one. Addresses, not keys: 8 bytes a pod where a key is four strings. An address
    /// is never stale: during a list only this writer changes the store, and it frees only
    /// objects it replaces before their address is taken. A vector sized for the stored pods
    /// when the list begins, sorted once at its end: one allocation of 8 bytes a pod, where a
    /// growing hash set held up to 27 bytes a pod at once (issue 25: at 1,000 heavy pods it
    /// was most of what a relist's heap held above the start's peak).
    relisting: Option<Vec<usize>>,
}

impl PodWriter {
    /// Writes through `writer` (whose store it reads to compare).
    pub fn new(writer: reflector::store::Writer<SlimPod>) -> PodWriter {
        PodWriter {
            reader: writer.as_reader(),
            writer,
            listed_once: false,
            relisting: None,
        }
    }

    /// Applies one event of the pod watch to the store.
    pub fn apply(&mut self, event: &watcher::Event<SlimPod>) {
        use watcher::Event;
        if !self.listed_once {
            self.writer.apply_watcher_event(event);
            self.listed_once = matches!(event, Event::InitDone);
            if self.listed_once {
                release_free_heap();
            }
            return;
        }
        match event {
            Event::Init => {
                // A few more than stored, for pods the list adds.
                let stored = self.reader.len();
                self.relisting = Some(Vec::with_capacity(stored + stored / 16 + 8));
            }
            Event::InitApply(pod) => {
                let key = pod.to_object_ref(());
                let stored = match self.reader.get(&key) {
                    Some(stored) if *stored == *pod => Some(stored),
                    _ => {
                        self.writer.apply_watcher_event(&Event::Apply(pod.clone()));
                        self.reader.get(&key)
                    }
                };
                if let Some(stored) = stored {
                    let listed = self.relisting.get_or_insert_default();
                    listed.push(Arc::as_ptr(&stored) as usize);
                }
            }
            Event::InitDone => {
                let mut listed = self.relisting.take().unwrap_or_default();
                listed.sort_unstable();
                for stored in self.reader.state() {
                    if listed
                        .binary_search(&(Arc::as_ptr(&stored) as usize))
                        .is_err()
                    {
                        self.writer
                            .apply_watcher_event(&Event::Delete(SlimPod::clone(&stored)));
                    }
                }
                release_free_heap();
            }
            Event::Apply(_) | Event::Delete(_) => self.writer.apply_watcher_event(event),
        }
    }
}

/// Returns the heap's free pages to the kernel after a list of pods (issue 25). A list's text
/// and decoding are transient, freed when it ends; glibc gives back on its own only the free
/// memory at the top of the heap, and keeps free pages between live objects resident.
/// `malloc_trim` also releases those: 0.3–0.4 MiB of RssAnon after a relist at 1,000 pods
/// (BENCHMARKS.md; the peak, VmHWM, is the same: it comes before). A list is rare (the start,
/// a watch that could not resume), and the trim walks a few MiB of heap.
fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointer and locks each arena itself; glibc allows a call
    // at any time from any thread (malloc_trim(3)).
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

/// The watch's events without the stale ones (`core::resource_version`): an event older than
/// what this watch already delivered is dropped before it reaches the store or the channel, and
/// logged at the first and then at every power of two, so a replaying proxy cannot flood the log.
pub fn in_order<K: Resource>(
    stream: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    what: &'static str,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> {
    let mut mark = Watermark::default();
    let mut stale: u64 = 0;
    stream.filter(move |item| {
        let rv = |k: &K| k.meta().resource_version.clone();
        let keep = match item {
            Err(_) => true,
            Ok(ev) => {
                let rv = match ev {
                    watcher::Event::Apply(k)
                    | watcher::Event::Delete(k)
                    | watcher::Event::InitApply(k) => rv(k),
                    watcher::Event::Init | watcher::Event::InitDone => None,
                };
                let event = match ev {
                    watcher::Event::Init => resource_version::Event::ListStart,
                    watcher::Event::InitApply(_) => resource_version::Event::Listed(rv.as_deref()),
                    watcher::Event::InitDone => resource_version::Event::ListDone,
                    watcher::Event::Apply(_) | watcher::Event::Delete(_) => {
                        resource_version::Event::Changed(rv.as_deref())
                    }
                };
                let keep = mark.admit(event);
                if !keep {
                    stale += 1;
                    if stale.is_power_of_two() {
                        let (name, rv) = match ev {
                            watcher::Event::Apply(k) | watcher::Event::Delete(k) => {
                                (k.meta().name.clone().unwrap_or_default(), rv.unwrap_or_default())
                            }
                            _ => Default::default(),
                        };
                        log::warn!(
                            watch = what, stale = stale;
                            "{what} watch delivered {what} {name} at resourceVersion {rv}, older than {} it already delivered: ignored ({stale} stale event(s) so far)",
                            mark.mark().unwrap_or_default()
                        );
                    }
                }
                keep
            }
        };
        std::future::ready(keep)
    })
}
