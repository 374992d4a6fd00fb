//! Which files are oio's, and creating files without touching anything already there.
//!
//! A file oio created carries the extended attribute `user.oio.created` with what oio last
//! left in it: `oio3 id=<random 64-bit id> ino=<inode> size=<bytes> mtime=<s>.<ns>
//! sample=<crc32>`, written when the file is created and again when a run that wrote to it
//! closes it. A file whose inode, size, modification time or sampled contents differ from the
//! record changed since oio closed it: it is no longer oio's. A run that was killed before it
//! closed the file leaves it looking changed too, which errs on the safe side.
//!
//! Size, inode and time alone are not enough: on a filesystem with 1-second timestamps (ext4
//! with 128-byte inodes, ext3, HFS+) a `cp` or `dd conv=notrunc` over the file within the second
//! oio closed it keeps all three. So when oio records a file it first sets its modification
//! time to a moment at least two seconds before now (seconds floored, a random nanosecond):
//! any later write by anyone stamps the current time, which can never equal it, whatever the
//! filesystem's granularity (2 s on FAT). And the record carries a CRC-32 of 16 sampled 4 KiB
//! blocks (the first, the last and one drawn from each of 14 equal stretches, placed by the
//! file's id), checked when the metadata matches: a file copied over oio's with its times
//! preserved (`cp -p`, `touch -r`) or after the clock stepped back is still told apart by its
//! contents, for 64 KiB of reads. The change time (ctime) cannot be used: writing the record
//! itself changes it, so the record could never hold its final value.
//!
//! New files (a target's fill, a journal) are created in their directory through a directory
//! fd with O_CREAT|O_EXCL|O_NOFOLLOW under a name with the pid and a random suffix, and put in
//! place with renameat2(RENAME_NOREPLACE), so a symlink or a foreign file at any name oio uses
//! is never opened, truncated or replaced.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, XattrFlags, CWD};

/// Extended attribute that marks files oio created, with what oio last left in them.
pub const CREATED_XATTR: &str = "user.oio.created";

/// Extended attribute that marks a temporary file oio is filling (`oio-tmp ino=<inode>`): with
/// its name and the lock its creator holds until it is placed, it lets a later run tell a
/// leftover of a killed run from anything else ([`super::leftover`]).
pub const TEMP_XATTR: &str = "user.oio.tmp";

/// The value of [`TEMP_XATTR`] for inode `ino`.
pub fn temp_mark(ino: u64) -> String {
    format!("oio-tmp ino={ino}")
}

/// Where a temporary file's name starts its suffix: `<name>.oio-tmp-<pid>-<8 hex digits>`.
pub const TEMP_INFIX: &str = ".oio-tmp-";

/// What oio last left in a file: its id, inode, size, modification time (as oio set it) and
/// a digest of sampled blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Random id given when oio created (or reclaimed) the file; it also places the samples.
    pub id: u64,
    /// Inode number.
    pub ino: u64,
    /// Size, bytes.
    pub size: u64,
    /// Modification time: seconds since 1970 and nanoseconds.
    pub mtime: (i64, u32),
    /// CRC-32 of the sampled blocks ([`sample_digest`]).
    pub sample: u32,
}

/// Blocks sampled for a record's digest, and their size.
const SAMPLES: u64 = 16;
const SAMPLE_BYTES: u64 = 4096;

impl Record {
    fn of(id: u64, md: &Metadata, sample: u32) -> Record {
        Record {
            id,
            ino: md.ino(),
            size: md.size(),
            mtime: mtime_of(md),
            sample,
        }
    }

    /// The attribute's value.
    pub fn encode(&self) -> String {
        format!(
            "oio3 id={:016x} ino={} size={} mtime={}.{:09} sample={:08x}",
            self.id, self.ino, self.size, self.mtime.0, self.mtime.1, self.sample
        )
    }

