//! What [`prepare`](super::prepare) would do with a target, and whether it may, changing
//! nothing: the checks `prepare` makes before it creates or grows anything, shared with
//! `oio fleet check` so a check passes exactly the targets a run accepts.
//!
//! Creating or growing a file also needs room: oio leaves at least 1 % of the filesystem (at
//! most 1 GiB) free, so a full filesystem never hurts what else lives on it.

use super::{check_block, io_err, owner, Ownership, TargetError, TargetOptions};
use oio_core::units::format_bytes;
use std::fs;
use std::path::{Path, PathBuf};

/// What `prepare` would do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Create and fill a new file of this many bytes.
    Create(u64),
    /// Grow a file oio owns from `.0` to `.1` bytes.
    Grow(u64, u64),
    /// Use it as it is.
    Use,
}

/// A target that `prepare` would accept.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// "file" or "block".
    pub kind: &'static str,
    /// What `prepare` would do first.
    pub action: Action,
    /// Bytes the run would use.
    pub size: u64,
    /// A file oio created (and that did not change since).
    pub created_by_oio: bool,
}

/// Most bytes oio leaves free on a filesystem it creates or grows a file on.
const RESERVE_MAX: u64 = 1 << 30;

/// Pseudo filesystems that hold no files oio could create (by their statfs magic).
const PSEUDO: &[(i64, &str)] = &[
    (0x9fa0, "proc"),
    (0x6265_6572, "sysfs"),
    (0x1cd1, "devpts"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x7363_6673, "securityfs"),
    (0x6265_6570, "configfs"),
    (0xcafe_4a11, "bpf"),
    (0x6165_676c, "pstore"),
    (0xde5e_81e4, "efivarfs"),
    (0x6573_5543, "fusectl"),
    (0x4249_4e4d, "binfmt_misc"),
];

/// Checks `path` as `prepare` would with `opts`, creating, growing, writing or sealing
/// nothing: what would be done, or the refusal `prepare` would give.
pub fn validate(path: &Path, opts: &TargetOptions) -> Result<Verdict, TargetError> {
    match fs::metadata(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return creatable(path, opts),
        Err(e) => return Err(io_err(path, "reading metadata")(e)),
    };
    let resolved = super::resolve(path)?;
    if let super::Kind::Block(dev) = resolved.kind {
        let c = check_block(path, opts, &resolved, dev, None)?;
        Ok(Verdict {
            kind: "block",
            action: Action::Use,
            size: c.size,
            created_by_oio: false,
        })
    } else {
        let probe = resolved.open(path, false)?;
        let md = probe.metadata().map_err(io_err(path, "reading metadata"))?;
        let state = owner::ownership(&probe, &md);
        file_refusal(path, opts, &state, md.len(), false)?;
        loop_refusal(path, opts, &md)?;
        let want = opts.size.unwrap_or(md.len());
        if want == 0 {
            return Err(empty(path));
        }
        let action = if want > md.len() {
            room(path, want - md.len())?;
            Action::Grow(md.len(), want)
        } else {
            Action::Use
        };
        Ok(Verdict {
            kind: "file",
            action,
            size: want,
            created_by_oio: matches!(state, Ownership::Ours(_)),
        })
    }
}

