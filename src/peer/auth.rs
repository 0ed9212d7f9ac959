//! The peer protocol's authentication: the shared key, nonces, and the two canonical strings
//! the HMAC-SHA256 signatures are computed over (one for a question, one for its answer).
//!
//! Both ends hold the same key (a file distributed like the kubeconfig). A question is signed
//! over its method, path, timestamp, nonce and the SHA-256 of its body; the answer is signed over
//! the question's nonce, its own timestamp and the SHA-256 of its body, so an answer recorded
//! from one question cannot be replayed to a later one.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::rand::SecureRandom;
use ring::{digest, hmac};

/// Header carrying the signer's wall clock, in unix seconds.
pub const TIMESTAMP_HEADER: &str = "x-nodewarden-timestamp";
/// Header carrying the question's nonce: 16 random bytes, 32 lowercase hex digits.
pub const NONCE_HEADER: &str = "x-nodewarden-nonce";
/// Header carrying the hex HMAC-SHA256 of the canonical string.
pub const SIGNATURE_HEADER: &str = "x-nodewarden-signature";

/// The only method and path of the protocol (part of the signed string).
pub const METHOD: &str = "POST";
pub const PATH: &str = "/v1/contact";

/// How far a signed timestamp may be from our clock, either way. Two nodes' clocks are only
/// compared here, to bound how long a recorded message stays usable; NTP keeps them far closer.
pub const MAX_SKEW: Duration = Duration::from_secs(30);

/// The fewest key bytes accepted: HMAC-SHA256's own output size (RFC 2104 §3: shorter keys
/// weaken it).
pub const MIN_KEY_BYTES: usize = 32;

/// Bytes of randomness in a nonce.
const NONCE_BYTES: usize = 16;

/// The shared HMAC-SHA256 key. Its `Debug` shows no key bytes.
pub struct Key {
    hmac: hmac::Key,
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(HMAC-SHA256, redacted)")
    }
}

/// Why the key file cannot be used. Never carries key bytes.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("peer key file {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error(
        "peer key file {}: {len} bytes of key (one trailing newline not counted); at least {MIN_KEY_BYTES} are needed",
        path.display()
    )]
    TooShort { path: PathBuf, len: usize },
}

/// A secret shorter than [`MIN_KEY_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("peer key of {0} bytes; at least {MIN_KEY_BYTES} are needed")]
pub struct TooShort(pub usize);

impl Key {
    /// A key from its secret bytes, at least [`MIN_KEY_BYTES`] of them.
    pub fn new(secret: &[u8]) -> Result<Key, TooShort> {
        if secret.len() < MIN_KEY_BYTES {
            return Err(TooShort(secret.len()));
        }
        Ok(Key {
            hmac: hmac::Key::new(hmac::HMAC_SHA256, secret),
        })
    }

    /// Reads the key file (bounded). One trailing "\n" or "\r\n" is removed, because editors
    /// and `echo` add one; anything else, other whitespace included, is part of the key.
    pub fn load(path: &Path) -> Result<Key, KeyError> {
        let bytes =
            crate::bounded::read(path, crate::bounded::KEY).map_err(|source| KeyError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        let secret = strip_one_newline(&bytes);
        Key::new(secret).map_err(|TooShort(len)| KeyError::TooShort {
            path: path.to_path_buf(),
            len,
        })
    }

    /// The hex HMAC of `message`.
    pub fn sign(&self, message: &[u8]) -> String {
        hex(hmac::sign(&self.hmac, message).as_ref())
    }

    /// Whether `signature` (hex) is the HMAC of `message`, compared in constant time.
    pub fn verify(&self, message: &[u8], signature: &str) -> bool {
        let mut tag = [0u8; 32];
        unhex_into(signature, &mut tag) && hmac::verify(&self.hmac, message, &tag).is_ok()
    }
}

fn strip_one_newline(bytes: &[u8]) -> &[u8] {
    bytes
        .strip_suffix(b"\r\n")
        .or_else(|| bytes.strip_suffix(b"\n"))
        .unwrap_or(bytes)
}

/// The string a question is signed over.
pub fn question_message(timestamp: u64, nonce: &str, body: &[u8]) -> String {
    format!(
        "nodewarden-v1\n{METHOD}\n{PATH}\n{timestamp}\n{nonce}\n{}",
        body_digest(body)
    )
}

/// The string an answer is signed over: bound to the question's nonce.
pub fn answer_message(question_nonce: &str, timestamp: u64, body: &[u8]) -> String {
    format!(
        "nodewarden-v1\nanswer\n{question_nonce}\n{timestamp}\n{}",
        body_digest(body)
    )
}

/// Hex SHA-256 of a body.
pub fn body_digest(body: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, body).as_ref())
}

/// The system random generator failed (no `getrandom`, no `/dev/urandom`).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the system random number generator failed")]
pub struct NoRandom;

/// A fresh nonce: 16 bytes from the system's CSPRNG, as 32 hex digits.
pub fn nonce() -> Result<String, NoRandom> {
    let mut bytes = [0u8; NONCE_BYTES];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| NoRandom)?;
    Ok(hex(&bytes))
}

