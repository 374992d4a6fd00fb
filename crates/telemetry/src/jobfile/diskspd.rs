//! diskspd command lines (as typed, or in a `.cmd`/`.bat` file: `REM` and `::` lines are
//! comments, `^` continues a line).
//!
//! Each `diskspd` command becomes one stream of one workload: `-b` size, `-w` write share,
//! `-r` random (with its alignment) or `-s` sequential, `-rs<pct>` a random share, `-t`
//! threads per target and `-o` outstanding I/O per thread (outstanding = t × o), `-F` total
//! threads, `-j` think time (ms) after every `-i` I/Os. Run options (`-c`, `-d`, `-W`, `-C`, the target, caching `-S*`) and output
//! options (`-L`, `-D`, `-R`) are named in warnings as run options or as having no effect on
//! the workload; every other option is named as not honoured. XML profiles (`-X FILE`) are
//! imported from the file itself ([`parse_xml`]).

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
    /// `-j`: think time between bursts, ms.
    think_ms: Option<u32>,
    /// `-i`: I/Os per burst.
    burst: Option<u32>,
    targets: Vec<String>,
}

impl Default for Command {
    /// diskspd's own defaults: 64 KiB blocks, reads, 1 thread per target, 2 outstanding I/Os
    /// per thread.
    fn default() -> Command {
        Command {
            bs: 64 * 1024,
            write_pct: 0,
            random: None,
            align: None,
            threads: 1,
            per_thread: 2,
            total_threads: None,
            think_ms: None,
            burst: None,
            targets: Vec::new(),
        }
    }
}

/// Reads a command's arguments (after the program); options oio does not honour go to
/// `warnings`.
fn options(
    file: &str,
    n: usize,
    args: &[String],
    warnings: &mut Vec<String>,
) -> Result<Command, TelemetryError> {
    let mut c = Command::default();
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
            "j" => c.think_ms = Some(int(file, n, "-j", v, 60_000)?),
            "i" => c.burst = Some(int(file, n, "-i", v, 1 << 20)?.max(1)),
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
            "X" => return Err(TelemetryError::parse(
                file,
                n,
                "-X: the workload is in the XML profile: import that file (oio import PROFILE.xml)",
            )),
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
        let think = self.think_ms.filter(|ms| *ms > 0);
        if think.is_none() && self.burst.is_some_and(|b| b > 0) {
            warnings.push(format!(
                "line {n}: a burst size without a think time (-j) changes nothing"
            ));
        }
        let mut s = stream(StreamSpec {
            name,
            read_pct: 100.0 - self.write_pct as f64,
            read: mix.clone(),
            write: mix,
            random_pct: self.random.unwrap_or(0.0),
            outstanding: workers.saturating_mul(self.per_thread).min(65536),
            workers,
            align: self.align,
        });
        // -j/-i: each thread waits `think` after every burst, as oio's workers do.
        if let Some(ms) = think {
            s.think_time = Some(oio_core::units::Secs(std::time::Duration::from_millis(
                ms as u64,
            )));
            s.think_blocks = self.burst.filter(|b| *b > 1);
        }
        s
    }
}

