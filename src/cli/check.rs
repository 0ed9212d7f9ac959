//! What `check-config` prints after the configuration's own text (`config::effective_text`):
//! each threshold written as a percentage of capacity, resolved against this machine's capacity
//! as the kubelet resolves it (docs/semantics.md §7.4), or `unknown` where the signal cannot be
//! read here. Formatting only.

use std::fmt::Write;

use crate::agent::Reading;
use crate::config::Config;
use crate::core::threshold::ThresholdValue;

use crate::core::units;

/// The percentage thresholds of `config` against `reading`; empty when there are none.
pub fn resolved_text(config: &Config, reading: &Reading) -> String {
    let mut out = String::new();
    let percentages = config
        .thresholds
        .iter()
        .filter(|t| matches!(t.value, ThresholdValue::Percentage(_)));
    for t in percentages {
        if out.is_empty() {
            let _ = writeln!(out, "percentages of capacity on this machine:");
        }
        let kind = if t.soft { "soft" } else { "hard" };
        let _ = write!(out, "  {kind} {} < {} = ", t.signal, t.value);
        match reading.observations.eviction.get(&t.signal) {
            Some(o) => {
                let amount = |v| units::signal_amount(t.signal, v);
                let _ = writeln!(
                    out,
                    "{} of {}",
                    amount(t.value.resolve(o.capacity)),
                    amount(o.capacity)
                );
            }
            None => {
                let _ = writeln!(out, "unknown ({} cannot be read here)", t.signal);
            }
        }
    }
    out
}
