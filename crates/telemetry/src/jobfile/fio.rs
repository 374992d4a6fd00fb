//! fio job files (`.fio` INI text) as oio workloads: one stream per job.
//!
//! fio's rules that matter here: a `[global]` section's options apply to the jobs defined
//! after it, and a job's own options override them; jobs run at the same time unless
//! `stonewall`/`wait_for` say otherwise (oio runs every stream at once, and says so). `size`
//! in `[global]` is read as the size of the target (oio's `--size`), `size` and `offset` in a
//! job as the region that job touches — which is how `oio export --to fio` writes them, so
//! export → import gives the same workload.

use super::Imported;
use crate::TelemetryError;
use oio_core::sizemix::{SizeMix, SizeShare};
use oio_core::units::{parse_size, Secs};
use oio_core::workload::{
    Arrival, DataContent, Distribution, Extent, Percent, Rate, Region, Stream, SyncWrites, Workload,
};
use std::path::Path;

/// Largest job file read (1 MiB): real ones are a few KiB.
const MAX_JOB_FILE: u64 = 1 << 20;

/// Most jobs in one file (each becomes a stream with its own threads).
const MAX_JOBS: usize = 256;

/// Reads a fio job file.
pub fn load(path: &Path) -> Result<Imported, TelemetryError> {
    let file = path.display().to_string();
    let bytes = match oio_core::input::read_bytes(path, MAX_JOB_FILE, "a fio job file") {
        Err(oio_core::input::InputError::TooLarge { .. }) => {
            return Err(TelemetryError::Invalid {
                file,
                message: format!(
                    "larger than {} KiB; a fio job file is a short INI text",
                    MAX_JOB_FILE / 1024
                ),
            })
        }
        r => r?,
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        TelemetryError::Parse {
            file: file.clone(),
            line: good.iter().filter(|b| **b == b'\n').count() + 1,
            message: "not UTF-8 text; expected a fio job file".into(),
        }
    })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".into());
    parse(&text, &file, &stem)
}

/// One `key[=value]` line.
#[derive(Clone, Debug)]
struct Opt {
    key: String,
    value: String,
    line: usize,
    global: bool,
}

struct Job {
    name: String,
    line: usize,
    opts: Vec<Opt>,
}

/// A job file as read: the name and description oio's export put in its header comments,
/// and the jobs, each with the global options before it and its own.
struct JobFile {
    name: Option<String>,
    description: Vec<String>,
    jobs: Vec<Job>,
}

/// Parses job-file text; `file` names it in messages, `default_name` names the workload
/// when the file does not (oio's own exports carry the workload's name in a comment).
pub fn parse(text: &str, file: &str, default_name: &str) -> Result<Imported, TelemetryError> {
    let JobFile {
        name,
        mut description,
        jobs,
    } = read_sections(text, file)?;
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    let mut streams: Vec<Stream> = Vec::new();
    let mut told: Vec<usize> = Vec::new();
    for job in &jobs {
        let mut b = JobBuilder::default();
        for o in &job.opts {
            let msg = b.apply(o).map_err(|m| TelemetryError::Parse {
                file: file.to_string(),
                line: o.line,
                message: format!("{}={}: {m}", o.key, o.value),
            })?;
            // An option set in [global] is reported once, not once per job.
            if let Some(m) = msg {
                if !told.contains(&o.line) {
                    told.push(o.line);
                    let at = format!("{file}:{}: {}", o.line, shown_opt(o));
                    match m {
                        Said::Note(m) => notes.push(format!("{at}: {m}")),
                        Said::Warn(m) => warnings.push(format!("{at}: {m}")),
                    }
                }
            }
        }
        if let Some(rw) = &b.rw {
            let read_pct = match rw.as_str() {
                "read" | "randread" => 100.0,
                "write" | "randwrite" => 0.0,
                _ => b.rwmixread.unwrap_or(50.0),
            };
            match b.rate_shape(read_pct).1 {
                Some(Said::Note(m)) => {
                    notes.push(format!("{file}:{}: [{}] {m}", job.line, job.name))
                }
                Some(Said::Warn(m)) => {
                    warnings.push(format!("{file}:{}: [{}] {m}", job.line, job.name))
                }
                None => {}
            }
        }
        match b.stream(&job.name) {
            Ok(s) => streams.push(uniquely_named(s, &streams)),
            Err(Skip(why)) => warnings.push(format!(
                "{file}:{}: job [{}] left out: {why}",
                job.line, job.name
            )),
        }
        if let Some(desc) = b.description.filter(|_| description.is_empty()) {
            description.push(desc);
        }
    }
    if streams.is_empty() {
        return Err(TelemetryError::Invalid {
            file: file.to_string(),
            message: format!("no job oio can run: {}", warnings.join("; ")),
        });
    }
    let workload = Workload {
        name: name.unwrap_or_else(|| default_name.to_string()),
        description: description.join("\n"),
        streams,
    };
    workload.check().map_err(|m| TelemetryError::Invalid {
        file: file.to_string(),
        message: m.to_string(),
    })?;
    Ok(Imported {
        workload,
        notes,
        warnings,
    })
}

