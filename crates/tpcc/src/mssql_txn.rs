//! The five transactions in T-SQL, each ONE round trip: the same body is a stored procedure
//! for `--mode server` (called with one `EXEC`, as HammerDB's SQL Server TPROC-C does) and,
//! in client mode, a batch that declares the procedure's parameters as variables set to
//! literals (written here from oio's own inputs: integers, an amount with two decimals and a
//! generated last name, quoted) followed by the body.
//!
//! Why one batch: on loopback the kernel charges the driver for the server's side of every
//! round trip, and a statement per row made the driver's CPU per transaction many times
//! PostgreSQL's. Each body reads and writes the rows the per-row statements of
//! [`crate::txn`] would (the district's next order id with `UPDATE` then a read of the
//! locked row; the stock rows in one `UPDATE … FROM (VALUES …)`, an item named twice counted
//! once per line; the customer by last name as the middle row of the first-name order), and
//! ends its own transaction: a body answers with an outcome row instead of raising an error,
//! so the 1 % unused-item New-Orders roll back without an exception.

use crate::db::{Canceller, Connection};
use crate::mssql::{batches, connect, nliteral, per_row_refused, tsql, TdsSession};
use crate::plan::{RunOptions, Timeouts};
use crate::sql::{Param, Stmt};
use crate::sql::{StmtError, Val};
use crate::txn::{CustomerBy, Input, Outcome};
use crate::url::Dialect;
use std::fmt::Write as _;
use std::sync::OnceLock;

/// Lines a New-Order may have (its procedure has this many item, warehouse and quantity
/// parameters).
const MAX_LINES: usize = 15;

/// The lines of a New-Order as a table of the procedure's parameters.
fn lines_values() -> String {
    let rows: Vec<String> = (1..=MAX_LINES)
        .map(|k| format!("({k}, @i{k}, @s{k}, @q{k})"))
        .collect();
    format!("(VALUES {}) AS l(n, i, sw, q)", rows.join(", "))
}

fn new_order_params() -> String {
    let mut p = String::from("@w INT, @d INT, @c INT, @cnt INT, @all_local INT");
    for k in 1..=MAX_LINES {
        let _ = write!(p, ", @i{k} INT, @s{k} INT, @q{k} INT");
    }
    p
}

fn new_order_body() -> String {
    let l = lines_values();
    format!(
        "DECLARE @o INT, @dtax NUMERIC(4,4), @wtax NUMERIC(4,4), @disc NUMERIC(4,4), @clast VARCHAR(16), @credit CHAR(2), @n INT;
BEGIN TRANSACTION;
UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = @w AND d_id = @d;
SELECT @o = d_next_o_id - 1, @dtax = d_tax FROM district WHERE d_w_id = @w AND d_id = @d;
SELECT @wtax = w_tax FROM warehouse WHERE w_id = @w;
SELECT @disc = c_discount, @clast = c_last, @credit = c_credit FROM customer WHERE c_w_id = @w AND c_d_id = @d AND c_id = @c;
SELECT @n = count(*) FROM {l} JOIN item ON i_id = l.i WHERE l.n <= @cnt;
IF @o IS NULL OR @wtax IS NULL OR @disc IS NULL OR @n < @cnt
BEGIN
  ROLLBACK TRANSACTION;
  SELECT CASE WHEN @o IS NULL OR @wtax IS NULL OR @disc IS NULL THEN -2 ELSE 0 END AS outcome, @n AS lines;
END
ELSE
BEGIN
  INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES (@o, @d, @w, @c, CURRENT_TIMESTAMP, NULL, @cnt, @all_local);
  INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (@o, @d, @w);
  UPDATE stock SET s_quantity = CASE WHEN s_quantity >= g.q + 10 THEN s_quantity - g.q ELSE s_quantity - g.q + 91 END, s_ytd = s_ytd + g.q, s_order_cnt = s_order_cnt + g.k, s_remote_cnt = s_remote_cnt + g.r
    FROM (SELECT l.i, l.sw, sum(l.q) AS q, count(*) AS k, sum(CASE WHEN l.sw <> @w THEN 1 ELSE 0 END) AS r FROM {l} WHERE l.n <= @cnt GROUP BY l.i, l.sw) AS g
    WHERE s_i_id = g.i AND s_w_id = g.sw;
  INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
    SELECT @o, @d, @w, l.n, l.i, l.sw, NULL, l.q, CAST(l.q * i_price AS NUMERIC(6,2)),
      CASE @d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
    FROM {l} JOIN item ON i_id = l.i JOIN stock ON s_i_id = l.i AND s_w_id = l.sw WHERE l.n <= @cnt;
  SET @n = @@ROWCOUNT;
  IF @n < @cnt
  BEGIN
    ROLLBACK TRANSACTION;
    SELECT -1 AS outcome, @n AS lines;
  END
  ELSE
  BEGIN
    COMMIT TRANSACTION;
    SELECT 1 AS outcome, @n AS lines;
  END
END
"
    )
}

