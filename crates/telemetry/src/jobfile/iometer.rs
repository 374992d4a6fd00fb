//! IOMeter configuration files (`.icf`, as IOMeter's "Save" writes them).
//!
//! Sections start with a comment line (`'ACCESS SPECIFICATIONS ====`), and each block of
//! values follows the comment line that names its columns. An access specification is
//! `'Access specification name,default assignment` then `NAME,ASSIGNMENT`, then after
//! `'size,% of size,% reads,% random,delay,burst,align,reply` one line per size (1998 files
//! stop after `burst`). Each specification becomes one workload: its lines make the read and
//! write size mixes (a line's `% of size` × `% reads` goes to reads), the read share and the
//! random share; outstanding I/O comes from the workers the specification is assigned to in
//! the manager list (`'Number of outstanding IOs`, `'Assigned access specs`), summed over
//! workers. A transfer delay after each burst, when every line has the same, is oio's think
//! time (`think_time` after every `think_blocks` I/Os). Reply sizes, delays or bursts that
//! differ between lines, per-line random shares that differ, targets and the test setup are
//! named in warnings.

use super::{mix_of, name_or, pct, stream, Imported, StreamSpec};
use crate::TelemetryError;
use oio_core::workload::Workload;
use std::collections::BTreeMap;

struct Line {
    size: u64,
    share: f64,
    reads: f64,
    random: f64,
    delay: u64,
    burst: u64,
    align: u64,
    reply: u64,
}

#[derive(PartialEq)]
enum State {
    None,
    SpecName,
    SpecLines,
    Outstanding,
    Assigned,
}

fn field<T: std::str::FromStr>(
    file: &str,
    n: usize,
    cols: &[&str],
    i: usize,
    what: &str,
) -> Result<T, TelemetryError> {
    let c = cols.get(i).copied().unwrap_or("");
    c.trim().parse().map_err(|_| {
        TelemetryError::parse(
            file,
            n,
            format!(
                "column {} ({what}): expected a non-negative integer, found {c:?}",
                i + 1
            ),
        )
    })
}

/// One access specification as read.
struct Spec {
    name: String,
    /// Line of its name.
    line: usize,
    lines: Vec<Line>,
}

/// Outstanding I/O and workers of the specification's assignments, summed over workers.
#[derive(Clone, Copy)]
struct Assignment {
    outstanding: u32,
    workers: u32,
}

/// What an `.icf` holds that oio reads.
struct Icf {
    specs: Vec<Spec>,
    assigned: BTreeMap<String, Assignment>,
    setup_seen: bool,
    targets_seen: bool,
}

/// Reads the sections: access specifications, and the manager list's assignments.
fn read_icf(file: &str, text: &str) -> Result<Icf, TelemetryError> {
    let mut icf = Icf {
        specs: Vec::new(),
        assigned: BTreeMap::new(),
        setup_seen: false,
        targets_seen: false,
    };
    let mut worker_oio: u32 = 1;
    let mut state = State::None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim().trim_start_matches('\u{feff}');
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('\'') {
            let c = c.trim().to_ascii_lowercase();
            state = if c.starts_with("access specification name") {
                State::SpecName
            } else if c.starts_with("size,% of size") {
                State::SpecLines
            } else if c.starts_with("number of outstanding ios") {
                State::Outstanding
            } else if c.starts_with("assigned access specs") {
                State::Assigned
            } else {
                if c.starts_with("test setup") {
                    icf.setup_seen = true;
                }
                if c.starts_with("target") {
                    icf.targets_seen = true;
                }
                State::None
            };
            continue;
        }
        match state {
            State::SpecName => {
                let name = line.rsplit_once(',').map_or(line, |(a, _)| a);
                icf.specs.push(Spec {
                    name: name.trim().to_string(),
                    line: n,
                    lines: Vec::new(),
                });
                state = State::None;
            }
            State::SpecLines => {
                let l = size_line(file, n, line)?;
                match icf.specs.last_mut() {
                    Some(s) => s.lines.push(l),
                    None => {
                        return Err(TelemetryError::parse(
                            file,
                            n,
                            "a size line before any access specification name",
                        ))
                    }
                }
            }
            State::Outstanding => {
                let cols: Vec<&str> = line.split(',').collect();
                worker_oio = field(file, n, &cols, 0, "number of outstanding IOs")?;
                state = State::None;
            }
            State::Assigned => {
                let e = icf.assigned.entry(line.to_string()).or_insert(Assignment {
                    outstanding: 0,
                    workers: 0,
                });
                e.outstanding = e.outstanding.saturating_add(worker_oio.max(1));
                e.workers += 1;
            }
            State::None => {}
        }
    }
    Ok(icf)
}

