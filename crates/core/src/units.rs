//! Sizes, durations and their human forms.
//!
//! Sizes follow fio's convention: `k`, `m`, `g`, `t` are powers of 1024 (`4k` = 4096 bytes);
//! `KiB`/`MiB`/… say so explicitly; `kB`/`MB`/… with a capital B after a lower-case prefix are
//! still binary, because storage people mean 4096 when they write `4KB`.

use std::fmt;
use std::time::Duration;

/// Largest size oio accepts anywhere (1 EiB): far beyond any device or array today, and
/// small enough that offset + length arithmetic cannot overflow 64 bits.
pub const MAX_SIZE: u64 = 1 << 60;

/// Longest duration oio accepts anywhere (a year, 365.25 days, which formats as `1year`): a
/// year-long soak test fits; nanosecond clocks (u64 ns, 584 years) and `Duration` arithmetic
/// stay far from overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(31_557_600);

/// Highest offered rate (I/Os per second per stream) oio accepts: 100 million, above what a
/// single host can issue. It keeps arrival gaps at 10 ns or more, so the arrival clock advances.
pub const MAX_RATE: f64 = 1e8;

/// Lowest non-zero offered rate (I/Os per second): one I/O per 1000 s. Slower rates are
/// indistinguishable from idle within any run oio accepts, and their gaps overflow clocks.
pub const MIN_RATE: f64 = 1e-3;

/// A size that could not be parsed; keeps the input and says what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid size '{input}': {why}")]
pub struct SizeError {
    /// The text that was given.
    pub input: String,
    why: String,
}

const SIZE_EXPECTED: &str = "expected digits with an optional unit such as 512, 4k, 64KiB, 1M, 2G";

/// Parses `512`, `4k`, `4K`, `64KiB`, `1.5M`, `2g`, `1T`. Units are powers of 1024. Sizes
/// above [`MAX_SIZE`] are refused.
pub fn parse_size(input: &str) -> Result<u64, SizeError> {
    parse_size_in(input, 0, MAX_SIZE)
}

/// Like [`parse_size`], and the size must be in `min..=max`; the error says the range.
pub fn parse_size_in(input: &str, min: u64, max: u64) -> Result<u64, SizeError> {
    let err = |why: String| SizeError {
        input: input.to_string(),
        why,
    };
    let range = || {
        if min == 0 {
            format!("expected a size of at most {}", format_size(max))
        } else {
            format!(
                "expected a size from {} to {}",
                format_size(min),
                format_size(max)
            )
        }
    };
    let s = input.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return Err(err(format!("no digits; {SIZE_EXPECTED}")));
    }
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return Err(err(format!("unknown unit; {SIZE_EXPECTED}"))),
    };
    let mult = 1u64 << shift;
    let bytes = if let Ok(n) = num.parse::<u64>() {
        n.checked_mul(mult)
            .ok_or_else(|| err(format!("too large; {}", range())))?
    } else {
        let f: f64 = num
            .parse()
            .map_err(|_| err(format!("not a number; {SIZE_EXPECTED}")))?;
        let bytes = f * mult as f64;
        if !bytes.is_finite() || bytes > max as f64 {
            return Err(err(format!("too large; {}", range())));
        }
        if bytes.fract() != 0.0 {
            return Err(err(format!("not a whole number of bytes; {SIZE_EXPECTED}")));
        }
        bytes as u64
    };
    if bytes > max {
        return Err(err(format!("too large; {}", range())));
    }
    if bytes < min {
        return Err(if min == 1 {
            err("a size must be > 0".to_string())
        } else {
            err(format!("too small; {}", range()))
        });
    }
    Ok(bytes)
}

/// Formats a byte count compactly and exactly when it is a whole unit: 512, 4k, 64k, 1m, 1.5g.
/// This is the form used in size mixes and workload files (it parses back with [`parse_size`]).
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "t"), (30, "g"), (20, "m"), (10, "k")] {
        let m = 1u64 << shift;
        if bytes >= m && bytes.is_multiple_of(m) {
            return format!("{}{unit}", bytes / m);
        }
    }
    bytes.to_string()
}

/// Formats bytes for people: `1.00 GiB`, `64.0 KiB`, `512 B`.
pub fn format_bytes(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", UNITS[0])
    } else {
        format!("{} {}", sig3(v), UNITS[i])
    }
}

