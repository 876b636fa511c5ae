//! A leafnode connection's reader thread: the handshake of either role, then leafnode
//! operations until the connection ends (nats-server's `createLeafNode`,
//! `processLeafnodeInfo`, `processLeafNodeConnect`, `processLeafSub`, `processLeafUnsub`,
//! `processInboundLeafMsg`).
//!
//! Handshake, as nats-server 2.9 does it (recorded in [`crate::protocol::leaf`]):
//! - **accepting (hub)**: send `INFO` (with `client_id`, `nonce`, `info_on_connect` and
//!   `leafnode_urls`) at once; wait for `CONNECT` (the authorization timeout), check it,
//!   bind the account, answer with an `INFO` marked `connect_info` naming the account, then
//!   register: our interest and `$LDS.` subject are sent.
//! - **soliciting (spoke)**: wait for the hub's `INFO` (1 s, nats-server's
//!   `DEFAULT_LEAFNODE_INFO_WAIT`; anything without `client_id` and `leafnode_urls` is a
//!   wrong port), send `CONNECT`, and register once the `connect_info` `INFO` arrives (at
//!   once if the hub did not promise one).
//!
//! Output goes through the connection's `Client` and the writer pool; messages from the
//! other side are delivered with the client path's `deliver_message`, `Origin::Leaf`.

use super::{Leaf, LeafKey, Leafnodes, Remote};
use crate::auth::PermissionSet;
use crate::client::{Account, Client, Subscription};
use crate::close::CloseReason;
use crate::delivery::{deliver_message, DeliveryContext, Message, Origin, Outbox};
use crate::protocol::leaf::{LeafConnect, LeafInfo};
use crate::protocol::route::{json_line, Dialect, RouteOp, RoutedMsg};
use crate::protocol::Publish;
use crate::route::link::{Link, Reader};
use crate::shared::Shared;
use crate::socket::Socket;
use crate::subjects::MatchCache;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// nats-server's `DEFAULT_LEAFNODE_INFO_WAIT`: how long a soliciting side waits for `INFO`
/// (and, here, for the rest of the handshake).
pub const INFO_WAIT: Duration = Duration::from_secs(1);
/// The first PING after the handshake, then every `ping_interval`.
const FIRST_PING: Duration = Duration::from_secs(1);

/// What every leafnode thread needs.
#[derive(Clone)]
pub(crate) struct Node {
    pub(crate) shared: Arc<Shared>,
    pub(crate) leafs: Arc<Leafnodes>,
}

/// A connection we solicited: which remote, and where.
#[derive(Debug, Clone)]
pub struct Dialed {
    /// The URL dialled.
    pub url: String,
    /// Credentials for `CONNECT` (from the URL).
    pub creds: Option<(String, String)>,
    /// The local account the remote binds (default `$G`).
    pub account: Arc<Account>,
    /// The remote's `deny_imports`, as configured (sent as `deny_pub` in `CONNECT`).
    pub deny_imports: Vec<String>,
    /// The same, compiled: our interest in them is not sent; messages on them are dropped.
    pub imports_denied: Option<Arc<PermissionSet>>,
    /// The remote's `deny_exports`: the hub's interest in them is not taken (a wildcard's
    /// deliveries are filtered), so no message on them crosses.
    pub exports_denied: Option<Arc<PermissionSet>>,
}

/// How a connection ended, for its dialer.
#[derive(Debug, Clone)]
pub struct Ended {
    /// Why it closed.
    pub reason: CloseReason,
    /// It ended on a loop (either side detected it): wait 30 s before redialling.
    pub loop_detected: bool,
    /// The handshake completed.
    pub registered: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Spoke: waiting for the hub's first `INFO`.
    AwaitInfo,
    /// Spoke: `CONNECT` sent, waiting for the `connect_info` `INFO`.
    AwaitConnectInfo,
    /// Hub: waiting for `CONNECT`.
    AwaitConnect,
    /// Registered.
    Ready,
}

struct LeafConn<'a> {
    shared: &'a Arc<Shared>,
    leafs: &'a Leafnodes,
    client: Arc<Client>,
    dialed: Option<Dialed>,
    /// The bound account (a hub binds it at `CONNECT`).
    account: Arc<Account>,
    leaf: Option<Arc<Leaf>>,
    remote: Remote,
    /// Reading, the operations of a read, the PING timer (the routes' reader's).
    link: Link,
    outbox: Outbox,
    cache: MatchCache<Subscription>,
    trace: bool,
    stage: Stage,
    /// The end of the handshake.
    deadline: Instant,
    loop_detected: bool,
}

