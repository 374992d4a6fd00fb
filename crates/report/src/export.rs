//! Exporters: a workload as a fio job file, a diskspd command line, a vdbench parameter file.
//!
//! What each tool cannot express is said in comments in the output, never silently dropped:
//! diskspd's command line has one block size for reads and writes, and vdbench's thread count
//! is per run, not per stream. Integer percentages (fio `bssplit`, vdbench `xfersize`) are
//! rounded by largest remainder so they still add up to 100.

use oio_core::sizemix::SizeMix;
use oio_core::units::format_size;
use oio_core::workload::{Extent, Stream, Workload};
use std::fmt::Write as _;

/// Where and how long the exported job runs.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// Target file or device.
    pub target: String,
    /// Size of the target file to create/use, bytes.
    pub size_bytes: u64,
    /// Measured run time, seconds.
    pub runtime_s: u64,
    /// Warm-up before measuring, seconds.
    pub ramp_s: u64,
    /// Bypass the page cache (O_DIRECT, unbuffered).
    pub direct: bool,
    /// fio I/O engine.
    pub fio_ioengine: String,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            target: "oio-test.dat".into(),
            size_bytes: 1 << 30,
            runtime_s: 60,
            ramp_s: 0,
            direct: true,
            fio_ioengine: "libaio".into(),
        }
    }
}

/// A workload that a tool cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot export to {tool}: {why}")]
pub struct ExportError {
    /// The tool.
    pub tool: &'static str,
    /// Why.
    pub why: String,
}

/// Rounds `weights` to integers that sum to `total`, each at least 1 (largest remainder).
pub fn integer_shares(weights: &[f64], total: u32) -> Vec<u32> {
    let sum: f64 = weights.iter().sum();
    if weights.is_empty() || sum <= 0.0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<f64> = weights.iter().map(|w| w / sum * total as f64).collect();
    let mut out: Vec<u32> = exact.iter().map(|e| (e.floor() as u32).max(1)).collect();
    let mut left = total as i64 - out.iter().map(|&v| v as i64).sum::<i64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    while left > 0 {
        for &i in &order {
            if left == 0 {
                break;
            }
            out[i] += 1;
            left -= 1;
        }
    }
    // Taking back (when the minimum of 1 overshot) from the largest shares.
    while left < 0 {
        let i = (0..out.len()).max_by_key(|&i| out[i]).expect("non-empty");
        out[i] -= 1;
        left += 1;
    }
    out
}

fn fio_split(mix: &SizeMix) -> String {
    let f = mix.fractions();
    let pcts = integer_shares(&f.iter().map(|x| x.1).collect::<Vec<_>>(), 100);
    f.iter()
        .zip(pcts)
        .map(|((b, _), p)| format!("{}/{p}", format_size(*b)))
        .collect::<Vec<_>>()
        .join(":")
}

fn fio_extent(e: Extent) -> String {
    match e {
        Extent::Bytes(b) => format_size(b),
        Extent::Percent(p) => format!("{p}%"),
    }
}

/// Read share as the integer fio and diskspd take, kept off 0 and 100 when both directions
/// have I/O.
fn int_read_pct(s: &Stream) -> u32 {
    let r = s.read_pct.0;
    if r <= 0.0 {
        0
    } else if r >= 100.0 {
        100
    } else {
        (r.round() as u32).clamp(1, 99)
    }
}

