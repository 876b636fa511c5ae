//! The path of a message: from a publish to the batches of its subscribers, local ones and
//! routes (nats-server's `processInboundClientMsg`, `processMsgResults`, `deliverMsg`).
//!
//! Start here to follow a `PUB`. A client's reader (`crate::session`) or a route's reader
//! (`crate::route`) has parsed a message out of its read buffer; it calls
//! [`deliver_message`], which
//! 1. matches the subject in the account's subscription table, through the reader's own
//!    match cache ([`crate::subjects::MatchCache`], then [`crate::subjects::Sublist`]);
//! 2. gives every plain subscription a copy, and each queue group one, to a random member
//!    (`Deliverer::deliver`): it writes the `MSG`/`HMSG` control line
//!    ([`crate::protocol::write_msg_line`]) into the subscriber's batch in the reader's
//!    [`Outbox`], and the payload after it, copied when small, shared (a `Bytes` slice of
//!    the read buffer) when large (`finish_msg`);
//! 3. for a client's publish, gives each route with interest one `RMSG`
//!    ([`crate::protocol::route::write_rmsg_line`]), naming the queue groups it picked
//!    that route for (`Deliverer::forward`).
//!
//! Nothing is queued to a subscriber yet: once the reader has handled its whole read, it
//! flushes the outbox ([`Outbox::flush`]), one queue push and at most one writer wake-up per
//! destination ([`crate::client::Client::enqueue`]); a writer thread then writes the
//! batches to the socket ([`crate::writer`]).
//!
//! Auto-unsubscribe limits are counted here, per delivery ([`crate::client::Claim`]): the
//! delivery that reaches a limit removes the subscription, from whichever thread it runs
//! on ([`Shared::unsubscribe`]).
//!
//! The whole path, seen from a client, with a server started in this process:
//!
//! ```
//! use std::io::{BufRead, BufReader, Write};
//! use std::net::TcpStream;
//! use std::time::Duration;
//!
//! let config = beaver::Config {
//!     host: "127.0.0.1".into(),
//!     port: -1, // any free port
//!     ..beaver::Config::default()
//! };
//! let server = beaver::Server::start(config)?;
//! let stream = TcpStream::connect(server.local_addr())?;
//! stream.set_read_timeout(Some(Duration::from_secs(30)))?;
//! let mut lines = BufReader::new(stream.try_clone()?).lines();
//! assert!(lines.next().unwrap()?.starts_with("INFO {"));
//! (&stream).write_all(b"CONNECT {\"verbose\":false}\r\n")?;
//! (&stream).write_all(b"SUB greeting 1\r\nPUB greeting 5\r\nhello\r\n")?;
//! // The session parsed the PUB, `deliver_message` staged a MSG for the subscription
//! // (its own connection here), and a writer wrote it.
//! assert_eq!(lines.next().unwrap()?, "MSG greeting 1 5");
//! assert_eq!(lines.next().unwrap()?, "hello");
//! server.shutdown();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod outbox;

pub use outbox::Outbox;

use crate::client::ServiceMsg;
use crate::client::{Claim, Client, Subscription};
use crate::outbound::SHARE_MIN;
use crate::protocol::{self, MsgLine, Publish};
use crate::shared::Shared;
use crate::subjects::MatchCache;
use bytes::Bytes;
use std::sync::Arc;

/// Staged output (bytes copied into batches) after which a reader flushes its outbox before
/// the read buffer is finished, to bound memory and start writers earlier.
pub const FLUSH_STAGED: usize = 256 * 1024;

