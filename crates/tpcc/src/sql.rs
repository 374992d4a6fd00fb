//! What crosses the session API, below every backend: the client-side statements
//! ([`Stmt`]), their parameters and values ([`Param`], [`Val`]), and how a failed statement is
//! classified ([`StmtError`], [`RetryKind`]) for SQLite and PostgreSQL. Plain data and pure
//! functions: it imports nothing from the backends, so they all can import it.

pub use crate::error::is_sqlite_busy;
use crate::error::{pg_message, TpccError};

/// SQLSTATE the PostgreSQL New-Order function raises for the 1 % unused item.
pub const PG_USER_ABORT_SQLSTATE: &str = "OIO01";

/// A statement parameter.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// A number with a fraction (money, rates).
    Float(f64),
    /// Text.
    Text(&'a str),
    /// An array of integers (PostgreSQL only: a New-Order's lines, a Delivery's districts).
    Ints(&'a [i64]),
}

/// A value read from a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// SQL NULL.
    Null,
    /// An integer (timestamps on PostgreSQL read as µs since 2000-01-01).
    Int(i64),
    /// A number with a fraction.
    Float(f64),
    /// Text.
    Text(String),
}

impl Val {
    /// As an integer (0 for NULL or text).
    pub fn int(&self) -> i64 {
        match self {
            Val::Int(v) => *v,
            Val::Float(f) => *f as i64,
            Val::Text(s) => s.trim().parse().unwrap_or(0),
            Val::Null => 0,
        }
    }
    /// As a float (0 for NULL).
    pub fn float(&self) -> f64 {
        match self {
            Val::Int(v) => *v as f64,
            Val::Float(f) => *f,
            Val::Text(s) => s.trim().parse().unwrap_or(0.0),
            Val::Null => 0.0,
        }
    }
    /// As text ("" for NULL or numbers).
    pub fn text(&self) -> &str {
        match self {
            Val::Text(s) => s,
            _ => "",
        }
    }
    /// True for SQL NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Val::Null)
    }
}

impl std::fmt::Display for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Val::Null => f.write_str("NULL"),
            Val::Int(v) => write!(f, "{v}"),
            Val::Float(v) => write!(f, "{}", (v * 100.0).round() / 100.0),
            Val::Text(s) => write!(f, "'{s}'"),
        }
    }
}

/// Why a retryable statement failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryKind {
    /// PostgreSQL SQLSTATE 40001.
    Serialization,
    /// PostgreSQL SQLSTATE 40P01.
    Deadlock,
    /// SQLite SQLITE_BUSY / SQLITE_LOCKED.
    Busy,
    /// MySQL error 1205: a row lock was not granted within `innodb_lock_wait_timeout`.
    LockWait,
}

impl RetryKind {
    /// Every kind, indexed by `as usize`.
    pub const ALL: [RetryKind; 4] = [
        RetryKind::Serialization,
        RetryKind::Deadlock,
        RetryKind::Busy,
        RetryKind::LockWait,
    ];
}

/// A classified statement failure.
#[derive(Debug)]
pub enum StmtError {
    /// Roll back and run the same transaction again.
    Retry(RetryKind, String),
    /// The transaction rolled itself back on purpose (the 1 % unused-item New-Orders in
    /// server mode, SQLSTATE OIO01).
    UserAbort,
    /// The connection is gone.
    Lost(String),
    /// Anything else.
    Fatal(String),
}

impl std::fmt::Display for StmtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StmtError::Retry(k, m) => write!(f, "{k:?}: {m}"),
            StmtError::UserAbort => f.write_str("intentional rollback"),
            StmtError::Lost(m) => write!(f, "connection lost: {m}"),
            StmtError::Fatal(m) => f.write_str(m),
        }
    }
}

impl From<StmtError> for TpccError {
    fn from(e: StmtError) -> Self {
        TpccError::Statement(e.to_string())
    }
}

