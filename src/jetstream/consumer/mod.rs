//! JetStream consumers (part 2): a stream's messages delivered to an application, with
//! acknowledgements, redelivery and the bookkeeping nats-server's `consumer.go` keeps: which
//! stream sequence comes next, what was delivered and not yet acked (`pending`), how often
//! each message was delivered, the pull requests waiting, flow control of push consumers.
//!
//! - [`config`]: the configuration, defaults and rules;
//! - `deliver`: the consumer's thread, which picks the next messages and sends them
//!   (to the deliver subject of a push consumer, to the waiting requests of a pull one),
//!   redelivers what waited too long for its ack, sends heartbeats and the pull status
//!   replies;
//! - `ack`: the acknowledgements that come back on `$JS.ACK.<stream>.<consumer>....`;
//! - `persist`: a durable consumer's state on disk.
//!
//! Threads: one per consumer (the design of this server: a blocking thread where nats-server
//! runs a goroutine). Everything else reaches a consumer from the readers' threads: a
//! publish to its stream rings its doorbell; a pull request, an ack or a flow control
//! answer is posted to its [`mailbox`], which the thread empties at each round, under its
//! lock.
//!
//! Locks (docs/architecture.md): a consumer's state, then its stream's state (the thread
//! reads messages with both held); the stream's state is never held while a consumer's is
//! taken (publishes only ring doorbells, which are leaves; acks that remove messages from
//! interest and work-queue streams lock the stream after the consumer is released).
//! Matching a subject in the account's subscription table happens under a consumer's lock:
//! the table's locks are leaves.

pub mod config;
mod deliver;
mod persist;
mod pull;

pub mod ack;
pub mod mailbox;
mod manage;

use super::json::now_nanos;
use super::stream::Stream;
use super::JsAccount;
use crate::client::Account;
use crate::store::Store;
use bytes::Bytes;
use config::{AckPolicy, ConsumerConfig, DeliverPolicy};
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

pub use deliver::Outgoing;

/// A delivery not acknowledged yet: its first delivery sequence and when it was last
/// delivered (nanoseconds since the epoch; moved forward by `+WPI` and `-NAK` delays).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// The consumer sequence of its first delivery.
    pub dseq: u64,
    /// When it was (re)delivered, nanoseconds since the epoch.
    pub ts: i64,
}

/// A pull request waiting for messages (`CONSUMER.MSG.NEXT`).
#[derive(Debug)]
struct Waiting {
    /// Where the messages go.
    reply: Bytes,
    /// Messages still to send.
    n: i64,
    /// Messages sent so far.
    d: i64,
    /// Bytes still allowed (0: no limit).
    b: i64,
    /// When it gives up (408), if ever.
    expires: Option<Instant>,
    /// Heartbeat interval, and the next one.
    hb: Option<(Duration, Instant)>,
    /// Answered as soon as nothing more is there (`no_wait`).
    no_wait: bool,
}

/// `deliver_policy: last_per_subject` at the start: the last sequence of each subject,
/// then on from `resume`.
#[derive(Debug)]
struct SkipList {
    seqs: VecDeque<u64>,
    resume: u64,
}

/// Push flow control (nats-server's `maxpb`, `pbytes`, `fcid`, `fcsz`).
#[derive(Debug, Default)]
struct FlowControl {
    /// The window now (doubles on each answer up to `limit`).
    window: i64,
    limit: i64,
    /// Bytes sent and not covered by an answered request.
    bytes: i64,
    /// The reply subject of the request outstanding.
    id: Option<String>,
    /// Bytes its answer covers.
    covered: i64,
}

