//! The one way oio opens a file someone else made: a result sent for `rerun`, an inventory, a
//! workload, a trace, a telemetry capture, a job file.
//!
//! Such a path may name anything: a FIFO (opening it would wait for a writer forever), a device
//! (`/dev/zero` never ends, and its reported length is 0, so a cap taken from `metadata().len()`
//! holds nothing back), a file in `/proc` or `/sys` (`/proc/kmsg` blocks; sizes read 0 there
//! too), a link to any of these. [`open`] opens without blocking, then checks what was opened
//! (not the path, which may change in between): a regular file on a real filesystem, else a
//! typed refusal naming the file and what it is. [`read_bytes`] and [`read_text`] bound what
//! they keep by the bytes actually read.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// It could not be opened or read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A FIFO, device, socket or directory where a file was expected.
    #[error("'{file}' is {what}, not a regular file: expected {expected}")]
    NotRegular {
        /// The file.
        file: String,
        /// What it is ("a FIFO", "a character device", ...).
        what: &'static str,
        /// What the reader expected there.
        expected: String,
    },
    /// A file of a kernel pseudo-filesystem, whose reads may block or never end.
    #[error("'{file}' is on {fs}, whose files are the kernel's live state, not input: expected {expected}")]
    Pseudo {
        /// The file.
        file: String,
        /// The filesystem ("procfs", "sysfs", ...).
        fs: &'static str,
        /// What the reader expected there.
        expected: String,
    },
    /// More bytes than the reader keeps.
    #[error(
        "'{file}' holds more than {limit} bytes, more than any {expected} (read stopped there)"
    )]
    TooLarge {
        /// The file.
        file: String,
        /// The most bytes kept.
        limit: u64,
        /// What the reader expected there.
        expected: String,
    },
    /// Not UTF-8 text.
    #[error("'{file}' is not UTF-8 text (byte {offset}): expected {expected}")]
    NotText {
        /// The file.
        file: String,
        /// Offset of the first byte that is not UTF-8.
        offset: usize,
        /// What the reader expected there.
        expected: String,
    },
}

impl InputError {
    /// The file the error is about.
    pub fn file(&self) -> &str {
        match self {
            InputError::Io { file, .. }
            | InputError::NotRegular { file, .. }
            | InputError::Pseudo { file, .. }
            | InputError::TooLarge { file, .. }
            | InputError::NotText { file, .. } => file,
        }
    }
}

/// Opens `path` for reading if it is a regular file on a real filesystem; `expected` says what
/// the caller reads there ("an oio result", "an inventory (TOML)"), for the refusal. Links are
/// followed (a user's link to their own file is fine); what they lead to is checked through
/// the opened descriptor.
pub fn open(path: &Path, expected: &str) -> Result<File, InputError> {
    let file = path.display().to_string();
    let io = |source| InputError::Io {
        file: file.clone(),
        source,
    };
    // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting; on a
    // regular file the flag changes nothing.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(io)?;
    let kind = f.metadata().map_err(io)?.file_type();
    let what = if kind.is_file() {
        None
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_dir() {
        Some("a directory")
    } else {
        Some("not a file")
    };
    if let Some(what) = what {
        return Err(InputError::NotRegular {
            file,
            what,
            expected: expected.into(),
        });
    }
    if let Some(fs) = pseudo_filesystem(&f) {
        return Err(InputError::Pseudo {
            file,
            fs,
            expected: expected.into(),
        });
    }
    Ok(f)
}

/// The pseudo-filesystem `f` is on, if it is on one.
fn pseudo_filesystem(f: &File) -> Option<&'static str> {
    let magic = rustix::fs::fstatfs(f).ok()?.f_type as i64;
    // Magic numbers from the kernel's include/uapi/linux/magic.h.
    Some(match magic {
        0x9fa0 => "procfs",
        0x6265_6572 => "sysfs",
        0x6462_6720 => "debugfs",
        0x7472_6163 => "tracefs",
        0x7363_6673 => "securityfs",
        0x6265_6570 => "configfs",
        0x0027_e0eb => "cgroupfs",
        0x6367_7270 => "cgroup2fs",
        0xcafe_4a11 => "bpffs",
        0x6e73_6673 => "nsfs",
        0xde5e_81e4 => "efivarfs",
        _ => return None,
    })
}

/// The bytes of the input file `path`, at most `limit` (counted as read, so a file that grows
/// or lies about its length cannot pass more).
pub fn read_bytes(path: &Path, limit: u64, expected: &str) -> Result<Vec<u8>, InputError> {
    let f = open(path, expected)?;
    read_open(f, path, limit, expected)
}

/// Reads the already [`open`]ed `f` whole, at most `limit` bytes.
pub fn read_open(f: File, path: &Path, limit: u64, expected: &str) -> Result<Vec<u8>, InputError> {
    let file = path.display().to_string();
    // Reserve what the file says it holds, up to the limit: a length of 0 or a lie costs
    // nothing beyond growing the buffer as bytes arrive.
    let hint = f.metadata().map(|m| m.len()).unwrap_or(0).min(limit);
    let mut bytes = Vec::with_capacity(hint as usize);
    f.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| InputError::Io {
            file: file.clone(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            file,
            limit,
            expected: expected.into(),
        });
    }
    Ok(bytes)
}

/// The text of the input file `path` (UTF-8), at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64, expected: &str) -> Result<String, InputError> {
    let bytes = read_bytes(path, limit, expected)?;
    String::from_utf8(bytes).map_err(|e| InputError::NotText {
        file: path.display().to_string(),
        offset: e.utf8_error().valid_up_to(),
        expected: expected.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_kernel_files_are_refused_without_blocking() {
        let d = std::env::temp_dir().join(format!("oio-input-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let fifo = d.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        // No writer: a blocking open would wait here forever.
        let e = read_text(&fifo, 1 << 20, "an inventory").unwrap_err();
        assert!(
            matches!(e, InputError::NotRegular { what: "a FIFO", .. }),
            "{e}"
        );
        assert!(e.to_string().contains("expected an inventory"), "{e}");

        let e = read_bytes(Path::new("/dev/zero"), 1 << 20, "an oio result").unwrap_err();
        assert!(
            matches!(
                e,
                InputError::NotRegular {
                    what: "a character device",
                    ..
                }
            ),
            "{e}"
        );
        let e = read_bytes(Path::new("/proc/self/status"), 1 << 20, "x").unwrap_err();
        assert!(matches!(e, InputError::Pseudo { fs: "procfs", .. }), "{e}");

        // A link to a device is judged by what it leads to.
        let link = d.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(matches!(
            read_bytes(&link, 10, "x").unwrap_err(),
            InputError::NotRegular { .. }
        ));
        let e = read_bytes(&d, 10, "x").unwrap_err();
        assert!(
            matches!(
                e,
                InputError::NotRegular {
                    what: "a directory",
                    ..
                }
            ),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_limit_counts_bytes_read() {
        let d = std::env::temp_dir().join(format!("oio-input-lim-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_bytes(&p, 10, "x").unwrap(), b"0123456789");
        let e = read_bytes(&p, 9, "a workload").unwrap_err();
        assert!(matches!(e, InputError::TooLarge { limit: 9, .. }), "{e}");
        std::fs::write(&p, [b'a', 0xff, b'b']).unwrap();
        let e = read_text(&p, 10, "x").unwrap_err();
        assert!(matches!(e, InputError::NotText { offset: 1, .. }), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
