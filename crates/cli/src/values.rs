//! What the grammar shares with the commands below it: the version, the colour choice and the
//! value parsers that give oio's own message on a bad value.

use clap::ValueEnum;

/// `oio --version`: the crate version and the commit it was built from (see build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("OIO_GIT_COMMIT"),
    ")"
);

/// The colour policy (the values are described in the flag's one line of help).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    // Colour when the output is a terminal.
    Auto,
    // Always colour.
    Always,
    // Never colour.
    Never,
}

// Durations (`30s`, `5m`, `500ms`) and sizes above 0 (`4k`, `1G`): the run flags' own
// parsers, one definition for every flag.
pub use oio_lab::workload::parse::{duration as duration_arg, size_bytes as size_arg};

/// Value parser for offered rates in I/Os per second, within oio's range.
pub fn rate_arg(s: &str) -> Result<f64, String> {
    oio_core::units::parse_rate(s).map_err(|e| e.to_string())
}