/// Ends a `MSG`/`HMSG`/`RMSG` whose control line was just written into `batch` from byte
/// `before`: the payload from byte `skip` (shared with the other deliveries when large,
/// copied when small), CR LF, and the message count. With `trace`, logs the control line as
/// sent to that client. Returns the bytes staged since `before`.
fn finish_msg(
    batch: &mut crate::outbound::Batch,
    msg: &mut Message<'_, '_>,
    skip: usize,
    before: usize,
    trace: Option<&Client>,
) -> usize {
    let line_end = batch.buf_mut().len();
    let payload = &msg.publish.payload[skip..];
    if payload.len() >= SHARE_MIN {
        batch.push_shared(msg.shared_payload().slice(skip..));
    } else {
        batch.push(payload);
    }
    batch.push(b"\r\n");
    batch.count_msg(payload.len());
    if let Some(client) = trace {
        // The line just written, without its CR LF.
        let line = &batch.buf_mut()[before..line_end - 2];
        log::trace!(
            "{} - ->> [{}]",
            client.log_prefix(),
            String::from_utf8_lossy(line)
        );
    }
    batch.buf_mut().len() - before
}

/// The payload at `at..at + len` of the frozen read buffer `chunk`, as a `Bytes` that every
/// subscriber can share.
///
/// Slicing `chunk` costs nothing, but keeps the whole read buffer alive for as long as any
/// subscriber holds the payload, while `max_pending` only counts the payload. So the buffer
/// is sliced only when the payload is at least half of it (what is pinned is then at most
/// twice what is counted); otherwise the payload gets its own allocation, exactly its size.
fn share(chunk: &Bytes, at: usize, len: usize) -> Bytes {
    if len * 2 >= chunk.len() {
        chunk.slice(at..at + len)
    } else {
        Bytes::copy_from_slice(&chunk[at..at + len])
    }
}

/// One message being routed.
pub struct Message<'p, 'b> {
    publish: &'p Publish<'b>,
    /// The frozen read buffer the publish was parsed from.
    chunk: &'p Bytes,
    /// Offset of the payload in `chunk`.
    payload_at: usize,
    /// The payload as a shared `Bytes`, made on first need.
    shared: Option<Bytes>,
    /// For subscribers without headers support: the body size, formatted once.
    stripped_size: SizeToken,
    /// The subject subscribers are matched on when it is not the one shown
    /// (JetStream's deliveries: routed by the deliver subject or inbox, shown with the
    /// stream subject; nats-server's `pa.deliver`).
    deliver: Option<&'p [u8]>,
}

impl<'p, 'b> Message<'p, 'b> {
    /// A message whose payload is at `payload_at` in the frozen read buffer `chunk`.
    pub fn new(publish: &'p Publish<'b>, chunk: &'p Bytes, payload_at: usize) -> Self {
        Message {
            publish,
            chunk,
            payload_at,
            shared: None,
            // Only needed (and only formatted) for messages with headers.
            stripped_size: SizeToken::new(
                publish
                    .headers
                    .map_or(0, |(h, _)| publish.payload.len().saturating_sub(h)),
            ),
            deliver: None,
        }
    }

    /// The subject subscriptions are matched against.
    fn match_subject(&self) -> &[u8] {
        self.deliver.unwrap_or(self.publish.subject)
    }

    /// The payload as one `Bytes` every destination can share (see `share`).
    fn shared_payload(&mut self) -> Bytes {
        let (chunk, at, len) = (self.chunk, self.payload_at, self.publish.payload.len());
        self.shared
            .get_or_insert_with(|| share(chunk, at, len))
            .clone()
    }
}

/// Where a message comes from, which decides where it may go (nats-server's
/// `processMsgResults`).
pub enum Origin<'q> {
    /// A client of this server, in `account`: local subscribers, and once to each route and
    /// leafnode connection with interest (with the queue groups this server picked it for).
    Client {
        /// The publisher's account name.
        account: &'q str,
    },
    /// A route: local subscribers, and leafs that connected to us; never another route or
    /// our hub. Queue groups only those the sending server listed (it picked this server
    /// for them).
    Route {
        /// The queue groups named in `RMSG`.
        queues: &'q [&'q [u8]],
    },
    /// A leafnode connection (bound to `account`): local subscribers, other leafnode
    /// connections, and routes unless it came from our hub (`spoke`: the hub sends it to
    /// each of our cluster's servers itself). Queue groups only those listed.
    Leaf {
        /// The connection's account name.
        account: &'q str,
        /// The queue groups named in `LMSG`.
        queues: &'q [&'q [u8]],
        /// The connection is ours to a hub.
        spoke: bool,
    },
}

