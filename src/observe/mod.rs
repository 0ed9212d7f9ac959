//! Observability shells: logging (journald or stderr), metrics, the health/metrics HTTP server,
//! and the systemd notification protocol. None of them holds policy.

pub mod http;
pub mod log;
pub mod metrics;
pub mod systemd;