/// `s`, renamed `NAME-2`, `NAME-3`… when a stream before it has its name.
fn uniquely_named(mut s: Stream, before: &[Stream]) -> Stream {
    let mut n = 2;
    let base = s.name.clone();
    while before.iter().any(|o| o.name == s.name) {
        s.name = format!("{base}-{n}");
        n += 1;
    }
    s
}

/// Reads the header comments and the sections: `[global]` options are copied into every
/// job defined after them.
fn read_sections(text: &str, file: &str) -> Result<JobFile, TelemetryError> {
    let err = |line: usize, message: String| TelemetryError::Parse {
        file: file.to_string(),
        line,
        message,
    };
    let mut out = JobFile {
        name: None,
        description: Vec::new(),
        jobs: Vec::new(),
    };
    let mut in_header = true;
    let mut globals: Vec<Opt> = Vec::new();
    let mut in_global = false;
    let mut seen_section = false;
    for (i, raw) in text
        .strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .enumerate()
    {
        let line_no = i + 1;
        let line = raw.trim();
        if let Some(c) = line.strip_prefix(';').or_else(|| line.strip_prefix('#')) {
            if in_header {
                in_header = header_comment(c.trim(), &mut out);
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        in_header = false;
        if let Some(section) = line.strip_prefix('[') {
            let section = section.strip_suffix(']').ok_or_else(|| {
                err(
                    line_no,
                    format!("'{line}': expected a section such as [job1]"),
                )
            })?;
            seen_section = true;
            // fio takes every section whose name starts with "global" as global.
            in_global = section.starts_with("global");
            if !in_global {
                if out.jobs.len() == MAX_JOBS {
                    return Err(err(line_no, format!("more than {MAX_JOBS} jobs")));
                }
                out.jobs.push(Job {
                    name: section.trim().to_string(),
                    line: line_no,
                    opts: globals.clone(),
                });
            }
            continue;
        }
        if !seen_section {
            return Err(err(
                line_no,
                format!("'{line}': expected a section such as [global] or [job1] first"),
            ));
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (line, ""),
        };
        if key.is_empty() || key.contains(char::is_whitespace) && !key.starts_with("include") {
            return Err(err(line_no, format!("'{line}': expected option=value")));
        }
        let opt = Opt {
            key: key.to_ascii_lowercase(),
            value: value.to_string(),
            line: line_no,
            global: in_global,
        };
        if in_global {
            globals.push(opt);
        } else if let Some(j) = out.jobs.last_mut() {
            j.opts.push(opt);
        }
    }
    if out.jobs.is_empty() {
        return Err(TelemetryError::Invalid {
            file: file.to_string(),
            message: "no job section: expected at least one [job] after [global]".into(),
        });
    }
    Ok(out)
}

/// One comment of the header oio's export writes (the workload's name, its description, then
/// the fidelity line or the fio command line that ends it); false once the header has ended.
fn header_comment(c: &str, out: &mut JobFile) -> bool {
    if let Some(n) = c
        .strip_prefix("fio job file exported by oio from workload '")
        .and_then(|n| n.strip_suffix('\''))
    {
        out.name = Some(n.to_string());
    } else if c.starts_with("run: fio ") || c.starts_with("fidelity: ") {
        // The export's fidelity lines follow the description: they describe the file.
        return false;
    } else if out.name.is_some() {
        out.description.push(c.to_string());
    }
    true
}

fn shown_opt(o: &Opt) -> String {
    if o.value.is_empty() {
        o.key.clone()
    } else {
        format!("{}={}", o.key, o.value)
    }
}

enum Said {
    Note(String),
    Warn(String),
}

struct Skip(String);

/// A job's options as oio reads them; the last value given wins, as in fio.
#[derive(Default)]
struct JobBuilder {
    rw: Option<String>,
    rwmixread: Option<f64>,
    bs: Option<String>,
    bssplit: Option<String>,
    iodepth: Option<u32>,
    numjobs: Option<u32>,
    percentage_random: Option<f64>,
    align: Option<u64>,
    offset: Option<Extent>,
    size: Option<Extent>,
    distribution: Option<Distribution>,
    compress: Option<f64>,
    dedupe: Option<f64>,
    /// fio's rate per job for reads and writes.
    rate_iops: Option<[Option<f64>; 2]>,
    /// fio's rate per job in bytes per second for reads and writes.
    rate_bytes: Option<[Option<f64>; 2]>,
    poisson: bool,
    fdatasync: Option<u32>,
    fsync: Option<u32>,
    sync_writes: Option<SyncWrites>,
    thinktime: Option<Secs>,
    thinktime_blocks: Option<u32>,
    pattern: Option<DataContent>,
    description: Option<String>,
}

fn pct(v: &str) -> Result<f64, String> {
    match v.trim().trim_end_matches('%').parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err("expected a percentage from 0 to 100".into()),
    }
}

fn count(v: &str, max: u32) -> Result<u32, String> {
    match v.trim().parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("expected a whole number from 1 to {max}")),
    }
}