    /// Parses an attribute's value (None: not this format).
    pub fn parse(v: &[u8]) -> Option<Record> {
        let s = std::str::from_utf8(v).ok()?;
        let mut words = s.split_whitespace();
        if words.next()? != "oio3" {
            return None;
        }
        let (mut id, mut ino, mut size, mut mtime, mut sample) = (None, None, None, None, None);
        for w in words {
            let (k, v) = w.split_once('=')?;
            match k {
                "id" => id = Some(u64::from_str_radix(v, 16).ok()?),
                "ino" => ino = Some(v.parse().ok()?),
                "size" => size = Some(v.parse().ok()?),
                "mtime" => {
                    let (s, ns) = v.split_once('.')?;
                    let ns: u32 = ns.parse().ok()?;
                    if ns > 999_999_999 || v.len() - s.len() != 10 {
                        return None;
                    }
                    mtime = Some((s.parse().ok()?, ns));
                }
                "sample" => sample = Some(u32::from_str_radix(v, 16).ok()?),
                _ => {}
            }
        }
        Some(Record {
            id: id?,
            ino: ino?,
            size: size?,
            mtime: mtime?,
            sample: sample?,
        })
    }
}

fn mtime_of(md: &Metadata) -> (i64, u32) {
    (md.mtime(), md.mtime_nsec().clamp(0, 999_999_999) as u32)
}

/// Whose a regular file is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// No oio mark.
    Foreign,
    /// oio's, unchanged since oio closed it.
    Ours(Record),
    /// oio's mark, but the file changed since oio closed it: what changed.
    Changed {
        /// The mark.
        record: Record,
        /// What differs, in words.
        what: Vec<String>,
    },
    /// A mark oio cannot read as a record (an older oio wrote it, with less in it): oio cannot
    /// tell whether the file changed since.
    Unknown(String),
}

impl Ownership {
    /// What changed, in words (empty unless changed or unknown).
    pub fn describe(&self) -> String {
        match self {
            Ownership::Changed { what, .. } => what.join(", "),
            Ownership::Unknown(v) => format!(
                "its {CREATED_XATTR} mark ('{v}') is from an older oio, which did not record enough (no sample of its contents, a time a copy made in the same second could share) to tell whether it changed"
            ),
            _ => String::new(),
        }
    }

    /// Why writing is refused, with the flag that overrides it.
    pub fn refusal(&self) -> String {
        match self {
            Ownership::Foreign | Ownership::Ours(_) => "oio did not create this file and the workload writes; pass --allow-overwrite to let oio overwrite its contents".into(),
            Ownership::Changed { .. } => format!(
                "oio created this file but it changed since an oio run last closed it ({}), so it may hold someone else's data now (an oio run that was killed or crashed before closing it also causes this); pass --allow-overwrite to let oio overwrite it",
                self.describe()
            ),
            Ownership::Unknown(_) => format!(
                "{}; pass --allow-overwrite to let oio overwrite it (oio then records its state)",
                self.describe()
            ),
        }
    }

    /// The id to keep when oio records the file again (None: a new one).
    fn id(&self) -> Option<u64> {
        match self {
            Ownership::Ours(r) | Ownership::Changed { record: r, .. } => Some(r.id),
            _ => None,
        }
    }
}

/// Reads the mark of an open file.
pub fn read_record(f: &File) -> Option<Record> {
    let mut buf = [0u8; 256];
    let n = rustix::fs::fgetxattr(f, CREATED_XATTR, &mut buf[..]).ok()?;
    Record::parse(&buf[..n])
}

