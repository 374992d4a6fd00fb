//! pgbench's expression language: lexing and parsing (once, at load) and evaluation.
//!
//! Precedence, loosest first, as pgbench's grammar has it: `OR`; `AND`; `NOT`; `IS`, `ISNULL`,
//! `NOTNULL` (not associative); comparisons (not associative); the bitwise `| # & << >>` (left);
//! `+ -`; `* / %`; unary `+ - ~`.

use super::random::{self, Rng};
use super::Value;

/// One character of a meta-command with its place in the file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PChar {
    pub c: char,
    pub line: u32,
    pub col: u32,
}

/// A place in the file (the file is the command's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct At {
    pub line: u32,
    pub col: u32,
}

/// A load-time error of an expression: where and what.
#[derive(Debug)]
pub(crate) struct ParseError {
    pub at: At,
    pub message: String,
}

/// A run-time error of an expression.
#[derive(Debug)]
pub(crate) struct EvalError {
    pub at: At,
    pub message: String,
}

/// How deep an expression may nest (parentheses, operators, calls): deeper is refused at load,
/// so evaluation (recursive) can never exhaust a worker's stack.
pub(crate) const MAX_DEPTH: u32 = 128;

/// The built-in functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    Abs,
    Debug,
    Double,
    Exp,
    Greatest,
    Hash,
    HashFnv1a,
    HashMurmur2,
    Int,
    Least,
    Ln,
    Mod,
    Permute,
    Pi,
    Pow,
    Random,
    RandomExponential,
    RandomGaussian,
    RandomZipfian,
    Sqrt,
}

/// (name, function, fewest arguments, most arguments (None: any number)).
const FUNCS: &[(&str, Func, usize, Option<usize>)] = &[
    ("abs", Func::Abs, 1, Some(1)),
    ("debug", Func::Debug, 1, Some(1)),
    ("double", Func::Double, 1, Some(1)),
    ("exp", Func::Exp, 1, Some(1)),
    ("greatest", Func::Greatest, 1, None),
    ("hash", Func::Hash, 1, Some(2)),
    ("hash_fnv1a", Func::HashFnv1a, 1, Some(2)),
    ("hash_murmur2", Func::HashMurmur2, 1, Some(2)),
    ("int", Func::Int, 1, Some(1)),
    ("least", Func::Least, 1, None),
    ("ln", Func::Ln, 1, Some(1)),
    ("mod", Func::Mod, 2, Some(2)),
    ("permute", Func::Permute, 2, Some(3)),
    ("pi", Func::Pi, 0, Some(0)),
    ("pow", Func::Pow, 2, Some(2)),
    ("power", Func::Pow, 2, Some(2)),
    ("random", Func::Random, 2, Some(2)),
    ("random_exponential", Func::RandomExponential, 3, Some(3)),
    ("random_gaussian", Func::RandomGaussian, 3, Some(3)),
    ("random_zipfian", Func::RandomZipfian, 3, Some(3)),
    ("sqrt", Func::Sqrt, 1, Some(1)),
];

/// Binary operators on numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

/// What `IS` tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IsWhat {
    Null,
    True,
    False,
}