/// fio's times are seconds without a unit; oio's flags want one.
fn secs(v: &str) -> String {
    if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()) {
        format!("{v}s")
    } else {
        v.to_string()
    }
}

fn bool_opt(v: &str) -> bool {
    !matches!(v.trim(), "0" | "false")
}

/// A rate to 3 decimals: 12,288,000 B/s of a 10 KiB mean is 1200 I/Os/s, not 1199.9999.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// fio's per-direction form `read,write[,trim]`: the values oio uses, with a warning when
/// the directions differ and oio can take one value only.
fn first_of(v: &str) -> (&str, bool) {
    let mut parts = v.split(',').map(str::trim).filter(|p| !p.is_empty());
    let first = parts.next().unwrap_or("");
    (first, parts.any(|p| p != first))
}

impl JobBuilder {
    /// Takes one option; says what the user must know about it (run setting or not honoured).
    /// The options are taken in phases: the access shape here, then what writes do and how
    /// the stream paces ([`JobBuilder::apply_writes`]), then fio's run settings
    /// ([`run_setting`]); one long match would hide which is which.
    fn apply(&mut self, o: &Opt) -> Result<Option<Said>, String> {
        let v = o.value.as_str();
        let note = |m: &str| Ok(Some(Said::Note(m.to_string())));
        let warn = |m: &str| Ok(Some(Said::Warn(m.to_string())));
        match o.key.as_str() {
            "rw" | "readwrite" => {
                let (pattern, modifier) = v.split_once(':').unwrap_or((v, ""));
                self.rw = Some(pattern.trim().to_ascii_lowercase());
                if !modifier.is_empty() {
                    return warn("the ':N' offset modifier is not honoured");
                }
            }
            "rwmixread" => self.rwmixread = Some(pct(v)?),
            "rwmixwrite" => self.rwmixread = Some(100.0 - pct(v)?),
            "bs" | "blocksize" => {
                self.bs = Some(v.to_string());
                self.mixes()?;
            }
            "bssplit" => {
                self.bssplit = Some(v.to_string());
                self.mixes()?;
            }
            "iodepth" => self.iodepth = Some(count(v, 65536)?),
            "numjobs" => self.numjobs = Some(count(v, 1024)?),
            "percentage_random" => {
                let (p, differ) = first_of(v);
                self.percentage_random = Some(pct(p)?);
                if differ {
                    return warn("per-direction random shares: oio uses the read value for all");
                }
            }
            "blockalign" | "ba" => {
                let (a, differ) = first_of(v);
                self.align = Some(parse_size(a).map_err(|e| e.to_string())?);
                if differ {
                    return warn("per-direction alignment: oio uses the read value for all");
                }
            }
            "offset" => self.offset = Some(v.parse::<Extent>().map_err(|e| e.to_string())?),
            "size" if o.global => {
                return note(&format!("the size of the target: run with --size {v}"));
            }
            "size" => self.size = Some(v.parse::<Extent>().map_err(|e| e.to_string())?),
            "random_distribution" => {
                let (d, differ) = first_of(v);
                if d.split(':').count() > 2 && !d.starts_with("zoned") {
                    return Err("a distribution centre (third field) is not supported".into());
                }
                self.distribution = Some(d.parse::<Distribution>().map_err(|e| e.to_string())?);
                if differ {
                    return warn("per-direction distributions: oio uses the read one for all");
                }
            }
            "buffer_compress_percentage" => self.compress = Some(pct(v)?),
            "dedupe_percentage" => self.dedupe = Some(pct(v)?),
            "rate_iops" => {
                // fio's read,write[,trim]: one value limits each direction to it.
                let parts: Vec<&str> = v.split(',').map(str::trim).collect();
                let mut dirs = [None, None];
                for (i, p) in parts.iter().take(2).enumerate() {
                    if !p.is_empty() {
                        dirs[i] = Some(
                            p.parse::<f64>()
                                .ok()
                                .filter(|x| x.is_finite() && *x > 0.0)
                                .ok_or("expected I/Os per second")?,
                        );
                    }
                }
                if parts.len() == 1 {
                    dirs[1] = dirs[0];
                }
                self.rate_iops = Some(dirs);
            }
            "rate" => {
                // Bytes per second per direction (fio's read,write; one value for each).
                let parts: Vec<&str> = v.split(',').map(str::trim).collect();
                let mut dirs = [None, None];
                for (i, p) in parts.iter().take(2).enumerate() {
                    if !p.is_empty() {
                        dirs[i] = Some(
                            parse_size(p)
                                .ok()
                                .filter(|x| *x > 0)
                                .ok_or("expected bytes per second, such as 12m")?
                                as f64,
                        );
                    }
                }
                if parts.len() == 1 {
                    dirs[1] = dirs[0];
                }
                self.rate_bytes = Some(dirs);
            }
            "rate_process" => match v {
                "poisson" => self.poisson = true,
                "linear" => self.poisson = false,
                _ => return Err("expected linear or poisson".into()),
            },
            _ => return self.apply_writes(o),
        }
        Ok(None)
    }

