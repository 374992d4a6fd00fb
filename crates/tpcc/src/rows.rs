//! What a load writes: the rows of the initial population (clause 4.3.3.1), generated
//! deterministically per warehouse and seed in units (ITEM, or one warehouse) that loaders
//! take one at a time, and the pieces every dialect's loader shares (parallel workers,
//! counters, cancellation).

use crate::db::Timeouts;
use crate::error::{Result, TpccError};
use crate::random::{last_name, NuRandC, Rng};
use crate::{
    CUSTOMERS_PER_DISTRICT, DISTRICTS_PER_WAREHOUSE, FIRST_UNDELIVERED_O_ID, ITEMS,
    ORDERS_PER_DISTRICT,
};
use oio_core::Cancel;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Rows one warehouse adds (order lines are 10 per order on average).
pub const ROWS_PER_WAREHOUSE: u64 = 1 + 10 + 30_000 * 3 + 9_000 + 300_000 + 100_000;

/// What to build.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BuildOptions {
    /// Warehouses (the scale factor).
    pub warehouses: u32,
    /// Loader workers (connections on PostgreSQL, row generators on SQLite).
    pub workers: u32,
    /// Drop existing TPC-C tables first.
    pub force: bool,
    /// Seed of the data generator.
    pub seed: u64,
    /// Timeouts of the build's sessions.
    #[serde(default)]
    pub timeouts: Timeouts,
}

/// One field of a generated row.
#[derive(Clone, Copy, Debug)]
pub(crate) enum F<'a> {
    /// Integer.
    I(i64),
    /// Money (2 decimals).
    M(f64),
    /// A rate (4 decimals).
    R(f64),
    /// Text.
    S(&'a str),
    /// NULL.
    Null,
    /// The load timestamp.
    Now,
}

/// An owned field, for rows generated on one thread and written on another.
pub(crate) enum OwnedF {
    I(i64),
    F(f64),
    S(String),
    Null,
    Now,
}

type Emit<'e> = dyn FnMut(&[F]) -> Result<()> + 'e;

/// A unit of load work: ITEM, or one warehouse.
#[derive(Clone, Copy, Debug)]
pub enum Unit {
    /// The ITEM table.
    Item,
    /// One warehouse's rows (its id).
    Warehouse(i64),
}

/// Tables of one warehouse, in the order they are written.
const WAREHOUSE_TABLES: [&str; 8] = [
    "warehouse",
    "district",
    "customer",
    "history",
    "orders",
    "new_order",
    "order_line",
    "stock",
];

