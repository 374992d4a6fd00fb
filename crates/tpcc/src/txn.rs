//! The five transactions (clause 2): their random inputs, and client-side SQL that runs them
//! through a session on any engine (written once in `per_row`, and per dialect in its module).
//!
//! Inputs are drawn separately from execution, so the same inputs serve client-side SQL
//! and PostgreSQL's server-side functions, and a retried
//! transaction runs again with exactly the inputs that failed.
//!
//! On PostgreSQL, where each statement is a network round trip and round trips cost the
//! driver most of its CPU, the transactions run as a few statements each ([`crate::postgres`]:
//! a New-Order's lines and a Delivery's districts as arrays, reads and writes of one
//! step joined with data-modifying `WITH`; New-Order and Payment by id as one statement),
//! reading and writing the same rows, and statements that need nothing from the client in
//! between are pipelined. MariaDB/MySQL does the same with `IN` lists, `UPDATE … CASE` and
//! multi-row `INSERT`s (`mysql::lean`). SQLite, in process, runs the per-row statements.
//!
//! Round trips are kept low without leaving portable SQL: `UPDATE … RETURNING` reads and
//! changes a row in one statement (the district's next order id, the stock quantity rule of
//! clause 2.4.2.2, the customer's payment), which also takes the row lock at the first touch.
//! New-Order visits its stock rows in (warehouse, item) order so two New-Orders never lock
//! the same rows in opposite orders; the unused item id of the 1 % rollbacks is larger than
//! every real id, so it stays last, as clause 2.4.1.5 wants.

use crate::random::{NuRandC, Rng};
pub use crate::sql::Stmt;
use crate::sql::{StmtError, Val};
use crate::{CUSTOMERS_PER_DISTRICT, DISTRICTS_PER_WAREHOUSE, ITEMS};
use serde::{Deserialize, Serialize};

/// The five transaction types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxnType {
    /// New-Order (the counted one).
    NewOrder,
    /// Payment.
    Payment,
    /// Order-Status (read only).
    OrderStatus,
    /// Delivery (run inline, not deferred).
    Delivery,
    /// Stock-Level (read only).
    StockLevel,
}

impl TxnType {
    /// All types, in the specification's order.
    pub const ALL: [TxnType; 5] = [
        TxnType::NewOrder,
        TxnType::Payment,
        TxnType::OrderStatus,
        TxnType::Delivery,
        TxnType::StockLevel,
    ];

    /// The JSON name (`new_order`, `payment`, …).
    pub fn name(self) -> &'static str {
        match self {
            TxnType::NewOrder => "new_order",
            TxnType::Payment => "payment",
            TxnType::OrderStatus => "order_status",
            TxnType::Delivery => "delivery",
            TxnType::StockLevel => "stock_level",
        }
    }

    /// Share of the mix in percent (clause 5.2.3 minimums; New-Order takes the rest).
    pub fn mix_pct(self) -> u32 {
        match self {
            TxnType::NewOrder => 45,
            TxnType::Payment => 43,
            _ => 4,
        }
    }

    /// The 90th-percentile response-time limit, seconds (clause 5.2.5.3).
    pub fn p90_limit_s(self) -> f64 {
        match self {
            TxnType::StockLevel => 20.0,
            _ => 5.0,
        }
    }

    /// Keying time and mean think time, seconds (clause 5.2.5.7).
    pub fn keying_think_s(self) -> (f64, f64) {
        match self {
            TxnType::NewOrder => (18.0, 12.0),
            TxnType::Payment => (3.0, 12.0),
            TxnType::OrderStatus => (2.0, 10.0),
            TxnType::Delivery => (2.0, 5.0),
            TxnType::StockLevel => (2.0, 5.0),
        }
    }

    /// Whether the transaction writes (SQLite takes the writer slot up front for these).
    pub fn writes(self) -> bool {
        !matches!(self, TxnType::OrderStatus | TxnType::StockLevel)
    }

    /// Draws a type with the mix's weights.
    pub fn draw(rng: &mut Rng) -> TxnType {
        let mut x = rng.int(0, 99) as u32;
        for t in TxnType::ALL {
            if x < t.mix_pct() {
                return t;
            }
            x -= t.mix_pct();
        }
        TxnType::NewOrder
    }
}

/// How a customer is chosen.
#[derive(Clone, Debug)]
pub enum CustomerBy {
    /// By id.
    Id(i64),
    /// By last name (the middle one in first-name order, clause 2.5.2.2).
    Name(String),
}

