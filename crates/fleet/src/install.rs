//! `oio fleet install`: copy the running oio to hosts that lack it or hold another build,
//! through the launcher's own transport (ssh, `kubectl exec -i`, `ip netns exec`). No port,
//! daemon or file-transfer protocol of oio's own.
//!
//! Nothing found on a host is ever run. What is at `DEST/oio` is identified by its SHA-256
//! (coreutils' `sha256sum` on the host, through the transport) against the running binary's:
//! the same digest is "up to date"; a file that carries oio's mark ([`BINARY_MARK`]) is
//! replaced; anything else is left alone. `DEST` and every directory above it must belong to
//! the installing user or root and must not be writable by everyone without the sticky bit,
//! and an existing `DEST/oio` must be a regular file of the installing user: otherwise someone
//! else could swap what gets installed, or plant what would be kept.
//!
//! The binary goes on the transport's stdin into a shell on the host, which writes it to a new
//! temporary file beside the destination (`mktemp`), checks its digest, makes it executable and
//! renames it into place, so a host never sees half a binary. Only then is the copy (a file this
//! user just wrote and checked) started, for a hello.

use crate::controller::{self, Options};
use crate::launch::{remote, shell_dir, SAFE_DIRS};
use oio_core::Cancel;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes every oio binary with an agent carries (the agent's own refusal of a call without
/// `--stdio`): a file at `DEST/oio` without them is not oio, and is never replaced.
pub const BINARY_MARK: &str = "oio agent serves only on stdin/stdout";

/// Hosts copied to at once (each copy is one transport session; more would only share the
/// controller's uplink).
pub const PARALLEL: usize = 8;

/// Why the binary, a transport or a host's destination cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The binary to install cannot be read.
    #[error("{path}: {source}")]
    Binary {
        /// The file.
        path: String,
        /// What reading it said.
        source: std::io::Error,
    },
    /// A launcher whose transport cannot be told apart from its agent command.
    #[error("cannot tell the transport from the launcher `{0}` (it does not end in `oio agent --stdio`); give --transport")]
    NoTransport(String),
    /// The transport or the host's shell failed or refused (the reason in its words).
    #[error("{0}")]
    Host(String),
    /// The host's shell answered something the inspection does not print.
    #[error("unexpected answer from the host's shell: {0:?}")]
    Unexpected(String),
}

/// What happened on one host.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Installed {
    /// The host.
    pub host: String,
    /// "up to date", "installed", "replaced" or "failed".
    pub action: String,
    /// The oio version the host answers with now (None: not known).
    pub version: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
}

/// The SHA-256 of a file, lowercase hex (as `sha256sum` prints it).
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    use sha2::Digest as _;
    let mut f = std::fs::File::open(path)?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The binary to install: where it is, its size and digest, the version it answers with.
#[derive(Clone, Debug)]
pub struct Binary<'a> {
    /// The file.
    pub path: &'a Path,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// Its length, bytes.
    pub len: u64,
    /// Its `oio --version` (this process's own, for the running binary).
    pub version: String,
}

