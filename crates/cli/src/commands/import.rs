//! `oio import FIO.json`: a fio result as an oio run result, so fio runs can be reported and
//! compared beside oio's.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `oio import`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// fio output written with --output-format=json or json+ (json+ keeps exact percentiles).
    #[arg(value_name = "FIO.json")]
    pub file: PathBuf,

    /// Write the oio result here (default: beside the input, as NAME.oio.json).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Print the result as JSON on stdout instead of the summary (nothing is written unless
    /// -o is given).
    #[arg(long)]
    pub json: bool,
}

/// Converts and saves.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let r = oio_telemetry::fio::load_result(&args.file)?;
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
    let mut out = anstream::stdout().lock();
    if args.json {
        out.write_all(&bytes)?;
    } else {
        let saved = target.map(|p| p.display().to_string());
        crate::output::summary::write_summary(&mut out, &r, saved.as_deref())?;
    }
    Ok(ExitCode::SUCCESS)
}
