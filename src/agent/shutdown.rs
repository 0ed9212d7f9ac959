//! Stopping cleanly (issue 13): on SIGTERM the agent takes no new work, the tasks that hold state
//! finish their current step and write it, and whatever has not returned after a bound is
//! aborted — logged by name, so an operator can see which part did not stop cleanly.
//!
//! The bound keeps the whole exit under one second: systemd's stop, a node drain or a package
//! upgrade never waits on a stuck API call.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::{Id, JoinError, JoinSet};

/// How long the tasks get to return by themselves once shutdown is requested. Leaves room under
/// one second for the rest of the exit (aborting, dropping the runtime, flushing the log).
pub const DRAIN_BOUND: Duration = Duration::from_millis(800);

/// A request to stop, seen by every clone. Triggered once; later triggers change nothing.
#[derive(Clone, Debug)]
pub struct Shutdown {
    tx: Arc<watch::Sender<Option<&'static str>>>,
    rx: watch::Receiver<Option<&'static str>>,
}

impl Default for Shutdown {
    fn default() -> Shutdown {
        Shutdown::new()
    }
}

impl Shutdown {
    pub fn new() -> Shutdown {
        let (tx, rx) = watch::channel(None);
        Shutdown {
            tx: Arc::new(tx),
            rx,
        }
    }

    /// Requests shutdown for `why` (a signal's name, say). Returns whether this was the first
    /// request.
    pub fn trigger(&self, why: &'static str) -> bool {
        self.tx.send_if_modified(|cur| {
            if cur.is_some() {
                return false;
            }
            *cur = Some(why);
            true
        })
    }

    pub fn is_requested(&self) -> bool {
        self.rx.borrow().is_some()
    }

    /// Resolves once shutdown is requested (at once if it already was), with the reason.
    pub async fn requested(&self) -> &'static str {
        let mut rx = self.rx.clone();
        // Every clone holds the sender, so the channel cannot close while `self` lives.
        let why = rx.wait_for(Option::is_some).await.ok().and_then(|why| *why);
        match why {
            Some(why) => why,
            None => std::future::pending().await,
        }
    }
}

/// Tasks with names, so that an ended or aborted task can be named.
#[derive(Default)]
pub struct Tasks {
    set: JoinSet<()>,
    names: HashMap<Id, &'static str>,
}

impl Tasks {
    pub fn new() -> Tasks {
        Tasks::default()
    }

    pub fn spawn(&mut self, name: &'static str, task: impl Future<Output = ()> + Send + 'static) {
        let handle = self.set.spawn(task);
        self.names.insert(handle.id(), name);
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The next task to end, by name, with how it ended (`Err`: it panicked or was aborted).
    /// `None` when no task is left.
    pub async fn join_next(&mut self) -> Option<(&'static str, Result<(), JoinError>)> {
        let (id, result) = match self.set.join_next_with_id().await? {
            Ok((id, ())) => (id, Ok(())),
            Err(e) => (e.id(), Err(e)),
        };
        Some((self.names.remove(&id).unwrap_or("unnamed"), result))
    }

    /// Aborts every task and waits until they are gone (an aborted task ends at its next await).
    pub async fn abort_all(&mut self) {
        self.set.shutdown().await;
        self.names.clear();
    }
}

/// How a drain ended.
#[derive(Debug, Default, PartialEq)]
pub struct Drained {
    /// Tasks that returned by themselves within the bound (or failed: logged as such).
    pub finished: Vec<&'static str>,
    /// Tasks still running at the bound, aborted wherever they were.
    pub aborted: Vec<&'static str>,
}

/// Waits up to `bound` for `tasks` to return by themselves, then aborts the rest. Logs once at
/// INFO what finished and what was aborted. Triggering the shutdown they watch is the caller's.
pub async fn drain(mut tasks: Tasks, bound: Duration) -> Drained {
    let started = tokio::time::Instant::now();
    let deadline = started + bound;
    let mut drained = Drained::default();
    while let Ok(Some((name, result))) = tokio::time::timeout_at(deadline, tasks.join_next()).await
    {
        if let Err(e) = result {
            log::error!(task = name; "the {name} task failed while stopping: {e}");
        }
        drained.finished.push(name);
    }
    drained.aborted = tasks.names.values().copied().collect();
    drained.aborted.sort_unstable();
    tasks.abort_all().await;
    let took = started.elapsed().as_millis() as u64;
    let finished = drained.finished.join(", ");
    if drained.aborted.is_empty() {
        log::info!(finished = finished.as_str(), took_ms = took;
            "stopped cleanly in {took} ms ({finished})");
    } else {
        let aborted = drained.aborted.join(", ");
        log::info!(finished = finished.as_str(), aborted = aborted.as_str(), took_ms = took;
            "stopped after {took} ms: aborted {aborted} (not done within {} ms; what it was doing is lost), finished: {}",
            bound.as_millis(), if finished.is_empty() { "none" } else { finished.as_str() });
    }
    drained
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn every_clone_sees_the_first_request() {
        let stop = Shutdown::new();
        let seen = stop.clone();
        assert!(!seen.is_requested());
        assert!(stop.trigger("SIGTERM"));
        assert!(!stop.trigger("SIGINT"), "a second request changes nothing");
        assert!(seen.is_requested());
        assert_eq!(seen.requested().await, "SIGTERM");
        // Again, after it resolved once: a loop's select sees it on every turn.
        assert_eq!(seen.requested().await, "SIGTERM");
    }

    #[tokio::test(start_paused = true)]
    async fn drain_waits_for_tasks_that_return_and_aborts_the_rest() {
        let stop = Shutdown::new();
        let mut tasks = Tasks::new();
        let wrote = Arc::new(std::sync::atomic::AtomicBool::new(false));
        {
            let (stop, wrote) = (stop.clone(), wrote.clone());
            tasks.spawn("writer", async move {
                stop.requested().await;
                // A step that takes a while but ends within the bound.
                tokio::time::sleep(Duration::from_millis(300)).await;
                wrote.store(true, std::sync::atomic::Ordering::SeqCst);
            });
        }
        tasks.spawn("stuck", std::future::pending());
        tasks.spawn("slow", async {
            tokio::time::sleep(Duration::from_secs(5)).await;
        });
        let started = tokio::time::Instant::now();
        stop.trigger("test");
        let drained = drain(tasks, DRAIN_BOUND).await;
        assert_eq!(drained.finished, vec!["writer"]);
        assert_eq!(drained.aborted, vec!["slow", "stuck"]);
        assert!(wrote.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(
            started.elapsed(),
            DRAIN_BOUND,
            "aborted at the bound, not later"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn drain_returns_as_soon_as_every_task_returned() {
        let mut tasks = Tasks::new();
        tasks.spawn("quick", async {
            tokio::time::sleep(Duration::from_millis(20)).await;
        });
        let started = tokio::time::Instant::now();
        let drained = drain(tasks, DRAIN_BOUND).await;
        assert_eq!(drained.finished, vec!["quick"]);
        assert!(drained.aborted.is_empty());
        assert_eq!(started.elapsed(), Duration::from_millis(20));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_task_is_named() {
        let mut tasks = Tasks::new();
        tasks.spawn("doomed", async { panic!("boom") });
        let (name, result) = tasks.join_next().await.expect("one task");
        assert_eq!(name, "doomed");
        assert!(result.is_err());
        assert!(tasks.join_next().await.is_none());
    }
}
