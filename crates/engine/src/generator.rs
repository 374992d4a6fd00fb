//! Decides each I/O of a worker: direction, size, target and offset.
//!
//! Everything is drawn from one seeded generator per worker, so a run is reproducible.
//! Random offsets are uniform over the aligned positions where the whole I/O fits in the
//! region; sequential I/O continues from where the previous one ended and wraps at the end of
//! the region. With several targets, sequential I/O is striped across them in `stripe` units
//! (an I/O never crosses a stripe), and random I/O picks a target uniformly.

use crate::engines::Dir;

/// The part of one file a worker uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// File index in the engine's list.
    pub file: u32,
    /// First byte (aligned).
    pub start: u64,
    /// Bytes.
    pub len: u64,
}

/// A size table for one direction: cumulative thresholds out of 2^32.
#[derive(Clone, Debug)]
struct SizeTable {
    cum: Vec<(u64, u32)>,
}

impl SizeTable {
    fn new(fractions: &[(u64, f64)]) -> SizeTable {
        let mut acc = 0.0;
        let mut cum = Vec::with_capacity(fractions.len());
        for (i, (bytes, f)) in fractions.iter().enumerate() {
            acc += f;
            let t = if i + 1 == fractions.len() {
                u64::MAX
            } else {
                (acc * (1u64 << 32) as f64) as u64
            };
            cum.push((t, *bytes as u32));
        }
        SizeTable { cum }
    }

    #[inline]
    fn pick(&self, r: u32) -> u32 {
        let r = r as u64;
        for &(t, b) in &self.cum {
            if r < t {
                return b;
            }
        }
        self.cum.last().map(|c| c.1).unwrap_or(0)
    }
}

/// How one worker's I/Os are drawn.
#[derive(Clone, Debug)]
pub struct GeneratorSpec {
    /// Probability of a read, 0–1.
    pub read_frac: f64,
    /// (size, fraction) of reads.
    pub read_sizes: Vec<(u64, f64)>,
    /// (size, fraction) of writes.
    pub write_sizes: Vec<(u64, f64)>,
    /// Probability of a random offset, 0–1.
    pub random_frac: f64,
    /// Offset alignment.
    pub align: u64,
    /// Stripe unit across extents for sequential I/O.
    pub stripe: u64,
    /// The extents this worker uses, one per target.
    pub extents: Vec<Extent>,
    /// Seed.
    pub seed: u64,
}

/// One decided I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextIo {
    /// Direction.
    pub dir: Dir,
    /// Bytes.
    pub len: u32,
    /// File index.
    pub file: u32,
    /// Byte offset.
    pub offset: u64,
}

impl Default for NextIo {
    fn default() -> Self {
        NextIo {
            dir: Dir::Read,
            len: 0,
            file: 0,
            offset: 0,
        }
    }
}

impl NextIo {
    /// The engine request for this I/O on `slot`.
    #[inline]
    pub fn request(&self, slot: u32) -> crate::engines::IoRequest {
        crate::engines::IoRequest {
            slot,
            file: self.file,
            dir: self.dir,
            offset: self.offset,
            len: self.len,
        }
    }
}

/// A worker's I/O generator.
pub struct Generator {
    rng: fastrand::Rng,
    read_threshold: u64,
    reads: SizeTable,
    writes: SizeTable,
    random_threshold: u64,
    align: u64,
    stripe: u64,
    extents: Vec<Extent>,
    /// Length each extent contributes to the striped sequential space.
    stripe_len: u64,
    cursor: u64,
}

fn threshold(frac: f64) -> u64 {
    if frac >= 1.0 {
        u64::MAX
    } else {
        (frac.max(0.0) * (1u64 << 32) as f64) as u64
    }
}

impl Generator {
    /// A generator; extents must each hold at least the largest I/O.
    pub fn new(spec: GeneratorSpec) -> Generator {
        let stripe_len = spec.extents.iter().map(|e| e.len).min().unwrap_or(0);
        Generator {
            rng: fastrand::Rng::with_seed(spec.seed),
            read_threshold: threshold(spec.read_frac),
            reads: SizeTable::new(&spec.read_sizes),
            writes: SizeTable::new(&spec.write_sizes),
            random_threshold: threshold(spec.random_frac),
            align: spec.align.max(1),
            stripe: spec.stripe.max(1),
            extents: spec.extents,
            stripe_len,
            cursor: 0,
        }
    }

