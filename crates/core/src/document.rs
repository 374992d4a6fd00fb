//! The envelope every oio JSON document carries, and how any document is recognised on load.
//!
//! Each document kind flattens an [`Envelope`] into its top level (`#[serde(flatten)]`), so the
//! fields `schema`, `schema_version`, `oio_version`, `timestamp`, `command`, `host`, `partial`,
//! `stop_reason` and `warnings` sit at the same place in every kind. Latencies are nanoseconds in
//! every kind.
//!
//! Every reader goes through [`load_file`] or [`parse`]: they read the head of a document
//! (`schema`, `schema_version`), accept only the kinds in [`Kind`], and refuse a version newer
//! than this oio reads with a message naming the file, the kind and both versions, so a result
//! written by a newer oio is never half-read. fio's JSON output and the array
//! `oio run --repeat N --json` prints are recognised too. [`read`] does the same for a caller
//! that wants one kind, typed.

use crate::host::HostInfo;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// Why a measurement ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It ran for as long or as far as it was asked.
    #[default]
    Completed,
    /// A signal (Ctrl-C, SIGTERM, SIGHUP) or the caller stopped it.
    Interrupted,
    /// Errors stopped it (I/O errors, a lost host, a database that went away).
    Errors,
}

impl StopReason {
    /// Whether the document covers less than was asked.
    pub fn is_partial(self) -> bool {
        self != StopReason::Completed
    }

    /// The word used in JSON and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::Interrupted => "interrupted",
            StopReason::Errors => "errors",
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fields every oio document starts with.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope {
    /// The document kind, e.g. `oio.run`.
    pub schema: String,
    /// The kind's schema version the writer used; bumped on incompatible changes.
    pub schema_version: u32,
    /// Version of oio that wrote it (empty in documents older than the envelope that did not
    /// record it: observations and characterizations).
    #[serde(default)]
    pub oio_version: String,
    /// When the measurement (or the analysis) started, RFC 3339 UTC (empty when an older
    /// document did not record it).
    #[serde(default)]
    pub timestamp: String,
    /// The command line as given (empty when not known, e.g. a document made in a library).
    #[serde(default)]
    pub command: Vec<String>,
    /// The machine that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
    /// True when the document covers less than was asked (see `stop_reason`).
    #[serde(default)]
    pub partial: bool,
    /// Why the measurement ended.
    #[serde(default)]
    pub stop_reason: StopReason,
    /// Things the reader should know when interpreting the numbers.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The experiment plan that produced the document, as `oio rerun` reads it back (absent
    /// for documents that are analyses of other documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<serde_json::Value>,
    /// The name the user gave the measurement (`--label`), e.g. the setting under test: how
    /// `compare`, the report and `diagnose` name it (absent when none was given, and in
    /// documents written before commands took one). TPC-C results and series keep theirs in
    /// their own `label` field, the same key in JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl Envelope {
    /// An envelope for a new document of `schema` at `schema_version`, stamped now.
    pub fn new(schema: &str, schema_version: u32) -> Envelope {
        Envelope {
            schema: schema.to_string(),
            schema_version,
            oio_version: env!("CARGO_PKG_VERSION").to_string(),
            timestamp: crate::host::now_rfc3339(),
            command: Vec::new(),
            host: None,
            partial: false,
            stop_reason: StopReason::Completed,
            warnings: Vec::new(),
            plan: None,
            label: None,
        }
    }

    /// Sets why it stopped, and `partial` with it.
    pub fn stopped(&mut self, reason: StopReason) {
        self.stop_reason = reason;
        self.partial = reason.is_partial();
    }

    /// A document built as a JSON object (`serde_json::json!`) with this envelope's fields
    /// at its top level, as `#[serde(flatten)]` puts them in a typed document. A `body` that is
    /// not an object is returned unchanged.
    pub fn wrap(&self, mut body: Value) -> Value {
        if let (Some(obj), Ok(Value::Object(head))) =
            (body.as_object_mut(), serde_json::to_value(self))
        {
            for (k, v) in head {
                obj.insert(k, v);
            }
        }
        body
    }
}

/// Every document kind this oio reads, with the newest schema version it reads (and writes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `oio run` (and fio JSON converted by `oio import`): `oio.run`.
    Run,
    /// Device telemetry from any source: `oio.observation`.
    Observation,
    /// `oio characterize`: `oio.characterization`.
    Characterization,
    /// `oio compare`: `oio.compare`.
    Compare,
    /// `oio sweep`: `oio.sweep`.
    Sweep,
    /// `oio diagnose --json`: `oio.diagnosis`.
    Diagnosis,
    /// `oio blend --json`: `oio.blend`.
    Blend,
    /// `oio verify --json`: `oio.verify`.
    Verify,
    /// `oio tpcc run`: `oio.tpcc`.
    Tpcc,
    /// `oio tpcc check`: `oio.tpcc.check`.
    TpccCheck,
    /// The state file `oio tpcc build` leaves beside a database: `oio.tpcc.build`.
    TpccBuild,
    /// A TPC-C per-interval series: `oio.tpcc.series`.
    TpccSeries,
    /// The merged result of `oio fleet run`: `oio.fleet`.
    Fleet,
    /// The merged result of `oio fleet tpcc run`: `oio.fleet.tpcc`.
    FleetTpcc,
    /// The host ladder of `oio fleet scale`: `oio.fleet.scale`.
    FleetScale,
    /// The host ladder of `oio fleet tpcc scale`: `oio.fleet.tpcc.scale`.
    FleetTpccScale,
    /// `oio sql run` (users' own transactions): `oio.sql`.
    Sql,
}

