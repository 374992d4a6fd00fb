//! fio results and logs.
//!
//! * JSON and json+ output ([`parse_json_result`]) become oio run results (`oio.run`), so fio
//!   runs can be reported and compared beside oio's own. Percentiles come from json+ `bins`
//!   merged over jobs; without bins, one job's percentiles are copied and several jobs' are left
//!   empty (percentiles cannot be averaged). Output files with warnings before the JSON, and
//!   `--status-interval` files with several concatenated documents (the last one is the final
//!   result) are accepted, as are client/server results (`client_stats`, preferring the
//!   merged `All clients` record) and fio < 3.0 microsecond keys.
//! * The same JSON as an observation ([`parse_json_observation`]): one interval per job over
//!   the run, and fio's `disk_util` device counters.
//! * bw/iops/lat/clat/slat logs ([`parse_logs`]): windowed logs (`log_avg_msec`) become
//!   intervals; unaveraged logs are per-I/O records. Lines are
//!   `time_ms, value[, value_max], ddir, bs[, offset], prio[, issue_time]` (4 to 8 columns).
//!   Averaged logs hold one row per direction per window and no I/O counts: latency windows
//!   are weighed by the iops (or bw) log over their time (see `windowed_intervals` for why,
//!   and for the tail after fio's last rate sample, which is estimated). Measured against
//!   fio 3.33's JSON for the same jobs (iodepth 15: randrw 70/30 4 KiB, randrw 30/70 4/64
//!   KiB, rw 50/50 sequential; windows of 100 to 1000 ms): mean latency within 1 % per
//!   direction and outstanding I/O within 3.3 %. Where fio or the device stalled (a latency
//!   window stretched or 3 times slower than the rest; a writing neighbour on the device made
//!   one in most runs), neither log says how many I/Os completed in the stalled window and a
//!   warning says the figures are estimates: outstanding I/O came within 0.80 to 1.77 times
//!   fio's own in 25 such runs (and was 1,425 for 15 before rate rows were counted per
//!   window and latency windows weighed as a closed loop fills them). `log_max_value=1`
//!   (`log_window_value=max` in newer fio) writes each window's maximum where the mean
//!   goes, and nothing in the file says so: such a log is read as means and overstates
//!   latency and outstanding I/O. `log_window_value=both` adds the maximum as its own
//!   column, which is recognised and left aside.
//! * Histogram logs ([`parse_hist_log`]): the bin count is inferred from the row length
//!   (1856 bins >> `log_hist_coarseness`) and bins are mapped to ns the way fio defines them.

use crate::text::TextLines;
use crate::{ParseOptions, TelemetryError};
use oio_core::document::{self, Envelope, Kind, Loaded};
use oio_core::histogram::LatencyHistogram;
use oio_core::observation::{
    DeviceInterval, DirCounters, IoDir, IoRecord, Observation, SourceKind,
};
use oio_core::result::{
    CpuUsage, DirStats, EngineInfo, ErrorSummary, RunOptions, RunResult, StreamSummary, Summary,
    TargetInfo, RUN_SCHEMA, RUN_SCHEMA_VERSION,
};
use oio_core::sizemix::{SizeMix, SizeShare};
use oio_core::workload::{Percent, Region, Stream, Workload};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// What a fio log file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    /// Bandwidth, KiB/s.
    Bw,
    /// I/Os per second (1 per row when unaveraged).
    Iops,
    /// Total latency, ns.
    Lat,
    /// Completion latency, ns.
    Clat,
    /// Submission latency, ns.
    Slat,
    /// Completion latency histogram.
    ClatHist,
}

/// The kind of log and the job key from a file name such as `mix_iops.1.log`.
pub fn log_kind_from_name(name: &str) -> Option<(LogKind, String)> {
    let base = Path::new(name).file_name()?.to_string_lossy().into_owned();
    for (tag, kind) in [
        ("_clat_hist.", LogKind::ClatHist),
        ("_clat.", LogKind::Clat),
        ("_slat.", LogKind::Slat),
        ("_lat.", LogKind::Lat),
        ("_iops.", LogKind::Iops),
        ("_bw.", LogKind::Bw),
    ] {
        if let Some(i) = base.find(tag) {
            if !base.contains(".log") {
                continue;
            }
            let job = &base[..i];
            let rest = base[i + tag.len()..]
                .trim_end_matches(".log")
                .trim_start_matches("log");
            let key = if rest.is_empty() {
                job.to_string()
            } else {
                format!("{job}.{}", rest.trim_matches('.'))
            };
            return Some((kind, key));
        }
    }
    None
}

/// One row of a fio log.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogRow {
    /// Time, ms since the job started (completion time for latency logs).
    pub time_ms: u64,
    /// The value (KiB/s, IOPS or ns).
    pub value: u64,
    /// 0 read, 1 write, 2 trim.
    pub ddir: u8,
    /// Block size of the I/O, 0 in windowed logs.
    pub bs: u64,
    /// Offset, when logged (`log_offset=1`).
    pub offset: Option<u64>,
}

/// Latest time accepted in a log, ms since the job started: a year, like every duration.
const MAX_LOG_MS: u64 = oio_core::units::MAX_DURATION.as_secs() * 1000;

/// Parses the rows of one bw/iops/lat log.
pub fn parse_log_rows(file: &str, text: &str) -> Result<Vec<LogRow>, TelemetryError> {
    parse_log_lines(&mut TextLines::from_str(file, text))
}

/// Parses the rows of one bw/iops/lat log from lines (streaming; the rows are kept, eight
/// numbers each at most). Histogram logs give no rows (see [`parse_hist_log`]).
pub fn parse_log_lines<R: std::io::Read>(
    lines: &mut TextLines<R>,
) -> Result<Vec<LogRow>, TelemetryError> {
    let file = lines.file().to_string();
    let file = file.as_str();
    if log_kind_from_name(file).is_some_and(|(k, _)| k == LogKind::ClatHist) {
        return Ok(Vec::new());
    }
    // Every column of a fio log is an unsigned integer.
    let mut raw: Vec<(usize, u8, [u64; 8])> = Vec::new();
    while let Some((n, line)) = lines.next_line()? {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        let mut v = [0u64; 8];
        let mut k = 0usize;
        for tok in l.split(',').map(str::trim) {
            if k == 8 {
                k += 1;
                break;
            }
            v[k] = tok.parse::<u64>().map_err(|_| {
                TelemetryError::parse(
                    file,
                    n,
                    format!(
                        "column {}: expected an unsigned integer, found {tok:?}",
                        k + 1
                    ),
                )
            })?;
            k += 1;
        }
        if !(4..=8).contains(&k) {
            let cols = l.split(',').count();
            return Err(TelemetryError::parse(
                file,
                n,
                format!("{cols} columns; expected 4 to 8 (time, value, [max,] ddir, bs, [offset,] prio ...)"),
            ));
        }
        if v[0] > MAX_LOG_MS {
            return Err(TelemetryError::parse(
                file,
                n,
                format!(
                    "time {} ms is more than a year after the job started; expected ms since the start",
                    v[0]
                ),
            ));
        }
        raw.push((n, k as u8, v));
    }
    // log_window_value=both adds a max column after the value: then column 3 is no direction.
    let has_max = raw.iter().any(|(_, k, v)| *k >= 6 && v[2] > 2);
    let shift = usize::from(has_max);
    let mut rows = Vec::with_capacity(raw.len());
    for (line, k, v) in raw {
        let k = k as usize;
        let ddir = v[2 + shift];
        if ddir > 2 {
            return Err(TelemetryError::parse(
                file,
                line,
                format!("direction {ddir}; expected 0 (read), 1 (write) or 2 (trim)"),
            ));
        }
        if k < 4 + shift {
            return Err(TelemetryError::parse(
                file,
                line,
                format!("{k} columns; rows with a max column need 5 to 8"),
            ));
        }
        rows.push(LogRow {
            time_ms: v[0],
            value: v[1],
            ddir: ddir as u8,
            bs: v[3 + shift],
            offset: (k - shift >= 6).then_some(v[4 + shift]),
        });
    }
    Ok(rows)
}

fn dir_of(ddir: u8) -> IoDir {
    match ddir {
        0 => IoDir::Read,
        1 => IoDir::Write,
        _ => IoDir::Discard,
    }
}

/// Parses the bw/iops/lat logs of one or more jobs (`(file name, text)` pairs) into one
/// observation with a series per job (`fio:<job>`). Histogram logs are skipped here (see
/// [`parse_hist_log`]).
pub fn parse_logs(
    files: &[(String, String)],
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    let mut parsed = Vec::with_capacity(files.len());
    for (name, text) in files {
        parsed.push((name.clone(), parse_log_rows(name, text)?));
    }
    parse_log_rows_of(parsed, opts)
}

