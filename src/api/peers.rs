//! Where the peer list comes from (docs/fence.md §5): the EndpointSlices of the headless Service
//! in front of the agents (DaemonSet installs), or the `[peers] static` list (systemd installs).
//! The slices are listed and watched; every change rebuilds the whole set from all slices of the
//! Service ([`peers_from_slices`], pure) and publishes it only when it differs. While the API
//! server cannot be reached the last set stays: a node cut off from the control plane still has to
//! know whom to ask, and that is exactly when the watch fails.

use std::collections::{BTreeMap, HashSet};
use std::net::{IpAddr, SocketAddr};

use futures_util::StreamExt;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

use crate::core::quorum::Peer;

/// The label the EndpointSlice controller puts on every slice of a Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The static list as the quorum uses it: without this node, sorted, one entry per node (the
/// first in sort order wins, as for slices).
pub fn from_static(list: &[Peer], me: &str) -> Vec<Peer> {
    let mut peers: Vec<Peer> = list.iter().filter(|p| p.node != me).cloned().collect();
    sort_and_dedup(&mut peers);
    peers
}

fn sort_and_dedup(peers: &mut Vec<Peer>) {
    peers.sort();
    // Sorted by node first, so the entries of one node are adjacent and the kept one is the
    // smallest: the same answer whatever order the slices arrived in.
    peers.dedup_by(|later, first| later.node == first.node);
}

/// Why an endpoint, or a whole slice, gave no peer. Each is logged once while it lasts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Skipped {
    /// The slice lists names (`FQDN`) or an address type we do not know; a peer is an address,
    /// never a name (DNS is one more thing a partition takes away).
    AddressType { slice: String, address_type: String },
    /// The slice has no port named `port_name`.
    NoPort { slice: String, port_name: String },
    /// The named port has no number ("all ports") or one outside 1..=65535 (the API server does
    /// not check the range of EndpointSlice ports).
    BadPort {
        slice: String,
        port_name: String,
        port: Option<i32>,
    },
    /// The endpoint's first address is not an IP address of the slice's type.
    BadAddress {
        slice: String,
        node: String,
        address: String,
    },
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skipped::AddressType {
                slice,
                address_type,
            } => write!(
                f,
                "EndpointSlice {slice}: addressType {address_type:?} is not IPv4 or IPv6; its endpoints are ignored"
            ),
            Skipped::NoPort { slice, port_name } => write!(
                f,
                "EndpointSlice {slice}: no port named {port_name:?}; its endpoints are ignored"
            ),
            Skipped::BadPort {
                slice,
                port_name,
                port: Some(port),
            } => write!(
                f,
                "EndpointSlice {slice}: port {port_name:?} is {port}, not in 1..=65535; its endpoints are ignored"
            ),
            Skipped::BadPort {
                slice,
                port_name,
                port: None,
            } => write!(
                f,
                "EndpointSlice {slice}: port {port_name:?} has no number; its endpoints are ignored"
            ),
            Skipped::BadAddress {
                slice,
                node,
                address,
            } => write!(
                f,
                "EndpointSlice {slice}: endpoint of node {node}: address {:?} is not an IP address; ignored",
                crate::api::excerpt(address)
            ),
        }
    }
}

