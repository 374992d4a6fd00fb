//! Data verification: self-describing blocks, read-back checks and a journal.
//!
//! With `--verify`, every 4 KiB block a write carries is made of eight 512-byte sectors, each
//! starting with a header: magic, the block's byte offset, the write's generation, the
//! sector's index, and a CRC-32 of the whole sector. Reads of blocks this run (or the journal)
//! knows are checked, and a later `oio verify` re-reads everything the journal lists. A
//! mismatch is classified by what the sectors say:
//!
//! - `wrong_data`: a sector is not a valid oio sector for this offset (corrupted, misdirected);
//! - `torn`: valid sectors from different generations in one block (a partial write);
//! - `stale`: a valid block of an older generation than the last acknowledged write (a lost
//!   write).
//!
//! The journal records each acknowledged write (block, generation) as it completes; it is
//! flushed every interval and on exit, so after a kill or crash it lists what the device
//! acknowledged up to then. It holds at most a cap of records ([`journal_cap`]: half of what
//! its filesystem has free beyond oio's reserve, at most [`JOURNAL_CEILING`]); past the cap, or
//! when a write to it fails (a full disk), it stops recording and the run goes on: the run's
//! own read-back checks still cover every write, and the result says from which write on the
//! journal (what `oio verify` reads later) is silent.

use crate::engines::{Dir, IoRequest};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The verified unit.
pub const BLOCK: usize = 4096;
const SECTOR: usize = 512;
const MAGIC: &[u8; 8] = b"OIOVRFY1";
const JOURNAL_MAGIC: &[u8; 16] = b"oio-journal-v1\n\0";

/// How a block failed verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mismatch {
    /// Not a valid oio block for this offset.
    WrongData,
    /// Sectors of different generations.
    Torn,
    /// An older generation than the last acknowledged write.
    Stale,
}

impl Mismatch {
    /// Name used in results.
    pub fn name(self) -> &'static str {
        match self {
            Mismatch::WrongData => "wrong_data",
            Mismatch::Torn => "torn",
            Mismatch::Stale => "stale",
        }
    }
}

/// Fills one 4 KiB block for a write of generation `generation` at byte `offset`.
/// `noise` supplies the payload.
pub fn fill_block(block: &mut [u8], offset: u64, generation: u64, noise: &mut fastrand::Rng) {
    debug_assert_eq!(block.len(), BLOCK);
    noise.fill(block);
    for (i, s) in block.chunks_mut(SECTOR).enumerate() {
        s[..8].copy_from_slice(MAGIC);
        s[8..16].copy_from_slice(&offset.to_le_bytes());
        s[16..24].copy_from_slice(&generation.to_le_bytes());
        s[24..28].copy_from_slice(&(i as u32).to_le_bytes());
        s[28..32].fill(0);
        let crc = crc32fast::hash(s);
        s[28..32].copy_from_slice(&crc.to_le_bytes());
    }
}

/// What one sector says: its generation, if it is a valid oio sector for `offset`.
fn sector_generation(s: &[u8], offset: u64, index: usize) -> Option<u64> {
    if &s[..8] != MAGIC
        || u64::from_le_bytes(s[8..16].try_into().ok()?) != offset
        || u32::from_le_bytes(s[24..28].try_into().ok()?) as usize != index
    {
        return None;
    }
    let stored = u32::from_le_bytes(s[28..32].try_into().ok()?);
    let mut h = crc32fast::Hasher::new();
    h.update(&s[..28]);
    h.update(&[0u8; 4]);
    h.update(&s[32..]);
    (h.finalize() == stored).then(|| u64::from_le_bytes(s[16..24].try_into().expect("8 bytes")))
}

/// Checks a block read at `offset` against the generation last acknowledged there.
pub fn check_block(block: &[u8], offset: u64, expected: u64) -> Result<(), Mismatch> {
    let mut gens = Vec::with_capacity(BLOCK / SECTOR);
    for (i, s) in block.chunks(SECTOR).enumerate() {
        match sector_generation(s, offset, i) {
            Some(g) => gens.push(g),
            None => return Err(Mismatch::WrongData),
        }
    }
    if gens.iter().any(|g| *g != gens[0]) {
        return Err(Mismatch::Torn);
    }
    match gens[0].cmp(&expected) {
        std::cmp::Ordering::Equal => Ok(()),
        // A newer generation than the journal knows: written after its last flush. Fine.
        std::cmp::Ordering::Greater => Ok(()),
        std::cmp::Ordering::Less => Err(Mismatch::Stale),
    }
}

