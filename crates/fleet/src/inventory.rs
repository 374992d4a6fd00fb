//! Hosts, their targets and how to reach them: `--hosts a,b,c` or an inventory file.
//!
//! ```toml
//! launcher = "ssh -F lab.cfg {host} oio agent --stdio"   # default: ssh {host} oio agent --stdio
//!
//! [[host]]
//! name = "db1"
//! targets = ["/data/oio.dat"]            # the default role; else the command line's targets
//! roles = { log = ["/dev/sdb"], data = ["/dev/sdc", "/dev/sdd"] }
//! db = "postgres://oio@10.0.0.1/oio"     # its database for `oio fleet tpcc run`
//!
//! [[host]]
//! name = "db2"
//! launcher = "kubectl exec -i {host} -- oio agent --stdio"
//! ```
//!
//! A launcher is split into words as a POSIX shell would (quotes, backslashes) but no shell
//! runs it; `{host}` is replaced inside each word. Host names are checked so a name cannot
//! become an option of the launcher (`-oProxyCommand=…`).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The launcher used when none is given.
pub const DEFAULT_LAUNCHER: &str = "ssh {host} oio agent --stdio";

/// Most hosts one fleet may have (each costs a process and two threads in the controller).
pub const MAX_HOSTS: usize = 4096;

/// One host.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// The name given to the launcher (`{host}`) and used in results and messages.
    pub name: String,
    /// Targets of the default role on this host (empty: the command line's).
    #[serde(default)]
    pub targets: Vec<PathBuf>,
    /// Role bindings on this host (`data = ["/dev/sdc"]`), replacing the command line's.
    #[serde(default)]
    pub roles: BTreeMap<String, Vec<PathBuf>>,
    /// This host's launcher template (default: the inventory's).
    #[serde(default)]
    pub launcher: Option<String>,
    /// This host's database URL for `oio fleet tpcc run` (default: the command line's `--db`,
    /// with `{host}` replaced).
    #[serde(default)]
    pub db: Option<String>,
}

/// An inventory file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inventory {
    /// Launcher template for every host without its own.
    #[serde(default)]
    pub launcher: Option<String>,
    /// The hosts.
    #[serde(rename = "host", default)]
    pub hosts: Vec<HostSpec>,
}

/// An inventory or host list that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InventoryError(pub String);

impl Inventory {
    /// Hosts from `--hosts a,b,c` with one launcher.
    pub fn from_list(list: &str, launcher: Option<&str>) -> Result<Inventory, InventoryError> {
        let hosts = list
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(|h| HostSpec {
                name: h.to_string(),
                targets: Vec::new(),
                roles: BTreeMap::new(),
                launcher: None,
                db: None,
            })
            .collect();
        let inv = Inventory {
            launcher: launcher.map(str::to_string),
            hosts,
        };
        inv.check("--hosts")?;
        Ok(inv)
    }