/// What a consumer's lock guards.
pub struct ConsumerState {
    /// The configuration now.
    pub config: ConsumerConfig,
    /// The next stream sequence to look at.
    sseq: u64,
    /// The next delivery (consumer) sequence.
    dseq: u64,
    /// Ack floor: every delivery up to it is acknowledged (consumer and stream sequences).
    adflr: u64,
    asflr: u64,
    /// Delivered, not acknowledged yet, by stream sequence.
    pending: BTreeMap<u64, Pending>,
    /// Redeliveries so far, by stream sequence.
    rdc: HashMap<u64, u64>,
    /// To redeliver next, in order, and the same as a set.
    rdq: VecDeque<u64>,
    rdqi: HashSet<u64>,
    /// Pull requests waiting, oldest first.
    waiting: VecDeque<Waiting>,
    skip: Option<SkipList>,
    fc: Option<FlowControl>,
    /// Whether the deliver subject has a subscriber (push).
    active: bool,
    /// When interest or a pull request was last seen.
    last_activity: Instant,
    /// When the pending deliveries must be looked at next (ack waits).
    next_check: Option<Instant>,
    /// Next idle heartbeat of a push consumer.
    next_hb: Option<Instant>,
    /// Last delivery and last ack, nanoseconds since the epoch (0: never).
    last_delivered: i64,
    last_ack: i64,
    /// Messages to send that are not deliveries (advisories, status replies).
    outgoing: Vec<Outgoing>,
    /// State changed since it was last written (durables).
    dirty: bool,
    /// `replay_policy: original`: the stream's last sequence at creation, and the time of
    /// the previous delivery.
    replay: Option<(u64, i64)>,
    /// Deleted: the thread stops.
    closed: bool,
    /// The inactivity threshold (with nats-server's jitter for ephemerals).
    threshold: Option<Duration>,
    /// `rate_limit_bps`: when the next delivery may go.
    rate_next: Option<Instant>,
    /// Whether deliveries and acks are journaled (durables of file streams).
    journaled: bool,
    /// Journal records not written yet (the thread writes them after each round).
    journal: Vec<persist::Entry>,
}

/// A consumer of a stream.
pub struct Consumer {
    /// Its name (durable name, or given, or random).
    pub name: String,
    /// Its stream's name.
    pub stream_name: String,
    /// When it was created, nanoseconds since the epoch.
    pub created: i64,
    stream: Weak<Stream>,
    account: Arc<Account>,
    js: Weak<JsAccount>,
    state: Mutex<ConsumerState>,
    /// Wakes its thread, with what readers hand it (acks, pull requests, flow control).
    pub bell: mailbox::Mailbox<ack::Inbound>,
    /// The filter subject (read by publishes deciding interest retention; a leaf lock).
    filter: RwLock<String>,
    /// Where its state is kept (durables of file streams).
    dir: Option<PathBuf>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Its subscription to its acks (`$JS.ACK.<stream>.<consumer>.>`).
    pub(crate) ack_sub: Mutex<Option<Arc<crate::client::Subscription>>>,
}

/// Stack size of consumer threads: what a reader thread has (`session::READER_STACK`), as
/// a consumer's thread delivers as a reader does (the same delivery path, services
/// answering on it included).
const CONSUMER_STACK: usize = 256 * 1024;

/// The random part of an ephemeral's name: 8 characters, as nats-server's.
fn random_name() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..8)
        .map(|_| ALPHABET[fastrand::usize(..ALPHABET.len())] as char)
        .collect()
}

/// The first and last sequences a consumer's state refers to (the `delivered` and
/// `ack_floor` objects of its info).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SequenceInfo {
    /// Consumer (delivery) sequence.
    pub consumer_seq: u64,
    /// Stream sequence.
    pub stream_seq: u64,
}

/// What a new consumer is made of.
pub struct NewConsumer {
    /// The checked configuration, with defaults.
    pub config: ConsumerConfig,
    /// Its name.
    pub name: String,
    /// When it was created.
    pub created: i64,
    /// Its state directory, for durables of file streams.
    pub dir: Option<PathBuf>,
    /// Its saved state, when recovered.
    pub saved: Option<persist::SavedState>,
    /// What its journal says happened after that state.
    pub journal: Vec<persist::Entry>,
}