/// A fio job file: one job per stream, all running together.
pub fn to_fio(w: &Workload, o: &ExportOptions) -> Result<String, ExportError> {
    w.check().map_err(|why| ExportError { tool: "fio", why })?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "; fio job file exported by oio from workload '{}'",
        w.name
    );
    for line in wrap(&w.description, 96) {
        let _ = writeln!(out, "; {line}");
    }
    let _ = writeln!(
        out,
        "; run: fio THIS_FILE --output-format=json+ --output=result.json"
    );
    let _ = writeln!(out, "[global]");
    let _ = writeln!(out, "filename={}", o.target);
    let _ = writeln!(out, "size={}", format_size(o.size_bytes));
    let _ = writeln!(out, "ioengine={}", o.fio_ioengine);
    let _ = writeln!(out, "direct={}", u8::from(o.direct));
    let _ = writeln!(out, "time_based=1");
    let _ = writeln!(out, "runtime={}", o.runtime_s);
    if o.ramp_s > 0 {
        let _ = writeln!(out, "ramp_time={}", o.ramp_s);
    }
    let _ = writeln!(
        out,
        "; without norandommap fio trims mixed-size random I/Os to the holes of its block map"
    );
    let _ = writeln!(out, "norandommap=1");
    let _ = writeln!(out, "randrepeat=0");
    for s in &w.streams {
        let rp = int_read_pct(s);
        let random = s.random_pct.0;
        let _ = writeln!(out, "\n[{}]", s.name);
        let rw = match (rp, random > 0.0) {
            (100, true) => "randread",
            (100, false) => "read",
            (0, true) => "randwrite",
            (0, false) => "write",
            (_, true) => "randrw",
            (_, false) => "rw",
        };
        let _ = writeln!(out, "rw={rw}");
        if rp != 0 && rp != 100 {
            let _ = writeln!(out, "rwmixread={rp}");
        }
        let read = s.read_mix().filter(|_| rp > 0).map(fio_split);
        let write = s.write_mix().filter(|_| rp < 100).map(fio_split);
        let bssplit = match (read, write) {
            (Some(r), Some(w)) => format!("{r},{w}"),
            (Some(r), None) => r,
            (None, Some(w)) => format!(",{w}"),
            (None, None) => unreachable!("check() guarantees a size mix"),
        };
        let _ = writeln!(out, "bssplit={bssplit}");
        if random > 0.0 && random < 100.0 {
            let _ = writeln!(out, "percentage_random={}", random.round() as u32);
        }
        let workers = s.workers.max(1);
        let depth = s.outstanding.unwrap_or(1).div_ceil(workers).max(1);
        let _ = writeln!(out, "iodepth={depth}");
        if workers > 1 {
            let _ = writeln!(out, "numjobs={workers}");
            let _ = writeln!(out, "group_reporting=1");
        }
        if let Some(a) = s.align {
            let _ = writeln!(out, "blockalign={}", format_size(a.0));
        }
        if !s.region.is_whole() {
            let _ = writeln!(out, "offset={}", fio_extent(s.region.offset));
            let _ = writeln!(out, "size={}", fio_extent(s.region.length));
        }
    }
    Ok(out)
}

/// A diskspd command line per stream (Windows `cmd` syntax).
pub fn to_diskspd(w: &Workload, o: &ExportOptions) -> Result<String, ExportError> {
    w.check().map_err(|why| ExportError {
        tool: "diskspd",
        why,
    })?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "REM diskspd command exported by oio from workload '{}'",
        w.name
    );
    for s in &w.streams {
        let rp = int_read_pct(s);
        // One -b for everything: the size with the largest share of all I/Os.
        let mut all: Vec<(u64, f64)> = Vec::new();
        let mut add = |m: Option<&SizeMix>, share: f64| {
            for (b, f) in m.map(SizeMix::fractions).unwrap_or_default() {
                match all.iter_mut().find(|x| x.0 == b) {
                    Some(x) => x.1 += f * share,
                    None => all.push((b, f * share)),
                }
            }
        };
        add(s.read_mix().filter(|_| rp > 0), rp as f64 / 100.0);
        add(s.write_mix().filter(|_| rp < 100), 1.0 - rp as f64 / 100.0);
        all.sort_by(|a, b| b.1.total_cmp(&a.1));
        let (bs, share) = all[0];
        if all.len() > 1 {
            let mix = all
                .iter()
                .map(|(b, f)| format!("{} {:.0}%", format_size(*b), f * 100.0))
                .collect::<Vec<_>>()
                .join(", ");
            let _ = writeln!(
                out,
                "REM stream '{}': diskspd's command line takes one block size for reads and writes; the mix is {mix}. Using {} ({:.0} % of I/Os). Use an XML profile with one target per size for the full mix.",
                s.name,
                format_size(bs),
                share * 100.0
            );
        }
        let threads = s.workers.max(1);
        let per_thread = s.outstanding.unwrap_or(1).div_ceil(threads).max(1);
        let random = if s.random_pct.0 >= 50.0 { " -r" } else { "" };
        if s.random_pct.0 > 0.0 && s.random_pct.0 < 100.0 {
            let _ = writeln!(
                out,
                "REM stream '{}': {} % random is rounded to {}",
                s.name,
                s.random_pct,
                if random.is_empty() {
                    "sequential"
                } else {
                    "random"
                }
            );
        }
        let caching = if o.direct { " -Sh" } else { "" };
        let _ = writeln!(
            out,
            "diskspd.exe -c{} -d{} -W{}{random} -b{} -w{} -t{threads} -o{per_thread}{caching} -L -D {}",
            diskspd_size(o.size_bytes),
            o.runtime_s,
            o.ramp_s,
            diskspd_size(bs),
            100 - rp,
            o.target
        );
    }
    Ok(out)
}

