//! The peer protocol's parsing (`src/peer`): the question and answer bodies (JSON), the nonce
//! and timestamp headers, and signature checking on arbitrary bytes. Invariants: no panic; a
//! nonce or timestamp that parses prints back as the same text (the wire form is canonical,
//! so two spellings of one nonce cannot dodge the replay cache); a body that parses
//! re-serialises to a body that parses to the same value; a forged signature never verifies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nodewarden::peer::auth::{self, Key};
use nodewarden::peer::{Answer, Question};

fuzz_target!(|data: &[u8]| {
    if let Ok(question) = serde_json::from_slice::<Question>(data) {
        let again = serde_json::to_vec(&question).expect("a question serialises");
        assert_eq!(
            serde_json::from_slice::<Question>(&again).ok(),
            Some(question)
        );
    }
    if let Ok(answer) = serde_json::from_slice::<Answer>(data) {
        let again = serde_json::to_vec(&answer).expect("an answer serialises");
        assert_eq!(
            serde_json::from_slice::<Answer>(&again).ok(),
            Some(answer.clone())
        );
        // Its times, checked as the asker checks them: an error, never a panic.
        let _ = nodewarden::core::quorum::PeerReport::try_from(answer);
    }

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(nonce) = auth::parse_nonce(text) {
        assert_eq!(auth::hex(&nonce), text, "a nonce has one spelling");
    }
    if let Some(timestamp) = auth::parse_timestamp(text) {
        // Leading zeros are the only other spelling: digits only, no sign, no spaces.
        let digits = text.trim_start_matches('0');
        let digits = if digits.is_empty() { "0" } else { digits };
        assert_eq!(timestamp.to_string(), digits);
        let _ = auth::is_fresh(timestamp, auth::unix_now(std::time::SystemTime::now()));
    }
    // The header values as the server splits them: a signature over a message built from the
    // fuzzed text must not verify under a key that never signed it.
    let key = Key::new(&[7u8; 32]).expect("a 32-byte key is long enough");
    let (timestamp, rest) = text.split_once('\n').unwrap_or((text, ""));
    let (nonce, signature) = rest.split_once('\n').unwrap_or((rest, ""));
    let message = auth::question_message(
        auth::parse_timestamp(timestamp).unwrap_or(0),
        nonce,
        signature.as_bytes(),
    );
    assert!(
        !key.verify(message.as_bytes(), signature),
        "a fuzzed signature verified"
    );
    let real = key.sign(message.as_bytes());
    assert!(key.verify(message.as_bytes(), &real));
});
