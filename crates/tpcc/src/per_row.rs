//! The five transactions written once against any [`Connection`], one statement per row read
//! or written (clause 2's own steps). SQLite runs them as they are; PostgreSQL and
//! MariaDB/MySQL run them for the rare New-Order that repeats a line, and tests hold their
//! leaner forms against these.

use crate::db::Connection;
use crate::sql::{Param, Stmt, StmtError, Val};
use crate::txn::{line_amount, middle_customer, one, CustomerBy, Input, Line, Outcome};
use crate::DISTRICTS_PER_WAREHOUSE;
use Param::{Float, Int, Text};

/// The customer id for `by`: the middle row (rounded up) of the customers with that last
/// name in first-name order.
pub(crate) fn resolve_customer<C: Connection + ?Sized>(
    s: &mut C,
    w: i64,
    d: i64,
    by: &CustomerBy,
    rows: &mut Vec<Vec<Val>>,
) -> Result<i64, StmtError> {
    match by {
        CustomerBy::Id(id) => Ok(*id),
        CustomerBy::Name(last) => {
            s.query(Stmt::CustomerByName, &[Int(w), Int(d), Text(last)], rows)?;
            middle_customer(rows)
        }
    }
}

/// New-Order (clause 2.4.2) up to its commit: `RolledBack` (already rolled back) for the 1 %
/// with an unused item.
fn new_order<C: Connection + ?Sized>(
    s: &mut C,
    rows: &mut Vec<Vec<Val>>,
    w_id: &i64,
    d_id: &i64,
    c_id: &i64,
    lines: &[Line],
    all_local: &bool,
) -> Result<Outcome, StmtError> {
    let (w, d) = (*w_id, *d_id);
    s.query(Stmt::NoWarehouse, &[Int(w)], rows)?;
    one(rows, "warehouse")?;
    let w_tax = rows[0][0].float();
    s.query(Stmt::NoDistrict, &[Int(w), Int(d)], rows)?;
    one(rows, "district")?;
    let (o_id, d_tax) = (rows[0][0].int(), rows[0][1].float());
    s.query(Stmt::NoCustomer, &[Int(w), Int(d), Int(*c_id)], rows)?;
    one(rows, "customer")?;
    let discount = rows[0][0].float();
    s.execute(
        Stmt::NoInsertOrder,
        &[
            Int(o_id),
            Int(d),
            Int(w),
            Int(*c_id),
            Int(lines.len() as i64),
            Int(*all_local as i64),
        ],
    )?;
    s.execute(Stmt::NoInsertNewOrder, &[Int(o_id), Int(d), Int(w)])?;
    let Some(total) = order_lines_one_by_one(s, rows, (o_id, d, w), lines)? else {
        return Ok(Outcome::RolledBack);
    };
    // The terminal's total; computed as the specification asks, then discarded.
    let _ = total * (1.0 - discount) * (1.0 + w_tax + d_tax);
    Ok(Outcome::Committed)
}

/// The order lines one statement at a time (clause 2.4.2.2): the item, the stock update and
/// the line's insert per line. `None` when an item is unused (rolled back, clause 2.4.2.3);
/// else the sum of the line amounts.
fn order_lines_one_by_one<C: Connection + ?Sized>(
    s: &mut C,
    rows: &mut Vec<Vec<Val>>,
    (o_id, d, w): (i64, i64, i64),
    lines: &[Line],
) -> Result<Option<f64>, StmtError> {
    let mut total = 0.0;
    for (n, l) in lines.iter().enumerate() {
        s.query(Stmt::NoItem, &[Int(l.i_id)], rows)?;
        if rows.is_empty() {
            // The 1 % unused item: everything so far is undone (clause 2.4.2.3).
            s.rollback()?;
            return Ok(None);
        }
        let price = rows[0][0].float();
        s.query(
            Stmt::NoStock,
            &[
                Int(l.quantity),
                Int((l.supply_w_id != w) as i64),
                Int(l.i_id),
                Int(l.supply_w_id),
                Int(d),
            ],
            rows,
        )?;
        one(rows, "stock")?;
        let dist_info = rows[0][2].text().to_string();
        let amount = line_amount(l.quantity, price);
        total += amount;
        s.execute(
            Stmt::NoInsertLine,
            &[
                Int(o_id),
                Int(d),
                Int(w),
                Int(n as i64 + 1),
                Int(l.i_id),
                Int(l.supply_w_id),
                Int(l.quantity),
                Float(amount),
                Text(&dist_info),
            ],
        )?;
    }
    Ok(Some(total))
}

/// Delivery (clause 2.7.4) of every district of warehouse `w`, one district at a time.
fn delivery_one_by_one<C: Connection + ?Sized>(
    s: &mut C,
    rows: &mut Vec<Vec<Val>>,
    w: i64,
    carrier_id: i64,
) -> Result<(), StmtError> {
    for d in 1..=DISTRICTS_PER_WAREHOUSE {
        s.query(Stmt::DlNewOrder, &[Int(w), Int(d)], rows)?;
        // No undelivered order (or a concurrent Delivery took it): skip the district
        // (clause 2.7.4.2).
        let Some(o_id) = rows.first().map(|r| r[0].int()) else {
            continue;
        };
        s.query(
            Stmt::DlOrder,
            &[Int(carrier_id), Int(w), Int(d), Int(o_id)],
            rows,
        )?;
        one(rows, "order")?;
        let c_id = rows[0][0].int();
        s.query(Stmt::DlLines, &[Int(w), Int(d), Int(o_id)], rows)?;
        let sum: f64 = rows.iter().map(|r| r[0].float()).sum();
        let sum = (sum * 100.0).round() / 100.0;
        s.execute(Stmt::DlCustomer, &[Float(sum), Int(w), Int(d), Int(c_id)])?;
    }
    Ok(())
}

