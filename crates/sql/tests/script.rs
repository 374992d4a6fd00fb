//! The script language through its public API: loading (and every load error's position),
//! substitution, meta-commands, functions, weights, retries, scenarios, hostile inputs.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oio_sql::script::{builtins, Client, Executor, Failure, Script, ScriptError, Source, Value};

/// One answer of the fake: column names and rows, or an error.
type Answer = Result<(Vec<&'static str>, Vec<Vec<Value>>), String>;

/// Records what it is sent; answers from a queue of results (column names, rows).
#[derive(Default)]
struct Fake {
    sent: Vec<String>,
    answers: VecDeque<Answer>,
    columns: Vec<String>,
    sleeps: Vec<Duration>,
    stop: bool,
}

impl Fake {
    fn answer(mut self, cols: &[&'static str], rows: Vec<Vec<Value>>) -> Fake {
        self.answers.push_back(Ok((cols.to_vec(), rows)));
        self
    }
}

impl Executor for Fake {
    type Error = String;
    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Value>>, String> {
        self.sent.push(sql.to_string());
        match self.answers.pop_front() {
            Some(Ok((cols, rows))) => {
                self.columns = cols.iter().map(|c| c.to_string()).collect();
                Ok(rows)
            }
            Some(Err(e)) => Err(e),
            None => {
                self.columns.clear();
                Ok(Vec::new())
            }
        }
    }
    fn text_literal(&self, s: &str) -> String {
        format!("'{}'", s.replace('\'', "''"))
    }
    fn sleep(&mut self, d: Duration) -> bool {
        self.sleeps.push(d);
        !self.stop
    }
    fn columns(&self) -> Vec<String> {
        self.columns.clone()
    }
}

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        Files {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn write(&self, name: &str, text: impl AsRef<[u8]>) -> Source {
        std::fs::write(self.path(name), text).unwrap();
        self.path(name).display().to_string().parse().unwrap()
    }
}

/// Loads `text` as `t.sql`.
fn load(text: &str) -> Result<(Script, String), ScriptError> {
    load_defs(text, &[])
}

fn load_defs(text: &str, defines: &[(&str, &str)]) -> Result<(Script, String), ScriptError> {
    let f = Files::new();
    let src = f.write("t.sql", text);
    let defs: Vec<(String, String)> = defines
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    Script::load(&[src], &defs).map(|s| (s, f.path("t.sql").display().to_string()))
}

fn quiet(c: &mut Client) {
    c.set_debug(Box::new(|_, _| {}));
}

/// Loads and runs `text` once (transaction 0) on a fake executor: what it sent.
fn run(text: &str) -> Vec<String> {
    let (s, _) = load(text).unwrap_or_else(|e| panic!("{e}"));
    let mut c = Client::new(&s, 0, 1);
    quiet(&mut c);
    let mut fake = Fake::default();
    c.run(0, &mut fake).unwrap_or_else(|e| panic!("{e}"));
    fake.sent
}

/// Runs `\set x EXPR` and returns how `:x` is written into SQL, or the error.
fn value_of(expr: &str) -> Result<String, String> {
    let text = format!("\\set x {expr}\nSELECT :x;\n");
    let (s, _) = load(&text).map_err(|e| e.message().to_string())?;
    let mut c = Client::new(&s, 0, 1);
    quiet(&mut c);
    let mut fake = Fake::default();
    match c.run(0, &mut fake) {
        Ok(_) => Ok(fake.sent[0].strip_prefix("SELECT ").unwrap().to_string()),
        Err(Failure::Script { message, .. }) => Err(message),
        Err(other) => panic!("{other}"),
    }
}

/// Asserts `text` fails to load at `line`:`col` with a message containing `fragment`, and that
/// the error displays as FILE:LINE:COL: message, the line and a caret.
#[track_caller]
fn load_error(text: &str, line: u32, col: u32, fragment: &str) {
    let e = match load(text) {
        Ok(_) => panic!("loaded, expected an error at {line}:{col} ({fragment})"),
        Err(e) => e,
    };
    assert_eq!((e.pos().line, e.pos().col), (line, col), "position of: {e}");
    assert!(
        e.message().contains(fragment),
        "{e}\n(expected: {fragment})"
    );
    let shown = e.to_string();
    let head = format!("{}:{line}:{col}: ", e.pos().file);
    assert!(e.pos().file.ends_with("t.sql"), "{shown}");
    assert!(shown.starts_with(&head), "{shown}");
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 3, "message, line, caret: {shown}");
    let src_line = text.lines().nth(line as usize - 1).unwrap_or("");
    assert_eq!(lines[1].trim_start(), src_line.trim_start(), "{shown}");
    let caret = lines[2].find('^').expect("a caret");
    assert_eq!(
        caret - 2,
        col as usize - 1,
        "caret under the column: {shown}"
    );
}

#[test]
fn script_is_send_and_sync() {
    fn both<T: Send + Sync>() {}
    both::<Script>();
    both::<Arc<Script>>();
}

// ---- pgbench's built-in scripts, written out from its documentation ----

const TPCB_LIKE: &str = "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";

const SIMPLE_UPDATE: &str = "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
";

const SELECT_ONLY: &str = "\\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
";

fn int_var(c: &Client, name: &str) -> i64 {
    match c.var(name) {
        Some(Value::Int(i)) => i,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn pgbench_tpcb_like_runs_with_its_variables_substituted() {
    let f = Files::new();
    let src = f.write("tpcb-like.sql", TPCB_LIKE);
    let s = Script::load(&[src], &[("scale".into(), "10".into())]).unwrap();
    let info = s.transactions();
    assert_eq!(info.len(), 1);
    assert_eq!(info[0].name, "tpcb-like");
    assert_eq!(info[0].weight, 1);
    assert_eq!(info[0].statements, 7);
    let s = s.for_dialect("postgres").unwrap();
    for client_id in 0..3 {
        let mut c = Client::new(&s, client_id, 99);
        let mut fake = Fake::default();
        let done = c.run(0, &mut fake).unwrap();
        assert_eq!(done.statements, 7);
        let (aid, bid, tid, delta) = (
            int_var(&c, "aid"),
            int_var(&c, "bid"),
            int_var(&c, "tid"),
            int_var(&c, "delta"),
        );
        assert!((1..=1_000_000).contains(&aid));
        assert!((1..=10).contains(&bid));
        assert!((1..=100).contains(&tid));
        assert!((-5000..=5000).contains(&delta));
        assert_eq!(
            fake.sent,
            vec![
                "BEGIN".to_string(),
                format!("UPDATE pgbench_accounts SET abalance = abalance + {delta} WHERE aid = {aid}"),
                format!("SELECT abalance FROM pgbench_accounts WHERE aid = {aid}"),
                format!("UPDATE pgbench_tellers SET tbalance = tbalance + {delta} WHERE tid = {tid}"),
                format!("UPDATE pgbench_branches SET bbalance = bbalance + {delta} WHERE bid = {bid}"),
                format!("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ({tid}, {bid}, {aid}, {delta}, CURRENT_TIMESTAMP)"),
                "END".to_string(),
            ]
        );
    }
}

#[test]
fn pgbench_simple_update_and_select_only_run() {
    let f = Files::new();
    let a = f.write("simple-update.sql", SIMPLE_UPDATE);
    let b = f.write("select-only.sql", SELECT_ONLY);
    let s = Script::load(&[a, b], &[]).unwrap();
    let names: Vec<String> = s.transactions().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["simple-update", "select-only"]);
    let mut c = Client::new(&s, 0, 5);
    let mut fake = Fake::default();
    assert_eq!(c.run(0, &mut fake).unwrap().statements, 5);
    let (aid, delta) = (int_var(&c, "aid"), int_var(&c, "delta"));
    assert!((1..=100_000).contains(&aid), "scale 1 by default");
    assert_eq!(
        fake.sent[1],
        format!("UPDATE pgbench_accounts SET abalance = abalance + {delta} WHERE aid = {aid}")
    );
    let mut fake = Fake::default();
    assert_eq!(c.run(1, &mut fake).unwrap().statements, 1);
    let aid = int_var(&c, "aid");
    assert_eq!(
        fake.sent,
        [format!(
            "SELECT abalance FROM pgbench_accounts WHERE aid = {aid}"
        )]
    );
}

// ---- SQL text and substitution ----

#[test]
fn casts_quotes_comments_and_unknown_variables_are_left_alone() {
    let sent = run("\\set x 5
SELECT :x::int, ':x', \"a:x\", E'\\':x', $$ :x $$, $t$ :x ; $t$, :nope, a[1:2] -- :x ;
  FROM t /* :x ; */ WHERE y=:x;
SELECT 1 \\; SELECT :x;
");
    assert_eq!(
        sent,
        [
            "SELECT 5::int, ':x', \"a:x\", E'\\':x', $$ :x $$, $t$ :x ; $t$, :nope, a[1:2] \n  FROM t /* :x ; */ WHERE y=5",
            "SELECT 1 ; SELECT 5",
        ]
    );
}

#[test]
fn commands_may_span_lines_and_end_without_a_semicolon() {
    let sent = run("-- a comment line\n\nSELECT\n  1,\n  2;\n\n;;\nSELECT 3");
    assert_eq!(sent, ["SELECT\n  1,\n  2", "SELECT 3"]);
}

#[test]
fn values_are_written_as_sql() {
    let sent = run("\\set i -42
\\set d 2.5
\\set e 1e-7
\\set t 1 < 2
\\set f NOT true
\\set n NULL
SELECT :i, :d, :e, :t, :f, :n;
");
    assert_eq!(sent, ["SELECT -42, 2.5, 1e-7, TRUE, FALSE, NULL"]);
}

#[test]
fn defines_are_substituted_raw_and_parsed_in_expressions() {
    let (s, _) = load_defs(
        "\\set n :count * 2\nSELECT * FROM :table WHERE n = :n AND s = :scale;\n",
        &[
            ("table", "public.accounts"),
            ("count", "21"),
            ("scale", "7"),
        ],
    )
    .unwrap();
    let mut c = Client::new(&s, 0, 1);
    let mut fake = Fake::default();
    c.run(0, &mut fake).unwrap();
    assert_eq!(
        fake.sent,
        ["SELECT * FROM public.accounts WHERE n = 42 AND s = 7"]
    );
    // The last define of a name wins; a bad name is an error.
    let (s, _) = load_defs("SELECT :a;", &[("a", "1"), ("a", "2")]).unwrap();
    let mut fake = Fake::default();
    Client::new(&s, 0, 1).run(0, &mut fake).unwrap();
    assert_eq!(fake.sent, ["SELECT 2"]);
    let e = load_defs("SELECT 1;", &[("bad-name", "1")]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("-D bad-name=1:1:4: invalid variable name"),
        "{e}"
    );
    // A define that is not a number is an error when an expression reads it.
    let (s, path) = load_defs("\\set y :table + 1\nSELECT 1;", &[("table", "t1")]).unwrap();
    let outcome = Client::new(&s, 0, 1).run(0, &mut Fake::default());
    match outcome {
        Err(Failure::Script { at, message }) => {
            assert_eq!(at.to_string(), format!("{path}:1:8"));
            assert!(message.contains("malformed variable :table"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn builtin_variables() {
    let (s, _) = load("SELECT :client_id, :scale, :random_seed;").unwrap();
    let mut fake = Fake::default();
    Client::new(&s, 3, 12345).run(0, &mut fake).unwrap();
    assert_eq!(fake.sent, ["SELECT 3, 1, 12345"]);
    // default_seed is the same for every client of a seed, and hash() uses it.
    let (s, _) =
        load("\\set eq hash(10) = hash(10, :default_seed)\nSELECT :eq, :default_seed;").unwrap();
    let mut a = Fake::default();
    let mut b = Fake::default();
    Client::new(&s, 0, 7).run(0, &mut a).unwrap();
    Client::new(&s, 1, 7).run(0, &mut b).unwrap();
    assert_eq!(a.sent, b.sent);
    assert!(a.sent[0].starts_with("SELECT TRUE, "), "{:?}", a.sent);
}

#[test]
fn non_finite_doubles_are_refused_where_they_are_written() {
    let (s, path) = load("\\set x ln(-1)\n\\set y 1e300 * 1e300\nSELECT 1,\n  :y;").unwrap();
    let outcome = Client::new(&s, 0, 1).run(0, &mut Fake::default());
    match outcome {
        Err(Failure::Script { at, message }) => {
            assert_eq!(at.to_string(), format!("{path}:4:3"));
            assert!(message.contains(":y is double inf"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

// ---- \gset and \aset ----

#[test]
fn gset_stores_numbers_as_numbers_and_text_through_text_literal() {
    let (s, _) = load(
        "SELECT 1 AS n, 'x' AS t, NULL AS z, 2.5 AS d \\gset p_
SELECT :p_n + 1, :p_t, :p_z, :p_d, ':p_t';
\\set m :p_n * 10
SELECT :m;
",
    )
    .unwrap();
    let mut c = Client::new(&s, 0, 1);
    let mut fake = Fake::default().answer(
        &["n", "t", "z", "d"],
        vec![vec![
            Value::Int(1),
            Value::Text("it's'; DROP TABLE x; --".into()),
            Value::Null,
            Value::Double(2.5),
        ]],
    );
    assert_eq!(c.run(0, &mut fake).unwrap().statements, 3);
    assert_eq!(fake.sent[0], "SELECT 1 AS n, 'x' AS t, NULL AS z, 2.5 AS d");
    assert_eq!(
        fake.sent[1],
        "SELECT 1 + 1, 'it''s''; DROP TABLE x; --', NULL, 2.5, ':p_t'"
    );
    assert_eq!(fake.sent[2], "SELECT 10");
}

#[test]
fn gset_after_a_semicolon_line_and_its_row_count() {
    let text = "SELECT a FROM t;\n\\gset\nSELECT :a;\n";
    let (s, path) = load(text).unwrap();
    let mut c = Client::new(&s, 0, 1);
    let mut fake = Fake::default().answer(&["a"], vec![vec![Value::Text("7".into())]]);
    c.run(0, &mut fake).unwrap();
    // Text from the database is quoted, even when it looks like a number.
    assert_eq!(fake.sent[1], "SELECT '7'");
    for rows in [0usize, 2] {
        let mut fake = Fake::default().answer(&["a"], vec![vec![Value::Int(1)]; rows]);
        match c.run(0, &mut fake) {
            Err(Failure::Script { at, message }) => {
                assert_eq!(at.to_string(), format!("{path}:2:1"));
                assert_eq!(message, format!("\\gset expected one row, got {rows}"));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn aset_keeps_the_last_row_and_sets_nothing_without_rows() {
    let (s, _) = load("SELECT a, b FROM t \\aset q_\nSELECT :q_a, :q_b;\n").unwrap();
    let mut c = Client::new(&s, 0, 1);
    let mut fake = Fake::default().answer(
        &["a", "b"],
        vec![
            vec![Value::Int(1), Value::Int(2)],
            vec![Value::Int(3), Value::Int(4)],
        ],
    );
    c.run(0, &mut fake).unwrap();
    assert_eq!(fake.sent[1], "SELECT 3, 4");
    let mut c = Client::new(&s, 0, 1);
    let mut fake = Fake::default().answer(&["a", "b"], vec![]);
    c.run(0, &mut fake).unwrap();
    assert_eq!(fake.sent[1], "SELECT :q_a, :q_b");
}

#[test]
fn gset_without_column_names_fails_saying_so() {
    struct NoNames;
    impl Executor for NoNames {
        type Error = String;
        fn query(&mut self, _: &str) -> Result<Vec<Vec<Value>>, String> {
            Ok(vec![vec![Value::Int(1)]])
        }
        fn text_literal(&self, s: &str) -> String {
            s.to_string()
        }
        fn sleep(&mut self, _: Duration) -> bool {
            true
        }
    }
    let (s, _) = load("SELECT 1 AS a \\gset\nSELECT :a;").unwrap();
    let outcome = Client::new(&s, 0, 1).run(0, &mut NoNames);
    match outcome {
        Err(Failure::Script { message, .. }) => {
            assert!(message.contains("column names"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

// ---- meta-commands ----

#[test]
fn if_elif_else() {
    let text = "\\if :v = 1
SELECT 'one';
\\elif :v = 2
SELECT 'two';
\\elif :v = 3
SELECT 'three';
\\else
\\if :v > 10
SELECT 'big';
\\endif
SELECT 'other';
\\endif
SELECT 'end';
";
    for (v, want) in [
        ("1", vec!["SELECT 'one'"]),
        ("2", vec!["SELECT 'two'"]),
        ("3", vec!["SELECT 'three'"]),
        ("4", vec!["SELECT 'other'"]),
        ("11", vec!["SELECT 'big'", "SELECT 'other'"]),
    ] {
        let (s, _) = load_defs(text, &[("v", v)]).unwrap();
        let mut fake = Fake::default();
        let done = Client::new(&s, 0, 1).run(0, &mut fake).unwrap();
        let mut want: Vec<String> = want.into_iter().map(String::from).collect();
        want.push("SELECT 'end'".into());
        assert_eq!(fake.sent, want, "v = {v}");
        assert_eq!(done.statements as usize, want.len());
    }
    // NULL and 0 are false; non-zero numbers true.
    let sent = run("\\if NULL\nSELECT 1;\n\\elif 0.0\nSELECT 2;\n\\elif 7\nSELECT 3;\n\\endif");
    assert_eq!(sent, ["SELECT 3"]);
}

#[test]
fn sleep_units_variables_and_stop() {
    let (s, _) = load(
        "\\set t 3\n\\sleep 2\n\\sleep 5 ms\n\\sleep 7 us\n\\sleep :t s\n\\sleep 1 MS\nSELECT 1;",
    )
    .unwrap();
    let mut fake = Fake::default();
    Client::new(&s, 0, 1).run(0, &mut fake).unwrap();
    assert_eq!(
        fake.sleeps,
        [
            Duration::from_secs(2),
            Duration::from_millis(5),
            Duration::from_micros(7),
            Duration::from_secs(3),
            Duration::from_millis(1),
        ]
    );
    let mut fake = Fake {
        stop: true,
        ..Fake::default()
    };
    assert!(matches!(
        Client::new(&s, 0, 1).run(0, &mut fake),
        Err(Failure::Stopped)
    ));
    assert!(fake.sent.is_empty(), "nothing after the stopped sleep");
    let (s, path) = load("\\sleep :u\nSELECT 1;").unwrap();
    let outcome = Client::new(&s, 0, 1).run(0, &mut Fake::default());
    match outcome {
        Err(Failure::Script { at, message }) => {
            assert_eq!(at.to_string(), format!("{}:1:8", path));
            assert!(message.contains("undefined variable :u"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn pipelines_are_accepted_and_run_one_statement_after_another() {
    let sent = run("\\startpipeline\nSELECT 1;\n\\syncpipeline\nSELECT 2;\n\\endpipeline\n");
    assert_eq!(sent, ["SELECT 1", "SELECT 2"]);
}

#[test]
fn meta_commands_are_case_insensitive_and_continue_over_lines() {
    let sent = run("\\SET x 1 + \\\n  2\n\\Set y :x *\\\n3\nSELECT :x, :y;");
    assert_eq!(sent, ["SELECT 3, 9"]);
}

#[test]
fn debug_goes_through_the_hook() {
    let (s, path) = load("\\set x debug(2 * 3) + 1\nSELECT :x;").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut c = Client::new(&s, 0, 1);
    let seen2 = seen.clone();
    c.set_debug(Box::new(move |pos, v| {
        seen2.lock().unwrap().push((pos.to_string(), v.clone()))
    }));
    let mut fake = Fake::default();
    c.run(0, &mut fake).unwrap();
    assert_eq!(fake.sent, ["SELECT 7"]);
    assert_eq!(
        *seen.lock().unwrap(),
        [(format!("{path}:1:8"), Value::Int(6))]
    );
}

// ---- expressions ----

#[test]
fn operators_and_precedence() {
    for (expr, want) in [
        ("2 + 3 * 4 - -1", "15"),
        ("7 / 2", "3"),
        ("-7 / 2", "-3"),
        ("-7 % 3", "-1"),
        ("5 / 2.0", "2.5"),
        ("1 | 2 & 3", "3"),
        ("1 + 2 << 1", "6"),
        ("5 # 3", "6"),
        ("~5", "-6"),
        ("-1 >> 1", "-1"),
        ("1 << 64", "1"),
        ("1 << -1", "-9223372036854775808"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("(1 + 2) * 3", "9"),
        ("+4", "4"),
        ("1 = 1.0", "TRUE"),
        ("1 <> 2", "TRUE"),
        ("1 != 1", "FALSE"),
        ("2 <= 2 AND 3 >= 4", "FALSE"),
        ("1 < 2 OR 1 / 0 = 1", "TRUE"),
        ("1 > 2 AND 1 / 0 = 1", "FALSE"),
        ("NOT 1 = 2", "TRUE"),
        ("NULL IS NULL", "TRUE"),
        ("1 IS NOT NULL", "TRUE"),
        ("1 ISNULL", "FALSE"),
        ("NULL NOTNULL", "FALSE"),
        ("1 IS TRUE", "FALSE"),
        ("1 < 2 IS TRUE", "TRUE"),
        ("false IS NOT FALSE", "FALSE"),
        ("NULL + 1", "NULL"),
        ("NULL OR true", "NULL"),
        ("NULL AND false", "NULL"),
        ("NOT NULL", "NULL"),
        ("NULL < 1", "NULL"),
        ("CASE WHEN 1 > 2 THEN 1 WHEN 2 > 1 THEN 2 ELSE 3 END", "2"),
        ("CASE WHEN 5 > 6 THEN 1 END", "NULL"),
        ("case when 0 then 1 else 2.5 end", "2.5"),
        ("TRUE", "TRUE"),
        (".5 + 1.", "1.5"),
        ("1.5e3", "1500.0"),
    ] {
        assert_eq!(value_of(expr).as_deref(), Ok(want), "{expr}");
    }
}

#[test]
fn functions() {
    for (expr, want) in [
        ("abs(-3)", "3"),
        ("abs(-3.5)", "3.5"),
        ("double(3)", "3.0"),
        ("int(5.5)", "6"),
        ("int(4.5)", "4"),
        ("int(-2.5)", "-2"),
        ("int(-4.5)", "-4"),
        ("int(5.4 + 3.8)", "9"),
        ("exp(0)", "1.0"),
        ("ln(1)", "0.0"),
        ("sqrt(2.25)", "1.5"),
        ("pi() > 3.14159 AND pi() < 3.1416", "TRUE"),
        ("pow(2, 10)", "1024.0"),
        ("power(2, 0.5) * power(2, 0.5) > 1.99", "TRUE"),
        ("mod(-7, 3)", "-1"),
        ("mod(10, -1)", "0"),
        ("greatest(1, 2.5, 2)", "2.5"),
        ("greatest(5)", "5"),
        ("least(3, 2)", "2"),
        ("least(3, NULL)", "NULL"),
        ("debug(4)", "4"),
        // Checked against PostgreSQL 15.18's pgbench: \set k debug(...).
        ("hash(10, 5432)", "-5817877081768721676"),
        ("hash_murmur2(-1, 0)", "4219408603045787357"),
        ("hash_fnv1a(10, 5432)", "-7793829335365542153"),
        ("hash_fnv1a(123456789, 0)", "-2350796791908741607"),
        ("permute(3, 1)", "0"),
        ("random(7, 7)", "7"),
        ("random_exponential(7, 7, 1)", "7"),
        ("random_gaussian(7, 7, 2)", "7"),
        ("random_zipfian(7, 7, 1.5)", "7"),
    ] {
        assert_eq!(value_of(expr).as_deref(), Ok(want), "{expr}");
    }
    for expr in [
        "random(1, 10)",
        "random_exponential(1, 10, 3)",
        "random_gaussian(1, 10, 2.5)",
        "random_zipfian(1, 10, 2)",
        "permute(4, 10)",
        "permute(4, 10, 77)",
    ] {
        let v: i64 = value_of(expr).unwrap().parse().unwrap();
        let lo = if expr.starts_with("permute") { 0 } else { 1 };
        assert!((lo..=10).contains(&v), "{expr} = {v}");
    }
}

#[test]
fn run_time_errors_carry_the_position() {
    for (expr, col, fragment) in [
        ("1 / 0", 10, "division by zero"),
        ("1.0 / 0", 12, "division by zero"),
        ("5 % 0", 10, "division by zero"),
        ("mod(5, 0)", 8, "division by zero"),
        ("9223372036854775807 + 1", 28, "bigint out of range"),
        ("-9223372036854775808 / -1", 29, "bigint out of range"),
        ("3037000500 * 3037000500", 19, "bigint out of range"),
        ("abs(-9223372036854775808)", 8, "bigint out of range"),
        ("int(1e19)", 8, "double to int overflow"),
        ("1 AND 0", 10, "cannot coerce int to boolean"),
        ("NOT 1", 8, "cannot coerce int to boolean"),
        ("TRUE + 1", 13, "cannot coerce boolean to int"),
        ("random(5, 1)", 8, "empty range given to random"),
        (
            "random(-9223372036854775808, 9223372036854775807)",
            8,
            "random range is too large",
        ),
        (
            "random_zipfian(1, 10, 1.0)",
            8,
            "zipfian parameter must be in range [1.001, 1000]",
        ),
        ("random_zipfian(1, 10, 1001)", 8, "zipfian parameter"),
        (
            "random_gaussian(1, 10, 1.5)",
            8,
            "gaussian parameter must be at least 2.0",
        ),
        (
            "random_exponential(1, 10, 0)",
            8,
            "exponential parameter must be greater than zero",
        ),
        (
            "permute(1, 0)",
            8,
            "permute size parameter must be greater than zero",
        ),
        ("1 + :undefined", 12, "undefined variable :undefined"),
    ] {
        let text = format!("\\set x {expr}\nSELECT :x;\n");
        let (s, path) = load(&text).unwrap_or_else(|e| panic!("{e}"));
        let outcome = Client::new(&s, 0, 1).run(0, &mut Fake::default());
        match outcome {
            Err(Failure::Script { at, message }) => {
                assert_eq!(
                    at.to_string(),
                    format!("{path}:1:{col}"),
                    "{expr}: {message}"
                );
                assert!(message.contains(fragment), "{expr}: {message}");
            }
            other => panic!("{expr}: {other:?}"),
        }
    }
}

// ---- load errors: FILE:LINE:COL, the line and a caret ----

#[test]
fn load_errors_have_file_line_and_column() {
    load_error(
        "SELECT 1;\n  \\frobnicate x\n",
        2,
        3,
        "unknown meta-command \\frobnicate: expected one of \\set",
    );
    load_error(
        "\\set x 1 +\n",
        1,
        11,
        "unexpected the end of the expression",
    );
    load_error("\\set x (1 + 2\n", 1, 14, "expected ')'");
    load_error("\\set x 1 < 2 < 3\n", 1, 14, "comparisons do not chain");
    load_error("\\set x 1 2\n", 1, 10, "expected an operator");
    load_error("\\set x 1 $ 2\n", 1, 10, "unexpected character '$'");
    load_error("\\set x foo(1)\n", 1, 8, "unknown function 'foo'");
    load_error("\\set x abs(1, 2)\n", 1, 8, "abs() takes 1 argument, got 2");
    load_error(
        "\\set x random(1)\n",
        1,
        8,
        "random() takes 2 arguments, got 1",
    );
    load_error(
        "\\set x hash()\n",
        1,
        8,
        "hash() takes 1 to 2 arguments, got 0",
    );
    load_error(
        "\\set x greatest()\n",
        1,
        8,
        "greatest() takes at least 1 argument",
    );
    load_error("\\set x abc\n", 1, 8, "unexpected 'abc'");
    load_error("\\set x CASE 1 END\n", 1, 13, "expected WHEN after CASE");
    load_error(
        "\\set x 99999999999999999999\n",
        1,
        8,
        "integer '99999999999999999999' is out of range",
    );
    load_error("\\set x 9223372036854775808\n", 1, 8, "out of range");
    load_error("\\set x 1e999\n", 1, 8, "out of the double range");
    load_error(
        "\\set x\n",
        1,
        7,
        "expected an expression after the variable name",
    );
    load_error("\\set\n", 1, 5, "expected a variable name");
    load_error("\\set x-y 1\n", 1, 6, "invalid variable name");
    load_error(
        "SELECT 1;\nSELECT 'abc\n;\n",
        2,
        8,
        "unterminated quoted string",
    );
    load_error("SELECT \"abc;\n", 1, 8, "unterminated quoted identifier");
    load_error(
        "SELECT 1;\n/* a /* nested */ comment\n",
        2,
        1,
        "unterminated /* comment",
    );
    load_error(
        "DO $body$ BEGIN END $bod$;\n",
        1,
        4,
        "unterminated dollar-quoted string",
    );
    load_error(
        "SELECT 1;\n\\if 1\nSELECT 2;\n",
        2,
        1,
        "\\if without \\endif",
    );
    load_error(
        "\\if 1\nSELECT 2;\n\\transaction b\nSELECT 1;\n\\endif\n",
        1,
        1,
        "\\if without \\endif",
    );
    load_error("SELECT 1;\n\\else\n", 2, 1, "\\else without \\if");
    load_error("SELECT 1;\n\\elif 1\n", 2, 1, "\\elif without \\if");
    load_error("SELECT 1;\n\\endif\n", 2, 1, "\\endif without \\if");
    load_error(
        "\\if 1\nSELECT 1;\n\\else\nSELECT 2;\n\\else\n\\endif\n",
        5,
        1,
        "\\else after \\else",
    );
    load_error("\\if\n", 1, 4, "expected a condition");
    load_error("\\else x\n", 1, 7, "takes no argument");
    load_error(
        "\\gset\nSELECT 1;\n",
        1,
        1,
        "\\gset must follow an SQL command",
    );
    load_error(
        "\\set x 1\n\\gset\n",
        2,
        1,
        "\\gset must follow an SQL command",
    );
    load_error(
        "SELECT 1 \\gset\n\\aset\n",
        2,
        1,
        "already stores its result",
    );
    load_error("SELECT 1 \\gset a b\n", 1, 18, "too many arguments");
    load_error("", 1, 1, "empty script");
    load_error(
        "-- only a comment\n/* and another */\n",
        1,
        1,
        "empty script",
    );
    load_error(
        "\\transaction a\n\\transaction b\nSELECT 1;\n",
        1,
        1,
        "transaction 'a' has no commands",
    );
    load_error(
        "\\transaction a 1\nSELECT 1;\n\\transaction a\nSELECT 2;\n",
        3,
        1,
        "a transaction named 'a' already exists",
    );
    load_error(
        "\\transaction a x\nSELECT 1;\n",
        1,
        16,
        "invalid weight 'x'",
    );
    load_error("\\transaction a -1\n", 1, 16, "invalid weight '-1'");
    load_error("\\transaction\n", 1, 13, "expected a name");
    load_error(
        "SELECT 1;\n\\transaction a\nSELECT 2;\n",
        1,
        1,
        "outside any section",
    );
    load_error(
        "\\setup\n\\transaction a\nSELECT 1;\n",
        1,
        1,
        "the \\setup section has no commands",
    );
    load_error(
        "\\setup\nSELECT 1;\n\\setup\nSELECT 2;\n",
        3,
        1,
        "a second \\setup section",
    );
    load_error(
        "\\transaction a 0\nSELECT 1;\n",
        1,
        1,
        "every transaction has weight 0",
    );
    load_error(
        "\\only oracle\nSELECT 1;\n",
        1,
        7,
        "unknown dialect 'oracle'",
    );
    load_error(
        "\\only pg,oracle\nSELECT 1;\n",
        1,
        10,
        "unknown dialect 'oracle'",
    );
    load_error(
        "\\only pg\n\\set x 1\nSELECT 1;\n",
        2,
        1,
        "applies to the SQL command right after it",
    );
    load_error(
        "SELECT 1;\n\\only pg\n",
        2,
        1,
        "expected an SQL command before the end",
    );
    load_error("\\sleep\n", 1, 7, "expected a duration");
    load_error("\\sleep 1.5\n", 1, 8, "invalid duration '1.5'");
    load_error("\\sleep 1 min\n", 1, 10, "unknown time unit 'min'");
    load_error(
        "\\shell echo hi\n",
        1,
        1,
        "\\shell is refused: oio runs no shell commands",
    );
    load_error(
        "SELECT 1;\n\\setshell x echo 1\n",
        2,
        1,
        "\\setshell is refused",
    );
    load_error("\\endpipeline\n", 1, 1, "\\endpipeline outside a pipeline");
    load_error(
        "\\startpipeline\n\\startpipeline\n",
        2,
        1,
        "\\startpipeline inside a pipeline",
    );
    load_error(
        "\\startpipeline\nSELECT 1;\n",
        1,
        1,
        "\\startpipeline without \\endpipeline",
    );
    load_error("SELECT 1;\nSELECT 2\0;\n", 2, 9, "a NUL byte");
    load_error("SELECT 'a\0';\n", 1, 10, "a NUL byte");
    load_error("\\set x 1 +\0 2\n", 1, 11, "a NUL byte");
    load_error("SELECT 1 /* \0 */;\n", 1, 13, "a NUL byte");
    load_error("DO $$ a\0 $$;\n", 1, 8, "a NUL byte");
    // Columns count characters, not bytes.
    load_error(
        "SELECT 'é', 'ü';\n\\séΩt x 1\n",
        2,
        1,
        "unknown meta-command \\séΩt",
    );
    load_error("SELECT 'é'; \\set x é(\n", 1, 20, "unknown function 'é'");
}

#[test]
fn error_display_shows_the_line_and_a_caret() {
    let e = load("SELECT 1;\n\\set x 1 +* 2\n").unwrap_err();
    let path = &e.pos().file;
    assert_eq!(
        e.to_string(),
        format!("{path}:2:11: unexpected '*': expected a number, a :variable, a function call, TRUE, FALSE, NULL, CASE or '('\n  \\set x 1 +* 2\n            ^")
    );
}

#[test]
fn files_that_are_not_text_or_too_large_are_refused() {
    let f = Files::new();
    // Not UTF-8: the byte offset becomes a line and column.
    let src = f.write("latin1.sql", b"SELECT 1;\nSELECT 'caf\xe9';\n");
    let e = Script::load(&[src], &[]).unwrap_err();
    assert_eq!((e.pos().line, e.pos().col), (2, 12), "{e}");
    assert!(
        e.message()
            .contains("not UTF-8 (byte 0xe9 at byte offset 21)"),
        "{e}"
    );
    // Larger than 16 MiB: refused after a bounded read.
    let big = f.path("big.sql");
    let line = "SELECT 1;\n".repeat(1024);
    let mut text = String::with_capacity(17 << 20);
    while text.len() < 17 << 20 {
        text.push_str(&line);
    }
    std::fs::write(&big, &text).unwrap();
    let e = Script::load(&[big.display().to_string().parse().unwrap()], &[]).unwrap_err();
    assert_eq!((e.pos().line, e.pos().col), (1, 1));
    assert!(e.message().contains("larger than 16 MiB"), "{e}");
    // Missing.
    let e = Script::load(
        &[f.path("none.sql").display().to_string().parse().unwrap()],
        &[],
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("none.sql:1:1: cannot read the script"),
        "{e}"
    );
}

#[test]
fn hostile_expressions_are_errors_not_crashes() {
    // Deep nesting: parentheses, unary operators, calls, long operator chains.
    for text in [
        format!("\\set x {}1{}\n", "(".repeat(100_000), ")".repeat(100_000)),
        format!("\\set x {}1\n", "-".repeat(100_000)),
        format!("\\set x {}1\n", "NOT ".repeat(100_000)),
        format!("\\set x {}1{}\n", "abs(".repeat(10_000), ")".repeat(10_000)),
        format!("\\set x 1{}\n", " + 1".repeat(100_000)),
        format!("\\set x 1{}\n", " OR 1".repeat(100_000)),
    ] {
        let e = load(&text).unwrap_err();
        assert!(e.message().contains("nested too deeply"), "{}", e.message());
        assert_eq!(e.pos().line, 1);
    }
    // Just under the bound loads and runs.
    assert_eq!(
        value_of(&format!("{}1{}", "(".repeat(100), ")".repeat(100))).as_deref(),
        Ok("1")
    );
    // Huge numbers, garbage.
    let e = load(&format!("\\set x {}\n", "9".repeat(10_000))).unwrap_err();
    assert_eq!((e.pos().line, e.pos().col), (1, 8));
    assert!(e.message().contains("out of range"), "{}", e.message());
    assert!(
        e.to_string().len() < 1000,
        "a long line is shown as a window"
    );
    for text in [
        "\\set x 1e",
        "\\set x :",
        "\\set x )",
        "\\set x ,",
        "\\set x 1..2",
        "\\",
        "\\ \n",
        ":",
        "'",
        "$$",
        "\\only",
        "\\set x CASE WHEN 1 THEN",
    ] {
        let _ = load(text); // must not panic
    }
}

// ---- sources, weights, sections ----

#[test]
fn sources_parse_as_written() {
    let s: Source = "bench.sql@3".parse().unwrap();
    assert_eq!(s.to_string(), "bench.sql@3");
    assert_eq!(s.weight(), Some(3));
    assert_eq!(s.name(), "bench.sql");
    let s: Source = "builtin:hot-rows".parse().unwrap();
    assert_eq!(
        (s.to_string().as_str(), s.weight()),
        ("builtin:hot-rows", None)
    );
    let e = "bench.sql@x".parse::<Source>().unwrap_err();
    assert_eq!(e.pos().to_string(), "bench.sql@x:1:11");
    assert!(e.message().contains("invalid weight 'x'"), "{e}");
    assert!(
        e.to_string().ends_with("\n  bench.sql@x\n            ^"),
        "{e}"
    );
    let e = "bench.sql@".parse::<Source>().unwrap_err();
    assert_eq!(e.pos().col, 11);
    let e = "b.sql@-1".parse::<Source>().unwrap_err();
    assert_eq!(e.pos().col, 7);
    let e = "b.sql@99999999999".parse::<Source>().unwrap_err();
    assert!(e.message().contains("from 0 to 4294967295"), "{e}");
    let e = "builtin:nope@2".parse::<Source>().unwrap_err();
    assert!(
        e.message()
            .contains("unknown built-in scenario 'nope': expected one of last-page-insert"),
        "{e}"
    );
    let e = "@2".parse::<Source>().unwrap_err();
    assert_eq!(e.pos().col, 1);
}

#[test]
fn weights_sections_and_texts() {
    let f = Files::new();
    f.write(
        "mix.sql",
        "\\setup\nCREATE TABLE t (x int);\n\\teardown\nDROP TABLE t;\n\\transaction read 3\nSELECT 1;\n\\transaction write\nINSERT INTO t VALUES (1);\nSELECT 2;\n\\transaction never 0\nSELECT 3;\n",
    );
    let a: Source = format!("{}@2", f.path("mix.sql").display())
        .parse()
        .unwrap();
    let b = f.write("plain.sql", "SELECT 4;");
    let b2: Source = format!("{}@5", f.path("plain.sql").display())
        .parse()
        .unwrap();
    let s = Script::load(&[a.clone(), b, b2], &[]).unwrap();
    let t = s.transactions();
    let got: Vec<(&str, u32, u32)> = t
        .iter()
        .map(|t| (t.name.as_str(), t.weight, t.statements))
        .collect();
    assert_eq!(
        got,
        [
            ("read", 6, 1),
            ("write", 2, 2),
            ("never", 0, 1),
            ("plain", 1, 1),
            ("plain#2", 5, 1)
        ]
    );
    assert_eq!(t[0].source, a.to_string());
    assert!(s.has_setup() && s.has_teardown());
    assert_eq!(s.texts().len(), 3);
    assert!(s.texts()[0].1.contains("\\transaction read 3"));
    let mut c = Client::new(&s, 0, 1);
    let mut fake = Fake::default();
    assert_eq!(c.setup(&mut fake).unwrap().statements, 1);
    assert_eq!(c.teardown(&mut fake).unwrap().statements, 1);
    assert_eq!(fake.sent, ["CREATE TABLE t (x int)", "DROP TABLE t"]);
    // No setup: a no-op.
    let (plain, _) = load("SELECT 1;").unwrap();
    assert!(!plain.has_setup());
    assert_eq!(
        Client::new(&plain, 0, 1)
            .setup(&mut Fake::default())
            .unwrap()
            .statements,
        0
    );
}

#[test]
fn choose_draws_in_proportion_to_the_weights() {
    let f = Files::new();
    let src = f.write(
        "w.sql",
        "\\transaction a 1\nSELECT 1;\n\\transaction b 3\nSELECT 2;\n\\transaction z 0\nSELECT 3;\n\\transaction c 6\nSELECT 4;\n",
    );
    let s = Script::load(&[src], &[]).unwrap();
    let n = 100_000u32;
    let mut counts = [0u32; 4];
    for client in 0..4 {
        let mut c = Client::new(&s, client, 2024);
        for _ in 0..n / 4 {
            counts[c.choose()] += 1;
        }
    }
    assert_eq!(counts[2], 0, "weight 0 is never drawn");
    for (i, w) in [(0, 1.0), (1, 3.0), (3, 6.0)] {
        let p: f64 = w / 10.0;
        let mean = f64::from(n) * p;
        let sd = (f64::from(n) * p * (1.0 - p)).sqrt();
        let got = f64::from(counts[i]);
        assert!(
            (got - mean).abs() < 5.0 * sd,
            "transaction {i}: {got} drawn, expected {mean} ± 5 × {sd:.1}"
        );
    }
    // One transaction: always 0.
    let (one, _) = load("SELECT 1;").unwrap();
    let mut c = Client::new(&one, 0, 1);
    assert!((0..100).all(|_| c.choose() == 0));
}

#[test]
fn retry_repeats_the_same_draws() {
    let (s, _) = load("\\set a random(1, 1000000000000)\n\\set b random_gaussian(1, 1000000000, 2.5)\nSELECT :a, :b;").unwrap();
    let mut c = Client::new(&s, 0, 1);
    let mut first = Fake::default();
    c.run(0, &mut first).unwrap();
    let mut again = Fake::default();
    c.retry(&mut again).unwrap();
    assert_eq!(first.sent, again.sent);
    c.retry(&mut again).unwrap();
    assert_eq!(again.sent[1], first.sent[0]);
    let mut next = Fake::default();
    c.run(0, &mut next).unwrap();
    assert_ne!(next.sent, first.sent, "a new run draws anew");
    // Different clients and seeds draw differently; the same client and seed identically.
    let draw = |client, seed| {
        let mut f = Fake::default();
        Client::new(&s, client, seed).run(0, &mut f).unwrap();
        f.sent
    };
    assert_eq!(draw(0, 1), first.sent);
    assert_ne!(draw(1, 1), first.sent);
    assert_ne!(draw(0, 2), first.sent);
    // retry before any run is a script failure, not a panic.
    assert!(matches!(
        Client::new(&s, 0, 1).retry(&mut Fake::default()),
        Err(Failure::Script { .. })
    ));
}

#[test]
fn sql_failures_carry_the_position_and_at_most_200_characters() {
    let long = "x".repeat(500);
    let text = format!("SELECT 1;\n  SELECT '{long}';\n");
    let (s, path) = load(&text).unwrap();
    let mut fake = Fake::default();
    fake.answers.push_back(Ok((vec![], vec![])));
    fake.answers.push_back(Err("boom".into()));
    let outcome = Client::new(&s, 0, 1).run(0, &mut fake);
    match outcome {
        Err(Failure::Sql { at, sql, error }) => {
            assert_eq!(at.to_string(), format!("{path}:2:3"));
            assert_eq!(sql.chars().count(), 200);
            assert!(sql.starts_with("SELECT 'xxx"));
            assert_eq!(error, "boom");
        }
        other => panic!("{other:?}"),
    }
}

// ---- dialects and \only ----

#[test]
fn only_keeps_statements_for_their_dialects() {
    let text = "\\set x 1\n\\only postgres\nSELECT 'pg';\n\\only mysql,sqlite\nSELECT 'my or lite';\n\\only MariaDB\nSELECT 'maria' \\gset\nSELECT 'all', :x;\n";
    let (s, _) = load(text).unwrap();
    assert_eq!(s.transactions()[0].statements, 4);
    for (dialect, want) in [
        ("postgres", vec!["SELECT 'pg'"]),
        ("pg", vec!["SELECT 'pg'"]),
        ("postgresql", vec!["SELECT 'pg'"]),
        ("sqlite", vec!["SELECT 'my or lite'"]),
        ("mysql", vec!["SELECT 'my or lite'", "SELECT 'maria'"]),
        ("mariadb", vec!["SELECT 'my or lite'", "SELECT 'maria'"]),
        ("mssql", vec![]),
    ] {
        let d = s.for_dialect(dialect).unwrap();
        let mut fake = Fake::default().answer(&[], vec![]);
        if dialect.starts_with('m') && dialect != "mssql" {
            fake = Fake::default()
                .answer(&[], vec![])
                .answer(&["x"], vec![vec![Value::Int(1)]]);
        }
        Client::new(&d, 0, 1).run(0, &mut fake).unwrap();
        let mut want: Vec<String> = want.into_iter().map(String::from).collect();
        want.push("SELECT 'all', 1".into());
        assert_eq!(fake.sent, want, "{dialect}");
        assert_eq!(d.transactions()[0].statements as usize, want.len());
    }
    let e = s.for_dialect("oracle").unwrap_err();
    assert!(e.message().contains("unknown dialect 'oracle'"), "{e}");
}

#[test]
fn only_inside_conditionals_keeps_the_jumps_right() {
    let text = "\\if :v\n\\only pg\nSELECT 'pg-if';\n\\only sqlite\nSELECT 'lite-if';\n\\else\n\\only pg\nSELECT 'pg-else';\nSELECT 'else';\n\\endif\nSELECT 'end';\n";
    for (v, dialect, want) in [
        ("1", "pg", vec!["SELECT 'pg-if'", "SELECT 'end'"]),
        (
            "0",
            "pg",
            vec!["SELECT 'pg-else'", "SELECT 'else'", "SELECT 'end'"],
        ),
        ("1", "sqlite", vec!["SELECT 'lite-if'", "SELECT 'end'"]),
        ("0", "sqlite", vec!["SELECT 'else'", "SELECT 'end'"]),
    ] {
        let (s, _) = load_defs(text, &[("v", v)]).unwrap();
        let d = s.for_dialect(dialect).unwrap();
        let mut fake = Fake::default();
        Client::new(&d, 0, 1).run(0, &mut fake).unwrap();
        assert_eq!(fake.sent, want, "v={v} on {dialect}");
    }
}

#[test]
fn a_transaction_left_without_sql_names_itself_and_its_source() {
    let f = Files::new();
    let src = f.write(
        "pgonly.sql",
        "\\transaction pg-stuff\n\\set x 1\n\\only pg\nSELECT 1;\n\\transaction other\nSELECT 2;\n",
    );
    let s = Script::load(&[src], &[]).unwrap();
    assert!(s.for_dialect("postgres").is_ok());
    let e = s.for_dialect("sqlite").unwrap_err();
    assert_eq!((e.pos().line, e.pos().col), (1, 1));
    assert!(e.message().contains("transaction 'pg-stuff' (from "), "{e}");
    assert!(
        e.message()
            .contains("pgonly.sql) has no SQL command left on sqlite"),
        "{e}"
    );
}

// ---- built-in scenarios ----

#[test]
fn builtin_scenarios_load_on_their_dialects_and_refuse_the_others() {
    let names: Vec<&str> = builtins().iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "last-page-insert",
            "last-page-insert-hash",
            "hot-rows",
            "point-select"
        ]
    );
    for name in names {
        let src: Source = format!("builtin:{name}").parse().unwrap();
        let s = Script::load(&[src], &[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(s.has_setup() && s.has_teardown(), "{name}");
        assert_eq!(s.texts()[0].0, format!("builtin:{name}"));
        for dialect in ["postgres", "mysql", "sqlite"] {
            let refused = name == "last-page-insert-hash" && dialect == "sqlite";
            match s.for_dialect(dialect) {
                Ok(d) => {
                    assert!(!refused, "{name} on {dialect}");
                    let mut c = Client::new(&d, 2, 1);
                    let mut fake = Fake::default();
                    c.setup(&mut fake).unwrap();
                    let setup = fake.sent.clone();
                    assert!(
                        setup[0].starts_with("DROP TABLE IF EXISTS oio_sql_"),
                        "{name}: {setup:?}"
                    );
                    assert!(
                        setup.iter().any(|s| s.starts_with("CREATE TABLE oio_sql_")),
                        "{name} on {dialect}: {setup:?}"
                    );
                    // Every setup statement is for this dialect (no other dialect's DDL).
                    let foreign = match dialect {
                        "postgres" => ["AUTO_INCREMENT", "AUTOINCREMENT"],
                        "mysql" => ["bigserial", "AUTOINCREMENT"],
                        _ => ["AUTO_INCREMENT", "bigserial"],
                    };
                    for st in &setup {
                        for word in foreign {
                            assert!(!st.contains(word), "{name} on {dialect}: {st}");
                        }
                        assert!(!st.contains(":scale"), "{name}: scale substituted: {st}");
                    }
                    let mut fake = Fake::default();
                    for _ in 0..3 {
                        let t = c.choose();
                        c.run(t, &mut fake).unwrap();
                    }
                    assert!(
                        fake.sent
                            .iter()
                            .all(|s| !s.contains(':') || s.contains("::")),
                        "{name}: {:?}",
                        fake.sent
                    );
                    let mut fake = Fake::default();
                    c.teardown(&mut fake).unwrap();
                    assert!(
                        fake.sent
                            .iter()
                            .all(|s| s.starts_with("DROP TABLE IF EXISTS oio_sql_")),
                        "{:?}",
                        fake.sent
                    );
                }
                Err(e) => {
                    assert!(refused, "{name} on {dialect}: {e}");
                    assert!(e.to_string().starts_with("builtin:last-page-insert-hash:1:1: builtin:last-page-insert-hash does not run on sqlite: SQLite has no table partitioning"), "{e}");
                }
            }
        }
    }
}

#[test]
fn builtin_scenarios_send_what_they_say() {
    let s = Script::load(&["builtin:last-page-insert".parse().unwrap()], &[]).unwrap();
    let d = s.for_dialect("mysql").unwrap();
    let mut c = Client::new(&d, 0, 1);
    let mut fake = Fake::default();
    c.setup(&mut fake).unwrap();
    assert!(
        fake.sent[1].contains("AUTO_INCREMENT PRIMARY KEY"),
        "{}",
        fake.sent[1]
    );
    assert!(
        fake.sent[2].starts_with("CREATE INDEX oio_sql_ledger_account"),
        "{}",
        fake.sent[2]
    );
    let mut fake = Fake::default();
    c.run(0, &mut fake).unwrap();
    let (debit, credit, amount) = (
        int_var(&c, "debit"),
        int_var(&c, "credit"),
        int_var(&c, "amount"),
    );
    // One transfer is one command (one round trip): the statements joined by `\;`.
    assert_eq!(
        fake.sent,
        [format!(
            "BEGIN ;\nINSERT INTO oio_sql_ledger (account, amount) VALUES ({debit}, 0 - {amount}) ;\nINSERT INTO oio_sql_ledger (account, amount) VALUES ({credit}, {amount}) ;\nCOMMIT"
        )]
    );
    // The hash-partitioned ledger on PostgreSQL: 16 partitions from a DO block.
    let s = Script::load(&["builtin:last-page-insert-hash@4".parse().unwrap()], &[]).unwrap();
    assert_eq!(s.transactions()[0].weight, 4);
    let d = s.for_dialect("postgres").unwrap();
    let mut fake = Fake::default();
    Client::new(&d, 0, 1).setup(&mut fake).unwrap();
    assert!(
        fake.sent[1].contains("PARTITION BY HASH (id)"),
        "{:?}",
        fake.sent
    );
    assert!(fake.sent[2].contains("MODULUS 16"), "{:?}", fake.sent);
    // Point-select fills 100,000 x scale rows.
    let s = Script::load(
        &["builtin:point-select".parse().unwrap()],
        &[("scale".into(), "3".into())],
    )
    .unwrap();
    let d = s.for_dialect("postgres").unwrap();
    let mut fake = Fake::default();
    let mut c = Client::new(&d, 0, 1);
    c.setup(&mut fake).unwrap();
    assert!(
        fake.sent[2].contains("generate_series(1, 100000 * 3)"),
        "{:?}",
        fake.sent
    );
    let mut fake = Fake::default();
    c.run(0, &mut fake).unwrap();
    let id = int_var(&c, "id");
    assert!((1..=300_000).contains(&id));
    assert_eq!(
        fake.sent,
        [format!("SELECT k, pad FROM oio_sql_point WHERE id = {id}")]
    );
    // Hot rows: one of ten, locked on PostgreSQL, the write lock first on SQLite.
    let s = Script::load(&["builtin:hot-rows".parse().unwrap()], &[]).unwrap();
    for (dialect, begin, select_end) in [
        ("pg", "BEGIN", " FOR UPDATE"),
        ("sqlite", "BEGIN IMMEDIATE", ""),
    ] {
        let d = s.for_dialect(dialect).unwrap();
        let mut c = Client::new(&d, 5, 1);
        let mut fake = Fake::default();
        c.run(0, &mut fake).unwrap();
        let id = int_var(&c, "id");
        assert!((1..=10).contains(&id));
        assert_eq!(
            fake.sent,
            [
                begin.to_string(),
                format!("SELECT counter FROM oio_sql_hot WHERE id = {id}{select_end}"),
                format!(
                    "UPDATE oio_sql_hot SET counter = counter + 1, updated_by = 5 WHERE id = {id}"
                ),
                "COMMIT".to_string(),
            ]
        );
    }
}

#[test]
fn random_scripts_load_or_fail_but_never_panic() {
    const PARTS: &[&str] = &[
        "\\",
        "set",
        " x ",
        ":x",
        ":",
        "::",
        "'",
        "\"",
        "`",
        "$",
        "$$",
        "$t$",
        "E'\\'",
        "(",
        ")",
        ";",
        "\n",
        "--",
        "/*",
        "*/",
        "1",
        "2.5",
        "if ",
        "elif ",
        "else",
        "endif",
        "gset",
        "aset",
        "only pg",
        "only sqlite",
        "transaction a",
        "transaction b 0",
        "setup",
        "teardown",
        "sleep ",
        "SELECT ",
        "é",
        "+",
        "-",
        "/",
        "CASE WHEN ",
        " THEN ",
        " END",
        "\\;",
        "\\\n",
        "random(1, 9)",
        "NULL",
        " IS ",
        "NOT ",
        "startpipeline",
        "endpipeline",
        "\r\n",
        " ",
        "\0",
    ];
    let f = Files::new();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut loaded = 0;
    for i in 0..1000 {
        let n = 1 + next() % 40;
        let text: String = (0..n)
            .map(|_| PARTS[(next() % PARTS.len() as u64) as usize])
            .collect();
        let src = f.write("r.sql", &text);
        let Ok(s) = Script::load(&[src], &[]) else {
            continue;
        };
        loaded += 1;
        for dialect in ["postgres", "sqlite"] {
            let Ok(d) = s.for_dialect(dialect) else {
                continue;
            };
            let mut c = Client::new(&d, 0, i);
            quiet(&mut c);
            let mut fake = Fake::default();
            let _ = c.setup(&mut fake);
            let t = c.choose();
            let _ = c.run(t, &mut fake);
            let _ = c.retry(&mut fake);
            let _ = c.teardown(&mut fake);
        }
    }
    assert!(
        loaded > 50,
        "the generator makes some valid scripts ({loaded})"
    );
}