/// `size,% of size,% reads,% random,delay,burst[,align,reply]`.
fn size_line(file: &str, n: usize, line: &str) -> Result<Line, TelemetryError> {
    let cols: Vec<&str> = line.split(',').collect();
    if !(6..=8).contains(&cols.len()) {
        return Err(TelemetryError::parse(
            file,
            n,
            format!(
                "{} columns; expected size,% of size,% reads,% random,delay,burst[,align,reply]",
                cols.len()
            ),
        ));
    }
    let l = Line {
        size: field(file, n, &cols, 0, "size")?,
        share: field::<u32>(file, n, &cols, 1, "% of size")? as f64,
        reads: field::<u32>(file, n, &cols, 2, "% reads")? as f64,
        random: field::<u32>(file, n, &cols, 3, "% random")? as f64,
        delay: field(file, n, &cols, 4, "delay")?,
        burst: field(file, n, &cols, 5, "burst")?,
        align: if cols.len() > 6 {
            field(file, n, &cols, 6, "align")?
        } else {
            0
        },
        reply: if cols.len() > 7 {
            field(file, n, &cols, 7, "reply")?
        } else {
            0
        },
    };
    for (v, what) in [
        (l.share, "% of size"),
        (l.reads, "% reads"),
        (l.random, "% random"),
    ] {
        if v > 100.0 {
            return Err(TelemetryError::parse(
                file,
                n,
                format!("{what} is {v}; expected 0 to 100"),
            ));
        }
    }
    if l.size == 0 || l.size > u32::MAX as u64 {
        return Err(TelemetryError::parse(
            file,
            n,
            format!("size {}; expected 1 byte to 4 GiB", l.size),
        ));
    }
    Ok(l)
}

/// Parses an `.icf` file into one workload per access specification.
pub fn parse(file: &str, text: &str) -> Result<Vec<Imported>, TelemetryError> {
    let icf = read_icf(file, text)?;
    if icf.specs.is_empty() {
        return Err(TelemetryError::invalid(
            file,
            "no access specification ('Access specification name,default assignment); expected an IOMeter .icf file",
        ));
    }
    icf.specs
        .iter()
        .map(|s| spec_workload(file, s, &icf))
        .collect()
}

/// Delay and burst as oio's think time: every line's the same transfer delay (ms) after
/// each burst of I/Os, as IOMeter waits; lines that differ are named, as is a reply size.
fn think(
    name: &str,
    lines: &[Line],
    warnings: &mut Vec<String>,
) -> Option<(std::time::Duration, Option<u32>)> {
    for l in lines.iter().filter(|l| l.reply > 0) {
        warnings.push(format!(
            "'{name}': {} B line: reply size {} (network targets) is not honoured",
            l.size, l.reply
        ));
    }
    let first = &lines[0];
    if lines
        .iter()
        .any(|l| (l.delay, l.burst) != (first.delay, first.burst))
    {
        let each: Vec<String> = lines
            .iter()
            .map(|l| format!("{} B: delay {} ms, burst {}", l.size, l.delay, l.burst))
            .collect();
        warnings.push(format!("'{name}': lines have different delays or bursts ({}); oio's think time is one per stream, so none is imported", each.join("; ")));
        return None;
    }
    if first.delay == 0 {
        if first.burst > 1 {
            warnings.push(format!(
                "'{name}': burst length {} without a transfer delay changes nothing",
                first.burst
            ));
        }
        return None;
    }
    let burst = u32::try_from(first.burst).ok().filter(|b| *b > 1);
    Some((std::time::Duration::from_millis(first.delay), burst))
}

