//! `oio profiles [NAME]`: the built-in workloads.

use anyhow::bail;
use oio_core::profiles;
use oio_core::units::format_size;
use std::io::Write;
use std::process::ExitCode;

/// Arguments of `oio profiles`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print this profile as a workload file (edit it and pass it to `oio run -w FILE`).
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
}

/// Lists the profiles or prints one.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if let Some(name) = args.name {
        let Some(text) = profiles::profile_text(&name) else {
            bail!(
                "no built-in profile '{name}'; the profiles are: {}",
                profiles::names().collect::<Vec<_>>().join(", ")
            );
        };
        out.write_all(text.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<10} {:>6} {:<28} {:>7} {:>5}  description",
        "profile", "read%", "sizes (read | write)", "random%", "QD"
    )?;
    for name in profiles::names() {
        let w = profiles::profile(name).expect("built-in profile");
        for s in &w.streams {
            let mix = |m: Option<&oio_core::SizeMix>, used: bool| match (m, used) {
                (Some(m), true) => m.to_string(),
                _ => "-".to_string(),
            };
            let sizes = format!(
                "{} | {}",
                mix(s.read_mix(), s.read_pct.0 > 0.0),
                mix(s.write_mix(), s.read_pct.0 < 100.0)
            );
            writeln!(
                out,
                "{:<10} {:>6} {:<28} {:>7} {:>5}  {}",
                name,
                s.read_pct.to_string(),
                sizes,
                s.random_pct.to_string(),
                s.outstanding.unwrap_or(0),
                first_sentence(&w.description)
            )?;
        }
    }
    writeln!(
        out,
        "\nsizes are NAME:WEIGHT mixes by I/O count; alignment defaults to the smallest size ({} for tempdb).",
        format_size(512)
    )?;
    Ok(ExitCode::SUCCESS)
}

fn first_sentence(s: &str) -> &str {
    s.split(':').next().unwrap_or(s).trim()
}
