//! The MariaDB/MySQL transactions in client mode, in few round trips.
//!
//! Each round trip to the server costs the client two system calls and a wake-up, and on
//! this driver that cost was most of its CPU: sent one statement at a time, a New-Order took
//! ten round trips. Here a transaction is sent as one or a few *scripts*: statements separated
//! by `;` in one text-protocol query (the connection has `CLIENT_MULTI_STATEMENTS`), their
//! values written into the SQL as literals. The client reads between scripts only what it
//! needs to decide the next one:
//!
//! - New-Order, two: the district's next order id, the items and the stock rows (locked, in
//!   primary-key order) are read; then the stock changes, the order, its new-order row and
//!   its lines are written and committed (or, for the 1 % unused item, rolled back);
//! - Payment, one; Order-Status, one; Stock-Level, one;
//! - Delivery, three: the ten districts' oldest new orders locked; then deleted, given their
//!   carrier, dated and summed; then credited to the customers and committed.
//!
//! A customer chosen by last name is found by the server: the one at position ⌈n/2⌉ by first
//! name (clause 2.5.2.2), with window functions (MariaDB 10.2, MySQL 8.0), kept in the
//! session's `@oio_c`. Keys are matched with `OR`ed equalities on the primary key, which both
//! servers read as key ranges (a row constructor `IN` may become a scan, and a locking scan
//! would lock the whole table).
//!
//! A script that ends in `COMMIT` is checked after it ran: rows it should have changed and
//! did not mean the database is not a consistent TPC-C database (its rows were read, and
//! locked, by an earlier script of the same transaction, or were loaded so), and the error
//! stops the run. A failing statement ends its script: the server runs none after it, so a
//! `COMMIT` later in the script is not reached, and the caller rolls back.

use crate::db::Connection;
use crate::mysql_script::{text, Script, SqlText};
use crate::mysql_session::MySession;
use crate::plan::RunOptions;
use crate::sql::StmtError;
use crate::sql::{Param, Stmt, Val};
use crate::txn::{line_amount, one, CustomerBy, Input, Line, Outcome};
use crate::url::Dialect;

/// `(a = x AND b = y) OR …` over `keys`.
fn pairs(out: &mut String, a: &str, b: &str, keys: impl Iterator<Item = (i64, i64)>) {
    out.push('(');
    for (k, (x, y)) in keys.enumerate() {
        if k > 0 {
            out.push_str(" OR ");
        }
        out.s("(")
            .s(a)
            .s(" = ")
            .n(x)
            .s(" AND ")
            .s(b)
            .s(" = ")
            .n(y)
            .s(")");
    }
    out.push(')');
}

/// The customer, as SQL: its id, or `@oio_c` after a statement that finds it by last name
/// is added to `s`.
fn customer(s: &mut Script, w: i64, d: i64, by: &CustomerBy) -> String {
    match by {
        CustomerBy::Id(id) => id.to_string(),
        CustomerBy::Name(last) => {
            s.stmt()
                .s("SET @oio_c = (SELECT c_id FROM (SELECT c_id, ROW_NUMBER() OVER (ORDER BY c_first) AS k, COUNT(*) OVER () AS n \
                    FROM customer WHERE c_w_id = ")
                .n(w)
                .s(" AND c_d_id = ")
                .n(d)
                .s(" AND c_last = ")
                .lit(last)
                .s(") t WHERE k = (n + 1) DIV 2)");
            "@oio_c".to_string()
        }
    }
}