/// The lines' alignment when they share one above 0; otherwise oio's default, said so.
fn alignment(name: &str, lines: &[Line], warnings: &mut Vec<String>) -> Option<u64> {
    let aligns: Vec<u64> = lines.iter().map(|l| l.align).collect();
    if aligns.iter().all(|a| *a == aligns[0]) && aligns[0] > 0 {
        return Some(aligns[0]);
    }
    if aligns.iter().any(|a| *a > 0) {
        warnings.push(format!("'{name}': lines have different alignments {aligns:?}; oio aligns every I/O to the smallest size"));
    } else {
        warnings.push(format!(
            "'{name}': align 0 (sector boundaries) is taken as oio's default, the smallest I/O size"
        ));
    }
    None
}

/// One access specification as a workload.
fn spec_workload(file: &str, spec: &Spec, icf: &Icf) -> Result<Imported, TelemetryError> {
    let Spec { name, line, lines } = spec;
    let mut warnings = Vec::new();
    let total: f64 = lines.iter().map(|l| l.share).sum();
    if lines.is_empty() || total == 0.0 {
        return Err(TelemetryError::parse(
            file,
            *line,
            format!("access specification '{name}' has no size lines with a share above 0 %"),
        ));
    }
    if (total - 100.0).abs() > 1e-9 {
        warnings.push(format!(
            "'{name}': the % of size column sums to {total} %, not 100; shares are scaled to it"
        ));
    }
    let reads: Vec<(u64, f64)> = lines.iter().map(|l| (l.size, l.share * l.reads)).collect();
    let writes: Vec<(u64, f64)> = lines
        .iter()
        .map(|l| (l.size, l.share * (100.0 - l.reads)))
        .collect();
    let read_pct = lines.iter().map(|l| l.share * l.reads).sum::<f64>() / total;
    let random_pct = lines.iter().map(|l| l.share * l.random).sum::<f64>() / total;
    if lines.iter().any(|l| l.random != lines[0].random) {
        warnings.push(format!(
            "'{name}': lines have different % random; oio applies their weighted mean ({:.1} %) to every size",
            pct(random_pct)
        ));
    }
    if lines.iter().any(|l| l.reads != lines[0].reads) && lines.len() > 1 {
        warnings.push(format!(
            "'{name}': lines have different % reads; oio keeps the read share ({:.1} %) and the size mix of each direction, not which size goes with which share",
            pct(read_pct)
        ));
    }
    let paced = think(name, lines, &mut warnings);
    let align = alignment(name, lines, &mut warnings);
    let Assignment {
        outstanding,
        workers,
    } = match icf.assigned.get(name) {
        Some(a) => *a,
        None => {
            warnings.push(format!("'{name}' is assigned to no worker in the manager list; outstanding I/O is set to 1"));
            Assignment {
                outstanding: 1,
                workers: 1,
            }
        }
    };
    if icf.setup_seen {
        warnings.push("the test setup (run time, ramp-up, cycling) is not imported: give --time and --ramp to oio run".into());
    }
    if icf.targets_seen {
        warnings.push(
            "the targets of the manager list are not imported: give the target to oio run".into(),
        );
    }
    let mut s = stream(StreamSpec {
        name: "main".into(),
        read_pct,
        read: mix_of(&reads),
        write: mix_of(&writes),
        random_pct,
        outstanding,
        workers,
        align,
    });
    if let Some((delay, burst)) = paced {
        s.think_time = Some(oio_core::units::Secs(delay));
        s.think_blocks = burst;
    }
    Ok(Imported {
        notes: Vec::new(),
        workload: Workload {
            name: name_or(name, "iometer"),
            description: format!(
                "IOMeter access specification '{name}' imported by oio from {file}"
            ),
            streams: vec![s],
        },
        warnings,
    })
}
