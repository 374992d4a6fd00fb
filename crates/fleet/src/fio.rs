//! fio's own client/server mode (`oio fleet fio`): for hosts that already run `fio --server`,
//! run `fio --client=HOST JOBFILE …` and import its JSON: the merged `All clients` record as
//! one `oio.run` result, and each client's record as its own.
//!
//! fio reports each client by the address it connected to, not by the name given, and
//! several clients on one address cannot be told apart by that; the per-client results are
//! therefore numbered in fio's order and carry fio's host name.

use oio_core::result::RunResult;
use serde_json::Value;

/// A fio client host that cannot be named to fio, or fio client output that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FioClientError(pub String);

/// One `--client` argument for fio from `HOST` or `HOST:PORT` (fio's own `HOST,PORT`).
pub fn client_arg(host: &str) -> Result<String, FioClientError> {
    client_arg_text(host).map_err(FioClientError)
}

/// [`client_arg`], its refusal in words.
fn client_arg_text(host: &str) -> Result<String, String> {
    let h = host.trim();
    if h.is_empty() || h.starts_with('-') || h.contains(char::is_whitespace) {
        return Err(format!("'{host}': expected HOST or HOST:PORT"));
    }
    Ok(match h.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => {
            let p: u16 = port
                .parse()
                .map_err(|_| format!("'{host}': the port must be a number from 1 to 65535"))?;
            if p == 0 || name.is_empty() {
                return Err(format!("'{host}': expected HOST or HOST:PORT"));
            }
            format!("{name},{p}")
        }
        _ => h.to_string(),
    })
}

/// The merged result and each client's, from fio's client/server JSON output.
pub fn import(
    file: &str,
    text: &str,
) -> Result<(RunResult, Vec<(String, RunResult)>), FioClientError> {
    import_text(file, text).map_err(FioClientError)
}

/// [`import`], its refusals in words.
fn import_text(file: &str, text: &str) -> Result<(RunResult, Vec<(String, RunResult)>), String> {
    let merged = oio_telemetry::fio::parse_json_result(file, text).map_err(|e| e.to_string())?;
    let start = text.find('{').ok_or("no JSON object in fio's output")?;
    let v: Value = serde_json::Deserializer::from_str(&text[start..])
        .into_iter::<Value>()
        .last()
        .ok_or("no JSON document in fio's output")?
        .map_err(|e| format!("{file}: {e}"))?;
    let Some(clients) = v.get("client_stats").and_then(Value::as_array) else {
        return Err(format!(
            "{file}: no client_stats: not the output of fio in client mode"
        ));
    };
    let mut per = Vec::new();
    for (i, c) in clients
        .iter()
        .filter(|c| c.get("jobname").and_then(Value::as_str) != Some("All clients"))
        .enumerate()
    {
        let host = c.get("hostname").and_then(Value::as_str).unwrap_or("?");
        let mut one = v.clone();
        one["client_stats"] = Value::Array(vec![c.clone()]);
        let r = oio_telemetry::fio::parse_json_result(file, &one.to_string())
            .map_err(|e| format!("client {i} ({host}): {e}"))?;
        per.push((format!("client{i}-{host}"), r));
    }
    Ok((merged, per))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_become_fio_client_arguments() {
        assert_eq!(client_arg("db1").unwrap(), "db1");
        assert_eq!(client_arg("127.0.0.1:8766").unwrap(), "127.0.0.1,8766");
        assert!(client_arg("db1:x").is_err());
        assert!(client_arg("db1:0").is_err());
        assert!(client_arg("--eta").is_err());
        assert!(client_arg("").is_err());
    }
}