/// The customer by last name: the middle row (rounded up) in first-name order, as
/// [`crate::txn`]'s `middle_customer` picks it; `@c` stays 0 when there is none.
const BY_NAME: &str = "IF @c = 0
  SELECT @c = c_id FROM (SELECT c_id, ROW_NUMBER() OVER (ORDER BY c_first) AS rn, count(*) OVER () AS cnt FROM customer WHERE c_w_id = @cw AND c_d_id = @cd AND c_last = @clast) AS x WHERE rn = (cnt + 1) / 2;
";

const PAYMENT_PARAMS: &str =
    "@w INT, @d INT, @cw INT, @cd INT, @c INT, @clast VARCHAR(16), @amount NUMERIC(6,2)";

fn payment_body() -> String {
    format!(
        "DECLARE @wname VARCHAR(10), @dname VARCHAR(10), @found INT;
BEGIN TRANSACTION;
UPDATE warehouse SET w_ytd = w_ytd + @amount WHERE w_id = @w;
SELECT @wname = w_name FROM warehouse WHERE w_id = @w;
UPDATE district SET d_ytd = d_ytd + @amount WHERE d_w_id = @w AND d_id = @d;
SELECT @dname = d_name FROM district WHERE d_w_id = @w AND d_id = @d;
{BY_NAME}UPDATE customer SET c_balance = c_balance - @amount, c_ytd_payment = c_ytd_payment + @amount, c_payment_cnt = c_payment_cnt + 1,
  c_data = CASE WHEN c_credit = 'BC' THEN LEFT(CONCAT(@c, ' ', @cd, ' ', @cw, ' ', @d, ' ', @w, ' ', @amount, ' | ', c_data), 500) ELSE c_data END
  WHERE c_w_id = @cw AND c_d_id = @cd AND c_id = @c;
SET @found = @@ROWCOUNT;
IF @found = 0 OR @wname IS NULL OR @dname IS NULL
BEGIN
  ROLLBACK TRANSACTION;
  SELECT 0 AS found;
END
ELSE
BEGIN
  INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (@c, @cd, @cw, @d, @w, CURRENT_TIMESTAMP, @amount, CONCAT(@wname, '    ', @dname));
  COMMIT TRANSACTION;
  SELECT 1 AS found;
END
"
    )
}

const ORDER_STATUS_PARAMS: &str = "@cw INT, @cd INT, @c INT, @clast VARCHAR(16)";

fn order_status_body() -> String {
    format!(
        "DECLARE @o INT;
{BY_NAME}SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = @cw AND c_d_id = @cd AND c_id = @c;
SELECT @o = max(o_id) FROM orders WHERE o_w_id = @cw AND o_d_id = @cd AND o_c_id = @c;
SELECT o_id, o_carrier_id, o_entry_d, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM orders JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE o_w_id = @cw AND o_d_id = @cd AND o_id = @o;
"
    )
}

const DELIVERY_PARAMS: &str = "@w INT, @carrier INT";