/// Whether a New-Order names the same item from the same warehouse twice: PostgreSQL's and
/// MariaDB/MySQL's New-Orders update their stock rows in one `UPDATE`, which changes a row once however many
/// Payment (clause 2.5.2) up to its commit.
fn payment<C: Connection + ?Sized>(
    s: &mut C,
    rows: &mut Vec<Vec<Val>>,
    (w_id, d_id, c_w_id, c_d_id): (&i64, &i64, &i64, &i64),
    by: &CustomerBy,
    amount: &f64,
) -> Result<(), StmtError> {
    let (w, d) = (*w_id, *d_id);
    s.query(Stmt::PayWarehouse, &[Float(*amount), Int(w)], rows)?;
    one(rows, "warehouse")?;
    let w_name = rows[0][0].text().to_string();
    s.query(Stmt::PayDistrict, &[Float(*amount), Int(w), Int(d)], rows)?;
    one(rows, "district")?;
    let d_name = rows[0][0].text().to_string();
    let c_id = resolve_customer(s, *c_w_id, *c_d_id, by, rows)?;
    s.query(
        Stmt::PayCustomer,
        &[Float(*amount), Int(*c_w_id), Int(*c_d_id), Int(c_id)],
        rows,
    )?;
    one(rows, "customer")?;
    if rows[0][0].text() == "BC" {
        let note = format!("{c_id} {c_d_id} {c_w_id} {d} {w} {amount:.2} | ");
        s.execute(
            Stmt::PayCustomerData,
            &[Text(&note), Int(*c_w_id), Int(*c_d_id), Int(c_id)],
        )?;
    }
    let h_data = format!("{w_name}    {d_name}");
    s.execute(
        Stmt::PayHistory,
        &[
            Int(c_id),
            Int(*c_d_id),
            Int(*c_w_id),
            Int(d),
            Int(w),
            Float(*amount),
            Text(&h_data),
        ],
    )?;
    Ok(())
}

/// Runs one transaction with client-side SQL, from BEGIN to COMMIT, the way the session's
/// dialect runs it ([`Connection::transact`]). On an error the caller rolls back (the session
/// may be mid-transaction).
pub fn execute<C: Connection + ?Sized>(
    s: &mut C,
    input: &Input,
    rows: &mut Vec<Vec<Val>>,
) -> Result<Outcome, StmtError> {
    s.transact(input, rows)
}

/// [`execute`] with one statement per row read or written, on any engine. PostgreSQL and
/// MariaDB/MySQL run these only for New-Orders that repeat a line; tests compare the ways.
pub fn execute_per_row<C: Connection + ?Sized>(
    s: &mut C,
    input: &Input,
    rows: &mut Vec<Vec<Val>>,
) -> Result<Outcome, StmtError> {
    s.begin(input.txn_type().writes())?;
    match input {
        Input::NewOrder {
            w_id,
            d_id,
            c_id,
            lines,
            all_local,
        } => {
            if let Outcome::RolledBack = new_order(s, rows, w_id, d_id, c_id, lines, all_local)? {
                return Ok(Outcome::RolledBack);
            }
        }
        Input::Payment {
            w_id,
            d_id,
            c_w_id,
            c_d_id,
            by,
            amount,
        } => payment(s, rows, (w_id, d_id, c_w_id, c_d_id), by, amount)?,
        Input::OrderStatus { w_id, d_id, by } => {
            let (w, d) = (*w_id, *d_id);
            let c_id = resolve_customer(s, w, d, by, rows)?;
            s.query(Stmt::OsCustomer, &[Int(w), Int(d), Int(c_id)], rows)?;
            one(rows, "customer")?;
            s.query(Stmt::OsLastOrder, &[Int(w), Int(d), Int(c_id)], rows)?;
            // A customer may have no order yet; the specification reads the last one if any.
            if let Some(o_id) = rows.first().map(|r| r[0].int()) {
                s.query(Stmt::OsLines, &[Int(w), Int(d), Int(o_id)], rows)?;
            }
        }
        Input::Delivery { w_id, carrier_id } => delivery_one_by_one(s, rows, *w_id, *carrier_id)?,
        Input::StockLevel {
            w_id,
            d_id,
            threshold,
        } => {
            let (w, d) = (*w_id, *d_id);
            s.query(Stmt::SlDistrict, &[Int(w), Int(d)], rows)?;
            one(rows, "district")?;
            let next = rows[0][0].int();
            s.query(
                Stmt::SlCount,
                &[Int(w), Int(d), Int(next), Int(next - 20), Int(*threshold)],
                rows,
            )?;
        }
    }
    s.commit()?;
    Ok(Outcome::Committed)
}
