//! Where finished results go, the moment each finishes: a [`Sink`]. The [`FileSink`] writes
//! each one whole or not at all (a temporary file created O_EXCL in the same directory, then
//! renamed without replacing anything), named so they sort by time, and never loses one: a
//! result that cannot be saved where asked is saved in `$TMPDIR` or the current directory,
//! or as a last resort written to the sink's fallback writer (stdout in the CLI), and the
//! sink remembers it was rescued so the command can exit 2.

use crate::error::{LabError, Result};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What a document is, for its file name: `run-20261121T140502Z-oltp-data.json` in `subdir`.
#[derive(Clone, Copy, Debug)]
pub struct Item<'a> {
    /// Subdirectory of the sink's directory (a `compare --run` group, a sweep's runs).
    pub subdir: Option<&'a str>,
    /// Kind: `run`, `sweep`, `blend`.
    pub kind: &'a str,
    /// When it started, RFC 3339.
    pub timestamp: &'a str,
    /// What ran (the workload's name).
    pub label: &'a str,
}

/// Receives every document of an experiment as soon as it exists.
pub trait Sink {
    /// Stores one document (a run result, complete or partial, or a summary document) and
    /// says where it went.
    fn save(&mut self, item: &Item<'_>, doc: &serde_json::Value) -> Result<PathBuf>;

    /// Stores a document already written as JSON text ([`json_bytes`]); a sink that keeps
    /// values reads it back.
    fn save_json(&mut self, item: &Item<'_>, bytes: &[u8]) -> Result<PathBuf> {
        let doc = serde_json::from_slice(bytes)
            .map_err(|e| LabError::Json(format!("reading back a document: {e}")))?;
        self.save(item, &doc)
    }
}

/// A temporary file in `dir`, for writing a file whole before it is renamed into place. It is
/// created O_CREAT|O_EXCL (a symlink or any file already there is never opened) under a name
/// with the pid and a random suffix, with mode 0666 less the umask like any file a command
/// creates.
fn temp_in(dir: &Path) -> Result<tempfile::NamedTempFile> {
    tempfile::Builder::new()
        .prefix(&format!(".oio-{}-", std::process::id()))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|source| LabError::Io {
            what: "creating a temporary file in",
            path: dir.into(),
            source,
        })
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> LabError {
    let path = path.to_path_buf();
    move |source| LabError::Io { what, path, source }
}

/// Writes `bytes` to `path` whole or not at all. A file the user named is replaced by rename:
/// a symlink there is replaced itself, never written through.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = temp_in(parent_dir(path))?;
    tmp.write_all(bytes).map_err(io("writing", path))?;
    tmp.as_file().sync_data().map_err(io("writing", path))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .map_err(io("renaming into", path))?;
    Ok(())
}

/// Checks, before anything is measured, that results can be saved in `dir`: creates it, then
/// creates, writes (64 KiB, synced) and removes a probe file, so a read-only, full or
/// immutable directory fails now and not after the run. `flag` names the option that chooses
/// another directory.
pub fn check_destination(dir: &Path, flag: &str) -> Result<()> {
    let probe = || -> Result<()> {
        std::fs::create_dir_all(dir).map_err(io("creating", dir))?;
        let mut tmp = temp_in(dir)?;
        tmp.write_all(&[0u8; 64 << 10])
            .and_then(|()| tmp.as_file().sync_data())
            .map_err(io("writing a probe file in", dir))?;
        tmp.close().map_err(io("removing the probe file in", dir))?;
        Ok(())
    };
    probe().map_err(|e| {
        LabError::Invalid(format!(
            "results cannot be saved in '{}' (checked before running); choose another directory with {flag}: {e}",
            dir.display()
        ))
    })
}

/// Renames `tmp` into `dir/name`, or `dir/STEM-2.json`… when that name is taken.
fn persist_numbered(mut tmp: tempfile::NamedTempFile, dir: &Path, name: &str) -> Result<PathBuf> {
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
            Err(e) => return Err(io("renaming the result into", &path)(e.error)),
        }
    }
    Err(LabError::Unsaved(format!(
        "'{}' and 10,000 numbered variants of it exist already",
        dir.join(name).display()
    )))
}

/// Saves `bytes` as `dir/name` (numbered if taken).
fn save_in(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(io("creating the results directory", dir))?;
    let mut tmp = temp_in(dir)?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_data())
        .map_err(io("writing the result in", dir))?;
    persist_numbered(tmp, dir, name)
}

/// Where [`save_rescuing`] put a document.
#[derive(Debug)]
pub struct Saved {
    /// The file.
    pub path: PathBuf,
    /// Set when it is not where asked: the warning to show.
    pub rescued: Option<String>,
}

/// Saves `bytes` as `dir/name` atomically; when that fails, in `$TMPDIR` or the current
/// directory (with a warning saying where). When nothing works the error lists every attempt.
pub fn save_rescuing(dir: &Path, name: &str, bytes: &[u8]) -> Result<Saved> {
    let err = match save_in(dir, name, bytes) {
        Ok(path) => {
            return Ok(Saved {
                path,
                rescued: None,
            })
        }
        Err(e) => e,
    };
    let mut tried = vec![err.to_string()];
    for alt in [std::env::temp_dir(), PathBuf::from(".")] {
        if alt == dir {
            continue;
        }
        match save_in(&alt, name, bytes) {
            Ok(path) => {
                let warning = format!(
                    "could not save the result in '{}' ({err}); saved it as '{}' instead",
                    dir.display(),
                    path.display()
                );
                return Ok(Saved {
                    path,
                    rescued: Some(warning),
                });
            }
            Err(e) => tried.push(e.to_string()),
        }
    }
    Err(LabError::Unsaved(format!(
        "could not save the result anywhere ({})",
        tried.join("; ")
    )))
}

