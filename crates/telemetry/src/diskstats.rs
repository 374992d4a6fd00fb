//! `/proc/diskstats`: snapshots in files, and the live [`DiskstatsRecorder`].
//!
//! Each line is `major minor name` and then 11 (kernel < 4.18), 15 (discard, 4.18+) or 17
//! (flush, 5.5+) counters; more are ignored. Sectors are always 512 bytes; times are ms; field
//! 9 (I/Os in flight) is the only instantaneous one. Rates come from deltas between
//! snapshots, computed exactly as sysstat's `iostat -x` does (r/s = Δreads/Δt,
//! r_await = Δread_ms/Δreads, aqu-sz = Δweighted_ms/Δt_ms, %util = Δio_ticks/Δt_ms), so `oio
//! record` and iostat agree. The ms fields are 32-bit on the kernel side: deltas are taken
//! modulo 2^32 when a counter goes backwards.
//!
//! A snapshot file is a series of diskstats dumps. A line holding only a number (for example
//! `date +%s.%N` before each `cat /proc/diskstats`) gives the time of the dump that follows;
//! without times, dumps are split where a device repeats and
//! [`ParseOptions::interval_s`](crate::ParseOptions) (or 1 s) is the interval.

use crate::text::TextLines;
use crate::{ParseOptions, TelemetryError};
use oio_core::observation::{DeviceInterval, DirCounters, Observation, SourceKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The cumulative counters of one device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskCounters {
    /// Reads completed.
    pub reads: u64,
    /// Reads merged.
    pub reads_merged: u64,
    /// Sectors (512 B) read.
    pub sectors_read: u64,
    /// Time spent reading, ms.
    pub read_ms: u64,
    /// Writes completed.
    pub writes: u64,
    /// Writes merged.
    pub writes_merged: u64,
    /// Sectors written.
    pub sectors_written: u64,
    /// Time spent writing, ms.
    pub write_ms: u64,
    /// I/Os in flight now.
    pub in_flight: u64,
    /// Time the device had I/O in flight, ms.
    pub io_ticks_ms: u64,
    /// Weighted time in queue, ms × I/Os.
    pub weighted_ms: u64,
    /// Discards completed, merged, sectors, ms (kernel 4.18+).
    pub discard: Option<[u64; 4]>,
    /// Flushes completed and ms (kernel 5.5+).
    pub flush: Option<[u64; 2]>,
}

/// A diskstats line that could not be read; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not one of the kernel's field counts.
    #[error(
        "expected 14, 18 or 20 fields (major minor name and 11, 15 or 17 counters), found {found}"
    )]
    FieldCount {
        /// Fields found.
        found: usize,
    },
    /// A counter that is not an unsigned integer (`field` counts from 1).
    #[error("field {field} is {text:?}; expected an unsigned integer")]
    NotCounter {
        /// The field, counted from 1.
        field: usize,
        /// Its text.
        text: String,
    },
    /// No major and minor number first.
    #[error("expected major and minor numbers first, found {text:?}")]
    NoDeviceNumber {
        /// The text found instead.
        text: String,
    },
}

/// A diskstats snapshot that could not be read: the line (from 1) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {error}")]
pub struct SnapshotError {
    /// The line, counted from 1.
    pub line: usize,
    /// What was wrong with it.
    pub error: LineError,
}

/// Parses one diskstats line into the device name and its counters.
pub fn parse_line(line: &str) -> Result<(String, DiskCounters), LineError> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    if !(toks.len() == 14 || toks.len() >= 18) {
        return Err(LineError::FieldCount { found: toks.len() });
    }
    let mut v = [0u64; 17];
    let n = (toks.len() - 3).min(17);
    for (i, t) in toks[3..3 + n].iter().enumerate() {
        v[i] = t.parse().map_err(|_| LineError::NotCounter {
            field: i + 4,
            text: t.to_string(),
        })?;
    }
    for t in &toks[..2] {
        t.parse::<u32>().map_err(|_| LineError::NoDeviceNumber {
            text: t.to_string(),
        })?;
    }
    Ok((
        toks[2].to_string(),
        DiskCounters {
            reads: v[0],
            reads_merged: v[1],
            sectors_read: v[2],
            read_ms: v[3],
            writes: v[4],
            writes_merged: v[5],
            sectors_written: v[6],
            write_ms: v[7],
            in_flight: v[8],
            io_ticks_ms: v[9],
            weighted_ms: v[10],
            discard: (n >= 15).then(|| [v[11], v[12], v[13], v[14]]),
            flush: (n >= 17).then(|| [v[15], v[16]]),
        },
    ))
}

