//! Database URLs: `sqlite:PATH` (the default, embedded) or `postgres://…`.

use crate::error::TpccError;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// The default database: an embedded SQLite file in the current directory.
pub const DEFAULT_URL: &str = "sqlite:./oio-tpcc.db";

/// Where the benchmark's database lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DbUrl {
    /// An embedded SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL server, as a libpq-style URL.
    Postgres(String),
}

/// The SQL dialect of a database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// Embedded SQLite.
    Sqlite,
    /// PostgreSQL (15 is what oio is tested against).
    Postgres,
}

impl DbUrl {
    /// The dialect to speak.
    pub fn dialect(&self) -> Dialect {
        match self {
            DbUrl::Sqlite(_) => Dialect::Sqlite,
            DbUrl::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The URL with any password replaced by `***`, for results and messages.
    pub fn redacted(&self) -> String {
        match self {
            DbUrl::Sqlite(p) => format!("sqlite:{}", p.display()),
            DbUrl::Postgres(u) => redact_password(u),
        }
    }
}

fn redact_password(url: &str) -> String {
    // postgres://user:secret@host/db → postgres://user:***@host/db
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, tail) = match rest.find('@') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => return url.to_string(),
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***{tail}"),
        None => url.to_string(),
    }
}

impl FromStr for DbUrl {
    type Err = TpccError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| TpccError::BadUrl {
            url: redact_password(s),
            reason: reason.to_string(),
        };
        if let Some(path) = s.strip_prefix("sqlite:") {
            // Accept sqlite:///abs/path and sqlite://rel too, as other tools write them.
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(bad("has no file path after 'sqlite:'"));
            }
            return Ok(DbUrl::Sqlite(PathBuf::from(path)));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            // Let the client parse it now so a typo fails before any work starts.
            s.parse::<postgres::Config>()
                .map_err(|e| bad(&format!("cannot be parsed ({e})")))?;
            return Ok(DbUrl::Postgres(s.to_string()));
        }
        Err(bad("has an unknown scheme"))
    }
}

impl fmt::Display for DbUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_forms_and_explains_bad_ones() {
        assert_eq!(
            "sqlite:./x.db".parse::<DbUrl>().unwrap(),
            DbUrl::Sqlite("./x.db".into())
        );
        assert_eq!(
            "sqlite:///tmp/x.db".parse::<DbUrl>().unwrap(),
            DbUrl::Sqlite("/tmp/x.db".into())
        );
        assert!(matches!(
            "postgres://u@127.0.0.1:5432/db".parse::<DbUrl>().unwrap(),
            DbUrl::Postgres(_)
        ));
        let e = "mysql://x".parse::<DbUrl>().unwrap_err().to_string();
        assert!(
            e.contains("sqlite:PATH") && e.contains("postgres://"),
            "{e}"
        );
        let e = "sqlite:".parse::<DbUrl>().unwrap_err().to_string();
        assert!(e.contains("no file path"), "{e}");
    }

    #[test]
    fn passwords_never_leak() {
        let u: DbUrl = "postgres://bob:hunter2@h/db".parse().unwrap();
        assert_eq!(u.redacted(), "postgres://bob:***@h/db");
    }
}
