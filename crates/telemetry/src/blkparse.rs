//! blkparse's default text output: a per-I/O trace.
//!
//! Event lines are `maj,min cpu seq seconds.nanoseconds pid action RWBS tail`. oio uses the
//! `D` (issued to the device) events for sizes, directions and offsets, pairs each with its `C`
//! (complete) event on the same device and sector for the device latency, and takes the
//! process name from the `Q` (queued) event when one was seen. In `C` lines the bracket is an
//! error code, not a process. Sizes are 512-byte sectors. The per-CPU and total summaries that
//! blkparse prints after the events end the parse.

use crate::text::TextLines;
use crate::{ParseOptions, TelemetryError};
use oio_core::observation::{IoDir, IoRecord, Observation, SourceKind};
use std::collections::HashMap;

/// Direction from an RWBS field (`R`, `WS`, `FWS`, `RA`, `D`, `FN`...).
fn dir_of(rwbs: &str) -> Option<IoDir> {
    let body = rwbs.strip_prefix('F').unwrap_or(rwbs);
    match body.chars().next()? {
        'D' => Some(IoDir::Discard),
        'W' => Some(IoDir::Write),
        'R' => Some(IoDir::Read),
        'N' => Some(IoDir::Flush),
        _ if rwbs == "F" => Some(IoDir::Flush),
        _ => None,
    }
}

/// Longest trace accepted, in seconds from its first event: a year, like every duration.
const MAX_TRACE_S: u64 = oio_core::units::MAX_DURATION.as_secs();

/// Parses the time `seconds.nanoseconds` into ns; `None` past [`MAX_TRACE_S`].
fn parse_ns(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.')?;
    let sec: u64 = sec.parse().ok().filter(|s| *s <= MAX_TRACE_S)?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32);
    Some(sec * 1_000_000_000 + frac_ns)
}

/// Reads `<sector> + <nsectors>` from the event tail.
fn sector_and_size(tail: &[&str]) -> Option<(u64, u64)> {
    if tail.len() >= 3 && tail[1] == "+" {
        Some((tail[0].parse().ok()?, tail[2].parse().ok()?))
    } else {
        None
    }
}

fn bracket(tail: &[&str]) -> Option<String> {
    let joined = tail.join(" ");
    let a = joined.find('[')?;
    let b = joined.rfind(']')?;
    (a < b).then(|| joined[a + 1..b].to_string())
}

/// Parses blkparse text output; intervals of [`ParseOptions::interval_s`] (default 1 s) are
/// computed from the I/Os.
pub fn parse(file: &str, text: &str, opts: &ParseOptions) -> Result<Observation, TelemetryError> {
    parse_lines(&mut TextLines::from_str(file, text), opts)
}

/// Parses blkparse text from lines (streaming; the I/Os themselves are kept).
pub fn parse_lines<R: std::io::Read>(
    lines: &mut TextLines<R>,
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    let file = lines.file().to_string();
    let file = file.as_str();
    let mut trace = Trace {
        budget: oio_core::memory::Limit::detect(),
        ..Trace::default()
    };
    while let Some((n, line)) = lines.next_line()? {
        if !trace.line(file, n, line)? {
            break;
        }
    }
    trace.finish(file, opts)
}

/// The I/Os read so far, per device.
#[derive(Default)]
struct Trace {
    /// Per device: its I/Os, in the order they were issued.
    ios: HashMap<String, Vec<IoRecord>>,
    /// Devices in order of their first I/O.
    order: Vec<String>,
    /// I/Os issued but not yet completed, by device and sector (indices into `ios`).
    pending: HashMap<(String, u64), Vec<usize>>,
    /// The process of each queued, not yet issued I/O.
    queued_by: HashMap<(String, u64), String>,
    /// Events with an RWBS field.
    events: usize,
    /// The most memory the kept I/Os may take (None: not known, then only the I/O count
    /// bounds them).
    budget: Option<oio_core::memory::Limit>,
    /// What the kept I/Os take, bytes (estimated as they arrive, checked at each one).
    kept: u64,
}

