//! Targets: files oio creates and fills, existing files, block devices.
//!
//! The rules that keep data safe live here: oio writes only to files it created (marked with
//! the extended attribute `user.oio.created`) unless told `--allow-overwrite`, and a block
//! device that shows any sign of holding data is refused unless told `--destroy-data`.
//! A new file is filled with incompressible bytes under a temporary name and renamed into
//! place, so reads reach the device (no holes) and an interrupted fill leaves nothing behind.

pub mod blkid;
pub mod facts;
pub mod safety;

use oio_core::result::TargetInfo;
use oio_core::units::format_bytes;
use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Extended attribute that marks files oio created.
pub const CREATED_XATTR: &str = "user.oio.created";

/// How to open a target.
#[derive(Clone, Debug)]
pub struct TargetOptions {
    /// The workload writes.
    pub write: bool,
    /// Bypass the page cache (O_DIRECT).
    pub direct: bool,
    /// Size to create or to use (None: a file's or device's own size; required to create).
    pub size: Option<u64>,
    /// Allow writing to files and devices oio did not create.
    pub allow_overwrite: bool,
    /// Allow writing to block devices that look in use or hold data.
    pub destroy_data: bool,
    /// Seed for the fill pattern of new files.
    pub fill_seed: u64,
}

/// A target ready for I/O.
#[derive(Debug)]
pub struct OpenTarget {
    /// The open file (O_DIRECT if asked).
    pub file: File,
    /// Bytes usable for I/O.
    pub size: u64,
    /// Facts for the result file.
    pub info: TargetInfo,
    /// Offset and size alignment O_DIRECT needs, bytes.
    pub direct_align: u64,
}

/// Why a target could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Writing was refused to protect data.
    #[error("refusing to write to {path}: {reason}")]
    Refused {
        /// The target.
        path: PathBuf,
        /// What was found and which flag overrides it.
        reason: String,
    },
    /// The filesystem does not support O_DIRECT.
    #[error("{path}: the {fs} filesystem refuses O_DIRECT (direct I/O); run with --buffered to go through the page cache")]
    DirectUnsupported {
        /// The target.
        path: PathBuf,
        /// Filesystem type.
        fs: String,
    },
    /// The target cannot be used as given.
    #[error("{path}: {reason}")]
    Invalid {
        /// The target.
        path: PathBuf,
        /// What is wrong and what would work.
        reason: String,
    },
    /// A system call failed.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The target.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

fn io_err<'a>(
    path: &'a Path,
    what: &'static str,
) -> impl FnOnce(std::io::Error) -> TargetError + 'a {
    move |source| TargetError::Io {
        path: path.to_path_buf(),
        what,
        source,
    }
}