/// True when the text looks like diskstats lines.
pub(crate) fn looks_like_diskstats(text: &str) -> bool {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .take(3)
        .any(|l| parse_line(l).is_ok())
}

/// Delta of a counter, modulo 2^32 when it went backwards (32-bit kernel fields wrap).
fn delta(cur: u64, prev: u64) -> u64 {
    if cur >= prev {
        cur - prev
    } else if prev <= u32::MAX as u64 {
        cur + (1u64 << 32) - prev
    } else {
        cur.wrapping_sub(prev)
    }
}

/// The interval between two snapshots `dt_s` seconds apart, as iostat -x computes it.
pub fn interval_between(prev: &DiskCounters, cur: &DiskCounters, dt_s: f64) -> DeviceInterval {
    let dt_ms = dt_s * 1000.0;
    let dir = |ios: u64, merged: u64, sectors: u64, ms: u64| {
        let rate = |v: u64| v as f64 / dt_s;
        DirCounters {
            iops: Some(rate(ios)),
            bytes_per_sec: Some(rate(sectors) * 512.0),
            mean_io_bytes: (ios > 0).then(|| sectors as f64 * 512.0 / ios as f64),
            latency_mean_ns: (ios > 0).then(|| ms as f64 / ios as f64 * 1e6),
            merged_per_sec: Some(rate(merged)),
            queue_mean: None,
        }
    };
    let discard = match (prev.discard, cur.discard) {
        (Some(p), Some(c)) => Some(dir(
            delta(c[0], p[0]),
            delta(c[1], p[1]),
            delta(c[2], p[2]),
            delta(c[3], p[3]),
        )),
        _ => None,
    };
    DeviceInterval {
        t_s: 0.0,
        duration_s: dt_s,
        read: dir(
            delta(cur.reads, prev.reads),
            delta(cur.reads_merged, prev.reads_merged),
            delta(cur.sectors_read, prev.sectors_read),
            delta(cur.read_ms, prev.read_ms),
        ),
        write: dir(
            delta(cur.writes, prev.writes),
            delta(cur.writes_merged, prev.writes_merged),
            delta(cur.sectors_written, prev.sectors_written),
            delta(cur.write_ms, prev.write_ms),
        ),
        discard,
        flush: match (prev.flush, cur.flush) {
            (Some(p), Some(c)) => {
                let n = delta(c[0], p[0]);
                Some(DirCounters {
                    iops: Some(n as f64 / dt_s),
                    latency_mean_ns: (n > 0).then(|| delta(c[1], p[1]) as f64 / n as f64 * 1e6),
                    ..DirCounters::default()
                })
            }
            _ => None,
        },
        queue_mean: Some(delta(cur.weighted_ms, prev.weighted_ms) as f64 / dt_ms),
        queue_current: Some(cur.in_flight as f64),
        util_pct: Some(
            (delta(cur.io_ticks_ms, prev.io_ticks_ms) as f64 / dt_ms * 100.0).min(100.0),
        ),
    }
}

/// Parses a whole diskstats text (one snapshot).
pub fn parse_snapshot(text: &str) -> Result<BTreeMap<String, DiskCounters>, SnapshotError> {
    let mut m = BTreeMap::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let (name, c) = parse_line(l).map_err(|error| SnapshotError { line: i + 1, error })?;
        m.insert(name, c);
    }
    Ok(m)
}

/// Parses a file of diskstats snapshots (see the module documentation).
pub fn parse_snapshots(
    file: &str,
    text: &str,
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    parse_snapshot_lines(&mut TextLines::from_str(file, text), opts)
}

