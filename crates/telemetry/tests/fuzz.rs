//! Property-based fuzzing (proptest, with shrinking) of every parser of user input: perfmon,
//! iostat, diskstats, blkparse, fio JSON, fio logs, the job files `oio import` reads (fio,
//! diskspd command lines and XML profiles, IOMeter ICF, vdbench), workload TOML and the unit
//! parsers.
//!
//! Inputs are near-valid: real fixture lines whose numbers are replaced by extremes (1e308,
//! 2^64, NaN, years 0 and 99999, ...), lines dropped, duplicated or cut, CRLF and junk
//! spliced in, and re-encoded as UTF-16 or Windows-1252; plus random text. Every parser must
//! return (an observation or an error whose line is in the file) without panicking.
//!
//! This binary caps its own address space (RLIMIT_AS, 2 GiB) before any test runs, so an
//! allocation proportional to a number in the input aborts it instead of exhausting the
//! machine. Each target runs a fixed number of cases (`FUZZ_CASES`, default 256) and prints
//! how many inputs it ran; `bench/fuzz` repeats it with fresh seeds for a time budget.

use oio_telemetry::{fio, parse_text, ParseOptions, TelemetryError, TextLines};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

const ADDRESS_SPACE: u64 = 2 << 30;

fn cap_memory() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let lim = rustix::process::Rlimit {
            current: Some(ADDRESS_SPACE),
            maximum: Some(ADDRESS_SPACE),
        };
        rustix::process::setrlimit(rustix::process::Resource::As, lim)
            .expect("setrlimit(RLIMIT_AS)");
    });
}

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).expect("fixture")
}

/// Numbers that broke or could break parsers: overflow, wrap, NaN, far dates, zero.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "999999999.999999999",
    "1000000000000",
    "4294967295",
    "1e-320",
    "0.0000000001",
    "12/31/99999",
    "01/01/0000",
    "9999-12-31",
    "99999-01-01",
    "25:61:61",
    "",
    "é",
    "\u{0}",
];

/// One edit of a text.
#[derive(Clone, Debug)]
enum Edit {
    /// Replace the n-th number-like token with an extreme.
    Number(usize, usize),
    /// Drop a line.
    Drop(usize),
    /// Duplicate a line.
    Dup(usize),
    /// Cut the text at a fraction of its length (on a character boundary).
    Cut(f64),
    /// Splice junk in at a fraction of the length.
    Junk(f64, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), 0..EXTREMES.len()).prop_map(|(a, b)| Edit::Number(a, b)),
        1 => any::<usize>().prop_map(Edit::Drop),
        1 => any::<usize>().prop_map(Edit::Dup),
        1 => (0.0f64..1.0).prop_map(Edit::Cut),
        1 => ((0.0f64..1.0), "[ -~\\n\\r,\"()\\\\:/.]{0,12}").prop_map(|(p, j)| Edit::Junk(p, j)),
    ]
}

/// How the text is written to bytes.
#[derive(Clone, Copy, Debug)]
enum Enc {
    Utf8,
    Crlf,
    Utf8Bom,
    Utf16Le,
    Utf16Be,
    Ansi,
}

fn enc() -> impl Strategy<Value = Enc> {
    prop_oneof![
        Just(Enc::Utf8),
        Just(Enc::Crlf),
        Just(Enc::Utf8Bom),
        Just(Enc::Utf16Le),
        Just(Enc::Utf16Be),
        Just(Enc::Ansi),
    ]
}

fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut t = text.to_string();
    for e in edits {
        match e {
            Edit::Number(k, x) => {
                let spans: Vec<(usize, usize)> = number_spans(&t);
                if !spans.is_empty() {
                    let (a, b) = spans[k % spans.len()];
                    t.replace_range(a..b, EXTREMES[*x]);
                }
            }
            Edit::Drop(k) | Edit::Dup(k) => {
                let mut lines: Vec<&str> = t.split_inclusive('\n').collect();
                if !lines.is_empty() {
                    let i = k % lines.len();
                    if matches!(e, Edit::Drop(_)) {
                        lines.remove(i);
                    } else {
                        lines.insert(i, lines[i]);
                    }
                }
                t = lines.concat();
            }
            Edit::Cut(f) => {
                let i = floor_char(&t, (*f * t.len() as f64) as usize);
                t.truncate(i);
            }
            Edit::Junk(f, j) => {
                let i = floor_char(&t, (*f * t.len() as f64) as usize);
                t.insert_str(i, j);
            }
        }
    }
    t
}

