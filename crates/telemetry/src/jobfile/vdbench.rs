//! vdbench parameter files: `sd=` (storage), `wd=` (workload) and `rd=` (run) definitions.
//!
//! A definition is `key=value` pairs separated by commas; a value may be a list in
//! parentheses (`xfersize=(4k,70,64k,30)`), and a line starting with `,` continues the one
//! before. `*` and `#` start comments. Each run definition becomes one workload: the
//! workload definitions it names (`wd=wd_*` patterns included) run together weighted by
//! `skew` (the rest shared equally), so their `rdpct` and `xfersize` make the read share and
//! the mix of each direction, and `threads` is the outstanding I/O. Definitions named
//! `wd_<stream>_r` / `wd_<stream>_w` (as `oio export --to vdbench` writes them) become one
//! stream each. Other keys are named in warnings.

use super::{mix_of, name_or, stream, Imported, StreamSpec};
use crate::TelemetryError;
use oio_core::units::parse_size;
use oio_core::workload::{SyncWrites, Workload};

struct Def {
    kind: String,
    line: usize,
    pairs: Vec<(String, String)>,
}

impl Def {
    fn get(&self, k: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(a, _)| a.eq_ignore_ascii_case(k))
            .map(|(_, v)| v.as_str())
    }
    fn name(&self) -> &str {
        self.get(&self.kind.clone()).unwrap_or("")
    }
}

/// Splits `a=1,b=(x,y),c=z` at the commas outside parentheses.
fn pairs(file: &str, n: usize, text: &str) -> Result<Vec<(String, String)>, TelemetryError> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    let mut push = |cur: &mut String| -> Result<(), TelemetryError> {
        let t = std::mem::take(cur);
        let t = t.trim();
        if t.is_empty() {
            return Ok(());
        }
        let (k, v) = t
            .split_once('=')
            .ok_or_else(|| TelemetryError::parse(file, n, format!("{t:?}: expected key=value")))?;
        out.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        Ok(())
    };
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                push(&mut cur)?;
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if depth != 0 {
        return Err(TelemetryError::parse(file, n, "unbalanced parentheses"));
    }
    push(&mut cur)?;
    Ok(out)
}

fn size(file: &str, n: usize, s: &str) -> Result<u64, TelemetryError> {
    parse_size(s.trim()).map_err(|e| TelemetryError::parse(file, n, format!("xfersize: {e}")))
}

/// `4k` or `(4k,70,64k,30)` as (bytes, weight) pairs.
fn xfersize(file: &str, n: usize, v: &str) -> Result<Vec<(u64, f64)>, TelemetryError> {
    let inner = v.trim().trim_start_matches('(').trim_end_matches(')');
    let items: Vec<&str> = inner.split(',').map(str::trim).collect();
    if items.len() == 1 {
        return Ok(vec![(size(file, n, items[0])?, 100.0)]);
    }
    if !items.len().is_multiple_of(2) {
        return Err(TelemetryError::parse(
            file,
            n,
            format!("xfersize={v}: expected one size or (size,percent,size,percent...)"),
        ));
    }
    items
        .chunks(2)
        .map(|c| {
            let w: f64 = c[1].parse().map_err(|_| {
                TelemetryError::parse(
                    file,
                    n,
                    format!("xfersize={v}: {:?} is no percentage", c[1]),
                )
            })?;
            Ok((size(file, n, c[0])?, w))
        })
        .collect()
}

fn number(file: &str, d: &Def, k: &str, default: f64) -> Result<f64, TelemetryError> {
    match d.get(k) {
        None => Ok(default),
        Some(v) => v
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| {
                TelemetryError::parse(
                    file,
                    d.line,
                    format!("{k}={v}: expected a non-negative number"),
                )
            }),
    }
}

/// `wd_*` style patterns: `*` matches any run of characters.
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((a, b)) => name.len() >= a.len() + b.len() && name.starts_with(a) && name.ends_with(b),
    }
}

