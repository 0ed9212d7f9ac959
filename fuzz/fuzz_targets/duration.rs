//! The configuration's duration syntax (`parse_duration` / `format_duration` in
//! `src/core/threshold.rs`): parsing never panics, and an accepted duration's compact form
//! parses back to exactly the same duration.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodewarden::core::threshold::{format_duration, parse_duration};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(duration) = parse_duration(text) else {
        return;
    };
    let printed = format_duration(duration);
    let back = parse_duration(&printed)
        .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
    assert_eq!(back, duration, "{text:?} printed as {printed:?}");
});
