//! `oio fleet fio`: drive fio's own client/server mode on hosts already running `fio --server`
//! and keep its results as oio results (the merged `All clients` one and each client's).

use crate::output::style;
use crate::results::{check_destination, result_file_name, write_json_atomic};
use anyhow::{bail, Context};
use std::io::Read;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// Largest fio output read (a JSON result of many clients and jobs stays far below).
const MAX_OUTPUT: u64 = 256 << 20;

/// Arguments of `oio fleet fio`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  oio export oltp-data --to fio --target /data/fio.dat -o oltp.fio
  oio fleet fio --hosts db1,db2,db3 oltp.fio          (each host runs `fio --server`)
  oio fleet fio --hosts 10.0.0.1:8766,10.0.0.2:8766 job.fio")]
pub struct FioArgs {
    /// fio servers, comma-separated: HOST or HOST:PORT (fio's default port is 8765).
    #[arg(long, value_name = "HOSTS")]
    pub hosts: String,
    /// The fio job file every server runs (`oio export --to fio` writes one).
    #[arg(value_name = "JOBFILE")]
    pub job: PathBuf,
    /// The fio binary.
    #[arg(long, value_name = "PATH", default_value = "fio")]
    pub fio: PathBuf,
    /// Longest time fio may take before it is stopped.
    #[arg(long, value_name = "DURATION", default_value = "2h", value_parser = crate::values::duration_arg)]
    pub timeout: Duration,
    /// Directory for the results.
    #[arg(long, value_name = "DIR", default_value = "oio-results")]
    pub out: PathBuf,
    /// Print the merged result as JSON on stdout (and nothing else there).
    #[arg(long)]
    pub json: bool,
    /// A name for these results (report, compare and diagnose show it); also names the
    /// results' directory.
    #[arg(long, value_name = "NAME", value_parser = crate::args::parse_label)]
    pub label: Option<String>,
}

/// Runs `oio fleet fio`.
pub fn run(a: FioArgs) -> anyhow::Result<ExitCode> {
    if !a.job.is_file() {
        bail!("{}: no such job file", a.job.display());
    }
    check_destination(&a.out, "--out DIR")?;
    let mut cmd = Command::new(&a.fio);
    cmd.arg("--output-format=json");
    let hosts: Vec<&str> = a
        .hosts
        .split(',')
        .filter(|h| !h.trim().is_empty())
        .collect();
    if hosts.is_empty() {
        bail!("--hosts: no hosts");
    }
    for h in &hosts {
        let c = oio_fleet::fio::client_arg(h).map_err(|e| anyhow::anyhow!("--hosts: {e}"))?;
        cmd.arg(format!("--client={c}")).arg(&a.job);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", a.fio.display()))?;
    let (mut so, mut se) = (
        child.stdout.take().expect("piped"),
        child.stderr.take().expect("piped"),
    );
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = (&mut so).take(MAX_OUTPUT).read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = (&mut se).take(1 << 20).read_to_end(&mut v);
        String::from_utf8_lossy(&v).trim().to_string()
    });
    let deadline = Instant::now() + a.timeout;
    let stop = crate::interrupt::stop_flag();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if Instant::now() >= deadline || stop.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "fio did not finish within {:?} (or was interrupted); it was stopped",
                a.timeout
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned();
    let err = err.join().unwrap_or_default();
    if !status.success() {
        bail!("fio failed ({status}): {err}");
    }
    let (mut merged, per) = oio_fleet::fio::import("fio --client output", &text)
        .map_err(|e| anyhow::anyhow!("{e}; fio said: {err}"))?;
    let stamp = oio_core::host::now_rfc3339();
    let dir = a.out.join(
        result_file_name("fleet-fio", &stamp, a.label.as_deref().unwrap_or("clients"))
            .trim_end_matches(".json"),
    );
    for (name, mut r) in per {
        r.envelope.command = std::env::args().collect();
        r.envelope.label = a.label.clone();
        write_json_atomic(&dir, &format!("{name}.json"), &r)?;
    }
    merged.envelope.command = std::env::args().collect();
    merged.envelope.label = a.label.clone();
    merged.envelope.warnings.push(format!(
        "fio's merged \"All clients\" record of {} fio servers ({}); per-client results beside it, numbered in fio's order",
        hosts.len(),
        a.hosts
    ));
    let path = write_json_atomic(&dir, "merged.json", &merged)?;
    if a.json {
        crate::output::print_json(&merged)?;
    } else if !style::quiet() {
        let t = &merged.summary.total;
        let _ = writeln!(
            crate::output::terminal::stdout(),
            "merged (fio's All clients): {:.1} IOPS, {:.1} MiB/s",
            t.iops,
            t.bytes_per_sec / 1048576.0
        );
    }
    style::print_saved("result", &path, a.json);
    Ok(ExitCode::SUCCESS)
}
