//! nodewarden: a per-node Kubernetes agent. See README.md; the design is docs/architecture.md.
//!
//! The house, from the bottom up — each layer uses only those below it:
//!
//! ```text
//!  main.rs     CLI: `run`, `check-config`, and the commands in `cli`
//!  cli         sample, status, explain: read, decide with the core, print
//!  agent       the tasks of `run`, thin loops on one clock (agent::clock): sampling, reporter,
//!              heartbeat, watches, quorum, fence task, shutdown — each gathers inputs, asks the
//!              core, carries out the answer
//!  shells      one kind of I/O each, no policy: sample (/proc, cgroups, statvfs, PSI),
//!              api (the API server through kube), peer (the signed peer endpoint), terminate
//!              (pod cgroups, signals), state (atomic files), observe (logs, metrics, health),
//!              config (the TOML file, translated into the core's types), machine, allocatable
//!  core        pure decisions: no I/O, no clock reads, no async; `now` is a parameter
//!              (thresholds, pressure, conditions, taints, fence plans and the fence task's
//!              per-tick decisions, quorum, contact, names and API validation)
//!  bounded     every file read, capped in size
//!  sim         the deterministic simulator (tests and `examples/simulate.rs`): the control plane
//!              as upstream implements it and N agents made of `core`'s decisions; uses core only
//! ```
//!
//! `src/core/mod.rs` tests that no core file names a shell.

pub mod agent;
pub mod allocatable;
pub mod api;
pub mod bounded;
pub mod cli;
pub mod config;
pub mod core;
pub mod machine;
pub mod observe;
pub mod peer;
pub mod sample;
pub mod sim;
pub mod state;
pub mod terminate;
