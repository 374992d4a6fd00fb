//! `oio fleet install`: copy this oio to hosts that lack it or hold another build, through
//! the launcher's transport, identifying what is there by its digest (never by running it),
//! and check each copy by a hello.

use super::HostArgs;
use crate::output::style;
use anyhow::Context;
use oio_fleet::inventory::Launcher;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `oio fleet install`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio fleet install --hosts db1,db2,db3
  oio fleet install --hosts pod-0,pod-1 --transport 'kubectl exec -i {host} --' --dest /tmp
Then run with the installed agent, e.g. --launcher 'ssh {host} ~/.local/bin/oio agent --stdio'.")]
pub struct InstallArgs {
    /// Hosts and how to reach them.
    #[command(flatten)]
    pub host: HostArgs,
    /// Directory on each host for the binary (created when missing; ~/ is the remote home).
    #[arg(long, value_name = "DIR", default_value = "~/.local/bin")]
    pub dest: String,
    /// How to run a command on a host, {host} replaced (default: the launcher without its
    /// trailing `oio agent --stdio`).
    #[arg(long, value_name = "TEMPLATE")]
    pub transport: Option<String>,
    /// Longest time one host's copy may take.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::values::duration_arg)]
    pub copy_timeout: Duration,
    /// Print the outcome per host as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `oio fleet install`.
pub fn run(a: InstallArgs) -> anyhow::Result<ExitCode> {
    let path = std::env::current_exe().context("finding the running oio binary")?;
    let binary = oio_fleet::install::Binary::of(&path, crate::values::VERSION)?;
    let transport = a
        .transport
        .as_deref()
        .map(Launcher::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    let opts = a.host.options();
    let hosts: Vec<(String, Result<Vec<String>, String>)> = a
        .host
        .hosts_at_once(oio_fleet::install::PARALLEL)?
        .into_iter()
        .map(|(h, argv)| {
            let t = match &transport {
                Some(t) => Ok(t.argv(&h.name)),
                None => oio_fleet::install::transport_of(&argv).map_err(|e| e.to_string()),
            };
            (h.name, t)
        })
        .collect();
    // Hosts in parallel (a few at a time); each line as its host finishes.
    let out = oio_fleet::install::install_all(
        &hosts,
        &a.dest,
        &binary,
        &opts,
        &cancel,
        a.copy_timeout,
        &|r| {
            if a.json {
                return;
            }
            // The host's words (its shell's refusal, its agent's version) escaped.
            let p = oio_core::text::printable;
            match &r.error {
                Some(e) => style::print_error(&format!("{}: {}", p(&r.host), p(e))),
                None => {
                    let _ = writeln!(
                        crate::output::terminal::stdout(),
                        "{}: {} (oio {})",
                        p(&r.host),
                        r.action,
                        p(r.version.as_deref().unwrap_or("?"))
                    );
                }
            }
        },
    );
    if a.json {
        crate::output::print_json(&out)?;
    }
    let failed = out.iter().filter(|r| r.error.is_some()).count();
    if failed > 0 {
        style::print_warning(&format!("{failed} of {} hosts failed", out.len()));
        return Ok(ExitCode::from(crate::EXIT_CHECK_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}