/// [`parse_logs`] of rows already read (file name, rows).
pub fn parse_log_rows_of(
    files: Vec<(String, Vec<LogRow>)>,
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    let mut obs = Observation::new(
        SourceKind::FioLog,
        files.iter().map(|(n, _)| n.clone()).collect(),
    );
    let first_file = files.first().map(|f| f.0.clone());
    let mut jobs: BTreeMap<String, Vec<(LogKind, Vec<LogRow>)>> = BTreeMap::new();
    for (name, rows) in files {
        let Some((kind, job)) = log_kind_from_name(&name) else {
            return Err(TelemetryError::invalid(
                &name,
                "not a fio log name; expected <job>_{bw,iops,lat,clat,slat}.<n>.log",
            ));
        };
        if kind == LogKind::ClatHist {
            obs.envelope.warnings.push(format!(
                "{name}: histogram logs give latency percentiles, not counters; skipped"
            ));
            continue;
        }
        jobs.entry(job).or_default().push((kind, rows));
    }
    for (job, logs) in jobs {
        let per_io = logs.iter().all(|(_, rows)| rows.iter().all(|r| r.bs > 0))
            && logs.iter().any(|(_, r)| !r.is_empty());
        let dev = format!("fio:{job}");
        if per_io {
            // Prefer a latency log: it gives issue time (completion - latency) and latency.
            let pick = [
                LogKind::Lat,
                LogKind::Clat,
                LogKind::Iops,
                LogKind::Bw,
                LogKind::Slat,
            ]
            .iter()
            .find_map(|k| logs.iter().find(|(kk, _)| kk == k));
            let Some((kind, rows)) = pick else { continue };
            let with_lat = matches!(kind, LogKind::Lat | LogKind::Clat);
            // Without a lat log, clat leaves out the submission time: add the mean slat of
            // the direction (per-I/O slat rows cannot be paired with clat rows reliably).
            let mut slat_mean = [0.0f64; 3];
            if *kind == LogKind::Clat {
                match logs.iter().find(|(k, _)| *k == LogKind::Slat) {
                    Some((_, sl)) => {
                        let mut sum = [(0.0f64, 0u64); 3];
                        for r in sl {
                            let d = (r.ddir as usize).min(2);
                            sum[d].0 += r.value as f64;
                            sum[d].1 += 1;
                        }
                        for d in 0..3 {
                            if sum[d].1 > 0 {
                                slat_mean[d] = sum[d].0 / sum[d].1 as f64;
                            }
                        }
                        obs.envelope.warnings.push(format!(
                            "{dev}: no lat log: each I/O's latency is its clat plus the mean slat of its direction"
                        ));
                    }
                    None => obs.envelope.warnings.push(format!(
                        "{dev}: completion latency (clat) without slat or lat logs: latency and outstanding I/O leave out the submission time"
                    )),
                }
            }
            let mut ios: Vec<IoRecord> = rows
                .iter()
                .map(|r| {
                    let done_ns = r.time_ms * 1_000_000;
                    let value = r
                        .value
                        .saturating_add(slat_mean[(r.ddir as usize).min(2)].round() as u64);
                    let r = LogRow { value, ..*r };
                    IoRecord {
                        t_ns: if with_lat {
                            done_ns.saturating_sub(r.value)
                        } else {
                            done_ns
                        },
                        dir: dir_of(r.ddir),
                        offset_bytes: r.offset.unwrap_or(0),
                        bytes: r.bs,
                        latency_ns: with_lat.then_some(r.value),
                        process: None,
                    }
                })
                .collect();
            ios.sort_by_key(|r| r.t_ns);
            let series = obs.device_mut(&dev);
            series.intervals =
                crate::trace::intervals_from_ios(&ios, opts.interval_s.unwrap_or(1.0))
                    .map_err(|m| TelemetryError::invalid(&dev, m.to_string()))?;
            // A fio run ends with its last completion, not on an interval boundary: a
            // 3.4 s run's last interval holds 0.4 s of I/O, so its rates and queue are over
            // those 0.4 s (at least 1 ms), or it would pull the mean queue down (15 → 12).
            let end_s = ios
                .iter()
                .map(|r| r.t_ns.saturating_add(r.latency_ns.unwrap_or(0)))
                .max()
                .unwrap_or(0) as f64
                / 1e9;
            if let Some(last) = series.intervals.last_mut() {
                let start = last.t_s - last.duration_s;
                let len = (end_s - start).clamp(last.duration_s.min(1e-3), last.duration_s);
                let k = last.duration_s / len;
                for c in [&mut last.read, &mut last.write] {
                    c.iops = c.iops.map(|v| v * k);
                    c.bytes_per_sec = c.bytes_per_sec.map(|v| v * k);
                }
                last.queue_mean = last.queue_mean.map(|v| v * k);
                last.duration_s = len;
                last.t_s = start + len;
            }
            series.ios = ios;
            if rows.iter().all(|r| r.offset.is_none()) {
                obs.envelope.warnings.push(format!(
                    "{dev}: logs have no offsets (log_offset=1): random/sequential share unknown"
                ));
            }
            continue;
        }
        // Windowed (log_avg_msec): rates come from the iops (else bw) log, latency from the
        // lat (else clat + slat) log, whose windows are closed at other times (see
        // `windowed_intervals`).
        if !logs
            .iter()
            .any(|(k, r)| matches!(k, LogKind::Iops | LogKind::Bw) && !r.is_empty())
        {
            return Err(TelemetryError::invalid(
                first_file.as_deref().unwrap_or("-"),
                format!("{dev}: averaged (log_avg_msec) latency logs give no I/O counts; record write_iops_log (or write_bw_log) with the same log_avg_msec and give those logs too"),
            ));
        }
        let intervals = windowed_intervals(&dev, &logs, &mut obs.envelope.warnings);
        obs.device_mut(&dev).intervals = intervals;
    }
    if obs.devices.is_empty() {
        return Err(TelemetryError::invalid(
            first_file.as_deref().unwrap_or("-"),
            "no fio log rows",
        ));
    }
    Ok(obs)
}

/// A window of an averaged latency log: start and end (ms since the job started), mean (ns).
type Window = (u64, u64, f64);

/// The windows of one direction of an averaged latency log. fio closes a latency window
/// when the first completion past its boundary arrives and stamps the row with that time, so
/// each row covers the time since the row before it.
/// Sorted by end (a row out of order only makes an empty window), so that a rate window
/// finds its latency windows by binary search: logs of millions of rows stay linear.
fn windows_of(rows: &[LogRow], ddir: u8) -> Vec<Window> {
    let mut prev = 0u64;
    let mut ws: Vec<Window> = rows
        .iter()
        .filter(|r| r.ddir == ddir)
        .map(|r| {
            let w = (prev.min(r.time_ms), r.time_ms, r.value as f64);
            prev = r.time_ms;
            w
        })
        .collect();
    ws.sort_by_key(|w| w.1);
    ws
}

/// The mean of `ws` over [a, b] ms, each window weighted by how long it overlaps: within
/// one rate window the rate is one number, so overlapping time stands for I/O count.
fn overlap_mean(ws: &[Window], a: u64, b: u64) -> Option<f64> {
    let (mut num, mut den) = (0.0, 0.0);
    let first = ws.partition_point(|w| w.1 <= a);
    for &(s, e, v) in &ws[first..] {
        if s >= b {
            break;
        }
        let o = e.min(b).saturating_sub(s.max(a)) as f64;
        num += o * v;
        den += o;
    }
    (den > 0.0).then(|| num / den)
}

/// The mean latency of `ws` over [a, b] ms as a closed loop spreads its I/Os: the I/Os a
/// window holds are in proportion to its overlap over its latency (at a steady queue, rate
/// = queue / latency). Windows of similar latency weigh as by time; a stalled window, whose
/// few I/Os waited most of it, weighs as those few I/Os instead of as its length.
fn queue_weighted_mean(ws: &[Window], a: u64, b: u64) -> Option<f64> {
    let (mut time, mut ios) = (0.0, 0.0);
    let first = ws.partition_point(|w| w.1 <= a);
    for &(s, e, v) in &ws[first..] {
        if s >= b {
            break;
        }
        let o = e.min(b).saturating_sub(s.max(a)) as f64;
        if v > 0.0 {
            time += o;
            ios += o / v;
        }
    }
    (ios > 0.0).then(|| time / ios)
}