impl Consumer {
    /// A consumer of `stream` (its thread not started yet: [`Consumer::start`]).
    pub fn new(acc: &Arc<JsAccount>, stream: &Arc<Stream>, new: NewConsumer) -> Arc<Consumer> {
        let mut config = new.config;
        let threshold = if config.durable_name.is_empty() && config.inactive_threshold <= 0 {
            config.inactive_threshold = config::DEFAULT_INACTIVE_THRESHOLD;
            Some(jittered(config.inactive_threshold))
        } else if config.inactive_threshold > 0 {
            Some(if config.is_push() {
                Duration::from_nanos(config.inactive_threshold as u64)
            } else {
                jittered(config.inactive_threshold)
            })
        } else {
            None
        };
        let fc = config.flow_control.then(|| FlowControl {
            // nats-server: a 32 MiB limit, starting at a sixteenth of it.
            window: (32 << 20) / 16,
            limit: 32 << 20,
            ..FlowControl::default()
        });
        let replay_from = (config.replay_policy == config::ReplayPolicy::Original)
            .then(|| stream.lock().store.state().last_seq);
        let filter = config.filter_subject.clone();
        let mut state = ConsumerState {
            config,
            sseq: 1,
            dseq: 1,
            adflr: 0,
            asflr: 0,
            pending: BTreeMap::new(),
            rdc: HashMap::new(),
            rdq: VecDeque::new(),
            rdqi: HashSet::new(),
            waiting: VecDeque::new(),
            skip: None,
            fc,
            active: false,
            last_activity: Instant::now(),
            next_check: None,
            next_hb: None,
            last_delivered: 0,
            last_ack: 0,
            outgoing: Vec::new(),
            dirty: false,
            replay: replay_from.map(|last| (last, 0)),
            closed: false,
            threshold,
            rate_next: None,
            journaled: new.dir.is_some(),
            journal: Vec::new(),
        };
        {
            let st = stream.lock();
            match &new.saved {
                Some(saved) => state.restore(saved, st.store.as_ref()),
                None => state.select_start(st.store.as_ref()),
            }
            state.replay(&new.journal);
        }
        Arc::new(Consumer {
            name: new.name,
            stream_name: stream.name.clone(),
            created: new.created,
            stream: Arc::downgrade(stream),
            account: acc.account.clone(),
            js: Arc::downgrade(acc),
            state: Mutex::new(state),
            bell: mailbox::Mailbox::default(),
            filter: RwLock::new(filter),
            dir: new.dir,
            thread: Mutex::new(None),
            ack_sub: Mutex::new(None),
        })
    }

    /// Starts its thread.
    pub fn start(self: &Arc<Self>) -> std::io::Result<()> {
        let me = self.clone();
        let handle = std::thread::Builder::new()
            .name(format!("js-consumer {}", self.name))
            .stack_size(CONSUMER_STACK)
            .spawn(move || deliver::run(me))?;
        *self.thread.lock() = Some(handle);
        Ok(())
    }

