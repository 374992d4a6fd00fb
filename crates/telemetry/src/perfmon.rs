//! Windows perfmon counter logs as text: `relog -f csv|tsv`, `typeperf`, `logman -f csv` and
//! Performance Monitor's "Save data as" (comma or tab separated).
//!
//! The first header cell is `(PDH-CSV 4.0) (<zone>)(<bias minutes>)` (`PDH-TSV` for tab
//! separated files); the zone name is localised and may contain parentheses, so the bias is
//! the last parenthesised integer (UTC = local + bias). The other header cells are counter
//! paths `\\HOST\Object(Instance)\Counter`; instances contain spaces, colons, backslashes and
//! parentheses, so the instance is the outermost trailing `(...)` and the counter is the text
//! after the last backslash. Rows start with a local time; a missing sample is a single
//! space. Each row's rate counters describe the interval that ends at its time, so the first
//! row usually has none.
//!
//! Only `PhysicalDisk` and `LogicalDisk` counters are read; other objects are ignored. Windows
//! writes object and counter names in the display language of the user who recorded them:
//! [`crate::perfmon_locale`] holds the names in 13 languages, and the language of the disk
//! object names found is the detected locale. It also gives the defaults of the locale's
//! regional format: the decimal separator (a value with a comma is read as a decimal comma
//! unless `--decimal point` says otherwise: perfmon never writes thousands separators) and
//! the order of day, month and year in the time column (a four-digit first field is always a
//! year; `--date-order` overrides, and a file whose dates only parse in the other order is
//! read in that order, with a warning). What was used is stated in the observation's source
//! (`source.locale`). Binary `.blg` logs are refused with the `relog` command that converts
//! them.

use crate::perfmon_locale::{self as loc, Counter as Field, DateOrder, Locale};
use crate::text::TextLines;
use crate::time::{civil_seconds, parse_clock, rfc3339};
use crate::TelemetryError;
use oio_core::observation::{DeviceInterval, Observation, SourceKind};
use std::io::Read;

/// One parsed counter path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterPath {
    /// Machine name, without the leading `\\` (empty when the path has none).
    pub host: String,
    /// Performance object (`PhysicalDisk`).
    pub object: String,
    /// Instance (`0 C:`), when the object has instances.
    pub instance: Option<String>,
    /// Counter name (`Disk Reads/sec`).
    pub counter: String,
}

/// Splits `\\HOST\Object(Instance)\Counter`. Returns `None` for text that is not a counter path.
pub fn parse_counter_path(path: &str) -> Option<CounterPath> {
    let (host, rest) = if let Some(r) = path.strip_prefix("\\\\") {
        let i = r.find('\\')?;
        (r[..i].to_string(), &r[i + 1..])
    } else if let Some(r) = path.strip_prefix('\\') {
        (String::new(), r)
    } else {
        return None;
    };
    let (middle, counter) = rest.rsplit_once('\\')?;
    if counter.is_empty() || middle.is_empty() {
        return None;
    }
    let (object, instance) = if middle.ends_with(')') {
        // Balance parentheses from the right: the instance may itself contain them.
        let mut depth = 0i32;
        let mut open = None;
        for (i, c) in middle.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        open = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let open = open?;
        (
            middle[..open].to_string(),
            Some(middle[open + 1..middle.len() - 1].to_string()),
        )
    } else {
        (middle.to_string(), None)
    };
    Some(CounterPath {
        host,
        object,
        instance,
        counter: counter.to_string(),
    })
}

/// Choices about a perfmon file that its content may not settle.
#[derive(Clone, Debug, Default)]
pub struct PerfmonOptions {
    /// Read counter names in this locale (a tag from [`loc::LOCALES`], `de` or `de-DE`)
    /// instead of the one detected from the disk object names.
    pub locale: Option<String>,
    /// `Some(true)`: values use a decimal comma; `Some(false)`: a comma in a value is an
    /// error. `None` accepts both (perfmon never writes thousands separators).
    pub decimal_comma: Option<bool>,
    /// Order of the date fields in the time column (default: the locale's).
    pub date_order: Option<DateOrder>,
}

