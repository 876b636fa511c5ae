//! JetStream: streams that persist and consumers that deliver them, behind nats-server's
//! API (`$JS.API.>`).
//!
//! How it joins the core: for each account, JetStream is an in-process subscriber (a
//! [`crate::client::Service`], as nats-server's JetStream uses internal clients). It
//! subscribes `$JS.API.>` and each stream's subjects in the account's subscription table,
//! so a publish reaches a stream through the ordinary delivery path (`crate::delivery`), on
//! the publisher's reader thread, from a client or a route alike. The answer (a PubAck, an
//! API response) is handed back to delivery, which routes it to the requester in the same
//! outbox as everything else that read produced.
//!
//! - [`config`]: a stream's configuration, defaults and rules;
//! - [`stream`]: one stream (dedup, expected headers, rollups, acks, republish);
//! - [`consumer`]: consumers (pull and push), acks, redelivery, durable state;
//! - [`api`]: the API requests and their JSON;
//! - [`forward`]: without JetStream here, clients' API requests go to the nats-server nodes
//!   of the cluster that have it;
//! - `crate::store`: the messages themselves (memory or files).
//!
//! On disk (`persist`): `<store_dir>/jetstream/<account>/streams/<stream>/meta.json` (the
//! configuration and creation time, replaced atomically) and `msgs/` (the file store's
//! segments, see `crate::store::file`). Memory streams are not written down: gone at restart, as in
//! nats-server.
//!
//! Threads: none of its own on the publish path. One timer thread expires `max_age`,
//! forgets old dedup ids and syncs file stores every `sync_interval`; each consumer has a
//! thread that delivers (see [`consumer`]).
//!
//! Locks: an account's stream map ([`JsAccount`]'s `streams`), then a stream's state
//! ([`stream::Stream::lock`]), then an origin before its mirror or sources (feeding a
//! mirror happens under the origin's lock, so that the mirror sees the origin's order).
//! A consumer's lock comes before its stream's (see [`consumer`]). The account's
//! subscription table locks are taken under none of these but a consumer's.

pub mod api;
pub mod config;
pub mod consumer;
pub mod errors;
pub mod forward;
pub mod headers;
pub mod json;
mod persist;
pub mod stream;

use crate::client::{Account, Client, Service, ServiceMsg, ServiceReply, Subscription};
use crate::shared::Shared;
use crate::store::{MemoryStore, Store, SyncPolicy};
use bytes::Bytes;
use config::{Storage, StreamConfig};
use parking_lot::{Condvar, Mutex, RwLock};
use persist::{open_file_store, write_meta};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};
use std::time::Duration;
use stream::Stream;

/// The subscription id of an account's `$JS.API.>` subscription.
const API_SID: &[u8] = b"$JS.API";
/// Prefix of a consumer's ack subscription ids (`ack:<stream>:<consumer>`, on
/// `$JS.ACK.<stream>.<consumer>.>`: one per consumer, as nats-server's, so that an ack to a
/// consumer that does not exist gets "no responders").
const ACK_SID: &[u8] = b"ack:";
/// The subscription id of an account's `$JS.FC.>` subscription (flow control answers).
const FC_SID: &[u8] = b"$JS.FC";
/// Prefix of a stream's subscription ids (`stream:<name>:<i>`).
const STREAM_SID: &[u8] = b"stream:";

