//! Starting a program on a host through a launcher's transport (ssh, `kubectl exec -i`, `ip
//! netns exec`): the command that runs a shell script there, and the guard that lets an
//! installed agent run only from directories and a file no one else may write. Below both
//! the controller (which starts agents) and `install` (which copies them).

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Command;

/// `argv` with a check before the agent runs, when it starts an agent at a path through a
/// transport (`ssh h ~/.local/bin/oio agent --stdio`: an installed copy): a shell on the host
/// makes `install`'s checks of the directories ([`SAFE_DIRS`], for the path given and for the
/// file it resolves to) and of the file (a regular file of this user or root that no one else
/// may write), and only then `exec`s it, refusing (exit 3, the reason on its stderr)
/// otherwise. Anything else (`oio` looked up on the host's PATH, a local launcher, a script of
/// the user's) is returned as it is.
pub fn guarded_launcher(argv: &[String]) -> Vec<String> {
    let [transport @ .., prog, a, s] = argv else {
        return argv.to_vec();
    };
    if transport.is_empty() || a != "agent" || s != "--stdio" || !prog.contains('/') {
        return argv.to_vec();
    }
    let script = format!(
        r#"set -u
{SAFE_DIRS}b={prog}
safe_dirs "$(dirname -- "$b")"
r=$(readlink -f -- "$b") || refuse "$b: cannot resolve it"
[ -f "$r" ] || refuse "$b is not a regular file: not run"
safe_dirs "$(dirname -- "$r")"
s=$(stat -c '%u %a' -- "$r") || refuse "$r: cannot read its owner and mode"; set -- $s
if [ "$1" != "$me" ] && [ "$1" != 0 ]; then
  refuse "$r belongs to uid $1, neither to this user (uid $me) nor to root: not run"
fi
if [ $((0$2 & 022)) -ne 0 ]; then
  refuse "$r may be written by others than its owner (mode $2): not run"
fi
exec "$b" agent --stdio"#,
        prog = shell_dir(prog),
    );
    let c = remote(transport, &script);
    std::iter::once(c.get_program().to_string_lossy().into_owned())
        .chain(c.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect()
}

/// Runs shell `script` on the host through `transport`: ssh takes a remote command as one
/// string for the remote shell; anything else (kubectl exec, ip netns exec) runs `sh -c`.
/// In its own process group, as the agents' launchers (Ctrl-C stops the install between hosts,
/// not a copy half-way through a transport).
pub(crate) fn remote(transport: &[String], script: &str) -> Command {
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
    c.process_group(0);
    c
}

/// `dir` for a POSIX shell: quoted, except a leading `~/`, which becomes "$HOME".
pub(crate) fn shell_dir(dir: &str) -> String {
    match dir.strip_prefix("~/") {
        Some(rest) => format!("\"$HOME\"/{}", shell_words::quote(rest)),
        None if dir == "~" => "\"$HOME\"".into(),
        None => shell_words::quote(dir).into_owned(),
    }
}

/// The shell function `safe_dirs P`: refuses (exit 3, the reason on stderr) when the
/// directory P or one above it, symbolic links resolved, belongs to neither this user nor root,
/// or when anyone else may write it without the sticky bit: everyone, its group, or a user or
/// group of a POSIX access ACL (`system.posix_acl_access`). An ACL's entries for other users
/// and groups are capped by its mask, which the mode's group bits show, so group-write in the
/// mode is the one test for both; `ls -ld` marks a directory with an ACL by a `+`, which only
/// chooses the words. Whoever may write a directory may rename what is in it (or, above, the
/// directory itself) and put their own file at the name that gets run.
pub(crate) const SAFE_DIRS: &str = r#"me=$(id -u)
refuse() { echo "$*" >&2; exit 3; }
safe_dirs() {
  p=$(cd -P -- "$1" && pwd -P) || refuse "$1: cannot enter it"
  while :; do
    s=$(stat -c '%u %a %g' -- "$p") || refuse "$p: cannot read its owner and mode"; set -- $s
    if [ "$1" != "$me" ] && [ "$1" != 0 ]; then
      refuse "$p belongs to uid $1, neither to the installing user (uid $me) nor to root: someone else could replace what is installed there"
    fi
    if [ $((0$2 & 01000)) -eq 0 ]; then
      if [ $((0$2 & 2)) -ne 0 ]; then
        refuse "$p is writable by everyone (mode $2) without the sticky bit: anyone could replace what is installed there"
      fi
      if [ $((0$2 & 020)) -ne 0 ]; then
        case $(ls -ld -- "$p" 2>/dev/null) in
          ??????????+*) refuse "$p has a POSIX ACL (system.posix_acl_access) that lets users or groups other than its owner write it (its mask allows writing, mode $2) without the sticky bit: any of them could replace what is installed there" ;;
        esac
        refuse "$p is writable by its group (gid $3, mode $2) without the sticky bit: any member could replace what is installed there"
      fi
    fi
    [ "$p" = / ] && break
    p=$(dirname -- "$p")
  done
}
"#;
