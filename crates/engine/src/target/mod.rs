//! Targets: files oio creates and fills, existing files, block devices.
//!
//! The rules that keep data safe live here: oio writes only to files it created and that did
//! not change since it last closed them (see [`owner`]) unless told `--allow-overwrite`, and a
//! block device that shows any sign of holding data is refused unless told `--destroy-data`.
//! A new file is filled with incompressible bytes under a temporary name of its own (created
//! O_EXCL|O_NOFOLLOW through a directory fd, so nothing already there is ever opened) and
//! put in place with RENAME_NOREPLACE, so reads reach the device (no holes), an interrupted
//! fill leaves nothing behind, and a file that appeared meanwhile is never replaced. A run
//! holds its targets locked ([`lock`]): one writer at a time, readers together.

pub mod blkid;
pub mod facts;
pub mod leftover;
pub mod lock;
pub mod owner;
pub mod safety;
pub mod validate;

use oio_core::result::TargetInfo;
use oio_core::units::format_bytes;
use oio_core::Cancel;
use std::fs::{self, File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use owner::{Ownership, CREATED_XATTR};
pub use validate::{validate, Action, Verdict};

/// How to open a target.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TargetOptions {
    /// The workload writes (a run decides it per target, so a plan records it only if set).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub write: bool,
    /// Bypass the page cache (O_DIRECT).
    pub direct: bool,
    /// Size to create or to use (None: a file's or device's own size; required to create).
    pub size: Option<u64>,
    /// Allow writing to files and devices oio did not create.
    pub allow_overwrite: bool,
    /// Allow writing to block devices that look in use or hold data.
    pub destroy_data: bool,
    /// Seed for the fill pattern of new files (a run derives it per target from its seed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fill_seed: u64,
    /// Wait for another run that holds the target instead of refusing (`--wait`; never taken
    /// from a recorded plan by `oio rerun`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait: bool,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
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
    /// Records what oio left in a file it owns when the target is dropped (after the run).
    _seal: Option<owner::Seal>,
    /// Holds the target's lock ([`lock`]) until after the seal recorded the file.
    _lock: File,
    /// What was found beside it and said in the run's warnings: temporary files of stopped
    /// runs, removed or left ([`leftover`]).
    pub notes: Vec<String>,
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
    /// Another run holds the target (one writer at a time; readers share).
    #[error("{path} is {holder}; oio lets one run write to a target at a time (runs that only read share it): run again when that one ends, or pass --wait to wait for it")]
    InUse {
        /// The target.
        path: PathBuf,
        /// Who holds it, in words ("in use by oio, pid 123 (writing to it)").
        holder: String,
    },
    /// A stop (Ctrl-C, SIGTERM, SIGHUP) came while a new file was being filled.
    #[error("{path}: stopped while filling the new file; its temporary file was removed")]
    Interrupted {
        /// The target.
        path: PathBuf,
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
/// allowed, opens it. `progress(done, total)` is called while filling a new file; a fill
/// stops (and its temporary file is removed) when `cancel` is cancelled.
///
/// In steps: find or create the path, resolve it once ([`resolve`]: an O_PATH descriptor of
/// what the name reaches, through any symlink), check a file (`check_file`: ownership,
/// growing) or a block device (`check_block`: signatures, mounts, holders) through a
/// descriptor opened from that one, then open it for I/O from that one too: a symlink flipped
/// to another file or device meanwhile changes nothing, the device checked is the device
/// written and the one the result names.
pub fn prepare(
    path: &Path,
    role: &str,
    opts: &TargetOptions,
    cancel: &Cancel,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<OpenTarget, TargetError> {
    prepare_with(path, role, opts, cancel, progress, &mut |_| {})
}

/// [`prepare`], telling `waiting` (with `opts.wait`) who holds the target when it has to
/// wait for another run.
pub fn prepare_with(
    path: &Path,
    role: &str,
    opts: &TargetOptions,
    cancel: &Cancel,
    progress: &mut dyn FnMut(u64, u64),
    waiting: &mut dyn FnMut(&str),
) -> Result<OpenTarget, TargetError> {
    // Every refusal first, before anything is created (`oio fleet check` runs the same
    // function alone). An existing target is judged after its lock is taken, in
    // check_file/check_block: another oio run writing it would otherwise look like someone
    // else's change, and a run with --wait would be refused instead of waiting.
    // Leftovers of a stopped run beside a file target go first: removing one frees the
    // space the checks below count.
    let notes = match fs::metadata(path) {
        Ok(md) if md.file_type().is_block_device() => Vec::new(),
        _ if validate::in_dev(path).is_some() => Vec::new(),
        _ => leftover::tidy(path),
    };
    if std::fs::symlink_metadata(path).is_err() {
        validate(path, opts)?;
    }
    let raced = find_or_create(path, opts, cancel, progress)?;
    let resolved = resolve(path)?;
    let mut locking = Locking {
        wait: opts.wait,
        cancel,
        waiting,
    };
    let checked = match resolved.kind {
        Kind::File => check_file(path, opts, &resolved, raced, &mut locking, progress)?,
        Kind::Block(dev) => check_block(path, opts, &resolved, dev, Some(&mut locking))?,
    };

    let filesystem = if checked.kind == "file" {
        facts::filesystem_of(path).map(|(f, _)| f)
    } else {
        None
    };
    let device = facts::device_info(checked.dev);
    let direct_align = device
        .as_ref()
        .and_then(|d| d.logical_block_size)
        .unwrap_or(512);
    let file = open_checked(path, &resolved, opts, filesystem.as_ref())?;

    Ok(OpenTarget {
        file,
        size: checked.size,
        direct_align,
        _seal: checked.seal,
        _lock: checked.lock,
        notes,
        info: TargetInfo {
            path: path.display().to_string(),
            role: role.to_string(),
            kind: checked.kind.to_string(),
            created_by_oio: checked.created,
            size_bytes: checked.size,
            device,
            filesystem,
        },
    })
}

/// How to take a target's lock.
struct Locking<'a> {
    wait: bool,
    cancel: &'a Cancel,
    waiting: &'a mut dyn FnMut(&str),
}

impl Locking<'_> {
    fn acquire(&mut self, f: &File, path: &Path, access: lock::Access) -> Result<(), TargetError> {
        lock::acquire(f, path, access, self.wait, self.cancel, self.waiting)
    }
}

/// Creates and fills the path when it does not exist. True when another process created it
/// while oio was filling its own copy.
fn find_or_create(
    path: &Path,
    opts: &TargetOptions,
    cancel: &Cancel,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<bool, TargetError> {
    match fs::metadata(path) {
        Ok(_) => Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling link in /dev (a /dev/disk/by-id name whose device went away) is a
            // missing device too: never a file filled in memory beside it.
            if let Some(why) = validate::in_dev(path) {
                return Err(TargetError::Invalid {
                    path: path.into(),
                    reason: why,
                });
            }
            let size = opts.size.ok_or_else(|| TargetError::Invalid {
                path: path.into(),
                reason: "does not exist; give --size to let oio create it".into(),
            })?;
            let created = create_new(path, size, opts.fill_seed, cancel, progress)?;
            match fs::metadata(path) {
                Ok(_) => Ok(!created),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(TargetError::Invalid {
                    path: path.into(),
                    reason: "is a symbolic link to a file that does not exist; oio does not create files through symbolic links (name the file itself)".into(),
                }),
                Err(e) => Err(io_err(path, "reading metadata")(e)),
            }
        }
        Err(e) => Err(io_err(path, "reading metadata")(e)),
    }
}

/// A file or device that passed its checks.
struct Checked {
    kind: &'static str,
    /// Bytes to use.
    size: u64,
    /// (major, minor) of the device that holds it, or of the device itself.
    dev: (u32, u32),
    created: bool,
    seal: Option<owner::Seal>,
    /// The descriptor that holds the target's lock.
    lock: File,
}

/// A regular file: oio writes to it only if it created it (or is allowed to), and grows it
/// only if it is oio's.
fn check_file(
    path: &Path,
    opts: &TargetOptions,
    resolved: &Resolved,
    raced: bool,
    locking: &mut Locking<'_>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Checked, TargetError> {
    // Ownership is judged on a descriptor of the resolved file, and the descriptor used for
    // I/O is opened from the same one (open_checked), so a file swapped in meanwhile is not
    // written. The lock comes first: a file another run is writing looks changed, and is not
    // someone else's data.
    let probe = resolved.open(path, false)?;
    let grows = |len: u64| opts.size.is_some_and(|want| want > len);
    let len = probe
        .metadata()
        .map_err(io_err(path, "reading metadata"))?
        .len();
    let access = if opts.write || grows(len) {
        lock::Access::Write
    } else {
        lock::Access::Read
    };
    locking.acquire(&probe, path, access)?;
    let md = probe.metadata().map_err(io_err(path, "reading metadata"))?;
    if access == lock::Access::Read && grows(md.len()) {
        // It shrank while this run waited: growing it needs it alone.
        locking.acquire(&probe, path, lock::Access::Write)?;
    }
    let state = owner::ownership(&probe, &md);
    let ours = matches!(state, Ownership::Ours(_));
    let mut size = md.len();
    validate::file_refusal(path, opts, &state, size, raced)?;
    validate::loop_refusal(path, opts, &md)?;
    if let Some(want) = opts.size {
        if want > size {
            validate::room(path, want - size)?;
            grow(
                path,
                &probe,
                size,
                want,
                opts.fill_seed,
                locking.cancel,
                progress,
            )?;
        }
        size = want;
    }
    let seal = if opts.write {
        // A file that carries oio's mark is oio's again once the user let it be written.
        owner::Seal::new(&probe, &state).map_err(io_err(path, "opening"))?
    } else {
        None
    };
    if size == 0 {
        return Err(TargetError::Invalid {
            path: path.into(),
            reason: "is empty; give --size to use a file oio creates".into(),
        });
    }
    Ok(Checked {
        kind: "file",
        size,
        dev: (rustix::fs::major(md.dev()), rustix::fs::minor(md.dev())),
        created: ours,
        seal,
        lock: probe,
    })
}

/// A block device: written only when it shows no data (or `--destroy-data`) and the user
/// allowed overwriting; `--size` may not exceed it.
fn check_block(
    path: &Path,
    opts: &TargetOptions,
    resolved: &Resolved,
    dev: (u32, u32),
    locking: Option<&mut Locking<'_>>,
) -> Result<Checked, TargetError> {
    let mut probe = resolved.open(path, false)?;
    let access = if opts.write {
        lock::Access::Write
    } else {
        lock::Access::Read
    };
    // Validation alone (`fleet check`, and prepare's first look) takes no lock: a run that
    // waits with --wait must not be refused by its own look ahead.
    if let Some(locking) = locking {
        locking.acquire(&probe, path, access)?;
    }
    let dev_size = probe
        .seek(SeekFrom::End(0))
        .map_err(io_err(path, "finding the device size"))?;
    if opts.write {
        let name = facts::block_name(dev).unwrap_or_default();
        let found = safety::inspect(&probe, &name, dev, dev_size);
        // A name that is not the device's own node (a symlink, /dev/disk/by-id/...) is said
        // with the device it reached, the one checked.
        let reached = if name.is_empty() || path == Path::new("/dev").join(&name) {
            String::new()
        } else {
            format!("it is /dev/{name}; ")
        };
        if !found.findings.is_empty() && !opts.destroy_data {
            return Err(TargetError::Refused {
                path: path.into(),
                reason: format!(
                    "{reached}the device holds data or is in use: {}; pass --destroy-data if you mean to destroy it",
                    found.findings.join("; ")
                ),
            });
        }
        if !opts.allow_overwrite && !opts.destroy_data {
            return Err(TargetError::Refused {
                path: path.into(),
                reason: format!("{reached}writing to a block device destroys its contents; it shows no signature ({} found none), pass --allow-overwrite to write to it", found.checked_by),
            });
        }
    }
    let size = match opts.size {
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
    Ok(Checked {
        kind: "block",
        size,
        dev,
        created: false,
        seal: None,
        lock: probe,
    })
}

/// What a target's name reached when it was looked up, once.
enum Kind {
    File,
    /// A block device, with its (major, minor).
    Block((u32, u32)),
}

/// A target's name resolved once: an O_PATH descriptor (no open of the file itself, so no
/// device driver or FIFO is woken by looking) of what the name reaches through any symlink.
/// Every descriptor the target is checked or written through is opened from it, through
/// /proc/self/fd, and must be the same inode (or device): the name is never looked up again.
pub(crate) struct Resolved {
    fd: std::os::fd::OwnedFd,
    kind: Kind,
    /// (st_dev, st_ino, st_rdev) of what was resolved.
    id: (u64, u64, u64),
}

/// Resolves `path` once ([`Resolved`]): a regular file or a block device, else refused.
pub(crate) fn resolve(path: &Path) -> Result<Resolved, TargetError> {
    use rustix::fs::{Mode, OFlags, CWD};
    let fd = rustix::fs::openat(CWD, path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| io_err(path, "opening")(e.into()))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err(path, "reading metadata")(e.into()))?;
    let ft = rustix::fs::FileType::from_raw_mode(st.st_mode);
    let kind = match ft {
        rustix::fs::FileType::RegularFile => Kind::File,
        rustix::fs::FileType::BlockDevice => {
            Kind::Block((rustix::fs::major(st.st_rdev), rustix::fs::minor(st.st_rdev)))
        }
        _ => {
            return Err(TargetError::Invalid {
                path: path.into(),
                reason: "is neither a regular file nor a block device".into(),
            })
        }
    };
    #[allow(clippy::useless_conversion)] // the stat fields' widths differ between architectures
    let id = (
        u64::from(st.st_dev),
        u64::from(st.st_ino),
        u64::from(st.st_rdev),
    );
    Ok(Resolved { fd, kind, id })
}

impl Resolved {
    /// The resolved file opened for reading (with `direct`: O_DIRECT; `write`: for writing
    /// too), checked to be the very one resolved.
    fn open_with(&self, write: bool, direct: bool) -> std::io::Result<File> {
        use std::os::fd::AsRawFd;
        let mut oo = OpenOptions::new();
        oo.read(true).write(write);
        // O_NONBLOCK: never wait in open (a device that blocks there); cleared below.
        let mut flags = libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK;
        if direct {
            flags |= libc::O_DIRECT;
        }
        oo.custom_flags(flags);
        let f = oo
            .open(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    // The name was resolved; only /proc can be missing.
                    std::io::Error::new(
                        e.kind(),
                        "reopening it through /proc/self/fd failed: is /proc mounted?",
                    )
                } else {
                    e
                }
            })?;
        let fl = rustix::fs::fcntl_getfl(&f)?;
        rustix::fs::fcntl_setfl(&f, fl - rustix::fs::OFlags::NONBLOCK)?;
        let md = f.metadata()?;
        if (md.dev(), md.ino(), md.rdev()) != self.id {
            return Err(std::io::Error::other(
                "the descriptor opened is not the file that was looked up",
            ));
        }
        Ok(f)
    }

    /// The resolved file opened for reading (`write`: and writing), for its checks.
    fn open(&self, path: &Path, write: bool) -> Result<File, TargetError> {
        self.open_with(write, false)
            .map_err(io_err(path, "opening"))
    }
}

