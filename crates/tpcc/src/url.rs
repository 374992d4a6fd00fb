//! Database URLs: `sqlite:PATH` (the default, embedded), `postgres://…`, or `mysql://…` /
//! `mariadb://…` (MariaDB or MySQL).

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
    /// A MariaDB or MySQL server, as a `mysql://user:password@host:port/db` URL (a
    /// `mariadb://` URL is kept in this form).
    Mysql(String),
}

pub use oio_documents::tpcc::options::Dialect;

impl DbUrl {
    /// The dialect to speak.
    pub fn dialect(&self) -> Dialect {
        match self {
            DbUrl::Sqlite(_) => Dialect::Sqlite,
            DbUrl::Postgres(_) => Dialect::Postgres,
            DbUrl::Mysql(_) => Dialect::Mysql,
        }
    }

    /// The URL with any password replaced by `***`, for results and messages.
    pub fn redacted(&self) -> String {
        match self {
            DbUrl::Sqlite(p) => format!("sqlite:{}", p.display()),
            DbUrl::Postgres(u) | DbUrl::Mysql(u) => redact_password(u),
        }
    }
}

/// A URL as a result recorded it ([`DbUrl::redacted`]), with the `***` that stands for the
/// password removed, so that connecting takes the password from the environment
/// (PGPASSWORD, MYSQL_PWD) instead of sending `***`.
pub fn without_redacted_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.find('@').map(|i| rest.split_at(i)) {
        Some((auth, tail)) => match auth.strip_suffix(":***") {
            Some(user) => format!("{scheme}://{user}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
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
        if let Some(rest) = s
            .strip_prefix("mysql://")
            .or_else(|| s.strip_prefix("mariadb://"))
        {
            let u = format!("mysql://{rest}");
            mysql::Opts::from_url(&u).map_err(|e| bad(&format!("cannot be parsed ({e})")))?;
            if !rest.contains('/') || rest.ends_with('/') {
                return Err(bad(
                    "names no database (write mysql://user:password@host:port/DATABASE)",
                ));
            }
            return Ok(DbUrl::Mysql(u));
        }
        Err(bad(
            "has an unknown scheme (expected sqlite:PATH, postgres://…, mysql://… or mariadb://…)",
        ))
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
        let e = "oracle://x".parse::<DbUrl>().unwrap_err().to_string();
        assert!(
            e.contains("sqlite:PATH") && e.contains("postgres://"),
            "{e}"
        );
        let e = "sqlite:".parse::<DbUrl>().unwrap_err().to_string();
        assert!(e.contains("no file path"), "{e}");
    }

    #[test]
    fn mysql_and_mariadb_urls() {
        let u: DbUrl = "mariadb://oio:pw@127.0.0.1:3306/tpcc".parse().unwrap();
        assert_eq!(u, DbUrl::Mysql("mysql://oio:pw@127.0.0.1:3306/tpcc".into()));
        assert_eq!(u.dialect(), Dialect::Mysql);
        assert_eq!(u.redacted(), "mysql://oio:***@127.0.0.1:3306/tpcc");
        let e = "mysql://oio@127.0.0.1:3306"
            .parse::<DbUrl>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("names no database"), "{e}");
    }

    #[test]
    fn passwords_never_leak() {
        let u: DbUrl = "postgres://bob:hunter2@h/db".parse().unwrap();
        assert_eq!(u.redacted(), "postgres://bob:***@h/db");
        assert_eq!(
            without_redacted_password(&u.redacted()),
            "postgres://bob@h/db"
        );
        assert_eq!(
            without_redacted_password("postgres://bob:real@h/db"),
            "postgres://bob:real@h/db"
        );
        assert_eq!(without_redacted_password("sqlite:./x.db"), "sqlite:./x.db");
    }
}

/// Whether a database host named in a URL is this machine: a loopback name or address, or an
/// address assigned to one of this machine's interfaces (a server in a lab network or a
/// network namespace listens on such an address, not on 127.0.0.1). Names other than
/// `localhost` are not resolved: a lookup could wait on DNS, and a wrong "remote" only means
/// the device under the database is not recorded (the result says so).
pub fn is_this_machine(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.is_loopback() => true,
        // Binding succeeds only to an address one of this machine's interfaces holds; nothing
        // is sent and the socket closes at once.
        Ok(ip) if !ip.is_unspecified() => std::net::UdpSocket::bind((ip, 0)).is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod this_machine {
    use super::is_this_machine;

    #[test]
    fn loopback_is_this_machine_and_a_foreign_address_is_not() {
        assert!(is_this_machine("localhost"));
        assert!(is_this_machine("127.0.0.1"));
        assert!(is_this_machine("[::1]"));
        // TEST-NET-3 (RFC 5737): never assigned to a real interface.
        assert!(!is_this_machine("203.0.113.7"));
        assert!(!is_this_machine("0.0.0.0"));
        assert!(!is_this_machine("db1.example"));
    }
}
