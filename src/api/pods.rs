//! Lists another node's pods for a peer that asks (`peer::PodsFn`, docs/fence.md §5, *Pods the
//! view missed*): a node cut off learns the pods its kubelet runs that its own watch had not
//! delivered before the cut.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use kube::Api;
use kube::api::ListParams;

use crate::api::slim::SlimPod;
use crate::api::{ApiError, Requests};

/// Pods a page: a node runs 110 at most by default, so one or two requests list it. Pods come
/// back whole from the API server (10 KB of JSON each, typically), which bounds the page.
pub const PAGE: u32 = 100;
/// The most pages read: a node with more pods than these hold is not listed (`None`), never
/// listed in part.
pub const MAX_PAGES: u32 = 10;

pub struct NodePods {
    api: Api<SlimPod>,
    requests: Requests,
    /// A refusal (403) was logged: the agent's identity may not list pods.
    refused_logged: AtomicBool,
}

impl NodePods {
    /// Reads through `client`, each request counted by `requests`.
    pub fn new(client: kube::Client, requests: &Requests) -> NodePods {
        NodePods {
            api: Api::all(client),
            requests: requests.clone(),
            refused_logged: AtomicBool::new(false),
        }
    }

    /// The pods bound to Node `node` whose UIDs are among `uids`, each request within `bound`;
    /// `None` when `node` is no node name, a request fails, or the list does not end within
    /// [`MAX_PAGES`]. Counted under one resource, `pods?fieldSelector=spec.nodeName=*`, so that the
    /// request metric's labels do not grow with the cluster.
    pub async fn listed(
        &self,
        node: &str,
        uids: &[String],
        bound: Duration,
    ) -> Option<Vec<SlimPod>> {
        // As `node::NodeTaints`: no name from a holder of the peers' key goes into a request
        // unchecked.
        if !crate::core::names::is_dns_subdomain(node) {
            return None;
        }
        let wanted: BTreeSet<&str> = uids.iter().map(String::as_str).collect();
        let mut found = Vec::new();
        let listed = each_page(
            &self.api,
            &self.requests,
            node,
            (PAGE, MAX_PAGES),
            (bound, "pods?fieldSelector=spec.nodeName=*"),
            |pods| {
                found.extend(pods.into_iter().filter(|p| {
                    p.metadata
                        .uid
                        .as_deref()
                        .is_some_and(|uid| wanted.contains(uid))
                }));
            },
        )
        .await;
        match listed {
            Ok(()) => Some(found),
            Err(PagesError::Api(e)) => {
                crate::api::peer_read_failed(
                    &e,
                    &self.refused_logged,
                    "a peer's pods",
                    "peers cut off cannot learn from this node of pods their watch missed before the cut; grant list on pods",
                );
                None
            }
            Err(PagesError::Endless) => None,
        }
    }
}

/// Why [`each_page`] did not list the whole of a node's pods.
#[derive(Debug)]
pub enum PagesError {
    /// A request failed.
    Api(ApiError),
    /// The list had not ended after the most pages allowed: a server handing out continue
    /// tokens forever is an error, not a loop.
    Endless,
}

/// Lists the pods bound to `node` (`fieldSelector=spec.nodeName`), `page` a page, and hands each
/// page's pods to `each`; at most `max_pages` pages, each request within `bound` and counted
/// under `resource`. The one paged list of a node's pods: the fence's reconciliation of its own
/// and a peer's list for an asker.
pub async fn each_page(
    api: &Api<SlimPod>,
    requests: &Requests,
    node: &str,
    (page, max_pages): (u32, u32),
    (bound, resource): (Duration, &str),
    mut each: impl FnMut(Vec<SlimPod>),
) -> Result<(), PagesError> {
    let mut lp = ListParams::default()
        .fields(&format!("spec.nodeName={node}"))
        .limit(page);
    for _ in 0..max_pages {
        let listed = requests
            .call_within(bound, "list", resource, api.list(&lp))
            .await
            .map_err(PagesError::Api)?;
        each(listed.items);
        match listed.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => return Ok(()),
        }
    }
    Err(PagesError::Endless)
}