/// The median of `v` (None when empty).
fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

/// Latency windows of a stall, per direction: stretched past 1.5 nominal windows (no
/// completion crossed a boundary for that long) or with a mean above 3 times the median
/// window's. The median leaves aside the last two rows (the job's end, a partial window,
/// and fio's final flush); the final flush is no stall (it holds the I/Os in flight at the
/// end). Returns the spans (ms) and the worst case as text.
fn stalled_windows(lat_windows: &[Vec<Window>; 2]) -> (Vec<(u64, u64)>, Option<String>) {
    let mut spans = Vec::new();
    let mut worst: Option<(f64, String)> = None;
    for ws in lat_windows {
        let body = &ws[..ws.len().saturating_sub(2)];
        let (Some(len), Some(mid)) = (
            median(body.iter().map(|w| w.1 - w.0).collect()),
            median(body.iter().map(|w| w.2 as u64).collect()),
        ) else {
            continue;
        };
        for &(s, e, v) in &ws[..ws.len() - 1] {
            let stretch = (e - s) as f64 / len.max(1) as f64;
            let high = v / (mid.max(1) as f64);
            if stretch > 1.5 || high > 3.0 {
                spans.push((s, e));
                let score = stretch.max(high);
                if worst.as_ref().is_none_or(|w| score > w.0) {
                    worst = Some((
                        score,
                        format!(
                            "a window of {} ms against {len} ms, mean latency {:.1} ms against a median of {:.1} ms",
                            e - s,
                            v / 1e6,
                            mid as f64 / 1e6
                        ),
                    ));
                }
            }
        }
    }
    (spans, worst.map(|w| w.1))
}

/// A latency window fio wrote late: fio closes a window at the first completion past its
/// boundary, so in a window stretched past 1.5 nominal windows nothing completed between
/// the boundary and its end but what closed it. Its I/Os are put in its first nominal
/// window, and the rest is a gap without completions (a stall at the end of a job otherwise
/// counted as hundreds of ms of I/O at the steady queue). The final flush (the last row) is
/// left as it is.
fn trim_stretched(mut ws: Vec<Window>) -> Vec<Window> {
    let body = ws.len().saturating_sub(1);
    let Some(len) = median(
        ws[..ws.len().saturating_sub(2)]
            .iter()
            .map(|w| w.1 - w.0)
            .collect(),
    ) else {
        return ws;
    };
    for w in &mut ws[..body] {
        if w.1 - w.0 > len + len / 2 {
            w.1 = w.0 + len;
        }
    }
    ws
}

/// Intervals from averaged (`log_avg_msec`) logs of one job.
///
/// fio writes the rate logs (iops, bw) from its helper thread on the helper's clock, and the
/// latency logs (lat, clat, slat) from the I/O path when a completion (or, for slat, a
/// submission) passes a window boundary; each row is the mean of its window and no row says
/// how many I/Os it holds. So the k-th latency row and the k-th rate row are not the same
/// I/Os: under load they drift by tens of ms, and pairing them by index mis-weighs windows
/// whose latency differs. Here each rate window's latency is the mean of the latency
/// windows over the same time, each holding I/Os in proportion to its overlap over its
/// latency ([`queue_weighted_mean`]): by time when their latencies are alike, and a stall's
/// window (a few I/Os that waited most of it) as those few I/Os. Weighing by time alone
/// counted a 542 ms stall as half a window of I/Os at 542 ms: 1,425 outstanding I/Os from
/// a job that kept 15.
///
/// A rate row is the mean of the helper's samples in one window of `log_avg_msec`, however
/// late the helper wrote it: its I/O count is the rate times that window, spread over the
/// time since the row before (a row 1000 ms after the previous one, when the helper missed
/// one, holds 500 ms of I/O, not 1000). So counted, the rows add up to fio's JSON count (to
/// 0.1 % in runs where the helper missed rows); the window is the median row spacing.
///
/// The rate logs end at the helper's last sample, before the job ends; the latency logs go
/// on to the job's end and then fio's final flush writes the partial windows (`finalize_logs`),
/// which hold the I/Os still in flight when the job stopped, often late if fio was
/// descheduled. Leaving that tail out loses up to a window of I/Os (5 % of a 3 s run at 250
/// ms windows) and biases latency by whatever those windows differ. It is kept as one last
/// interval: its normal windows holding the direction's mean outstanding I/O over their
/// latency (a closed loop's rate: the job's mean rate put twice the I/Os there were into a
/// slow tail), and a final flush shorter than half a window (a drain) holding the mean
/// outstanding I/O (the I/Os in flight when it stopped). Both are estimates, said in a
/// warning.
///
/// A stall (a latency window stretched or far slower than the rest, see
/// [`stalled_windows`]) is said in a warning: neither log tells how many I/Os completed in
/// it, so the latency and outstanding I/O of the rate windows around it are estimates.
fn windowed_intervals(
    dev: &str,
    logs: &[(LogKind, Vec<LogRow>)],
    warnings: &mut Vec<String>,
) -> Vec<DeviceInterval> {
    let lat_windows = latency_windows(dev, logs, warnings);
    let (stalls, worst) = stalled_windows(&lat_windows);
    let lat_windows = lat_windows.map(trim_stretched);
    let has_iops = rows_of(logs, LogKind::Iops).is_some();
    let (by_k, times) = rate_rows(logs, has_iops);
    let (mut out, last_t) = rate_intervals(dev, by_k, &times, &lat_windows, warnings);
    add_tail(dev, &mut out, last_t, &lat_windows, has_iops, warnings);
    if let Some(worst) = worst {
        warn_stalls(dev, &out, &stalls, &worst, warnings);
    }
    for iv in &mut out {
        for c in [&mut iv.read, &mut iv.write] {
            c.mean_io_bytes = c.mean_size();
            if c.iops.is_some() && c.bytes_per_sec.is_none() {
                c.mean_io_bytes = None;
            }
        }
        // Little's law gives the mean I/Os in flight from rate and latency.
        iv.queue_mean = [&iv.read, &iv.write]
            .iter()
            .map(|c| Some(c.iops? * c.latency_mean_ns? / 1e9))
            .sum();
    }
    out
}

/// The rows of the first non-empty log of kind `k`.
fn rows_of(logs: &[(LogKind, Vec<LogRow>)], k: LogKind) -> Option<&[LogRow]> {
    logs.iter()
        .find(|(kk, r)| *kk == k && !r.is_empty())
        .map(|(_, r)| r.as_slice())
}

/// Latency windows per direction: the lat log, else clat plus the slat of the same time
/// (means add; percentiles would not).
fn latency_windows(
    dev: &str,
    logs: &[(LogKind, Vec<LogRow>)],
    warnings: &mut Vec<String>,
) -> [Vec<Window>; 2] {
    let (lat, clat, slat) = (
        rows_of(logs, LogKind::Lat),
        rows_of(logs, LogKind::Clat),
        rows_of(logs, LogKind::Slat),
    );
    let lat_windows: [Vec<Window>; 2] = [0u8, 1].map(|d| match (lat, clat) {
        (Some(l), _) => windows_of(l, d),
        (None, Some(c)) => {
            let sw = slat.map(|s| windows_of(s, d)).unwrap_or_default();
            windows_of(c, d)
                .into_iter()
                .map(|(s, e, v)| {
                    let sl = overlap_mean(&sw, s, e)
                        .or_else(|| sw.last().map(|w| w.2))
                        .unwrap_or(0.0);
                    (s, e, v + sl)
                })
                .collect()
        }
        _ => Vec::new(),
    });
    if lat.is_none() && clat.is_some() && slat.is_none() {
        warnings.push(format!(
            "{dev}: completion latency (clat) without slat or lat logs: latency and outstanding I/O leave out the submission time"
        ));
    }
    lat_windows
}

/// The rate rows as intervals by sample number, and each sample's time (ms). The k-th row
/// of a direction in the iops and bw logs is the same helper sample.
fn rate_rows(
    logs: &[(LogKind, Vec<LogRow>)],
    has_iops: bool,
) -> (BTreeMap<u64, DeviceInterval>, BTreeMap<u64, u64>) {
    let mut by_k: BTreeMap<u64, DeviceInterval> = BTreeMap::new();
    let mut times: BTreeMap<u64, u64> = BTreeMap::new();
    for (kind, rows) in logs {
        if !matches!(kind, LogKind::Iops | LogKind::Bw) {
            continue;
        }
        let mut next = [0u64; 3];
        for r in rows {
            let d = (r.ddir as usize).min(2);
            let k = next[d];
            next[d] += 1;
            if *kind == LogKind::Iops || !has_iops {
                let t = times.entry(k).or_insert(r.time_ms);
                *t = (*t).max(r.time_ms);
            }
            let iv = by_k.entry(k).or_default();
            let c: &mut DirCounters = match r.ddir {
                0 => &mut iv.read,
                1 => &mut iv.write,
                _ => iv.discard.get_or_insert_with(DirCounters::default),
            };
            match kind {
                LogKind::Iops => c.iops = Some(r.value as f64),
                _ => c.bytes_per_sec = Some(r.value as f64 * 1024.0),
            }
        }
    }
    (by_k, times)
}