/// An expression, parsed.
#[derive(Clone, Debug)]
pub(crate) enum Expr {
    Const(Value),
    Var {
        slot: u32,
        at: At,
    },
    Bin {
        op: Op,
        l: Box<Expr>,
        r: Box<Expr>,
        at: At,
    },
    Not {
        e: Box<Expr>,
        at: At,
    },
    And {
        l: Box<Expr>,
        r: Box<Expr>,
        at: At,
    },
    Or {
        l: Box<Expr>,
        r: Box<Expr>,
        at: At,
    },
    Is {
        e: Box<Expr>,
        what: IsWhat,
        negate: bool,
    },
    Case {
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
    Call {
        f: Func,
        args: Vec<Expr>,
        at: At,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    /// 9223372036854775808: valid only right after a unary minus.
    MaxPlusOne,
    Double(f64),
    Var(String),
    Ident(String),
    Sym(&'static str),
    Eof,
}

fn is_alpha(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || !c.is_ascii()
}

fn is_alnum(c: char) -> bool {
    is_alpha(c) || c.is_ascii_digit()
}

/// The number starting at `text[i]`: its token and the index just past it.
fn lex_number(text: &[PChar], mut i: usize) -> Result<(Tok, usize), ParseError> {
    let at = |i: usize| At {
        line: text[i].line,
        col: text[i].col,
    };
    let here = at(i);
    let start = i;
    let mut double = false;
    while i < text.len() && text[i].c.is_ascii_digit() {
        i += 1;
    }
    if i < text.len() && text[i].c == '.' {
        double = true;
        i += 1;
        while i < text.len() && text[i].c.is_ascii_digit() {
            i += 1;
        }
    }
    if i < text.len() && matches!(text[i].c, 'e' | 'E') {
        let mut j = i + 1;
        if j < text.len() && matches!(text[j].c, '+' | '-') {
            j += 1;
        }
        if j < text.len() && text[j].c.is_ascii_digit() {
            double = true;
            i = j;
            while i < text.len() && text[i].c.is_ascii_digit() {
                i += 1;
            }
        }
    }
    if i < text.len() && is_alpha(text[i].c) {
        return Err(ParseError {
            at: at(i),
            message: format!(
                "unexpected '{}' right after a number: expected an operator, ')' or the end",
                text[i].c
            ),
        });
    }
    let s: String = text[start..i].iter().map(|p| p.c).collect();
    let shown = if s.len() > 40 {
        format!("{}…", &s[..40])
    } else {
        s.clone()
    };
    let tok = if double {
        let v: f64 = s.parse().map_err(|_| ParseError {
            at: here,
            message: format!("invalid number '{shown}'"),
        })?;
        if !v.is_finite() {
            return Err(ParseError {
                at: here,
                message: format!("number '{shown}' is out of the double range"),
            });
        }
        Tok::Double(v)
    } else if s.trim_start_matches('0') == "9223372036854775808" {
        Tok::MaxPlusOne
    } else {
        let v: i64 = s.parse().map_err(|_| ParseError {
            at: here,
            message: format!(
                "integer '{shown}' is out of range (a bigint: -9223372036854775808 to 9223372036854775807)"
            ),
        })?;
        Tok::Int(v)
    };
    Ok((tok, i))
}

/// Splits an expression into tokens, each with its place.
fn lex(text: &[PChar], end: At) -> Result<Vec<(Tok, At)>, ParseError> {
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| At {
        line: text[i].line,
        col: text[i].col,
    };
    while i < text.len() {
        let c = text[i].c;
        let here = at(i);
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && text.get(i + 1).is_some_and(|n| n.c.is_ascii_digit()))
        {
            let (tok, next) = lex_number(text, i)?;
            out.push((tok, here));
            i = next;
            continue;
        }
        if c == ':' {
            let start = i + 1;
            let mut j = start;
            while j < text.len() && is_alnum(text[j].c) {
                j += 1;
            }
            if j == start {
                return Err(ParseError {
                    at: here,
                    message: "':' must start a variable name (:name)".into(),
                });
            }
            out.push((Tok::Var(text[start..j].iter().map(|p| p.c).collect()), here));
            i = j;
            continue;
        }
        if is_alpha(c) {
            let start = i;
            while i < text.len() && is_alnum(text[i].c) {
                i += 1;
            }
            out.push((
                Tok::Ident(text[start..i].iter().map(|p| p.c).collect()),
                here,
            ));
            continue;
        }
        let next = text.get(i + 1).map(|p| p.c);
        let two = match (c, next) {
            ('<', Some('=')) => Some("<="),
            ('>', Some('=')) => Some(">="),
            ('<', Some('>')) => Some("<>"),
            ('!', Some('=')) => Some("!="),
            ('<', Some('<')) => Some("<<"),
            ('>', Some('>')) => Some(">>"),
            _ => None,
        };
        if let Some(s) = two {
            out.push((Tok::Sym(s), here));
            i += 2;
            continue;
        }
        let one = match c {
            '+' => "+",
            '-' => "-",
            '*' => "*",
            '/' => "/",
            '%' => "%",
            '(' => "(",
            ')' => ")",
            ',' => ",",
            '<' => "<",
            '>' => ">",
            '=' => "=",
            '&' => "&",
            '|' => "|",
            '#' => "#",
            '~' => "~",
            _ => {
                return Err(ParseError {
                    at: here,
                    message: format!(
                        "unexpected character '{}' in an expression",
                        c.escape_debug()
                    ),
                })
            }
        };
        out.push((Tok::Sym(one), here));
        i += 1;
    }
    out.push((Tok::Eof, end));
    Ok(out)
}

/// Parses `text` (the expression of `\set`, `\if`, `\elif`), interning variable names through
/// `intern`. `end` is the place just past the text (where "expected more" errors point).
pub(crate) fn parse(
    text: &[PChar],
    end: At,
    intern: &mut dyn FnMut(&str) -> u32,
    default_seed: u32,
) -> Result<Expr, ParseError> {
    let toks = lex(text, end)?;
    let mut p = Parser {
        toks,
        i: 0,
        intern,
        default_seed,
        nest: 0,
    };
    if p.peek() == &Tok::Eof {
        return Err(p.error("expected an expression"));
    }
    let (e, _) = p.or()?;
    if p.peek() != &Tok::Eof {
        return Err(p.error("expected an operator or the end of the expression"));
    }
    Ok(e)
}

struct Parser<'a> {
    toks: Vec<(Tok, At)>,
    i: usize,
    intern: &'a mut dyn FnMut(&str) -> u32,
    default_seed: u32,
    nest: u32,
}

/// An expression and its depth.
type Node = (Expr, u32);

fn kw(t: &Tok, word: &str) -> bool {
    matches!(t, Tok::Ident(s) if s.eq_ignore_ascii_case(word))
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Int(v) => format!("'{v}'"),
        Tok::MaxPlusOne => "'9223372036854775808'".into(),
        Tok::Double(v) => format!("'{v}'"),
        Tok::Var(s) => format!("':{s}'"),
        Tok::Ident(s) => format!("'{s}'"),
        Tok::Sym(s) => format!("'{s}'"),
        Tok::Eof => "the end of the expression".into(),
    }
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.i].0
    }
    fn at(&self) -> At {
        self.toks[self.i].1
    }
    fn bump(&mut self) -> (Tok, At) {
        let t = self.toks[self.i].clone();
        if self.i + 1 < self.toks.len() {
            self.i += 1;
        }
        t
    }
    fn error(&self, expected: &str) -> ParseError {
        ParseError {
            at: self.at(),
            message: format!("unexpected {}: {expected}", describe(self.peek())),
        }
    }
    fn sym(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Sym(x) if *x == s)
    }
    fn depth(&self, d: u32, at: At) -> Result<u32, ParseError> {
        if d > MAX_DEPTH {
            Err(ParseError {
                at,
                message: format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
            })
        } else {
            Ok(d)
        }
    }
    fn enter(&mut self) -> Result<(), ParseError> {
        self.nest += 1;
        self.depth(self.nest, self.at()).map(|_| ())
    }

    fn or(&mut self) -> Result<Node, ParseError> {
        let (mut l, mut d) = self.and()?;
        while kw(self.peek(), "or") {
            let (_, at) = self.bump();
            let (r, rd) = self.and()?;
            d = self.depth(d.max(rd) + 1, at)?;
            l = Expr::Or {
                l: Box::new(l),
                r: Box::new(r),
                at,
            };
        }
        Ok((l, d))
    }

    fn and(&mut self) -> Result<Node, ParseError> {
        let (mut l, mut d) = self.not()?;
        while kw(self.peek(), "and") {
            let (_, at) = self.bump();
            let (r, rd) = self.not()?;
            d = self.depth(d.max(rd) + 1, at)?;
            l = Expr::And {
                l: Box::new(l),
                r: Box::new(r),
                at,
            };
        }
        Ok((l, d))
    }

    fn not(&mut self) -> Result<Node, ParseError> {
        if kw(self.peek(), "not") {
            let (_, at) = self.bump();
            self.enter()?;
            let (e, d) = self.not()?;
            self.nest -= 1;
            let d = self.depth(d + 1, at)?;
            return Ok((Expr::Not { e: Box::new(e), at }, d));
        }
        self.is()
    }

    fn is(&mut self) -> Result<Node, ParseError> {
        let (e, d) = self.cmp()?;
        let test = if kw(self.peek(), "isnull") {
            self.bump();
            Some((IsWhat::Null, false))
        } else if kw(self.peek(), "notnull") {
            self.bump();
            Some((IsWhat::Null, true))
        } else if kw(self.peek(), "is") {
            self.bump();
            let negate = kw(self.peek(), "not");
            if negate {
                self.bump();
            }
            let what = if kw(self.peek(), "null") {
                IsWhat::Null
            } else if kw(self.peek(), "true") {
                IsWhat::True
            } else if kw(self.peek(), "false") {
                IsWhat::False
            } else {
                return Err(self.error("expected NULL, TRUE or FALSE after IS [NOT]"));
            };
            self.bump();
            Some((what, negate))
        } else {
            None
        };
        let Some((what, negate)) = test else {
            return Ok((e, d));
        };
        if ["is", "isnull", "notnull"]
            .iter()
            .any(|w| kw(self.peek(), w))
        {
            return Err(self.error("IS tests do not chain: use parentheses"));
        }
        let at = self.at();
        Ok((
            Expr::Is {
                e: Box::new(e),
                what,
                negate,
            },
            self.depth(d + 1, at)?,
        ))
    }

    fn cmp_op(&self) -> Option<Op> {
        match self.peek() {
            Tok::Sym("=") => Some(Op::Eq),
            Tok::Sym("<>") | Tok::Sym("!=") => Some(Op::Ne),
            Tok::Sym("<") => Some(Op::Lt),
            Tok::Sym("<=") => Some(Op::Le),
            Tok::Sym(">") => Some(Op::Gt),
            Tok::Sym(">=") => Some(Op::Ge),
            _ => None,
        }
    }

    fn cmp(&mut self) -> Result<Node, ParseError> {
        let (l, d) = self.bit()?;
        let Some(op) = self.cmp_op() else {
            return Ok((l, d));
        };
        let (_, at) = self.bump();
        let (r, rd) = self.bit()?;
        if self.cmp_op().is_some() {
            return Err(self.error("comparisons do not chain: use parentheses or AND"));
        }
        let d = self.depth(d.max(rd) + 1, at)?;
        Ok((
            Expr::Bin {
                op,
                l: Box::new(l),
                r: Box::new(r),
                at,
            },
            d,
        ))
    }

    fn binary_level(
        &mut self,
        ops: &[(&str, Op)],
        next: fn(&mut Self) -> Result<Node, ParseError>,
    ) -> Result<Node, ParseError> {
        let (mut l, mut d) = next(self)?;
        loop {
            let Some(&(_, op)) = ops.iter().find(|(s, _)| self.sym(s)) else {
                return Ok((l, d));
            };
            let (_, at) = self.bump();
            let (r, rd) = next(self)?;
            d = self.depth(d.max(rd) + 1, at)?;
            l = Expr::Bin {
                op,
                l: Box::new(l),
                r: Box::new(r),
                at,
            };
        }
    }

    fn bit(&mut self) -> Result<Node, ParseError> {
        self.binary_level(
            &[
                ("|", Op::BitOr),
                ("#", Op::BitXor),
                ("&", Op::BitAnd),
                ("<<", Op::Shl),
                (">>", Op::Shr),
            ],
            Self::add,
        )
    }

    fn add(&mut self) -> Result<Node, ParseError> {
        self.binary_level(&[("+", Op::Add), ("-", Op::Sub)], Self::mul)
    }

    fn mul(&mut self) -> Result<Node, ParseError> {
        self.binary_level(
            &[("*", Op::Mul), ("/", Op::Div), ("%", Op::Mod)],
            Self::unary,
        )
    }

    fn unary(&mut self) -> Result<Node, ParseError> {
        let op = match self.peek() {
            Tok::Sym("+") => "+",
            Tok::Sym("-") => "-",
            Tok::Sym("~") => "~",
            _ => return self.primary(),
        };
        let (_, at) = self.bump();
        if op == "-" && self.peek() == &Tok::MaxPlusOne {
            self.bump();
            return Ok((Expr::Const(Value::Int(i64::MIN)), 1));
        }
        self.enter()?;
        let (e, d) = self.unary()?;
        self.nest -= 1;
        let d = self.depth(d + 1, at)?;
        let e = match op {
            "+" => e,
            "-" => Expr::Bin {
                op: Op::Sub,
                l: Box::new(Expr::Const(Value::Int(0))),
                r: Box::new(e),
                at,
            },
            _ => Expr::Bin {
                op: Op::BitXor,
                l: Box::new(Expr::Const(Value::Int(-1))),
                r: Box::new(e),
                at,
            },
        };
        Ok((e, d))
    }

    fn expect(&mut self, s: &'static str, what: &str) -> Result<(), ParseError> {
        if self.peek() == &Tok::Sym(s) {
            self.bump();
            Ok(())
        } else {
            Err(self.error(what))
        }
    }

    fn primary(&mut self) -> Result<Node, ParseError> {
        let (tok, at) = self.bump();
        match tok {
            Tok::Int(v) => Ok((Expr::Const(Value::Int(v)), 1)),
            Tok::Double(v) => Ok((Expr::Const(Value::Double(v)), 1)),
            Tok::MaxPlusOne => Err(ParseError {
                at,
                message: "integer '9223372036854775808' is out of range (a bigint: -9223372036854775808 to 9223372036854775807)".into(),
            }),
            Tok::Var(name) => Ok((
                Expr::Var {
                    slot: (self.intern)(&name),
                    at,
                },
                1,
            )),
            Tok::Sym("(") => {
                self.enter()?;
                let (e, d) = self.or()?;
                self.nest -= 1;
                self.expect(")", "expected ')'")?;
                Ok((e, d))
            }
            Tok::Ident(w) if w.eq_ignore_ascii_case("true") => Ok((Expr::Const(Value::Bool(true)), 1)),
            Tok::Ident(w) if w.eq_ignore_ascii_case("false") => {
                Ok((Expr::Const(Value::Bool(false)), 1))
            }
            Tok::Ident(w) if w.eq_ignore_ascii_case("null") => Ok((Expr::Const(Value::Null), 1)),
            Tok::Ident(w) if w.eq_ignore_ascii_case("case") => self.case(at),
            Tok::Ident(name) => {
                if self.peek() != &Tok::Sym("(") {
                    return Err(ParseError {
                        at,
                        message: format!(
                            "unexpected '{name}': expected a number, a :variable, a function call, TRUE, FALSE, NULL, CASE or '('"
                        ),
                    });
                }
                self.call(name, at)
            }
            tok => {
                self.i -= usize::from(tok != Tok::Eof);
                Err(self.error(
                    "expected a number, a :variable, a function call, TRUE, FALSE, NULL, CASE or '('",
                ))
            }
        }
    }

    fn case(&mut self, at: At) -> Result<Node, ParseError> {
        self.enter()?;
        let mut whens = Vec::new();
        let mut d = 0;
        while kw(self.peek(), "when") {
            self.bump();
            let (c, cd) = self.or()?;
            if !kw(self.peek(), "then") {
                return Err(self.error("expected THEN"));
            }
            self.bump();
            let (v, vd) = self.or()?;
            d = d.max(cd).max(vd);
            whens.push((c, v));
        }
        if whens.is_empty() {
            return Err(self.error("expected WHEN after CASE"));
        }
        let otherwise = if kw(self.peek(), "else") {
            self.bump();
            let (e, ed) = self.or()?;
            d = d.max(ed);
            Some(Box::new(e))
        } else {
            None
        };
        if !kw(self.peek(), "end") {
            return Err(self.error("expected WHEN, ELSE or END"));
        }
        self.bump();
        self.nest -= 1;
        let d = self.depth(d + 1, at)?;
        Ok((Expr::Case { whens, otherwise }, d))
    }

    fn call(&mut self, name: String, at: At) -> Result<Node, ParseError> {
        let lower = name.to_ascii_lowercase();
        let Some(&(_, f, min, max)) = FUNCS.iter().find(|(n, ..)| *n == lower) else {
            let known: Vec<&str> = FUNCS.iter().map(|(n, ..)| *n).collect();
            return Err(ParseError {
                at,
                message: format!(
                    "unknown function '{name}': expected one of {}",
                    known.join(", ")
                ),
            });
        };
        self.bump(); // (
        self.enter()?;
        let mut args = Vec::new();
        let mut d = 0;
        if self.peek() != &Tok::Sym(")") {
            loop {
                let (a, ad) = self.or()?;
                d = d.max(ad);
                args.push(a);
                if self.peek() == &Tok::Sym(",") {
                    self.bump();
                    continue;
                }
                break;
            }
        }
        self.expect(")", "expected ',' or ')' in the function's arguments")?;
        self.nest -= 1;
        let n = args.len();
        if n < min || max.is_some_and(|m| n > m) {
            let wanted = match max {
                Some(m) if m == min => format!("{min}"),
                Some(m) => format!("{min} to {m}"),
                None => format!("at least {min}"),
            };
            return Err(ParseError {
                at,
                message: format!(
                    "{lower}() takes {wanted} argument{}, got {n}",
                    if wanted == "1" { "" } else { "s" }
                ),
            });
        }
        if matches!(f, Func::Hash | Func::HashFnv1a | Func::HashMurmur2) && n == 1
            || f == Func::Permute && n == 2
        {
            args.push(Expr::Var {
                slot: self.default_seed,
                at,
            });
        }
        let d = self.depth(d + 1, at)?;
        Ok((Expr::Call { f, args, at }, d))
    }
}

