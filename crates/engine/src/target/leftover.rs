//! Temporary files a killed run left: a run killed while it filled a new target (kill -9, a
//! crash, the machine going down) leaves its `<name>.oio-tmp-<pid>-<hex>` behind, as large as
//! the fill got. Before a run uses a file target it looks in the target's directory for such
//! names and says what it found, with sizes. A file it can prove is oio's own leftover is
//! removed, and the run says so: the name has oio's pattern, it is a regular file (not
//! followed if a link), it carries the mark its creator set on that very inode
//! ([`owner::TEMP_XATTR`]), and nobody holds the lock its creator held until it placed the file
//! (a run filling it now does). Anything else that merely looks like one is named and left.

use super::owner::{self, TEMP_INFIX, TEMP_XATTR};
use oio_core::text::printable;
use oio_core::units::format_bytes;
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Leftovers named one by one; more are counted.
const NAMED: usize = 8;

/// What became of one leftover.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Proven oio's and unused: removed.
    Removed,
    /// Left as it is, and why.
    Left(String),
}

/// One file with a temporary name of oio's found beside a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    /// Its name in the directory.
    pub name: String,
    /// Its size, bytes.
    pub size: u64,
    /// Removed, or left and why.
    pub fate: Fate,
}

impl Leftover {
    /// In words, for the run's warnings.
    pub fn describe(&self, dir: &Path) -> String {
        let at = printable(&dir.join(&self.name).to_string_lossy()).into_owned();
        let size = format_bytes(self.size as f64);
        match &self.fate {
            Fate::Removed => format!(
                "removed {at} ({size}), the temporary file of an oio run that was stopped while filling a new file (killed or crashed)"
            ),
            Fate::Left(why) => format!(
                "{at} ({size}) looks like the temporary file of an oio run that was stopped while filling a new file, but {why}: left as it is; remove it if nothing needs it"
            ),
        }
    }
}

/// Whether `name` has the shape of oio's temporary names: `<base>.oio-tmp-<pid>-<8 hex>`.
pub fn is_temp_name(name: &[u8]) -> bool {
    let infix = TEMP_INFIX.as_bytes();
    let Some(at) = name.windows(infix.len()).rposition(|w| w == infix) else {
        return false;
    };
    let tail = &name[at + infix.len()..];
    let Some(dash) = tail.iter().position(|&b| b == b'-') else {
        return false;
    };
    let (pid, hex) = (&tail[..dash], &tail[dash + 1..]);
    !pid.is_empty()
        && pid.iter().all(u8::is_ascii_digit)
        && hex.len() == 8
        && hex.iter().all(u8::is_ascii_hexdigit)
}