impl Kind {
    /// Every kind, in the order messages list them.
    pub const ALL: [Kind; 17] = [
        Kind::Run,
        Kind::Observation,
        Kind::Characterization,
        Kind::Compare,
        Kind::Sweep,
        Kind::Diagnosis,
        Kind::Blend,
        Kind::Verify,
        Kind::Tpcc,
        Kind::TpccCheck,
        Kind::TpccBuild,
        Kind::TpccSeries,
        Kind::Fleet,
        Kind::FleetTpcc,
        Kind::FleetScale,
        Kind::FleetTpccScale,
        Kind::Sql,
    ];

    /// The `schema` value of this kind.
    pub const fn schema(self) -> &'static str {
        match self {
            Kind::Run => "oio.run",
            Kind::Observation => "oio.observation",
            Kind::Characterization => "oio.characterization",
            Kind::Compare => "oio.compare",
            Kind::Sweep => "oio.sweep",
            Kind::Diagnosis => "oio.diagnosis",
            Kind::Blend => "oio.blend",
            Kind::Verify => "oio.verify",
            Kind::Tpcc => "oio.tpcc",
            Kind::TpccCheck => "oio.tpcc.check",
            Kind::TpccBuild => "oio.tpcc.build",
            Kind::TpccSeries => "oio.tpcc.series",
            Kind::Fleet => "oio.fleet",
            Kind::FleetTpcc => "oio.fleet.tpcc",
            Kind::FleetScale => "oio.fleet.scale",
            Kind::FleetTpccScale => "oio.fleet.tpcc.scale",
            Kind::Sql => "oio.sql",
        }
    }

    /// The schema version this oio writes, and the newest it reads. A version is a major
    /// version: it changes only when a reader of the older one would misread the newer.
    pub const fn version(self) -> u32 {
        match self {
            // compare 3: outcomes undecided / equal within resolution / no significant
            // difference, significance adjusted over the family, margin and interval of one ratio.
            Kind::Compare => 3,
            // characterization 2: latency_mean_ns instead of latency_mean_ms (1 still reads).
            Kind::Sweep | Kind::Characterization => 2,
            // TPC-C 2: the envelope, and latencies in ns instead of µs (1 is refused by name).
            Kind::Tpcc | Kind::TpccCheck | Kind::TpccBuild | Kind::TpccSeries => 2,
            _ => 1,
        }
    }

    /// The kind whose `schema` value is `schema`.
    pub fn from_schema(schema: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.schema() == schema)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.schema())
    }
}

