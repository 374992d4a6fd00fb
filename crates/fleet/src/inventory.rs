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
//! targets = ["/data/{host}/oio.dat"]     # {host} is replaced in target paths
//!
//! [group.readers]                         # a workload group: its own workload
//! rw = "randread"                         # workload, profile, or `oio run`'s workload flags
//! qd = 16
//! [[host]]
//! name = "db3"
//! group = "readers"
//! ```
//!
//! A host without a group runs the command line's workload. A group (or a host's own
//! `workload`/`profile`) with a workload file or profile takes none of the command line's
//! workload flags; one with only flags (`qd`, `rate`, …) changes the command line's workload.
//! Time, engine, targets and the other run settings stay the command line's.
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

/// A workload group's own workload: a file or profile and `oio run`'s workload flags, each
/// as it would be written on the command line (`bs = "8k"`, `qd = 16`, `rw = "randread"`).
/// Which flags exist is the command line's to say ([`Inventory::check_flags`]): a flag added
/// to `oio run` is a key here with no edit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkloadSpec {
    /// Workload file (TOML), relative to the inventory's directory.
    pub workload: Option<PathBuf>,
    /// Built-in profile.
    pub profile: Option<String>,
    /// The other keys, as workload flags (in the order the TOML reader gives them).
    pub flags: Vec<GroupFlag>,
}

/// One workload flag of a group: `read_pct = 70` is `--read-pct 70`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupFlag {
    /// The flag's long name (`read-pct`; `read_pct` and `read-pct` both name it).
    pub name: String,
    /// Its value as a word; None for `key = true` (a switch).
    pub value: Option<String>,
    /// Byte span of the value in the inventory (for line and column in messages).
    span: std::ops::Range<usize>,
    /// Line and column of the value, once the text is known.
    at: (usize, usize),
    /// Why it cannot be a flag's value.
    bad: Option<String>,
}

impl<'de> Deserialize<'de> for WorkloadSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(SpecVisitor)
    }
}

struct SpecVisitor;

/// The longest value a group's flag may have (a size mix of many buckets fits).
const MAX_VALUE: usize = 1024;

impl<'de> serde::de::Visitor<'de> for SpecVisitor {
    type Value = WorkloadSpec;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a workload group: workload, profile, or oio run's workload flags (qd = 16)")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<WorkloadSpec, A::Error> {
        let mut spec = WorkloadSpec::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "workload" => spec.workload = Some(map.next_value()?),
                "profile" => spec.profile = Some(map.next_value()?),
                _ => {
                    let v: toml::Spanned<toml::Value> = map.next_value()?;
                    let span = v.span();
                    let name = key.replace('_', "-");
                    let (value, mut bad) = match v.into_inner() {
                        toml::Value::String(s) => (Some(s), None),
                        toml::Value::Integer(i) => (Some(i.to_string()), None),
                        toml::Value::Float(x) => (Some(x.to_string()), None),
                        toml::Value::Boolean(true) => (None, None),
                        toml::Value::Boolean(false) => continue,
                        other => (None, Some(format!(
                            "'{key}': a {} where a workload flag's value was expected (a string, number or true)",
                            other.type_str()
                        ))),
                    };
                    if spec.flags.iter().any(|f| f.name == name) {
                        bad = Some(format!("'{key}' is given twice (--{name})"));
                    }
                    // No flag's value is long: a long one is refused here, by its length,
                    // before any parser echoes it whole.
                    if let Some(n) = value
                        .as_ref()
                        .map(|v| v.chars().count())
                        .filter(|&n| n > MAX_VALUE)
                    {
                        bad = Some(format!(
                            "'{key}' is {n} characters long; a workload flag's value is at most {MAX_VALUE}"
                        ));
                    }
                    // Refused by the inventory's reader, which knows the line.
                    spec.flags.push(GroupFlag {
                        name,
                        value,
                        span,
                        at: (0, 0),
                        bad,
                    });
                }
            }
        }
        Ok(spec)
    }
}

impl WorkloadSpec {
    /// True when it names a workload of its own (file, profile or access pattern), so the
    /// command line's workload flags do not apply.
    pub fn own_source(&self) -> bool {
        self.workload.is_some() || self.profile.is_some() || self.flag("rw").is_some()
    }

    /// True when it sets nothing.
    pub fn is_empty(&self) -> bool {
        self == &WorkloadSpec::default()
    }

