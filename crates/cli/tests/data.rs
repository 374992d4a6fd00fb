use crate::common::{num, run_json, scratch};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writes the whole 16 MiB file once, sequentially, with the given data options.
fn write_once(dir: &Path, name: &str, extra: &[&str]) -> Vec<u8> {
    let mut args = vec![
        "run",
        "--engine",
        "sync",
        "--rw",
        "write",
        "--bs",
        "64k",
        "--qd",
        "1",
        "--ios",
        "256",
        "--time",
        "60s",
        "--ramp",
        "0",
        "--size",
        "16M",
        "--seed",
        "9",
        "--buffered",
    ];
    args.extend_from_slice(extra);
    args.push(name);
    let v = run_json(dir, &args);
    assert_eq!(
        num(&v, "/summary/write/bytes"),
        (16 << 20) as f64,
        "the file is covered exactly once"
    );
    std::fs::read(dir.join(name)).unwrap()
}

/// Compressed size / original size with gzip (a real compressor, always on Debian).
fn gzip_ratio(data: &[u8]) -> f64 {
    let mut child = Command::new("gzip")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip");
    let mut stdin = child.stdin.take().unwrap();
    let input = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    out.stdout.len() as f64 / data.len() as f64
}

fn duplicate_share(data: &[u8]) -> f64 {
    let blocks: Vec<&[u8]> = data.chunks(4096).collect();
    let unique: HashSet<&[u8]> = blocks.iter().copied().collect();
    1.0 - unique.len() as f64 / blocks.len() as f64
}

#[test]
fn writes_are_incompressible_and_unique_by_default() {
    let d = scratch();
    let data = write_once(d.path(), "plain.dat", &[]);
    let r = gzip_ratio(&data);
    assert!(r > 0.99, "gzip ratio {r}");
    assert_eq!(duplicate_share(&data), 0.0);
}

#[test]
fn compress_pct_gives_that_compressibility() {
    let d = scratch();
    let data = write_once(d.path(), "c60.dat", &["--compress-pct", "60"]);
    let r = gzip_ratio(&data);
    assert!(
        (r - 0.40).abs() < 0.03,
        "60 % compressible should gzip to about 40 %: {r}"
    );
    assert_eq!(duplicate_share(&data), 0.0);
}

#[test]
fn dedupe_pct_gives_that_share_of_duplicate_blocks() {
    let d = scratch();
    let data = write_once(d.path(), "d30.dat", &["--dedupe-pct", "30"]);
    let dup = duplicate_share(&data);
    assert!((dup - 0.30).abs() < 0.02, "duplicate 4 KiB blocks: {dup}");
    let r = gzip_ratio(&data);
    assert!(r > 0.95, "deduplication is not compression: {r}");
}
