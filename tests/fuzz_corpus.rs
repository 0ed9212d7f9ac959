//! The fuzz corpus (`fuzz/corpus`) replayed in the normal suite, on stable Rust: every kept input
//! of the pure parsers' targets goes through the same checks as in its fuzz target, so an
//! input that once found new code paths keeps guarding them without nightly or cargo-fuzz.
//! Plus property tests of the duration syntax, whose fuzz target asserts the same round trip.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nodewarden::core::quantity::Quantity;
use nodewarden::core::threshold::{DurationError, MAX_DURATION, format_duration, parse_duration};
use nodewarden::peer::auth;
use nodewarden::peer::{Answer, Question};
use proptest::prelude::*;

/// Every input of one target's kept corpus; fails when the corpus is missing or nearly empty,
/// so a moved directory cannot make these tests pass vacuously.
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("corpus entry").path();
            let bytes = std::fs::read(&path).expect("read a corpus file");
            (path, bytes)
        })
        .collect();
    inputs.sort();
    assert!(
        inputs.len() >= 10,
        "{}: only {} inputs",
        dir.display(),
        inputs.len()
    );
    inputs
}

/// Runs `check` on every input of `target`, bounded in time (the whole corpus takes well under
/// a second; a parser that went quadratic would show here).
fn replay(target: &str, check: impl Fn(&Path, &[u8])) {
    let started = Instant::now();
    for (path, bytes) in corpus(target) {
        check(&path, &bytes);
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{target}: replay still running after 60 s, at {}",
            path.display()
        );
    }
}

#[test]
fn the_config_corpus_loads_or_fails_with_errors() {
    replay("config", |path, bytes| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        match nodewarden::config::from_str_with_warnings(text, None) {
            Ok(loaded) => {
                let _ = nodewarden::config::effective_text(&loaded.config);
            }
            Err(errors) => assert!(
                !errors.0.is_empty(),
                "{}: Err with no error",
                path.display()
            ),
        }
    });
}

#[test]
fn the_quantity_corpus_prints_values_that_parse_back() {
    replay("quantity", |path, bytes| {
        let Ok(quantity) = String::from_utf8_lossy(bytes).parse::<Quantity>() else {
            return;
        };
        let printed = quantity.to_string();
        assert_eq!(
            printed.parse::<Quantity>().ok(),
            Some(quantity),
            "{}: printed as {printed:?}",
            path.display()
        );
    });
}

#[test]
fn the_duration_corpus_prints_durations_that_parse_back() {
    replay("duration", |path, bytes| {
        let Ok(duration) = parse_duration(&String::from_utf8_lossy(bytes)) else {
            return;
        };
        let printed = format_duration(duration);
        assert_eq!(
            parse_duration(&printed),
            Ok(duration),
            "{}: printed as {printed:?}",
            path.display()
        );
    });
}

#[test]
fn the_explain_corpus_reports_or_names_what_it_rejects() {
    replay("explain", |path, bytes| {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        let (node, pod) = text.split_once('\0').unwrap_or((text, ""));
        match nodewarden::cli::explain::explain_str(node, pod, "node.yaml", "pod.yaml") {
            Ok(report) => {
                let _ = nodewarden::cli::explain::render_text(&report);
            }
            Err(error) => assert!(!error.to_string().is_empty(), "{}", path.display()),
        }
    });
}

#[test]
fn the_peer_corpus_round_trips_bodies_and_nonces() {
    replay("peer", |path, bytes| {
        if let Ok(question) = serde_json::from_slice::<Question>(bytes) {
            let again = serde_json::to_vec(&question).expect("serialise");
            assert_eq!(
                serde_json::from_slice::<Question>(&again).ok(),
                Some(question)
            );
        }
        if let Ok(answer) = serde_json::from_slice::<Answer>(bytes) {
            let again = serde_json::to_vec(&answer).expect("serialise");
            assert_eq!(
                serde_json::from_slice::<Answer>(&again).ok(),
                Some(answer.clone())
            );
            let _ = nodewarden::core::quorum::PeerReport::try_from(answer);
        }
        let text = String::from_utf8_lossy(bytes);
        if let Some(nonce) = auth::parse_nonce(&text) {
            assert_eq!(auth::hex(&nonce), text, "{}", path.display());
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_duration_prints_as_text_that_parses_back(nanos in 0u64..=(i64::MAX as u64)) {
        // Every duration a Kubernetes configuration can hold (Go's int64 nanoseconds).
        let duration = Duration::from_nanos(nanos);
        let printed = format_duration(duration);
        prop_assert_eq!(parse_duration(&printed), Ok(duration), "printed as {:?}", printed);
    }

    #[test]
    fn a_longer_duration_prints_as_text_that_is_refused(beyond in 1u64..(1 << 40)) {
        let duration = MAX_DURATION + Duration::from_nanos(beyond);
        let printed = format_duration(duration);
        prop_assert_eq!(
            parse_duration(&printed),
            Err(DurationError::TooLong(printed.clone())),
            "printed as {:?}", printed
        );
    }

    #[test]
    fn duration_parsing_never_panics(text in "[-+. 0-9a-zµ]{0,24}") {
        let _ = parse_duration(&text);
    }
}