/// JetStream on this server.
pub struct JetStream {
    /// `<store_dir>/jetstream`.
    root: PathBuf,
    /// The store directory as configured (for `/jsz` and `/varz`).
    pub store_dir: PathBuf,
    /// When file stores sync.
    sync: SyncPolicy,
    /// `max_memory_store` in bytes (for `/varz`, `/jsz`).
    pub max_memory: u64,
    /// `max_file_store` in bytes.
    pub max_store: u64,
    /// The bytes all streams hold, checked by every publish against the two maximums.
    pub usage: Arc<stream::Usage>,
    accounts: RwLock<BTreeMap<String, Arc<JsAccount>>>,
    /// API requests handled, and how many got an error (all accounts).
    pub api_total: AtomicU64,
    /// See `api_total`.
    pub api_errors: AtomicU64,
    stop: Mutex<bool>,
    wake: Condvar,
    timer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// JetStream in one account: its streams and its service client.
pub struct JsAccount {
    /// The account.
    pub account: Arc<Account>,
    /// The in-process client holding the account's JetStream subscriptions.
    client: Arc<Client>,
    /// The streams by name.
    pub streams: RwLock<BTreeMap<String, Arc<Stream>>>,
    /// Origin stream name → the streams that mirror it or source from it, with their
    /// filters. Rebuilt from the configurations on every create, update and delete; read by
    /// each stored message, which then locks only the streams it feeds (locking every
    /// stream to read its configuration, with the origin locked, deadlocked two publishers
    /// of two streams).
    downstream: RwLock<BTreeMap<String, Vec<Downstream>>>,
    /// The subscriptions of each stream (removed with it, replaced on update).
    stream_subs: Mutex<BTreeMap<String, Vec<Arc<Subscription>>>>,
    /// `<root>/<account>/streams`.
    dir: PathBuf,
    js: Weak<JetStream>,
    shared: Weak<Shared>,
    /// Held by stream creation, update and deletion: one at a time per account, so that two
    /// racing creates of overlapping streams cannot both pass the overlap check.
    creating: Mutex<()>,
    /// API requests of this account, and errors among them.
    pub api_total: AtomicU64,
    /// See `api_total`.
    pub api_errors: AtomicU64,
}

/// JetStream could not start (its directory).
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// nats-server's default `max_memory_store`: 75% of the machine's memory (here read from
/// /proc/meminfo; 4 GiB where it cannot be read).
fn default_max_memory() -> u64 {
    #[cfg(target_os = "linux")]
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("MemTotal:") {
                let kb: u64 = rest
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .unwrap_or(0);
                if kb > 0 {
                    return kb * 1024 / 4 * 3;
                }
            }
        }
    }
    4 << 30
}

/// nats-server's default `max_file_store` when it cannot measure the disk: 1 TB.
const DEFAULT_MAX_FILE: u64 = 1 << 40;

impl JetStream {
    /// Starts JetStream for every account of `shared`: recovers the file streams under the
    /// store directory and subscribes the API. `None` when the configuration leaves it off.
    pub fn start(shared: &Arc<Shared>) -> Result<Option<Arc<JetStream>>, StartError> {
        let config = shared.config();
        let (Some(js_config), Some(store_dir)) = (&config.jetstream, config.jetstream_store_dir())
        else {
            return Ok(None);
        };
        let root = store_dir.join("jetstream");
        std::fs::create_dir_all(&root).map_err(|e| {
            StartError(format!(
                "JetStream: could not create the store directory {}: {e}",
                root.display()
            ))
        })?;
        let sync = match js_config.sync {
            crate::config::JetStreamSync::Always => SyncPolicy::Always,
            crate::config::JetStreamSync::Interval(d) => SyncPolicy::Interval(d),
        };
        let max_memory = js_config
            .max_memory_store
            .unwrap_or_else(default_max_memory);
        let max_store = js_config.max_file_store.unwrap_or(DEFAULT_MAX_FILE);
        let js = Arc::new(JetStream {
            root,
            store_dir,
            sync,
            max_memory,
            max_store,
            usage: Arc::new(stream::Usage::new(max_memory, max_store)),
            accounts: RwLock::new(BTreeMap::new()),
            api_total: AtomicU64::new(0),
            api_errors: AtomicU64::new(0),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            timer: Mutex::new(None),
        });
        log::info!("Starting JetStream");
        log::info!("  Max Memory:      {}", human_bytes(js.max_memory));
        log::info!("  Max Storage:     {}", human_bytes(js.max_store));
        log::info!("  Store Directory: \"{}\"", js.root.display());
        for account in &shared.accounts.list() {
            let acc = JsAccount::start(&js, shared, account)?;
            js.accounts.write().insert(account.name.clone(), acc);
        }
        // Mirrors and sources catch up with what their origins already hold.
        for acc in js.accounts.read().values() {
            acc.catch_up_all();
        }
        let weak = Arc::downgrade(&js);
        let timer = std::thread::Builder::new()
            .name("jetstream".into())
            .spawn(move || timer_loop(weak))
            .map_err(|e| StartError(format!("JetStream: could not start its timer: {e}")))?;
        *js.timer.lock() = Some(timer);
        Ok(Some(js))
    }

    /// The JetStream of account `name`.
    pub fn account(&self, name: &str) -> Option<Arc<JsAccount>> {
        self.accounts.read().get(name).cloned()
    }

    /// Every account's JetStream.
    pub fn accounts(&self) -> Vec<Arc<JsAccount>> {
        self.accounts.read().values().cloned().collect()
    }

