//! Exporters: a workload as a fio job file, a diskspd command line, a vdbench parameter file.
//!
//! What each tool cannot express is said in comments in the output, never silently dropped:
//! diskspd's command line has one block size for reads and writes, and vdbench's thread count
//! is per run, not per stream. Integer percentages (fio `bssplit`, vdbench `xfersize`) are
//! rounded by largest remainder so they still add up to 100.
//!
//! Names, descriptions and roles come from workload files, which may come from anyone; the
//! target path and fio engine come from the command line. None of them may add an option, a
//! section, a file or a command to the output. So: job, workload-definition and run names are
//! rebuilt from letters, digits and `_` (`-` `.` for fio), unique, never fio's `global`; the
//! original text appears only in one-line comments, escaped (`\u{..}`) to a few characters
//! that no format acts on and cut short so no tool's line buffer splits it; paths are refused
//! with a message naming the character when the format would read it as syntax.

use oio_core::sizemix::SizeMix;
use oio_core::units::{format_duration, format_size};
use oio_core::workload::{DataContent, Extent, Stream, SyncWrites, Workload};
use std::fmt::Write as _;

/// Where and how long the exported job runs.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// Target file or device.
    pub target: String,
    /// Size of the target file to create/use, bytes.
    pub size_bytes: u64,
    /// Measured run time, seconds.
    pub runtime_s: u64,
    /// Warm-up before measuring, seconds.
    pub ramp_s: u64,
    /// Bypass the page cache (O_DIRECT, unbuffered).
    pub direct: bool,
    /// fio I/O engine.
    pub fio_ioengine: String,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            target: "oio-test.dat".into(),
            size_bytes: 1 << 30,
            runtime_s: 60,
            ramp_s: 0,
            direct: true,
            fio_ioengine: "libaio".into(),
        }
    }
}

/// A workload that a tool cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot export to {tool}: {why}")]
pub struct ExportError {
    /// The tool.
    pub tool: &'static str,
    /// Why.
    pub why: String,
}

/// Rounds `weights` to integers that sum to `total`, each at least 1 (largest remainder).
pub fn integer_shares(weights: &[f64], total: u32) -> Vec<u32> {
    let sum: f64 = weights.iter().sum();
    if weights.is_empty() || sum <= 0.0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<f64> = weights.iter().map(|w| w / sum * total as f64).collect();
    let mut out: Vec<u32> = exact.iter().map(|e| (e.floor() as u32).max(1)).collect();
    let mut left = total as i64 - out.iter().map(|&v| v as i64).sum::<i64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    while left > 0 {
        for &i in &order {
            if left == 0 {
                break;
            }
            out[i] += 1;
            left -= 1;
        }
    }
    // Taking back (when the minimum of 1 overshot) from the largest shares.
    while left < 0 {
        let i = (0..out.len()).max_by_key(|&i| out[i]).expect("non-empty");
        out[i] -= 1;
        left += 1;
    }
    out
}

/// Longest target path accepted, bytes: fio splits lines longer than its 4 KiB buffer, and
/// the rest of a split line would be read as an option.
const MAX_PATH: usize = 1024;
/// Characters of a name shown in a comment before it is cut.
const MAX_SHOWN: usize = 120;

fn refuse(tool: &'static str, why: String) -> ExportError {
    ExportError { tool, why }
}

/// `text` for one line of comment: letters, digits and a few inert punctuation marks pass;
/// anything else (line breaks, quotes, `%`, `^`, `&`, `|`, `$`, backticks, `;`, `\`, NUL,
/// non-ASCII) becomes `\u{hex}`, so the comment cannot end early, and Windows cmd (which
/// expands `%` even in `REM` lines) sees nothing it acts on. Long text is cut with a note.
fn shown(text: &str) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == MAX_SHOWN {
            let _ = write!(out, "... ({} more characters)", text.chars().count() - n);
            break;
        }
        if c.is_ascii_alphanumeric() || " _-.,:()+=/@#[]{}*?~".contains(c) {
            out.push(c);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    out
}

/// `text` for one line of a fio comment: printable text as it is (`%`, `>`, quotes,
/// non-ASCII: fio skips a comment line whole); only what could end or split the line (control
/// characters, Unicode line and paragraph separators) becomes `\u{hex}`. Long text is cut
/// with a note.
fn plain(text: &str) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == MAX_SHOWN {
            let _ = write!(out, "... ({} more characters)", text.chars().count() - n);
            break;
        }
        if c.is_control() || c == '\u{2028}' || c == '\u{2029}' {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// Names built from `names` with only `keep` characters (others become `_`), at most `max`
/// long, none empty, none starting (ignoring case) with a `reserved` prefix (those get `s_`
/// before them), all different (ignoring case).
fn safe_names(
    names: &[&str],
    keep: fn(char) -> bool,
    max: usize,
    reserved: &[&str],
) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let mut base: String = name
            .chars()
            .map(|c| if keep(c) { c } else { '_' })
            .take(max)
            .collect();
        if reserved
            .iter()
            .any(|r| base.to_ascii_lowercase().starts_with(r))
        {
            base = format!("s_{base}").chars().take(max).collect();
        }
        let clash =
            |n: &str, out: &[String]| n.is_empty() || out.iter().any(|o| o.eq_ignore_ascii_case(n));
        let mut candidate = base.clone();
        let mut k = i + 1;
        while clash(&candidate, &out) {
            let suffix = format!("_{k}");
            let room = max.saturating_sub(suffix.len());
            candidate = base.chars().take(room).collect::<String>() + &suffix;
            k += names.len();
        }
        out.push(candidate);
    }
    out
}

fn fio_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'
}

fn word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The first character of `t` that is not printable, with what it is.
fn first_control(t: &str) -> Option<char> {
    t.chars()
        .find(|c| c.is_control() || *c == '\u{2028}' || *c == '\u{2029}')
}

fn check_path_common(tool: &'static str, t: &str) -> Result<(), ExportError> {
    if t.trim().is_empty() {
        return Err(refuse(tool, "the target path is empty".into()));
    }
    if t.len() > MAX_PATH {
        return Err(refuse(
            tool,
            format!(
                "the target path is {} bytes long; at most {MAX_PATH} are exported",
                t.len()
            ),
        ));
    }
    if let Some(c) = first_control(t) {
        return Err(refuse(
            tool,
            format!(
                "the target path \"{}\" contains the control character {:?}, which would end or break the line",
                shown(t),
                c
            ),
        ));
    }
    if t.trim() != t {
        return Err(refuse(
            tool,
            format!(
                "the target path \"{}\" begins or ends with white space, which {tool} strips",
                shown(t)
            ),
        ));
    }
    Ok(())
}

/// The target as fio's `filename=` value: `:` separates files in fio, so it is escaped `\:`;
/// `;` and `#` start a comment anywhere on a line and `$` expands variables, so those are
/// refused.
fn fio_filename(t: &str) -> Result<String, ExportError> {
    check_path_common("fio", t)?;
    if let Some(c) = t.chars().find(|c| matches!(c, ';' | '#' | '$')) {
        return Err(refuse(
            "fio",
            format!(
                "the target path \"{}\" contains '{c}', which fio reads as {} in a job file; rename or link the target",
                shown(t),
                if c == '$' { "a variable" } else { "the start of a comment" }
            ),
        ));
    }
    Ok(t.replace(':', "\\:"))
}

/// fio engines are plain names; `external:PATH` (a library fio loads) is not exported.
fn fio_engine(e: &str) -> Result<&str, ExportError> {
    if !e.is_empty() && e.len() <= 64 && e.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(e)
    } else {
        Err(refuse(
            "fio",
            format!(
                "the I/O engine \"{}\" is not a plain engine name (letters, digits, '_')",
                shown(e)
            ),
        ))
    }
}

/// The target as one argument of a diskspd command line in a Windows `.cmd` file (and safe
/// pasted into PowerShell), in double quotes. diskspd reads an argument starting with `-` or
/// `/` as an option; cmd expands `%` and `!` even inside quotes and PowerShell `$` and
/// backticks; so only letters, digits and inert punctuation are accepted.
fn diskspd_target(t: &str) -> Result<String, ExportError> {
    check_path_common("diskspd", t)?;
    if t.starts_with(['-', '/']) {
        return Err(refuse(
            "diskspd",
            format!(
                "the target path \"{}\" begins with '{}', which diskspd reads as an option",
                shown(t),
                &t[..1]
            ),
        ));
    }
    if let Some(c) = t
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || " _-.:\\/#+,=~()".contains(*c)))
    {
        return Err(refuse(
            "diskspd",
            format!(
                "the target path \"{}\" contains {:?}, which cmd or PowerShell could act on; use letters, digits, spaces and _-.:\\/#+,=~()",
                shown(t),
                c
            ),
        ));
    }
    Ok(format!("\"{t}\""))
}