/// Runs a leafnode connection on the calling thread until it ends. `dialed` is `None` for
/// a connection accepted on the leafnode port.
pub(crate) fn run(
    node: &Node,
    stream: TcpStream,
    addr: SocketAddr,
    dialed: Option<Dialed>,
) -> Ended {
    let (shared, leafs) = (&node.shared, &*node.leafs);
    let failed = |reason| Ended {
        reason,
        loop_detected: false,
        registered: false,
    };
    let socket = match Socket::new(stream).and_then(|s| {
        s.set_read_timeout(Duration::from_millis(100))?;
        Ok(s)
    }) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            log::debug!("{addr} - leafnode setup failed: {e}");
            return failed(CloseReason::ReadError);
        }
    };
    let config = shared.config();
    let spoke = dialed.is_some();
    let account = dialed
        .as_ref()
        .map_or_else(|| shared.accounts.global().clone(), |d| d.account.clone());
    let client = Arc::new(
        Client::new(
            shared.registry.next_cid(),
            addr,
            socket.clone(),
            shared.doorbell.clone(),
            config.max_pending,
            shared.registry.departed().clone(),
            None,
            account.clone(),
        )
        .into_leaf(spoke),
    );
    let handshake = if spoke {
        INFO_WAIT * 3
    } else {
        leafs
            .config
            .authorization
            .as_ref()
            .map_or(crate::config::DEFAULT_AUTH_TIMEOUT, |a| a.timeout)
    };
    let link = Link::new(
        client.clone(),
        socket,
        Dialect::Leaf,
        Instant::now() + handshake + FIRST_PING,
    );
    let mut conn = LeafConn {
        shared,
        leafs,
        client,
        dialed,
        account,
        leaf: None,
        remote: Remote::default(),
        link,
        outbox: Outbox::new(),
        cache: MatchCache::new(crate::subjects::MATCH_CACHE_CAPACITY),
        trace: config.trace,
        stage: if spoke {
            Stage::AwaitInfo
        } else {
            Stage::AwaitConnect
        },
        deadline: Instant::now() + handshake,
        loop_detected: false,
    };
    let p = conn.client.log_prefix();
    match &conn.dialed {
        Some(d) => log::info!(
            "{p} - Leafnode connection created for account: {} ",
            d.account.name
        ),
        None => {
            log::info!("{p} - Leafnode connection created");
            let info = conn.info(false);
            conn.send_json("INFO", &info, true);
            conn.flush();
        }
    }
    let reason = crate::route::link::run(&mut conn);
    conn.finish(reason)
}

/// The leafnode protocol on the routes' reader loop (`route::link::run`).
impl Reader for LeafConn<'_> {
    fn link(&mut self) -> &mut Link {
        &mut self.link
    }

    fn handle(
        &mut self,
        op: RouteOp<'_>,
        chunk: &bytes::Bytes,
        at: usize,
    ) -> Result<(), CloseReason> {
        LeafConn::handle(self, op, chunk, at)
    }

    /// The handshake's deadline; the PING timer runs once it is done.
    fn deadlines(&mut self) -> Result<bool, CloseReason> {
        if self.stage == Stage::Ready {
            return Ok(true);
        }
        let now = Instant::now();
        if now >= self.deadline {
            if self.stage == Stage::AwaitConnect {
                self.send(crate::protocol::err::AUTHENTICATION_TIMEOUT);
                log::error!("{} - Authentication Timeout", self.prefix());
                return Err(CloseReason::AuthenticationTimeout);
            }
            log::error!("{} - Leafnode handshake timed out", self.prefix());
            return Err(CloseReason::StaleConnection);
        }
        let _ = self.link.socket.set_read_timeout(self.deadline - now);
        Ok(false)
    }

    fn send(&mut self, bytes: &[u8]) {
        LeafConn::send(self, bytes);
    }

    fn flush(&mut self) {
        LeafConn::flush(self);
    }

    fn staged(&self) -> usize {
        self.outbox.staged()
    }

    fn ending(&self) -> Option<CloseReason> {
        (self.client.is_closing() || self.leafs.is_stopping()).then(|| {
            self.client
                .close_reason()
                .unwrap_or(CloseReason::ServerShutdown)
        })
    }

    fn shared(&self) -> &Shared {
        self.shared
    }

    fn what(&self) -> &'static str {
        "Leafnode"
    }

    fn trace(&self) -> bool {
        self.trace
    }
}

