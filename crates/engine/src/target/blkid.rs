//! On-disk signatures as the system knows them: libblkid's low-level probe.
//!
//! libblkid is what `blkid -p` and `wipefs` use; it knows every filesystem, RAID, volume
//! manager, encryption and partition-table format the OS knows, so oio asks it instead of
//! keeping its own list. The library is loaded at run time (`libblkid.so.1`, in util-linux on
//! every Linux distribution), so building oio needs no headers. When it cannot be loaded,
//! `wipefs --no-act --json` (the same library behind a command) is asked instead. The probe
//! is set up as wipefs sets it up: superblocks and partition tables, magic offsets, bad
//! checksums accepted, GPT looked for even without a protective MBR, and every signature
//! found is hidden and the probe run again, so a second copy (a backup GPT header, a NILFS
//! secondary superblock) is found too.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

/// One signature found on the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Its type as libblkid names it: `exfat`, `gpt`, `PMBR`, `LVM2_member`, `crypto_LUKS`...
    pub name: String,
    /// What kind of thing it is: `filesystem`, `partition table`, `raid`, `crypto`, `other`.
    pub usage: String,
    /// Byte offset of its magic on the device, when the prober says.
    pub offset: Option<u64>,
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.usage)?;
        if let Some(o) = self.offset {
            // Hex like wipefs prints it, so the two can be compared by eye.
            write!(f, " at offset {o:#x}")?;
        }
        Ok(())
    }
}

/// What a prober found, and which prober it was.
#[derive(Clone, Debug)]
pub struct Probed {
    /// The prober, as said in messages: `libblkid 2.38.1` or `wipefs --no-act`.
    pub by: String,
    /// Every signature found; empty when the device looks blank to the prober.
    pub signatures: Vec<Signature>,
}

/// Neither prober could look: why each could not.
#[derive(Debug, thiserror::Error)]
#[error("neither libblkid nor wipefs could look for signatures ({libblkid}; {wipefs}), so formats beyond oio's own short list cannot be recognised")]
pub struct ProbeError {
    /// Why the library could not look.
    pub libblkid: LibblkidError,
    /// Why the command could not look.
    pub wipefs: WipefsError,
}

/// Why libblkid could not be loaded (kept once per process, so it is cloned out).
#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    /// The library is not there or not loadable.
    #[error("libblkid.so.1 could not be loaded: {reason}")]
    NotLoaded {
        /// The loader's words.
        reason: String,
    },
    /// A function oio needs is missing.
    #[error("libblkid.so.1 has no {symbol}")]
    MissingSymbol {
        /// The function's name.
        symbol: &'static str,
    },
}

/// Why libblkid's probe did not answer.
#[derive(Debug, thiserror::Error)]
pub enum LibblkidError {
    /// The library could not be used at all.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// `blkid_new_probe` returned nothing.
    #[error("libblkid could not allocate a probe")]
    NoProbe,
    /// The device could not be handed to the probe.
    #[error("libblkid could not probe the device: {0}")]
    SetDevice(std::io::Error),
    /// A probing round failed.
    #[error("libblkid failed while probing: {0}")]
    Probing(std::io::Error),
    /// The probe went on past [`MAX_ROUNDS`] without finding anything.
    #[error("libblkid did not finish probing in {MAX_ROUNDS} rounds")]
    Unfinished,
}

