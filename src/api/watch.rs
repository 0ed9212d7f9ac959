//! Watches of our Node and of the pods bound to it, kept in memory (reflector stores) and
//! restarted with kube's default backoff. The latest Node is also published on a channel so the
//! reporter can react to changes (a vanished owned taint, another writer's condition).

use std::sync::Arc;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

/// The in-memory views the watches maintain.
#[derive(Clone)]
pub struct Views {
    pub node: Store<Node>,
    pub pods: Store<Pod>,
    /// A counter bumped after every change the pod watch applied to `pods`.
    pub pods_changed: watch::Receiver<u64>,
}

/// The stores, and the future that keeps them current (run it as a task; it never ends).
/// `node_tx` gets every version of our Node.
pub fn start(
    client: kube::Client,
    node_name: String,
    node_tx: watch::Sender<Option<Arc<Node>>>,
) -> (Views, impl std::future::Future<Output = ()>) {
    let (node_store, node_writer) = reflector::store::<Node>();
    let (pod_store, pod_writer) = reflector::store::<Pod>();
    let (pods_tx, pods_changed) = watch::channel(0u64);
    let views = Views {
        node: node_store,
        pods: pod_store,
        pods_changed,
    };
    (
        views,
        run(client, node_name, node_tx, pods_tx, node_writer, pod_writer),
    )
}

async fn run(
    client: kube::Client,
    node_name: String,
    node_tx: watch::Sender<Option<Arc<Node>>>,
    pods_tx: watch::Sender<u64>,
    node_writer: reflector::store::Writer<Node>,
    pod_writer: reflector::store::Writer<Pod>,
) {
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::all(client);
    let node_cfg = watcher::Config::default().fields(&format!("metadata.name={node_name}"));
    let pod_cfg = watcher::Config::default().fields(&format!("spec.nodeName={node_name}"));
    let node_stream = reflector::reflector(node_writer, watcher(nodes, node_cfg))
        .default_backoff()
        .applied_objects();
    let pod_stream = reflector::reflector(pod_writer, watcher(pods, pod_cfg)).default_backoff();
    tokio::pin!(node_stream);
    tokio::pin!(pod_stream);
    let mut node_failing = false;
    let mut pods_failing = false;
    loop {
        tokio::select! {
            Some(item) = node_stream.next() => match item {
                Ok(node) => {
                    if node_failing {
                        log::info!(node = node_name.as_str(); "node watch recovered");
                        node_failing = false;
                    }
                    node_tx.send_replace(Some(Arc::new(node)));
                }
                Err(e) => {
                    if !node_failing {
                        // Bounded: a decoding error can quote what the server sent.
                        let e = crate::api::excerpt(&e.to_string());
                        log::warn!(node = node_name.as_str(), error = e.as_str(); "node watch failed: {e}; retrying with backoff");
                        node_failing = true;
                    }
                }
            },
            Some(item) = pod_stream.next() => match item {
                Ok(_) => {
                    // The reflector applied the event to the store before yielding it.
                    pods_tx.send_modify(|n| *n = n.wrapping_add(1));
                    if pods_failing {
                        log::info!(node = node_name.as_str(); "pod watch recovered");
                        pods_failing = false;
                    }
                }
                Err(e) => {
                    if !pods_failing {
                        // Bounded: a decoding error can quote what the server sent.
                        let e = crate::api::excerpt(&e.to_string());
                        log::warn!(node = node_name.as_str(), error = e.as_str(); "pod watch failed: {e}; retrying with backoff");
                        pods_failing = true;
                    }
                }
            },
            else => std::future::pending::<()>().await,
        }
    }
}
