//! The API-server shell: typed requests through the kube crate, each bounded by a timeout and
//! classified into an [`ApiError`] that names the verb and resource. Policy (what to write, when)
//! lives in `core` and `agent`; these modules only talk to the API server.

pub mod events;
pub mod kubeconfig;
pub mod lease;
pub mod node;
pub mod peers;
pub mod pods;
pub mod reachability;
pub mod slim;
pub mod watch;
pub mod watch_view;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Our field manager: how the API server's managedFields name our writes.
pub const FIELD_MANAGER: &str = "nodewarden";

/// The request timeout of [`Requests::default`] (the kubelet's at its defaults); the agent's
/// comes from the configuration.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A seed for the jitter of API retries (watches, writes, the fence's API work) that differs
/// between processes and starts, so agents restarted together do not retry in step.
pub fn jitter_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (u64::from(std::process::id()) << 32)
}

pub use crate::bounded::{MAX_DETAIL, excerpt};

/// A failed API request, with what was attempted.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The server answered with an error status.
    #[error("{verb} {resource}: {code} {reason}: {message}")]
    Status {
        verb: &'static str,
        resource: String,
        code: u16,
        reason: String,
        message: String,
        /// From `details.retryAfterSeconds` (429 and some 5xx).
        retry_after: Option<Duration>,
    },
    /// No answer within the request timeout.
    #[error("{verb} {resource}: no answer within {}", humantime::format_duration(*timeout))]
    Timeout {
        verb: &'static str,
        resource: String,
        timeout: Duration,
    },
    /// The request never got an HTTP answer (connection refused, reset, TLS, DNS…).
    #[error("{verb} {resource}: {detail}")]
    Transport {
        verb: &'static str,
        resource: String,
        detail: String,
    },
}

