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