/// The error for a binary `.blg` counter log, with the command that converts it.
pub fn blg_message(path: &str) -> String {
    let p = std::path::Path::new(path);
    let csv = p.with_extension("csv").display().to_string();
    let q = |s: &str| {
        if s.contains(' ') {
            format!("\"{s}\"")
        } else {
            s.to_string()
        }
    };
    format!(
        "a binary perfmon log (.blg), which oio cannot read; convert it on Windows with `relog {} -f csv -o {}` and characterize the CSV",
        q(path),
        q(&csv)
    )
}

/// Parses the bias in minutes from the first header cell; `None` when the cell has no zone.
fn parse_bias(cell: &str) -> Option<i64> {
    // The last "(...)" whose content is an integer.
    let mut rest = cell;
    let mut found = None;
    while let Some(close) = rest.rfind(')') {
        let open = rest[..close].rfind('(')?;
        if let Ok(v) = rest[open + 1..close].trim().parse::<i64>() {
            found = Some(v);
            break;
        }
        rest = &rest[..open];
    }
    found
}

/// Splits a date into its three numbers: `11/23/2026`, `23.11.2026`, `2026-11-23`,
/// `2026. 11. 23.` (with the field texts, to tell a four-digit year).
fn date_fields(d: &str) -> Option<[(&str, u32); 3]> {
    let mut it = d
        .split(['/', '.', '-'])
        .map(str::trim)
        .filter(|x| !x.is_empty());
    let mut out = [("", 0u32); 3];
    for slot in &mut out {
        let t = it.next()?;
        *slot = (t, t.parse().ok()?);
    }
    it.next().is_none().then_some(out)
}

/// Parses a perfmon local time (`date time[.fff] [AM|PM]`) in `order` to naive seconds.
fn parse_time(s: &str, order: DateOrder) -> Option<f64> {
    let mut parts = s.split_whitespace();
    let mut date = parts.next()?.to_string();
    // Korean dates have spaces inside (`2026. 11. 23.`): join fields until a clock appears.
    let mut clock = parts.next()?;
    while !clock.contains(':') {
        date.push_str(clock);
        clock = parts.next()?;
    }
    let f = date_fields(&date)?;
    let year = |(t, v): (&str, u32)| -> i64 {
        if t.len() <= 2 {
            2000 + v as i64
        } else {
            v as i64
        }
    };
    let (y, mo, d) = if f[0].0.len() == 4 || order == DateOrder::Ymd {
        (year(f[0]), f[1].1, f[2].1)
    } else if order == DateOrder::Dmy {
        (year(f[2]), f[1].1, f[0].1)
    } else {
        (year(f[2]), f[0].1, f[1].1)
    };
    let clock = clock.replace(',', ".");
    let (h, m, sec) = parse_clock(&clock, parts.next())?;
    if parts.next().is_some() {
        return None;
    }
    civil_seconds(y, mo, d, h, m, sec)
}

/// Parses a counter value: decimal point, or decimal comma unless `comma` is `Some(false)`.
fn parse_value(cell: &str, comma: Option<bool>) -> Option<f64> {
    let t = cell.trim();
    if t.contains(',') {
        if comma == Some(false) || t.contains('.') || t.matches(',').count() > 1 {
            return None;
        }
        return crate::num(&t.replace(',', "."));
    }
    crate::num(t)
}

struct Column {
    device: usize,
    field: Field,
}

/// Parses perfmon CSV text; `file` names the input in errors.
pub fn parse(file: &str, text: &str) -> Result<Observation, TelemetryError> {
    parse_lines(&mut TextLines::from_str(file, text))
}

/// Parses perfmon text with choices the file does not settle.
pub fn parse_with(
    file: &str,
    text: &str,
    opts: &PerfmonOptions,
) -> Result<Observation, TelemetryError> {
    parse_lines_with(&mut TextLines::from_str(file, text), opts)
}

/// Splits one CSV line into `rec`. Perfmon never puts a line break inside a quoted cell, so
/// the file is read line by line, in memory bounded by the longest line.
fn split_csv(
    file: &str,
    n: usize,
    line: &str,
    delim: u8,
    rec: &mut csv::StringRecord,
) -> Result<(), TelemetryError> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delim)
        .flexible(true)
        .from_reader(line.as_bytes());
    match rdr.read_record(rec) {
        Ok(true) => Ok(()),
        Ok(false) => {
            rec.clear();
            Ok(())
        }
        Err(e) => Err(TelemetryError::parse(
            file,
            n,
            format!("malformed CSV: {e}"),
        )),
    }
}

