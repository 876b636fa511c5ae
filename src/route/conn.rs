//! A route connection's reader thread: the handshake, then route operations until the
//! connection ends (nats-server's `createRoute`, `processRouteInfo`, `processRouteConnect`,
//! `processRemoteSub`, `processRemoteUnsub`, `processInboundRoutedMsg`).
//!
//! Handshake (as nats-server 2.9 does it): both sides send `INFO` as soon as the TCP
//! connection is up; the dialing side sends `CONNECT` first. A server registers the route
//! when the other's `INFO` arrives: a route to itself or a second route to the same server
//! is closed (`Duplicate Route`); a different cluster name is refused (the accepting side
//! answers the `CONNECT` with nats-server's `-ERR`). Once registered, the route gets all of
//! our interest, the other routes hear of the new server (gossip: they dial it), and clients
//! get an `INFO` with the new server's client URLs.
//!
//! Output goes through the route's `Client` and the writer pool; routed messages are
//! delivered with the client path's `deliver_message` (local subscribers only).

use super::link::{Link, Reader};
use super::{Node, Remote, Route, Routes};
use crate::client::tls::HandshakeError;
use crate::client::{Client, Subscription};
use crate::close::CloseReason;
use crate::delivery::{deliver_message, DeliveryContext, Message, Origin, Outbox};
use crate::protocol::route::{
    self as protocol, Dialect, RouteConnect, RouteInfo, RouteOp, RoutedMsg,
};
use crate::protocol::Publish;
use crate::shared::Shared;
use crate::socket::Socket;
use crate::subjects::MatchCache;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest routed message accepted (nats-server does not limit routes; beaver bounds the
/// memory one message can take at nats-server's own ceiling for `max_payload`).
pub const ROUTE_MAX_PAYLOAD: usize = crate::config::MAX_PAYLOAD_LIMIT;
/// Longest route control line (RMSG with many queue names is long; nats-server's limit for
/// routes is its client one, and beaver leaves room).
pub const ROUTE_MAX_CONTROL_LINE: usize = 64 * 1024;
/// nats-server's first route PING (its `firstPingInterval`), then every `ping_interval`.
const FIRST_PING: Duration = Duration::from_secs(1);

/// How we came to this connection.
#[derive(Debug, Clone)]
pub struct Dialed {
    /// The URL dialled.
    pub url: String,
    /// It is a configured route (`routes`), redialled forever.
    pub configured: bool,
    /// Credentials for `CONNECT` (from the URL, or `cluster.authorization`).
    pub creds: Option<(String, String)>,
}

/// How a route connection ended, for its dialer.
#[derive(Debug, Clone)]
pub struct Ended {
    /// Why it closed.
    pub reason: CloseReason,
    /// The remote server's id, if its `INFO` arrived.
    pub remote_id: String,
    /// The route led back to this server.
    pub to_self: bool,
}

struct RouteConn<'a> {
    node: &'a Node,
    shared: &'a Arc<Shared>,
    routes: &'a Routes,
    route: Arc<Route>,
    /// Reading, the operations of a read, the PING timer.
    link: Link,
    outbox: Outbox,
    /// One match cache per account that routed messages arrive in (a handful at most, so
    /// a list), created on first use.
    caches: Vec<(Arc<crate::client::Account>, MatchCache<Subscription>)>,
    trace: bool,
    got_info: bool,
    /// An accepted route that must still authenticate with `CONNECT`.
    awaiting_connect: bool,
    connect_deadline: Instant,
    to_self: bool,
}