/// Parses a diskspd XML profile (`diskspd -X profile.xml`, or what `diskspd -Rxml` prints
/// under `<Profile>`): one workload per `<TimeSpan>`, one stream per `<Target>`, read the way
/// the command line is (`BlockSize` is `-b`, `WriteRatio` `-w`, `Random` `-r` with its
/// alignment, `RandomRatio` `-rs`, `RequestCount` `-o`, `ThreadsPerFile` `-t`, the time span's
/// `ThreadCount` `-F`). Every other element is named in a warning, as run option or as not
/// honoured. Warnings name the line of the element.
pub fn parse_xml(file: &str, text: &str) -> Result<Vec<Imported>, TelemetryError> {
    // The XML parser recurses per level: a hostile file nested 100,000 deep overflows the
    // stack. A profile is 6 levels deep.
    if let Some(line) = nested_deeper_than(text, MAX_XML_DEPTH) {
        return Err(TelemetryError::parse(
            file,
            line,
            format!("elements nested more than {MAX_XML_DEPTH} deep: not a diskspd profile"),
        ));
    }
    let doc = roxmltree::Document::parse(text).map_err(|e| {
        let pos = e.pos();
        TelemetryError::parse(
            file,
            pos.row as usize,
            format!("not a readable XML profile: {e}"),
        )
    })?;
    // Line numbers from one index of line starts: roxmltree's text_pos_at counts from the start
    // of the text on every call, quadratic over a profile of 100,000 elements (issue 22).
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line = |n: roxmltree::Node| starts.partition_point(|&s| s <= n.range().start);
    let root = doc.root_element();
    if root.tag_name().name() != "Profile" {
        return Err(TelemetryError::parse(
            file,
            line(root),
            format!(
                "<{}>: expected a diskspd <Profile> (with <TimeSpans><TimeSpan><Targets><Target>)",
                root.tag_name().name()
            ),
        ));
    }
    let stem = std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "diskspd".into());
    let spans: Vec<roxmltree::Node> = root
        .descendants()
        .filter(|n| n.has_tag_name("TimeSpan"))
        .collect();
    if spans.is_empty() {
        return Err(TelemetryError::parse(
            file,
            line(root),
            "no <TimeSpan>: expected <Profile><TimeSpans><TimeSpan><Targets><Target>",
        ));
    }
    let mut out = Vec::new();
    for (k, span) in spans.iter().enumerate() {
        let mut warnings = Vec::new();
        let mut notes = Vec::new();
        let mut total_threads = None;
        for e in span.children().filter(|n| n.is_element()) {
            let n = line(e);
            let v = e.text().unwrap_or("").trim();
            match e.tag_name().name() {
                "Targets" => {}
                "ThreadCount" => {
                    let t = int(file, n, "<ThreadCount>", v, 1024)?;
                    total_threads = (t > 0).then_some(t);
                }
                "Duration" => notes.push(format!("line {n}: <Duration>{v}: give --time {v}s to oio run")),
                "Warmup" => notes.push(format!("line {n}: <Warmup>{v}: give --ramp {v}s to oio run")),
                "RandSeed" => notes.push(format!("line {n}: <RandSeed>{v}: give --seed to oio run")),
                "Cooldown" => warnings.push(format!("line {n}: <Cooldown>{v}: oio has no cool-down")),
                "MeasureLatency" | "CalculateIopsStdDev" | "IoBucketDuration" => warnings.push(
                    format!("line {n}: <{}> changes diskspd's output, not the workload; oio always measures latency and per-interval IOPS", e.tag_name().name()),
                ),
                other => warnings.push(format!("line {n}: <{other}>{v} is not honoured")),
            }
        }
        let mut streams = Vec::new();
        for target in span.descendants().filter(|n| n.has_tag_name("Target")) {
            let mut c = target_command(file, target, &line, &mut warnings, &mut notes)?;
            c.total_threads = total_threads;
            let name = if streams.is_empty() {
                "main".into()
            } else {
                format!("s{}", streams.len() + 1)
            };
            streams.push(c.stream(line(target), name, &mut warnings));
        }
        if streams.is_empty() {
            return Err(TelemetryError::parse(
                file,
                line(*span),
                "a <TimeSpan> without a <Target>: expected <Targets><Target><Path>…</Path></Target></Targets>",
            ));
        }
        cap_warnings(&mut warnings);
        let name = if spans.len() == 1 {
            stem.clone()
        } else {
            format!("{stem}-{}", k + 1)
        };
        out.push(Imported {
            workload: Workload {
                name: super::name_or(&name, "diskspd"),
                description: format!("diskspd XML profile imported by oio from {file}"),
                streams,
            },
            warnings,
            notes,
        });
    }
    Ok(out)
}

/// One `<Target>` as the command it stands for.
/// At most [`MAX_WARNINGS`] warnings per time span, then how many more: a profile of 100,000
/// unknown elements is named by its first few, not 100,000 lines.
fn cap_warnings(warnings: &mut Vec<String>) {
    if warnings.len() > MAX_WARNINGS {
        let more = warnings.len() - MAX_WARNINGS;
        warnings.truncate(MAX_WARNINGS);
        warnings.push(format!("… and {more} more warnings like these"));
    }
}

/// Warnings kept per time span of a diskspd profile.
const MAX_WARNINGS: usize = 50;