    /// Reads an inventory file; errors name the file, line and column.
    pub fn from_file(path: &Path) -> Result<Inventory, InventoryError> {
        let meta = std::fs::metadata(path)
            .map_err(|e| InventoryError(format!("{}: {e}", path.display())))?;
        if meta.len() > 16 << 20 {
            return Err(InventoryError(format!(
                "{}: {} bytes; an inventory is at most 16 MiB",
                path.display(),
                meta.len()
            )));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| InventoryError(format!("{}: {e}", path.display())))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses inventory text; `name` is used in messages.
    pub fn parse(text: &str, name: &str) -> Result<Inventory, InventoryError> {
        let inv: Inventory = toml::from_str(text).map_err(|e| {
            let (line, col) = e
                .span()
                .map(|s| {
                    let before = &text[..s.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
                    (line, col)
                })
                .unwrap_or((1, 1));
            InventoryError(format!(
                "{name}:{line}:{col}: {}; expected an inventory: launcher = \"…\" and [[host]] tables with name, targets, roles, launcher",
                e.message()
            ))
        })?;
        inv.check(name)?;
        Ok(inv)
    }

    fn check(&self, what: &str) -> Result<(), InventoryError> {
        if self.hosts.is_empty() {
            return Err(InventoryError(format!("{what}: no hosts")));
        }
        if self.hosts.len() > MAX_HOSTS {
            return Err(InventoryError(format!(
                "{what}: {} hosts; at most {MAX_HOSTS}",
                self.hosts.len()
            )));
        }
        for (i, h) in self.hosts.iter().enumerate() {
            check_host_name(&h.name).map_err(|e| InventoryError(format!("{what}: {e}")))?;
            if self.hosts[..i].iter().any(|o| o.name == h.name) {
                return Err(InventoryError(format!(
                    "{what}: host '{}' is listed twice (results are named by host)",
                    h.name
                )));
            }
            Launcher::parse(self.launcher_of(h))
                .map_err(|e| InventoryError(format!("{what}: host '{}': {e}", h.name)))?;
        }
        Ok(())
    }

    /// The launcher template of a host.
    pub fn launcher_of<'a>(&'a self, h: &'a HostSpec) -> &'a str {
        h.launcher
            .as_deref()
            .or(self.launcher.as_deref())
            .unwrap_or(DEFAULT_LAUNCHER)
    }
}

/// A host name as launchers take it: letters, digits and `. _ - : @ [ ]`, not starting with
/// `-`, at most 253 bytes.
pub fn check_host_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-:@[]".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "host name '{}' is not usable: letters, digits and . _ - : @ [ ] only, not starting with '-'",
            name.escape_debug()
        ))
    }
}

/// A launcher template split into words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launcher(Vec<String>);

impl Launcher {
    /// Splits a template as a POSIX shell would (no expansion, no shell run).
    pub fn parse(template: &str) -> Result<Launcher, String> {
        let words = shell_words::split(template)
            .map_err(|e| format!("launcher '{template}': {e} (quote as in a shell)"))?;
        if words.is_empty() {
            return Err("launcher is empty; e.g. ssh {host} oio agent --stdio".into());
        }
        Ok(Launcher(words))
    }

    /// The command line for one host.
    pub fn argv(&self, host: &str) -> Vec<String> {
        self.0.iter().map(|w| w.replace("{host}", host)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_gets_the_default_launcher() {
        let inv = Inventory::from_list("a, b,c", None).unwrap();
        assert_eq!(inv.hosts.len(), 3);
        let l = Launcher::parse(inv.launcher_of(&inv.hosts[1])).unwrap();
        assert_eq!(l.argv("b"), ["ssh", "b", "oio", "agent", "--stdio"]);
    }

    #[test]
    fn an_inventory_binds_targets_and_launchers_per_host() {
        let inv = Inventory::parse(
            r#"
launcher = "ssh -F 'my cfg' {host} oio agent --stdio"
[[host]]
name = "db1"
targets = ["/data/t.dat"]
roles = { log = ["/dev/sdb"] }
[[host]]
name = "pod-2"
launcher = "kubectl exec -i {host} -- oio agent --stdio"
"#,
            "inv.toml",
        )
        .unwrap();
        let l = Launcher::parse(inv.launcher_of(&inv.hosts[0])).unwrap();
        assert_eq!(l.argv("db1")[..3], ["ssh", "-F", "my cfg"]);
        assert_eq!(inv.hosts[0].roles["log"], [PathBuf::from("/dev/sdb")]);
        let l = Launcher::parse(inv.launcher_of(&inv.hosts[1])).unwrap();
        assert_eq!(l.argv("pod-2")[..4], ["kubectl", "exec", "-i", "pod-2"]);
    }

    #[test]
    fn bad_inventories_name_the_place_and_the_problem() {
        let e = Inventory::parse("[[host]]\nname = \"a\"\ntargts = []\n", "inv.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("inv.toml:3:1: "), "{e}");
        assert!(e.contains("targts"), "{e}");
        let e = Inventory::from_list("a,-oProxyCommand=x", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not starting with '-'"), "{e}");
        let e = Inventory::from_list("a,a", None).unwrap_err().to_string();
        assert!(e.contains("listed twice"), "{e}");
        let e = Inventory::from_list("a", Some("ssh '{host}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("launcher"), "{e}");
        assert!(Inventory::from_list(" , ", None).is_err());
    }
}