impl<'a> Binary<'a> {
    /// The file at `path`, which answers with `version`.
    pub fn of(path: &'a Path, version: &str) -> Result<Binary<'a>, InstallError> {
        let err = |source| InstallError::Binary {
            path: path.display().to_string(),
            source,
        };
        Ok(Binary {
            path,
            sha256: sha256_file(path).map_err(err)?,
            len: std::fs::metadata(path).map_err(err)?.len(),
            version: version.to_string(),
        })
    }
}

/// The transport of a launcher: its words before `PATH agent --stdio`.
pub fn transport_of(launcher_argv: &[String]) -> Result<Vec<String>, InstallError> {
    match launcher_argv {
        [prefix @ .., _oio, a, s] if a == "agent" && s == "--stdio" && !prefix.is_empty() => {
            Ok(prefix.to_vec())
        }
        _ => Err(InstallError::NoTransport(launcher_argv.join(" "))),
    }
}

/// Shell functions both scripts start with: [`SAFE_DIRS`], and `inspect_file F`, which
/// prints `absent`, or `present DIGEST MARK` (DIGEST `-` without sha256sum, MARK yes or no),
/// refusing a file that is not a regular file of this user. Nothing is run but coreutils.
fn prelude(dir: &str) -> String {
    format!(
        r#"set -u; d={d}; f="$d/oio"
{SAFE_DIRS}inspect_file() {{
  if [ -L "$1" ]; then refuse "$1 is a symbolic link: not followed, not run, not replaced"; fi
  if [ ! -e "$1" ]; then echo absent; return; fi
  if [ ! -f "$1" ]; then refuse "$1 is not a regular file: not run, not replaced"; fi
  o=$(stat -c %u -- "$1") || refuse "$1: cannot read its owner"
  if [ "$o" != "$me" ]; then
    refuse "$1 belongs to uid $o, not to the installing user (uid $me): oio neither runs nor replaces it"
  fi
  if command -v sha256sum >/dev/null 2>&1; then
    s=$(sha256sum < "$1") || refuse "$1: cannot read it"; s=${{s%% *}}
  else s=-; fi
  if grep -F -q -e {mark} -- "$1"; then m=yes; else m=no; fi
  echo "present $s $m"
}}
"#,
        d = shell_dir(dir),
        mark = shell_words::quote(BINARY_MARK),
    )
}

/// The script that looks at the destination and changes nothing.
fn inspect_script(dir: &str) -> String {
    format!(
        "{}p=$d; while [ ! -e \"$p\" ]; do p=$(dirname -- \"$p\"); done; safe_dirs \"$p\"; inspect_file \"$f\"",
        prelude(dir)
    )
}

/// The script that receives the binary on stdin. The checks are made again (the destination
/// may have changed since it was inspected); the copy is renamed into place only when its
/// length and digest are the binary's.
fn copy_script(dir: &str, bin: &Binary<'_>) -> String {
    format!(
        r#"{prelude}p=$d; while [ ! -e "$p" ]; do p=$(dirname -- "$p"); done; safe_dirs "$p"
mkdir -p -- "$d" || refuse "$d: cannot create it"; safe_dirs "$d"
r=$(inspect_file "$f") || exit 3
case $r in
  *" no") refuse "$f exists and is not oio (it does not carry oio's mark): not replaced" ;;
esac
t=$(mktemp "$d/.oio.install.XXXXXX") || refuse "$d: cannot create a temporary file"
trap 'rm -f -- "$t"' EXIT
cat >> "$t" || exit 4
n=$(wc -c < "$t"); [ "$n" -eq {len} ] || refuse "the copy has $n bytes, not {len}: the transfer was cut"
if command -v sha256sum >/dev/null 2>&1; then
  s=$(sha256sum < "$t"); [ "${{s%% *}}" = {sum} ] || refuse "the copy's SHA-256 is not the binary's: the transfer was damaged"
fi
chmod 755 "$t" && mv -f -- "$t" "$f"
"#,
        prelude = prelude(dir),
        len = bin.len,
        sum = bin.sha256,
    )
}

/// What is at the destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// No `DEST/oio`.
    Absent,
    /// A file of this user: its SHA-256 (None: the host has no `sha256sum`), and whether it
    /// carries [`BINARY_MARK`].
    Present {
        /// Hex digest.
        sha256: Option<String>,
        /// Carries oio's mark.
        oio: bool,
    },
}

/// Looks at `DEST` and `DEST/oio` on the host, running nothing there but coreutils: what is
/// there, or why the destination is refused.
pub fn inspect(transport: &[String], dir: &str, limit: Duration) -> Result<Found, InstallError> {
    let out = run_bounded(remote(transport, &inspect_script(dir)), None, limit)
        .map_err(InstallError::Host)?;
    let line = out.trim();
    match line.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["absent"] => Ok(Found::Absent),
        ["present", sum, mark] => Ok(Found::Present {
            sha256: (*sum != "-").then(|| sum.to_string()),
            oio: *mark == "yes",
        }),
        _ => Err(InstallError::Unexpected(line.chars().take(200).collect())),
    }
}