/// Parses diskstats snapshots from lines (streaming).
pub fn parse_snapshot_lines<R: std::io::Read>(
    lines: &mut TextLines<R>,
    opts: &ParseOptions,
) -> Result<Observation, TelemetryError> {
    let file = lines.file().to_string();
    let file = file.as_str();
    let mut snaps: Vec<(Option<f64>, BTreeMap<String, DiskCounters>)> = Vec::new();
    let mut pending_time: Option<f64> = None;
    while let Some((n, line)) = lines.next_line()? {
        let i = n - 1;
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if !l.contains(char::is_whitespace) {
            let t = crate::num(l).ok_or_else(|| {
                TelemetryError::parse(
                    file,
                    i + 1,
                    format!("expected a time in seconds or a diskstats line, found {l:?}"),
                )
            })?;
            if !(0.0..crate::time::END_OF_RFC3339).contains(&t) {
                return Err(TelemetryError::parse(
                    file,
                    i + 1,
                    format!("time {l} is not seconds since 1970 before the year 10000; expected `date +%s.%N` output"),
                ));
            }
            pending_time = Some(t);
            snaps.push((pending_time, BTreeMap::new()));
            continue;
        }
        let (name, c) =
            parse_line(l).map_err(|e| TelemetryError::parse(file, i + 1, e.to_string()))?;
        let start_new = match snaps.last() {
            None => true,
            Some((_, m)) => m.contains_key(&name),
        };
        if start_new {
            if pending_time.is_some() && snaps.last().is_some_and(|(_, m)| m.is_empty()) {
                // The time line already opened this snapshot.
            } else {
                snaps.push((None, BTreeMap::new()));
            }
        }
        pending_time = None;
        snaps.last_mut().expect("pushed above").1.insert(name, c);
    }
    snaps.retain(|(_, m)| !m.is_empty());
    if snaps.len() < 2 {
        return Err(TelemetryError::invalid(
            file,
            format!(
                "{} diskstats snapshot(s); at least 2 are needed to compute rates",
                snaps.len()
            ),
        ));
    }
    let mut obs = Observation::new(SourceKind::Diskstats, vec![file.to_string()]);
    let timed = snaps.iter().all(|(t, _)| t.is_some());
    let step = opts.interval_s.unwrap_or(1.0);
    if !timed && opts.interval_s.is_none() {
        obs.envelope.warnings.push(
            "diskstats snapshots carry no times: 1 s intervals assumed (pass --interval)".into(),
        );
    }
    if let Some(t0) = snaps[0].0.filter(|_| timed) {
        obs.start = crate::time::rfc3339(t0);
    }
    let mut t_s = 0.0;
    for k in 1..snaps.len() {
        let dt = if timed {
            snaps[k].0.unwrap_or(0.0) - snaps[k - 1].0.unwrap_or(0.0)
        } else {
            step
        };
        if dt <= 0.0 {
            return Err(TelemetryError::invalid(
                file,
                format!("snapshot {} is not later than the one before", k + 1),
            ));
        }
        t_s += dt;
        for (name, cur) in &snaps[k].1 {
            let Some(prev) = snaps[k - 1].1.get(name) else {
                continue;
            };
            let mut iv = interval_between(prev, cur, dt);
            iv.t_s = t_s;
            obs.device_mut(name).intervals.push(iv);
        }
    }
    Ok(obs)
}

/// The block device a file lives on, as the kernel names it in /proc/diskstats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDevice {
    /// Device number, major.
    pub major: u32,
    /// Device number, minor.
    pub minor: u32,
    /// The name in /proc/diskstats and /sys/class/block (`sda1`, `nvme0n1p2`, `dm-0`).
    pub name: String,
}

/// The block devices (kernel names) the targets are on, or are: a file's filesystem device
/// (its parent directory's when it does not exist yet), a block device itself.
pub fn block_devices(paths: &[String]) -> Vec<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        let p = Path::new(p);
        let name = match std::fs::metadata(p) {
            Ok(md) if md.file_type().is_block_device() => {
                // Linux's encoding of a device number.
                let rdev = md.rdev();
                let (major, minor) = (
                    (rdev >> 8) & 0xfff,
                    (rdev & 0xff) | ((rdev >> 12) & 0xfff00),
                );
                std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}"))
                    .ok()
                    .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned()))
            }
            Ok(_) => device_of(p).map(|d| d.name),
            Err(_) => {
                let dir = p
                    .parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                device_of(dir).map(|d| d.name)
            }
        };
        if let Some(n) = name.filter(|n| !out.contains(n)) {
            out.push(n);
        }
    }
    out
}