/// A variable's content as the interpreter keeps it.
#[derive(Clone, Debug)]
pub(crate) enum Var {
    /// A value (from `\set`, a built-in, or read by `\gset`).
    Val(Value),
    /// A define's text, substituted into SQL as written.
    Raw(String),
}

/// What evaluation reads and draws from.
pub(crate) struct Env<'a> {
    pub vars: &'a [Option<Var>],
    pub names: &'a [String],
    pub rng: &'a mut Rng,
    pub debug: &'a mut dyn FnMut(At, &Value),
}

/// A variable's text as a value, pgbench's way: null, a boolean word, an integer, a double.
pub(crate) fn text_value(s: &str) -> Option<Value> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    match lower.as_str() {
        "null" => return Some(Value::Null),
        "true" | "yes" | "on" => return Some(Value::Bool(true)),
        "false" | "no" | "off" => return Some(Value::Bool(false)),
        _ => {}
    }
    if let Ok(i) = t.parse::<i64>() {
        return Some(Value::Int(i));
    }
    let looks_numeric = t
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
    match t.parse::<f64>() {
        Ok(d) if looks_numeric && d.is_finite() => Some(Value::Double(d)),
        _ => None,
    }
}

fn err(at: At, message: impl Into<String>) -> EvalError {
    EvalError {
        at,
        message: message.into(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Int(_) => "int",
        Value::Double(_) => "double",
        Value::Text(_) => "text",
    }
}

fn to_int(v: &Value, at: At) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Double(d) => {
            let r = d.round_ties_even();
            // i64::MAX as f64 rounds up to 2^63, which is out of range.
            if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r) {
                Err(err(at, format!("double to int overflow for {d}")))
            } else {
                Ok(r as i64)
            }
        }
        other => Err(err(
            at,
            format!("cannot coerce {} to int", type_name(other)),
        )),
    }
}