    /// Stops the timer and syncs every file store (server shutdown).
    pub fn stop(&self) {
        *self.stop.lock() = true;
        self.wake.notify_all();
        if let Some(t) = self.timer.lock().take() {
            let _ = t.join();
        }
        for acc in self.accounts() {
            for s in acc.stream_list() {
                acc.stop_consumers(&s, false);
                if let Err(e) = s.lock().store.sync() {
                    log::error!("JetStream: stream {}: sync failed: {e}", s.name);
                }
            }
        }
    }

    /// (memory bytes, file bytes) held by all streams.
    pub fn usage(&self) -> (u64, u64) {
        self.usage.used()
    }
}

/// `1.00 TB`-style sizes for the start-up banner (nats-server's `friendlyBytes`).
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KB", "MB", "GB", "TB", "PB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", UNITS[i])
    }
}

/// The timer: every second, `max_age` expiry and dedup windows; every `sync_interval`, a
/// sync of the file stores. Stops when JetStream is dropped or stopped.
fn timer_loop(js: Weak<JetStream>) {
    let mut last_sync = std::time::Instant::now();
    loop {
        let Some(js) = js.upgrade() else { return };
        {
            let mut stop = js.stop.lock();
            if *stop {
                return;
            }
            js.wake.wait_for(&mut stop, Duration::from_secs(1));
            if *stop {
                return;
            }
        }
        let now = json::now_nanos();
        let sync_due = match js.sync {
            SyncPolicy::Interval(d) => last_sync.elapsed() >= d,
            SyncPolicy::Always => false,
        };
        if sync_due {
            last_sync = std::time::Instant::now();
        }
        for acc in js.accounts() {
            for s in acc.stream_list() {
                let mut st = s.lock();
                if !st.config.limits().max_age.is_zero() {
                    if let Err(e) = st.with_store(|s| s.expire(now)) {
                        log::warn!("JetStream: stream {}: expiry failed: {e}", s.name);
                    }
                }
                if sync_due {
                    if let Err(e) = st.store.sync() {
                        log::error!("JetStream: stream {}: sync failed: {e}", s.name);
                    }
                }
            }
        }
    }
}

impl JetStream {
    /// Enables JetStream in the accounts added to the registry since start (by a reload
    /// that adds accounts), as it was enabled in the others at start. An account whose
    /// store cannot be opened is logged and left without JetStream.
    pub fn add_new_accounts(self: &Arc<Self>, shared: &Arc<Shared>) {
        for account in &shared.accounts.list() {
            if self.accounts.read().contains_key(&account.name) {
                continue;
            }
            match JsAccount::start(self, shared, account) {
                Ok(acc) => {
                    self.accounts.write().insert(account.name.clone(), acc);
                }
                Err(e) => log::error!("JetStream for account {}: {e}", account.name),
            }
        }
    }
}

impl JsAccount {
    fn start(
        js: &Arc<JetStream>,
        shared: &Arc<Shared>,
        account: &Arc<Account>,
    ) -> Result<Arc<JsAccount>, StartError> {
        let dir = js.root.join(&account.name).join("streams");
        let acc = Arc::new_cyclic(|weak: &Weak<JsAccount>| {
            let service: Arc<dyn Service> = Arc::new(ServiceHandle(weak.clone()));
            let client = Arc::new(Client::new_service(
                shared.registry.next_cid(),
                shared.doorbell.clone(),
                account.clone(),
                service,
            ));
            JsAccount {
                account: account.clone(),
                client,
                streams: RwLock::new(BTreeMap::new()),
                stream_subs: Mutex::new(BTreeMap::new()),
                dir,
                js: Arc::downgrade(js),
                shared: Arc::downgrade(shared),
                creating: Mutex::new(()),
                downstream: RwLock::new(BTreeMap::new()),
                api_total: AtomicU64::new(0),
                api_errors: AtomicU64::new(0),
            }
        });
        acc.recover()?;
        for s in acc.stream_list() {
            acc.recover_consumers(&s);
        }
        acc.subscribe(b"$JS.API.>", API_SID);
        acc.subscribe(b"$JS.FC.>", FC_SID);
        Ok(acc)
    }

    /// Whether `config`'s subjects overlap another stream's subjects, or the API's, checked
    /// in nats-server's order (other streams first), with its errors.
    pub fn check_overlap(&self, config: &StreamConfig) -> Result<(), errors::ApiError> {
        let crosses = |theirs: &[String]| {
            config
                .subjects
                .iter()
                .any(|a| theirs.iter().any(|b| config::subjects_overlap(a, b)))
        };
        for other in self.stream_list() {
            if other.name != config.name && crosses(&other.config().subjects) {
                return Err(errors::SUBJECT_OVERLAP);
            }
        }
        if crosses(&["$JS.API.>".to_string()]) {
            return Err(errors::invalid_config(
                "subjects overlap with jetstream api",
            ));
        }
        Ok(())
    }

