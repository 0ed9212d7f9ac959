//! nodewarden: a per-node Kubernetes agent. See README.md.
//!
//! `core` is pure (no I/O, no clock); everything else is a shell doing one kind of I/O.

pub mod config;
pub mod core;
pub mod explain;
pub mod sample;