/// diskspd sizes: bytes, or K/M/G suffixes when exact.
fn diskspd_size(b: u64) -> String {
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}

/// A vdbench parameter file: one workload definition per stream and direction, weighted by
/// `skew`, all in one run definition.
pub fn to_vdbench(w: &Workload, o: &ExportOptions) -> Result<String, ExportError> {
    w.check().map_err(|why| ExportError {
        tool: "vdbench",
        why,
    })?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "* vdbench parameter file exported by oio from workload '{}'",
        w.name
    );
    let total_oio: u32 = w.streams.iter().map(|s| s.outstanding.unwrap_or(1)).sum();
    if w.streams.len() > 1 {
        let _ = writeln!(
            out,
            "* vdbench runs all workload definitions at one thread count ({total_oio}); streams are weighted by skew = their share of outstanding I/O"
        );
    }
    let open = if o.direct { ",openflags=o_direct" } else { "" };
    let _ = writeln!(out, "sd=sd1,lun={},size={}{open}", o.target, o.size_bytes);
    let mut wds: Vec<(String, String, f64)> = Vec::new();
    for s in &w.streams {
        let stream_share = s.outstanding.unwrap_or(1) as f64 / total_oio as f64;
        let rp = s.read_pct.0 / 100.0;
        for (dir, mix, share, rdpct) in [
            ("r", s.read_mix(), rp, 100),
            ("w", s.write_mix(), 1.0 - rp, 0),
        ] {
            let Some(mix) = mix.filter(|_| share > 0.0) else {
                continue;
            };
            let f = mix.fractions();
            let pcts = integer_shares(&f.iter().map(|x| x.1).collect::<Vec<_>>(), 100);
            let xfer = f
                .iter()
                .zip(pcts)
                .map(|((b, _), p)| format!("{b},{p}"))
                .collect::<Vec<_>>()
                .join(",");
            let xfer = if f.len() == 1 {
                f[0].0.to_string()
            } else {
                format!("({xfer})")
            };
            wds.push((
                format!("wd_{}_{dir}", sanitize(&s.name)),
                format!(
                    "sd=sd1,rdpct={rdpct},xfersize={xfer},seekpct={}",
                    s.random_pct.0.round() as u32
                ),
                share * stream_share,
            ));
        }
    }
    let skews = integer_shares(&wds.iter().map(|x| x.2).collect::<Vec<_>>(), 100);
    for ((name, body, _), skew) in wds.iter().zip(skews) {
        if wds.len() > 1 {
            let _ = writeln!(out, "wd={name},{body},skew={skew}");
        } else {
            let _ = writeln!(out, "wd={name},{body}");
        }
    }
    let warmup = if o.ramp_s > 0 {
        format!(",warmup={}", o.ramp_s)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "rd=rd_{},wd=wd_*,iorate=max,elapsed={},interval=1{warmup},threads={total_oio}",
        sanitize(&w.name),
        o.runtime_s
    );
    Ok(out)
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPDB: &str = r#"
name = "tempdb"
description = "seed 002"
[[stream]]
read_pct = 2
read_bs = "64k:68,8k:32"
write_bs = "64k:83,512:17"
outstanding = 600
"#;

    fn tempdb() -> Workload {
        Workload::from_toml(TEMPDB, "t").unwrap()
    }

    #[test]
    fn shares_sum_to_the_total() {
        assert_eq!(integer_shares(&[1.0, 1.0, 1.0], 100), vec![34, 33, 33]);
        assert_eq!(integer_shares(&[68.0, 32.0], 100), vec![68, 32]);
        assert_eq!(integer_shares(&[99.9, 0.05, 0.05], 100), vec![98, 1, 1]);
        assert_eq!(integer_shares(&[2.0, 98.0], 100), vec![2, 98]);
    }

    #[test]
    fn fio_job_for_seed_002() {
        let f = to_fio(&tempdb(), &ExportOptions::default()).unwrap();
        for want in [
            "rw=randrw\n",
            "rwmixread=2\n",
            "bssplit=64k/68:8k/32,64k/83:512/17\n",
            "iodepth=600\n",
            "direct=1\n",
            "runtime=60\n",
            "size=1g\n",
            "norandommap=1\n",
            "[main]\n",
        ] {
            assert!(f.contains(want), "missing {want:?} in\n{f}");
        }
        assert!(
            !f.contains("percentage_random"),
            "100 % random is fio's randrw default"
        );
    }

    #[test]
    fn fio_sequential_and_partial_random_and_workers() {
        let mut w = tempdb();
        w.streams[0].random_pct = oio_core::workload::Percent(0.0);
        w.streams[0].read_pct = oio_core::workload::Percent(100.0);
        let f = to_fio(&w, &ExportOptions::default()).unwrap();
        assert!(
            f.contains("rw=read\n")
                && f.contains("bssplit=64k/68:8k/32\n")
                && !f.contains("rwmixread"),
            "{f}"
        );
        w.streams[0].random_pct = oio_core::workload::Percent(30.0);
        w.streams[0].workers = 4;
        let f = to_fio(&w, &ExportOptions::default()).unwrap();
        assert!(
            f.contains("rw=randread\n") && f.contains("percentage_random=30\n"),
            "{f}"
        );
        assert!(
            f.contains("iodepth=150\n") && f.contains("numjobs=4\n"),
            "{f}"
        );
    }

    #[test]
    fn diskspd_states_its_single_block_size() {
        let d = to_diskspd(&tempdb(), &ExportOptions::default()).unwrap();
        let cmd = d.lines().find(|l| l.starts_with("diskspd.exe")).unwrap();
        assert_eq!(
            cmd,
            "diskspd.exe -c1G -d60 -W0 -r -b64K -w98 -t1 -o600 -Sh -L -D oio-test.dat"
        );
        assert!(d.contains("one block size") && d.contains("512"), "{d}");
    }

    #[test]
    fn vdbench_one_wd_per_direction_with_skew() {
        let v = to_vdbench(&tempdb(), &ExportOptions::default()).unwrap();
        assert!(
            v.contains("sd=sd1,lun=oio-test.dat,size=1073741824,openflags=o_direct\n"),
            "{v}"
        );
        assert!(
            v.contains(
                "wd=wd_main_r,sd=sd1,rdpct=100,xfersize=(65536,68,8192,32),seekpct=100,skew=2\n"
            ),
            "{v}"
        );
        assert!(
            v.contains(
                "wd=wd_main_w,sd=sd1,rdpct=0,xfersize=(65536,83,512,17),seekpct=100,skew=98\n"
            ),
            "{v}"
        );
        assert!(
            v.contains("rd=rd_tempdb,wd=wd_*,iorate=max,elapsed=60,interval=1,threads=600\n"),
            "{v}"
        );
    }
}
