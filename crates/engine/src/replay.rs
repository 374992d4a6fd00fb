//! A recorded trace replayed through the ordinary run loops: its I/Os take the place of the
//! generator's draws, and (when timed) its timestamps the place of the arrival process, so a
//! replay is measured exactly like an open-loop or closed-loop run (response time from the
//! trace's intended start, service time, oio's own lag, backlog, the series).
//!
//! Offsets are mapped onto the target when it is smaller than the trace's span: an offset
//! past the end wraps around (offset modulo the target's length); an I/O that would then
//! cross the end is moved back to end there; then it is rounded down to the alignment
//! O_DIRECT needs. Offsets inside the target are used as they are.

use crate::engines::Dir;
use crate::generator::{Extent, Generator, NextIo};
use std::sync::Arc;

/// One I/O of a trace, ready for a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayIo {
    /// Intended start, ns from the run's start (already scaled by the replay's speed).
    pub t_ns: u64,
    /// Read or write.
    pub dir: Dir,
    /// Which of the stream's targets (index into its target list).
    pub file: u32,
    /// Offset as recorded, bytes.
    pub offset: u64,
    /// Size, bytes.
    pub len: u32,
}

/// The I/Os of a replay, in issue order.
#[derive(Clone, Debug, Default)]
pub struct ReplayTrace {
    /// The I/Os.
    pub ios: Vec<ReplayIo>,
    /// Issue at the recorded times (open loop); false: back to back at the stream's depth.
    pub timed: bool,
}

impl ReplayTrace {
    /// The largest I/O, bytes.
    pub fn max_len(&self) -> u64 {
        self.ios.iter().map(|r| u64::from(r.len)).max().unwrap_or(0)
    }
}

/// Where an I/O of `len` bytes recorded at `offset` goes on an extent of `extent_len` bytes
/// (see the module's comment); `extent_len` must hold `len`.
#[inline]
pub fn place(offset: u64, len: u64, extent_len: u64, align: u64) -> u64 {
    if offset.saturating_add(len) <= extent_len {
        return offset;
    }
    let mut o = offset % extent_len.max(1);
    if o + len > extent_len {
        o = extent_len - len;
    }
    o / align.max(1) * align.max(1)
}

/// A worker's way through a trace: the I/Os in order, and separately their times (the open
/// loop admits arrivals before it issues them).
pub(crate) struct Cursor {
    trace: Arc<ReplayTrace>,
    extents: Vec<Extent>,
    align: u64,
    next_io: usize,
    next_time: usize,
}

impl Cursor {
    pub(crate) fn new(trace: Arc<ReplayTrace>, extents: Vec<Extent>, align: u64) -> Cursor {
        Cursor {
            trace,
            extents,
            align,
            next_io: 0,
            next_time: 0,
        }
    }

    /// The next I/O, placed on its extent; past the end, the last one again (the quota is
    /// the trace's length, so that is never issued).
    #[inline]
    pub(crate) fn next_io(&mut self) -> NextIo {
        let Some(r) = self
            .trace
            .ios
            .get(self.next_io)
            .or_else(|| self.trace.ios.last())
        else {
            return NextIo::default();
        };
        self.next_io += 1;
        let e = self.extents[r.file as usize % self.extents.len()];
        NextIo {
            dir: r.dir,
            len: r.len,
            file: e.file,
            offset: e.start + place(r.offset, u64::from(r.len), e.len, self.align),
        }
    }

    /// The next intended start; `u64::MAX` after the last.
    #[inline]
    pub(crate) fn next_arrival(&mut self) -> u64 {
        match self.trace.ios.get(self.next_time) {
            Some(r) => {
                self.next_time += 1;
                r.t_ns
            }
            None => u64::MAX,
        }
    }
}

/// Where a worker's I/Os come from: drawn by the generator, or read from a trace.
pub(crate) enum Source {
    /// The workload's distributions.
    Drawn(Generator),
    /// A trace.
    Trace(Cursor),
}

impl Source {
    #[inline(always)]
    pub(crate) fn next_io(&mut self) -> NextIo {
        match self {
            Source::Drawn(g) => g.next_io(),
            Source::Trace(c) => c.next_io(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_inside_stay_and_offsets_past_the_end_wrap_and_fit() {
        let mib = 1 << 20;
        assert_eq!(place(8192, 4096, mib, 4096), 8192);
        assert_eq!(place(mib - 4096, 4096, mib, 4096), mib - 4096);
        // 1 MiB + 12 KiB on a 1 MiB target: 12 KiB.
        assert_eq!(place(mib + 12288, 4096, mib, 4096), 12288);
        // Wraps to 1 MiB - 4 KiB, and 64 KiB would cross the end: it ends there.
        assert_eq!(place(2 * mib - 4096, 65536, mib, 4096), mib - 65536);
        // Rounded down to the alignment after wrapping onto an odd length.
        assert_eq!(place(10_000 + 4096, 512, 10_000, 512), 4096);
        let trace = Arc::new(ReplayTrace {
            ios: vec![
                ReplayIo {
                    t_ns: 5,
                    dir: Dir::Write,
                    file: 1,
                    offset: 3 * mib,
                    len: 4096,
                },
                ReplayIo {
                    t_ns: 9,
                    dir: Dir::Read,
                    file: 0,
                    offset: 4096,
                    len: 4096,
                },
            ],
            timed: true,
        });
        let ext = |file| Extent {
            file,
            start: 4096,
            len: mib,
        };
        let mut c = Cursor::new(trace, vec![ext(0), ext(1)], 4096);
        assert_eq!(c.next_arrival(), 5);
        assert_eq!(c.next_arrival(), 9);
        assert_eq!(c.next_arrival(), u64::MAX);
        let a = c.next_io();
        assert_eq!(
            (a.dir, a.file, a.offset, a.len),
            (Dir::Write, 1, 4096, 4096)
        );
        let b = c.next_io();
        assert_eq!((b.dir, b.file, b.offset), (Dir::Read, 0, 8192));
    }
}