fn to_double(v: &Value, at: At) -> Result<f64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Double(d) => Ok(*d),
        other => Err(err(
            at,
            format!("cannot coerce {} to double", type_name(other)),
        )),
    }
}

fn to_bool(v: &Value, at: At) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(err(
            at,
            format!("cannot coerce {} to boolean", type_name(other)),
        )),
    }
}

/// pgbench's truth of a condition (`\if`, `CASE WHEN`): NULL false, numbers non-zero.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null | Value::Text(_) => false,
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Double(d) => *d != 0.0,
    }
}

fn overflow(at: At) -> EvalError {
    err(at, "bigint out of range")
}

fn binary(op: Op, a: Value, b: Value, at: At) -> Result<Value, EvalError> {
    if matches!(a, Value::Null) || matches!(b, Value::Null) {
        return Ok(Value::Null);
    }
    let dbl = matches!(a, Value::Double(_)) || matches!(b, Value::Double(_));
    match op {
        Op::Add | Op::Sub | Op::Mul | Op::Div if dbl => {
            let (x, y) = (to_double(&a, at)?, to_double(&b, at)?);
            Ok(Value::Double(match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                _ => {
                    if y == 0.0 {
                        return Err(err(at, "division by zero"));
                    }
                    x / y
                }
            }))
        }
        Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Mod => {
            let (x, y) = (to_int(&a, at)?, to_int(&b, at)?);
            let r = match op {
                Op::Add => x.checked_add(y),
                Op::Sub => x.checked_sub(y),
                Op::Mul => x.checked_mul(y),
                Op::Div => {
                    if y == 0 {
                        return Err(err(at, "division by zero"));
                    }
                    x.checked_div(y)
                }
                _ => {
                    if y == 0 {
                        return Err(err(at, "division by zero"));
                    }
                    Some(if y == -1 { 0 } else { x % y })
                }
            };
            r.map(Value::Int).ok_or_else(|| overflow(at))
        }
        Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let ord = if dbl {
                to_double(&a, at)?.partial_cmp(&to_double(&b, at)?)
            } else {
                Some(to_int(&a, at)?.cmp(&to_int(&b, at)?))
            };
            use std::cmp::Ordering::*;
            Ok(Value::Bool(match (op, ord) {
                (Op::Eq, o) => o == Some(Equal),
                (Op::Ne, o) => o != Some(Equal),
                (Op::Lt, o) => o == Some(Less),
                (Op::Le, o) => matches!(o, Some(Less | Equal)),
                (Op::Gt, o) => o == Some(Greater),
                (_, o) => matches!(o, Some(Greater | Equal)),
            }))
        }
        Op::BitAnd | Op::BitOr | Op::BitXor | Op::Shl | Op::Shr => {
            let (x, y) = (to_int(&a, at)?, to_int(&b, at)?);
            // Shift counts are taken modulo 64, as pgbench's C shifts do on x86-64.
            Ok(Value::Int(match op {
                Op::BitAnd => x & y,
                Op::BitOr => x | y,
                Op::BitXor => x ^ y,
                Op::Shl => x.wrapping_shl(y as u32),
                _ => x.wrapping_shr(y as u32),
            }))
        }
    }
}