    /// Options of writes (sync, content) and pacing (think time); else a run setting.
    fn apply_writes(&mut self, o: &Opt) -> Result<Option<Said>, String> {
        let v = o.value.as_str();
        let note = |m: &str| Ok(Some(Said::Note(m.to_string())));
        let warn = |m: &str| Ok(Some(Said::Warn(m.to_string())));
        match o.key.as_str() {
            "description" => self.description = Some(v.trim_matches('"').to_string()),
            "fdatasync" => {
                self.fdatasync = match v.trim() {
                    "0" => None,
                    n => Some(count(n, u32::MAX)?),
                }
            }
            "fsync" => {
                self.fsync = match v.trim() {
                    "0" => None,
                    n => Some(count(n, u32::MAX)?),
                }
            }
            "sync" => {
                self.sync_writes = match v.trim().to_ascii_lowercase().as_str() {
                    "0" | "none" | "false" => None,
                    "1" | "sync" | "true" => Some(SyncWrites::OSync),
                    "dsync" => Some(SyncWrites::ODsync),
                    _ => return Err("expected none, sync, dsync, 0 or 1".into()),
                }
            }
            "fsync_on_close" | "end_fsync" => {
                return warn(
                    "not honoured: oio syncs during the run (fsync=N, fdatasync=N), not at its end",
                )
            }
            "thinktime" => {
                // fio reads a bare number as microseconds.
                let t = v.trim();
                let t = if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
                    format!("{t}us")
                } else {
                    t.to_string()
                };
                let d = oio_core::units::parse_duration(&t).map_err(|e| e.to_string())?;
                self.thinktime = (!d.is_zero()).then_some(Secs(d));
            }
            "thinktime_blocks" => self.thinktime_blocks = Some(count(v, u32::MAX)?),
            "thinktime_spin" => {
                return warn(
                    "not honoured: oio sleeps through all of the think time, it never spins",
                )
            }
            "zero_buffers" => {
                if bool_opt(v) {
                    self.pattern = Some(DataContent::Zero);
                }
            }
            "buffer_pattern" => {
                let p = v.trim().trim_matches('"');
                if !(p.starts_with("0x") || p.starts_with("0X")) {
                    return Err("oio takes a hex pattern such as 0xdeadbeef (not a string or decimal number)".into());
                }
                self.pattern = Some(
                    format!("fixed:{p}")
                        .parse::<DataContent>()
                        .map_err(|e| e.to_string())?,
                );
            }
            "refill_buffers" | "scramble_buffers" => {
                return note("oio makes every written 4 KiB block unique already")
            }
            _ => return run_setting(o),
        }
        Ok(None)
    }
}

