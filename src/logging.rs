//! Logging in nats-server's shape: `2026/11/30 03:04:47.386325 [INF] message`, through `log`
//! and `simplelog`.
//!
//! simplelog writes the line (to stderr or the `-l` file) and its timestamp; a thin wrapper
//! adds nats-server's three-letter level tags (`[INF]`, `[DBG]`, `[TRC]`, `[WRN]`, `[ERR]`),
//! which harnesses and people grep for, and applies nats-server's rule that `-V` (trace)
//! does not imply `-D` (debug).
//!
//! The logger can be rebuilt while the server runs: [`reconfigure`] after a configuration
//! reload (SIGHUP: `debug`, `trace`, `logtime`, `logfile`), [`reopen`] to reopen the log file
//! after rotation (SIGUSR1). The active logger sits behind a `parking_lot::RwLock`: logging
//! takes the read side (uncontended, as nothing writes except those two rare calls).

use crate::config::Config;
use log::{Level, LevelFilter, Log, Metadata, Record};
use parking_lot::RwLock;
use simplelog::{ColorChoice, ConfigBuilder, SharedLogger, TermLogger, TerminalMode, WriteLogger};
use std::fs::OpenOptions;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The settings a logger is built from.
#[derive(Clone, PartialEq, Eq)]
struct Settings {
    debug: bool,
    trace: bool,
    logtime: bool,
    logfile: Option<PathBuf>,
}

impl Settings {
    fn of(config: &Config) -> Settings {
        Settings {
            debug: config.debug,
            trace: config.trace,
            logtime: config.logtime,
            logfile: config.logfile.clone(),
        }
    }
}

struct Active {
    inner: Box<dyn SharedLogger>,
    settings: Settings,
}

struct NatsStyle {
    active: RwLock<Active>,
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
        (metadata.level() != Level::Debug || active.settings.debug)
            && active.inner.enabled(metadata)
    }

    fn log(&self, record: &Record) {
        let active = self.active.read();
        if !((record.level() != Level::Debug || active.settings.debug)
            && active.inner.enabled(record.metadata()))
        {
            return;
        }
        active.inner.log(
            &Record::builder()
                .args(format_args!("[{}] {}", tag(record.level()), record.args()))
                .level(record.level())
                .target(record.target())
                .build(),
        );
    }

    fn flush(&self) {
        self.active.read().inner.flush();
    }
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

/// Installs the logger for `config` (`debug`, `trace`, `logtime`, `logfile`). Call once,
/// before starting threads (the local time offset is read here).
pub fn init(config: &Config) -> Result<(), String> {
    OFFSET.get_or_init(|| time::UtcOffset::current_local_offset().ok());
    let settings = Settings::of(config);
    let level = level_of(&settings);
    let inner = build(&settings)?;
    let logger: &'static NatsStyle = Box::leak(Box::new(NatsStyle {
        active: RwLock::new(Active { inner, settings }),
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
    let settings = Settings::of(config);
    if logger.active.read().settings == settings {
        return Ok(());
    }
    let inner = build(&settings)?;
    let level = level_of(&settings);
    *logger.active.write() = Active { inner, settings };
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
    if settings.logfile.is_none() {
        return Ok(());
    }
    let inner = build(&settings)?;
    logger.active.write().inner = inner;
    Ok(())
}

/// Builds simplelog's logger for `settings`.
fn build(settings: &Settings) -> Result<Box<dyn SharedLogger>, String> {
    let level = level_of(settings);
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
    Ok(match &settings.logfile {
        Some(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open log file {}: {e}", path.display()))?;
            WriteLogger::new(level, sl_config, file)
        }
        None => TermLogger::new(level, sl_config, TerminalMode::Stderr, ColorChoice::Never),
    })
}
