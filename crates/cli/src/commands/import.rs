//! `oio import FIO.json`: a fio result as an oio run result, so fio runs can be reported and
//! compared beside oio's. `oio import FILE` of a fio job file, a diskspd command line, an
//! IOMeter `.icf` or a vdbench parameter file: the workloads in it as oio workload files.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `oio import`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// fio output written with --output-format=json or json+ (json+ keeps exact percentiles),
    /// or a workload definition: a fio job file (.fio), a diskspd command line (.cmd) or XML
    /// profile (.xml), an IOMeter .icf or a vdbench parameter file (these become workload
    /// files, on stdout unless -o is given).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Write the oio result (or workload file) here (default for results: beside the input,
    /// as NAME.oio.json).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// A name for the imported fio result, recorded in it (e.g. the setting under test):
    /// `compare`, `report` and `diagnose` name the run by it. Results only.
    #[arg(long, value_name = "NAME", value_parser = crate::args::parse_label)]
    pub label: Option<String>,

    /// Print the result as JSON on stdout instead of the summary (nothing is written unless
    /// -o is given).
    #[arg(long)]
    pub json: bool,
}

/// Converts and saves.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if is_job_file(&args.file) {
        no_label(&args)?;
        return job_file(args);
    }
    if let Some(code) = import_jobfile(&args)? {
        return Ok(code);
    }
    let mut r = oio_telemetry::fio::load_result(&args.file)?;
    r.envelope.label = args.label.clone();
    let mut bytes = serde_json::to_vec_pretty(&r)?;
    bytes.push(b'\n');
    let target = match (&args.output, args.json) {
        (Some(p), _) => Some(p.clone()),
        (None, true) => None,
        (None, false) => {
            let stem = args
                .file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Some(args.file.with_file_name(format!("{stem}.oio.json")))
        }
    };
    if let Some(p) = &target {
        crate::results::write_file_atomic(p, &bytes)?;
    }
    // anstream strips the summary's colour when stdout is not a terminal (or with --color never).
    let mut out = crate::output::terminal::stdout();
    if args.json {
        out.write_all(&bytes)?;
    } else {
        let saved = target.map(|p| p.display().to_string());
        crate::output::summary::write_summary(&mut out, &r, saved.as_deref())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Only a result takes a `--label`: a workload definition becomes a workload file.
fn no_label(args: &Args) -> anyhow::Result<()> {
    if args.label.is_some() {
        anyhow::bail!(
            "--label names an imported fio result (JSON); '{}' is a workload definition, which becomes a workload file without one",
            args.file.display()
        );
    }
    Ok(())
}

/// diskspd (command lines and XML profiles), IOMeter and vdbench files become workload
/// files; `None` for other files.
fn import_jobfile(args: &Args) -> anyhow::Result<Option<ExitCode>> {
    use oio_telemetry::jobfile;
    let name = args.file.display().to_string();
    let f = oio_core::input::open(
        &args.file,
        "a fio job file or JSON result, a diskspd, IOMeter or vdbench file",
    )?;
    let mut lines = oio_telemetry::TextLines::new(&name, f);
    let head = lines.peek(64 << 10)?;
    let Some(format) = jobfile::detect(&name, &head) else {
        return Ok(None);
    };
    no_label(args)?;
    let text = lines.rest_as_string()?;
    let imported = jobfile::import(&name, &text, format)?;
    let mut stderr = crate::output::terminal::stderr();
    let mut stdout = std::io::stdout().lock();
    for (k, i) in imported.iter().enumerate() {
        for w in &i.warnings {
            writeln!(stderr, "warning: {}: {w}", i.workload.name)?;
        }
        for n in &i.notes {
            writeln!(stderr, "note: {}: {n}", i.workload.name)?;
        }
        let toml = i.workload.to_toml();
        match &args.output {
            Some(p) => {
                let p = if imported.len() == 1 {
                    p.clone()
                } else {
                    let stem = p
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let safe = oio_core::text::slug(&i.workload.name, 100);
                    p.with_file_name(format!("{stem}-{}-{safe}.toml", k + 1))
                };
                crate::results::write_file_atomic(&p, toml.as_bytes())?;
                writeln!(
                    stdout,
                    "workload '{}' written to {}",
                    i.workload.name,
                    p.display()
                )?;
            }
            None => {
                if imported.len() > 1 {
                    writeln!(stdout, "# workload {} of {}", k + 1, imported.len())?;
                }
                stdout.write_all(toml.as_bytes())?;
            }
        }
    }
    Ok(Some(ExitCode::SUCCESS))
}

/// A fio job file rather than a JSON result: by extension, else by its first character.
fn is_job_file(path: &std::path::Path) -> bool {
    use std::io::Read;
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => return false,
        Some("fio" | "job" | "ini") => return true,
        _ => {}
    }
    let mut head = [0u8; 512];
    let n = oio_core::input::open(path, "a job file")
        .map_err(std::io::Error::other)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let first = head[..n]
        .iter()
        .find(|b| !b.is_ascii_whitespace() && **b != 0xEF && **b != 0xBB && **b != 0xBF);
    matches!(first, Some(b'[' | b';' | b'#'))
}

/// Converts a fio job file to a workload file; notes and warnings go to stderr.
fn job_file(args: Args) -> anyhow::Result<ExitCode> {
    let i = oio_telemetry::jobfile::fio::load(&args.file)?;
    let mut stderr = crate::output::terminal::stderr();
    for n in &i.notes {
        writeln!(stderr, "note: {n}")?;
    }
    for w in &i.warnings {
        writeln!(stderr, "warning: {w}")?;
    }
    let text = i.workload.to_toml();
    match &args.output {
        Some(p) => {
            crate::results::write_file_atomic(p, text.as_bytes())?;
            writeln!(
                stderr,
                "workload '{}' written to {}",
                i.workload.name,
                p.display()
            )?;
        }
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}