/// Byte spans of number-like tokens (digits with `.`, `/`, `:`, `-` inside).
fn number_spans(t: &str) -> Vec<(usize, usize)> {
    let b = t.as_bytes();
    let mut v = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let s = i;
            while i < b.len() && (b[i].is_ascii_digit() || b".:/-e".contains(&b[i])) {
                i += 1;
            }
            v.push((s, i));
        } else {
            i += 1;
        }
    }
    v
}

fn encode(text: &str, e: Enc) -> Vec<u8> {
    match e {
        Enc::Utf8 => text.as_bytes().to_vec(),
        Enc::Crlf => text.replace('\n', "\r\n").into_bytes(),
        Enc::Utf8Bom => [&[0xEF, 0xBB, 0xBF][..], text.as_bytes()].concat(),
        Enc::Utf16Le | Enc::Utf16Be => {
            let mut v = if matches!(e, Enc::Utf16Le) {
                vec![0xFF, 0xFE]
            } else {
                vec![0xFE, 0xFF]
            };
            for u in text.encode_utf16() {
                v.extend_from_slice(&if matches!(e, Enc::Utf16Le) {
                    u.to_le_bytes()
                } else {
                    u.to_be_bytes()
                });
            }
            v
        }
        Enc::Ansi => encoding_rs::WINDOWS_1252.encode(text).0.into_owned(),
    }
}

/// A parse error must point at a line of the input (as an editor counts them).
fn located(r: Result<(), TelemetryError>, bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Err(TelemetryError::Parse { line, .. }) = r {
        // Lines as an editor counts them; UTF-16 has two bytes per character at least.
        let max_lines = bytes
            .iter()
            .filter(|b| **b == b'\n' || **b == b'\r')
            .count()
            + 1;
        prop_assert!(
            line >= 1 && line <= max_lines,
            "line {line} outside 1..={max_lines}"
        );
    }
    Ok(())
}

/// Writes the bytes to a file and parses it the way `oio characterize` does.
fn parse_bytes(name: &str, bytes: &[u8]) -> Result<(), TelemetryError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).expect("write");
    let o = ParseOptions::default();
    oio_telemetry::parse_file(&p, &o).map(|_| ())?;
    oio_telemetry::parse_files(&[p.as_path()], &o).map(|_| ())
}

static COUNTS: [AtomicUsize; 10] = [const { AtomicUsize::new(0) }; 10];

fn count(k: usize, what: &str) {
    let n = COUNTS[k].fetch_add(1, Ordering::Relaxed) + 1;
    if n as u32 == cases() {
        eprintln!("fuzz {what}: {n} inputs, no panic");
    }
}

