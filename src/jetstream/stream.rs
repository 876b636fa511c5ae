//! One stream: its configuration, its store, and what a publish to it goes through before
//! and after it is stored (nats-server's `processJetStreamMsg`): the sealed and size checks,
//! deduplication by `Nats-Msg-Id` within `duplicate_window`, the `Nats-Expected-*` headers,
//! `Nats-Rollup`, the store's limits, then the PubAck and `republish`.
//!
//! A stream's state sits behind one mutex ([`Stream::lock`]): publishes from many readers,
//! API requests and the JetStream timer take it in turn, for the time of one operation.

use super::config::{Retention, Storage, StreamConfig};
use super::consumer::Consumer;
use super::errors::{self, ApiError};
use super::headers;
use super::json::{now_nanos, to_go_json};
use crate::store::{Store, StoreError, StoredMsg};
use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A stream of an account.
pub struct Stream {
    /// Its name (never changes).
    pub name: String,
    /// When it was created, nanoseconds since the epoch.
    pub created: i64,
    /// Its directory, for a file stream (configuration and messages).
    pub dir: Option<PathBuf>,
    inner: Mutex<StreamState>,
    /// Its consumers by name. Read by every publish (to ring their doorbells) with the
    /// stream's state locked: nothing is locked under this map but doorbells and filters.
    pub consumers: RwLock<BTreeMap<String, Arc<Consumer>>>,
}

/// The bytes all streams of the server hold, by storage, against `max_memory_store` and
/// `max_file_store`: kept by deltas as each stream's store changes, so that a publish checks
/// the room left without looking at other streams (a client cannot fill the machine's
/// memory through a memory stream).
#[derive(Debug)]
pub struct Usage {
    memory: AtomicU64,
    file: AtomicU64,
    max_memory: u64,
    max_file: u64,
}

impl Usage {
    /// No bytes held yet, under these maximums.
    pub fn new(max_memory: u64, max_file: u64) -> Usage {
        Usage {
            memory: AtomicU64::new(0),
            file: AtomicU64::new(0),
            max_memory,
            max_file,
        }
    }

    fn counter(&self, storage: Storage) -> (&AtomicU64, u64) {
        match storage {
            Storage::Memory => (&self.memory, self.max_memory),
            Storage::File => (&self.file, self.max_file),
        }
    }

    /// Bytes held (memory, file).
    pub fn used(&self) -> (u64, u64) {
        // Relaxed: statistics and a soft limit; a publish racing another may pass it by
        // one message, as it could a moment earlier.
        (
            self.memory.load(Ordering::Relaxed),
            self.file.load(Ordering::Relaxed),
        )
    }

    /// Whether `add` more bytes fit, else nats-server's "insufficient ... resources".
    pub fn room(&self, storage: Storage, add: u64) -> Result<(), ApiError> {
        let (used, max) = self.counter(storage);
        if used.load(Ordering::Relaxed).saturating_add(add) <= max {
            return Ok(());
        }
        Err(match storage {
            Storage::Memory => errors::MEMORY_RESOURCES_EXCEEDED,
            Storage::File => errors::STORAGE_RESOURCES_EXCEEDED,
        })
    }

    /// A store of `storage` went from `before` to `after` bytes.
    pub fn changed(&self, storage: Storage, before: u64, after: u64) {
        let (used, _) = self.counter(storage);
        if after >= before {
            used.fetch_add(after - before, Ordering::Relaxed);
        } else {
            let less = before - after;
            // Never below zero, even if a count drifted.
            let _ = used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                Some(u.saturating_sub(less))
            });
        }
    }
}

/// What a stream's lock guards.
pub struct StreamState {
    /// The configuration now.
    pub config: StreamConfig,
    /// The messages. Changed through [`StreamState::with_store`], which keeps the server's
    /// [`Usage`] right.
    pub store: Box<dyn Store>,
    /// The server's bytes in use.
    usage: Arc<Usage>,
    /// `Nats-Msg-Id`s seen within the window.
    dedup: Dedup,
    /// The `Nats-Msg-Id` of the last stored message ("" if it had none).
    last_msg_id: String,
}

impl StreamState {
    /// Runs `f` on the store and counts the change of its bytes in the server's usage.
    pub fn with_store<R>(&mut self, f: impl FnOnce(&mut dyn Store) -> R) -> R {
        let before = self.store.state().bytes;
        let r = f(&mut *self.store);
        let after = self.store.state().bytes;
        if before != after {
            self.usage.changed(self.config.storage, before, after);
        }
        r
    }

