//! The nine tables with the specification's names (clause 1.3), and their keys.
//!
//! PostgreSQL: tables are created bare, loaded with COPY, and get their primary keys and the
//! two secondary indexes afterwards (building a B-tree once from sorted input is far cheaper
//! than maintaining it row by row). Money is NUMERIC as in HammerDB's schema.
//!
//! SQLite cannot add a primary key to an existing table, so its tables are created `WITHOUT
//! ROWID` with the key inline (clustered on the key, like SQL Server's clustered indexes), and
//! the loader writes each table in key order, which appends to the B-tree instead of
//! splitting it. The secondary indexes still come after the load. HISTORY has no key in the
//! specification and stays a rowid table.
//!
//! MariaDB/MySQL (InnoDB) clusters every table on its primary key too, so the key is inline
//! as on SQLite and the loader inserts in key order; timestamps are DATETIME (MySQL's
//! TIMESTAMP has time-zone conversions and a 2038 limit that the benchmark does not want).

use crate::database::SqlOf;
use crate::db::Session;
use crate::error::{Result, TpccError};
use crate::url::Dialect;

/// The tables, in load order.
pub const TABLES: [&str; 9] = [
    "item",
    "warehouse",
    "district",
    "customer",
    "history",
    "orders",
    "new_order",
    "order_line",
    "stock",
];

/// One table: its name, columns and primary key (None: HISTORY, which has none).
pub(crate) struct Table {
    pub(crate) name: &'static str,
    columns: &'static str,
    pub(crate) key: Option<&'static str>,
}

impl Table {
    /// The column definitions, in the portable types (TIMESTAMP, NUMERIC).
    pub(crate) fn columns(&self) -> String {
        self.columns.replace("MONEY12", MONEY12)
    }
}

const MONEY12: &str = "NUMERIC(12,2)";

/// The tables with their columns and keys.
pub(crate) fn tables() -> Vec<Table> {
    vec![
        Table {
            name: "warehouse",
            columns: "w_id INTEGER NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20), w_street_2 VARCHAR(20), w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax NUMERIC(4,4), w_ytd MONEY12",
            key: Some("w_id"),
        },
        Table {
            name: "district",
            columns: "d_id INTEGER NOT NULL, d_w_id INTEGER NOT NULL, d_name VARCHAR(10), d_street_1 VARCHAR(20), d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9), d_tax NUMERIC(4,4), d_ytd MONEY12, d_next_o_id INTEGER",
            key: Some("d_w_id, d_id"),
        },
        Table {
            name: "customer",
            columns: "c_id INTEGER NOT NULL, c_d_id INTEGER NOT NULL, c_w_id INTEGER NOT NULL, c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), c_since TIMESTAMP, c_credit CHAR(2), c_credit_lim MONEY12, c_discount NUMERIC(4,4), c_balance MONEY12, c_ytd_payment MONEY12, c_payment_cnt INTEGER, c_delivery_cnt INTEGER, c_data VARCHAR(500)",
            key: Some("c_w_id, c_d_id, c_id"),
        },
        Table {
            name: "history",
            columns: "h_c_id INTEGER, h_c_d_id INTEGER, h_c_w_id INTEGER, h_d_id INTEGER, h_w_id INTEGER, h_date TIMESTAMP, h_amount NUMERIC(6,2), h_data VARCHAR(24)",
            key: None,
        },
        Table {
            name: "new_order",
            columns: "no_o_id INTEGER NOT NULL, no_d_id INTEGER NOT NULL, no_w_id INTEGER NOT NULL",
            key: Some("no_w_id, no_d_id, no_o_id"),
        },
        Table {
            name: "orders",
            columns: "o_id INTEGER NOT NULL, o_d_id INTEGER NOT NULL, o_w_id INTEGER NOT NULL, o_c_id INTEGER, o_entry_d TIMESTAMP, o_carrier_id INTEGER, o_ol_cnt INTEGER, o_all_local INTEGER",
            key: Some("o_w_id, o_d_id, o_id"),
        },
        Table {
            name: "order_line",
            columns: "ol_o_id INTEGER NOT NULL, ol_d_id INTEGER NOT NULL, ol_w_id INTEGER NOT NULL, ol_number INTEGER NOT NULL, ol_i_id INTEGER, ol_supply_w_id INTEGER, ol_delivery_d TIMESTAMP, ol_quantity INTEGER, ol_amount NUMERIC(6,2), ol_dist_info CHAR(24)",
            key: Some("ol_w_id, ol_d_id, ol_o_id, ol_number"),
        },
        Table {
            name: "item",
            columns: "i_id INTEGER NOT NULL, i_im_id INTEGER, i_name VARCHAR(24), i_price NUMERIC(5,2), i_data VARCHAR(50)",
            key: Some("i_id"),
        },
        Table {
            name: "stock",
            columns: "s_i_id INTEGER NOT NULL, s_w_id INTEGER NOT NULL, s_quantity INTEGER, s_dist_01 CHAR(24), s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24), s_dist_05 CHAR(24), s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24), s_dist_09 CHAR(24), s_dist_10 CHAR(24), s_ytd INTEGER, s_order_cnt INTEGER, s_remote_cnt INTEGER, s_data VARCHAR(50)",
            key: Some("s_w_id, s_i_id"),
        },
    ]
}