/// A nonce as it travels: exactly 32 lowercase hex digits, decoded.
pub fn parse_nonce(text: &str) -> Option<[u8; NONCE_BYTES]> {
    let mut bytes = [0u8; NONCE_BYTES];
    unhex_into(text, &mut bytes).then_some(bytes)
}

/// A timestamp header: unix seconds, digits only.
pub fn parse_timestamp(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Our wall clock in unix seconds (0 before 1970, which no signer's clock is near).
pub fn unix_now(now: SystemTime) -> u64 {
    now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Whether a signed timestamp is within [`MAX_SKEW`] of `now` (both unix seconds).
pub fn is_fresh(timestamp: u64, now: u64) -> bool {
    timestamp.abs_diff(now) <= MAX_SKEW.as_secs()
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// Decodes exactly `out.len()` bytes of lowercase hex; false on any other input.
fn unhex_into(text: &str, out: &mut [u8]) -> bool {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let text = text.as_bytes();
    if text.len() != out.len() * 2 {
        return false;
    }
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        match (digit(pair[0]), digit(pair[1])) {
            (Some(hi), Some(lo)) => *byte = hi << 4 | lo,
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn write(dir: &tempfile::TempDir, content: &[u8]) -> PathBuf {
        let path = dir.path().join("peer.key");
        std::fs::write(&path, content).expect("write key");
        path
    }

    #[test]
    fn one_trailing_newline_is_not_part_of_the_key() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = Key::new(SECRET).expect("key");
        let msg = b"message";
        for content in [
            SECRET.to_vec(),
            [SECRET, b"\n"].concat(),
            [SECRET, b"\r\n"].concat(),
        ] {
            let key = Key::load(&write(&dir, &content)).expect("load");
            assert!(key.verify(msg, &plain.sign(msg)), "{content:?}");
        }
        // A second newline is part of the key: a different key.
        let key = Key::load(&write(&dir, &[SECRET, b"\n\n"].concat())).expect("load");
        assert!(!key.verify(msg, &plain.sign(msg)));
    }

    #[test]
    fn a_short_key_is_refused_naming_the_file_and_never_its_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 31 bytes after the newline is stripped: one short.
        let path = write(&dir, b"s3cr3t-s3cr3t-s3cr3t-s3cr3t-abc\n");
        let e = Key::load(&path).expect_err("too short");
        let msg = e.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("31 bytes"), "{msg}");
        assert!(!msg.contains("s3cr3t"), "{msg}");
        assert!(!format!("{e:?}").contains("s3cr3t"));
    }

    #[test]
    fn a_missing_or_endless_key_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("absent.key");
        let e = Key::load(&missing).expect_err("missing");
        assert!(e.to_string().contains("absent.key"), "{e}");
        let e = Key::load(Path::new("/dev/zero")).expect_err("endless");
        assert!(e.to_string().contains("/dev/zero"), "{e}");
    }

    #[test]
    fn the_key_debug_shows_no_bytes() {
        let key = Key::new(b"abcdefghijklmnopqrstuvwxyz0123456789").expect("key");
        assert!(!format!("{key:?}").contains("abcdef"));
    }

    #[test]
    fn a_signature_verifies_only_for_its_message_and_key() {
        let key = Key::new(SECRET).expect("key");
        let other = Key::new(b"another key of at least thirty-two bytes").expect("key");
        let sig = key.sign(b"m");
        assert_eq!(sig.len(), 64);
        assert!(key.verify(b"m", &sig));
        assert!(!key.verify(b"n", &sig));
        assert!(!other.verify(b"m", &sig));
        assert!(!key.verify(b"m", &sig.to_uppercase()));
        assert!(!key.verify(b"m", &sig[..62]));
        assert!(!key.verify(b"m", ""));
    }

    #[test]
    fn the_canonical_strings_follow_the_protocol() {
        let body = b"{}";
        let d = body_digest(body);
        assert_eq!(
            d,
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(
            question_message(1700000000, "00ff", body),
            format!("nodewarden-v1\nPOST\n/v1/contact\n1700000000\n00ff\n{d}")
        );
        assert_eq!(
            answer_message("00ff", 1700000001, body),
            format!("nodewarden-v1\nanswer\n00ff\n1700000001\n{d}")
        );
    }

    #[test]
    fn nonces_are_32_hex_digits_and_differ() {
        let a = nonce().expect("nonce");
        let b = nonce().expect("nonce");
        assert_eq!(a.len(), 32);
        assert!(parse_nonce(&a).is_some());
        assert_ne!(a, b);
        assert!(parse_nonce("xyz").is_none());
        assert!(parse_nonce(&"A".repeat(32)).is_none(), "lowercase only");
        assert!(parse_nonce(&"a".repeat(34)).is_none());
    }

    #[test]
    fn freshness_is_thirty_seconds_either_way() {
        assert!(is_fresh(1000, 1030));
        assert!(is_fresh(1030, 1000));
        assert!(!is_fresh(1000, 1031));
        assert!(!is_fresh(1031, 1000));
        assert_eq!(parse_timestamp("1700000000"), Some(1700000000));
        assert_eq!(parse_timestamp("-1"), None);
        assert_eq!(parse_timestamp("+1"), None);
        assert_eq!(parse_timestamp(""), None);
        assert_eq!(parse_timestamp("99999999999999999999999"), None);
    }
}
