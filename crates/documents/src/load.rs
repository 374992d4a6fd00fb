//! Reading what the analysis commands are given: files and directories of oio documents, fio
//! JSON and telemetry, into typed documents.
//!
//! Every JSON file goes through [`oio_core::document`] (kind and version checked, fio JSON and
//! `--repeat` arrays recognised); documents are told apart by their `schema` field, never by
//! file names. `oio report`, `oio compare` and `oio diagnose` all load through here.
//!
//! Parsing fio's JSON and telemetry is the telemetry parsers' business: they come in as a
//! [`Parsers`], so this crate (and the report) need none of them.

use oio_core::document::{self, DocumentError, Kind, Loaded};
use oio_core::observation::Observation;
use oio_core::result::RunResult;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// An error of a [`Parsers`] (its message names the file).
pub type ParseError = Box<dyn std::error::Error + Send + Sync>;

/// What a file holds, by its head, as the telemetry parsers tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Nothing the parsers recognise.
    Unknown,
    /// fio's JSON output.
    FioJson,
    /// An `oio.observation` document.
    Observation,
    /// `iostat -o JSON`.
    IostatJson,
    /// Any other telemetry format the parsers read.
    Telemetry,
}

/// The parsers the loader is given: fio's JSON and telemetry files.
pub trait Parsers {
    /// fio's JSON output (`text`, read from `file`) as a run.
    fn fio_json(&self, file: &str, text: &str) -> Result<RunResult, ParseError>;
    /// What `path` holds by its head, and the head as text.
    fn sniff(&self, path: &Path) -> Result<(Format, String), ParseError>;
    /// A telemetry file as an observation.
    fn telemetry(&self, path: &Path) -> Result<Observation, ParseError>;
}

/// Parsers for oio documents alone: fio JSON and telemetry are refused, saying so.
#[derive(Clone, Copy, Debug, Default)]
pub struct DocumentsOnly;

impl Parsers for DocumentsOnly {
    fn fio_json(&self, file: &str, _: &str) -> Result<RunResult, ParseError> {
        Err(format!("'{file}' is fio JSON, which this reader does not parse").into())
    }
    fn sniff(&self, path: &Path) -> Result<(Format, String), ParseError> {
        let head = document::read_text(path)?;
        Ok((Format::Unknown, head))
    }
    fn telemetry(&self, path: &Path) -> Result<Observation, ParseError> {
        Err(format!(
            "'{}': telemetry, which this reader does not parse",
            path.display()
        )
        .into())
    }
}

/// Why inputs could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A file or directory could not be read or listed.
    #[error("{what} '{file}': {source}")]
    Io {
        /// "reading" or "listing".
        what: &'static str,
        /// The path.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// An oio or fio JSON document that could not be read.
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// fio JSON or telemetry that could not be parsed.
    #[error(transparent)]
    Telemetry(ParseError),
    /// A file named on the command line that oio does not read.
    #[error("'{0}' is neither an oio or fio JSON document nor telemetry oio reads (perfmon CSV, iostat -x or JSON, /proc/diskstats snapshots, blkparse text, fio bw/iops/lat logs)")]
    Unreadable(String),
}

/// One document read from disk.
pub enum Input {
    /// An oio run (or a fio result converted to one).
    Run {
        /// The result.
        result: Box<RunResult>,
        /// Its file.
        path: PathBuf,
    },
    /// Any other oio document, by schema (its kind and version already checked).
    Doc {
        /// Its `schema` value.
        schema: String,
        /// The parsed JSON.
        value: Value,
        /// Its file.
        path: PathBuf,
    },
}

impl Input {
    /// The file.
    pub fn path(&self) -> &Path {
        match self {
            Input::Run { path, .. } | Input::Doc { path, .. } => path,
        }
    }

    /// What kind of document (its `schema`).
    pub fn kind(&self) -> &str {
        match self {
            Input::Run { .. } => Kind::Run.schema(),
            Input::Doc { schema, .. } => schema,
        }
    }

    /// The document as the type of its kind.
    pub fn typed<T: serde::de::DeserializeOwned>(
        value: Value,
        path: &Path,
    ) -> Result<T, InputError> {
        let kind = value
            .get("schema")
            .and_then(Value::as_str)
            .and_then(Kind::from_schema)
            .unwrap_or(Kind::Run);
        let doc = document::Document {
            kind,
            schema_version: kind.version(),
            value,
        };
        Ok(doc.into_typed(&path.display().to_string())?)
    }
}

/// A telemetry file read as an observation.
pub type Telemetry = (PathBuf, Observation);

