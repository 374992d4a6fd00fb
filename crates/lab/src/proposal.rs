//! A plan read from a file is a proposal, never a grant: before it runs again (`oio rerun`)
//! the permission flags come from the command line, not the file; targets are resolved
//! (redirected, or relative ones in the directory the first run ran in); what it would create
//! or write is held to what the command line names, and every path written is said.

use crate::{LabError, Plan};
use std::path::PathBuf;

/// What the command line allows a plan from a file to do.
#[derive(Clone, Debug, Default)]
pub struct Grant {
    /// `--target [OLD=]NEW` redirects.
    pub targets: Vec<String>,
    /// `--allow-overwrite` on this command line.
    pub allow_overwrite: bool,
    /// `--destroy-data` on this command line.
    pub destroy_data: bool,
    /// Wait for a target another run holds.
    pub wait: bool,
    /// `--out`: where new files may be created.
    pub out: PathBuf,
    /// `--trust-plan-paths`: create files and write logs where the plan says.
    pub trust_plan_paths: bool,
}

/// Takes the permission flags from this command line, not from the file, and resolves the
/// targets: a redirect, else the recorded path (relative ones in the directory the first run
/// ran in). Returns what to tell the user.
pub fn adopt(plan: &mut Plan, args: &Grant) -> Result<Vec<String>, LabError> {
    let mut notes = Vec::new();
    let configs = plan.configs_mut();
    let mut recorded: Vec<PathBuf> = configs
        .iter()
        .flat_map(|c| c.plan.bindings.iter().flat_map(|b| b.paths.iter().cloned()))
        .collect();
    recorded.sort();
    recorded.dedup();
    let mut redirects: Vec<(Option<PathBuf>, PathBuf)> = Vec::new();
    for t in &args.targets {
        match t.split_once('=') {
            Some((old, new)) => {
                let old = PathBuf::from(old);
                if !recorded.contains(&old) {
                    return Err(LabError::Invalid(format!(
                        "--target {t}: the result records no target '{}' (it records {})",
                        old.display(),
                        names(&recorded)
                    )));
                }
                redirects.push((Some(old), PathBuf::from(new)));
            }
            None if recorded.len() == 1 && args.targets.len() == 1 => {
                redirects.push((None, PathBuf::from(t)))
            }
            None => {
                return Err(LabError::Invalid(format!(
                "--target {t}: the result records {} targets ({}); say which with --target OLD=NEW",
                recorded.len(),
                names(&recorded)
            )))
            }
        }
    }
    let here = std::env::current_dir().ok();
    let (mut asked_overwrite, mut asked_destroy) = (false, false);
    for c in configs {
        asked_overwrite |= c.plan.target_options.allow_overwrite;
        asked_destroy |= c.plan.target_options.destroy_data;
        c.plan.target_options.allow_overwrite = args.allow_overwrite;
        c.plan.target_options.destroy_data = args.destroy_data;
        c.plan.target_options.wait = args.wait;
        for b in &mut c.plan.bindings {
            for p in &mut b.paths {
                let redirect = redirects
                    .iter()
                    .find(|(old, _)| old.as_ref().is_none_or(|o| o == p));
                *p = match (redirect, &c.cwd) {
                    (Some((_, new)), _) => new.clone(),
                    (None, _) if p.is_absolute() => p.clone(),
                    // From the directory of the first run the plan stays as it was.
                    (None, Some(dir)) if Some(dir) == here.as_ref() => p.clone(),
                    (None, Some(dir)) => dir.join(&*p),
                    // A plan written before the directory was recorded: only a file that is
                    // here already can be the one meant; never create a new one.
                    (None, None) if p.exists() => p.clone(),
                    (None, None) => return Err(LabError::Invalid(format!(
                        "the result names the relative target '{}' but not the directory it ran in, and there is no such file here: run oio rerun from that directory, or give --target",
                        p.display()
                    ))),
                };
            }
        }
    }
    confine(plan, args, &redirects, &mut notes)?;
    if asked_overwrite && !args.allow_overwrite {
        notes.push("the first run was allowed to write over data oio did not create (--allow-overwrite); this rerun is not unless you give --allow-overwrite here".into());
    }
    if asked_destroy && !args.destroy_data {
        notes.push("the first run was allowed to write to a device with a partition table, filesystem or other signature (--destroy-data); this rerun is not unless you give --destroy-data here".into());
    }
    Ok(notes)
}

/// What a result names that the rerun would write, held to what this command line allows:
/// the logs go under `--out` (by their file names), a target that does not exist must be one
/// the command line named (`--target`) or lie under `--out`. Every path written is noted.
fn confine(
    plan: &mut Plan,
    args: &Grant,
    redirects: &[(Option<PathBuf>, PathBuf)],
    notes: &mut Vec<String>,
) -> Result<(), LabError> {
    let given = |p: &PathBuf| redirects.iter().any(|(_, new)| new == p) || p.starts_with(&args.out);
    for c in plan.configs_mut() {
        for b in &c.plan.bindings {
            for p in &b.paths {
                let shown = oio_core::text::printable(&p.display().to_string()).into_owned();
                match std::fs::symlink_metadata(p) {
                    Ok(_) => {}
                    Err(_) if given(p) || args.trust_plan_paths => notes.push(format!(
                        "target {shown} does not exist: it will be created{}",
                        c.plan
                            .target_options
                            .size
                            .map(|n| format!(" ({})", oio_core::units::format_size(n)))
                            .unwrap_or_default()
                    )),
                    Err(_) => return Err(LabError::Invalid(format!(
                        "the result names the target '{shown}', which does not exist: a rerun creates files only where its command line says (--target PATH, or a path under --out); give --trust-plan-paths to create the paths the result names"
                    ))),
                }
            }
        }
        for (what, log) in [
            ("latency log", &mut c.plan.lat_log),
            ("HdrHistogram log", &mut c.plan.hdr_log),
        ] {
            let Some(path) = log.as_mut() else { continue };
            if !args.trust_plan_paths && !path.starts_with(&args.out) {
                let name = path
                    .file_name()
                    .map(PathBuf::from)
                    .unwrap_or_else(|| PathBuf::from("oio"));
                *path = args.out.join(name);
            }
            notes.push(format!(
                "{what}: {}",
                oio_core::text::printable(&path.display().to_string())
            ));
        }
    }
    Ok(())
}

fn names(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| format!("'{}'", p.display()))
        .collect::<Vec<_>>()
        .join(", ")
}