/// Whose the open regular file `f` (with metadata `md`) is.
pub fn ownership(f: &File, md: &Metadata) -> Ownership {
    let mut buf = [0u8; 256];
    let n = match rustix::fs::fgetxattr(f, CREATED_XATTR, &mut buf[..]) {
        Ok(n) => n,
        // ERANGE: a value longer than any oio writes.
        Err(rustix::io::Errno::RANGE) => return Ownership::Unknown("(too long)".into()),
        Err(_) => return Ownership::Foreign,
    };
    let Some(record) = Record::parse(&buf[..n]) else {
        let shown: String = String::from_utf8_lossy(&buf[..n])
            .chars()
            .take(40)
            .collect();
        return Ownership::Unknown(shown.escape_debug().to_string());
    };
    let mut what = Vec::new();
    if md.ino() != record.ino {
        what.push(format!(
            "it is inode {} but the mark names inode {} (the mark was copied from another file)",
            md.ino(),
            record.ino
        ));
    }
    if md.size() != record.size {
        what.push(format!(
            "its size is {} bytes, oio left {} bytes",
            md.size(),
            record.size
        ));
    }
    if mtime_of(md) != record.mtime {
        what.push(format!(
            "it was modified at {}, oio left it modified at {}",
            show_time(mtime_of(md)),
            show_time(record.mtime)
        ));
    }
    // The contents only when nothing else tells (16 reads of 4 KiB).
    if what.is_empty() {
        match sample_digest(f, record.id, record.size) {
            Ok(d) if d == record.sample => {}
            Ok(_) => {
                let n = sample_offsets(record.id, record.size).len();
                what.push(format!(
                    "its contents differ from what oio left (compared in {n} sampled 4 KiB block{})",
                    if n == 1 { "" } else { "s" }
                ))
            }
            Err(e) => what.push(format!(
                "its contents could not be read to compare with what oio left ({e})"
            )),
        }
    }
    if what.is_empty() {
        Ownership::Ours(record)
    } else {
        Ownership::Changed { record, what }
    }
}

/// Offsets of the blocks sampled for a file of `size` bytes with id `id`: every block of a
/// file of at most 16, else the first, the last, and one drawn (by the id) from each of 14
/// equal stretches between them.
fn sample_offsets(id: u64, size: u64) -> Vec<u64> {
    let blocks = size.div_ceil(SAMPLE_BYTES);
    if blocks <= SAMPLES {
        return (0..blocks).map(|b| b * SAMPLE_BYTES).collect();
    }
    let mut rng = fastrand::Rng::with_seed(id ^ size);
    let inner = blocks - 2;
    let stretches = SAMPLES - 2;
    let mut out = vec![0];
    for i in 0..stretches {
        let (a, b) = (1 + i * inner / stretches, 1 + (i + 1) * inner / stretches);
        out.push(rng.u64(a..b.max(a + 1)) * SAMPLE_BYTES);
    }
    out.push((blocks - 1) * SAMPLE_BYTES);
    out
}

/// CRC-32 of the sampled blocks of the first `size` bytes of `f` (each with its offset). The
/// blocks read are dropped from the page cache again (when clean), so a buffered run that
/// follows does not find them cached.
pub fn sample_digest(f: &File, id: u64, size: u64) -> io::Result<u32> {
    use std::os::unix::fs::FileExt;
    let mut h = crc32fast::Hasher::new();
    let mut buf = [0u8; SAMPLE_BYTES as usize];
    for off in sample_offsets(id, size) {
        let n = SAMPLE_BYTES.min(size - off) as usize;
        f.read_exact_at(&mut buf[..n], off)?;
        h.update(&off.to_le_bytes());
        h.update(&buf[..n]);
        let _ = rustix::fs::fadvise(
            f,
            off,
            std::num::NonZeroU64::new(n as u64),
            rustix::fs::Advice::DontNeed,
        );
    }
    Ok(h.finalize())
}

fn show_time((s, ns): (i64, u32)) -> String {
    // humantime formats years up to 9999 only.
    match u64::try_from(s) {
        Ok(secs) if secs < 253_402_300_800 => humantime::format_rfc3339_nanos(
            std::time::UNIX_EPOCH + std::time::Duration::new(secs, ns),
        )
        .to_string(),
        _ => format!("{s}.{ns:09} s since 1970"),
    }
}