/// The two secondary indexes every TPC-C kit builds: customers by last name (Payment and
/// Order-Status by name) and orders by customer (Order-Status).
const SECONDARY: [(&str, &str, &str); 2] = [
    (
        "customer_by_name",
        "customer",
        "c_w_id, c_d_id, c_last, c_first",
    ),
    (
        "orders_by_customer",
        "orders",
        "o_w_id, o_d_id, o_c_id, o_id",
    ),
];

/// The two secondary indexes, one statement each.
pub(crate) fn secondary_indexes() -> Vec<String> {
    SECONDARY
        .iter()
        .map(|(name, table, cols)| format!("CREATE INDEX {name} ON {table} ({cols})"))
        .collect()
}

/// DDL creating the tables (without PostgreSQL keys; see the module docs).
pub fn create_tables(dialect: Dialect) -> String {
    dialect.sql().create_tables()
}

/// DDL adding keys and secondary indexes after the load, one statement per entry so the
/// loader can build them in parallel on PostgreSQL.
pub fn create_indexes(dialect: Dialect) -> Vec<String> {
    dialect.sql().create_indexes()
}

/// DDL dropping every table, the build record (and the server-side functions or procedures).
pub fn drop_all(dialect: Dialect) -> String {
    let mut sql = String::new();
    for t in TABLES
        .iter()
        .chain([&crate::build_state::TABLE, &crate::build_state::SETUP_TABLE])
    {
        sql.push_str(&format!("DROP TABLE IF EXISTS {t};\n"));
    }
    sql.push_str(&dialect.sql().drop_server_side());
    sql
}

/// SQL listing which of the nine tables exist.
pub fn existing_tables_sql(dialect: Dialect) -> String {
    let list = TABLES
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(",");
    dialect.sql().existing_tables_sql(&list)
}

/// Warehouses in the database; a clear error when the schema is missing.
pub fn count_warehouses(s: &mut Session) -> Result<u32> {
    let sql = existing_tables_sql(s.dialect());
    let (_, tables) = s.query_sql(&sql)?;
    if tables.len() < TABLES.len() {
        let have: Vec<String> = tables.iter().map(|r| r[0].text().to_string()).collect();
        return Err(TpccError::SchemaMissing(if have.is_empty() {
            "no tables".into()
        } else {
            format!("only {}", have.join(", "))
        }));
    }
    let n = s.query_int("SELECT count(*) FROM warehouse")?;
    if n == 0 {
        return Err(TpccError::SchemaMissing(
            "the warehouse table is empty".into(),
        ));
    }
    Ok(n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_has_all_tables_and_keys() {
        let s = create_tables(Dialect::Sqlite);
        for t in TABLES {
            assert!(s.contains(&format!("CREATE TABLE {t} (")), "{t}");
        }
        assert!(s.contains("PRIMARY KEY (s_w_id, s_i_id)) WITHOUT ROWID"));
        let p = create_tables(Dialect::Postgres);
        assert!(!p.contains("PRIMARY KEY"));
        assert_eq!(create_indexes(Dialect::Postgres).len(), 10);
        assert_eq!(create_indexes(Dialect::Sqlite).len(), 2);
        let m = create_tables(Dialect::Mysql);
        assert!(m.contains("PRIMARY KEY (s_w_id, s_i_id)) ENGINE=InnoDB"));
        assert!(!m.contains("TIMESTAMP"));
        assert_eq!(create_indexes(Dialect::Mysql).len(), 2);
        assert!(drop_all(Dialect::Sqlite).contains("DROP TABLE IF EXISTS oio_tpcc_build;"));
    }
}
