//! Kubernetes quantities (`src/core/quantity.rs`): parsing never panics, and an accepted
//! quantity's canonical form (its `Display`) parses back to the same value, as in Kubernetes.
#![no_main]

use std::str::FromStr;

use libfuzzer_sys::fuzz_target;
use nodewarden::core::quantity::Quantity;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(quantity) = Quantity::from_str(text) else {
        return;
    };
    let canonical = quantity.to_string();
    let back = Quantity::from_str(&canonical)
        .unwrap_or_else(|e| panic!("{text:?} printed as {canonical:?}, which does not parse: {e}"));
    assert_eq!(
        back, quantity,
        "{text:?} printed as {canonical:?}, which parses to another value"
    );
    // The text itself need not be a fixed point, as in Kubernetes: "62.5Ki" prints as "64000"
    // (binary, but not a whole number of Ki), which parses as decimal and prints as "64k".
    // Whole-unit value and arithmetic saturate or wrap by design, never panic.
    let _ = (quantity.value(), quantity.plus(back).minus(quantity));
});