/// Most I/Os one trace may hold whatever the memory (as a replayable trace holds).
const MAX_IOS: u64 = MAX_TRACE_IOS as u64;

/// Most I/Os one block trace may hold, in any format (32 bytes each as a replayable trace:
/// 640 MB). Memory follows the trace.
pub const MAX_TRACE_IOS: usize = 20_000_000;

/// What one kept I/O costs at most: its record three times (a vector that doubles holds its
/// old and new buffers at once), its process name, and its entry among the pending ones (key,
/// device name, index) twice for the slack of a growing map.
fn io_cost(dev: &str, process: Option<&str>) -> u64 {
    let record = 3 * std::mem::size_of::<IoRecord>() + process.map_or(0, str::len);
    let pending = std::mem::size_of::<(String, u64)>()
        + dev.len()
        + 2 * std::mem::size_of::<usize>()
        + std::mem::size_of::<Vec<usize>>();
    (record + 2 * pending) as u64
}

/// What one queued, not yet issued I/O costs while it waits for its `D`: its key, device
/// name and process name, twice for the slack of a growing map. A trace of `Q` events alone
/// (a filtered blkparse output) keeps only these, so they count too.
fn queued_cost(dev: &str, process: &str) -> u64 {
    // A map that grows holds its old table and one twice as large, at 7/8 load: 3.5 entries'
    // room each; the two names are heap blocks of 32 bytes at least.
    let entry = std::mem::size_of::<((String, u64), String)>() as u64;
    7 * entry / 2 + 2 * (32 + dev.len() + process.len()) as u64
}

impl Trace {
    /// Reads one line; false at the summaries that end the events.
    fn line(&mut self, file: &str, n: usize, line: &str) -> Result<bool, TelemetryError> {
        let toks: Vec<&str> = line.split_whitespace().collect();
        if toks.is_empty() {
            return Ok(true);
        }
        // Summaries start with "CPU0 (sda):", "Total (sda):" and friends.
        if toks[0].starts_with("CPU")
            || toks[0] == "Total"
            || toks[0] == "Throughput"
            || toks[0] == "Events"
        {
            return Ok(false);
        }
        let Some((maj, min)) = toks[0].split_once(',') else {
            return Err(TelemetryError::parse(
                file,
                n,
                format!("expected an event line starting with maj,min (blkparse default format), found {line:?}"),
            ));
        };
        if maj.parse::<u32>().is_err() || min.parse::<u32>().is_err() || toks.len() < 6 {
            return Err(TelemetryError::parse(
                file,
                n,
                format!("expected maj,min cpu seq time pid action, found {line:?}"),
            ));
        }
        let t = parse_ns(toks[3]).ok_or_else(|| {
            TelemetryError::parse(
                file,
                n,
                format!(
                    "expected a time seconds.nanoseconds since the trace started (at most {} s), found {:?}",
                    MAX_TRACE_S, toks[3]
                ),
            )
        })?;
        let action = toks[5];
        if action == "m" || toks.len() < 7 {
            return Ok(true); // messages and events without RWBS
        }
        let rwbs = toks[6];
        let tail = &toks[7..];
        let dev = toks[0].to_string();
        self.events += 1;
        match action {
            "Q" => {
                if let (Some((sector, _)), Some(p)) = (sector_and_size(tail), bracket(tail)) {
                    let cost = queued_cost(&dev, &p);
                    // Room first: a growth the address space cannot hold is a refusal, not
                    // an abort (the cost above is an estimate).
                    if self.queued_by.try_reserve(1).is_err() {
                        return Err(self.too_large(file, n, "its table of queued I/Os"));
                    }
                    if self.queued_by.insert((dev, sector), p).is_none() {
                        self.keep(file, n, cost)?;
                    }
                }
            }
            "D" => self.issued(file, n, dev, t, rwbs, tail)?,
            "C" => self.completed(dev, t, tail),
            _ => {}
        }
        Ok(true)
    }