/// The launcher that starts the installed agent.
pub fn installed_launcher(transport: &[String], dir: &str) -> Vec<String> {
    let script = format!("exec {}/oio agent --stdio", shell_dir(dir));
    let c = remote(transport, &script);
    std::iter::once(c.get_program().to_string_lossy().into_owned())
        .chain(c.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect()
}

/// Installs `bin` on one host (through `transport`) into `dir` unless the same file is
/// already there; then checks the copy by a hello.
pub fn install(
    host: &str,
    transport: &[String],
    dir: &str,
    bin: &Binary<'_>,
    opts: &Options,
    cancel: &Cancel,
    limit: Duration,
) -> Installed {
    let mut out = Installed {
        host: host.to_string(),
        action: "failed".into(),
        version: None,
        error: None,
    };
    // Looking is quick (a digest and a grep): bounded as a connection is, not as a copy.
    let found = match inspect(transport, dir, opts.connect_timeout.min(limit)) {
        Ok(f) => f,
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    match &found {
        Found::Present {
            sha256: Some(s), ..
        } if *s == bin.sha256 => {
            out.action = "up to date".into();
            out.version = Some(bin.version.clone());
            return out;
        }
        Found::Present { oio: false, .. } => {
            out.error = Some(format!(
                "{}/oio exists and is not oio (it does not carry oio's mark): not replaced",
                dir.trim_end_matches('/')
            ));
            return out;
        }
        _ => {}
    }
    if cancel.is_cancelled() {
        out.error = Some("stopped before the copy".into());
        return out;
    }
    if let Err(e) = copy(transport, dir, bin, limit) {
        out.error = Some(e);
        return out;
    }
    // The file now there is the one this user just wrote and checked: running it is safe.
    match controller::hello(host, installed_launcher(transport, dir), opts, cancel) {
        Ok(v) => {
            out.version = Some(v);
            out.action = match found {
                Found::Absent => "installed".into(),
                Found::Present { .. } => "replaced".into(),
            };
        }
        Err(e) => {
            out.error = Some(format!(
                "copied, but the agent does not answer: {}",
                e.about_host(host)
            ))
        }
    }
    out
}

/// Installs on every host, [`PARALLEL`] at a time; `done` sees each outcome as it comes.
/// Outcomes in the order of `hosts`.
pub fn install_all(
    hosts: &[(String, Result<Vec<String>, String>)],
    dir: &str,
    bin: &Binary<'_>,
    opts: &Options,
    cancel: &Cancel,
    limit: Duration,
    done: &(dyn Fn(&Installed) + Sync),
) -> Vec<Installed> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(vec![None; hosts.len()]);
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL.min(hosts.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some((host, transport)) = hosts.get(i) else {
                    return;
                };
                let r = match transport {
                    _ if cancel.is_cancelled() => Installed {
                        host: host.clone(),
                        action: "failed".into(),
                        version: None,
                        error: Some("stopped before the copy".into()),
                    },
                    Ok(t) => install(host, t, dir, bin, opts, cancel, limit),
                    Err(e) => Installed {
                        host: host.clone(),
                        action: "failed".into(),
                        version: None,
                        error: Some(e.clone()),
                    },
                };
                done(&r);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .zip(hosts)
        .map(|(r, (host, _))| {
            r.unwrap_or_else(|| Installed {
                host: host.clone(),
                action: "failed".into(),
                version: None,
                error: Some("the install of this host failed internally".into()),
            })
        })
        .collect()
}

/// Sends the binary through the transport, with a bound on the whole copy.
fn copy(transport: &[String], dir: &str, bin: &Binary<'_>, limit: Duration) -> Result<(), String> {
    let file = std::fs::File::open(bin.path).map_err(|e| format!("{}: {e}", bin.path.display()))?;
    run_bounded(remote(transport, &copy_script(dir, bin)), Some(file), limit).map(|_| ())
}

/// Runs `c` with `input` on its stdin (or none), within `limit`: its stdout, or why it failed
/// (its exit status and the end of its stderr).
fn run_bounded(
    mut c: Command,
    input: Option<std::fs::File>,
    limit: Duration,
) -> Result<String, String> {
    let mut child = c
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting `{}`: {e}", c.get_program().to_string_lossy()))?;
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = (&mut r).take(64 << 10).read_to_end(&mut v);
            // Whatever is left is read and dropped, so the child never blocks on a full pipe.
            let _ = std::io::copy(&mut r, &mut std::io::sink());
            String::from_utf8_lossy(&v).trim().to_string()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    // Written from a thread of its own, so the bound below holds for a transport that stops
    // reading (killing it ends the write).
    let writer = match (input, child.stdin.take()) {
        (Some(mut f), Some(mut stdin)) => Some(std::thread::spawn(move || {
            std::io::copy(&mut f, &mut stdin).and_then(|_| stdin.flush())
        })),
        _ => None,
    };
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("it did not finish within {limit:?}"));
            }
            Err(e) => break Err(e.to_string()),
        }
    };
    // Whatever it left running in its process group (a helper holding its output or input
    // open) goes too: the pipes then close, and nothing below waits on a peer that stalls.
    let _ = rustix::process::kill_process_group(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::KILL,
    );
    let grace = Instant::now() + PIPE_GRACE;
    let sent = writer.map_or(Ok(()), |w| {
        join_by(w, grace).unwrap_or_else(|| {
            Err(std::io::Error::other(
                "its input was still open after it ended",
            ))
        })
    });
    let (out, err) = (
        join_by(out, grace).unwrap_or_default(),
        join_by(err, grace).unwrap_or_default(),
    );
    match (status, sent) {
        (Ok(s), Ok(())) if s.success() => Ok(out),
        (Ok(s), _) if s.code() == Some(3) => Err(err),
        (Ok(s), Err(e)) if s.success() => Err(format!(
            "the transport ended before it took all of the binary ({e}){}{err}",
            if err.is_empty() { "" } else { ": " }
        )),
        (Ok(s), _) => Err(format!("failed ({s}): {err}")),
        (Err(e), _) => Err(e),
    }
}

