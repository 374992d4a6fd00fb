//! Decides each I/O of a worker: direction, size, target and offset.
//!
//! Everything is drawn from one seeded generator per worker, so a run is reproducible.
//! Random offsets are uniform over the aligned positions where the whole I/O fits in the
//! region; sequential I/O continues from where the previous one ended and wraps at the end of
//! the region. With several targets, sequential I/O is striped across them in `stripe` units
//! (an I/O never crosses a stripe), and random I/O picks a target uniformly.
//!
//! With a skewed [`Distribution`], random offsets are drawn as blocks of `align` bytes in
//! which the largest I/O fits, so a block keeps its heat whatever the size of the I/O: zipf by
//! rejection-inversion (no table, O(1) per I/O), pareto by inversion, normal by rejection of
//! draws outside the region, zoned from a small cumulative table.

use crate::engines::Dir;
use oio_core::workload::Distribution;
use rand::SeedableRng;
use rand_distr::Distribution as _;

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
    /// Where random offsets fall (`None`: uniform).
    pub distribution: Option<Distribution>,
}

/// Draws block numbers in `0..blocks` of one extent for a skewed distribution.
#[derive(Clone, Debug)]
enum Skew {
    /// Rank by zipf, then scattered.
    Zipf(rand_distr::Zipf<f64>, Scatter),
    /// Rank = blocks × u^k with k = ln h / ln(1 − h), then scattered.
    Pareto(f64, Scatter),
    /// Normal around the middle, in blocks.
    Normal(rand_distr::Normal<f64>),
    /// (cumulative threshold out of 2^32, first block, blocks) per zone.
    Zoned(Vec<(u64, u64, u64)>),
}

/// A bijection of `0..n` (multiply by a unit mod n, add an offset) so hot ranks land apart.
#[derive(Clone, Copy, Debug)]
struct Scatter {
    n: u64,
    mul: u64,
    add: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Scatter {
    /// Fixed for a given `n`, so every worker of a stream finds the same blocks hot.
    fn new(n: u64) -> Scatter {
        let n = n.max(1);
        let mut mul = 0x9E37_79B9_7F4A_7C15u64 % n;
        while n > 1 && (mul == 0 || gcd(mul, n) != 1) {
            mul = (mul + 1) % n;
        }
        Scatter {
            n,
            mul: mul.max(1),
            add: (n / 3) % n,
        }
    }
    #[inline]
    fn map(&self, rank: u64) -> u64 {
        ((rank as u128 * self.mul as u128 + self.add as u128) % self.n as u128) as u64
    }
}

impl Skew {
    /// A sampler over `blocks` blocks; `None` for uniform.
    fn new(d: &Distribution, blocks: u64) -> Option<Skew> {
        let n = blocks.max(1);
        match d {
            Distribution::Uniform => None,
            Distribution::Zipf(theta) => rand_distr::Zipf::new(n as f64, *theta)
                .ok()
                .map(|z| Skew::Zipf(z, Scatter::new(n))),
            Distribution::Pareto(h) => Some(Skew::Pareto(h.ln() / (1.0 - h).ln(), Scatter::new(n))),
            Distribution::Normal(sigma_pct) => {
                rand_distr::Normal::new(n as f64 / 2.0, n as f64 * sigma_pct / 100.0)
                    .ok()
                    .map(Skew::Normal)
            }
            Distribution::Zoned(zones) => {
                let (mut io, mut size) = (0.0, 0.0);
                let io_total: f64 = zones.iter().map(|z| z.io_pct).sum();
                let mut table = Vec::with_capacity(zones.len());
                for z in zones {
                    let first = ((size / 100.0 * n as f64) as u64).min(n - 1);
                    size += z.size_pct;
                    io += z.io_pct;
                    let end = ((size / 100.0 * n as f64) as u64).min(n);
                    if z.io_pct <= 0.0 {
                        continue;
                    }
                    let t = (io / io_total * (1u64 << 32) as f64) as u64;
                    table.push((t, first, end.saturating_sub(first).max(1)));
                }
                if let Some(last) = table.last_mut() {
                    last.0 = u64::MAX;
                }
                Some(Skew::Zoned(table))
            }
        }
    }

    #[inline]
    fn block(&self, rng: &mut rand::rngs::SmallRng, fast: &mut fastrand::Rng) -> u64 {
        match self {
            Skew::Zipf(z, s) => {
                let rank = (z.sample(rng) as u64).clamp(1, s.n) - 1;
                s.map(rank)
            }
            Skew::Pareto(k, s) => {
                let u = fast.f64();
                let rank = ((s.n as f64 * u.powf(*k)) as u64).min(s.n - 1);
                s.map(rank)
            }
            Skew::Normal(d) => {
                let n = d.mean() * 2.0;
                // Draws outside the region are drawn again (a few σ: rarely more than once).
                for _ in 0..64 {
                    let x = d.sample(rng);
                    if x >= 0.0 && x < n {
                        return x as u64;
                    }
                }
                (d.mean()) as u64
            }
            Skew::Zoned(t) => {
                let r = fast.u32(..) as u64;
                let &(_, first, len) = t.iter().find(|z| r < z.0).unwrap_or(&t[t.len() - 1]);
                first + fast.u64(..len)
            }
        }
    }
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
    /// log2(align) when align is a power of two (it nearly always is): a shift instead of a
    /// division per I/O.
    align_shift: Option<u32>,
    stripe: u64,
    extents: Vec<Extent>,
    /// Length each extent contributes to the striped sequential space.
    stripe_len: u64,
    cursor: u64,
    /// Per extent, with a skewed distribution: the sampler and nothing else is needed.
    skews: Vec<Skew>,
    skew_rng: rand::rngs::SmallRng,
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
        let align = spec.align.max(1);
        let max_len = spec
            .read_sizes
            .iter()
            .chain(&spec.write_sizes)
            .map(|s| s.0)
            .max()
            .unwrap_or(0);
        let skews = match &spec.distribution {
            Some(d) => spec
                .extents
                .iter()
                .filter_map(|e| Skew::new(d, e.len.saturating_sub(max_len) / align + 1))
                .collect(),
            None => Vec::new(),
        };
        Generator {
            skews,
            skew_rng: rand::rngs::SmallRng::seed_from_u64(spec.seed ^ 0x5CE7_0FF5),
            rng: fastrand::Rng::with_seed(spec.seed),
            read_threshold: threshold(spec.read_frac),
            reads: SizeTable::new(&spec.read_sizes),
            writes: SizeTable::new(&spec.write_sizes),
            random_threshold: threshold(spec.random_frac),
            align,
            align_shift: align.is_power_of_two().then(|| align.trailing_zeros()),
            stripe: spec.stripe.max(1),
            extents: spec.extents,
            stripe_len,
            cursor: 0,
        }
    }