/// The field separator of a header line: a tab (relog -f tsv, "Save data as" tab separated),
/// else what follows the first quoted cell (`,` or `;`), else a comma.
fn delimiter_of(header: &str) -> u8 {
    if header.contains('\t') {
        return b'\t';
    }
    let h = header.trim_start_matches('\u{feff}');
    if let Some(rest) = h.strip_prefix('"') {
        if let Some(close) = rest.find('"') {
            if let Some(&c) = rest.as_bytes().get(close + 1) {
                if c == b';' || c == b',' {
                    return c;
                }
            }
        }
    }
    b','
}

/// Parses perfmon CSV from lines (streaming).
pub fn parse_lines<R: Read>(lines: &mut TextLines<R>) -> Result<Observation, TelemetryError> {
    parse_lines_with(lines, &PerfmonOptions::default())
}

/// Parses perfmon CSV or TSV from lines (streaming), with choices the file does not settle.
pub fn parse_lines_with<R: Read>(
    lines: &mut TextLines<R>,
    opts: &PerfmonOptions,
) -> Result<Observation, TelemetryError> {
    let file = lines.file().to_string();
    let file = file.as_str();
    let forced: Option<&'static Locale> = match &opts.locale {
        Some(t) => Some(loc::by_tag(t).ok_or_else(|| {
            TelemetryError::invalid(
                file,
                format!("unknown locale {t:?}; expected one of {}", loc::tags()),
            )
        })?),
        None => None,
    };
    let header = read_header(lines, file)?;
    let mut obs = Observation::new(SourceKind::Perfmon, vec![file.to_string()]);
    let paths: Vec<(usize, CounterPath)> = header
        .cells
        .iter()
        .enumerate()
        .skip(1)
        .filter_map(|(i, cell)| parse_counter_path(cell).map(|p| (i, p)))
        .collect();
    let hosts: std::collections::BTreeSet<&str> =
        paths.iter().map(|(_, p)| p.host.as_str()).collect();
    let multi_host = hosts.len() > 1;
    if let Some(h) = hosts.iter().next().filter(|_| !multi_host) {
        if !h.is_empty() {
            obs.source.host = Some(h.to_string());
        }
    }
    let locale = forced.unwrap_or_else(|| detect_locale(&paths));
    let map = map_columns(file, header.cells.len(), &paths, locale, multi_host)?;
    unread_columns(
        &header.cells,
        &paths,
        &map,
        locale,
        &mut obs.envelope.warnings,
    );
    for n in &map.names {
        obs.device_mut(n);
    }
    let mut rows = Rows {
        order: opts.date_order.unwrap_or(locale.date_order),
        order_checked: opts.date_order.is_some(),
        comma_seen: false,
        first_time: None,
        prev_time: None,
        first_gap: None,
        rows: 0,
        skipped_empty: 0,
    };
    // One record reused for every row: wide files have thousands of cells per row.
    let mut rec = csv::StringRecord::new();
    while let Some((line, text)) = lines.next_line()? {
        if text.is_empty() {
            continue;
        }
        split_csv(file, line, text, header.delim, &mut rec)?;
        rows.row(file, line, &rec, &header, &map, opts, &mut obs)?;
    }
    rows.finish(&mut obs, file, &header, locale, forced.is_some(), opts)?;
    Ok(obs)
}

/// The header line: its cells, the separator and the time-zone bias.
struct Header {
    cells: csv::StringRecord,
    delim: u8,
    /// Minutes, UTC = local + bias.
    bias: Option<i64>,
}

/// Reads the first non-blank line as the perfmon header.
fn read_header<R: Read>(lines: &mut TextLines<R>, file: &str) -> Result<Header, TelemetryError> {
    let mut cells = csv::StringRecord::new();
    let delim;
    loop {
        match lines.next_line()? {
            Some((_, l)) if l.trim().is_empty() => continue,
            Some((n, l)) => {
                delim = delimiter_of(l);
                split_csv(
                    file,
                    n,
                    l.strip_prefix('\u{feff}').unwrap_or(l),
                    delim,
                    &mut cells,
                )?;
                break;
            }
            None => {
                return Err(TelemetryError::invalid(
                    file,
                    "empty file; expected a perfmon CSV header",
                ))
            }
        }
    }
    let first = cells.get(0).unwrap_or("");
    let first_t = first.trim_start();
    if !first_t.starts_with("(PDH-CSV") && !first_t.starts_with("(PDH-TSV") {
        return Err(TelemetryError::parse(
            file,
            1,
            format!("expected the perfmon header \"(PDH-CSV 4.0) (zone)(bias)\" in the first column, found {first:?}"),
        ));
    }
    let bias = parse_bias(
        first_t
            .trim_start_matches("(PDH-CSV 4.0)")
            .trim_start_matches("(PDH-TSV 4.0)"),
    );
    Ok(Header { cells, delim, bias })
}

