//! Random state, the distributions of pgbench's `random*` functions, and its hash functions.
//!
//! The generator is xoshiro256** seeded through splitmix64 (not pgbench's generator: draws are
//! not bit-equal to pgbench's, only equal in distribution). The distributions follow the
//! formulas pgbench documents; the hash functions give pgbench's values for the same inputs.

/// One stream of random numbers (copyable: a retry restores a saved copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rng {
    s: [u64; 4],
}

/// splitmix64's step: the seed's mixing function.
pub(crate) fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// A stream from a 64-bit seed.
    pub(crate) fn new(seed: u64) -> Rng {
        let mut x = seed;
        let s = [
            splitmix(&mut x),
            splitmix(&mut x),
            splitmix(&mut x),
            splitmix(&mut x),
        ];
        Rng { s }
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub(crate) fn double(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n) for n >= 1, without modulo bias (multiply and reject).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = u128::from(self.next_u64()) * u128::from(n);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

/// Checks `[min, max]` as pgbench does for every `random*` function; returns its size - 1.
pub(crate) fn check_range(min: i64, max: i64) -> Result<u64, String> {
    if min > max {
        return Err(format!("empty range given to random: [{min}, {max}]"));
    }
    match max.checked_sub(min) {
        Some(d) if d < i64::MAX => Ok(d as u64),
        _ => Err(format!("random range is too large: [{min}, {max}]")),
    }
}

/// `random(min, max)`: uniform over the integers of `[min, max]`.
pub(crate) fn uniform(rng: &mut Rng, min: i64, max: i64) -> Result<i64, String> {
    let span = check_range(min, max)?;
    Ok(min.wrapping_add(rng.below(span + 1) as i64))
}

/// `min + floor(size * r)` for r in [0, 1), kept inside the range against rounding.
fn scale_into(min: i64, span: u64, r: f64) -> i64 {
    let off = ((span as f64 + 1.0) * r) as u64;
    min.wrapping_add(off.min(span) as i64)
}

/// `random_exponential(min, max, parameter)`: density proportional to
/// `exp(-parameter * (x - min) / (max - min + 1))`, by inverting its distribution function.
pub(crate) fn exponential(
    rng: &mut Rng,
    min: i64,
    max: i64,
    parameter: f64,
) -> Result<i64, String> {
    let span = check_range(min, max)?;
    if parameter <= 0.0 || parameter.is_nan() {
        return Err(format!(
            "exponential parameter must be greater than zero (not {parameter})"
        ));
    }
    let cut = (-parameter).exp();
    // u in (0, 1]: the log below never sees zero.
    let u = 1.0 - rng.double();
    let r = -(cut + (1.0 - cut) * u).ln() / parameter;
    Ok(scale_into(min, span, r))
}

/// The smallest gaussian parameter pgbench accepts.
pub(crate) const MIN_GAUSSIAN: f64 = 2.0;

/// `random_gaussian(min, max, parameter)`: a standard normal truncated to
/// `[-parameter, parameter)` (drawn by Box-Muller, redrawn outside), mapped onto the range.
pub(crate) fn gaussian(rng: &mut Rng, min: i64, max: i64, parameter: f64) -> Result<i64, String> {
    let span = check_range(min, max)?;
    if parameter.is_nan() || parameter < MIN_GAUSSIAN {
        return Err(format!(
            "gaussian parameter must be at least {MIN_GAUSSIAN:.1} (not {parameter})"
        ));
    }
    let z = loop {
        let a = 1.0 - rng.double();
        let b = rng.double();
        let z = (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).sin();
        if (-parameter..parameter).contains(&z) {
            break z;
        }
    };
    let r = (z + parameter) / (2.0 * parameter);
    Ok(scale_into(min, span, r))
}

/// The zipfian parameter's range in pgbench.
pub(crate) const ZIPF_MIN: f64 = 1.001;
/// The zipfian parameter's upper bound.
pub(crate) const ZIPF_MAX: f64 = 1000.0;

/// `random_zipfian(min, max, s)`: P(k) proportional to 1 / k^s over k = 1..n (n the range's
/// size), drawn by Devroye's rejection method ("Non-Uniform Random Variate Generation", p. 550).
pub(crate) fn zipfian(rng: &mut Rng, min: i64, max: i64, s: f64) -> Result<i64, String> {
    let span = check_range(min, max)?;
    if s.is_nan() || !(ZIPF_MIN..=ZIPF_MAX).contains(&s) {
        return Err(format!(
            "zipfian parameter must be in range [{ZIPF_MIN}, {ZIPF_MAX}] (not {s})"
        ));
    }
    let n = span as f64 + 1.0;
    let b = 2f64.powf(s - 1.0);
    let k = loop {
        let u = 1.0 - rng.double();
        let v = rng.double();
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        if x <= n && v * x * (t - 1.0) / (b - 1.0) <= t / b {
            break x;
        }
    };
    Ok(min.wrapping_add((k as u64 - 1).min(span) as i64))
}

/// `hash_fnv1a(value, seed)`: 64-bit FNV-1a over the value's 8 bytes, least significant first,
/// starting from the offset basis xor the seed (pgbench's definition).
pub(crate) fn fnv1a(value: i64, seed: i64) -> i64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    const BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    let mut h = BASIS ^ seed as u64;
    for byte in (value as u64).to_le_bytes() {
        h ^= u64::from(byte);
        h = h.wrapping_mul(PRIME);
    }
    h as i64
}

