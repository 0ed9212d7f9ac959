//! Reading a whole file with a size limit. Every file the agent reads from the kernel (`/proc`,
//! `/sys`, the cgroup tree), the configuration, an `explain` input and the state directory goes
//! through here, because a path that is not what it should be — a wrong `procPath`, a symlink
//! to `/dev/zero` or `/dev/urandom`, a FIFO — must end in a clear error, never in a process that
//! grows to gigabytes or blocks for ever.
//!
//! A file longer than its [`Limit`] is an error of kind [`io::ErrorKind::FileTooLarge`] naming
//! the limit, never a silent truncation: half a `meminfo` or half a state file would be believed.
//! Callers wrap the `io::Error` in their own error, which names the path.
//!
//! Also the one cap on how much of any outside text an error or a log record keeps ([`excerpt`]).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The most a kind of file may hold. Each limit is far above anything real of its kind and far
/// below what would hurt a node (the buffer holding it briefly reaches twice the limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// Bytes allowed; one more is an error.
    pub bytes: u64,
    /// What the limit is for, in the error message.
    pub kind: &'static str,
}

/// A kernel text file with a fixed shape: `meminfo` (~1.5 KiB), `memory.stat` (~2 KiB), a PSI
/// file (~150 B), `pid_max`, `loadavg`, `/proc/<pid>/cgroup`, `/proc/self/stat{,us}`. None comes
/// near 64 KiB; 1 MiB leaves room for kernels that add fields for decades.
pub const KERNEL_TEXT: Limit = Limit {
    bytes: 1 << 20,
    kind: "a kernel text file",
};

/// A kernel file that grows with the node's load: `/proc/self/mountinfo` (~150 B per mount) and
/// `cgroup.procs` (≤ 8 B per PID). 16 MiB is ~100,000 mounts or 2 million PIDs in one pod — more
/// than `pid_max` allows a node in practice.
pub const KERNEL_LIST: Limit = Limit {
    bytes: 16 << 20,
    kind: "a kernel list file (mountinfo, cgroup.procs)",
};

/// The configuration file: a hand-written TOML document of a few KiB. 4 MiB is a thousand times
/// the largest plausible one.
pub const CONFIG: Limit = Limit {
    bytes: 4 << 20,
    kind: "a configuration file",
};

/// A Node or Pod read by `explain`. The API server stores no object over etcd's request limit
/// (1.5 MiB by default); 16 MiB leaves room for YAML's verbosity and `managedFields`.
pub const OBJECT: Limit = Limit {
    bytes: 16 << 20,
    kind: "a Kubernetes object file",
};

/// `state.json`: about 1 KiB per pod, so 64 MiB is tens of thousands of pods, far beyond the
/// pods one node runs. The agent reads it once at start; `status` once per call.
pub const STATE: Limit = Limit {
    bytes: 64 << 20,
    kind: "a state file",
};

/// The `last-contact` file: one RFC 3339 line and the writer's scale, about 90 bytes, and while
/// an answer is overdue a second line of about 20 (`state::CONTACT_FILE`).
pub const CONTACT: Limit = Limit {
    bytes: 4 << 10,
    kind: "a last-contact file",
};

/// The peer key file: a shared secret of 32 bytes or a few more (hex or base64 text of one).
/// 4 KiB is a hundred times any sensible key.
pub const KEY: Limit = Limit {
    bytes: 4 << 10,
    kind: "a key file",
};

/// The error inside the `io::Error` when a file is longer than its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "longer than {} bytes, the limit for {} (is the path right? a device such as /dev/zero never ends)",
    .0.bytes,
    .0.kind
)]
pub struct TooLong(pub Limit);

fn too_long(limit: Limit) -> io::Error {
    io::Error::new(io::ErrorKind::FileTooLarge, TooLong(limit))
}

/// Opens `path` for reading without blocking: `open(2)` of a FIFO would otherwise wait for a
/// writer for ever. On regular, procfs, sysfs and cgroupfs files `O_NONBLOCK` changes nothing.
fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
}

/// Reads all of `path` into `buf` (cleared first; its capacity is reused, so a caller reading
/// the same small files again and again allocates nothing). Kernel files report size 0, so this
/// reads to end of file rather than trusting the length. On error `buf` is left empty.
pub fn read_into(buf: &mut Vec<u8>, path: &Path, limit: Limit) -> io::Result<()> {
    buf.clear();
    // One byte past the limit tells "exactly at the limit" from "longer".
    let result =
        open(path).and_then(|file| file.take(limit.bytes.saturating_add(1)).read_to_end(buf));
    match result {
        Ok(_) if buf.len() as u64 > limit.bytes => {
            buf.clear();
            Err(too_long(limit))
        }
        Ok(_) => Ok(()),
        Err(e) => {
            buf.clear();
            Err(e)
        }
    }
}

