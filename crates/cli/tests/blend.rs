use crate::common::{num, run_json, scratch, uses_io_uring};

#[test]
fn blended_sequential_streams_reach_the_target_out_of_order() {
    let _uring = uses_io_uring();
    let d = scratch();
    let v = run_json(
        d.path(),
        &[
            "blend",
            "--streams",
            "3",
            "--bs",
            "64k",
            "--time",
            "1s",
            "--ramp",
            "0",
            "--size",
            "64M",
            "b.dat",
        ],
    );
    assert_eq!(v["schema"], "oio.blend");
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 4, "three alone, then together");
    for p in &phases[..3] {
        assert!(
            num(p, "/sequential_pct") > 95.0,
            "a stream alone is sequential: {p}"
        );
        assert_eq!(p["streams"].as_array().unwrap().len(), 1);
    }
    let together = &phases[3];
    assert_eq!(together["streams"].as_array().unwrap().len(), 3);
    assert!(
        num(together, "/sequential_pct") < 60.0,
        "blended: {together}"
    );
    assert!(num(together, "/iops") > 0.0);
    // Each phase left a full result.
    for p in phases {
        assert!(std::path::Path::new(&d.path().join(p["result_file"].as_str().unwrap())).exists());
    }
}