/// Runs one transaction, from its start to its commit (or rollback). On an error the caller
/// rolls back.
pub(crate) fn execute(m: &mut MySession, input: &Input) -> Result<Outcome, StmtError> {
    let block = m.blocks();
    match input {
        Input::NewOrder {
            w_id,
            d_id,
            c_id,
            lines,
            all_local,
        } => new_order(m, block, (*w_id, *d_id, *c_id), lines, *all_local),
        Input::Payment {
            w_id,
            d_id,
            c_w_id,
            c_d_id,
            by,
            amount,
        } => payment(m, block, (*w_id, *d_id, *c_w_id, *c_d_id), by, *amount),
        Input::OrderStatus { w_id, d_id, by } => order_status(m, block, *w_id, *d_id, by),
        Input::Delivery { w_id, carrier_id } => delivery(m, block, *w_id, *carrier_id),
        Input::StockLevel {
            w_id,
            d_id,
            threshold,
        } => {
            // One read: a transaction by itself (autocommit), sent as a plain statement.
            let mut s = Script::new(false);
            let (w, d) = (*w_id, *d_id);
            s.read()
                .s("SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id WHERE ol_w_id = ")
                .n(w)
                .s(" AND ol_d_id = ")
                .n(d)
                .s(" AND s_quantity < ")
                .n(*threshold)
                .s(" AND ol_o_id < (SELECT d_next_o_id FROM district WHERE d_w_id = ")
                .n(w)
                .s(" AND d_id = ")
                .n(d)
                .s(") AND ol_o_id >= (SELECT d_next_o_id - 20 FROM district WHERE d_w_id = ")
                .n(w)
                .s(" AND d_id = ")
                .n(d)
                .s(")");
            m.script(&mut s)?;
            Ok(Outcome::Committed)
        }
    }
}

/// New-Order (clause 2.4.2): reads and locks, then writes and commits.
fn new_order(
    m: &mut MySession,
    block: bool,
    (w, d, c_id): (i64, i64, i64),
    lines: &[Line],
    all_local: bool,
) -> Result<Outcome, StmtError> {
    // The lines are in key order; lines naming one stock row more than once change it
    // once, by each line in turn (as the per-row path does, line by line).
    let rows: Vec<&[Line]> = lines
        .chunk_by(|a, b| (a.supply_w_id, a.i_id) == (b.supply_w_id, b.i_id))
        .collect();

    // Round trip 1: the order id, taxes and discount; the items; the stock rows, locked.
    let read = m.script(&mut new_order_reads(block, (w, d, c_id), lines, &rows))?;
    let Some(found) = new_order_found(&read[0], lines, &rows)? else {
        // The 1 % unused item: everything so far is undone (clause 2.4.2.3).
        m.batch("ROLLBACK")?;
        return Ok(Outcome::RolledBack);
    };

    // Round trip 2: the stock rows changed, the order, its new-order row, its lines.
    let mut s = Script::new(block);
    stock_update(&mut s, w, &rows, &found.stock);
    let total = order_inserts(
        &mut s,
        (found.o_id, d, w, c_id),
        lines,
        all_local,
        &rows,
        &found,
    );
    s.stmt().push_str("COMMIT");
    m.script(&mut s)?;
    // The terminal's total; computed as the specification asks, then discarded.
    let (d_tax, w_tax, discount) = found.taxes_discount;
    let _ = total * (1.0 - discount) * (1.0 + w_tax + d_tax);
    Ok(Outcome::Committed)
}

/// What New-Order's first round trip read: the order id; the district's and warehouse's
/// taxes and the customer's discount; each line's item price; each stock row's quantity and
/// district info.
struct NewOrderRead<'a> {
    o_id: i64,
    taxes_discount: (f64, f64, f64),
    price: Vec<f64>,
    stock: Vec<(i64, &'a str)>,
}

/// New-Order's first script: the district's next order id taken, and one read of the order
/// id, taxes and discount, the items, and the stock rows locked in primary-key order (as the
/// per-row path locks them).
fn new_order_reads(
    block: bool,
    (w, d, c_id): (i64, i64, i64),
    lines: &[Line],
    rows: &[&[Line]],
) -> Script {
    let mut s = Script::new(block);
    s.stmt().push_str("START TRANSACTION");
    s.stmt()
        .s("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ")
        .n(w)
        .s(" AND d_id = ")
        .n(d);
    s.changed(1, "district");
    // One read, so one answer: its rows are told apart by the first column (0 the order
    // id, taxes and discount; 1 an item; 2 a stock row) and each column holds one type.
    let q = s.read();
    q.s("(SELECT 0 AS part, d_next_o_id - 1 AS i1, NULL AS i2, NULL AS i3, d_tax AS f1, w_tax AS f2, c_discount AS f3, c_last AS t1, c_credit AS t2 \
         FROM district, warehouse, customer WHERE d_w_id = ")
        .n(w)
        .s(" AND d_id = ")
        .n(d)
        .s(" AND w_id = ")
        .n(w)
        .s(" AND c_w_id = ")
        .n(w)
        .s(" AND c_d_id = ")
        .n(d)
        .s(" AND c_id = ")
        .n(c_id)
        .s(") UNION ALL (SELECT 1, i_id, NULL, NULL, i_price, NULL, NULL, i_name, i_data FROM item WHERE i_id IN (");
    for (k, l) in lines.iter().enumerate() {
        q.s(if k > 0 { ", " } else { "" }).n(l.i_id);
    }
    q.s(")) UNION ALL (SELECT 2, s_w_id, s_i_id, s_quantity, NULL, NULL, NULL, s_data, CASE ")
        .n(d)
        .s(" WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END \
           FROM stock WHERE ");
    pairs(q, "s_w_id", "s_i_id", stock_keys(rows));
    // The limit keeps the member's order (and so the order its rows are locked in).
    q.s(" ORDER BY s_w_id, s_i_id LIMIT ")
        .n(rows.len() as i64)
        .s(" FOR UPDATE)");
    s
}