/// Reads the first `head.len()` bytes of `path` (fewer if the file is shorter) and returns how
/// many were read.
pub fn read_head(path: &Path, head: &mut [u8]) -> io::Result<usize> {
    let mut file = open(path)?;
    let mut len = 0;
    // A short read is not the end of the file: read until the head is full or EOF.
    while len < head.len() {
        match file.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(len)
}

/// Reads all of `path`, at most `limit` bytes.
pub fn read(path: &Path, limit: Limit) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    read_into(&mut buf, path, limit)?;
    Ok(buf)
}

/// Reads all of `path` as UTF-8 text, at most `limit` bytes. Invalid UTF-8 is an error of kind
/// [`io::ErrorKind::InvalidData`], as with [`std::fs::read_to_string`].
pub fn read_to_string(path: &Path, limit: Limit) -> io::Result<String> {
    String::from_utf8(read(path, limit)?).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            NotUtf8(e.utf8_error().valid_up_to()),
        )
    })
}

/// Reads standard input to its end as UTF-8 text, at most `limit` bytes (`explain --pod -`).
pub fn read_stdin_to_string(limit: Limit) -> io::Result<String> {
    let mut buf = Vec::new();
    io::stdin()
        .lock()
        .take(limit.bytes.saturating_add(1))
        .read_to_end(&mut buf)?;
    if buf.len() as u64 > limit.bytes {
        return Err(too_long(limit));
    }
    String::from_utf8(buf).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            NotUtf8(e.utf8_error().valid_up_to()),
        )
    })
}

/// Where the first byte that is not UTF-8 is.
#[derive(Debug)]
struct NotUtf8(usize);

impl fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not UTF-8 text (invalid byte at offset {})", self.0)
    }
}

impl std::error::Error for NotUtf8 {}

/// How much of a text from outside the process (a server's answer, a file) an error or a log
/// record keeps: enough to recognise it, never a whole body (a wrong server answering megabytes
/// would otherwise land in every log record).
pub const MAX_DETAIL: usize = 200;

/// The first [`MAX_DETAIL`] bytes of `text` (cut at a character boundary), followed by
/// `… (N bytes)` when something was cut.
pub fn excerpt(text: &str) -> String {
    if text.len() <= MAX_DETAIL {
        return text.to_string();
    }
    let mut end = MAX_DETAIL;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: Limit = Limit {
        bytes: 8,
        kind: "a test file",
    };

    #[test]
    fn a_file_exactly_at_the_limit_is_read_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345678").expect("write");
        assert_eq!(read(&path, TINY).expect("read"), b"12345678");
    }

    #[test]
    fn one_byte_over_the_limit_is_an_error_naming_the_limit_not_a_truncation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        std::fs::write(&path, b"123456789").expect("write");
        let mut buf = b"old".to_vec();
        let e = read_into(&mut buf, &path, TINY).expect_err("too long");
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        let msg = e.to_string();
        assert!(
            msg.contains("8 bytes") && msg.contains("a test file"),
            "{msg}"
        );
        assert!(buf.is_empty(), "nothing half-read is handed back");
    }

    #[test]
    fn a_device_that_never_ends_stops_at_the_limit() {
        let mut buf = Vec::new();
        let e = read_into(&mut buf, Path::new("/dev/zero"), KERNEL_TEXT).expect_err("endless");
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        // The buffer grew to hold one limit's worth at most (Vec doubling: under 2×).
        assert!(
            buf.capacity() as u64 <= 2 * (KERNEL_TEXT.bytes + 1),
            "{}",
            buf.capacity()
        );
    }

    #[test]
    fn a_fifo_without_a_writer_does_not_block() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("fifo");
        nix::unistd::mkfifo(
            &path,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .expect("mkfifo");
        // Returns at once (end of file: no writer), where a blocking open would wait for ever.
        assert_eq!(read(&path, TINY).expect("read"), b"");
    }

    #[test]
    fn the_buffer_is_reused_for_small_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        std::fs::write(&path, b"1234").expect("write");
        let mut buf = Vec::with_capacity(64);
        let before = buf.as_ptr();
        for _ in 0..3 {
            read_into(&mut buf, &path, TINY).expect("read");
            assert_eq!(buf, b"1234");
        }
        assert_eq!(buf.as_ptr(), before, "no reallocation");
    }

    #[test]
    fn the_head_is_at_most_the_buffer_and_at_most_the_file() {
        let mut head = [0u8; 4];
        assert_eq!(
            read_head(Path::new("/dev/zero"), &mut head).expect("read"),
            4
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        std::fs::write(&path, b"ab").expect("write");
        assert_eq!(read_head(&path, &mut head).expect("read"), 2);
        assert_eq!(&head[..2], b"ab");
    }

    #[test]
    fn invalid_utf8_is_invalid_data_with_its_offset() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        std::fs::write(&path, b"ab\xffcd").expect("write");
        let e = read_to_string(&path, TINY).expect_err("not UTF-8");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("offset 2"), "{e}");
    }
}
