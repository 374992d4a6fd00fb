use crate::common::{is_root, missing, num, oio, scratch};
use serde_json::Value;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A short write run (sync engine, buffered: no io_uring, any filesystem).
pub(crate) fn write_run(dir: &Path, extra: &[&str], target: &str) -> Output {
    oio()
        .current_dir(dir)
        .args([
            "run",
            "--engine",
            "sync",
            "--buffered",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--qd",
            "2",
            "--time",
            "150ms",
            "--ramp",
            "0",
        ])
        .args(extra)
        .arg(target)
        .output()
        .unwrap()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Names in `dir` containing `part`.
fn names_with(dir: &Path, part: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(part))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("oio"))
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub(crate) fn signal(child: &Child, sig: &str) {
    let st = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// Waits (at most 60 s) until `cond` holds.
pub(crate) fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "waited 60 s for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Run result files (not probes or temporaries) under `dir`, recursively.
fn result_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(result_files(&p));
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_symlink_or_a_foreign_file_at_the_old_temporary_names_is_never_touched() {
    let d = scratch();
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"root's precious data").unwrap();
    std::os::unix::fs::symlink(&victim, d.path().join("t.dat.oio-tmp")).unwrap();
    std::fs::write(d.path().join("u.dat.oio-tmp"), b"someone's file").unwrap();
    for t in ["t.dat", "u.dat"] {
        let o = write_run(d.path(), &["--size", "4M"], t);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(std::fs::metadata(d.path().join(t)).unwrap().len(), 4 << 20);
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"root's precious data");
    assert_eq!(
        std::fs::read_link(d.path().join("t.dat.oio-tmp")).unwrap(),
        victim
    );
    assert_eq!(
        std::fs::read(d.path().join("u.dat.oio-tmp")).unwrap(),
        b"someone's file"
    );
    // oio's own temporary files are gone.
    assert!(names_with(d.path(), ".oio-tmp-").is_empty());
}

#[test]
fn a_symlink_or_a_foreign_file_at_the_journal_name_is_never_touched() {
    let d = scratch();
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"root's precious data").unwrap();
    std::os::unix::fs::symlink(&victim, d.path().join("t.dat.oio-journal")).unwrap();
    std::fs::write(d.path().join("u.dat.oio-journal"), b"someone's file").unwrap();
    for (t, why) in [
        ("t.dat", "symbolic link"),
        ("u.dat", "does not start with oio's journal header"),
    ] {
        let o = write_run(d.path(), &["--size", "4M", "--verify"], t);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains(&format!("{t}.oio-journal")) && e.contains(why),
            "{e}"
        );
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"root's precious data");
    assert_eq!(
        std::fs::read_link(d.path().join("t.dat.oio-journal")).unwrap(),
        victim
    );
    assert_eq!(
        std::fs::read(d.path().join("u.dat.oio-journal")).unwrap(),
        b"someone's file"
    );
    // oio's own journal is replaced by the next --verify run.
    for _ in 0..2 {
        let o = write_run(d.path(), &["--size", "4M", "--verify"], "v.dat");
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert!(names_with(d.path(), ".oio-tmp-").is_empty());
}