/// Runs a route connection on the calling thread until it ends. `dialed` is `None` for a
/// connection accepted on the route port.
pub(crate) fn run(
    node: &Node,
    stream: TcpStream,
    addr: SocketAddr,
    dialed: Option<Dialed>,
) -> Ended {
    let (shared, routes) = (&node.shared, &*node.routes);
    // One descriptor, shared by the reader and the writers (see `Socket`).
    let setup = (|| {
        let socket = Socket::new(stream)?;
        socket.set_read_timeout(FIRST_PING)?;
        Ok::<Socket, std::io::Error>(socket)
    })();
    let socket = match setup {
        Ok(s) => Arc::new(s),
        Err(e) => {
            log::debug!("{addr} - route setup failed: {e}");
            return Ended {
                reason: CloseReason::ReadError,
                remote_id: String::new(),
                to_self: false,
            };
        }
    };
    // TLS (`cluster.tls`): the handshake comes first, before `INFO` (nats-server's order
    // for routes, unlike clients'); we are its server side if the route was accepted.
    let dialed_host = dialed.as_ref().map(|d| {
        crate::config::parse_route_url(&d.url).map_or_else(|_| d.url.clone(), |(_, h, _)| h)
    });
    let tls = match routes.tls_session(dialed_host.as_deref()) {
        Ok(tls) => tls,
        Err(e) => {
            log::error!("{addr} - TLS route handshake error: {e}");
            return Ended {
                reason: CloseReason::TlsHandshakeError,
                remote_id: String::new(),
                to_self: false,
            };
        }
    };
    let config = shared.config();
    let client = Arc::new(
        Client::new(
            shared.registry.next_cid(),
            addr,
            socket.clone(),
            shared.doorbell.clone(),
            config.max_pending,
            shared.registry.departed().clone(),
            tls,
            // A route carries every account; its `Client` account is only a placeholder
            // (each remote subscription names its own).
            shared.accounts.global().clone(),
        )
        .into_route(),
    );
    let route = Arc::new(Route {
        client,
        did_solicit: dialed.is_some(),
        configured: dialed.as_ref().is_some_and(|d| d.configured),
        url: dialed.as_ref().map(|d| d.url.clone()),
        remote: parking_lot::Mutex::new(Remote::default()),
        subs: parking_lot::Mutex::new(Default::default()),
    });
    routes.track(&route);
    let auth_timeout = routes
        .config
        .authorization
        .as_ref()
        .map_or(crate::config::DEFAULT_AUTH_TIMEOUT, |a| a.timeout);
    let link = Link::new(
        route.client.clone(),
        socket,
        Dialect::Route,
        Instant::now() + FIRST_PING,
    );
    let mut conn = RouteConn {
        node,
        shared,
        routes,
        route,
        link,
        outbox: Outbox::new(),
        caches: Vec::new(),
        trace: config.trace,
        got_info: false,
        awaiting_connect: dialed.is_none(),
        connect_deadline: Instant::now() + auth_timeout,
        to_self: false,
    };
    if conn.route.client.tls.is_some() {
        if let Err(reason) = conn.tls_handshake(dialed.is_some()) {
            return conn.finish(reason);
        }
        // nats-server starts the authentication timer after the handshake.
        conn.connect_deadline = Instant::now() + auth_timeout;
    }
    let p = conn.route.client.log_prefix();
    if let Some(d) = &dialed {
        conn.send_connect(d);
        log::debug!("{p} - Route connect msg sent");
    }
    conn.send_info();
    log::info!("{p} - Route connection created");
    let reason = super::link::run(&mut conn);
    conn.finish(reason)
}

/// The route protocol on the shared reader loop (`link::run`).
impl Reader for RouteConn<'_> {
    fn link(&mut self) -> &mut Link {
        &mut self.link
    }

    fn handle(
        &mut self,
        op: RouteOp<'_>,
        chunk: &bytes::Bytes,
        at: usize,
    ) -> Result<(), CloseReason> {
        RouteConn::handle(self, op, chunk, at)
    }

    /// The authentication deadline of an accepted route (the PING timer runs from the
    /// start).
    fn deadlines(&mut self) -> Result<bool, CloseReason> {
        if self.awaiting_connect
            && self.routes.config.authorization.is_some()
            && Instant::now() >= self.connect_deadline
        {
            self.send(crate::protocol::err::AUTHENTICATION_TIMEOUT);
            log::error!("{} - Authentication Timeout", self.prefix());
            return Err(CloseReason::AuthenticationTimeout);
        }
        Ok(true)
    }

    fn send(&mut self, bytes: &[u8]) {
        RouteConn::send(self, bytes);
    }

    fn flush(&mut self) {
        RouteConn::flush(self);
    }

    fn staged(&self) -> usize {
        self.outbox.staged()
    }

    fn ending(&self) -> Option<CloseReason> {
        let c = &self.route.client;
        c.is_closing()
            .then(|| c.close_reason().unwrap_or(CloseReason::ServerShutdown))
    }

    fn shared(&self) -> &Shared {
        self.shared
    }

    fn what(&self) -> &'static str {
        "Route"
    }

    fn trace(&self) -> bool {
        self.trace
    }
}

