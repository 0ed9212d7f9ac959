//! Pods this node runs that its view of the API does not hold (issue 22, the late watch;
//! docs/fence.md §5, *Pods the view missed*).
//!
//! The agent learns its pods from its watch, the kubelet from its own. A pod bound in the seconds
//! before the link is cut may reach the kubelet, which starts it, and not yet the agent, whose
//! view then never holds it: the fence plans nothing for it, and it runs on after the control
//! plane deletes it and starts its replacement (seed 0x1e1: 105 s). The pod's cgroup shows it
//! runs. While cut off, the agent asks its peers for the pods whose cgroups it finds and its view
//! lacks; a peer that reaches the API server lists the pods bound to this node and answers with
//! those of them, and the fence plans them as any other.
//!
//! A UID that a peer's list did not hold is not asked again in the partition: a static pod runs
//! under a UID of the kubelet's own (its mirror in the API has another), and each question asks a
//! peer for a list of the node's pods. Such a pod is never stopped for not being listed: nothing
//! here tells a deleted pod from a static one.

use std::collections::BTreeSet;

use crate::core::fence_plan::FencePod;
use crate::core::quorum::Heard;

/// The most pod UIDs one round asks about (a question carries them all; 32 UIDs are about 1.2 KB
/// of its 4 KiB).
pub const MAX_ASKED: usize = 32;

/// The UIDs among `running` (pods whose cgroups exist on this node) that neither `known` (the
/// view) nor `settled` (UIDs a peer's list answered already in this partition) holds: sorted, at
/// most [`MAX_ASKED`].
pub fn unlisted<'a>(
    running: impl IntoIterator<Item = &'a str>,
    known: &[FencePod],
    settled: &BTreeSet<String>,
) -> Vec<String> {
    let known: BTreeSet<&str> = known.iter().map(|p| p.uid.as_str()).collect();
    running
        .into_iter()
        .filter(|uid| !known.contains(uid) && !settled.contains(*uid))
        .collect::<BTreeSet<&str>>()
        .into_iter()
        .take(MAX_ASKED)
        .map(str::to_owned)
        .collect()
}

/// What a round's answers say of the pods it asked about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodsRead {
    /// Pods asked about and not in `known`, each once, as the first answer that listed it gave it.
    pub found: Vec<FencePod>,
    /// The UIDs asked about that a list of this node's pods, read by a peer that reaches the API
    /// server, did not hold: not asked again in this partition.
    pub settled: Vec<String>,
}

/// The pods the answers in `heard` listed for a round that asked about `asked`: only from peers
/// that say they reach the API server, only UIDs asked about (a peer cannot add to the view a pod
/// whose cgroup this node does not show) and not already `known`.
pub fn read<'a>(
    asked: &[String],
    known: &[FencePod],
    heard: impl IntoIterator<Item = &'a Heard>,
) -> PodsRead {
    let mut out = PodsRead::default();
    if asked.is_empty() {
        return out;
    }
    let mut listed = false;
    for h in heard {
        let Heard::Report(r) = h else { continue };
        let Some(pods) = r.pods.as_ref().filter(|_| r.reachable) else {
            continue;
        };
        listed = true;
        for p in pods {
            let new = asked.contains(&p.uid)
                && known.iter().all(|k| k.uid != p.uid)
                && out.found.iter().all(|f| f.uid != p.uid);
            if new {
                out.found.push(p.clone());
            }
        }
    }
    if listed {
        out.settled = asked
            .iter()
            .filter(|uid| out.found.iter().all(|f| f.uid != **uid))
            .cloned()
            .collect();
    }
    out
}