#[test]
fn cp_over_an_oio_file_makes_it_no_longer_oios() {
    let d = scratch();
    let o = write_run(d.path(), &["--size", "4M"], "t.dat");
    assert!(o.status.success(), "{}", stderr(&o));
    // A second write run on oio's own file needs no flag.
    let o = write_run(d.path(), &[], "t.dat");
    assert!(o.status.success(), "{}", stderr(&o));

    // Same size: only the modification time tells.
    let precious = d.path().join("precious.db");
    std::fs::write(&precious, vec![0x5Au8; 4 << 20]).unwrap();
    let st = Command::new("cp")
        .arg(&precious)
        .arg(d.path().join("t.dat"))
        .status()
        .unwrap();
    assert!(st.success());
    let o = write_run(d.path(), &[], "t.dat");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("t.dat")
            && e.contains("changed since an oio run last closed it")
            && e.contains("modified at")
            && e.contains("killed")
            && e.contains("--allow-overwrite"),
        "{e}"
    );
    assert!(!e.contains("size is"), "the size did not change: {e}");
    assert_eq!(
        std::fs::read(d.path().join("t.dat")).unwrap(),
        vec![0x5Au8; 4 << 20]
    );
    // Reading never needs a flag.
    let o = oio()
        .current_dir(d.path())
        .args([
            "run",
            "--engine",
            "sync",
            "--buffered",
            "--rw",
            "randread",
            "--time",
            "100ms",
            "--ramp",
            "0",
            "t.dat",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    // Another size: named too.
    std::fs::write(&precious, vec![0x5Au8; 5 << 20]).unwrap();
    let st = Command::new("cp")
        .arg(&precious)
        .arg(d.path().join("t.dat"))
        .status()
        .unwrap();
    assert!(st.success());
    let o = write_run(d.path(), &[], "t.dat");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("its size is 5242880 bytes, oio left 4194304 bytes"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(d.path().join("t.dat")).unwrap(),
        vec![0x5Au8; 5 << 20]
    );

    // --allow-overwrite lets oio write it; the file is then recorded as oio's again.
    let o = write_run(d.path(), &["--allow-overwrite"], "t.dat");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = write_run(d.path(), &[], "t.dat");
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn an_oio_mark_copied_to_another_inode_is_refused() {
    let d = scratch();
    let o = write_run(d.path(), &["--size", "4M"], "t.dat");
    assert!(o.status.success(), "{}", stderr(&o));
    let own = d.path().join("t.dat");
    let mut mark = vec![0u8; 256];
    let n = rustix::fs::getxattr(&own, "user.oio.created", &mut mark[..]).unwrap();
    mark.truncate(n);

    // A forgery as good as it gets: same size, same modification time, the mark copied.
    let forged = d.path().join("forged.db");
    std::fs::write(&forged, vec![0x33u8; 4 << 20]).unwrap();
    let f = std::fs::File::options().write(true).open(&forged).unwrap();
    f.set_modified(std::fs::metadata(&own).unwrap().modified().unwrap())
        .unwrap();
    rustix::fs::fsetxattr(
        &f,
        "user.oio.created",
        &mark,
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    drop(f);
    // And `cp -a`, which copies the mark and the times.
    let st = Command::new("cp")
        .arg("-a")
        .arg(&own)
        .arg(d.path().join("copy.dat"))
        .status()
        .unwrap();
    assert!(st.success());

    for (name, content) in [
        ("forged.db", Some(vec![0x33u8; 4 << 20])),
        ("copy.dat", None),
    ] {
        let before = std::fs::read(d.path().join(name)).unwrap();
        let o = write_run(d.path(), &[], name);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(
            e.contains("the mark names inode") && e.contains("copied from another file"),
            "{e}"
        );
        assert!(!e.contains("size is") && !e.contains("modified at"), "{e}");
        assert_eq!(std::fs::read(d.path().join(name)).unwrap(), before);
        if let Some(c) = content {
            assert_eq!(before, c);
        }
    }
}

#[test]
fn report_output_onto_a_symlink_replaces_the_link_not_its_target() {
    let d = scratch();
    let o = oio()
        .current_dir(d.path())
        .args([
            "run", "--engine", "null", "--rw", "randread", "--time", "100ms", "--ramp", "0",
            "--size", "4M", "t.dat",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let victim = d.path().join("victim");
    std::fs::write(&victim, b"root's precious data").unwrap();
    std::os::unix::fs::symlink(&victim, d.path().join("report.html")).unwrap();
    let o = oio()
        .current_dir(d.path())
        .args(["report", "oio-results", "-o", "report.html"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), b"root's precious data");
    let md = std::fs::symlink_metadata(d.path().join("report.html")).unwrap();
    assert!(md.is_file(), "the link itself was replaced by the report");
    assert!(std::fs::read_to_string(d.path().join("report.html"))
        .unwrap()
        .contains("<html"));
}

/// Runs a long null-engine run, stops it with `sig` once it runs, and checks the exit code
/// and the partial result.
fn stop_run_with(sig: &str, code: i32) {
    let d = scratch();
    let child = spawn(
        d.path(),
        &[
            "run", "--engine", "null", "--rw", "randread", "--time", "60s", "--ramp", "0",
            "--size", "4M", "--json", "t.dat",
        ],
    );
    // The file exists once the fill is done, after the handler was installed.
    wait_until("the target", || d.path().join("t.dat").exists());
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, sig);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("a JSON result on stdout");
    assert_eq!(v["partial"], true);
    assert_eq!(v["stop_reason"], "interrupted");
    assert!(num(&v, "/duration_s") < 30.0);
    let files = result_files(&d.path().join("oio-results"));
    assert_eq!(files.len(), 1, "{files:?}");
    let saved: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(saved["partial"], true);
}

#[test]
fn sigterm_mid_run_writes_the_partial_result_and_exits_143() {
    stop_run_with("TERM", 143);
}

#[test]
fn sighup_mid_run_writes_the_partial_result_and_exits_129() {
    stop_run_with("HUP", 129);
}

/// Starts `args`, sends SIGINT once `ready` result files exist, expects 130; returns the
/// output and the result files.
fn interrupt_after_results(args: &[&str], ready: usize) -> (Output, Vec<PathBuf>) {
    let d = scratch();
    let child = spawn(d.path(), args);
    let results = d.path().join("oio-results");
    wait_until("the first results", || {
        result_files(&results).len() >= ready
    });
    signal(&child, "INT");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    (out, result_files(&results))
}

#[test]
fn ctrl_c_stops_repeat_sweep_and_blend_with_130_and_keeps_finished_results() {
    let (_, files) = interrupt_after_results(
        &[
            "run", "--engine", "null", "--rw", "randread", "--time", "1s", "--ramp", "0", "--size",
            "4M", "--repeat", "3", "t.dat",
        ],
        1,
    );
    // The finished run and the interrupted one's partial result.
    assert_eq!(files.len(), 2, "{files:?}");

    let (_, files) = interrupt_after_results(
        &[
            "sweep", "randread", "t.dat", "--size", "4M", "--engine", "null", "--qd", "1,2,4",
            "--time", "1s", "--ramp", "0",
        ],
        1,
    );
    assert!(!files.is_empty() && files.len() < 3, "{files:?}");
    assert!(
        files.iter().all(|f| !f
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("sweep-")),
        "no sweep document from an interrupted sweep: {files:?}"
    );

    let (out, files) = interrupt_after_results(
        &[
            "blend",
            "t.dat",
            "--size",
            "4M",
            "--engine",
            "null",
            "--streams",
            "3",
            "--time",
            "1s",
            "--ramp",
            "0",
            "--json",
        ],
        1,
    );
    assert!(files.len() < 4, "{files:?}");
    assert!(
        out.stdout.is_empty(),
        "no blend drawn from interrupted phases: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
}

#[test]
fn a_signal_during_the_fill_leaves_no_temporary_file() {
    let d = scratch();
    let child = spawn(
        d.path(),
        &[
            "run", "--engine", "null", "--rw", "randread", "--time", "1s", "--size", "512M",
            "t.dat",
        ],
    );
    wait_until("the temporary file", || {
        !names_with(d.path(), "t.dat.oio-tmp-").is_empty()
    });
    signal(&child, "TERM");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("stopped while filling"),
        "{}",
        stderr(&out)
    );
    assert!(!d.path().join("t.dat").exists());
    assert!(
        names_with(d.path(), "oio-tmp").is_empty(),
        "{:?}",
        names_with(d.path(), "")
    );
}

/// `oio run` of 60 s that must fail at once because of `out`.
fn run_must_fail_early(dir: &Path, out: &Path) -> String {
    let start = Instant::now();
    let o = oio()
        .current_dir(dir)
        .args([
            "run", "--engine", "null", "--rw", "randread", "--time", "60s", "--ramp", "0",
            "--size", "4M", "--out",
        ])
        .arg(out)
        .arg("t.dat")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(start.elapsed() < Duration::from_secs(20));
    assert!(
        !dir.join("t.dat").exists(),
        "failed before creating the target"
    );
    let e = stderr(&o);
    assert!(
        e.contains(&out.display().to_string()) && e.contains("--out"),
        "{e}"
    );
    e
}

#[test]
fn an_unusable_results_directory_fails_before_the_run() {
    let d = scratch();
    // A path through a regular file cannot be created (works without root too).
    std::fs::write(d.path().join("afile"), b"x").unwrap();
    run_must_fail_early(d.path(), &d.path().join("afile/results"));

    if !is_root() {
        missing("immutable and full results directories: needs root (chattr +i, mount)");
        return;
    }
    // Immutable (root's permissions do not stop root; the immutable flag does).
    let imm = d.path().join("immutable");
    std::fs::create_dir(&imm).unwrap();
    if !Command::new("chattr")
        .arg("+i")
        .arg(&imm)
        .status()
        .is_ok_and(|s| s.success())
    {
        missing("chattr +i (e2fsprogs) on the scratch filesystem");
        return;
    }
    struct Mutable<'a>(&'a Path);
    impl Drop for Mutable<'_> {
        fn drop(&mut self) {
            let _ = Command::new("chattr").arg("-i").arg(self.0).status();
        }
    }
    let _m = Mutable(&imm);
    run_must_fail_early(d.path(), &imm);

    // Full: a tiny tmpfs filled up.
    let full = d.path().join("full");
    std::fs::create_dir(&full).unwrap();
    if !Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&full)
        .status()
        .is_ok_and(|s| s.success())
    {
        missing("mounting a tmpfs");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _u = Unmount(&full);
    let _ = std::fs::write(full.join("filler"), vec![1u8; 64 << 10]);
    let e = run_must_fail_early(d.path(), &full);
    assert!(e.contains("No space left"), "{e}");
}

#[test]
fn result_files_honour_the_umask() {
    let d = scratch();
    for (umask, mode) in [("022", 0o644), ("077", 0o600)] {
        let out = d.path().join(format!("r{umask}"));
        let st = Command::new("sh")
            .current_dir(d.path())
            .env("NO_COLOR", "1")
            .arg("-c")
            .arg(format!(
                "umask {umask} && exec \"$0\" run --engine null --rw randread --time 100ms --ramp 0 --size 4M --out {} t.dat >/dev/null",
                out.display()
            ))
            .arg(assert_cmd::cargo::cargo_bin("oio"))
            .status()
            .unwrap();
        assert!(st.success());
        let files = result_files(&out);
        assert_eq!(files.len(), 1);
        assert_eq!(
            std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777,
            mode,
            "umask {umask}"
        );
    }
    // Files named with -o too.
    let st = Command::new("sh")
        .current_dir(d.path())
        .arg("-c")
        .arg("umask 022 && exec \"$0\" report r022 -o report.html >/dev/null 2>&1")
        .arg(assert_cmd::cargo::cargo_bin("oio"))
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(
        std::fs::metadata(d.path().join("report.html"))
            .unwrap()
            .mode()
            & 0o777,
        0o644
    );
}

#[test]
fn two_runs_creating_one_new_file_never_leave_a_temporary_file_or_a_rename_error() {
    let d = scratch();
    let args = [
        "run",
        "--engine",
        "sync",
        "--buffered",
        "--rw",
        "randwrite",
        "--bs",
        "4k",
        "--time",
        "200ms",
        "--ramp",
        "0",
        "--size",
        "32M",
        "t.dat",
    ];
    let (a, b) = (spawn(d.path(), &args), spawn(d.path(), &args));
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    assert!(
        outs.iter().any(|o| o.status.success()),
        "{}",
        stderr(&outs[0])
    );
    // A loser finds the winner's file held by the winner's run (issue 22 item 3: it used to
    // find it changed and blame "someone else's data"); one that comes after the winner's
    // run ended uses the file, which is oio's.
    for o in &outs {
        if !o.status.success() {
            let e = stderr(o);
            assert_eq!(o.status.code(), Some(2), "{e}");
            assert!(
                e.contains("t.dat is in use by oio, pid") && e.contains("(writing to it)"),
                "{e}"
            );
            assert!(!e.contains("someone else"), "{e}");
        }
    }
    assert!(
        names_with(d.path(), "oio-tmp").is_empty(),
        "{:?}",
        names_with(d.path(), "")
    );
    assert_eq!(
        std::fs::metadata(d.path().join("t.dat")).unwrap().len(),
        32 << 20
    );
}

#[test]
fn a_result_that_cannot_be_saved_where_asked_is_saved_elsewhere_and_said_so() {
    if !is_root() {
        missing("a results directory made immutable mid-run: needs root (chattr +i)");
        return;
    }
    let d = scratch();
    let out = d.path().join("results");
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let child = Command::new(assert_cmd::cargo::cargo_bin("oio"))
        .current_dir(d.path())
        .env("NO_COLOR", "1")
        .env("TMPDIR", &tmp)
        .args([
            "run", "--engine", "null", "--rw", "randread", "--time", "1500ms", "--ramp", "0",
            "--size", "4M", "--json", "--out", "results", "t.dat",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The destination was checked before the fill; now it breaks.
    wait_until("the target", || d.path().join("t.dat").exists());
    if !Command::new("chattr")
        .arg("+i")
        .arg(&out)
        .status()
        .is_ok_and(|s| s.success())
    {
        let _ = child.wait_with_output();
        missing("chattr +i (e2fsprogs) on the scratch filesystem");
        return;
    }
    let o = child.wait_with_output().unwrap();
    let _ = Command::new("chattr").arg("-i").arg(&out).status();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let saved = result_files(&tmp);
    assert_eq!(saved.len(), 1, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("could not save the result in 'results'")
            && e.contains(&saved[0].display().to_string()),
        "{e}"
    );
    // --json still printed it, and it is the saved one.
    let printed: Value = serde_json::from_slice(&o.stdout).unwrap();
    let kept: Value = serde_json::from_slice(&std::fs::read(&saved[0]).unwrap()).unwrap();
    assert_eq!(printed, kept);
    assert!(result_files(&out).is_empty());
}

/// A results directory with links back to itself and out to /etc (issue 22: `a -> .` and
/// `b -> .` ran report, compare and diagnose until killed; one `self -> .` counted a run 41
/// times): every command ends, reads the run once, and says which links it did not follow.
#[test]
fn looping_links_in_a_results_directory_end_and_count_each_run_once() {
    let d = scratch();
    let res = d.path().join("res");
    let out = oio()
        .current_dir(d.path())
        .args([
            "run", "--engine", "null", "--rw", "randread", "--time", "200ms", "--ramp", "0s",
        ])
        .args(["--size", "1M", "-q", "--out", "res", "t.dat"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, to) in [("a", "."), ("b", "."), ("etc", "/etc")] {
        std::os::unix::fs::symlink(to, res.join(name)).unwrap();
    }
    std::fs::write(res.join("job.fio"), "[global]\nrw=randread\n[j]\n").unwrap();
    let runs = |args: &[&str]| {
        let o = oio()
            .current_dir(d.path())
            .args(args)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{args:?}: {err}");
        assert!(
            err.contains("a link to a directory, not followed") && err.contains("etc"),
            "{args:?}: {err}"
        );
        (String::from_utf8_lossy(&o.stdout).into_owned(), err)
    };
    let (_, err) = runs(&["report", "res", "-o", "r.html"]);
    assert!(err.contains("job.fio"), "{err}");
    assert!(err.contains("1 run"), "{err}");
    let (json, _) = runs(&["diagnose", "--json", "res"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(v["findings"].is_array(), "{v}");
}