fn target_command(
    file: &str,
    target: roxmltree::Node,
    line: &dyn Fn(roxmltree::Node) -> usize,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<Command, TelemetryError> {
    let mut c = Command::default();
    let mut random_ratio = None;
    for e in target.children().filter(|n| n.is_element()) {
        let n = line(e);
        let v = e.text().unwrap_or("").trim();
        let tag = e.tag_name().name();
        let bytes = |v: &str| {
            v.parse::<u64>().map_err(|_| {
                TelemetryError::parse(file, n, format!("<{tag}>{v}: expected a size in bytes"))
            })
        };
        match tag {
            "Path" => c.targets.push(v.to_string()),
            "BlockSize" => c.bs = bytes(v)?,
            "WriteRatio" => c.write_pct = int(file, n, "<WriteRatio>", v, 100)?,
            "Random" => {
                c.random = Some(100.0);
                c.align = Some(bytes(v)?).filter(|a| *a > 0);
            }
            "RandomRatio" => random_ratio = Some(int(file, n, "<RandomRatio>", v, 100)? as f64),
            "StrideSize" => {
                if c.random.is_none() {
                    c.random = Some(0.0);
                }
                if bytes(v)? != c.bs && bytes(v)? != 0 {
                    warnings.push(format!(
                        "line {n}: <StrideSize>{v}: a stride other than the block size is not honoured"
                    ));
                }
            }
            "InterlockedSequential" if v == "true" => warnings.push(format!(
                "line {n}: <InterlockedSequential> (threads share one sequential offset) is not honoured: each oio worker runs its own sequence"
            )),
            "RequestCount" => c.per_thread = int(file, n, "<RequestCount>", v, 65536)?.max(1),
            "ThreadsPerFile" => c.threads = int(file, n, "<ThreadsPerFile>", v, 1024)?.max(1),
            "FileSize" => notes.push(format!("line {n}: <FileSize>{v}: give --size {v} to oio run")),
            "ThinkTime" => c.think_ms = Some(int(file, n, "<ThinkTime>", v, 60_000)?),
            "BurstSize" => c.burst = Some(int(file, n, "<BurstSize>", v, 1 << 20)?),
            "DisableOSCache" | "DisableAllCache" | "WriteThrough" | "DisableLocalCache" => {
                warnings.push(format!(
                    "line {n}: <{tag}>{v} (caching): oio uses O_DIRECT unless given --buffered"
                ))
            }
            // Defaults written out by `diskspd -Rxml`: nothing to honour.
            "InterlockedSequential" | "BaseFileOffset" | "SequentialScan" | "RandomAccess"
            | "TemporaryFile" | "UseLargePages" | "ParallelAsyncIO" | "ThreadStride"
            | "MaxFileSize" | "IOPriority" | "Throughput"
                if matches!(v, "0" | "false") || (tag == "IOPriority" && v == "3") => {}
            "WriteBufferContent" => warnings.push(format!(
                "line {n}: <WriteBufferContent>: oio writes unique random data unless given --pattern"
            )),
            other => warnings.push(format!("line {n}: <{other}>{v} is not honoured")),
        }
    }
    if let Some(r) = random_ratio {
        c.random = Some(r);
    }
    Ok(c)
}

/// Deepest element nesting read from an XML profile (a diskspd profile has 6 levels).
const MAX_XML_DEPTH: usize = 64;

/// The line where elements first nest deeper than `limit`, by a scan of the tags that needs no
/// stack (comments, declarations and `<![CDATA[` sections are not elements; a tag ending in
/// `/>` closes itself).
fn nested_deeper_than(text: &str, limit: usize) -> Option<usize> {
    let b = text.as_bytes();
    let (mut depth, mut line) = (0usize, 1usize);
    // The next '>' at or after the scan, found by a search that only ever moves forward, so
    // the scan stays linear however many '<' lack their '>' (a quadratic search took a minute
    // on a crafted megabyte).
    let mut next_gt: Option<Option<usize>> = None;
    for i in 0..b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'<' => match b.get(i + 1) {
                Some(b'/') => depth = depth.saturating_sub(1),
                Some(b'?' | b'!') => {}
                _ => {
                    let end = match next_gt {
                        Some(Some(e)) if e > i => Some(e),
                        Some(None) => None,
                        _ => {
                            let e = b[i..].iter().position(|&c| c == b'>').map(|p| i + p);
                            next_gt = Some(e);
                            e
                        }
                    };
                    let closes = end.is_some_and(|e| e > i && b[e - 1] == b'/');
                    if !closes {
                        depth += 1;
                        if depth > limit {
                            return Some(line);
                        }
                    }
                }
            },
            _ => {}
        }
    }
    None
}