impl LeafConn<'_> {
    fn prefix(&self) -> String {
        self.client.log_prefix()
    }

    /// Our leafnode `INFO` (hub side); `connect_info`: the answer to `CONNECT`.
    fn info(&self, connect_info: bool) -> LeafInfo {
        let config = self.shared.config();
        // Where leafs can reach us: the listen address, or, bound to every interface, the
        // interfaces' addresses (as nats-server's `setLeafNodeInfoHostPortAndIP`).
        let urls = self
            .leafs
            .listen_addr
            .map(crate::listen::advertised_host_ports)
            .unwrap_or_default();
        let url = urls.first().cloned().unwrap_or_default();
        let host = url
            .rsplit_once(':')
            .map_or("", |(h, _)| h)
            .trim_matches(['[', ']'])
            .to_owned();
        let port = self.leafs.listen_addr.map_or(0, |a| a.port());
        LeafInfo {
            server_id: self.shared.server_id.clone(),
            server_name: self.shared.server_name.clone(),
            version: crate::protocol::NATS_VERSION.into(),
            proto: 1,
            go: crate::protocol::RUNTIME_VERSION.into(),
            host,
            port,
            headers: true,
            auth_required: true,
            tls_required: false,
            max_payload: config.max_payload as i64,
            ip: url,
            cid: self.client.cid,
            nonce: if connect_info {
                String::new()
            } else {
                crate::protocol::generate_server_id()[..15].to_string()
            },
            cluster: String::new(),
            info_on_connect: true,
            connect_info,
            leafnode_urls: Some(urls),
            remote_account: if connect_info {
                self.account.name.clone()
            } else {
                String::new()
            },
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let client = self.client.clone();
        self.outbox
            .batch_for(&client, &self.shared.pool)
            .push(bytes);
        self.outbox.add_staged(bytes.len());
    }

    fn send_json(&mut self, op: &str, value: &impl serde::Serialize, trailing_space: bool) {
        let line = json_line(op, value, trailing_space);
        if self.trace {
            let text = String::from_utf8_lossy(&line);
            log::trace!(
                "{} - ->> [{}]",
                self.prefix(),
                crate::protocol::redact_secrets(text.trim_end().as_bytes())
            );
        }
        self.send(&line);
    }

    fn send_err(&mut self, text: &str) {
        log::error!("{} - {text}", self.prefix());
        self.send(format!("-ERR '{text}'\r\n").as_bytes());
    }

    /// Queues what was staged, without stalling on a slow local subscriber (as a route's
    /// reader: one slow client must not hold up all traffic from the other server).
    fn flush(&mut self) {
        self.outbox.flush(&self.shared.pool, None, self.client.cid);
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
        match &op {
            RouteOp::Connect(_) | RouteOp::Info(_) | RouteOp::Ping | RouteOp::Pong => {}
            RouteOp::Err(_) => {}
            _ if self.stage != Stage::Ready => {
                // Interest or messages before the handshake is done.
                if self.stage == Stage::AwaitConnect {
                    self.send(crate::protocol::err::AUTHORIZATION_VIOLATION);
                    log::error!("{p} - Authorization Error");
                    return Err(CloseReason::AuthenticationViolation);
                }
                log::error!("{p} - Leafnode operation before the handshake ended");
                return Err(CloseReason::ProtocolViolation);
            }
            _ => {}
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
                let text = s(e);
                log::error!("{p} - Leafnode Error {text}");
                if text.contains("Loop detected") {
                    self.loop_detected = true;
                    return Err(CloseReason::ProtocolViolation);
                }
                if self.stage != Stage::Ready {
                    return Err(CloseReason::ProtocolViolation);
                }
            }
            RouteOp::Connect(json) => {
                return self.on_connect(json);
            }
            RouteOp::Info(json) => {
                return self.on_info(json);
            }
            RouteOp::Sub { subject, queue, .. } => {
                return self.on_sub(subject, queue);
            }
            RouteOp::Unsub { subject, queue, .. } => {
                self.on_unsub(subject, queue);
            }
            RouteOp::Msg(m) => {
                self.on_msg(&m, chunk, at);
            }
        }
        Ok(())
    }

    /// `INFO` (nats-server's `processLeafnodeInfo`): a spoke's handshake; later ones (the
    /// hub's cluster changed) are taken as they come.
    fn on_info(&mut self, json: &[u8]) -> Result<(), CloseReason> {
        let info: LeafInfo = self.link.decode("INFO", json)?;
        match self.stage {
            Stage::AwaitInfo => {
                if info.cid == 0 || info.leafnode_urls.is_none() {
                    log::error!("{} - attempted to connect to incorrect port", self.prefix());
                    return Err(CloseReason::WrongPort);
                }
                if info.server_id == self.shared.server_id {
                    log::error!("{} - Leafnode to self, closing", self.prefix());
                    return Err(CloseReason::DuplicateRoute);
                }
                self.client.set_headers(info.headers);
                self.remote = Remote {
                    id: info.server_id.clone(),
                    name: if info.server_name.is_empty() {
                        info.server_id.clone()
                    } else {
                        info.server_name.clone()
                    },
                    cluster: info.cluster.clone(),
                };
                self.send_connect();
                log::debug!("{} - Remote leafnode connect msg sent", self.prefix());
                if info.info_on_connect {
                    self.stage = Stage::AwaitConnectInfo;
                } else {
                    self.register();
                }
            }
            Stage::AwaitConnectInfo if info.connect_info => self.register(),
            _ => {}
        }
        Ok(())
    }

    fn send_connect(&mut self) {
        let (user, pass) = self
            .dialed
            .as_ref()
            .and_then(|d| d.creds.clone())
            .unwrap_or_default();
        let c = LeafConnect {
            version: crate::protocol::NATS_VERSION.into(),
            user,
            pass,
            tls_required: false,
            server_id: self.shared.server_id.clone(),
            name: self.shared.server_name.clone(),
            headers: true,
            deny_pub: self
                .dialed
                .as_ref()
                .map(|d| d.deny_imports.clone())
                .unwrap_or_default(),
            ..LeafConnect::default()
        };
        self.send_json("CONNECT", &c, false);
    }

    /// `CONNECT` on an accepted connection (nats-server's `processLeafNodeConnect`): check
    /// it, bind the account, answer with `INFO`, register.
    fn on_connect(&mut self, json: &[u8]) -> Result<(), CloseReason> {
        if self.stage != Stage::AwaitConnect {
            return Ok(());
        }
        let c: LeafConnect = self.link.decode("CONNECT", json)?;
        if !c.lang.is_empty() {
            self.send_err("attempted to connect to leaf node port");
            return Err(CloseReason::WrongPort);
        }
        if !c.gateway.is_empty() {
            self.send_err(&format!(
                "Rejecting connection from gateway {:?} on the leafnode port",
                c.gateway
            ));
            return Err(CloseReason::WrongPort);
        }
        match super::listen::authorize(self.shared, &self.leafs.config, &c.user, &c.pass) {
            Some(account) => self.account = account,
            None => {
                log::error!("{} - Authorization Error", self.prefix());
                self.send(crate::protocol::err::AUTHORIZATION_VIOLATION);
                return Err(CloseReason::AuthenticationViolation);
            }
        }
        self.client.set_headers(c.headers);
        self.remote = Remote {
            id: c.server_id.clone(),
            name: c.name.clone(),
            cluster: c.cluster.clone(),
        };
        let info = self.info(true);
        self.send_json("INFO", &info, true);
        self.register();
        Ok(())
    }

    /// The handshake is done: the connection joins the table and hears our interest.
    fn register(&mut self) {
        self.stage = Stage::Ready;
        let leaf = Arc::new(Leaf {
            client: self.client.clone(),
            account: self.account.clone(),
            spoke: self.dialed.is_some(),
            url: self.dialed.as_ref().map(|d| d.url.clone()),
            remote: parking_lot::Mutex::new(self.remote.clone()),
            subs: parking_lot::Mutex::new(Default::default()),
            imports_denied: self.dialed.as_ref().and_then(|d| d.imports_denied.clone()),
        });
        self.client.set_account(&self.account);
        // What was staged so far (INFO, CONNECT) goes first.
        self.flush();
        self.leafs.register(&leaf);
        self.leaf = Some(leaf);
        self.link.next_ping = Instant::now() + FIRST_PING;
        log::debug!(
            "{} - Leafnode connection registered with {:?}, account {}",
            self.prefix(),
            self.remote.name,
            self.account.name
        );
    }

    /// `LS+`: remote interest, as a subscription of this connection in the account's
    /// sublist; or our own loop-detection subject come back.
    fn on_sub(&mut self, subject: &[u8], queue: Option<(&[u8], u32)>) -> Result<(), CloseReason> {
        if subject == self.leafs.lds.as_bytes() {
            let text = crate::protocol::leaf::loop_detected(&self.account.name);
            self.send_err(&text);
            self.loop_detected = true;
            return Err(CloseReason::ProtocolViolation);
        }
        let Some(leaf) = self.leaf.clone() else {
            return Ok(());
        };
        let exports_denied = self.dialed.as_ref().and_then(|d| d.exports_denied.clone());
        if let Some(deny) = &exports_denied {
            if !crate::subjects::has_wildcard(subject) && deny.matches(subject) {
                // `deny_exports`: nothing on it goes to the hub (nats-server ignores the
                // interest, as a spoke's permission violation).
                log::debug!(
                    "{} - Not permitted to export {:?}",
                    self.prefix(),
                    String::from_utf8_lossy(subject)
                );
                return Ok(());
            }
        }
        let key: LeafKey = (subject.into(), queue.map(|(q, _)| q.into()));
        let mut subs = leaf.subs.lock();
        if subs.contains_key(&key) {
            // A queue group's new weight: one subscription stands for the group.
            return Ok(());
        }
        let mut sub = Subscription::new(
            self.client.clone(),
            self.account.clone(),
            subject,
            queue.map(|(q, _)| q),
            b"",
        );
        // A wildcard covering denied exports: its deliveries are filtered (`delivery`).
        sub.deny = exports_denied;
        let sub = Arc::new(sub);
        // Lock order: the connection's subs map, then the sublist's locks (as a client's
        // sid map); released before the interest is announced.
        match self.account.sublist.insert(sub.clone()) {
            Ok(()) => {
                subs.insert(key, sub.clone());
                drop(subs);
                self.shared.interest_added(&sub);
            }
            Err(_) => {
                drop(subs);
                log::error!(
                    "{} - Could not insert subscription: invalid subject {:?}",
                    self.prefix(),
                    String::from_utf8_lossy(subject)
                );
                self.send(b"-ERR 'Invalid Subscription'\r\n");
            }
        }
        Ok(())
    }

    /// `LS-`: the interest is gone.
    fn on_unsub(&mut self, subject: &[u8], queue: Option<&[u8]>) {
        let Some(leaf) = &self.leaf else { return };
        let key: LeafKey = (subject.into(), queue.map(Into::into));
        let removed = leaf.subs.lock().remove(&key);
        if let Some(sub) = removed {
            if sub.close() {
                sub.account.sublist.remove(&sub);
                self.shared.interest_removed(&[&sub]);
            }
        }
    }

    /// `LMSG`/`HMSG`: deliver in the bound account.
    fn on_msg(&mut self, m: &RoutedMsg<'_>, chunk: &bytes::Bytes, at: usize) {
        if let Some(deny) = self.dialed.as_ref().and_then(|d| d.imports_denied.as_ref()) {
            if deny.matches(m.subject) {
                // `deny_imports` (the hub was asked not to send it: `deny_pub`).
                return;
            }
        }
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
        let account = self.account.clone();
        let ctx = DeliveryContext {
            publisher: self.client.cid,
            echo: false,
            trace: self.trace,
            origin: Origin::Leaf {
                account: &account.name,
                queues: &m.queues,
                spoke: self.dialed.is_some(),
            },
        };
        deliver_message(
            self.shared,
            &account.sublist,
            &mut self.cache,
            &mut self.outbox,
            &mut msg,
            &ctx,
        );
    }

    /// Ends the connection: its remote interest leaves the sublist, and it the table.
    fn finish(mut self, reason: CloseReason) -> Ended {
        self.link.publish_counters();
        self.flush();
        self.client.close(reason);
        let registered = self.leaf.is_some();
        if let Some(leaf) = self.leaf.take() {
            let subs: Vec<Arc<Subscription>> = leaf.subs.lock().drain().map(|(_, s)| s).collect();
            let gone: Vec<&Arc<Subscription>> = subs.iter().filter(|s| s.close()).collect();
            self.account.sublist.remove_many(gone.iter().copied());
            self.shared.interest_removed(&gone);
            self.leafs.depart(&self.shared.registry, &leaf);
        } else {
            self.shared.registry.consistent(|_| self.client.settle());
        }
        self.client.reader_finished(&self.shared.pool);
        let reason = self.client.close_reason().unwrap_or(reason);
        log::info!(
            "{} - Leafnode connection closed: {reason} account: {}",
            self.prefix(),
            self.account.name
        );
        Ended {
            reason,
            loop_detected: self.loop_detected,
            registered,
        }
    }
}