/// Why `wipefs --no-act` did not answer.
#[derive(Debug, thiserror::Error)]
pub enum WipefsError {
    /// The command could not be started.
    #[error("wipefs could not be run: {0}")]
    NotRun(std::io::Error),
    /// It ran and failed; its standard error, trimmed.
    #[error("wipefs --no-act failed: {stderr}")]
    Failed {
        /// What it printed on standard error.
        stderr: String,
    },
    /// Its output could not be read.
    #[error(transparent)]
    Output(#[from] WipefsJsonError),
}

/// `wipefs --json` output oio cannot read.
#[derive(Debug, thiserror::Error)]
pub enum WipefsJsonError {
    /// Not JSON.
    #[error("wipefs printed JSON oio cannot read: {0}")]
    Json(serde_json::Error),
    /// No `signatures` list.
    #[error("wipefs printed JSON without a \"signatures\" list")]
    NoList,
    /// A signature without its type.
    #[error("a wipefs signature without a \"type\"")]
    NoType,
}

/// Probes the open device (or image file) `file`, whose path is `path`, with libblkid, or
/// with wipefs when libblkid cannot be loaded. The error says why neither could look.
pub fn probe(file: &File, path: &Path) -> Result<Probed, ProbeError> {
    first_of(probe_libblkid(file), || probe_wipefs(path))
}

/// The library's answer, else the command's, else why neither could look.
fn first_of(
    lib: Result<Probed, LibblkidError>,
    wipefs: impl FnOnce() -> Result<Probed, WipefsError>,
) -> Result<Probed, ProbeError> {
    let lib_err = match lib {
        Ok(p) => return Ok(p),
        Err(e) => e,
    };
    wipefs().map_err(|wipefs_err| ProbeError {
        libblkid: lib_err,
        wipefs: wipefs_err,
    })
}

// libblkid's flags (blkid.h), part of its stable ABI.
const SUBLKS_TYPE: c_int = 1 << 5;
const SUBLKS_USAGE: c_int = 1 << 7;
const SUBLKS_MAGIC: c_int = 1 << 9;
const SUBLKS_BADCSUM: c_int = 1 << 10;
const PARTS_FORCE_GPT: c_int = 1 << 1;
const PARTS_MAGIC: c_int = 1 << 3;

/// Bound on probe rounds: each round reports one signature, so a device with more than this
/// is refused anyway; the bound only guarantees the loop ends whatever the library does.
const MAX_ROUNDS: usize = 256;

type Pr = *mut c_void;

/// The handful of libblkid functions oio calls, resolved once.
struct Api {
    version: String,
    new_probe: unsafe extern "C" fn() -> Pr,
    set_device: unsafe extern "C" fn(Pr, c_int, i64, i64) -> c_int,
    enable_superblocks: unsafe extern "C" fn(Pr, c_int) -> c_int,
    set_superblocks_flags: unsafe extern "C" fn(Pr, c_int) -> c_int,
    enable_partitions: unsafe extern "C" fn(Pr, c_int) -> c_int,
    set_partitions_flags: unsafe extern "C" fn(Pr, c_int) -> c_int,
    do_probe: unsafe extern "C" fn(Pr) -> c_int,
    lookup_value: unsafe extern "C" fn(Pr, *const c_char, *mut *const c_char, *mut usize) -> c_int,
    free_probe: unsafe extern "C" fn(Pr),
    // Since util-linux 2.31; without them each format is reported once.
    hide_range: Option<unsafe extern "C" fn(Pr, u64, u64) -> c_int>,
    step_back: Option<unsafe extern "C" fn(Pr) -> c_int>,
    // Keeps the function pointers above valid for the life of the process.
    _lib: libloading::Library,
}

fn api() -> Result<&'static Api, LoadError> {
    static API: OnceLock<Result<Api, LoadError>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn load() -> Result<Api, LoadError> {
    // SAFETY: libblkid.so.1 is the system's util-linux library; loading it runs only its
    // ELF constructors, which have no preconditions.
    let lib =
        unsafe { libloading::Library::new("libblkid.so.1") }.map_err(|e| LoadError::NotLoaded {
            reason: e.to_string(),
        })?;
    macro_rules! sym {
        ($name:literal) => {
            // SAFETY: the type given at each use is the C prototype of that function in
            // blkid.h; the pointer is used only while `lib` (kept in Api) is loaded.
            match unsafe { lib.get(concat!($name, "\0").as_bytes()) } {
                Ok(s) => Some(*s),
                Err(_) => None,
            }
        };
    }
    macro_rules! need {
        ($name:literal) => {
            sym!($name).ok_or(LoadError::MissingSymbol { symbol: $name })?
        };
    }
    let get_version: Option<unsafe extern "C" fn(*mut *const c_char, *mut *const c_char) -> c_int> =
        sym!("blkid_get_library_version");
    let version = get_version
        .and_then(|f| {
            let mut v: *const c_char = std::ptr::null();
            let mut d: *const c_char = std::ptr::null();
            // SAFETY: both out-pointers are valid; libblkid sets them to static strings.
            unsafe { f(&mut v, &mut d) };
            // SAFETY: a non-null result is a NUL-terminated static string.
            (!v.is_null()).then(|| unsafe { CStr::from_ptr(v) }.to_string_lossy().into_owned())
        })
        .map(|v| format!("libblkid {v}"))
        .unwrap_or_else(|| "libblkid".to_string());
    Ok(Api {
        version,
        new_probe: need!("blkid_new_probe"),
        set_device: need!("blkid_probe_set_device"),
        enable_superblocks: need!("blkid_probe_enable_superblocks"),
        set_superblocks_flags: need!("blkid_probe_set_superblocks_flags"),
        enable_partitions: need!("blkid_probe_enable_partitions"),
        set_partitions_flags: need!("blkid_probe_set_partitions_flags"),
        do_probe: need!("blkid_do_probe"),
        lookup_value: need!("blkid_probe_lookup_value"),
        free_probe: need!("blkid_free_probe"),
        hide_range: sym!("blkid_probe_hide_range"),
        step_back: sym!("blkid_probe_step_back"),
        _lib: lib,
    })
}

/// Frees the probe however the probing ends.
struct ProbeGuard<'a> {
    api: &'a Api,
    pr: Pr,
}