/// The peers the slices of one Service name: each endpoint with a `nodeName` other than `me`
/// and not terminating, at its first address and the slice's port named `port_name`, in its
/// `zone` ("" when unset). Endpoints that are not ready or not serving are kept: a peer cut off
/// from the API server is reported not ready by the control plane, and it is exactly the one
/// whose answer matters. Sorted by node, one entry per node. Also returns what was skipped.
pub fn peers_from_slices<'a>(
    slices: impl IntoIterator<Item = &'a EndpointSlice>,
    port_name: &str,
    me: &str,
) -> (Vec<Peer>, Vec<Skipped>) {
    let mut peers = Vec::new();
    let mut skipped = Vec::new();
    for slice in slices {
        let slice_name = format!(
            "{}/{}",
            slice.metadata.namespace.as_deref().unwrap_or(""),
            slice.metadata.name.as_deref().unwrap_or("")
        );
        let family_v6 = match slice.address_type.as_str() {
            "IPv4" => false,
            "IPv6" => true,
            other => {
                skipped.push(Skipped::AddressType {
                    slice: slice_name,
                    address_type: crate::api::excerpt(other),
                });
                continue;
            }
        };
        let named = slice
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref().unwrap_or("") == port_name);
        let Some(named) = named else {
            skipped.push(Skipped::NoPort {
                slice: slice_name,
                port_name: port_name.to_string(),
            });
            continue;
        };
        let port = match named.port.map(u16::try_from) {
            Some(Ok(p)) if p != 0 => p,
            _ => {
                skipped.push(Skipped::BadPort {
                    slice: slice_name,
                    port_name: port_name.to_string(),
                    port: named.port,
                });
                continue;
            }
        };
        for endpoint in &slice.endpoints {
            let node = match endpoint.node_name.as_deref() {
                Some(n) if !n.is_empty() => n,
                // Not an agent's pod (a manually added endpoint): nobody to ask.
                _ => continue,
            };
            if node == me {
                continue;
            }
            let terminating = endpoint
                .conditions
                .as_ref()
                .and_then(|c| c.terminating)
                .unwrap_or(false);
            if terminating {
                // Its pod is going away; a replacement gets an endpoint of its own.
                continue;
            }
            let address = endpoint.addresses.first().map(String::as_str).unwrap_or("");
            let Some(ip) = parse_address(address, family_v6) else {
                skipped.push(Skipped::BadAddress {
                    slice: slice_name.clone(),
                    node: node.to_string(),
                    address: address.to_string(),
                });
                continue;
            };
            peers.push(Peer {
                node: node.to_string(),
                address: SocketAddr::new(ip, port),
                zone: endpoint.zone.clone().unwrap_or_default(),
            });
        }
    }
    sort_and_dedup(&mut peers);
    (peers, skipped)
}

/// An address of the slice's family. The API server accepts forms Rust rejects on purpose:
/// IPv4 octets with leading zeros ("010.0.0.1", octal to some parsers, decimal to Go's) are
/// ambiguous and refused here; an IPv4-mapped IPv6 address in an IPv4 slice is its IPv4 address.
fn parse_address(address: &str, family_v6: bool) -> Option<IpAddr> {
    let ip = address.parse::<IpAddr>().ok()?.to_canonical();
    (ip.is_ipv6() == family_v6).then_some(ip)
}

/// Keeps `tx` at the peers the EndpointSlices of Service `namespace/service` name (see
/// [`peers_from_slices`]); runs until the task is dropped. The set is sent only when it
/// changed, after each complete list (an empty list is a real answer: sent) and after each watch
/// event. Watch and list errors are logged once per outage and retried with kube's default
/// backoff; they never change the set.
pub async fn discover(
    client: kube::Client,
    namespace: &str,
    service: &str,
    port_name: &str,
    me: &str,
    tx: watch::Sender<Vec<Peer>>,
) {
    let slices: Api<EndpointSlice> = Api::namespaced(client, namespace);
    let config = watcher::Config::default()
        .labels(&format!("{SERVICE_NAME_LABEL}={service}"))
        .timeout(crate::api::watch::watch_timeout_secs());
    let stream = watcher(slices, config).default_backoff();
    tokio::pin!(stream);
    let mut known: BTreeMap<String, EndpointSlice> = BTreeMap::new();
    // A re-list in progress: the set is replaced only when it is complete (InitDone), so a
    // failed re-list leaves the last set untouched.
    let mut relisting: Option<BTreeMap<String, EndpointSlice>> = None;
    let mut logged: HashSet<Skipped> = HashSet::new();
    let mut failing = false;
    while let Some(item) = stream.next().await {
        let event = match item {
            Ok(event) => event,
            Err(e) => {
                if !failing {
                    // Bounded: a decoding error can quote what the server sent.
                    let e = crate::api::excerpt(&e.to_string());
                    log::warn!(namespace, service, error = e.as_str(); "peer discovery: EndpointSlices of {namespace}/{service}: watch failed: {e}; keeping the last {} peers, retrying with backoff", tx.borrow().len());
                    failing = true;
                }
                continue;
            }
        };
        let complete = match event {
            // Init comes before the list request is even sent: not a sign of recovery.
            watcher::Event::Init => {
                relisting = Some(BTreeMap::new());
                continue;
            }
            watcher::Event::InitApply(slice) => {
                if let Some(buffer) = relisting.as_mut() {
                    buffer.insert(slice_key(&slice), slice);
                }
                false
            }
            watcher::Event::InitDone => {
                if let Some(buffer) = relisting.take() {
                    known = buffer;
                }
                true
            }
            watcher::Event::Apply(slice) => {
                known.insert(slice_key(&slice), slice);
                true
            }
            watcher::Event::Delete(slice) => {
                known.remove(&slice_key(&slice));
                true
            }
        };
        if failing {
            log::info!(namespace, service; "peer discovery: EndpointSlices of {namespace}/{service}: watch recovered");
            failing = false;
        }
        if complete {
            publish(&known, port_name, me, &tx, &mut logged, namespace, service);
        }
    }
}