/// The target as vdbench's `lun=` value: `,` `=` `(` `)` separate parameters and values, `*`
/// starts a comment, `$` is a substitution, quotes and spaces end the value; only letters,
/// digits and path punctuation are accepted.
fn vdbench_lun(t: &str) -> Result<String, ExportError> {
    check_path_common("vdbench", t)?;
    if let Some(c) = t
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "_-.:\\/+~@".contains(*c)))
    {
        return Err(refuse(
            "vdbench",
            format!(
                "the target path \"{}\" contains {:?}, which a vdbench parameter file would read as syntax; use letters, digits and _-.:\\/+~@",
                shown(t),
                c
            ),
        ));
    }
    Ok(t.to_string())
}

/// The description as comment lines (at most 8, each under 100 characters plus escapes),
/// each made safe by `show`.
fn description_lines(text: &str, show: fn(&str) -> String) -> Vec<String> {
    let mut lines = wrap(text, 80);
    if lines.len() > 8 {
        lines.truncate(8);
        lines.push("(description cut)".into());
    }
    lines.iter().map(|l| show(l)).collect()
}

fn fio_split(mix: &SizeMix) -> String {
    let f = mix.fractions();
    let pcts = integer_shares(&f.iter().map(|x| x.1).collect::<Vec<_>>(), 100);
    f.iter()
        .zip(pcts)
        .map(|((b, _), p)| format!("{}/{p}", format_size(*b)))
        .collect::<Vec<_>>()
        .join(":")
}

fn fio_extent(e: Extent) -> String {
    match e {
        Extent::Bytes(b) => format_size(b),
        Extent::Percent(p) => format!("{p}%"),
    }
}

/// Read share as the integer fio and diskspd take, kept off 0 and 100 when both directions
/// have I/O.
fn int_read_pct(s: &Stream) -> u32 {
    let r = s.read_pct.0;
    if r <= 0.0 {
        0
    } else if r >= 100.0 {
        100
    } else {
        (r.round() as u32).clamp(1, 99)
    }
}

/// What an export carries of a workload, in the words `oio import` uses: options that map
/// exactly, those that map approximately (and how), and those not honoured by the tool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fidelity {
    /// Options the tool runs as oio does.
    pub exact: Vec<String>,
    /// Options the tool runs nearly so, each with how.
    pub approximate: Vec<String>,
    /// Options the tool has no way to run.
    pub not_honoured: Vec<String>,
}

impl Fidelity {
    fn add(list: &mut Vec<String>, what: String) {
        if !list.contains(&what) {
            list.push(what);
        }
    }

    /// One line of text (no comment marker): `fidelity: exact: ...; approximately: ...; not
    /// honoured by TOOL: ...`.
    pub fn line(&self, tool: &str) -> String {
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        format!(
            "fidelity: exact: {}; approximately: {}; not honoured by {tool}: {}",
            list(&self.exact),
            list(&self.approximate),
            list(&self.not_honoured)
        )
    }
}

/// A stream's name in a fidelity entry when the workload has several.
fn who(w: &Workload, s: &Stream) -> String {
    if w.streams.len() > 1 {
        format!("{}: ", plain(&s.name))
    } else {
        String::new()
    }
}

/// The longest fio jobs one stream may become (timed parts of a changing rate).
const MAX_PARTS: usize = 64;

/// Time of I/O that an open-loop job's depth is sized to carry at its offered rate (Little's
/// law: depth = rate × latency): a device slower than this per I/O makes fio fall behind
/// where oio, up to its cap, would not.
const DEPTH_LATENCY_S: f64 = 0.1;

/// One fio job of a stream: all of the run, or a timed part of a rate that changes.
#[derive(Clone, Debug, PartialEq)]
struct FioPart {
    /// Start after the run's start, ms.
    start_ms: u64,
    /// Length, ms; `None` for the whole run.
    len_ms: Option<u64>,
    /// Offered I/Os per second of the whole stream in this part (`None`: closed loop).
    iops: Option<f64>,
}

/// `ms` as a fio time: whole seconds as `Ns`, else `Nms`.
fn fio_time(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// The jobs a stream becomes. A constant rate is one job. A schedule or bursts become a job
/// at the period's lowest rate for the whole run, plus one job per stretch above it with
/// `startdelay` and `runtime` (fio's rate is fixed per job), repeated over the run.
fn fio_parts(s: &Stream, o: &ExportOptions) -> Result<Vec<FioPart>, ExportError> {
    let Some(r) = &s.rate else {
        return Ok(vec![FioPart {
            start_ms: 0,
            len_ms: None,
            iops: None,
        }]);
    };
    let segments: Vec<(u64, f64)> = if !r.schedule.is_empty() {
        r.schedule
            .iter()
            .map(|g| (g.duration.0.as_millis() as u64, g.iops))
            .collect()
    } else if let (Some(b), Some(on), Some(off)) = (r.burst_iops, r.burst_on, r.burst_off) {
        vec![
            (on.0.as_millis() as u64, b),
            (off.0.as_millis() as u64, r.iops),
        ]
    } else {
        return Ok(vec![FioPart {
            start_ms: 0,
            len_ms: None,
            iops: Some(r.iops),
        }]);
    };
    let name = plain(&s.name);
    if o.ramp_s > 0 {
        return Err(refuse(
            "fio",
            format!("stream '{name}' changes its rate in time, which fio runs as timed jobs; fio's ramp_time would start again in each of them: export with --ramp 0s"),
        ));
    }
    if segments.iter().any(|(ms, _)| *ms == 0) {
        return Err(refuse(
            "fio",
            format!("stream '{name}' has a rate segment or burst shorter than 1 ms; fio times jobs in whole milliseconds"),
        ));
    }
    let horizon = o.runtime_s * 1000;
    let period: u64 = segments.iter().map(|x| x.0).sum();
    let floor = segments.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let mut parts = Vec::new();
    if floor > 0.0 {
        parts.push(FioPart {
            start_ms: 0,
            len_ms: None,
            iops: Some(floor),
        });
    }
    let mut base = 0;
    'periods: while base < horizon {
        let mut at = base;
        for &(len, iops) in &segments {
            if at >= horizon {
                break 'periods;
            }
            if iops > floor {
                parts.push(FioPart {
                    start_ms: at,
                    len_ms: Some(len.min(horizon - at)),
                    iops: Some(iops - floor),
                });
                if parts.len() > MAX_PARTS {
                    return Err(refuse(
                        "fio",
                        format!("stream '{name}' changes its rate more often than fio can follow in {} of run time: it would take more than {MAX_PARTS} timed jobs; export a shorter --time", format_duration(std::time::Duration::from_secs(o.runtime_s))),
                    ));
                }
            }
            at += len;
        }
        base += period;
    }
    Ok(parts)
}

/// fio's whole I/Os per second per job and direction for `iops` of the stream over `workers`
/// jobs: (reads, writes), and the largest relative rounding error.
fn fio_rates(s: &Stream, iops: f64, workers: u32) -> Result<((u64, u64), f64), ExportError> {
    let p = s.read_pct.0 / 100.0;
    let mut out = [0u64; 2];
    let mut err: f64 = 0.0;
    for (i, share) in [p, 1.0 - p].into_iter().enumerate() {
        if share <= 0.0 {
            continue;
        }
        let exact = iops * share / workers as f64;
        let whole = exact.round();
        if whole < 1.0 {
            return Err(refuse(
                "fio",
                format!(
                    "stream '{}' offers {exact:.3} {} per second per job; fio's rate_iops counts whole I/Os and reads 0 as no limit",
                    plain(&s.name),
                    if i == 0 { "reads" } else { "writes" }
                ),
            ));
        }
        out[i] = whole as u64;
        err = err.max((whole - exact).abs() / exact);
    }
    Ok(((out[0], out[1]), err))
}

/// A fio job file: one job per stream (and per timed part of a stream whose rate changes),
/// all running together; each stream reports as one fio group.
pub fn to_fio(w: &Workload, o: &ExportOptions) -> Result<String, ExportError> {
    w.check().map_err(|e| ExportError {
        tool: "fio",
        why: e.to_string(),
    })?;
    let filename = fio_filename(&o.target)?;
    let engine = fio_engine(&o.fio_ioengine)?;
    let names: Vec<&str> = w.streams.iter().map(|s| s.name.as_str()).collect();
    // fio takes every section whose name starts with "global" as a global section.
    let jobs = safe_names(&names, fio_name_char, 40, &["global"]);
    let mut fid = Fidelity::default();
    let mut body = String::new();
    for (k, (s, job)) in w.streams.iter().zip(&jobs).enumerate() {
        fio_stream(&mut body, &mut fid, w, s, job, k, o)?;
    }
    let mut out = String::new();
    fio_global(&mut out, w, o, &filename, engine, &fid);
    out.push_str(&body);
    Ok(out)
}

