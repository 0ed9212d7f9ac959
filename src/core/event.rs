//! A core/v1 Event the agent decided to record (a condition transition, a fence action) and has
//! not sent yet: plain data, so that the decision (`core`), the shell that sends it (`api::events`)
//! and the state directory that holds it across restarts (`state`) share one type.

use std::time::SystemTime;

/// An event waiting to be sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingEvent {
    pub reason: String,
    pub message: String,
    pub warning: bool,
    pub at: SystemTime,
}