/// Opens the checked target for I/O (O_DIRECT unless buffered) from its resolved descriptor:
/// the same file or device that was checked, whatever its name points at now.
fn open_checked(
    path: &Path,
    resolved: &Resolved,
    opts: &TargetOptions,
    filesystem: Option<&oio_core::result::FilesystemInfo>,
) -> Result<File, TargetError> {
    resolved
        .open_with(opts.write, opts.direct)
        .map_err(|e| open_error(path, e, opts.direct, filesystem.map(|f| f.fs_type.as_str())))
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

/// Writes incompressible bytes to `f` from byte `from` to `to`, checking `cancel` between
/// chunks.
fn fill(
    f: &mut File,
    path: &Path,
    from: u64,
    to: u64,
    seed: u64,
    cancel: &Cancel,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), TargetError> {
    f.seek(SeekFrom::Start(from))
        .map_err(io_err(path, "seeking"))?;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut chunk = vec![0u8; 1 << 20];
    let mut done = from;
    while done < to {
        if cancel.is_cancelled() {
            return Err(TargetError::Interrupted { path: path.into() });
        }
        let n = ((to - done) as usize).min(chunk.len());
        rng.fill(&mut chunk[..n]);
        f.write_all(&chunk[..n])
            .map_err(io_err(path, "filling the file"))?;
        done += n as u64;
        progress(done - from, to - from);
    }
    f.sync_data().map_err(io_err(path, "syncing the file"))?;
    // Drop the fill from the page cache so buffered reads start from the device too.
    let _ = rustix::fs::fadvise(&*f, 0, None, rustix::fs::Advice::DontNeed);
    Ok(())
}

/// Creates `path` filled with `size` incompressible bytes: fills a temporary file of its own
/// beside it, marks it as oio's and renames it into place without replacing anything. Returns
/// false when another process put a file there meanwhile (oio's copy is then removed).
fn create_new(
    path: &Path,
    size: u64,
    seed: u64,
    cancel: &Cancel,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<bool, TargetError> {
    let (dir, name) = owner::Dir::of(path).map_err(io_err(path, "opening its directory"))?;
    let (mut f, mut tmp) = dir
        .create_temp(&name)
        .map_err(io_err(path, "creating the temporary file to fill"))?;
    fill(&mut f, path, 0, size, seed, cancel, progress)?;
    owner::record(&f, None).map_err(|e| TargetError::Io {
        path: path.into(),
        what: "marking the file as created by oio (extended attribute user.oio.created)",
        source: e,
    })?;
    // Kept open (and so locked) until placed: a run tidying the directory meanwhile must not
    // take it for a leftover.
    let placed = dir
        .place_new(&mut tmp, &name)
        .map_err(io_err(path, "renaming the filled file into place"))?;
    if placed {
        let _ = rustix::fs::fremovexattr(&f, owner::TEMP_XATTR);
    }
    drop(f);
    Ok(placed)
}

/// Grows a file oio owns from `from` to `to` bytes and records it again.
fn grow(
    path: &Path,
    probe: &File,
    from: u64,
    to: u64,
    seed: u64,
    cancel: &Cancel,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), TargetError> {
    // Read too: recording it samples its contents. Opened from the checked descriptor, so it
    // is the file checked, whatever its name points at now.
    let mut f = {
        use std::os::fd::AsRawFd;
        OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(format!("/proc/self/fd/{}", probe.as_raw_fd()))
            .map_err(io_err(path, "opening the file to grow it"))?
    };
    let (a, b) = (
        f.metadata().map_err(io_err(path, "reading metadata"))?,
        probe.metadata().map_err(io_err(path, "reading metadata"))?,
    );
    if (a.dev(), a.ino()) != (b.dev(), b.ino()) {
        return Err(TargetError::Invalid {
            path: path.into(),
            reason: "was replaced by another file while oio was opening it; run again".into(),
        });
    }
    let filled = fill(&mut f, path, from, to, seed, cancel, progress);
    if filled.is_err() {
        // A grow that failed (ENOSPC, a stop) gives back what it added: a filesystem is never
        // left full by a file oio could not finish.
        let _ = f.set_len(from);
    }
    // What oio wrote is oio's, whole or interrupted.
    let id = owner::read_record(&f).map(|r| r.id);
    owner::record(&f, id).map_err(|e| TargetError::Io {
        path: path.into(),
        what: "recording the file's state (extended attribute user.oio.created)",
        source: e,
    })?;
    filled
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
            wait: false,
        }
    }

    #[test]
    fn creates_a_filled_marked_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let t = prepare(
            &p,
            "",
            &opts(true, Some(3 << 20)),
            &Cancel::new(),
            &mut |_, _| {},
        )
        .unwrap();
        assert!(t.info.created_by_oio);
        assert_eq!(t.size, 3 << 20);
        let data = fs::read(&p).unwrap();
        assert_eq!(data.len(), 3 << 20);
        // Incompressible, never holes: no 4 KiB block is all zeros.
        assert!(data.chunks(4096).all(|c| c.iter().any(|&b| b != 0)));
        assert!(!dir.path().join("t.oio-tmp").exists());
        // Another run cannot have it while this one does.
        let e = prepare(&p, "", &opts(false, None), &Cancel::new(), &mut |_, _| {}).unwrap_err();
        assert!(matches!(e, TargetError::InUse { .. }), "{e}");
        drop(t);
        // Reusing our own file for writes needs no flag.
        prepare(&p, "", &opts(true, None), &Cancel::new(), &mut |_, _| {}).unwrap();
    }

    #[test]
    fn refuses_to_write_to_a_file_it_did_not_create() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("precious");
        fs::write(&p, vec![7u8; 65536]).unwrap();
        let e = prepare(&p, "", &opts(true, None), &Cancel::new(), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("--allow-overwrite"), "{e}");
        // Reading is always allowed, and the data is untouched.
        prepare(&p, "", &opts(false, None), &Cancel::new(), &mut |_, _| {}).unwrap();
        let mut o = opts(true, None);
        o.allow_overwrite = true;
        prepare(&p, "", &o, &Cancel::new(), &mut |_, _| {}).unwrap();
        assert_eq!(fs::read(&p).unwrap(), vec![7u8; 65536]);
        // Not grown without being ours.
        let e = prepare(
            &p,
            "",
            &opts(false, Some(1 << 20)),
            &Cancel::new(),
            &mut |_, _| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("does not grow"), "{e}");
    }

    fn no_stop() -> Cancel {
        Cancel::new()
    }

    #[test]
    fn a_stop_during_the_fill_removes_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let stop = Cancel::new();
        let e = prepare(&p, "", &opts(true, Some(8 << 20)), &stop, &mut |done, _| {
            if done >= 2 << 20 {
                stop.cancel();
            }
        })
        .unwrap_err();
        assert!(matches!(e, TargetError::Interrupted { .. }), "{e}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "nothing left");
    }

    #[test]
    fn two_creators_of_one_file_each_fill_their_own_and_the_loser_says_so() {
        // The winner is oio too (another run creates the file while this one fills): the
        // loser uses the winner's file.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        let mut won = false;
        let t = prepare(
            &p,
            "",
            &opts(true, Some(2 << 20)),
            &no_stop(),
            &mut |_, _| {
                if !won {
                    won = true;
                    prepare(
                        &p,
                        "",
                        &opts(true, Some(2 << 20)),
                        &no_stop(),
                        &mut |_, _| {},
                    )
                    .unwrap();
                }
            },
        )
        .unwrap();
        assert!(t.info.created_by_oio);
        drop(t);
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file"
        );

        // The winner is someone else: refused, their file untouched, nothing left behind.
        let p = dir.path().join("u");
        let e = prepare(
            &p,
            "",
            &opts(true, Some(2 << 20)),
            &no_stop(),
            &mut |_, _| {
                if !p.exists() {
                    fs::write(&p, vec![7u8; 2 << 20]).unwrap();
                }
            },
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("another process created it while oio was filling its own copy")
                && msg.contains("--allow-overwrite"),
            "{msg}"
        );
        assert_eq!(fs::read(&p).unwrap(), vec![7u8; 2 << 20]);
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temporary file"
        );
    }

    #[test]
    fn a_grown_file_stays_oios() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        drop(
            prepare(
                &p,
                "",
                &opts(true, Some(1 << 20)),
                &no_stop(),
                &mut |_, _| {},
            )
            .unwrap(),
        );
        let t = prepare(
            &p,
            "",
            &opts(true, Some(3 << 20)),
            &no_stop(),
            &mut |_, _| {},
        )
        .unwrap();
        assert!(t.info.created_by_oio);
        drop(t);
        assert_eq!(fs::metadata(&p).unwrap().len(), 3 << 20);
        drop(prepare(&p, "", &opts(true, None), &no_stop(), &mut |_, _| {}).unwrap());
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
            &Cancel::new(),
            &mut |_, _| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("--size"), "{e}");
    }
}
