//! The database server's settings a result was measured under, and naming results by what
//! differs between them.
//!
//! Why: a tuning study changes one setting and compares; unless the setting is in the result,
//! nothing says which run had `synchronous_commit=off`. Only settings that differ from the
//! server's defaults are recorded (PostgreSQL: `pg_settings` where `source <> 'default'`;
//! MariaDB/MySQL: global variables not at their compiled default; SQLite: the pragmas oio's
//! connections run with), so the list stays short and a difference between two results is a
//! difference a person made.

use crate::result::{DeviceInfo, FilesystemInfo};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the server said about its configuration when the result was taken.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSettings {
    /// "sqlite", "postgres", "mysql" or "sqlserver".
    pub engine: String,
    /// The server's (or library's) version string.
    pub version: String,
    /// How `values` was read (the query), so a reader knows what "not default" meant.
    pub source: String,
    /// Setting name → value as the server shows it (with its unit when it has one).
    pub values: BTreeMap<String, String>,
    /// The storage under the database's data directory (absent when the server is elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<Storage>,
    /// What could not be read, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The filesystem and block device holding the database's data directory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Storage {
    /// The data directory (or the SQLite file's directory).
    pub data_dir: String,
    /// Its filesystem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<FilesystemInfo>,
    /// Its block device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceInfo>,
}

/// The value a setting absent from a result's non-default list is shown with.
pub const DEFAULT: &str = "default";

/// For each settings list (None: not recorded), the `name=value` of every setting whose value
/// is not the same in all of them; a setting a list does not hold reads `name=default`. Lists
/// not recorded give nothing (a difference cannot be told from them).
pub fn differing(all: &[Option<&BTreeMap<String, String>>]) -> Vec<Vec<String>> {
    let known: Vec<&BTreeMap<String, String>> = all.iter().flatten().copied().collect();
    let mut names: Vec<&String> = known.iter().flat_map(|m| m.keys()).collect();
    names.sort();
    names.dedup();
    let value = |m: &BTreeMap<String, String>, n: &str| {
        m.get(n).cloned().unwrap_or_else(|| DEFAULT.to_string())
    };
    let varying: Vec<&String> = names
        .into_iter()
        .filter(|n| known.iter().any(|m| value(m, n) != value(known[0], n)))
        .collect();
    all.iter()
        .map(|m| match m {
            Some(m) => varying
                .iter()
                .map(|n| format!("{n}={}", value(m, n)))
                .collect(),
            None => Vec::new(),
        })
        .collect()
}

/// Names for items described by ordered layers of facts (`(name, value)`), by what differs
/// between them: the first layer in which any fact differs names them, with only the facts
/// that differ ("synchronous_commit=off" rather than "time 10s" when both differ and settings
/// come first). A fact with an empty name shows its value alone. Items that differ in nothing
/// get `fallback(index)`.
pub fn name_by_difference(
    layers: &[Vec<Vec<(String, String)>>],
    n: usize,
    fallback: impl Fn(usize) -> String,
) -> Vec<String> {
    for layer in layers {
        let names = differing_facts(layer, n);
        if names.iter().any(|s| !s.is_empty()) {
            return names
                .into_iter()
                .enumerate()
                .map(|(i, s)| if s.is_empty() { fallback(i) } else { s })
                .collect();
        }
    }
    (0..n).map(fallback).collect()
}

fn differing_facts(layer: &[Vec<(String, String)>], n: usize) -> Vec<String> {
    let get = |i: usize, k: &str| {
        layer
            .get(i)
            .and_then(|f| f.iter().find(|(a, _)| a == k))
            .map(|(_, v)| v.clone())
    };
    let mut keys: Vec<&String> = Vec::new();
    for f in layer {
        for (k, _) in f {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let varying: Vec<&String> = keys
        .into_iter()
        .filter(|k| (0..n).any(|i| get(i, k) != get(0, k)))
        .collect();
    (0..n)
        .map(|i| {
            varying
                .iter()
                .filter_map(|k| {
                    get(i, k).map(|v| {
                        if k.is_empty() || k.contains('=') {
                            v
                        } else {
                            format!("{k} {v}")
                        }
                    })
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect()
}

/// The setting facts of a result as `name=value` facts for [`name_by_difference`]: each
/// setting that differs between the results, a missing one as `name=default`.
pub fn setting_facts(all: &[Option<&BTreeMap<String, String>>]) -> Vec<Vec<(String, String)>> {
    differing(all)
        .into_iter()
        .map(|v| {
            v.into_iter()
                .map(|s| {
                    let name = s.split('=').next().unwrap_or("").to_string();
                    (format!("{name}="), s)
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn differing_names_only_the_settings_that_changed_and_defaults_by_word() {
        let a = map(&[("shared_buffers", "128MB"), ("synchronous_commit", "on")]);
        let b = map(&[("shared_buffers", "128MB"), ("synchronous_commit", "off")]);
        let c = map(&[("shared_buffers", "128MB")]);
        let d = differing(&[Some(&a), Some(&b), Some(&c), None]);
        assert_eq!(
            d,
            vec![
                vec!["synchronous_commit=on".to_string()],
                vec!["synchronous_commit=off".to_string()],
                vec!["synchronous_commit=default".to_string()],
                vec![],
            ]
        );
    }

    #[test]
    fn the_first_layer_that_differs_names_the_items() {
        let a = map(&[("synchronous_commit", "on")]);
        let b = map(&[("synchronous_commit", "off")]);
        let settings = setting_facts(&[Some(&a), Some(&b)]);
        let options = vec![
            vec![("time".to_string(), "20s".to_string())],
            vec![("time".to_string(), "10s".to_string())],
        ];
        let names = name_by_difference(&[settings, options.clone()], 2, |i| format!("run {i}"));
        assert_eq!(names, ["synchronous_commit=on", "synchronous_commit=off"]);
        // Without a setting that differs, the options name them.
        let same = setting_facts(&[Some(&a), Some(&a)]);
        let names = name_by_difference(&[same, options], 2, |i| format!("run {i}"));
        assert_eq!(names, ["time 20s", "time 10s"]);
        let names = name_by_difference(&[], 2, |i| format!("run {}", i + 1));
        assert_eq!(names, ["run 1", "run 2"]);
    }
}
