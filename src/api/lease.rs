//! Our heartbeat Lease (docs/semantics.md §13, docs/architecture.md §6): renewed every duration/4
//! with an update that carries the resourceVersion of the Lease we last wrote; 409 → read it again
//! and retry; 404 → create it with an owner reference to the Node so it goes away with the Node —
//! from the first request: when the Node's UID is not known yet, it is read before the create.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};
use k8s_openapi::jiff;
use kube::Api;
use kube::api::PostParams;

use crate::api::{ApiError, FIELD_MANAGER, Requests};

/// Keeps one Lease renewed.
pub struct LeaseKeeper {
    api: Api<Lease>,
    nodes: Api<Node>,
    namespace: String,
    name: String,
    holder: String,
    duration_seconds: i32,
    node_name: String,
    /// The Lease as we last wrote or read it; `None` forces a read ("ensure").
    cached: Option<Lease>,
    /// Each request's timeout ([`LeaseKeeper::with_timeout`]).
    timeout: std::time::Duration,
    /// Where its requests are counted.
    requests: Requests,
}

/// What one renewal did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    Updated,
    Created,
}

impl LeaseKeeper {
    /// A keeper of `namespace/name`, its requests made through `requests` and bounded by its
    /// timeout until [`LeaseKeeper::with_timeout`] says otherwise.
    pub fn new(
        client: kube::Client,
        requests: &Requests,
        namespace: &str,
        name: &str,
        holder: &str,
        duration_seconds: u32,
        node_name: &str,
    ) -> LeaseKeeper {
        LeaseKeeper {
            api: Api::namespaced(client.clone(), namespace),
            nodes: Api::all(client),
            namespace: namespace.to_string(),
            name: name.to_string(),
            holder: holder.to_string(),
            duration_seconds: i32::try_from(duration_seconds).unwrap_or(i32::MAX),
            node_name: node_name.to_string(),
            cached: None,
            timeout: requests.timeout(),
            requests: requests.clone(),
        }
    }

    /// Bounds each of its requests by `timeout` (at most one renew interval, so that a hung
    /// request never delays the next renewal by more than that).
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> LeaseKeeper {
        self.timeout = timeout;
        self
    }

    /// A probe of the API server that reads this Lease ([`LeaseProbe`]), for use while a
    /// renewal hangs.
    pub fn probe(&self) -> LeaseProbe {
        LeaseProbe {
            api: self.api.clone(),
            name: self.name.clone(),
            resource: self.resource(),
            requests: self.requests.clone(),
        }
    }

    fn resource(&self) -> String {
        format!("leases/{}/{}", self.namespace, self.name)
    }

