//! Telemetry files as lines of text, read as a stream: memory does not grow with the file.
//!
//! Encodings: a byte-order mark says UTF-8, UTF-16LE or UTF-16BE (perfmon's `relog` and
//! PowerShell write UTF-16); without one, UTF-16 is told from its content (every other byte 0
//! in mostly ASCII text); otherwise the text is UTF-8, and a file that turns out not to
//! be UTF-8 is read as Windows-1252 (what perfmon calls ANSI on Western systems). Lines end at
//! `\n`, `\r\n` or a lone `\r`, so line numbers are those an editor shows. A line longer than
//! [`MAX_LINE`] bytes is an error naming it (a binary file or `/dev/zero` stops there).

use crate::TelemetryError;
use std::io::Read;

/// Longest line accepted, in bytes (1 MiB). Perfmon rows of thousands of counters are a few
/// hundred KiB at most.
pub const MAX_LINE: usize = 1 << 20;

/// Largest JSON document read whole (256 MiB): fio json+ of many jobs is a few MiB.
pub const MAX_JSON: u64 = 256 << 20;

/// The text encoding a file was read in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 without a byte-order mark (ASCII included).
    Utf8,
    /// UTF-8 with a byte-order mark.
    Utf8Bom,
    /// UTF-16 little-endian (byte-order mark FF FE).
    Utf16Le,
    /// UTF-16 big-endian (byte-order mark FE FF).
    Utf16Be,
    /// Windows-1252 ("ANSI"), assumed for text that is not valid UTF-8.
    Windows1252,
}

impl Encoding {
    /// The name shown to people.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf8Bom => "UTF-8 with BOM",
            Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
            Encoding::Windows1252 => "Windows-1252",
        }
    }
}

const CHUNK: usize = 64 << 10;

/// Lines of a telemetry file (see the module documentation).
pub struct TextLines<R> {
    src: R,
    file: String,
    /// Text read and (for UTF-16) decoded, not yet handed out as lines.
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    started: bool,
    decoder: Option<encoding_rs::Decoder>,
    encoding: Encoding,
    non_ascii_utf8_seen: bool,
    line_no: usize,
    line: String,
}

/// UTF-16 without a byte-order mark, told from its content (Windows tools write it so): in
/// text of mostly ASCII characters every other byte is 0. Some(true) for little-endian (the
/// zeros at odd offsets), Some(false) for big-endian; None for anything else, binary data of
/// zeros included (there both halves are 0).
fn utf16_without_bom(head: &[u8]) -> Option<bool> {
    let head = &head[..head.len().min(1024) & !1];
    if head.len() < 8 {
        return None;
    }
    let pairs = head.len() / 2;
    let zeros = |first: usize| {
        head.iter()
            .skip(first)
            .step_by(2)
            .filter(|b| **b == 0)
            .count()
    };
    let (even, odd) = (zeros(0), zeros(1));
    let most = pairs * 9 / 10;
    let few = pairs / 10;
    if odd >= most && even <= few {
        Some(true)
    } else if even >= most && odd <= few {
        Some(false)
    } else {
        None
    }
}

impl<R: Read> TextLines<R> {
    /// Lines of `src`; `file` names it in errors.
    pub fn new(file: &str, src: R) -> Self {
        TextLines {
            src,
            file: file.to_string(),
            buf: Vec::new(),
            pos: 0,
            eof: false,
            started: false,
            decoder: None,
            encoding: Encoding::Utf8,
            non_ascii_utf8_seen: false,
            line_no: 0,
            line: String::new(),
        }
    }

    /// The file name given to [`new`](Self::new).
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The encoding detected so far (Windows-1252 is known only once a non-UTF-8 line is read).
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The 1-based number of the last line returned.
    pub fn line_no(&self) -> usize {
        self.line_no
    }

    fn io_error(&self, e: std::io::Error) -> TelemetryError {
        TelemetryError::Io {
            file: self.file.clone(),
            source: e,
        }
    }

