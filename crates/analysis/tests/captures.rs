//! A real capture kept as fixtures: fio ran a 70 % read random mix (reads 4k/50:64k/50,
//! writes 16k, iodepth 8) on a loop device while `oio record` and `iostat -x -t -y 1 6`
//! watched it. Characterizing either capture agrees with the other and with fio's report.

use oio_analysis::characterize::{characterize, Options};
use oio_telemetry::{parse_file, ParseOptions};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../telemetry/tests/fixtures/capture_loop0_fio_randrw70")
        .join(name)
}

#[test]
fn record_and_iostat_captures_agree_with_fio() {
    let fio: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("fio.json")).unwrap()).unwrap();
    let job = &fio["jobs"][0];
    let n = |p: &str| job.pointer(p).and_then(|v| v.as_f64()).unwrap();
    let fio_read_pct =
        n("/read/total_ios") * 100.0 / (n("/read/total_ios") + n("/write/total_ios"));
    let fio_rsize = n("/read/io_bytes") / n("/read/total_ios");
    let fio_wsize = n("/write/io_bytes") / n("/write/total_ios");

    let opts = Options {
        device: Some("loop0".into()),
        ..Options::default()
    };
    let rec = parse_file(&fixture("oio_record.json"), &ParseOptions::default()).unwrap();
    let ios = parse_file(
        &fixture("iostat_x_t_y_iso.txt"),
        &ParseOptions {
            keep_first_iostat_report: true,
            ..Default::default()
        },
    )
    .unwrap();
    let a = characterize(&rec, &opts).unwrap();
    let b = characterize(&ios, &opts).unwrap();
    for c in [&a, &b] {
        assert!(
            (c.read_pct - fio_read_pct).abs() <= 2.0,
            "{} vs fio {fio_read_pct}",
            c.read_pct
        );
        let rs = c.read.mean_bytes.unwrap();
        let ws = c.write.mean_bytes.unwrap();
        assert!(
            (rs - fio_rsize).abs() / fio_rsize <= 0.10,
            "{rs} vs {fio_rsize}"
        );
        assert!(
            (ws - fio_wsize).abs() / fio_wsize <= 0.10,
            "{ws} vs {fio_wsize}"
        );
        // Interval means of a 4k/64k mix fall in the 32k bucket: the stated limit of counters.
        assert_eq!(c.read.sizes[0].bytes, 32768);
        assert_eq!(c.write.sizes[0].bytes, 16384);
        assert!(
            c.outstanding.mean > 5.0 && c.outstanding.mean <= 8.5,
            "{:?}",
            c.outstanding
        );
    }
    assert!((a.read_pct - b.read_pct).abs() <= 1.0);
    assert!((a.outstanding.mean - b.outstanding.mean).abs() / b.outstanding.mean <= 0.10);
    assert_eq!(
        a.workload.streams[0].outstanding,
        b.workload.streams[0].outstanding
    );
}
