//! The HdrHistogram interval log (`--hdr-log FILE`): one line per measured interval and
//! direction (tags `read`, `write`, `sync`), each a base64 compressed V2 histogram of latency
//! in nanoseconds, in the format HdrHistogram's own tools read (`HistogramLogProcessor`,
//! `hdr-plot`), written by the `hdrhistogram` crate's interval log writer.
//!
//! The log is written as the run goes into a temporary file beside FILE (created O_EXCL, so
//! never through a symlink), by a thread of its own behind a bounded channel so memory stays
//! fixed, and put in place at the end without replacing anything (rename no-clobber).

use super::RunError;
use crate::target::TargetError;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use oio_core::histogram::{LatencyHistogram, HIGHEST_NS, SIGNIFICANT_DIGITS};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

/// One measured interval's latencies, by tag.
pub(super) struct HdrInterval {
    /// Start, since the measured phase began.
    pub(super) start: Duration,
    pub(super) length: Duration,
    pub(super) hists: Vec<(&'static str, LatencyHistogram)>,
}

/// The open log: the sender the collector feeds and the thread that writes.
pub(super) struct HdrLog {
    pub(super) tx: crossbeam_channel::Sender<HdrInterval>,
    thread: JoinHandle<Result<PathBuf, String>>,
}

fn io_err(path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> RunError {
    let path = path.to_path_buf();
    move |source| RunError::Target(TargetError::Io { path, what, source })
}

impl HdrLog {
    /// Creates the temporary file (refusing a FILE that exists, before any I/O) and starts
    /// the writer; `start` is the wall-clock time the measured phase begins.
    pub(super) fn create(path: &Path, start: SystemTime) -> Result<HdrLog, RunError> {
        if path.symlink_metadata().is_ok() {
            return Err(io_err(
                path,
                "creating the HdrHistogram log (it must not exist yet)",
            )(std::io::ErrorKind::AlreadyExists.into()));
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let tmp = tempfile::Builder::new()
            .prefix(".oio-hdr-")
            .tempfile_in(dir)
            .map_err(io_err(
                path,
                "creating the HdrHistogram log's temporary file",
            ))?;
        // A few intervals of slack; the collector waits rather than queue without bound.
        let (tx, rx) = crossbeam_channel::bounded::<HdrInterval>(16);
        let target = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("oio-hdr-log".into())
            .spawn(move || write_all(tmp, &target, start, rx))
            .map_err(io_err(path, "starting the HdrHistogram log writer"))?;
        Ok(HdrLog { tx, thread })
    }

    /// Waits for the last line and puts the log in place; the error is for the run's
    /// warnings (the measurement itself is not lost).
    pub(super) fn finish(self) -> Result<PathBuf, String> {
        drop(self.tx);
        self.thread
            .join()
            .unwrap_or_else(|_| Err("the HdrHistogram log writer panicked".into()))
    }
}

/// An hdrhistogram histogram with the same buckets as oio's, so counts carry over exactly.
fn to_hdr(h: &LatencyHistogram) -> Histogram<u64> {
    let mut out = Histogram::<u64>::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS)
        .expect("static histogram bounds are valid");
    for [v, c] in h.to_sparse().buckets {
        out.saturating_record_n(v.max(1), c);
    }
    out
}

fn write_all(
    tmp: tempfile::NamedTempFile,
    target: &Path,
    start: SystemTime,
    rx: crossbeam_channel::Receiver<HdrInterval>,
) -> Result<PathBuf, String> {
    let shown = target.display();
    let fail = |e: &dyn std::fmt::Display| format!("HdrHistogram log {shown}: {e}");
    let (file, tmp_path) = tmp.into_parts();
    let shared = std::cell::RefCell::new(std::io::BufWriter::new(file));
    let mut out = Shared(&shared);
    let mut ser = V2DeflateSerializer::new();
    let written = (|| -> Result<(), String> {
        let mut w = IntervalLogWriterBuilder::new()
            .add_comment("written by oio: latency in nanoseconds; tags read, write, sync")
            .with_start_time(start)
            .with_base_time(start)
            // The max column in milliseconds, as Java's HistogramLogWriter writes it.
            .with_max_value_divisor(1_000_000.0)
            .begin_log_with(&mut out, &mut ser)
            .map_err(|e| fail(&e))?;
        // The column legend after the header, as Java's HistogramLogWriter writes it (the
        // crate's writer has none; its reader and HdrHistogram's tools skip it).
        writeln!(
            shared.borrow_mut(),
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )
        .map_err(|e| fail(&e))?;
        for iv in rx.iter() {
            for (tag, h) in &iv.hists {
                w.write_histogram(&to_hdr(h), iv.start, iv.length, Tag::new(tag))
                    .map_err(|e| fail(&e))?;
            }
        }
        Ok(())
    })();
    // Keep draining so the collector never blocks on a writer that gave up.
    for _ in rx.iter() {}
    written?;
    let file = shared
        .into_inner()
        .into_inner()
        .map_err(|e| fail(e.error()))?;
    file.sync_data().map_err(|e| fail(&e))?;
    tempfile::NamedTempFile::from_parts(file, tmp_path)
        .persist_noclobber(target)
        .map_err(|e| fail(&e.error))?;
    Ok(target.to_path_buf())
}

/// The log's buffer, written by the crate's writer and, between its lines, by oio.
struct Shared<'a>(&'a std::cell::RefCell<std::io::BufWriter<std::fs::File>>);

impl Write for Shared<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.borrow_mut().flush()
    }
}