impl Drop for ProbeGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: `pr` came from blkid_new_probe, is non-null and is freed only here.
        unsafe { (self.api.free_probe)(self.pr) }
    }
}

impl ProbeGuard<'_> {
    /// A value of the last probing round, as the bytes libblkid holds (strings end in NUL).
    fn value(&self, name: &CStr) -> Option<Vec<u8>> {
        let mut data: *const c_char = std::ptr::null();
        let mut len: usize = 0;
        // SAFETY: `pr` is a live probe, `name` is NUL-terminated, the out-pointers are valid.
        let rc = unsafe { (self.api.lookup_value)(self.pr, name.as_ptr(), &mut data, &mut len) };
        if rc != 0 || data.is_null() {
            return None;
        }
        // SAFETY: libblkid returns `len` readable bytes at `data`, valid until the next
        // probing call on `pr`; they are copied out at once.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
        Some(bytes.to_vec())
    }

    fn text(&self, name: &CStr) -> Option<String> {
        self.value(name).map(|v| {
            let v = v.strip_suffix(&[0]).unwrap_or(&v);
            String::from_utf8_lossy(v).into_owned()
        })
    }
}

/// libblkid's low-level probe of the open file.
pub fn probe_libblkid(file: &File) -> Result<Probed, LibblkidError> {
    let api = api()?;
    // SAFETY: no preconditions; a null result is handled.
    let pr = unsafe { (api.new_probe)() };
    if pr.is_null() {
        return Err(LibblkidError::NoProbe);
    }
    let g = ProbeGuard { api, pr };
    // SAFETY: `pr` is live; the fd stays open for the whole probe because `file` is borrowed
    // for this call, and libblkid does not close an fd it was given.
    let rc = unsafe { (api.set_device)(pr, file.as_raw_fd(), 0, 0) };
    if rc != 0 {
        return Err(LibblkidError::SetDevice(std::io::Error::last_os_error()));
    }
    // SAFETY: `pr` is live; flags are blkid.h's.
    unsafe {
        (api.enable_superblocks)(pr, 1);
        (api.set_superblocks_flags)(
            pr,
            SUBLKS_TYPE | SUBLKS_USAGE | SUBLKS_MAGIC | SUBLKS_BADCSUM,
        );
        (api.enable_partitions)(pr, 1);
        (api.set_partitions_flags)(pr, PARTS_MAGIC | PARTS_FORCE_GPT);
    }
    let mut found: Vec<Signature> = Vec::new();
    let mut finished = false;
    for _ in 0..MAX_ROUNDS {
        // SAFETY: `pr` is live.
        let rc = unsafe { (api.do_probe)(pr) };
        if rc == 1 {
            finished = true;
            break;
        }
        if rc != 0 {
            return Err(LibblkidError::Probing(std::io::Error::last_os_error()));
        }
        let (name, usage, off, magic) = if let Some(t) = g.text(c"TYPE") {
            let usage = g.text(c"USAGE").unwrap_or_else(|| "other".into());
            (t, usage, g.text(c"SBMAGIC_OFFSET"), g.value(c"SBMAGIC"))
        } else if let Some(t) = g.text(c"PTTYPE") {
            (
                t,
                "partition table".to_string(),
                g.text(c"PTMAGIC_OFFSET"),
                g.value(c"PTMAGIC"),
            )
        } else {
            continue;
        };
        let offset = off.and_then(|o| o.trim().parse::<u64>().ok());
        let sig = Signature {
            name,
            usage,
            offset,
        };
        if !found.contains(&sig) {
            found.push(sig);
        }
        // Hide this magic and probe again from the same step, as wipefs does, so another
        // copy of the same format further on is found too.
        if let (Some(hide), Some(back), Some(o), Some(m)) = (
            api.hide_range,
            api.step_back,
            offset,
            magic.filter(|m| !m.is_empty()),
        ) {
            // SAFETY: `pr` is live; the range lies within what libblkid itself just read.
            unsafe {
                if hide(pr, o, m.len() as u64) == 0 {
                    back(pr);
                }
            }
        }
    }
    if !finished && found.is_empty() {
        // Never call a device blank on a probe that did not finish.
        return Err(LibblkidError::Unfinished);
    }
    Ok(Probed {
        by: api.version.clone(),
        signatures: mark_backup_gpt(found),
    })
}

