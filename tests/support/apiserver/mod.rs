//! A strict in-memory Kubernetes API server for tests.
//!
//! It serves core/v1 Nodes (with `status`), Pods (with `status`), Events,
//! coordination.k8s.io/v1 Leases and discovery.k8s.io/v1 EndpointSlices, plus `/version`,
//! `/readyz` and legacy discovery, in-process (a
//! `tower::Service` behind `kube::Client`) and over HTTP/1 (hyper) for `kubectl` and real
//! processes. It aims to answer as the real API server does: one global resourceVersion,
//! optimistic concurrency (409 on a stale resourceVersion in an update or a patch), no-op writes
//! that do not bump the revision, status/main-resource separation, strategic-merge / JSON-merge /
//! JSON patches, validation (docs/semantics.md §8) answered as 422 with field causes, watches with
//! resume, BOOKMARKs and 410 Expired, streaming lists (`sendInitialEvents`, refused with 422 when
//! `set_watch_list(false)` turns the WatchList gate off, as 1.33 ships it), and `Status` bodies
//! for every error.
//!
//! Known deviations from the real server (documented so tests do not rely on them):
//! - Unknown fields are kept rather than pruned, and only the fields listed in
//!   `resources.rs` are type-checked.
//! - No server-side apply (`application/apply-patch+yaml` → 415), no YAML/protobuf bodies,
//!   no Table output (plain JSON lists; kubectl falls back), no aggregated discovery,
//!   no `deletecollection`, no set-based label selectors (400).
//! - Watches from a resourceVersion newer than the store simply wait for later events.
//! - `managedFields` are coarse (changed fields per Update, moved between managers).
//! - Pods get `status: {phase: Pending}` on create (no QoS class), no admission defaulting.
//! - No authentication unless a test calls `require_bearer` (then any other or missing
//!   `Authorization` is 401, as with anonymous auth disabled); authorization is "allow all"
//!   except verbs a test `deny`s.
//! - `fieldValidation` (kubectl sends `Strict`) is ignored: no unknown-field errors.
//! - EndpointSlice IPv6 addresses are parsed by Rust's parser: an IPv6 address with an embedded
//!   IPv4 part with leading zeros is refused (Go's sloppy parser takes it). Like upstream, the
//!   `port` of an EndpointSlice port is any int32 (no range check).
//! - Node and pod `status.conditions[]` entries must have `type` and `status` (422); the real
//!   server checks less for nodes. Malformed strategic-merge patches are 400 (some are 500 or
//!   409 upstream).

// Compiled into several test binaries, each using a part; and `ApiError` is a large value that
// only travels on the (rare, test-only) error path, so boxing it would buy nothing.
#![allow(dead_code, unused_imports, clippy::result_large_err)]

mod discovery;
mod errors;
mod faults;
mod handler;
mod http;
mod meta;
pub mod names;
mod patch;
mod resources;
mod select;
mod store;
mod validate;
mod watch;

pub use errors::{ApiError, Cause};
pub use faults::{Fault, Faults, Route};
pub use http::{InProcess, Loopback};

use bytes::Bytes;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use handler::{DeleteOptions, resource};
use store::Store;

/// The bearer token `write_kubeconfig` puts in the kubeconfig.
pub const TOKEN: &str = "nodewarden-test-token";

/// How many changes the watch history keeps by default.
pub const DEFAULT_HISTORY: usize = 1000;

