//! The `leafnodes` block (nats-server's, also spelled `leaf`): the listen address and the
//! credentials leafs present (the hub role), and the `remotes` to solicit (the leaf role).

use super::authorization::OneOrMany;
use super::values::{HostPort, Seconds};
use super::Apply;
use crate::config::options::in_range;
use crate::config::{
    parse_route_url, ConfigError, LeafAuth, LeafNodes, LeafRemote, LeafUser, DEFAULT_AUTH_TIMEOUT,
    DEFAULT_LEAFNODE_PORT, DEFAULT_LEAF_RECONNECT,
};
use serde::Deserialize;
use std::path::PathBuf;
use toml::Spanned;

/// `[leafnodes]`: nats-server's `leafnodes` block.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileLeafNodes {
    /// `host:port`, or a port alone.
    listen: Option<Spanned<HostPort>>,
    host: Option<String>,
    port: Option<Spanned<i64>>,
    authorization: Option<FileLeafAuth>,
    remotes: Option<Vec<Spanned<FileRemote>>>,
    /// nats-server's `reconnect` (`reconnect_interval` is its alias).
    #[serde(alias = "reconnect_interval")]
    reconnect: Option<Spanned<Seconds>>,
}

/// `leafnodes.authorization`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLeafAuth {
    user: Option<String>,
    #[serde(alias = "pass")]
    password: Option<String>,
    token: Option<String>,
    account: Option<String>,
    users: Option<Vec<FileLeafUser>>,
    timeout: Option<Spanned<Seconds>>,
}

/// One of `leafnodes.authorization.users`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLeafUser {
    user: String,
    #[serde(alias = "pass")]
    password: Option<String>,
    account: Option<String>,
}

/// One of `leafnodes.remotes`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRemote {
    url: Option<String>,
    urls: Option<Vec<String>>,
    account: Option<String>,
    credentials: Option<PathBuf>,
    deny_imports: Option<OneOrMany>,
    deny_exports: Option<OneOrMany>,
}

/// A remote URL with nats-server's default leafnode port when it has none
/// (`nats-leaf://host` dials 7422), checked.
fn remote_url(url: &str) -> Result<String, String> {
    let trimmed = url.trim_end_matches('/');
    if let Some((scheme, _)) = trimmed.split_once("://") {
        if !matches!(scheme, "nats-leaf" | "nats") {
            return Err(format!(
                "{url:?}: only nats-leaf:// (or nats://) URLs are supported: TLS and websocket \
                 leafnode connections are not supported by beaver yet"
            ));
        }
    }
    let rest = trimmed.split_once("://").map_or(trimmed, |(_, r)| r);
    let hostport = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let has_port = match hostport.strip_prefix('[') {
        Some(v6) => v6.contains("]:"),
        None => hostport.contains(':'),
    };
    let full = if has_port {
        trimmed.to_owned()
    } else {
        format!("{trimmed}:{DEFAULT_LEAFNODE_PORT}")
    };
    match parse_route_url(&full)? {
        (_, _, p) if p <= 0 => Err(format!("{url:?}: a remote needs a port")),
        _ => Ok(full),
    }
}

