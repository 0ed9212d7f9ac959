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
