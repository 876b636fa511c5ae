//! Reading a configuration file into [`Config`], with errors that name the key and line.
//! `Config.toml` is read here; nats-server's format is read by [`super::natsfile`] into the
//! same [`FileConfig`], and both go through [`apply`].
//!
//! The top level is read by the option table ([`OPTIONS`]): a key is one of its names or
//! aliases, and its value is read as the option's [`Value`] says. Values are then applied in
//! the table's order, whatever their order in the file. The blocks have their own readers:
//! [`authorization`] (with `accounts`), [`tls`], [`cluster`], [`leafnodes`].

// Visible to `docs`, whose test reads the blocks' keys from their readers.
pub(super) mod authorization;
pub(super) mod cluster;
pub(crate) mod jetstream;
pub(super) mod leafnodes;
pub(super) mod operator;
pub(super) mod sharing;
pub(super) mod tls;
mod values;
pub(super) mod websocket;

pub(super) use values::plain_words;

use super::options::{self, in_range, Block, Opt, Value, OPTIONS};
use super::{Config, ConfigError, MAX_DURATION};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;
use toml::Spanned;
use values::{HostPort, Seconds, Size};

/// A file's top-level keys, read but not yet applied: for each option of [`OPTIONS`] (same
/// index), the value given, if any. Unknown keys are an error naming the key and its line,
/// as are two spellings of one option (`duplicate field`).
pub(super) struct FileConfig(Vec<Option<Given>>);

/// Checks a value read and applies it.
type ApplyFn = Box<dyn FnOnce(&mut Apply) -> Result<(), ConfigError>>;

/// One option's value as read, waiting to be applied.
struct Given {
    /// Where the value was written (not known for `accounts`, nor for booleans).
    span: Option<Range<usize>>,
    /// Checks it and applies it.
    apply: ApplyFn,
}

impl Given {
    fn new(
        span: Option<Range<usize>>,
        apply: impl FnOnce(&mut Apply) -> Result<(), ConfigError> + 'static,
    ) -> Given {
        Given {
            span,
            apply: Box::new(apply),
        }
    }
}

impl<'de> Deserialize<'de> for FileConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FileConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("struct FileConfig")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<FileConfig, A::Error> {
                let mut given: Vec<Option<Given>> = OPTIONS.iter().map(|_| None).collect();
                while let Some(i) = m.next_key_seed(KeySeed)? {
                    let Some(opt) = OPTIONS.get(i) else {
                        return Err(de::Error::custom("no such option"));
                    };
                    if given[i].is_some() {
                        return Err(de::Error::duplicate_field(opt.name));
                    }
                    given[i] = Some(read(&mut m, opt)?);
                }
                Ok(FileConfig(given))
            }
        }
        // As a struct, so that nats-server's format matches the keys case-insensitively.
        d.deserialize_struct("FileConfig", options::keys(), V)
    }
}

/// A top-level key: the index of the option it names.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_identifier(KeySeed)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = usize;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<usize, E> {
        OPTIONS
            .iter()
            .position(|o| o.is_named(key))
            .ok_or_else(|| E::unknown_field(key, options::keys()))
    }
}