/// One fuzz target over a fixture: mutate, encode, parse through the file path.
fn target(
    k: usize,
    what: &str,
    name: &str,
    text: &str,
    edits: &[Edit],
    e: Enc,
) -> Result<(), TestCaseError> {
    cap_memory();
    let mutated = apply(text, edits);
    let bytes = encode(&mutated, e);
    let r = parse_bytes(name, &bytes);
    located(r, &bytes)?;
    // The in-memory parsers see the same text.
    let o = ParseOptions::default();
    let _ = parse_text(name, &mutated, &o);
    count(k, what);
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn perfmon(edits in prop::collection::vec(edit(), 1..6), e in enc()) {
        let text = read("perfmon_relog_bom_crlf_zone_parens_gaps.csv");
        target(0, "perfmon", "p.csv", text.trim_start_matches('\u{feff}'), &edits, e)?;
        let _ = oio_telemetry::perfmon::parse("p.csv", &apply(&text, &edits));
    }

    #[test]
    fn iostat(edits in prop::collection::vec(edit(), 1..6), e in enc(), which in 0usize..3) {
        let name = ["iostat_12_6_x_t_since_boot_first.txt", "iostat_10_x_t_ampm_old_header.txt", "iostat_12_6_iso_time_d_two_devices.txt"][which];
        target(1, "iostat", "i.txt", &read(name), &edits, e)?;
        let json = apply(&read("iostat_12_6_json_y.json"), &edits);
        let _ = oio_telemetry::iostat::parse_json("i.json", &json, &ParseOptions::default());
    }

    #[test]
    fn diskstats(edits in prop::collection::vec(edit(), 1..6), e in enc()) {
        target(2, "diskstats", "d.txt", &read("diskstats_5x_20_fields_timed.txt"), &edits, e)?;
    }

    #[test]
    fn blkparse(edits in prop::collection::vec(edit(), 1..6), e in enc()) {
        target(3, "blkparse", "b.txt", &read("blkparse_default_two_devices_summary.txt"), &edits, e)?;
    }

    #[test]
    fn fio_json(edits in prop::collection::vec(edit(), 1..4), e in enc(), plus in any::<bool>()) {
        let text = read(if plus { "fio_3_33_jsonplus_randrw70_bssplit.json" } else { "fio_per_io_logs/pio.json" });
        target(4, "fio JSON", "f.json", &text, &edits, e)?;
        let m = apply(&text, &edits);
        let _ = fio::parse_json_result("f.json", &m);
        let _ = fio::parse_json_observation("f.json", &m);
    }

    #[test]
    fn fio_logs(edits in prop::collection::vec(edit(), 1..6), e in enc(), which in 0usize..3) {
        let (name, file) = [
            ("pio_lat.1.log", "fio_per_io_logs/pio_lat.1.log"),
            ("mix_iops.1.log", "fio_windowed_logs/mix_iops.1.log"),
            ("mix_clat_hist.1.log", "fio_windowed_logs/mix_clat_hist.1.log"),
        ][which];
        let text = read(file);
        target(5, "fio logs", name, &text, &edits, e)?;
        let _ = fio::parse_hist_log(name, &apply(&text, &edits));
    }

    #[test]
    fn workload_toml(edits in prop::collection::vec(edit(), 1..6), which in 0usize..6) {
        cap_memory();
        let names: Vec<&str> = oio_core::profiles::names().collect();
        let text = oio_core::profiles::profile_text(names[which % names.len()]).expect("profile");
        let mutated = apply(text, &edits);
        if let Err(e) = oio_core::workload::Workload::from_toml(&mutated, "w.toml") {
            let lines = mutated.split(['\n', '\r']).count().max(1);
            prop_assert!(e.line <= lines + 1, "{e}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("w.toml");
        std::fs::write(&p, encode(&mutated, Enc::Crlf)).expect("write");
        let _ = oio_core::workload::Workload::from_file(&p);
        count(6, "workload TOML");
    }

    #[test]
    fn job_files(edits in prop::collection::vec(edit(), 1..6), e in enc(), which in 0usize..5) {
        use oio_telemetry::jobfile::{self, JobFormat};
        cap_memory();
        let (name, format) = [
            ("db.fio", None),
            ("job.cmd", Some(JobFormat::Diskspd)),
            ("profile.xml", Some(JobFormat::DiskspdXml)),
            ("seed002.icf", Some(JobFormat::Iometer)),
            ("oltp.vdb", Some(JobFormat::Vdbench)),
        ][which];
        let text = read(&format!("jobs/{name}"));
        let mutated = apply(&text, &edits);
        match format {
            // fio job files are read from disk: the encodings reach the loader.
            None => {
                let dir = tempfile::tempdir().expect("tempdir");
                let p = dir.path().join(name);
                let bytes = encode(&mutated, e);
                std::fs::write(&p, &bytes).expect("write");
                located(jobfile::fio::load(&p).map(|_| ()), &bytes)?;
                located(jobfile::fio::parse(&mutated, name, "job").map(|_| ()), mutated.as_bytes())?;
            }
            Some(f) => {
                let _ = jobfile::detect(name, &mutated);
                located(jobfile::import(name, &mutated, f).map(|_| ()), mutated.as_bytes())?;
            }
        }
        count(9, "job files");
    }

    #[test]
    fn units(s in "[0-9]{0,25}(\\.[0-9]{0,12})?(e[-+]?[0-9]{1,4})?[ ]?(|k|K|KiB|m|g|t|p|b|s|ms|us|ns|m|h|d|y|min|x)") {
        cap_memory();
        use oio_core::units::*;
        if let Ok(v) = parse_size(&s) {
            prop_assert!(v <= MAX_SIZE);
        }
        if let Ok(d) = parse_duration(&s) {
            prop_assert!(d <= MAX_DURATION);
        }
        if let Ok(r) = parse_rate(&s) {
            prop_assert!((MIN_RATE..=MAX_RATE).contains(&r));
        }
        let _ = parse_count_in(&s, 1, 1000);
        count(7, "units");
    }

    #[test]
    fn random_text(text in "\\PC{0,400}", e in enc()) {
        cap_memory();
        let bytes = encode(&text, e);
        for name in ["r.csv", "r_lat.1.log", "r.json"] {
            located(parse_bytes(name, &bytes), &bytes)?;
        }
        let mut t = TextLines::new("r", &bytes[..]);
        while let Ok(Some(_)) = t.next_line() {}
        count(8, "random text");
    }
}