/// The rate windows as intervals with their latency, late rows scaled to one window's I/O;
/// also the end of the last window (ms).
fn rate_intervals(
    dev: &str,
    by_k: BTreeMap<u64, DeviceInterval>,
    times: &BTreeMap<u64, u64>,
    lat_windows: &[Vec<Window>; 2],
    warnings: &mut Vec<String>,
) -> (Vec<DeviceInterval>, u64) {
    // The averaging window: the median spacing of the rate rows (the first counts from 0).
    let spacing: Vec<u64> = times
        .values()
        .zip(times.values().skip(1))
        .map(|(a, b)| b.saturating_sub(*a))
        .collect();
    let nominal = median(spacing).or_else(|| times.values().next().copied());
    let mut out = Vec::new();
    let mut prev = 0u64;
    let mut backwards = 0usize;
    let mut late = 0usize;
    for (k, mut iv) in by_k {
        let Some(&t) = times.get(&k) else { continue };
        // A window that ends before the previous one (a hand-edited or merged log) has no
        // length: it is left out and counted, never a negative or wrapped duration.
        let Some(len) = t.checked_sub(prev) else {
            backwards += 1;
            continue;
        };
        // A late row holds one window's I/O spread over the time since the row before.
        let scale = match nominal {
            Some(w) if len > w + w / 2 && len > 0 => {
                late += 1;
                w as f64 / len as f64
            }
            _ => 1.0,
        };
        for (d, c) in [&mut iv.read, &mut iv.write].into_iter().enumerate() {
            c.iops = c.iops.map(|v| v * scale);
            c.bytes_per_sec = c.bytes_per_sec.map(|v| v * scale);
            if c.iops.is_some() || c.bytes_per_sec.is_some() {
                c.latency_mean_ns = queue_weighted_mean(&lat_windows[d], prev, t);
            }
        }
        iv.t_s = t as f64 / 1000.0;
        iv.duration_s = len as f64 / 1000.0;
        prev = t;
        out.push(iv);
    }
    if backwards > 0 {
        warnings.push(format!(
            "{dev}: {backwards} windows end before the window written above them and are left out (times must increase)"
        ));
    }
    if late > 0 {
        warnings.push(format!(
            "{dev}: {late} rate rows came more than half a window late (fio's helper was held up): each holds one window's I/Os ({} ms), spread over the time since the row before",
            nominal.unwrap_or(0)
        ));
    }
    (out, prev)
}

/// The tail after the last rate window (see [`windowed_intervals`]): one estimated interval
/// appended to `out` when there is an iops log, else a warning that it is left out.
fn add_tail(
    dev: &str,
    out: &mut Vec<DeviceInterval>,
    last_t: u64,
    lat_windows: &[Vec<Window>; 2],
    has_iops: bool,
    warnings: &mut Vec<String>,
) {
    let end = lat_windows
        .iter()
        .filter_map(|ws| ws.last().map(|w| w.1))
        .max()
        .unwrap_or(0);
    if end >= last_t && !out.is_empty() && has_iops {
        let rated_s: f64 = out.iter().map(|iv| iv.duration_s).sum();
        let mut tail = DeviceInterval {
            t_s: end.max(last_t + 1) as f64 / 1000.0,
            duration_s: (end.max(last_t + 1) - last_t) as f64 / 1000.0,
            ..Default::default()
        };
        let mut estimated = 0.0;
        for (d, ws) in lat_windows.iter().enumerate() {
            let c = if d == 0 {
                &mut tail.read
            } else {
                &mut tail.write
            };
            estimated += estimate_tail(d, ws, out, last_t, rated_s, tail.duration_s, c);
        }
        if estimated > 0.0 {
            warnings.push(format!(
                "{dev}: the latency windows after the last iops window (the job's last {:.0} ms and fio's final flush) have no I/O count; their {estimated:.0} I/Os are estimated as the job's mean outstanding I/O over their latency, and the final flush's as the mean outstanding I/O (the I/Os in flight at the end)",
                tail.duration_s * 1000.0
            ));
            out.push(tail);
        }
    } else if end > last_t {
        warnings.push(format!(
            "{dev}: latency windows after the last rate window (the job's last {} ms and fio's final flush) have no I/O count (no iops log) and are left out; fio's JSON counts those I/Os",
            end - last_t
        ));
    }
}

/// One direction (`d`) of the tail: its I/Os estimated from the latency windows `ws` after
/// `last_t` and the direction's mean outstanding I/O over the rated intervals `out`, set in
/// `c`. Returns the I/Os estimated (0 when there is nothing to go on).
fn estimate_tail(
    d: usize,
    ws: &[Window],
    out: &[DeviceInterval],
    last_t: u64,
    rated_s: f64,
    tail_s: f64,
    c: &mut DirCounters,
) -> f64 {
    let pick = |iv: &DeviceInterval| {
        if d == 0 {
            iv.read.clone()
        } else {
            iv.write.clone()
        }
    };
    let (mut ios, mut ios_lat, mut bytes) = (0.0, 0.0, 0.0);
    for iv in out {
        let c = pick(iv);
        let n = c.iops.unwrap_or(0.0) * iv.duration_s;
        ios += n;
        ios_lat += n * c.latency_mean_ns.unwrap_or(0.0);
        bytes += c.bytes_per_sec.unwrap_or(0.0) * iv.duration_s;
    }
    if ios <= 0.0 || rated_s <= 0.0 {
        return 0.0;
    }
    let in_flight = ios_lat / 1e9 / rated_s;
    let mut gaps: Vec<u64> = ws.iter().map(|w| w.1 - w.0).collect();
    gaps.sort_unstable();
    let half_window = gaps.get(gaps.len() / 2).copied().unwrap_or(0) / 2;
    let (mut n, mut num) = (0.0, 0.0);
    for (i, &(s, e, v)) in ws.iter().enumerate() {
        if e < last_t || (e == last_t && s < last_t) {
            continue;
        }
        let len_ms = (e - s.max(last_t)) as f64;
        let drain = i + 1 == ws.len() && e - s < half_window;
        let count = if drain {
            in_flight
        } else if v > 0.0 {
            // The mean outstanding I/O over this window's latency (Little's law).
            in_flight * len_ms / 1000.0 / (v / 1e9)
        } else {
            0.0
        };
        n += count;
        num += count * v;
    }
    if n <= 0.0 {
        return 0.0;
    }
    c.iops = Some(n / tail_s);
    c.latency_mean_ns = Some(num / n);
    if bytes > 0.0 {
        c.bytes_per_sec = Some(n / tail_s * bytes / ios);
    }
    n
}

/// Says that fio or the device stalled, and over which share of the run the estimates are.
fn warn_stalls(
    dev: &str,
    out: &[DeviceInterval],
    stalls: &[(u64, u64)],
    worst: &str,
    warnings: &mut Vec<String>,
) {
    let affected: f64 = out
        .iter()
        .filter(|iv| {
            let (a, b) = (
                ((iv.t_s - iv.duration_s) * 1000.0) as u64,
                (iv.t_s * 1000.0) as u64,
            );
            stalls.iter().any(|&(s, e)| s < b && e > a)
        })
        .map(|iv| iv.duration_s)
        .sum();
    let total: f64 = out.iter().map(|iv| iv.duration_s).sum();
    warnings.push(format!(
        "{dev}: fio or the device stalled ({worst}): averaged logs cannot tell how many I/Os completed in a stalled window, so latency and outstanding I/O over {:.0} % of the run are estimates (against fio's own, such runs came within a factor of 2, others within 3 %); per-I/O logs (without log_avg_msec) are exact",
        if total > 0.0 { affected / total * 100.0 } else { 0.0 }
    ));
}

/// Bins in a full-resolution fio histogram (29 groups × 64).
pub const FIO_HIST_BINS: usize = 1856;