/// Applies the `leafnodes` block: `listen` overrides `host` and `port`; every remote needs
/// a URL; accounts named must exist (checked at start, as the accounts are read in any
/// order).
pub(super) fn apply_leafnodes(
    cx: &mut Apply,
    block: Spanned<FileLeafNodes>,
) -> Result<(), ConfigError> {
    let span = block.span();
    let b = block.into_inner();
    let mut leaf = LeafNodes {
        host: "0.0.0.0".into(),
        reconnect: DEFAULT_LEAF_RECONNECT,
        ..LeafNodes::default()
    };
    if let Some(h) = b.host {
        leaf.host = h;
    }
    if let Some(p) = b.port {
        let pspan = p.span();
        let n =
            in_range(p.into_inner(), -1, 65535).map_err(|m| cx.err("leafnodes.port", pspan, m))?;
        leaf.port = n as i32;
    }
    if let Some(l) = b.listen {
        let lspan = l.span();
        let (host, port) = l
            .into_inner()
            .0
            .and_then(|(host, port)| Ok((host, in_range(port, -1, 65535)?)))
            .map_err(|m| cx.err("leafnodes.listen", lspan, m))?;
        if let Some(h) = host {
            leaf.host = h;
        }
        leaf.port = port as i32;
    }
    if let Some(r) = b.reconnect {
        leaf.reconnect = cx.duration("leafnodes.reconnect", r)?.0;
    }
    if let Some(a) = b.authorization {
        let mut auth = LeafAuth {
            user: a.user,
            password: a.password,
            token: a.token,
            account: a.account,
            users: Vec::new(),
            timeout: DEFAULT_AUTH_TIMEOUT,
        };
        for u in a.users.unwrap_or_default() {
            auth.users.push(LeafUser {
                user: u.user,
                password: u.password.unwrap_or_default(),
                account: u.account,
            });
        }
        if let Some(v) = a.timeout {
            auth.timeout = cx.duration("leafnodes.authorization.timeout", v)?.0;
        }
        leaf.authorization = Some(auth);
    }
    for r in b.remotes.unwrap_or_default() {
        let rspan = r.span();
        let r = r.into_inner();
        let mut urls = Vec::new();
        for u in r.url.into_iter().chain(r.urls.unwrap_or_default()) {
            urls.push(remote_url(&u).map_err(|m| cx.err("leafnodes.remotes", rspan.clone(), m))?);
        }
        if urls.is_empty() {
            return Err(cx.err(
                "leafnodes.remotes",
                rspan,
                "a remote needs a `url` or `urls`".into(),
            ));
        }
        if r.credentials.is_some() {
            return Err(cx.err(
                "leafnodes.remotes",
                rspan,
                "`credentials` (JWT/NKEY) is not supported by beaver yet".into(),
            ));
        }
        leaf.remotes.push(LeafRemote {
            urls,
            account: r.account,
            credentials: None,
            deny_imports: r.deny_imports.map(OneOrMany::into_vec).unwrap_or_default(),
            deny_exports: r.deny_exports.map(OneOrMany::into_vec).unwrap_or_default(),
        });
    }
    if leaf.port == 0 && leaf.remotes.is_empty() {
        cx.warnings.push(format!(
            "{}: `leafnodes` has neither a port nor remotes: no leafnode connections",
            (cx.locate)(span)
        ));
    }
    cx.config.leafnodes = Some(leaf);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::remote_url;
    use crate::config::Config;

    #[test]
    fn accounts_named_must_exist() {
        let ok = "accounts { A {} }\nleafnodes { authorization { user: u, password: p, \
                  account: A }, remotes [ { url: \"nats-leaf://h\", account: \"$G\" } ] }\n";
        let (c, _) = Config::from_nats_conf(ok).unwrap();
        let l = c.leafnodes.unwrap();
        assert_eq!(l.remotes[0].urls, ["nats-leaf://h:7422"]);
        assert_eq!(l.authorization.unwrap().account.as_deref(), Some("A"));
        let e = Config::from_nats_conf(
            "leafnodes { remotes [ { url: \"nats-leaf://h:1\", account: B } ] }\n",
        )
        .unwrap_err();
        assert!(
            e.message
                .ends_with("cannot find local account \"B\" specified in leafnode remote"),
            "{e}"
        );
        let e = Config::from_nats_conf(
            "leafnodes { remotes [ { url: \"nats-leaf://h:1\", credentials: \"x.creds\" } ] }\n",
        )
        .unwrap_err();
        assert!(e.message.contains("credentials"), "{e}");
    }

    #[test]
    fn remote_urls_get_the_default_port() {
        assert_eq!(remote_url("nats-leaf://h").unwrap(), "nats-leaf://h:7422");
        assert_eq!(
            remote_url("nats-leaf://u:p@h:4000/").unwrap(),
            "nats-leaf://u:p@h:4000"
        );
        assert_eq!(remote_url("nats://[::1]").unwrap(), "nats://[::1]:7422");
        assert!(remote_url("nats-leaf://:4000").is_err());
        assert!(remote_url("tls://h:7422").is_err());
        assert!(remote_url("ws://h:7422").is_err());
    }
}