/// One mismatch, for reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Byte offset of the block in the target.
    pub offset: u64,
    /// What was wrong.
    pub kind: Mismatch,
    /// Generation expected there.
    pub expected: u64,
}

/// Bytes of one journal record.
pub const RECORD: u64 = 16;

/// Most record bytes a journal holds, whatever the free space (64 Mi block writes).
pub const JOURNAL_CEILING: u64 = 1 << 30;

/// The cap of a journal on a filesystem with `free` bytes free of `total`: half of what is
/// free beyond the reserve oio leaves on any filesystem it writes files to (1 %, at most
/// 1 GiB), at most [`JOURNAL_CEILING`], in whole records.
pub fn journal_cap(free: u64, total: u64) -> u64 {
    let reserve = (total / 100).min(1 << 30);
    let cap = (free.saturating_sub(reserve) / 2).min(JOURNAL_CEILING);
    cap - cap % RECORD
}

/// Appends acknowledged writes: 16-byte records (block offset, generation), up to a cap.
pub struct Journal {
    out: BufWriter<File>,
    path: PathBuf,
    /// Most record bytes it may take.
    cap: u64,
    /// Records written.
    records: u64,
    /// Why it stopped recording (the cap, or a write that failed); nothing is recorded after.
    stopped: Option<String>,
    /// A write or sync failed: nothing more is tried.
    failed: bool,
    /// Bytes of the header before the records.
    header: u64,
}

impl Journal {
    /// Creates the journal of `target` at `path`: written under a temporary name of its own
    /// (O_EXCL|O_NOFOLLOW), marked as oio's, then renamed into place. What is already at
    /// `path` is replaced only if it is a journal oio wrote (a regular file, not a symlink,
    /// with the journal header and oio's mark for its inode); anything else is refused.
    /// It holds at most `cap` bytes of records.
    pub fn create(path: &Path, target: &Path, cap: u64) -> std::io::Result<Journal> {
        let (dir, name) = crate::target::owner::Dir::of(path)?;
        let (f, mut tmp) = dir.create_temp(&name)?;
        let mut out = BufWriter::with_capacity(1 << 16, f);
        out.write_all(JOURNAL_MAGIC)?;
        let t = target.display().to_string();
        out.write_all(&(t.len() as u32).to_le_bytes())?;
        out.write_all(t.as_bytes())?;
        out.flush()?;
        crate::target::owner::record(out.get_ref(), None)?;
        if !dir.place_new(&mut tmp, &name)? {
            replaceable(&dir, &name)?;
            dir.replace(&mut tmp, &name)?;
        }
        Ok(Journal {
            out,
            path: path.to_path_buf(),
            cap,
            records: 0,
            stopped: None,
            failed: false,
            header: (JOURNAL_MAGIC.len() + 4 + t.len()) as u64,
        })
    }

    /// Records an acknowledged write, unless the journal stopped recording (its cap reached,
    /// or a write to it failed: [`Journal::stopped`] says which).
    #[inline]
    pub fn record(&mut self, offset: u64, generation: u64) {
        if self.stopped.is_some() {
            return;
        }
        if (self.records + 1) * RECORD > self.cap {
            self.stopped = Some(format!(
                "it reached its cap of {} ({} block writes; half the free space on its filesystem beyond oio's reserve, at most {})",
                oio_core::units::format_bytes(self.cap as f64),
                self.cap / RECORD,
                oio_core::units::format_bytes(JOURNAL_CEILING as f64)
            ));
            return;
        }
        let mut rec = [0u8; RECORD as usize];
        rec[..8].copy_from_slice(&offset.to_le_bytes());
        rec[8..].copy_from_slice(&generation.to_le_bytes());
        match self.out.write_all(&rec) {
            Ok(()) => self.records += 1,
            Err(e) => self.fail(e),
        }
    }