/// The block device holding `path` (its filesystem's device), or None when the filesystem
/// has no block device (tmpfs, overlay, NFS) or sysfs does not know it.
pub fn device_of(path: &Path) -> Option<BlockDevice> {
    let dev = rustix::fs::stat(path).ok()?.st_dev;
    let (major, minor) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    // /sys/dev/block/M:m links to the device's directory, whose name is its kernel name.
    let link = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let name = link.file_name()?.to_string_lossy().into_owned();
    Some(BlockDevice { major, minor, name })
}

/// The intervals of one device as one interval over their whole time: counts are summed
/// and rates divided by the total time, so each interval weighs by its length (and latency
/// by its I/Os), never as a plain mean of per-interval means. None when no time was recorded.
pub fn mean_interval(ivs: &[DeviceInterval]) -> Option<DeviceInterval> {
    let secs: f64 = ivs.iter().map(|i| i.duration_s).sum();
    if secs.is_nan() || secs <= 0.0 {
        return None;
    }
    let mut m = DeviceInterval {
        t_s: ivs.last()?.t_s,
        duration_s: secs,
        ..DeviceInterval::default()
    };
    for read in [true, false] {
        let (mut n, mut b, mut lat) = (0.0, 0.0, 0.0);
        for i in ivs {
            let c = if read { &i.read } else { &i.write };
            let k = c.iops_or_zero() * i.duration_s;
            n += k;
            b += c.bytes_per_sec.unwrap_or(0.0) * i.duration_s;
            lat += c.latency_mean_ns.unwrap_or(0.0) * k;
        }
        let c = if read { &mut m.read } else { &mut m.write };
        c.iops = Some(n / secs);
        c.bytes_per_sec = Some(b / secs);
        c.mean_io_bytes = (n > 0.0).then(|| b / n);
        c.latency_mean_ns = (n > 0.0).then(|| lat / n);
    }
    let time_weighted = |f: fn(&DeviceInterval) -> Option<f64>| -> Option<f64> {
        let (mut sum, mut w) = (0.0, 0.0);
        for i in ivs {
            if let Some(x) = f(i) {
                sum += x * i.duration_s;
                w += i.duration_s;
            }
        }
        (w > 0.0).then(|| sum / w)
    };
    m.queue_mean = time_weighted(|i| i.queue_mean);
    m.util_pct = time_weighted(|i| i.util_pct);
    // Flushes over the time that counted them (a source without them leaves None).
    let flushed: Vec<&DeviceInterval> = ivs.iter().filter(|i| i.flush.is_some()).collect();
    let fsecs: f64 = flushed.iter().map(|i| i.duration_s).sum();
    if fsecs > 0.0 {
        let (mut n, mut lat) = (0.0, 0.0);
        for i in &flushed {
            let f = i.flush.as_ref().expect("filtered");
            let k = f.iops_or_zero() * i.duration_s;
            n += k;
            lat += f.latency_mean_ns.unwrap_or(0.0) * k;
        }
        m.flush = Some(DirCounters {
            iops: Some(n / fsecs),
            latency_mean_ns: (n > 0.0).then(|| lat / n),
            ..DirCounters::default()
        });
    }
    Some(m)
}

/// Whole disks this machine has (from /sys/block), without loop, ram and zram devices.
pub fn whole_disks() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !(n.starts_with("loop") || n.starts_with("ram") || n.starts_with("zram")))
        .collect();
    v.sort();
    v
}

/// One recorded interval of every recorded device, handed to an observer as it completes.
#[derive(Clone, Debug)]
pub struct Sample {
    /// End of the interval, seconds since the recording started.
    pub t_s: f64,
    /// The interval of each device, in the order the devices were given.
    pub devices: Vec<(String, DeviceInterval)>,
}

type Observer = Box<dyn FnMut(&Sample) + Send>;

struct Shared {
    obs: Mutex<Observation>,
    stop: AtomicBool,
    error: Mutex<Option<String>>,
}