impl ApiError {
    pub fn code(&self) -> Option<u16> {
        match self {
            ApiError::Status { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub fn is_conflict(&self) -> bool {
        self.code() == Some(409)
    }

    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// Whether the server answered at all: any status, even an error, is a round trip.
    pub fn got_answer(&self) -> bool {
        matches!(self, ApiError::Status { .. })
    }

    /// Whether trying again later can help (server trouble, throttling, no answer).
    pub fn is_transient(&self) -> bool {
        match self {
            ApiError::Status { code, .. } => *code == 429 || *code >= 500 || *code == 409,
            _ => true,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A short label for metrics: the status code, `timeout` or `transport`.
    pub fn metric_label(&self) -> String {
        match self {
            ApiError::Status { code, .. } => code.to_string(),
            ApiError::Timeout { .. } => "timeout".to_string(),
            ApiError::Transport { .. } => "transport".to_string(),
        }
    }
}

/// One request counter's key: (verb, resource kind, outcome label).
pub type RequestKey = (&'static str, String, String);

/// Requests made through one [`Requests`] (and its clones), by (verb, resource kind, outcome
/// label), for `/metrics`.
#[derive(Debug, Default)]
pub struct RequestCounts {
    counts: Mutex<BTreeMap<RequestKey, u64>>,
}

impl RequestCounts {
    /// A copy of the counters: ((verb, resource kind, status code or error label), count).
    pub fn snapshot(&self) -> Vec<(RequestKey, u64)> {
        let guard = match self.counts.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        guard.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }

    fn count(&self, verb: &'static str, resource: &str, label: String) {
        // "nodes/n1/status" → "nodes/status"; "leases/ns/name" → "leases".
        let mut parts = resource.split('/');
        let kind = parts.next().unwrap_or("").to_string();
        let kind = if resource.ends_with("/status") {
            format!("{kind}/status")
        } else {
            kind
        };
        let mut guard = match self.counts.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        *guard.entry((verb, kind, label)).or_default() += 1;
    }
}

/// How this process talks to the API server: every non-watch request's timeout and the counters
/// its requests add to. Built once at start (from the configuration's request timeout) and cloned
/// to each task that makes requests; clones share the counters. State of a value, not of the
/// process, so two agents (or two tests) in one process keep their own.
#[derive(Debug, Clone)]
pub struct Requests {
    timeout: Duration,
    counts: Arc<RequestCounts>,
}

/// A client to the API server and how its requests are made: what a task that talks to the
/// API server is handed.
#[derive(Clone)]
pub struct ApiClient {
    /// The kube client the typed `Api` handles are built from.
    pub kube: kube::Client,
    /// The requests' timeout and counters.
    pub requests: Requests,
}

impl Default for Requests {
    fn default() -> Requests {
        Requests::new(DEFAULT_REQUEST_TIMEOUT)
    }
}

impl Requests {
    /// Requests bounded by `timeout` (at least 1 ms, whole milliseconds), with counters of
    /// their own.
    pub fn new(timeout: Duration) -> Requests {
        let ms = u64::try_from(timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        Requests {
            timeout: Duration::from_millis(ms),
            counts: Arc::new(RequestCounts::default()),
        }
    }

    /// The timeout [`Requests::call`] applies.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The counters every request made through this value and its clones adds to.
    pub fn counts(&self) -> Arc<RequestCounts> {
        self.counts.clone()
    }

    /// Runs one request under [`Requests::timeout`], turning kube's error into an [`ApiError`].
    pub async fn call<T>(
        &self,
        verb: &'static str,
        resource: impl Into<String>,
        request: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ApiError> {
        self.call_within(self.timeout, verb, resource, request)
            .await
    }

    /// [`Requests::call`] with a timeout of its own (the Lease renewal's is shorter).
    pub async fn call_within<T>(
        &self,
        timeout: Duration,
        verb: &'static str,
        resource: impl Into<String>,
        request: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ApiError> {
        let resource = resource.into();
        let result = call_inner(timeout, verb, resource.clone(), request).await;
        let label = match &result {
            Ok(_) => "ok".to_string(),
            Err(e) => e.metric_label(),
        };
        self.counts.count(verb, &resource, label);
        result
    }
}

async fn call_inner<T>(
    timeout: Duration,
    verb: &'static str,
    resource: String,
    request: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiError> {
    match tokio::time::timeout(timeout, request).await {
        Err(_) => Err(ApiError::Timeout {
            verb,
            resource,
            timeout,
        }),
        Ok(Ok(v)) => Ok(v),
        Ok(Err(kube::Error::Api(status))) => Err(ApiError::Status {
            verb,
            resource,
            code: status.code,
            // kube puts the whole body here when it is not a Status.
            reason: excerpt(&status.reason),
            message: excerpt(&status.message),
            retry_after: status
                .details
                .as_ref()
                .map(|d| u64::from(d.retry_after_seconds))
                .filter(|s| *s > 0)
                .map(Duration::from_secs),
        }),
        Ok(Err(e)) => Err(ApiError::Transport {
            verb,
            resource,
            detail: excerpt(&with_causes(&e)),
        }),
    }
}

/// A read this agent makes for a peer that asked (`lease::KubeletLeases`, `node::NodeTaints`,
/// `pods::NodePods`) failed, and the peer is answered without it. A refusal (403) is logged once per reader
/// (`logged`): what could not be read (`what`), what that costs the peers and the grant that
/// fixes it (`then`).
pub fn peer_read_failed(
    e: &ApiError,
    logged: &std::sync::atomic::AtomicBool,
    what: &str,
    then: &str,
) {
    if e.code() == Some(403) && !logged.swap(true, std::sync::atomic::Ordering::Relaxed) {
        log::warn!(
            error = e.to_string().as_str();
            "cannot read {what} ({e}): {then} (logged once)"
        );
    }
}

/// An error with the causes beneath it, each that its own text does not already say: kube and
/// hyper say only "client error (Connect)" for a connection that failed, and the cause an
/// operator needs (a certificate no authority of the kubeconfig signed, a refused connection, a
/// name that does not resolve) is further down.
pub fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    // Bounded: a chain is a handful of errors deep; a cycle would be a bug elsewhere.
    for _ in 0..16 {
        let Some(c) = cause else { break };
        let said = c.to_string();
        if !said.is_empty() && !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = c.source();
    }
    text
}

/// Why a client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Kubeconfig(#[from] kubeconfig::KubeconfigLoadError),
    #[error("in-cluster credentials: {0}")]
    InCluster(String),
    #[error("building the API client: {0}")]
    Client(String),
}

/// How long a connection may stay silent before the client drops it as dead. The API server
/// sends a watch that allows bookmarks (ours do) a BOOKMARK about once a minute, so a live watch
/// is never silent this long: three missed bookmarks mean the connection is gone, seen well before
/// the watch's own end ([`watch::WATCH_TIMEOUT_MIN`] or later). Every other request has a shorter
/// timeout of its own.
pub const READ_TIMEOUT: Duration = Duration::from_secs(180);

/// A client from a kubeconfig file, or from the in-cluster ServiceAccount when `kubeconfig` is
/// `None`.
pub async fn connect(kubeconfig: Option<&Path>) -> Result<kube::Client, ConnectError> {
    connect_with(kubeconfig, READ_TIMEOUT).await
}

/// The connected agent's clients: its own, and the one that probes the kubelet's path to the API
/// server while the agent's own requests fail (docs/fence.md §5, *The kubelet's path probed*).
#[derive(Clone)]
pub struct Clients {
    pub agent: kube::Client,
    /// `None`: nothing probes (an agent handed a client alone, as the in-process tests are).
    pub node_path: Option<kube::Client>,
}

impl From<kube::Client> for Clients {
    fn from(agent: kube::Client) -> Clients {
        Clients {
            agent,
            node_path: None,
        }
    }
}

/// [`connect`], and the probe of the kubelet's path: the same credentials and certificate
/// authority, sent to `kubelet_server` (`fence.kubeletServer`, validated by the configuration's
/// loader) or to the agent's own server when it is `None`. The probe's client retries nothing
/// and gives up on a connection after [`NODE_PATH_BOUND`]: its one question is whether the
/// server answers now.
pub async fn connect_agent(
    kubeconfig: Option<&Path>,
    kubelet_server: Option<&str>,
) -> Result<Clients, ConnectError> {
    let mut config = load_config(kubeconfig).await?;
    let mut probe = config.clone();
    config.connect_timeout = Some(Duration::from_secs(5));
    config.read_timeout = Some(READ_TIMEOUT);
    config.reset_reader_on_write = true;
    if let Some(server) = kubelet_server {
        probe.cluster_url = server
            .parse()
            .map_err(|e| ConnectError::Client(format!("fence.kubeletServer \"{server}\": {e}")))?;
        // A server name set for the agent's own server is not this one's.
        probe.tls_server_name = None;
    }
    probe.default_retry = false;
    probe.connect_timeout = Some(NODE_PATH_BOUND);
    probe.read_timeout = Some(NODE_PATH_BOUND);
    probe.reset_reader_on_write = true;
    Ok(Clients {
        agent: agent_client(config)?,
        node_path: Some(agent_client(probe)?),
    })
}

/// The bound of one probe of the kubelet's path (`/readyz`): a ready API server answers it in
/// milliseconds; a second leaves room for a new TLS connection over a slow link.
pub const NODE_PATH_BOUND: Duration = Duration::from_secs(1);

/// One probe of the kubelet's path: `GET /readyz` through `client` within `bound`, counted in the
/// request metric as `readyz`. True only for a 2xx answer: a server that answers but is not
/// ready (its storage down, say: 500), refuses the agent (401, 403) or is throttled proves no
/// renewal of the kubelet's lands, and counts as no answer.
pub async fn node_path_ready(client: &kube::Client, requests: &Requests, bound: Duration) -> bool {
    let request = match http::Request::get("/readyz").body(Vec::new()) {
        Ok(r) => r,
        Err(_) => return false,
    };
    requests
        .call_within(bound, "get", "readyz", client.request_text(request))
        .await
        .is_ok()
}

async fn load_config(kubeconfig: Option<&Path>) -> Result<kube::Config, ConnectError> {
    Ok(match kubeconfig {
        Some(path) => kubeconfig::load(path).await?,
        None => kube::Config::incluster().map_err(|e| ConnectError::InCluster(e.to_string()))?,
    })
}

/// A client for the commands a person runs (`explain`, `nodes`), its credentials found as
/// `kubectl` finds them ([`kubeconfig::load_as_kubectl`]); every request bounded.
pub async fn connect_as_kubectl(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Client, ConnectError> {
    let mut config = kubeconfig::load_as_kubectl(kubeconfig, context).await?;
    config.connect_timeout = Some(Duration::from_secs(5));
    config.read_timeout = Some(Duration::from_secs(30));
    kube::Client::try_from(config)
        .map_err(|e| ConnectError::Client(kubeconfig::redact_quoted(&e.to_string())))
}

/// [`connect`] with another limit on a connection's silence than [`READ_TIMEOUT`] (tests).
pub async fn connect_with(
    kubeconfig: Option<&Path>,
    read_timeout: Duration,
) -> Result<kube::Client, ConnectError> {
    let mut config = load_config(kubeconfig).await?;
    config.connect_timeout = Some(Duration::from_secs(5));
    config.read_timeout = Some(read_timeout);
    // Counted from each request's sending, not from when its pooled connection went idle.
    config.reset_reader_on_write = true;
    // Building the client runs an exec credential plugin, whose failure message quotes the
    // plugin's output: that can be a credential.
    agent_client(config)
}

/// The most a pooled connection's read buffer grows to. hyper's adaptive buffer doubles while
/// reads fill it, up to about 400 KB by default, and never shrinks its allocation: every
/// connection that once carried a list page (25 pods, about 300 KB of JSON) kept that much for
/// good (issue 25: 1.2–1.4 MiB of the agent's heap at 1,000 pods). A TLS record carries 16 KiB
/// of data at most, so a larger buffer saves few reads from a real API server. A response
/// larger than the buffer is read through it in parts; only a response's head must fit
/// (an API server's are well under 1 KiB).
pub const READ_BUFFER_MAX: usize = 16 * 1024;

/// The agent's client: kube's default stack (`kube::client::ClientBuilder::try_from`, kube
/// 5.0: TLS, the connection timeouts, kube's retry of 429/503/504, credentials, extra headers)
/// over a hyper client whose read buffers are bounded by [`READ_BUFFER_MAX`], which that
/// builder does not expose. Left out: kube's tracing layer (its records repeat the errors this
/// module reports) and a client certificate's expiry from an exec plugin (nothing reads it);
/// a `proxy-url` is refused, as kube built without its proxy features refuses it.
fn agent_client(config: kube::Config) -> Result<kube::Client, ConnectError> {
    use hyper_util::client::legacy::connect::HttpConnector;
    use kube::client::ConfigExt;
    use tower::ServiceBuilder;

    // The URL is not quoted: it may carry a password.
    if config.proxy_url.is_some() {
        return Err(ConnectError::Client(
            "the kubeconfig names a proxy-url; this build connects without a proxy".into(),
        ));
    }
    let fail = |e: kube::Error| ConnectError::Client(kubeconfig::redact_quoted(&e.to_string()));
    let mut http = HttpConnector::new();
    // The URL's scheme decides: https through rustls, http (tests on loopback) as it is.
    http.enforce_http(false);
    let mut connector = hyper_timeout::TimeoutConnector::new(
        config
            .rustls_https_connector_with_connector(http)
            .map_err(fail)?,
    );
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let hyper_client =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .http1_max_buf_size(READ_BUFFER_MAX)
            .build(connector);
    let retry = config
        .default_retry
        .then(|| tower::retry::RetryLayer::new(kube::client::retry::RetryPolicy::server_retry()));
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(retry)
        .option_layer(config.auth_layer().map_err(fail)?)
        .layer(config.extra_headers_layer().map_err(fail)?)
        .map_err(tower::BoxError::from)
        .service(hyper_client);
    Ok(kube::Client::new(service, config.default_namespace))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_told_with_the_causes_its_own_text_does_not_say() {
        #[derive(Debug)]
        struct Layer(&'static str, Option<Box<Layer>>);
        impl std::fmt::Display for Layer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for Layer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|l| l as _)
            }
        }
        let chain = Layer(
            "client error (Connect)",
            Some(Box::new(Layer(
                "Connect",
                Some(Box::new(Layer(
                    "invalid peer certificate: UnknownIssuer",
                    None,
                ))),
            ))),
        );
        assert_eq!(
            with_causes(&chain),
            "client error (Connect): invalid peer certificate: UnknownIssuer"
        );
        assert_eq!(with_causes(&Layer("alone", None)), "alone");
    }

    #[test]
    fn a_long_detail_is_cut_at_a_char_boundary_with_its_size() {
        let long = "é".repeat(1000);
        let short = excerpt(&long);
        assert!(short.len() < MAX_DETAIL + 32, "{short}");
        assert!(short.ends_with("… (2000 bytes)"), "{short}");
        assert_eq!(excerpt("short"), "short");
    }

    /// An answer that arrives after `after`.
    async fn answer_after(after: Duration) -> Result<(), kube::Error> {
        tokio::time::sleep(after).await;
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn two_clients_in_one_process_keep_their_own_timeout_and_counters() {
        let short = Requests::new(Duration::from_millis(50));
        let long = Requests::new(Duration::from_secs(5));
        // Built in this order, a process-wide timeout would be the long one for both.
        assert_eq!(short.timeout(), Duration::from_millis(50));
        assert_eq!(long.timeout(), Duration::from_secs(5));

        let slow = Duration::from_millis(200);
        let cut = short
            .call("get", "nodes/n1", answer_after(slow))
            .await
            .expect_err("the short timeout cuts a 200 ms answer");
        assert!(
            matches!(cut, ApiError::Timeout { timeout, .. } if timeout == Duration::from_millis(50)),
            "{cut}"
        );
        long.call("get", "nodes/n1", answer_after(slow))
            .await
            .expect("the long timeout waits for a 200 ms answer");
        // A clone shares its original's counters.
        long.clone()
            .call("patch", "nodes/n1/status", answer_after(Duration::ZERO))
            .await
            .expect("answered at once");

        let key = |verb, kind: &str, outcome: &str| (verb, kind.to_string(), outcome.to_string());
        assert_eq!(
            short.counts().snapshot(),
            [(key("get", "nodes", "timeout"), 1)]
        );
        assert_eq!(
            long.counts().snapshot(),
            [
                (key("get", "nodes", "ok"), 1),
                (key("patch", "nodes/status", "ok"), 1)
            ]
        );
    }

    #[test]
    fn a_timeout_is_whole_milliseconds_and_at_least_one() {
        assert_eq!(
            Requests::new(Duration::ZERO).timeout(),
            Duration::from_millis(1)
        );
        assert_eq!(
            Requests::new(Duration::from_micros(2500)).timeout(),
            Duration::from_millis(2)
        );
        assert_eq!(Requests::default().timeout(), DEFAULT_REQUEST_TIMEOUT);
    }
}