    /// Makes what was recorded durable (a failure stops the journal, as in `record`).
    pub fn sync(&mut self) {
        if self.failed {
            return;
        }
        if let Err(e) = self
            .out
            .flush()
            .and_then(|()| self.out.get_ref().sync_data())
        {
            self.fail(e);
        }
    }

    /// A write failed (a full disk): what reached the file stays, whole records of it count.
    fn fail(&mut self, e: std::io::Error) {
        self.failed = true;
        self.stopped = Some(format!("writing it failed ({e})"));
        // The records that reached the file, not those still in the buffer.
        if let Ok(md) = self.out.get_ref().metadata() {
            self.records = md.len().saturating_sub(self.header) / RECORD;
        }
    }

    /// Why it stopped recording, if it did.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// Records written (the block writes it covers).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Refuses unless `name` in `dir` is a journal oio wrote.
fn replaceable(dir: &crate::target::owner::Dir, name: &std::ffi::OsStr) -> std::io::Result<()> {
    let refuse = |why: &str| {
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("something is already there and {why}; oio replaces only a journal it wrote: move it away or remove it"),
        )
    };
    let f = match dir.open_nofollow(name) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refuse("it is a symbolic link"))
        }
        Err(e) => return Err(e),
    };
    let md = f.metadata()?;
    if !md.is_file() {
        return Err(refuse("it is not a regular file"));
    }
    let mut head = [0u8; 16];
    if (&f).read_exact(&mut head).is_err() || &head != JOURNAL_MAGIC {
        return Err(refuse("it does not start with oio's journal header"));
    }
    use std::os::unix::fs::MetadataExt;
    match crate::target::owner::read_record(&f) {
        Some(r) if r.ino == md.ino() => Ok(()),
        Some(_) => Err(refuse("its oio mark was copied from another file")),
        None => Err(refuse("it carries no oio mark")),
    }
}

/// The journal's path for a target: beside a file (`t.dat.oio-journal`), or in the current
/// directory for a block device (`sdb.oio-journal`).
pub fn journal_path(target: &Path, is_block: bool) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(".oio-journal");
    if is_block {
        PathBuf::from(name)
    } else {
        target.with_file_name(name)
    }
}

/// A journal as read back: the target it belongs to and the last generation per block.
#[derive(Debug, Default)]
pub struct JournalState {
    /// Target path recorded in the journal.
    pub target: String,
    /// Last acknowledged generation per block offset.
    pub blocks: HashMap<u64, u64>,
    /// Bytes at the end that did not form a whole record (a write cut by a kill).
    pub trailing_bytes: usize,
}

/// Reads a journal.
pub fn read_journal(path: &Path) -> std::io::Result<JournalState> {
    let mut data = Vec::new();
    File::open(path)?.read_to_end(&mut data)?;
    let bad = |why: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {why}", path.display()),
        )
    };
    if data.len() < 20 || &data[..16] != JOURNAL_MAGIC {
        return Err(bad("not an oio journal (bad header)"));
    }
    let n = u32::from_le_bytes(data[16..20].try_into().expect("4 bytes")) as usize;
    let target = String::from_utf8_lossy(
        data.get(20..20 + n)
            .ok_or_else(|| bad("truncated header"))?,
    )
    .into_owned();
    let recs = &data[20 + n..];
    let mut blocks = HashMap::new();
    for r in recs.chunks_exact(16) {
        let off = u64::from_le_bytes(r[..8].try_into().expect("8 bytes"));
        let g = u64::from_le_bytes(r[8..].try_into().expect("8 bytes"));
        let e = blocks.entry(off).or_insert(0);
        *e = (*e).max(g);
    }
    Ok(JournalState {
        target,
        blocks,
        trailing_bytes: recs.len() % 16,
    })
}

/// One block that failed a scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanFinding {
    /// Byte offset of the block.
    pub offset: u64,
    /// `wrong_data`, `torn` or `stale` (see [`Mismatch`]), or `unreadable` (the read failed).
    pub kind: &'static str,
    /// The generation of the last acknowledged write to the block.
    pub expected_generation: u64,
}

