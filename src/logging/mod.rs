//! Logging in nats-server's shape: `2026/11/30 03:04:47.386325 [INF] message`, through `log`
//! and `simplelog`; or to syslog, or to the Windows event log.
//!
//! Where lines go is nats-server's choice (`server/log.go`, `ConfigureLogger`), in this
//! order: the `logfile` if one is set; else the `remote_syslog` server; else the local
//! syslog (the Windows event log on Windows) if `syslog` is set, or if the process runs as a
//! Windows service (which has no console to write to); else stderr.
//!
//! For stderr and the file, simplelog writes the line and its timestamp; a thin wrapper adds
//! nats-server's three-letter level tags (`[INF]`, `[DBG]`, `[TRC]`, `[WRN]`, `[ERR]`),
//! which harnesses and people grep for. Syslog (`syslog` module) and the event log
//! (`eventlog` module) carry the level as a severity or an event type instead. Everywhere,
//! nats-server's rule that `-V` (trace) does not imply `-D` (debug) applies.
//!
//! The logger can be rebuilt while the server runs: [`reconfigure`] after a configuration
//! reload (SIGHUP: `debug`, `trace`, `logtime`, `logfile`, `syslog`, `remote_syslog`),
//! [`reopen`] to reopen the log file after rotation (SIGUSR1). The active logger sits behind
//! a `parking_lot::RwLock`: logging takes the read side (uncontended, as nothing writes
//! except those two rare calls).

#[cfg(windows)]
#[allow(unsafe_code)] // Win32 calls; see the module docs.
mod eventlog;
#[cfg(unix)]
mod syslog;

use crate::config::{Config, SyslogTarget};
use log::{Level, LevelFilter, Log, Metadata, Record};
use parking_lot::RwLock;
use simplelog::{ColorChoice, ConfigBuilder, SharedLogger, TermLogger, TerminalMode, WriteLogger};
use std::fs::OpenOptions;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Where the lines go (see the module docs for the order of choice).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Destination {
    /// stderr.
    Stderr,
    /// `logfile`.
    File(PathBuf),
    /// `remote_syslog`.
    Remote(SyslogTarget),
    /// `syslog`, or a Windows service: the local syslog, or the Windows event log.
    Local,
}

/// The settings a logger is built from.
#[derive(Clone, PartialEq, Eq)]
struct Settings {
    debug: bool,
    trace: bool,
    logtime: bool,
    destination: Destination,
    /// Syslog's tag, the event log's source: `syslog_name`, or the program's name.
    name: String,
}

impl Settings {
    /// `service`: the process runs as a Windows service (see [`init_service`]).
    fn of(config: &Config, service: bool) -> Settings {
        let remote = config
            .remote_syslog
            .as_deref()
            .and_then(|url| SyslogTarget::parse(url).ok());
        let destination = match (&config.logfile, remote) {
            (Some(path), _) => Destination::File(path.clone()),
            (None, Some(target)) => Destination::Remote(target),
            (None, None) if config.syslog || service => Destination::Local,
            (None, None) => Destination::Stderr,
        };
        Settings {
            debug: config.debug,
            trace: config.trace,
            logtime: config.logtime,
            destination,
            name: config
                .syslog_name
                .clone()
                .filter(|n| !n.is_empty())
                .unwrap_or_else(crate::signals::program_name),
        }
    }
}

/// Where the active logger writes.
enum Sink {
    /// stderr or the log file, through simplelog: the level is a tag in the line.
    Lines(Box<dyn SharedLogger>),
    /// A syslog socket: the level is the message's severity.
    #[cfg(unix)]
    Syslog(syslog::Syslog),
    /// The Windows event log: the level is the event's type.
    #[cfg(windows)]
    EventLog(eventlog::EventLog),
}

impl Sink {
    fn enabled(&self, metadata: &Metadata) -> bool {
        match self {
            Sink::Lines(inner) => inner.enabled(metadata),
            _ => true,
        }
    }

    fn flush(&self) {
        if let Sink::Lines(inner) = self {
            inner.flush();
        }
    }
}

struct Active {
    sink: Sink,
    settings: Settings,
}

struct NatsStyle {
    active: RwLock<Active>,
    /// Whether the process runs as a Windows service (its default destination is then the
    /// event log).
    service: bool,
}

/// The installed logger (set once by [`init`]).
static LOGGER: OnceLock<&'static NatsStyle> = OnceLock::new();

/// The local time offset, read once at [`init`] (before other threads start: `time` refuses
/// to read it later on Unix).
static OFFSET: OnceLock<Option<time::UtcOffset>> = OnceLock::new();

fn tag(level: Level) -> &'static str {
    match level {
        Level::Error => "ERR",
        Level::Warn => "WRN",
        Level::Info => "INF",
        Level::Debug => "DBG",
        Level::Trace => "TRC",
    }
}

impl Log for NatsStyle {
    fn enabled(&self, metadata: &Metadata) -> bool {
        let active = self.active.read();
        wanted(&active.settings, metadata) && active.sink.enabled(metadata)
    }

    fn log(&self, record: &Record) {
        let active = self.active.read();
        if !(wanted(&active.settings, record.metadata()) && active.sink.enabled(record.metadata()))
        {
            return;
        }
        match &active.sink {
            Sink::Lines(inner) => inner.log(
                &Record::builder()
                    .args(format_args!("[{}] {}", tag(record.level()), record.args()))
                    .level(record.level())
                    .target(record.target())
                    .build(),
            ),
            #[cfg(unix)]
            Sink::Syslog(s) => s.log(record.level(), record.args()),
            #[cfg(windows)]
            Sink::EventLog(e) => {
                // Nowhere to report a refused event.
                let _ = e.log(record.level(), record.args());
            }
        }
    }

