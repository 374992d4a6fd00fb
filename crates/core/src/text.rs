//! Text helpers shared by every crate.

/// `s` as a name safe in a file name, an HTML id or a URL fragment: ASCII letters, digits, `-`
/// and `_` are kept (case too: lower it first where case must not matter), every run of other
/// characters becomes one `-`, and `-` is trimmed from both ends. At most `max_chars`
/// characters, so a long workload or device name cannot make a path too long. Empty when `s`
/// has nothing to keep; callers choose their own fallback. Never contains `.` or `/`, so it
/// cannot name a parent directory or a hidden file.
pub fn slug(s: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max_chars));
    let mut pending_dash = false;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            if pending_dash && !out.is_empty() {
                if out.len() + 1 >= max_chars {
                    break;
                }
                out.push('-');
            }
            pending_dash = false;
            if out.len() >= max_chars {
                break;
            }
            out.push(c);
        } else {
            pending_dash = true;
        }
    }
    out
}

/// `s` fit to print on a terminal when it came from outside oio (a file's name or content, an
/// agent's message, a server's error): control characters, which a terminal would act on (ESC
/// sequences that set the clipboard or the title, clear the screen, move the cursor, or CR and
/// LF that start a spoofed line), are shown as `\u{..}` escapes instead. Tab is kept; so is
/// every printable character, in any script. Borrowed when there is nothing to change.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// [`printable`] for text of several lines (a message that may span lines on purpose): line
/// feeds are kept, every other control character escaped.
pub fn printable_lines(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\n') {
        return printable(s);
    }
    let parts: Vec<_> = s.split('\n').map(printable).collect();
    std::borrow::Cow::Owned(parts.join("\n"))
}

/// C0 controls but tab, DEL, C1 controls (U+0080..U+009F, which some terminals read as
/// escape sequences), and the bidirectional overrides that make text read differently than
/// it is.
fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::{printable, printable_lines, slug};

    #[test]
    fn terminal_controls_are_shown_not_acted_on() {
        // OSC 52 (clipboard), a title change, a screen clear, a spoofed line, a C1 CSI.
        let hostile = "h1\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b]0;title\x07\x1b[2J\rok\n\u{9b}31m";
        let shown = printable(hostile);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown}");
        assert!(shown.starts_with("h1\\u{1b}]52;c;"), "{shown}");
        assert!(shown.contains("\\u{d}ok\\u{a}\\u{9b}31m"), "{shown}");
        assert_eq!(printable("plain\tdisk ü €"), "plain\tdisk ü €");
        assert!(matches!(printable("plain"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(printable("a\u{202e}b"), "a\\u{202e}b");
        assert_eq!(printable_lines("one\ntwo\x1b[2J"), "one\ntwo\\u{1b}[2J");
    }

    #[test]
    fn runs_of_other_characters_become_one_dash_and_ends_are_trimmed() {
        assert_eq!(slug("PhysicalDisk(0 C:)", 40), "PhysicalDisk-0-C");
        assert_eq!(slug("--oltp  data--", 40), "oltp-data");
        assert_eq!(slug("tempdb_log", 40), "tempdb_log");
        assert_eq!(slug("../../etc/passwd", 40), "etc-passwd");
        assert_eq!(slug("Ü€ ", 40), "");
        assert_eq!(slug("", 40), "");
    }

    #[test]
    fn length_is_bounded_without_a_trailing_dash() {
        assert_eq!(slug("abcdef", 3), "abc");
        assert_eq!(slug("ab cd", 3), "ab");
        assert_eq!(slug("ab cd", 4), "ab-c");
        let long = "x".repeat(10_000);
        assert_eq!(slug(&long, 100).len(), 100);
        assert_eq!(slug("a b c d e f", 0), "");
    }
}

/// The 64-bit FNV-1a hash of `bytes`: a stable fingerprint (the same in every process and
/// release, unlike the standard library's hasher), for seeds derived from content.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod fnv_tests {
    #[test]
    fn fnv1a_matches_the_published_vectors() {
        assert_eq!(super::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}

/// A byte-stream form of [`printable_lines`] for a whole terminal stream: what oio writes
/// itself passes (text, line feeds, tabs, and the SGR colour sequences `ESC [ … m` its styles
/// emit); every other control a terminal would act on — OSC (clipboard, title), cursor moves,
/// screen clears, carriage returns, bells, C1 controls, bidirectional overrides — is written
/// as a visible `\u{..}` escape. It is the last line of defence behind the names and messages
/// escaped where they are formatted: a table cell that forgot cannot reach the terminal raw.
/// Keeps its state between writes, so a sequence split across two writes is judged whole.
#[derive(Debug, Default)]
pub struct TerminalFilter {
    /// Bytes of a sequence not yet judged: an ESC and its CSI parameters, or an incomplete
    /// UTF-8 character.
    pending: Vec<u8>,
}

/// The longest CSI parameter list kept pending; a longer one is not oio's and is escaped.
const MAX_CSI_PARAMS: usize = 32;

impl TerminalFilter {
    /// Appends the filtered form of `bytes` to `out`.
    pub fn filter(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        for &b in bytes {
            self.push(b, out);
        }
    }

    /// Writes what is still pending as escapes (at a flush or the end of the stream): an
    /// unfinished sequence is not oio's.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        let pending = std::mem::take(&mut self.pending);
        escape_bytes(&pending, out);
    }

    fn push(&mut self, b: u8, out: &mut Vec<u8>) {
        match self.pending.first().copied() {
            None => self.start(b, out),
            Some(0x1b) => self.in_escape(b, out),
            Some(lead) => self.in_utf8(lead, b, out),
        }
    }

    fn start(&mut self, b: u8, out: &mut Vec<u8>) {
        match b {
            b'\n' | b'\t' => out.push(b),
            0x1b | 0xc0..=0xff => self.pending.push(b),
            0x00..=0x1f | 0x7f => escape_char(char::from(b), out),
            // A continuation byte without a lead: invalid UTF-8, shown as the byte it is.
            0x80..=0xbf => escape_byte(b, out),
            _ => out.push(b),
        }
    }

    fn in_escape(&mut self, b: u8, out: &mut Vec<u8>) {
        let len = self.pending.len();
        if len == 1 {
            if b == b'[' {
                self.pending.push(b);
                return;
            }
        } else if b == b'm' {
            // SGR: colour and weight, the only sequence oio's styles emit.
            out.extend_from_slice(&self.pending);
            out.push(b);
            self.pending.clear();
            return;
        } else if (b.is_ascii_digit() || b == b';') && len < 2 + MAX_CSI_PARAMS {
            self.pending.push(b);
            return;
        }
        // Anything else (OSC, a CSI that moves or clears, an overlong one) is shown, and the
        // byte that ended it is judged afresh.
        self.finish(out);
        self.start(b, out);
    }

    fn in_utf8(&mut self, lead: u8, b: u8, out: &mut Vec<u8>) {
        if !(0x80..=0xbf).contains(&b) {
            self.finish(out);
            self.start(b, out);
            return;
        }
        self.pending.push(b);
        let want = match lead {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            _ => 4,
        };
        if self.pending.len() < want {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        match std::str::from_utf8(&pending) {
            Ok(s) => out.extend_from_slice(printable(s).as_bytes()),
            Err(_) => escape_bytes(&pending, out),
        }
    }
}

fn escape_char(c: char, out: &mut Vec<u8>) {
    out.extend_from_slice(c.escape_unicode().to_string().as_bytes());
}

fn escape_byte(b: u8, out: &mut Vec<u8>) {
    out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
}

/// Pending bytes that did not make a sequence oio emits: ESC as `\u{1b}`, the rest as text
/// when printable, else byte by byte.
fn escape_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            0x00..=0x1f | 0x7f => escape_char(char::from(b), out),
            0x20..=0x7e => out.push(b),
            _ => escape_byte(b, out),
        }
    }
}

