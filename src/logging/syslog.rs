//! Log lines to syslog, as nats-server's `logger/syslog.go` sends them (through Go's
//! `log/syslog`), byte for byte but for the names: the `syslog` crate's sockets (a TCP one
//! of ours, with timeouts), and
//! [`GoFormat`], the messages Go writes.
//!
//! - `syslog` (`-s`): the local syslog socket (`/dev/log`, `/var/run/syslog` or
//!   `/var/run/log`), facility `daemon`: `<29>Dec  2 03:40:54 beaver[1234]: message\n`.
//! - `remote_syslog` (`-r`): `udp://`, `tcp://` or `unix://`, facility `kern` (0: nats-server
//!   dials with `LOG_DEBUG` as the priority, whose facility bits are zero), an RFC 3339
//!   timestamp and the hostname: `<5>2026-12-02T03:40:54Z host beaver[1234]: message\n`.
//!
//! The level is the severity, not a tag in the text, with nats-server's mapping: info is
//! `notice`, warnings `warning`, errors `err`, debug `debug`, and trace `notice`. Every
//! message ends in a newline (the frame delimiter on TCP). The tag is the program's name,
//! the time local (the offset `logging` read at start-up).
//!
//! One line at a time goes to the socket, under a `parking_lot::Mutex`: a leaf lock, taken
//! under the logger's read lock and under whatever lock the caller holds, taking none. A
//! write that fails (the daemon restarted, the TCP peer went away) reconnects once and
//! retries, as Go's writer does; if that fails too the line is lost (there is nowhere to
//! report it), and so is every line for the next [`RETRY_AFTER`], without trying: a syslog
//! server that is down must not make every logging thread wait for a connection in turn.

