//! The `cluster` block (nats-server's): the route listen address, the routes to dial, the
//! credentials routes present, TLS on routes and which interest crosses them.

use super::authorization::FilePermissions;
use super::tls::{read_route_tls, FileTls};
use super::values::{HostPort, Seconds};
use super::Apply;
use crate::config::auth::check_permissions;
use crate::config::options::in_range;
use crate::config::{
    parse_route_url, Cluster, ClusterAuth, ConfigError, RoutePermissions, DEFAULT_AUTH_TIMEOUT,
};
use serde::Deserialize;
use toml::Spanned;

/// `[cluster]`: nats-server's `cluster` block.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileCluster {
    name: Option<String>,
    /// `host:port`, or a port alone.
    listen: Option<Spanned<HostPort>>,
    host: Option<String>,
    port: Option<Spanned<i64>>,
    routes: Option<Vec<String>>,
    no_advertise: Option<bool>,
    /// nats-server's `cluster_advertise` (`advertise` is its alias).
    #[serde(alias = "advertise")]
    cluster_advertise: Option<String>,
    connect_retries: Option<Spanned<i64>>,
    authorization: Option<FileClusterAuth>,
    /// TLS on routes.
    tls: Option<Spanned<FileTls>>,
    /// `import`/`export` (nats-server also takes `publish`/`subscribe` there).
    permissions: Option<Spanned<FilePermissions>>,
}

/// `cluster.authorization`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileClusterAuth {
    user: Option<String>,
    #[serde(alias = "pass")]
    password: Option<String>,
    timeout: Option<Spanned<Seconds>>,
}

/// Applies the `cluster` block: `listen` overrides `host` and `port`; every route must be a
/// URL with a host and a port.
pub(super) fn apply_cluster(
    cx: &mut Apply,
    block: Spanned<FileCluster>,
) -> Result<(), ConfigError> {
    let span = block.span();
    let c = block.into_inner();
    let mut cluster = Cluster::unset();
    cluster.name = c.name;
    if let Some(h) = c.host {
        cluster.host = h;
    }
    if let Some(p) = c.port {
        let pspan = p.span();
        let n =
            in_range(p.into_inner(), -1, 65535).map_err(|m| cx.err("cluster.port", pspan, m))?;
        cluster.port = n as i32;
    }
    if let Some(l) = c.listen {
        let lspan = l.span();
        let (host, port) = l
            .into_inner()
            .0
            .and_then(|(host, port)| Ok((host, in_range(port, -1, 65535)?)))
            .map_err(|m| cx.err("cluster.listen", lspan, m))?;
        if let Some(h) = host {
            cluster.host = h;
        }
        cluster.port = port as i32;
    }
    for r in c.routes.unwrap_or_default() {
        if let Err(m) = parse_route_url(&r) {
            return Err(cx.err("cluster.routes", span.clone(), m));
        }
        cluster.routes.push(r);
    }
    cluster.no_advertise = c.no_advertise.unwrap_or(false);
    cluster.advertise = c.cluster_advertise;
    if let Some(n) = c.connect_retries {
        let nspan = n.span();
        cluster.connect_retries = u32::try_from(n.into_inner()).map_err(|_| {
            cx.err(
                "cluster.connect_retries",
                nspan,
                "must be a non-negative number".into(),
            )
        })?;
    }
    if let Some(a) = c.authorization {
        let mut auth = ClusterAuth {
            user: a.user.unwrap_or_default(),
            password: a.password.unwrap_or_default(),
            timeout: DEFAULT_AUTH_TIMEOUT,
        };
        if let Some(v) = a.timeout {
            auth.timeout = cx.duration("cluster.authorization.timeout", v)?.0;
        }
        cluster.authorization = Some(auth);
    }
    if let Some(t) = c.tls {
        cluster.tls = Some(read_route_tls(cx, "cluster.tls", t)?);
    }
    if let Some(p) = c.permissions {
        let pspan = p.span();
        let at = "cluster.permissions";
        let p = p
            .into_inner()
            .into_permissions()
            .map_err(|m| cx.err(at, pspan.clone(), m))?;
        if p.response.is_some() {
            // nats-server's words.
            return Err(cx.err(
                at,
                pspan,
                "Cluster permissions do not support dynamic responses".into(),
            ));
        }
        check_permissions(&p).map_err(|m| cx.err(at, pspan.clone(), m))?;
        cluster.permissions = Some(RoutePermissions {
            import: p.publish,
            export: p.subscribe,
        });
    }
    cx.config.cluster = Some(cluster);
    Ok(())
}