    /// Takes the store out (stream deletion), giving its bytes back to the server's usage.
    pub fn take_store(&mut self) -> Box<dyn Store> {
        let bytes = self.store.state().bytes;
        self.usage.changed(self.config.storage, bytes, 0);
        std::mem::replace(
            &mut self.store,
            Box::new(crate::store::MemoryStore::new(Default::default())),
        )
    }
}

/// The ids seen within `duplicate_window`: id → (sequence, time), and the ids in time order
/// to forget them once out of the window.
#[derive(Default)]
struct Dedup {
    ids: HashMap<String, u64>,
    order: VecDeque<(i64, String)>,
}

impl Dedup {
    fn forget_before(&mut self, cutoff: i64) {
        while let Some((ts, _)) = self.order.front() {
            if *ts >= cutoff {
                break;
            }
            if let Some((_, id)) = self.order.pop_front() {
                self.ids.remove(&id);
            }
        }
    }

    fn insert(&mut self, id: String, seq: u64, ts: i64) {
        self.ids.insert(id.clone(), seq);
        self.order.push_back((ts, id));
    }
}

/// What a publish produced.
#[derive(Default)]
pub struct Published {
    /// The PubAck or error reply, if the publisher asked for one.
    pub ack: Option<Vec<u8>>,
    /// The messages `republish` sends: (subject, headers, body).
    pub republish: Option<(Bytes, Vec<u8>, Bytes)>,
}

/// `{"error":{...},"stream":"S","seq":0}`: a publish refused.
fn pub_error(stream: &str, e: &ApiError) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Err<'a> {
        error: &'a ApiError,
        stream: &'a str,
        seq: u64,
    }
    to_go_json(&Err {
        error: e,
        stream,
        seq: 0,
    })
}

/// The PubAck exactly as nats-server writes it (with its spaces): `{"stream":"S", "seq":1}`,
/// `{"stream":"S", "seq":1,"duplicate": true}`.
fn pub_ack(stream: &str, seq: u64, duplicate: bool) -> Vec<u8> {
    let name = String::from_utf8(to_go_json(&stream)).unwrap_or_default();
    let mut s = format!("{{\"stream\":{name}, \"seq\":{seq}");
    if duplicate {
        s.push_str(",\"duplicate\": true");
    }
    s.push('}');
    s.into_bytes()
}

impl Stream {
    /// A stream with `config` (normalized) over `store`.
    pub fn new(
        config: StreamConfig,
        store: Box<dyn Store>,
        created: i64,
        dir: Option<PathBuf>,
        usage: Arc<Usage>,
    ) -> Stream {
        usage.changed(config.storage, 0, store.state().bytes);
        let stream = Stream {
            name: config.name.clone(),
            created,
            dir,
            inner: Mutex::new(StreamState {
                config,
                store,
                usage,
                dedup: Dedup::default(),
                last_msg_id: String::new(),
            }),
            consumers: RwLock::new(BTreeMap::new()),
        };
        stream.rebuild_dedup();
        stream
    }

