//! The peer quorum (DESIGN §6 rule 6): would the control plane evict this node's pods now? A node
//! cut off from the API server cannot tell "only I am cut off" (the node lifecycle controller
//! taints me and deletes my pods) from "most of my zone is cut off" or "the control plane is down
//! everywhere" (it deliberately evicts nothing, SEMANTICS §5.5). Its peers can. Pure: the peers'
//! answers, this node's last contact and `now` in; a verdict with its reason out.

use std::net::SocketAddr;
use std::time::Duration;

/// Another agent this node can ask. Kept in the state directory, so the list is known while cut
/// off and after a restart while cut off.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Peer {
    /// The peer's Node name.
    pub node: String,
    /// Its peer endpoint. An address, never a name: DNS is one more thing a partition takes away.
    pub address: SocketAddr,
    /// Its Node's `topology.kubernetes.io/zone` label ("" when unlabelled, as the controller's
    /// zone key for a node without one).
    pub zone: String,
}

/// What a peer says about itself, checked (signature, freshness) before it gets here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerReport {
    pub node: String,
    pub zone: String,
    /// It reaches the API server now: its own contact is newer than its `unreachableAfter`.
    pub reachable: bool,
    /// How long ago its last contact was, on its own monotonic clock (clocks of two nodes are
    /// never compared); `None` when it never had one.
    pub last_contact_age: Option<Duration>,
}