/// Reads the value of `opt` as its type says; checking it is left to [`apply`].
fn read<'de, A: MapAccess<'de>>(m: &mut A, opt: &'static Opt) -> Result<Given, A::Error> {
    let key = opt.name;
    Ok(match opt.value {
        Value::Address(set) => {
            let v: Spanned<HostPort> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| {
                let span = v.span();
                let (host, port) = v
                    .into_inner()
                    .0
                    .and_then(|(host, port)| {
                        let port = in_range(port, -1, 65535).map_err(|m| format!("port {m}"))?;
                        Ok((host, port))
                    })
                    .map_err(|m| cx.err(key, span, m))?;
                set(cx.config, host, port as i32);
                Ok(())
            })
        }
        Value::Text { set, .. } => {
            let v: Spanned<String> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| {
                set(cx.config, v.into_inner());
                Ok(())
            })
        }
        Value::Path(set) => {
            let v: Spanned<String> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| {
                set(cx.config, PathBuf::from(v.into_inner()));
                Ok(())
            })
        }
        Value::Int { min, max, set, .. } => {
            let v: Spanned<i64> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| {
                let n = in_range(*v.get_ref(), min, max).map_err(|e| cx.err(key, v.span(), e))?;
                set(cx.config, n);
                Ok(())
            })
        }
        Value::Size { check, set, .. } => {
            let v: Spanned<Size> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| {
                let span = v.span();
                let n = v
                    .into_inner()
                    .0
                    .and_then(|n| usize::try_from(n).map_err(|_| format!("{n} is too large")))
                    .and_then(|n| check(n).map(|()| n))
                    .map_err(|m| cx.err(key, span, m))?;
                set(cx.config, n);
                Ok(())
            })
        }
        Value::Duration { check, set, .. } => {
            let v: Spanned<Seconds> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| {
                let (d, span) = cx.duration(key, v)?;
                check(cx.config, d).map_err(|m| cx.err(key, span, m))?;
                set(cx.config, d);
                Ok(())
            })
        }
        Value::Bool { set, .. } => {
            let b: bool = m.next_value()?;
            Given::new(None, move |cx| {
                set(cx.config, b);
                Ok(())
            })
        }
        Value::Block(Block::Authorization) => {
            let v: Spanned<authorization::FileAuthorization> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| {
                authorization::apply_authorization(cx, v)
            })
        }
        Value::Block(Block::Accounts) => {
            let v: authorization::FileAccounts = m.next_value()?;
            Given::new(None, move |cx| authorization::apply_accounts(cx, v))
        }
        Value::Block(Block::Tls) => {
            let v: Spanned<tls::FileTls> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| tls::apply_tls(cx, v))
        }
        Value::Block(Block::WebSocket) => {
            let v: Spanned<websocket::FileWebSocket> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| websocket::apply_websocket(cx, v))
        }
        Value::Block(Block::Cluster) => {
            let v: Spanned<cluster::FileCluster> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| cluster::apply_cluster(cx, v))
        }
        Value::Block(Block::LeafNodes) => {
            let v: Spanned<leafnodes::FileLeafNodes> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| leafnodes::apply_leafnodes(cx, v))
        }
        Value::Block(Block::JetStream) => {
            let v: Spanned<jetstream::FileJetStream> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| jetstream::apply_jetstream(cx, v))
        }
        Value::Block(Block::Operator) => {
            let v: Spanned<operator::FileOperator> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| operator::apply_operator(cx, v))
        }
        Value::Block(Block::Resolver) => {
            let v: Spanned<operator::FileResolver> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| operator::apply_resolver(cx, v))
        }
        Value::Block(Block::ResolverPinnedAccounts) => {
            let v: Spanned<operator::FileOperator> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| operator::apply_pinned(cx, v))
        }
        Value::Block(Block::ResolverPreload) => {
            let v: Spanned<operator::FilePreload> = m.next_value()?;
            Given::new(Some(v.span()), move |cx| operator::apply_preload(cx, v))
        }
    })
}

/// Parses `text` (the contents of `path`, in TOML) and applies it on top of `config`;
/// returns the warnings (keys accepted and ignored).
pub(super) fn apply_file(
    config: &mut Config,
    path: &str,
    text: &str,
) -> Result<Vec<String>, ConfigError> {
    let line_of = |span: std::ops::Range<usize>| text[..span.start].matches('\n').count() + 1;
    let file: FileConfig = toml::from_str(text).map_err(|e| {
        // Name the line and the key the parser stopped at, like the range checks below.
        let message = match e.span() {
            Some(span) => {
                let line = line_of(span.clone());
                let key = text
                    .lines()
                    .nth(line - 1)
                    .and_then(|l| l.split('=').next())
                    .map(|k| k.trim().trim_matches('"'))
                    .filter(|k| !k.is_empty() && !k.starts_with('['));
                let m = plain_words(e.message().trim());
                // `port: 4222`, `authorization {`: nats-server's syntax in a .toml file.
                if m.contains("expected `=`") && super::natsconf::parse_str_no_include(text).is_ok()
                {
                    return ConfigError {
                        message: format!(
                            "{path}: line {line}: {m} (this looks like nats-server syntax: name \
                             the file .conf)"
                        ),
                    };
                }
                match key {
                    Some(k) => format!("{path}: line {line}: key `{k}`: {m}"),
                    None => format!("{path}: line {line}: {m}"),
                }
            }
            None => format!("{path}: {}", plain_words(e.message().trim())),
        };
        ConfigError { message }
    })?;
    apply(config, file, &|span| {
        format!("{path}: line {}", line_of(span))
    })
}

/// What applying a file works on: the configuration, where values were written, and what
/// has been read so far.
pub(super) struct Apply<'a> {
    /// The configuration being filled.
    config: &'a mut Config,
    /// Turns a value's span into `FILE: line N`.
    locate: &'a dyn Fn(Range<usize>) -> String,
    /// Keys accepted and ignored, and features beaver lacks, for the log.
    warnings: Vec<String>,
    /// User names seen so far: unique across `authorization.users` and the accounts.
    seen_users: std::collections::HashSet<String>,
}

impl Apply<'_> {
    /// `FILE: line N: key `KEY`: MESSAGE`.
    fn err(&self, key: &str, span: Range<usize>, message: String) -> ConfigError {
        ConfigError {
            message: format!("{}: key `{key}`: {message}", (self.locate)(span)),
        }
    }

    /// A duration, at most [`MAX_DURATION`] (timers must stay representable); with its span.
    fn duration(
        &self,
        key: &str,
        v: Spanned<Seconds>,
    ) -> Result<(Duration, Range<usize>), ConfigError> {
        let span = v.span();
        match v.into_inner().0 {
            Ok(d) if d > MAX_DURATION => {
                Err(self.err(key, span, "must be at most 365 days".into()))
            }
            Ok(d) => Ok((d, span)),
            Err(m) => Err(self.err(key, span, m)),
        }
    }
}