/// One recorded request and its answer.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// HTTP method.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// Raw query string (decoded pairs in `query_pairs`).
    pub query: Option<String>,
    /// Decoded query parameters.
    pub query_pairs: Vec<(String, String)>,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Accept`.
    pub accept: Option<String>,
    /// `User-Agent`.
    pub user_agent: Option<String>,
    /// `Authorization`.
    pub authorization: Option<String>,
    /// Request body.
    pub body: Bytes,
    /// Response status (None while unanswered, e.g. black-holed).
    pub status: Option<u16>,
    /// Response body size (None for watch streams and unanswered requests).
    pub response_size: Option<usize>,
    /// Arrival time on the tokio clock.
    pub at: tokio::time::Instant,
}

impl Recorded {
    /// The body as JSON (Null if it is not JSON).
    pub fn body_json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// A query parameter.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query_pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

pub(crate) struct State {
    pub(crate) store: Store,
    pub(crate) faults: faults::FaultState,
    pub(crate) denied: Vec<(String, String, String)>,
    pub(crate) user: String,
    pub(crate) bookmark_interval: Duration,
    /// The WatchList feature gate: streaming lists (`sendInitialEvents`) are served.
    pub(crate) watch_list: bool,
    /// The only bearer token accepted, when authentication is on.
    pub(crate) bearer: Option<String>,
    /// A readiness check fails (`/readyz` answers 500, as with its storage down).
    pub(crate) not_ready: bool,
    requests: Vec<(u64, Recorded)>,
    next_seq: u64,
}

/// The test API server: a cheaply cloneable handle to shared state.
#[derive(Clone)]
pub struct ApiServer {
    state: Arc<Mutex<State>>,
}

impl Default for ApiServer {
    fn default() -> Self {
        ApiServer::new()
    }
}

/// A seeding/mutation helper's error: the `Status` the API would have answered.
pub type StatusResult = Result<Value, Value>;

impl ApiServer {
    /// An empty server with the default history size.
    pub fn new() -> ApiServer {
        ApiServer::with_history(DEFAULT_HISTORY)
    }

    /// An empty server keeping `history` changes for watch resumption.
    pub fn with_history(history: usize) -> ApiServer {
        ApiServer {
            state: Arc::new(Mutex::new(State {
                store: Store::new(history),
                faults: faults::FaultState::default(),
                denied: Vec::new(),
                user: "system:serviceaccount:kube-system:nodewarden".into(),
                bookmark_interval: Duration::from_secs(60),
                watch_list: true,
                bearer: None,
                not_ready: false,
                requests: Vec::new(),
                next_seq: 0,
            })),
        }
    }

    /// Run `f` with the state locked (never across an await).
    pub(crate) fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    fn record_arrival(&self, req: &handler::Req, authorization: Option<String>) -> u64 {
        let rec = Recorded {
            method: req.method.clone(),
            path: req.path.clone(),
            query: if req.query.0.is_empty() {
                None
            } else {
                Some(
                    req.query
                        .0
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join("&"),
                )
            },
            query_pairs: req.query.0.clone(),
            content_type: req.content_type.clone(),
            accept: req.accept.clone(),
            user_agent: req.user_agent.clone(),
            authorization,
            body: req.body.clone(),
            status: None,
            response_size: None,
            at: tokio::time::Instant::now(),
        };
        self.with_state(|s| {
            s.next_seq += 1;
            s.requests.push((s.next_seq, rec));
            s.next_seq
        })
    }

    fn record_answer(&self, seq: u64, status: u16, size: Option<usize>) {
        self.with_state(|s| {
            if let Some((_, r)) = s.requests.iter_mut().find(|(n, _)| *n == seq) {
                r.status = Some(status);
                r.response_size = size;
            }
        });
    }

    /// Every request received since the last `clear_requests`, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.with_state(|s| s.requests.iter().map(|(_, r)| r.clone()).collect())
    }

    /// Forget recorded requests.
    pub fn clear_requests(&self) {
        self.with_state(|s| s.requests.clear());
    }

    /// Fault injection.
    pub fn faults(&self) -> Faults {
        Faults {
            server: self.clone(),
        }
    }

    /// End every open watch stream now.
    pub fn drop_watches(&self) {
        self.with_state(|s| s.store.watchers.clear());
    }

    /// How many watch streams are open (closed streams are pruned on the next change).
    pub fn open_watches(&self) -> usize {
        self.with_state(|s| {
            s.store
                .watchers
                .iter()
                .filter(|w| !w.tx.is_closed())
                .count()
        })
    }

    /// Interval between BOOKMARK events on watches that allow them (default 60s).
    pub fn set_bookmark_interval(&self, every: Duration) {
        self.with_state(|s| s.bookmark_interval = every);
    }

    /// Turns the WatchList feature gate on (the default, as from Kubernetes 1.34) or off (as
    /// 1.33 ships it): off, a watch with `sendInitialEvents` is refused with 422 Invalid.
    pub fn set_watch_list(&self, on: bool) {
        self.with_state(|s| s.watch_list = on);
    }

    /// Forget all but the last `keep` changes, so older resourceVersions answer 410.
    pub fn compact(&self, keep: usize) {
        self.with_state(|s| s.store.compact(keep));
    }

    /// Deny `verb` (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, or `*`) on
    /// `resource` (plural) and `subresource` ("" for the main resource): answered 403.
    pub fn deny(&self, verb: &str, resource: &str, subresource: &str) {
        self.with_state(|s| {
            s.denied
                .push((verb.into(), resource.into(), subresource.into()))
        });
    }

    /// Lift every denial.
    pub fn allow_all(&self) {
        self.with_state(|s| s.denied.clear());
    }

    /// Authenticate every request: only `Authorization: Bearer <token>` with exactly this token
    /// is served; anything else (other token, none, another scheme) answers 401 Unauthorized.
    /// `None` turns authentication off again.
    pub fn require_bearer(&self, token: Option<&str>) {
        self.with_state(|s| s.bearer = token.map(String::from));
    }

    /// Whether `/readyz` answers ready (200 `ok`) or not (500, naming the failed check as the
    /// real server does with `etcd` down). Nothing else changes: the real server still serves
    /// what it can.
    pub fn set_ready(&self, ready: bool) {
        self.with_state(|s| s.not_ready = !ready);
    }

    /// The user name in Forbidden messages.
    pub fn set_user(&self, user: &str) {
        self.with_state(|s| s.user = user.to_string());
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.with_state(|s| s.store.rv)
    }

    /// Create a namespace (objects can only be created in existing namespaces).
    pub fn create_namespace(&self, name: &str) {
        self.with_state(|s| s.store.namespaces.insert(name.to_string()));
    }

    /// Create an object of `plural` through the real create path (validation, RV, watch
    /// events); a `status` in `obj` is then written through the status subresource, as a
    /// kubelet would (a second revision). The manager is `test-seed`.
    pub fn try_create(&self, plural: &str, obj: Value) -> StatusResult {
        self.try_create_as(plural, obj, "test-seed", "test-seed")
    }

    /// `try_create` with the managers a real cluster would record: `manager` creates the object
    /// and `status_manager` writes its status (e.g. kubectl-client-side-apply and kubelet).
    pub fn try_create_as(
        &self,
        plural: &str,
        obj: Value,
        manager: &str,
        status_manager: &str,
    ) -> StatusResult {
        self.create_stamped(plural, obj, (manager, status_manager), None)
    }

    /// [`ApiServer::try_create_as`], stamping `created_at` (RFC 3339) as the object's
    /// `creationTimestamp` when given, in the same critical section: no other request's object
    /// gets it.
    fn create_stamped(
        &self,
        plural: &str,
        obj: Value,
        (manager, status_manager): (&str, &str),
        created_at: Option<&str>,
    ) -> StatusResult {
        let res = resource(plural);
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string();
        self.with_state(|s| {
            s.store.created_at = created_at.map(str::to_string);
            let created = handler::create(&mut s.store, res, &ns, obj.clone(), manager, false)
                .map_err(|e| e.to_status());
            s.store.created_at = None;
            let created = created?;
            match obj.get("status") {
                Some(status) if res.status_subresource && created.get("status") != Some(status) => {
                    let name = created
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    let mut next = created.clone();
                    next["status"] = status.clone();
                    handler::update(
                        &mut s.store,
                        res,
                        &ns,
                        &name,
                        Some("status"),
                        next,
                        status_manager,
                        false,
                    )
                    .map(|(o, _)| o)
                    .map_err(|e| e.to_status())
                }
                _ => Ok(created),
            }
        })
    }

    fn seed(&self, plural: &str, obj: Value) -> Value {
        match self.try_create(plural, obj) {
            Ok(o) => o,
            Err(status) => panic!("seeding {plural} failed: {status}"),
        }
    }

    /// Create a Node (panics with the Status if the server rejects it).
    pub fn create_node(&self, obj: Value) -> Value {
        self.seed("nodes", obj)
    }

    /// Create a Pod (panics with the Status if the server rejects it).
    pub fn create_pod(&self, obj: Value) -> Value {
        self.seed("pods", obj)
    }

    /// Create a Pod as [`ApiServer::create_pod`] does, but created at `at` (RFC 3339) on the
    /// server's clock: a pod that existed before the test began, which the server's own clock
    /// cannot stamp.
    pub fn create_pod_created(&self, obj: Value, at: &str) -> Value {
        self.create_stamped("pods", obj, ("test-seed", "test-seed"), Some(at))
            .unwrap_or_else(|status| panic!("seeding pods failed: {status}"))
    }

    /// Create a Lease (panics with the Status if the server rejects it).
    pub fn create_lease(&self, obj: Value) -> Value {
        self.seed("leases", obj)
    }

    /// Create an Event (panics with the Status if the server rejects it).
    pub fn create_event(&self, obj: Value) -> Value {
        self.seed("events", obj)
    }

    /// Create an EndpointSlice (panics with the Status if the server rejects it).
    pub fn create_endpoint_slice(&self, obj: Value) -> Value {
        self.seed("endpointslices", obj)
    }

    /// The stored EndpointSlice.
    pub fn endpoint_slice(&self, ns: &str, name: &str) -> Option<Value> {
        self.get("endpointslices", ns, name)
    }

    /// Another writer (the EndpointSlice controller) updates a slice (PUT as `manager`).
    pub fn update_endpoint_slice_as(
        &self,
        manager: &str,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> StatusResult {
        self.mutate_as("endpointslices", ns, name, None, manager, f)
    }

    fn get(&self, plural: &str, ns: &str, name: &str) -> Option<Value> {
        self.with_state(|s| {
            s.store
                .objects
                .get(&(resource(plural).plural, ns.to_string(), name.to_string()))
                .cloned()
        })
    }

    fn all(&self, plural: &str) -> Vec<Value> {
        self.with_state(|s| {
            s.store
                .objects
                .iter()
                .filter(|(k, _)| k.0 == plural)
                .map(|(_, v)| v.clone())
                .collect()
        })
    }

    /// The stored Node.
    pub fn node(&self, name: &str) -> Option<Value> {
        self.get("nodes", "", name)
    }

    /// Every stored Pod.
    pub fn pods(&self) -> Vec<Value> {
        self.all("pods")
    }

    /// One stored Pod.
    pub fn pod(&self, ns: &str, name: &str) -> Option<Value> {
        self.get("pods", ns, name)
    }

    /// The stored Lease.
    pub fn lease(&self, ns: &str, name: &str) -> Option<Value> {
        self.get("leases", ns, name)
    }

    /// Every stored Event.
    pub fn events(&self) -> Vec<Value> {
        self.all("events")
    }

    fn mutate_as(
        &self,
        plural: &str,
        ns: &str,
        name: &str,
        sub: Option<&str>,
        manager: &str,
        f: impl FnOnce(&mut Value),
    ) -> StatusResult {
        let res = resource(plural);
        self.with_state(|s| {
            let k = (
                res.plural,
                if res.namespaced {
                    ns.to_string()
                } else {
                    String::new()
                },
                name.to_string(),
            );
            let mut obj = s
                .store
                .objects
                .get(&k)
                .cloned()
                .ok_or_else(|| ApiError::not_found(res, name).to_status())?;
            f(&mut obj);
            validate::check_shapes(res, &obj).map_err(|e| ApiError::bad_request(e).to_status())?;
            handler::update(&mut s.store, res, ns, name, sub, obj, manager, false)
                .map(|(o, _)| o)
                .map_err(|e| e.to_status())
        })
    }

    /// Another writer updates the Node's status (PUT nodes/NAME/status as `manager`): `f`
    /// edits a copy of the stored Node (keep its resourceVersion for a conditional write, or
    /// set a stale one to provoke 409).
    pub fn update_node_status_as(
        &self,
        manager: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> StatusResult {
        self.mutate_as("nodes", "", name, Some("status"), manager, f)
    }

    /// Another writer updates the Node (PUT nodes/NAME as `manager`).
    pub fn update_node_as(
        &self,
        manager: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> StatusResult {
        self.mutate_as("nodes", "", name, None, manager, f)
    }

    /// Another writer updates a Pod (PUT pods/NAME as `manager`).
    pub fn update_pod_as(
        &self,
        manager: &str,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> StatusResult {
        self.mutate_as("pods", ns, name, None, manager, f)
    }

    /// Another writer updates a Lease (PUT as `manager`).
    pub fn update_lease_as(
        &self,
        manager: &str,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> StatusResult {
        self.mutate_as("leases", ns, name, None, manager, f)
    }

    /// Another writer updates a Pod's status (PUT pods/NAME/status as `manager`).
    pub fn update_pod_status_as(
        &self,
        manager: &str,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> StatusResult {
        self.mutate_as("pods", ns, name, Some("status"), manager, f)
    }

    /// Delete an object as a client would (`grace` as `gracePeriodSeconds`).
    pub fn delete(&self, plural: &str, ns: &str, name: &str, grace: Option<i64>) -> StatusResult {
        let res = resource(plural);
        let opts = DeleteOptions {
            grace,
            ..DeleteOptions::default()
        };
        self.with_state(|s| {
            handler::delete(&mut s.store, res, ns, name, &opts, false).map_err(|e| e.to_status())
        })
    }

    /// Finish a graceful pod deletion (the kubelet's final grace-0 delete): DELETED is emitted.
    pub fn finish_pod_deletion(&self, ns: &str, name: &str) -> StatusResult {
        self.with_state(|s| {
            handler::finish_deletion(&mut s.store, resource("pods"), ns, name)
                .map_err(|e| e.to_status())
        })
    }

    /// A minimal valid Node named `name`.
    pub fn node_json(name: &str) -> Value {
        json!({ "apiVersion": "v1", "kind": "Node", "metadata": { "name": name, "labels": { "kubernetes.io/hostname": name } } })
    }
}