/// Three significant digits, the precision our measurements deserve on a terminal.
fn sig3(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Formats nanoseconds with a unit that keeps three significant digits: `812 ns`, `96.2 µs`, `1.25 ms`, `2.10 s`.
pub fn format_ns(ns: f64) -> String {
    if ns < 1_000.0 {
        format!("{} ns", sig3(ns))
    } else if ns < 1_000_000.0 {
        format!("{} µs", sig3(ns / 1e3))
    } else if ns < 1_000_000_000.0 {
        format!("{} ms", sig3(ns / 1e6))
    } else {
        format!("{} s", sig3(ns / 1e9))
    }
}

/// Formats a signed change with `decimals` places and an explicit sign: `+117.6`, `-3.0`. A
/// value that rounds to zero is `+0.0`, never `-0.0` (a tiny negative change is no change at
/// the precision shown).
pub fn format_signed(v: f64, decimals: usize) -> String {
    let scale = 10f64.powi(decimals.min(9) as i32);
    let v = if (v * scale).round() == 0.0 { 0.0 } else { v };
    format!("{v:+.decimals$}")
}

/// Formats a rate with thousands separators: `12,345`.
pub fn format_count(v: f64) -> String {
    let n = v.round() as u64;
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration that could not be parsed or is out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration '{input}': {why}")]
pub struct DurationError {
    /// The text that was given.
    pub input: String,
    why: String,
}

const DURATION_EXPECTED: &str = "expected a number with a unit such as 500ms, 30s, 5m, 1h";

/// Parses `30s`, `5m`, `1h30m`, `500ms`; a bare number means seconds. Durations above
/// [`MAX_DURATION`] are refused.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    parse_duration_in(input, Duration::ZERO, MAX_DURATION)
}

/// Like [`parse_duration`], and the duration must be in `min..=max`; the error says the range.
pub fn parse_duration_in(
    input: &str,
    min: Duration,
    max: Duration,
) -> Result<Duration, DurationError> {
    let err = |why: String| DurationError {
        input: input.to_string(),
        why,
    };
    let s = input.trim();
    let d = if let Ok(secs) = s.parse::<f64>() {
        if secs.is_nan() || secs < 0.0 {
            return Err(err(format!(
                "a duration cannot be negative; {DURATION_EXPECTED}"
            )));
        }
        // Out of Duration's range (1e20, inf) is simply too long.
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    } else {
        match humantime::parse_duration(s) {
            Ok(d) => d,
            Err(humantime::DurationError::NumberOverflow) => Duration::MAX,
            Err(_) => return Err(err(DURATION_EXPECTED.to_string())),
        }
    };
    check_duration(d, min, max).map_err(|e| err(e.to_string()))?;
    Ok(d)
}

/// A duration outside the range a setting accepts; the message says the range in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationRangeError {
    /// Longer than `max`.
    #[error("too long; expected at most {}", format_duration(*.max))]
    TooLong {
        /// The longest accepted.
        max: Duration,
    },
    /// Zero where the lower bound is the smallest positive duration.
    #[error("a duration must be > 0")]
    NotPositive,
    /// Shorter than `min`.
    #[error("too short; expected at least {}", format_duration(*.min))]
    TooShort {
        /// The shortest accepted.
        min: Duration,
    },
}

/// Checks that `d` is in `min..=max`; the error says the range in words.
pub fn check_duration(d: Duration, min: Duration, max: Duration) -> Result<(), DurationRangeError> {
    if d > max {
        return Err(DurationRangeError::TooLong { max });
    }
    if d < min {
        return Err(if min <= Duration::from_nanos(1) {
            DurationRangeError::NotPositive
        } else {
            DurationRangeError::TooShort { min }
        });
    }
    Ok(())
}

/// An offered rate that could not be parsed or is out of range; `what` names the flag or
/// field, and the message says the accepted range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateError {
    /// Not a number.
    #[error("invalid rate '{input}': expected I/Os per second such as 9000 or 1.5e6")]
    Invalid {
        /// The text that was given.
        input: String,
    },
    /// Negative, infinite or NaN.
    #[error("{what} {iops} is not a rate; {}", rate_range(*.zero_ok))]
    NotARate {
        /// The flag or field.
        what: String,
        /// The value given.
        iops: f64,
        /// Whether 0 (idle) was accepted.
        zero_ok: bool,
    },
    /// Above [`MAX_RATE`].
    #[error("{what} {iops} is too high; {} (no single host issues more)", rate_range(*.zero_ok))]
    TooHigh {
        /// The flag or field.
        what: String,
        /// The value given.
        iops: f64,
        /// Whether 0 (idle) was accepted.
        zero_ok: bool,
    },
    /// Below [`MIN_RATE`] (and not an accepted 0).
    #[error("{what} {iops} is too low; {} (one I/O per 1000 s)", rate_range(*.zero_ok))]
    TooLow {
        /// The flag or field.
        what: String,
        /// The value given.
        iops: f64,
        /// Whether 0 (idle) was accepted.
        zero_ok: bool,
    },
}

