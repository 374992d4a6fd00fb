//! Database URLs: `sqlite:PATH` (the default, embedded), `postgres://…`, `mysql://…` /
//! `mariadb://…` (MariaDB or MySQL), or `sqlserver://…` / `mssql://…` (SQL Server over TDS).
//!
//! Passwords are masked up to the last `@` of the authority, so a password containing `@`
//! never shows in part.

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
    /// A SQL Server (or other TDS server), as `sqlserver://user:password@host:port/db` (an
    /// `mssql://` URL is kept in this form).
    SqlServer(String),
}

/// The parts of a `sqlserver://` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TdsUrl {
    /// Login name.
    pub user: String,
    /// Password (empty when the URL has none).
    pub password: String,
    /// Host name or address.
    pub host: String,
    /// TCP port (1433 when not given).
    pub port: u16,
    /// Database.
    pub database: String,
}

impl TdsUrl {
    /// Parses `sqlserver://USER:PASSWORD@HOST[:PORT]/DATABASE`; the password may hold `@`
    /// (the host starts after the last one), `%XX` escapes are decoded in user and password.
    pub fn parse(url: &str) -> Result<TdsUrl, String> {
        let rest = url
            .strip_prefix("sqlserver://")
            .or_else(|| url.strip_prefix("mssql://"))
            .ok_or("does not start with sqlserver://")?;
        let (auth, hostpart) = match rest.rfind('@') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => {
                return Err(
                    "names no login (write sqlserver://USER:PASSWORD@HOST:PORT/DATABASE)".into(),
                )
            }
        };
        let (user, password) = auth.split_once(':').unwrap_or((auth, ""));
        let (hostport, database) = hostpart
            .split_once('/')
            .ok_or("names no database (write sqlserver://USER:PASSWORD@HOST:PORT/DATABASE)")?;
        let database = database.split('?').next().unwrap_or("");
        if database.is_empty() {
            return Err(
                "names no database (write sqlserver://USER:PASSWORD@HOST:PORT/DATABASE)".into(),
            );
        }
        // An IPv6 address is bracketed: the port follows the `]`.
        let (host, port) = match hostport.strip_prefix('[') {
            Some(v6) => v6.split_once(']').map(|(h, p)| (h, p.strip_prefix(':'))),
            None => Some(match hostport.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }),
        }
        .ok_or("has an unclosed '[' in its host")?;
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| format!("has port '{p}', expected a number from 1 to 65535"))?,
            None => 1433,
        };
        if host.is_empty() || user.is_empty() {
            return Err(
                "names no host or no user (write sqlserver://USER:PASSWORD@HOST:PORT/DATABASE)"
                    .into(),
            );
        }
        Ok(TdsUrl {
            user: percent_decode(user),
            password: percent_decode(password),
            host: host.to_string(),
            port,
            database: percent_decode(database),
        })
    }
}

/// `%XX` escapes decoded (a malformed one is kept as written).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub use oio_documents::tpcc::options::Dialect;

impl DbUrl {
    /// The dialect to speak.
    pub fn dialect(&self) -> Dialect {
        match self {
            DbUrl::Sqlite(_) => Dialect::Sqlite,
            DbUrl::Postgres(_) => Dialect::Postgres,
            DbUrl::Mysql(_) => Dialect::Mysql,
            DbUrl::SqlServer(_) => Dialect::Sqlserver,
        }
    }

    /// The URL with any password replaced by `***`, for results and messages.
    pub fn redacted(&self) -> String {
        match self {
            DbUrl::Sqlite(p) => format!("sqlite:{}", p.display()),
            DbUrl::Postgres(u) | DbUrl::Mysql(u) | DbUrl::SqlServer(u) => redact_password(u),
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
    match last_at(rest).map(|i| rest.split_at(i)) {
        Some((auth, tail)) => match auth.strip_suffix(":***") {
            Some(user) => format!("{scheme}://{user}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// Where the user information of a URL's text after `://` ends: its last `@` before any
/// query string (a password may contain `@`; the host part cannot).
fn last_at(rest: &str) -> Option<usize> {
    let end = rest.find('?').unwrap_or(rest.len());
    rest[..end].rfind('@')
}

fn redact_password(url: &str) -> String {
    // postgres://user:secret@host/db → postgres://user:***@host/db
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, tail) = match last_at(rest) {
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
        if s.starts_with("sqlserver://") || s.starts_with("mssql://") {
            TdsUrl::parse(s).map_err(|e| bad(&e))?;
            let rest = s.split_once("://").map(|p| p.1).unwrap_or_default();
            return Ok(DbUrl::SqlServer(format!("sqlserver://{rest}")));
        }
        Err(bad(
            "has an unknown scheme (expected sqlite:PATH, postgres://…, mysql://…, mariadb://… or sqlserver://…)",
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
    fn sqlserver_urls_and_passwords_with_at_signs() {
        let u: DbUrl = "mssql://sa:p@ss:w@rd@db1:51433/tpcc".parse().unwrap();
        assert_eq!(u.dialect(), Dialect::Sqlserver);
        assert_eq!(u.redacted(), "sqlserver://sa:***@db1:51433/tpcc");
        let DbUrl::SqlServer(raw) = &u else { panic!() };
        let t = TdsUrl::parse(raw).unwrap();
        assert_eq!(
            (
                t.user.as_str(),
                t.password.as_str(),
                t.host.as_str(),
                t.port
            ),
            ("sa", "p@ss:w@rd", "db1", 51433)
        );
        assert_eq!(t.database, "tpcc");
        let t = TdsUrl::parse("sqlserver://u:a%40b@h/x").unwrap();
        assert_eq!((t.password.as_str(), t.port), ("a@b", 1433));
        for (bad, why) in [
            ("sqlserver://u:p@h:1433", "names no database"),
            ("sqlserver://h:1433/db", "names no login"),
            ("sqlserver://u:p@h:x/db", "port 'x'"),
        ] {
            let e = bad.parse::<DbUrl>().unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
            assert!(!e.contains(":p@"), "{e}");
        }
        let e = "sqlserver://u:se@cret@h:x/db"
            .parse::<DbUrl>()
            .unwrap_err()
            .to_string();
        assert!(!e.contains("cret") && !e.contains("se@"), "{e}");
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