/// The job file's head and `[global]` section: target, size, engine, timing.
fn fio_global(
    out: &mut String,
    w: &Workload,
    o: &ExportOptions,
    filename: &str,
    engine: &str,
    fid: &Fidelity,
) {
    let _ = writeln!(
        out,
        "; fio job file exported by oio from workload '{}'",
        plain(&w.name)
    );
    for line in description_lines(&w.description, plain) {
        let _ = writeln!(out, "; {line}");
    }
    for line in wrap(&fid.line("fio"), 100) {
        let _ = writeln!(out, "; {line}");
    }
    // fio lays a missing file out inside the jobs' time, and jobs of different regions then
    // ran short (one of two workers 1.3 s of 3 s); oio fills its file before it measures.
    let _ = writeln!(
        out,
        "; run: fio --create_only=1 THIS_FILE (lays the file out first, as oio fills its own before measuring), then"
    );
    let _ = writeln!(
        out,
        ";      fio THIS_FILE --output-format=json+ --output=result.json"
    );
    let _ = writeln!(out, "[global]");
    let _ = writeln!(out, "filename={filename}");
    let _ = writeln!(out, "size={}", format_size(o.size_bytes));
    if w.streams.iter().any(|s| !s.region.is_whole()) {
        // A job's own size= is its region; without filesize fio would make the file that small.
        let _ = writeln!(out, "filesize={}", format_size(o.size_bytes));
    }
    let _ = writeln!(out, "ioengine={engine}");
    let _ = writeln!(out, "direct={}", u8::from(o.direct));
    let _ = writeln!(out, "time_based=1");
    let _ = writeln!(out, "runtime={}", o.runtime_s);
    if o.ramp_s > 0 {
        let _ = writeln!(out, "ramp_time={}", o.ramp_s);
    }
    let _ = writeln!(
        out,
        "; without norandommap fio trims mixed-size random I/Os to the holes of its block map"
    );
    let _ = writeln!(out, "norandommap=1");
    let _ = writeln!(out, "randrepeat=0");
    let _ = writeln!(
        out,
        "; each stream is one reporting group (new_group), so fio's output has one record per stream"
    );
    let _ = writeln!(out, "group_reporting=1");
}

/// One stream's jobs.
fn fio_stream(
    out: &mut String,
    fid: &mut Fidelity,
    w: &Workload,
    s: &Stream,
    job: &str,
    k: usize,
    o: &ExportOptions,
) -> Result<(), ExportError> {
    let who = who(w, s);
    let parts = fio_parts(s, o)?;
    let mut shape = String::new();
    let workers = fio_job_shape(&mut shape, fid, &who, s);
    fio_job_sync(&mut shape, fid, &who, s);
    fio_job_data(&mut shape, fid, &who, s);
    let _ = writeln!(out);
    if job != s.name {
        let _ = writeln!(out, "; stream '{}'", plain(&s.name));
    }
    if let Some(role) = &s.target {
        let _ = writeln!(
            out,
            "; stream role '{}': this file runs every stream on the one filename above",
            plain(role)
        );
        Fidelity::add(
            &mut fid.approximate,
            format!("{who}target role (every stream on the one file)"),
        );
    }
    if parts.len() > 1 {
        let _ = writeln!(
            out,
            "; stream '{}' changes its rate in time: {} timed jobs of fixed rates, reported as one group",
            plain(&s.name),
            parts.len()
        );
    }
    let mut worst_rounding: f64 = 0.0;
    let mut mixed_bytes = false;
    for (i, part) in parts.iter().enumerate() {
        let name = if i == 0 {
            job.to_string()
        } else {
            format!("{job}.part{i}")
        };
        let _ = writeln!(out, "[{name}]");
        if i == 0 && k > 0 {
            let _ = writeln!(out, "new_group");
        }
        out.push_str(&shape);
        let cap = s.slots().div_ceil(workers).max(1);
        match part.iops {
            None => {
                let _ = writeln!(out, "iodepth={cap}");
            }
            Some(iops) => {
                let (err, bytes) = fio_part_rate(out, s, iops, workers, cap)?;
                worst_rounding = worst_rounding.max(err);
                mixed_bytes |= bytes;
            }
        }
        if let Some(len) = part.len_ms {
            if part.start_ms > 0 {
                let _ = writeln!(out, "startdelay={}", fio_time(part.start_ms));
            }
            let _ = writeln!(out, "runtime={}", fio_time(len));
        }
    }
    fio_rate_fidelity(fid, &who, s, parts.len(), mixed_bytes, worst_rounding);
    Ok(())
}

/// One timed part's depth and rate at `iops` for the stream: returns the worst rounding of
/// the rate to whole I/Os per second, and whether the rate went out as bytes per second.
fn fio_part_rate(
    out: &mut String,
    s: &Stream,
    iops: f64,
    workers: u32,
    cap: u32,
) -> Result<(f64, bool), ExportError> {
    let per_job = iops / workers as f64;
    let depth = ((per_job * DEPTH_LATENCY_S).ceil() as u32).clamp(1, cap);
    let _ = writeln!(out, "iodepth={depth}");
    let ((r, wr), err) = fio_rates(s, iops, workers)?;
    let poisson = s.rate.as_ref().map(|r| r.arrival) == Some(oio_core::workload::Arrival::Poisson);
    // fio paces even arrivals of mixed sizes by bytes, counting each I/O as the
    // smallest size (1,200 I/Os/s of 4k and 16k ran as 469/s): such a rate is
    // bytes per second (I/Os x mean size), which comes to the I/Os on average.
    // Its Poisson process counts I/Os, so rate_iops stays right there.
    let mixed = [s.read_mix(), s.write_mix()]
        .iter()
        .flatten()
        .any(|m| m.fractions().len() > 1);
    let (r, wr, key) = if mixed && !poisson {
        let p = s.read_pct.0 / 100.0;
        let exact = |share: f64, m: Option<&SizeMix>| {
            (iops * share / workers as f64 * m.map_or(0.0, SizeMix::mean)).round() as u64
        };
        (
            exact(p, s.read_mix()),
            exact(1.0 - p, s.write_mix()),
            "rate",
        )
    } else {
        (r, wr, "rate_iops")
    };
    // Per direction: fio applies one number to reads and writes each.
    match (r, wr) {
        (r, 0) => {
            let _ = writeln!(out, "{key}={r}");
        }
        (0, wr) => {
            let _ = writeln!(out, "{key}=,{wr}");
        }
        (r, wr) => {
            let _ = writeln!(out, "{key}={r},{wr}");
        }
    }
    if poisson {
        let _ = writeln!(out, "rate_process=poisson");
    }
    Ok((err, key == "rate"))
}

/// What the fidelity line says of a stream's rate (or its outstanding I/Os).
fn fio_rate_fidelity(
    fid: &mut Fidelity,
    who: &str,
    s: &Stream,
    parts: usize,
    mixed_bytes: bool,
    worst_rounding: f64,
) {
    if let Some(r) = &s.rate {
        let cap = s.slots();
        Fidelity::add(
            &mut fid.exact,
            format!("{who}rate (per direction from the read share)"),
        );
        if r.arrival == oio_core::workload::Arrival::Poisson {
            Fidelity::add(&mut fid.exact, format!("{who}arrival poisson"));
        }
        if parts > 1 {
            Fidelity::add(
                &mut fid.exact,
                format!(
                    "{who}{} (timed jobs)",
                    if r.schedule.is_empty() {
                        "bursts"
                    } else {
                        "rate schedule"
                    }
                ),
            );
        }
        if mixed_bytes {
            Fidelity::add(
                &mut fid.approximate,
                format!("{who}rate of mixed sizes as bytes per second per direction (the I/O rate on average)"),
            );
        }
        if worst_rounding > 1e-9 && !mixed_bytes {
            Fidelity::add(
                &mut fid.approximate,
                format!(
                    "{who}rate to whole I/Os per second per job and direction (off by up to {:.2} %)",
                    worst_rounding * 100.0
                ),
            );
        }
        Fidelity::add(
            &mut fid.approximate,
            format!(
                "{who}outstanding cap {cap} (iodepth carries the rate at up to {} ms per I/O)",
                DEPTH_LATENCY_S * 1000.0
            ),
        );
    } else {
        Fidelity::add(&mut fid.exact, format!("{who}outstanding (iodepth)"));
    }
}