/// Classifies an SQLite error.
pub fn classify_sqlite(e: rusqlite::Error) -> StmtError {
    if is_sqlite_busy(&e) {
        return StmtError::Retry(RetryKind::Busy, e.to_string());
    }
    StmtError::Fatal(format!("SQLite: {e}"))
}

/// Classifies a PostgreSQL error.
pub fn classify_pg(e: postgres::Error) -> StmtError {
    use postgres::error::SqlState;
    if let Some(code) = e.code() {
        if *code == SqlState::T_R_SERIALIZATION_FAILURE {
            return StmtError::Retry(RetryKind::Serialization, pg_message(&e));
        }
        if *code == SqlState::T_R_DEADLOCK_DETECTED {
            return StmtError::Retry(RetryKind::Deadlock, pg_message(&e));
        }
        if code.code() == PG_USER_ABORT_SQLSTATE {
            return StmtError::UserAbort;
        }
    }
    if e.is_closed() {
        return StmtError::Lost(pg_message(&e));
    }
    StmtError::Fatal(format!("PostgreSQL: {}", pg_message(&e)))
}

/// The client-side statements. Parameters are `$n` (SQLite reads them as `?n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Stmt {
    NoWarehouse,
    NoDistrict,
    NoCustomer,
    NoInsertOrder,
    NoInsertNewOrder,
    NoItem,
    NoStock,
    NoInsertLine,
    PayWarehouse,
    PayDistrict,
    CustomerByName,
    PayCustomer,
    PayCustomerData,
    PayHistory,
    OsCustomer,
    OsLastOrder,
    OsLines,
    DlNewOrder,
    DlOrder,
    DlLines,
    DlCustomer,
    SlDistrict,
    SlCount,
    SumNextOrderId,
    PgNoHead,
    PgNoBody,
    PgNoOne,
    PgPayWarehouseDistrict,
    PgPayOne,
    PgPayCustomer,
    PgOsAll,
    PgDlOrders,
    PgDlFinish,
    PgSlCount,
}

/// New-Order's lines on PostgreSQL, the part of [`Stmt::PgNoBody`] and [`Stmt::PgNoOne`]
/// after the order id (a CTE `d` with `o_id`): the order, its NEW_ORDER row, the stock rows
/// (clause 2.4.2.2's quantity rule) and the lines priced from ITEM. Parameters: $1 warehouse,
/// $2 district, $3 customer, $4 line count, $5 all local, $6–$8 item, supplying warehouse and
/// quantity arrays.
macro_rules! new_order_lines {
    () => {
        "l AS (SELECT * FROM unnest($6::int4[], $7::int4[], $8::int4[]) WITH ORDINALITY AS l(i_id, supply_w_id, qty, n)), \
        o AS (INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) SELECT d.o_id, $2, $1, $3, CURRENT_TIMESTAMP, NULL, $4, $5 FROM d), \
        nw AS (INSERT INTO new_order (no_o_id, no_d_id, no_w_id) SELECT d.o_id, $2, $1 FROM d), \
        s AS (UPDATE stock SET s_quantity = CASE WHEN s_quantity >= l.qty + 10 THEN s_quantity - l.qty ELSE s_quantity - l.qty + 91 END, s_ytd = s_ytd + l.qty, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + CASE WHEN l.supply_w_id <> $1 THEN 1 ELSE 0 END \
        FROM l WHERE s_i_id = l.i_id AND s_w_id = l.supply_w_id \
        RETURNING l.n, l.i_id, l.supply_w_id, l.qty, s_quantity, s_data, CASE CAST($2 AS INTEGER) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END AS dist), \
        ol AS (INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) \
        SELECT d.o_id, $2, $1, s.n, s.i_id, s.supply_w_id, NULL, s.qty, CAST(s.qty * i.i_price AS NUMERIC(6,2)), s.dist FROM s JOIN item i ON i.i_id = s.i_id CROSS JOIN d RETURNING ol_amount)"
    };
}