    /// The stream's state, locked.
    pub fn lock(&self) -> MutexGuard<'_, StreamState> {
        self.inner.lock()
    }

    /// The configuration now (a copy).
    pub fn config(&self) -> StreamConfig {
        self.inner.lock().config.clone()
    }

    /// After a restart: the `Nats-Msg-Id`s of the messages still within the window
    /// (nats-server rebuilds its window from the stored headers too). The messages are in
    /// time order, so the first one in the window is found by bisection.
    fn rebuild_dedup(&self) {
        let mut st = self.inner.lock();
        let window = st.config.duplicate_window;
        let state = st.store.state();
        if window <= 0 || state.msgs == 0 {
            return;
        }
        let cutoff = now_nanos() - window;
        if state.last_ts < cutoff {
            return;
        }
        let (mut lo, mut hi) = (state.first_seq, state.last_seq);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match st.store.load_next(None, mid) {
                Ok(m) if m.ts >= cutoff => hi = mid,
                Ok(m) => lo = m.seq.max(mid) + 1,
                Err(_) => hi = mid,
            }
        }
        let mut seq = lo;
        while let Ok(m) = st.store.load_next(None, seq) {
            let Some(after) = m.seq.checked_add(1) else {
                break;
            };
            seq = after;
            if let Some(id) = headers::get_str(&m.headers, headers::MSG_ID) {
                st.dedup.insert(id.clone(), m.seq, m.ts);
                st.last_msg_id = id;
            } else {
                st.last_msg_id.clear();
            }
        }
    }

    /// A message published on one of the stream's subjects: checked, stored, acknowledged
    /// (when `reply` is given and the stream acks). `on_stored`, when given, sees the stored
    /// message while the stream is still locked (mirrors must see the stream's own order).
    pub fn publish(
        &self,
        subject: &[u8],
        reply: Option<&[u8]>,
        hdrs: &[u8],
        data: &[u8],
        on_stored: Option<&mut dyn FnMut(&StoredMsg)>,
    ) -> Published {
        let mut st = self.inner.lock();
        let wants_ack = reply.is_some() && !st.config.no_ack;
        let refuse = |e: ApiError| Published {
            ack: wants_ack.then(|| pub_error(&self.name, &e)),
            ..Published::default()
        };
        if st.config.sealed {
            return refuse(errors::SEALED);
        }
        let max_size = st.config.max_msg_size;
        if max_size >= 0 && hdrs.len() + data.len() > max_size as usize {
            return refuse(errors::MESSAGE_EXCEEDS_MAXIMUM);
        }
        let now = now_nanos();
        let msg_id = headers::get_str(hdrs, headers::MSG_ID).filter(|s| !s.is_empty());
        if let Some(id) = &msg_id {
            let cutoff = now - st.config.duplicate_window;
            st.dedup.forget_before(cutoff);
            if let Some(&seq) = st.dedup.ids.get(id) {
                return Published {
                    ack: wants_ack.then(|| pub_ack(&self.name, seq, true)),
                    ..Published::default()
                };
            }
        }
        if let Some(expected) = headers::get(hdrs, headers::EXPECTED_STREAM) {
            if expected != self.name.as_bytes() {
                return refuse(errors::EXPECTED_STREAM_MISMATCH);
            }
        }
        let state = st.store.state();
        if let Some(v) = headers::get(hdrs, headers::EXPECTED_LAST_SEQ) {
            // A value that is not a number never matches (nats-server: parse fails → -1).
            let expected = std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok());
            if expected != Some(state.last_seq) {
                return refuse(errors::wrong_last_sequence(state.last_seq));
            }
        }
        if let Some(v) = headers::get(hdrs, headers::EXPECTED_LAST_SUBJECT_SEQ) {
            let expected = std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<u64>().ok());
            let last = st.store.load_last(subject).map(|m| m.seq).unwrap_or(0);
            if expected != Some(last) {
                return refuse(errors::wrong_last_sequence(last));
            }
        }
        if let Some(v) = headers::get(hdrs, headers::EXPECTED_LAST_MSG_ID) {
            if v != st.last_msg_id.as_bytes() {
                let last = st.last_msg_id.clone();
                return refuse(errors::wrong_last_msg_id(&last));
            }
        }
        let rollup = match headers::get(hdrs, headers::ROLLUP) {
            None => None,
            Some(_) if !st.config.allow_rollup_hdrs => {
                return refuse(errors::rollup_failed("rollup not permitted"))
            }
            Some(v) if v.eq_ignore_ascii_case(b"sub") => Some(false),
            Some(v) if v.eq_ignore_ascii_case(b"all") => Some(true),
            // nats-server drops such a message without a word (no ack, nothing stored).
            Some(_) => return Published::default(),
        };
        let size = match st.config.storage {
            Storage::Memory => crate::store::memory_msg_size(subject.len(), hdrs.len(), data.len()),
            Storage::File => crate::store::file_msg_size(subject.len(), hdrs.len(), data.len()),
        };
        if let Err(e) = st.usage.room(st.config.storage, size) {
            return refuse(e);
        }
        let seq = match st.with_store(|s| s.store_msg(subject, hdrs, data, now)) {
            Ok(seq) => seq,
            Err(e) => return refuse(store_error(e)),
        };
        if let Some(all) = rollup {
            let purge = crate::store::Purge {
                filter: (!all).then(|| Bytes::copy_from_slice(subject)),
                up_to: Some(seq),
                keep: None,
            };
            if let Err(e) = st.with_store(|s| s.purge(&purge)) {
                log::warn!("JetStream: stream {}: rollup purge failed: {e}", self.name);
            }
        }
        match msg_id {
            Some(id) => {
                st.dedup.insert(id.clone(), seq, now);
                st.last_msg_id = id;
            }
            None => st.last_msg_id.clear(),
        }
        // A copy of the message only for those who need one (mirrors, sources, republish):
        // the common publish allocates nothing more here.
        let mut republish = None;
        if on_stored.is_some() || st.config.republish.is_some() {
            let stored = StoredMsg {
                subject: Bytes::copy_from_slice(subject),
                seq,
                ts: now,
                headers: Bytes::copy_from_slice(hdrs),
                data: Bytes::copy_from_slice(data),
            };
            republish = st
                .config
                .republish
                .as_ref()
                .and_then(|rp| republished(&self.name, rp, &stored, state.last_seq));
            if let Some(feed) = on_stored {
                feed(&stored);
            }
        }
        if !self.notify(subject) && st.config.retention == Retention::Interest {
            // No consumer wants it: acknowledged and not kept, as nats-server does.
            let _ = st.with_store(|s| s.remove(seq, false));
        }
        Published {
            ack: wants_ack.then(|| pub_ack(&self.name, seq, false)),
            republish,
        }
    }

    /// A message from a mirror's origin: stored under its origin sequence (gaps skipped);
    /// one already stored (a replay) is ignored.
    pub fn store_mirrored(&self, m: &StoredMsg) -> Option<StoredMsg> {
        let mut st = self.inner.lock();
        self.store_mirrored_locked(&mut st, m)
    }

    /// [`Stream::store_mirrored`] with the stream already locked.
    pub fn store_mirrored_locked(&self, st: &mut StreamState, m: &StoredMsg) -> Option<StoredMsg> {
        if st.config.sealed {
            return None;
        }
        let last = st.store.state().last_seq;
        if m.seq <= last {
            return None;
        }
        if m.seq > last + 1 {
            if let Err(e) = st.store.skip_to(m.seq - 1) {
                log::warn!("JetStream: mirror {}: {e}", self.name);
                return None;
            }
        }
        self.store_copy(st, m)
    }

    /// A message from one of the stream's sources: stored with the next sequence.
    pub fn store_sourced(&self, m: &StoredMsg) -> Option<StoredMsg> {
        let mut st = self.inner.lock();
        self.store_sourced_locked(&mut st, m)
    }

    /// [`Stream::store_sourced`] with the stream already locked.
    pub fn store_sourced_locked(&self, st: &mut StreamState, m: &StoredMsg) -> Option<StoredMsg> {
        if st.config.sealed {
            return None;
        }
        self.store_copy(st, m)
    }

    fn store_copy(&self, st: &mut StreamState, m: &StoredMsg) -> Option<StoredMsg> {
        let size = match st.config.storage {
            Storage::Memory => {
                crate::store::memory_msg_size(m.subject.len(), m.headers.len(), m.data.len())
            }
            Storage::File => {
                crate::store::file_msg_size(m.subject.len(), m.headers.len(), m.data.len())
            }
        };
        if st.usage.room(st.config.storage, size).is_err() {
            log::debug!(
                "JetStream: stream {}: no room for a sourced message",
                self.name
            );
            return None;
        }
        match st.with_store(|s| s.store_msg(&m.subject, &m.headers, &m.data, m.ts)) {
            Ok(seq) => {
                if !self.notify(&m.subject) && st.config.retention == Retention::Interest {
                    let _ = st.with_store(|s| s.remove(seq, false));
                }
                Some(StoredMsg { seq, ..m.clone() })
            }
            Err(e) => {
                log::debug!(
                    "JetStream: stream {}: a sourced message was not stored: {e}",
                    self.name
                );
                None
            }
        }
    }
}

