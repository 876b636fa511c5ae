//! `CONNECT` options (client protocol doc, "CONNECT").
//!
//! nats-server decodes each `CONNECT` *into the options it already has*, with Go's
//! `encoding/json`: fields absent from the JSON keep their previous value, `null` leaves a
//! field unchanged, keys match field names case-insensitively, and before any `CONNECT` the
//! options are `verbose`, `pedantic` and `echo` all true. So a client that sends `CONNECT {}`
//! (or no `CONNECT` at all, as a telnet user does) gets `+OK` after every operation and
//! pedantic subject checks. beaver reproduces this exactly.

use serde::Deserialize;

/// A client's connection options: the reference's defaults, updated by each `CONNECT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Send `+OK` after each operation (default true until a `CONNECT` says otherwise).
    pub verbose: bool,
    /// Check subjects strictly (default true until a `CONNECT` says otherwise).
    pub pedantic: bool,
    /// Deliver this client's own messages to its own subscriptions (default true).
    pub echo: bool,
    /// The client understands `HMSG` and may send `HPUB`.
    pub headers: bool,
    /// The client wants a 503 status message when a request has no responders.
    pub no_responders: bool,
    /// The client requires TLS.
    pub tls_required: bool,
    /// Client name (for logs and monitoring).
    pub name: String,
    /// Client library language.
    pub lang: String,
    /// Client library version.
    pub version: String,
    /// Protocol level: 0 (original) or 1 (understands async INFO).
    pub protocol: i64,
    /// User name, for authentication.
    pub user: String,
    /// Password, for authentication. Never logged.
    pub pass: String,
    /// Authentication token. Never logged.
    pub auth_token: String,
    /// Account name: nats-server refuses a client that names one (Authorization Violation).
    pub account: String,
    /// Whether the client asked for a new account (refused likewise).
    pub new_account: bool,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            verbose: true,
            pedantic: true,
            echo: true,
            headers: false,
            no_responders: false,
            tls_required: false,
            name: String::new(),
            lang: String::new(),
            version: String::new(),
            protocol: 0,
            user: String::new(),
            pass: String::new(),
            auth_token: String::new(),
            account: String::new(),
            new_account: false,
        }
    }
}

/// A `CONNECT` whose JSON could not be decoded. nats-server closes such a connection without
/// sending an `-ERR`.
#[derive(Debug)]
pub struct ConnectError(pub String);

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConnectError {}

/// The JSON shape: every field optional, so absent and `null` both mean "unchanged".
/// Unknown fields (jwt, nkey, sig, ...) are ignored, as Go ignores them.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ConnectJson {
    verbose: Option<bool>,
    pedantic: Option<bool>,
    echo: Option<bool>,
    headers: Option<bool>,
    no_responders: Option<bool>,
    tls_required: Option<bool>,
    name: Option<String>,
    lang: Option<String>,
    version: Option<String>,
    protocol: Option<i64>,
    user: Option<String>,
    pass: Option<String>,
    auth_token: Option<String>,
    account: Option<String>,
    new_account: Option<bool>,
}

impl ConnectOptions {
    /// Applies a `CONNECT`'s JSON on top of the current options (see the module docs).
    pub fn merge_json(&mut self, json: &[u8]) -> Result<(), ConnectError> {
        let value: serde_json::Value =
            serde_json::from_slice(json).map_err(|e| ConnectError(e.to_string()))?;
        let object = match value {
            // Go: unmarshalling `null` into a struct is a no-op.
            serde_json::Value::Null => return Ok(()),
            serde_json::Value::Object(map) => map,
            other => {
                return Err(ConnectError(format!(
                    "cannot unmarshal {} into connect options",
                    json_kind(&other)
                )))
            }
        };
        // Go matches keys to fields case-insensitively; our field names are lower case.
        let lowered: serde_json::Map<String, serde_json::Value> = object
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        let c: ConnectJson = serde_json::from_value(serde_json::Value::Object(lowered))
            .map_err(|e| ConnectError(e.to_string()))?;
        macro_rules! apply {
            ($($field:ident),*) => { $( if let Some(v) = c.$field { self.$field = v; } )* };
        }
        apply!(
            verbose,
            pedantic,
            echo,
            headers,
            no_responders,
            tls_required,
            name,
            lang,
            version,
            protocol,
            user,
            pass,
            auth_token,
            account,
            new_account
        );
        Ok(())
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_before_connect() {
        let o = ConnectOptions::default();
        assert!(o.verbose && o.pedantic && o.echo);
        assert!(!o.headers && !o.no_responders);
    }

    #[test]
    fn merge_keeps_absent_fields() {
        let mut o = ConnectOptions::default();
        o.merge_json(b"{}").unwrap();
        assert!(o.verbose && o.pedantic, "CONNECT {{}} keeps the defaults");
        o.merge_json(br#"{"verbose":false,"name":"x","headers":true}"#)
            .unwrap();
        assert!(!o.verbose && o.pedantic && o.headers);
        o.merge_json(br#"{"verbose":null,"lang":"rust"}"#).unwrap();
        assert!(!o.verbose, "null leaves a field unchanged");
        assert_eq!((o.name.as_str(), o.lang.as_str()), ("x", "rust"));
        o.merge_json(b"null").unwrap();
        assert_eq!(o.name, "x");
    }

    #[test]
    fn keys_are_case_insensitive_and_unknown_keys_ignored() {
        let mut o = ConnectOptions::default();
        o.merge_json(br#"{"Verbose":false,"PEDANTIC":false,"jwt":"x","sig":1}"#)
            .unwrap();
        assert!(!o.verbose && !o.pedantic);
    }

    #[test]
    fn bad_json_is_an_error() {
        for bad in [
            &b""[..],
            b"{bad",
            b"[]",
            b"1",
            br#"{"verbose":"yes"}"#,
            br#"{"protocol":1.5}"#,
            b"{} x",
        ] {
            assert!(
                ConnectOptions::default().merge_json(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
