//! `oio fleet install`: copy the running oio to hosts that lack it or run another version,
//! through the launcher's own transport (ssh, `kubectl exec -i`, `ip netns exec`), then check
//! the copy by a hello. No port, daemon or file-transfer protocol of oio's own.
//!
//! The binary goes on the transport's stdin into a shell on the host, which writes it to a
//! new temporary file beside the destination (`set -C`: never over an existing file), makes it
//! executable and renames it into place, so a host never sees half a binary. An existing
//! `DEST/oio` that does not say `oio …` to `--version` is not replaced.

use crate::controller::{self, Options};
use oio_core::Cancel;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What happened on one host.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Installed {
    /// The host.
    pub host: String,
    /// "up to date", "installed", "replaced oio VERSION" or "failed".
    pub action: String,
    /// The oio version the host answers with now (None: it does not answer).
    pub version: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
}

/// The transport of a launcher: its words before `PATH agent --stdio`.
pub fn transport_of(launcher_argv: &[String]) -> Result<Vec<String>, String> {
    match launcher_argv {
        [prefix @ .., _oio, a, s] if a == "agent" && s == "--stdio" && !prefix.is_empty() => {
            Ok(prefix.to_vec())
        }
        _ => Err(format!(
            "cannot tell the transport from the launcher `{}` (it does not end in `oio agent --stdio`); give --transport",
            launcher_argv.join(" ")
        )),
    }
}

/// Runs shell `script` on the host through `transport`: ssh takes a remote command as one
/// string for the remote shell; anything else (kubectl exec, ip netns exec) runs `sh -c`.
fn remote(transport: &[String], script: &str) -> Command {
    let is_ssh = transport
        .iter()
        .any(|w| Path::new(w).file_name().is_some_and(|n| n == "ssh"));
    let mut c = Command::new(&transport[0]);
    c.args(&transport[1..]);
    if is_ssh {
        c.arg(script);
    } else {
        c.args(["sh", "-c", script]);
    }
    c
}

/// `dir` for a POSIX shell: quoted, except a leading `~/`, which becomes "$HOME".
fn shell_dir(dir: &str) -> String {
    match dir.strip_prefix("~/") {
        Some(rest) => format!("\"$HOME\"/{}", shell_words::quote(rest)),
        None if dir == "~" => "\"$HOME\"".into(),
        None => shell_words::quote(dir).into_owned(),
    }
}

/// The shell script that receives the binary on stdin.
fn copy_script(dir: &str) -> String {
    format!(
        "set -eC; d={d}; mkdir -p \"$d\"; \
         if [ -e \"$d/oio\" ] && ! \"$d/oio\" --version 2>/dev/null | grep -q '^oio '; then \
         echo \"$d/oio exists and is not oio: not replaced\" >&2; exit 3; fi; \
         t=\"$d/.oio.install.$$\"; trap 'rm -f \"$t\"' EXIT; \
         cat > \"$t\"; chmod 755 \"$t\"; mv -f \"$t\" \"$d/oio\"",
        d = shell_dir(dir)
    )
}

/// The launcher that starts the installed agent.
pub fn installed_launcher(transport: &[String], dir: &str) -> Vec<String> {
    let script = format!("exec {}/oio agent --stdio", shell_dir(dir));
    let c = remote(transport, &script);
    std::iter::once(c.get_program().to_string_lossy().into_owned())
        .chain(c.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect()
}

/// The version the agent at `dir` answers with, or why it does not.
fn probe(host: &str, argv: Vec<String>, opts: &Options, cancel: &Cancel) -> Result<String, String> {
    controller::hello(host, argv, opts, cancel)
}

/// Installs `binary` on one host (through `transport`) into `dir` unless the agent there
/// already answers with this version; checks the result by a hello.
pub fn install(
    host: &str,
    transport: &[String],
    dir: &str,
    binary: &Path,
    opts: &Options,
    cancel: &Cancel,
    limit: Duration,
) -> Installed {
    let agent = installed_launcher(transport, dir);
    let mut out = Installed {
        host: host.to_string(),
        action: "failed".into(),
        version: None,
        error: None,
    };
    let before = probe(host, agent.clone(), opts, cancel);
    if let Ok(v) = &before {
        out.action = "up to date".into();
        out.version = Some(v.clone());
        return out;
    }
    if let Err(e) = copy(transport, dir, binary, limit) {
        out.error = Some(e);
        return out;
    }
    match probe(host, agent, opts, cancel) {
        Ok(v) => {
            out.version = Some(v);
            out.action = match before {
                Err(e) if e.contains("does not match") => format!("replaced ({e})"),
                _ => "installed".into(),
            };
        }
        Err(e) => out.error = Some(format!("copied, but the agent does not answer: {e}")),
    }
    out
}

/// Sends the binary through the transport, with a bound on the whole copy.
fn copy(transport: &[String], dir: &str, binary: &Path, limit: Duration) -> Result<(), String> {
    let mut file = std::fs::File::open(binary).map_err(|e| format!("{}: {e}", binary.display()))?;
    let mut child = remote(transport, &copy_script(dir))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting `{}`: {e}", transport.join(" ")))?;
    let mut stderr = child.stderr.take().expect("piped");
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = (&mut stderr).take(64 << 10).read_to_end(&mut v);
        String::from_utf8_lossy(&v).trim().to_string()
    });
    let mut stdin = child.stdin.take().expect("piped");
    let sent = std::io::copy(&mut file, &mut stdin).and_then(|_| stdin.flush());
    drop(stdin);
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Ok(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!("the copy did not finish within {limit:?}"));
            }
            Err(e) => break Err(e.to_string()),
        }
    };
    let err = err.join().unwrap_or_default();
    match (status, sent) {
        (Ok(s), Ok(())) if s.success() => Ok(()),
        (Ok(s), _) => Err(format!("the copy failed ({s}): {err}")),
        (Err(e), _) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn the_copy_never_overwrites_a_file_that_is_not_oio() {
        // The script run locally (`env sh -c …`), into a temporary directory.
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_str().unwrap().to_string();
        std::fs::write(d.path().join("oio"), "precious").unwrap();
        let bin = d.path().join("new");
        std::fs::write(&bin, "#!/bin/sh\necho 'oio 9.9.9'\n").unwrap();
        let e = copy(&words("env"), &dir, &bin, Duration::from_secs(30)).unwrap_err();
        assert!(e.contains("is not oio: not replaced"), "{e}");
        assert_eq!(
            std::fs::read_to_string(d.path().join("oio")).unwrap(),
            "precious"
        );
        // An older oio is replaced, and nothing temporary is left behind.
        std::fs::write(d.path().join("oio"), "#!/bin/sh\necho 'oio 0.0.1'\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(d.path().join("oio"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        copy(&words("env"), &dir, &bin, Duration::from_secs(30)).unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("oio")).unwrap(),
            std::fs::read_to_string(&bin).unwrap()
        );
        let left: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with(".oio"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
