//! Every example in README.md, run.
//!
//! The fenced `sh` blocks are read line by line and every command line must be listed in
//! [`EXAMPLES`] with what this test does with it: run it as written, run a stated
//! replacement (a placeholder such as `...` or a path on another machine), or skip it with
//! the reason. A README line not listed, or a listed line no longer in the README, fails the
//! test, so a new example cannot go unchecked. The lines run in README order in one scratch
//! directory (later examples use the files earlier ones wrote), in bash, with `oio` on PATH,
//! HOME in the scratch directory and `$PROFILE` set; each must exit 0.
//!
//! Measuring commands (`oio run`, `sweep`, `blend`, `record`) get short times so the whole
//! test stays within about 30 s: `--time 200ms --ramp 0s --size 8m` (replacing the README's
//! `--time` and `--size`; a simulated sweep still creates its default file), `--duration 2s`
//! for `record`, and `--resamples 200` for `compare` (its default 2000 bootstrap resamples
//! take about 6 s of CPU in a debug build). The `toml` blocks that are workloads are run
//! with `oio run -w` the same way.
//!
//! Skipped, and why: building or installing oio (`cargo run`, `cargo install`,
//! `scripts/test`); block devices (`/dev/nvme0n1`, `/dev/sdb`); TPC-C (a build takes about
//! 18 s per warehouse in a debug build, and its servers are PostgreSQL and MariaDB: all of it
//! is run by tests/tpcc.rs); remote hosts (`oio fleet`, and the inventory TOML: run over SSH
//! by tests/fleet.rs).

