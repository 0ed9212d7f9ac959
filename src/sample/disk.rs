//! `nodefs.*` and `imagefs.*` (docs/semantics.md §7.1): bytes and inodes of a filesystem, by
//! `statvfs(2)` on a path inside it.
//!
//! - bytes available = `f_bavail × f_frsize` (what an unprivileged writer can use, as `df`
//!   reports), capacity = `f_blocks × f_frsize`;
//! - inodes free = `f_ffree`, capacity = `f_files`.
//!
//! nodefs and imagefs are each read even when they are the same path or filesystem: the kubelet
//! reports both signals then too, and thresholds may differ.

use std::path::Path;

use nix::sys::statvfs::statvfs;

use super::SampleError;
use super::Unobserved;
use super::text::to_i64;
use crate::core::signal::{Observation, Signal};

/// One filesystem's two signals; either may have failed independently.
pub(super) struct FsReading {
    pub(super) bytes: Result<Observation, SampleError>,
    pub(super) inodes: Result<Observation, SampleError>,
}

/// `statvfs` values are `fsblkcnt_t`/`c_ulong` (both `u64` on 64-bit Linux, narrower on some
/// 32-bit targets); widening through `Into` is lossless everywhere.
pub(super) fn wide<T: Into<u64>>(value: T) -> u64 {
    value.into()
}

/// Reads the bytes and inode signals of the filesystem holding `path`.
pub(super) fn read(path: &Path, bytes_signal: Signal, inodes_signal: Signal) -> FsReading {
    let bytes_what = Unobserved::Signal(bytes_signal);
    let inodes_what = Unobserved::Signal(inodes_signal);
    let stat = match statvfs(path) {
        Ok(stat) => stat,
        // Both signals are lost; report each so the caller can log per signal.
        Err(errno) => {
            let failed = |what| SampleError::Statvfs {
                what,
                path: path.to_path_buf(),
                source: errno,
            };
            return FsReading {
                bytes: Err(failed(bytes_what)),
                inodes: Err(failed(inodes_what)),
            };
        }
    };

    let fragment = wide(stat.fragment_size());
    let bytes = (|| {
        let available = wide(stat.blocks_available())
            .checked_mul(fragment)
            .ok_or("f_bavail × f_frsize overflows")?;
        let capacity = wide(stat.blocks())
            .checked_mul(fragment)
            .ok_or("f_blocks × f_frsize overflows")?;
        Ok::<_, String>(Observation {
            available: to_i64(available, "available bytes")?,
            capacity: to_i64(capacity, "capacity bytes")?,
        })
    })()
    .map_err(|problem| SampleError::malformed(bytes_what, path, problem));

    let total_inodes = wide(stat.files());
    let inodes = if total_inodes == 0 {
        Err(SampleError::NoInodes {
            what: inodes_what,
            path: path.to_path_buf(),
        })
    } else {
        (|| {
            Ok::<_, String>(Observation {
                available: to_i64(wide(stat.files_free()), "free inodes")?,
                capacity: to_i64(total_inodes, "total inodes")?,
            })
        })()
        .map_err(|problem| SampleError::malformed(inodes_what, path, problem))
    };

    FsReading { bytes, inodes }
}