    /// Its state, locked.
    pub fn lock(&self) -> MutexGuard<'_, ConsumerState> {
        self.state.lock()
    }

    /// Its configuration now.
    pub fn config(&self) -> ConsumerConfig {
        self.state.lock().config.clone()
    }

    /// Its stream, unless deleted.
    pub fn stream(&self) -> Option<Arc<Stream>> {
        self.stream.upgrade()
    }

    /// A push consumer is bound at once when its deliver subject already has a subscriber
    /// (its info says `push_bound` from the create response on, as nats-server's).
    pub(crate) fn bind_interest(&self) {
        let mut st = self.state.lock();
        if !st.config.is_push() {
            return;
        }
        let m = self
            .account
            .sublist
            .matches(st.config.deliver_subject.as_bytes());
        st.active = if st.config.deliver_group.is_empty() {
            !m.is_empty()
        } else {
            let g = st.config.deliver_group.as_bytes();
            m.groups.iter().any(|q| &*q.name == g)
        };
    }

    /// Hands `m` to its thread.
    pub fn post(&self, m: ack::Inbound) {
        self.bell.post(m);
    }

    /// Removes its ack subscription.
    pub(crate) fn unsubscribe(&self) {
        let sub = self.ack_sub.lock().take();
        if let (Some(sub), Some(shared)) = (sub, self.js.upgrade().and_then(|a| a.shared.upgrade()))
        {
            shared.unsubscribe(&sub);
        }
    }

    /// Whether a message on `subject` is for this consumer (its filter).
    pub fn wants(&self, subject: &[u8]) -> bool {
        let f = self.filter.read();
        f.is_empty() || crate::subjects::subject_matches(subject, f.as_bytes())
    }

    /// Applies an update already checked against the old configuration.
    pub fn update(&self, config: ConsumerConfig) {
        let mut st = self.state.lock();
        if st.config.deliver_subject != config.deliver_subject {
            // Everything pending goes again to the new subject.
            let seqs: Vec<u64> = st.pending.keys().copied().collect();
            for s in seqs {
                st.queue_redelivery(s);
            }
        }
        *self.filter.write() = config.filter_subject.clone();
        st.config = config;
        st.dirty = true;
        drop(st);
        self.save_config();
        self.bell.ring();
    }

    /// Stops its thread; with `remove`, deletes its saved state too. Waiting pull requests
    /// are told (409 Consumer Deleted) by the thread as it ends.
    pub fn stop(&self, remove: bool) {
        self.unsubscribe();
        self.state.lock().closed = true;
        self.bell.ring();
        let handle = self.thread.lock().take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
        if remove {
            if let Some(dir) = &self.dir {
                let _ = std::fs::remove_dir_all(dir);
            }
        } else {
            self.save_state();
        }
    }

    /// Whether stream sequence `seq` (on `subject`) still waits for this consumer's ack
    /// (interest retention; nats-server's `needAck`).
    pub fn needs_ack(&self, seq: u64, subject: &[u8]) -> bool {
        if !self.wants(subject) {
            return false;
        }
        let st = self.state.lock();
        if seq <= st.asflr {
            return false;
        }
        match st.config.ack_policy {
            AckPolicy::None | AckPolicy::All => true,
            AckPolicy::Explicit => seq >= st.sseq || st.pending.contains_key(&seq),
        }
    }

    /// The stream was purged below `first` (its new first sequence): what was pending
    /// there is forgotten, the floors move up (nats-server's `consumer.purge`).
    pub fn purged(&self, first: u64) {
        let mut st = self.state.lock();
        if st.sseq < first {
            st.sseq = first;
        }
        if st.asflr < first {
            st.asflr = first - 1;
            st.adflr = st.dseq - 1;
        }
        st.pending.clear();
        st.rdc.clear();
        let keep: VecDeque<u64> = st.rdq.iter().copied().filter(|&s| s >= first).collect();
        st.rdqi = keep.iter().copied().collect();
        st.rdq = keep;
        st.skip = None;
        st.dirty = true;
        drop(st);
        self.bell.ring();
    }

    /// The info object (`CONSUMER.INFO`, create responses, lists).
    pub fn info(&self) -> ConsumerInfo {
        let stream = self.stream();
        let st = self.state.lock();
        let num_pending = match &stream {
            Some(s) => {
                let sst = s.lock();
                st.num_pending(sst.store.as_ref())
            }
            None => 0,
        };
        let now = Instant::now();
        // Requests that expired or whose inbox lost its subscriber do not count (nats-server
        // drops them when asked for info; the thread drops them at its next round).
        let num_waiting = st
            .waiting
            .iter()
            .filter(|w| w.expires.is_none_or(|t| t > now))
            .filter(|w| !self.account.sublist.matches(&w.reply).is_empty())
            .count();
        ConsumerInfo {
            stream_name: self.stream_name.clone(),
            name: self.name.clone(),
            created: self.created,
            config: st.config.clone(),
            delivered: SequenceInfoJson {
                consumer_seq: st.dseq - 1,
                stream_seq: st.sseq.saturating_sub(1),
                last_active: st.last_delivered,
            },
            ack_floor: SequenceInfoJson {
                consumer_seq: st.adflr,
                stream_seq: st.asflr,
                last_active: st.last_ack,
            },
            num_ack_pending: st.pending.len(),
            num_redelivered: st.rdc.len(),
            num_waiting,
            num_pending,
            push_bound: st.config.is_push() && st.active,
        }
    }

    /// Writes the configuration (durables of file streams).
    pub fn save_config(&self) {
        if let Some(dir) = &self.dir {
            let config = self.config();
            if let Err(e) = persist::write_meta(dir, &config, self.created) {
                log::error!(
                    "JetStream: consumer '{} > {}': could not save its configuration: {e}",
                    self.stream_name,
                    self.name
                );
            }
        }
    }

    /// Writes the state if it changed (durables of file streams).
    pub fn save_state(&self) {
        let Some(dir) = &self.dir else { return };
        let saved = {
            let mut st = self.state.lock();
            if !st.dirty {
                return;
            }
            st.dirty = false;
            // The snapshot holds what these records would say.
            st.journal.clear();
            st.saved()
        };
        let written =
            persist::write_state(dir, &saved).and_then(|()| persist::Journal::new(dir).clear());
        if let Err(e) = written {
            log::error!(
                "JetStream: consumer '{} > {}': could not save its state: {e}",
                self.stream_name,
                self.name
            );
        }
    }

    /// Whether its state is kept on disk.
    pub fn is_persistent(&self) -> bool {
        self.dir.is_some()
    }
}

