//! One round trip of MariaDB/MySQL statements, as SQL text: values written as literals, and
//! where each read's rows are found in the answer.

/// Statements for one round trip, and how to find what each read returned.
///
/// On MariaDB a script is one anonymous block (`BEGIN NOT ATOMIC … END`): the server answers
/// it with one packet per read and one at the end, where separate statements get one packet
/// (and wake the client once) each; a check of the rows a statement changed runs in the
/// block and stops it with an error before its `COMMIT`. MySQL has no anonymous blocks: there
/// the statements are separated by `;` and the client checks the rows changed after the
/// script ran.
pub(crate) struct Script {
    block: bool,
    sql: String,
    /// Statements written (checks not counted).
    statements: usize,
    /// Each read's result set, by its index among the script's answers.
    pub(crate) reads: Vec<usize>,
    /// Without blocks: rows the statement with this answer must have changed.
    pub(crate) checks: Vec<Check>,
}

/// A statement's changed rows the client checks after the script.
pub(crate) struct Check {
    pub(crate) answer: usize,
    pub(crate) want: u64,
    pub(crate) what: &'static str,
}

impl Script {
    pub(crate) fn new(block: bool) -> Script {
        let mut sql = String::with_capacity(4096);
        if block {
            sql.push_str("BEGIN NOT ATOMIC ");
        }
        Script {
            block,
            sql,
            statements: 0,
            reads: Vec::new(),
            checks: Vec::new(),
        }
    }

    fn separate(&mut self) {
        if self.statements > 0 {
            self.sql.push_str(";\n");
        }
        self.statements += 1;
    }

    /// The buffer to write the next statement into (one that returns no rows).
    pub(crate) fn stmt(&mut self) -> &mut String {
        self.separate();
        &mut self.sql
    }

    /// The buffer to write the next read into; its rows are the script's next read.
    pub(crate) fn read(&mut self) -> &mut String {
        let answer = if self.block {
            self.reads.len()
        } else {
            self.statements
        };
        self.reads.push(answer);
        self.separate();
        &mut self.sql
    }

    /// The previous statement must have changed `want` rows.
    pub(crate) fn changed(&mut self, want: usize, what: &'static str) {
        if self.block {
            let n = want as i64;
            let mut message = String::with_capacity(what.len() + 24);
            message.s(what).s(": not ").n(n).s(" rows changed");
            self.sql
                .s(";\nIF ROW_COUNT() <> ")
                .n(n)
                .s(" THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = ")
                .lit(&message)
                .s("; END IF");
        } else {
            self.checks.push(Check {
                answer: self.statements - 1,
                want: want as u64,
                what,
            });
        }
    }

    /// The script's text, and how many answers the server sends for it.
    pub(crate) fn finish(&mut self) -> usize {
        if self.block {
            self.sql.push_str("; END");
            self.reads.len() + 1
        } else {
            self.statements
        }
    }

    pub(crate) fn sql(&self) -> &str {
        &self.sql
    }
}

/// A text literal. Printable ASCII without a backslash is quoted with `''` for `'`, which
/// means the same with and without `NO_BACKSLASH_ESCAPES`; anything else is written as
/// UTF-8 bytes in hex.
pub(crate) fn text(out: &mut String, s: &str) {
    if s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'\\') {
        out.push('\'');
        for c in s.chars() {
            if c == '\'' {
                out.push('\'');
            }
            out.push(c);
        }
        out.push('\'');
    } else {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        out.push_str("_utf8mb4 X'");
        for b in s.bytes() {
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
        out.push('\'');
    }
}

/// Writing SQL text: literal pieces and values appended in turn. `format!`'s machinery
/// (arguments, padding, a formatter per value) was a sixth of the driver's CPU for the few
/// kilobytes of SQL a transaction sends.
pub(crate) trait SqlText {
    /// A piece of SQL as it is.
    fn s(&mut self, piece: &str) -> &mut Self;
    /// An integer.
    fn n(&mut self, v: i64) -> &mut Self;
    /// Integers separated by `, `.
    fn ns(&mut self, vs: &[i64]) -> &mut Self;
    /// An amount of money: two decimals, as the schema's `NUMERIC(…, 2)` columns hold it.
    fn money(&mut self, v: f64) -> &mut Self;
    /// A text literal ([`text`]).
    fn lit(&mut self, v: &str) -> &mut Self;
}

impl SqlText for String {
    fn s(&mut self, piece: &str) -> &mut Self {
        self.push_str(piece);
        self
    }

    fn n(&mut self, v: i64) -> &mut Self {
        self.push_str(itoa::Buffer::new().format(v));
        self
    }

    fn ns(&mut self, vs: &[i64]) -> &mut Self {
        for (k, v) in vs.iter().enumerate() {
            if k > 0 {
                self.push_str(", ");
            }
            self.n(*v);
        }
        self
    }

    fn money(&mut self, v: f64) -> &mut Self {
        // Whole cents first: the amounts are cents already (prices and payments have two
        // decimals), so rounding here only removes binary noise.
        let cents = (v * 100.0).round() as i64;
        if cents < 0 {
            self.push('-');
        }
        let c = cents.unsigned_abs();
        self.push_str(itoa::Buffer::new().format(c / 100));
        self.push('.');
        self.push(char::from(b'0' + (c % 100 / 10) as u8));
        self.push(char::from(b'0' + (c % 10) as u8));
        self
    }

    fn lit(&mut self, v: &str) -> &mut Self {
        text(self, v);
        self
    }
}
