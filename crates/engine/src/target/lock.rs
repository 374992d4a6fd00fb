//! One writer per target: a run that writes to a target holds it alone; runs that only read
//! it (and `oio verify`) share it with each other, never with a writer (a reader beside a
//! writer would measure or check blocks that change under it).
//!
//! The lock is flock(2) on the target itself (for a device, its node in /dev), held from
//! before oio looks at the file until the run has closed and recorded it: the kernel drops it
//! when the process ends however it ends, so a killed run leaves no stale lock, and
//! /proc/locks names the pid holding it, for the refusal. Over NFS the kernel maps it to a
//! lock the server keeps, so runs on two hosts exclude each other too (the holder's pid is
//! then not known here). Not covered: another device node of the same device (made with
//! mknod), and a whole disk beside one of its partitions. A filesystem that takes no locks
//! (NFS mounted `nolock`, some FUSE filesystems) runs unlocked.

use super::TargetError;
use oio_core::Cancel;
use rustix::fs::FlockOperation;
use rustix::io::Errno;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

/// How a run uses a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads only: shared with other readers.
    Read,
    /// Writes (or grows it): alone.
    Write,
}

/// How often a waiting run tries again.
const RETRY: Duration = Duration::from_millis(50);

/// How many times a busy lock whose holder is gone when looked up is tried again at once
/// (over NFS the holder is never listed here: then it is reported after these).
const VANISHED_RETRIES: u32 = 3;

/// Locks the open target `f` (of `path`) for `access`, held as long as `f` (or a clone of it)
/// is open. Busy: refused naming the holder, or with `wait` waits for it (telling `waiting`
/// once who it waits for) until it ends or `cancel` is cancelled.
pub fn acquire(
    f: &File,
    path: &Path,
    access: Access,
    wait: bool,
    cancel: &Cancel,
    waiting: &mut dyn FnMut(&str),
) -> Result<(), TargetError> {
    let op = match access {
        Access::Read => FlockOperation::NonBlockingLockShared,
        Access::Write => FlockOperation::NonBlockingLockExclusive,
    };
    let mut told = false;
    // Times the lock was busy yet nobody held it a moment later: the holder ended between the
    // two looks (a run finishing), so the lock is tried again rather than blamed on a process
    // oio cannot see.
    let mut vanished = 0;
    loop {
        match rustix::fs::flock(f, op) {
            Ok(()) => return Ok(()),
            Err(Errno::WOULDBLOCK) => {}
            Err(Errno::INTR) => continue,
            Err(Errno::NOLCK | Errno::OPNOTSUPP | Errno::NOSYS) => return Ok(()),
            Err(e) => {
                return Err(TargetError::Io {
                    path: path.into(),
                    what: "locking it for the run",
                    source: e.into(),
                })
            }
        }
        let found = holders(f);
        if found.is_empty() && vanished < VANISHED_RETRIES {
            vanished += 1;
            continue;
        }
        let holder = describe(&found, access);
        if !wait {
            return Err(TargetError::InUse {
                path: path.into(),
                holder,
            });
        }
        if !told {
            told = true;
            waiting(&holder);
        }
        if cancel.is_cancelled() {
            return Err(TargetError::Invalid {
                path: path.into(),
                reason: format!("stopped while waiting for it ({holder})"),
            });
        }
        std::thread::sleep(RETRY);
    }
}

/// A process holding a lock on the target.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Holder {
    /// In this PID namespace (0: not visible from it).
    pid: u32,
    /// Holds it exclusively (writes).
    writes: bool,
}

/// The flock holders of `f` in /proc/locks: by device and inode, or by inode alone when no
/// entry has the device (btrfs subvolumes and overlayfs report another device to stat).
fn holders(f: &File) -> Vec<Holder> {
    let Ok(md) = f.metadata() else {
        return Vec::new();
    };
    let text = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    let dev = (rustix::fs::major(md.dev()), rustix::fs::minor(md.dev()));
    let (exact, same_ino) = parse_locks(&text, dev, md.ino());
    if exact.is_empty() {
        same_ino
    } else {
        exact
    }
}