/// The ns value fio assigns to latency bin `idx` (full resolution): exact below 128, then 64
/// buckets per power of two, each represented by its midpoint.
pub fn plat_idx_to_ns(idx: usize) -> f64 {
    const BITS: usize = 6;
    if idx < (1 << (BITS + 1)) {
        return idx as f64;
    }
    let error_bits = (idx >> BITS) - 1;
    let base = (1u64 << (error_bits + BITS)) as f64;
    let k = (idx % (1 << BITS)) as f64;
    base + (k + 0.5) * (1u64 << error_bits) as f64
}

/// One row of a histogram log.
#[derive(Clone, Debug, PartialEq)]
pub struct HistRow {
    /// Time, ms.
    pub time_ms: u64,
    /// 0 read, 1 write, 2 trim.
    pub ddir: u8,
    /// Counts per (possibly coarsened) bin, completions since the previous row.
    pub counts: Vec<u64>,
}

/// A parsed `*_clat_hist.*.log`.
#[derive(Clone, Debug, PartialEq)]
pub struct HistLog {
    /// `log_hist_coarseness`: each bin merges 2^coarseness full-resolution bins.
    pub coarseness: u32,
    /// The rows.
    pub rows: Vec<HistRow>,
}

impl HistLog {
    /// All rows of one direction merged into a latency histogram (ns).
    pub fn merged(&self, ddir: u8) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        let w = 1usize << self.coarseness;
        for r in self.rows.iter().filter(|r| r.ddir == ddir) {
            for (i, &c) in r.counts.iter().enumerate() {
                if c > 0 {
                    let lo = plat_idx_to_ns(i * w);
                    let hi = plat_idx_to_ns(i * w + w - 1);
                    h.record_n(((lo + hi) / 2.0).round() as u64, c);
                }
            }
        }
        h
    }
}

/// Parses a fio histogram log.
pub fn parse_hist_log(file: &str, text: &str) -> Result<HistLog, TelemetryError> {
    let mut rows = Vec::new();
    let mut nbins: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        let bins = f.len().saturating_sub(3);
        let ok = bins > 0
            && FIO_HIST_BINS.is_multiple_of(bins)
            && (FIO_HIST_BINS / bins).is_power_of_two();
        if !ok {
            return Err(TelemetryError::parse(
                file,
                i + 1,
                format!("{bins} bins; expected time, ddir, bs and 1856 >> coarseness bin counts"),
            ));
        }
        if *nbins.get_or_insert(bins) != bins {
            return Err(TelemetryError::parse(
                file,
                i + 1,
                "the bin count changes between rows; the file looks truncated",
            ));
        }
        let mut v = Vec::with_capacity(f.len());
        for s in &f {
            v.push(s.parse::<u64>().map_err(|_| {
                TelemetryError::parse(
                    file,
                    i + 1,
                    format!("expected an unsigned integer, found {s:?}"),
                )
            })?);
        }
        rows.push(HistRow {
            time_ms: v[0],
            ddir: v[1].min(2) as u8,
            counts: v[3..].to_vec(),
        });
    }
    let bins = nbins.ok_or_else(|| TelemetryError::invalid(file, "empty histogram log"))?;
    Ok(HistLog {
        coarseness: (FIO_HIST_BINS / bins).trailing_zeros(),
        rows,
    })
}

/// The final JSON document in fio's output (after warnings, last of concatenated ones).
fn final_document(file: &str, text: &str) -> Result<Value, TelemetryError> {
    let start = text.find('{').ok_or_else(|| {
        TelemetryError::invalid(
            file,
            "no JSON object; expected fio --output-format=json output",
        )
    })?;
    let mut last = None;
    for doc in serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>() {
        match doc {
            Ok(v) => last = Some(v),
            Err(e) => {
                let line = text[..start].matches('\n').count() + e.line();
                if last.is_some() && e.is_eof() {
                    break;
                }
                return Err(TelemetryError::parse(
                    file,
                    line,
                    format!("invalid JSON: {e}"),
                ));
            }
        }
    }
    let v = last.ok_or_else(|| TelemetryError::invalid(file, "no JSON document"))?;
    if v.get("fio version").is_none() {
        return Err(TelemetryError::invalid(
            file,
            "JSON without \"fio version\"; expected fio output",
        ));
    }
    Ok(v)
}

/// Refuses a job record without the fields a result is made of, naming the first missing one
/// (a truncated or hand-edited file would otherwise import as an all-zero result).
fn check_job(file: &str, i: usize, job: &Value) -> Result<(), TelemetryError> {
    let name = job.get("jobname").and_then(Value::as_str);
    let missing = |field: &str| {
        TelemetryError::invalid(
            file,
            format!(
                "job {} ({}): missing {field}; expected fio --output-format=json or json+ output",
                i + 1,
                name.map_or("no jobname".to_string(), |n| format!("{n:?}"))
            ),
        )
    };
    if name.is_none() {
        return Err(missing("\"jobname\""));
    }
    for dir in ["read", "write"] {
        let d = job
            .get(dir)
            .filter(|d| d.is_object())
            .ok_or_else(|| missing(&format!("\"{dir}\"")))?;
        for key in ["io_bytes", "total_ios"] {
            if d.get(key).and_then(Value::as_u64).is_none() {
                return Err(missing(&format!("\"{dir}.{key}\" (a whole number)")));
            }
        }
        if d.get("runtime").and_then(Value::as_f64).is_none() {
            return Err(missing(&format!("\"{dir}.runtime\" (ms)")));
        }
        let ios = d.get("total_ios").and_then(Value::as_u64).unwrap_or(0);
        if ios > 0 && lat_obj(d, "lat").or_else(|| lat_obj(d, "clat")).is_none() {
            return Err(missing(&format!("\"{dir}.clat_ns\" or \"{dir}.lat_ns\"")));
        }
    }
    Ok(())
}

/// The job records: `jobs`, or the client/server `client_stats` (the merged `All clients`
/// record when present).
fn job_records(v: &Value) -> Vec<&Value> {
    if let Some(cs) = v.get("client_stats").and_then(Value::as_array) {
        if let Some(all) = cs
            .iter()
            .find(|j| j.get("jobname").and_then(Value::as_str) == Some("All clients"))
        {
            return vec![all];
        }
        return cs.iter().collect();
    }
    v.get("jobs")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn f(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

/// A latency object (`clat_ns`, or `clat` in µs before fio 3.0) and its scale to ns.
fn lat_obj<'a>(dir: &'a Value, name: &str) -> Option<(&'a Value, f64)> {
    dir.get(format!("{name}_ns"))
        .map(|o| (o, 1.0))
        .or_else(|| dir.get(name).filter(|o| o.is_object()).map(|o| (o, 1000.0)))
}

/// Per-direction totals over jobs.
#[derive(Default)]
struct DirAcc {
    ios: u64,
    bytes: u64,
    runtime_ms: f64,
    hist: LatencyHistogram,
    binned: bool,
    lat_sum: f64,
    lat_n: u64,
    min: Option<u64>,
    max: Option<u64>,
    single_pct: Option<BTreeMap<String, f64>>,
    jobs_with_io: usize,
}

fn accumulate(acc: &mut DirAcc, d: &Value) {
    let ios = d.get("total_ios").and_then(Value::as_u64).unwrap_or(0);
    // Sums saturate: a hand-edited count near 2^64 must not wrap or panic.
    acc.ios = acc.ios.saturating_add(ios);
    acc.bytes = acc
        .bytes
        .saturating_add(d.get("io_bytes").and_then(Value::as_u64).unwrap_or(0));
    acc.runtime_ms = acc.runtime_ms.max(f(d, "runtime"));
    if ios == 0 {
        return;
    }
    acc.jobs_with_io += 1;
    // Total latency when fio reports it (slat + clat), completion latency otherwise.
    let lat = lat_obj(d, "lat")
        .filter(|(o, _)| f(o, "N") > 0.0)
        .or_else(|| lat_obj(d, "clat"));
    if let Some((o, scale)) = lat {
        let n = o.get("N").and_then(Value::as_u64).unwrap_or(ios);
        acc.lat_sum += f(o, "mean") * scale * n as f64;
        acc.lat_n = acc.lat_n.saturating_add(n);
        let mn = (f(o, "min") * scale) as u64;
        let mx = (f(o, "max") * scale) as u64;
        acc.min = Some(acc.min.map_or(mn, |m| m.min(mn)));
        acc.max = Some(acc.max.map_or(mx, |m| m.max(mx)));
    }
    // json+ bins live beside the percentiles, normally in clat_ns.
    let binned = ["lat", "clat"].iter().find_map(|k| {
        let (o, scale) = lat_obj(d, k)?;
        let b = o.get("bins")?.as_object()?;
        Some((b, scale))
    });
    if let Some((bins, scale)) = binned {
        acc.binned = true;
        for (k, c) in bins {
            if let (Ok(v), Some(c)) = (k.parse::<f64>(), c.as_u64()) {
                // No run completes 2^48 I/Os; larger counts are damage, kept from overflowing
                // the histogram's counters.
                acc.hist.record_n((v * scale) as u64, c.min(1 << 48));
            }
        }
    }
    if let Some((o, scale)) = lat_obj(d, "clat") {
        if let Some(p) = o.get("percentile").and_then(Value::as_object) {
            acc.single_pct = Some(
                p.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_f64()? * scale)))
                    .collect(),
            );
        }
    }
}