use crate::config::SyslogTarget;
use ::syslog::{Facility, Formatter3164, LogFormat, Logger, LoggerBackend, Severity};
use log::Level;
use parking_lot::Mutex;
use std::fmt;
use std::io::{BufWriter, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The longest a TCP syslog server may take to accept the connection, or one line.
const TCP_TIMEOUT: Duration = Duration::from_secs(2);

/// After a failed reconnection, lines are dropped for this long before the next attempt.
pub(super) const RETRY_AFTER: Duration = Duration::from_secs(5);

/// Go's `log/syslog` message format (see the module docs).
#[derive(Debug, Clone)]
pub(super) struct GoFormat {
    facility: Facility,
    /// `Some` for `remote_syslog`: its RFC 3339 timestamp and this host's name; `None`
    /// for the local socket: a `Stamp` timestamp (`Jan _2 15:04:05`) and no hostname.
    hostname: Option<String>,
    tag: String,
    pid: u32,
}

impl GoFormat {
    /// The timestamp Go writes, local time.
    fn timestamp(&self) -> String {
        let now = time::OffsetDateTime::now_utc();
        let now = match super::OFFSET.get() {
            Some(Some(offset)) => now.to_offset(*offset),
            _ => now,
        };
        let formatted = if self.hostname.is_some() {
            let base = now.format(time::macros::format_description!(
                "[year]-[month]-[day]T[hour]:[minute]:[second]"
            ));
            let (h, m, _) = now.offset().as_hms();
            base.map(|b| match (h, m) {
                (0, 0) => format!("{b}Z"),
                (h, m) => format!(
                    "{b}{}{:02}:{:02}",
                    if h < 0 || m < 0 { '-' } else { '+' },
                    h.unsigned_abs(),
                    m.unsigned_abs()
                ),
            })
        } else {
            now.format(time::macros::format_description!(
                "[month repr:short] [day padding:space] [hour]:[minute]:[second]"
            ))
        };
        formatted.unwrap_or_default()
    }
}

impl<T: fmt::Display> LogFormat<T> for GoFormat {
    fn format<W: Write>(&self, w: &mut W, severity: Severity, message: T) -> ::syslog::Result<()> {
        let priority = self.facility as u8 | severity as u8;
        let stamp = self.timestamp();
        match &self.hostname {
            Some(host) => write!(
                w,
                "<{priority}>{stamp} {host} {}[{}]: {message}",
                self.tag, self.pid
            ),
            None => write!(
                w,
                "<{priority}>{stamp} {}[{}]: {message}",
                self.tag, self.pid
            ),
        }
        .map_err(::syslog::Error::Write)
    }
}

/// Where the connection goes, to reconnect.
#[derive(Debug, Clone)]
enum Endpoint {
    /// The local syslog socket.
    Local,
    /// A `remote_syslog` URL (not an event log host).
    Remote(SyslogTarget),
}

/// A connection to syslog; what `logging`'s `Sink::Syslog` holds.
pub(super) struct Syslog {
    endpoint: Endpoint,
    formatter: GoFormat,
    conn: Mutex<Conn>,
}

/// The connection, or when to try again.
enum Conn {
    Up(Logger<LoggerBackend, GoFormat>),
    /// A reconnection failed: lines are dropped until then.
    Down(Instant),
}

impl Syslog {
    /// The local syslog socket; `tag` names the program in each message.
    pub(super) fn local(tag: &str) -> Result<Syslog, String> {
        let formatter = GoFormat {
            facility: Facility::LOG_DAEMON,
            hostname: None,
            tag: tag.to_owned(),
            pid: std::process::id(),
        };
        Syslog::open(Endpoint::Local, formatter)
    }

    /// The `remote_syslog` server `target` (`Udp`, `Tcp` or `Unix`).
    pub(super) fn remote(target: &SyslogTarget, tag: &str) -> Result<Syslog, String> {
        let formatter = GoFormat {
            facility: Facility::LOG_KERN,
            // The crate's default formatter finds the hostname (with the `hostname` crate).
            hostname: Some(Formatter3164::default().hostname.unwrap_or_default()),
            tag: tag.to_owned(),
            pid: std::process::id(),
        };
        Syslog::open(Endpoint::Remote(target.clone()), formatter)
    }

    fn open(endpoint: Endpoint, formatter: GoFormat) -> Result<Syslog, String> {
        let logger = connect(&endpoint, &formatter)?;
        Ok(Syslog {
            endpoint,
            formatter,
            conn: Mutex::new(Conn::Up(logger)),
        })
    }

    /// Sends one line at `level`'s severity.
    pub(super) fn log(&self, level: Level, args: &fmt::Arguments) {
        let line = format!("{args}\n");
        let mut conn = self.conn.lock();
        match &mut *conn {
            Conn::Up(logger) => {
                if send(logger, level, &line).is_ok() {
                    return;
                }
            }
            Conn::Down(until) if Instant::now() < *until => return,
            Conn::Down(_) => {}
        }
        *conn = match connect(&self.endpoint, &self.formatter) {
            Ok(mut logger) => match send(&mut logger, level, &line) {
                Ok(()) => Conn::Up(logger),
                Err(_) => Conn::Down(Instant::now() + RETRY_AFTER),
            },
            Err(_) => Conn::Down(Instant::now() + RETRY_AFTER),
        };
    }
}

/// nats-server's severities (see the module docs).
fn send(
    logger: &mut Logger<LoggerBackend, GoFormat>,
    level: Level,
    line: &str,
) -> ::syslog::Result<()> {
    match level {
        Level::Error => logger.err(line),
        Level::Warn => logger.warning(line),
        Level::Info | Level::Trace => logger.notice(line),
        Level::Debug => logger.debug(line),
    }
}

fn connect(
    endpoint: &Endpoint,
    formatter: &GoFormat,
) -> Result<Logger<LoggerBackend, GoFormat>, String> {
    let f = formatter.clone();
    let r = match endpoint {
        Endpoint::Local => ::syslog::unix(f),
        Endpoint::Remote(SyslogTarget::Udp(addr)) => {
            let server = resolve(addr)?;
            let local = if server.is_ipv4() {
                "0.0.0.0:0"
            } else {
                "[::]:0"
            };
            ::syslog::udp(f, local, server)
        }
        Endpoint::Remote(SyslogTarget::Tcp(addr)) => {
            // Our own stream rather than `syslog::tcp`'s, for its timeouts: a syslog server
            // that stops reading must not hold every logging thread (each line is written
            // under the locks its caller holds) for longer than `TCP_TIMEOUT` a line.
            let server = resolve(addr)?;
            let stream = TcpStream::connect_timeout(&server, TCP_TIMEOUT)
                .and_then(|s| s.set_write_timeout(Some(TCP_TIMEOUT)).map(|()| s))
                .map_err(|e| format!("{addr}: {e}"))?;
            return Ok(Logger {
                formatter: f,
                backend: LoggerBackend::Tcp(BufWriter::new(stream)),
            });
        }
        Endpoint::Remote(SyslogTarget::Unix(path)) => ::syslog::unix_custom(f, path),
        Endpoint::Remote(SyslogTarget::EventLogHost(host)) => {
            return Err(format!("{host} is an event log host, not a syslog server"))
        }
    };
    r.map_err(|e| error_text(&e))
}

/// The first address `host:port` resolves to.
fn resolve(addr: &str) -> Result<std::net::SocketAddr, String> {
    addr.to_socket_addrs()
        .map_err(|e| format!("{addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr}: no address"))
}

/// The crate's error with its cause (`Initialization` alone says little).
fn error_text(e: &::syslog::Error) -> String {
    match e {
        ::syslog::Error::Initialization(cause) => cause.to_string(),
        other => other.to_string(),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::net::UnixDatagram;

    /// The local socket's form, as Go's `log/syslog` writes it there: facility `daemon`, a
    /// `Stamp` timestamp (`Dec  2 03:40:54`), no hostname.
    #[test]
    fn local_messages_have_gos_local_form() {
        let f = GoFormat {
            facility: Facility::LOG_DAEMON,
            hostname: None,
            tag: "beaver".into(),
            pid: 42,
        };
        let mut out = Vec::new();
        f.format(&mut out, Severity::LOG_NOTICE, "Server is ready\n")
            .unwrap();
        let s = String::from_utf8(out).unwrap();
        let (pri, rest) = s.split_once('>').unwrap();
        assert_eq!(pri, "<29"); // daemon (3 << 3) | notice (5)
        let (stamp, rest) = rest.split_at(15);
        assert_eq!(rest, " beaver[42]: Server is ready\n");
        let b = stamp.as_bytes();
        assert!(b[..3].iter().all(u8::is_ascii_alphabetic), "{stamp:?}");
        assert_eq!(
            (b[3], b[6], b[9], b[12]),
            (b' ', b' ', b':', b':'),
            "{stamp:?}"
        );
    }

    /// A syslog server that is gone: the line is dropped, and for `RETRY_AFTER` the next
    /// ones are dropped without a connection attempt.
    #[test]
    fn a_server_that_is_gone_is_not_retried_for_every_line() {
        let dir = std::env::temp_dir().join(format!("beaver-syslog-gone-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.sock");
        let daemon = UnixDatagram::bind(&path).unwrap();
        let s = Syslog::remote(&SyslogTarget::Unix(path.clone()), "beaver").unwrap();
        drop(daemon);
        std::fs::remove_file(&path).unwrap();
        s.log(Level::Info, &format_args!("lost"));
        assert!(matches!(*s.conn.lock(), Conn::Down(_)));
        // A daemon back at once is not tried until RETRY_AFTER has passed.
        let daemon = UnixDatagram::bind(&path).unwrap();
        daemon.set_nonblocking(true).unwrap();
        s.log(Level::Info, &format_args!("dropped"));
        let mut buf = [0u8; 256];
        assert!(daemon.recv(&mut buf).is_err(), "nothing sent while down");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A datagram per line on a `unix://` socket: nats-server's severities, the tag and pid,
    /// the text without a level tag, a newline at the end; facility `kern` (0) for
    /// `remote_syslog`.
    #[test]
    fn lines_reach_a_unix_socket_with_nats_servers_severities() {
        let dir = std::env::temp_dir().join(format!("beaver-syslog-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.sock");
        let daemon = UnixDatagram::bind(&path).unwrap();
        let s = Syslog::remote(&SyslogTarget::Unix(path.clone()), "beaver").unwrap();
        let mut buf = [0u8; 512];
        for (level, pri) in [
            (Level::Info, 5),
            (Level::Warn, 4),
            (Level::Error, 3),
            (Level::Debug, 7),
            (Level::Trace, 5),
        ] {
            s.log(level, &format_args!("Server is ready"));
            let n = daemon.recv(&mut buf).unwrap();
            let msg = std::str::from_utf8(&buf[..n]).unwrap();
            assert!(msg.starts_with(&format!("<{pri}>")), "{level}: {msg}");
            assert!(
                msg.ends_with(&format!(
                    " beaver[{}]: Server is ready\n",
                    std::process::id()
                )),
                "{msg}"
            );
        }
        drop(daemon);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
