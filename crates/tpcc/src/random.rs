//! The specification's random inputs (clauses 2.1.6 and 4.3.2): NURand skew, customer last
//! names from syllables, and the string shapes of the initial population.
//!
//! Each thread owns one [`Rng`] seeded from the run's seed, so a run is reproducible per
//! worker while workers stay independent.

/// The ten syllables last names are built from (clause 4.3.2.3).
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// NURand's constant C for C_LAST at load time. The run picks its own C within the range
/// clause 2.1.6.1 allows relative to this one.
pub const C_LAST_LOAD: i64 = 157;

/// The three NURand constants of a run (clause 2.1.6).
#[derive(Clone, Copy, Debug)]
pub struct NuRandC {
    /// For C_LAST (A = 255).
    pub c_last: i64,
    /// For C_ID (A = 1023).
    pub c_id: i64,
    /// For OL_I_ID (A = 8191).
    pub ol_i_id: i64,
}

impl NuRandC {
    /// Constants for a run: C_LAST differs from the load's by 65..=119 but not 96 or 112.
    pub fn for_run(rng: &mut Rng) -> NuRandC {
        let delta = loop {
            let d = rng.int(65, 119);
            if d != 96 && d != 112 {
                break d;
            }
        };
        NuRandC {
            // 157 − 119 ≥ 0, so subtracting keeps C within 0..=255 and |C_run − C_load| = delta.
            c_last: C_LAST_LOAD - delta,
            c_id: rng.int(0, 1023),
            ol_i_id: rng.int(0, 8191),
        }
    }

    /// Constants for loading.
    pub fn for_load(rng: &mut Rng) -> NuRandC {
        NuRandC {
            c_last: C_LAST_LOAD,
            c_id: rng.int(0, 1023),
            ol_i_id: rng.int(0, 8191),
        }
    }
}

/// A fast, seedable generator with the specification's helpers.
pub struct Rng(fastrand::Rng);

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(fastrand::Rng::with_seed(seed))
    }

    /// Uniform integer in `lo..=hi`.
    #[inline]
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        self.0.i64(lo..=hi)
    }

    /// Uniform float in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        self.0.f64()
    }

    /// Uniform amount with `decimals` digits after the point in `lo..=hi`.
    pub fn fixed(&mut self, lo: f64, hi: f64, decimals: i32) -> f64 {
        let scale = 10f64.powi(decimals);
        let v = self.int((lo * scale).round() as i64, (hi * scale).round() as i64);
        v as f64 / scale
    }

    /// True with probability `pct` percent.
    #[inline]
    pub fn percent(&mut self, pct: u32) -> bool {
        self.0.u32(0..100) < pct
    }

    /// NURand(A, x, y) (clause 2.1.6).
    pub fn nurand(&mut self, a: i64, c: i64, x: i64, y: i64) -> i64 {
        (((self.int(0, a) | self.int(x, y)) + c) % (y - x + 1)) + x
    }

    /// Appends a random alphanumeric string of length `lo..=hi` (an "a-string").
    pub fn astring_into(&mut self, out: &mut String, lo: usize, hi: usize) {
        let n = self.0.usize(lo..=hi);
        for _ in 0..n {
            out.push(ALNUM[self.0.usize(..ALNUM.len())] as char);
        }
    }

    /// A random a-string of length `lo..=hi`.
    pub fn astring(&mut self, lo: usize, hi: usize) -> String {
        let mut s = String::with_capacity(hi);
        self.astring_into(&mut s, lo, hi);
        s
    }

    /// A random numeric string of exactly `n` digits (an "n-string").
    pub fn nstring(&mut self, n: usize) -> String {
        (0..n).map(|_| (b'0' + self.0.u8(0..10)) as char).collect()
    }

    /// A zip code: four random digits then "11111" (clause 4.3.2.7).
    pub fn zip(&mut self) -> String {
        let mut s = self.nstring(4);
        s.push_str("11111");
        s
    }

    /// An address as warehouse, district and customer rows carry it (clause 4.3.3.1):
    /// street 1, street 2 and city of 10..20 characters, a state and a zip code.
    pub fn address(&mut self) -> [String; 5] {
        [
            self.astring(10, 20),
            self.astring(10, 20),
            self.astring(10, 20),
            self.state(),
            self.zip(),
        ]
    }

    /// Two random upper-case letters.
    pub fn state(&mut self) -> String {
        (0..2).map(|_| (b'A' + self.0.u8(0..26)) as char).collect()
    }

    /// I_DATA / S_DATA: an a-string of 26..50 characters, 10 % of them containing "ORIGINAL"
    /// at a random position (clause 4.3.3.1).
    pub fn data_with_original(&mut self) -> String {
        let mut s = self.astring(26, 50);
        if self.percent(10) {
            let pos = self.0.usize(0..=s.len() - 8);
            s.replace_range(pos..pos + 8, "ORIGINAL");
        }
        s
    }

    /// A customer last name: NURand(255, 0, 999) turned into three syllables.
    pub fn last_name(&mut self, c: i64) -> String {
        last_name(self.nurand(255, c, 0, 999))
    }

    /// A random permutation of `1..=n`.
    pub fn permutation(&mut self, n: i64) -> Vec<i64> {
        let mut v: Vec<i64> = (1..=n).collect();
        self.0.shuffle(&mut v);
        v
    }

    /// A negative-exponential think time with the given mean, truncated at 10 × mean
    /// (clause 5.2.5.4), in seconds.
    pub fn think_time_s(&mut self, mean_s: f64) -> f64 {
        let r = self.unit().max(f64::MIN_POSITIVE);
        (-r.ln() * mean_s).min(10.0 * mean_s)
    }
}

/// The last name of number `n` (0..=999): the syllables of its three digits.
pub fn last_name(n: i64) -> String {
    let n = n as usize;
    let mut s = String::with_capacity(15);
    s.push_str(SYLLABLES[n / 100]);
    s.push_str(SYLLABLES[(n / 10) % 10]);
    s.push_str(SYLLABLES[n % 10]);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_follow_the_syllable_rule() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut r = Rng::new(1);
        let mut hits = vec![0u32; 3001];
        for _ in 0..300_000 {
            let v = r.nurand(1023, 259, 1, 3000);
            assert!((1..=3000).contains(&v));
            hits[v as usize] += 1;
        }
        let max = *hits.iter().max().unwrap() as f64;
        // Uniform would put ~100 on each; NURand concentrates far more on some ids.
        assert!(max > 300.0, "max hits {max}");
    }

    #[test]
    fn run_constant_respects_the_delta_rule() {
        let mut r = Rng::new(7);
        for _ in 0..1000 {
            let c = NuRandC::for_run(&mut r).c_last;
            let d = (c - C_LAST_LOAD).abs();
            assert!((0..=255).contains(&c));
            assert!((65..=119).contains(&d) && d != 96 && d != 112, "{d}");
        }
    }

    #[test]
    fn data_strings_have_the_right_shape() {
        let mut r = Rng::new(3);
        let mut original = 0;
        for _ in 0..10_000 {
            let s = r.data_with_original();
            assert!((26..=50).contains(&s.len()));
            original += s.contains("ORIGINAL") as u32;
        }
        assert!((800..1200).contains(&original), "{original}");
        assert_eq!(r.zip().len(), 9);
        assert!(r.zip().ends_with("11111"));
        let t = r.think_time_s(12.0);
        assert!((0.0..=120.0).contains(&t));
    }
}