/// `wipefs --no-act --json` on the path: libblkid behind a command, when the library cannot
/// be loaded into oio.
pub fn probe_wipefs(path: &Path) -> Result<Probed, WipefsError> {
    let out = Command::new("wipefs")
        .args(["--no-act", "--json", "--output", "OFFSET,TYPE,USAGE"])
        .arg(path)
        .env("LC_ALL", "C")
        .output()
        .map_err(WipefsError::NotRun)?;
    if !out.status.success() {
        return Err(WipefsError::Failed {
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(Probed {
        by: "wipefs --no-act".into(),
        signatures: mark_backup_gpt(parse_wipefs_json(&out.stdout)?),
    })
}

/// Signatures from `wipefs --json --output OFFSET,TYPE,USAGE`. No output at all is how
/// wipefs says it found nothing.
pub fn parse_wipefs_json(text: &[u8]) -> Result<Vec<Signature>, WipefsJsonError> {
    if text.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    let v: serde_json::Value = serde_json::from_slice(text).map_err(WipefsJsonError::Json)?;
    let list = v
        .get("signatures")
        .and_then(|s| s.as_array())
        .ok_or(WipefsJsonError::NoList)?;
    let mut out = Vec::new();
    for s in list {
        let field = |k: &str| s.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let name = field("type").ok_or(WipefsJsonError::NoType)?;
        let usage = match field("usage").as_deref() {
            Some("partition-table") => "partition table".to_string(),
            Some(u) if !u.is_empty() => u.to_string(),
            _ => "other".to_string(),
        };
        let offset = field("offset").and_then(|o| parse_offset(&o));
        out.push(Signature {
            name,
            usage,
            offset,
        });
    }
    Ok(out)
}

fn parse_offset(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// A GPT known only by its backup header (the primary at LBA 1, byte 512 or 4096, is gone)
/// is named so: tools that read only the primary call such a disk blank, and a write would
/// destroy what `gdisk` could still recover.
fn mark_backup_gpt(mut sigs: Vec<Signature>) -> Vec<Signature> {
    let is_primary = |s: &Signature| matches!(s.offset, Some(512) | Some(4096));
    let has_primary = sigs.iter().any(|s| s.name == "gpt" && is_primary(s));
    if !has_primary {
        for s in sigs.iter_mut() {
            if s.name == "gpt" && s.offset.is_some() {
                s.name = "gpt (backup header only)".into();
            }
        }
    }
    sigs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::FileExt;

    fn image(patch: &[(u64, &[u8])]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&vec![0u8; 4 << 20]).unwrap();
        for (off, bytes) in patch {
            f.as_file().write_at(bytes, *off).unwrap();
        }
        f
    }

    #[test]
    fn wipefs_json_is_read() {
        let text = br#"{"signatures": [
            {"offset": "0x3", "type": "exfat", "usage": "filesystem"},
            {"offset": "0x1fe", "type": "dos", "usage": "partition-table"}]}"#;
        let s = parse_wipefs_json(text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].to_string(), "exfat (filesystem) at offset 0x3");
        assert_eq!(s[1].to_string(), "dos (partition table) at offset 0x1fe");
        assert!(parse_wipefs_json(b"").unwrap().is_empty());
        assert!(parse_wipefs_json(b"{\"x\":1}").is_err());
        assert!(parse_wipefs_json(b"not json").is_err());
    }

    #[test]
    fn without_a_prober_the_reason_is_given() {
        let lib = LoadError::NotLoaded { reason: "x".into() };
        let e = first_of(Err(lib.into()), || {
            Err(WipefsError::NotRun(std::io::Error::other("y")))
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("neither libblkid nor wipefs") && e.contains(": x") && e.contains(": y"),
            "{e}"
        );
        let p = first_of(Err(LibblkidError::NoProbe), || {
            Ok(Probed {
                by: "wipefs --no-act".into(),
                signatures: vec![],
            })
        })
        .unwrap();
        assert_eq!(p.by, "wipefs --no-act");
        assert!(probe_wipefs(Path::new("/nonexistent/oio")).is_err());
    }

    #[test]
    fn a_gpt_without_its_primary_header_is_named_backup_only() {
        let gpt = |off| Signature {
            name: "gpt".into(),
            usage: "partition table".into(),
            offset: Some(off),
        };
        let s = mark_backup_gpt(vec![gpt(0x3fffe00)]);
        assert_eq!(s[0].name, "gpt (backup header only)");
        let s = mark_backup_gpt(vec![gpt(512), gpt(0x3fffe00)]);
        assert!(s.iter().all(|x| x.name == "gpt"), "{s:?}");
    }

    /// libblkid and wipefs on the same images, when the system has them (util-linux is on
    /// every Debian system; under OIO_TEST_REQUIRE_ALL this test fails when it is not).
    #[test]
    fn libblkid_and_wipefs_agree_on_an_mbr_with_no_entries() {
        let blank = image(&[]);
        let mbr = image(&[(510, &[0x55, 0xAA])]);
        let Ok(b) = probe_libblkid(blank.as_file()) else {
            oio_testkit::missing("libblkid.so.1 cannot be loaded here");
            return;
        };
        assert!(b.by.starts_with("libblkid"), "{}", b.by);
        assert!(b.signatures.is_empty(), "{:?}", b.signatures);
        let m = probe_libblkid(mbr.as_file()).unwrap();
        assert_eq!(
            m.signatures,
            vec![Signature {
                name: "dos".into(),
                usage: "partition table".into(),
                offset: Some(0x1fe)
            }]
        );
        if let Ok(w) = probe_wipefs(mbr.path()) {
            assert_eq!(w.signatures, m.signatures);
            assert!(probe_wipefs(blank.path()).unwrap().signatures.is_empty());
        }
        // A swap header: version 1 and the last page at 1024, magic at the end of the page.
        let swap = image(&[
            (4086, b"SWAPSPACE2"),
            (1024, &1u32.to_le_bytes()),
            (1028, &1023u32.to_le_bytes()),
        ]);
        let s = probe_libblkid(swap.as_file()).unwrap();
        assert!(
            s.signatures.iter().any(|x| x.name == "swap"),
            "{:?}",
            s.signatures
        );
    }
}