impl Stream {
    /// A message on `subject` was stored: wakes the consumers it is for. Returns whether
    /// there were any (interest retention keeps it only then). Called with the stream
    /// locked; takes only the consumer map's read lock and doorbells.
    fn notify(&self, subject: &[u8]) -> bool {
        let mut any = false;
        for c in self.consumers.read().values() {
            if c.wants(subject) {
                any = true;
                c.bell.ring();
            }
        }
        any
    }

    /// Stream sequences `seqs` were acknowledged by a consumer: a work-queue stream drops
    /// them, an interest stream drops those no consumer still waits for (nats-server's
    /// `ackMsg`). Called with no lock held: the consumers are asked first, then the stream
    /// is locked to remove.
    pub fn acked(&self, seqs: &[u64]) {
        let retention = self.inner.lock().config.retention;
        let drop: Vec<u64> = match retention {
            Retention::Limits => return,
            Retention::Workqueue => seqs.to_vec(),
            Retention::Interest => {
                let subjects: Vec<(u64, Bytes)> = {
                    let st = self.inner.lock();
                    seqs.iter()
                        .filter_map(|&s| st.store.load(s).ok().map(|m| (s, m.subject)))
                        .collect()
                };
                let consumers: Vec<Arc<Consumer>> =
                    self.consumers.read().values().cloned().collect();
                subjects
                    .into_iter()
                    .filter(|(s, subj)| !consumers.iter().any(|c| c.needs_ack(*s, subj)))
                    .map(|(s, _)| s)
                    .collect()
            }
        };
        if drop.is_empty() {
            return;
        }
        let mut st = self.inner.lock();
        for s in drop {
            let _ = st.with_store(|store| store.remove(s, false));
        }
    }