/// One order line of a New-Order.
#[derive(Clone, Copy, Debug)]
pub struct Line {
    /// Item id (ITEMS + 1 for the unused item).
    pub i_id: i64,
    /// Supplying warehouse.
    pub supply_w_id: i64,
    /// Quantity, 1..=10.
    pub quantity: i64,
}

/// The inputs of one transaction.
#[derive(Clone, Debug)]
pub enum Input {
    /// New-Order.
    NewOrder {
        /// Home warehouse.
        w_id: i64,
        /// District.
        d_id: i64,
        /// Customer.
        c_id: i64,
        /// Lines, sorted by (supply warehouse, item).
        lines: Vec<Line>,
        /// Every line is supplied by the home warehouse.
        all_local: bool,
    },
    /// Payment.
    Payment {
        /// Warehouse paid at.
        w_id: i64,
        /// District paid at.
        d_id: i64,
        /// Customer's warehouse (another one 15 % of the time).
        c_w_id: i64,
        /// Customer's district.
        c_d_id: i64,
        /// Which customer.
        by: CustomerBy,
        /// Amount, 1.00..=5000.00.
        amount: f64,
    },
    /// Order-Status.
    OrderStatus {
        /// Warehouse.
        w_id: i64,
        /// District.
        d_id: i64,
        /// Which customer.
        by: CustomerBy,
    },
    /// Delivery.
    Delivery {
        /// Warehouse.
        w_id: i64,
        /// Carrier, 1..=10.
        carrier_id: i64,
    },
    /// Stock-Level.
    StockLevel {
        /// Warehouse.
        w_id: i64,
        /// The terminal's district.
        d_id: i64,
        /// Threshold, 10..=20.
        threshold: i64,
    },
}

impl Input {
    /// The type of these inputs.
    pub fn txn_type(&self) -> TxnType {
        match self {
            Input::NewOrder { .. } => TxnType::NewOrder,
            Input::Payment { .. } => TxnType::Payment,
            Input::OrderStatus { .. } => TxnType::OrderStatus,
            Input::Delivery { .. } => TxnType::Delivery,
            Input::StockLevel { .. } => TxnType::StockLevel,
        }
    }

    /// True when the few-statement paths run this transaction as one read-only statement,
    /// which is a transaction by itself (autocommit): no BEGIN and COMMIT round trips.
    pub fn is_single_read(&self) -> bool {
        matches!(
            self,
            Input::StockLevel { .. }
                | Input::OrderStatus {
                    by: CustomerBy::Id(_),
                    ..
                }
        )
    }

    /// Draws the inputs of a `ty` transaction at warehouse `w_id` (clauses 2.4.1, 2.5.1,
    /// 2.6.1, 2.7.1, 2.8.1).
    pub fn draw(
        ty: TxnType,
        rng: &mut Rng,
        c: &NuRandC,
        w_id: i64,
        warehouses: i64,
        terminal_d_id: i64,
    ) -> Input {
        let other_warehouse = |rng: &mut Rng| {
            if warehouses <= 1 {
                w_id
            } else {
                let o = rng.int(1, warehouses - 1);
                if o >= w_id {
                    o + 1
                } else {
                    o
                }
            }
        };
        let customer = |rng: &mut Rng| {
            if rng.percent(60) {
                CustomerBy::Name(rng.last_name(c.c_last))
            } else {
                CustomerBy::Id(rng.nurand(1023, c.c_id, 1, CUSTOMERS_PER_DISTRICT))
            }
        };
        match ty {
            TxnType::NewOrder => {
                let d_id = rng.int(1, DISTRICTS_PER_WAREHOUSE);
                let c_id = rng.nurand(1023, c.c_id, 1, CUSTOMERS_PER_DISTRICT);
                let n = rng.int(5, 15);
                let rollback = rng.percent(1);
                let mut lines: Vec<Line> = (0..n)
                    .map(|k| {
                        let i_id = if rollback && k == n - 1 {
                            ITEMS + 1
                        } else {
                            rng.nurand(8191, c.ol_i_id, 1, ITEMS)
                        };
                        let supply_w_id = if rng.percent(1) {
                            other_warehouse(rng)
                        } else {
                            w_id
                        };
                        Line {
                            i_id,
                            supply_w_id,
                            quantity: rng.int(1, 10),
                        }
                    })
                    .collect();
                lines.sort_by_key(|l| (l.i_id > ITEMS, l.supply_w_id, l.i_id));
                let all_local = lines.iter().all(|l| l.supply_w_id == w_id);
                Input::NewOrder {
                    w_id,
                    d_id,
                    c_id,
                    lines,
                    all_local,
                }
            }
            TxnType::Payment => {
                let d_id = rng.int(1, DISTRICTS_PER_WAREHOUSE);
                let (c_w_id, c_d_id) = if warehouses > 1 && rng.percent(15) {
                    (other_warehouse(rng), rng.int(1, DISTRICTS_PER_WAREHOUSE))
                } else {
                    (w_id, d_id)
                };
                Input::Payment {
                    w_id,
                    d_id,
                    c_w_id,
                    c_d_id,
                    by: customer(rng),
                    amount: rng.fixed(1.0, 5000.0, 2),
                }
            }
            TxnType::OrderStatus => Input::OrderStatus {
                w_id,
                d_id: rng.int(1, DISTRICTS_PER_WAREHOUSE),
                by: customer(rng),
            },
            TxnType::Delivery => Input::Delivery {
                w_id,
                carrier_id: rng.int(1, 10),
            },
            TxnType::StockLevel => Input::StockLevel {
                w_id,
                d_id: terminal_d_id,
                threshold: rng.int(10, 20),
            },
        }
    }
}