/// A variable's value in an expression.
fn read_var(env: &Env, slot: u32, at: At) -> Result<Value, EvalError> {
    let name = || &env.names[slot as usize];
    match &env.vars[slot as usize] {
        None => Err(err(at, format!("undefined variable :{}", name()))),
        Some(Var::Val(Value::Text(s))) | Some(Var::Raw(s)) => text_value(s).ok_or_else(|| {
            err(
                at,
                format!(
                    "malformed variable :{} value: '{}' is not a number, boolean or null",
                    name(),
                    s.chars().take(60).collect::<String>()
                ),
            )
        }),
        Some(Var::Val(v)) => Ok(v.clone()),
    }
}

/// Evaluates `e`.
pub(crate) fn eval(e: &Expr, env: &mut Env) -> Result<Value, EvalError> {
    match e {
        Expr::Const(v) => Ok(v.clone()),
        Expr::Var { slot, at } => read_var(env, *slot, *at),
        Expr::Bin { op, l, r, at } => {
            let a = eval(l, env)?;
            let b = eval(r, env)?;
            binary(*op, a, b, *at)
        }
        Expr::Not { e, at } => match eval(e, env)? {
            Value::Null => Ok(Value::Null),
            v => Ok(Value::Bool(!to_bool(&v, *at)?)),
        },
        Expr::And { l, r, at } => {
            let a = eval(l, env)?;
            if matches!(a, Value::Null) {
                return Ok(Value::Null);
            }
            if !to_bool(&a, *at)? {
                return Ok(Value::Bool(false));
            }
            match eval(r, env)? {
                Value::Null => Ok(Value::Null),
                b => Ok(Value::Bool(to_bool(&b, *at)?)),
            }
        }
        Expr::Or { l, r, at } => {
            let a = eval(l, env)?;
            if matches!(a, Value::Null) {
                return Ok(Value::Null);
            }
            if to_bool(&a, *at)? {
                return Ok(Value::Bool(true));
            }
            match eval(r, env)? {
                Value::Null => Ok(Value::Null),
                b => Ok(Value::Bool(to_bool(&b, *at)?)),
            }
        }
        Expr::Is { e, what, negate } => {
            let v = eval(e, env)?;
            let r = match what {
                IsWhat::Null => matches!(v, Value::Null),
                IsWhat::True => matches!(v, Value::Bool(true)),
                IsWhat::False => matches!(v, Value::Bool(false)),
            };
            Ok(Value::Bool(r != *negate))
        }
        Expr::Case { whens, otherwise } => {
            for (c, v) in whens {
                if truthy(&eval(c, env)?) {
                    return eval(v, env);
                }
            }
            match otherwise {
                Some(o) => eval(o, env),
                None => Ok(Value::Null),
            }
        }
        Expr::Call { f, args, at } => call(*f, args, *at, env),
    }
}