    fn flush(&self) {
        self.active.read().sink.flush();
    }
}

/// Whether `settings` log a line of this level and target: beaver's own lines (not its
/// libraries'), at the level set, and debug lines only with `debug` (`-V` alone traces
/// without them, as nats-server).
fn wanted(settings: &Settings, metadata: &Metadata) -> bool {
    metadata.level() <= level_of(settings)
        && (metadata.level() != Level::Debug || settings.debug)
        && metadata.target().starts_with("beaver")
}

fn level_of(settings: &Settings) -> LevelFilter {
    if settings.trace {
        LevelFilter::Trace
    } else if settings.debug {
        LevelFilter::Debug
    } else {
        LevelFilter::Info
    }
}

/// Installs the logger for `config` (`debug`, `trace`, `logtime`, `logfile`, `syslog`,
/// `remote_syslog`). Call once, before starting threads (the local time offset is read
/// here). Errors: the log file cannot be opened, or syslog cannot be reached (nats-server
/// stops there too: `error connecting to syslog`).
pub fn init(config: &Config) -> Result<(), String> {
    install(config, false)
}

/// [`init`] for a process that runs as a Windows service: with neither `logfile` nor
/// `remote_syslog`, lines go to the event log (a service has no console), as nats-server's
/// do.
pub fn init_service(config: &Config) -> Result<(), String> {
    install(config, true)
}

fn install(config: &Config, service: bool) -> Result<(), String> {
    OFFSET.get_or_init(|| time::UtcOffset::current_local_offset().ok());
    let settings = Settings::of(config, service);
    let level = level_of(&settings);
    let sink = build(&settings)?;
    let logger: &'static NatsStyle = Box::leak(Box::new(NatsStyle {
        active: RwLock::new(Active { sink, settings }),
        service,
    }));
    log::set_logger(logger).map_err(|e| e.to_string())?;
    let _ = LOGGER.set(logger);
    log::set_max_level(level);
    Ok(())
}

/// Rebuilds the logger for a reloaded `config` if its logging settings changed. On error
/// (the new log file cannot be opened) the current logger stays.
pub fn reconfigure(config: &Config) -> Result<(), String> {
    let Some(logger) = LOGGER.get() else {
        return Ok(());
    };
    let settings = Settings::of(config, logger.service);
    if logger.active.read().settings == settings {
        return Ok(());
    }
    let sink = build(&settings)?;
    let level = level_of(&settings);
    *logger.active.write() = Active { sink, settings };
    log::set_max_level(level);
    Ok(())
}

/// Reopens the log file (SIGUSR1, after log rotation): later lines go to a file of the
/// same name, created if it was moved away. Nothing to do when logging to stderr.
pub fn reopen() -> Result<(), String> {
    let Some(logger) = LOGGER.get() else {
        return Ok(());
    };
    let settings = logger.active.read().settings.clone();
    if !matches!(settings.destination, Destination::File(_)) {
        return Ok(());
    }
    let sink = build(&settings)?;
    logger.active.write().sink = sink;
    Ok(())
}

/// Builds the sink for `settings`.
fn build(settings: &Settings) -> Result<Sink, String> {
    let level = level_of(settings);
    match &settings.destination {
        Destination::Remote(target) => {
            return remote(target, &settings.name).map_err(connect_error)
        }
        Destination::Local => return local(&settings.name).map_err(connect_error),
        Destination::Stderr | Destination::File(_) => {}
    }
    let mut builder = ConfigBuilder::new();
    builder
        .set_level_padding(simplelog::LevelPadding::Off)
        .set_max_level(LevelFilter::Off) // the level is our tag, not simplelog's
        .set_target_level(LevelFilter::Off)
        .set_thread_level(LevelFilter::Off)
        .set_location_level(LevelFilter::Off)
        .add_filter_allow_str("beaver");
    if settings.logtime {
        builder
            .set_time_level(LevelFilter::Error)
            .set_time_format_custom(time::macros::format_description!(
                "[year]/[month]/[day] [hour]:[minute]:[second].[subsecond digits:6]"
            ));
        // nats-server logs local time; UTC if the offset is unknown.
        if let Some(Some(offset)) = OFFSET.get() {
            builder.set_time_offset(*offset);
        }
    } else {
        builder.set_time_level(LevelFilter::Off);
    }
    let sl_config = builder.build();
    Ok(Sink::Lines(match &settings.destination {
        Destination::File(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open log file {}: {e}", path.display()))?;
            WriteLogger::new(level, sl_config, file)
        }
        _ => TermLogger::new(level, sl_config, TerminalMode::Stderr, ColorChoice::Never),
    }))
}

/// nats-server's words when syslog cannot be reached (`error connecting to syslog`).
fn connect_error(e: String) -> String {
    format!("error connecting to syslog: {e}")
}

/// The `remote_syslog` sink.
fn remote(target: &SyslogTarget, name: &str) -> Result<Sink, String> {
    match target {
        #[cfg(windows)]
        SyslogTarget::EventLogHost(host) => {
            eventlog::EventLog::open(name, Some(host)).map(Sink::EventLog)
        }
        #[cfg(windows)]
        other => Err(format!("{other:?}: not reachable from Windows")),
        #[cfg(unix)]
        SyslogTarget::EventLogHost(host) => Err(format!(
            "{host}: a remote event log is only reachable from Windows"
        )),
        #[cfg(unix)]
        target => syslog::Syslog::remote(target, name).map(Sink::Syslog),
    }
}

/// The `syslog` sink: the local syslog socket, or the Windows event log.
fn local(name: &str) -> Result<Sink, String> {
    #[cfg(windows)]
    return eventlog::EventLog::open(name, None).map(Sink::EventLog);
    #[cfg(unix)]
    syslog::Syslog::local(name).map(Sink::Syslog)
}