    /// A flag it gives.
    pub fn flag(&self, name: &str) -> Option<&GroupFlag> {
        self.flags.iter().find(|f| f.name == name)
    }

    /// The command-line words it stands for (`--qd 16 --rw randread`).
    pub fn words(&self) -> Vec<String> {
        let mut w: Vec<String> = Vec::new();
        let source = [
            (
                "workload",
                self.workload.as_ref().map(|p| p.display().to_string()),
            ),
            ("profile", self.profile.clone()),
        ];
        for (k, v) in source {
            if let Some(v) = v {
                w.extend([format!("--{k}"), v]);
            }
        }
        for f in &self.flags {
            w.push(format!("--{}", f.name));
            w.extend(f.value.clone());
        }
        w
    }
}

/// One host.
#[derive(Clone, Debug, PartialEq, Deserialize)]
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
    /// Its workload group (a `[group.NAME]` table); none: the command line's workload.
    #[serde(default)]
    pub group: Option<String>,
    /// Its own workload file (a group of its own, named after the host).
    #[serde(default)]
    pub workload: Option<PathBuf>,
    /// Its own profile (a group of its own, named after the host).
    #[serde(default)]
    pub profile: Option<String>,
}

impl HostSpec {
    /// `plan` as this host runs it: its own targets and roles when the inventory gives some
    /// (they replace the plan's), and `{host}` in target and log paths replaced by its name.
    pub fn bind(&self, plan: &mut oio_engine::RunPlan) {
        if !self.targets.is_empty() || !self.roles.is_empty() {
            plan.bindings.clear();
            if !self.targets.is_empty() {
                plan.bindings.push(oio_engine::TargetBinding {
                    role: String::new(),
                    paths: self.targets.clone(),
                });
            }
            for (role, paths) in &self.roles {
                plan.bindings.push(oio_engine::TargetBinding {
                    role: role.clone(),
                    paths: paths.clone(),
                });
            }
        }
        let on_host = |path: &mut PathBuf| {
            let s = path.to_string_lossy();
            if s.contains("{host}") {
                *path = PathBuf::from(s.replace("{host}", &self.name));
            }
        };
        for b in &mut plan.bindings {
            b.paths.iter_mut().for_each(on_host);
        }
        plan.lat_log.iter_mut().for_each(on_host);
        plan.hdr_log.iter_mut().for_each(on_host);
    }
}

/// An inventory file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inventory {
    /// Launcher template for every host without its own.
    #[serde(default)]
    pub launcher: Option<String>,
    /// The hosts.
    #[serde(rename = "host", default)]
    pub hosts: Vec<HostSpec>,
    /// Workload groups by name.
    #[serde(rename = "group", default)]
    pub groups: BTreeMap<String, WorkloadSpec>,
    /// Where it came from, for messages (the file, or `--hosts`).
    #[serde(skip)]
    pub source: String,
}

/// Line and column (from 1) of byte `at` of `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
    (line, col)
}