    /// Streams in name order.
    pub fn stream_list(&self) -> Vec<Arc<Stream>> {
        self.streams.read().values().cloned().collect()
    }

    /// A stream by name.
    pub fn stream(&self, name: &str) -> Option<Arc<Stream>> {
        self.streams.read().get(name).cloned()
    }

    /// (memory bytes, file bytes) of this account's streams.
    pub fn usage(&self) -> (u64, u64) {
        let mut usage = (0, 0);
        for s in self.stream_list() {
            let st = s.lock();
            let bytes = st.store.state().bytes;
            match st.config.storage {
                Storage::Memory => usage.0 += bytes,
                Storage::File => usage.1 += bytes,
            }
        }
        usage
    }

    /// Whether `config` (new, or replacing the stream of its name) would make the mirror and
    /// source links loop (A sources B, B sources A). Refused: a message is copied
    /// downstream under its origin's lock, so the links must form no loop for the locks to
    /// be taken in one order (docs/architecture.md, "Locks").
    pub fn sources_loop(&self, config: &StreamConfig) -> bool {
        let origins = |c: &StreamConfig| -> Vec<String> {
            c.mirror
                .iter()
                .map(|m| m.name.clone())
                .chain(c.sources.iter().map(|s| s.name.clone()))
                .collect()
        };
        let mut links: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for s in self.stream_list() {
            if s.name != config.name {
                links.insert(s.name.clone(), origins(&s.config()));
            }
        }
        links.insert(config.name.clone(), origins(config));
        // Walk upstream from the new stream; reaching it again is a loop.
        let mut todo = links.get(&config.name).cloned().unwrap_or_default();
        let mut seen = std::collections::BTreeSet::new();
        while let Some(name) = todo.pop() {
            if name == config.name {
                return true;
            }
            if seen.insert(name.clone()) {
                todo.extend(links.get(&name).cloned().unwrap_or_default());
            }
        }
        false
    }

    /// Bytes reserved by streams with `max_bytes` (memory, file), as nats-server sums them.
    pub fn reserved(&self) -> (u64, u64) {
        let mut r = (0, 0);
        for s in self.stream_list() {
            let c = s.config();
            if c.max_bytes > 0 {
                match c.storage {
                    Storage::Memory => r.0 += c.max_bytes as u64,
                    Storage::File => r.1 += c.max_bytes as u64,
                }
            }
        }
        r
    }

    /// Adds a subscription of the service client.
    fn subscribe(&self, subject: &[u8], sid: &[u8]) -> Option<Arc<Subscription>> {
        let shared = self.shared.upgrade()?;
        let sub = Arc::new(Subscription::new(
            self.client.clone(),
            self.account.clone(),
            subject,
            None,
            sid,
        ));
        if self.account.sublist.insert(sub.clone()).is_err() {
            return None;
        }
        self.client.subs.lock().insert(sid.into(), sub.clone());
        shared.interest_added(&sub);
        Some(sub)
    }

    /// Registers `stream` and subscribes its subjects.
    fn add_stream(&self, stream: Arc<Stream>) {
        let subjects = stream.config().subjects;
        self.streams
            .write()
            .insert(stream.name.clone(), stream.clone());
        self.subscribe_stream(&stream.name, &subjects);
        self.recompute_downstream();
    }

    /// Rebuilds `downstream` from the configurations (after a change to them).
    fn recompute_downstream(&self) {
        let mut map: BTreeMap<String, Vec<Downstream>> = BTreeMap::new();
        for s in self.stream_list() {
            let c = s.config();
            if let Some(m) = &c.mirror {
                map.entry(m.name.clone()).or_default().push(Downstream {
                    stream: s.clone(),
                    mirror: true,
                    filter: m.filter_subject.clone(),
                });
            }
            for src in &c.sources {
                map.entry(src.name.clone()).or_default().push(Downstream {
                    stream: s.clone(),
                    mirror: false,
                    filter: src.filter_subject.clone(),
                });
            }
        }
        *self.downstream.write() = map;
    }