/// Writes the mark of `f` (`id`: keep this id; None: a new random one): sets its modification
/// time to at least two seconds ago, samples its contents, and records them with its inode
/// and size. Fails, recording nothing, when the file changed while being recorded (the old
/// record then makes it look changed: the safe side), or when its time cannot be set (only
/// the file's owner, or root, may set it).
pub fn record(f: &File, id: Option<u64>) -> io::Result<Record> {
    let id = id.unwrap_or_else(new_id);
    f.set_modified(pinned_time(std::time::SystemTime::now()))?;
    let before = f.metadata()?;
    let sample = sample_digest(f, id, before.size())?;
    let after = f.metadata()?;
    if (after.size(), mtime_of(&after)) != (before.size(), mtime_of(&before)) {
        return Err(io::Error::other(
            "the file changed while oio was recording it",
        ));
    }
    let r = Record::of(id, &after, sample);
    rustix::fs::fsetxattr(f, CREATED_XATTR, r.encode().as_bytes(), XattrFlags::empty())?;
    Ok(r)
}

/// The modification time oio leaves on a file it records: the current second less two, and a
/// random nanosecond. A write after it stamps the current time, later than this whatever the
/// filesystem keeps (whole seconds, or two on FAT), so it never leaves the recorded time.
fn pinned_time(now: std::time::SystemTime) -> std::time::SystemTime {
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    std::time::UNIX_EPOCH
        + std::time::Duration::new(secs.saturating_sub(2), fastrand::u32(1..1_000_000_000))
}

fn new_id() -> u64 {
    // An identity, not a secret: what protects against a copied mark is the inode check.
    fastrand::u64(..)
}

/// Records what oio left in a file it owns when dropped, i.e. when the run that wrote to it
/// closes it (after its workers finished).
#[derive(Debug)]
pub struct Seal {
    file: File,
    id: Option<u64>,
}

impl Seal {
    /// A seal for a file about to be written: one oio owns, or one that carries oio's mark and
    /// the user allowed to be overwritten. None for a file without oio's mark (never marked).
    pub fn new(f: &File, state: &Ownership) -> io::Result<Option<Seal>> {
        if *state == Ownership::Foreign {
            return Ok(None);
        }
        Ok(Some(Seal {
            file: f.try_clone()?,
            id: state.id(),
        }))
    }
}

impl Drop for Seal {
    fn drop(&mut self) {
        // Failing leaves the old record: the file then looks changed, the safe side.
        let _ = record(&self.file, self.id);
    }
}

/// A directory held open, so every step of creating a file acts on the same directory.
pub struct Dir {
    fd: OwnedFd,
}

/// A temporary file's name in a [`Dir`], removed when dropped unless placed.
pub struct TempName<'a> {
    dir: &'a Dir,
    name: Option<OsString>,
}

impl Drop for TempName<'_> {
    fn drop(&mut self) {
        if let Some(n) = self.name.take() {
            let _ = rustix::fs::unlinkat(&self.dir.fd, n.as_os_str(), AtFlags::empty());
        }
    }
}

