//! Result files: written whole or not at all (temporary file in the same directory, then
//! rename), named so they sort by time.

use anyhow::Context;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `value` as pretty JSON to `dir/name` atomically and returns the path.
pub fn write_json_atomic<T: Serialize>(
    dir: &Path,
    name: &str,
    value: &T,
) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the results directory '{}'", dir.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".oio-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in '{}'", dir.display()))?;
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
