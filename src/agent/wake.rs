//! Waiting for any of a task's input channels to change, without taking the change in: a task
//! that sleeps between ticks wakes when an input moves and then reads its own receivers as it
//! always does (`has_changed`, `borrow_and_update`). The set holds clones of them, so a change a
//! tick already took in can wake the task once more, never less.

use std::future::Future;
use std::pin::Pin;

use tokio::sync::watch;

/// Resolves to whether the channel is still open.
type Changed<'a> = Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

trait Watched: Send {
    fn changed(&mut self) -> Changed<'_>;
}

impl<T: Send + Sync> Watched for watch::Receiver<T> {
    fn changed(&mut self) -> Changed<'_> {
        Box::pin(async move { watch::Receiver::changed(self).await.is_ok() })
    }
}

/// The channels whose changes wake a task.
#[derive(Default)]
pub struct Wake {
    watched: Vec<Box<dyn Watched>>,
}

impl Wake {
    /// Also wakes on changes of `rx`'s channel from now on (changes `rx` has not seen count).
    pub fn watch<T: Send + Sync + 'static>(mut self, rx: &watch::Receiver<T>) -> Wake {
        self.watched.push(Box::new(rx.clone()));
        self
    }

    /// Resolves when a watched channel holds a value this set has not seen; never while no
    /// channel is open. A channel whose sender is gone wakes once and leaves the set.
    pub async fn any(&mut self) {
        if self.watched.is_empty() {
            return std::future::pending().await;
        }
        let (open, i, rest) =
            futures_util::future::select_all(self.watched.iter_mut().map(|w| w.changed())).await;
        drop(rest);
        if !open {
            self.watched.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn wakes_on_each_change_leaves_the_change_to_the_task_and_drops_closed_channels() {
        let (a_tx, mut a) = watch::channel(0u32);
        let (b_tx, b) = watch::channel("x");
        let mut wake = Wake::default().watch(&a).watch(&b);
        let quiet = tokio::time::timeout(Duration::from_secs(60), wake.any()).await;
        assert!(quiet.is_err(), "woke with nothing changed");

        a_tx.send_replace(1);
        tokio::time::timeout(Duration::from_secs(1), wake.any())
            .await
            .expect("a change of the first channel wakes");
        // The task's own receiver still sees the change.
        assert!(a.has_changed().unwrap_or(false));
        assert_eq!(*a.borrow_and_update(), 1);

        b_tx.send_replace("y");
        tokio::time::timeout(Duration::from_secs(1), wake.any())
            .await
            .expect("a change of the second channel wakes");

        drop(b_tx);
        tokio::time::timeout(Duration::from_secs(1), wake.any())
            .await
            .expect("a closed channel wakes once");
        let quiet = tokio::time::timeout(Duration::from_secs(60), wake.any()).await;
        assert!(quiet.is_err(), "a closed channel kept waking");
        drop(a_tx);
        tokio::time::timeout(Duration::from_secs(1), wake.any())
            .await
            .expect("the last channel closing wakes once");
        let quiet = tokio::time::timeout(Duration::from_secs(60), wake.any()).await;
        assert!(quiet.is_err(), "an empty set woke");
    }
}
