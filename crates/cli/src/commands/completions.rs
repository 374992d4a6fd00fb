//! `oio completions SHELL`: a completion script generated from the same clap definitions that
//! parse the command line, so it never drifts from the real flags.

use std::io::Write;
use std::process::ExitCode;

/// Arguments of `oio completions`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  source <(oio completions bash)                      bash, this shell only
  oio completions bash > ~/.local/share/bash-completion/completions/oio
  oio completions zsh > ~/.zfunc/_oio                 with fpath+=(~/.zfunc) before compinit
  oio completions fish > ~/.config/fish/completions/oio.fish")]
pub struct Args {
    /// The shell to write the script for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Writes the script for `cmd` (oio's whole grammar) on stdout.
pub fn run(args: Args, mut cmd: clap::Command) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    clap_complete::generate(args.shell, &mut cmd, "oio", &mut out);
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