/// What re-reading every journaled block of a target found.
#[derive(Clone, Debug)]
pub struct ScanReport {
    /// The journal read.
    pub journal: PathBuf,
    /// The target path the journal names.
    pub journal_target: String,
    /// Bytes at the journal's end that were not a whole record (a write cut by a kill).
    pub journal_trailing_bytes: usize,
    /// Acknowledged blocks checked.
    pub blocks_checked: u64,
    /// Failed blocks by kind.
    pub by_kind: BTreeMap<&'static str, u64>,
    /// Failed blocks, in offset order.
    pub findings: Vec<ScanFinding>,
}

impl ScanReport {
    /// Blocks that failed.
    pub fn mismatches(&self) -> u64 {
        self.by_kind.values().sum()
    }
}

/// Why a scan could not run.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The target could not be read.
    #[error("{what} '{}'", path.display())]
    Target {
        /// What was being done.
        what: &'static str,
        /// The target.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A run writes to the target now (`oio verify` shares it with readers only).
    #[error(transparent)]
    InUse(crate::target::TargetError),
    /// The journal could not be read.
    #[error("reading the journal '{}' (written by `oio run --verify`; give --journal FILE if it is elsewhere)", path.display())]
    Journal {
        /// The journal.
        path: PathBuf,
        /// The OS error, or what is wrong with its content.
        #[source]
        source: std::io::Error,
    },
}

