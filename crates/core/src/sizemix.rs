//! Block size mixes: `64k:68,8k:32` means 68 % of I/Os are 64 KiB and 32 % are 8 KiB.
//!
//! This is IOMeter's access-spec line and fio's `bssplit`, one per direction.

use crate::units::{format_size, parse_size};
use std::fmt;
use std::str::FromStr;

/// One size with its share of the I/O count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SizeShare {
    /// I/O size in bytes.
    pub bytes: u64,
    /// Relative weight (normally a percentage; weights are normalised when used).
    pub weight: f64,
}

/// A weighted mix of I/O sizes. Never empty; weights are positive.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeMix(Vec<SizeShare>);

/// A size mix that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid size mix '{input}': {why}; expected SIZE or SIZE:WEIGHT,SIZE:WEIGHT such as 8k or 64k:68,8k:32")]
pub struct SizeMixError {
    /// The text that was given.
    pub input: String,
    why: String,
}

/// Shares that make no usable mix (see [`SizeMix::new`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SharesError {
    /// No shares at all.
    #[error("the mix is empty")]
    Empty,
    /// A share of 0-byte I/Os.
    #[error("a size of 0 bytes")]
    ZeroSize,
    /// A size above 4 GiB, more than one I/O can carry.
    #[error("{} is larger than 4 GiB", format_size(*.bytes))]
    TooLarge {
        /// The size in bytes.
        bytes: u64,
    },
    /// A weight that is not a positive number.
    #[error("weight {weight} for {} is not a positive number", format_size(*.bytes))]
    BadWeight {
        /// The weight given.
        weight: f64,
        /// The size it weighs.
        bytes: u64,
    },
}

impl SizeMix {
    /// A mix of one size.
    pub fn single(bytes: u64) -> Self {
        SizeMix(vec![SizeShare {
            bytes,
            weight: 100.0,
        }])
    }

    /// Builds a mix from shares, checking it is usable.
    pub fn new(shares: Vec<SizeShare>) -> Result<Self, SharesError> {
        if shares.is_empty() {
            return Err(SharesError::Empty);
        }
        for s in &shares {
            if s.bytes == 0 {
                return Err(SharesError::ZeroSize);
            }
            if s.bytes > u32::MAX as u64 {
                return Err(SharesError::TooLarge { bytes: s.bytes });
            }
            if !(s.weight.is_finite() && s.weight > 0.0) {
                return Err(SharesError::BadWeight {
                    weight: s.weight,
                    bytes: s.bytes,
                });
            }
        }
        Ok(SizeMix(shares))
    }

    /// The shares as given.
    pub fn shares(&self) -> &[SizeShare] {
        &self.0
    }

    /// The largest size in the mix.
    pub fn max(&self) -> u64 {
        self.0.iter().map(|s| s.bytes).max().unwrap_or(0)
    }

    /// The smallest size in the mix.
    pub fn min(&self) -> u64 {
        self.0.iter().map(|s| s.bytes).min().unwrap_or(0)
    }

    /// Mean I/O size in bytes, weighted by I/O count.
    pub fn mean(&self) -> f64 {
        let total: f64 = self.0.iter().map(|s| s.weight).sum();
        self.0
            .iter()
            .map(|s| s.bytes as f64 * s.weight)
            .sum::<f64>()
            / total
    }

    /// Each share as a fraction of the total weight (sums to 1).
    pub fn fractions(&self) -> Vec<(u64, f64)> {
        let total: f64 = self.0.iter().map(|s| s.weight).sum();
        self.0.iter().map(|s| (s.bytes, s.weight / total)).collect()
    }
}

impl FromStr for SizeMix {
    type Err = SizeMixError;
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |why: String| SizeMixError {
            input: input.to_string(),
            why,
        };
        let mut shares = Vec::new();
        let parts: Vec<&str> = input.split(',').map(str::trim).collect();
        for part in &parts {
            if part.is_empty() {
                return Err(err("an empty entry".into()));
            }
            let (size, weight) = match part.split_once(':') {
                Some((s, w)) => {
                    let w = w.trim().trim_end_matches('%');
                    let w: f64 = w
                        .parse()
                        .map_err(|_| err(format!("weight '{w}' is not a number")))?;
                    (s, w)
                }
                None if parts.len() == 1 => (*part, 100.0),
                None => return Err(err(format!("'{part}' has no weight"))),
            };
            let bytes = parse_size(size).map_err(|e| err(e.to_string()))?;
            shares.push(SizeShare { bytes, weight });
        }
        SizeMix::new(shares).map_err(|e| err(e.to_string()))
    }
}

impl fmt::Display for SizeMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.len() == 1 {
            return f.write_str(&format_size(self.0[0].bytes));
        }
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}:{}", format_size(s.bytes), s.weight)?;
        }
        Ok(())
    }
}

impl serde::Serialize for SizeMix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SizeMix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[test]
fn parses_seed_002_tempdb_mix() {
    let m: SizeMix = "64k:68,8k:32".parse().unwrap();
    assert_eq!(m.shares().len(), 2);
    assert_eq!(m.max(), 65536);
    assert_eq!(m.min(), 8192);
    assert!((m.mean() - (65536.0 * 0.68 + 8192.0 * 0.32)).abs() < 1e-6);
    assert_eq!(m.to_string(), "64k:68,8k:32");
    let w: SizeMix = "64k:83, 512:17%".parse().unwrap();
    assert_eq!(w.to_string(), "64k:83,512:17");
}

#[test]
fn single_size_and_errors() {
    assert_eq!("8k".parse::<SizeMix>().unwrap(), SizeMix::single(8192));
    assert!("8k,4k".parse::<SizeMix>().is_err());
    assert!("8k:x".parse::<SizeMix>().is_err());
    assert!("8k:0".parse::<SizeMix>().is_err());
    assert!("".parse::<SizeMix>().is_err());
    let e = "64q:10".parse::<SizeMix>().unwrap_err().to_string();
    assert!(e.contains("64q"), "{e}");
}