    fn subscribe_stream(&self, name: &str, subjects: &[String]) {
        let mut subs = Vec::new();
        for (i, s) in subjects.iter().enumerate() {
            let mut sid = STREAM_SID.to_vec();
            sid.extend_from_slice(name.as_bytes());
            sid.extend_from_slice(format!(":{i}").as_bytes());
            if let Some(sub) = self.subscribe(s.as_bytes(), &sid) {
                subs.push(sub);
            }
        }
        self.stream_subs.lock().insert(name.to_string(), subs);
    }

    fn unsubscribe_stream(&self, name: &str) {
        let subs = self.stream_subs.lock().remove(name).unwrap_or_default();
        if let Some(shared) = self.shared.upgrade() {
            for s in &subs {
                shared.unsubscribe(s);
            }
        }
    }

    /// Creates a stream (the API's `STREAM.CREATE`, with a checked configuration).
    fn create_stream(&self, config: StreamConfig) -> Result<Arc<Stream>, errors::ApiError> {
        let js = self
            .js
            .upgrade()
            .ok_or(errors::general("JetStream is stopping"))?;
        let created = json::now_nanos();
        let (store, dir): (Box<dyn Store>, Option<PathBuf>) = match config.storage {
            Storage::Memory => (Box::new(MemoryStore::new(config.limits())), None),
            Storage::File => {
                let dir = self.dir.join(&config.name);
                write_meta(&dir, &config, created).map_err(errors::general)?;
                let store = open_file_store(&dir.join("msgs"), config.limits(), js.sync)
                    .map_err(errors::general)?;
                (store, Some(dir))
            }
        };
        let stream = Arc::new(Stream::new(config, store, created, dir, js.usage.clone()));
        self.add_stream(stream.clone());
        self.catch_up(&stream);
        Ok(stream)
    }

    /// Applies a new configuration to `stream` (checked against the old one already).
    fn update_stream(
        &self,
        stream: &Arc<Stream>,
        config: StreamConfig,
    ) -> Result<(), errors::ApiError> {
        let subjects_changed;
        {
            let mut st = stream.lock();
            subjects_changed = st.config.subjects != config.subjects;
            if let Some(dir) = &stream.dir {
                write_meta(dir, &config, stream.created).map_err(errors::general)?;
            }
            let limits = config.limits();
            st.with_store(|s| s.set_limits(limits))
                .map_err(stream::store_error)?;
            st.config = config.clone();
        }
        if subjects_changed {
            self.unsubscribe_stream(&stream.name);
            self.subscribe_stream(&stream.name, &config.subjects);
        }
        self.recompute_downstream();
        Ok(())
    }

    /// Deletes a stream and its files.
    fn delete_stream(&self, name: &str) -> Result<(), errors::ApiError> {
        let stream = self
            .streams
            .write()
            .remove(name)
            .ok_or(errors::STREAM_NOT_FOUND)?;
        self.unsubscribe_stream(name);
        self.recompute_downstream();
        self.stop_consumers(&stream, true);
        let store = stream.lock().take_store();
        if let Err(e) = store.destroy() {
            log::error!("JetStream: stream {name}: could not delete its store: {e}");
        }
        if let Some(dir) = &stream.dir {
            if let Err(e) = std::fs::remove_dir_all(dir) {
                log::error!(
                    "JetStream: stream {name}: could not delete {}: {e}",
                    dir.display()
                );
            }
        }
        Ok(())
    }

    /// Every mirror and sourcing stream catches up with its origins.
    fn catch_up_all(&self) {
        for s in self.stream_list() {
            self.catch_up(&s);
        }
    }

    /// `stream`, if it is a mirror or has sources, copies what its origins hold that it
    /// does not have yet (at creation, and at start-up). Sources start at their
    /// `opt_start_seq`/`opt_start_time`, or the beginning.
    fn catch_up(&self, stream: &Arc<Stream>) {
        let config = stream.config();
        if let Some(m) = &config.mirror {
            let Some(origin) = self.stream(&m.name) else {
                return;
            };
            let origin_st = origin.lock();
            let mut seq = stream.lock().store.state().last_seq + 1;
            seq = seq.max(m.opt_start_seq);
            let start_ts = m
                .opt_start_time
                .as_deref()
                .and_then(json::parse_go_time)
                .unwrap_or(0);
            while let Ok(msg) = origin_st.store.load_next(filter(&m.filter_subject), seq) {
                seq = msg.seq + 1;
                if msg.ts >= start_ts {
                    stream.store_mirrored(&msg);
                }
            }
            return;
        }
        if config.sources.is_empty() || stream.lock().store.state().last_seq > 0 {
            // Sources are copied once, at creation; afterwards as they come.
            return;
        }
        for src in &config.sources {
            let Some(origin) = self.stream(&src.name) else {
                continue;
            };
            if Arc::ptr_eq(&origin, stream) {
                continue;
            }
            let origin_st = origin.lock();
            let mut seq = src.opt_start_seq.max(1);
            let start_ts = src
                .opt_start_time
                .as_deref()
                .and_then(json::parse_go_time)
                .unwrap_or(0);
            while let Ok(msg) = origin_st.store.load_next(filter(&src.filter_subject), seq) {
                seq = msg.seq + 1;
                if msg.ts >= start_ts {
                    stream.store_sourced(&msg);
                }
            }
        }
    }