use crate::common::{missing, scratch};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// What the test does with one README command line.
enum Check {
    /// Run it as written (with the short-time overrides).
    AsIs,
    /// Run this instead (with the same overrides); the README's own words cannot run here.
    Instead(&'static str),
    /// Not run, for this reason.
    Skip(&'static str),
}
use Check::*;

const TPCC_SKIP: &str = "TPC-C: a build takes about 18 s per warehouse in a debug build; tests/tpcc.rs runs build, run and check on SQLite, PostgreSQL and MariaDB";
const SQLSERVER_SKIP: &str = "SQL Server: needs a TDS server built from sources brought to the machine first; scripts/test-sqlserver runs build, run, check and report against it (tests/sqlserver.rs)";
const FLEET_SKIP: &str = "remote hosts: tests/fleet.rs runs fleet check and run over SSH";

/// Every command line of README.md's `sh` blocks (trailing `# comment` removed), in order.
const EXAMPLES: &[(&str, Check)] = &[
    ("cargo run --release -- run", Skip("builds oio in release and runs 35 s on a 1 GiB file: the same `oio run` defaults are run below with short times")),
    ("scripts/test", Skip("the whole test suite, this test included")),
    ("cargo install --path crates/cli", Skip("builds and installs oio into ~/.cargo/bin")),
    ("oio --version", AsIs),
    ("source <(oio completions bash)", AsIs),
    ("oio completions bash > ~/.local/share/bash-completion/completions/oio", AsIs),
    ("oio completions zsh > ~/.zfunc/_oio", AsIs),
    ("oio completions fish > ~/.config/fish/completions/oio.fish", AsIs),
    ("oio completions powershell >> $PROFILE", AsIs),
    ("oio man | man -l -", AsIs),
    ("mkdir -p ~/.local/share/man/man1 && oio man > ~/.local/share/man/man1/oio.1", AsIs),
    ("oio profiles", AsIs),
    ("oio profiles tempdb > tempdb.toml", AsIs),
    ("oio run --profile tempdb --size 10G /mnt/san/oio.dat", Instead("oio run --profile tempdb --size 10G ./san.dat")),
    ("oio run -w tempdb.toml --qd 64 --time 2m /mnt/san/oio.dat", Instead("oio run -w tempdb.toml --qd 64 --time 2m ./san.dat")),
    ("oio run --rw randread --bs 4k --qd 32 --size 1G --time 30s ./t.dat", AsIs),
    ("oio run --rw randrw --read-pct 70 --bs 64k:68,8k:32 --qd 16 ./t.dat", AsIs),
    ("oio run --rw randrw --bs 8k --distribution zipf:1.2 ./t.dat", AsIs),
    ("oio run --rw write --bs 8k --qd 1 --fdatasync 1 ./t.dat", AsIs),
    ("oio run --rw randrw --bs 8k --lat-log run1 ./t.dat", AsIs),
    ("oio run --rw write --bs 8k --qd 1 --sync-writes o_dsync ./t.dat", AsIs),
    ("oio run --rw randwrite --bs 8k --fsync 64 --sync-interval 10ms ./t.dat", AsIs),
    ("oio run --rw randread --bs 8k --qd 1 --think-time 200us ./t.dat", AsIs),
    ("oio run --rw randwrite --bs 64k --pattern zero ./t.dat", AsIs),
    ("oio run --rw randrw --bs 8k --trim-pct 10 ./t.dat", AsIs),
    ("oio run --rw randrw --bs 8k --hdr-log run1.hlog ./t.dat", AsIs),
    ("oio run --rw read --bs 1m --qd 8 /dev/nvme0n1", Skip("a block device; tests/safety.rs and tests/signatures.rs use loop devices")),
    ("oio run -w oltp.toml --target log=/dev/sdb --target data=/dev/sdc,/dev/sdd", Skip("three block devices and a workload file with log and data roles")),
    ("oio run --json ... | jq .summary.total.iops", Instead("oio run --json --rw randread --bs 4k ./t.dat | jq -e .summary.total.iops")),
    ("oio run --rw randrw --read-pct 70 --bs 8k --rate 9000 --arrival poisson --burst 12000,2s,8s ./t.dat", AsIs),
    ("oio run --rw randwrite --bs 64k --compress-pct 50 --dedupe-pct 20 ./t.dat", AsIs),
    ("oio run --verify --rw randrw --bs 4k ./t.dat", AsIs),
    ("oio verify ./t.dat", AsIs),
    ("oio blend --streams 4 --bs 64k ./t.dat", AsIs),
    ("oio record sda --interval 1s --duration 10m -o sda.json", Instead("oio record $DISK --interval 1s --duration 10m -o sda.json")),
    ("oio characterize perfmon.csv --busy-queue 2 -o tempdb.toml", AsIs),
    ("oio export tempdb.toml --to fio", AsIs),
    ("oio import fio-result.json", AsIs),
    ("oio import seed002.icf -o tempdb.toml", AsIs),
    ("oio replay job.iolog ./t.dat --speed 2", Instead("printf 'fio version 3 iolog\\n0 /x add\\n10 /x read 0 4096\\n2000 /x write 8192 4096\\n' > job.iolog && oio replay job.iolog ./t.dat --speed 2")),
    ("oio sweep oltp-data --qd 1,2,4,8,16,32,64,128 ./t.dat", AsIs),
    ("oio sweep randread ./t.dat --latency-target p99=2ms --refine", AsIs),
    ("oio sweep randread --sim servers=8,service=1ms,dist=exp", AsIs),
    ("oio run --repeat 5 --out raid5 ... ; oio compare raid5/ raid10/", Instead("oio run --repeat 5 --out raid5 ./t.dat ; oio run --repeat 5 --out raid10 --qd 8 ./t.dat ; oio compare raid5/ raid10/")),
    ("oio rerun oio-results/run-20261121T140502Z-oltp-data.json", Instead("oio rerun \"$(ls oio-results/run-*.json | head -n 1)\"")),
    ("oio report oio-results/ -o report.html", AsIs),
    ("oio diagnose sda.json sweep.json tpcc-result.json", Instead("oio diagnose sda.json oio-results/sweep-*-oltp-data.json")),
    ("oio tpcc build --warehouses 4 ; oio tpcc run --workers 4 --time 5m ; oio tpcc check", Skip(TPCC_SKIP)),
    ("oio tpcc run --db postgres://user@127.0.0.1:5432/tpcc --workers 8", Skip(TPCC_SKIP)),
    ("oio tpcc run --db mysql://user:pw@127.0.0.1:3306/tpcc --mode server", Skip(TPCC_SKIP)),
    ("oio diagnose perfmon.csv --queue-limit 256", AsIs),
    ("oio diagnose sweep.json prod-characterization.json", Instead("oio characterize perfmon.csv --json > prod-characterization.json && oio diagnose oio-results/sweep-*-oltp-data.json prod-characterization.json")),
    ("oio diagnose oio-results/ tpcc-*.json --all", Instead("oio diagnose oio-results/ --all")),
    ("oio diagnose sda.json --json", AsIs),
    ("oio fleet check --hosts db1,db2,db3 /data/oio.dat --size 10G", Skip(FLEET_SKIP)),
    ("oio fleet run --hosts db1,db2,db3 --rw randread --bs 8k --qd 32 --time 60s /data/oio.dat --size 10G", Skip(FLEET_SKIP)),
    ("oio fleet run --inventory lab.toml -p oltp-data --time 5m", Skip(FLEET_SKIP)),
    ("oio tpcc run --workers 1,2,4,8 --time 2m", Skip(TPCC_SKIP)),
    ("oio tpcc run --workers 1,2,4 --repeat 3 --label sync-on", Skip("TPC-C: tests/tpcc.rs runs --workers 1,2 --repeat 2 --label on SQLite")),
    ("oio tpcc run --terminals 10/warehouse --workers 4 --time 10m", Skip(TPCC_SKIP)),
    ("oio tpcc study --db postgres://user@127.0.0.1:5432/tpcc --set sync:synchronous_commit=on --set async:synchronous_commit=off -n 4", Skip("TPC-C on a PostgreSQL server: tests/study.rs runs a study on a throwaway PostgreSQL, also with Ctrl-C")),
    ("oio tpcc study --db 'postgres://user@127.0.0.1:5432/tpcc_{label}' --schema plain= --schema hash=hash-order-line.sql -n 4", Skip("a PostgreSQL server and its databases: tests/study.rs runs a schema study on SQLite databases")),
    ("BBF_DIR=DIR BBF_MIRROR=DIR scripts/sqlserver-server", Skip(SQLSERVER_SKIP)),
    ("scripts/test-sqlserver", Skip(SQLSERVER_SKIP)),
    ("oio tpcc build --db sqlserver://babelfish_user:12345678@127.0.0.1:51433/tpcc --warehouses 1", Skip(SQLSERVER_SKIP)),
    ("oio tpcc run --db sqlserver://babelfish_user:12345678@127.0.0.1:51433/tpcc --mode server", Skip(SQLSERVER_SKIP)),
    ("oio sql run my-script.sql@3 other.sql@1 --db postgres://user@127.0.0.1:5432/app -n 8", Skip("your scripts on a PostgreSQL server: tests/sql.rs runs scripts on throwaway PostgreSQL and MariaDB servers and on SQLite")),
    ("oio sql run builtin:last-page-insert -n 1,2,4,8 --repeat 3", Instead("oio sql run builtin:last-page-insert -n 1,2 --ramp 0 --time 1s")),
    ("oio sql study --candidate plain=builtin:last-page-insert --candidate hash=builtin:last-page-insert-hash -n 8", Skip("the partitioned twin needs a server (SQLite has no partitions): tests/sql.rs runs this study on a throwaway PostgreSQL")),
    ("oio fleet sql run ledger.sql --hosts app1,app2 --db 'postgres://oio@{host}/oio' -n 8 --ramp 0 --time 2m", Skip("remote hosts with PostgreSQL: tests/fleet_sql.rs runs two hosts (local agents) on a throwaway PostgreSQL")),
    ("oio fleet sweep --hosts db1,db2,db3 --rw randread --bs 8k --time 30s --sweep-qd 1,4,16,64 /data/oio.dat --size 10G", Skip(FLEET_SKIP)),
    ("oio fleet scale --hosts db1,db2,db3,db4 --rw randread --bs 8k --time 30s /data/oio.dat --size 10G", Skip("four hosts: tests/fleet.rs runs a 1, 2, 4 ladder over sshd in namespaces, tests/fleet_hardening.rs one of local agents")),
    ("oio fleet tpcc scale --hosts db1,db2,db3,db4 --db 'postgres://oio@localhost/oio' -n 16 --time 2m", Skip("remote hosts: tests/fleet_hardening.rs runs a 1, 2, 3 TPC-C ladder of local agents on SQLite")),
    ("oio tpcc build --db postgres://oio@10.0.0.1/oio -W 10", Skip("a PostgreSQL server on another host; tests/fleet_tpcc.rs builds on two servers in network namespaces")),
    ("ssh db1 oio tpcc run --db postgres://oio@localhost/oio -n 16 --time 5m", Skip(FLEET_SKIP)),
    ("oio fleet tpcc run --hosts db1,db2,db3,db4 --db 'postgres://oio@localhost/oio' -n 16 --time 5m \\", Skip("remote hosts: tests/fleet_tpcc.rs runs fleet tpcc run over two PostgreSQL servers in network namespaces")),
    ("--baseline db1-tpcc.json", Skip("the continuation of the line above")),
    ("oio fleet install --hosts db1,db2,db3", Skip("remote hosts: tests/fleet.rs installs over SSH into network namespaces")),
    ("oio fleet run --hosts db1,db2,db3 --launcher 'ssh {host} ~/.local/bin/oio agent --stdio' ...", Skip(FLEET_SKIP)),
    ("oio fleet install --hosts pod-0,pod-1 --transport 'kubectl exec -i {host} --' --dest /tmp", Skip("Kubernetes pods: not available here (the README says kubectl was not tested)")),
    ("oio export oltp-data --to fio --target /data/fio.dat -o oltp.fio", AsIs),
    ("oio fleet fio --hosts db1,db2,10.0.0.3:8766 oltp.fio", Skip("fio servers on other hosts: tests/fleet.rs runs fleet fio against two fio --server on 127.0.0.1")),
];

/// The fenced blocks of a Markdown text: (language, first line number, lines).
fn fenced_blocks(md: &str) -> Vec<(String, usize, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, usize, Vec<String>)> = None;
    for (i, line) in md.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("```") {
            match open.take() {
                Some(b) => blocks.push(b),
                None => open = Some((rest.trim().to_string(), i + 2, Vec::new())),
            }
        } else if let Some(b) = open.as_mut() {
            b.2.push(line.to_string());
        }
    }
    blocks
}