    /// The stream was purged: its consumers forget what was below its first sequence.
    /// Called with no lock held.
    pub fn purged(&self) {
        let first = self.inner.lock().store.state().first_seq;
        let consumers: Vec<Arc<Consumer>> = self.consumers.read().values().cloned().collect();
        for c in consumers {
            c.purged(first);
        }
    }

    /// Its consumers, in name order.
    pub fn consumer_list(&self) -> Vec<Arc<Consumer>> {
        self.consumers.read().values().cloned().collect()
    }
}

/// The store's refusal as the API error nats-server gives for it.
pub fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::MaxMsgs => errors::store_limit("maximum messages exceeded"),
        StoreError::MaxBytes => errors::store_limit("maximum bytes exceeded"),
        StoreError::MaxMsgsPerSubject => {
            errors::store_limit("maximum messages per subject exceeded")
        }
        StoreError::NotFound => errors::NO_MESSAGE_FOUND,
        other => errors::store_failed(other),
    }
}

/// `republish`: the message for `dest` if `src` matches the stored subject.
fn republished(
    stream: &str,
    rp: &super::config::RePublish,
    m: &StoredMsg,
    last_seq: u64,
) -> Option<(Bytes, Vec<u8>, Bytes)> {
    let src = if rp.src.is_empty() {
        ">"
    } else {
        rp.src.as_str()
    };
    if !crate::subjects::subject_matches(&m.subject, src.as_bytes()) {
        return None;
    }
    let dest = map_subject(src, &rp.dest, &m.subject)?;
    let subject = String::from_utf8_lossy(&m.subject).into_owned();
    let seq = m.seq.to_string();
    let last = last_seq.to_string();
    let size = m.data.len().to_string();
    let mut extra = vec![
        ("Nats-Stream", stream),
        ("Nats-Subject", subject.as_str()),
        ("Nats-Sequence", seq.as_str()),
        ("Nats-Last-Sequence", last.as_str()),
    ];
    if rp.headers_only {
        extra.push(("Nats-Msg-Size", size.as_str()));
    }
    let hdrs = headers::with_headers(&m.headers, &extra);
    let body = if rp.headers_only {
        Bytes::new()
    } else {
        m.data.clone()
    };
    Some((Bytes::from(dest), hdrs, body))
}

/// Maps `subject` (matching `src`) onto `dest`: `dest`'s wildcards take, in order, the
/// tokens `src`'s wildcards matched (`*` one token, `>` the rest). A literal `dest` is
/// itself.
pub fn map_subject(src: &str, dest: &str, subject: &[u8]) -> Option<Vec<u8>> {
    let subj: Vec<&[u8]> = crate::subjects::tokens(subject).collect();
    let mut captured: Vec<Vec<u8>> = Vec::new();
    for (i, t) in crate::subjects::tokens(src.as_bytes()).enumerate() {
        if t == b"*" {
            captured.push(subj.get(i)?.to_vec());
        } else if t == b">" {
            captured.push(subj.get(i..)?.join(&b"."[..]));
        }
    }
    let mut out: Vec<u8> = Vec::with_capacity(dest.len() + subject.len());
    let mut next = captured.into_iter();
    for (i, t) in crate::subjects::tokens(dest.as_bytes()).enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        if t == b"*" || t == b">" {
            out.extend_from_slice(&next.next()?);
        } else {
            out.extend_from_slice(t);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acks_as_nats_server_writes_them() {
        assert_eq!(
            pub_ack("S", 4, true),
            b"{\"stream\":\"S\", \"seq\":4,\"duplicate\": true}"
        );
        assert_eq!(
            pub_error("S", &errors::wrong_last_sequence(5)),
            br#"{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"S","seq":0}"#
        );
    }

    #[test]
    fn subject_mapping() {
        assert_eq!(map_subject(">", "rp.>", b"a.b").unwrap(), b"rp.a.b");
        assert_eq!(map_subject("a.*", "x.*.y", b"a.q").unwrap(), b"x.q.y");
        assert_eq!(map_subject("a.>", "fixed", b"a.q").unwrap(), b"fixed");
    }
}
