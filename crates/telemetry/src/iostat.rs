//! sysstat `iostat -x` text and `iostat -x -o JSON`.
//!
//! Columns are found by their header names, so every sysstat generation reads the same way:
//! the old `Device: rrqm/s wrqm/s r/s w/s rkB/s wkB/s avgrq-sz avgqu-sz await r_await w_await
//! svctm %util` (≤ 11.5.6), the 11.6–12.1 layout with `rareq-sz`/`wareq-sz`/`aqu-sz`, and the
//! 12.1.2+ layout grouped by direction with discard (`d/s`…) and, since 12.3.1, flush (`f/s`)
//! columns. Throughput in `kB` (1024 bytes), `MB` (`-m`) or sectors (`rsec/s`) is converted to
//! bytes. Unknown columns are ignored.
//!
//! The first report holds averages since boot unless iostat ran with `-y`; it is dropped
//! unless [`ParseOptions::keep_first_iostat_report`] is set. Interval length comes from the
//! `-t` timestamps, or [`ParseOptions::interval_s`], or is assumed to be 1 s (with a warning).

use crate::text::TextLines;
use crate::time::{civil_seconds, parse_clock, parse_iso_date, parse_us_date, rfc3339};
use crate::{ParseOptions, TelemetryError};
use oio_core::observation::{DeviceInterval, DirCounters, Observation, SourceKind};
use std::io::Read;

/// How one column maps onto the model.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Col {
    Iops(Dir),
    Bps(Dir, f64),
    Merged(Dir),
    AwaitMs(Dir),
    AwaitBothMs,
    ReqSizeKb(Dir, f64),
    Queue,
    Util,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Dir {
    R,
    W,
    D,
    F,
}

/// Maps a header token (or a JSON key) to its meaning; `None` for columns oio does not use.
fn column(token: &str) -> Option<Col> {
    let (dir, rest) = match token.as_bytes().first()? {
        b'r' => (Dir::R, &token[1..]),
        b'w' => (Dir::W, &token[1..]),
        b'd' => (Dir::D, &token[1..]),
        b'f' => (Dir::F, &token[1..]),
        _ => (Dir::R, ""),
    };
    Some(match rest {
        // Flushes have a rate and a wait, nothing else.
        "/s" | "_await" if dir == Dir::F => {
            if rest == "/s" {
                Col::Iops(dir)
            } else {
                Col::AwaitMs(dir)
            }
        }
        _ if dir == Dir::F => return None,
        "/s" => Col::Iops(dir),
        "kB/s" => Col::Bps(dir, 1024.0),
        "MB/s" => Col::Bps(dir, 1_048_576.0),
        "sec/s" => Col::Bps(dir, 512.0),
        "rqm/s" => Col::Merged(dir),
        "_await" => Col::AwaitMs(dir),
        "areq-sz" => Col::ReqSizeKb(dir, 1024.0),
        _ => match token {
            "await" => Col::AwaitBothMs,
            "aqu-sz" | "avgqu-sz" => Col::Queue,
            "%util" | "util" => Col::Util,
            _ => return None,
        },
    })
}

fn dir_mut(iv: &mut DeviceInterval, d: Dir) -> &mut DirCounters {
    match d {
        Dir::R => &mut iv.read,
        Dir::W => &mut iv.write,
        Dir::D => iv.discard.get_or_insert_with(DirCounters::default),
        Dir::F => iv.flush.get_or_insert_with(DirCounters::default),
    }
}

/// Applies one value to an interval.
fn apply(iv: &mut DeviceInterval, col: Col, v: f64) {
    match col {
        Col::Iops(d) => dir_mut(iv, d).iops = Some(v),
        Col::Bps(d, unit) => dir_mut(iv, d).bytes_per_sec = Some(v * unit),
        Col::Merged(d) => dir_mut(iv, d).merged_per_sec = Some(v),
        Col::AwaitMs(d) => dir_mut(iv, d).latency_mean_ns = Some(v * 1e6),
        Col::AwaitBothMs => {
            for d in [Dir::R, Dir::W] {
                let c = dir_mut(iv, d);
                if c.latency_mean_ns.is_none() {
                    c.latency_mean_ns = Some(v * 1e6);
                }
            }
        }
        Col::ReqSizeKb(d, unit) => dir_mut(iv, d).mean_io_bytes = Some(v * unit),
        Col::Queue => iv.queue_mean = Some(v),
        Col::Util => iv.util_pct = Some(v),
    }
}