/// Re-reads every block the journal of `target` lists (after a run ended, was killed, or the
/// machine crashed) and checks it holds the last acknowledged write. `journal` defaults to
/// [`journal_path`]. Reads only; one block buffer, whatever the target's size. A run writing
/// to the target meanwhile would make blocks look wrong, so the target is locked for reading
/// ([`crate::target::lock`]): refused while a run writes to it, or with `wait` after it ends
/// (`wait` is told once who it waits for).
pub fn scan(
    target: &Path,
    journal: Option<&Path>,
    wait: Option<&mut dyn FnMut(&str)>,
) -> Result<ScanReport, ScanError> {
    use std::os::unix::fs::{FileExt, FileTypeExt};
    let target_err = |what: &'static str| {
        move |source| ScanError::Target {
            what,
            path: target.to_path_buf(),
            source,
        }
    };
    let is_block = std::fs::metadata(target)
        .map_err(target_err("reading"))?
        .file_type()
        .is_block_device();
    let jpath = journal
        .map(Path::to_path_buf)
        .unwrap_or_else(|| journal_path(target, is_block));
    let state = read_journal(&jpath).map_err(|source| ScanError::Journal {
        path: jpath.clone(),
        source,
    })?;
    let file = File::open(target).map_err(target_err("opening"))?;
    let waits = wait.is_some();
    let mut nobody = |_: &str| {};
    crate::target::lock::acquire(
        &file,
        target,
        crate::target::lock::Access::Read,
        waits,
        &oio_core::Cancel::new(),
        wait.unwrap_or(&mut nobody),
    )
    .map_err(ScanError::InUse)?;
    let mut blocks: Vec<(u64, u64)> = state.blocks.iter().map(|(o, g)| (*o, *g)).collect();
    blocks.sort_unstable();
    let mut by_kind: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut findings = Vec::new();
    let mut buf = vec![0u8; BLOCK];
    for &(offset, generation) in &blocks {
        let res = match file.read_exact_at(&mut buf, offset) {
            Ok(()) => check_block(&buf, offset, generation).map_err(Mismatch::name),
            Err(_) => Err("unreadable"),
        };
        if let Err(kind) = res {
            *by_kind.entry(kind).or_default() += 1;
            findings.push(ScanFinding {
                offset,
                kind,
                expected_generation: generation,
            });
        }
    }
    Ok(ScanReport {
        journal: jpath,
        journal_target: state.target,
        journal_trailing_bytes: state.trailing_bytes,
        blocks_checked: blocks.len() as u64,
        by_kind,
        findings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    fn block(offset: u64, g: u64) -> Vec<u8> {
        let mut b = vec![0u8; BLOCK];
        fill_block(&mut b, offset, g, &mut fastrand::Rng::with_seed(g));
        b
    }

    #[test]
    fn a_good_block_verifies_and_newer_is_fine() {
        assert_eq!(check_block(&block(8192, 5), 8192, 5), Ok(()));
        assert_eq!(check_block(&block(8192, 6), 8192, 5), Ok(()));
    }

    #[test]
    fn mismatches_are_classified() {
        // Another process scribbled over the middle.
        let mut b = block(4096, 3);
        b[1000] ^= 0xFF;
        assert_eq!(check_block(&b, 4096, 3), Err(Mismatch::WrongData));
        // The right block at the wrong place.
        assert_eq!(check_block(&block(0, 3), 4096, 3), Err(Mismatch::WrongData));
        // Half new, half old: torn.
        let mut t = block(4096, 4);
        t[2048..].copy_from_slice(&block(4096, 3)[2048..]);
        assert_eq!(check_block(&t, 4096, 4), Err(Mismatch::Torn));
        // All old: the last write was lost.
        assert_eq!(check_block(&block(4096, 3), 4096, 4), Err(Mismatch::Stale));
    }

    #[test]
    fn the_journal_keeps_the_last_generation() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j");
        let mut j = Journal::create(&p, Path::new("/x/t.dat"), JOURNAL_CEILING).unwrap();
        j.record(0, 1);
        j.record(4096, 2);
        j.record(0, 3);
        j.sync();
        drop(j);
        // A record cut in half by a kill is ignored.
        let mut f = OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(&[1, 2, 3]).unwrap();
        let s = read_journal(&p).unwrap();
        assert_eq!(s.target, "/x/t.dat");
        assert_eq!(s.blocks[&0], 3);
        assert_eq!(s.blocks[&4096], 2);
        assert_eq!(s.trailing_bytes, 3);
        // oio's own journal is replaced by the next one.
        let j = Journal::create(&p, Path::new("/x/t.dat"), JOURNAL_CEILING).unwrap();
        drop(j);
        assert!(read_journal(&p).unwrap().blocks.is_empty());
    }

    #[test]
    fn a_scan_finds_lost_torn_wrong_and_unreadable_blocks() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t.dat");
        // Blocks 0..4 hold generation 5; block 1 is stale (the journal says 6), block 2 torn,
        // block 3 garbage; block 9 lies past the end of the file.
        let mut data = Vec::new();
        for i in 0..4u64 {
            data.extend(block(i * 4096, 5));
        }
        data[2 * 4096 + 1024..2 * 4096 + 2048].copy_from_slice(&block(2 * 4096, 4)[1024..2048]);
        data[3 * 4096..4 * 4096].fill(0xAB);
        std::fs::write(&t, &data).unwrap();
        let mut j = Journal::create(&journal_path(&t, false), &t, JOURNAL_CEILING).unwrap();
        for (i, g) in [(0, 5), (1, 6), (2, 5), (3, 5), (9, 5)] {
            j.record(i * 4096, g);
        }
        j.sync();
        drop(j);
        let r = scan(&t, None, None).unwrap();
        assert_eq!(r.blocks_checked, 5);
        assert_eq!(r.journal, journal_path(&t, false));
        assert_eq!(r.journal_target, t.display().to_string());
        let kinds: Vec<(u64, &str)> = r.findings.iter().map(|f| (f.offset, f.kind)).collect();
        assert_eq!(
            kinds,
            [
                (4096, "stale"),
                (8192, "torn"),
                (12288, "wrong_data"),
                (36864, "unreadable")
            ]
        );
        assert_eq!(r.mismatches(), 4);
        assert_eq!(r.findings[0].expected_generation, 6);
        // No journal: the error names it and says where it comes from.
        let e = scan(&t, Some(&d.path().join("none")), None).unwrap_err();
        assert!(e.to_string().contains("oio run --verify"), "{e}");
        let e = scan(&d.path().join("missing"), None, None).unwrap_err();
        assert!(e.to_string().starts_with("reading '"), "{e}");
    }

    #[test]
    fn a_journal_stops_at_its_cap_and_keeps_what_it_has() {
        // Half of what is free beyond the reserve (1 % of 100 MiB), in whole records; never
        // past the ceiling; nothing when the reserve takes it all.
        assert_eq!(journal_cap(10 << 20, 100 << 20), 4_718_592);
        assert_eq!(journal_cap((1 << 20) + 33, 100 << 20), 16);
        assert_eq!(journal_cap(u64::MAX, u64::MAX), JOURNAL_CEILING);
        assert_eq!(journal_cap(1000, 1 << 20), 0);
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j");
        let mut j = Journal::create(&p, Path::new("t"), 3 * RECORD).unwrap();
        for i in 0..5u64 {
            j.record(i * 4096, i + 1);
        }
        j.sync();
        assert_eq!(j.records(), 3);
        let why = j.stopped().expect("stopped").to_string();
        assert!(
            why.starts_with("it reached its cap of 48 B (3 block writes"),
            "{why}"
        );
        drop(j);
        let s = read_journal(&p).unwrap();
        assert_eq!(s.blocks.len(), 3);
        assert_eq!(s.blocks[&8192], 3);
        assert_eq!(s.trailing_bytes, 0);
    }

    #[test]
    fn a_full_disk_stops_the_journal_not_its_writer() {
        // A 64 KiB tmpfs: the journal fills it long before its cap.
        let d = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "oio-test"])
            .arg(d.path())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            oio_testkit::missing("mounting a tmpfs needs root");
            return;
        }
        struct Unmount<'a>(&'a Path);
        impl Drop for Unmount<'_> {
            fn drop(&mut self) {
                let _ = std::process::Command::new("umount").arg(self.0).status();
            }
        }
        let _u = Unmount(d.path());
        let p = d.path().join("t.oio-journal");
        let mut j = Journal::create(&p, Path::new("t"), JOURNAL_CEILING).unwrap();
        for i in 0..20_000u64 {
            j.record(i * 4096, 1);
            if i % 512 == 0 {
                j.sync();
            }
        }
        j.sync();
        let why = j.stopped().expect("stopped").to_string();
        assert!(why.starts_with("writing it failed ("), "{why}");
        assert!(why.contains("No space left"), "{why}");
        let kept = j.records();
        assert!(kept > 0 && kept < 20_000, "{kept}");
        drop(j);
        // What reached the file reads back: the records it says it kept, whole.
        let s = read_journal(&p).unwrap();
        assert_eq!(s.blocks.len() as u64, kept);
    }

    #[test]
    fn what_is_not_an_oio_journal_is_never_replaced() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let link = d.path().join("l.oio-journal");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = Journal::create(&link, Path::new("t"), JOURNAL_CEILING)
            .err()
            .expect("refused");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let foreign = d.path().join("f.oio-journal");
        std::fs::write(&foreign, b"someone's").unwrap();
        let e = Journal::create(&foreign, Path::new("t"), JOURNAL_CEILING)
            .err()
            .expect("refused");
        assert!(e.to_string().contains("journal header"), "{e}");
        // A journal's header without oio's mark (copied by hand): refused too.
        let copied = d.path().join("c.oio-journal");
        let mut bytes = JOURNAL_MAGIC.to_vec();
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        std::fs::write(&copied, &bytes).unwrap();
        let e = Journal::create(&copied, Path::new("t"), JOURNAL_CEILING)
            .err()
            .expect("refused");
        assert!(e.to_string().contains("no oio mark"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert_eq!(std::fs::read(&foreign).unwrap(), b"someone's");
        assert_eq!(std::fs::read(&copied).unwrap(), bytes);
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        // Nothing of oio's left behind.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 4);
    }
}