/// A path that does not exist: `prepare` would create it, given a size, a directory it can
/// create files in, and room.
fn creatable(path: &Path, opts: &TargetOptions) -> Result<Verdict, TargetError> {
    if let Some(why) = in_dev(path) {
        return Err(TargetError::Invalid {
            path: path.into(),
            reason: why,
        });
    }
    let size = opts.size.ok_or_else(|| TargetError::Invalid {
        path: path.into(),
        reason: "does not exist; give --size to let oio create it".into(),
    })?;
    if fs::symlink_metadata(path).is_ok() {
        return Err(TargetError::Invalid {
            path: path.into(),
            reason: "is a symbolic link to a file that does not exist; oio does not create files through symbolic links (name the file itself)".into(),
        });
    }
    // The directory as `prepare` opens it.
    owner::Dir::of(path).map_err(io_err(path, "opening its directory"))?;
    let dir = directory_of(path);
    let sfs =
        rustix::fs::statfs(&dir).map_err(|e| io_err(path, "reading its filesystem")(e.into()))?;
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between architectures
    let magic = sfs.f_type as i64;
    if let Some((_, name)) = PSEUDO.iter().find(|(m, _)| *m == magic) {
        return Err(TargetError::Invalid {
            path: path.into(),
            reason: format!(
                "its directory is on a {name} filesystem, which holds no files oio can create; name a file on a real filesystem"
            ),
        });
    }
    let vfs =
        rustix::fs::statvfs(&dir).map_err(|e| io_err(path, "reading its filesystem")(e.into()))?;
    if vfs.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY) {
        return Err(TargetError::Invalid {
            path: path.into(),
            reason: "its filesystem is mounted read-only; oio cannot create the file there".into(),
        });
    }
    if let Err(e) = rustix::fs::access(&dir, rustix::fs::Access::WRITE_OK) {
        return Err(TargetError::Invalid {
            path: path.into(),
            reason: format!(
                "oio cannot create files in its directory {} ({})",
                dir.display(),
                std::io::Error::from(e)
            ),
        });
    }
    room(path, size)?;
    Ok(Verdict {
        kind: "file",
        action: Action::Create(size),
        size,
        created_by_oio: true,
    })
}

/// Why no file may be created at `path` when its directory is /dev (devtmpfs, or whatever is
/// mounted at /dev): a missing name there is a device that is not there (`/dev/sdc1` before
/// its partition table is read), and a file made there would pass for it and fill memory.
/// /dev/shm and other filesystems mounted below /dev are left to the usual rules.
pub(super) fn in_dev(path: &Path) -> Option<String> {
    let dir = fs::canonicalize(directory_of(path)).ok()?;
    let fs = super::facts::mounts()
        .into_iter()
        .filter(|m| dir.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.as_os_str().len());
    let devfs = match &fs {
        Some(m) => m.fs_type == "devtmpfs" || m.mount_point == Path::new("/dev"),
        None => dir.starts_with("/dev"),
    };
    devfs.then(|| {
        "no such device (it does not exist; oio never creates files in /dev, where a missing name is a device that is not there): name an existing block device, or a file on a real filesystem".to_string()
    })
}

/// The directory a new file at `path` goes in.
fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Refuses adding `bytes` to a file at `path` unless its filesystem keeps its reserve free
/// after them.
pub(super) fn room(path: &Path, bytes: u64) -> Result<(), TargetError> {
    let dir = if path.exists() {
        path.to_path_buf()
    } else {
        directory_of(path)
    };
    let vfs =
        rustix::fs::statvfs(&dir).map_err(|e| io_err(path, "reading its filesystem")(e.into()))?;
    let unit = vfs.f_frsize.max(1);
    let free = vfs.f_bavail.saturating_mul(unit);
    let reserve = (vfs.f_blocks.saturating_mul(unit) / 100).min(RESERVE_MAX);
    if bytes.saturating_add(reserve) > free {
        return Err(TargetError::Invalid {
            path: path.into(),
            reason: format!(
                "needs {} more but its filesystem has {} free, and oio leaves {} of it free (1 %, at most 1 GiB) so a full filesystem hurts nothing else; give a smaller --size or free some space",
                format_bytes(bytes as f64),
                format_bytes(free as f64),
                format_bytes(reserve as f64)
            ),
        });
    }
    Ok(())
}

/// A file that backs a loop device is that device's contents: writing (or growing) it is
/// refused as writing the device would be, unless `--destroy-data`, naming the loop and who
/// uses it (mounted at..., swap, held by...). `--allow-overwrite` is not enough: it lets oio
/// overwrite a file, and this file is a disk.
pub(super) fn loop_refusal(
    path: &Path,
    opts: &TargetOptions,
    md: &fs::Metadata,
) -> Result<(), TargetError> {
    let grows = opts.size.is_some_and(|want| want > md.len());
    if !(opts.write || grows) || opts.destroy_data {
        return Ok(());
    }
    let loops = super::safety::loops_backed_by(md);
    if loops.is_empty() {
        return Ok(());
    }
    let each: Vec<String> = loops
        .iter()
        .map(|l| {
            if l.users.is_empty() {
                format!("/dev/{} (not mounted or held now)", l.name)
            } else {
                format!("/dev/{} ({})", l.name, l.users.join("; "))
            }
        })
        .collect();
    Err(TargetError::Refused {
        path: path.into(),
        reason: format!(
            "it is the backing file of loop device {}: writing it writes that device; detach the loop first (umount, losetup -d) or pass --destroy-data if you mean to destroy what it holds",
            each.join(" and ")
        ),
    })
}

