//! The candidates of `oio tpcc study`: settings (`--set LABEL:NAME=VALUE`, applied to one
//! database in turn) or schemas (`--schema LABEL=SETUP`, each its own database), parsed and
//! checked before anything connects.

use crate::output::study as study_out;
use anyhow::bail;
use std::path::{Path, PathBuf};

/// One candidate: its label and the settings it applies.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The label (its results' directory and name).
    pub label: String,
    /// `(name, value)` in the order given.
    pub settings: Vec<(String, String)>,
    /// A schema candidate's own database and setup (`--schema`).
    pub schema: Option<Schema>,
}

/// Where a schema candidate runs and what made its schema.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    /// Its database (--db with `{label}` replaced).
    pub db: String,
    /// The setup file run once after the build; None for the schema as built.
    pub setup: Option<String>,
}

impl Candidate {
    /// "synchronous_commit=off" (several joined by ", "); a schema candidate's setup file.
    pub fn describe(&self) -> String {
        if let Some(s) = &self.schema {
            return match &s.setup {
                Some(f) => format!("schema set up by {f}"),
                None => "the schema as built".into(),
            };
        }
        self.settings
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The candidates of `--set LABEL:NAME=VALUE …`, in the order their labels first appear.
pub fn candidates(sets: &[String]) -> anyhow::Result<Vec<Candidate>> {
    let mut out: Vec<Candidate> = Vec::new();
    for s in sets {
        let parsed = s.split_once(':').and_then(|(label, kv)| {
            let (n, v) = kv.split_once('=')?;
            Some((label.trim(), n.trim().to_lowercase(), unquote(v.trim())))
        });
        let Some((label, name, value)) = parsed.filter(|(l, n, _)| !l.is_empty() && !n.is_empty())
        else {
            bail!("--set '{s}': expected LABEL:NAME=VALUE, e.g. async:synchronous_commit=off");
        };
        match out.iter_mut().find(|c| c.label == label) {
            Some(c) if c.settings.iter().any(|(n, _)| *n == name) => {
                bail!("--set '{s}': candidate '{label}' sets {name} twice")
            }
            Some(c) => c.settings.push((name, value)),
            None => out.push(Candidate {
                label: label.to_string(),
                settings: vec![(name, value)],
                schema: None,
            }),
        }
    }
    if out.len() < 2 {
        bail!(
            "a study needs at least two candidates (two labels in --set), the first the baseline"
        );
    }
    Ok(out)
}

/// A value written in single quotes as SQL would have it (`'300ms'`, `'it''s'`) without
/// them: oio writes the literal itself, for the server's type and dialect.
fn unquote(v: &str) -> String {
    match v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')) {
        Some(inner) if !inner.replace("''", "").contains('\'') => inner.replace("''", "'"),
        _ => v.to_string(),
    }
}

/// Each candidate's results directory, `OUT/<label's slug>` (labels that give one name refused).
pub fn candidate_dirs(out: &Path, cands: &[Candidate]) -> anyhow::Result<Vec<PathBuf>> {
    let labels: Vec<String> = cands.iter().map(|c| c.label.clone()).collect();
    study_out::candidate_dirs(out, &labels, "--set")
}

/// The SQLite sync level a candidate asks for, if it sets `synchronous`.
pub fn sqlite_sync(c: &Candidate) -> anyhow::Result<Option<oio_tpcc::SqliteSync>> {
    let Some((_, v)) = c.settings.iter().find(|(n, _)| n == "synchronous") else {
        return Ok(None);
    };
    Ok(Some(match v.to_lowercase().as_str() {
        "full" | "2" => oio_tpcc::SqliteSync::Full,
        "normal" | "1" => oio_tpcc::SqliteSync::Normal,
        "off" | "0" => oio_tpcc::SqliteSync::Off,
        _ => bail!(
            "--set {}:synchronous={v}: expected full, normal or off",
            c.label
        ),
    }))
}

/// The candidates of `--schema LABEL=SETUP …` on `db` (which must hold `{label}`), in order.
pub fn schema_candidates(raw: &[String], db: &str) -> anyhow::Result<Vec<Candidate>> {
    if !db.contains("{label}") {
        bail!("--schema: each schema candidate needs its own database (the runs go in rounds, and one candidate's DDL cannot be taken back for the next): put {{label}} in --db, e.g. --db 'sqlite:tpcc-{{label}}.db' or postgres://…/tpcc_{{label}}");
    }
    let mut out: Vec<Candidate> = Vec::new();
    for r in raw {
        let Some((label, setup)) = r.split_once('=').map(|(l, s)| (l.trim(), s.trim())) else {
            bail!("--schema '{r}': expected LABEL=SETUP (SETUP a file, or empty for the schema as built), e.g. hash=hash-order-line.sql");
        };
        if label.is_empty() || !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            bail!("--schema '{r}': a label is letters, digits and '_' (it becomes part of a database name)");
        }
        if out.iter().any(|c| c.label == label) {
            bail!("--schema '{r}': the label '{label}' is given twice");
        }
        out.push(Candidate {
            label: label.to_string(),
            settings: Vec::new(),
            schema: Some(Schema {
                db: db.replace("{label}", label),
                setup: (!setup.is_empty()).then(|| setup.to_string()),
            }),
        });
    }
    if out.len() < 2 {
        bail!("a study needs at least two candidates (--schema twice), the first the baseline");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_group_by_label_in_order_and_bad_ones_say_the_form() {
        let c = candidates(&[
            "base:synchronous_commit=on".into(),
            "async:synchronous_commit=off".into(),
            "async:commit_delay=10".into(),
        ])
        .unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].describe(), "synchronous_commit=on");
        assert_eq!(c[1].describe(), "synchronous_commit=off, commit_delay=10");
        let e = candidates(&["x=1".into(), "b:y=2".into()]).unwrap_err();
        assert!(e.to_string().contains("LABEL:NAME=VALUE"), "{e}");
        let e = candidates(&["a:x=1".into()]).unwrap_err();
        assert!(e.to_string().contains("two candidates"), "{e}");
        // A value in SQL quotes is taken without them (oio writes the literal); a quote
        // inside stays part of the value.
        let c = candidates(&[
            "a:wal_writer_delay='300ms'".into(),
            "b:application_name='it''s'".into(),
            "b:wal_writer_delay='a'b'".into(),
        ])
        .unwrap();
        assert_eq!(c[0].settings[0].1, "300ms");
        assert_eq!(c[1].settings[0].1, "it's");
        assert_eq!(c[1].settings[1].1, "'a'b'");
    }
}