/// The accepted rates in words, for [`RateError`].
fn rate_range(zero_ok: bool) -> String {
    format!(
        "expected {}{} to {} I/Os per second",
        if zero_ok { "0, or " } else { "" },
        MIN_RATE,
        format_count(MAX_RATE)
    )
}

/// Checks an offered rate in I/Os per second: 0 (idle) when `zero_ok`, otherwise from
/// [`MIN_RATE`] to [`MAX_RATE`]. `what` names the flag or field in the message.
pub fn check_rate(what: &str, iops: f64, zero_ok: bool) -> Result<(), RateError> {
    let what = what.to_string();
    if !iops.is_finite() || iops < 0.0 {
        return Err(RateError::NotARate {
            what,
            iops,
            zero_ok,
        });
    }
    if iops == 0.0 && zero_ok {
        return Ok(());
    }
    if iops > MAX_RATE {
        return Err(RateError::TooHigh {
            what,
            iops,
            zero_ok,
        });
    }
    if iops < MIN_RATE {
        return Err(RateError::TooLow {
            what,
            iops,
            zero_ok,
        });
    }
    Ok(())
}

/// Parses an offered rate in I/Os per second (`9000`, `1.5e6`) within
/// [`MIN_RATE`]..=[`MAX_RATE`].
pub fn parse_rate(input: &str) -> Result<f64, RateError> {
    let v: f64 = input.trim().parse().map_err(|_| RateError::Invalid {
        input: input.to_string(),
    })?;
    check_rate("rate", v, false)?;
    Ok(v)
}

/// A count that could not be parsed or is outside `min..=max`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CountError {
    /// Not a whole number.
    #[error("invalid count '{input}': expected a whole number from {min} to {max}")]
    Invalid {
        /// The text that was given.
        input: String,
        /// The smallest accepted.
        min: u64,
        /// The largest accepted.
        max: u64,
    },
    /// A whole number outside the range.
    #[error("count {value} is out of range: expected {min} to {max}")]
    OutOfRange {
        /// The number given.
        value: u64,
        /// The smallest accepted.
        min: u64,
        /// The largest accepted.
        max: u64,
    },
}

/// Parses a count such as a number of I/Os or repetitions, within `min..=max`.
pub fn parse_count_in(input: &str, min: u64, max: u64) -> Result<u64, CountError> {
    let v: u64 = input.trim().parse().map_err(|_| CountError::Invalid {
        input: input.to_string(),
        min,
        max,
    })?;
    if !(min..=max).contains(&v) {
        return Err(CountError::OutOfRange { value: v, min, max });
    }
    Ok(v)
}

/// Formats a duration the way [`parse_duration`] reads it back: `30s`, `1m 30s`, `500ms`.
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// A byte count written as a size string in files (`"1g"`), a plain number also accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0))
    }
}

impl serde::Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_size(self.0))
    }
}