    fn owner(&self, node_uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "v1".to_string(),
            kind: "Node".to_string(),
            name: self.node_name.clone(),
            uid: node_uid.to_string(),
            ..OwnerReference::default()
        }
    }

    /// `lease` with our holder, duration and `renewTime = now`, and the Node as owner when known.
    fn stamped(&self, mut lease: Lease, now: jiff::Timestamp, node_uid: Option<&str>) -> Lease {
        // The server keeps managedFields when an update leaves them out: sending them back
        // would double the bytes of every renewal for nothing.
        lease.metadata.managed_fields = None;
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.renew_time = Some(MicroTime(now));
        spec.holder_identity = Some(self.holder.clone());
        spec.lease_duration_seconds = Some(self.duration_seconds);
        if let Some(uid) = node_uid {
            let owners = lease.metadata.owner_references.get_or_insert_with(Vec::new);
            if !owners.iter().any(|o| o.uid == uid) {
                owners.push(self.owner(uid));
            }
        }
        lease
    }

    fn params() -> PostParams {
        PostParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PostParams::default()
        }
    }

    /// Renews once at `now`. `node_uid` (when known) is set as owner reference, also on a Lease
    /// that lacks it, as the kubelet retries it on every renewal until set.
    pub async fn renew(
        &mut self,
        now: jiff::Timestamp,
        node_uid: Option<&str>,
    ) -> Result<Renewal, ApiError> {
        for _ in 0..3 {
            let Some(cached) = self.cached.clone() else {
                return self.ensure(now, node_uid).await;
            };
            let lease = self.stamped(cached, now, node_uid);
            let result = self.update(&lease).await;
            match result {
                Ok(written) => {
                    self.cached = Some(written);
                    return Ok(Renewal::Updated);
                }
                // Someone else wrote it, or it was deleted: read again.
                Err(e) if e.is_conflict() || e.is_not_found() => self.cached = None,
                Err(e) => return Err(e),
            }
        }
        self.ensure(now, node_uid).await
    }

    /// UPDATE the Lease (its resourceVersion makes a concurrent write a 409).
    async fn update(&self, lease: &Lease) -> Result<Lease, ApiError> {
        self.requests
            .call_within(
                self.timeout,
                "update",
                self.resource(),
                self.api.replace(&self.name, &Self::params(), lease),
            )
            .await
    }

    /// GET the Lease, CREATE it if missing. A Lease found is then updated by the next renewal.
    async fn ensure(
        &mut self,
        now: jiff::Timestamp,
        node_uid: Option<&str>,
    ) -> Result<Renewal, ApiError> {
        match self
            .requests
            .call_within(
                self.timeout,
                "get",
                self.resource(),
                self.api.get_opt(&self.name),
            )
            .await?
        {
            Some(found) => {
                // Renew at once with what we just read (one level deep: a conflict now means a
                // second writer, which the next tick sorts out).
                let lease = self.stamped(found, now, node_uid);
                let written = self.update(&lease).await;
                match written {
                    Ok(w) => {
                        self.cached = Some(w);
                        Ok(Renewal::Updated)
                    }
                    Err(e) => {
                        self.cached = None;
                        Err(e)
                    }
                }
            }
            None => {
                // The start-up read of the Node runs beside the heartbeat, so its UID may not be
                // known yet: read it now rather than create an ownerless Lease (the next tick
                // retries if this read fails).
                let node_uid = match node_uid {
                    Some(uid) => Some(uid.to_string()),
                    None => {
                        self.requests
                            .call_within(
                                self.timeout,
                                "get",
                                format!("nodes/{}", self.node_name),
                                self.nodes.get(&self.node_name),
                            )
                            .await?
                            .metadata
                            .uid
                    }
                };
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.name.clone()),
                        namespace: Some(self.namespace.clone()),
                        owner_references: node_uid.map(|uid| vec![self.owner(&uid)]),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(self.holder.clone()),
                        lease_duration_seconds: Some(self.duration_seconds),
                        renew_time: Some(MicroTime(now)),
                        ..LeaseSpec::default()
                    }),
                };
                let created = self
                    .requests
                    .call_within(
                        self.timeout,
                        "create",
                        self.resource(),
                        self.api.create(&Self::params(), &lease),
                    )
                    .await?;
                self.cached = Some(created);
                Ok(Renewal::Created)
            }
        }
    }
}

/// Reads the Lease to learn whether the API server answers again (`agent::heartbeat`). The client
/// speaks HTTP/1, one request per connection at a time: a read never waits behind the renewal hung
/// on its dead connection (a read that times out closes its own connection).
pub struct LeaseProbe {
    api: Api<Lease>,
    name: String,
    resource: String,
    requests: Requests,
}

impl LeaseProbe {
    /// Returns once the API server answers one of the reads sent `every`, 2 × `every`, … after
    /// the call: any answer but a failure (a timeout, no connection, or a proxy's 5xx or 429). It
    /// proves no contact (a read), only that the next write may be stored
    /// (`core::contact::evidence`). Each read is bounded by `every`, so one that hangs ends as the
    /// next goes out.
    pub async fn answered(&self, every: std::time::Duration) {
        self.first_read(every, true, None).await;
    }