/// The stock rows' keys, in the lines' (key) order.
fn stock_keys<'a>(rows: &'a [&'a [Line]]) -> impl Iterator<Item = (i64, i64)> + 'a {
    rows.iter().map(|g| (g[0].supply_w_id, g[0].i_id))
}

/// New-Order's first read taken apart; `None` when a line's item is unused (the 1 % to roll
/// back). A missing district, warehouse, customer or stock row is a broken database.
fn new_order_found<'a>(
    read: &'a [Vec<Val>],
    lines: &[Line],
    rows: &[&[Line]],
) -> Result<Option<NewOrderRead<'a>>, StmtError> {
    let part = |k: i64| read.iter().filter(move |r| r[0].int() == k);
    let Some(head) = part(0).next() else {
        return Err(StmtError::Fatal(
            "district, warehouse or customer: no row".into(),
        ));
    };
    let mut price = Vec::with_capacity(lines.len());
    for l in lines {
        match part(1).find(|r| r[1].int() == l.i_id) {
            Some(r) => price.push(r[4].float()),
            None => return Ok(None),
        }
    }
    let mut stock: Vec<(i64, &str)> = Vec::with_capacity(rows.len());
    for l in rows.iter().map(|g| &g[0]) {
        let Some(r) = part(2).find(|r| r[1].int() == l.supply_w_id && r[2].int() == l.i_id) else {
            return Err(StmtError::Fatal(format!(
                "stock ({}, {}): no row",
                l.supply_w_id, l.i_id
            )));
        };
        stock.push((r[3].int(), r[8].text()));
    }
    Ok(Some(NewOrderRead {
        o_id: head[1].int(),
        taxes_discount: (head[4].float(), head[5].float(), head[6].float()),
        price,
        stock,
    }))
}

/// One `UPDATE` of the stock rows, changed by the quantity rule of clause 2.4.2.2 applied to
/// the quantities just read under lock, each row once for all the lines naming it.
fn stock_update(s: &mut Script, w: i64, rows: &[&[Line]], stock: &[(i64, &str)]) {
    let q = s.stmt();
    let when = |q: &mut String, g: &[Line]| {
        q.s(" WHEN s_w_id = ")
            .n(g[0].supply_w_id)
            .s(" AND s_i_id = ")
            .n(g[0].i_id)
            .s(" THEN ");
    };
    q.push_str("UPDATE stock SET s_quantity = CASE");
    for (g, (have, _)) in rows.iter().zip(stock) {
        let left = g.iter().fold(*have, |have, l| {
            if have >= l.quantity + 10 {
                have - l.quantity
            } else {
                have - l.quantity + 91
            }
        });
        when(q, g);
        q.n(left);
    }
    q.push_str(" ELSE s_quantity END, s_ytd = s_ytd + CASE");
    for g in rows {
        when(q, g);
        q.n(g.iter().map(|l| l.quantity).sum::<i64>());
    }
    q.push_str(" ELSE 0 END, s_order_cnt = s_order_cnt + CASE");
    for g in rows {
        when(q, g);
        q.n(g.len() as i64);
    }
    q.push_str(" ELSE 0 END, s_remote_cnt = s_remote_cnt + CASE");
    for g in rows {
        when(q, g);
        let remote = g.iter().filter(|l| l.supply_w_id != w).count();
        q.n(remote as i64);
    }
    q.push_str(" ELSE 0 END WHERE ");
    pairs(q, "s_w_id", "s_i_id", stock_keys(rows));
    s.changed(rows.len(), "stock");
}