    /// A `D` event: an I/O issued to the device.
    fn issued(
        &mut self,
        file: &str,
        n: usize,
        dev: String,
        t: u64,
        rwbs: &str,
        tail: &[&str],
    ) -> Result<(), TelemetryError> {
        let Some(dir) = dir_of(rwbs) else {
            return Err(TelemetryError::parse(
                file,
                n,
                format!("unknown RWBS {rwbs:?}; expected R, W, D or N with flags"),
            ));
        };
        let (sector, nsect) = sector_and_size(tail).unwrap_or((0, 0));
        if sector
            .checked_add(nsect)
            .and_then(|e| e.checked_mul(512))
            .is_none()
        {
            return Err(TelemetryError::parse(
                file,
                n,
                format!("sector {sector} + {nsect} is beyond any device (2^64 bytes); expected 512-byte sectors"),
            ));
        }
        // A preflush or FUA marker without data is a flush, not a 0-byte write.
        let dir = if nsect == 0 { IoDir::Flush } else { dir };
        let process = match self.queued_by.remove(&(dev.clone(), sector)) {
            Some(p) => {
                self.kept = self.kept.saturating_sub(queued_cost(&dev, &p));
                Some(p)
            }
            None => bracket(tail),
        };
        self.keep(file, n, io_cost(&dev, process.as_deref()))?;
        if !self.ios.contains_key(&dev) {
            self.order.push(dev.clone());
        }
        if self.pending.try_reserve(1).is_err() {
            return Err(self.too_large(file, n, "its table of issued I/Os"));
        }
        let v = self.ios.entry(dev.clone()).or_default();
        if v.try_reserve(1).is_err() {
            return Err(self.too_large(file, n, "its I/Os"));
        }
        v.push(IoRecord {
            t_ns: t,
            dir,
            offset_bytes: sector * 512,
            bytes: nsect * 512,
            latency_ns: None,
            process,
        });
        self.pending
            .entry((dev, sector))
            .or_default()
            .push(v.len() - 1);
        Ok(())
    }

    /// Counts one more kept I/O of `cost` bytes, refusing the trace before it outgrows the
    /// memory oio may take (checked as it grows, never after parsing).
    fn keep(&mut self, file: &str, n: usize, cost: u64) -> Result<(), TelemetryError> {
        self.kept = self.kept.saturating_add(cost);
        let ios: u64 = self.ios.values().map(|v| v.len() as u64).sum::<u64>();
        if ios >= MAX_IOS {
            return Err(TelemetryError::parse(
                file,
                n,
                format!("more than {MAX_IOS} I/Os; split the trace (its I/Os are kept in memory)"),
            ));
        }
        if let Some(l) = self.budget.as_ref().filter(|l| self.kept > l.bytes) {
            return Err(TelemetryError::parse(
                file,
                n,
                format!(
                    "the trace's {ios} I/Os so far ({} more queued and not yet issued) need more than {} of memory, the most oio may take here ({}); split the trace",
                    self.queued_by.len(),
                    oio_core::units::format_size(l.bytes),
                    l.source
                ),
            ));
        }
        Ok(())
    }

    /// The trace outgrew the memory the system would give (`what` could not grow).
    fn too_large(&self, file: &str, n: usize, what: &str) -> TelemetryError {
        let ios: u64 = self.ios.values().map(|v| v.len() as u64).sum::<u64>();
        TelemetryError::parse(
            file,
            n,
            format!(
                "the trace's {ios} I/Os so far ({} more queued and not yet issued) need more memory than the system gives ({what} could not grow); split the trace",
                self.queued_by.len()
            ),
        )
    }