/// Prepares a target: creates and fills it if it does not exist, checks that writing is
/// allowed, opens it. `progress(done, total)` is called while filling a new file.
pub fn prepare(
    path: &Path,
    role: &str,
    opts: &TargetOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<OpenTarget, TargetError> {
    let mut created = false;
    let md = match fs::metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let size = opts.size.ok_or_else(|| TargetError::Invalid {
                path: path.into(),
                reason: "does not exist; give --size to let oio create it".into(),
            })?;
            create_filled(path, 0, size, opts.fill_seed, progress)?;
            created = true;
            fs::metadata(path).map_err(io_err(path, "reading metadata"))?
        }
        Err(e) => return Err(io_err(path, "reading metadata")(e)),
    };

    let ft = md.file_type();
    let (kind, size, dev) = if ft.is_file() {
        let ours = created || is_marked(path);
        let mut size = md.len();
        if let Some(want) = opts.size {
            if want > size {
                if !ours {
                    return Err(TargetError::Invalid {
                        path: path.into(),
                        reason: format!(
                            "is {} but --size asks for {}; oio does not grow files it did not create",
                            format_bytes(size as f64),
                            format_bytes(want as f64)
                        ),
                    });
                }
                create_filled(path, size, want, opts.fill_seed, progress)?;
            }
            size = want;
        }
        if opts.write && !ours && !opts.allow_overwrite {
            return Err(TargetError::Refused {
                path: path.into(),
                reason: "oio did not create this file and the workload writes; pass --allow-overwrite to let oio overwrite its contents".into(),
            });
        }
        created = ours;
        (
            "file",
            size,
            (rustix::fs::major(md.dev()), rustix::fs::minor(md.dev())),
        )
    } else if ft.is_block_device() {
        let dev = (rustix::fs::major(md.rdev()), rustix::fs::minor(md.rdev()));
        ("block", 0, dev)
    } else {
        return Err(TargetError::Invalid {
            path: path.into(),
            reason: "is neither a regular file nor a block device".into(),
        });
    };
    if kind == "file" && size == 0 {
        return Err(TargetError::Invalid {
            path: path.into(),
            reason: "is empty; give --size to use a file oio creates".into(),
        });
    }

    let mut size = size;
    if kind == "block" {
        let mut probe = File::open(path).map_err(io_err(path, "opening"))?;
        let dev_size = probe
            .seek(SeekFrom::End(0))
            .map_err(io_err(path, "finding the device size"))?;
        if opts.write {
            let name = facts::block_name(dev).unwrap_or_default();
            let found = safety::inspect(&probe, path, &name, dev, dev_size);
            if !found.findings.is_empty() && !opts.destroy_data {
                return Err(TargetError::Refused {
                    path: path.into(),
                    reason: format!(
                        "the device holds data or is in use: {}; pass --destroy-data if you mean to destroy it",
                        found.findings.join("; ")
                    ),
                });
            }
            if !opts.allow_overwrite && !opts.destroy_data {
                return Err(TargetError::Refused {
                    path: path.into(),
                    reason: format!("writing to a block device destroys its contents; it shows no signature ({} found none), pass --allow-overwrite to write to it", found.checked_by),
                });
            }
        }
        size = match opts.size {
            Some(s) if s <= dev_size => s,
            Some(s) => {
                return Err(TargetError::Invalid {
                    path: path.into(),
                    reason: format!(
                        "--size {} is larger than the device ({})",
                        format_bytes(s as f64),
                        format_bytes(dev_size as f64)
                    ),
                })
            }
            None => dev_size,
        };
    }

    let filesystem = if kind == "file" {
        facts::filesystem_of(path).map(|(f, _)| f)
    } else {
        None
    };
    let device = facts::device_info(dev);
    let direct_align = device
        .as_ref()
        .and_then(|d| d.logical_block_size)
        .unwrap_or(512);

    let mut oo = OpenOptions::new();
    oo.read(true).write(opts.write);
    if opts.direct {
        oo.custom_flags(libc::O_DIRECT);
    }
    let file = oo.open(path).map_err(|e| {
        open_error(
            path,
            e,
            opts.direct,
            filesystem.as_ref().map(|f| f.fs_type.as_str()),
        )
    })?;

    Ok(OpenTarget {
        file,
        size,
        direct_align,
        info: TargetInfo {
            path: path.display().to_string(),
            role: role.to_string(),
            kind: kind.to_string(),
            created_by_oio: created,
            size_bytes: size,
            device,
            filesystem,
        },
    })
}

/// Turns a failed open into an error that says what to do: EINVAL with O_DIRECT means the
/// filesystem refuses direct I/O (tmpfs before Linux 6.6, some FUSE filesystems).
fn open_error(path: &Path, e: std::io::Error, direct: bool, fs: Option<&str>) -> TargetError {
    if direct && e.raw_os_error() == Some(libc::EINVAL) {
        TargetError::DirectUnsupported {
            path: path.into(),
            fs: fs.unwrap_or("target's").to_string(),
        }
    } else {
        io_err(path, "opening")(e)
    }
}

fn is_marked(path: &Path) -> bool {
    let mut buf = [0u8; 8];
    rustix::fs::getxattr(path, CREATED_XATTR, &mut buf[..]).is_ok()
}

