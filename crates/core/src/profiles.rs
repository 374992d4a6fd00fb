//! Built-in workload profiles, shipped as TOML files in `crates/core/profiles/`.
//!
//! They double as examples of the workload format: `oio profiles NAME` prints one.

use crate::workload::Workload;

/// Name and TOML text of every built-in profile, the default first.
pub const PROFILES: &[(&str, &str)] = &[
    ("oltp-data", include_str!("../profiles/oltp-data.toml")),
    ("tempdb", include_str!("../profiles/tempdb.toml")),
    ("log", include_str!("../profiles/log.toml")),
    ("backup", include_str!("../profiles/backup.toml")),
    ("checkdb", include_str!("../profiles/checkdb.toml")),
    ("dss-scan", include_str!("../profiles/dss-scan.toml")),
    ("hot-pages", include_str!("../profiles/hot-pages.toml")),
    ("checkpoint", include_str!("../profiles/checkpoint.toml")),
    ("log-writer", include_str!("../profiles/log-writer.toml")),
];

/// The profile `oio run` uses when given none.
pub const DEFAULT_PROFILE: &str = "oltp-data";

/// The TOML text of a built-in profile.
pub fn profile_text(name: &str) -> Option<&'static str> {
    PROFILES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// A built-in profile, parsed.
pub fn profile(name: &str) -> Option<Workload> {
    profile_text(name).map(|t| {
        Workload::from_toml(t, &format!("profile {name}")).expect("built-in profiles are valid")
    })
}

/// Names of the built-in profiles.
pub fn names() -> impl Iterator<Item = &'static str> {
    PROFILES.iter().map(|(n, _)| *n)
}

#[test]
fn every_profile_parses_and_is_named_after_its_file() {
    for (name, _) in PROFILES {
        let w = profile(name).unwrap();
        assert_eq!(w.name, *name);
        assert!(!w.description.is_empty());
    }
}

#[test]
fn seed_002_specs_are_exact() {
    let t = profile("tempdb").unwrap();
    let s = &t.streams[0];
    assert_eq!(s.read_pct.0, 2.0);
    assert_eq!(s.read_mix().unwrap().to_string(), "64k:68,8k:32");
    assert_eq!(s.write_mix().unwrap().to_string(), "64k:83,512:17");
    assert_eq!(s.outstanding, Some(600));
    let l = profile("log").unwrap();
    let s = &l.streams[0];
    assert_eq!(s.read_pct.0, 36.0);
    assert_eq!(s.read_mix().unwrap().to_string(), "128k:87,1m:13");
    assert_eq!(s.write_mix().unwrap().to_string(), "64k:81,16k:19");
    assert_eq!(s.outstanding, Some(4));
}

#[test]
fn log_writer_is_sequential_small_synchronous_and_qd_1() {
    let w = profile("log-writer").unwrap();
    let s = &w.streams[0];
    assert_eq!((s.read_pct.0, s.random_pct.0), (0.0, 0.0));
    assert_eq!(s.outstanding, Some(1));
    assert_eq!(s.sync_writes, Some(crate::workload::SyncWrites::ODsync));
    let m = s.write_mix().unwrap();
    assert!(m.shares().iter().all(|x| (4096..=65536).contains(&x.bytes)));
}
