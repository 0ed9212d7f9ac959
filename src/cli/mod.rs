//! The commands other than `run`, each printing for a person at the node: `sample` (one reading
//! and what it implies), `status` (contact, conditions, taints and every pod's fence plan, from
//! the state directory), `explain` (one pod against one node's taints). `check-config` is the
//! configuration's own output (`config::effective_text`), followed by its percentages resolved
//! here (`check`). Text tables print amounts through `core::units`.

pub mod args;
pub mod check;
pub mod explain;
pub mod live;
pub mod nodes;
pub mod sample;
pub mod status;