/// A file name like `run-20261121T140502Z-oltp-data.json` from an RFC 3339 timestamp.
pub fn result_file_name(kind: &str, timestamp: &str, label: &str) -> String {
    format!(
        "{kind}-{}-{}.json",
        oio_core::host::compact(timestamp),
        oio_core::text::slug(label, 100)
    )
}

/// Writes every document into a directory as it comes (see the module docs).
pub struct FileSink {
    dir: PathBuf,
    fallback: Box<dyn Write + Send>,
    on_rescue: Box<dyn FnMut(&str) + Send>,
    rescued: bool,
}

impl FileSink {
    /// A sink writing into `dir`; a result that cannot be saved anywhere goes to `fallback`,
    /// and `on_rescue` hears each warning about a result saved elsewhere.
    pub fn new(
        dir: impl Into<PathBuf>,
        fallback: Box<dyn Write + Send>,
        on_rescue: Box<dyn FnMut(&str) + Send>,
    ) -> FileSink {
        FileSink {
            dir: dir.into(),
            fallback,
            on_rescue,
            rescued: false,
        }
    }

    /// The directory results go into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether any result had to be saved elsewhere than asked (or could only be printed).
    pub fn rescued(&self) -> bool {
        self.rescued
    }

    /// Saves `bytes` as `subdir/name`, rescuing it when needed.
    pub fn save_bytes(
        &mut self,
        subdir: Option<&str>,
        name: &str,
        bytes: &[u8],
    ) -> Result<PathBuf> {
        let dir = match subdir {
            Some(s) => self.dir.join(s),
            None => self.dir.clone(),
        };
        match save_rescuing(&dir, name, bytes) {
            Ok(s) => {
                if let Some(w) = &s.rescued {
                    self.rescued = true;
                    (self.on_rescue)(w);
                }
                Ok(s.path)
            }
            Err(e) => {
                self.rescued = true;
                let printed = self
                    .fallback
                    .write_all(bytes)
                    .and_then(|()| self.fallback.flush())
                    .is_ok();
                Err(LabError::Unsaved(format!(
                    "{e}{}",
                    if printed {
                        "; it was printed on stdout"
                    } else {
                        ""
                    }
                )))
            }
        }
    }
}

/// Pretty JSON with a final newline, as every result file is written.
pub fn json_bytes<T: serde::Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| LabError::Json(format!("serializing the result: {e}")))?;
    bytes.push(b'\n');
    Ok(bytes)
}

impl Sink for FileSink {
    fn save(&mut self, item: &Item<'_>, doc: &serde_json::Value) -> Result<PathBuf> {
        self.save_json(item, &json_bytes(doc)?)
    }

    fn save_json(&mut self, item: &Item<'_>, bytes: &[u8]) -> Result<PathBuf> {
        let name = result_file_name(item.kind, item.timestamp, item.label);
        self.save_bytes(item.subdir, &name, bytes)
    }
}

/// Keeps documents in memory (tests, callers that store results elsewhere).
#[derive(Debug, Default)]
pub struct MemorySink {
    /// Every document saved, with the name a file sink would have given it.
    pub docs: Vec<(PathBuf, serde_json::Value)>,
}

impl Sink for MemorySink {
    fn save(&mut self, item: &Item<'_>, doc: &serde_json::Value) -> Result<PathBuf> {
        let name = result_file_name(item.kind, item.timestamp, item.label);
        let path = match item.subdir {
            Some(s) => Path::new(s).join(name),
            None => PathBuf::from(name),
        };
        self.docs.push((path.clone(), doc.clone()));
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_time_and_never_replace_an_earlier_file() {
        assert_eq!(
            result_file_name("run", "2026-11-21T14:05:02Z", "a/b c"),
            "run-20261121T140502Z-a-b-c.json"
        );
        let d = tempfile::tempdir().unwrap();
        let mut sink = FileSink::new(d.path(), Box::new(std::io::sink()), Box::new(|_| {}));
        let item = Item {
            subdir: Some("A"),
            kind: "run",
            timestamp: "2026-11-21T14:05:02Z",
            label: "x",
        };
        let a = sink.save(&item, &serde_json::json!({"n": 1})).unwrap();
        let b = sink.save(&item, &serde_json::json!({"n": 2})).unwrap();
        assert_eq!(a, d.path().join("A/run-20261121T140502Z-x.json"));
        assert_eq!(b, d.path().join("A/run-20261121T140502Z-x-2.json"));
        let first: serde_json::Value = serde_json::from_slice(&std::fs::read(&a).unwrap()).unwrap();
        assert_eq!(first["n"], 1);
        assert!(!sink.rescued());
        // Nothing but the two results: no temporary file left behind.
        assert_eq!(std::fs::read_dir(d.path().join("A")).unwrap().count(), 2);
    }

    #[test]
    fn a_directory_that_cannot_be_made_is_refused_before_running() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let e = check_destination(&file.join("sub"), "--out DIR").unwrap_err();
        assert!(
            e.to_string()
                .contains("choose another directory with --out DIR"),
            "{e}"
        );
    }
}