impl Dir {
    /// The directory of `path`, opened, and the file name in it.
    pub fn of(path: &Path) -> io::Result<(Dir, OsString)> {
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let fd = rustix::fs::openat(
            CWD,
            &dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok((Dir { fd }, name.to_os_string()))
    }

    /// The directory's descriptor.
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Creates a new empty file (read-write, mode 0666 less the umask) named after `base`
    /// with the pid and a random suffix: O_CREAT|O_EXCL|O_NOFOLLOW never opens anything
    /// already there. It is locked (flock, exclusive) for as long as the file returned is
    /// open, then marked ([`TEMP_XATTR`]; not every filesystem takes it), so a later run
    /// knows a leftover of a killed run from a file being filled now.
    pub fn create_temp(&self, base: &OsStr) -> io::Result<(File, TempName<'_>)> {
        // Leave room for the suffix within the usual 255-byte name limit.
        let stem = &base.as_bytes()[..base.len().min(200)];
        let mut last = None;
        for _ in 0..16 {
            let mut name = stem.to_vec();
            name.extend_from_slice(
                format!(
                    "{TEMP_INFIX}{}-{:08x}",
                    std::process::id(),
                    fastrand::u32(..)
                )
                .as_bytes(),
            );
            let name = OsString::from_vec(name);
            match rustix::fs::openat(
                &self.fd,
                name.as_os_str(),
                OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_bits_truncate(0o666),
            ) {
                Ok(fd) => {
                    // The lock first, then the mark: a marked file is always locked while
                    // its creator lives.
                    let _ = rustix::fs::flock(
                        &fd,
                        rustix::fs::FlockOperation::NonBlockingLockExclusive,
                    );
                    if let Ok(st) = rustix::fs::fstat(&fd) {
                        #[allow(clippy::useless_conversion)] // st_ino's width varies
                        let ino = u64::from(st.st_ino);
                        let _ = rustix::fs::fsetxattr(
                            &fd,
                            TEMP_XATTR,
                            temp_mark(ino).as_bytes(),
                            XattrFlags::empty(),
                        );
                    }
                    return Ok((
                        File::from(fd),
                        TempName {
                            dir: self,
                            name: Some(name),
                        },
                    ));
                }
                Err(rustix::io::Errno::EXIST) => last = Some(rustix::io::Errno::EXIST),
                Err(e) => return Err(e.into()),
            }
        }
        Err(last.unwrap_or(rustix::io::Errno::EXIST).into())
    }

    /// Renames the temporary file to `name` unless something is there already. Returns false
    /// when something is (the temporary file is then removed when `tmp` is dropped).
    pub fn place_new(&self, tmp: &mut TempName<'_>, name: &OsStr) -> io::Result<bool> {
        let from = tmp.name.clone().unwrap_or_default();
        match rustix::fs::renameat_with(
            &self.fd,
            from.as_os_str(),
            &self.fd,
            name,
            RenameFlags::NOREPLACE,
        ) {
            Ok(()) => {
                tmp.name = None;
                Ok(true)
            }
            // Filesystems without RENAME_NOREPLACE: a hard link fails the same way when the
            // name is taken; the temporary name is removed when `tmp` is dropped.
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
                match rustix::fs::linkat(
                    &self.fd,
                    from.as_os_str(),
                    &self.fd,
                    name,
                    AtFlags::empty(),
                ) {
                    Ok(()) => Ok(true),
                    Err(rustix::io::Errno::EXIST) => Ok(false),
                    Err(e) => Err(e.into()),
                }
            }
            Err(rustix::io::Errno::EXIST) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Renames the temporary file over `name`, replacing what is there.
    pub fn replace(&self, tmp: &mut TempName<'_>, name: &OsStr) -> io::Result<()> {
        let from = tmp.name.clone().unwrap_or_default();
        rustix::fs::renameat(&self.fd, from.as_os_str(), &self.fd, name)?;
        tmp.name = None;
        Ok(())
    }

    /// Opens `name` for reading without following a symlink.
    pub fn open_nofollow(&self, name: &OsStr) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        )?;
        Ok(File::from(fd))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_bad_ones_are_not_records() {
        let r = Record {
            id: 0xdead_beef_0123_4567,
            ino: 42,
            size: 4 << 20,
            mtime: (1_700_000_000, 5),
            sample: 0x89ab_cdef,
        };
        assert_eq!(Record::parse(r.encode().as_bytes()), Some(r));
        for bad in [
            &b"1"[..],
            b"oio3 id=zz ino=1 size=1 mtime=1.000000000 sample=1",
            b"oio3 id=1 ino=1 size=1 sample=1",
            b"oio3 id=1 ino=1 size=1 mtime=1.5 sample=1",
            b"oio3 id=1 ino=1 size=1 mtime=1.000000000",
            b"oio3 id=1 ino=1 size=1 mtime=1.000000000 sample=123456789",
            // An older oio's record: no sample, a time a copy could share.
            b"oio2 id=1 ino=1 size=1 mtime=1.000000000",
        ] {
            assert_eq!(Record::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_file_changed_after_oio_closed_it_is_not_oios() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, [1u8; 4096]).unwrap();
        let f = File::open(&p).unwrap();
        assert_eq!(ownership(&f, &f.metadata().unwrap()), Ownership::Foreign);
        let r = record(&f, None).unwrap();
        assert_eq!(
            ownership(&f, &f.metadata().unwrap()),
            Ownership::Ours(r),
            "recording changes no size or time"
        );
        // Same size, new contents, at once: the time differs (oio left an earlier one).
        std::fs::write(&p, [2u8; 4096]).unwrap();
        let o = ownership(&f, &f.metadata().unwrap());
        assert!(o.describe().contains("modified at"), "{o:?}");
        assert!(!o.describe().contains("size"), "{o:?}");
        assert!(o.refusal().contains("--allow-overwrite"), "{o:?}");
        // The time put back as oio left it (`cp -p`, `touch -r`): the contents tell.
        let w = File::options().write(true).open(&p).unwrap();
        w.set_modified(
            std::time::UNIX_EPOCH + std::time::Duration::new(r.mtime.0 as u64, r.mtime.1),
        )
        .unwrap();
        let o = ownership(&f, &f.metadata().unwrap());
        assert_eq!(
            o.describe(),
            "its contents differ from what oio left (compared in 1 sampled 4 KiB block)",
            "{o:?}"
        );
        // An old marker.
        rustix::fs::fsetxattr(&f, CREATED_XATTR, b"1", XattrFlags::empty()).unwrap();
        let o = ownership(&f, &f.metadata().unwrap());
        assert!(matches!(o, Ownership::Unknown(_)), "{o:?}");
        assert!(o.refusal().contains("older oio"), "{o:?}");
    }

    #[test]
    fn the_recorded_time_is_one_no_later_write_can_stamp() {
        let now = std::time::SystemTime::now();
        let secs =
            |t: std::time::SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        for _ in 0..100 {
            let p = pinned_time(now);
            // Whole seconds (or even two) floored: still before the current second.
            assert!(secs(p) + 2 == secs(now), "{p:?} {now:?}");
            assert!((secs(p) & !1) < (secs(now) & !1));
        }
    }

    #[test]
    fn samples_cover_the_file_from_first_to_last_block() {
        assert!(sample_offsets(1, 0).is_empty());
        assert_eq!(sample_offsets(1, 5000), vec![0, 4096]);
        for (id, size) in [
            (1u64, 17 * 4096u64),
            (7, 1 << 30),
            (u64::MAX, (1 << 30) + 1),
        ] {
            let o = sample_offsets(id, size);
            assert_eq!(o.len(), 16, "{o:?}");
            assert_eq!(o[0], 0);
            assert_eq!(*o.last().unwrap(), (size.div_ceil(4096) - 1) * 4096);
            assert!(
                o.windows(2).all(|w| w[0] < w[1]),
                "distinct, in order: {o:?}"
            );
            assert!(o.iter().all(|x| x % 4096 == 0 && *x < size));
            assert_eq!(o, sample_offsets(id, size), "the id places them");
        }
        assert_ne!(sample_offsets(1, 1 << 30), sample_offsets(2, 1 << 30));
    }

    #[test]
    fn temp_files_never_touch_what_is_there() {
        let d = tempfile::tempdir().unwrap();
        let (dir, name) = Dir::of(&d.path().join("t")).unwrap();
        let (_f, mut tmp) = dir.create_temp(&name).unwrap();
        std::fs::write(d.path().join("t"), b"theirs").unwrap();
        assert!(
            !dir.place_new(&mut tmp, &name).unwrap(),
            "the name was taken"
        );
        drop(tmp);
        assert_eq!(std::fs::read(d.path().join("t")).unwrap(), b"theirs");
        // The loser's temporary file is gone.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
