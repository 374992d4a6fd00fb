//! diskspd command lines (as typed, or in a `.cmd`/`.bat` file: `REM` and `::` lines are
//! comments, `^` continues a line).
//!
//! Each `diskspd` command becomes one stream of one workload: `-b` size, `-w` write share,
//! `-r` random (with its alignment) or `-s` sequential, `-rs<pct>` a random share, `-t`
//! threads per target and `-o` outstanding I/O per thread (outstanding = t × o), `-F` total
//! threads. Run options (`-c`, `-d`, `-W`, `-C`, the target, caching `-S*`) and output
//! options (`-L`, `-D`, `-R`) are named in warnings as run options or as having no effect on
//! the workload; every other option is named as not honoured. XML profiles (`-X`) are not
//! read.

use super::{stream, Imported, StreamSpec};
use crate::TelemetryError;
use oio_core::sizemix::SizeMix;
use oio_core::units::parse_size;
use oio_core::workload::Workload;

/// Splits a command line the way cmd.exe hands it to a program: whitespace separates,
/// double quotes group.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// diskspd sizes: bytes, or with K, M, G, T suffixes (binary); `b` suffix means blocks and
/// is refused here.
fn size(file: &str, n: usize, opt: &str, v: &str) -> Result<u64, TelemetryError> {
    parse_size(v).map_err(|e| {
        TelemetryError::parse(
            file,
            n,
            format!("{opt}{v}: expected a size (4K, 64K, 1M), {e}"),
        )
    })
}

fn int(file: &str, n: usize, opt: &str, v: &str, max: u32) -> Result<u32, TelemetryError> {
    v.parse::<u32>().ok().filter(|x| *x <= max).ok_or_else(|| {
        TelemetryError::parse(file, n, format!("{opt}{v}: expected an integer 0 to {max}"))
    })
}

/// Parses diskspd command lines into one workload with a stream per command.
pub fn parse(file: &str, text: &str) -> Result<Vec<Imported>, TelemetryError> {
    let mut warnings = Vec::new();
    let mut streams = Vec::new();
    for (n, cmd) in commands(text) {
        let w = words(&cmd);
        let Some(prog) = w.first() else { continue };
        let p = prog.to_ascii_lowercase();
        if !(p.ends_with("diskspd") || p.ends_with("diskspd.exe")) {
            warnings.push(format!(
                "line {n}: {prog:?} is not a diskspd command; skipped"
            ));
            continue;
        }
        let c = options(file, n, &w[1..], &mut warnings)?;
        let name = if streams.is_empty() {
            "main".into()
        } else {
            format!("s{}", streams.len() + 1)
        };
        streams.push(c.stream(n, name, &mut warnings));
    }
    if streams.is_empty() {
        return Err(TelemetryError::invalid(
            file,
            "no diskspd command line; expected `diskspd.exe -b8K -r -w30 -t4 -o8 TARGET`",
        ));
    }
    let name = std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "diskspd".into());
    Ok(vec![Imported {
        notes: Vec::new(),
        workload: Workload {
            name: super::name_or(&name, "diskspd"),
            description: format!("diskspd command imported by oio from {file}"),
            streams,
        },
        warnings,
    }])
}

/// The commands, `^` continuations joined, each with the line it starts on.
fn commands(text: &str) -> Vec<(usize, String)> {
    let mut cmds: Vec<(usize, String)> = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        let lower = l.to_ascii_lowercase();
        if pending.is_none()
            && (l.is_empty()
                || lower.starts_with("rem")
                || l.starts_with("::")
                || l.starts_with('@'))
        {
            continue;
        }
        let (start, mut acc) = pending.take().unwrap_or((i + 1, String::new()));
        acc.push(' ');
        match l.strip_suffix('^') {
            Some(head) => {
                acc.push_str(head);
                pending = Some((start, acc));
            }
            None => {
                acc.push_str(l);
                cmds.push((start, acc));
            }
        }
    }
    if let Some(p) = pending {
        cmds.push(p);
    }
    cmds
}

/// What one diskspd command asks for.
struct Command {
    bs: u64,
    write_pct: u32,
    /// Random share, percent; `None` when neither `-r` nor `-s` was given.
    random: Option<f64>,
    align: Option<u64>,
    /// `-t`: threads per target.
    threads: u32,
    /// `-o`: outstanding I/O per thread.
    per_thread: u32,
    /// `-F`: threads in total.
    total_threads: Option<u32>,
    targets: Vec<String>,
}