/// How long the pipes of an ended transport may stay open before they are given up on (a
/// process outside its group that still holds them: its threads are left behind).
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// `h`'s outcome if it ends by `until`, else None (the thread is left to end on its own).
fn join_by<T>(h: std::thread::JoinHandle<T>, until: Instant) -> Option<T> {
    while !h.is_finished() {
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    h.join().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::guarded_launcher;

    fn words(s: &str) -> Vec<String> {
        shell_words::split(s).unwrap()
    }

    #[test]
    fn the_transport_is_the_launcher_before_oio_agent_stdio() {
        assert_eq!(
            transport_of(&words("ssh -F x h1 oio agent --stdio")).unwrap(),
            words("ssh -F x h1")
        );
        assert_eq!(
            transport_of(&words("kubectl exec -i pod-0 -- /opt/oio agent --stdio")).unwrap(),
            words("kubectl exec -i pod-0 --")
        );
        assert!(transport_of(&words("oio agent --stdio")).is_err());
        assert!(transport_of(&words("ssh h1 my-wrapper")).is_err());
    }

    #[test]
    fn ssh_gets_one_remote_command_others_get_sh_c() {
        let a = installed_launcher(&words("ssh h1"), "~/.local/bin");
        assert_eq!(
            a,
            vec!["ssh", "h1", "exec \"$HOME\"/.local/bin/oio agent --stdio"]
        );
        let b = installed_launcher(&words("ip netns exec ns1"), "/opt/my dir");
        assert_eq!(
            b,
            vec![
                "ip",
                "netns",
                "exec",
                "ns1",
                "sh",
                "-c",
                "exec '/opt/my dir'/oio agent --stdio"
            ]
        );
    }

    /// A directory of its own for one test, and a binary to install (a script carrying oio's
    /// mark; nothing here runs it).
    fn setup(tag: &str) -> (tempfile::TempDir, String, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(tag).to_str().unwrap().to_string();
        let bin = d.path().join("new");
        std::fs::write(
            &bin,
            format!("#!/bin/sh\n# {BINARY_MARK}\necho 'oio 9.9.9'\n"),
        )
        .unwrap();
        (d, dir, bin)
    }

    fn binary(p: &Path) -> Binary<'_> {
        Binary::of(p, "9.9.9").unwrap()
    }

    fn mode(p: &Path, m: u32) {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    /// An executable that leaves a trace when it is run, carrying oio's mark or not.
    fn plant(p: &Path, marked: bool) -> std::path::PathBuf {
        let trace = p.with_file_name("it-ran");
        let mark = if marked { BINARY_MARK } else { "" };
        std::fs::write(
            p,
            format!(
                "#!/bin/sh\n# {mark}\ntouch '{}'\necho 'oio 9.9.9'\n",
                trace.display()
            ),
        )
        .unwrap();
        mode(p, 0o755);
        trace
    }

    fn leftovers(dir: &str) -> Vec<std::ffi::OsString> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with(".oio"))
            .collect()
    }

    const LIMIT: Duration = Duration::from_secs(60);

    #[test]
    fn what_is_there_is_identified_by_its_digest_and_never_run() {
        let (_d, dir, bin) = setup("bin");
        let b = binary(&bin);
        let t = words("env");
        // Missing: the directory is made, the copy checked and put in place.
        assert_eq!(inspect(&t, &dir, LIMIT).unwrap(), Found::Absent);
        copy(&t, &dir, &b, LIMIT).unwrap();
        let dest = Path::new(&dir).join("oio");
        assert_eq!(std::fs::read(&dest).unwrap(), std::fs::read(&bin).unwrap());
        assert_eq!(
            inspect(&t, &dir, LIMIT).unwrap(),
            Found::Present {
                sha256: Some(b.sha256.clone()),
                oio: true
            }
        );
        // A planted oio that would answer with the right version: seen by its digest, not
        // run, and replaced.
        let trace = plant(&dest, true);
        match inspect(&t, &dir, LIMIT).unwrap() {
            Found::Present {
                sha256: Some(s),
                oio: true,
            } => assert_ne!(s, b.sha256),
            other => panic!("{other:?}"),
        }
        copy(&t, &dir, &b, LIMIT).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), std::fs::read(&bin).unwrap());
        assert!(!trace.exists(), "the file found was run");
        assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
        // The local digest is sha256sum's.
        let out = Command::new("sha256sum").arg(&bin).output().unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).starts_with(&b.sha256));
    }

    #[test]
    fn a_file_that_is_not_oio_is_never_replaced_nor_run() {
        let (_d, dir, bin) = setup("bin");
        std::fs::create_dir(&dir).unwrap();
        let dest = Path::new(&dir).join("oio");
        let trace = plant(&dest, false);
        let before = std::fs::read(&dest).unwrap();
        assert!(matches!(
            inspect(&words("env"), &dir, LIMIT).unwrap(),
            Found::Present { oio: false, .. }
        ));
        let e = copy(&words("env"), &dir, &binary(&bin), LIMIT).unwrap_err();
        assert!(
            e.contains("is not oio") && e.contains("not replaced"),
            "{e}"
        );
        assert_eq!(std::fs::read(&dest).unwrap(), before);
        assert!(!trace.exists(), "the file found was run");
        assert!(leftovers(&dir).is_empty());
    }

    #[test]
    fn a_directory_everyone_may_write_is_refused_unless_sticky() {
        let (_d, dir, bin) = setup("shared");
        std::fs::create_dir(&dir).unwrap();
        mode(Path::new(&dir), 0o777);
        let t = words("env");
        let e = inspect(&t, &dir, LIMIT).unwrap_err().to_string();
        assert!(
            e.contains("writable by everyone (mode 777) without the sticky bit"),
            "{e}"
        );
        let e = copy(&t, &dir, &binary(&bin), LIMIT).unwrap_err();
        assert!(e.contains("without the sticky bit"), "{e}");
        assert!(!Path::new(&dir).join("oio").exists());
        // A directory above counts too: a subdirectory of this one is as exposed.
        let below = format!("{dir}/sub");
        std::fs::create_dir(&below).unwrap();
        let e = inspect(&t, &below, LIMIT).unwrap_err().to_string();
        assert!(e.contains("without the sticky bit"), "{e}");
        // Sticky (as /tmp): others cannot rename or remove what this user puts there.
        mode(Path::new(&dir), 0o1777);
        assert_eq!(inspect(&t, &below, LIMIT).unwrap(), Found::Absent);
        copy(&t, &below, &binary(&bin), LIMIT).unwrap();
    }

    #[test]
    fn a_file_or_directory_of_another_user_is_refused_and_never_run() {
        use std::os::unix::fs::MetadataExt as _;
        if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
            oio_testkit::missing("needs root to give files to another user");
            return;
        }
        let (_d, dir, bin) = setup("bin");
        std::fs::create_dir(&dir).unwrap();
        let dest = Path::new(&dir).join("oio");
        // An executable of another user, carrying oio's mark.
        let trace = plant(&dest, true);
        std::os::unix::fs::chown(&dest, Some(65534), Some(65534)).unwrap();
        let t = words("env");
        let e = inspect(&t, &dir, LIMIT).unwrap_err().to_string();
        assert!(
            e.contains("belongs to uid 65534") && e.contains("neither runs nor replaces it"),
            "{e}"
        );
        let e = copy(&t, &dir, &binary(&bin), LIMIT).unwrap_err();
        assert!(e.contains("belongs to uid 65534"), "{e}");
        assert!(!trace.exists(), "the file found was run");
        // The directory of another user.
        std::fs::remove_file(&dest).unwrap();
        std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
        let e = inspect(&t, &dir, LIMIT).unwrap_err().to_string();
        assert!(
            e.contains("belongs to uid 65534, neither to the installing user"),
            "{e}"
        );
        // A symbolic link is not followed.
        std::os::unix::fs::chown(&dir, Some(0), None).unwrap();
        std::os::unix::fs::symlink(&bin, &dest).unwrap();
        let e = inspect(&t, &dir, LIMIT).unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
    }

    #[test]
    fn a_cut_transfer_is_never_put_in_place() {
        let (_d, dir, bin) = setup("bin");
        let mut b = binary(&bin);
        b.len += 1;
        let e = copy(&words("env"), &dir, &b, LIMIT).unwrap_err();
        assert!(e.contains("the transfer was cut"), "{e}");
        let mut b = binary(&bin);
        b.sha256 = "0".repeat(64);
        let e = copy(&words("env"), &dir, &b, LIMIT).unwrap_err();
        assert!(e.contains("SHA-256"), "{e}");
        assert!(!Path::new(&dir).join("oio").exists());
        assert!(leftovers(&dir).is_empty());
    }

    /// Issue 37: a directory its group may write (the destination, or one above it) is
    /// refused, naming it, its group and mode; sticky, it is accepted (as everyone-writable).
    #[test]
    fn a_directory_its_group_may_write_is_refused_unless_sticky() {
        use std::os::unix::fs::MetadataExt as _;
        let (_d, dir, bin) = setup("shared");
        std::fs::create_dir(&dir).unwrap();
        mode(Path::new(&dir), 0o775);
        let gid = std::fs::metadata(&dir).unwrap().gid();
        let t = words("env");
        let e = inspect(&t, &dir, LIMIT).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{dir} is writable by its group (gid {gid}, mode 775) without the sticky bit: any member could replace what is installed there")
        );
        let e = copy(&t, &dir, &binary(&bin), LIMIT).unwrap_err();
        assert!(e.contains("writable by its group"), "{e}");
        assert!(!Path::new(&dir).join("oio").exists());
        // Above the destination too.
        let below = format!("{dir}/sub");
        std::fs::create_dir(&below).unwrap();
        let e = inspect(&t, &below, LIMIT).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{dir} is writable by its group")),
            "{e}"
        );
        mode(Path::new(&dir), 0o3775);
        assert_eq!(inspect(&t, &below, LIMIT).unwrap(), Found::Absent);
    }

    /// `system.posix_acl_access` of a directory: owner rwx, `user` rwx, owning group r-x,
    /// the mask `mask`, others r-x (the kernel's own xattr format, version 2).
    fn set_acl(dir: &Path, user: u32, mask: u16) -> std::io::Result<()> {
        const UNDEFINED: u32 = u32::MAX;
        let entries: [(u16, u16, u32); 5] = [
            (0x01, 7, UNDEFINED),
            (0x02, 7, user),
            (0x04, 5, UNDEFINED),
            (0x10, mask, UNDEFINED),
            (0x20, 5, UNDEFINED),
        ];
        let mut v = 2u32.to_le_bytes().to_vec();
        for (tag, perm, id) in entries {
            v.extend_from_slice(&tag.to_le_bytes());
            v.extend_from_slice(&perm.to_le_bytes());
            v.extend_from_slice(&id.to_le_bytes());
        }
        rustix::fs::setxattr(
            dir,
            "system.posix_acl_access",
            &v,
            rustix::fs::XattrFlags::empty(),
        )
        .map_err(std::io::Error::from)
    }

    /// Issue 37: a POSIX ACL that lets another user write the destination is refused, named
    /// as an ACL; one whose mask takes that write away is accepted.
    #[test]
    fn a_directory_an_acl_lets_another_user_write_is_refused() {
        let (_d, dir, bin) = setup("acl");
        std::fs::create_dir(&dir).unwrap();
        mode(Path::new(&dir), 0o755);
        if let Err(e) = set_acl(Path::new(&dir), 65534, 7) {
            oio_testkit::missing(&format!(
                "the temporary directory's file system takes no POSIX ACL: {e}"
            ));
            return;
        }
        let t = words("env");
        let e = inspect(&t, &dir, LIMIT).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{dir} has a POSIX ACL (system.posix_acl_access) that lets users or groups other than its owner write it (its mask allows writing, mode 775) without the sticky bit: any of them could replace what is installed there")
        );
        let e = copy(&t, &dir, &binary(&bin), LIMIT).unwrap_err();
        assert!(e.contains("has a POSIX ACL"), "{e}");
        assert!(!Path::new(&dir).join("oio").exists());
        // The mask without write: the named user's rwx is capped to r-x.
        set_acl(Path::new(&dir), 65534, 5).unwrap();
        assert_eq!(inspect(&t, &dir, LIMIT).unwrap(), Found::Absent);
    }

    /// Issue 37: an agent at a path behind a transport runs only from directories and a file
    /// no one else may write; anything else is left as it is.
    #[test]
    fn an_installed_agent_runs_only_from_safe_directories() {
        let (d, dir, _) = setup("bin");
        std::fs::create_dir(&dir).unwrap();
        let oio = Path::new(&dir).join("oio");
        let trace = plant(&oio, true);
        let argv = words(&format!("env {dir}/oio agent --stdio"));
        let guarded = guarded_launcher(&argv);
        assert_eq!(&guarded[..3], ["env", "sh", "-c"]);
        let run = || {
            Command::new(&guarded[0])
                .args(&guarded[1..])
                .output()
                .unwrap()
        };
        let out = run();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "oio 9.9.9\n");
        assert!(trace.exists());
        std::fs::remove_file(&trace).unwrap();
        // Its directory writable by its group: refused before it runs.
        mode(Path::new(&dir), 0o775);
        let out = run();
        assert_eq!(out.status.code(), Some(3));
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(
            e.starts_with(&format!("{dir} is writable by its group")),
            "{e}"
        );
        assert!(!trace.exists(), "it ran");
        // The file itself writable by its group.
        mode(Path::new(&dir), 0o755);
        mode(&oio, 0o775);
        let out = run();
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(
            e.contains(&format!(
                "{} may be written by others than its owner (mode 775): not run",
                oio.display()
            )),
            "{e}"
        );
        assert!(!trace.exists(), "it ran");
        mode(&oio, 0o755);
        // A link from a safe directory to a file in an unsafe one.
        let safe = d.path().join("safe");
        std::fs::create_dir(&safe).unwrap();
        std::os::unix::fs::symlink(&oio, safe.join("oio")).unwrap();
        mode(Path::new(&dir), 0o775);
        let linked = guarded_launcher(&words(&format!("env {}/oio agent --stdio", safe.display())));
        let out = Command::new(&linked[0])
            .args(&linked[1..])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(
            e.starts_with(&format!("{dir} is writable by its group")),
            "{e}"
        );
        assert!(!trace.exists(), "it ran");
        // Left as they are: oio from the host's PATH, a local agent, a script of the user's.
        for plain in [
            "ssh h1 oio agent --stdio",
            "/usr/bin/oio agent --stdio",
            "sh launch.sh h1",
        ] {
            assert_eq!(guarded_launcher(&words(plain)), words(plain));
        }
        // Over ssh, one remote command for the remote shell.
        let g = guarded_launcher(&words("ssh -F cfg h1 ~/.local/bin/oio agent --stdio"));
        assert_eq!(g.len(), 5, "{g:?}");
        assert!(
            g[4].contains("b=\"$HOME\"/.local/bin/oio")
                && g[4].ends_with("exec \"$b\" agent --stdio"),
            "{}",
            g[4]
        );
    }

    /// Issue 37: a transport that stalls, or that ends but leaves a helper holding its output,
    /// does not hold the install past its bound.
    #[test]
    fn a_stalled_transport_is_given_up_within_its_bound() {
        let (_d, dir, _) = setup("bin");
        let t0 = Instant::now();
        let stalled = words("sh -c 'sleep 600 & sleep 600' stalled");
        let e = inspect(&stalled, &dir, Duration::from_secs(1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("did not finish within 1s"), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        let t0 = Instant::now();
        let helper = words("sh -c 'sleep 600 & echo absent' helper");
        assert_eq!(inspect(&helper, &dir, LIMIT).unwrap(), Found::Absent);
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    }
}
