//! The systemd notification protocol (`Type=notify`): READY after the first sample, WATCHDOG from
//! the sampling loop, STATUS lines saying what the agent does. Every call is a no-op when
//! `NOTIFY_SOCKET` is unset (a DaemonSet, a shell).

use std::time::Duration;

use sd_notify::NotifyState;

/// The watchdog interval systemd expects pings within, if it enabled one for us.
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled()
}

fn send(states: &[NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        log::warn!(error = e.to_string().as_str(); "sd_notify failed: {e}");
    }
}

pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

pub fn watchdog() {
    send(&[NotifyState::Watchdog]);
}

pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

pub fn stopping() {
    send(&[NotifyState::Stopping]);
}