    /// A `C` event: the oldest pending I/O at that sector completed.
    fn completed(&mut self, dev: String, t: u64, tail: &[&str]) {
        let Some((sector, _)) = sector_and_size(tail) else {
            return;
        };
        let Some(q) = self.pending.get_mut(&(dev.clone(), sector)) else {
            return;
        };
        if q.is_empty() {
            return;
        }
        let idx = q.remove(0);
        // Pending indices always point into their device's I/Os.
        if let Some(r) = self.ios.get_mut(&dev).and_then(|v| v.get_mut(idx)) {
            r.latency_ns = Some(t.saturating_sub(r.t_ns));
        }
    }

    /// Times from the first I/O, intervals of `opts.interval_s`, and what is missing.
    fn finish(mut self, file: &str, opts: &ParseOptions) -> Result<Observation, TelemetryError> {
        if self.events == 0 {
            return Err(TelemetryError::invalid(file, "no blkparse events found"));
        }
        let mut obs = Observation::new(SourceKind::Blkparse, vec![file.to_string()]);
        let t0 = self
            .ios
            .values()
            .flat_map(|v| v.iter().map(|r| r.t_ns))
            .min()
            .unwrap_or(0);
        let interval = opts.interval_s.unwrap_or(1.0);
        let mut unmatched = 0usize;
        for dev in std::mem::take(&mut self.order) {
            let mut v = self.ios.remove(&dev).unwrap_or_default();
            for r in &mut v {
                r.t_ns -= t0;
            }
            v.sort_by_key(|r| r.t_ns);
            unmatched += v
                .iter()
                .filter(|r| r.latency_ns.is_none() && r.dir != IoDir::Flush)
                .count();
            let series = obs.device_mut(&dev);
            series.intervals = crate::trace::intervals_from_ios(&v, interval)
                .map_err(|m| TelemetryError::invalid(file, format!("{dev}: {m}")))?;
            series.ios = v;
        }
        if unmatched > 0 {
            obs.envelope.warnings.push(format!(
                "{unmatched} issued I/Os had no completion in the trace: no latency for them, and the queue length counts only completed I/Os"
            ));
        }
        Ok(obs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]
  8,0    3        2     0.000001000   697  G   W 223490 + 8 [kjournald]
  8,0    3        3     0.000010000   697  D   W 223490 + 8 [kworker/3:1]
  8,0    1        4     0.000200000     0  C   W 223490 + 8 [0]
  8,0    1        5     0.500000000  1234  D   R 1000 + 128 [dd]
  8,0    1        6     0.502000000     0  C   R 1000 + 128 [0]
  8,0    1        7     0.600000000  1234  D  FN [dd]
  8,0    1        8     1.600000000  1234  m   N cfq1234 insert_request
CPU1 (sda):
 Reads Queued:           1,       64KiB\t Writes Queued:           1,        4KiB
";

    #[test]
    fn pairs_issue_and_completion() {
        let o = parse("t", TRACE, &ParseOptions::default()).unwrap();
        let d = &o.devices[0];
        assert_eq!(d.name, "8,0");
        assert_eq!(d.ios.len(), 3);
        assert_eq!(d.ios[0].dir, IoDir::Write);
        assert_eq!(d.ios[0].bytes, 4096);
        assert_eq!(d.ios[0].offset_bytes, 223490 * 512);
        assert_eq!(d.ios[0].latency_ns, Some(190_000));
        assert_eq!(d.ios[0].process.as_deref(), Some("kjournald"));
        assert_eq!(d.ios[1].bytes, 65536);
        assert_eq!(d.ios[1].latency_ns, Some(2_000_000));
        assert_eq!(d.ios[2].dir, IoDir::Flush);
        assert_eq!(d.intervals[0].read.iops, Some(1.0));
        assert_eq!(d.intervals[0].write.mean_io_bytes, Some(4096.0));
    }

    #[test]
    fn malformed_lines_are_located() {
        let bad = "  8,0    3        1     0.00000000x   697  Q   W 1 + 8 [k]\n";
        let e = parse("t.txt", bad, &ParseOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.txt:1:") && e.contains("seconds.nanoseconds"),
            "{e}"
        );
        let e = parse("t.txt", "hello world\n", &ParseOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("maj,min"), "{e}");
    }
}