/// `inactive_threshold` plus nats-server's jitter (100 ms to 1 s): ephemerals made at once
/// do not all go at once.
fn jittered(ns: i64) -> Duration {
    Duration::from_nanos(ns.max(0) as u64) + Duration::from_millis(100 + fastrand::u64(..900))
}

impl ConsumerState {
    /// Where a new consumer starts (nats-server's `selectStartingSeqNo`).
    fn select_start(&mut self, store: &dyn Store) {
        let state = store.state();
        let filter = (!self.config.filter_subject.is_empty())
            .then(|| self.config.filter_subject.as_bytes().to_vec());
        let mut sseq = if self.config.opt_start_seq > 0 {
            self.config.opt_start_seq
        } else {
            match self.config.deliver_policy {
                DeliverPolicy::All => state.first_seq,
                DeliverPolicy::Last => match &filter {
                    Some(f) => store.load_last(f).map(|m| m.seq).unwrap_or(0),
                    None => state.last_seq,
                },
                DeliverPolicy::LastPerSubject => {
                    let f = filter.clone().unwrap_or_else(|| b">".to_vec());
                    let seqs = store.last_per_subject(&f);
                    match seqs.first() {
                        Some(&first) => {
                            self.skip = Some(SkipList {
                                seqs: seqs.into_iter().collect(),
                                resume: state.last_seq,
                            });
                            first
                        }
                        None => state.last_seq,
                    }
                }
                DeliverPolicy::ByStartTime => {
                    let ts = self
                        .config
                        .opt_start_time
                        .as_deref()
                        .and_then(super::json::parse_go_time)
                        .unwrap_or(0);
                    store.seq_from_time(ts)
                }
                DeliverPolicy::New | DeliverPolicy::ByStartSequence => state.last_seq + 1,
            }
        };
        if state.first_seq == 0 {
            sseq = 1;
        } else if sseq < state.first_seq {
            sseq = state.first_seq;
        } else if sseq > state.last_seq {
            sseq = state.last_seq + 1;
        }
        self.sseq = sseq;
        self.dseq = 1;
        // The ack floor starts at 0 whatever the start (nats-server's store records only
        // the starting delivered sequence).
        self.adflr = 0;
        self.asflr = 0;
        self.dirty = true;
    }

    /// Messages not delivered yet that the consumer will deliver (nats-server's
    /// `num_pending`).
    fn num_pending(&self, store: &dyn Store) -> u64 {
        let f = &self.config.filter_subject;
        if let Some(skip) = &self.skip {
            // The last of each subject still to come, then what came after the start.
            let rest = skip.seqs.len() as u64;
            let filter = (!f.is_empty()).then_some(f.as_bytes());
            return rest + store.count_from(filter, skip.resume + 1);
        }
        let filter = (!f.is_empty()).then_some(f.as_bytes());
        store.count_from(filter, self.sseq)
    }

    /// Puts `seq` on the redelivery queue (once).
    fn queue_redelivery(&mut self, seq: u64) {
        if self.rdqi.insert(seq) {
            self.rdq.push_back(seq);
        }
    }

    /// Takes `seq` off the redelivery queue.
    fn unqueue_redelivery(&mut self, seq: u64) {
        if self.rdqi.remove(&seq) {
            self.rdq.retain(|&s| s != seq);
        }
    }

