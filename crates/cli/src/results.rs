//! Result files: written whole or not at all (temporary file in the same directory, then
//! rename), named so they sort by time.

use anyhow::Context;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A temporary file in `dir`, for writing a file whole before it is renamed into place.
fn temp_in(dir: &Path) -> anyhow::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(".oio-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in '{}'", dir.display()))
}

/// Writes `bytes` to `path` whole or not at all (replacing a file the user named).
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = temp_in(dir)?;
    tmp.write_all(bytes)
        .with_context(|| format!("writing '{}'", path.display()))?;
    tmp.as_file().sync_data()?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("renaming into '{}'", path.display()))?;
    Ok(())
}

/// Writes `value` as pretty JSON into `dir/name` atomically and returns the path.
pub fn write_json_atomic<T: Serialize>(
    dir: &Path,
    name: &str,
    value: &T,
) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the results directory '{}'", dir.display()))?;
    let mut tmp = temp_in(dir)?;
    serde_json::to_writer_pretty(&mut tmp, value).context("serializing the result")?;
    tmp.write_all(b"\n")?;
    tmp.as_file()
        .sync_data()
        .context("syncing the result file")?;
    // Never replace an earlier result: runs in the same second get a numbered name.
    let stem = name.strip_suffix(".json").unwrap_or(name);
    for n in 1.. {
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
    unreachable!("the loop only ends by returning")
}

/// A file name like `run-20261121T140502Z-oltp-data.json` from an RFC 3339 timestamp.
pub fn result_file_name(kind: &str, timestamp: &str, label: &str) -> String {
    let ts: String = timestamp
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let label: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{kind}-{ts}-{label}.json")
}