/// After a row: sizes and latencies of a direction without I/O are unknown, not zero.
fn finish(iv: &mut DeviceInterval) {
    for c in [&mut iv.read, &mut iv.write]
        .into_iter()
        .chain(iv.discard.as_mut())
    {
        if c.iops.unwrap_or(0.0) <= 0.0 {
            c.mean_io_bytes = None;
            c.latency_mean_ns = None;
        } else if c.mean_io_bytes.is_none() {
            c.mean_io_bytes = c.mean_size();
        }
    }
}

/// Parses a `-t` timestamp line: `11/21/26 13:54:01`, `11/21/2026 01:54:01 PM`,
/// `2026-11-21T13:54:01+0000` (S_TIME_FORMAT=ISO) or `2026-11-21 13:54:01`.
fn parse_timestamp(line: &str) -> Option<f64> {
    let line = line.trim();
    let (date, rest) = match line.split_once('T') {
        Some((d, r)) if d.contains('-') => (d, r),
        _ => line.split_once(' ')?,
    };
    let (y, mo, d) = parse_us_date(date).or_else(|| parse_iso_date(date))?;
    let mut parts = rest.split_whitespace();
    let mut clock = parts.next()?;
    // ISO form carries a zone offset after the seconds; times are only compared, so drop it.
    if let Some(i) = clock.find(['+', '-', 'Z']) {
        clock = &clock[..i];
    }
    let (h, m, s) = parse_clock(clock, parts.next())?;
    civil_seconds(y, mo, d, h, m, s)
}

struct Report {
    time: Option<f64>,
    line: usize,
    rows: Vec<(String, DeviceInterval)>,
}

/// Parses `iostat -x` text output.
pub fn parse_text(
    file: &str,
    text: &str,
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    parse_lines(&mut TextLines::from_str(file, text), opts)
}

/// Parses `iostat -x` text from lines (streaming).
pub fn parse_lines<R: Read>(
    lines: &mut TextLines<R>,
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    let file = lines.file().to_string();
    let file = file.as_str();
    let mut obs = Observation::new(SourceKind::Iostat, vec![file.to_string()]);
    obs.source.host = read_banner(lines, file)?;
    let mut reports: Vec<Report> = Vec::new();
    let mut pending_time: Option<(f64, usize)> = None;
    let mut header: Option<Vec<Option<Col>>> = None;
    let mut skip_cpu_values = false;
    while let Some((n, line)) = lines.next_line()? {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            header = None;
            continue;
        }
        if skip_cpu_values {
            skip_cpu_values = false;
            continue;
        }
        if trimmed.starts_with("avg-cpu:") {
            skip_cpu_values = true;
            continue;
        }
        if let Some(cols) = &header {
            let row = device_row(file, n, trimmed, cols)?;
            // A header always opens a report, so there is one to add to.
            if let Some(report) = reports.last_mut() {
                report.rows.push(row);
            }
            continue;
        }
        if trimmed.starts_with("Device") {
            header = Some(device_header(file, n, trimmed)?);
            let (time, tline) = pending_time.take().map_or((None, n), |(t, l)| (Some(t), l));
            reports.push(Report {
                time,
                line: tline,
                rows: Vec::new(),
            });
            continue;
        }
        match parse_timestamp(trimmed) {
            Some(t) => pending_time = Some((t, n)),
            None => {
                return Err(TelemetryError::parse(
                    file,
                    n,
                    format!(
                    "expected a timestamp (years 1970 to 9999), an avg-cpu: block or a Device header, found {trimmed:?}"
                ),
                ))
            }
        }
    }
    build(obs, reports, opts, file)
}

/// The first non-blank line, `Linux <release> (<host>) <date> ...`: the host.
fn read_banner<R: Read>(
    lines: &mut TextLines<R>,
    file: &str,
) -> Result<Option<String>, TelemetryError> {
    let (n, banner) = loop {
        match lines.next_line()? {
            Some((_, l)) if l.trim().is_empty() => continue,
            Some((n, l)) => break (n, l.to_string()),
            None => {
                return Err(TelemetryError::invalid(
                    file,
                    "empty file; expected iostat -x output",
                ))
            }
        }
    };
    if !banner.starts_with("Linux") {
        return Err(TelemetryError::parse(
            file,
            n,
            format!(
                "expected the iostat banner \"Linux <release> (<host>) <date> ...\", found {banner:?}"
            ),
        ));
    }
    Ok(match (banner.find('('), banner.find(')')) {
        (Some(a), Some(b)) if a < b => Some(banner[a + 1..b].to_string()),
        _ => None,
    })
}