fn empty(path: &Path) -> TargetError {
    TargetError::Invalid {
        path: path.into(),
        reason: "is empty; give --size to use a file oio creates".into(),
    }
}

/// The refusals of an existing file, in `prepare`'s order: growing a file oio does not own,
/// then writing to one without `--allow-overwrite`. `raced`: another process created it
/// while oio was filling its own copy.
pub(super) fn file_refusal(
    path: &Path,
    opts: &TargetOptions,
    state: &Ownership,
    len: u64,
    raced: bool,
) -> Result<(), TargetError> {
    let ours = matches!(state, Ownership::Ours(_));
    let raced_note = |reason: String| {
        if raced {
            format!("another process created it while oio was filling its own copy (another oio run on the same path?); oio removed its copy: {reason}")
        } else {
            reason
        }
    };
    if let Some(want) = opts.size {
        if want > len && !ours {
            return Err(TargetError::Invalid {
                path: path.into(),
                reason: raced_note(format!(
                    "{} {} but --size asks for {}; oio does not grow files it did not create{}",
                    if raced { "it is" } else { "is" },
                    format_bytes(len as f64),
                    format_bytes(want as f64),
                    match state {
                        Ownership::Changed { .. } | Ownership::Unknown(_) => {
                            format!(" or that changed since ({})", state.describe())
                        }
                        _ => String::new(),
                    }
                )),
            });
        }
    }
    if opts.write && !ours && !opts.allow_overwrite {
        return Err(TargetError::Refused {
            path: path.into(),
            reason: raced_note(state.refusal()),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{create_new, grow, prepare};
    use super::*;
    use oio_core::Cancel;
    use std::fs::File;
    use std::os::unix::fs::MetadataExt;
    use std::time::Duration;

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

    /// `validate` refuses with the very words `prepare` uses, and passes what it accepts.
    fn same_refusal(p: &Path, o: &TargetOptions) -> String {
        let v = validate(p, o).unwrap_err().to_string();
        let r = prepare(p, "", o, &Cancel::new(), &mut |_, _| {})
            .unwrap_err()
            .to_string();
        assert_eq!(v, r);
        v
    }

    #[test]
    fn a_check_changes_nothing_and_refuses_what_prepare_refuses() {
        let dir = tempfile::tempdir().unwrap();
        // A missing directory, a pseudo filesystem, a missing size.
        let e = same_refusal(
            &dir.path().join("no/such/dir/t"),
            &opts(true, Some(1 << 20)),
        );
        assert!(e.contains("opening its directory"), "{e}");
        let e = same_refusal(Path::new("/proc/oio.dat"), &opts(true, Some(1 << 20)));
        assert!(e.contains("on a proc filesystem"), "{e}");
        let e = same_refusal(&dir.path().join("t"), &opts(true, None));
        assert!(e.contains("give --size"), "{e}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        // A new file: would be created, is not.
        let p = dir.path().join("t");
        let v = validate(&p, &opts(true, Some(1 << 20))).unwrap();
        assert_eq!(v.action, Action::Create(1 << 20));
        assert!(!p.exists());
        // oio's own file, smaller than asked: would be grown, is not.
        drop(
            prepare(
                &p,
                "",
                &opts(true, Some(1 << 20)),
                &Cancel::new(),
                &mut |_, _| {},
            )
            .unwrap(),
        );
        let before = fs::metadata(&p).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let v = validate(&p, &opts(true, Some(3 << 20))).unwrap();
        assert_eq!(v.action, Action::Grow(1 << 20, 3 << 20));
        assert!(v.created_by_oio);
        let after = fs::metadata(&p).unwrap();
        assert_eq!(after.len(), 1 << 20);
        assert_eq!(after.modified().unwrap(), before.modified().unwrap());
        assert_eq!(after.ctime_nsec(), before.ctime_nsec());
        // Someone else's file: the same refusals as prepare's.
        let q = dir.path().join("theirs");
        fs::write(&q, vec![7u8; 1 << 16]).unwrap();
        let e = same_refusal(&q, &opts(true, None));
        assert!(e.contains("--allow-overwrite"), "{e}");
        let e = same_refusal(&q, &opts(false, Some(1 << 20)));
        assert!(e.contains("does not grow"), "{e}");
        assert_eq!(fs::read(&q).unwrap(), vec![7u8; 1 << 16]);
        // A directory.
        let e = same_refusal(dir.path(), &opts(false, None));
        assert!(e.contains("neither a regular file"), "{e}");
    }

    #[test]
    fn nothing_is_created_in_dev() {
        let p = PathBuf::from(format!("/dev/oio-unit-missing-{}", std::process::id()));
        let e = same_refusal(&p, &opts(true, Some(1 << 20)));
        assert!(e.contains("no such device"), "{e}");
        // Without a size too: the name is a device that is not there.
        let e = same_refusal(&p, &opts(false, None));
        assert!(e.contains("no such device"), "{e}");
        assert!(fs::symlink_metadata(&p).is_err());
        // A filesystem of its own below /dev is not /dev.
        if Path::new("/dev/shm").is_dir() {
            assert_eq!(in_dev(Path::new("/dev/shm/oio-unit")), None);
        }
    }

    /// A small tmpfs mounted for one test, unmounted when dropped.
    struct Tmpfs(tempfile::TempDir);

    impl Tmpfs {
        fn new(size: &str) -> Option<Tmpfs> {
            let d = tempfile::tempdir().ok()?;
            let ok = std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={size}"), "oio-test"])
                .arg(d.path())
                .status()
                .is_ok_and(|s| s.success());
            ok.then_some(Tmpfs(d))
        }

        fn free(&self) -> u64 {
            let v = rustix::fs::statvfs(self.0.path()).unwrap();
            v.f_bavail * v.f_frsize
        }
    }

    impl Drop for Tmpfs {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount")
                .arg(self.0.path())
                .status();
        }
    }

    #[test]
    fn no_room_is_refused_first_and_enospc_gives_back_what_it_took() {
        let Some(fs16) = Tmpfs::new("16m") else {
            oio_testkit::missing("mounting a tmpfs needs root");
            return;
        };
        let root = fs16.0.path();
        let free = fs16.free();
        // Asking for more than there is: refused before anything is written.
        let p = root.join("t");
        let e = same_refusal(&p, &opts(true, Some(64 << 20)));
        assert!(
            e.contains("needs 64.0 MiB more") && e.contains("free"),
            "{e}"
        );
        assert_eq!(fs::read_dir(root).unwrap().count(), 0);
        assert_eq!(fs16.free(), free);
        // Nearly all of it: refused too, the reserve stays free.
        let e = validate(&p, &opts(true, Some(free)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("oio leaves"), "{e}");
        // ENOSPC while filling (space taken by someone else after the check): the temporary
        // file is removed, the space given back.
        let e = create_new(&p, 64 << 20, 1, &Cancel::new(), &mut |_, _| {}).unwrap_err();
        assert!(e.to_string().contains("No space left"), "{e}");
        assert_eq!(fs::read_dir(root).unwrap().count(), 0);
        assert_eq!(fs16.free(), free);
        // ENOSPC while growing oio's own file: it is cut back to its size before.
        drop(
            prepare(
                &p,
                "",
                &opts(true, Some(4 << 20)),
                &Cancel::new(),
                &mut |_, _| {},
            )
            .unwrap(),
        );
        let with_file = fs16.free();
        let probe = File::open(&p).unwrap();
        let e = grow(
            &p,
            &probe,
            4 << 20,
            64 << 20,
            1,
            &Cancel::new(),
            &mut |_, _| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("No space left"), "{e}");
        assert_eq!(fs::metadata(&p).unwrap().len(), 4 << 20);
        assert_eq!(fs16.free(), with_file);
        // Still oio's: a later run may use it.
        let v = validate(&p, &opts(true, None)).unwrap();
        assert!(v.created_by_oio, "{v:?}");
    }
}