/// What [`load_all`] read.
#[derive(Default)]
pub struct ReportInputs {
    /// oio and fio JSON documents.
    pub docs: Vec<Input>,
    /// Telemetry files, as observations.
    pub telemetry: Vec<Telemetry>,
    /// What was skipped and why (files in directories that oio does not read, links to
    /// directories, second paths to one file), one sentence each.
    pub notices: Vec<String>,
}

/// The files under the paths given, each once, and what was passed over.
///
/// The rule for links: a path named on the command line is followed wherever it points; in a
/// directory, a link to a file is read, a link to a directory is not followed (it may lead to
/// a parent and round forever, or out of the results into /etc), with a notice. Every file
/// and directory is read once, known by its device and inode, however many paths lead to it.
/// In a directory, what cannot be read is passed over with a notice; a named path that cannot
/// be read is an error.
#[derive(Default)]
struct Walk {
    /// Files, with `true` beside the paths named directly.
    files: Vec<(PathBuf, bool)>,
    notices: Vec<String>,
    seen: std::collections::HashSet<(u64, u64)>,
}

impl Walk {
    fn of(paths: &[PathBuf]) -> Result<Walk, InputError> {
        let mut w = Walk::default();
        for p in paths {
            w.named(p)?;
        }
        Ok(w)
    }

    /// First visit of the file or directory `meta` describes.
    fn first_visit(&mut self, meta: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.seen.insert((meta.dev(), meta.ino()))
    }

    fn named(&mut self, path: &Path) -> Result<(), InputError> {
        let meta = std::fs::metadata(path).map_err(|e| InputError::Io {
            what: "reading",
            file: path.display().to_string(),
            source: e,
        })?;
        if !self.first_visit(&meta) {
            return Ok(());
        }
        if !meta.is_dir() {
            self.files.push((path.to_path_buf(), true));
            return Ok(());
        }
        let entries = std::fs::read_dir(path).map_err(|e| InputError::Io {
            what: "listing",
            file: path.display().to_string(),
            source: e,
        })?;
        self.entries(entries);
        Ok(())
    }

    /// A directory's entries, sorted by name, hidden ones left out, recursively.
    fn entries(&mut self, entries: std::fs::ReadDir) {
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                !p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
            })
            .collect();
        paths.sort();
        for p in paths {
            self.entry(&p);
        }
    }

    fn entry(&mut self, p: &Path) {
        let shown = p.display();
        let link = std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) => {
                let what = if link { "a broken link" } else { "unreadable" };
                self.notices.push(format!("{shown}: {what} ({e}); skipped"));
                return;
            }
        };
        if meta.is_dir() && link {
            self.notices.push(format!(
                "{shown}: a link to a directory, not followed (name it on the command line to read it)"
            ));
            return;
        }
        if !(meta.is_dir() || meta.is_file()) {
            // A FIFO, device or socket among results is never read (it could block or
            // never end), but it is said, as every other file passed over is.
            self.notices
                .push(format!("{shown}: not a regular file; skipped"));
            return;
        }
        if !self.first_visit(&meta) {
            self.notices
                .push(format!("{shown}: read already by another path; skipped"));
            return;
        }
        if meta.is_file() {
            self.files.push((p.to_path_buf(), false));
            return;
        }
        match std::fs::read_dir(p) {
            Ok(entries) => self.entries(entries),
            Err(e) => self
                .notices
                .push(format!("{shown}: cannot be listed ({e}); skipped")),
        }
    }
}

