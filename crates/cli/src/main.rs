use clap::Parser;
use std::process::ExitCode;

/// The database drivers allocate for every value they read; glibc's malloc was a sixth of
/// the MariaDB driver's CPU per transaction.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = oio::Cli::parse();
    match oio::run(cli) {
        Ok(code) => code,
        Err(err) => oio::report_error(&err),
    }
}