/// A stream's shape: direction, sizes, randomness, workers, alignment, region and
/// distribution. Returns the job's workers.
fn fio_job_shape(out: &mut String, fid: &mut Fidelity, who: &str, s: &Stream) -> u32 {
    let rp = int_read_pct(s);
    let random = s.random_pct.0;
    let rw = match (rp, random > 0.0) {
        (100, true) => "randread",
        (100, false) => "read",
        (0, true) => "randwrite",
        (0, false) => "write",
        (_, true) => "randrw",
        (_, false) => "rw",
    };
    let _ = writeln!(out, "rw={rw}");
    if rp != 0 && rp != 100 {
        let _ = writeln!(out, "rwmixread={rp}");
    }
    if s.rate.is_none() && rp as f64 != s.read_pct.0 {
        Fidelity::add(
            &mut fid.approximate,
            format!(
                "{who}read_pct {} (rwmixread={rp}, whole percent)",
                s.read_pct.0
            ),
        );
    } else {
        Fidelity::add(&mut fid.exact, format!("{who}read_pct"));
    }
    let read = s.read_mix().filter(|_| rp > 0).map(fio_split);
    let write = s.write_mix().filter(|_| rp < 100).map(fio_split);
    // One direction: its mix alone, which fio applies to every direction (an empty read
    // part would leave reads at fio's 4k, and fio 3.33 ends a zipf write job at once then).
    let bssplit = match (read, write) {
        (Some(r), Some(w)) if r == w => r,
        (Some(r), Some(w)) => format!("{r},{w}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => unreachable!("check() guarantees a size mix"),
    };
    let _ = writeln!(out, "bssplit={bssplit}");
    let whole_shares = [s.read_mix(), s.write_mix()].iter().flatten().all(|m| {
        let f = m.fractions();
        let pcts = integer_shares(&f.iter().map(|x| x.1).collect::<Vec<_>>(), 100);
        f.iter()
            .zip(pcts)
            .all(|((_, x), p)| (x * 100.0 - p as f64).abs() < 1e-9)
    });
    if whole_shares {
        Fidelity::add(&mut fid.exact, format!("{who}sizes (bssplit)"));
    } else {
        Fidelity::add(
            &mut fid.approximate,
            format!("{who}sizes (bssplit shares in whole percent)"),
        );
    }
    if random > 0.0 && random < 100.0 {
        let _ = writeln!(out, "percentage_random={}", random.round() as u32);
    }
    Fidelity::add(&mut fid.exact, format!("{who}random_pct"));
    let workers = s.workers.max(1);
    if workers > 1 {
        let _ = writeln!(out, "numjobs={workers}");
        Fidelity::add(&mut fid.exact, format!("{who}workers (numjobs)"));
    }
    if let Some(a) = s.align {
        let _ = writeln!(out, "blockalign={}", format_size(a.0));
        Fidelity::add(&mut fid.exact, format!("{who}align"));
    }
    if !s.region.is_whole() {
        let _ = writeln!(out, "offset={}", fio_extent(s.region.offset));
        let _ = writeln!(out, "size={}", fio_extent(s.region.length));
        Fidelity::add(&mut fid.exact, format!("{who}region (offset, size)"));
    }
    if let Some(d) = s.distribution.as_ref().filter(|_| random > 0.0) {
        let _ = writeln!(out, "random_distribution={d}");
        Fidelity::add(&mut fid.exact, format!("{who}distribution"));
    }
    workers
}

/// A stream's syncs (fio's count-based ones; what fio cannot do said in a comment).
fn fio_job_sync(out: &mut String, fid: &mut Fidelity, who: &str, s: &Stream) {
    if let Some(n) = s.fdatasync {
        let _ = writeln!(out, "fdatasync={n}");
        Fidelity::add(&mut fid.exact, format!("{who}fdatasync"));
    }
    if let Some(n) = s.fsync {
        let _ = writeln!(out, "fsync={n}");
        Fidelity::add(&mut fid.exact, format!("{who}fsync"));
    }
    if let Some(p) = s.trim_pct.filter(|p| p.0 > 0.0) {
        let _ = writeln!(
            out,
            "; fio cannot mix trims into a read/write job: oio's trim_pct = {} is not in this job",
            p.0
        );
        Fidelity::add(&mut fid.not_honoured, format!("{who}trim_pct"));
    }
    if let Some(t) = s.sync_interval {
        let _ = writeln!(
            out,
            "; fio cannot sync by time: oio's sync_interval = \"{}\" is not in this job",
            format_duration(t.0)
        );
        Fidelity::add(&mut fid.not_honoured, format!("{who}sync_interval"));
    }
    match s.sync_writes {
        Some(SyncWrites::ODsync) => {
            let _ = writeln!(out, "sync=dsync");
            Fidelity::add(&mut fid.exact, format!("{who}sync_writes"));
        }
        Some(SyncWrites::OSync) => {
            let _ = writeln!(out, "sync=sync");
            Fidelity::add(&mut fid.exact, format!("{who}sync_writes"));
        }
        Some(SyncWrites::RwfDsync) => {
            let _ = writeln!(
                out,
                "; oio flags each write RWF_DSYNC; fio's nearest is O_DSYNC at open (same durability per write)"
            );
            let _ = writeln!(out, "sync=dsync");
            Fidelity::add(
                &mut fid.approximate,
                format!("{who}sync_writes rwf_dsync (O_DSYNC at open)"),
            );
        }
        None => {}
    }
}

/// A stream's think time and data content.
fn fio_job_data(out: &mut String, fid: &mut Fidelity, who: &str, s: &Stream) {
    if let Some(t) = s.think_time {
        // fio reads a bare number as microseconds; whole ones keep it exact.
        let _ = writeln!(out, "thinktime={}", t.0.as_micros().max(1));
        if t.0.subsec_nanos() % 1000 != 0 {
            let _ = writeln!(
                out,
                "; oio's think_time was {} (fio counts whole microseconds)",
                format_duration(t.0)
            );
            Fidelity::add(
                &mut fid.approximate,
                format!("{who}think_time (whole microseconds)"),
            );
        } else {
            Fidelity::add(&mut fid.exact, format!("{who}think_time"));
        }
        if let Some(n) = s.think_blocks {
            let _ = writeln!(out, "thinktime_blocks={n}");
        }
    }
    match &s.pattern {
        Some(DataContent::Zero) => {
            let _ = writeln!(out, "zero_buffers=1");
            Fidelity::add(&mut fid.exact, format!("{who}pattern"));
        }
        Some(DataContent::Fixed(b)) => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            let _ = writeln!(out, "buffer_pattern=0x{hex}");
            Fidelity::add(&mut fid.exact, format!("{who}pattern"));
        }
        Some(DataContent::Random) | None => {}
    }
    if let Some(p) = s.compress_pct.filter(|p| p.0 > 0.0) {
        let _ = writeln!(out, "buffer_compress_percentage={}", p.0.round() as u32);
        Fidelity::add(
            &mut fid.approximate,
            format!("{who}compress_pct (fio's own data)"),
        );
    }
    if let Some(p) = s.dedupe_pct.filter(|p| p.0 > 0.0) {
        let _ = writeln!(out, "dedupe_percentage={}", p.0.round() as u32);
        Fidelity::add(
            &mut fid.approximate,
            format!("{who}dedupe_pct (fio's own data)"),
        );
    }
}

/// The stream's settings beyond sizes and load that a tool has no option for, in words
/// (`handled` names the ones it has: sync_writes, zero).
fn unexpressed(s: &Stream, handled: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(n) = s.fdatasync {
        out.push(format!("fdatasync = {n}"));
    }
    if let Some(n) = s.fsync {
        out.push(format!("fsync = {n}"));
    }
    if let Some(t) = s.sync_interval {
        out.push(format!("sync_interval = {}", format_duration(t.0)));
    }
    if let Some(h) = s.sync_writes.filter(|_| !handled.contains(&"sync_writes")) {
        out.push(format!("sync_writes = {}", h.name()));
    }
    if let Some(t) = s.think_time.filter(|_| !handled.contains(&"think")) {
        out.push(format!(
            "think_time = {} per {} I/Os",
            format_duration(t.0),
            s.think_blocks.unwrap_or(1)
        ));
    }
    match &s.pattern {
        Some(DataContent::Zero) if handled.contains(&"zero") => {}
        Some(p @ (DataContent::Zero | DataContent::Fixed(_))) => out.push(format!("pattern = {p}")),
        _ => {}
    }
    if let Some(p) = s.trim_pct.filter(|p| p.0 > 0.0) {
        out.push(format!("trim_pct = {}", p.0));
    }
    // Every line goes into a comment: nothing of a user's text reaches it.
    out.into_iter().map(|l| shown(&l)).collect()
}

