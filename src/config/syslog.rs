//! Where `remote_syslog` (`-r`) sends the log: nats-server's URL forms.
//!
//! On Unix nats-server (`logger/syslog.go`) reads the value as a URL: `udp://host:port`
//! and `tcp://host:port` reach a syslog server over the network, `unix:///path` a local
//! socket; any other scheme is refused (`error invalid network type`). On Windows it reads
//! the value as the name of a host whose event log receives the lines
//! (`logger/syslog_windows.go`), and so does beaver.

use std::path::PathBuf;

/// The syslog port when a `udp://` or `tcp://` URL gives none (RFC 3164's).
pub const DEFAULT_SYSLOG_PORT: u16 = 514;

/// A parsed `remote_syslog` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyslogTarget {
    /// `udp://host[:port]`: one datagram per line; `host:port` (port 514 if absent).
    Udp(String),
    /// `tcp://host[:port]`: a stream of lines; `host:port` (port 514 if absent).
    Tcp(String),
    /// `unix:///path`: a local socket (datagram, or stream if the socket is one). Unix only.
    Unix(PathBuf),
    /// Windows: the event log of this host (any value).
    EventLogHost(String),
}

impl SyslogTarget {
    /// Parses `url`. Errors name the value and say what is accepted.
    ///
    /// ```
    /// use beaver::config::SyslogTarget;
    /// # if cfg!(windows) { return; }
    /// assert_eq!(
    ///     SyslogTarget::parse("udp://127.0.0.1:5514"),
    ///     Ok(SyslogTarget::Udp("127.0.0.1:5514".into()))
    /// );
    /// assert_eq!(
    ///     SyslogTarget::parse("tcp://logs"),
    ///     Ok(SyslogTarget::Tcp("logs:514".into()))
    /// );
    /// assert!(SyslogTarget::parse("http://logs").is_err());
    /// ```
    pub fn parse(url: &str) -> Result<SyslogTarget, String> {
        let bad = |why: String| format!("remote_syslog {url:?}: {why}");
        if cfg!(windows) {
            return match url {
                "" => Err(bad("no host".into())),
                host => Ok(SyslogTarget::EventLogHost(host.to_owned())),
            };
        }
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(bad(
                "not a URL (udp://host:port, tcp://host:port or unix:///path)".into(),
            ));
        };
        let host_port = || {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            if authority.is_empty() {
                return Err(bad("no host".into()));
            }
            // `host`, `host:port`, `[v6]`, `[v6]:port`.
            let has_port = match authority.rfind(']') {
                Some(close) => authority[close..].contains(':'),
                None => authority.contains(':'),
            };
            Ok(if has_port {
                authority.to_owned()
            } else {
                format!("{authority}:{DEFAULT_SYSLOG_PORT}")
            })
        };
        match scheme.to_ascii_lowercase().as_str() {
            "udp" => host_port().map(SyslogTarget::Udp),
            "tcp" => host_port().map(SyslogTarget::Tcp),
            "unix" => {
                if rest.starts_with('/') {
                    Ok(SyslogTarget::Unix(PathBuf::from(rest)))
                } else {
                    Err(bad(
                        "a unix:// URL needs an absolute path (unix:///dev/log)".into(),
                    ))
                }
            }
            other => Err(bad(format!(
                "invalid network type {other:?} (udp, tcp or unix)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn urls_as_nats_server_reads_them() {
        let ok = [
            (
                "udp://localhost:514",
                SyslogTarget::Udp("localhost:514".into()),
            ),
            ("UDP://10.0.0.1", SyslogTarget::Udp("10.0.0.1:514".into())),
            ("tcp://[::1]:6514", SyslogTarget::Tcp("[::1]:6514".into())),
            ("tcp://[::1]", SyslogTarget::Tcp("[::1]:514".into())),
            (
                "udp://logs:514/ignored",
                SyslogTarget::Udp("logs:514".into()),
            ),
        ];
        for (url, want) in ok {
            assert_eq!(SyslogTarget::parse(url), Ok(want), "{url}");
        }
        for url in ["udp://", "http://logs:514"] {
            let e = SyslogTarget::parse(url).unwrap_err();
            assert!(e.starts_with(&format!("remote_syslog {url:?}: ")), "{e}");
        }
        assert_eq!(
            SyslogTarget::parse("unix:///dev/log"),
            Ok(SyslogTarget::Unix("/dev/log".into()))
        );
        assert!(SyslogTarget::parse("unix://relative").is_err());
        assert!(SyslogTarget::parse("logs.example.com").is_err());
    }

    #[cfg(windows)]
    #[test]
    fn on_windows_the_value_is_an_event_log_host() {
        for host in ["logs.example.com", "udp://logs:514"] {
            assert_eq!(
                SyslogTarget::parse(host),
                Ok(SyslogTarget::EventLogHost(host.into()))
            );
        }
    }
}