fn unit_seed(seed: u64, w: i64, table: usize) -> u64 {
    seed ^ (w as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((table as u64 + 1) << 56)
}

/// Order-line count of an order: deterministic so ORDERS and ORDER_LINE agree while being
/// written by separate streams.
fn ol_cnt(seed: u64, w: i64, d: i64, o: i64) -> i64 {
    let mut x = seed ^ ((w as u64) << 40) ^ ((d as u64) << 20) ^ o as u64;
    // splitmix64 finaliser: a good hash of the triple.
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    5 + (x % 11) as i64
}

/// Generates the rows of one table of one unit.
pub(crate) fn generate(seed: u64, unit: Unit, table: &str, emit: &mut Emit) -> Result<()> {
    let w = match unit {
        Unit::Item => {
            let mut r = Rng::new(unit_seed(seed, 0, 99));
            for i in 1..=ITEMS {
                let name = r.astring(14, 24);
                let data = r.data_with_original();
                emit(&[
                    F::I(i),
                    F::I(r.int(1, 10_000)),
                    F::S(&name),
                    F::M(r.fixed(1.0, 100.0, 2)),
                    F::S(&data),
                ])?;
            }
            return Ok(());
        }
        Unit::Warehouse(w) => w,
    };
    let ti = WAREHOUSE_TABLES
        .iter()
        .position(|t| *t == table)
        .unwrap_or(0);
    let mut r = Rng::new(unit_seed(seed, w, ti));
    let c = NuRandC::for_load(&mut r);
    match table {
        "warehouse" => {
            let n = r.astring(6, 10);
            let [s1, s2, city, st, zip] = r.address();
            emit(&[
                F::I(w),
                F::S(&n),
                F::S(&s1),
                F::S(&s2),
                F::S(&city),
                F::S(&st),
                F::S(&zip),
                F::R(r.fixed(0.0, 0.2, 4)),
                F::M(300_000.0),
            ])?;
        }
        "district" => {
            for d in 1..=DISTRICTS_PER_WAREHOUSE {
                let n = r.astring(6, 10);
                let [s1, s2, city, st, zip] = r.address();
                emit(&[
                    F::I(d),
                    F::I(w),
                    F::S(&n),
                    F::S(&s1),
                    F::S(&s2),
                    F::S(&city),
                    F::S(&st),
                    F::S(&zip),
                    F::R(r.fixed(0.0, 0.2, 4)),
                    F::M(30_000.0),
                    F::I(ORDERS_PER_DISTRICT + 1),
                ])?;
            }
        }
        "customer" => {
            customer_rows(w, &mut r, &c, emit)?;
        }
        "history" => {
            for d in 1..=DISTRICTS_PER_WAREHOUSE {
                for cid in 1..=CUSTOMERS_PER_DISTRICT {
                    let data = r.astring(12, 24);
                    emit(&[
                        F::I(cid),
                        F::I(d),
                        F::I(w),
                        F::I(d),
                        F::I(w),
                        F::Now,
                        F::M(10.0),
                        F::S(&data),
                    ])?;
                }
            }
        }
        "orders" => {
            orders_rows(seed, w, &mut r, emit)?;
        }
        "new_order" => {
            for d in 1..=DISTRICTS_PER_WAREHOUSE {
                for o in FIRST_UNDELIVERED_O_ID..=ORDERS_PER_DISTRICT {
                    emit(&[F::I(o), F::I(d), F::I(w)])?;
                }
            }
        }
        "order_line" => {
            order_line_rows(seed, w, &mut r, emit)?;
        }
        "stock" => {
            stock_rows(w, &mut r, emit)?;
        }
        other => unreachable!("no generator for table {other}"),
    }
    Ok(())
}

/// The CUSTOMER rows of warehouse `w`.
fn customer_rows(w: i64, r: &mut Rng, c: &NuRandC, emit: &mut Emit) -> Result<()> {
    let mut data = String::with_capacity(500);
    for d in 1..=DISTRICTS_PER_WAREHOUSE {
        for cid in 1..=CUSTOMERS_PER_DISTRICT {
            // The first 1,000 customers cover every last name once (clause 4.3.3.1).
            let last = if cid <= 1000 {
                last_name(cid - 1)
            } else {
                r.last_name(c.c_last)
            };
            let first = r.astring(8, 16);
            let [s1, s2, city, st, zip] = r.address();
            let phone = r.nstring(16);
            let credit = if r.percent(10) { "BC" } else { "GC" };
            data.clear();
            r.astring_into(&mut data, 300, 500);
            emit(&[
                F::I(cid),
                F::I(d),
                F::I(w),
                F::S(&first),
                F::S("OE"),
                F::S(&last),
                F::S(&s1),
                F::S(&s2),
                F::S(&city),
                F::S(&st),
                F::S(&zip),
                F::S(&phone),
                F::Now,
                F::S(credit),
                F::M(50_000.0),
                F::R(r.fixed(0.0, 0.5, 4)),
                F::M(-10.0),
                F::M(10.0),
                F::I(1),
                F::I(0),
                F::S(&data),
            ])?;
        }
    }
    Ok(())
}

/// The ORDERS rows of warehouse `w`.
fn orders_rows(seed: u64, w: i64, r: &mut Rng, emit: &mut Emit) -> Result<()> {
    for d in 1..=DISTRICTS_PER_WAREHOUSE {
        let perm = r.permutation(CUSTOMERS_PER_DISTRICT);
        for o in 1..=ORDERS_PER_DISTRICT {
            let carrier = if o < FIRST_UNDELIVERED_O_ID {
                F::I(r.int(1, 10))
            } else {
                F::Null
            };
            emit(&[
                F::I(o),
                F::I(d),
                F::I(w),
                F::I(perm[o as usize - 1]),
                F::Now,
                carrier,
                F::I(ol_cnt(seed, w, d, o)),
                F::I(1),
            ])?;
        }
    }
    Ok(())
}

/// The ORDER_LINE rows of warehouse `w`.
fn order_line_rows(seed: u64, w: i64, r: &mut Rng, emit: &mut Emit) -> Result<()> {
    let mut info = String::with_capacity(24);
    for d in 1..=DISTRICTS_PER_WAREHOUSE {
        for o in 1..=ORDERS_PER_DISTRICT {
            let delivered = o < FIRST_UNDELIVERED_O_ID;
            for n in 1..=ol_cnt(seed, w, d, o) {
                info.clear();
                r.astring_into(&mut info, 24, 24);
                emit(&[
                    F::I(o),
                    F::I(d),
                    F::I(w),
                    F::I(n),
                    F::I(r.int(1, ITEMS)),
                    F::I(w),
                    if delivered { F::Now } else { F::Null },
                    F::I(5),
                    F::M(if delivered {
                        0.0
                    } else {
                        r.fixed(0.01, 9999.99, 2)
                    }),
                    F::S(&info),
                ])?;
            }
        }
    }
    Ok(())
}

/// The STOCK rows of warehouse `w`.
fn stock_rows(w: i64, r: &mut Rng, emit: &mut Emit) -> Result<()> {
    let mut dists: Vec<String> = vec![String::with_capacity(24); 10];
    for i in 1..=ITEMS {
        for s in dists.iter_mut() {
            s.clear();
            r.astring_into(s, 24, 24);
        }
        let data = r.data_with_original();
        emit(&[
            F::I(i),
            F::I(w),
            F::I(r.int(10, 100)),
            F::S(&dists[0]),
            F::S(&dists[1]),
            F::S(&dists[2]),
            F::S(&dists[3]),
            F::S(&dists[4]),
            F::S(&dists[5]),
            F::S(&dists[6]),
            F::S(&dists[7]),
            F::S(&dists[8]),
            F::S(&dists[9]),
            F::I(0),
            F::I(0),
            F::I(0),
            F::S(&data),
        ])?;
    }
    Ok(())
}

pub(crate) fn tables_of(unit: Unit) -> &'static [&'static str] {
    match unit {
        Unit::Item => &["item"],
        Unit::Warehouse(_) => &WAREHOUSE_TABLES,
    }
}