/// The locale naming the most disk counters of the file (Spanish and Portuguese share
/// "Disco físico"), English on a tie. Counters under an English object name count for
/// every locale: pt-BR Windows writes `PhysicalDisk` with Portuguese counter names.
fn detect_locale(paths: &[(usize, CounterPath)]) -> &'static Locale {
    // Normalized once: wide files have thousands of columns, mostly of other objects.
    let disk: Vec<(&Locale, String)> = paths
        .iter()
        .filter_map(|(_, p)| {
            loc::LOCALES
                .iter()
                .find(|l| loc::is_disk_object(l, &p.object))
                .map(|_| (&p.object, loc::normalize(&p.counter)))
        })
        .map(|(o, c)| (loc::locale_of_object(o).unwrap_or(loc::ENGLISH), c))
        .collect();
    let score = |l: &Locale| {
        disk.iter()
            .filter(|(ol, c)| {
                // Spanish and Portuguese share object names: compare those, not the locale.
                (std::ptr::eq(*ol, loc::ENGLISH)
                    || l.physical_disk
                        .iter()
                        .chain(l.logical_disk)
                        .any(|o| loc::is_disk_object(ol, o)))
                    && l.counters.iter().any(|(_, n)| loc::normalize(n) == *c)
            })
            .count()
    };
    let mut best = (loc::ENGLISH, score(loc::ENGLISH));
    for l in &loc::LOCALES[1..] {
        let s = score(l);
        if s > best.1 {
            best = (l, s);
        }
    }
    best.0
}

/// Which device and counter each column holds.
struct ColumnMap {
    /// By column index; `None` for the time column and counters oio does not read.
    columns: Vec<Option<Column>>,
    /// Device names, in order of first column.
    names: Vec<String>,
}

/// Maps columns to (device, field); several hosts in one file keep their names apart.
fn map_columns(
    file: &str,
    width: usize,
    paths: &[(usize, CounterPath)],
    locale: &Locale,
    multi_host: bool,
) -> Result<ColumnMap, TelemetryError> {
    let mut columns: Vec<Option<Column>> = (0..width).map(|_| None).collect();
    let mut names: Vec<String> = Vec::new();
    for (i, p) in paths {
        if !loc::is_disk_object(locale, &p.object) && !loc::is_disk_object(loc::ENGLISH, &p.object)
        {
            continue;
        }
        let Some(field) = loc::counter_of(locale, &p.counter) else {
            continue;
        };
        let mut name = match &p.instance {
            Some(inst) => format!("{}({inst})", p.object),
            None => p.object.clone(),
        };
        if multi_host {
            name = format!("\\\\{}\\{name}", p.host);
        }
        let device = match names.iter().position(|n| *n == name) {
            Some(d) => d,
            None => {
                names.push(name);
                names.len() - 1
            }
        };
        columns[*i] = Some(Column { device, field });
    }
    if names.is_empty() {
        return Err(TelemetryError::invalid(
            file,
            format!("no PhysicalDisk or LogicalDisk counters (Disk Reads/sec, Avg. Disk Bytes/Read, Avg. Disk Queue Length...) in the header, in {} ({}) names; record them (oio knows the names in {}; --locale chooses one)", locale.language, locale.tag, loc::tags()),
        ));
    }
    Ok(ColumnMap { columns, names })
}