/// How a transaction ended without an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Committed.
    Committed,
    /// Rolled back on purpose (New-Order with an unused item).
    RolledBack,
}

pub(crate) fn one(rows: &[Vec<Val>], what: &str) -> Result<(), StmtError> {
    if rows.is_empty() {
        Err(StmtError::Fatal(format!("{what}: no row")))
    } else {
        Ok(())
    }
}

/// The customer id at position ceil(n/2) (1-based) of the rows of [`Stmt::CustomerByName`].
pub(crate) fn middle_customer(rows: &[Vec<Val>]) -> Result<i64, StmtError> {
    one(rows, "customer by last name")?;
    Ok(rows[(rows.len() - 1) / 2][0].int())
}

/// OL_AMOUNT: quantity × price, in cents.
pub(crate) fn line_amount(quantity: i64, price: f64) -> f64 {
    (quantity as f64 * price * 100.0).round() / 100.0
}

/// lines name it, so such an order (rare) goes line by line. Lines are sorted, so repeats
/// are neighbours.
pub(crate) fn repeats_a_line(input: &Input) -> bool {
    match input {
        Input::NewOrder { lines, .. } => lines
            .windows(2)
            .any(|p| (p[0].supply_w_id, p[0].i_id) == (p[1].supply_w_id, p[1].i_id)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_adds_up_and_draws_match_it() {
        assert_eq!(TxnType::ALL.iter().map(|t| t.mix_pct()).sum::<u32>(), 100);
        let mut r = Rng::new(5);
        let mut n = [0u32; 5];
        for _ in 0..100_000 {
            n[TxnType::draw(&mut r) as usize] += 1;
        }
        for t in TxnType::ALL {
            let got = n[t as usize] as f64 / 1000.0;
            assert!((got - t.mix_pct() as f64).abs() < 1.0, "{t:?} {got}");
        }
    }

    #[test]
    fn new_order_inputs_follow_the_rules() {
        let mut r = Rng::new(9);
        let c = NuRandC::for_run(&mut r);
        let (mut rollbacks, mut remote_lines, mut lines_total) = (0, 0, 0);
        for _ in 0..20_000 {
            let Input::NewOrder { lines, w_id, .. } =
                Input::draw(TxnType::NewOrder, &mut r, &c, 2, 4, 1)
            else {
                unreachable!()
            };
            assert!((5..=15).contains(&lines.len()));
            if lines.iter().any(|l| l.i_id > ITEMS) {
                rollbacks += 1;
                assert!(lines.last().unwrap().i_id > ITEMS, "unused item is last");
            }
            remote_lines += lines.iter().filter(|l| l.supply_w_id != w_id).count();
            lines_total += lines.len();
        }
        assert!((120..300).contains(&rollbacks), "{rollbacks}");
        let remote = remote_lines as f64 / lines_total as f64;
        assert!((0.006..0.014).contains(&remote), "{remote}");
    }

    #[test]
    fn payment_inputs_follow_the_rules() {
        let mut r = Rng::new(11);
        let c = NuRandC::for_run(&mut r);
        let (mut by_name, mut remote) = (0, 0);
        for _ in 0..20_000 {
            let Input::Payment {
                w_id,
                c_w_id,
                by,
                amount,
                ..
            } = Input::draw(TxnType::Payment, &mut r, &c, 1, 3, 1)
            else {
                unreachable!()
            };
            assert!((1.0..=5000.0).contains(&amount));
            by_name += matches!(by, CustomerBy::Name(_)) as u32;
            remote += (c_w_id != w_id) as u32;
        }
        assert!((11_500..12_500).contains(&by_name), "{by_name}");
        assert!((2_700..3_300).contains(&remote), "{remote}");
    }
}