/// Samples `/proc/diskstats` on a background thread until stopped.
///
/// ```no_run
/// use oio_telemetry::DiskstatsRecorder;
/// use std::time::Duration;
/// let rec = DiskstatsRecorder::start(&["sda".to_string()], Duration::from_secs(1))?;
/// // ... run the database benchmark ...
/// let observation = rec.stop()?;
/// # Ok::<(), oio_telemetry::TelemetryError>(())
/// ```
///
/// Intervals are timed with a monotonic clock against fixed deadlines, so they do not drift.
/// `stop` takes a last sample, so the final (shorter) interval is kept when it is at least a
/// tenth of the interval long.
pub struct DiskstatsRecorder {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl DiskstatsRecorder {
    /// Starts recording `devices` (kernel names such as `sda`, `nvme0n1`, `vda`; empty = every
    /// whole disk) every `interval`.
    pub fn start(devices: &[String], interval: Duration) -> Result<Self, TelemetryError> {
        Self::start_with(Path::new("/proc/diskstats"), devices, interval, None)
    }

    /// Like [`start`](Self::start), and calls `observer` with every interval as it completes
    /// (on the recorder's thread; keep it short).
    pub fn start_with_observer(
        devices: &[String],
        interval: Duration,
        observer: impl FnMut(&Sample) + Send + 'static,
    ) -> Result<Self, TelemetryError> {
        Self::start_with(
            Path::new("/proc/diskstats"),
            devices,
            interval,
            Some(Box::new(observer)),
        )
    }

    /// Records from another diskstats file (tests use a file they rewrite).
    pub fn start_with(
        path: &Path,
        devices: &[String],
        interval: Duration,
        observer: Option<Observer>,
    ) -> Result<Self, TelemetryError> {
        let file = path.display().to_string();
        if interval < Duration::from_millis(10) {
            return Err(TelemetryError::invalid(
                &file,
                "the interval must be at least 10 ms",
            ));
        }
        let read = read_snapshot(path)?;
        let devices: Vec<String> = if devices.is_empty() {
            let whole = whole_disks();
            let v: Vec<String> = read.keys().filter(|n| whole.contains(n)).cloned().collect();
            if v.is_empty() {
                read.keys().cloned().collect()
            } else {
                v
            }
        } else {
            devices.to_vec()
        };
        for d in &devices {
            if !read.contains_key(d) {
                let known: Vec<&str> = read.keys().map(String::as_str).collect();
                return Err(TelemetryError::invalid(
                    &file,
                    format!("no device '{d}'; devices are: {}", known.join(" ")),
                ));
            }
        }
        let mut obs = Observation::new(SourceKind::Record, Vec::new());
        obs.start = Some(oio_core::host::now_rfc3339());
        obs.source.host = Some(oio_core::host::HostInfo::detect().hostname);
        for d in &devices {
            obs.device_mut(d);
        }
        let shared = Arc::new(Shared {
            obs: Mutex::new(obs),
            stop: AtomicBool::new(false),
            error: Mutex::new(None),
        });
        let sh = Arc::clone(&shared);
        let path: PathBuf = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("oio-diskstats".into())
            .spawn(move || record_loop(&sh, &path, devices, interval, read, observer))
            .map_err(|source| TelemetryError::Io { file, source })?;
        Ok(DiskstatsRecorder {
            shared,
            thread: Some(thread),
        })
    }

    /// The observation so far (a copy), without stopping.
    pub fn snapshot(&self) -> Observation {
        self.shared.obs.lock().expect("recorder lock").clone()
    }

    /// Stops recording and returns everything recorded.
    pub fn stop(mut self) -> Result<Observation, TelemetryError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<Observation, TelemetryError> {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        if let Some(e) = self.shared.error.lock().expect("recorder lock").take() {
            return Err(TelemetryError::invalid("/proc/diskstats", e));
        }
        Ok(self.shared.obs.lock().expect("recorder lock").clone())
    }
}

impl Drop for DiskstatsRecorder {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.finish();
        }
    }
}

fn read_snapshot(path: &Path) -> Result<BTreeMap<String, DiskCounters>, TelemetryError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| TelemetryError::Io {
        file: file.clone(),
        source,
    })?;
    parse_snapshot(&text).map_err(|e| TelemetryError::invalid(&file, e.to_string()))
}