/// A shell line without its trailing comment (`  # ...`); empty for comment lines.
fn command_of(line: &str) -> String {
    let l = line.trim();
    if l.starts_with('#') {
        return String::new();
    }
    let cut = l.find("  #").or_else(|| l.find(" # ")).unwrap_or(l.len());
    l[..cut].trim().to_string()
}

/// Replaces the value of `flag` in `seg`, or appends the flag.
fn set_flag(seg: &str, flag: &str, value: &str) -> String {
    let mut words: Vec<String> = seg.split(' ').map(str::to_string).collect();
    match words.iter().position(|w| w == flag) {
        Some(i) if i + 1 < words.len() => words[i + 1] = value.to_string(),
        _ => {
            words.push(flag.to_string());
            words.push(value.to_string());
        }
    }
    words.join(" ")
}

/// Short times and sizes for the measuring commands of a command line.
fn shorten(cmd: &str) -> String {
    cmd.split(" ; ")
        .map(|seq| {
            seq.split(" && ")
                .map(|part| {
                    let (head, pipe) = match part.find(" | ") {
                        Some(i) => (&part[..i], &part[i..]),
                        None => (part, ""),
                    };
                    let mut h = head.to_string();
                    if ["oio run ", "oio sweep ", "oio blend "]
                        .iter()
                        .any(|p| h.starts_with(p))
                    {
                        h = set_flag(&h, "--time", "200ms");
                        h = set_flag(&h, "--ramp", "0s");
                        h = set_flag(&h, "--size", "8m");
                    }
                    if h.starts_with("oio compare ") {
                        h = set_flag(&h, "--resamples", "200");
                    }
                    if h.starts_with("oio record ") {
                        h = set_flag(&h, "--duration", "2s");
                    }
                    format!("{h}{pipe}")
                })
                .collect::<Vec<_>>()
                .join(" && ")
        })
        .collect::<Vec<_>>()
        .join(" ; ")
}

