//! The one way human-readable text reaches the terminal: stdout and stderr through
//! [`oio_core::text::TerminalFilter`], so a name or message from a document, an agent or a
//! server that was not escaped where it was formatted still cannot act on the terminal.
//! Machine output (`--json`, exported job files, a report page on stdout, the agent protocol)
//! is data and goes to `std::io::stdout()` unfiltered.

use oio_core::text::TerminalFilter;
use std::io::Write;

/// A writer that filters what it is given for the terminal (see the module).
pub struct Terminal<W: Write> {
    inner: W,
    filter: TerminalFilter,
    buf: Vec<u8>,
}

impl<W: Write> Terminal<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Self {
        Terminal {
            inner,
            filter: TerminalFilter::default(),
            buf: Vec::new(),
        }
    }
}

impl<W: Write> Write for Terminal<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.clear();
        self.filter.filter(bytes, &mut self.buf);
        self.inner.write_all(&self.buf)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // A sequence split across writes stays pending: a flush mid-line must not break
        // oio's own colours.
        self.inner.flush()
    }
}

impl<W: Write> Drop for Terminal<W> {
    fn drop(&mut self) {
        self.buf.clear();
        self.filter.finish(&mut self.buf);
        let _ = self.inner.write_all(&self.buf);
        let _ = self.inner.flush();
    }
}

/// Locked stdout for human-readable text, with the colour policy of [`super::style`].
pub fn stdout() -> Terminal<anstream::AutoStream<std::io::StdoutLock<'static>>> {
    Terminal::new(anstream::stdout().lock())
}

/// Locked stderr for human-readable text, with the colour policy of [`super::style`].
pub fn stderr() -> Terminal<anstream::AutoStream<std::io::StderrLock<'static>>> {
    Terminal::new(anstream::stderr().lock())
}

/// Unlocked stdout for a writer held across threads' turns (a sink's `--quiet` paths).
pub fn stdout_unlocked() -> Terminal<anstream::Stdout> {
    Terminal::new(anstream::stdout())
}