/// A diskspd command line per stream (Windows `cmd` syntax), all running together: every
/// stream but the last starts in the background (`start /b`), the last in the foreground, so
/// the file ends when they all have; each writes its own output file.
pub fn to_diskspd(w: &Workload, o: &ExportOptions) -> Result<String, ExportError> {
    w.check().map_err(|e| ExportError {
        tool: "diskspd",
        why: e.to_string(),
    })?;
    let target = diskspd_target(&o.target)?;
    let mut fid = Fidelity::default();
    let mut body = String::new();
    let many = w.streams.len() > 1;
    if many {
        let _ = writeln!(
            body,
            "REM create the target once, so the streams below do not race to create it"
        );
        let _ = writeln!(
            body,
            "diskspd.exe -c{} -d1 -W0 -w0 -b4K -t1 -o1 {target} > nul",
            diskspd_size(o.size_bytes)
        );
    }
    for (k, s) in w.streams.iter().enumerate() {
        let cmd = diskspd_stream(&mut body, &mut fid, w, s, o)?;
        if many {
            let launch = if k + 1 < w.streams.len() {
                "start \"\" /b "
            } else {
                ""
            };
            let _ = writeln!(body, "{launch}{cmd} {target} > oio-stream-{}.txt", k + 1);
        } else {
            let _ = writeln!(body, "{cmd} {target}");
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "REM diskspd command exported by oio from workload '{}'",
        shown(&w.name)
    );
    for line in description_lines(&w.description, rem_text) {
        let _ = writeln!(out, "REM {line}");
    }
    for line in wrap(&fid.line("diskspd"), 100) {
        let _ = writeln!(out, "REM {line}");
    }
    if many {
        let _ = writeln!(
            out,
            "REM the streams run together; stream N writes its results to oio-stream-N.txt"
        );
    }
    out.push_str(&body);
    Ok(out)
}

/// One stream's diskspd command up to the target (its comments written to `out`).
fn diskspd_stream(
    out: &mut String,
    fid: &mut Fidelity,
    w: &Workload,
    s: &Stream,
    o: &ExportOptions,
) -> Result<String, ExportError> {
    let name = shown(&s.name);
    let who = if w.streams.len() > 1 {
        format!("{name}: ")
    } else {
        String::new()
    };
    if let Some(role) = &s.target {
        let _ = writeln!(
            out,
            "REM stream '{name}' role '{}': every stream runs on the one target below",
            shown(role)
        );
        Fidelity::add(
            &mut fid.approximate,
            format!("{who}target role (every stream on the one file)"),
        );
    }
    let rp = int_read_pct(s);
    if rp as f64 == s.read_pct.0 {
        Fidelity::add(&mut fid.exact, format!("{who}read_pct"));
    } else {
        Fidelity::add(
            &mut fid.approximate,
            format!("{who}read_pct (whole percent)"),
        );
    }
    let bs = diskspd_block_size(out, fid, &who, &name, s, rp);
    let threads = s.workers.max(1);
    let per_thread = s.slots().div_ceil(threads).max(1);
    // -r takes the alignment of random offsets (default: the block size).
    let random = match (s.random_pct.0 >= 50.0, s.align) {
        (true, Some(a)) => {
            Fidelity::add(&mut fid.exact, format!("{who}align"));
            format!(" -r{}", diskspd_size(a.0))
        }
        (true, None) => " -r".to_string(),
        (false, _) => String::new(),
    };
    if s.random_pct.0 > 0.0 && s.random_pct.0 < 100.0 {
        let _ = writeln!(
            out,
            "REM stream '{name}': {} %% random is rounded to {}",
            s.random_pct,
            if random.is_empty() {
                "sequential"
            } else {
                "random"
            }
        );
        Fidelity::add(
            &mut fid.approximate,
            format!("{who}random_pct (all or nothing)"),
        );
    } else {
        Fidelity::add(&mut fid.exact, format!("{who}random_pct"));
    }
    let mut extra = String::new();
    // Regions: -B is the base offset, -f where the used part of the target ends.
    if !s.region.is_whole() {
        let (off, len) = s.region.resolve(o.size_bytes).map_err(|e| {
            refuse(
                "diskspd",
                format!(
                    "stream '{name}': {e} (the target is {} bytes)",
                    o.size_bytes
                ),
            )
        })?;
        let _ = write!(
            extra,
            " -B{} -f{}",
            diskspd_size(off),
            diskspd_size(off + len)
        );
        Fidelity::add(&mut fid.exact, format!("{who}region (-B, -f)"));
    }
    if let Some(r) = &s.rate {
        if !r.schedule.is_empty() || r.burst_iops.is_some() {
            return Err(refuse(
                "diskspd",
                format!("stream '{name}' changes its rate in time (a schedule or bursts); diskspd's -g is one fixed cap per thread"),
            ));
        }
        let exact = r.iops / threads as f64;
        let whole = exact.round();
        if whole < 1.0 {
            return Err(refuse(
                "diskspd",
                format!("stream '{name}' offers {exact:.3} I/Os per second per thread; diskspd's -g counts whole ones"),
            ));
        }
        // -gNi: N I/Os per second per thread; -w decides which of them write.
        let _ = write!(extra, " -g{}i", whole as u64);
        Fidelity::add(&mut fid.exact, format!("{who}rate (-g per thread)"));
        if r.arrival == oio_core::workload::Arrival::Poisson {
            Fidelity::add(
                &mut fid.approximate,
                format!("{who}arrival poisson (diskspd spaces I/Os evenly)"),
            );
        }
        Fidelity::add(
            &mut fid.approximate,
            format!("{who}outstanding cap (-o {per_thread} per thread)"),
        );
    } else {
        Fidelity::add(&mut fid.exact, format!("{who}outstanding (-t, -o)"));
    }
    if let Some(d) = &s.distribution {
        let _ = writeln!(
            out,
            "REM stream '{name}': diskspd's command line has no skewed access; uniform instead of {}",
            shown(&d.to_string())
        );
        Fidelity::add(&mut fid.not_honoured, format!("{who}distribution"));
    }
    let (caching, think) = diskspd_caching(out, fid, &who, &name, s, o);
    let handled: &[&str] = if think {
        &["sync_writes", "zero", "think"]
    } else {
        &["sync_writes", "zero"]
    };
    for what in unexpressed(s, handled) {
        let _ = writeln!(
            out,
            "REM stream '{name}': diskspd has no equivalent of {what}; this command leaves it out"
        );
        let key = what.split(" =").next().unwrap_or(&what).to_string();
        Fidelity::add(&mut fid.not_honoured, format!("{who}{key}"));
    }
    if w.streams.len() > 1 {
        let _ = writeln!(out, "REM stream '{name}':");
    }
    Ok(format!(
        "diskspd.exe -c{} -d{} -W{}{random} -b{} -w{} -t{threads} -o{per_thread}{extra}{caching} -L -D",
        diskspd_size(o.size_bytes),
        o.runtime_s,
        o.ramp_s,
        diskspd_size(bs),
        100 - rp,
    ))
}

/// diskspd's one `-b` for reads and writes: the size with the largest share of all I/Os
/// (the rest of the mix said in a comment).
fn diskspd_block_size(
    out: &mut String,
    fid: &mut Fidelity,
    who: &str,
    name: &str,
    s: &Stream,
    rp: u32,
) -> u64 {
    let mut all: Vec<(u64, f64)> = Vec::new();
    let mut add = |m: Option<&SizeMix>, share: f64| {
        for (b, f) in m.map(SizeMix::fractions).unwrap_or_default() {
            match all.iter_mut().find(|x| x.0 == b) {
                Some(x) => x.1 += f * share,
                None => all.push((b, f * share)),
            }
        }
    };
    add(s.read_mix().filter(|_| rp > 0), rp as f64 / 100.0);
    add(s.write_mix().filter(|_| rp < 100), 1.0 - rp as f64 / 100.0);
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    let (bs, share) = all[0];
    if all.len() > 1 {
        let mix = all
            .iter()
            // `%%`: a batch file expands single percent signs, even in REM lines.
            .map(|(b, f)| format!("{} {:.0}%%", format_size(*b), f * 100.0))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            out,
            "REM stream '{name}': diskspd's command line takes one block size for reads and writes; the mix is {mix}. Using {} ({:.0} %% of I/Os). Use an XML profile with one target per size for the full mix.",
            format_size(bs),
            share * 100.0
        );
        Fidelity::add(
            &mut fid.approximate,
            format!("{who}sizes (one block size, {})", format_size(bs)),
        );
    } else {
        Fidelity::add(&mut fid.exact, format!("{who}sizes"));
    }
    bs
}

/// diskspd's caching, write-through, data and think-time flags; and whether a think time
/// was given.
fn diskspd_caching(
    out: &mut String,
    fid: &mut Fidelity,
    who: &str,
    name: &str,
    s: &Stream,
    o: &ExportOptions,
) -> (String, bool) {
    // -Sh is unbuffered and write-through already; buffered synchronous writes are -Sw.
    let mut caching = if o.direct { " -Sh" } else { "" }.to_string();
    if s.sync_writes.is_some() {
        if !o.direct {
            caching.push_str(" -Sw");
        }
        Fidelity::add(&mut fid.exact, format!("{who}sync_writes"));
    }
    if s.pattern == Some(DataContent::Zero) {
        caching.push_str(" -Z");
        Fidelity::add(&mut fid.exact, format!("{who}pattern"));
    }
    // Think time: -j milliseconds after every -i I/Os, per thread as oio's per worker.
    let think_ms = s
        .think_time
        .map(|t| (t.0.as_secs_f64() * 1000.0).round() as u64)
        .filter(|ms| *ms > 0);
    if let Some(ms) = think_ms {
        let _ = write!(caching, " -j{ms}");
        if let Some(n) = s.think_blocks.filter(|n| *n > 1) {
            let _ = write!(caching, " -i{n}");
        }
        if s.think_time
            .is_some_and(|t| t.0.subsec_nanos() % 1_000_000 != 0)
        {
            let _ = writeln!(
                out,
                "REM stream '{name}': think time {} is rounded to {ms} ms (diskspd counts whole milliseconds)",
                s.think_time.map(|t| format_duration(t.0)).unwrap_or_default()
            );
            Fidelity::add(
                &mut fid.approximate,
                format!("{who}think_time (whole milliseconds)"),
            );
        } else {
            Fidelity::add(&mut fid.exact, format!("{who}think_time"));
        }
    }
    (caching, think_ms.is_some())
}