/// Parses a parameter file into one workload per run definition.
pub fn parse(file: &str, text: &str) -> Result<Vec<Imported>, TelemetryError> {
    let defs = read_defs(file, text)?;
    let general = general_warnings(&defs);
    let wds: Vec<&Def> = defs.iter().filter(|d| d.kind == "wd").collect();
    let rds: Vec<&Def> = defs.iter().filter(|d| d.kind == "rd").collect();
    if rds.is_empty() || wds.is_empty() {
        return Err(TelemetryError::invalid(
            file,
            "expected at least one wd= and one rd= definition (a vdbench parameter file)",
        ));
    }
    // O_DSYNC/O_SYNC in the storage definitions' open flags: every write is synchronous.
    let flags: Vec<Option<SyncWrites>> = defs
        .iter()
        .filter(|d| d.kind == "sd")
        .map(|d| {
            let f = d.get("openflags").unwrap_or("").to_ascii_lowercase();
            let has = |x: &str| f.split([',', '(', ')', ' ']).any(|p| p.trim() == x);
            if has("o_sync") {
                Some(SyncWrites::OSync)
            } else if has("o_dsync") {
                Some(SyncWrites::ODsync)
            } else {
                None
            }
        })
        .collect();
    let sync = match flags.first() {
        Some(f) if flags.iter().all(|x| x == f) => *f,
        _ => None,
    };
    rds.into_iter()
        .map(|rd| {
            let mut i = run_workload(file, rd, &wds, general.clone())?;
            for st in &mut i.workload.streams {
                if st.read_pct.0 < 100.0 {
                    st.sync_writes = sync;
                }
            }
            Ok(i)
        })
        .collect()
}

/// The definitions, continuation lines joined to the one before.
fn read_defs(file: &str, text: &str) -> Result<Vec<Def>, TelemetryError> {
    let mut defs: Vec<Def> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('*') || l.starts_with('#') || l.starts_with("//") {
            continue;
        }
        if let Some(rest) = l.strip_prefix(',') {
            let d = defs.last_mut().ok_or_else(|| {
                TelemetryError::parse(
                    file,
                    n,
                    "a continuation line (starting with ',') before any definition",
                )
            })?;
            d.pairs.extend(pairs(file, n, rest)?);
            continue;
        }
        let p = pairs(file, n, l)?;
        let kind = p[0].0.clone();
        defs.push(Def {
            kind,
            line: n,
            pairs: p,
        });
    }
    Ok(defs)
}

/// What no run imports: storage definitions' keys, other kinds of definitions.
fn general_warnings(defs: &[Def]) -> Vec<String> {
    let mut general = Vec::new();
    for d in defs {
        match d.kind.as_str() {
            "sd" => {
                for (k, v) in &d.pairs {
                    if k != "sd" {
                        general.push(format!(
                            "sd={}: {k}={v} is not imported (the target and its size are given to oio run{})",
                            d.name(),
                            if k == "openflags" { "; oio uses O_DIRECT unless --buffered; o_dsync or o_sync, the same on every sd, become the streams' sync_writes" } else { "" }
                        ));
                    }
                }
            }
            "wd" | "rd" => {}
            k => general.push(format!(
                "line {}: {k}= definitions are not imported",
                d.line
            )),
        }
    }
    general
}

/// Workload definitions run together as one stream (`wd_<stream>_r` and `wd_<stream>_w`),
/// each with its skew.
struct Group<'a> {
    key: String,
    members: Vec<(&'a Def, f64)>,
}

/// One run definition as a workload.
fn run_workload(
    file: &str,
    rd: &Def,
    wds: &[&Def],
    mut warnings: Vec<String>,
) -> Result<Imported, TelemetryError> {
    let wanted: Vec<&str> = rd
        .get("wd")
        .unwrap_or("*")
        .trim_matches(['(', ')'])
        .split(',')
        .map(str::trim)
        .collect();
    let used: Vec<&Def> = wds
        .iter()
        .copied()
        .filter(|w| wanted.iter().any(|p| matches(p, w.name())))
        .collect();
    if used.is_empty() {
        return Err(TelemetryError::parse(
            file,
            rd.line,
            format!(
                "rd={}: wd={} names no workload definition",
                rd.name(),
                wanted.join(",")
            ),
        ));
    }
    let threads = number(file, rd, "threads", 8.0)?.round().max(1.0) as u32;
    for (k, v) in &rd.pairs {
        match k.as_str() {
            "rd" | "wd" | "threads" => {}
            "iorate" if v.eq_ignore_ascii_case("max") => {}
            "elapsed" | "warmup" | "interval" => warnings.push(format!(
                "rd={}: {k}={v} is a run option: give --time/--ramp/--interval to oio run",
                rd.name()
            )),
            _ => warnings.push(format!("rd={}: {k}={v} is not honoured", rd.name())),
        }
    }
    let groups = groups(file, &used, &mut warnings)?;
    let total_skew: f64 = groups
        .iter()
        .flat_map(|g| g.members.iter().map(|x| x.1))
        .sum();
    let mut streams = Vec::new();
    for g in &groups {
        if let Some(s) = group_stream(file, g, threads, total_skew, &mut warnings)? {
            streams.push(s);
        }
    }
    let rname = rd.name();
    let wname = rname.strip_prefix("rd_").unwrap_or(rname);
    Ok(Imported {
        notes: Vec::new(),
        workload: Workload {
            name: name_or(wname, "vdbench"),
            description: format!("vdbench run definition '{rname}' imported by oio from {file}"),
            streams,
        },
        warnings,
    })
}

