//! Parse throughput of the perfmon CSV and iostat text parsers on generated input.
//!
//! `cargo run --release -p oio-telemetry --example bench_parse [MB]` prints MB/s per parser;
//! the goal is at least 100 MB/s so days of counters parse in seconds.

use oio_telemetry::{iostat, perfmon, ParseOptions};
use std::fmt::Write as _;
use std::time::Instant;

fn perfmon_text(target: usize) -> String {
    let disks = ["0 C:", "1 D:", "2 T:", "3 L:"];
    let counters = [
        "Disk Reads/sec",
        "Disk Writes/sec",
        "Avg. Disk Bytes/Read",
        "Avg. Disk Bytes/Write",
        "Avg. Disk sec/Read",
        "Avg. Disk sec/Write",
        "Avg. Disk Queue Length",
        "% Idle Time",
    ];
    let mut s = String::from("\"(PDH-CSV 4.0) (UTC)(0)\"");
    for d in disks {
        for c in counters {
            let _ = write!(s, ",\"\\\\HOST\\PhysicalDisk({d})\\{c}\"");
        }
        let _ = write!(s, ",\"\\\\HOST\\Processor({d})\\% Processor Time\"");
    }
    s.push_str("\r\n");
    let mut k = 0u64;
    while s.len() < target {
        let t = k;
        let _ = write!(
            s,
            "\"01/02/2024 {:02}:{:02}:{:02}.000\"",
            t / 3600 % 24,
            t / 60 % 60,
            t % 60
        );
        for _ in 0..disks.len() {
            let _ = write!(
                s,
                ",\"{}.123456\",\"{}.5\",\"65536\",\"8192.25\",\"0.00123\",\"0.0045\",\"3.25\",\"42.5\",\"12.5\"",
                100 + k % 50,
                30 + k % 7
            );
        }
        s.push_str("\r\n");
        k += 1;
        if k.is_multiple_of(86_400) {
            break; // one day of 1 s samples per file; dates do not roll in this generator
        }
    }
    s
}

fn iostat_text(target: usize) -> String {
    let mut s = String::from("Linux 6.1.0 (host) \t01/02/2024 \t_x86_64_\t(8 CPU)\n\n");
    let mut k = 0u64;
    while s.len() < target {
        let _ = writeln!(
            s,
            "01/02/2024 {:02}:{:02}:{:02}",
            k / 3600 % 24,
            k / 60 % 60,
            k % 60
        );
        s.push_str("Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util\n");
        for d in ["sda", "sdb", "nvme0n1", "dm-0"] {
            let _ = writeln!(s, "{d:<12} {:>8}.00  26192.00     0.00   0.00    0.20    33.96 3317.00  53072.00     0.00   0.00    0.20    16.00    0.00      0.00     0.00   0.00    0.00     0.00    0.00    0.00    2.24  30.80", 7000 + k % 100);
        }
        s.push('\n');
        k += 1;
        if k.is_multiple_of(86_400) {
            break;
        }
    }
    s
}

fn main() {
    let mb: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let p = perfmon_text(mb << 20);
    let t = Instant::now();
    let o = perfmon::parse("bench.csv", &p).expect("perfmon parses");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "perfmon CSV: {:.1} MB in {:.3} s = {:.0} MB/s ({} intervals per disk)",
        p.len() as f64 / 1e6,
        secs,
        p.len() as f64 / 1e6 / secs,
        o.devices[0].intervals.len()
    );
    let i = iostat_text(mb << 20);
    let t = Instant::now();
    let o = iostat::parse_text("bench.txt", &i, &ParseOptions::default()).expect("iostat parses");
    let secs = t.elapsed().as_secs_f64();
    println!(
        "iostat -x text: {:.1} MB in {:.3} s = {:.0} MB/s ({} intervals per device)",
        i.len() as f64 / 1e6,
        secs,
        i.len() as f64 / 1e6 / secs,
        o.devices[0].intervals.len()
    );
}