    /// The send time of the first of the reads sent `every`, 2 × `every`, … after the call that
    /// is not answered within `every` (`agent::heartbeat`, a return watched); never returns once
    /// the next read would go out at or after `until`.
    pub async fn unanswered(
        &self,
        every: std::time::Duration,
        until: tokio::time::Instant,
    ) -> tokio::time::Instant {
        self.first_read(every, false, Some(until)).await
    }

    /// The send time of the first read, one sent every `every` from the call on and each bounded
    /// by `every`, that is answered ([`LeaseProbe::once`]) when `answered`, or not when not; none
    /// goes out at or after `until`.
    async fn first_read(
        &self,
        every: std::time::Duration,
        answered: bool,
        until: Option<tokio::time::Instant>,
    ) -> tokio::time::Instant {
        let mut next = tokio::time::Instant::now();
        loop {
            next += every;
            if until.is_some_and(|u| next >= u) {
                return std::future::pending().await;
            }
            tokio::time::sleep_until(next).await;
            let sent = tokio::time::Instant::now();
            if self.once(every).await == answered {
                return sent;
            }
        }
    }

    /// One read of the Lease, bounded by `bound`: true when the API server answered it (any
    /// answer but a failure, as [`LeaseProbe::answered`] counts them).
    pub async fn once(&self, bound: std::time::Duration) -> bool {
        use crate::core::contact::{Evidence, Request, evidence};
        let read = self.requests.call_within(
            bound,
            "get",
            self.resource.clone(),
            self.api.get_opt(&self.name),
        );
        let outcome = crate::api::reachability::outcome(&read.await);
        evidence(outcome, Request::Other) != Evidence::Failure
    }
}

/// The namespace of the kubelets' node Leases, by which the node lifecycle controller judges
/// each node (docs/semantics.md §5.2).
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// Reads other nodes' kubelet Leases for the peers that ask (`peer::LeaseFn`, docs/fence.md §6):
/// a restarted agent, cut off, learns when its kubelet last renewed.
pub struct KubeletLeases {
    api: Api<Lease>,
    requests: Requests,
    /// A refusal (403) was logged: the agent's identity may not read other nodes' Leases.
    refused_logged: std::sync::atomic::AtomicBool,
}

impl KubeletLeases {
    /// Reads through `client`, each request counted by `requests`.
    pub fn new(client: kube::Client, requests: &Requests) -> KubeletLeases {
        KubeletLeases {
            api: Api::namespaced(client, NODE_LEASE_NAMESPACE),
            requests: requests.clone(),
            refused_logged: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// `renewTime` of `kube-node-lease/<node>`, read within `bound`; `None` when `node` is no
    /// node name, when the read fails,
    /// the Lease does not exist (no kubelet renews one) or holds no `renewTime`. Every such read
    /// is counted under one resource, `leases/kube-node-lease/*`, so that the request
    /// metric's labels do not grow with the cluster. A refusal is logged once: the agent's
    /// identity needs `get` on Leases in `kube-node-lease` (the packaged Role grants it).
    pub async fn renew_time(
        &self,
        node: &str,
        bound: std::time::Duration,
    ) -> Option<std::time::SystemTime> {
        // A node's name is a DNS subdomain; anything else (from a holder of the peers' key) is
        // not put into a request path.
        if !crate::core::names::is_dns_subdomain(node) {
            return None;
        }
        let read = self
            .requests
            .call_within(
                bound,
                "get",
                format!("leases/{NODE_LEASE_NAMESPACE}/*"),
                self.api.get_opt(node),
            )
            .await;
        match read {
            Ok(lease) => lease?
                .spec?
                .renew_time
                .map(|t| std::time::SystemTime::from(t.0)),
            Err(e) => {
                crate::api::peer_read_failed(
                    &e,
                    &self.refused_logged,
                    &format!("a peer's kubelet Lease in {NODE_LEASE_NAMESPACE}"),
                    &format!(
                        "peers restarted while cut off learn later when they were last heard; grant get on leases in {NODE_LEASE_NAMESPACE}"
                    ),
                );
                None
            }
        }
    }
}