/// Skews, then `wd_<stream>_r` / `wd_<stream>_w` grouped into one stream; keys oio does not
/// honour go to `warnings`.
fn groups<'a>(
    file: &str,
    used: &[&'a Def],
    warnings: &mut Vec<String>,
) -> Result<Vec<Group<'a>>, TelemetryError> {
    // Skews: given ones, the rest share what is left equally (vdbench's rule).
    let given: f64 = used
        .iter()
        .map(|w| number(file, w, "skew", 0.0))
        .sum::<Result<f64, _>>()?;
    let unskewed = used.iter().filter(|w| w.get("skew").is_none()).count();
    let rest = if unskewed > 0 {
        ((100.0 - given) / unskewed as f64).max(0.0)
    } else {
        0.0
    };
    let mut groups: Vec<Group> = Vec::new();
    for &w in used {
        let skew = match w.get("skew") {
            Some(_) => number(file, w, "skew", 0.0)?,
            None => rest,
        };
        let n = w.name();
        let key = n
            .strip_prefix("wd_")
            .and_then(|x| x.strip_suffix("_r").or_else(|| x.strip_suffix("_w")))
            .unwrap_or(n)
            .to_string();
        match groups.iter_mut().find(|g| g.key == key) {
            Some(g) => g.members.push((w, skew)),
            None => groups.push(Group {
                key,
                members: vec![(w, skew)],
            }),
        }
        for (k, v) in &w.pairs {
            if !matches!(
                k.as_str(),
                "wd" | "sd" | "rdpct" | "xfersize" | "seekpct" | "skew"
            ) {
                warnings.push(format!("wd={n}: {k}={v} is not honoured"));
            }
        }
    }
    Ok(groups)
}

/// `seekpct` as a random share, percent.
fn seek_pct(file: &str, w: &Def, warnings: &mut Vec<String>) -> Result<f64, TelemetryError> {
    Ok(match w.get("seekpct") {
        Some(v)
            if v.eq_ignore_ascii_case("seq")
                || v.eq_ignore_ascii_case("sequential")
                || v == "0" =>
        {
            0.0
        }
        Some(v) if v.eq_ignore_ascii_case("random") || v.eq_ignore_ascii_case("rand") => 100.0,
        Some(v) if v.eq_ignore_ascii_case("eof") => {
            warnings.push(format!(
                "wd={}: seekpct=eof (stop at the end of the target) is read as sequential",
                w.name()
            ));
            0.0
        }
        _ => number(file, w, "seekpct", 100.0)?.min(100.0),
    })
}

/// One group as a stream: its members weighted by skew, its share of the run's threads.
/// `None` when the group's skew is 0.
fn group_stream(
    file: &str,
    g: &Group,
    threads: u32,
    total_skew: f64,
    warnings: &mut Vec<String>,
) -> Result<Option<oio_core::workload::Stream>, TelemetryError> {
    let gskew: f64 = g.members.iter().map(|x| x.1).sum();
    let (mut reads, mut writes, mut rsum, mut rnd) = (Vec::new(), Vec::new(), 0.0, 0.0);
    for (w, skew) in &g.members {
        let rdpct = number(file, w, "rdpct", 100.0)?.min(100.0);
        let seek = seek_pct(file, w, warnings)?;
        let x = xfersize(file, w.line, w.get("xfersize").unwrap_or("4k"))?;
        let xt: f64 = x.iter().map(|p| p.1).sum();
        for (b, p) in &x {
            reads.push((*b, skew * rdpct * p / xt));
            writes.push((*b, skew * (100.0 - rdpct) * p / xt));
        }
        rsum += skew * rdpct;
        rnd += skew * seek;
    }
    if gskew <= 0.0 {
        return Ok(None);
    }
    let first = g.members[0].0.get("seekpct");
    if g.members.iter().any(|(w, _)| w.get("seekpct") != first) {
        warnings.push(format!(
            "stream '{}': workload definitions with different seekpct; oio uses their weighted mean",
            g.key
        ));
    }
    let share = if total_skew > 0.0 {
        gskew / total_skew
    } else {
        1.0
    };
    let outstanding = ((threads as f64 * share).round() as u32).max(1);
    Ok(Some(stream(StreamSpec {
        name: name_or(&g.key, "main"),
        read_pct: rsum / gskew,
        read: mix_of(&reads),
        write: mix_of(&writes),
        random_pct: rnd / gskew,
        outstanding,
        workers: 1,
        align: None,
    })))
}