/// Reads one JSON file into documents (several for a `--repeat --json` array).
fn load_json(f: &Path, p: &dyn Parsers, out: &mut Vec<Input>) -> Result<(), InputError> {
    let name = f.display().to_string();
    match document::load_file(f)? {
        Loaded::FioJson(text) => out.push(Input::Run {
            result: Box::new(p.fio_json(&name, &text).map_err(InputError::Telemetry)?),
            path: f.to_path_buf(),
        }),
        Loaded::Documents(docs) => {
            for d in docs {
                if d.kind == Kind::Run {
                    out.push(Input::Run {
                        result: Box::new(d.into_typed(&name)?),
                        path: f.to_path_buf(),
                    });
                } else {
                    out.push(Input::Doc {
                        schema: d.kind.schema().to_string(),
                        value: d.value,
                        path: f.to_path_buf(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Reads one file found in a directory: what cannot be read becomes a notice (the file is
/// named in the error), so one stray file does not hide the rest; a named file's error stands.
fn load_or_note(
    f: &Path,
    named: bool,
    notices: &mut Vec<String>,
    load: impl FnOnce() -> Result<(), InputError>,
) -> Result<(), InputError> {
    match load() {
        Err(e) if !named => {
            let e = e.to_string();
            let shown = f.display().to_string();
            notices.push(if e.contains(&shown) {
                format!("{e}; skipped")
            } else {
                format!("{shown}: {e}; skipped")
            });
            Ok(())
        }
        r => r,
    }
}

/// Documents read from files and directories (recursively, `*.json`, sorted by name), and a
/// notice for each path passed over.
pub fn load_inputs(
    paths: &[PathBuf],
    p: &dyn Parsers,
) -> Result<(Vec<Input>, Vec<String>), InputError> {
    let w = Walk::of(paths)?;
    let mut notices = w.notices;
    let mut out = Vec::new();
    for (f, named) in w.files {
        if named || f.extension().is_some_and(|e| e == "json") {
            load_or_note(&f, named, &mut notices, || load_json(&f, p, &mut out))?;
        }
    }
    once_each(&mut out, &mut notices);
    Ok((out, notices))
}

/// Keeps one of fio runs with the same content (start time, workload and totals): a fio
/// result and `oio import`'s NAME.oio.json of it beside it are one run, not a repeat group of
/// two with no spread. The later copy is dropped with a notice.
fn once_each(docs: &mut Vec<Input>, notices: &mut Vec<String>) {
    let mut seen: Vec<(String, PathBuf)> = Vec::new();
    docs.retain(|d| {
        let Input::Run { result, path } = d else {
            return true;
        };
        // Only fio results: copies of an oio run are the user's to see as identical runs
        // (compare says they have no spread), an import beside its source is oio's doing.
        if !result.engine.name.starts_with("fio") {
            return true;
        }
        // Counts, not floats: a number read back from JSON may differ in its last bit.
        let s = &result.summary;
        let key = format!(
            "{}\u{0}{}\u{0}{} {} {} {} {} {}",
            result.envelope.timestamp,
            result.workload.name,
            s.read.ios,
            s.read.bytes,
            s.write.ios,
            s.write.bytes,
            s.total.ios,
            s.total.bytes
        );
        // Copies inside one file (a repeat array) are that file's business, not an import's.
        match seen.iter().find(|(k, p)| *k == key && p != path) {
            Some((_, first)) => {
                notices.push(format!(
                    "{}: the same run as {} (same start, workload and totals: an import of it?); counted once",
                    path.display(),
                    first.display()
                ));
                false
            }
            None => {
                seen.push((key, path.clone()));
                true
            }
        }
    });
}

/// True when the head of a file looks like JSON (after a byte-order mark).
fn looks_like_json(head: &str) -> bool {
    head.trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with(['{', '['])
}

/// Reads what `oio report` is given (each path, and in directories every file): oio and fio JSON documents, and telemetry files of any
/// format the telemetry parsers read (perfmon CSV, iostat, diskstats, blkparse, fio logs),
/// which become observations. In a directory, files that are neither, or that cannot be read,
/// are skipped with a notice; a file named on the command line that is neither is an error.
pub fn load_all(paths: &[PathBuf], p: &dyn Parsers) -> Result<ReportInputs, InputError> {
    let w = Walk::of(paths)?;
    let mut out = ReportInputs {
        notices: w.notices,
        ..ReportInputs::default()
    };
    for (f, named) in w.files {
        let mut notices = std::mem::take(&mut out.notices);
        load_or_note(&f, named, &mut notices, || any_file(&f, named, p, &mut out))?;
        out.notices.append(&mut notices);
    }
    once_each(&mut out.docs, &mut out.notices);
    Ok(out)
}

/// One file of [`load_all`]'s, by what it holds.
fn any_file(
    f: &Path,
    named: bool,
    p: &dyn Parsers,
    out: &mut ReportInputs,
) -> Result<(), InputError> {
    let name = f.display().to_string();
    let (format, h) = match is_blg(f) {
        // Named, the reader says how to convert it (relog); in a directory, skipped.
        true if named => (Format::Telemetry, String::new()),
        true => (Format::Unknown, String::new()),
        false => p.sniff(f).map_err(InputError::Telemetry)?,
    };
    // JSON is an oio or fio document unless it is iostat's (the text heuristics of the
    // detector could take a one-line JSON document for something else).
    let iostat_json = format == Format::IostatJson;
    match format {
        _ if looks_like_json(&h) && !iostat_json => load_json(f, p, &mut out.docs)?,
        Format::Observation | Format::IostatJson | Format::Telemetry => {
            let obs = p.telemetry(f).map_err(InputError::Telemetry)?;
            out.telemetry.push((f.to_path_buf(), obs));
        }
        _ if named => return Err(InputError::Unreadable(name)),
        _ => out.notices.push(format!(
            "{name}: not a result or telemetry oio reads; skipped"
        )),
    }
    Ok(())
}

/// A short label: the file stem, prefixed by its directory when that helps.
pub fn label_of(path: &Path) -> String {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("?")
        .to_string();
    // run-20261121T143731Z-randread-4k -> randread-4k: what ran, not when (the time is in
    // the tables and the environment).
    let stem = ["tpcc-series-", "tpcc-build-", "tpcc-check-"]
        .iter()
        .find_map(|p| stem.strip_prefix(p))
        .map(str::to_string)
        .unwrap_or(stem);
    let stem = match stem.split_once('-') {
        Some((kind, rest))
            if ["run", "sweep", "tpcc", "compare", "record", "fleet"].contains(&kind) =>
        {
            rest.to_string()
        }
        _ => stem,
    };
    let stem = match stem.split_once('-') {
        // ASCII first: byte slicing a name with non-ASCII characters would split one.
        Some((ts, rest))
            if ts.is_ascii() && ts.len() == 16 && ts.as_bytes()[8] == b'T' && ts.ends_with('Z') =>
        {
            rest.to_string()
        }
        None if stem.is_ascii() && stem.len() == 16 && stem.as_bytes()[8] == b'T' => {
            "result".to_string()
        }
        _ => stem,
    };
    match path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|s| s.to_str())
    {
        Some(d) if d != "oio-results" && !d.is_empty() => format!("{d}/{stem}"),
        _ => stem,
    }
}

/// True when `path` is a telemetry capture rather than a JSON document (`oio diagnose` parses
/// a path named on its command line that is one as telemetry).
pub fn is_capture(path: &Path, p: &dyn Parsers) -> Result<bool, InputError> {
    if path.is_dir() {
        return Ok(false);
    }
    if is_blg(path) {
        // The reader refuses it with the relog command that converts it.
        return Ok(true);
    }
    let (format, text) = p.sniff(path).map_err(InputError::Telemetry)?;
    Ok(match format {
        Format::Observation | Format::FioJson => false,
        Format::IostatJson | Format::Telemetry => true,
        // Other text: let the telemetry reader decide unless it looks like JSON.
        Format::Unknown => !looks_like_json(&text),
    })
}

/// A perfmon binary log, which the telemetry reader refuses with how to convert it.
fn is_blg(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("blg"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_what_ran_not_when() {
        assert_eq!(
            label_of(Path::new(
                "oio-results/run-20261121T143731Z-randread-4k.json"
            )),
            "randread-4k"
        );
        assert_eq!(
            label_of(Path::new("raid5/20261121T143731Z.json")),
            "raid5/result"
        );
        assert_eq!(label_of(Path::new("x/é-ü.json")), "x/é-ü");
        assert_eq!(
            label_of(Path::new(
                "oio-results/tpcc-series-20261123T214214Z-sqlite-w1-series.json"
            )),
            "sqlite-w1-series"
        );
        assert_eq!(
            label_of(Path::new("fleet/fleet-20261123T214159Z-randread-4k.json")),
            "fleet/randread-4k"
        );
    }

    /// Parses "fio JSON" as the oio run of the fixture, engine fio: enough for the loader,
    /// which only needs a run back.
    struct FakeFio;

    impl Parsers for FakeFio {
        fn fio_json(&self, _: &str, _: &str) -> Result<RunResult, ParseError> {
            let mut r: RunResult = serde_json::from_str(RUN)?;
            r.engine.name = "fio-3.33".into();
            Ok(r)
        }
        fn sniff(&self, p: &Path) -> Result<(Format, String), ParseError> {
            DocumentsOnly.sniff(p)
        }
        fn telemetry(&self, p: &Path) -> Result<Observation, ParseError> {
            DocumentsOnly.telemetry(p)
        }
    }

    const RUN: &str = include_str!("../../analysis/tests/fixtures/run-null.json");

    #[test]
    fn a_run_and_its_import_beside_it_count_once() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("fio.json"),
            r#"{"fio version":"fio-3.33","jobs":[]}"#,
        )
        .unwrap();
        let imported = FakeFio.fio_json("fio.json", "").unwrap();
        std::fs::write(
            d.path().join("fio.oio.json"),
            serde_json::to_vec(&imported).unwrap(),
        )
        .unwrap();
        let (docs, notices) = load_inputs(&[d.path().to_path_buf()], &FakeFio).unwrap();
        assert_eq!(docs.len(), 1, "{notices:?}");
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(
            notices[0].contains("fio.oio.json") && notices[0].contains("counted once"),
            "{notices:?}"
        );
        // Copies of an oio run are the user's to see as identical runs: both kept.
        std::fs::write(d.path().join("a.json"), RUN).unwrap();
        std::fs::write(d.path().join("b.json"), RUN).unwrap();
        let (docs, _) = load_inputs(&[d.path().to_path_buf()], &FakeFio).unwrap();
        assert_eq!(docs.len(), 3);
    }

    /// A file that cannot be read (not UTF-8, not JSON) is a notice naming it, and the
    /// directory's other files are read; nothing readable at all is no error but no input.
    #[test]
    fn unreadable_files_are_notices_naming_them() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("r.json"), RUN).unwrap();
        std::fs::write(d.path().join("binary.json"), [0xff, 0xfe, 0x00, 0x9f]).unwrap();
        let (docs, notices) = load_inputs(&[d.path().to_path_buf()], &DocumentsOnly).unwrap();
        assert_eq!(docs.len(), 1);
        assert!(
            notices.len() == 1
                && notices[0].contains("binary.json")
                && notices[0].ends_with("skipped"),
            "{notices:?}"
        );
        assert!(load_inputs(&[d.path().join("binary.json")], &DocumentsOnly).is_err());
    }

    #[test]
    fn a_newer_document_is_skipped_in_a_directory_and_refused_by_name() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.json");
        std::fs::write(&f, r#"{"schema":"oio.sweep","schema_version":99}"#).unwrap();
        let (got, notices) = load_inputs(&[d.path().to_path_buf()], &DocumentsOnly).unwrap();
        assert!(got.is_empty());
        assert!(
            notices.len() == 1
                && notices[0].contains("s.json")
                && notices[0].contains("schema_version 99"),
            "{notices:?}"
        );
        let e = load_inputs(std::slice::from_ref(&f), &DocumentsOnly)
            .err()
            .expect("refused")
            .to_string();
        assert!(
            e.contains("s.json") && e.contains("schema_version 99"),
            "{e}"
        );
    }

    /// Directory links are not followed in a walk (two links to `.` once ran until killed),
    /// a file reached by two paths is read once, and the named path is followed.
    #[test]
    fn links_in_directories_neither_loop_nor_count_twice() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        let run = include_str!("../../analysis/tests/fixtures/run-null.json");
        std::fs::write(d.path().join("r.json"), run).unwrap();
        symlink(".", d.path().join("a")).unwrap();
        symlink(".", d.path().join("b")).unwrap();
        symlink("/etc", d.path().join("etc")).unwrap();
        symlink("r.json", d.path().join("same.json")).unwrap();
        symlink("missing.json", d.path().join("broken.json")).unwrap();
        let (got, notices) = load_inputs(&[d.path().to_path_buf()], &DocumentsOnly).unwrap();
        assert_eq!(got.len(), 1, "one run, read once");
        let all = notices.join("\n");
        for what in [
            "a: a link to a directory",
            "b: a link to a directory",
            "etc: a link to a directory",
            "same.json: read already",
            "broken.json: a broken link",
        ] {
            assert!(all.contains(what), "{what}: {all}");
        }
        // Named, a link to a directory is followed.
        let (got, _) = load_inputs(&[d.path().join("a")], &DocumentsOnly).unwrap();
        assert_eq!(got.len(), 1);
        // The same directory named twice is read once.
        let (got, _) = load_inputs(
            &[d.path().to_path_buf(), d.path().join("b")],
            &DocumentsOnly,
        )
        .unwrap();
        assert_eq!(got.len(), 1);
    }

    /// One file that cannot be read does not hide the others (a fio job file, a format oio
    /// imports, once aborted a report of its directory).
    #[test]
    fn a_stray_file_in_a_directory_is_a_notice_not_an_error() {
        let d = tempfile::tempdir().unwrap();
        let run = include_str!("../../analysis/tests/fixtures/run-null.json");
        std::fs::write(d.path().join("r.json"), run).unwrap();
        std::fs::write(d.path().join("bad.json"), "{ not json").unwrap();
        std::fs::write(d.path().join("job.fio"), "[global]\nrw=randread\n[j]\n").unwrap();
        let r = load_all(&[d.path().to_path_buf()], &DocumentsOnly).unwrap();
        assert_eq!(r.docs.len(), 1);
        let all = r.notices.join("\n");
        assert!(all.contains("bad.json") && all.contains("job.fio"), "{all}");
        // Named on the command line, the same file is an error.
        assert!(load_all(&[d.path().join("bad.json")], &DocumentsOnly).is_err());
    }
}