#[cfg(test)]
mod terminal_filter_tests {
    use super::TerminalFilter;

    fn run(chunks: &[&[u8]]) -> String {
        let mut f = TerminalFilter::default();
        let mut out = Vec::new();
        for c in chunks {
            f.filter(c, &mut out);
        }
        f.finish(&mut out);
        String::from_utf8(out).expect("the filter writes UTF-8")
    }

    #[test]
    fn oio_styles_pass_and_hostile_controls_are_shown() {
        assert_eq!(
            run(&[b"\x1b[1mbold\x1b[0m ok\n\tx"]),
            "\x1b[1mbold\x1b[0m ok\n\tx"
        );
        assert_eq!(run(&[b"\x1b[38;5;9mred\x1b[0m"]), "\x1b[38;5;9mred\x1b[0m");
        let shown = run(&[b"a\x1b]52;c;ZXZpbA==\x07b\x1b[2J\rSPOOF"]);
        assert_eq!(shown, "a\\u{1b}]52;c;ZXZpbA==\\u{7}b\\u{1b}[2J\\u{d}SPOOF");
        // C1 CSI (U+009B) and a bidirectional override, as UTF-8.
        assert_eq!(
            run(&["x\u{9b}31m\u{202e}y ü €".as_bytes()]),
            "x\\u{9b}31m\\u{202e}y ü €"
        );
    }

    #[test]
    fn sequences_split_across_writes_are_judged_whole() {
        assert_eq!(run(&[b"\x1b", b"[3", b"1m", b"r"]), "\x1b[31mr");
        assert_eq!(run(&[b"\x1b", b"[2", b"J"]), "\\u{1b}[2J");
        assert_eq!(run(&[&[0xc2], &[0x9b], b"1"]), "\\u{9b}1");
        assert_eq!(run(&[&[0xc3], &[0xbc]]), "ü");
    }

    #[test]
    fn invalid_and_unfinished_input_is_escaped_not_dropped() {
        assert_eq!(run(&[&[0xff, b'a']]), "\\xffa");
        assert_eq!(run(&[&[0x80]]), "\\x80");
        assert_eq!(run(&[b"\x1b["]), "\\u{1b}[");
        let long = format!("\x1b[{}m", "1;".repeat(40));
        assert!(run(&[long.as_bytes()]).starts_with("\\u{1b}["));
    }
}
