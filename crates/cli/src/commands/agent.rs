//! `oio agent --stdio`: the far end of `oio fleet`, started by a launcher (ssh, kubectl exec,
//! ip netns exec). Not a daemon: it serves one session on stdin/stdout and exits.

use anyhow::bail;
use std::io::Write;
use std::process::ExitCode;

/// Arguments of `oio agent`.
#[derive(Clone, Debug, clap::Args)]
#[command(
    after_help = "Started by `oio fleet` through a launcher such as `ssh HOST oio agent --stdio`; \
it speaks a line-delimited JSON protocol on stdin and stdout and exits when the session ends or \
its stdin closes (the controller gone: its I/O stops at once)."
)]
pub struct Args {
    /// Serve one session on stdin and stdout (the only mode).
    #[arg(long)]
    pub stdio: bool,
}

/// Runs `oio agent`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.stdio {
        // The words are `oio fleet install`'s mark of an oio binary: keep them.
        bail!(
            "{}: give --stdio (it is started by `oio fleet`)",
            oio_fleet::install::BINARY_MARK
        );
    }
    // SIGTERM or SIGHUP (sshd closing the session) stop the run cleanly, like end of input.
    let stop = crate::interrupt::stop_flag();
    let end = oio_fleet::agent::serve(
        std::io::stdin(),
        std::io::stdout(),
        crate::values::VERSION,
        stop,
    )
    .map_err(|e| anyhow::anyhow!("agent: {e}"))?;
    Ok(match end {
        oio_fleet::agent::AgentEnd::Ran { stop_reason } if stop_reason != "completed" => {
            ExitCode::from(crate::EXIT_CHECK_FAILED)
        }
        oio_fleet::agent::AgentEnd::Stopped(why) => {
            let _ = writeln!(
                crate::output::terminal::stderr(),
                "oio agent: stopped: {why}"
            );
            ExitCode::SUCCESS
        }
        _ => ExitCode::SUCCESS,
    })
}