/// The FLOCK entries of /proc/locks on inode `ino`: those on device `dev`, and all of them.
fn parse_locks(text: &str, dev: (u32, u32), ino: u64) -> (Vec<Holder>, Vec<Holder>) {
    let (mut exact, mut any) = (Vec::new(), Vec::new());
    for line in text.lines() {
        // `1: FLOCK  ADVISORY  WRITE 29625 fe:00:6299839 0 EOF`; waiters carry `->`.
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 6 || w[1] != "FLOCK" {
            continue;
        }
        let mut id = w[5].split(':');
        let (Some(maj), Some(min), Some(i)) = (id.next(), id.next(), id.next()) else {
            continue;
        };
        if i.parse::<u64>().ok() != Some(ino) {
            continue;
        }
        let h = Holder {
            pid: w[4].parse().unwrap_or(0),
            writes: w[3] == "WRITE",
        };
        let on_dev = u32::from_str_radix(maj, 16).ok() == Some(dev.0)
            && u32::from_str_radix(min, 16).ok() == Some(dev.1);
        if on_dev {
            exact.push(h.clone());
        }
        any.push(h);
    }
    (exact, any)
}

/// A process's command name (`oio`), when visible.
fn command_name(pid: u32) -> Option<String> {
    let c = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(c.trim_end().to_string()).filter(|c| !c.is_empty())
}

/// Who holds the target, in words: "in use by oio, pid 123 (writing to it)".
fn describe(holders: &[Holder], access: Access) -> String {
    let visible: Vec<&Holder> = holders.iter().filter(|h| h.pid != 0).collect();
    if visible.is_empty() {
        return format!(
            "in use by a process oio cannot see from here (another host over NFS, or another PID namespace) that holds it {}",
            if access == Access::Write {
                "for reading or writing"
            } else {
                "for writing"
            }
        );
    }
    let mut parts: Vec<String> = Vec::new();
    for h in visible {
        let doing = if h.writes {
            "writing to it"
        } else {
            "reading it"
        };
        let part = if h.pid == std::process::id() {
            format!("another run in this process (pid {}, {doing})", h.pid)
        } else {
            let name = command_name(h.pid).unwrap_or_else(|| "a process".into());
            format!("{name}, pid {} ({doing})", h.pid)
        };
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    format!("in use by {}", parts.join(" and "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_read_from_proc_locks_by_device_and_inode() {
        let text = "1: FLOCK  ADVISORY  WRITE 29625 fe:00:6299839 0 EOF\n\
                    1: -> FLOCK  ADVISORY  WRITE 31000 fe:00:6299839 0 EOF\n\
                    2: FLOCK  ADVISORY  READ 13830 fe:00:10051587 0 EOF\n\
                    3: POSIX  ADVISORY  WRITE 7011 fe:00:6299839 0 EOF\n\
                    4: FLOCK  ADVISORY  READ 26828 103:02:6299839 0 EOF\n";
        let (exact, any) = parse_locks(text, (0xfe, 0), 6299839);
        assert_eq!(
            exact,
            vec![Holder {
                pid: 29625,
                writes: true
            }]
        );
        assert_eq!(any.len(), 2, "{any:?}");
        let (exact, _) = parse_locks(text, (0x103, 2), 6299839);
        assert_eq!(exact[0].pid, 26828);
        assert!(!exact[0].writes);
    }

    #[test]
    fn a_second_writer_is_refused_naming_the_holder_and_readers_share() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t");
        std::fs::write(&p, b"x").unwrap();
        let no_stop = Cancel::new();
        let (a, b) = (File::open(&p).unwrap(), File::open(&p).unwrap());
        acquire(&a, &p, Access::Read, false, &no_stop, &mut |_| {}).unwrap();
        acquire(&b, &p, Access::Read, false, &no_stop, &mut |_| {}).unwrap();
        let c = File::open(&p).unwrap();
        let e = acquire(&c, &p, Access::Write, false, &no_stop, &mut |_| {}).unwrap_err();
        let msg = e.to_string();
        let me = std::process::id();
        assert!(
            msg.contains(&format!(
                "is in use by another run in this process (pid {me}, reading it);"
            )),
            "{msg}"
        );
        assert!(msg.contains("--wait"), "{msg}");
        drop((a, b));
        acquire(&c, &p, Access::Write, false, &no_stop, &mut |_| {}).unwrap();
        // Waiting ends when the caller stops, saying so.
        let stop = Cancel::new();
        stop.cancel();
        let mut told = Vec::new();
        let e = acquire(
            &File::open(&p).unwrap(),
            &p,
            Access::Read,
            true,
            &stop,
            &mut |w| told.push(w.to_string()),
        )
        .unwrap_err();
        assert!(e.to_string().contains("stopped while waiting"), "{e}");
        assert_eq!(told.len(), 1);
        assert!(told[0].contains("writing to it"), "{told:?}");
    }
}
