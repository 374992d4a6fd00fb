//! Terminal output: colour policy, the live line, the run summary, the repeat summary, the
//! comparison, sweep and blend tables.

pub mod blend;
pub mod characterize;
pub mod compare;
pub mod fleet;
pub mod header;
pub mod live;
pub mod metrics;
pub mod repeat;
pub mod sql;
pub mod study;
pub mod style;
pub mod summary;
pub mod sweep;
pub mod terminal;
pub mod tpcc;

use std::io::Write;

/// Prints `value` as one pretty JSON document on stdout, the only thing `--json` puts there.
pub fn print_json<T: serde::Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    // Stdout is line-buffered: unbuffered here, a result would cost one write per line.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}