    /// Draws the next I/O.
    #[inline]
    pub fn next_io(&mut self) -> NextIo {
        let r = self.rng.u64(..);
        let (hi, lo) = ((r >> 32) as u32, r as u32);
        let dir = if (hi as u64) < self.read_threshold {
            Dir::Read
        } else {
            Dir::Write
        };
        let len = match dir {
            Dir::Read => self.reads.pick(lo),
            Dir::Write => self.writes.pick(lo),
        };
        let random = self.random_threshold == u64::MAX
            || (self.random_threshold > 0 && (self.rng.u32(..) as u64) < self.random_threshold);
        let (file, offset) = if random {
            self.random_offset(len as u64)
        } else {
            self.sequential_offset(len as u64)
        };
        NextIo {
            dir,
            len,
            file,
            offset,
        }
    }

    #[inline]
    fn random_offset(&mut self, len: u64) -> (u32, u64) {
        let e = if self.extents.len() == 1 {
            self.extents[0]
        } else {
            self.extents[self.rng.usize(..self.extents.len())]
        };
        let positions = (e.len - len) / self.align + 1;
        let pos = self.rng.u64(..positions);
        (e.file, e.start + pos * self.align)
    }

    fn sequential_offset(&mut self, len: u64) -> (u32, u64) {
        if self.extents.len() == 1 {
            let e = self.extents[0];
            if self.cursor + len > e.len {
                self.cursor = 0;
            }
            let off = self.cursor;
            self.cursor += len;
            return (e.file, e.start + off);
        }
        let n = self.extents.len() as u64;
        loop {
            let within = self.cursor % self.stripe;
            if within + len > self.stripe {
                self.cursor += self.stripe - within;
                continue;
            }
            let chunk = self.cursor / self.stripe;
            let phys = (chunk / n) * self.stripe + within;
            if phys + len > self.stripe_len {
                self.cursor = 0;
                continue;
            }
            let e = self.extents[(chunk % n) as usize];
            self.cursor += len;
            return (e.file, e.start + phys);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(read_frac: f64, random_frac: f64, extents: Vec<Extent>) -> GeneratorSpec {
        GeneratorSpec {
            read_frac,
            read_sizes: vec![(65536, 0.68), (8192, 0.32)],
            write_sizes: vec![(65536, 0.83), (512, 0.17)],
            random_frac,
            align: 512,
            stripe: 1 << 20,
            extents,
            seed: 42,
        }
    }

    #[test]
    fn mix_and_read_share_match_the_spec() {
        let mut g = Generator::new(spec(
            0.3,
            1.0,
            vec![Extent {
                file: 0,
                start: 4096,
                len: 1 << 30,
            }],
        ));
        let n = 200_000;
        let (mut reads, mut r64, mut w512) = (0, 0, 0);
        for _ in 0..n {
            let io = g.next_io();
            assert_eq!(io.offset % 512, 0);
            assert!(io.offset >= 4096 && io.offset + io.len as u64 <= 4096 + (1 << 30));
            match io.dir {
                Dir::Read => {
                    reads += 1;
                    r64 += (io.len == 65536) as u32;
                }
                Dir::Write => w512 += (io.len == 512) as u32,
            }
        }
        let read_frac = reads as f64 / n as f64;
        assert!((read_frac - 0.3).abs() < 0.01, "{read_frac}");
        assert!((r64 as f64 / reads as f64 - 0.68).abs() < 0.01);
        assert!((w512 as f64 / (n - reads) as f64 - 0.17).abs() < 0.01);
    }

    #[test]
    fn sequential_io_follows_on_and_wraps() {
        let mut s = spec(
            1.0,
            0.0,
            vec![Extent {
                file: 0,
                start: 0,
                len: 1 << 20,
            }],
        );
        s.read_sizes = vec![(65536, 1.0)];
        let mut g = Generator::new(s);
        let offs: Vec<u64> = (0..18).map(|_| g.next_io().offset).collect();
        assert_eq!(offs[1], 65536);
        assert_eq!(offs[15], 15 * 65536);
        assert_eq!(offs[16], 0);
    }

    #[test]
    fn striping_round_robins_over_targets() {
        let extents = (0..3)
            .map(|f| Extent {
                file: f,
                start: 0,
                len: 4 << 20,
            })
            .collect();
        let mut s = spec(1.0, 0.0, extents);
        s.read_sizes = vec![(1 << 20, 1.0)];
        let mut g = Generator::new(s);
        let ios: Vec<(u32, u64)> = (0..7)
            .map(|_| {
                let io = g.next_io();
                (io.file, io.offset)
            })
            .collect();
        assert_eq!(ios[..4], [(0, 0), (1, 0), (2, 0), (0, 1 << 20)]);
    }

    #[test]
    fn the_same_seed_gives_the_same_ios() {
        let e = vec![Extent {
            file: 0,
            start: 0,
            len: 1 << 30,
        }];
        let mut a = Generator::new(spec(0.5, 0.5, e.clone()));
        let mut b = Generator::new(spec(0.5, 0.5, e));
        for _ in 0..1000 {
            assert_eq!(a.next_io(), b.next_io());
        }
    }
}
