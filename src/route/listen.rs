//! Route threads: the route listener (one thread, `beaver-routes`), a dialer per configured
//! route (`beaver-route-dial`: dials, runs the connection, and redials when it ends, forever
//! while configured), and one dialer per gossiped server (implicit routes: `connect_retries`
//! more attempts, no redial), as nats-server's `startRouteAcceptLoop`, `connectToRoute` and
//! `reConnectToRoute`. Each thread runs its connection's reader itself (`conn::run`).

use super::conn::{self, Dialed};
use super::{Node, Routes};
use crate::close::CloseReason;
use crate::listen::AcceptLoop;
use crate::protocol::route::RouteInfo;
use crate::shared::Shared;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// nats-server's `routeConnectDelay`: between attempts to dial a route.
pub const ROUTE_CONNECT_DELAY: Duration = Duration::from_secs(1);
/// nats-server's `DEFAULT_ROUTE_RECONNECT`: before redialling a configured route that closed
/// (plus up to 100 ms at random, so that two servers that dial each other spread out).
pub const ROUTE_RECONNECT: Duration = Duration::from_secs(1);
/// nats-server's `DEFAULT_ROUTE_DIAL`: the dial timeout.
pub const ROUTE_DIAL: Duration = Duration::from_secs(1);
/// Stack size of route threads (as readers': parsing and matching are iterative).
const ROUTE_STACK: usize = 512 * 1024;

/// Starts the route listener thread on `listener` and a dialer per configured route.
pub fn start(
    shared: &Arc<Shared>,
    routes: &Arc<Routes>,
    listener: TcpListener,
) -> std::io::Result<AcceptLoop> {
    let node = Node {
        shared: shared.clone(),
        routes: routes.clone(),
    };
    let n = node.clone();
    let handle = AcceptLoop::spawn("beaver-routes", ROUTE_STACK, listener, move |l| {
        accept_loop(&n, l)
    })?;
    for url in routes.configured() {
        solicit(&node, url)?;
    }
    Ok(handle)
}

/// Starts a dialer for the configured route `url`, unless one still runs (a reload removed
/// the URL and added it back before the dialer ended: it carries on).
fn solicit(node: &Node, url: String) -> std::io::Result<()> {
    {
        let mut dialers = node.routes.dialers.lock();
        if dialers.contains(&url) {
            return Ok(());
        }
        dialers.push(url.clone());
    }
    let n = node.clone();
    let spawned = std::thread::Builder::new()
        .name("beaver-route-dial".into())
        .stack_size(ROUTE_STACK)
        .spawn({
            let url = url.clone();
            move || dial_configured(&n, &url)
        });
    if let Err(e) = spawned {
        node.routes.dialers.lock().retain(|u| *u != url);
        return Err(e);
    }
    Ok(())
}

/// Whether the dialer of `url` goes on: not when the server stops or a reload removed the
/// URL. Decided under the dialers' lock, so that a reload adding the URL back either sees
/// this dialer still listed (and starts none) or sees it gone (and starts one).
fn keeps_dialing(node: &Node, url: &str) -> bool {
    let mut dialers = node.routes.dialers.lock();
    if !is_stopping(node) && node.routes.is_configured(url) {
        return true;
    }
    dialers.retain(|u| u != url);
    false
}

/// A reload's new `cluster.routes`: dials the routes added, closes those removed (see
/// [`Routes::reconfigure`]).
pub fn reconfigure(shared: &Arc<Shared>, routes: &Arc<Routes>, urls: &[String]) {
    let node = Node {
        shared: shared.clone(),
        routes: routes.clone(),
    };
    for url in routes.reconfigure(urls) {
        if let Err(e) = solicit(&node, url) {
            log::error!("Error starting route thread: {e}");
        }
    }
}

fn accept_loop(node: &Node, listener: &TcpListener) {
    accept_each(
        listener,
        "route",
        "beaver-route",
        ROUTE_STACK,
        || is_stopping(node),
        |stream, addr| {
            let n = node.clone();
            move || {
                conn::run(&n, stream, addr, None);
            }
        },
    );
}