/// A whole disk to record from, as `oio record` names it.
fn some_disk() -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir("/sys/block")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| {
            !["loop", "ram", "zram", "dm-", "md", "sr"]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .collect();
    names.sort();
    names.into_iter().next()
}

/// Runs `cmd` in bash in `dir`; the outcome and its output.
fn bash(dir: &Path, home: &Path, disk: &str, cmd: &str) -> (bool, String, String) {
    let bin = Path::new(env!("CARGO_BIN_EXE_oio")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-o", "pipefail", "-c", cmd])
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", home)
        .env("PROFILE", home.join("profile.ps1"))
        .env("DISK", disk)
        .env("NO_COLOR", "1")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .expect("bash runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_readme_example_runs() {
    let md = include_str!("../../../README.md");
    let blocks = fenced_blocks(md);
    let dir = scratch();
    let d = dir.path();
    let home = d.join("home");
    for sub in [
        ".local/share/bash-completion/completions",
        ".zfunc",
        ".config/fish/completions",
    ] {
        std::fs::create_dir_all(home.join(sub)).unwrap();
    }
    // Inputs the examples name: an English perfmon capture and seed 002's IOMeter file.
    // One disk, as in the example (several need --device).
    let perfmon: String =
        crate::inputs::perfmon_text(oio_telemetry::perfmon_locale::ENGLISH, ',', true)
            .lines()
            .map(|l| l.split(',').take(10).collect::<Vec<_>>().join(",") + "\r\n")
            .collect();
    assert!(perfmon.contains("PhysicalDisk(0 C:)") && !perfmon.contains("1 E:"));
    std::fs::write(d.join("perfmon.csv"), perfmon).unwrap();
    std::fs::write(d.join("seed002.icf"), crate::inputs::ICF).unwrap();
    let have_fio = crate::common::have("fio");
    if have_fio {
        let st = Command::new("fio")
            .current_dir(d)
            .args([
                "--name=readme",
                "--filename=fio.dat",
                "--size=8m",
                "--rw=randread",
                "--bs=4k",
                "--time_based",
                "--runtime=1",
                "--output-format=json",
                "--output=fio-result.json",
            ])
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
    }
    let disk = some_disk();

    // Every command line is listed, and every listed line is still in the README.
    let lines: Vec<(usize, String)> = blocks
        .iter()
        .filter(|b| b.0 == "sh")
        .flat_map(|b| {
            b.2.iter()
                .enumerate()
                .map(move |(i, l)| (b.1 + i, command_of(l)))
        })
        .filter(|(_, c)| !c.is_empty())
        .collect();
    for (n, c) in &lines {
        assert!(
            EXAMPLES.iter().any(|(e, _)| e == c),
            "README.md:{n}: {c:?} is not in EXAMPLES of crates/cli/tests/readme.rs: say how it is checked"
        );
    }
    for (e, _) in EXAMPLES {
        assert!(
            lines.iter().any(|(_, c)| c == e),
            "{e:?} is in EXAMPLES but no longer in README.md"
        );
    }

    let start = Instant::now();
    let (mut ran, mut skipped) = (0, 0);
    for (n, c) in &lines {
        let check = &EXAMPLES.iter().find(|(e, _)| e == c).unwrap().1;
        let cmd = match check {
            AsIs => c.as_str(),
            Instead(s) => s,
            Skip(why) => {
                eprintln!("README.md:{n}: skipped: {c}: {why}");
                skipped += 1;
                continue;
            }
        };
        if cmd.contains("fio-result.json") && !have_fio {
            missing("fio (scripts/test installs it), for README's `oio import fio-result.json`");
            continue;
        }
        if cmd.contains("man -l") && !crate::common::have("man") {
            missing("man (package man-db), for README's `oio man | man -l -`");
            continue;
        }
        if cmd.contains("$DISK") && disk.is_none() {
            missing("a disk in /sys/block, for README's `oio record`");
            continue;
        }
        let cmd = shorten(cmd);
        let t = Instant::now();
        let (ok, so, se) = bash(d, &home, disk.as_deref().unwrap_or(""), &cmd);
        eprintln!("README.md:{n}: {:.1} s: {cmd}", t.elapsed().as_secs_f64());
        assert!(ok, "README.md:{n}: `{cmd}` failed:\n{se}\n{so}");
        ran += 1;
        // What the comments beside some examples promise.
        if c == "oio --version" {
            assert!(
                so.starts_with("oio ") && so.contains(" (commit "),
                "README.md:{n}: {so}"
            );
        }
        if c == "oio profiles" {
            for p in [
                "oltp-data",
                "tempdb",
                "log",
                "backup",
                "checkdb",
                "dss-scan",
                "hot-pages",
                "checkpoint",
            ] {
                assert!(so.contains(p), "README.md:{n}: no profile {p} in {so}");
            }
        }
    }
    assert!(home.join(".zfunc/_oio").metadata().unwrap().len() > 0);
    assert!(d.join("run1_lat.1.log").exists() || d.join("run1_lat.0.log").exists());

    // The workload files in the README run as they are.
    let mut tomls = 0;
    for (lang, n, body) in &blocks {
        if lang != "toml" {
            continue;
        }
        let text = body.join("\n");
        if text.contains("launcher") || text.contains("[[host]]") {
            // A fleet inventory: it parses as one (running it needs hosts: {FLEET_SKIP}).
            if let Err(e) = oio_fleet::inventory::Inventory::parse(&text, &format!("README.md:{n}"))
            {
                panic!("README.md:{n}: the inventory does not parse: {e}");
            }
            eprintln!("README.md:{n}: parsed as a fleet inventory, not run: {FLEET_SKIP}");
            skipped += 1;
            continue;
        }
        let f = d.join(format!("readme-{n}.toml"));
        std::fs::write(&f, &text).unwrap();
        let cmd = shorten(&format!("oio run -w {} ./toml.dat", f.display()));
        let (ok, so, se) = bash(d, &home, "", &cmd);
        assert!(
            ok,
            "README.md:{n}: the workload file fails: `{cmd}`:\n{se}\n{so}"
        );
        tomls += 1;
    }
    assert!(tomls >= 2, "the README's workload files were not found");
    eprintln!(
        "README examples: {ran} command lines and {tomls} workload files run, {skipped} skipped, in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}
