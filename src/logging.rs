//! Logging in nats-server's shape: `2026/11/30 03:04:47.386325 [INF] message`, through `log`
//! and `simplelog`.
//!
//! simplelog writes the line (to stderr or the `-l` file) and its timestamp; a thin wrapper
//! adds nats-server's three-letter level tags (`[INF]`, `[DBG]`, `[TRC]`, `[WRN]`, `[ERR]`),
//! which harnesses and people grep for, and applies nats-server's rule that `-V` (trace)
//! does not imply `-D` (debug).

use crate::config::Config;
use log::{Level, LevelFilter, Log, Metadata, Record};
use simplelog::{ColorChoice, ConfigBuilder, SharedLogger, TermLogger, TerminalMode, WriteLogger};
use std::fs::OpenOptions;

struct NatsStyle {
    inner: Box<dyn SharedLogger>,
    debug: bool,
}

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
        (metadata.level() != Level::Debug || self.debug) && self.inner.enabled(metadata)
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        self.inner.log(
            &Record::builder()
                .args(format_args!("[{}] {}", tag(record.level()), record.args()))
                .level(record.level())
                .target(record.target())
                .build(),
        );
    }

    fn flush(&self) {
        self.inner.flush();
    }
}

/// Installs the logger for `config` (`debug`, `trace`, `logtime`, `logfile`). Call once,
/// before starting threads (the local time offset is read here).
pub fn init(config: &Config) -> Result<(), String> {
    let level = if config.trace {
        LevelFilter::Trace
    } else if config.debug {
        LevelFilter::Debug
    } else {
        LevelFilter::Info
    };
    let mut builder = ConfigBuilder::new();
    builder
        .set_level_padding(simplelog::LevelPadding::Off)
        .set_max_level(LevelFilter::Off) // the level is our tag, not simplelog's
        .set_target_level(LevelFilter::Off)
        .set_thread_level(LevelFilter::Off)
        .set_location_level(LevelFilter::Off)
        .add_filter_allow_str("beaver");
    if config.logtime {
        builder
            .set_time_level(LevelFilter::Error)
            .set_time_format_custom(time::macros::format_description!(
                "[year]/[month]/[day] [hour]:[minute]:[second].[subsecond digits:6]"
            ));
        // nats-server logs local time; fall back to UTC if the offset is unknown.
        let _ = builder.set_time_offset_to_local();
    } else {
        builder.set_time_level(LevelFilter::Off);
    }
    let sl_config = builder.build();
    let inner: Box<dyn SharedLogger> = match &config.logfile {
        Some(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open log file {}: {e}", path.display()))?;
            WriteLogger::new(level, sl_config, file)
        }
        None => TermLogger::new(level, sl_config, TerminalMode::Stderr, ColorChoice::Never),
    };
    log::set_boxed_logger(Box::new(NatsStyle {
        inner,
        debug: config.debug,
    }))
    .map_err(|e| e.to_string())?;
    log::set_max_level(level);
    Ok(())
}