/// Every district's oldest undelivered order; one a concurrent Delivery took first (the
/// DELETE finds no row) is skipped, as the per-district statements skip it.
const DELIVERY_BODY: &str = "DECLARE @d INT = 1, @o INT, @c INT, @amt NUMERIC(12,2), @done INT = 0;
BEGIN TRANSACTION;
WHILE @d <= 10
BEGIN
  SET @o = NULL;
  SELECT @o = min(no_o_id) FROM new_order WHERE no_w_id = @w AND no_d_id = @d;
  IF @o IS NOT NULL
  BEGIN
    DELETE FROM new_order WHERE no_w_id = @w AND no_d_id = @d AND no_o_id = @o;
    IF @@ROWCOUNT > 0
    BEGIN
      UPDATE orders SET o_carrier_id = @carrier WHERE o_w_id = @w AND o_d_id = @d AND o_id = @o;
      SELECT @c = o_c_id FROM orders WHERE o_w_id = @w AND o_d_id = @d AND o_id = @o;
      UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = @w AND ol_d_id = @d AND ol_o_id = @o;
      SELECT @amt = coalesce(sum(ol_amount), 0) FROM order_line WHERE ol_w_id = @w AND ol_d_id = @d AND ol_o_id = @o;
      UPDATE customer SET c_balance = c_balance + @amt, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = @w AND c_d_id = @d AND c_id = @c;
      SET @done = @done + 1;
    END
  END
  SET @d = @d + 1;
END
COMMIT TRANSACTION;
SELECT @done AS delivered;
";

const STOCK_LEVEL_PARAMS: &str = "@w INT, @d INT, @threshold INT";

const STOCK_LEVEL_BODY: &str = "SELECT count(DISTINCT s_i_id) AS low_stock FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id
  WHERE ol_w_id = @w AND ol_d_id = @d AND s_quantity < @threshold
  AND ol_o_id < (SELECT d_next_o_id FROM district WHERE d_w_id = @w AND d_id = @d)
  AND ol_o_id >= (SELECT d_next_o_id - 20 FROM district WHERE d_w_id = @w AND d_id = @d);
";

/// One transaction's T-SQL: its procedure's name, parameters and body.
struct Txn {
    name: &'static str,
    params: String,
    body: String,
}

/// The five, built once.
fn txns() -> &'static [Txn; 5] {
    static T: OnceLock<[Txn; 5]> = OnceLock::new();
    T.get_or_init(|| {
        [
            Txn {
                name: "oio_neword",
                params: new_order_params(),
                body: new_order_body(),
            },
            Txn {
                name: "oio_payment",
                params: PAYMENT_PARAMS.into(),
                body: payment_body(),
            },
            Txn {
                name: "oio_ostat",
                params: ORDER_STATUS_PARAMS.into(),
                body: order_status_body(),
            },
            Txn {
                name: "oio_delivery",
                params: DELIVERY_PARAMS.into(),
                body: DELIVERY_BODY.into(),
            },
            Txn {
                name: "oio_slev",
                params: STOCK_LEVEL_PARAMS.into(),
                body: STOCK_LEVEL_BODY.into(),
            },
        ]
    })
}

/// The procedures' DDL, one batch each (CREATE PROCEDURE must be alone in its batch).
pub fn create_procedures() -> Vec<String> {
    let mut out = vec![drop_procedures()];
    for t in txns() {
        out.push(format!(
            "CREATE PROCEDURE {} {}\nAS\nBEGIN\nSET NOCOUNT ON;\nSET XACT_ABORT ON;\n{}END",
            t.name, t.params, t.body
        ));
    }
    out
}

/// Drops the procedures.
pub fn drop_procedures() -> String {
    txns()
        .iter()
        .map(|t| format!("DROP PROCEDURE IF EXISTS {};\n", t.name))
        .collect()
}

/// A value as a T-SQL argument.
enum Arg<'a> {
    Int(i64),
    /// NULL (unused New-Order line slots).
    Null,
    /// Money, two decimals.
    Money(f64),
    /// Generated text (a last name).
    Text(&'a str),
}

fn push_arg(out: &mut String, a: &Arg) {
    match a {
        Arg::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Arg::Null => out.push_str("NULL"),
        Arg::Money(v) => {
            let _ = write!(out, "{v:.2}");
        }
        Arg::Text(s) => {
            out.push('\'');
            for c in s.chars() {
                if c == '\'' {
                    out.push('\'');
                }
                out.push(c);
            }
            out.push('\'');
        }
    }
}