/// The columns of a `Device ...` header; it must have r/s and w/s.
fn device_header(file: &str, n: usize, line: &str) -> Result<Vec<Option<Col>>, TelemetryError> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    let cols: Vec<Option<Col>> = toks[1..].iter().map(|t| column(t)).collect();
    let has_rw = cols.contains(&Some(Col::Iops(Dir::R))) && cols.contains(&Some(Col::Iops(Dir::W)));
    if !has_rw {
        return Err(TelemetryError::parse(
            file,
            n,
            "the Device header has no r/s and w/s columns; capture with `iostat -x` (the -s short form and plain iostat have no per-direction counters)",
        ));
    }
    Ok(cols)
}

/// One device row under a header: the device and its interval.
fn device_row(
    file: &str,
    n: usize,
    line: &str,
    cols: &[Option<Col>],
) -> Result<(String, DeviceInterval), TelemetryError> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    if toks.len() != cols.len() + 1 {
        return Err(TelemetryError::parse(
            file,
            n,
            format!(
                "device row has {} values but the Device header has {} columns; the file looks truncated",
                toks.len().saturating_sub(1),
                cols.len()
            ),
        ));
    }
    let mut iv = DeviceInterval::default();
    for (tok, col) in toks[1..].iter().zip(cols) {
        let Some(col) = col else { continue };
        let v = crate::num(tok).ok_or_else(|| {
            TelemetryError::parse(file, n, format!("expected a number, found {tok:?}"))
        })?;
        apply(&mut iv, *col, v);
    }
    finish(&mut iv);
    Ok((toks[0].to_string(), iv))
}

/// Turns reports into device series: durations, the since-boot report, time offsets.
fn build(
    mut obs: Observation,
    mut reports: Vec<Report>,
    opts: &ParseOptions,
    file: &str,
) -> Result<Observation, TelemetryError> {
    if reports.is_empty() {
        return Err(TelemetryError::invalid(
            file,
            "no Device reports found; expected iostat -x output",
        ));
    }
    let times: Vec<f64> = reports.iter().filter_map(|r| r.time).collect();
    let step = match opts.interval_s {
        Some(s) => s,
        None if times.len() >= 2 => {
            let mut gaps: Vec<f64> = times
                .windows(2)
                .map(|w| w[1] - w[0])
                .filter(|g| *g > 0.0)
                .collect();
            gaps.sort_by(f64::total_cmp);
            gaps.get(gaps.len() / 2).copied().unwrap_or(1.0)
        }
        None => {
            obs.envelope.warnings.push(
                "iostat ran without -t and no interval was given: 1 s intervals assumed (pass --interval)".into(),
            );
            1.0
        }
    };
    if reports.len() > 1 && !opts.keep_first_iostat_report {
        reports.remove(0);
        obs.envelope.warnings.push(
            "the first iostat report (averages since boot) was dropped; keep it with -y captures"
                .into(),
        );
    } else if reports.len() == 1 {
        obs.envelope.warnings.push(
            "only one iostat report: if iostat ran without -y it holds averages since boot".into(),
        );
    }
    let t0 = reports[0].time;
    if let Some(t) = t0 {
        obs.start = rfc3339(t - step);
        obs.envelope
            .warnings
            .push("iostat timestamps are local time; the start is shown as if it were UTC".into());
    }
    for (k, r) in reports.into_iter().enumerate() {
        let t_s = match (r.time, t0) {
            (Some(t), Some(t0)) => t - t0 + step,
            _ => (k + 1) as f64 * step,
        };
        if let (Some(t), Some(t0)) = (r.time, t0) {
            if t < t0 {
                return Err(TelemetryError::parse(
                    file,
                    r.line,
                    "timestamp goes backwards; expected increasing times",
                ));
            }
        }
        for (name, mut iv) in r.rows {
            iv.t_s = t_s;
            iv.duration_s = step;
            obs.device_mut(&name).intervals.push(iv);
        }
    }
    Ok(obs)
}