/// Largest document read, bytes: a day of 1 s intervals is under 100 MiB; anything far larger
/// is not a document oio wrote, and reading it whole could exhaust memory.
pub const MAX_DOCUMENT_BYTES: u64 = 1 << 30;

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The file could not be read.
    #[error("reading '{file}': {source}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Not a file oio reads as input (a FIFO, a device, a kernel file, too large, not text).
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    /// Larger than [`MAX_DOCUMENT_BYTES`].
    #[error("'{file}' is {bytes} bytes: larger than any oio document (at most {MAX_DOCUMENT_BYTES} bytes)")]
    TooLarge {
        /// The file.
        file: String,
        /// Its size.
        bytes: u64,
    },
    /// Not JSON at all.
    #[error("'{file}' line {line} column {column}: {message} (expected an oio JSON document or fio JSON output)")]
    NotJson {
        /// The file.
        file: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's words.
        message: String,
    },
    /// JSON without the head every oio document has.
    #[error("'{file}'{item}: {what}: expected an oio document ({kinds}) or fio JSON output")]
    NoHead {
        /// The file.
        file: String,
        /// " item N" inside an array, else empty.
        item: String,
        /// What is missing.
        what: String,
        /// The kinds this oio reads.
        kinds: String,
    },
    /// A `schema` this oio does not know.
    #[error("'{file}'{item}: unknown document kind \"{schema}\" (this oio reads {kinds})")]
    UnknownKind {
        /// The file.
        file: String,
        /// " item N" inside an array, else empty.
        item: String,
        /// Its `schema`.
        schema: String,
        /// The kinds this oio reads.
        kinds: String,
    },
    /// Written by a newer oio in a layout this one would misread.
    #[error("'{file}'{item}: {kind} schema_version {found} is newer than this oio ({oio}) reads ({kind} up to version {reads}); read it with a newer oio")]
    Newer {
        /// The file.
        file: String,
        /// " item N" inside an array, else empty.
        item: String,
        /// Its kind.
        kind: Kind,
        /// Its `schema_version`.
        found: u64,
        /// The newest version this oio reads.
        reads: u32,
        /// This oio's version.
        oio: &'static str,
    },
    /// Another kind than the caller asked for.
    #[error("'{file}' is {found}; expected an {expected} document")]
    WrongKind {
        /// The file.
        file: String,
        /// What it is.
        found: String,
        /// What was asked for.
        expected: Kind,
    },
    /// The right kind, but its fields do not fit it.
    #[error("'{file}'{at}: not a valid {kind} document: {message}")]
    Invalid {
        /// The file.
        file: String,
        /// " line L column C" when known, else empty.
        at: String,
        /// Its kind.
        kind: Kind,
        /// What did not fit.
        message: String,
    },
}

/// One oio document whose head was checked.
#[derive(Clone, Debug)]
pub struct Document {
    /// Its kind.
    pub kind: Kind,
    /// Its `schema_version` (at most `kind.version()`).
    pub schema_version: u32,
    /// The whole document.
    pub value: Value,
}

impl Document {
    /// The document as the type of its kind (`file` names it in the error).
    pub fn into_typed<T: DeserializeOwned>(self, file: &str) -> Result<T, DocumentError> {
        let kind = self.kind;
        serde_json::from_value(self.value).map_err(|e| DocumentError::Invalid {
            file: file.to_string(),
            at: String::new(),
            kind,
            message: e.to_string(),
        })
    }
}

/// What a JSON file turned out to be.
#[derive(Clone, Debug)]
pub enum Loaded {
    /// oio documents: one, or the items of an array (`oio run --repeat N --json`).
    Documents(Vec<Document>),
    /// fio's JSON output (its text), for the fio importer to convert.
    FioJson(String),
}

fn kinds_list() -> String {
    Kind::ALL.map(Kind::schema).join(", ")
}

/// Checks the head of one document: a known kind at a version this oio reads.
fn check_head(file: &str, item: &str, v: &Value) -> Result<(Kind, u32), DocumentError> {
    let no_head = |what: &str| DocumentError::NoHead {
        file: file.to_string(),
        item: item.to_string(),
        what: what.to_string(),
        kinds: kinds_list(),
    };
    let Some(obj) = v.as_object() else {
        return Err(no_head("not a JSON object"));
    };
    let schema = match obj.get("schema") {
        Some(Value::String(s)) => s,
        Some(_) => return Err(no_head("\"schema\" is not a string")),
        None => return Err(no_head("no \"schema\" field")),
    };
    let Some(kind) = Kind::from_schema(schema) else {
        return Err(DocumentError::UnknownKind {
            file: file.to_string(),
            item: item.to_string(),
            schema: schema.clone(),
            kinds: kinds_list(),
        });
    };
    let Some(found) = obj.get("schema_version").and_then(Value::as_u64) else {
        return Err(no_head(&format!(
            "a {kind} document without a whole-number \"schema_version\""
        )));
    };
    if found > u64::from(kind.version()) {
        return Err(DocumentError::Newer {
            file: file.to_string(),
            item: item.to_string(),
            kind,
            found,
            reads: kind.version(),
            oio: env!("CARGO_PKG_VERSION"),
        });
    }
    Ok((kind, found as u32))
}