    /// Reads the next chunk into `buf`; false at the end of the input.
    fn fill(&mut self) -> Result<bool, TelemetryError> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let mut raw = vec![0u8; CHUNK];
        let mut n = loop {
            match self.src.read(&mut raw) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io_error(e)),
            }
        };
        let mut start = 0;
        if !self.started {
            self.started = true;
            // A byte-order mark needs up to 3 bytes; short reads are rare but possible.
            while n < 3 {
                match self.src.read(&mut raw[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(self.io_error(e)),
                }
            }
            if raw[..n].starts_with(&[0xEF, 0xBB, 0xBF]) {
                self.encoding = Encoding::Utf8Bom;
                start = 3;
            } else if raw[..n].starts_with(&[0xFF, 0xFE]) {
                self.encoding = Encoding::Utf16Le;
                self.decoder = Some(encoding_rs::UTF_16LE.new_decoder_without_bom_handling());
                start = 2;
            } else if raw[..n].starts_with(&[0xFE, 0xFF]) {
                self.encoding = Encoding::Utf16Be;
                self.decoder = Some(encoding_rs::UTF_16BE.new_decoder_without_bom_handling());
                start = 2;
            } else if let Some(le) = utf16_without_bom(&raw[..n]) {
                self.encoding = if le {
                    Encoding::Utf16Le
                } else {
                    Encoding::Utf16Be
                };
                let enc = if le {
                    encoding_rs::UTF_16LE
                } else {
                    encoding_rs::UTF_16BE
                };
                self.decoder = Some(enc.new_decoder_without_bom_handling());
            }
        }
        let last = n == 0;
        if let Some(dec) = &mut self.decoder {
            // Decoding can only grow UTF-16 by half again; reserve what the decoder asks.
            let mut out = String::with_capacity(
                dec.max_utf8_buffer_length(n - start)
                    .unwrap_or(3 * CHUNK)
                    .max(16),
            );
            let (_, _, _) = dec.decode_to_string(&raw[start..n], &mut out, last);
            self.buf.extend_from_slice(out.as_bytes());
        } else {
            self.buf.extend_from_slice(&raw[start..n]);
        }
        if last {
            self.eof = true;
        }
        Ok(!last)
    }

    /// The first `max` bytes of text (decoded, invalid UTF-8 replaced) without consuming
    /// them, for format detection.
    pub fn peek(&mut self, max: usize) -> Result<String, TelemetryError> {
        while self.buf.len() - self.pos < max && self.fill()? {}
        let end = (self.pos + max).min(self.buf.len());
        Ok(String::from_utf8_lossy(&self.buf[self.pos..end]).into_owned())
    }

    /// The next line without its line end, and its 1-based number; `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<(usize, &str)>, TelemetryError> {
        let mut scanned = 0;
        let (end, next) = loop {
            let hay = &self.buf[self.pos + scanned..];
            if let Some(i) = hay.iter().position(|&b| b == b'\n' || b == b'\r') {
                let at = self.pos + scanned + i;
                if self.buf[at] == b'\r' && at + 1 == self.buf.len() && !self.eof {
                    // A CR at the end of the chunk may be the first half of CRLF.
                    scanned += i;
                    // `fill` moves the unread text to the front and `pos` to 0: `scanned`
                    // counts from `pos`, so it stays valid.
                    self.fill()?;
                    continue;
                }
                let crlf = self.buf[at] == b'\r' && self.buf.get(at + 1) == Some(&b'\n');
                break (at, at + 1 + usize::from(crlf));
            }
            scanned = self.buf.len() - self.pos;
            if scanned > MAX_LINE {
                return Err(self.too_long());
            }
            if !self.fill()? {
                if self.buf.len() == self.pos {
                    return Ok(None);
                }
                let end = self.buf.len();
                break (end, end);
            }
        };
        if end - self.pos > MAX_LINE {
            return Err(self.too_long());
        }
        self.line_no += 1;
        let bytes = &self.buf[self.pos..end];
        self.line.clear();
        if self.encoding == Encoding::Windows1252 {
            let (text, _) = encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes);
            self.line.push_str(&text);
        } else {
            match std::str::from_utf8(bytes) {
                Ok(s) => {
                    self.non_ascii_utf8_seen |= !s.is_ascii();
                    self.line.push_str(s);
                }
                // Earlier lines were ASCII, so they read the same in Windows-1252.
                Err(_) if self.encoding == Encoding::Utf8 && !self.non_ascii_utf8_seen => {
                    self.encoding = Encoding::Windows1252;
                    let (text, _) = encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes);
                    self.line.push_str(&text);
                }
                Err(e) => {
                    return Err(TelemetryError::parse(
                        &self.file,
                        self.line_no,
                        format!(
                            "not valid {} (byte {} of the line is not part of a character) though earlier lines were; expected one encoding for the whole file",
                            self.encoding.name(),
                            e.valid_up_to() + 1
                        ),
                    ))
                }
            }
        }
        self.pos = next;
        Ok(Some((self.line_no, &self.line)))
    }

    fn too_long(&self) -> TelemetryError {
        TelemetryError::parse(
            &self.file,
            self.line_no + 1,
            format!(
                "line longer than {} KiB; expected text lines (is this a binary file or a device?)",
                MAX_LINE >> 10
            ),
        )
    }

    /// The rest of the input as one string, for JSON formats; at most [`MAX_JSON`] bytes.
    pub fn rest_as_string(&mut self) -> Result<String, TelemetryError> {
        let mut out = String::new();
        let mut first = true;
        while let Some((_, l)) = self.next_line()? {
            if !first {
                out.push('\n');
            }
            first = false;
            out.push_str(l);
            if out.len() as u64 > MAX_JSON {
                return Err(TelemetryError::invalid(
                    &self.file,
                    format!(
                        "larger than {} MiB; expected a JSON document of telemetry",
                        MAX_JSON >> 20
                    ),
                ));
            }
        }
        Ok(out)
    }
}