impl Stmt {
    /// Every statement, indexed by `as usize`.
    pub const ALL: [Stmt; 34] = [
        Stmt::NoWarehouse,
        Stmt::NoDistrict,
        Stmt::NoCustomer,
        Stmt::NoInsertOrder,
        Stmt::NoInsertNewOrder,
        Stmt::NoItem,
        Stmt::NoStock,
        Stmt::NoInsertLine,
        Stmt::PayWarehouse,
        Stmt::PayDistrict,
        Stmt::CustomerByName,
        Stmt::PayCustomer,
        Stmt::PayCustomerData,
        Stmt::PayHistory,
        Stmt::OsCustomer,
        Stmt::OsLastOrder,
        Stmt::OsLines,
        Stmt::DlNewOrder,
        Stmt::DlOrder,
        Stmt::DlLines,
        Stmt::DlCustomer,
        Stmt::SlDistrict,
        Stmt::SlCount,
        Stmt::SumNextOrderId,
        Stmt::PgNoHead,
        Stmt::PgNoBody,
        Stmt::PgNoOne,
        Stmt::PgPayWarehouseDistrict,
        Stmt::PgPayOne,
        Stmt::PgPayCustomer,
        Stmt::PgOsAll,
        Stmt::PgDlOrders,
        Stmt::PgDlFinish,
        Stmt::PgSlCount,
    ];

    /// Whether the statement is PostgreSQL's only (arrays, data-modifying `WITH`); the other
    /// engines run the per-row statements instead.
    pub const fn postgres_only(self) -> bool {
        matches!(
            self,
            Stmt::PgNoHead
                | Stmt::PgNoBody
                | Stmt::PgNoOne
                | Stmt::PgPayWarehouseDistrict
                | Stmt::PgPayOne
                | Stmt::PgPayCustomer
                | Stmt::PgOsAll
                | Stmt::PgDlOrders
                | Stmt::PgDlFinish
                | Stmt::PgSlCount
        )
    }