impl<'de> serde::Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as \"4k\", \"1g\" or a number of bytes")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Bytes, E> {
                if v > MAX_SIZE {
                    return Err(E::custom(format!(
                        "size {v} is too large; expected at most {} bytes",
                        MAX_SIZE
                    )));
                }
                Ok(Bytes(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Bytes, E> {
                let v = u64::try_from(v).map_err(|_| E::custom("a size cannot be negative"))?;
                self.visit_u64(v)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Bytes, E> {
                parse_size(v).map(Bytes).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration written as `"30s"` in files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Secs(pub Duration);

impl serde::Serialize for Secs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl<'de> serde::Deserialize<'de> for Secs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Secs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as \"30s\" or \"5m\", or a number of seconds")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Secs, E> {
                let d = Duration::from_secs(v);
                check_duration(d, Duration::ZERO, MAX_DURATION)
                    .map_err(|why| E::custom(format!("duration {v} s: {why}")))?;
                Ok(Secs(d))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Secs, E> {
                let v = u64::try_from(v).map_err(|_| E::custom("a duration cannot be negative"))?;
                self.visit_u64(v)
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Secs, E> {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(E::custom("a duration must be a non-negative number"));
                }
                let d = Duration::try_from_secs_f64(v).unwrap_or(Duration::MAX);
                check_duration(d, Duration::ZERO, MAX_DURATION)
                    .map_err(|why| E::custom(format!("duration {v:e} s: {why}")))?;
                Ok(Secs(d))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Secs, E> {
                parse_duration(v).map(Secs).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[test]
fn sizes_parse_binary_units() {
    assert_eq!(parse_size("512").unwrap(), 512);
    assert_eq!(parse_size("4k").unwrap(), 4096);
    assert_eq!(parse_size("4KB").unwrap(), 4096);
    assert_eq!(parse_size("64KiB").unwrap(), 65536);
    assert_eq!(parse_size("1.5M").unwrap(), 1_572_864);
    assert_eq!(parse_size("1g").unwrap(), 1 << 30);
    assert!(parse_size("4kk").unwrap_err().to_string().contains("'4kk'"));
    assert!(parse_size("").is_err());
    assert!(parse_size("0.3").is_err());
    assert!(parse_size("99999999999999999999").is_err());
}

#[test]
fn sizes_format_round_trip() {
    for v in [512u64, 4096, 65536, 1 << 20, 3 << 30, 1000, 1536] {
        assert_eq!(parse_size(&format_size(v)).unwrap(), v);
    }
    assert_eq!(format_size(65536), "64k");
    assert_eq!(format_size(1536), "1536");
}

#[test]
fn durations_parse() {
    assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
    assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
    assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
    assert_eq!(parse_duration("2.5").unwrap(), Duration::from_millis(2500));
    assert!(parse_duration("soon").is_err());
}

#[test]
fn human_formats() {
    assert_eq!(format_ns(812.0), "812 ns");
    assert_eq!(format_ns(96_240.0), "96.2 µs");
    assert_eq!(format_ns(1_250_000.0), "1.25 ms");
    assert_eq!(format_bytes(1024.0 * 1024.0 * 1024.0), "1.00 GiB");
    assert_eq!(format_count(1234567.0), "1,234,567");
}

#[test]
fn durations_are_bounded_without_panicking() {
    // 1e20 s used to panic in Duration::from_secs_f64; 18446744074 s wrapped to 0.4 s later.
    for s in [
        "1e20",
        "18446744074",
        "inf",
        "1e308",
        "366d",
        "99999999999999999999h",
    ] {
        let e = parse_duration(s).unwrap_err().to_string();
        assert!(
            e.contains("too long") && e.contains("at most 1year"),
            "{s}: {e}"
        );
    }
    assert!(parse_duration("NaN").is_err());
    assert!(parse_duration("-1")
        .unwrap_err()
        .to_string()
        .contains("negative"));
    assert_eq!(parse_duration("1y").unwrap(), MAX_DURATION);
    assert!(parse_duration("365d").is_ok());
    let e = parse_duration_in("0", Duration::from_nanos(1), MAX_DURATION).unwrap_err();
    assert!(e.to_string().contains("must be > 0"), "{e}");
    let e = parse_duration_in("1ns", Duration::from_millis(1), MAX_DURATION).unwrap_err();
    assert!(e.to_string().contains("at least 1ms"), "{e}");
}

#[test]
fn sizes_and_rates_are_bounded() {
    let e = parse_size_in("0", 1, MAX_SIZE).unwrap_err().to_string();
    assert!(e.contains("must be > 0"), "{e}");
    assert!(parse_size("2048p")
        .unwrap_err()
        .to_string()
        .contains("at most"));
    assert_eq!(parse_size("1024p").unwrap(), MAX_SIZE);
    assert!(parse_size("1e400").is_err());
    for r in ["1.5e9", "1e-11", "inf", "NaN", "-5", "0"] {
        let e = parse_rate(r).unwrap_err().to_string();
        assert!(e.contains("I/Os per second"), "{r}: {e}");
    }
    assert_eq!(parse_rate("9000").unwrap(), 9000.0);
    assert!(check_rate("iops", 0.0, true).is_ok());
    assert!(check_rate("iops", 1e308, true)
        .unwrap_err()
        .to_string()
        .contains("too high"));
    assert!(parse_count_in("0", 1, 10).is_err());
}

/// Serde for a [`std::time::Duration`] as whole nanoseconds (`#[serde(with =
/// "oio_core::units::duration_ns")]`), the unit every oio document uses.
pub mod duration_ns {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Writes nanoseconds (saturating at u64::MAX, about 584 years).
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    /// Reads nanoseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_nanos)
    }
}

#[cfg(test)]
mod signed_tests {
    use super::format_signed;

    #[test]
    fn signed_changes_never_show_minus_zero() {
        assert_eq!(format_signed(-0.01, 1), "+0.0");
        assert_eq!(format_signed(-0.04, 1), "+0.0");
        assert_eq!(format_signed(-0.06, 1), "-0.1");
        assert_eq!(format_signed(117.64, 1), "+117.6");
        assert_eq!(format_signed(-0.004, 2), "+0.00");
        assert_eq!(format_signed(0.0, 0), "+0");
    }
}