/// A listener's loop for server-to-server connections (routes, leafnodes): accepts until
/// `stopping`, and runs each connection on a thread of its own (named `thread`), the one
/// `start` makes for it. `what` names the connections in errors.
pub(crate) fn accept_each<F: FnOnce() + Send + 'static>(
    listener: &TcpListener,
    what: &str,
    thread: &str,
    stack: usize,
    stopping: impl Fn() -> bool,
    start: impl Fn(TcpStream, SocketAddr) -> F,
) {
    loop {
        let (stream, addr) = match listener.accept() {
            Ok((stream, addr)) => (stream, crate::listen::canonical(addr)),
            Err(e) => {
                if stopping() {
                    return;
                }
                log::error!("Error accepting {what} connection: {e}");
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if stopping() {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name(thread.into())
            .stack_size(stack)
            .spawn(start(stream, addr));
        if let Err(e) = spawned {
            log::error!("Error starting {what} thread: {e}");
        }
    }
}

fn is_stopping(node: &Node) -> bool {
    node.shared.is_shutting_down() || node.routes.is_stopping()
}

/// Sleeps `d` in short steps; false if shutdown began meanwhile.
fn pause(node: &Node, d: Duration) -> bool {
    pause_unless(d, || is_stopping(node))
}

/// Sleeps `d` in short steps; false if `stopping` became true meanwhile.
pub(crate) fn pause_unless(d: Duration, stopping: impl Fn() -> bool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stopping() {
            return false;
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
    !stopping()
}

/// Resolves and dials `host:port` once (each address in turn, [`ROUTE_DIAL`] each).
pub(crate) fn dial(host: &str, port: u16) -> std::io::Result<(TcpStream, SocketAddr)> {
    let mut last = None;
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, ROUTE_DIAL) {
            Ok(s) => return Ok((s, addr)),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other(format!("no address for {host}"))))
}

/// A configured route: dial until connected, run it, and after it ends redial (unless it
/// led back to this server, or shutdown began).
fn dial_configured(node: &Node, url: &str) {
    let (creds, host, port) = match crate::config::parse_route_url(url) {
        Ok((c, h, p)) if p > 0 => (c, h, p as u16),
        _ => {
            log::error!("Error parsing route URL {url:?}");
            node.routes.dialers.lock().retain(|u| u != url);
            return;
        }
    };
    let mut attempts: u64 = 0;
    // A reload that removes the URL ends the dialer (checked again after each pause).
    while keeps_dialing(node, url) {
        log::debug!("Trying to connect to route on {host}:{port}");
        match dial(&host, port) {
            Err(e) => {
                attempts += 1;
                // nats-server reports the first attempt, then every so often.
                if attempts == 1 || attempts % 60 == 0 {
                    log::error!("Error trying to connect to route (attempt {attempts}): {e}");
                } else {
                    log::debug!("Error trying to connect to route (attempt {attempts}): {e}");
                }
                if !pause(node, ROUTE_CONNECT_DELAY) {
                    return;
                }
            }
            Ok((stream, addr)) => {
                attempts = 0;
                let ended = conn::run(
                    node,
                    stream,
                    addr,
                    Some(Dialed {
                        url: url.to_owned(),
                        configured: true,
                        creds: creds.clone(),
                    }),
                );
                if ended.to_self {
                    node.routes.dialers.lock().retain(|u| u != url);
                    return;
                }
                if ended.reason == CloseReason::DuplicateRoute {
                    // A route to that server exists (it dialled us): redial once it is gone.
                    while node.routes.is_connected(&ended.remote_id) {
                        if !pause(node, Duration::from_millis(100)) {
                            return;
                        }
                    }
                }
                let jitter = Duration::from_millis(fastrand::u64(0..100));
                if !pause(node, ROUTE_RECONNECT + jitter) {
                    return;
                }
            }
        }
    }
}

/// Gossip: `info` describes a server another route told us about. Dial it unless it is us,
/// already connected, being dialled, or one of our configured routes (nats-server's
/// `processImplicitRoute`).
pub(crate) fn implicit_route(node: &Node, info: &RouteInfo) {
    let routes = &node.routes;
    if info.server_id == node.shared.server_id || routes.is_connected(&info.server_id) {
        return;
    }
    let hp = crate::listen::join_host_port(&info.host, info.port).to_ascii_lowercase();
    let configured = routes.configured().iter().any(|u| {
        crate::config::parse_route_url(u)
            .map(|(_, h, p)| {
                crate::listen::join_host_port(&h, p.max(0) as u16).to_ascii_lowercase() == hp
            })
            .unwrap_or(false)
    });
    if configured {
        return;
    }
    {
        let mut dialing = routes.dialing.lock();
        if dialing.contains(&info.server_id) {
            return;
        }
        dialing.push(info.server_id.clone());
    }
    let url = if info.ip.is_empty() {
        format!("nats-route://{hp}/")
    } else {
        info.ip.clone()
    };
    let id = info.server_id.clone();
    let n = node.clone();
    let spawned = std::thread::Builder::new()
        .name("beaver-route-dial".into())
        .stack_size(ROUTE_STACK)
        .spawn(move || {
            dial_implicit(&n, &url);
            n.routes.dialing.lock().retain(|d| *d != id);
        });
    if let Err(e) = spawned {
        log::error!("Error starting route thread: {e}");
        routes.dialing.lock().retain(|d| *d != info.server_id);
    }
}

fn dial_implicit(node: &Node, url: &str) {
    let Ok((_, host, port)) = crate::config::parse_route_url(url) else {
        log::error!("Error parsing URL from INFO: {url:?}");
        return;
    };
    let Ok(port) = u16::try_from(port) else {
        return;
    };
    let retries = node.routes.config.connect_retries;
    let mut attempts = 0;
    while !is_stopping(node) {
        log::debug!("Trying to connect to route on {host}:{port}");
        match dial(&host, port) {
            Ok((stream, addr)) => {
                conn::run(
                    node,
                    stream,
                    addr,
                    Some(Dialed {
                        url: url.to_owned(),
                        configured: false,
                        creds: None,
                    }),
                );
                return;
            }
            Err(e) => {
                attempts += 1;
                log::debug!("Error trying to connect to route (attempt {attempts}): {e}");
                if attempts > retries || !pause(node, ROUTE_CONNECT_DELAY) {
                    return;
                }
            }
        }
    }
}
