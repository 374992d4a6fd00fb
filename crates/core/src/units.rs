//! Sizes, durations and their human forms.
//!
//! Sizes follow fio's convention: `k`, `m`, `g`, `t` are powers of 1024 (`4k` = 4096 bytes);
//! `KiB`/`MiB`/… say so explicitly; `kB`/`MB`/… with a capital B after a lower-case prefix are
//! still binary, because storage people mean 4096 when they write `4KB`.

use std::fmt;
use std::time::Duration;

/// A size that could not be parsed; keeps the input and says what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid size '{input}': {why}; expected digits with an optional unit such as 512, 4k, 64KiB, 1M, 2G")]
pub struct SizeError {
    /// The text that was given.
    pub input: String,
    why: &'static str,
}

/// Parses `512`, `4k`, `4K`, `64KiB`, `1.5M`, `2g`, `1T`. Units are powers of 1024.
pub fn parse_size(input: &str) -> Result<u64, SizeError> {
    let err = |why| SizeError {
        input: input.to_string(),
        why,
    };
    let s = input.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return Err(err("no digits"));
    }
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return Err(err("unknown unit")),
    };
    let mult = 1u64 << shift;
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(mult).ok_or_else(|| err("too large"));
    }
    let f: f64 = num.parse().map_err(|_| err("not a number"))?;
    let bytes = f * mult as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(err("too large"));
    }
    if bytes.fract() != 0.0 {
        return Err(err("not a whole number of bytes"));
    }
    Ok(bytes as u64)
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

/// A duration that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration '{input}': expected a number with a unit such as 500ms, 30s, 5m, 1h")]
pub struct DurationError {
    /// The text that was given.
    pub input: String,
}

/// Parses `30s`, `5m`, `1h30m`, `500ms`; a bare number means seconds.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let s = input.trim();
    if let Ok(secs) = s.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(Duration::from_secs_f64(secs));
        }
    }
    humantime::parse_duration(s).map_err(|_| DurationError {
        input: input.to_string(),
    })
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
                Ok(Bytes(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Bytes, E> {
                u64::try_from(v)
                    .map(Bytes)
                    .map_err(|_| E::custom("a size cannot be negative"))
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
                Ok(Secs(Duration::from_secs(v)))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Secs, E> {
                if v.is_finite() && v >= 0.0 {
                    Ok(Secs(Duration::from_secs_f64(v)))
                } else {
                    Err(E::custom("a duration must be a non-negative number"))
                }
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