    /// Draws the next I/O.
    #[inline(always)]
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

    #[inline(always)]
    fn random_offset(&mut self, len: u64) -> (u32, u64) {
        let i = if self.extents.len() == 1 {
            0
        } else {
            self.rng.usize(..self.extents.len())
        };
        let e = self.extents[i];
        if let Some(skew) = self.skews.get(i) {
            let block = skew.block(&mut self.skew_rng, &mut self.rng);
            return (e.file, e.start + block * self.align);
        }
        let positions = match self.align_shift {
            Some(sh) => ((e.len - len) >> sh) + 1,
            None => (e.len - len) / self.align + 1,
        };
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
            distribution: None,
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

    /// Share of I/Os that hit the hottest `frac` of the blocks they touched, over `blocks`.
    fn hot_share(d: &str, blocks: u64, frac: f64, n: usize) -> (f64, Vec<u64>) {
        let mut s = spec(
            1.0,
            1.0,
            vec![Extent {
                file: 0,
                start: 0,
                len: blocks * 4096,
            }],
        );
        s.read_sizes = vec![(4096, 1.0)];
        s.align = 4096;
        s.distribution = Some(d.parse().unwrap());
        let mut g = Generator::new(s);
        let mut hits = vec![0u64; blocks as usize];
        for _ in 0..n {
            let io = g.next_io();
            assert_eq!(io.offset % 4096, 0);
            hits[(io.offset / 4096) as usize] += 1;
        }
        let mut sorted = hits.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let hot: u64 = sorted[..(blocks as f64 * frac) as usize].iter().sum();
        (hot as f64 / n as f64, hits)
    }

    #[test]
    fn zipf_concentrates_as_the_formula_says() {
        // Zipf θ = 1.2 over 10 000 blocks: the top 1 000 ranks carry
        // H(1000, 1.2) / H(10000, 1.2) of the mass.
        let h = |n: u32| (1..=n).map(|k| (k as f64).powf(-1.2)).sum::<f64>();
        let expect = h(1000) / h(10_000);
        let (got, hits) = hot_share("zipf:1.2", 10_000, 0.1, 400_000);
        assert!((got - expect).abs() < 0.01, "{got} vs {expect}");
        // Scattered: the hottest block is not simply the first.
        let hottest = hits.iter().enumerate().max_by_key(|h| h.1).unwrap().0;
        assert_ne!(hottest, 0);
        let (uniform, _) = hot_share("random", 10_000, 0.1, 400_000);
        assert!(uniform < 0.15, "{uniform}");
    }

    #[test]
    fn pareto_zoned_and_normal_follow_their_definitions() {
        // pareto:0.2: the hottest 20 % of blocks get 80 % of the I/O.
        let (p, _) = hot_share("pareto:0.2", 10_000, 0.2, 200_000);
        assert!((p - 0.8).abs() < 0.01, "{p}");
        // zoned: 70 % of I/O to the first 10 %, 30 % to the rest, in place.
        let (_, hits) = hot_share("zoned:70/10:30/90", 10_000, 0.1, 200_000);
        let first: u64 = hits[..1000].iter().sum();
        assert!((first as f64 / 200_000.0 - 0.7).abs() < 0.01, "{first}");
        // normal:10: ±1 σ around the middle holds about 68.3 %.
        let (_, hits) = hot_share("normal:10", 10_000, 0.1, 200_000);
        let mid: u64 = hits[4000..6000].iter().sum();
        assert!((mid as f64 / 200_000.0 - 0.683).abs() < 0.01, "{mid}");
    }

    #[test]
    fn skewed_offsets_fit_and_every_worker_sees_the_same_hot_blocks() {
        let e = vec![Extent {
            file: 0,
            start: 8192,
            len: 64 << 20,
        }];
        let mut a = spec(0.5, 1.0, e.clone());
        a.distribution = Some("zipf:2".parse().unwrap());
        let mut b = a.clone();
        b.seed = 7;
        let (mut ga, mut gb) = (Generator::new(a), Generator::new(b));
        let top = |g: &mut Generator| {
            let mut m = std::collections::HashMap::new();
            for _ in 0..20_000 {
                let io = g.next_io();
                assert!(io.offset >= 8192 && io.offset + io.len as u64 <= 8192 + (64 << 20));
                assert_eq!(io.offset % 512, 0);
                *m.entry(io.offset).or_insert(0) += 1;
            }
            m.into_iter().max_by_key(|x| x.1).unwrap().0
        };
        assert_eq!(top(&mut ga), top(&mut gb));
    }
}