/// Index of the transaction in [`txns`] and its arguments, in parameter order.
fn args(input: &Input) -> (usize, Vec<Arg<'_>>) {
    use Arg::{Int, Money, Null, Text};
    fn by(by: &CustomerBy) -> (i64, &str) {
        match by {
            CustomerBy::Id(id) => (*id, ""),
            CustomerBy::Name(n) => (0, n.as_str()),
        }
    }
    match input {
        Input::NewOrder {
            w_id,
            d_id,
            c_id,
            lines,
            all_local,
        } => {
            let mut a = vec![
                Int(*w_id),
                Int(*d_id),
                Int(*c_id),
                Int(lines.len().min(MAX_LINES) as i64),
                Int(*all_local as i64),
            ];
            for k in 0..MAX_LINES {
                match lines.get(k) {
                    Some(l) => a.extend([Int(l.i_id), Int(l.supply_w_id), Int(l.quantity)]),
                    None => a.extend([Null, Null, Null]),
                }
            }
            (0, a)
        }
        Input::Payment {
            w_id,
            d_id,
            c_w_id,
            c_d_id,
            by: b,
            amount,
        } => {
            let (c, last) = by(b);
            (
                1,
                vec![
                    Int(*w_id),
                    Int(*d_id),
                    Int(*c_w_id),
                    Int(*c_d_id),
                    Int(c),
                    Text(last),
                    Money(*amount),
                ],
            )
        }
        Input::OrderStatus { w_id, d_id, by: b } => {
            let (c, last) = by(b);
            (2, vec![Int(*w_id), Int(*d_id), Int(c), Text(last)])
        }
        Input::Delivery { w_id, carrier_id } => (3, vec![Int(*w_id), Int(*carrier_id)]),
        Input::StockLevel {
            w_id,
            d_id,
            threshold,
        } => (4, vec![Int(*w_id), Int(*d_id), Int(*threshold)]),
    }
}

/// The parameters of a parameter list as (name without `@`, type): `@w INT, @amount
/// NUMERIC(6,2)` → (`w`, `INT`), (`amount`, `NUMERIC(6,2)`).
fn params_of(params: &str) -> impl Iterator<Item = (&str, &str)> {
    params
        .trim_start_matches('@')
        .split(", @")
        .map(|p| p.split_once(' ').unwrap_or((p, "")))
}

/// Writes the client-mode batch of `input` into `out`: `DECLARE @w INT = 1, …;` then the
/// body.
pub(crate) fn client_batch(out: &mut String, input: &Input) {
    let (i, a) = args(input);
    let t = &txns()[i];
    out.clear();
    out.push_str("DECLARE ");
    for (k, ((name, ty), arg)) in params_of(&t.params).zip(&a).enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "@{name} {ty} = ");
        push_arg(out, arg);
    }
    out.push_str(";\n");
    out.push_str(&t.body);
}

/// Writes the server-mode call of `input` into `out`: `EXEC oio_neword 1, 3, …`.
pub(crate) fn server_call(out: &mut String, input: &Input) {
    let (i, a) = args(input);
    out.clear();
    out.push_str("EXEC ");
    out.push_str(txns()[i].name);
    for (k, arg) in a.iter().enumerate() {
        out.push_str(if k == 0 { " " } else { ", " });
        push_arg(out, arg);
    }
}