/// The order, its new-order row and its lines; returns the sum of the line amounts.
fn order_inserts(
    s: &mut Script,
    (o_id, d, w, c_id): (i64, i64, i64, i64),
    lines: &[Line],
    all_local: bool,
    rows: &[&[Line]],
    found: &NewOrderRead,
) -> f64 {
    s.stmt()
        .s("INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES (")
        .ns(&[o_id, d, w, c_id])
        .s(", CURRENT_TIMESTAMP, NULL, ")
        .ns(&[lines.len() as i64, all_local as i64])
        .s(")");
    s.stmt()
        .s("INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (")
        .ns(&[o_id, d, w])
        .s(")");
    let q = s.stmt();
    q.push_str("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES ");
    let row_of: Vec<usize> = rows
        .iter()
        .enumerate()
        .flat_map(|(r, g)| std::iter::repeat_n(r, g.len()))
        .collect();
    let mut total = 0.0;
    for (k, l) in lines.iter().enumerate() {
        let amount = line_amount(l.quantity, found.price[k]);
        total += amount;
        q.s(if k > 0 { ", (" } else { "(" })
            .ns(&[o_id, d, w, k as i64 + 1, l.i_id, l.supply_w_id])
            .s(", NULL, ")
            .n(l.quantity)
            .s(", ")
            .money(amount)
            .s(", ")
            .lit(found.stock[row_of[k]].1)
            .s(")");
    }
    total
}

/// Payment (clause 2.5.2) in one round trip: the warehouse's and the district's rows changed
/// (in that order, as the per-row path locks them), the customer found, its payment with
/// C_DATA for bad credit in one `UPDATE`, one read of the three rows for the terminal, the
/// HISTORY row with H_DATA from the warehouse's and district's names.
fn payment(
    m: &mut MySession,
    block: bool,
    (w, d, c_w, c_d): (i64, i64, i64, i64),
    by: &CustomerBy,
    amount: f64,
) -> Result<Outcome, StmtError> {
    let a = amount;
    let mut s = Script::new(block);
    s.stmt().push_str("START TRANSACTION");
    s.stmt()
        .s("UPDATE warehouse SET w_ytd = w_ytd + ")
        .money(a)
        .s(" WHERE w_id = ")
        .n(w);
    s.changed(1, "warehouse");
    s.stmt()
        .s("UPDATE district SET d_ytd = d_ytd + ")
        .money(a)
        .s(" WHERE d_w_id = ")
        .n(w)
        .s(" AND d_id = ")
        .n(d);
    s.changed(1, "district");
    let c = customer(&mut s, c_w, c_d, by);
    s.stmt()
        .s("UPDATE customer SET c_balance = c_balance - ")
        .money(a)
        .s(", c_ytd_payment = c_ytd_payment + ")
        .money(a)
        .s(", c_payment_cnt = c_payment_cnt + 1, c_data = CASE WHEN c_credit = 'BC' THEN substr(concat(")
        .s(&c)
        .s(", ' ")
        .n(c_d)
        .s(" ")
        .n(c_w)
        .s(" ")
        .n(d)
        .s(" ")
        .n(w)
        .s(" ")
        .money(a)
        .s(" | ', c_data), 1, 500) ELSE c_data END WHERE c_w_id = ")
        .n(c_w)
        .s(" AND c_d_id = ")
        .n(c_d)
        .s(" AND c_id = ")
        .s(&c);
    s.changed(1, "customer");
    s.read()
        .s("SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, \
            c_credit, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit_lim, c_discount, c_balance \
            FROM warehouse, district, customer WHERE w_id = ")
        .n(w)
        .s(" AND d_w_id = ")
        .n(w)
        .s(" AND d_id = ")
        .n(d)
        .s(" AND c_w_id = ")
        .n(c_w)
        .s(" AND c_d_id = ")
        .n(c_d)
        .s(" AND c_id = ")
        .s(&c);
    s.stmt()
        .s("INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) SELECT ")
        .s(&c)
        .s(", ")
        .n(c_d)
        .s(", ")
        .n(c_w)
        .s(", ")
        .n(d)
        .s(", ")
        .n(w)
        .s(", CURRENT_TIMESTAMP, ")
        .money(a)
        .s(", concat(w_name, '    ', d_name) FROM warehouse, district WHERE w_id = ")
        .n(w)
        .s(" AND d_w_id = ")
        .n(w)
        .s(" AND d_id = ")
        .n(d);
    s.changed(1, "history");
    s.stmt().push_str("COMMIT");
    let read = m.script(&mut s)?;
    one(&read[0], "warehouse, district or customer")?;
    Ok(Outcome::Committed)
}