/// `hash_murmur2(value, seed)`: MurmurHash64A of the value's 8 bytes (pgbench's definition;
/// `hash` is this one).
pub(crate) fn murmur2(value: i64, seed: i64) -> i64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = (seed as u64) ^ 8u64.wrapping_mul(M);
    let mut k = value as u64;
    k = k.wrapping_mul(M);
    k ^= k >> R;
    k = k.wrapping_mul(M);
    h ^= k;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h as i64
}

/// `permute(i, size, seed)`: a pseudorandom permutation of `[0, size)` chosen by the seed, applied
/// to `i mod size`. oio's own construction (pgbench's results differ): rounds of invertible
/// mixing (odd multiply, xor with a key, xorshift) on the smallest power of two holding `size`,
/// repeated ("cycle walking") until the value falls inside the range, which keeps it a bijection.
pub(crate) fn permute(i: i64, size: i64, seed: i64) -> Result<i64, String> {
    if size <= 0 {
        return Err(format!(
            "permute size parameter must be greater than zero (not {size})"
        ));
    }
    let size = size as u64;
    if size == 1 {
        return Ok(0);
    }
    let bits = 64 - (size - 1).leading_zeros();
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let mut state = seed as u64;
    let keys: [(u64, u64); 4] = std::array::from_fn(|_| {
        let m = (splitmix(&mut state) & mask) | 1;
        let x = splitmix(&mut state) & mask;
        (m, x)
    });
    let shift = bits.div_ceil(2).max(1);
    let mut v = (i as u64 % size) & mask;
    loop {
        for &(m, x) in &keys {
            v = v.wrapping_mul(m) & mask;
            v ^= x;
            v ^= v >> shift;
        }
        if v < size {
            return Ok(v as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Values checked against PostgreSQL 15.18's pgbench (`\set k debug(...)`, -t 1).
    #[test]
    fn hashes_match_pgbench() {
        assert_eq!(murmur2(10, 5432), -5817877081768721676);
        assert_eq!(murmur2(-1, 0), 4219408603045787357);
        assert_eq!(murmur2(0, 0), 8217090173679840641);
        assert_eq!(murmur2(10, -2715325821952477995), -7363187086759719665);
        assert_eq!(fnv1a(10, 5432), -7793829335365542153);
        assert_eq!(fnv1a(123456789, 0), -2350796791908741607);
        assert_eq!(fnv1a(-1, 0), -8289690350564177859);
        assert_eq!(fnv1a(0, 0), -6284781860667377211);
    }

    #[test]
    fn permute_is_a_bijection() {
        for size in [1i64, 2, 3, 7, 10, 64, 100, 1000] {
            for seed in [0i64, 1, -5, 123456789] {
                let mut seen = vec![false; size as usize];
                for i in 0..size {
                    let p = permute(i, size, seed).unwrap();
                    assert!((0..size).contains(&p));
                    assert!(!seen[p as usize], "size {size} seed {seed}: {p} twice");
                    seen[p as usize] = true;
                }
            }
        }
        // i is taken modulo size, negative too (as an unsigned value).
        assert_eq!(permute(13, 10, 1).unwrap(), permute(3, 10, 1).unwrap());
        // Different seeds give different permutations.
        let a: Vec<i64> = (0..100).map(|i| permute(i, 100, 1).unwrap()).collect();
        let b: Vec<i64> = (0..100).map(|i| permute(i, 100, 2).unwrap()).collect();
        assert_ne!(a, b);
        assert!(permute(0, 0, 1).is_err());
        assert!(permute(0, i64::MAX, 1).is_ok());
    }

    #[test]
    fn uniform_stays_in_range_and_covers_it() {
        let mut rng = Rng::new(42);
        let mut seen = [0u32; 6];
        for _ in 0..6000 {
            let v = uniform(&mut rng, -2, 3).unwrap();
            seen[(v + 2) as usize] += 1;
        }
        // Each value expected 1000 times, sd ~ 28.9: 6 sd either side.
        for n in seen {
            assert!((827..=1173).contains(&n), "{seen:?}");
        }
        assert_eq!(uniform(&mut rng, 5, 5).unwrap(), 5);
        assert!(uniform(&mut rng, 6, 5).is_err());
        assert!(uniform(&mut rng, i64::MIN, i64::MAX).is_err());
        // pgbench's limit: the range's size must fit a bigint.
        assert!(uniform(&mut rng, i64::MIN, -1).is_err());
        let v = uniform(&mut rng, i64::MIN, -2).unwrap();
        assert!(v <= -2);
    }

    #[test]
    fn distributions_have_their_documented_shape() {
        let mut rng = Rng::new(7);
        // Exponential, parameter 5 over [1, 10]: P(x = 1) = (1 - e^{-0.5}) / (1 - e^{-5}).
        let n = 20000;
        let ones = (0..n)
            .filter(|_| exponential(&mut rng, 1, 10, 5.0).unwrap() == 1)
            .count() as f64;
        let p = (1.0 - (-0.5f64).exp()) / (1.0 - (-5.0f64).exp());
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (ones - n as f64 * p).abs() < 6.0 * sd,
            "{ones} vs {}",
            n as f64 * p
        );
        // Gaussian, parameter 2 over [0, 99]: the middle two deciles hold
        // P(|z| < 0.4) / P(|z| < 2) = 0.3108 / 0.9545 of the draws.
        let mid = (0..n)
            .filter(|_| (40..60).contains(&gaussian(&mut rng, 0, 99, 2.0).unwrap()))
            .count() as f64;
        let p = 0.310_843 / 0.954_500;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (mid - n as f64 * p).abs() < 6.0 * sd,
            "{mid} vs {}",
            n as f64 * p
        );
        // Zipfian s = 2.5: P(1) / P(2) = 2^2.5 = 5.66.
        let mut c = [0f64; 3];
        for _ in 0..n {
            let v = zipfian(&mut rng, 1, 1000, 2.5).unwrap();
            assert!((1..=1000).contains(&v));
            if v <= 2 {
                c[v as usize] += 1.0;
            }
        }
        let ratio = c[1] / c[2];
        assert!((4.8..6.6).contains(&ratio), "{ratio}");
        // Parameter rules.
        assert!(exponential(&mut rng, 1, 10, 0.0).is_err());
        assert!(gaussian(&mut rng, 1, 10, 1.99).is_err());
        assert!(zipfian(&mut rng, 1, 10, 1.0).is_err());
        assert!(zipfian(&mut rng, 1, 10, 1000.5).is_err());
        assert!(zipfian(&mut rng, 1, 10, 1000.0).is_ok());
        assert!(zipfian(&mut rng, 1, 10, f64::NAN).is_err());
    }
}
