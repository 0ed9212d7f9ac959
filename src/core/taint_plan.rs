//! Which taints the node should carry after our change (docs/architecture.md §6): ours added or
//! removed by (key, effect), everyone else's kept exactly — value, effect, `timeAdded` and order.
//! Pure.

use crate::core::condition::TaintSpec;
use crate::core::taint::Taint;

/// Whether a taint is one we own: its (key, effect) is one of our conditions' taints. Taints are
/// unique on a node by (key, effect) (docs/semantics.md §1), so that pair is the identity.
pub fn is_owned(taint: &Taint, owned: &[TaintSpec]) -> bool {
    owned
        .iter()
        .any(|o| o.key == taint.key && o.effect == taint.effect)
}

/// The node's new taint list, or `None` when it already matches. `owned` is every taint our
/// conditions can map to; `desired` the subset that should be on the node now. An owned taint
/// that stays keeps its value and `timeAdded`; a new one is appended with `time_added`.
pub fn plan_taints(
    current: &[Taint],
    owned: &[TaintSpec],
    desired: &[TaintSpec],
    time_added: &str,
) -> Option<Vec<Taint>> {
    let mut next: Vec<Taint> = current
        .iter()
        .filter(|t| {
            !is_owned(t, owned)
                || desired
                    .iter()
                    .any(|d| d.key == t.key && d.effect == t.effect)
        })
        .cloned()
        .collect();
    for d in desired {
        if !next.iter().any(|t| t.key == d.key && t.effect == d.effect) {
            next.push(Taint {
                key: d.key.clone(),
                value: String::new(),
                effect: d.effect,
                time_added: Some(time_added.to_string()),
            });
        }
    }
    (next != current).then_some(next)
}

/// Owned taints that should be on the node but are not: what another writer removed (for
/// example `kubectl taint`, which rewrites the whole list) while the condition still holds.
pub fn missing_owned(current: &[Taint], desired: &[TaintSpec]) -> Vec<TaintSpec> {
    desired
        .iter()
        .filter(|d| {
            !current
                .iter()
                .any(|t| t.key == d.key && t.effect == d.effect)
        })
        .cloned()
        .collect()
}