/// Order-Status (clause 2.6.2) in one round trip: the customer, its last order (if any) and
/// that order's lines, one row per line or one row with NULL order columns; read in one
/// transaction when the customer is found by name first.
fn order_status(
    m: &mut MySession,
    block: bool,
    w: i64,
    d: i64,
    by: &CustomerBy,
) -> Result<Outcome, StmtError> {
    let single = matches!(by, CustomerBy::Id(_));
    // A single read is a transaction by itself (autocommit), sent as a plain statement.
    let mut s = Script::new(block && !single);
    if !single {
        s.stmt().push_str("START TRANSACTION READ ONLY");
    }
    let c = customer(&mut s, w, d, by);
    s.read()
        .s("SELECT c_balance, c_first, c_middle, c_last, o.o_id, o.o_carrier_id, o.o_entry_d, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d \
            FROM customer LEFT JOIN (SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = ")
        .n(w)
        .s(" AND o_d_id = ")
        .n(d)
        .s(" AND o_c_id = ")
        .s(&c)
        .s(" ORDER BY o_id DESC LIMIT 1) o ON TRUE LEFT JOIN order_line ON ol_w_id = ")
        .n(w)
        .s(" AND ol_d_id = ")
        .n(d)
        .s(" AND ol_o_id = o.o_id WHERE c_w_id = ")
        .n(w)
        .s(" AND c_d_id = ")
        .n(d)
        .s(" AND c_id = ")
        .s(&c);
    if !single {
        s.stmt().push_str("COMMIT");
    }
    let read = m.script(&mut s)?;
    one(&read[0], "customer")?;
    Ok(Outcome::Committed)
}

/// Delivery (clause 2.7.4) of every district of warehouse `w`: each district's oldest
/// undelivered order locked (one locking read per district, joined by `UNION ALL`;
/// districts without one are skipped, clause 2.7.4.2); then deleted, given its carrier, its
/// lines dated and their sums read; then the sums credited to the customers.
fn delivery(m: &mut MySession, block: bool, w: i64, carrier_id: i64) -> Result<Outcome, StmtError> {
    let mut s = Script::new(block);
    s.stmt().push_str("START TRANSACTION");
    let q = s.read();
    for d in 1..=crate::DISTRICTS_PER_WAREHOUSE {
        q.s(if d > 1 { " UNION ALL " } else { "" })
            .s("(SELECT no_d_id, no_o_id FROM new_order WHERE no_w_id = ")
            .n(w)
            .s(" AND no_d_id = ")
            .n(d)
            .s(" ORDER BY no_o_id LIMIT 1 FOR UPDATE)");
    }
    let read = m.script(&mut s)?;
    let taken: Vec<(i64, i64)> = read[0].iter().map(|r| (r[0].int(), r[1].int())).collect();
    if taken.is_empty() {
        m.batch("COMMIT")?;
        return Ok(Outcome::Committed);
    }
    let n = taken.len();
    let keys = || taken.iter().copied();

    let mut s = Script::new(block);
    let q = s.stmt();
    q.s("DELETE FROM new_order WHERE no_w_id = ")
        .n(w)
        .s(" AND ");
    pairs(q, "no_d_id", "no_o_id", keys());
    s.changed(n, "new_order (the locked rows)");
    let q = s.stmt();
    q.s("UPDATE orders SET o_carrier_id = ")
        .n(carrier_id)
        .s(" WHERE o_w_id = ")
        .n(w)
        .s(" AND ");
    pairs(q, "o_d_id", "o_id", keys());
    let q = s.stmt();
    q.s("UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = ")
        .n(w)
        .s(" AND ");
    pairs(q, "ol_d_id", "ol_o_id", keys());
    let q = s.read();
    q.s("SELECT o_d_id, o_c_id, (SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id) \
         FROM orders WHERE o_w_id = ")
        .n(w)
        .s(" AND ");
    pairs(q, "o_d_id", "o_id", keys());
    let read = m.script(&mut s)?;
    let mut credit: Vec<(i64, i64, f64)> = Vec::with_capacity(n);
    for (d, o) in &taken {
        let Some(r) = read[0].iter().find(|r| r[0].int() == *d) else {
            return Err(StmtError::Fatal(format!("order ({w}, {d}, {o}): no row")));
        };
        credit.push((*d, r[1].int(), r[2].float()));
    }

    let mut s = Script::new(block);
    let q = s.stmt();
    q.push_str("UPDATE customer SET c_balance = c_balance + CASE");
    for (d, c, amount) in &credit {
        q.s(" WHEN c_d_id = ")
            .n(*d)
            .s(" AND c_id = ")
            .n(*c)
            .s(" THEN ")
            .money(*amount);
    }
    q.s(" ELSE 0 END, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ")
        .n(w)
        .s(" AND ");
    pairs(q, "c_d_id", "c_id", credit.iter().map(|(d, c, _)| (*d, *c)));
    s.changed(n, "customer (the delivered orders' customers)");
    s.stmt().push_str("COMMIT");
    m.script(&mut s)?;
    Ok(Outcome::Committed)
}