/// What a run's verification found.
#[derive(Clone, Debug, Default)]
pub struct VerifyCounts {
    /// Blocks read back and checked.
    pub checked: u64,
    /// Mismatches by kind.
    pub by_kind: HashMap<&'static str, u64>,
    /// The first mismatches, with the target index.
    pub findings: Vec<(usize, Finding)>,
}

impl VerifyCounts {
    /// Adds another worker's counts.
    pub fn add(&mut self, o: VerifyCounts) {
        self.checked += o.checked;
        for (k, v) in o.by_kind {
            *self.by_kind.entry(k).or_default() += v;
        }
        self.findings.extend(o.findings);
        self.findings.truncate(MAX_FINDINGS);
    }

    /// Total mismatches.
    pub fn mismatches(&self) -> u64 {
        self.by_kind.values().sum()
    }
}

/// Findings kept in detail (all are counted).
pub const MAX_FINDINGS: usize = 32;

/// Shared verification state of a run: generations and the journals.
pub struct VerifyShared {
    /// Source of write generations (unique over the run).
    pub generation: std::sync::atomic::AtomicU64,
    /// One journal per open target.
    pub journals: Vec<std::sync::Mutex<Journal>>,
}

/// A worker's verification state.
pub struct VerifyWorker {
    shared: std::sync::Arc<VerifyShared>,
    /// Target index of each of the worker's files.
    targets: Vec<usize>,
    noise: fastrand::Rng,
    expected: HashMap<(u32, u64), u64>,
    in_flight: std::collections::HashSet<(u32, u64)>,
    slot_gen: Vec<u64>,
    pending: Vec<(u32, u64, u64)>,
    /// What was found.
    pub counts: VerifyCounts,
}