/// Appends a row in COPY text format.
pub(crate) fn copy_line(buf: &mut Vec<u8>, row: &[F], now: &str) {
    for (i, f) in row.iter().enumerate() {
        if i > 0 {
            buf.push(b'\t');
        }
        match f {
            F::I(v) => {
                let _ = write!(buf, "{v}");
            }
            F::M(v) => {
                let _ = write!(buf, "{v:.2}");
            }
            F::R(v) => {
                let _ = write!(buf, "{v:.4}");
            }
            // Generated text is alphanumeric: no tab, newline or backslash to escape.
            F::S(s) => buf.extend_from_slice(s.as_bytes()),
            F::Null => buf.extend_from_slice(b"\\N"),
            F::Now => buf.extend_from_slice(now.as_bytes()),
        }
    }
    buf.push(b'\n');
}

/// Runs `work` on `workers` loader threads at once; a failed or panicked one marks the load
/// failed (so the others stop taking units) and its error is returned.
pub(crate) fn in_parallel(
    workers: u32,
    counters: &Counters,
    work: impl Fn() -> Result<()> + Sync,
) -> Result<()> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let r = work();
                    if r.is_err() {
                        counters.failed.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(Err(TpccError::Panicked("loader"))))
            .collect::<Result<Vec<()>>>()
    })?;
    Ok(())
}

/// What the loaders did so far.
pub struct Counters {
    pub(crate) rows: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) warehouses: AtomicU64,
    pub(crate) per_table: Mutex<BTreeMap<String, u64>>,
    pub(crate) failed: AtomicBool,
}

pub(crate) fn cancelled(cancel: &Cancel) -> Result<()> {
    if cancel.is_cancelled() {
        Err(TpccError::Cancelled("build stopped".into()))
    } else {
        Ok(())
    }
}

pub(crate) fn add_table_rows(counters: &Counters, table: &str, n: u64) {
    *counters
        .per_table
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(table.to_string())
        .or_default() += n;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_line_counts_are_in_range_and_average_ten() {
        let mut sum = 0;
        for o in 1..=3000 {
            let n = ol_cnt(42, 1, 1, o);
            assert!((5..=15).contains(&n));
            sum += n;
        }
        let mean = sum as f64 / 3000.0;
        assert!((9.5..10.5).contains(&mean), "{mean}");
    }

    #[test]
    fn copy_lines_are_tab_separated_with_null_markers() {
        let mut b = Vec::new();
        copy_line(
            &mut b,
            &[
                F::I(3),
                F::M(-10.0),
                F::R(0.1234),
                F::S("abc"),
                F::Null,
                F::Now,
            ],
            "2026-01-01 00:00:00",
        );
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "3\t-10.00\t0.1234\tabc\t\\N\t2026-01-01 00:00:00\n"
        );
    }
}