impl Origin<'_> {
    /// The account name, for the `RMSG` it may cause (none from a route: a routed message
    /// never goes to another route).
    fn account(&self) -> &str {
        match self {
            Origin::Client { account } | Origin::Leaf { account, .. } => account,
            Origin::Route { .. } => "",
        }
    }

    /// The queue groups another server picked this one for (`None` for a client's).
    fn queues(&self) -> Option<&[&[u8]]> {
        match self {
            Origin::Client { .. } => None,
            Origin::Route { queues } | Origin::Leaf { queues, .. } => Some(queues),
        }
    }
}

/// Who publishes, for [`deliver_message`].
pub struct DeliveryContext<'q> {
    /// The publishing connection's cid (a route's rid for routed messages).
    pub publisher: u64,
    /// Whether the publisher gets its own messages.
    pub echo: bool,
    /// Trace deliveries.
    pub trace: bool,
    /// See [`Origin`].
    pub origin: Origin<'q>,
}

/// A route or leafnode connection picked for a message, and the queue groups it must
/// deliver to.
struct RouteTarget<'r> {
    client: &'r Arc<Client>,
    queues: smallvec::SmallVec<[&'r [u8]; 4]>,
}

/// Delivers `msg` to every subscription of `sublist` that matches it, staging the output in
/// `outbox`: plain subscriptions each get a copy, each queue group one (a random member,
/// local or a route), and each route with interest one `RMSG` (client publishes only).
/// Returns whether anyone got it (a route counts: it has a subscriber).
///
/// Services (JetStream) among the subscribers answer on this thread; their answers are
/// delivered here too, after `msg` (`deliver_service_replies`).
pub fn deliver_message(
    shared: &Shared,
    sublist: &crate::subjects::Sublist<Subscription>,
    cache: &mut MatchCache<Subscription>,
    outbox: &mut Outbox,
    msg: &mut Message<'_, '_>,
    ctx: &DeliveryContext<'_>,
) -> bool {
    let delivered = deliver_one(shared, sublist, cache, outbox, msg, ctx);
    if !outbox.service_replies.is_empty() {
        deliver_service_replies(shared, cache, outbox);
    }
    delivered
}

/// Answers a service may cause in a row from one message (a reply that reaches a service
/// that answers again, and so on): a configuration that loops (a stream republishing onto
/// another's subjects and back) stops here instead of spinning the reader.
const MAX_SERVICE_CHAIN: usize = 64;

/// Delivers what services answered, in order, as publishes of their accounts; answers to
/// those answers follow, up to [`MAX_SERVICE_CHAIN`].
fn deliver_service_replies(
    shared: &Shared,
    cache: &mut MatchCache<Subscription>,
    outbox: &mut Outbox,
) {
    let mut budget = MAX_SERVICE_CHAIN;
    while !outbox.service_replies.is_empty() {
        let replies = std::mem::take(&mut outbox.service_replies);
        for r in replies {
            if budget == 0 {
                log::warn!("Service messages looped: dropped the rest after {MAX_SERVICE_CHAIN}");
                outbox.service_replies.clear();
                return;
            }
            budget -= 1;
            stage_internal(
                shared,
                cache,
                outbox,
                &InternalMsg {
                    account: &r.account,
                    deliver: &r.subject,
                    subject: &r.subject,
                    reply: r.reply.as_deref(),
                    headers: &r.headers,
                    data: &r.data,
                },
            );
        }
    }
}

/// A message a service of the server sends on its own (JetStream's consumers, from their
/// threads): shown with `subject`, delivered to the subscribers of `deliver` (the same
/// subject unless it is a consumer's delivery).
pub struct InternalMsg<'a> {
    /// The account whose subscribers get it.
    pub account: &'a crate::client::Account,
    /// The subject subscribers are matched on.
    pub deliver: &'a [u8],
    /// The subject in the `MSG` line.
    pub subject: &'a [u8],
    /// Its reply subject.
    pub reply: Option<&'a [u8]>,
    /// The raw header block, empty for a plain `MSG`.
    pub headers: &'a [u8],
    /// The body (shared, not copied, when there are no headers).
    pub data: &'a Bytes,
}