fn dir_stats(acc: &DirAcc, secs: f64, warnings: &mut Vec<String>, label: &str) -> DirStats {
    let mut s = DirStats::from_parts(acc.ios, acc.bytes, &acc.hist, secs, acc.binned);
    if acc.ios == 0 {
        return s;
    }
    if acc.lat_n > 0 {
        s.latency_ns.mean = Some(acc.lat_sum / acc.lat_n as f64);
        s.latency_ns.min = acc.min;
        s.latency_ns.max = acc.max;
        s.outstanding_mean = s.iops * acc.lat_sum / acc.lat_n as f64 / 1e9;
    }
    if !acc.binned {
        if let (1, Some(p)) = (acc.jobs_with_io, &acc.single_pct) {
            let get = |k: &str| p.get(k).map(|v| *v as u64);
            s.latency_ns.p50 = get("50.000000");
            s.latency_ns.p90 = get("90.000000");
            s.latency_ns.p95 = get("95.000000");
            s.latency_ns.p99 = get("99.000000");
            s.latency_ns.p999 = get("99.900000");
        } else {
            warnings.push(format!(
                "{label}: fio JSON without json+ bins and several jobs: percentiles cannot be merged and are left empty; rerun fio with --output-format=json+"
            ));
        }
    }
    s
}

fn option<'a>(job: &'a Value, global: Option<&'a Value>, key: &str) -> Option<&'a str> {
    job.get("job options")
        .and_then(|o| o.get(key))
        .or_else(|| global.and_then(|g| g.get(key)))
        .and_then(Value::as_str)
}

/// Parses fio's `bs`/`bssplit` for one direction (0 read, 1 write).
fn size_mix_option(bs: Option<&str>, bssplit: Option<&str>, dir: usize) -> Option<SizeMix> {
    if let Some(split) = bssplit {
        let parts: Vec<&str> = split.split(',').collect();
        let part = parts.get(dir).or(parts.first())?;
        let mut shares = Vec::new();
        for e in part.split(':').filter(|e| !e.is_empty()) {
            let (size, pct) = e.split_once('/').unwrap_or((e, "100"));
            shares.push(SizeShare {
                bytes: oio_core::units::parse_size(size).ok()?,
                weight: pct.parse::<f64>().ok().filter(|w| *w > 0.0)?,
            });
        }
        return SizeMix::new(shares).ok();
    }
    let bs = bs?;
    let parts: Vec<&str> = bs.split(',').collect();
    let one = parts.get(dir).or(parts.first())?;
    oio_core::units::parse_size(one).ok().map(SizeMix::single)
}

/// Job names that say a job lays out or fills the file rather than measuring a workload.
const LAYOUT_NAMES: [&str; 6] = ["layout", "fill", "prep", "precond", "populate", "create"];