/// fio's settings of the run rather than the workload: what to give oio instead, or that
/// oio does not honour it.
fn run_setting(o: &Opt) -> Result<Option<Said>, String> {
    let v = o.value.as_str();
    let note = |m: &str| Ok(Some(Said::Note(m.to_string())));
    let warn = |m: &str| Ok(Some(Said::Warn(m.to_string())));
    match o.key.as_str() {
        "name" => note("oio names streams after their [section]"),
        "filename" | "directory" | "filename_format" => {
            note("give the target on the command line (oio run ... PATH)")
        }
        "ioengine" => note("oio picks its engine with --engine (io_uring, sync, null)"),
        "direct" | "buffered" => {
            let cached = (o.key == "direct") != bool_opt(v);
            note(if cached {
                "page cache I/O: run with --buffered"
            } else {
                "O_DIRECT is oio's default"
            })
        }
        "runtime" | "timeout" => note(&format!("run with --time {}", secs(v))),
        "ramp_time" => note(&format!("run with --ramp {}", secs(v))),
        "number_ios" => note(&format!("run with --ios {v}")),
        "time_based" | "group_reporting" | "norandommap" | "randrepeat" | "thread"
        | "output-format" | "output" | "invalidate" | "random_generator" | "kb_base"
            if o.key != "kb_base" || v.trim() == "1024" =>
        {
            note("a fio run setting with no effect on the workload")
        }
        "filesize" if o.global => note(&format!("the size of the target: run with --size {v}")),
        // A reporting group only: the jobs still run together, as oio's streams do.
        "new_group" => note("a fio reporting group; oio runs every stream at the same time too"),
        "stonewall" | "wait_for" | "startdelay" => warn("oio runs every stream at the same time"),
        _ => warn("not honoured by oio"),
    }
}

impl JobBuilder {
    fn stream(&self, name: &str) -> Result<Stream, Skip> {
        let rw = self.rw.as_deref().unwrap_or("read");
        let (read_pct, random) = match rw {
            "read" => (100.0, false),
            "write" => (0.0, false),
            "randread" => (100.0, true),
            "randwrite" => (0.0, true),
            "rw" | "readwrite" => (self.rwmixread.unwrap_or(50.0), false),
            "randrw" => (self.rwmixread.unwrap_or(50.0), true),
            other => {
                return Err(Skip(format!(
                    "rw={other}: oio does read, write, randread, randwrite, rw and randrw"
                )))
            }
        };
        let (rate_iops, read_pct) = self.rate_shape(read_pct).0;
        let (read_mix, write_mix) = self.mixes().map_err(Skip)?;
        let (bs, read_bs, write_bs) = match (read_pct > 0.0, read_pct < 100.0) {
            (true, true) if read_mix == write_mix => (Some(read_mix), None, None),
            (true, true) => (None, Some(read_mix), Some(write_mix)),
            (true, false) => (Some(read_mix), None, None),
            _ => (Some(write_mix), None, None),
        };
        let workers = self.numjobs.unwrap_or(1);
        let depth = self.iodepth.unwrap_or(1);
        let region = match (self.offset, self.size) {
            (None, None) => Region::default(),
            (o, l) => Region {
                offset: o.unwrap_or(Extent::Bytes(0)),
                length: l.unwrap_or(Extent::Percent(100.0)),
            },
        };
        Ok(Stream {
            name: name.to_string(),
            target: None,
            read_pct: Percent(read_pct),
            bs,
            read_bs,
            write_bs,
            random_pct: Percent(if random {
                self.percentage_random.unwrap_or(100.0)
            } else {
                0.0
            }),
            align: self.align.map(oio_core::units::Bytes),
            region,
            outstanding: Some(depth.saturating_mul(workers)),
            workers,
            stripe: None,
            compress_pct: self.compress.map(Percent),
            dedupe_pct: self.dedupe.map(Percent),
            rate: rate_iops.map(|per_job| Rate {
                iops: per_job * workers as f64,
                arrival: if self.poisson {
                    Arrival::Poisson
                } else {
                    Arrival::Constant
                },
                ..Rate::default()
            }),
            distribution: self
                .distribution
                .clone()
                .filter(|d| random && *d != Distribution::Uniform),
            fdatasync: self.fdatasync.filter(|_| read_pct < 100.0),
            fsync: self.fsync.filter(|_| read_pct < 100.0),
            sync_interval: None,
            sync_writes: self.sync_writes.filter(|_| read_pct < 100.0),
            think_time: self.thinktime,
            think_blocks: self.thinktime.and(self.thinktime_blocks),
            pattern: self.pattern.clone().filter(|_| read_pct < 100.0),
            // fio mixes no trims into read/write jobs.
            trim_pct: None,
        })
    }