    /// The state as saved.
    fn saved(&self) -> persist::SavedState {
        persist::SavedState {
            delivered: SequenceInfo {
                consumer_seq: self.dseq - 1,
                stream_seq: self.sseq.saturating_sub(1),
            },
            ack_floor: SequenceInfo {
                consumer_seq: self.adflr,
                stream_seq: self.asflr,
            },
            pending: self
                .pending
                .iter()
                .map(|(&s, p)| (s, p.dseq, p.ts))
                .collect(),
            redelivered: self.rdc.iter().map(|(&s, &n)| (s, n)).collect(),
        }
    }

    /// Replays journal records on the restored state, as they happened.
    fn replay(&mut self, entries: &[persist::Entry]) {
        for e in entries {
            match *e {
                persist::Entry::Delivered(s, d, dc, ts) => {
                    if dc > 1 {
                        self.rdc.insert(s, dc - 1);
                    }
                    if self.config.acks() {
                        self.pending
                            .entry(s)
                            .and_modify(|p| p.ts = ts)
                            .or_insert(Pending { dseq: d, ts });
                    } else {
                        self.adflr = d;
                        self.asflr = s;
                    }
                    self.sseq = self.sseq.max(s + 1);
                    self.dseq = self.dseq.max(d + 1);
                }
                persist::Entry::Acked(s, d) => {
                    let _ = self.ack(s, d);
                }
            }
        }
        self.journal.clear();
        if !self.pending.is_empty() {
            self.next_check = Some(Instant::now());
        }
        self.dirty = !entries.is_empty();
    }

    /// Takes back a saved state (restart): what was delivered and not acked waits for its
    /// ack from when it was delivered, then goes again.
    fn restore(&mut self, saved: &persist::SavedState, store: &dyn Store) {
        self.sseq = saved.delivered.stream_seq + 1;
        self.dseq = saved.delivered.consumer_seq + 1;
        self.adflr = saved.ack_floor.consumer_seq;
        self.asflr = saved.ack_floor.stream_seq;
        let first = store.state().first_seq;
        for &(s, dseq, ts) in &saved.pending {
            if s >= first && s > self.asflr {
                self.pending.insert(s, Pending { dseq, ts });
            }
        }
        for &(s, n) in &saved.redelivered {
            if s > self.asflr {
                self.rdc.insert(s, n);
            }
        }
        if !self.pending.is_empty() {
            self.next_check = Some(Instant::now());
        }
    }
}

/// `delivered` / `ack_floor` in a consumer's info, with the time of the last one.
#[derive(Debug, serde::Serialize)]
pub struct SequenceInfoJson {
    consumer_seq: u64,
    stream_seq: u64,
    #[serde(
        skip_serializing_if = "is_zero_i64",
        serialize_with = "super::json::ser_time"
    )]
    last_active: i64,
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}
fn is_false(v: &bool) -> bool {
    !*v
}

/// A consumer's info, fields in nats-server's order (`ConsumerInfo`).
#[derive(Debug, serde::Serialize)]
pub struct ConsumerInfo {
    stream_name: String,
    name: String,
    #[serde(serialize_with = "super::json::ser_time")]
    created: i64,
    config: ConsumerConfig,
    delivered: SequenceInfoJson,
    ack_floor: SequenceInfoJson,
    num_ack_pending: usize,
    num_redelivered: usize,
    num_waiting: usize,
    num_pending: u64,
    #[serde(skip_serializing_if = "is_false")]
    push_bound: bool,
}

/// A new ephemeral's name: random, not taken on `stream`.
pub fn ephemeral_name(taken: impl Fn(&str) -> bool) -> String {
    loop {
        let name = random_name();
        if !taken(&name) {
            return name;
        }
    }
}

/// Messages a consumer sends, as the readers' services answer (for the ack path, which
/// runs on a reader's thread).
pub fn to_service_replies(
    account: &Arc<Account>,
    out: Vec<Outgoing>,
) -> Vec<crate::client::ServiceReply> {
    out.into_iter()
        .map(|o| crate::client::ServiceReply {
            account: account.clone(),
            subject: o.deliver,
            reply: o.reply,
            headers: o.headers,
            data: o.data,
        })
        .collect()
}

/// Now, as the consumer's timestamps count it.
pub(crate) fn now() -> i64 {
    now_nanos()
}
