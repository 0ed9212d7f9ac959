//! nodewarden: a per-node Kubernetes agent. See README.md.
//!
//! `core` is pure (no I/O, no clock); `sample` and `observe` are shells doing one kind of I/O
//! each; `agent` wires them; `config` loads and validates the configuration file; `explain`
//! reads Kubernetes objects for `nodewarden explain`; `peer` is the authenticated endpoint
//! through which agents of a zone ask each other whether they reach the API server; every file
//! any of them reads goes through `bounded`, which caps its size.

pub mod agent;
pub mod allocatable;
pub mod api;
pub mod bounded;
pub mod config;
pub mod core;
pub mod explain;
pub mod machine;
pub mod observe;
pub mod peer;
pub mod report;
pub mod sample;
pub mod state;
pub mod status;
pub mod terminate;