    /// The stream's offered rate per job and read share from fio's per-direction rates and
    /// the job's `read_pct`, and what to say about it. fio limits each direction to its own
    /// rate, so with both limited they also set the mix.
    fn rate_shape(&self, read_pct: f64) -> ((Option<f64>, f64), Option<Said>) {
        // A byte rate is I/Os at the direction's mean size (fio paces mixed sizes by bytes).
        let from_bytes = self.rate_bytes.and_then(|[r, w]| {
            let (rm, wm) = self.mixes().ok()?;
            Some([r.map(|b| b / rm.mean()), w.map(|b| b / wm.mean())])
        });
        // fio turns an evenly spaced rate_iops into bytes at the smallest size, so mixed
        // sizes run fewer I/Os: R x smallest / mean (its Poisson process counts I/Os).
        let paced = self.rate_iops.filter(|_| !self.poisson).and_then(|[r, w]| {
            let (rm, wm) = self.mixes().ok()?;
            let eff = |x: Option<f64>, m: &SizeMix| {
                let least = m
                    .fractions()
                    .iter()
                    .map(|f| f.0 as f64)
                    .fold(f64::INFINITY, f64::min);
                x.map(|x| x * least / m.mean())
            };
            let out = [eff(r, &rm), eff(w, &wm)];
            (out != [r, w]).then_some(out)
        });
        let Some([r, w]) = paced.or(self.rate_iops).or(from_bytes) else {
            return ((None, read_pct), None);
        };
        let (r, w) = (r.map(round3), w.map(round3));
        let paced_note = paced.map(|_| {
            format!(
                "fio paces an even rate_iops of mixed sizes as bytes at the smallest size: it runs {} reads/s and {} writes/s per job, which oio offers",
                r.unwrap_or(0.0),
                w.unwrap_or(0.0)
            )
        });
        let unlimited = |dir: &str| {
            Some(Said::Warn(format!(
                "fio leaves the {dir} unlimited: oio offers the limited direction's rate to the whole stream (open loop), not honoured for the {dir}"
            )))
        };
        match (read_pct > 0.0, read_pct < 100.0, r, w) {
            (true, false, Some(r), _) => ((Some(r), read_pct), None),
            (false, true, _, Some(w)) => ((Some(w), read_pct), None),
            (true, true, Some(r), Some(w)) => {
                let share = (r / (r + w) * 1000.0).round() / 10.0;
                let said = if let Some(n) = paced_note {
                    Some(Said::Warn(format!(
                        "{n} ({} I/Os per second, {share} % reads)",
                        r + w
                    )))
                } else if (share - read_pct).abs() > 1.0 {
                    Some(Said::Warn(format!(
                        "fio limits reads to {r}/s and writes to {w}/s per job: {} I/Os per second with {share} % reads, not the rwmixread of {read_pct} %",
                        r + w
                    )))
                } else {
                    Some(Said::Note(format!(
                        "reads {r}/s + writes {w}/s per job: oio offers {} I/Os per second, {share} % reads",
                        r + w
                    )))
                };
                ((Some(r + w), share), said)
            }
            (_, _, Some(r), None) => ((Some(r), read_pct), unlimited("writes")),
            (_, _, None, Some(w)) => ((Some(w), read_pct), unlimited("reads")),
            _ => ((None, read_pct), unlimited("I/Os of this job")),
        }
    }