/// What a transaction's answer means.
fn outcome(input: &Input, sets: &[crate::mssql::ResultSet]) -> Result<Outcome, StmtError> {
    let first = |what: &str| -> Result<&Vec<Val>, StmtError> {
        sets.iter()
            .find(|s| !s.rows.is_empty())
            .and_then(|s| s.rows.first())
            .ok_or_else(|| StmtError::Fatal(format!("{what}: the server sent no row")))
    };
    match input {
        Input::NewOrder { lines, .. } => {
            let r = first("New-Order")?;
            match r.first().map(Val::int) {
                Some(1) => Ok(Outcome::Committed),
                Some(0) => Ok(Outcome::RolledBack),
                Some(-1) => Err(StmtError::Fatal(format!(
                    "New-Order: {} of {} order lines found their stock row (rolled back)",
                    r.get(1).map(Val::int).unwrap_or(0),
                    lines.len()
                ))),
                _ => Err(StmtError::Fatal(
                    "New-Order: the warehouse, district or customer does not exist (rolled back)"
                        .into(),
                )),
            }
        }
        Input::Payment { .. } => match first("Payment")?.first().map(Val::int) {
            Some(1) => Ok(Outcome::Committed),
            _ => Err(StmtError::Fatal(
                "Payment: customer, warehouse or district not found (rolled back)".into(),
            )),
        },
        Input::OrderStatus { .. } => {
            if sets.first().is_some_and(|s| !s.rows.is_empty()) {
                Ok(Outcome::Committed)
            } else {
                Err(StmtError::Fatal("Order-Status: customer: no row".into()))
            }
        }
        Input::Delivery { .. } | Input::StockLevel { .. } => {
            first("Delivery or Stock-Level")?;
            Ok(Outcome::Committed)
        }
    }
}

/// Runs `input` as one client-mode batch.
pub(crate) fn client(s: &mut TdsSession, input: &Input) -> Result<Outcome, StmtError> {
    client_batch(&mut s.buf, input);
    let sets = s.run_buf()?;
    outcome(input, &sets)
}

/// Runs `input` as one procedure call.
pub(crate) fn server(s: &mut TdsSession, input: &Input) -> Result<Outcome, StmtError> {
    server_call(&mut s.buf, input);
    let sets = s.run_buf()?;
    outcome(input, &sets)
}