/// The name of the group of hosts that run the command line's workload.
pub const COMMAND_LINE_GROUP: &str = "(command line)";

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
                group: None,
                workload: None,
                profile: None,
            })
            .collect();
        let inv = Inventory {
            launcher: launcher.map(str::to_string),
            hosts,
            groups: BTreeMap::new(),
            source: "--hosts".to_string(),
        };
        inv.check("--hosts")?;
        Ok(inv)
    }

    /// Reads an inventory file; errors name the file, line and column.
    pub fn from_file(path: &Path) -> Result<Inventory, InventoryError> {
        let text =
            oio_core::input::read_text(path, 16 << 20, "an inventory (TOML, at most 16 MiB)")
                .map_err(|e| InventoryError(e.to_string()))?;
        let mut inv = Self::parse(&text, &path.display().to_string())?;
        // Workload files are named relative to the inventory.
        let base = path.parent().unwrap_or(Path::new("."));
        let rel = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        for g in inv.groups.values_mut() {
            g.workload.as_mut().map(rel);
        }
        for h in &mut inv.hosts {
            h.workload.as_mut().map(rel);
        }
        Ok(inv)
    }

    /// True when some host runs a workload other than the command line's.
    pub fn has_groups(&self) -> bool {
        self.hosts
            .iter()
            .any(|h| h.group.is_some() || h.workload.is_some() || h.profile.is_some())
    }

    /// A host's workload group: its name and what it changes (an empty spec and
    /// [`COMMAND_LINE_GROUP`] for the command line's workload).
    pub fn group_of(&self, h: &HostSpec) -> (String, WorkloadSpec) {
        let mut spec = match &h.group {
            Some(g) => self.groups.get(g).cloned().unwrap_or_default(),
            None => WorkloadSpec::default(),
        };
        if h.workload.is_some() || h.profile.is_some() {
            spec.workload = h.workload.clone();
            spec.profile = h.profile.clone();
            spec.flags.retain(|f| f.name != "rw");
        }
        let name = match (&h.group, h.workload.is_some() || h.profile.is_some()) {
            (_, true) => h.name.clone(),
            (Some(g), false) => g.clone(),
            (None, false) => COMMAND_LINE_GROUP.to_string(),
        };
        (name, spec)
    }

    /// Parses inventory text; `name` is used in messages.
    pub fn parse(text: &str, name: &str) -> Result<Inventory, InventoryError> {
        let mut inv: Inventory = toml::from_str(text).map_err(|e| {
            let (line, col) = e.span().map_or((1, 1), |s| line_col(text, s.start));
            InventoryError(format!(
                "{name}:{line}:{col}: {}; expected an inventory: launcher = \"…\" and [[host]] tables with name, targets, roles, launcher, db, group, workload, profile, and [group.NAME] tables",
                e.message()
            ))
        })?;
        inv.check(name)?;
        inv.source = name.to_string();
        for (group, g) in &mut inv.groups {
            for f in &mut g.flags {
                f.at = line_col(text, f.span.start);
                if let Some(why) = &f.bad {
                    let (line, col) = f.at;
                    return Err(InventoryError(format!(
                        "{name}:{line}:{col}: group '{group}': {why}"
                    )));
                }
            }
        }
        Ok(inv)
    }

    /// Refuses a group key that is none of `flags`, the workload flags of the command that
    /// runs the groups (`oio run`'s: the command line owns them, so a flag it gains is a key
    /// here with no edit). Time, engine and targets stay the command line's.
    pub fn check_flags(&self, flags: &[String]) -> Result<(), InventoryError> {
        for (group, g) in &self.groups {
            for f in &g.flags {
                if !flags.contains(&f.name) {
                    let (line, col) = f.at;
                    return Err(InventoryError(format!(
                        "{}:{line}:{col}: group '{group}': '{}' is not a workload flag of oio run (a group changes the workload only; time, engine and targets stay the command line's); workload flags: {}",
                        self.source,
                        f.name,
                        flags.join(", ")
                    )));
                }
            }
        }
        Ok(())
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
            if let Some(g) = &h.group {
                if !self.groups.contains_key(g) {
                    let known: Vec<&str> = self.groups.keys().map(String::as_str).collect();
                    return Err(InventoryError(format!(
                        "{what}: host '{}' names group '{g}', which has no [group.{g}] table (groups: {})",
                        h.name,
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    )));
                }
            }
            if h.workload.is_some() && h.profile.is_some() {
                return Err(InventoryError(format!(
                    "{what}: host '{}' gives both workload and profile; give one",
                    h.name
                )));
            }
        }
        for (name, g) in &self.groups {
            if name == COMMAND_LINE_GROUP || name.is_empty() {
                return Err(InventoryError(format!(
                    "{what}: group name '{name}' is reserved"
                )));
            }
            if [
                g.workload.is_some(),
                g.profile.is_some(),
                g.flag("rw").is_some(),
            ]
            .iter()
            .filter(|x| **x)
            .count()
                > 1
            {
                return Err(InventoryError(format!(
                    "{what}: group '{name}' gives more than one of workload, profile, rw; give one"
                )));
            }
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
pub fn check_host_name(name: &str) -> Result<(), InventoryError> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-:@[]".contains(c));
    if ok {
        Ok(())
    } else {
        Err(InventoryError(format!(
            "host name '{}' is not usable: letters, digits and . _ - : @ [ ] only, not starting with '-'",
            name.escape_debug()
        )))
    }
}

/// A launcher template split into words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launcher(Vec<String>);