/// Recognises the JSON text of `file` (used in messages only): oio documents, checked by
/// their head (kind and version), or fio's JSON output.
pub fn parse(file: &str, text: &str) -> Result<Loaded, DocumentError> {
    Ok(match recognise(file, text)? {
        Some(docs) => Loaded::Documents(docs),
        None => Loaded::FioJson(text.to_string()),
    })
}

/// The documents in `text`, or `None` for fio's JSON output.
fn recognise(file: &str, text: &str) -> Result<Option<Vec<Document>>, DocumentError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        // serde_json's words end with the position, which the message states once already.
        let words = e.to_string();
        let message = match words.rsplit_once(" at line ") {
            Some((m, _)) => m.to_string(),
            None => words,
        };
        DocumentError::NotJson {
            file: file.to_string(),
            line: e.line(),
            column: e.column(),
            message,
        }
    })?;
    if value.get("fio version").is_some() {
        return Ok(None);
    }
    match value {
        Value::Array(items) => {
            let mut docs = Vec::with_capacity(items.len());
            for (i, v) in items.into_iter().enumerate() {
                let (kind, schema_version) = check_head(file, &format!(" item {i}"), &v)?;
                let mut v = v;
                neutralize_controls(&mut v, false);
                docs.push(Document {
                    kind,
                    schema_version,
                    value: v,
                });
            }
            Ok(Some(docs))
        }
        mut v => {
            let (kind, schema_version) = check_head(file, "", &v)?;
            neutralize_controls(&mut v, false);
            Ok(Some(vec![Document {
                kind,
                schema_version,
                value: v,
            }]))
        }
    }
}

/// Keys whose strings are prose that may span lines on purpose (a server's multi-line error, a
/// statement); every other string in a document is a name, a value or a one-line warning or
/// note (each printed on a line of its own after a prefix a second line would not carry).
const MULTI_LINE_KEYS: &[&str] = &[
    "message", "error", "errors", "sql", "detail", "details",
    // A script's text as an `oio.sql` result records it (`script.texts[].text`).
    "text",
];