/// Stages `m` for its subscribers in `outbox` (the caller flushes it) and delivers what
/// services answer to it. Returns whether anyone got it.
pub fn deliver_internal(
    shared: &Shared,
    cache: &mut MatchCache<Subscription>,
    outbox: &mut Outbox,
    m: &InternalMsg<'_>,
) -> bool {
    let delivered = stage_internal(shared, cache, outbox, m);
    if !outbox.service_replies.is_empty() {
        deliver_service_replies(shared, cache, outbox);
    }
    delivered
}

/// Publishes a message of the server (an advisory, an event) into `account` on `subject`,
/// from the calling thread, with a match cache and an outbox of its own, flushed at once.
pub fn publish_internal(
    shared: &Shared,
    account: &crate::client::Account,
    subject: &str,
    body: &[u8],
) {
    let mut cache = MatchCache::new(1);
    let mut outbox = Outbox::new();
    deliver_internal(
        shared,
        &mut cache,
        &mut outbox,
        &InternalMsg {
            account,
            deliver: subject.as_bytes(),
            subject: subject.as_bytes(),
            reply: None,
            headers: b"",
            data: &Bytes::copy_from_slice(body),
        },
    );
    outbox.flush(&shared.pool, None, 0);
}

/// [`deliver_internal`] without the services' answers (a service's own answers are
/// delivered this way too, by `deliver_service_replies`). No connection has cid 0: the
/// message goes to every subscriber.
fn stage_internal(
    shared: &Shared,
    cache: &mut MatchCache<Subscription>,
    outbox: &mut Outbox,
    m: &InternalMsg<'_>,
) -> bool {
    let payload = if m.headers.is_empty() {
        m.data.clone()
    } else {
        let mut v = Vec::with_capacity(m.headers.len() + m.data.len());
        v.extend_from_slice(m.headers);
        v.extend_from_slice(m.data);
        Bytes::from(v)
    };
    let mut size = itoa::Buffer::new();
    let size_token = size.format(payload.len()).as_bytes();
    let mut hdr = itoa::Buffer::new();
    let hdr_token = hdr.format(m.headers.len()).as_bytes();
    let publish = Publish {
        args: m.subject,
        subject: m.subject,
        reply: m.reply,
        headers: (!m.headers.is_empty()).then_some((m.headers.len(), hdr_token)),
        size_token,
        payload: &payload,
        payload_offset: 0,
    };
    let mut msg = Message::new(&publish, &payload, 0);
    if m.deliver != m.subject {
        msg.deliver = Some(m.deliver);
    }
    let ctx = DeliveryContext {
        publisher: 0,
        echo: true,
        trace: false,
        origin: Origin::Client {
            account: &m.account.name,
        },
    };
    deliver_one(shared, &m.account.sublist, cache, outbox, &mut msg, &ctx)
}