/// `text` for a `REM` line of a batch file: as [`shown`], but a percent sign as `%%`, which
/// cmd shows as `%` (a single one it would expand).
fn rem_text(text: &str) -> String {
    shown(text).replace("\\u{25}", "%%")
}

/// diskspd sizes: bytes, or K/M/G suffixes when exact.
fn diskspd_size(b: u64) -> String {
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

/// A vdbench parameter file: one workload definition per stream and direction, weighted by
/// `skew`, all in one run definition.
pub fn to_vdbench(w: &Workload, o: &ExportOptions) -> Result<String, ExportError> {
    w.check().map_err(|e| ExportError {
        tool: "vdbench",
        why: e.to_string(),
    })?;
    let lun = vdbench_lun(&o.target)?;
    let names: Vec<&str> = w.streams.iter().map(|s| s.name.as_str()).collect();
    let wd_names = safe_names(&names, word_char, 24, &[]);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "* vdbench parameter file exported by oio from workload '{}'",
        shown(&w.name)
    );
    for line in description_lines(&w.description, shown) {
        let _ = writeln!(out, "* {line}");
    }
    let fid = vdbench_fidelity(w);
    for line in wrap(&fid.line("vdbench"), 100) {
        let _ = writeln!(out, "* {line}");
    }
    let total_oio: u32 = w.streams.iter().map(|s| s.outstanding.unwrap_or(1)).sum();
    if w.streams.len() > 1 {
        let _ = writeln!(
            out,
            "* vdbench runs all workload definitions at one thread count ({total_oio}); streams are weighted by skew = their share of outstanding I/O"
        );
    }
    let open = vdbench_open_flags(&mut out, w, o);
    let _ = writeln!(out, "sd=sd1,lun={lun},size={}{open}", o.size_bytes);
    for s in &w.streams {
        for what in unexpressed(s, &["sync_writes"]) {
            let _ = writeln!(
                out,
                "* stream '{}': vdbench has no equivalent of {what}; this file leaves it out",
                shown(&s.name)
            );
        }
    }
    let wds = vdbench_workloads(&mut out, w, &wd_names, total_oio);
    let skews = integer_shares(&wds.iter().map(|x| x.2).collect::<Vec<_>>(), 100);
    for ((name, body, _), skew) in wds.iter().zip(skews) {
        if wds.len() > 1 {
            let _ = writeln!(out, "wd={name},{body},skew={skew}");
        } else {
            let _ = writeln!(out, "wd={name},{body}");
        }
    }
    let warmup = if o.ramp_s > 0 {
        format!(",warmup={}", o.ramp_s)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "rd=rd_{},wd=wd_*,iorate=max,elapsed={},interval=1{warmup},threads={total_oio}",
        safe_names(&[w.name.as_str()], word_char, 24, &[])[0],
        o.runtime_s
    );
    Ok(out)
}

/// What a vdbench parameter file keeps of each stream, approximates, and leaves out.
fn vdbench_fidelity(w: &Workload) -> Fidelity {
    let mut fid = Fidelity::default();
    for s in &w.streams {
        let who = if w.streams.len() > 1 {
            format!("{}: ", shown(&s.name))
        } else {
            String::new()
        };
        Fidelity::add(&mut fid.exact, format!("{who}sizes (xfersize)"));
        Fidelity::add(&mut fid.exact, format!("{who}random_pct (seekpct)"));
        if w.streams.len() > 1 || s.read_pct.0 % 1.0 != 0.0 {
            Fidelity::add(
                &mut fid.approximate,
                format!("{who}read_pct (skew of whole percent per workload definition)"),
            );
        } else {
            Fidelity::add(&mut fid.exact, format!("{who}read_pct"));
        }
        if s.rate.is_some() {
            Fidelity::add(&mut fid.not_honoured, format!("{who}rate (iorate=max)"));
        }
        for what in unexpressed(s, &["sync_writes"]) {
            let key = what.split(" =").next().unwrap_or(&what).to_string();
            Fidelity::add(&mut fid.not_honoured, format!("{who}{key}"));
        }
        if s.distribution.is_some() {
            Fidelity::add(&mut fid.not_honoured, format!("{who}distribution"));
        }
        if !s.region.is_whole() {
            Fidelity::add(&mut fid.not_honoured, format!("{who}region"));
        }
    }
    Fidelity::add(
        &mut fid.approximate,
        "outstanding (one thread count for the run)".to_string(),
    );
    fid
}

/// The storage definition's open flags: direct I/O as asked, and O_DSYNC/O_SYNC only when
/// every writing stream asks for the same.
fn vdbench_open_flags(out: &mut String, w: &Workload, o: &ExportOptions) -> String {
    let writers: Vec<&Stream> = w.streams.iter().filter(|s| s.read_pct.0 < 100.0).collect();
    let sync_flag = match writers.first().map(|s| s.sync_writes) {
        Some(Some(first))
            if writers.iter().all(|s| {
                s.sync_writes.map(|x| x == SyncWrites::OSync) == Some(first == SyncWrites::OSync)
            }) =>
        {
            Some(if first == SyncWrites::OSync {
                "o_sync"
            } else {
                "o_dsync"
            })
        }
        _ => None,
    };
    if sync_flag.is_none() && writers.iter().any(|s| s.sync_writes.is_some()) {
        let _ = writeln!(
            out,
            "* vdbench opens sd1 one way for every stream: the streams' differing sync_writes are left out"
        );
    }
    match (o.direct, sync_flag) {
        (true, Some(f)) => format!(",openflags=(o_direct,{f})"),
        (true, None) => ",openflags=o_direct".to_string(),
        (false, Some(f)) => format!(",openflags={f}"),
        (false, None) => String::new(),
    }
}