impl RouteConn<'_> {
    fn prefix(&self) -> String {
        self.route.client.log_prefix()
    }

    /// The TLS handshake of a route (`solicit`: we dialled it, so we are the TLS client),
    /// on this thread, before anything else is sent, bounded by `cluster.tls.timeout`;
    /// logged in nats-server's words. The writers leave the session alone until it is
    /// done.
    fn tls_handshake(&mut self, solicit: bool) -> Result<(), CloseReason> {
        let p = self.prefix();
        let side = if solicit { "client" } else { "server" };
        log::debug!("{p} - Starting TLS route {side} handshake");
        let deadline = Instant::now() + self.routes.tls_timeout();
        match crate::client::tls::handshake(&self.route.client, &self.link.socket, deadline) {
            Ok(scratch) => self.link.tls_ready(scratch),
            Err(HandshakeError::Timeout) => {
                log::error!("{p} - TLS route handshake error: i/o timeout");
                log::error!("{p} - TLS handshake timeout");
                return Err(CloseReason::TlsHandshakeError);
            }
            Err(HandshakeError::Failed(what)) => {
                log::error!("{p} - TLS route handshake error: {what}");
                return Err(CloseReason::TlsHandshakeError);
            }
        }
        let (version, cipher) = crate::client::tls::negotiated(&self.route.client);
        log::debug!("{p} - TLS handshake complete");
        log::debug!("{p} - TLS version {version}, cipher suite {cipher}");
        self.route.client.set_tls_info(version, cipher);
        // The PING timer starts after the handshake, as nats-server's; the socket's read
        // timeout was the handshake's.
        self.link.next_ping = Instant::now() + FIRST_PING;
        let _ = self.link.socket.set_read_timeout(FIRST_PING);
        Ok(())
    }

    /// Our route `INFO`.
    fn info(&self) -> RouteInfo {
        let cfg = &self.routes.config;
        let config = self.shared.config();
        let (host, port) = match &cfg.advertise {
            Some(a) => match crate::config::parse_route_url(a) {
                Ok((_, h, p)) => (h, u16::try_from(p).unwrap_or(0)),
                Err(_) => (a.clone(), self.routes.listen_addr.port()),
            },
            None => (
                self.routes.listen_addr.ip().to_string(),
                self.routes.listen_addr.port(),
            ),
        };
        RouteInfo {
            server_id: self.shared.server_id.clone(),
            server_name: self.shared.server_name.clone(),
            version: crate::protocol::NATS_VERSION.into(),
            proto: 2,
            ip: cfg
                .advertise
                .as_ref()
                .map(|_| {
                    format!(
                        "nats-route://{}/",
                        crate::listen::join_host_port(&host, port)
                    )
                })
                .unwrap_or_default(),
            host,
            port,
            headers: true,
            auth_required: cfg.authorization.is_some(),
            tls_required: self.routes.tls_required(),
            tls_verify: self.routes.tls_required(),
            max_payload: config.max_payload as i64,
            cluster: self.routes.name(),
            cluster_dynamic: self.routes.is_dynamic(),
            connect_urls: self.routes.client_urls.clone(),
            ldm: false,
            import: cfg
                .permissions
                .as_ref()
                .and_then(|p| p.import.as_ref())
                .map(info_permission),
            export: cfg
                .permissions
                .as_ref()
                .and_then(|p| p.export.as_ref())
                .map(info_permission),
            lnoc: true,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let client = self.route.client.clone();
        self.outbox
            .batch_for(&client, &self.shared.pool)
            .push(bytes);
        self.outbox.add_staged(bytes.len());
    }

    fn send_info(&mut self) {
        let line = protocol::json_line("INFO", &self.info(), true);
        if self.trace {
            log::trace!("{} - ->> [INFO {}]", self.prefix(), json_of(&line));
        }
        self.send(&line);
        self.flush();
    }

    fn send_connect(&mut self, d: &Dialed) {
        let (user, pass) = d
            .creds
            .clone()
            .or_else(|| {
                self.routes
                    .config
                    .authorization
                    .as_ref()
                    .map(|a| (a.user.clone(), a.password.clone()))
            })
            .unwrap_or_default();
        let c = RouteConnect {
            echo: true,
            verbose: false,
            pedantic: false,
            user,
            pass,
            tls_required: self.routes.tls_required(),
            headers: true,
            name: self.shared.server_id.clone(),
            cluster: self.routes.name(),
            cluster_dynamic: self.routes.is_dynamic(),
            lnoc: true,
            gateway: String::new(),
            lang: String::new(),
        };
        let line = protocol::json_line("CONNECT", &c, false);
        self.send(&line);
    }

    /// Queues what was staged. Without stalling (see `Outbox::flush`): a route reader
    /// never waits for a slow local subscriber.
    fn flush(&mut self) {
        self.outbox
            .flush(&self.shared.pool, None, self.route.client.cid);
    }

    fn handle(
        &mut self,
        op: RouteOp<'_>,
        chunk: &bytes::Bytes,
        at: usize,
    ) -> Result<(), CloseReason> {
        let p = self.prefix();
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        if self.trace {
            self.link.trace_in(&op);
        }
        if self.awaiting_connect
            && !matches!(op, RouteOp::Connect(_))
            && self.routes.config.authorization.is_some()
        {
            log::error!("{p} - Authorization Error");
            self.send(crate::protocol::err::AUTHORIZATION_VIOLATION);
            return Err(CloseReason::AuthenticationViolation);
        }
        match op {
            RouteOp::Ping => {
                if self.trace {
                    log::trace!("{p} - ->> [PONG]");
                }
                self.send(crate::protocol::PONG);
            }
            RouteOp::Pong => {
                self.link.pong();
            }
            RouteOp::Ok => {}
            RouteOp::Err(e) => {
                log::error!("{p} - Router Error {}", s(e));
                return Err(CloseReason::ParseError);
            }
            RouteOp::Connect(json) => {
                return self.on_connect(json);
            }
            RouteOp::Info(json) => {
                return self.on_info(json);
            }
            RouteOp::Sub {
                account,
                subject,
                queue,
            } => {
                self.on_remote_sub(account, subject, queue);
            }
            RouteOp::Unsub {
                account,
                subject,
                queue,
            } => {
                self.on_remote_unsub(account, subject, queue);
            }
            RouteOp::Msg(m) => {
                self.on_msg(&m, chunk, at);
            }
        }
        Ok(())
    }

    /// `CONNECT` on an accepted route (nats-server's `processRouteConnect`).
    fn on_connect(&mut self, json: &[u8]) -> Result<(), CloseReason> {
        let p = self.prefix();
        let c: RouteConnect = self.link.decode("CONNECT", json)?;
        if !c.lang.is_empty() {
            // A client on the route port.
            self.send(b"-ERR 'attempted to connect to route port'\r\n");
            log::error!("{p} - attempted to connect to route port");
            return Err(CloseReason::WrongPort);
        }
        if let Some(a) = &self.routes.config.authorization {
            if !(c.user == a.user && password_matches(&a.password, &c.pass)) {
                log::error!("{p} - Authorization Error");
                self.send(crate::protocol::err::AUTHORIZATION_VIOLATION);
                return Err(CloseReason::AuthenticationViolation);
            }
        }
        self.awaiting_connect = false;
        if let Err(ours) = self.routes.reconcile_name(&c.cluster, c.cluster_dynamic) {
            let text = format!(
                "Rejecting connection, cluster name {:?} does not match {:?}",
                c.cluster, ours
            );
            log::error!("{p} - {text}");
            self.send(format!("-ERR '{text}'\r\n").as_bytes());
            return Err(CloseReason::ClusterNameConflict);
        }
        Ok(())
    }

    /// `INFO` (nats-server's `processRouteInfo`).
    fn on_info(&mut self, json: &[u8]) -> Result<(), CloseReason> {
        let p = self.prefix();
        let info: RouteInfo = self.link.decode("INFO", json)?;
        if info.server_id == self.shared.server_id {
            // A route to ourselves (our own address among the routes, or gossip of it).
            log::debug!(
                "{p} - Detected route to self, ignoring {:?}",
                self.route.url
            );
            self.to_self = true;
            self.route.remote.lock().id = info.server_id;
            return Err(CloseReason::DuplicateRoute);
        }
        if !info.cluster.is_empty() {
            if let Err(ours) = self
                .routes
                .reconcile_name(&info.cluster, info.cluster_dynamic)
            {
                log::error!(
                    "{p} - Rejecting connection, cluster name {:?} does not match {:?}",
                    info.cluster,
                    ours
                );
                return Err(CloseReason::ClusterNameConflict);
            }
        }
        if self.got_info {
            let remote_id = self.route.remote_id();
            if info.server_id != remote_id {
                // Gossip: another server joined the cluster; dial it (an implicit route).
                super::listen::implicit_route(self.node, &info);
            } else {
                let mut r = self.route.remote.lock();
                r.connect_urls = info.connect_urls;
            }
            return Ok(());
        }
        self.got_info = true;
        {
            let mut r = self.route.remote.lock();
            r.id = info.server_id.clone();
            r.name = info.server_name.clone();
            r.port = info.port;
            r.connect_urls = info.connect_urls.clone();
        }
        let Some(others) = self.routes.register(&self.route, &info.server_id) else {
            log::debug!("{p} - Detected duplicate remote route {:?}", info.server_id);
            return Err(CloseReason::DuplicateRoute);
        };
        log::debug!("{p} - Registering remote route {:?}", info.server_id);
        log::debug!("{p} - Sent local subscriptions to route");
        if !others.is_empty() {
            // Tell the other servers about this one, so that they dial it
            // (`forwardNewRouteInfoToKnownServers`): where we reached it, unless it
            // advertises an address.
            let mut gossip = info.clone();
            if gossip.ip.is_empty() {
                gossip.ip = format!(
                    "nats-route://{}/",
                    crate::listen::join_host_port(
                        &self.route.client.addr.ip().to_string(),
                        info.port
                    )
                );
            }
            let line = protocol::json_line("INFO", &gossip, true);
            for r in others {
                let mut batch = self.shared.pool.take();
                batch.push(&line);
                r.client.enqueue(batch, &self.shared.pool);
            }
        }
        if !self.routes.config.no_advertise {
            self.shared.send_info_to_clients();
        }
        Ok(())
    }

    /// `RS+`: remote interest, as a subscription of this route in the account's sublist.
    fn on_remote_sub(&mut self, account: &[u8], subject: &[u8], queue: Option<(&[u8], u32)>) {
        let Some(acc) = super::account_for(self.shared, account) else {
            log::debug!(
                "{} - Unknown account {:?} for remote subject {:?}",
                self.prefix(),
                String::from_utf8_lossy(account),
                String::from_utf8_lossy(subject)
            );
            return;
        };
        // The cluster's `export` permission (nats-server's `canExport`): interest it does not
        // allow is ignored; a wildcard interest covering a denied subject is taken, its
        // messages on denied subjects filtered out.
        let mut deny = None;
        if let Some(perms) = self.routes.permissions() {
            if !perms.can_subscribe(subject, None) {
                log::debug!(
                    "{} - Can not export {:?}, ignoring remote subscription request",
                    self.prefix(),
                    String::from_utf8_lossy(subject)
                );
                return;
            }
            deny = perms.delivery_filter(subject);
        }
        let key: super::InterestKey =
            (account.into(), subject.into(), queue.map(|(q, _)| q.into()));
        let mut subs = self.route.subs.lock();
        if let Some(entry) = subs.get_mut(&key) {
            // A queue group's new weight (or a repeated RS+).
            entry.1 = queue.map_or(1, |(_, w)| w);
            return;
        }
        let sub = Arc::new(
            Subscription::new(
                self.route.client.clone(),
                acc.clone(),
                subject,
                queue.map(|(q, _)| q),
                b"",
            )
            .with_delivery_filter(deny),
        );
        // Lock order: the route's subs map, then the sublist's locks (as a client's sid
        // map); the table lock is not taken here.
        match acc.sublist.insert(sub.clone()) {
            Ok(()) => {
                subs.insert(key, (sub.clone(), queue.map_or(1, |(_, w)| w)));
                drop(subs);
                // Leafs that connected to us hear of the cluster's interest.
                self.shared.interest_added(&sub);
            }
            Err(_) => {
                log::error!(
                    "{} - Could not insert subscription: invalid subject {:?}",
                    self.prefix(),
                    String::from_utf8_lossy(subject)
                );
                // As nats-server's `processRemoteSub`: the route stays up.
                drop(subs);
                self.send(b"-ERR 'Invalid Subscription'\r\n");
            }
        }
    }

    /// `RS-`: the remote interest is gone.
    fn on_remote_unsub(&mut self, account: &[u8], subject: &[u8], queue: Option<&[u8]>) {
        if super::account_for(self.shared, account).is_none() {
            return;
        }
        let key: super::InterestKey = (account.into(), subject.into(), queue.map(Into::into));
        let removed = self.route.subs.lock().remove(&key);
        if let Some((sub, _)) = removed {
            sub.close();
            sub.account.sublist.remove(&sub);
            self.shared.interest_removed(&[&sub]);
        }
    }

    /// `RMSG`/`HMSG`: deliver to local subscribers (never to another route).
    fn on_msg(&mut self, m: &RoutedMsg<'_>, chunk: &bytes::Bytes, at: usize) {
        let Some(acc) = super::account_for(self.shared, m.account) else {
            log::debug!(
                "{} - Unknown account {:?} for routed message on subject: {:?}",
                self.prefix(),
                String::from_utf8_lossy(m.account),
                String::from_utf8_lossy(m.subject)
            );
            return;
        };
        let publish = Publish {
            args: m.args,
            subject: m.subject,
            reply: m.reply,
            headers: m.headers,
            size_token: m.size_token,
            payload: m.payload,
            payload_offset: m.payload_offset,
        };
        let mut msg = Message::new(&publish, chunk, at + m.payload_offset);
        let ctx = DeliveryContext {
            publisher: self.route.client.cid,
            echo: true,
            trace: self.trace,
            origin: Origin::Route { queues: &m.queues },
        };
        // The account's own match cache: a cache is only valid against one sublist's
        // generations.
        let i = match self.caches.iter().position(|(a, _)| Arc::ptr_eq(a, &acc)) {
            Some(i) => i,
            None => {
                let cache = MatchCache::new(crate::subjects::MATCH_CACHE_CAPACITY);
                self.caches.push((acc.clone(), cache));
                self.caches.len() - 1
            }
        };
        deliver_message(
            self.shared,
            &acc.sublist,
            &mut self.caches[i].1,
            &mut self.outbox,
            &mut msg,
            &ctx,
        );
    }

    /// Ends the connection: remove its remote interest, leave the table, and tell clients
    /// if the cluster's URLs changed.
    fn finish(mut self, reason: CloseReason) -> Ended {
        self.link.publish_counters();
        self.flush();
        self.route.client.close(reason);
        let subs: Vec<(super::InterestKey, (Arc<Subscription>, u32))> =
            self.route.subs.lock().drain().collect();
        for (_, (sub, _)) in &subs {
            sub.close();
            sub.account.sublist.remove(sub);
        }
        let gone: Vec<&Arc<Subscription>> = subs.iter().map(|(_, (sub, _))| sub).collect();
        self.shared.interest_removed(&gone);
        let was_registered = self.routes.depart(&self.shared.registry, &self.route);
        self.route.client.reader_finished(&self.shared.pool);
        let reason = self.route.client.close_reason().unwrap_or(reason);
        log::info!("{} - Router connection closed: {reason}", self.prefix());
        if was_registered && !self.routes.config.no_advertise && !self.shared.is_shutting_down() {
            self.shared.send_info_to_clients();
        }
        Ended {
            reason,
            remote_id: self.route.remote_id(),
            to_self: self.to_self,
        }
    }
}

/// A configured permission as the route `INFO` shows it.
fn info_permission(p: &crate::config::SubjectPermission) -> protocol::SubjectPermission {
    protocol::SubjectPermission {
        allow: p.allow.clone(),
        deny: p.deny.clone(),
    }
}

/// The JSON of an `INFO`/`CONNECT` line, for traces.
fn json_of(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line);
    let s = s.trim_end();
    s.split_once(' ').map_or(s, |(_, j)| j).to_owned()
}

/// A cluster password check: plain text (compared in constant time) or a bcrypt hash, as
/// client passwords are checked (`auth::Secret`).
fn password_matches(expected: &str, given: &str) -> bool {
    crate::auth::Secret::new(expected).verify(given)
}