    /// The SQL text, valid on SQLite and PostgreSQL (MySQL's is in its session module).
    pub const fn sql(self) -> &'static str {
        match self {
            Stmt::NoWarehouse => "SELECT w_tax FROM warehouse WHERE w_id = $1",
            Stmt::NoDistrict => "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_next_o_id - 1, d_tax",
            Stmt::NoCustomer => "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
            Stmt::NoInsertOrder => "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP, NULL, $5, $6)",
            Stmt::NoInsertNewOrder => "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)",
            Stmt::NoItem => "SELECT i_price, i_name, i_data FROM item WHERE i_id = $1",
            Stmt::NoStock => "UPDATE stock SET s_quantity = CASE WHEN s_quantity >= $1 + 10 THEN s_quantity - $1 ELSE s_quantity - $1 + 91 END, s_ytd = s_ytd + $1, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + $2 WHERE s_i_id = $3 AND s_w_id = $4 RETURNING s_quantity, s_data, CASE CAST($5 AS INTEGER) WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03 WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END",
            Stmt::NoInsertLine => "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, $9)",
            Stmt::PayWarehouse => "UPDATE warehouse SET w_ytd = w_ytd + $1 WHERE w_id = $2 RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip",
            Stmt::PayDistrict => "UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3 RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip",
            Stmt::CustomerByName => "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first",
            Stmt::PayCustomer => "UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4 RETURNING c_credit, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit_lim, c_discount, c_balance",
            Stmt::PayCustomerData => "UPDATE customer SET c_data = substr($1 || c_data, 1, 500) WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
            Stmt::PayHistory => "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES ($1, $2, $3, $4, $5, CURRENT_TIMESTAMP, $6, $7)",
            Stmt::OsCustomer => "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
            Stmt::OsLastOrder => "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1",
            Stmt::OsLines => "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
            Stmt::DlNewOrder => "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = (SELECT min(no_o_id) FROM new_order WHERE no_w_id = $1 AND no_d_id = $2) RETURNING no_o_id",
            Stmt::DlOrder => "UPDATE orders SET o_carrier_id = $1 WHERE o_w_id = $2 AND o_d_id = $3 AND o_id = $4 RETURNING o_c_id",
            Stmt::DlLines => "UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3 RETURNING ol_amount",
            Stmt::DlCustomer => "UPDATE customer SET c_balance = c_balance + $1, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
            Stmt::SlDistrict => "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2",
            Stmt::SlCount => "SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4 AND s_quantity < $5",
            Stmt::SumNextOrderId => "SELECT sum(d_next_o_id) FROM district",
            // PostgreSQL's statements. A round trip costs the driver more CPU than anything
            // else it does, so there each transaction is a few statements (data-modifying
            // WITH, arrays for the order lines and districts) that read and write the same rows
            // as the per-row statements above, and statements that need nothing from the
            // client in between go out together (pipelined, see `pgsession`).
            //
            // New-Order, the district's next order id with the warehouse's and customer's rows.
            Stmt::PgNoHead => "WITH d AS (UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_next_o_id - 1 AS o_id, d_tax) \
                SELECT d.o_id, d.d_tax, w_tax, c_discount, c_last, c_credit FROM d, warehouse, customer WHERE w_id = $1 AND c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
            // New-Order, the rest: the order, its NEW_ORDER row, every stock row (updated in
            // the arrays' order, sorted by warehouse and item as the per-row path locks them)
            // and every line priced from ITEM. An item listed twice must not be sent here (one
            // UPDATE changes a row once); a line whose item does not exist finds no stock row,
            // so the count tells the caller to roll back. Rows: (lines inserted, their sum). The
            // order id is read from the district the head just advanced (same transaction,
            // row locked), so head and body go out together.
            Stmt::PgNoBody => concat!(
                "WITH d AS (SELECT d_next_o_id - 1 AS o_id FROM district WHERE d_w_id = $1 AND d_id = $2), ",
                new_order_lines!(),
                " SELECT count(*), sum(ol_amount) FROM ol"
            ),
            // New-Order as one statement, a transaction by itself: the head's and the body's
            // rows in one data-modifying WITH, with the body's parameters. Used when the client
            // knows no line has an unused item (it drew the inputs), so nothing can call for a
            // rollback. Row: the head's columns (NULL when the customer is missing), lines
            // inserted, their sum.
            Stmt::PgNoOne => concat!(
                "WITH d AS (UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_next_o_id - 1 AS o_id, d_tax), \
                h AS (SELECT d.o_id, d.d_tax, w_tax, c_discount, c_last, c_credit FROM d, warehouse, customer WHERE w_id = $1 AND c_w_id = $1 AND c_d_id = $2 AND c_id = $3), ",
                new_order_lines!(),
                ", t AS (SELECT count(*) AS n, sum(ol_amount) AS amount FROM ol) \
                SELECT h.o_id, h.d_tax, h.w_tax, h.c_discount, h.c_last, h.c_credit, t.n, t.amount FROM t LEFT JOIN h ON true"
            ),
            Stmt::PgPayWarehouseDistrict => "WITH w AS (UPDATE warehouse SET w_ytd = w_ytd + $1 WHERE w_id = $2 RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip), \
                d AS (UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3 RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip) \
                SELECT * FROM w, d",
            // The customer's payment, C_DATA for bad credit (in the same UPDATE: one
            // statement may change a row once) and the HISTORY row, its H_DATA made of the
            // warehouse's and district's names read here, so a payment by customer id goes out
            // with the warehouse and district update.
            Stmt::PgPayCustomer => "WITH c AS (UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1, c_payment_cnt = c_payment_cnt + 1, \
                c_data = CASE WHEN c_credit = 'BC' THEN substr($5 || c_data, 1, 500) ELSE c_data END \
                WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4 \
                RETURNING c_credit, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit_lim, c_discount, c_balance), \
                h AS (INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
                SELECT $4, $3, $2, $6, $7, CURRENT_TIMESTAMP, $1, w_name || '    ' || d_name FROM c, warehouse, district WHERE w_id = $7 AND d_w_id = $7 AND d_id = $6) \
                SELECT * FROM c",
            // Payment by customer id as one statement, a transaction by itself: warehouse,
            // district, customer and HISTORY. Rows: the customer's columns then the
            // warehouse's and district's (none when one of them is missing).
            Stmt::PgPayOne => "WITH w AS (UPDATE warehouse SET w_ytd = w_ytd + $1 WHERE w_id = $2 RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip), \
                d AS (UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3 RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip), \
                c AS (UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1, c_payment_cnt = c_payment_cnt + 1, \
                c_data = CASE WHEN c_credit = 'BC' THEN substr($7 || c_data, 1, 500) ELSE c_data END \
                WHERE c_w_id = $4 AND c_d_id = $5 AND c_id = $6 \
                RETURNING c_credit, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit_lim, c_discount, c_balance), \
                h AS (INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) \
                SELECT $6, $5, $4, $3, $2, CURRENT_TIMESTAMP, $1, w.w_name || '    ' || d.d_name FROM c, w, d) \
                SELECT c.*, w.*, d.* FROM c, w, d",
            // The customer, its last order (if any) and that order's lines: one row per line,
            // or one row with NULL order columns.
            Stmt::PgOsAll => "SELECT c_balance, c_first, c_middle, c_last, o.o_id, o.o_carrier_id, o.o_entry_d, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d \
                FROM customer LEFT JOIN LATERAL (SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1) o ON true \
                LEFT JOIN order_line ON ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = o.o_id \
                WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
            // Delivery: every district's oldest undelivered order taken (a row a concurrent
            // Delivery took first is skipped, as in the per-district statement) and given its
            // carrier. Rows: (district, order, customer; NULL when the order is missing).
            Stmt::PgDlOrders => "WITH m AS (SELECT no_d_id AS d, min(no_o_id) AS o FROM new_order WHERE no_w_id = $1 GROUP BY no_d_id), \
                n AS (DELETE FROM new_order USING m WHERE no_w_id = $1 AND no_d_id = m.d AND no_o_id = m.o RETURNING no_d_id, no_o_id), \
                o AS (UPDATE orders SET o_carrier_id = $2 FROM n WHERE o_w_id = $1 AND o_d_id = n.no_d_id AND o_id = n.no_o_id RETURNING o_d_id, o_c_id) \
                SELECT n.no_d_id, n.no_o_id, o.o_c_id FROM n LEFT JOIN o ON o.o_d_id = n.no_d_id",
            // Delivery, the rest: the orders' lines dated, and each customer credited with
            // the sum of its order's lines. Changes one customer row per order.
            Stmt::PgDlFinish => "WITH u AS (SELECT * FROM unnest($2::int4[], $3::int4[], $4::int4[]) AS u(d, o, c)), \
                l AS (UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP FROM u WHERE ol_w_id = $1 AND ol_d_id = u.d AND ol_o_id = u.o RETURNING ol_d_id, ol_amount), \
                t AS (SELECT u.d, u.c, coalesce(sum(l.ol_amount), 0) AS amount FROM u LEFT JOIN l ON l.ol_d_id = u.d GROUP BY u.d, u.c) \
                UPDATE customer SET c_balance = c_balance + t.amount, c_delivery_cnt = c_delivery_cnt + 1 FROM t WHERE c_w_id = $1 AND c_d_id = t.d AND c_id = t.c",
            Stmt::PgSlCount => "SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id \
                WHERE ol_w_id = $1 AND ol_d_id = $2 AND s_quantity < $3 \
                AND ol_o_id < (SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2) \
                AND ol_o_id >= (SELECT d_next_o_id - 20 FROM district WHERE d_w_id = $1 AND d_id = $2)",
        }
    }
}