fn total_ios(job: &Value, dir: &str) -> u64 {
    job.get(dir)
        .and_then(|d| d.get("total_ios"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// Only sequential writes: what laying out or filling a file looks like.
fn sequential_writes(job: &Value, global: Option<&Value>) -> bool {
    let rw = option(job, global, "rw").or(option(job, global, "readwrite"));
    rw == Some("write") && total_ios(job, "read") == 0 && total_ios(job, "write") > 0
}

fn layout_named(job: &Value) -> bool {
    let name = job
        .get("jobname")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    LAYOUT_NAMES.iter().any(|n| name.contains(n))
}

/// Leaves out jobs that lay out or fill the file: sequential writes only, and named so or run
/// as a phase of their own (another `groupid`, a stonewall) beside measured jobs. Summed with
/// the measured jobs they would make one result of two phases (a 4 KiB workload and 1 MiB
/// fill writes read as 647 KiB writes). Returns the jobs kept and a warning per job left out;
/// when every job looks like a layout, all are kept and the warning says the result measures
/// that phase.
fn without_layout<'a>(
    jobs: Vec<&'a Value>,
    global: Option<&Value>,
) -> (Vec<&'a Value>, Vec<String>) {
    use oio_core::experiment::LAYOUT_PHASE;
    let group = |j: &Value| j.get("groupid").and_then(Value::as_u64);
    let measured_groups: Vec<Option<u64>> = jobs
        .iter()
        .filter(|j| !sequential_writes(j, global))
        .map(|j| group(j))
        .collect();
    // With group_reporting in the global section a group is how the file reports its jobs
    // (new_group: oio's exports make one per stream, all running together); only a stonewall
    // or wait_for makes it a phase. Without it, another group is another phase.
    let grouped = global
        .and_then(|g| g.get("group_reporting"))
        .and_then(Value::as_str)
        .is_some_and(|v| v != "0");
    let phased = jobs.iter().any(|j| {
        let o = j.get("job options");
        ["stonewall", "wait_for"]
            .iter()
            .any(|k| o.and_then(|o| o.get(*k)).is_some())
    });
    let phases = !grouped || phased;
    let layout = |j: &Value| {
        sequential_writes(j, global)
            && (layout_named(j)
                || (phases && !measured_groups.is_empty() && !measured_groups.contains(&group(j))))
    };
    let name = |j: &Value| {
        j.get("jobname")
            .and_then(Value::as_str)
            .unwrap_or("job")
            .to_string()
    };
    let mean_write = |j: &Value| {
        let d = j.get("write");
        let bytes = d
            .and_then(|d| d.get("io_bytes"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        oio_core::units::format_bytes(bytes as f64 / total_ios(j, "write").max(1) as f64)
    };
    let (out, kept): (Vec<&Value>, Vec<&Value>) = jobs.iter().partition(|j| layout(j));
    if out.is_empty() {
        return (jobs, Vec::new());
    }
    if kept.is_empty() {
        let names: Vec<String> = out.iter().map(|j| name(j)).collect();
        let warning = format!(
            "{LAYOUT_PHASE} every job only wrote sequentially and is named or grouped as a layout or fill phase ({}; mean write {}): the result measures laying out the file, not a workload",
            names.join(", "),
            mean_write(out[0])
        );
        return (jobs, vec![warning]);
    }
    let warnings = out
        .iter()
        .map(|j| {
            format!(
                "{LAYOUT_PHASE} job {:?} only wrote sequentially ({} writes, mean {}) as a layout or fill phase beside the measured jobs: left out of the summary",
                name(j),
                total_ios(j, "write"),
                mean_write(j)
            )
        })
        .collect();
    (kept, warnings)
}

/// Converts fio JSON (or json+) output into an oio run result.
pub fn parse_json_result(file: &str, text: &str) -> Result<RunResult, TelemetryError> {
    let v = final_document(file, text)?;
    let jobs = job_records(&v);
    if jobs.is_empty() {
        return Err(TelemetryError::invalid(file, "no jobs in the fio output"));
    }
    for (i, job) in jobs.iter().enumerate() {
        check_job(file, i, job)?;
    }
    let global = v.get("global options");
    let (jobs, layout) = without_layout(jobs, global);
    let version = v
        .get("fio version")
        .and_then(Value::as_str)
        .unwrap_or("fio")
        .to_string();
    let mut warnings = vec![format!(
        "imported from {version} JSON ({file}): latency is fio's total latency (lat) when reported, else completion latency (clat)"
    )];
    warnings.extend(layout);
    let (mut r, mut w) = (DirAcc::default(), DirAcc::default());
    let (mut usr_s, mut sys_s, mut errors) = (0.0, 0.0, 0u64);
    let mut streams = Vec::new();
    let mut stream_summaries = Vec::new();
    let mut targets = Vec::new();
    for (ji, job) in jobs.iter().enumerate() {
        let (mut jr, mut jw) = (DirAcc::default(), DirAcc::default());
        if let Some(d) = job.get("read") {
            accumulate(&mut r, d);
            accumulate(&mut jr, d);
        }
        if let Some(d) = job.get("write") {
            accumulate(&mut w, d);
            accumulate(&mut jw, d);
        }
        let runtime_s = jr.runtime_ms.max(jw.runtime_ms) / 1000.0;
        let job_s = f(job, "job_runtime") / 1000.0;
        let cpu_s = if job_s > 0.0 { job_s } else { runtime_s };
        usr_s += f(job, "usr_cpu") / 100.0 * cpu_s;
        sys_s += f(job, "sys_cpu") / 100.0 * cpu_s;
        errors = errors.saturating_add(job.get("total_err").and_then(Value::as_u64).unwrap_or(0));
        let name = job_name(&jobs, ji, job);
        streams.push(job_stream(job, global, name.clone(), &jr, &jw));
        let mut jwarn = Vec::new();
        let mut js = Summary {
            read: dir_stats(&jr, runtime_s, &mut jwarn, &name),
            write: dir_stats(&jw, runtime_s, &mut jwarn, &name),
            ..Summary::default()
        };
        js.total = total_stats(&jr, &jw, runtime_s, &js);
        stream_summaries.push(StreamSummary { name, summary: js });
        if let Some(f) = option(job, global, "filename") {
            // fio's JSON has no file size; its `size` option, when in bytes, is the size used.
            let size = option(job, global, "size")
                .filter(|s| !s.trim().ends_with('%'))
                .and_then(|s| oio_core::units::parse_size(s).ok());
            add_target(&mut targets, f, size);
        }
    }
    let secs = r.runtime_ms.max(w.runtime_ms) / 1000.0;
    let mut summary = Summary {
        read: dir_stats(&r, secs, &mut warnings, "read"),
        write: dir_stats(&w, secs, &mut warnings, "write"),
        ..Summary::default()
    };
    summary.total = total_stats(&r, &w, secs, &summary);
    let workload = Workload {
        name: jobs[0]
            .get("jobname")
            .and_then(Value::as_str)
            .unwrap_or("fio")
            .to_string(),
        description: format!("fio job(s) imported from {file}"),
        streams,
    };
    summary.configured_outstanding = workload.configured_outstanding();
    let direct = option(jobs[0], global, "direct").is_some_and(|d| d == "1");
    let total_ios = summary.total.ios;
    Ok(RunResult {
        envelope: imported_envelope(&v, jobs[0], &version, warnings),
        workload,
        options: RunOptions {
            time_s: secs,
            ramp_s: option(jobs[0], global, "ramp_time")
                .and_then(|s| s.parse().ok())
                .unwrap_or(0.0),
            interval_s: 0.0,
            engine_requested: "fio".into(),
            direct,
            submit: String::new(),
            submit_auto: None,
            seed: 0,
            latency_tracking: true,
        },
        targets,
        engine: EngineInfo {
            name: format!(
                "fio/{}",
                option(jobs[0], global, "ioengine").unwrap_or("psync")
            ),
            features: Vec::new(),
            notice: Some(format!("measured by {version}, not by oio")),
        },
        duration_s: secs,
        summary,
        streams: stream_summaries,
        intervals: Vec::new(),
        cpu: imported_cpu(usr_s, sys_s, total_ios, secs),
        errors: ErrorSummary {
            count: errors,
            ..Default::default()
        },
        access_order: None,
        verify: None,
        // fio does not record the host's CPU: unknown, not quiet.
        host_noise: None,
        output_errors: Vec::new(),
    })
}

/// The job's name, numbered by its place when another job has the same name.
fn job_name(jobs: &[&Value], ji: usize, job: &Value) -> String {
    let name = job.get("jobname").and_then(Value::as_str).unwrap_or("job");
    if jobs
        .iter()
        .filter(|j| j.get("jobname").and_then(Value::as_str) == Some(name))
        .count()
        > 1
    {
        format!("{name}-{ji}")
    } else {
        name.to_string()
    }
}

/// The stream as fio ran it: options when present, measured values (`jr`, `jw`) otherwise.
fn job_stream(
    job: &Value,
    global: Option<&Value>,
    name: String,
    jr: &DirAcc,
    jw: &DirAcc,
) -> Stream {
    let total = jr.ios.saturating_add(jw.ios);
    let read_pct = if total > 0 {
        (jr.ios as f64 * 100.0 / total as f64 * 10.0).round() / 10.0
    } else {
        50.0
    };
    let bs = option(job, global, "bs");
    let bssplit = option(job, global, "bssplit");
    let measured = |a: &DirAcc| {
        (a.ios > 0).then(|| {
            SizeMix::single(
                ((a.bytes as f64 / a.ios as f64 / 512.0).round().max(1.0) * 512.0) as u64,
            )
        })
    };
    let read_bs = size_mix_option(bs, bssplit, 0)
        .or_else(|| measured(jr))
        .or(Some(SizeMix::single(4096)));
    let write_bs = size_mix_option(bs, bssplit, 1)
        .or_else(|| measured(jw))
        .or(Some(SizeMix::single(4096)));
    let iodepth: u32 = option(job, global, "iodepth")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let numjobs: u32 = option(job, global, "numjobs")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let rw = option(job, global, "rw")
        .or(option(job, global, "readwrite"))
        .unwrap_or("read");
    let random_pct = if rw.contains("rand") {
        option(job, global, "percentage_random")
            .and_then(|s| s.parse().ok())
            .unwrap_or(100.0)
    } else {
        0.0
    };
    Stream {
        name,
        target: None,
        read_pct: Percent(read_pct),
        bs: None,
        read_bs,
        write_bs,
        random_pct: Percent(random_pct),
        align: None,
        region: Region::default(),
        outstanding: Some((iodepth * numjobs).max(1)),
        workers: numjobs.max(1),
        stripe: None,
        compress_pct: None,
        dedupe_pct: None,
        rate: None,
        distribution: None,
        fdatasync: None,
        ..Default::default()
    }
}

/// Adds the job's file or device `path` of `size` bytes (when known) to `targets`, once.
fn add_target(targets: &mut Vec<TargetInfo>, path: &str, size: Option<u64>) {
    if !targets.iter().any(|t| t.path == path) {
        targets.push(TargetInfo {
            path: path.to_string(),
            kind: if path.starts_with("/dev/") {
                "block".into()
            } else {
                "file".into()
            },
            size_bytes: size.unwrap_or(0),
            ..TargetInfo::default()
        });
    }
}

/// The imported run's envelope: fio's version, time and host (of the first job `job0`).
fn imported_envelope(v: &Value, job0: &Value, version: &str, warnings: Vec<String>) -> Envelope {
    let timestamp = v
        .get("timestamp")
        .and_then(Value::as_u64)
        .and_then(|t| crate::time::rfc3339(t as f64))
        .unwrap_or_default();
    let mut envelope = Envelope::new(RUN_SCHEMA, RUN_SCHEMA_VERSION);
    envelope.oio_version = format!("imported ({version})");
    envelope.timestamp = timestamp;
    envelope.command = vec!["fio".into()];
    envelope.host = Some(oio_core::host::HostInfo {
        hostname: job0
            .get("hostname")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        ..Default::default()
    });
    envelope.warnings = warnings;
    envelope
}

/// CPU time fio reported, per I/O and as cores busy over `secs`.
fn imported_cpu(usr_s: f64, sys_s: f64, total_ios: u64, secs: f64) -> CpuUsage {
    CpuUsage {
        user_s: usr_s,
        system_s: sys_s,
        ns_per_io: (total_ios > 0).then(|| (usr_s + sys_s) * 1e9 / total_ios as f64),
        cores_busy: if secs > 0.0 {
            (usr_s + sys_s) / secs
        } else {
            0.0
        },
        ..Default::default()
    }
}

fn total_stats(r: &DirAcc, w: &DirAcc, secs: f64, s: &Summary) -> DirStats {
    let mut h = r.hist.clone();
    h += &w.hist;
    let mut t = DirStats::from_parts(
        r.ios.saturating_add(w.ios),
        r.bytes.saturating_add(w.bytes),
        &h,
        secs,
        r.binned && w.binned,
    );
    let n = r.lat_n.saturating_add(w.lat_n);
    if n > 0 {
        let mean = (r.lat_sum + w.lat_sum) / n as f64;
        t.latency_ns.mean = Some(mean);
        t.outstanding_mean = s.read.outstanding_mean + s.write.outstanding_mean;
        t.latency_ns.min = [r.min, w.min].into_iter().flatten().min();
        t.latency_ns.max = [r.max, w.max].into_iter().flatten().max();
    }
    t
}

/// fio JSON as an observation: one interval per job over the whole run (`fio:<job>`), and one
/// per `disk_util` device with its counters over the run.
pub fn parse_json_observation(file: &str, text: &str) -> Result<Observation, TelemetryError> {
    let v = final_document(file, text)?;
    let mut obs = Observation::new(SourceKind::FioJson, vec![file.to_string()]);
    obs.source.tool_version = v
        .get("fio version")
        .and_then(Value::as_str)
        .map(String::from);
    let mut runtime_s = 0.0f64;
    for job in job_records(&v) {
        let name = job.get("jobname").and_then(Value::as_str).unwrap_or("job");
        let mut iv = DeviceInterval::default();
        let mut secs = 0.0f64;
        for (key, c) in [("read", &mut iv.read), ("write", &mut iv.write)] {
            let Some(d) = job.get(key) else { continue };
            let ios = f(d, "total_ios");
            let rt = f(d, "runtime") / 1000.0;
            secs = secs.max(rt);
            c.iops = Some(f(d, "iops"));
            c.bytes_per_sec = Some(f(d, "bw_bytes"));
            c.mean_io_bytes = (ios > 0.0).then(|| f(d, "io_bytes") / ios);
            c.latency_mean_ns = lat_obj(d, "lat")
                .or_else(|| lat_obj(d, "clat"))
                .filter(|_| ios > 0.0)
                .map(|(o, s)| f(o, "mean") * s);
        }
        iv.queue_mean = [&iv.read, &iv.write]
            .iter()
            .map(|c| Some(c.iops? * c.latency_mean_ns.unwrap_or(0.0) / 1e9))
            .sum();
        iv.t_s = secs;
        iv.duration_s = secs;
        runtime_s = runtime_s.max(secs);
        obs.device_mut(&format!("fio:{name}")).intervals.push(iv);
    }
    for d in v
        .get("disk_util")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = d.get("name").and_then(Value::as_str) else {
            continue;
        };
        if runtime_s <= 0.0 {
            break;
        }
        let ms = runtime_s * 1000.0;
        let mut iv = DeviceInterval {
            t_s: runtime_s,
            duration_s: runtime_s,
            util_pct: Some(f(d, "util")),
            queue_mean: Some(f(d, "in_queue") / ms),
            ..Default::default()
        };
        for (p, c) in [("read", &mut iv.read), ("write", &mut iv.write)] {
            let ios = f(d, &format!("{p}_ios"));
            c.iops = Some(ios / runtime_s);
            c.latency_mean_ns = (ios > 0.0).then(|| f(d, &format!("{p}_ticks")) / ios * 1e6);
            c.merged_per_sec = Some(f(d, &format!("{p}_merges")) / runtime_s);
            if let Some(sec) = d.get(format!("{p}_sectors")).and_then(Value::as_f64) {
                c.bytes_per_sec = Some(sec * 512.0 / runtime_s);
                c.mean_io_bytes = (ios > 0.0).then(|| sec * 512.0 / ios);
            }
        }
        obs.device_mut(name).intervals.push(iv);
    }
    obs.envelope
        .warnings
        .push("fio JSON holds whole-run means: one interval per job, no time series".into());
    Ok(obs)
}

/// Reads a result file: an oio run result, or fio JSON output converted to one. The file goes
/// through [`oio_core::document`]: its kind and version are checked like every document's.
pub fn load_result(path: &Path) -> Result<RunResult, TelemetryError> {
    let file = path.display().to_string();
    let text = document::read_text(path)?;
    match document::parse(&file, &text)? {
        Loaded::FioJson(text) => parse_json_result(&file, &text),
        Loaded::Documents(_) => Ok(document::read(&file, &text, Kind::Run)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_names() {
        assert_eq!(
            log_kind_from_name("dir/mix_iops.1.log"),
            Some((LogKind::Iops, "mix.1".into()))
        );
        assert_eq!(
            log_kind_from_name("a_clat_hist.2.log"),
            Some((LogKind::ClatHist, "a.2".into()))
        );
        assert_eq!(
            log_kind_from_name("a_lat.log"),
            Some((LogKind::Lat, "a".into()))
        );
        assert_eq!(
            log_kind_from_name("a_lat.log.host1"),
            Some((LogKind::Lat, "a.host1".into()))
        );
        assert_eq!(log_kind_from_name("notes.txt"), None);
    }

    #[test]
    fn bin_values_follow_fio() {
        assert_eq!(plat_idx_to_ns(0), 0.0);
        assert_eq!(plat_idx_to_ns(127), 127.0);
        // 128 starts the group [128, 256) with buckets of 2 ns.
        assert_eq!(plat_idx_to_ns(128), 129.0);
        assert_eq!(plat_idx_to_ns(191), 255.0);
        assert_eq!(plat_idx_to_ns(192), 258.0);
        assert!(plat_idx_to_ns(1855) > 1.6e10);
    }

    #[test]
    fn log_columns() {
        let rows = parse_log_rows("x", "1000, 17039, 0, 0, 0\n1000, 7391, 1, 0, 0\n").unwrap();
        assert_eq!(rows[1].ddir, 1);
        assert_eq!(rows[1].offset, None);
        let rows = parse_log_rows("x", "5, 120000, 0, 4096, 81920, 0\n").unwrap();
        assert_eq!((rows[0].bs, rows[0].offset), (4096, Some(81920)));
        let rows = parse_log_rows("x", "1000, 100, 250, 1, 0, 0\n").unwrap();
        assert_eq!((rows[0].value, rows[0].ddir), (100, 1));
        let rows = parse_log_rows("x", "1000, 100, 0, 4096\n").unwrap();
        assert_eq!(rows[0].bs, 4096);
        let e = parse_log_rows("x.log", "1, 2, 0, 0\n1, 2\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.log:2:"), "{e}");
        let e = parse_log_rows("x.log", "1, 2, 7, 0, 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("direction 7"), "{e}");
    }

    #[test]
    fn averaged_logs_weigh_latency_windows_by_the_rate_over_their_time() {
        let files = vec![
            (
                "j_iops.1.log".to_string(),
                "250, 4000, 0, 0, 0\n500, 4000, 0, 0, 0\n".to_string(),
            ),
            (
                "j_bw.1.log".to_string(),
                "250, 16000, 0, 0, 0\n500, 16000, 0, 0, 0\n".to_string(),
            ),
            // Latency windows closed 10 ms after the rate windows, then the final flush: the
            // I/Os in flight at the end, 5 ms late.
            (
                "j_lat.1.log".to_string(),
                "260, 100000, 0, 0, 0\n510, 300000, 0, 0, 0\n510, 5000000, 0, 0, 0\n".to_string(),
            ),
        ];
        let obs = parse_logs(&files, &ParseOptions::default()).unwrap();
        let iv = &obs.devices[0].intervals;
        assert_eq!(iv.len(), 3, "{iv:?}");
        assert_eq!(iv[0].read.latency_mean_ns, Some(100000.0));
        // 10 ms at 100 µs and 240 ms at 300 µs hold I/Os in proportion to time over
        // latency (0.1 and 0.8 of a steady queue): 250 ms / 0.9 = 277.8 µs.
        let second = iv[1].read.latency_mean_ns.unwrap();
        assert!((second - 250e6 / 900.0).abs() < 1e-6, "{second}");
        // The tail: 10 ms at 300 µs holding the mean outstanding I/O (1000 × 100 µs + 1000
        // × 277.8 µs over 0.5 s), and the drain, as many I/Os as that.
        let in_flight = (1000.0 * 100e-6 + 1000.0 * second * 1e-9) / 0.5;
        let t = &iv[2];
        assert_eq!((t.t_s, t.duration_s), (0.51, 0.01));
        let tail = in_flight * 0.010 / 300e-6;
        let n = tail + in_flight;
        assert!((t.read.iops.unwrap() - n / 0.01).abs() < 1e-6, "{t:?}");
        let want = (tail * 300000.0 + in_flight * 5e6) / n;
        assert!(
            (t.read.latency_mean_ns.unwrap() - want).abs() < 1e-3,
            "{t:?}"
        );
        assert_eq!(t.read.mean_io_bytes, Some(4096.0));
        assert!(obs
            .envelope
            .warnings
            .iter()
            .any(|w| w.contains("final flush")));
    }

    #[test]
    fn bssplit_options() {
        let m = size_mix_option(None, Some("4k/50:64k/50,16k/100"), 1).unwrap();
        assert_eq!(m, SizeMix::single(16384));
        let m = size_mix_option(None, Some("4k/50:64k/50,16k/100"), 0).unwrap();
        assert_eq!(m.to_string(), "4k:50,64k:50");
        assert_eq!(
            size_mix_option(Some("8k"), None, 1),
            Some(SizeMix::single(8192))
        );
    }
}
