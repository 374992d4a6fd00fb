//! What is about to run, printed on stderr before the ramp: the effective workload (after
//! flags and profile are resolved), engine, submission style and targets, so a user can stop
//! a run that is not the one they meant before waiting for it.

use super::style::{DIM, HEAD, WARN};
use oio_core::result::TargetInfo;
use oio_core::text::printable;
use oio_core::units::format_bytes;
use oio_core::workload::{Load, Stream};
use oio_engine::Start;
use std::io::{self, Write};

/// Writes the header of a run that is starting.
pub fn write_header(out: &mut dyn Write, s: &Start<'_>) -> io::Result<()> {
    let targets: Vec<String> = s.targets.iter().map(describe_target).collect();
    writeln!(
        out,
        "{HEAD}{}{HEAD:#} on {}",
        printable(&s.workload.name),
        targets.join(", ")
    )?;
    for st in &s.workload.streams {
        writeln!(out, "  {}", describe_stream(st))?;
        if let Some(set) = stream_settings(st) {
            writeln!(out, "    {set}")?;
        }
    }
    writeln!(
        out,
        "{DIM}  {} engine, submit {}, {}, {} ramp + {}{}{DIM:#}",
        s.engine,
        s.submit.name(),
        if s.direct { "O_DIRECT" } else { "buffered" },
        seconds(s.ramp),
        // With an I/O count the time is a bound, not what will be measured (a replay of a
        // 20 s trace is given 40 s to catch up).
        match s.io_limit {
            Some(n) => format!(
                "measured until {} I/Os are done (at most {})",
                oio_core::units::format_count(n as f64),
                seconds(s.time)
            ),
            None => format!("{} measured", seconds(s.time)),
        },
        if s.virtual_clock {
            " of simulated time (virtual clock: not waited for)"
        } else {
            ""
        }
    )?;
    for w in s.warnings {
        writeln!(out, "  {WARN}note:{WARN:#} {w}")?;
    }
    Ok(())
}

/// `0.3 s`, `5 s`, `120 s`: a tenth of a second where it matters.
fn seconds(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 && s.fract() != 0.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

/// `./t.dat (file, 1 GiB, ext4 on vda QEMU disk)`.
pub fn describe_target(t: &TargetInfo) -> String {
    // An imported result may not know the size (fio's JSON holds none): not "0 B".
    let size = if t.size_bytes == 0 && !t.created_by_oio {
        "size not recorded".to_string()
    } else {
        format_bytes(t.size_bytes as f64)
    };
    let mut s = format!("{} ({}, {size}", printable(&t.path), t.kind);
    if let Some(fs) = &t.filesystem {
        s.push_str(&format!(", {}", fs.fs_type));
    }
    if let Some(d) = &t.device {
        s.push_str(&format!(" on {}", d.parent.as_deref().unwrap_or(&d.name)));
        if let Some(m) = &d.model {
            s.push_str(&format!(" {m}"));
        }
    }
    s.push(')');
    s
}

/// `main: 70 % reads of 8k, writes of 64k:83,512:17, 100 % random, QD 32 over 1 worker`.
fn describe_stream(st: &Stream) -> String {
    let read = st.read_pct.0;
    let mut sizes = Vec::new();
    if read > 0.0 {
        if let Some(m) = st.read_mix() {
            sizes.push(format!("reads {m}"));
        }
    }
    if read < 100.0 {
        if let Some(m) = st.write_mix() {
            sizes.push(format!("writes {m}"));
        }
    }
    let load = match st.load() {
        Load::Closed { outstanding } => format!("QD {outstanding} (closed loop)"),
        Load::Open { cap } => {
            let offered = match &st.rate {
                Some(r) if !r.schedule.is_empty() => {
                    format!("a schedule of {} rates", r.schedule.len())
                }
                Some(r) => {
                    let mut o = format!("{} IOPS {:?}", r.iops, r.arrival).to_lowercase();
                    if let Some(b) = r.burst_iops {
                        o.push_str(&format!(" with bursts of {b} IOPS"));
                    }
                    o
                }
                None => String::from("no rate"),
            };
            format!("offered {offered} (open loop, at most {cap} in flight)")
        }
    };
    format!(
        "{}: {read} % reads; {}; {} % random; {load} over {} worker{}",
        printable(&st.name),
        sizes.join(", "),
        st.random_pct.0,
        st.workers,
        if st.workers == 1 { "" } else { "s" }
    )
}

/// The settings that change what a stream's I/O is beyond sizes and load: access skew,
/// syncs, synchronous writes, think time, write content (None: all defaults).
pub fn stream_settings(st: &Stream) -> Option<String> {
    use oio_core::units::format_duration;
    let mut parts = Vec::new();
    if let Some(d) = st.distribution.as_ref().filter(|_| st.random_pct.0 > 0.0) {
        parts.push(format!("access {d}"));
    }
    let call = if st.fsync.is_some() {
        "fsync"
    } else {
        "fdatasync"
    };
    if let Some(n) = st.fdatasync.or(st.fsync) {
        parts.push(format!(
            "{call} every {n} write{}",
            if n == 1 { "" } else { "s" }
        ));
    }
    if let Some(t) = st.sync_interval {
        parts.push(format!(
            "{call} every {} while writing",
            format_duration(t.0)
        ));
    }
    if let Some(w) = st.sync_writes {
        parts.push(format!("synchronous writes ({})", w.name()));
    }
    if let Some(t) = st.think_time {
        let n = st.think_blocks.unwrap_or(1);
        parts.push(format!(
            "think {} after every {n} I/O{}",
            format_duration(t.0),
            if n == 1 { "" } else { "s" }
        ));
    }
    if let Some(p) = &st.pattern {
        parts.push(format!("data {p}"));
    }
    if let Some(p) = st.trim_pct.filter(|p| p.0 > 0.0) {
        parts.push(format!("trims {} % of operations", p.0));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}