/// Names every column oio does not read: a disk counter it has no name for (a localized or
/// newer counter: its figures are missing, so it is named one by one with its header), a
/// header that is not a counter path, and (in one line, by object) the other objects.
fn unread_columns(
    cells: &csv::StringRecord,
    paths: &[(usize, CounterPath)],
    map: &ColumnMap,
    locale: &Locale,
    warnings: &mut Vec<String>,
) {
    let mut others: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    let mut disk = Vec::new();
    for (i, p) in paths {
        if map.columns[*i].is_some() {
            continue;
        }
        if loc::is_disk_object(locale, &p.object) || loc::is_disk_object(loc::ENGLISH, &p.object) {
            disk.push(cells.get(*i).unwrap_or("").to_string());
        } else {
            *others.entry(p.object.as_str()).or_default() += 1;
        }
    }
    let languages = if std::ptr::eq(locale, loc::ENGLISH) {
        "English".to_string()
    } else {
        format!("{} or English", locale.language)
    };
    for h in &disk {
        warnings.push(format!(
            "column \"{h}\": a disk counter oio does not recognise (in {languages}), not read"
        ));
    }
    let not_paths: Vec<&str> = (1..cells.len())
        .filter(|i| !paths.iter().any(|(j, _)| j == i))
        .filter_map(|i| cells.get(i))
        .collect();
    for h in not_paths {
        warnings.push(format!(
            "column \"{h}\": not a perfmon counter path (\\\\host\\object(instance)\\counter), not read"
        ));
    }
    if !others.is_empty() {
        warnings.push(format!(
            "{} columns of other objects not read: {}",
            others.values().sum::<usize>(),
            others
                .iter()
                .map(|(o, n)| format!("{o} ({n})"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
}

/// What reading the sample rows has learnt so far.
struct Rows {
    /// Day/month/year order of the time column.
    order: DateOrder,
    /// True once the order is settled (given, or tried on the first row).
    order_checked: bool,
    /// True when some value had a comma.
    comma_seen: bool,
    first_time: Option<f64>,
    prev_time: Option<f64>,
    /// Time between the first two rows, s: the length of the first interval.
    first_gap: Option<f64>,
    rows: usize,
    /// Device samples without rate counters.
    skipped_empty: usize,
}

impl Rows {
    /// Reads one sample row into `obs`.
    #[allow(clippy::too_many_arguments)]
    fn row(
        &mut self,
        file: &str,
        line: usize,
        rec: &csv::StringRecord,
        header: &Header,
        map: &ColumnMap,
        opts: &PerfmonOptions,
        obs: &mut Observation,
    ) -> Result<(), TelemetryError> {
        if rec.len() == 1
            && rec
                .get(0)
                .is_none_or(|c| c.trim().is_empty() || !c.contains(['/', '.', '-']))
        {
            // relog and PAL leave trailer lines without separators; they carry no samples.
            return Ok(());
        }
        if rec.len() < header.cells.len() {
            return Err(TelemetryError::parse(
                file,
                line,
                format!(
                    "row has {} fields but the header has {}; the file looks truncated",
                    rec.len(),
                    header.cells.len()
                ),
            ));
        }
        let tcell = rec.get(0).unwrap_or("");
        self.settle_date_order(tcell, obs);
        let t = self.time(file, line, tcell)?;
        let start = *self.first_time.get_or_insert(t);
        let gap = self.prev_time.map(|p| t - p);
        if let Some(g) = gap {
            if g <= 0.0 {
                return Err(TelemetryError::parse(
                    file,
                    line,
                    format!(
                        "time {tcell:?} is not after the previous row's; expected increasing times"
                    ),
                ));
            }
            self.first_gap.get_or_insert(g);
        }
        self.prev_time = Some(t);
        self.rows += 1;
        let (ivs, seen) = self.cells(file, line, rec, header, map, opts)?;
        for (d, mut iv) in ivs.into_iter().enumerate() {
            // A row with only instantaneous counters (the first one) is not an interval.
            let has_rates =
                iv.read.iops.is_some() || iv.write.iops.is_some() || iv.queue_mean.is_some();
            if !seen[d] || !has_rates {
                if seen[d] || gap.is_some() {
                    self.skipped_empty += 1;
                }
                continue;
            }
            iv.t_s = t - start;
            iv.duration_s = gap.unwrap_or(0.0);
            obs.devices[d].intervals.push(iv);
        }
        Ok(())
    }

    /// The locale's date order is a default: a file whose first date only reads in another
    /// order (English names, British dates; relog's month-first dates on a Japanese system)
    /// is read that way.
    fn settle_date_order(&mut self, tcell: &str, obs: &mut Observation) {
        if self.order_checked {
            return;
        }
        self.order_checked = true;
        let order = self.order;
        let others: &[DateOrder] = match order {
            DateOrder::Mdy => &[DateOrder::Dmy],
            DateOrder::Dmy => &[DateOrder::Mdy],
            DateOrder::Ymd => &[DateOrder::Mdy, DateOrder::Dmy],
        };
        if parse_time(tcell, order).is_some() {
            return;
        }
        if let Some(&o) = others.iter().find(|o| parse_time(tcell, **o).is_some()) {
            obs.envelope.warnings.push(format!(
                "dates read as {} ({tcell:?} is no valid {} date); --date-order overrides",
                o.name(),
                order.name()
            ));
            self.order = o;
        }
    }

    fn time(&self, file: &str, line: usize, tcell: &str) -> Result<f64, TelemetryError> {
        parse_time(tcell, self.order).ok_or_else(|| {
            TelemetryError::parse(
                file,
                line,
                format!(
                    "expected a time (date in {} order, HH:mm:ss.fff; years 1970 to 9999) in the first column, found {tcell:?}; --date-order mdy|dmy|ymd sets the order",
                    self.order.name()
                ),
            )
        })
    }

    /// The row's counters, one interval per device, and which devices had any.
    fn cells(
        &mut self,
        file: &str,
        line: usize,
        rec: &csv::StringRecord,
        header: &Header,
        map: &ColumnMap,
        opts: &PerfmonOptions,
    ) -> Result<(Vec<DeviceInterval>, Vec<bool>), TelemetryError> {
        let mut ivs: Vec<DeviceInterval> = vec![DeviceInterval::default(); map.names.len()];
        let mut seen = vec![false; map.names.len()];
        for (ci, col) in map.columns.iter().enumerate() {
            let Some(col) = col else { continue };
            let cell = rec.get(ci).unwrap_or("");
            if cell.trim().is_empty() {
                continue;
            }
            self.comma_seen |= cell.contains(',');
            let v = parse_value(cell, opts.decimal_comma).ok_or_else(|| {
                TelemetryError::parse(
                    file,
                    line,
                    format!(
                        "column {} ({}): expected a number (decimal {}) or \" \" for a missing sample, found {cell:?}",
                        ci + 1,
                        header.cells.get(ci).unwrap_or(""),
                        match opts.decimal_comma {
                            Some(false) => "point: --decimal point was given",
                            Some(true) => "comma",
                            None => "point or comma",
                        }
                    ),
                )
            })?;
            seen[col.device] = true;
            set_field(&mut ivs[col.device], col.field, v);
        }
        Ok((ivs, seen))
    }

    /// Interval lengths, the start in UTC, the locale as used, and what to check.
    fn finish(
        self,
        obs: &mut Observation,
        file: &str,
        header: &Header,
        locale: &Locale,
        forced: bool,
        opts: &PerfmonOptions,
    ) -> Result<(), TelemetryError> {
        if self.rows == 0 {
            return Err(TelemetryError::invalid(
                file,
                "the header is followed by no samples",
            ));
        }
        // The first sampled row has no preceding sample: give it the usual interval.
        let step = self.first_gap.unwrap_or(1.0);
        for d in &mut obs.devices {
            for iv in &mut d.intervals {
                if iv.duration_s == 0.0 {
                    iv.duration_s = step;
                }
            }
        }
        if let Some(t0) = self.first_time {
            match header.bias {
                Some(b) => obs.start = rfc3339(t0 - step + b as f64 * 60.0),
                None => obs.envelope.warnings.push(
                    "the perfmon header has no time-zone bias; times are local and the start is not known in UTC".into(),
                ),
            }
        }
        let comma = opts
            .decimal_comma
            .unwrap_or(self.comma_seen || locale.decimal_comma);
        obs.source.locale = Some(format!(
            "{} ({}{}; decimal {}; dates {}; {})",
            locale.tag,
            locale.language,
            if forced { ", as given" } else { "" },
            if comma { "comma" } else { "point" },
            self.order.name(),
            match header.delim {
                b'\t' => "tab separated",
                b';' => "semicolon separated",
                _ => "comma separated",
            }
        ));
        if self.skipped_empty > 0 {
            obs.envelope.warnings.push(format!(
                "{} device samples had no rate counters (\" \" in perfmon) and were skipped",
                self.skipped_empty
            ));
        }
        for d in &obs.devices {
            let has_size = d
                .intervals
                .iter()
                .any(|i| i.read.mean_size().is_some() || i.write.mean_size().is_some());
            if !has_size {
                obs.envelope.warnings.push(format!(
                    "{}: no Avg. Disk Bytes/Read|Write nor Disk Read|Write Bytes/sec counters; I/O sizes are unknown",
                    d.name
                ));
            }
        }
        if obs.devices.iter().all(|d| d.name.ends_with("(_Total)")) {
            obs.envelope
                .warnings
                .push("only _Total instances were captured: the disks are summed together".into());
        }
        Ok(())
    }
}

/// Stores one counter value in its interval.
fn set_field(iv: &mut DeviceInterval, field: Field, v: f64) {
    match field {
        Field::ReadIops => iv.read.iops = Some(v),
        Field::WriteIops => iv.write.iops = Some(v),
        Field::ReadBps => iv.read.bytes_per_sec = Some(v),
        Field::WriteBps => iv.write.bytes_per_sec = Some(v),
        Field::ReadSize => iv.read.mean_io_bytes = Some(v),
        Field::WriteSize => iv.write.mean_io_bytes = Some(v),
        Field::ReadLat => iv.read.latency_mean_ns = Some(v * 1e9),
        Field::WriteLat => iv.write.latency_mean_ns = Some(v * 1e9),
        Field::Queue => iv.queue_mean = Some(v),
        Field::ReadQueue => iv.read.queue_mean = Some(v),
        Field::WriteQueue => iv.write.queue_mean = Some(v),
        Field::CurrentQueue => iv.queue_current = Some(v),
        Field::IdlePct => iv.util_pct = Some((100.0 - v).clamp(0.0, 100.0)),
        Field::DiskTimePct => {
            if iv.util_pct.is_none() {
                iv.util_pct = Some(v.clamp(0.0, 100.0));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_paths() {
        let p = parse_counter_path(r"\\SQL01\PhysicalDisk(0 D: E:)\% Disk Time").unwrap();
        assert_eq!(p.host, "SQL01");
        assert_eq!(p.object, "PhysicalDisk");
        assert_eq!(p.instance.as_deref(), Some("0 D: E:"));
        assert_eq!(p.counter, "% Disk Time");
        let p = parse_counter_path(r"\\H\Paging File(\??\C:\pagefile.sys)\% Usage").unwrap();
        assert_eq!(p.instance.as_deref(), Some(r"\??\C:\pagefile.sys"));
        assert_eq!(p.counter, "% Usage");
        let p = parse_counter_path(r"\\H\Process(sqlservr (x64)#1)\ID Process").unwrap();
        assert_eq!(p.object, "Process");
        assert_eq!(p.instance.as_deref(), Some("sqlservr (x64)#1"));
        let p = parse_counter_path(r"\\H\Memory\Available MBytes").unwrap();
        assert_eq!((p.object.as_str(), p.instance), ("Memory", None));
        assert!(parse_counter_path("not a path").is_none());
    }

    #[test]
    fn bias_is_the_last_integer_group() {
        assert_eq!(parse_bias(" (Eastern Daylight Time)(240)"), Some(240));
        assert_eq!(parse_bias(" (Maroc (heure d'été))(-60)"), Some(-60));
        assert_eq!(parse_bias(""), None);
    }

    #[test]
    fn every_unread_column_is_named_with_its_header() {
        let csv = "\"(PDH-CSV 4.0) (UTC)(0)\",\"\\\\H\\PhysicalDisk(0 C:)\\Disk Reads/sec\",\"\\\\H\\PhysicalDisk(0 C:)\\Mittlere Sek./Lesevorgang\",\"\\\\H\\Processor(_Total)\\% Processor Time\",\"\\\\H\\Memory\\Available MBytes\",\"Notes\"\n\"11/21/2026 13:00:00.000\",\"16\",\"0.004\",\"5\",\"900\",\"x\"\n\"11/21/2026 13:00:01.000\",\"16\",\"0.004\",\"5\",\"900\",\"x\"\n";
        let o = parse("p.csv", csv).unwrap();
        let w = o.envelope.warnings.join("\n");
        assert!(
            w.contains(r#"column "\\H\PhysicalDisk(0 C:)\Mittlere Sek./Lesevorgang": a disk counter oio does not recognise"#),
            "{w}"
        );
        assert!(
            w.contains("column \"Notes\": not a perfmon counter path"),
            "{w}"
        );
        assert!(
            w.contains("2 columns of other objects not read: Memory (1), Processor (1)"),
            "{w}"
        );
        assert_eq!(o.devices[0].intervals[0].read.iops, Some(16.0));
    }
}
