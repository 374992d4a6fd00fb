use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = oio::Cli::parse();
    match oio::run(cli) {
        Ok(code) => code,
        Err(err) => oio::report_error(&err),
    }
}