impl<'a> TextLines<&'a [u8]> {
    /// Lines of text already in memory.
    pub fn from_str(file: &str, text: &'a str) -> Self {
        TextLines::new(file, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(bytes: &[u8]) -> (Vec<(usize, String)>, Encoding) {
        let mut t = TextLines::new("t", bytes);
        let mut v = Vec::new();
        while let Some((n, l)) = t.next_line().unwrap() {
            v.push((n, l.to_string()));
        }
        (v, t.encoding())
    }

    #[test]
    fn line_ends_as_editors_count_them() {
        let (v, e) = all(b"a\r\nb\rc\nd");
        assert_eq!(e, Encoding::Utf8);
        let want: Vec<(usize, String)> = [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
            .iter()
            .map(|(n, s)| (*n, s.to_string()))
            .collect();
        assert_eq!(v, want);
        assert_eq!(all(b"").0.len(), 0);
        assert_eq!(all(b"x\n").0.len(), 1);
    }

    #[test]
    fn encodings_are_detected() {
        let text = "Zeit;Größe\r\nµs\r\n";
        let mut le = vec![0xFF, 0xFE];
        let mut be = vec![0xFE, 0xFF];
        for u in text.encode_utf16() {
            le.extend_from_slice(&u.to_le_bytes());
            be.extend_from_slice(&u.to_be_bytes());
        }
        let mut bom = vec![0xEF, 0xBB, 0xBF];
        bom.extend_from_slice(text.as_bytes());
        let (ansi, _, _) = encoding_rs::WINDOWS_1252.encode(text);
        for (bytes, enc) in [
            (text.as_bytes().to_vec(), Encoding::Utf8),
            (bom, Encoding::Utf8Bom),
            (le, Encoding::Utf16Le),
            (be, Encoding::Utf16Be),
            (ansi.into_owned(), Encoding::Windows1252),
        ] {
            let (v, e) = all(&bytes);
            assert_eq!(e, enc);
            assert_eq!(v[0].1, "Zeit;Größe", "{enc:?}");
            assert_eq!(v[1], (2, "µs".to_string()), "{enc:?}");
        }
    }

    #[test]
    fn long_lines_are_refused_with_their_number() {
        let mut b = b"ok\n".to_vec();
        b.extend(std::iter::repeat_n(0u8, MAX_LINE + 10));
        let mut t = TextLines::new("z", &b[..]);
        assert!(t.next_line().unwrap().is_some());
        let e = t.next_line().unwrap_err().to_string();
        assert!(e.starts_with("z:2:") && e.contains("1024 KiB"), "{e}");
    }

    #[test]
    fn utf16_without_a_bom_is_told_from_its_content() {
        let text = "\"(PDH-CSV 4.0)\",\"\\\\h\\PhysicalDisk(0 C:)\\Disk Reads/sec\"\r\nnext\r\n";
        let le: Vec<u8> = text.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
        let (v, e) = all(&le);
        assert_eq!(e, Encoding::Utf16Le);
        assert_eq!(v[0].1, text.lines().next().unwrap());
        assert_eq!(v[1].1, "next");
        let be: Vec<u8> = text.encode_utf16().flat_map(|u| u.to_be_bytes()).collect();
        assert_eq!(all(&be).1, Encoding::Utf16Be);
        // Zeros everywhere are not UTF-16 (nor text).
        assert_eq!(utf16_without_bom(&[0u8; 64]), None);
        assert_eq!(utf16_without_bom(b"plain ascii text here"), None);
    }
}