/// A T-SQL session as oio's [`Connection`]: its transactions are the ones above.
impl Connection for TdsSession {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlserver
    }

    fn begin(&mut self, _write: bool) -> std::result::Result<(), StmtError> {
        self.sets("BEGIN TRANSACTION").map(|_| ())
    }

    fn commit(&mut self) -> std::result::Result<(), StmtError> {
        self.sets("COMMIT TRANSACTION").map(|_| ())
    }

    fn rollback(&mut self) -> std::result::Result<(), StmtError> {
        self.sets("IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION")
            .map(|_| ())
    }

    fn execute(&mut self, stmt: Stmt, _params: &[Param]) -> std::result::Result<u64, StmtError> {
        Err(per_row_refused(stmt))
    }

    fn query(
        &mut self,
        stmt: Stmt,
        params: &[Param],
        out: &mut Vec<Vec<Val>>,
    ) -> std::result::Result<(), StmtError> {
        // The driver's own bookkeeping (Σ d_next_o_id) is portable SQL without parameters.
        if !params.is_empty() || stmt.sql().contains('$') {
            return Err(per_row_refused(stmt));
        }
        *out = self
            .sets(stmt.sql())?
            .into_iter()
            .next()
            .unwrap_or_default()
            .rows;
        Ok(())
    }

    fn query_sql(
        &mut self,
        sql: &str,
    ) -> std::result::Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        let set = self
            .sets(&tsql(sql))?
            .into_iter()
            .next()
            .unwrap_or_default();
        Ok((set.names, set.rows))
    }

    fn run_sql(
        &mut self,
        sql: &str,
    ) -> std::result::Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        // One batch; the last result set is the last statement's.
        let set = self.sets(&tsql(sql))?.pop().unwrap_or_default();
        Ok((set.names, set.rows))
    }

    fn text_literal(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 3);
        nliteral(&mut out, s);
        out
    }

    fn batch(&mut self, sql: &str) -> std::result::Result<(), StmtError> {
        // `GO` on a line of its own ends a batch, as in sqlcmd (CREATE PROCEDURE must be
        // alone in its batch; Babelfish's dialect switch applies from the next batch).
        for part in batches(sql) {
            self.sets(&tsql(part)).map_err(|e| match e {
                StmtError::Fatal(m) => {
                    let head: String = part.trim().chars().take(120).collect();
                    StmtError::Fatal(format!("{m} (in: {head})"))
                }
                other => other,
            })?;
        }
        Ok(())
    }

    fn canceller(&self) -> Canceller {
        let (url, spid) = (self.url().clone(), self.spid());
        Canceller::new(move || {
            let url = url.clone();
            // KILL from a new session, on a helper thread so a silent server cannot hang
            // the caller.
            let _ = std::thread::Builder::new()
                .name("oio-tds-cancel".into())
                .spawn(move || {
                    let t = Timeouts {
                        connect_s: 10.0,
                        statement_s: 30.0,
                        ..Timeouts::default()
                    };
                    if let Ok(mut s) = connect(&url, "sqlserver", "oio-tpcc-cancel", &t) {
                        let _ = s.sets(&format!("KILL {spid}"));
                    }
                });
        })
    }

    fn prepare_worker(&mut self, opts: &RunOptions) -> std::result::Result<(), StmtError> {
        self.sets(&format!(
            "SET TRANSACTION ISOLATION LEVEL {}",
            opts.isolation.sql()
        ))
        .map(|_| ())
    }

    fn transact(
        &mut self,
        input: &Input,
        _rows: &mut Vec<Vec<Val>>,
    ) -> std::result::Result<Outcome, StmtError> {
        client(self, input)
    }

    fn transact_server(&mut self, input: &Input) -> std::result::Result<Outcome, StmtError> {
        let r = server(self, input);
        if r.is_err() {
            // XACT_ABORT rolled back already, unless the error came between batches.
            let _ = self.sets("IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION");
        }
        r
    }

    fn engine_version(&mut self) -> std::result::Result<String, StmtError> {
        let (_, rows) = self.query_sql("SELECT @@VERSION")?;
        Ok(rows
            .first()
            .and_then(|r| r.first())
            .map(|v| v.text().lines().next().unwrap_or("").trim().to_string())
            .unwrap_or_default())
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::Line;

    fn new_order() -> Input {
        Input::NewOrder {
            w_id: 1,
            d_id: 2,
            c_id: 3,
            lines: vec![
                Line {
                    i_id: 7,
                    supply_w_id: 1,
                    quantity: 4,
                },
                Line {
                    i_id: 9,
                    supply_w_id: 2,
                    quantity: 1,
                },
            ],
            all_local: false,
        }
    }

    #[test]
    fn client_batches_declare_the_procedure_parameters() {
        let mut b = String::new();
        client_batch(&mut b, &new_order());
        assert!(
            b.starts_with("DECLARE @w INT = 1, @d INT = 2, @c INT = 3, @cnt INT = 2, @all_local INT = 0, @i1 INT = 7, @s1 INT = 1, @q1 INT = 4, @i2 INT = 9, @s2 INT = 2, @q2 INT = 1, @i3 INT = NULL"),
            "{b}"
        );
        assert!(b.contains("@q15 INT = NULL;\nDECLARE @o INT"), "{b}");
        let pay = Input::Payment {
            w_id: 1,
            d_id: 2,
            c_w_id: 1,
            c_d_id: 2,
            by: CustomerBy::Name("O'BAR".into()),
            amount: 12.5,
        };
        client_batch(&mut b, &pay);
        assert!(
            b.starts_with("DECLARE @w INT = 1, @d INT = 2, @cw INT = 1, @cd INT = 2, @c INT = 0, @clast VARCHAR(16) = 'O''BAR', @amount NUMERIC(6,2) = 12.50;\n"),
            "{b}"
        );
        server_call(&mut b, &pay);
        assert_eq!(b, "EXEC oio_payment 1, 2, 1, 2, 0, 'O''BAR', 12.50");
    }

    #[test]
    fn procedures_and_calls_agree_on_parameter_counts() {
        let inputs = [
            new_order(),
            Input::Delivery {
                w_id: 1,
                carrier_id: 3,
            },
            Input::StockLevel {
                w_id: 1,
                d_id: 1,
                threshold: 12,
            },
            Input::OrderStatus {
                w_id: 1,
                d_id: 1,
                by: CustomerBy::Id(5),
            },
        ];
        for input in &inputs {
            let (i, a) = args(input);
            assert_eq!(params_of(&txns()[i].params).count(), a.len(), "{input:?}");
        }
        let ddl = create_procedures();
        assert_eq!(ddl.len(), 6);
        assert!(ddl[1].starts_with("CREATE PROCEDURE oio_neword @w INT"));
        assert!(ddl[0].contains("DROP PROCEDURE IF EXISTS oio_slev;"));
    }
}
