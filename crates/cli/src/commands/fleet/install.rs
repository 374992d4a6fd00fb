//! `oio fleet install`: copy this oio to hosts that lack it or run another version, through
//! the launcher's transport, and check each copy by a hello.

use super::HostArgs;
use crate::output::style;
use anyhow::Context;
use oio_fleet::inventory::Launcher;
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
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::cli::duration_arg)]
    pub copy_timeout: Duration,
    /// Print the outcome per host as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Runs `oio fleet install`.
pub fn run(a: InstallArgs) -> anyhow::Result<ExitCode> {
    let binary = std::env::current_exe().context("finding the running oio binary")?;
    let transport = a
        .transport
        .as_deref()
        .map(Launcher::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let cancel = oio_core::Cancel::from_flag(crate::interrupt::stop_flag());
    let opts = a.host.options();
    let mut out = Vec::new();
    // One host after another: hosts may share a file system (NFS homes), and a copy per
    // host at once could saturate the controller's uplink.
    for (h, argv) in a.host.hosts()? {
        if cancel.is_cancelled() {
            break;
        }
        let t = match &transport {
            Some(t) => Ok(t.argv(&h.name)),
            None => oio_fleet::install::transport_of(&argv),
        };
        let r = match t {
            Ok(t) => oio_fleet::install::install(
                &h.name,
                &t,
                &a.dest,
                &binary,
                &opts,
                &cancel,
                a.copy_timeout,
            ),
            Err(e) => oio_fleet::install::Installed {
                host: h.name.clone(),
                action: "failed".into(),
                version: None,
                error: Some(e),
            },
        };
        if !a.json {
            match &r.error {
                Some(e) => style::print_error(&format!("{}: {e}", r.host)),
                None => println!(
                    "{}: {} (oio {})",
                    r.host,
                    r.action,
                    r.version.as_deref().unwrap_or("?")
                ),
            }
        }
        out.push(r);
    }
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
