use crate::common::{num, oio, run_json, scratch, uses_io_uring};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

/// (offset, generation) records of a journal, in file order.
fn journal_records(path: &Path) -> Vec<(u64, u64)> {
    let data = std::fs::read(path).unwrap();
    let n = u32::from_le_bytes(data[16..20].try_into().unwrap()) as usize;
    data[20 + n..]
        .chunks_exact(16)
        .map(|r| {
            (
                u64::from_le_bytes(r[..8].try_into().unwrap()),
                u64::from_le_bytes(r[8..].try_into().unwrap()),
            )
        })
        .collect()
}

fn verify_json(dir: &Path, target: &str) -> (Option<i32>, serde_json::Value) {
    let out = oio()
        .current_dir(dir)
        .args(["verify", "--json", target])
        .output()
        .unwrap();
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).unwrap_or_default(),
    )
}

#[test]
fn a_verify_run_checks_what_it_reads_and_its_journal_agrees() {
    let _uring = uses_io_uring();
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "run",
            "--verify",
            "--rw",
            "randrw",
            "--bs",
            "4k:50,16k:50",
            "--qd",
            "8",
            "--workers",
            "2",
            "--time",
            "2s",
            "--ramp",
            "0",
            "--size",
            "8M",
            "--buffered",
            "v.dat",
        ],
    );
    assert!(
        num(&v, "/verify/blocks_checked") > 1000.0,
        "{}",
        v["verify"]
    );
    assert_eq!(num(&v, "/verify/mismatches"), 0.0);
    assert!(d.path().join("v.dat.oio-journal").exists());
    let (code, j) = verify_json(d.path(), "v.dat");
    assert_eq!(code, Some(0), "{j}");
    assert!(num(&j, "/blocks_checked") > 1000.0);
}

#[test]
fn verify_catches_a_block_corrupted_by_another_process() {
    let d = scratch();
    // Write the whole 8 MiB once, in order, so every block is journaled.
    run_json(
        d.path(),
        &[
            "run",
            "--verify",
            "--engine",
            "sync",
            "--rw",
            "write",
            "--bs",
            "4k",
            "--qd",
            "1",
            "--ios",
            "2048",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--size",
            "8M",
            "--buffered",
            "c.dat",
        ],
    );
    let (code, _) = verify_json(d.path(), "c.dat");
    assert_eq!(code, Some(0));
    // Another process scribbles 100 bytes into block 10.
    let st = std::process::Command::new("dd")
        .args([
            "if=/dev/urandom",
            "of=c.dat",
            "bs=100",
            "count=1",
            "seek=410",
            "conv=notrunc",
            "status=none",
        ])
        .current_dir(d.path())
        .status()
        .unwrap();
    assert!(st.success());
    let (code, j) = verify_json(d.path(), "c.dat");
    assert_eq!(code, Some(1), "{j}");
    assert_eq!(num(&j, "/mismatches"), 1.0);
    assert_eq!(j["findings"][0]["kind"], "wrong_data");
    assert_eq!(num(&j["findings"][0], "/offset"), 40960.0);
}

#[test]
fn verify_catches_corruption_while_it_runs() {
    let d = scratch();
    let target = d.path().join("live.dat");
    let bin = assert_cmd::cargo::cargo_bin("oio");
    let child = std::process::Command::new(bin)
        .current_dir(d.path())
        .args([
            "run",
            "--verify",
            "--engine",
            "sync",
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--qd",
            "4",
            "--time",
            "4s",
            "--ramp",
            "0",
            "--size",
            "4M",
            "--buffered",
            "--json",
            "live.dat",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // Corrupt one block every 50 ms for 2 s from this (other) process.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&target)
        .unwrap();
    for i in 0..40u64 {
        f.write_all_at(&[0xA5; 64], ((i * 97) % 1024) * 4096 + 1000)
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "mismatches make the run exit 1");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(num(&v, "/verify/mismatches") >= 1.0, "{}", v["verify"]);
    assert!(v["verify"]["by_kind"]["wrong_data"].as_u64().unwrap_or(0) >= 1);
}

#[test]
fn after_a_kill_verify_tells_lost_writes_from_torn_ones() {
    let d = scratch();
    // A first pass: every block holds an older generation; keep that image.
    run_json(
        d.path(),
        &[
            "run",
            "--verify",
            "--engine",
            "sync",
            "--rw",
            "write",
            "--bs",
            "4k",
            "--qd",
            "1",
            "--ios",
            "1024",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--size",
            "4M",
            "--buffered",
            "k.dat",
        ],
    );
    let old = std::fs::read(d.path().join("k.dat")).unwrap();
    // A second run, killed with SIGKILL in the middle.
    let bin = assert_cmd::cargo::cargo_bin("oio");
    let mut child = std::process::Command::new(bin)
        .current_dir(d.path())
        .args([
            "run",
            "--verify",
            "--engine",
            "sync",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--qd",
            "4",
            "--time",
            "60s",
            "--ramp",
            "0",
            "--buffered",
            "--json",
            "k.dat",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    child.kill().unwrap();
    child.wait().unwrap();
    // Everything the journal says was acknowledged is there.
    let (code, j) = verify_json(d.path(), "k.dat");
    assert_eq!(code, Some(0), "{j}");
    let recs = journal_records(&d.path().join("k.dat.oio-journal"));
    assert!(
        recs.len() > 100,
        "the killed run journaled its writes: {}",
        recs.len()
    );
    // Simulate a write the device dropped (old content back) and one torn in half.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(d.path().join("k.dat"))
        .unwrap();
    let mut offsets: Vec<u64> = recs.iter().map(|r| r.0).collect();
    offsets.sort_unstable();
    offsets.dedup();
    let (lost, torn) = (offsets[0], offsets[offsets.len() - 1]);
    f.write_all_at(&old[lost as usize..lost as usize + 4096], lost)
        .unwrap();
    f.write_all_at(
        &old[torn as usize + 2048..torn as usize + 4096],
        torn + 2048,
    )
    .unwrap();
    let (code, j) = verify_json(d.path(), "k.dat");
    assert_eq!(code, Some(1), "{j}");
    let kinds: Vec<(u64, String)> = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["offset"].as_u64().unwrap(),
                f["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(kinds.contains(&(lost, "stale".to_string())), "{kinds:?}");
    assert!(kinds.contains(&(torn, "torn".to_string())), "{kinds:?}");
    assert_eq!(kinds.len(), 2, "{kinds:?}");
}