fn slice_key(slice: &EndpointSlice) -> String {
    slice.metadata.name.clone().unwrap_or_default()
}

fn publish(
    known: &BTreeMap<String, EndpointSlice>,
    port_name: &str,
    me: &str,
    tx: &watch::Sender<Vec<Peer>>,
    logged: &mut HashSet<Skipped>,
    namespace: &str,
    service: &str,
) {
    let (mut peers, skipped) = peers_from_slices(known.values(), port_name, me);
    for problem in &skipped {
        if !logged.contains(problem) {
            log::warn!(namespace, service; "peer discovery: {problem}");
        }
    }
    // Forget what is fixed, so that it is logged again if it comes back.
    *logged = skipped.into_iter().collect();
    let count = peers.len();
    let changed = tx.send_if_modified(|current| {
        if *current == peers {
            return false;
        }
        *current = std::mem::take(&mut peers);
        true
    });
    if changed {
        log::info!(namespace, service, peers = count; "peer discovery: {count} peers from the EndpointSlices of {namespace}/{service}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort};
    use kube::api::ObjectMeta;

    fn endpoint(node: Option<&str>, address: &str, zone: Option<&str>) -> Endpoint {
        Endpoint {
            addresses: vec![address.to_string()],
            node_name: node.map(String::from),
            zone: zone.map(String::from),
            ..Endpoint::default()
        }
    }

    fn slice(
        name: &str,
        address_type: &str,
        port: Option<i32>,
        eps: Vec<Endpoint>,
    ) -> EndpointSlice {
        EndpointSlice {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("nw".into()),
                ..ObjectMeta::default()
            },
            address_type: address_type.into(),
            endpoints: eps,
            ports: Some(vec![EndpointPort {
                name: Some("peer".into()),
                port,
                protocol: Some("TCP".into()),
                ..EndpointPort::default()
            }]),
        }
    }

    fn peer(node: &str, addr: &str, zone: &str) -> Peer {
        Peer {
            node: node.into(),
            address: addr.parse().expect("test address"),
            zone: zone.into(),
        }
    }

    #[test]
    fn every_endpoint_with_a_node_but_me_at_its_first_address_and_the_named_port() {
        let mut two = endpoint(Some("b"), "10.0.0.2", None);
        two.addresses.push("10.0.0.99".into());
        let s = slice(
            "s1",
            "IPv4",
            Some(9843),
            vec![
                endpoint(Some("c"), "10.0.0.3", Some("z1")),
                two,
                endpoint(Some("me"), "10.0.0.1", Some("z1")),
                endpoint(None, "10.0.0.4", Some("z1")),
            ],
        );
        let (peers, skipped) = peers_from_slices([&s], "peer", "me");
        assert_eq!(
            peers,
            vec![
                peer("b", "10.0.0.2:9843", ""),
                peer("c", "10.0.0.3:9843", "z1")
            ]
        );
        assert!(skipped.is_empty(), "{skipped:?}");
    }

    #[test]
    fn not_ready_is_a_peer_terminating_is_not() {
        let mut not_ready = endpoint(Some("a"), "10.0.0.1", None);
        not_ready.conditions = Some(EndpointConditions {
            ready: Some(false),
            serving: Some(false),
            terminating: Some(false),
        });
        let mut terminating = endpoint(Some("b"), "10.0.0.2", None);
        terminating.conditions = Some(EndpointConditions {
            ready: Some(false),
            serving: Some(true),
            terminating: Some(true),
        });
        let s = slice("s", "IPv4", Some(1), vec![not_ready, terminating]);
        let (peers, _) = peers_from_slices([&s], "peer", "me");
        assert_eq!(peers, vec![peer("a", "10.0.0.1:1", "")]);
    }

    #[test]
    fn a_node_in_two_slices_keeps_the_entry_that_sorts_first_whatever_the_order() {
        let s1 = slice(
            "s1",
            "IPv4",
            Some(9843),
            vec![endpoint(Some("a"), "10.0.0.9", None)],
        );
        let s2 = slice(
            "s2",
            "IPv4",
            Some(9843),
            vec![endpoint(Some("a"), "10.0.0.1", None)],
        );
        let (one, _) = peers_from_slices([&s1, &s2], "peer", "me");
        let (other, _) = peers_from_slices([&s2, &s1], "peer", "me");
        assert_eq!(one, vec![peer("a", "10.0.0.1:9843", "")]);
        assert_eq!(one, other);
    }

    #[test]
    fn a_bad_address_skips_that_endpoint_only() {
        let s = slice(
            "s",
            "IPv4",
            Some(9843),
            vec![
                endpoint(Some("a"), "not-an-ip", None),
                endpoint(Some("b"), "010.0.0.2", None),
                endpoint(Some("c"), "fd00::3", None),
                endpoint(Some("d"), "10.0.0.4", None),
            ],
        );
        let (peers, skipped) = peers_from_slices([&s], "peer", "me");
        assert_eq!(peers, vec![peer("d", "10.0.0.4:9843", "")]);
        let bad: Vec<&str> = skipped
            .iter()
            .filter_map(|s| match s {
                Skipped::BadAddress { node, .. } => Some(node.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(bad, ["a", "b", "c"]);
    }

    #[test]
    fn ipv6_slices_and_mapped_ipv4_addresses() {
        let v6 = slice(
            "v6",
            "IPv6",
            Some(9843),
            vec![endpoint(Some("a"), "fd00::1", None)],
        );
        let mapped = slice(
            "v4",
            "IPv4",
            Some(9843),
            vec![endpoint(Some("b"), "::ffff:10.0.0.2", None)],
        );
        let (peers, skipped) = peers_from_slices([&v6, &mapped], "peer", "me");
        assert_eq!(
            peers,
            vec![
                peer("a", "[fd00::1]:9843", ""),
                peer("b", "10.0.0.2:9843", "")
            ]
        );
        assert!(skipped.is_empty(), "{skipped:?}");
    }

    #[test]
    fn a_slice_without_a_usable_port_or_of_names_gives_no_peer() {
        let ep = || vec![endpoint(Some("a"), "10.0.0.1", None)];
        for (s, expected) in [
            (
                slice("p0", "IPv4", Some(0), ep()),
                Skipped::BadPort {
                    slice: "nw/p0".into(),
                    port_name: "peer".into(),
                    port: Some(0),
                },
            ),
            (
                slice("big", "IPv4", Some(70000), ep()),
                Skipped::BadPort {
                    slice: "nw/big".into(),
                    port_name: "peer".into(),
                    port: Some(70000),
                },
            ),
            (
                slice("all", "IPv4", None, ep()),
                Skipped::BadPort {
                    slice: "nw/all".into(),
                    port_name: "peer".into(),
                    port: None,
                },
            ),
            (
                slice(
                    "fqdn",
                    "FQDN",
                    Some(9843),
                    vec![endpoint(Some("a"), "a.example.com", None)],
                ),
                Skipped::AddressType {
                    slice: "nw/fqdn".into(),
                    address_type: "FQDN".into(),
                },
            ),
        ] {
            let (peers, skipped) = peers_from_slices([&s], "peer", "me");
            assert!(peers.is_empty(), "{peers:?}");
            assert_eq!(skipped, vec![expected]);
        }
        let s = slice("s", "IPv4", Some(9843), ep());
        let (peers, skipped) = peers_from_slices([&s], "other", "me");
        assert!(peers.is_empty());
        assert_eq!(
            skipped,
            vec![Skipped::NoPort {
                slice: "nw/s".into(),
                port_name: "other".into()
            }]
        );
    }

    #[test]
    fn the_static_list_without_me_sorted_one_per_node() {
        let list = [
            peer("c", "10.0.0.3:9843", "z"),
            peer("me", "10.0.0.1:9843", "z"),
            peer("a", "10.0.0.9:9843", "z"),
            peer("a", "10.0.0.2:9843", "z"),
        ];
        assert_eq!(
            from_static(&list, "me"),
            vec![
                peer("a", "10.0.0.2:9843", "z"),
                peer("c", "10.0.0.3:9843", "z")
            ]
        );
    }
}