fn call(f: Func, args: &[Expr], at: At, env: &mut Env) -> Result<Value, EvalError> {
    let mut vals = Vec::with_capacity(args.len());
    for a in args {
        vals.push(eval(a, env)?);
    }
    if f == Func::Debug {
        (env.debug)(at, &vals[0]);
        return Ok(vals.swap_remove(0));
    }
    if vals.iter().any(|v| matches!(v, Value::Null)) {
        return Ok(Value::Null);
    }
    let int = |i: usize| to_int(&vals[i], at);
    let dbl = |i: usize| to_double(&vals[i], at);
    let drawn = |r: Result<i64, String>| r.map(Value::Int).map_err(|m| err(at, m));
    Ok(match f {
        Func::Abs => match vals[0] {
            Value::Double(d) => Value::Double(d.abs()),
            _ => Value::Int(int(0)?.checked_abs().ok_or_else(|| overflow(at))?),
        },
        Func::Double => Value::Double(dbl(0)?),
        Func::Int => Value::Int(int(0)?),
        Func::Exp => Value::Double(dbl(0)?.exp()),
        Func::Ln => Value::Double(dbl(0)?.ln()),
        Func::Sqrt => Value::Double(dbl(0)?.sqrt()),
        Func::Pi => Value::Double(std::f64::consts::PI),
        Func::Pow => Value::Double(dbl(0)?.powf(dbl(1)?)),
        Func::Mod => binary(Op::Mod, vals[0].clone(), vals[1].clone(), at)?,
        Func::Greatest | Func::Least => {
            let greatest = f == Func::Greatest;
            if vals.iter().any(|v| matches!(v, Value::Double(_))) {
                let mut best = dbl(0)?;
                for i in 1..vals.len() {
                    let x = dbl(i)?;
                    if (greatest && x > best) || (!greatest && x < best) {
                        best = x;
                    }
                }
                Value::Double(best)
            } else {
                let mut best = int(0)?;
                for i in 1..vals.len() {
                    let x = int(i)?;
                    best = if greatest { best.max(x) } else { best.min(x) };
                }
                Value::Int(best)
            }
        }
        Func::Hash | Func::HashMurmur2 => Value::Int(random::murmur2(int(0)?, int(1)?)),
        Func::HashFnv1a => Value::Int(random::fnv1a(int(0)?, int(1)?)),
        Func::Permute => drawn(random::permute(int(0)?, int(1)?, int(2)?))?,
        Func::Random => drawn(random::uniform(env.rng, int(0)?, int(1)?))?,
        Func::RandomExponential => drawn(random::exponential(env.rng, int(0)?, int(1)?, dbl(2)?))?,
        Func::RandomGaussian => drawn(random::gaussian(env.rng, int(0)?, int(1)?, dbl(2)?))?,
        Func::RandomZipfian => drawn(random::zipfian(env.rng, int(0)?, int(1)?, dbl(2)?))?,
        Func::Debug => unreachable!("handled above"),
    })
}