impl Connection for MySession {
    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }

    fn begin(&mut self, _write: bool) -> Result<(), StmtError> {
        MySession::batch(self, "BEGIN")
    }

    fn commit(&mut self) -> Result<(), StmtError> {
        MySession::batch(self, "COMMIT")
    }

    fn rollback(&mut self) -> Result<(), StmtError> {
        MySession::batch(self, "ROLLBACK")
    }

    fn execute(&mut self, stmt: Stmt, params: &[Param]) -> Result<u64, StmtError> {
        self.run(stmt, params, None)
    }

    fn query(
        &mut self,
        stmt: Stmt,
        params: &[Param],
        out: &mut Vec<Vec<Val>>,
    ) -> Result<(), StmtError> {
        out.clear();
        self.run(stmt, params, Some(out)).map(|_| ())
    }

    fn query_sql(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Val>>), StmtError> {
        MySession::query_sql(self, sql)
    }

    fn batch(&mut self, sql: &str) -> Result<(), StmtError> {
        MySession::batch(self, sql)
    }

    fn text_literal(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        crate::mysql_client::text(&mut out, s);
        out
    }

    fn canceller(&self) -> crate::db::Canceller {
        let c = MySession::canceller(self);
        crate::db::Canceller::new(move || c.cancel())
    }

    fn prepare_worker(&mut self, opts: &RunOptions) -> Result<(), StmtError> {
        MySession::batch(
            self,
            &format!(
                "SET SESSION TRANSACTION ISOLATION LEVEL {}",
                opts.isolation.sql()
            ),
        )
    }

    fn transact(&mut self, input: &Input, _rows: &mut Vec<Vec<Val>>) -> Result<Outcome, StmtError> {
        crate::mysql_client::execute(self, input)
    }

    fn transact_server(&mut self, input: &Input) -> Result<Outcome, StmtError> {
        let r = crate::mysql_server::execute(self, input);
        if r.is_err() {
            // A procedure that failed may leave its transaction open.
            let _ = MySession::batch(self, "ROLLBACK");
        }
        r
    }

    fn as_any(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_literals_mean_the_same_in_every_sql_mode() {
        let lit = |s: &str| {
            let mut o = String::new();
            text(&mut o, s);
            o
        };
        assert_eq!(lit("BARBARBAR"), "'BARBARBAR'");
        assert_eq!(lit("it's"), "'it''s'");
        // A backslash would mean an escape in one mode and itself in the other.
        assert_eq!(lit("a\\b"), "_utf8mb4 X'615C62'");
        assert_eq!(lit("é"), "_utf8mb4 X'C3A9'");
        assert_eq!(lit(""), "''");
    }

    #[test]
    fn scripts_find_their_reads_and_check_where_they_can() {
        for block in [false, true] {
            let mut s = Script::new(block);
            s.stmt().push_str("START TRANSACTION");
            let c = customer(&mut s, 1, 2, &CustomerBy::Name("ABLE".into()));
            assert_eq!(c, "@oio_c");
            assert_eq!(customer(&mut s, 1, 2, &CustomerBy::Id(7)), "7");
            s.stmt().push_str("UPDATE t SET x = 1");
            s.changed(1, "t");
            s.read().push_str("SELECT 1");
            s.read().push_str("SELECT 2");
            s.stmt().push_str("COMMIT");
            let answers = s.finish();
            if block {
                // One answer per read and one for the block; the check runs in the block.
                assert_eq!(answers, 3);
                assert_eq!(s.reads, [0, 1]);
                assert!(s.checks.is_empty());
                assert!(s
                    .sql()
                    .starts_with("BEGIN NOT ATOMIC START TRANSACTION;\nSET @oio_c = (SELECT c_id"));
                assert!(s.sql().contains(
                    "UPDATE t SET x = 1;\nIF ROW_COUNT() <> 1 THEN SIGNAL SQLSTATE '45000'"
                ));
                assert!(s.sql().ends_with("SELECT 2;\nCOMMIT; END"));
            } else {
                // One answer per statement; the client checks the rows changed.
                assert_eq!(answers, 6);
                assert_eq!(s.reads, [3, 4]);
                assert_eq!(s.checks.len(), 1);
                assert_eq!((s.checks[0].answer, s.checks[0].want), (2, 1));
                assert!(s
                    .sql()
                    .contains("c_last = 'ABLE') t WHERE k = (n + 1) DIV 2);\nUPDATE t"));
                assert!(s.sql().ends_with("SELECT 2;\nCOMMIT"));
            }
        }
        let money = |v: f64| String::new().money(v).clone();
        assert_eq!(money(12.5), "12.50");
        assert_eq!(money(0.1 + 0.2), "0.30");
        assert_eq!(money(5000.0), "5000.00");
        assert_eq!(money(-3.07), "-3.07");
        assert_eq!(money(0.0), "0.00");
    }

    /// A check that fails in a MariaDB block stops it before its `COMMIT`: nothing the
    /// block changed stays after the caller's rollback. Without blocks the same check is
    /// the client's, after the script (and its `COMMIT`) ran.
    #[test]
    fn a_failed_check_stops_a_block_before_its_commit() {
        if oio_testkit::mariadb_bin().is_none() {
            oio_testkit::missing(
                "no MariaDB binaries (scripts/test installs mariadb-server and mariadb-client)",
            );
            return;
        }
        let server = oio_testkit::TempMariadb::start(&[]).unwrap();
        let mut m = crate::mysql_session::connect(
            &server.url(),
            "oio-test",
            &crate::plan::Timeouts::default(),
        )
        .unwrap();
        assert!(m.blocks(), "MariaDB takes anonymous blocks");
        m.batch("CREATE TABLE t (k INT PRIMARY KEY, v INT); INSERT INTO t VALUES (1, 0)")
            .unwrap();
        let value = |m: &mut MySession| m.query_sql("SELECT v FROM t").unwrap().1[0][0].int();
        for block in [true, false] {
            let mut s = Script::new(block);
            s.stmt().push_str("START TRANSACTION");
            s.stmt().push_str("UPDATE t SET v = v + 1 WHERE k = 1");
            s.changed(2, "t (it's one row)");
            s.read().push_str("SELECT v FROM t");
            s.stmt().push_str("COMMIT");
            let err = m.script(&mut s).unwrap_err();
            m.batch("ROLLBACK").unwrap();
            let StmtError::Fatal(msg) = err else {
                panic!("{err:?}")
            };
            assert!(msg.contains("t (it's one row)"), "{msg}");
            if block {
                assert!(msg.contains("not 2 rows changed"), "{msg}");
                assert_eq!(value(&mut m), 0, "the block committed");
            } else {
                assert!(msg.contains("1 of 2 rows changed"), "{msg}");
                assert_eq!(value(&mut m), 1);
            }
        }
    }
}