/// Validates `file` and applies it on top of `config`, option by option in the table's
/// order, then the rules that span options. `locate` turns a value's span into
/// `FILE: line N` for error messages. Returns the warnings (keys accepted and ignored).
pub(super) fn apply(
    config: &mut Config,
    file: FileConfig,
    locate: &dyn Fn(Range<usize>) -> String,
) -> Result<Vec<String>, ConfigError> {
    let mut cx = Apply {
        config,
        locate,
        warnings: Vec::new(),
        seen_users: std::collections::HashSet::new(),
    };
    let mut spans: Vec<Option<Range<usize>>> = Vec::with_capacity(OPTIONS.len());
    for given in file.0 {
        spans.push(given.as_ref().and_then(|g| g.span.clone()));
        if let Some(g) = given {
            (g.apply)(&mut cx)?;
        }
    }
    let span_of = |name: &str| {
        OPTIONS
            .iter()
            .position(|o| o.name == name)
            .and_then(|i| spans[i].clone())
    };
    // nats-server's rules across options. `no_auth_user` names a user of `authorization` or
    // of an account, which come after it in the table.
    if let (Some(span), Some(name)) = (span_of("no_auth_user"), &cx.config.no_auth_user) {
        let known = cx
            .config
            .authorization
            .iter()
            .flat_map(|a| a.users.iter())
            .chain(cx.config.accounts.iter().flat_map(|a| a.users.iter()))
            .any(|u| u.user == *name);
        if !known {
            return Err(cx.err(
                "no_auth_user",
                span,
                format!(
                    "{name:?} not present as user in authorization block or account \
                     configuration"
                ),
            ));
        }
    }
    // Accounts named by `leafnodes` exist (nats-server's `validateLeafNode`).
    if let (Some(span), Some(l)) = (span_of("leafnodes"), &cx.config.leafnodes) {
        let exists = |name: &str| {
            name == crate::config::GLOBAL_ACCOUNT
                || cx.config.accounts.iter().any(|a| a.name == name)
        };
        let auth = l.authorization.iter().flat_map(|a| {
            a.account
                .iter()
                .chain(a.users.iter().filter_map(|u| u.account.as_ref()))
                .map(|n| (n, "authorization"))
        });
        let remotes = l
            .remotes
            .iter()
            .filter_map(|r| r.account.as_ref())
            .map(|n| (n, "remote"));
        if let Some((name, what)) = auth.chain(remotes).find(|(n, _)| !exists(n)) {
            return Err(cx.err(
                "leafnodes",
                span,
                format!("cannot find local account {name:?} specified in leafnode {what}"),
            ));
        }
    }
    // A message must fit in a client's pending buffer.
    if cx.config.max_payload > cx.config.max_pending {
        let at = span_of("max_payload").map_or(String::new(), |s| format!("{}: ", locate(s)));
        return Err(ConfigError {
            message: format!(
                "{at}key `max_payload`: max_payload ({}) cannot be higher than \
                 max_pending ({})",
                cx.config.max_payload, cx.config.max_pending
            ),
        });
    }
    Ok(cx.warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_duplicate_keys() {
        // serde's words, listing the keys in the table's order (which was the order of the
        // struct that read Config.toml before the table).
        let e = Config::from_toml("port = 1\nfoo = 1\n").unwrap_err();
        assert_eq!(
            e.message,
            "Config.toml: line 2: key `foo`: unknown field `foo`, expected one of `listen`, \
             `host`, `net`, `port`, `server_name`, `http`, `http_port`, `monitor_port`, \
             `http_host`, `max_closed_clients`, `max_payload`, `max_control_line`, `max_conn`, \
             `max_connections`, `max_pending`, `max_subs`, `max_subscriptions`, \
             `ping_interval`, `ping_max`, `write_deadline`, `writers`, `debug`, `trace`, \
             `logtime`, `log_file`, `logfile`, `syslog`, `remote_syslog`, `syslog_name`, \
             `authorization`, `no_auth_user`, `accounts`, `operator`, `operators`, `root`, \
             `root_operator`, `root_operators`, `roots`, `system`, `system_account`, \
             `account_resolver`, `accounts_resolver`, `resolver`, \
             `resolver_pinned_accounts`, `resolver_preload`, \
             `tls`, `pid_file`, `pidfile`, `ports_file_dir`, `lame_duck_duration`, \
             `lame_duck_grace_period`, `cluster`, `leaf`, `leafnodes`, `store_dir`, \
             `storedir`, `jetstream`, `websocket`, `ws`"
        );
        // Two spellings of one option.
        let e = Config::from_toml("http_port = 1\nmonitor_port = 2\n").unwrap_err();
        assert!(e.message.ends_with("duplicate field `http_port`"), "{e}");
    }
}