/// [`deliver_message`] without the services' answers.
fn deliver_one(
    shared: &Shared,
    sublist: &crate::subjects::Sublist<Subscription>,
    cache: &mut MatchCache<Subscription>,
    outbox: &mut Outbox,
    msg: &mut Message<'_, '_>,
    ctx: &DeliveryContext<'_>,
) -> bool {
    let result = cache.get(sublist).matches(sublist, msg.match_subject());
    if result.is_empty() {
        return false;
    }
    let from_route = matches!(ctx.origin, Origin::Route { .. });
    let from_hub = matches!(ctx.origin, Origin::Leaf { spoke: true, .. });
    let mut targets: smallvec::SmallVec<[RouteTarget<'_>; 4]> = smallvec::SmallVec::new();
    let mut d = Deliverer {
        shared,
        outbox,
        publisher: ctx.publisher,
        echo: ctx.echo,
        trace: ctx.trace,
    };
    let mut delivered = false;
    for sub in &result.plain {
        if sub.client.is_route() {
            // ROUTES: remote interest. A routed message never goes to another route, nor
            // one from our hub (the hub reaches our cluster's servers itself), nor one the
            // cluster's `export` permission denies under a wildcard interest.
            if !from_route && !from_hub && !sub.client.is_closing() && !denied(sub, msg) {
                route_target(&mut targets, &sub.client);
            }
            continue;
        }
        if sub.client.is_leaf() {
            // LEAFNODES: never back where it came from; from a route, only to leafs that
            // connected to us (our hub heard it from the publisher's server).
            let back = sub.client.cid == ctx.publisher;
            let to_hub_from_route = from_route && sub.client.is_spoke_leaf();
            if !back && !to_hub_from_route && !sub.client.is_closing() && !denied(sub, msg) {
                route_target(&mut targets, &sub.client);
            }
            continue;
        }
        delivered |= d.deliver(sub, msg);
    }
    for group in &result.groups {
        if let Some(queues) = ctx.origin.queues() {
            if !queues.contains(&&*group.name) {
                continue;
            }
        }
        // One member per group, chosen at random so load spreads evenly. fastrand keeps
        // its state in a thread-local: no shared counter between publishers. If the
        // chosen member cannot take it (closing, echo), try the next one. A member behind
        // a leafnode connection is kept as the last resort: a local one is preferred, as
        // nats-server does.
        let n = group.members.len();
        let first = if n > 1 { fastrand::usize(..n) } else { 0 };
        let mut leaf_member: Option<&Arc<Client>> = None;
        let mut done = false;
        for i in 0..n {
            let member = &group.members[(first + i) % n];
            if member.client.is_leaf() {
                if leaf_member.is_none()
                    && member.client.cid != ctx.publisher
                    && !member.client.is_closing()
                    && !denied(member, msg)
                {
                    leaf_member = Some(&member.client);
                }
                continue;
            }
            if member.client.is_route() {
                // ROUTES: a member on another server; that server delivers to one of its
                // members (we list the group in the RMSG).
                if from_route || from_hub || member.client.is_closing() || denied(member, msg) {
                    continue;
                }
                let t = route_target(&mut targets, &member.client);
                targets[t].queues.push(&group.name);
                done = true;
                break;
            }
            if d.deliver(member, msg) {
                done = true;
                break;
            }
        }
        if !done {
            if let Some(leaf) = leaf_member {
                let t = route_target(&mut targets, leaf);
                targets[t].queues.push(&group.name);
                done = true;
            }
        }
        delivered |= done;
    }
    let account = ctx.origin.account();
    for t in &targets {
        d.forward(t, account, msg);
        delivered = true;
    }
    delivered
}

/// Whether `sub` filters `msg` out: a wildcard subscription covering subjects its owner
/// may not receive (a user's deny list, a leafnode remote's `deny_exports`, the cluster's
/// `export` deny list for a route's interest).
#[inline]
fn denied(sub: &Subscription, msg: &Message<'_, '_>) -> bool {
    sub.deny
        .as_ref()
        .is_some_and(|d| d.matches(msg.publish.subject))
}

/// The index of `client`'s entry in `targets`, added if new (a route gets one RMSG per
/// message however many of its subscriptions match).
fn route_target<'r>(
    targets: &mut smallvec::SmallVec<[RouteTarget<'r>; 4]>,
    client: &'r Arc<Client>,
) -> usize {
    match targets.iter().position(|t| t.client.cid == client.cid) {
        Some(i) => i,
        None => {
            targets.push(RouteTarget {
                client,
                queues: smallvec::SmallVec::new(),
            });
            targets.len() - 1
        }
    }
}

/// A decimal size formatted once, without allocating.
struct SizeToken {
    digits: [u8; 20],
    len: usize,
}

impl SizeToken {
    fn new(n: usize) -> Self {
        let mut buf = itoa::Buffer::new();
        let s = buf.format(n).as_bytes();
        let mut digits = [0u8; 20];
        digits[..s.len()].copy_from_slice(s);
        SizeToken {
            digits,
            len: s.len(),
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.digits[..self.len]
    }
}

/// Puts one message into subscribers' batches.
pub(crate) struct Deliverer<'a> {
    shared: &'a Shared,
    outbox: &'a mut Outbox,
    publisher: u64,
    echo: bool,
    trace: bool,
}

impl Deliverer<'_> {
    /// Stages `msg` for `sub`. Returns false if the subscription could not take it.
    #[inline]
    fn deliver(&mut self, sub: &Arc<Subscription>, msg: &mut Message<'_, '_>) -> bool {
        if !self.echo && sub.client.cid == self.publisher {
            return false;
        }
        if sub.is_closed() || sub.client.is_closing() {
            return false;
        }
        if let Some(service) = sub.client.service() {
            // JetStream and its kind: handled here, on the publisher's thread.
            let p = msg.publish;
            let (headers, data) = match p.headers {
                Some((h, _)) if h <= p.payload.len() => p.payload.split_at(h),
                _ => (&[][..], p.payload),
            };
            let m = ServiceMsg {
                subject: p.subject,
                reply: p.reply,
                headers,
                data,
            };
            service.on_message(sub, &m, &mut self.outbox.service_replies);
            return true;
        }
        if let Some(deny) = &sub.deny {
            // A wildcard subscription covering subjects its user may not subscribe to.
            if deny.matches(msg.publish.subject) {
                return false;
            }
        }
        let claim = sub.claim();
        if claim == Claim::Exhausted {
            self.shared.unsubscribe(sub);
            return false;
        }
        let p = msg.publish;
        if let Some(reply) = p.reply {
            // `allow_responses`: the subscriber may answer this one.
            sub.client.note_reply(reply);
        }
        // A subscriber that did not declare headers gets the body only, as a MSG.
        let (header_token, size_token, skip): (Option<&[u8]>, &[u8], usize) = match p.headers {
            Some((hdr_len, _)) if !sub.client.headers() => {
                (None, msg.stripped_size.as_bytes(), hdr_len)
            }
            Some((_, token)) => (Some(token), p.size_token, 0),
            None => (None, p.size_token, 0),
        };
        let batch = self.outbox.batch_for(&sub.client, &self.shared.pool);
        let before = batch.buf_mut().len();
        protocol::write_msg_line(
            batch.buf_mut(),
            &MsgLine {
                subject: p.subject,
                sid: &sub.sid,
                reply: p.reply,
                header_token,
                size_token,
            },
        );
        let added = finish_msg(batch, msg, skip, before, self.trace.then_some(&*sub.client));
        self.outbox.add_staged(added);
        if claim == Claim::DeliverLast {
            self.shared.unsubscribe(sub);
        }
        true
    }

    /// Stages `msg` for a route as `RMSG`/`HMSG` (route protocol), or for a leafnode
    /// connection as `LMSG`/`HMSG` (no account: the connection is bound to one), with the
    /// queue groups this server picked it for. Headers always cross (nats-server 2.9
    /// routes and leafnodes support them).
    fn forward(&mut self, t: &RouteTarget<'_>, account: &str, msg: &mut Message<'_, '_>) {
        let p = msg.publish;
        let batch = self.outbox.batch_for(t.client, &self.shared.pool);
        let before = batch.buf_mut().len();
        let write = if t.client.is_leaf() {
            crate::protocol::route::write_lmsg_line
        } else {
            crate::protocol::route::write_rmsg_line
        };
        write(
            batch.buf_mut(),
            &crate::protocol::route::RmsgLine {
                account: account.as_bytes(),
                // A JetStream delivery crosses under its deliver subject: the other server
                // routes by the subject it reads.
                subject: msg.deliver.unwrap_or(p.subject),
                reply: p.reply,
                queues: &t.queues,
                header_token: p.headers.map(|(_, t)| t),
                size_token: p.size_token,
            },
        );
        let added = finish_msg(batch, msg, 0, before, self.trace.then_some(t.client));
        self.outbox.add_staged(added);
    }
}
