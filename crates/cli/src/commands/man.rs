//! `oio man [COMMAND]`: the manual page in roff, generated from the same clap definitions that
//! parse the command line.

use anyhow::Context;
use std::io::Write;
use std::process::ExitCode;

/// Arguments of `oio man`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio man | man -l -                   read it now
  oio man run | man -l -               the page of `oio run` (oio-run(1))
  oio man > ~/.local/share/man/man1/oio.1")]
pub struct Args {
    /// A command whose page to print (oio-COMMAND(1)) instead of oio(1).
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
}

/// Writes the page of `cmd` (oio's whole grammar, or one of its commands) on stdout.
pub fn run(args: Args, mut cmd: clap::Command) -> anyhow::Result<ExitCode> {
    // Building propagates global flags (--color, --quiet) and the version into subcommands.
    cmd.build();
    let page = match &args.command {
        None => cmd,
        Some(name) => {
            let sub = cmd.find_subcommand(name).cloned().with_context(|| {
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .map(|c| c.get_name())
                    .filter(|n| *n != "help")
                    .collect();
                format!("no command '{name}'; expected one of: {}", names.join(", "))
            })?;
            // Built, the command is named oio-COMMAND for the page's title and synopsis.
            sub.version(crate::values::VERSION)
        }
    };
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(page)
        .source(format!("oio {}", crate::values::VERSION))
        .manual("oio manual")
        .render(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