impl VerifyWorker {
    /// State for a worker with `depth` slots whose files are the run's targets `targets`.
    pub fn new(
        shared: std::sync::Arc<VerifyShared>,
        targets: Vec<usize>,
        depth: usize,
        seed: u64,
    ) -> Self {
        VerifyWorker {
            shared,
            targets,
            noise: fastrand::Rng::with_seed(seed ^ 0x7E57),
            expected: HashMap::new(),
            in_flight: Default::default(),
            slot_gen: vec![0; depth],
            pending: Vec::new(),
            counts: VerifyCounts::default(),
        }
    }

    fn blocks(file: u32, offset: u64, len: u32) -> impl Iterator<Item = (u32, u64)> {
        (0..len as u64 / BLOCK as u64).map(move |i| (file, offset + i * BLOCK as u64))
    }

    /// True when an I/O would touch a block that is in flight (its outcome would be unknown).
    pub fn overlaps(&self, file: u32, offset: u64, len: u32) -> bool {
        Self::blocks(file, offset, len).any(|b| self.in_flight.contains(&b))
    }

    /// Marks the blocks in flight and, for a write, fills the buffer with verifiable blocks.
    pub fn start(&mut self, req: &IoRequest, buf: &mut [u8]) {
        for b in Self::blocks(req.file, req.offset, req.len) {
            self.in_flight.insert(b);
        }
        if req.dir == Dir::Write {
            let g = self
                .shared
                .generation
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1;
            self.slot_gen[req.slot as usize] = g;
            for (i, block) in buf[..req.len as usize].chunks_mut(BLOCK).enumerate() {
                fill_block(block, req.offset + (i * BLOCK) as u64, g, &mut self.noise);
            }
        }
    }

    /// Handles a completion (`ok`: the whole transfer succeeded): a write becomes the
    /// expected content of its blocks; a read is checked against it.
    pub fn finish(&mut self, req: &IoRequest, ok: bool, buf: &[u8]) {
        let (file, offset, len) = (req.file, req.offset, req.len);
        for b in Self::blocks(file, offset, len) {
            self.in_flight.remove(&b);
        }
        if !ok {
            return;
        }
        if req.dir == Dir::Write {
            let g = self.slot_gen[req.slot as usize];
            for (f, off) in Self::blocks(file, offset, len) {
                self.expected.insert((f, off), g);
                self.pending.push((f, off, g));
            }
            return;
        }
        for (i, (f, off)) in Self::blocks(file, offset, len).enumerate() {
            let Some(&exp) = self.expected.get(&(f, off)) else {
                continue;
            };
            self.counts.checked += 1;
            if let Err(kind) = check_block(&buf[i * BLOCK..(i + 1) * BLOCK], off, exp) {
                *self.counts.by_kind.entry(kind.name()).or_default() += 1;
                if self.counts.findings.len() < MAX_FINDINGS {
                    self.counts.findings.push((
                        self.targets[f as usize],
                        Finding {
                            offset: off,
                            kind,
                            expected: exp,
                        },
                    ));
                }
            }
        }
    }

    /// Appends acknowledged writes to the journals and makes them durable. A journal that
    /// cannot take them stops recording ([`Journal::stopped`]); the run goes on.
    pub fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut by_target: HashMap<usize, Vec<(u64, u64)>> = HashMap::new();
        for (f, off, g) in self.pending.drain(..) {
            by_target
                .entry(self.targets[f as usize])
                .or_default()
                .push((off, g));
        }
        for (t, recs) in by_target {
            let mut j = self.shared.journals[t]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for (off, g) in recs {
                j.record(off, g);
            }
            j.sync();
        }
    }
}
