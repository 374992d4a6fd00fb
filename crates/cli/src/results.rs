//! Result files: written whole or not at all (a temporary file created with O_EXCL in the same
//! directory, then renamed), named so they sort by time, and never lost: the destination is
//! checked before a run starts ([`check_destination`]), and a result that still cannot be saved
//! there is saved in `$TMPDIR` or the current directory, or printed on stdout, and the command
//! exits 2 ([`exit_code`]).

use anyhow::Context;
use serde::Serialize;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set when a result could not be saved where asked (it was saved elsewhere or printed).
static RESCUED: AtomicBool = AtomicBool::new(false);

/// A temporary file in `dir`, for writing a file whole before it is renamed into place. It is
/// created O_CREAT|O_EXCL (a symlink or any file already there is never opened) under a name
/// with the pid and a random suffix, with mode 0666 less the umask like any file a command
/// creates (0644 under the usual umask 022).
fn temp_in(dir: &Path) -> anyhow::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(&format!(".oio-{}-", std::process::id()))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in '{}'", dir.display()))
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to `path` whole or not at all. A file the user named is replaced by rename:
/// a symlink there is replaced itself, never written through.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = temp_in(parent_dir(path))?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing '{}'", path.display()))?;
    tmp.as_file()
        .sync_data()
        .with_context(|| format!("writing '{}'", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("renaming into '{}'", path.display()))?;
    Ok(())
}

/// Checks, before a command measures anything, that results can be saved in `dir`: creates it,
/// then creates, writes (64 KiB, synced) and removes a probe file, so a read-only, full or
/// immutable directory fails now and not after the run. `flag` names the option that chooses
/// another directory.
pub fn check_destination(dir: &Path, flag: &str) -> anyhow::Result<()> {
    let probe = || -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).context("creating it")?;
        let mut tmp = temp_in(dir)?;
        tmp.write_all(&[0u8; 64 << 10])
            .and_then(|()| tmp.as_file().sync_data())
            .context("writing a probe file")?;
        tmp.close().context("removing the probe file")?;
        Ok(())
    };
    probe().with_context(|| {
        format!(
            "results cannot be saved in '{}' (checked before running); choose another directory with {flag}",
            dir.display()
        )
    })
}

/// Renames `tmp` into `dir/name`, or `dir/STEM-2.json`… when that name is taken.
fn persist_numbered(
    mut tmp: tempfile::NamedTempFile,
    dir: &Path,
    name: &str,
) -> anyhow::Result<PathBuf> {
    // Never replace an earlier result: runs in the same second get a numbered name.
    let stem = name.strip_suffix(".json").unwrap_or(name);
    for n in 1..=10_000u32 {
        let path = if n == 1 {
            dir.join(name)
        } else {
            dir.join(format!("{stem}-{n}.json"))
        };
        match tmp.persist_noclobber(&path) {
            Ok(_) => return Ok(path),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => tmp = e.file,
            Err(e) => {
                return Err(e.error)
                    .with_context(|| format!("renaming the result into '{}'", path.display()))
            }
        }
    }
    anyhow::bail!(
        "'{}' and 10,000 numbered variants of it exist already",
        dir.join(name).display()
    )
}

/// Saves `bytes` as `dir/name` (numbered if taken).
fn save_in(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the results directory '{}'", dir.display()))?;
    let mut tmp = temp_in(dir)?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_data())
        .with_context(|| format!("writing the result in '{}'", dir.display()))?;
    persist_numbered(tmp, dir, name)
}

/// Writes `value` as pretty JSON into `dir/name` atomically and returns the path. When that
/// fails the result is not lost: it is saved in `$TMPDIR` or the current directory (a warning
/// says where) or, as a last resort, printed on stdout; either way the command exits 2.
pub fn write_json_atomic<T: Serialize>(
    dir: &Path,
    name: &str,
    value: &T,
) -> anyhow::Result<PathBuf> {
    let mut bytes = serde_json::to_vec_pretty(value).context("serializing the result")?;
    bytes.push(b'\n');
    let err = match save_in(dir, name, &bytes) {
        Ok(p) => return Ok(p),
        Err(e) => e,
    };
    RESCUED.store(true, Ordering::SeqCst);
    let mut tried = vec![format!("{err:#}")];
    for alt in [std::env::temp_dir(), PathBuf::from(".")] {
        if alt == dir {
            continue;
        }
        match save_in(&alt, name, &bytes) {
            Ok(p) => {
                crate::output::style::print_warning(&format!(
                    "could not save the result in '{}' ({err:#}); saved it as '{}' instead",
                    dir.display(),
                    p.display()
                ));
                return Ok(p);
            }
            Err(e) => tried.push(format!("{e:#}")),
        }
    }
    let mut out = std::io::stdout().lock();
    let printed = out.write_all(&bytes).and_then(|()| out.flush()).is_ok();
    anyhow::bail!(
        "could not save the result anywhere ({}){}",
        tried.join("; "),
        if printed {
            "; it was printed on stdout"
        } else {
            ""
        }
    )
}

/// The exit code of a command that returned `code`: 2 if a result had to be saved elsewhere
/// than asked (the command did not do all it was asked, though nothing is lost).
pub fn exit_code(code: ExitCode) -> ExitCode {
    if RESCUED.load(Ordering::SeqCst) && code == ExitCode::SUCCESS {
        ExitCode::from(crate::EXIT_ERROR)
    } else {
        code
    }
}

/// A file name like `run-20261121T140502Z-oltp-data.json` from an RFC 3339 timestamp.
pub fn result_file_name(kind: &str, timestamp: &str, label: &str) -> String {
    let ts: String = timestamp
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let label = oio_core::text::slug(label, 100);
    format!("{kind}-{ts}-{label}.json")
}