/// Reads a command's arguments (after the program); options oio does not honour go to
/// `warnings`.
fn options(
    file: &str,
    n: usize,
    args: &[String],
    warnings: &mut Vec<String>,
) -> Result<Command, TelemetryError> {
    let mut c = Command {
        bs: 64 * 1024,
        write_pct: 0,
        random: None,
        align: None,
        threads: 1,
        per_thread: 2,
        total_threads: None,
        targets: Vec::new(),
    };
    for a in args {
        let Some(opt) = a.strip_prefix('-').or_else(|| a.strip_prefix('/')) else {
            c.targets.push(a.clone());
            continue;
        };
        let (o, v) = opt.split_at(opt.chars().next().map_or(0, char::len_utf8));
        match o {
            "b" => c.bs = size(file, n, "-b", v)?,
            "w" => c.write_pct = int(file, n, "-w", v, 100)?,
            "r" if v.starts_with('s') => c.random = Some(int(file, n, "-rs", &v[1..], 100)? as f64),
            "r" => {
                c.random = Some(100.0);
                if !v.is_empty() {
                    c.align = Some(size(file, n, "-r", v)?);
                }
            }
            "s" => {
                c.random = Some(0.0);
                if !v.is_empty() && v != "i" {
                    warnings.push(format!(
                        "line {n}: -s{v}: a stride other than the block size is not honoured"
                    ));
                }
                if v.starts_with('i') {
                    warnings.push(format!("line {n}: -si (threads share one sequential offset) is not honoured: each oio worker runs its own sequence"));
                }
            }
            "t" => c.threads = int(file, n, "-t", v, 1024)?.max(1),
            "o" => c.per_thread = int(file, n, "-o", v, 65536)?.max(1),
            "F" => c.total_threads = Some(int(file, n, "-F", v, 1024)?.max(1)),
            "c" | "d" | "W" | "C" => warnings.push(format!(
                "line {n}: -{o}{v} is a run option: give {} to oio run",
                match o {
                    "c" => "--size",
                    "d" => "--time",
                    "W" => "--ramp",
                    _ => "nothing (oio has no cool-down)",
                }
            )),
            "S" => warnings.push(format!(
                "line {n}: -S{v} (caching): oio uses O_DIRECT unless given --buffered"
            )),
            "L" | "D" | "R" | "Z" | "h" => warnings.push(format!(
                "line {n}: -{o}{v} changes diskspd's output or buffers, not the workload; {}",
                if o == "Z" {
                    "oio writes incompressible unique data by default"
                } else {
                    "oio always measures latency"
                }
            )),
            "X" => {
                return Err(TelemetryError::parse(
                    file,
                    n,
                    "-X: diskspd XML profiles are not read; give the command line",
                ))
            }
            _ => warnings.push(format!("line {n}: -{o}{v} is not honoured")),
        }
    }
    Ok(c)
}

impl Command {
    /// The command as a stream named `name`; what the stream leaves out goes to `warnings`.
    fn stream(
        self,
        n: usize,
        name: String,
        warnings: &mut Vec<String>,
    ) -> oio_core::workload::Stream {
        let targets = &self.targets;
        if !targets.is_empty() {
            warnings.push(format!(
                "line {n}: target {} is not imported: give it to oio run",
                targets.join(" ")
            ));
        }
        if self.random.is_none() {
            warnings.push(format!(
                "line {n}: neither -r nor -s: diskspd's default, sequential, is used"
            ));
        }
        let workers = self.total_threads.unwrap_or(
            self.threads
                .saturating_mul(targets.len().clamp(1, 1024) as u32),
        );
        if targets.len() > 1 {
            warnings.push(format!("line {n}: {} targets: oio runs the stream on the targets given to oio run, with -t threads per target counted together", targets.len()));
        }
        let mix = Some(SizeMix::single(self.bs));
        stream(StreamSpec {
            name,
            read_pct: 100.0 - self.write_pct as f64,
            read: mix.clone(),
            write: mix,
            random_pct: self.random.unwrap_or(0.0),
            outstanding: workers.saturating_mul(self.per_thread).min(65536),
            workers,
            align: self.align,
        })
    }
}