/// Parses `iostat -x -o JSON` output.
pub fn parse_json(
    file: &str,
    text: &str,
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        TelemetryError::parse(
            file,
            e.line(),
            format!("invalid JSON ({e}); expected iostat -o JSON output"),
        )
    })?;
    let hosts = v
        .pointer("/sysstat/hosts")
        .and_then(|h| h.as_array())
        .ok_or_else(|| {
            TelemetryError::invalid(
                file,
                "no sysstat.hosts array; expected iostat -o JSON output",
            )
        })?;
    let mut obs = Observation::new(SourceKind::IostatJson, vec![file.to_string()]);
    let mut reports = Vec::new();
    for h in hosts {
        if let Some(n) = h.get("nodename").and_then(|n| n.as_str()) {
            obs.source.host = Some(n.to_string());
        }
        let date = h.get("date").and_then(|d| d.as_str()).unwrap_or("");
        for (k, st) in h
            .get("statistics")
            .and_then(|s| s.as_array())
            .into_iter()
            .flatten()
            .enumerate()
        {
            let Some(disks) = st.get("disk").and_then(|d| d.as_array()) else {
                continue;
            };
            // Timestamps are a time of day, or a full date and time with -t.
            let time = st.get("timestamp").and_then(|t| t.as_str()).and_then(|t| {
                parse_timestamp(t).or_else(|| parse_timestamp(&format!("{date} {t}")))
            });
            let mut rows = Vec::new();
            for d in disks {
                let name = d
                    .get("disk_device")
                    .and_then(|n| n.as_str())
                    .ok_or_else(|| {
                        TelemetryError::invalid(
                            file,
                            format!("statistics[{k}]: a disk entry has no disk_device"),
                        )
                    })?;
                let mut iv = DeviceInterval::default();
                if let Some(obj) = d.as_object() {
                    for (key, val) in obj {
                        if let (Some(col), Some(x)) = (column(key), val.as_f64()) {
                            apply(&mut iv, col, x);
                        }
                    }
                }
                finish(&mut iv);
                rows.push((name.to_string(), iv));
            }
            reports.push(Report {
                time,
                line: 0,
                rows,
            });
        }
    }
    build(obs, reports, opts, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_tokens_map_across_generations() {
        assert_eq!(column("rkB/s"), Some(Col::Bps(Dir::R, 1024.0)));
        assert_eq!(column("wMB/s"), Some(Col::Bps(Dir::W, 1_048_576.0)));
        assert_eq!(column("rsec/s"), Some(Col::Bps(Dir::R, 512.0)));
        assert_eq!(column("avgqu-sz"), Some(Col::Queue));
        assert_eq!(column("wareq-sz"), Some(Col::ReqSizeKb(Dir::W, 1024.0)));
        assert_eq!(column("d_await"), Some(Col::AwaitMs(Dir::D)));
        assert_eq!(column("svctm"), None);
        assert_eq!(column("%rrqm"), None);
        assert_eq!(column("f/s"), Some(Col::Iops(Dir::F)));
        assert_eq!(column("f_await"), Some(Col::AwaitMs(Dir::F)));
        assert_eq!(column("fkB/s"), None);
        assert_eq!(column("Device:"), None);
    }

    #[test]
    fn timestamps() {
        let a = parse_timestamp("11/21/26 13:54:01").unwrap();
        assert_eq!(parse_timestamp("11/21/2026 01:54:02 PM").unwrap() - a, 1.0);
        assert_eq!(
            parse_timestamp("2026-11-21T13:54:03+0100").unwrap() - a,
            2.0
        );
        assert!(parse_timestamp("avg-cpu").is_none());
    }

    #[test]
    fn flushes_per_second_and_their_wait_are_kept() {
        let text = "Linux 6.1 (vm) \t2026-11-21 \t_x86_64_\t(2 CPU)\n\nDevice            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util\nvda 10.00 80.00 0.00 0.00 0.50 8.00 1500.00 12000.00 0.00 0.00 0.40 8.00 0.00 0.00 0.00 0.00 0.00 0.00 1381.00 0.90 1.20 50.00\n";
        let o = parse_text(
            "x.txt",
            text,
            &ParseOptions {
                keep_first_iostat_report: true,
                interval_s: Some(1.0),
                ..ParseOptions::default()
            },
        )
        .unwrap();
        let f = o.devices[0].intervals[0].flush.clone().expect("f/s read");
        assert_eq!(f.iops, Some(1381.0));
        assert_eq!(f.latency_mean_ns, Some(0.9e6));
        assert_eq!(f.mean_io_bytes, None);
    }
}