/// Escapes the control characters of every string in a document as it is read (see
/// [`crate::text::printable`]), so a name handed to oio by someone else cannot act on the
/// terminal, spoof a line in a table or a log, or break a CSV row downstream; prose fields keep
/// their line feeds. Object keys are names too. A path with a control character in it becomes
/// a different, escaped path: `rerun` then refuses it as a target that does not exist.
fn neutralize_controls(v: &mut Value, multi_line: bool) {
    use std::borrow::Cow;
    match v {
        Value::String(s) => {
            let shown = match multi_line {
                true => crate::text::printable_lines(s),
                false => crate::text::printable(s),
            };
            if let Cow::Owned(shown) = shown {
                *s = shown;
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|x| neutralize_controls(x, multi_line)),
        Value::Object(map) => {
            let hostile = |k: &String| matches!(crate::text::printable(k), Cow::Owned(_));
            if map.keys().any(hostile) {
                let old = std::mem::take(map);
                for (k, x) in old {
                    map.insert(crate::text::printable(&k).into_owned(), x);
                }
            }
            for (k, x) in map.iter_mut() {
                neutralize_controls(x, multi_line || MULTI_LINE_KEYS.contains(&k.as_str()));
            }
        }
        _ => {}
    }
}

/// Reads a document file whole (refusing files over [`MAX_DOCUMENT_BYTES`]).
pub fn read_text(path: &Path) -> Result<String, DocumentError> {
    Ok(crate::input::read_text(
        path,
        MAX_DOCUMENT_BYTES,
        "an oio JSON document or fio JSON output",
    )?)
}

/// Reads and recognises one JSON file: see [`parse`].
pub fn load_file(path: &Path) -> Result<Loaded, DocumentError> {
    let text = read_text(path)?;
    Ok(match recognise(&path.display().to_string(), &text)? {
        Some(docs) => Loaded::Documents(docs),
        None => Loaded::FioJson(text),
    })
}

/// Reads one document of `kind` from JSON text, typed; `file` names it in messages. Errors in
/// the fields name the line and column.
pub fn read<T: DeserializeOwned>(file: &str, text: &str, kind: Kind) -> Result<T, DocumentError> {
    let docs = match parse(file, text)? {
        Loaded::Documents(d) => d,
        Loaded::FioJson(_) => {
            return Err(DocumentError::WrongKind {
                file: file.to_string(),
                found: "fio JSON output".into(),
                expected: kind,
            })
        }
    };
    match docs.as_slice() {
        [d] if d.kind == kind => {}
        [d] => {
            return Err(DocumentError::WrongKind {
                file: file.to_string(),
                found: format!("an {} document", d.kind),
                expected: kind,
            })
        }
        _ => {
            return Err(DocumentError::WrongKind {
                file: file.to_string(),
                found: format!("an array of {} documents", docs.len()),
                expected: kind,
            })
        }
    }
    // Typed from the value, whose strings are escaped; an error is found again in the text,
    // where serde_json names its line and column.
    let value = docs.into_iter().next().map(|d| d.value).unwrap_or_default();
    serde_json::from_value(value).map_err(|e| {
        let at = match serde_json::from_str::<T>(text) {
            Err(e) => format!(" line {} column {}", e.line(), e.column()),
            Ok(_) => String::new(),
        };
        DocumentError::Invalid {
            file: file.to_string(),
            at,
            kind,
            message: e.to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_its_schema_name() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_schema(k.schema()), Some(k));
        }
        assert_eq!(Kind::from_schema("oio.nothing"), None);
    }

    #[test]
    fn a_newer_version_is_refused_naming_file_kind_and_versions() {
        let text = r#"{"schema":"oio.sweep","schema_version":99,"oio_version":"9.0.0"}"#;
        let e = parse("s.json", text).unwrap_err().to_string();
        assert!(e.contains("'s.json'"), "{e}");
        assert!(e.contains("oio.sweep schema_version 99"), "{e}");
        assert!(e.contains("up to version 2"), "{e}");
    }

    #[test]
    fn heads_are_checked_in_arrays_and_unknown_kinds_refused() {
        let ok =
            r#"[{"schema":"oio.run","schema_version":1},{"schema":"oio.run","schema_version":1}]"#;
        match parse("a.json", ok).unwrap() {
            Loaded::Documents(d) => assert_eq!(d.len(), 2),
            Loaded::FioJson(_) => panic!("not fio"),
        }
        let bad =
            r#"[{"schema":"oio.run","schema_version":1},{"schema":"oio.run","schema_version":7}]"#;
        assert!(parse("a.json", bad)
            .unwrap_err()
            .to_string()
            .contains("item 1"));
        let e = parse("x.json", r#"{"schema":"acme.run","schema_version":1}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown document kind \"acme.run\""), "{e}");
        let e = parse("x.json", r#"{"a":1}"#).unwrap_err().to_string();
        assert!(e.contains("no \"schema\" field"), "{e}");
        let e = parse("x.json", "{\n  \"a\": }").unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
        assert!(matches!(
            parse("f.json", r#"{"fio version":"fio-3.36","jobs":[]}"#).unwrap(),
            Loaded::FioJson(_)
        ));
    }

    #[test]
    fn the_envelope_flattens_into_the_top_level() {
        #[derive(Debug, Serialize, Deserialize)]
        struct Doc {
            #[serde(flatten)]
            envelope: Envelope,
            n: u32,
        }
        let mut e = Envelope::new(Kind::Blend.schema(), Kind::Blend.version());
        e.stopped(StopReason::Interrupted);
        let v = serde_json::to_value(Doc { envelope: e, n: 3 }).unwrap();
        assert_eq!(v["schema"], "oio.blend");
        assert_eq!(v["stop_reason"], "interrupted");
        assert_eq!(v["partial"], true);
        assert_eq!(v["n"], 3);
        let text = v.to_string();
        let back: Doc = read("d.json", &text, Kind::Blend).unwrap();
        assert_eq!(back.envelope.stop_reason, StopReason::Interrupted);
        let e = read::<Doc>("d.json", &text, Kind::Run)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is an oio.blend document; expected an oio.run document"),
            "{e}"
        );
    }
}
