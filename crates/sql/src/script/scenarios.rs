//! The built-in scenarios (the field reports' lessons), written as script text in
//! `crates/sql/scenarios/NAME.sql` and addressed as `builtin:NAME`.

use super::load::SQLITE;

/// One built-in scenario.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Scenario {
    pub name: &'static str,
    pub about: &'static str,
    pub text: &'static str,
    /// (dialect bits, why) the scenario cannot run there.
    pub refuses: &'static [(u8, &'static str)],
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "last-page-insert",
        about: "the ATM ledger: each transaction inserts a debit and a credit row into one table keyed by an ever-increasing key (plus an index on the account)",
        text: include_str!("../../scenarios/last-page-insert.sql"),
        refuses: &[],
    },
    Scenario {
        name: "last-page-insert-hash",
        about: "the ATM ledger hash-partitioned into 16 partitions on its key (PostgreSQL, MariaDB/MySQL)",
        text: include_str!("../../scenarios/last-page-insert-hash.sql"),
        refuses: &[(
            SQLITE,
            "SQLite has no table partitioning, which is what this scenario measures (run builtin:last-page-insert there)",
        )],
    },
    Scenario {
        name: "hot-rows",
        about: "every session reads and updates one of 10 rows in one transaction (row-lock and lock-manager waits)",
        text: include_str!("../../scenarios/hot-rows.sql"),
        refuses: &[],
    },
    Scenario {
        name: "point-select",
        about: "read-only primary-key lookups on a cached table of 100,000 x scale rows (a CPU-bound reference)",
        text: include_str!("../../scenarios/point-select.sql"),
        refuses: &[],
    },
];

/// The scenario named `name`.
pub(crate) fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// The built-in scenarios: (name, what it measures), for `builtin:NAME`.
pub fn builtins() -> Vec<(&'static str, &'static str)> {
    SCENARIOS.iter().map(|s| (s.name, s.about)).collect()
}

/// The text of the built-in scenario `source` names (`builtin:NAME`), if there is one.
pub fn builtin_text(source: &str) -> Option<&'static str> {
    find(source.strip_prefix("builtin:")?).map(|s| s.text)
}
