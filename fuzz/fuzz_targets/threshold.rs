//! The four `eviction*` maps and `psiThresholds` (`src/core/threshold.rs`). The input is one
//! entry per line, `<map letter> <key>=<value>`: `h` evictionHard, `s` evictionSoft, `g`
//! evictionSoftGracePeriod, `r` evictionMinimumReclaim, `p` psiThresholds (value a number). The
//! first byte's low bits set `hard_set` and `merge_defaults`. Parsing never panics, every
//! accepted threshold prints (`Display`) as text that parses back to the same value, and a
//! percentage resolves within the capacity.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodewarden::core::threshold::{
    EvictionInput, ThresholdValue, parse_psi_thresholds, parse_thresholds,
};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let mut input = EvictionInput {
        hard_set: flags & 1 != 0,
        merge_defaults: flags & 2 != 0,
        ..EvictionInput::default()
    };
    let mut psi = Vec::new();
    for line in text.lines() {
        let Some((map, entry)) = line.split_once(' ') else {
            continue;
        };
        let (key, value) = entry.split_once('=').unwrap_or((entry, ""));
        let pair = (key.to_string(), value.to_string());
        match map {
            "h" => input.hard.push(pair),
            "s" => input.soft.push(pair),
            "g" => input.soft_grace_period.push(pair),
            "r" => input.minimum_reclaim.push(pair),
            "p" => psi.push((pair.0, value.parse::<f64>().unwrap_or(f64::NAN))),
            _ => {}
        }
    }
    if let Ok(parsed) = parse_thresholds(&input) {
        for threshold in &parsed.thresholds {
            for value in std::iter::once(&threshold.value).chain(&threshold.min_reclaim) {
                check_value(value);
            }
        }
    }
    let _ = parse_psi_thresholds(&psi);
});

fn check_value(value: &ThresholdValue) {
    let printed = value.to_string();
    match value {
        ThresholdValue::Percentage(fraction) => {
            assert!(
                (0.0..=1.0).contains(fraction),
                "fraction {fraction} out of [0, 1]"
            );
            for capacity in [0, 1, 1 << 40, i64::MAX] {
                let resolved = value.resolve(capacity);
                assert!(
                    (0..=capacity).contains(&resolved),
                    "{printed} of {capacity} resolved to {resolved}"
                );
            }
        }
        ThresholdValue::Quantity(quantity) => {
            let back: nodewarden::core::quantity::Quantity = printed
                .parse()
                .unwrap_or_else(|e| panic!("threshold printed as {printed:?} does not parse: {e}"));
            assert_eq!(&back, quantity, "threshold printed as {printed:?}");
        }
    }
}
