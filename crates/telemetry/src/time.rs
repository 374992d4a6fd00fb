//! Calendar arithmetic for the timestamps tools print, without a date-time crate: the
//! sources print civil dates and we only need seconds between samples (and an RFC 3339 start).

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    // Shift the year to start in March so the leap day is the last day of the year.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Years a timestamp may have: before 1970 no tool recorded anything, and RFC 3339 (and
/// the formatting of times) ends at 9999.
pub const YEARS: std::ops::RangeInclusive<i64> = 1970..=9999;

/// Seconds since the epoch of a civil date and time (no zone applied); `None` for an invalid
/// date or a year outside [`YEARS`].
pub fn civil_seconds(year: i64, month: u32, day: u32, h: u32, m: u32, s: f64) -> Option<f64> {
    if !YEARS.contains(&year)
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || h > 23
        || m > 59
        || !(0.0..61.0).contains(&s)
    {
        return None;
    }
    Some(days_from_civil(year, month, day) as f64 * 86_400.0 + (h * 3600 + m * 60) as f64 + s)
}

/// Parses `HH:MM:SS[.fff]` with an optional ` AM`/` PM` after it.
pub fn parse_clock(t: &str, ampm: Option<&str>) -> Option<(u32, u32, f64)> {
    let mut it = t.split(':');
    let mut h: u32 = it.next()?.parse().ok()?;
    let m: u32 = it.next()?.parse().ok()?;
    let s: f64 = it.next()?.parse().ok()?;
    if it.next().is_some() {
        return None;
    }
    match ampm.map(str::to_ascii_uppercase).as_deref() {
        Some("AM") if h == 12 => h = 0,
        Some("PM") if h < 12 => h += 12,
        Some("AM") | Some("PM") | None => {}
        Some(_) => return None,
    }
    Some((h, m, s))
}

/// Parses `MM/DD/YYYY` or `MM/DD/YY` (two-digit years are 20YY).
pub fn parse_us_date(d: &str) -> Option<(i64, u32, u32)> {
    let mut it = d.split('/');
    let mo: u32 = it.next()?.parse().ok()?;
    let da: u32 = it.next()?.parse().ok()?;
    let ys = it.next()?;
    if it.next().is_some() {
        return None;
    }
    let mut y: i64 = ys.parse().ok()?;
    if ys.len() == 2 {
        y += 2000;
    }
    Some((y, mo, da))
}

/// Parses `YYYY-MM-DD`.
pub fn parse_iso_date(d: &str) -> Option<(i64, u32, u32)> {
    let mut it = d.split('-');
    let y: i64 = it.next()?.parse().ok()?;
    let mo: u32 = it.next()?.parse().ok()?;
    let da: u32 = it.next()?.parse().ok()?;
    if it.next().is_some() {
        return None;
    }
    Some((y, mo, da))
}

/// Seconds since the epoch of 10000-01-01T00:00:00Z, where RFC 3339 ends.
pub const END_OF_RFC3339: f64 = 253_402_300_800.0;

/// RFC 3339 UTC text of seconds since the epoch (millisecond precision); `None` before 1970
/// or from year 10000 on (humantime panics there).
pub fn rfc3339(epoch_s: f64) -> Option<String> {
    if !(0.0..END_OF_RFC3339 - 0.001).contains(&epoch_s) {
        return None;
    }
    let d = std::time::Duration::from_millis((epoch_s * 1000.0).round() as u64);
    Some(humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + d).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(
            days_from_civil(2024, 2, 29) + 1,
            days_from_civil(2024, 3, 1)
        );
        let s = civil_seconds(2002, 9, 8, 12, 35, 45.166).unwrap();
        assert_eq!(rfc3339(s).unwrap(), "2002-09-08T12:35:45.166Z");
        assert!(civil_seconds(10000, 1, 1, 0, 0, 0.0).is_none());
        assert!(civil_seconds(1969, 12, 31, 0, 0, 0.0).is_none());
        let last = civil_seconds(9999, 12, 31, 23, 59, 59.0).unwrap();
        assert_eq!(rfc3339(last).unwrap(), "9999-12-31T23:59:59.000Z");
        assert_eq!(rfc3339(END_OF_RFC3339), None);
        assert_eq!(rfc3339(-1.0), None);
        assert_eq!(parse_clock("12:05:01", Some("AM")), Some((0, 5, 1.0)));
        assert_eq!(parse_clock("01:05:01", Some("PM")), Some((13, 5, 1.0)));
        assert_eq!(parse_us_date("11/21/26"), Some((2026, 11, 21)));
        assert!(civil_seconds(2020, 13, 1, 0, 0, 0.0).is_none());
    }
}