impl Launcher {
    /// Splits a template as a POSIX shell would (no expansion, no shell run).
    pub fn parse(template: &str) -> Result<Launcher, InventoryError> {
        let words = shell_words::split(template).map_err(|e| {
            InventoryError(format!("launcher '{template}': {e} (quote as in a shell)"))
        })?;
        if words.is_empty() {
            return Err(InventoryError(
                "launcher is empty; e.g. ssh {host} oio agent --stdio".into(),
            ));
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
    fn a_host_binds_its_own_targets_and_its_name() {
        let inv = Inventory::parse(
            r#"
[[host]]
name = "db1"
roles = { log = ["/logs/{host}.log"] }
[[host]]
name = "db2"
"#,
            "inv.toml",
        )
        .unwrap();
        let mut plan: oio_engine::RunPlan = serde_json::from_value(serde_json::json!({
            "workload": oio_core::profiles::profile("oltp-data").expect("built-in"),
            "bindings": [{ "role": "", "paths": ["/data/{host}/t.dat"] }],
            "target_options": { "write": true, "direct": false, "size": 1048576,
                "allow_overwrite": false, "destroy_data": false, "fill_seed": 0 },
            "engine": "null", "submit": "per_io", "time": 1000000000, "ramp": 0,
            "interval": 1000000000, "seed": 1, "latency_tracking": true, "io_limit": null,
            "verify": false, "track_order": false, "sim": null, "lat_log": null
        }))
        .unwrap();
        let mut two = plan.clone();
        inv.hosts[0].bind(&mut plan);
        assert_eq!(plan.bindings.len(), 1);
        assert_eq!(plan.bindings[0].role, "log");
        assert_eq!(plan.bindings[0].paths, [PathBuf::from("/logs/db1.log")]);
        inv.hosts[1].bind(&mut two);
        assert_eq!(two.bindings[0].paths, [PathBuf::from("/data/db2/t.dat")]);
    }

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
    fn hosts_take_the_workload_of_their_group_or_their_own() {
        let inv = Inventory::parse(
            r#"
[group.log]
workload = "log.toml"
qd = 1
[group.readers]
rw = "randread"
bs = "8k"
read_pct = 100
[[host]]
name = "a"
group = "log"
[[host]]
name = "b"
group = "readers"
[[host]]
name = "c"
profile = "oltp-data"
[[host]]
name = "d"
"#,
            "inv.toml",
        )
        .unwrap();
        assert!(inv.has_groups());
        let (g, s) = inv.group_of(&inv.hosts[0]);
        assert_eq!(g, "log");
        assert_eq!(s.words(), ["--workload", "log.toml", "--qd", "1"]);
        assert!(s.own_source());
        let (g, s) = inv.group_of(&inv.hosts[1]);
        assert_eq!(g, "readers");
        assert_eq!(
            s.words(),
            ["--bs", "8k", "--read-pct", "100", "--rw", "randread"]
        );
        let (g, s) = inv.group_of(&inv.hosts[2]);
        assert_eq!((g.as_str(), s.profile.as_deref()), ("c", Some("oltp-data")));
        let (g, s) = inv.group_of(&inv.hosts[3]);
        assert_eq!(g, COMMAND_LINE_GROUP);
        assert!(s.is_empty() && !s.own_source());
        let e = Inventory::parse("[[host]]\nname = \"a\"\ngroup = \"x\"\n", "i.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no [group.x] table"), "{e}");
        // Which keys are flags is the command line's to say; a key none of them is refused
        // naming the file, line and column of its value.
        let flags = ["qd".to_string(), "read-pct".to_string()];
        let inv =
            Inventory::parse("[group.x]\nqdd = 1\n[[host]]\nname = \"a\"\n", "i.toml").unwrap();
        let e = inv.check_flags(&flags).unwrap_err().to_string();
        assert!(e.starts_with("i.toml:2:7: group 'x': 'qdd'"), "{e}");
        let ok = "[group.x]\nread_pct = 70\nqd = 4\n[[host]]\nname = \"a\"\n";
        let inv = Inventory::parse(ok, "i.toml").unwrap();
        inv.check_flags(&flags).unwrap();
        assert_eq!(inv.groups["x"].words(), ["--qd", "4", "--read-pct", "70"]);
        // A value no flag takes, and one flag given under both spellings.
        for (bad, want) in [
            ("[group.x]\nqd = [1, 2]\n", "i.toml:2:"),
            ("[group.x]\nread_pct = 1\nread-pct = 2\n", "given twice"),
            (
                &format!("[group.x]\nbs = \"{}\"\n", "x".repeat(5000)),
                "i.toml:2:6: group 'x': 'bs' is 5000 characters long",
            ),
        ] {
            let e = Inventory::parse(&format!("{bad}[[host]]\nname = \"a\"\n"), "i.toml")
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
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
