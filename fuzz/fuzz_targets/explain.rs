//! `nodewarden explain`'s object reader (`src/cli/explain.rs`): a Node and a Pod as YAML or JSON.
//! The input is the node's text, a NUL byte, then the pod's text. Invariants: no panic; a
//! rejection names at least one object; an accepted pair renders as text and as JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodewarden::cli::explain::{ExplainError, explain_str, render_text};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (node, pod) = text.split_once('\0').unwrap_or((text, ""));
    match explain_str(node, pod, "node.yaml", "pod.yaml") {
        Ok(report) => {
            let _ = render_text(&report);
            serde_json_roundtrip(&report);
        }
        Err(ExplainError::Rejected(errors)) => {
            assert!(!errors.is_empty(), "rejected with no error");
            for error in &errors {
                assert!(!error.to_string().is_empty(), "an empty error message");
            }
        }
        Err(other) => panic!("explain_str does no I/O, yet: {other}"),
    }
});

fn serde_json_roundtrip(report: &nodewarden::cli::explain::ExplainReport) {
    // The `--output json` form: serialising a report must not fail.
    serde_json::to_string(report).expect("a report serialises as JSON");
}