fn record_loop(
    sh: &Shared,
    path: &Path,
    devices: Vec<String>,
    interval: Duration,
    first: BTreeMap<String, DiskCounters>,
    mut observer: Option<Observer>,
) {
    let start = Instant::now();
    let mut prev = first;
    let mut prev_at = start;
    let mut k: u32 = 1;
    loop {
        let deadline = start + interval * k;
        // Sleep in parked slices so stop() is answered at once.
        loop {
            if sh.stop.load(Ordering::SeqCst) {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            std::thread::park_timeout(deadline - now);
        }
        let stopping = sh.stop.load(Ordering::SeqCst);
        let cur = match read_snapshot(path) {
            Ok(c) => c,
            Err(e) => {
                *sh.error.lock().expect("recorder lock") = Some(e.to_string());
                return;
            }
        };
        let now = Instant::now();
        let dt = (now - prev_at).as_secs_f64();
        if stopping && dt < interval.as_secs_f64() / 10.0 {
            return;
        }
        let t_s = (now - start).as_secs_f64();
        let mut sample = Sample {
            t_s,
            devices: Vec::with_capacity(devices.len()),
        };
        for d in &devices {
            if let (Some(p), Some(c)) = (prev.get(d), cur.get(d)) {
                let mut iv = interval_between(p, c, dt);
                iv.t_s = t_s;
                sample.devices.push((d.clone(), iv));
            }
        }
        {
            let mut obs = sh.obs.lock().expect("recorder lock");
            for (d, iv) in &sample.devices {
                obs.device_mut(d).intervals.push(iv.clone());
            }
        }
        if let Some(f) = observer.as_mut() {
            f(&sample);
        }
        prev = cur;
        prev_at = now;
        k += 1;
        if stopping {
            return;
        }
        // Skip deadlines already missed (a stalled machine), rather than sampling in a burst.
        while start + interval * k <= Instant::now() {
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_interval_weighs_by_time_and_latency_by_ios() {
        let iv = |d: f64, iops: f64, lat: f64, q: f64| {
            let mut i = DeviceInterval {
                duration_s: d,
                queue_mean: Some(q),
                ..DeviceInterval::default()
            };
            i.write.iops = Some(iops);
            i.write.bytes_per_sec = Some(iops * 4096.0);
            i.write.latency_mean_ns = Some(lat);
            i
        };
        // 1 s at 100 IOPS and 1 ms, then 3 s at 300 IOPS and 2 ms.
        let m = mean_interval(&[iv(1.0, 100.0, 1e6, 1.0), iv(3.0, 300.0, 2e6, 3.0)]).unwrap();
        assert_eq!(m.duration_s, 4.0);
        assert_eq!(m.write.iops, Some(250.0)); // 1000 I/Os in 4 s, not (100 + 300) / 2
        assert_eq!(
            m.write.latency_mean_ns,
            Some((100.0 * 1e6 + 900.0 * 2e6) / 1000.0)
        );
        assert_eq!(m.queue_mean, Some(2.5));
        assert_eq!(m.write.mean_io_bytes, Some(4096.0));
        assert_eq!(m.read.latency_mean_ns, None);
        assert!(mean_interval(&[]).is_none());
    }

    #[test]
    fn the_device_of_a_file_is_named_as_in_diskstats_or_none_without_one() {
        // /proc has no block device; the root filesystem usually has one, whose name must
        // then appear in /proc/diskstats.
        assert_eq!(device_of(Path::new("/proc/self")), None);
        if let Some(d) = device_of(Path::new("/")) {
            let stats = std::fs::read_to_string("/proc/diskstats").unwrap();
            assert!(
                stats
                    .lines()
                    .any(|l| l.split_whitespace().nth(2) == Some(d.name.as_str())),
                "{d:?}"
            );
        }
    }

    const A: &str = "   8       0 sda 1000 10 80000 500 200 5 16000 300 2 1200 900 0 0 0 0 10 4\n";
    const B: &str = "   8       0 sda 1100 12 88192 600 250 5 24192 400 1 1700 1500 0 0 0 0 12 4\n";

    #[test]
    fn parses_14_18_and_20_fields() {
        let (n, c) = parse_line("8 0 sda 1 2 3 4 5 6 7 8 9 10 11").unwrap();
        assert_eq!((n.as_str(), c.weighted_ms, c.discard), ("sda", 11, None));
        let (_, c) = parse_line("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15").unwrap();
        assert_eq!((c.discard, c.flush), (Some([12, 13, 14, 15]), None));
        let (_, c) = parse_line(A).unwrap();
        assert_eq!(c.flush, Some([10, 4]));
        assert!(parse_line("8 0 sda 1 2 3")
            .unwrap_err()
            .to_string()
            .contains("expected 14, 18 or 20"));
        assert!(parse_line("8 0 sda 1 2 3 4 5 6 7 8 9 10 x")
            .unwrap_err()
            .to_string()
            .contains("field 14"));
    }

    #[test]
    fn interval_matches_iostat_formulas() {
        let (_, a) = parse_line(A).unwrap();
        let (_, b) = parse_line(B).unwrap();
        let iv = interval_between(&a, &b, 2.0);
        assert_eq!(iv.read.iops, Some(50.0));
        assert_eq!(iv.read.mean_io_bytes, Some(8192.0 * 512.0 / 100.0));
        assert_eq!(iv.read.latency_mean_ns, Some(1e6));
        assert_eq!(iv.write.iops, Some(25.0));
        assert_eq!(iv.write.mean_io_bytes, Some(8192.0 * 512.0 / 50.0));
        assert_eq!(iv.queue_mean, Some(0.3));
        assert_eq!(iv.util_pct, Some(25.0));
        assert_eq!(iv.queue_current, Some(1.0));
    }

    #[test]
    fn wrapped_32_bit_times() {
        assert_eq!(delta(5, u32::MAX as u64 - 4), 10);
        assert_eq!(delta(7, 3), 4);
    }

    #[test]
    fn snapshot_file_with_and_without_times() {
        let timed = format!("100.0\n{A}102.0\n{B}");
        let o = parse_snapshots("x", &timed, &ParseOptions::default()).unwrap();
        let iv = &o.devices[0].intervals[0];
        assert_eq!((iv.t_s, iv.read.iops), (2.0, Some(50.0)));
        assert!(o.envelope.warnings.is_empty());
        let untimed = format!("{A}{B}");
        let o = parse_snapshots("x", &untimed, &ParseOptions::default()).unwrap();
        assert_eq!(o.devices[0].intervals[0].read.iops, Some(100.0));
        assert!(o.envelope.warnings[0].contains("1 s"));
        let e = parse_snapshots("x.txt", A, &ParseOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 2"), "{e}");
        let e = parse_snapshots(
            "x.txt",
            &format!("{A}8 0 sda 1 2\n"),
            &ParseOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("x.txt:2:"), "{e}");
    }

    #[test]
    fn recorder_on_a_rewritten_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("diskstats");
        std::fs::write(&p, A).unwrap();
        let seen = Arc::new(Mutex::new(0usize));
        let s2 = Arc::clone(&seen);
        let rec = DiskstatsRecorder::start_with(
            &p,
            &["sda".into()],
            Duration::from_millis(100),
            Some(Box::new(move |_s: &Sample| *s2.lock().unwrap() += 1)),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(150));
        std::fs::write(&p, B).unwrap();
        std::thread::sleep(Duration::from_millis(170));
        let o = rec.stop().unwrap();
        let ivs = &o.device("sda").unwrap().intervals;
        assert!(ivs.len() >= 2, "{ivs:?}");
        let reads: f64 = ivs
            .iter()
            .map(|i| i.read.iops.unwrap() * i.duration_s)
            .sum();
        assert!((reads - 100.0).abs() < 1e-6, "{reads}");
        assert_eq!(*seen.lock().unwrap(), ivs.len());
        let e = DiskstatsRecorder::start_with(&p, &["nope".into()], Duration::from_secs(1), None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no device 'nope'") && e.contains("sda"), "{e}");
    }

    #[test]
    fn flushes_become_a_rate_and_a_wait() {
        let (_, a) = parse_line("253 0 vda 1 0 8 1 1 0 8 1 0 1 2 0 0 0 0 10 4").unwrap();
        let (_, b) = parse_line("253 0 vda 1 0 8 1 1 0 8 1 0 1 2 0 0 0 0 30 14").unwrap();
        let iv = interval_between(&a, &b, 2.0);
        let f = iv.flush.clone().expect("flush fields");
        assert_eq!(f.iops, Some(10.0));
        assert_eq!(f.latency_mean_ns, Some(0.5e6));
        let m = mean_interval(&[iv.clone(), iv]).unwrap();
        assert_eq!(m.flush.and_then(|f| f.iops), Some(10.0));
    }
}