/// One workload definition per stream and direction: its name, its parameters, and its
/// share of all I/Os (the stream's share of outstanding I/O times the direction's).
fn vdbench_workloads(
    out: &mut String,
    w: &Workload,
    wd_names: &[String],
    total_oio: u32,
) -> Vec<(String, String, f64)> {
    let mut wds: Vec<(String, String, f64)> = Vec::new();
    for (s, wd_name) in w.streams.iter().zip(wd_names) {
        if *wd_name != s.name {
            let _ = writeln!(out, "* wd_{wd_name}_*: stream '{}'", shown(&s.name));
        }
        if let Some(role) = &s.target {
            let _ = writeln!(
                out,
                "* stream '{}' role '{}': every stream runs on sd1",
                shown(&s.name),
                shown(role)
            );
        }
        let stream_share = s.outstanding.unwrap_or(1) as f64 / total_oio as f64;
        let rp = s.read_pct.0 / 100.0;
        for (dir, mix, share, rdpct) in [
            ("r", s.read_mix(), rp, 100),
            ("w", s.write_mix(), 1.0 - rp, 0),
        ] {
            let Some(mix) = mix.filter(|_| share > 0.0) else {
                continue;
            };
            let f = mix.fractions();
            let pcts = integer_shares(&f.iter().map(|x| x.1).collect::<Vec<_>>(), 100);
            let xfer = f
                .iter()
                .zip(pcts)
                .map(|((b, _), p)| format!("{b},{p}"))
                .collect::<Vec<_>>()
                .join(",");
            let xfer = if f.len() == 1 {
                f[0].0.to_string()
            } else {
                format!("({xfer})")
            };
            wds.push((
                format!("wd_{wd_name}_{dir}"),
                format!(
                    "sd=sd1,rdpct={rdpct},xfersize={xfer},seekpct={}",
                    s.random_pct.0.round() as u32
                ),
                share * stream_share,
            ));
        }
    }
    wds
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPDB: &str = r#"
name = "tempdb"
description = "seed 002"
[[stream]]
read_pct = 2
read_bs = "64k:68,8k:32"
write_bs = "64k:83,512:17"
outstanding = 600
"#;

    fn tempdb() -> Workload {
        Workload::from_toml(TEMPDB, "t").unwrap()
    }

    #[test]
    fn shares_sum_to_the_total() {
        assert_eq!(integer_shares(&[1.0, 1.0, 1.0], 100), vec![34, 33, 33]);
        assert_eq!(integer_shares(&[68.0, 32.0], 100), vec![68, 32]);
        assert_eq!(integer_shares(&[99.9, 0.05, 0.05], 100), vec![98, 1, 1]);
        assert_eq!(integer_shares(&[2.0, 98.0], 100), vec![2, 98]);
    }

    #[test]
    fn fio_job_for_seed_002() {
        let f = to_fio(&tempdb(), &ExportOptions::default()).unwrap();
        for want in [
            "rw=randrw\n",
            "rwmixread=2\n",
            "bssplit=64k/68:8k/32,64k/83:512/17\n",
            "iodepth=600\n",
            "direct=1\n",
            "runtime=60\n",
            "size=1g\n",
            "norandommap=1\n",
            "[main]\n",
        ] {
            assert!(f.contains(want), "missing {want:?} in\n{f}");
        }
        assert!(
            !f.contains("percentage_random"),
            "100 % random is fio's randrw default"
        );
    }

    #[test]
    fn fio_sequential_and_partial_random_and_workers() {
        let mut w = tempdb();
        w.streams[0].random_pct = oio_core::workload::Percent(0.0);
        w.streams[0].read_pct = oio_core::workload::Percent(100.0);
        let f = to_fio(&w, &ExportOptions::default()).unwrap();
        assert!(
            f.contains("rw=read\n")
                && f.contains("bssplit=64k/68:8k/32\n")
                && !f.contains("rwmixread"),
            "{f}"
        );
        w.streams[0].random_pct = oio_core::workload::Percent(30.0);
        w.streams[0].workers = 4;
        let f = to_fio(&w, &ExportOptions::default()).unwrap();
        assert!(
            f.contains("rw=randread\n") && f.contains("percentage_random=30\n"),
            "{f}"
        );
        assert!(
            f.contains("iodepth=150\n") && f.contains("numjobs=4\n"),
            "{f}"
        );
    }

    #[test]
    fn diskspd_states_its_single_block_size() {
        let d = to_diskspd(&tempdb(), &ExportOptions::default()).unwrap();
        let cmd = d.lines().find(|l| l.starts_with("diskspd.exe")).unwrap();
        assert_eq!(
            cmd,
            "diskspd.exe -c1G -d60 -W0 -r -b64K -w98 -t1 -o600 -Sh -L -D \"oio-test.dat\""
        );
        assert!(d.contains("one block size") && d.contains("512"), "{d}");
    }

    #[test]
    fn vdbench_one_wd_per_direction_with_skew() {
        let v = to_vdbench(&tempdb(), &ExportOptions::default()).unwrap();
        assert!(
            v.contains("sd=sd1,lun=oio-test.dat,size=1073741824,openflags=o_direct\n"),
            "{v}"
        );
        assert!(
            v.contains(
                "wd=wd_main_r,sd=sd1,rdpct=100,xfersize=(65536,68,8192,32),seekpct=100,skew=2\n"
            ),
            "{v}"
        );
        assert!(
            v.contains(
                "wd=wd_main_w,sd=sd1,rdpct=0,xfersize=(65536,83,512,17),seekpct=100,skew=98\n"
            ),
            "{v}"
        );
        assert!(
            v.contains("rd=rd_tempdb,wd=wd_*,iorate=max,elapsed=60,interval=1,threads=600\n"),
            "{v}"
        );
    }
    const MIX: &str = r#"
name = "mix"
description = "69.9 % reads while queue length > 2"
[[stream]]
name = "data"
read_pct = 70
bs = "8k"
rate = { iops = 5000, arrival = "poisson" }
"#;

    /// The fidelity text of an export, its wrapped comment lines joined.
    fn fidelity_of(text: &str, mark: &str) -> String {
        let lines: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with(&format!("{mark}fidelity: ")))
            .take_while(|l| l.starts_with(mark) && !l.starts_with(&format!("{mark}run:")))
            .map(|l| &l[mark.len()..])
            .collect();
        let mut out = lines.join(" ");
        if let Some(i) = out.find(" the streams run together") {
            out.truncate(i);
        }
        out
    }

    #[test]
    fn issue_42_fio_rates_are_per_direction_and_comments_plain() {
        let w = Workload::from_toml(MIX, "t").unwrap();
        let f = to_fio(&w, &ExportOptions::default()).unwrap();
        // fio applies rate_iops to each direction: 3,500 reads + 1,500 writes = 5,000, 70 %.
        for want in [
            "rate_iops=3500,1500\n",
            "rate_process=poisson\n",
            "rwmixread=70\n",
            // Little's law at 100 ms per I/O: 5,000/s x 0.1 s, under oio's cap of 1,024.
            "iodepth=500\n",
            "; 69.9 % reads while queue length > 2\n",
        ] {
            assert!(f.contains(want), "missing {want:?} in\n{f}");
        }
        let fid = fidelity_of(&f, "; ");
        let fid = fid.as_str();
        assert!(
            fid.contains("exact: read_pct, sizes (bssplit), random_pct, rate (per direction from the read share), arrival poisson;"),
            "{fid}"
        );
        assert!(fid.contains("approximately: outstanding cap 1024"), "{fid}");
        assert!(fid.ends_with("not honoured by fio: none"), "{fid}");
        // Two workers share the rate: each job half of each direction; closed loop keeps depth.
        let mut w2 = w.clone();
        w2.streams[0].workers = 2;
        let f = to_fio(&w2, &ExportOptions::default()).unwrap();
        assert!(
            f.contains("rate_iops=1750,750\n") && f.contains("numjobs=2\n"),
            "{f}"
        );
        // Mixed sizes at even spacing: bytes per second, since fio counts each I/O of a
        // rate_iops as the smallest size (1,200/s of 4k and 16k ran as 469/s).
        let mut w4 = w.clone();
        w4.streams[0].read_bs = Some("4k:50,16k:50".parse().unwrap());
        w4.streams[0].rate.as_mut().unwrap().arrival = oio_core::workload::Arrival::Constant;
        let f = to_fio(&w4, &ExportOptions::default()).unwrap();
        // 3,500 reads/s x 10,240 B and 1,500 writes/s x 8,192 B.
        assert!(
            f.contains("\nrate=35840000,12288000\n") && !f.contains("rate_iops"),
            "{f}"
        );
        assert!(
            fidelity_of(&f, "; ").contains("rate of mixed sizes as bytes per second"),
            "{f}"
        );
        // A rate fio would read as "no limit" is refused.
        let mut w3 = w.clone();
        w3.streams[0].rate.as_mut().unwrap().iops = 1.0;
        let e = to_fio(&w3, &ExportOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("0.300 writes per second") && e.contains("no limit"),
            "{e}"
        );
    }

    #[test]
    fn issue_42_schedules_and_bursts_become_timed_jobs() {
        let t = r#"
name = "sched"
[[stream]]
name = "s"
read_pct = 100
bs = "4k"
[stream.rate]
schedule = [ { for = "2s", iops = 500 }, { for = "3s", iops = 2000 } ]
"#;
        let w = Workload::from_toml(t, "t").unwrap();
        let o = ExportOptions {
            runtime_s: 12,
            ..ExportOptions::default()
        };
        let f = to_fio(&w, &o).unwrap();
        // 500/s throughout, and 1,500/s more in [2,5), [7,10) and the first 2 s of [12,15).
        let jobs: Vec<&str> = f.lines().filter(|l| l.starts_with('[')).collect();
        assert_eq!(jobs, ["[global]", "[s]", "[s.part1]", "[s.part2]"], "{f}");
        let tail = f.split("[s.part1]").nth(1).unwrap();
        assert!(
            tail.contains("rate_iops=1500\nstartdelay=2s\nruntime=3s\n")
                && tail.contains("rate_iops=1500\nstartdelay=7s\nruntime=3s\n"),
            "{f}"
        );
        assert!(
            f.contains("[s]\nrw=randread\nbssplit=4k/100\nrandom_pct")
                || f.contains("rate_iops=500\n"),
            "{f}"
        );
        assert!(f.contains("rate schedule (timed jobs)"), "{f}");
        // Checkpoint: 200/s, bursts of 20,000/s for 3 s every 33 s.
        let c = oio_core::profiles::profile("checkpoint").unwrap();
        let f = to_fio(&c, &o).unwrap();
        assert!(
            f.contains("rate_iops=,200\n") && f.contains("rate_iops=,19800\nruntime=3s\n"),
            "{f}"
        );
        assert!(f.contains("[reads]\nnew_group\n"), "{f}");
        // With a ramp the timed jobs would each ramp: refused, saying so.
        let e = to_fio(
            &c,
            &ExportOptions {
                ramp_s: 5,
                ..o.clone()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("--ramp 0s"), "{e}");
        // Too many changes for fio's job count: refused naming the limit.
        let e = to_fio(
            &w,
            &ExportOptions {
                runtime_s: 3600,
                ..o
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("more than 64 timed jobs"), "{e}");
    }

    #[test]
    fn issue_42_diskspd_caps_rates_and_keeps_regions() {
        let t = r#"
name = "two"
[[stream]]
name = "a"
read_pct = 70
bs = "8k"
workers = 2
rate = 5000
region = { offset = "25%", length = "1m" }
[[stream]]
name = "b"
read_pct = 0
bs = "64k"
outstanding = 4
"#;
        let mut w = Workload::from_toml(t, "t").unwrap();
        w.description = "69.9 % reads".into();
        let d = to_diskspd(&w, &ExportOptions::default()).unwrap();
        // cmd shows %% as % in a REM line (a single one it would expand).
        assert!(d.contains("\nREM 69.9 %% reads\n"), "{d}");
        let cmds: Vec<&str> = d.lines().filter(|l| !l.starts_with("REM")).collect();
        assert_eq!(cmds.len(), 3, "{d}");
        assert!(
            cmds[1].starts_with("start \"\" /b diskspd.exe ")
                && cmds[1].contains(" -w30 -t2 -o512 -B256M -f257M -g2500i ")
                && cmds[1].ends_with(" > oio-stream-1.txt"),
            "{d}"
        );
        assert!(
            cmds[2].starts_with("diskspd.exe ") && cmds[2].contains(" -w100 -t1 -o4 -Sh "),
            "{d}"
        );
        let mut burst = w.clone();
        burst.streams[0].rate.as_mut().unwrap().schedule = vec![oio_core::workload::RateSegment {
            duration: oio_core::units::Secs(std::time::Duration::from_secs(1)),
            iops: 100.0,
        }];
        let e = to_diskspd(&burst, &ExportOptions::default()).unwrap_err();
        assert!(e.to_string().contains("changes its rate in time"), "{e}");
    }

    /// Names that tried to break out of every format: new sections and options, commands,
    /// variables, comments, very long and non-ASCII text.
    pub(crate) const HOSTILE: &[&str] = &[
        "s]\nfilename=/dev/vdz\nrw=randwrite\n[t",
        "global",
        "[global]",
        "a;b#c=d",
        "x & calc.exe | del /q C:\\ > nul",
        "%COMSPEC% /c calc %~",
        "\"quoted\" and 'single'",
        "$(touch /tmp/oio-pwned) `id` ${HOME}",
        "cr\rfilename=/dev/vdz",
        "nul\u{0}filename=/dev/vdz",
        "日本語\u{2028}filename=/dev/vdz\u{85}x",
        "^\n",
        "main",
        "main_",
        "MAIN",
    ];

    fn hostile() -> Workload {
        let mut w = tempdb();
        w.name = "w\n[evil]\nfilename=/dev/vdz".into();
        w.description = format!(
            "d\r\n[evil]\nfilename=/dev/vdz %PATH% {}",
            "x".repeat(20000)
        );
        let base = w.streams[0].clone();
        w.streams = HOSTILE
            .iter()
            .map(|n| {
                let mut s = base.clone();
                s.name = n.to_string();
                s
            })
            .collect();
        let mut long = base.clone();
        long.name = format!("{}\nfilename=/dev/vdz", "a".repeat(9000));
        long.target = Some("log\nfilename=/dev/vdz".into());
        w.streams.push(long);
        w
    }

    #[test]
    fn fio_lines_are_comments_sections_or_known_options() {
        let w = hostile();
        let f = to_fio(&w, &ExportOptions::default()).unwrap();
        let mut sections = Vec::new();
        for line in f.lines() {
            assert!(line.len() < 2048, "a line fio would split: {}", line.len());
            if line.is_empty() || line.starts_with("; ") {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                assert!(name.chars().all(fio_name_char), "{name:?}");
                sections.push(name.to_string());
                continue;
            }
            if line == "new_group" {
                continue;
            }
            let (key, _) = line.split_once('=').expect("key=value");
            assert!(
                key.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{line:?}"
            );
            assert!(!line.contains("vdz"), "{line:?}");
        }
        assert!(!f.contains('\r') && !f.contains('\0') && !f.contains('\u{2028}'));
        assert_eq!(f.lines().filter(|l| l.starts_with("filename=")).count(), 1);
        // One job per stream, then [global] first; all different, none another global.
        assert_eq!(sections[0], "global");
        assert_eq!(sections.len(), w.streams.len() + 1);
        let jobs = &sections[1..];
        for (i, a) in jobs.iter().enumerate() {
            assert!(!a.to_ascii_lowercase().starts_with("global"), "{a}");
            assert!(!jobs[..i].iter().any(|b| b.eq_ignore_ascii_case(a)), "{a}");
            assert!(a.len() <= 48);
        }
        assert_eq!(jobs[12], "main", "a safe name is kept as it is");
        // The originals are in the comments, escaped.
        assert!(
            f.contains("; stream 's]\\u{a}filename=/dev/vdz\\u{a}rw=randwrite\\u{a}[t'"),
            "{f}"
        );
        assert!(f.contains("(description cut)") || f.contains("more characters"));
        assert!(
            f.contains("; stream role 'log\\u{a}filename=/dev/vdz'"),
            "{f}"
        );
    }

    #[test]
    fn diskspd_lines_are_rem_or_one_command_per_stream() {
        let w = hostile();
        let d = to_diskspd(&w, &ExportOptions::default()).unwrap();
        let mut commands = 0;
        for line in d.lines() {
            assert!(line.len() < 2048);
            if let Some(rem) = line.strip_prefix("REM ") {
                // Nothing cmd or PowerShell acts on in a REM line: `%` only doubled, no
                // caret; the only quotes are the exporter's own '' around names.
                let rest = rem.replace("%%", "");
                assert!(
                    !rest.contains(['%', '^', '&', '|', '<', '>', '"', '!', '`', '$']),
                    "{line:?}"
                );
                continue;
            }
            // The target made once, then the streams together: all but the last in the
            // background, each into its own numbered output file.
            let cmd = line.strip_prefix("start \"\" /b ").unwrap_or(line);
            assert!(cmd.starts_with("diskspd.exe -c1G "), "{line:?}");
            if commands == 0 {
                assert!(cmd.ends_with(" \"oio-test.dat\" > nul"), "{line:?}");
            } else {
                let tail = format!(" -D \"oio-test.dat\" > oio-stream-{commands}.txt");
                assert!(cmd.ends_with(&tail), "{line:?}");
                assert_eq!(
                    line.starts_with("start "),
                    commands < w.streams.len(),
                    "{line:?}"
                );
            }
            commands += 1;
        }
        assert_eq!(commands, w.streams.len() + 1);
        assert!(!d.contains('\r') && !d.contains('\0'));
    }

    #[test]
    fn vdbench_lines_are_comments_or_definitions() {
        let w = hostile();
        let v = to_vdbench(&w, &ExportOptions::default()).unwrap();
        let mut wds = Vec::new();
        for line in v.lines() {
            if line.starts_with("* ") {
                continue;
            }
            let (kind, rest) = line.split_once('=').expect("definition");
            let name = rest.split(',').next().unwrap();
            assert!(name.chars().all(word_char), "{line:?}");
            match kind {
                "sd" => assert!(line.starts_with("sd=sd1,lun=oio-test.dat,")),
                "wd" => wds.push(name.to_string()),
                "rd" => assert!(rest.contains(",wd=wd_*,")),
                _ => panic!("{line:?}"),
            }
        }
        assert_eq!(wds.len(), 2 * w.streams.len());
        for (i, a) in wds.iter().enumerate() {
            assert!(!wds[..i].contains(a), "{a}");
        }
        assert_eq!(v.lines().filter(|l| l.starts_with("sd=")).count(), 1);
    }

    #[test]
    fn hostile_targets_are_refused_by_name() {
        let w = tempdb();
        let with = |t: &str| ExportOptions {
            target: t.into(),
            ..ExportOptions::default()
        };
        for (t, tools) in [
            ("a\nfilename=/dev/vdz", "fdv"),
            ("a\rb", "fdv"),
            ("a\0b", "fdv"),
            ("", "fdv"),
            (" a", "fdv"),
            ("a;b", "fdv"),
            ("a#b", "fv"),
            ("${HOME}/x", "fdv"),
            ("a\"b", "dv"),
            ("a%b%", "dv"),
            ("a&calc", "dv"),
            ("a|b", "dv"),
            ("-w100", "d"),
            ("/dev/sdb", "d"),
            ("a,openflags=x", "v"),
            ("a b", "v"),
            ("a(b)", "v"),
        ] {
            for (tool, r) in [
                ('f', to_fio(&w, &with(t))),
                ('d', to_diskspd(&w, &with(t))),
                ('v', to_vdbench(&w, &with(t))),
            ] {
                assert_eq!(r.is_err(), tools.contains(tool), "{tool} {t:?}: {r:?}");
                if let Err(e) = r {
                    assert!(e.to_string().contains("target path"), "{e}");
                }
            }
        }
        let long = "a".repeat(MAX_PATH + 1);
        for r in [
            to_fio(&w, &with(&long)),
            to_diskspd(&w, &with(&long)),
            to_vdbench(&w, &with(&long)),
        ] {
            assert!(r.unwrap_err().to_string().contains("bytes long"));
        }
        // Accepted where the format can carry it: fio escapes ':'; diskspd quotes spaces.
        let f = to_fio(&w, &with("F:\\dir\\oio.dat")).unwrap();
        assert!(f.contains("filename=F\\:\\dir\\oio.dat\n"), "{f}");
        let d = to_diskspd(&w, &with("D:\\my dir\\oio.dat")).unwrap();
        assert!(d.contains(" -D \"D:\\my dir\\oio.dat\"\n"), "{d}");
        let o = ExportOptions {
            fio_ioengine: "external:/tmp/evil.so".into(),
            ..ExportOptions::default()
        };
        let e = to_fio(&w, &o).unwrap_err();
        assert!(e.to_string().contains("I/O engine"), "{e}");
    }
}