    /// Read and write size mixes from bssplit, else bs, else fio's default 4k.
    fn mixes(&self) -> Result<(SizeMix, SizeMix), String> {
        if let Some(split) = &self.bssplit {
            let mut dirs = split.split(',');
            let read = dirs.next().unwrap_or("");
            let write = dirs.next().unwrap_or(read);
            let read = if read.trim().is_empty() {
                SizeMix::single(4096)
            } else {
                bssplit_mix(read)?
            };
            let write = if write.trim().is_empty() {
                read.clone()
            } else {
                bssplit_mix(write)?
            };
            return Ok((read, write));
        }
        let bs = self.bs.as_deref().unwrap_or("4k");
        let mut dirs = bs.split(',').map(str::trim);
        let size = |s: &str| -> Result<SizeMix, String> {
            let b = parse_size(s).map_err(|e| e.to_string())?;
            SizeMix::new(vec![SizeShare {
                bytes: b,
                weight: 100.0,
            }])
            .map_err(|e| format!("bs={bs}: {e}"))
        };
        let read = dirs.next().filter(|s| !s.is_empty()).unwrap_or("4k");
        let write = dirs.next().filter(|s| !s.is_empty()).unwrap_or(read);
        Ok((size(read)?, size(write)?))
    }
}

/// One direction of fio's bssplit: `4k/10:64k/50:32k/` (an empty share takes an equal part
/// of what the others leave).
fn bssplit_mix(text: &str) -> Result<SizeMix, String> {
    let mut given = Vec::new();
    let mut open = Vec::new();
    for part in text.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (size, share) = part.split_once('/').unwrap_or((part, ""));
        let bytes = parse_size(size).map_err(|e| format!("bssplit {part}: {e}"))?;
        if share.trim().is_empty() {
            open.push(bytes);
        } else {
            let w = pct(share).map_err(|e| format!("bssplit {part}: {e}"))?;
            given.push(SizeShare { bytes, weight: w });
        }
    }
    let used: f64 = given.iter().map(|s| s.weight).sum();
    if !open.is_empty() {
        let each = (100.0 - used).max(0.0) / open.len() as f64;
        given.extend(open.into_iter().map(|bytes| SizeShare {
            bytes,
            weight: each,
        }));
    }
    given.retain(|s| s.weight > 0.0);
    SizeMix::new(given).map_err(|e| format!("bssplit {text}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "\
; a user's job
[global]
ioengine=libaio
direct=1
size=10g
runtime=60
time_based
random_distribution=zipf:1.2
fdatasync=8

[oltp]
rw=randrw
rwmixread=70
bssplit=8k/80:64k/,4k/100
iodepth=8
numjobs=4

[log]
rw=write
bs=64k
iodepth=1
thinktime=100
thinktime_spin=50
";

    #[test]
    fn a_users_job_file_imports_and_says_what_it_could_not() {
        let i = parse(JOB, "u.fio", "u").unwrap();
        let w = &i.workload;
        assert_eq!(w.name, "u");
        assert_eq!(w.streams.len(), 2);
        let s = &w.streams[0];
        assert_eq!(
            (s.name.as_str(), s.read_pct.0, s.random_pct.0),
            ("oltp", 70.0, 100.0)
        );
        assert_eq!((s.outstanding, s.workers), (Some(32), 4));
        assert_eq!(s.read_bs.as_ref().unwrap().to_string(), "8k:80,64k:20");
        assert_eq!(s.write_bs.as_ref().unwrap().to_string(), "4k");
        assert_eq!(s.distribution, Some(Distribution::Zipf(1.2)));
        let l = &w.streams[1];
        assert_eq!((l.read_pct.0, l.random_pct.0), (0.0, 0.0));
        assert_eq!(l.bs.as_ref().unwrap().to_string(), "64k");
        assert_eq!(l.distribution, None, "sequential I/O has no distribution");
        // Every option not honoured is named with its line, once.
        let warned = i.warnings.join("\n");
        assert!(
            warned.contains("u.fio:23: thinktime_spin=50: not honoured"),
            "{warned}"
        );
        // fio's bare thinktime is microseconds.
        assert_eq!(
            l.think_time,
            Some(oio_core::units::Secs(std::time::Duration::from_micros(100)))
        );
        assert_eq!(i.warnings.len(), 1, "{warned}");
        assert_eq!((s.fdatasync, l.fdatasync), (Some(8), Some(8)));
        let noted = i.notes.join("\n");
        for n in [
            "size=10g: the size of the target: run with --size 10g",
            "--time 60s",
            "ioengine=libaio",
        ] {
            assert!(noted.contains(n), "{n}: {noted}");
        }
        assert_eq!(i.notes.len(), 5, "{noted}");
    }

    #[test]
    fn bad_input_names_file_line_and_what_was_expected() {
        for (text, line, what) in [
            ("rw=read\n", 1, "expected a section"),
            ("[a]\nrwmixread=150\n", 2, "percentage"),
            ("[a]\nbs=4q\n", 2, "bs=4q"),
            ("[a]\nrandom_distribution=zipf\n", 2, "zipf:THETA"),
            ("[a]\niodepth=0\n", 2, "whole number"),
            ("[a\n", 1, "expected a section"),
        ] {
            let e = parse(text, "b.fio", "b").unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("b.fio:{line}: ")) && e.contains(what),
                "{text:?}: {e}"
            );
        }
        let e = parse("[global]\nbs=4k\n", "b.fio", "b")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no job section"), "{e}");
        let e = parse("[t]\nrw=randtrim\n", "b.fio", "b")
            .unwrap_err()
            .to_string();
        assert!(e.contains("job [t] left out: rw=randtrim"), "{e}");
    }

    #[test]
    fn issue_42_per_direction_rates_set_the_rate_and_the_mix() {
        let rate = |opts: &str| {
            let i = parse(
                &format!("[a]\nrw=randrw\nrwmixread=70\n{opts}"),
                "r.fio",
                "r",
            )
            .unwrap();
            let s = &i.workload.streams[0];
            let said = [i.notes, i.warnings].concat().join(" | ");
            (s.rate.as_ref().unwrap().iops, s.read_pct.0, said)
        };
        // fio limits each direction: R + W I/Os per second, R/(R+W) reads.
        let (iops, read, said) = rate("rate_iops=3500,1500\n");
        assert_eq!((iops, read), (5000.0, 70.0), "{said}");
        assert!(
            said.contains("oio offers 5000 I/Os per second, 70 % reads"),
            "{said}"
        );
        // One value limits each direction to it: twice the rate, half reads, said loudly.
        let (iops, read, said) = rate("rate_iops=5000\n");
        assert_eq!((iops, read), (10000.0, 50.0));
        assert!(said.contains("not the rwmixread of 70 %"), "{said}");
        // Bytes per second of mixed sizes: I/Os at each direction's mean size.
        let (iops, read, _) = rate("bssplit=4k/50:16k/50,8k/100\nrate=35840000,12288000\n");
        assert_eq!((iops, read), (5000.0, 70.0));
        // An even rate_iops of mixed sizes: fio runs R x smallest / mean, and so does oio.
        let (iops, read, said) = rate("bssplit=4k/50:16k/50,8k/100\nrate_iops=2800,1200\n");
        assert_eq!((iops, read), (2320.0, 48.3), "{said}");
        assert!(said.contains("1120 reads/s and 1200 writes/s"), "{said}");
        let (iops, _, _) =
            rate("bssplit=4k/50:16k/50,8k/100\nrate_iops=2800,1200\nrate_process=poisson\n");
        assert_eq!(iops, 4000.0);
        // Only reads limited: the writes' open loop is not honoured, and said.
        let (_, _, said) = rate("rate_iops=3500,\n");
        assert!(said.contains("fio leaves the writes unlimited"), "{said}");
    }

    #[test]
    fn bssplit_open_shares_and_single_direction_forms() {
        let m = bssplit_mix("4k/10:64k/50:32k/:16k/").unwrap();
        assert_eq!(m.to_string(), "4k:10,64k:50,32k:20,16k:20");
        let i = parse("[w]\nrw=randwrite\nbssplit=,16k/100\n", "w.fio", "w").unwrap();
        assert_eq!(
            i.workload.streams[0].bs.as_ref().unwrap().to_string(),
            "16k"
        );
        let i = parse("[w]\nrw=randrw\nbs=4k,8k\n", "w.fio", "w").unwrap();
        let s = &i.workload.streams[0];
        assert_eq!(
            (
                s.read_bs.as_ref().unwrap().to_string(),
                s.write_bs.as_ref().unwrap().to_string()
            ),
            ("4k".into(), "8k".into())
        );
    }
}