/// Looks in the directory of `path` for oio's temporary names, removes those proven to be
/// leftovers of a stopped run, and says what it found (at most [`NAMED`] by name, the rest
/// counted). Files being filled by a live run are passed over in silence.
pub fn tidy(path: &Path) -> Vec<String> {
    let Ok((dir, _)) = owner::Dir::of(path) else {
        return Vec::new();
    };
    let shown = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    let Ok(entries) = std::fs::read_dir(&shown) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        if !is_temp_name(name.as_bytes()) {
            continue;
        }
        if let Some(l) = look_at(dir.fd(), &name) {
            found.push(l);
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    let mut out: Vec<String> = found
        .iter()
        .take(NAMED)
        .map(|l| l.describe(&shown))
        .collect();
    if found.len() > NAMED {
        let rest = &found[NAMED..];
        let removed = rest.iter().filter(|l| l.fate == Fate::Removed).count();
        out.push(format!(
            "{} more temporary files of stopped oio runs in {} ({} of them removed, {} in all)",
            rest.len(),
            printable(&shown.to_string_lossy()),
            removed,
            format_bytes(rest.iter().map(|l| l.size).sum::<u64>() as f64)
        ));
    }
    out
}

/// Judges one name: None when it is gone or a live run is filling it.
fn look_at(dir: &OwnedFd, name: &OsStr) -> Option<Leftover> {
    let shown = String::from_utf8_lossy(name.as_bytes()).into_owned();
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    #[allow(clippy::useless_conversion)] // the stat fields' widths differ between architectures
    let (size, ino) = (u64::try_from(st.st_size).unwrap_or(0), u64::from(st.st_ino));
    let left = |why: &str| {
        Some(Leftover {
            name: shown.clone(),
            size,
            fate: Fate::Left(why.to_string()),
        })
    };
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return left("it is not a regular file");
    }
    let fd = match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return None,
        Err(e) => return left(&format!("it could not be opened ({e})")),
    };
    let same = |fd: &OwnedFd| {
        rustix::fs::fstat(fd).is_ok_and(|s| {
            #[allow(clippy::useless_conversion)]
            let i = u64::from(s.st_ino);
            i == ino && s.st_dev == st.st_dev
        })
    };
    if !same(&fd) {
        return None; // replaced meanwhile: judged on the next run
    }
    // The mark on this very inode: copied with the file (cp -a), it names another inode.
    let mut buf = [0u8; 64];
    match rustix::fs::fgetxattr(&fd, TEMP_XATTR, &mut buf[..]) {
        Ok(n) if buf[..n] == *owner::temp_mark(ino).as_bytes() => {}
        Ok(_) => return left("its oio mark names another file (it was copied)"),
        Err(_) => return left(&format!("it carries no oio mark ({TEMP_XATTR})")),
    }
    // The lock its creator held until it placed the file: busy means a run fills it now.
    match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(Errno::WOULDBLOCK) => return None,
        Err(e) => return left(&format!("its lock could not be checked ({e})")),
    }
    // Still this inode under this name, then removed while locked.
    let now = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if now.st_ino != st.st_ino || now.st_dev != st.st_dev {
        return None;
    }
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) => Some(Leftover {
            name: shown.clone(),
            size,
            fate: Fate::Removed,
        }),
        Err(Errno::NOENT) => None,
        Err(e) => left(&format!("removing it failed ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn temp_names_are_told_apart() {
        assert!(is_temp_name(b"t.dat.oio-tmp-4242-0badcafe"));
        assert!(is_temp_name(b".oio-tmp-1-00000000"));
        for not in [
            &b"t.dat"[..],
            b"t.dat.oio-tmp-",
            b"t.dat.oio-tmp-42",
            b"t.dat.oio-tmp-42-0badcaf",
            b"t.dat.oio-tmp-42-0badcafe0",
            b"t.dat.oio-tmp-x2-0badcafe",
            b"t.dat.oio-tmp--0badcafe",
            b"t.dat.oio-tmp-42-0badcafg",
        ] {
            assert!(!is_temp_name(not), "{}", String::from_utf8_lossy(not));
        }
    }

    #[test]
    fn a_killed_fill_is_removed_and_lookalikes_are_named_and_left() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("t.dat");
        let (dir, name) = owner::Dir::of(&target).unwrap();
        // A stopped fill: its temporary file made (locked, marked) and its creator gone,
        // which drops the lock; forgotten so dropping the name does not remove it.
        let (f, tmp) = dir.create_temp(&name).unwrap();
        f.set_len(3 << 20).unwrap();
        drop(f);
        std::mem::forget(tmp);
        // A fill going on now (its file open, so locked).
        let (live, live_tmp) = dir.create_temp(OsStr::new("other")).unwrap();
        // Lookalikes: no mark, a copied mark, a directory.
        let plain = d.path().join("t.dat.oio-tmp-1-0000abcd");
        fs::write(&plain, vec![1u8; 4096]).unwrap();
        let copied = d.path().join("t.dat.oio-tmp-2-0000abcd");
        fs::write(&copied, vec![1u8; 100]).unwrap();
        rustix::fs::setxattr(
            &copied,
            TEMP_XATTR,
            owner::temp_mark(1).as_bytes(),
            rustix::fs::XattrFlags::empty(),
        )
        .unwrap();
        fs::create_dir(d.path().join("t.dat.oio-tmp-3-0000abcd")).unwrap();
        fs::write(d.path().join("unrelated.oio-tmp"), b"x").unwrap();

        let said = tidy(&target);
        let all = said.join("\n");
        assert_eq!(said.len(), 4, "{all}");
        let removed: Vec<&String> = said.iter().filter(|s| s.starts_with("removed ")).collect();
        assert_eq!(removed.len(), 1, "{all}");
        assert!(removed[0].contains("(3.00 MiB)"), "{all}");
        assert!(
            all.contains("t.dat.oio-tmp-1-0000abcd (4.00 KiB)") && all.contains("no oio mark"),
            "{all}"
        );
        assert!(all.contains("mark names another file"), "{all}");
        assert!(all.contains("not a regular file"), "{all}");
        assert!(
            !all.contains("other.oio-tmp"),
            "a live fill is not a leftover: {all}"
        );
        let mut left: Vec<String> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left.len(), 5, "{left:?}");
        let mine = format!("t.dat.oio-tmp-{}-", std::process::id());
        assert!(!left.iter().any(|n| n.starts_with(&mine)), "{left:?}");
        drop((live, live_tmp));
        // Once tidied, nothing more is removed.
        assert_eq!(
            tidy(&target)
                .iter()
                .filter(|s| s.starts_with("removed"))
                .count(),
            0
        );
    }
}
