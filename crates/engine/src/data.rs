//! What writes write.
//!
//! Storage that compresses or deduplicates must not be measured with zeros or with the same
//! block written again and again. By default every 4 KiB block of every write is unique and
//! incompressible: buffers start as random bytes and each write stamps a fresh 16-byte tag
//! (seed, counter) at the start of every 4 KiB block, which costs one store per block.
//!
//! With `compress_pct` or `dedupe_pct`, each 4 KiB block is generated per write: a block is
//! a copy of one of a few popular blocks with probability `dedupe_pct`, else unique, with its
//! last `compress_pct` % made of zeros so a compressor removes about that share.
//!
//! `zero` and `fixed` contents (fio's `zero_buffers` and `buffer_pattern`) are written as
//! asked, for devices whose behaviour depends on them (zero detection, thin provisioning).

/// The unit of compression and deduplication shaping.
pub const BLOCK: usize = 4096;

/// Popular blocks that deduplicated writes copy.
const POPULAR: usize = 16;

/// The content policy of one worker's writes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DataPattern {
    /// Share (0–100) of each block a compressor can remove.
    pub compress_pct: f64,
    /// Share (0–100) of blocks that duplicate another block.
    pub dedupe_pct: f64,
    /// Zeros or a repeated byte pattern instead of random data (None: random).
    pub fixed: Option<Fixed>,
}

/// A content that does not change from write to write.
#[derive(Clone, Debug, PartialEq)]
pub enum Fixed {
    /// Zero bytes.
    Zero,
    /// These bytes repeated from the start of every write (1 to 4096 bytes).
    Pattern(Vec<u8>),
}

/// Fills write buffers according to a [`DataPattern`].
pub struct DataFiller {
    rng: fastrand::Rng,
    seed: u64,
    counter: u64,
    shaped: bool,
    zero_from: usize,
    dedupe_threshold: u64,
    popular: Vec<Vec<u8>>,
    /// With a fixed content: whole repetitions of it, about a block long (empty: zeros).
    template: Option<Vec<u8>>,
}

impl DataFiller {
    /// A filler for one worker.
    pub fn new(pattern: &DataPattern, seed: u64) -> DataFiller {
        let mut rng = fastrand::Rng::with_seed(seed ^ 0x5EED_DA7A);
        let shaped = pattern.compress_pct > 0.0 || pattern.dedupe_pct > 0.0;
        let zero_from = BLOCK - (BLOCK as f64 * pattern.compress_pct / 100.0).round() as usize;
        let popular = if pattern.dedupe_pct > 0.0 {
            (0..POPULAR)
                .map(|_| {
                    let mut b = vec![0u8; BLOCK];
                    rng.fill(&mut b[..zero_from]);
                    b
                })
                .collect()
        } else {
            Vec::new()
        };
        DataFiller {
            rng,
            seed,
            counter: 0,
            shaped,
            zero_from,
            dedupe_threshold: (pattern.dedupe_pct / 100.0 * u32::MAX as f64) as u64,
            popular,
            template: pattern.fixed.as_ref().map(|f| match f {
                Fixed::Zero => Vec::new(),
                // Whole repetitions, so copying templates back to back continues the pattern.
                Fixed::Pattern(p) if !p.is_empty() => p.repeat(BLOCK.div_ceil(p.len())),
                Fixed::Pattern(_) => Vec::new(),
            }),
        }
    }

    /// Prepares `buf` (the first `len` bytes) for one write.
    #[inline]
    pub fn fill(&mut self, buf: &mut [u8], len: usize) {
        if let Some(t) = &self.template {
            let buf = &mut buf[..len];
            if t.is_empty() {
                buf.fill(0);
            } else {
                for chunk in buf.chunks_mut(t.len()) {
                    chunk.copy_from_slice(&t[..chunk.len()]);
                }
            }
            return;
        }
        for block in buf[..len].chunks_mut(BLOCK) {
            self.counter += 1;
            if !self.shaped {
                stamp(block, self.seed, self.counter);
                continue;
            }
            if (self.rng.u32(..) as u64) < self.dedupe_threshold {
                let p = &self.popular[self.rng.usize(..POPULAR)];
                block.copy_from_slice(&p[..block.len()]);
                continue;
            }
            let z = self.zero_from.min(block.len());
            self.rng.fill(&mut block[..z]);
            block[z..].fill(0);
            stamp(&mut block[..z], self.seed, self.counter);
        }
    }
}

/// Writes a 16-byte unique tag at the start of a block (as much as fits).
#[inline]
fn stamp(block: &mut [u8], seed: u64, counter: u64) {
    let mut tag = [0u8; 16];
    tag[..8].copy_from_slice(&seed.to_le_bytes());
    tag[8..].copy_from_slice(&counter.to_le_bytes());
    let n = block.len().min(16);
    block[..n].copy_from_slice(&tag[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn default_writes_are_unique_per_block() {
        let mut f = DataFiller::new(&DataPattern::default(), 1);
        let mut buf = vec![7u8; 16 * BLOCK];
        let mut seen = HashSet::new();
        for _ in 0..10 {
            f.fill(&mut buf, 16 * BLOCK);
            for b in buf.chunks(BLOCK) {
                assert!(seen.insert(b.to_vec()), "a block repeated");
            }
        }
    }

    #[test]
    fn dedupe_share_is_respected() {
        let mut f = DataFiller::new(
            &DataPattern {
                dedupe_pct: 40.0,
                ..DataPattern::default()
            },
            3,
        );
        let mut buf = vec![0u8; BLOCK];
        let mut blocks = HashSet::new();
        let n = 20_000;
        for _ in 0..n {
            f.fill(&mut buf, BLOCK);
            blocks.insert(buf.clone());
        }
        let dup = 1.0 - blocks.len() as f64 / n as f64;
        assert!((dup - 0.40).abs() < 0.02, "{dup}");
    }

    #[test]
    fn zero_and_fixed_contents_are_written_as_asked() {
        let mut buf = vec![7u8; 3 * BLOCK];
        let mut z = DataFiller::new(
            &DataPattern {
                fixed: Some(Fixed::Zero),
                ..DataPattern::default()
            },
            1,
        );
        z.fill(&mut buf, 2 * BLOCK);
        assert!(buf[..2 * BLOCK].iter().all(|&b| b == 0));
        assert!(
            buf[2 * BLOCK..].iter().all(|&b| b == 7),
            "past len untouched"
        );
        // A 3-byte pattern does not divide 4096: it must still run on across blocks.
        let p = vec![0xde, 0xad, 0xbe];
        let mut f = DataFiller::new(
            &DataPattern {
                fixed: Some(Fixed::Pattern(p.clone())),
                ..DataPattern::default()
            },
            1,
        );
        for _ in 0..2 {
            f.fill(&mut buf, 3 * BLOCK);
            for (i, &b) in buf.iter().enumerate() {
                assert_eq!(b, p[i % 3], "byte {i}");
            }
        }
    }
}