/// Writes incompressible bytes from `from` to `to`. A new file is filled under a temporary
/// name and renamed into place when complete.
fn create_filled(
    path: &Path,
    from: u64,
    to: u64,
    seed: u64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), TargetError> {
    let fresh = from == 0;
    let tmp = if fresh {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".oio-tmp");
        path.with_file_name(name)
    } else {
        path.to_path_buf()
    };
    let mut f = if fresh {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(io_err(path, "creating the file"))?
    } else {
        OpenOptions::new()
            .write(true)
            .open(&tmp)
            .map_err(io_err(path, "opening the file to grow it"))?
    };
    let cleanup = |e: TargetError| {
        if fresh {
            let _ = fs::remove_file(&tmp);
        }
        e
    };
    if fresh {
        rustix::fs::fsetxattr(&f, CREATED_XATTR, b"1", rustix::fs::XattrFlags::empty()).map_err(
            |e| {
                cleanup(TargetError::Io {
                    path: path.into(),
                    what:
                        "marking the file as created by oio (extended attribute user.oio.created)",
                    source: e.into(),
                })
            },
        )?;
    }
    f.seek(SeekFrom::Start(from))
        .map_err(|e| cleanup(io_err(path, "seeking")(e)))?;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut chunk = vec![0u8; 1 << 20];
    let mut done = from;
    while done < to {
        let n = ((to - done) as usize).min(chunk.len());
        rng.fill(&mut chunk[..n]);
        f.write_all(&chunk[..n])
            .map_err(|e| cleanup(io_err(path, "filling the file")(e)))?;
        done += n as u64;
        progress(done - from, to - from);
    }
    f.sync_data()
        .map_err(|e| cleanup(io_err(path, "syncing the file")(e)))?;
    // Drop the fill from the page cache so buffered reads start from the device too.
    let _ = rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed);
    drop(f);
    if fresh {
        fs::rename(&tmp, path).map_err(|e| cleanup(io_err(path, "renaming the filled file")(e)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(write: bool, size: Option<u64>) -> TargetOptions {
        TargetOptions {
            write,
            direct: false,
            size,
            allow_overwrite: false,
            destroy_data: false,
            fill_seed: 1,
        }
    }

    #[test]
    fn creates_a_filled_marked_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let t = prepare(&p, "", &opts(true, Some(3 << 20)), &mut |_, _| {}).unwrap();
        assert!(t.info.created_by_oio);
        assert_eq!(t.size, 3 << 20);
        let data = fs::read(&p).unwrap();
        assert_eq!(data.len(), 3 << 20);
        // Incompressible, never holes: no 4 KiB block is all zeros.
        assert!(data.chunks(4096).all(|c| c.iter().any(|&b| b != 0)));
        assert!(!dir.path().join("t.oio-tmp").exists());
        // Reusing our own file for writes needs no flag.
        prepare(&p, "", &opts(true, None), &mut |_, _| {}).unwrap();
    }

    #[test]
    fn refuses_to_write_to_a_file_it_did_not_create() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("precious");
        fs::write(&p, vec![7u8; 65536]).unwrap();
        let e = prepare(&p, "", &opts(true, None), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("--allow-overwrite"), "{e}");
        // Reading is always allowed, and the data is untouched.
        prepare(&p, "", &opts(false, None), &mut |_, _| {}).unwrap();
        let mut o = opts(true, None);
        o.allow_overwrite = true;
        prepare(&p, "", &o, &mut |_, _| {}).unwrap();
        assert_eq!(fs::read(&p).unwrap(), vec![7u8; 65536]);
        // Not grown without being ours.
        let e = prepare(&p, "", &opts(false, Some(1 << 20)), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("does not grow"), "{e}");
    }

    #[test]
    fn o_direct_refusal_suggests_buffered() {
        let e = open_error(
            Path::new("/dev/shm/x"),
            std::io::Error::from_raw_os_error(libc::EINVAL),
            true,
            Some("tmpfs"),
        );
        let msg = e.to_string();
        assert!(msg.contains("tmpfs") && msg.contains("--buffered"), "{msg}");
        let e = open_error(
            Path::new("/x"),
            std::io::Error::from_raw_os_error(libc::EINVAL),
            false,
            Some("tmpfs"),
        );
        assert!(!e.to_string().contains("--buffered"));
    }

    #[test]
    fn a_missing_file_needs_a_size() {
        let dir = tempfile::tempdir().unwrap();
        let e = prepare(
            &dir.path().join("nope"),
            "",
            &opts(false, None),
            &mut |_, _| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("--size"), "{e}");
    }
}