    /// Passes a message just stored in the last stream of `chain` (still locked by the
    /// caller) on to the streams that mirror it or source from it, and theirs in turn. The
    /// links form no loop (`sources_loop` refuses them), so locks go from origin to
    /// downstream only; `chain` guards against a loop anyway.
    fn feed_downstream(&self, chain: &mut Vec<String>, msg: &crate::store::StoredMsg) {
        let Some(origin) = chain.last() else { return };
        let targets = match self.downstream.read().get(origin) {
            Some(t) => t.clone(),
            None => return,
        };
        for d in targets {
            if chain.contains(&d.stream.name) || !matches_filter(&d.filter, &msg.subject) {
                continue;
            }
            let stored = if d.mirror {
                d.stream.store_mirrored(msg)
            } else {
                d.stream.store_sourced(msg)
            };
            if let Some(stored) = stored {
                chain.push(d.stream.name.clone());
                self.feed_downstream(chain, &stored);
                chain.pop();
            }
        }
    }

    /// A reply into this account.
    fn reply(&self, subject: &[u8], headers: Vec<u8>, data: Vec<u8>) -> ServiceReply {
        ServiceReply {
            account: self.account.clone(),
            subject: Bytes::copy_from_slice(subject),
            reply: None,
            headers: Bytes::from(headers),
            data: Bytes::from(data),
        }
    }
}

fn filter(f: &str) -> Option<&[u8]> {
    (!f.is_empty()).then_some(f.as_bytes())
}

fn matches_filter(f: &str, subject: &[u8]) -> bool {
    f.is_empty() || crate::subjects::subject_matches(subject, f.as_bytes())
}

/// A stream fed by another: mirror or source, and the origin's subjects it takes.
#[derive(Clone)]
struct Downstream {
    stream: Arc<Stream>,
    mirror: bool,
    filter: String,
}

/// The service's handle on its account (weak: the account owns the client that owns this).
struct ServiceHandle(Weak<JsAccount>);

impl Service for ServiceHandle {
    fn on_message(
        &self,
        sub: &Subscription,
        msg: &ServiceMsg<'_>,
        replies: &mut Vec<ServiceReply>,
    ) {
        let Some(acc) = self.0.upgrade() else { return };
        if &*sub.sid == API_SID {
            api::handle(&acc, msg, replies);
            return;
        }
        if sub.sid.starts_with(ACK_SID) {
            consumer::ack::handle(&acc, msg, replies);
            return;
        }
        if &*sub.sid == FC_SID {
            consumer::ack::flow_control(&acc, msg.subject);
            return;
        }
        let Some(rest) = sub.sid.strip_prefix(STREAM_SID) else {
            return;
        };
        let Some(colon) = rest.iter().rposition(|&b| b == b':') else {
            return;
        };
        let Ok(name) = std::str::from_utf8(&rest[..colon]) else {
            return;
        };
        let Some(stream) = acc.stream(name) else {
            return;
        };
        let feeds = acc.downstream.read().contains_key(name);
        let mut feed = |stored: &crate::store::StoredMsg| {
            acc.feed_downstream(&mut vec![name.to_string()], stored);
        };
        let on_stored: Option<&mut dyn FnMut(&crate::store::StoredMsg)> =
            if feeds { Some(&mut feed) } else { None };
        let published = stream.publish(msg.subject, msg.reply, msg.headers, msg.data, on_stored);
        if let (Some(ack), Some(reply)) = (published.ack, msg.reply) {
            replies.push(acc.reply(reply, Vec::new(), ack));
        }
        if let Some((subject, hdrs, body)) = published.republish {
            replies.push(ServiceReply {
                account: acc.account.clone(),
                subject,
                reply: None,
                headers: Bytes::from(hdrs),
                data: body,
            });
        }
    }
}
