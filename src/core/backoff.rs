//! Capped exponential backoff with jitter for API retries (docs/architecture.md §6). Pure: the
//! random draw is an input, so the cap can be tested exhaustively.

use std::time::Duration;

/// A retry policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
}

impl Backoff {
    /// The delay before retry number `attempt` (0-based): `min(cap, base × 2^attempt)`, reduced by
    /// up to half at random ("equal jitter"), so retries of many agents spread out yet never wait
    /// longer than the cap. `random` is a draw in [0, 1).
    pub fn delay(&self, attempt: u32, random: f64) -> Duration {
        let exp = self
            .base
            .checked_mul(1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX))
            .unwrap_or(self.cap)
            .min(self.cap);
        let r = if random.is_finite() {
            random.clamp(0.0, 1.0)
        } else {
            0.0
        };
        exp.mul_f64(1.0 - 0.5 * r).min(self.cap)
    }
}

/// A small non-cryptographic random source for jitter (xorshift64*), seeded once per process.
#[derive(Clone, Debug)]
pub struct Jitter(u64);

impl Jitter {
    pub fn new(seed: u64) -> Jitter {
        Jitter(seed | 1)
    }

    /// The next draw in [0, 1).
    pub fn draw(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// When API work is tried again after a failure: a capped, jittered backoff, never every tick,
/// and at once after a success. One policy for the fence's API work (`core::fencing`) and the
/// reporter's writes (`core::reporting`). Times are the caller's monotonic instants.
#[derive(Clone, Debug)]
pub struct Retry {
    backoff: Backoff,
    jitter: Jitter,
    attempt: u32,
    at: Option<Duration>,
}

impl Retry {
    pub fn new(backoff: Backoff, jitter: Jitter) -> Retry {
        Retry {
            backoff,
            jitter,
            attempt: 0,
            at: None,
        }
    }

    /// Whether a try is due at `now`.
    pub fn due(&self, now: Duration) -> bool {
        self.at.is_none_or(|t| now >= t)
    }

    /// When the next try is due after a failure; `None` when a try may run at once.
    pub fn next_at(&self) -> Option<Duration> {
        self.at
    }

    /// After a round at `now` that `ran` (or not): a failure pushes the next try back, a success
    /// clears it.
    pub fn next(&mut self, ran: bool, failed: bool, now: Duration) {
        match (ran, failed) {
            (false, _) => {}
            (true, true) => {
                self.failed(now, None);
            }
            (true, false) => self.reset(),
        }
    }

    /// A try at `now` failed: the next is due after the backoff's delay for this attempt, and no
    /// sooner than `at_least` (a server's `Retry-After`, itself capped by the backoff's cap so a
    /// server cannot park the agent). Returns the delay.
    pub fn failed(&mut self, now: Duration, at_least: Option<Duration>) -> Duration {
        let mut delay = self.backoff.delay(self.attempt, self.jitter.draw());
        if let Some(after) = at_least {
            delay = delay.max(after.min(self.backoff.cap));
        }
        self.attempt = self.attempt.saturating_add(1);
        self.at = Some(now + delay);
        delay
    }

    /// A success, or news that the server answers again: the next try may run at once, and a
    /// later failure backs off from the base again.
    pub fn reset(&mut self) {
        self.attempt = 0;
        self.at = None;
    }
}
