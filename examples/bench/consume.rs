//! The JetStream consumer modes (`--pull`, `--push`), as `nats bench --js` consumes: a stream
//! is filled with `-n` messages of `-ms` bytes (by the `--js` publish path, [`js::run`], with
//! `-np` publishers and its pacing), then `-ns` subscribers consume them all through one
//! durable consumer, and the report is their rate.
//!
//! - `--pull`: a durable pull consumer shared by the subscribers. Each, on its own
//!   connection and OS thread, asks for `--fetch` messages at a time (`PUB
//!   $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer> <inbox> {"batch":N,"expires":ns}`, one
//!   request outstanding, as nats.go's `Fetch`), and asks again once the batch is in, or
//!   once a status message (`404`, `408`, `409`) has ended the request.
//! - `--push`: a durable push consumer with a deliver subject and a deliver group; every
//!   subscriber is a queue subscription (`SUB <deliver> <group> <sid>`) and gets its share.
//!
//! Acknowledgements (`--ackpolicy`): `explicit` (the default) acks every message (`+ACK` to
//! its reply subject `$JS.ACK...`); `all` acks the last message of each batch (push: of every
//! `--fetch` messages) and the last one; `none` acks nothing. Acks are written in batches
//! (whatever is buffered goes out before the client blocks to read). Every `--acksample`-th
//! ack (100 by default; 1: all of them) is a *double ack*: it carries a reply subject, the
//! server answers with an empty message once the ack is recorded, and the time from writing
//! the ack to that answer goes into an HDR histogram: the ack latency of the report.
//!
//! Each subscriber's sample spans from its first to its last message. The run ends when the
//! subscribers together have `-n` messages; a subscriber with nothing to read looks every
//! 50 ms whether the others are done. No progress for `--timeout` seconds fails the run. At
//! the end every subscriber confirms with `PING`/`PONG` that the server has read its acks,
//! and the consumer's info (`$JS.API.CONSUMER.INFO`) is read back: how many messages are
//! still unacknowledged or were redelivered.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::client::{self, describe, Conn, Frame, JsPace, Server, READ_BUF};
use crate::js::{self, api_error, JsConfig};
use crate::report::{run_id, Sample};
use crate::reqrep::new_histogram;
use crate::Gate;

/// Pull or push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Pull,
    Push,
}

/// The consumer's `ack_policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckPolicy {
    Explicit,
    All,
    None,
}

impl AckPolicy {
    pub fn parse(s: &str) -> Result<AckPolicy, String> {
        match s {
            "explicit" => Ok(AckPolicy::Explicit),
            "all" => Ok(AckPolicy::All),
            "none" => Ok(AckPolicy::None),
            _ => Err(format!("--ackpolicy {s}: explicit, all or none")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AckPolicy::Explicit => "explicit",
            AckPolicy::All => "all",
            AckPolicy::None => "none",
        }
    }
}

pub struct ConsumeConfig<'a> {
    pub server: &'a Server,
    pub subject: &'a str,
    pub stream: &'a str,
    pub storage: &'a str,
    pub durable: &'a str,
    pub msgs: u64,
    pub size: usize,
    pub consumers: usize,
    pub mode: Mode,
    pub fetch: u64,
    pub ack: AckPolicy,
    /// Every this-many-th ack is a double ack, timed.
    pub ack_sample: u64,
    pub max_ack_pending: u64,
    /// The fill: publishers and their pace.
    pub fill_publishers: usize,
    pub fill_pace: JsPace,
    pub timeout: Duration,
}

/// The consumer's state after the run, from `$JS.API.CONSUMER.INFO`.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AfterRun {
    pub delivered: u64,
    pub ack_floor: u64,
    pub num_ack_pending: u64,
    pub num_redelivered: u64,
    pub num_pending: u64,
    pub num_waiting: u64,
}

pub struct ConsumeOutcome {
    pub fill: Vec<Sample>,
    /// Per subscriber, in the order they finished.
    pub samples: Vec<Sample>,
    pub ack_latency: Histogram<u64>,
    pub after: Option<AfterRun>,
}

/// The consumer-create request body.
pub fn consumer_config(cfg: &ConsumeConfig<'_>, deliver: Option<(&str, &str)>) -> String {
    let mut c = serde_json::json!({
        "durable_name": cfg.durable,
        "deliver_policy": "all",
        "ack_policy": cfg.ack.name(),
        "replay_policy": "instant",
    });
    if cfg.ack != AckPolicy::None {
        c["max_ack_pending"] = cfg.max_ack_pending.into();
    }
    if let Some((subject, group)) = deliver {
        c["deliver_subject"] = subject.into();
        c["deliver_group"] = group.into();
    }
    serde_json::json!({"stream_name": cfg.stream, "config": c}).to_string()
}

/// The pull request body: `{"batch":N,"expires":ns}`.
pub fn pull_request(batch: u64, expires: Duration) -> String {
    format!(
        r#"{{"batch":{batch},"expires":{}}}"#,
        expires.as_nanos().min(i64::MAX as u128)
    )
}

/// The status code of a status message (`NATS/1.0 404 No Messages\r\n...`): headers and
/// no body, a code after the version. None for a message with plain headers.
pub fn status_code(headers: &[u8], payload: &[u8]) -> Option<u16> {
    if !payload.is_empty() {
        return None;
    }
    let rest = headers.strip_prefix(b"NATS/1.0 ")?;
    let code = rest.get(..3)?;
    std::str::from_utf8(code).ok()?.parse().ok()
}

fn consumer_info(conn: &mut Conn, inbox: &str, cfg: &ConsumeConfig<'_>) -> Option<AfterRun> {
    let reply = js::request(
        conn,
        inbox,
        &format!("$JS.API.CONSUMER.INFO.{}.{}", cfg.stream, cfg.durable),
        b"",
    )
    .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&reply).ok()?;
    let n = |p: &str| v.pointer(p).and_then(|x| x.as_u64()).unwrap_or(0);
    Some(AfterRun {
        delivered: n("/delivered/stream_seq"),
        ack_floor: n("/ack_floor/stream_seq"),
        num_ack_pending: n("/num_ack_pending"),
        num_redelivered: n("/num_redelivered"),
        num_pending: n("/num_pending"),
        num_waiting: n("/num_waiting"),
    })
}

/// What all subscribers share.
struct Shared {
    /// Messages received by all subscribers.
    received: AtomicU64,
    /// All `-n` are in (or a subscriber failed): stop.
    done: AtomicBool,
    target: u64,
}

struct SubConfig {
    mode: Mode,
    ack: AckPolicy,
    fetch: u64,
    ack_sample: u64,
    size: usize,
    /// Pull: the `MSG.NEXT` subject.
    next_subject: String,
    /// Pull: where deliveries come (an inbox of this connection).
    pull_inbox: String,
    /// Where double-ack replies come: `<prefix><token>`.
    ack_prefix: String,
    timeout: Duration,
}

struct SubResult {
    sample: Option<Sample>,
    latency: Histogram<u64>,
}

/// How long a subscriber with nothing to read waits before it looks at the others.
const POLL: Duration = Duration::from_millis(50);

fn consume(
    conn: &mut Conn,
    cfg: &SubConfig,
    shared: &Shared,
    gate: &Gate,
) -> Result<SubResult, String> {
    let timeout = cfg.timeout;
    let mut latency = new_histogram()?;
    if !gate.wait() {
        return Err("stopped before the start".to_string());
    }
    conn.set_read_timeout(POLL)
        .map_err(|e| describe(&e, timeout))?;
    let request = pull_request(cfg.fetch, timeout);
    let mut got = 0u64;
    let (mut first, mut last) = (None, None);
    // Pull: messages still to come for the request outstanding (0: none outstanding).
    let mut outstanding = 0u64;
    let mut acks = 0u64;
    // Double acks out: (token, when written).
    let mut timed: Vec<(u64, Instant)> = Vec::new();
    let mut last_ack_reply = Vec::new();
    let mut progress = (0u64, Instant::now());
    let ack_prefix = cfg.ack_prefix.as_bytes();
    loop {
        if cfg.mode == Mode::Pull && outstanding == 0 && !shared.done.load(Ordering::Acquire) {
            client::pub_frame(
                &cfg.next_subject,
                Some(cfg.pull_inbox.as_bytes()),
                request.as_bytes(),
                &mut conn.w.out,
            );
            outstanding = cfg.fetch;
        }
        let frame = match conn.r.next_frame(&mut conn.w) {
            Ok(f) => f,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if shared.done.load(Ordering::Acquire) {
                    break;
                }
                let total = shared.received.load(Ordering::Relaxed);
                if total != progress.0 {
                    progress = (total, Instant::now());
                } else if progress.1.elapsed() > timeout {
                    return Err(format!(
                        "no message for {} s ({total} of {} received by all subscribers)",
                        timeout.as_secs_f64(),
                        shared.target
                    ));
                }
                continue;
            }
            Err(e) => return Err(describe(&e, timeout)),
        };
        let (reply, headers, payload) = match frame {
            Frame::Msg {
                subject,
                reply,
                headers,
                payload,
            } => {
                if let Some(token) = subject.strip_prefix(ack_prefix) {
                    // A double ack's answer.
                    let now = Instant::now();
                    let token = std::str::from_utf8(token)
                        .ok()
                        .and_then(|t| t.parse::<u64>().ok());
                    if let Some(i) = timed.iter().position(|(t, _)| Some(*t) == token) {
                        let (_, at) = timed.swap_remove(i);
                        let us = now.duration_since(at).as_micros().max(1) as u64;
                        let _ = latency.record(us);
                    }
                    last_ack_reply.clear();
                    last_ack_reply.extend_from_slice(payload);
                    continue;
                }
                (reply.map(<[u8]>::to_vec), headers, payload)
            }
            Frame::Err(msg) => {
                return Err(format!(
                    "server error: -ERR {}",
                    String::from_utf8_lossy(msg).trim()
                ))
            }
            Frame::Pong | Frame::Ok | Frame::Info(_) => continue,
        };
        if let Some(code) = status_code(headers, payload) {
            match code {
                // Idle heartbeat or flow control (not asked for): answer flow control.
                100 => {
                    if let Some(r) = reply {
                        client::pub_frame(
                            std::str::from_utf8(&r).unwrap_or(""),
                            None,
                            b"",
                            &mut conn.w.out,
                        );
                    }
                }
                // The pull request is over (no messages, expired, or too many waiting).
                404 | 408 | 409 => outstanding = 0,
                _ => {
                    return Err(format!(
                        "status message: {}",
                        String::from_utf8_lossy(headers).trim()
                    ))
                }
            }
            continue;
        }
        // A delivery.
        let now = Instant::now();
        if payload.len() != cfg.size {
            return Err(format!(
                "a delivery of {} bytes, expected {}",
                payload.len(),
                cfg.size
            ));
        }
        got += 1;
        first.get_or_insert(now);
        last = Some(now);
        let total = shared.received.fetch_add(1, Ordering::AcqRel) + 1;
        let finished = total >= shared.target;
        outstanding = outstanding.saturating_sub(1);
        let Some(reply) = reply else {
            if cfg.ack != AckPolicy::None {
                return Err("a delivery without an ack subject".to_string());
            }
            if finished {
                shared.done.store(true, Ordering::Release);
            }
            continue;
        };
        let ack_now = match cfg.ack {
            AckPolicy::Explicit => true,
            AckPolicy::All => {
                finished
                    || match cfg.mode {
                        Mode::Pull => outstanding == 0,
                        Mode::Push => got % cfg.fetch == 0,
                    }
            }
            AckPolicy::None => false,
        };
        if ack_now {
            let subject = std::str::from_utf8(&reply).map_err(|_| "a non-UTF-8 ack subject")?;
            if acks % cfg.ack_sample == 0 {
                let mut r = cfg.ack_prefix.clone();
                r.push_str(itoa::Buffer::new().format(acks));
                client::pub_frame(subject, Some(r.as_bytes()), b"+ACK", &mut conn.w.out);
                conn.w.flush().map_err(|e| describe(&e, timeout))?;
                timed.push((acks, Instant::now()));
            } else {
                client::pub_frame(subject, None, b"+ACK", &mut conn.w.out);
            }
            acks += 1;
        }
        if conn.w.out.len() >= 32 * 1024 {
            conn.w.flush().map_err(|e| describe(&e, timeout))?;
        }
        if finished {
            shared.done.store(true, Ordering::Release);
        }
    }
    // Everything written and read by the server: the acks are recorded (nats-server and beaver
    // process a connection's input in order). Double acks still out are waited for here.
    conn.set_read_timeout(timeout)
        .map_err(|e| describe(&e, timeout))?;
    conn.flush_pong().map_err(|e| describe(&e, timeout))?;
    let sample = first.map(|f| Sample::new(got, cfg.size, f, last.unwrap_or(f), got));
    Ok(SubResult { sample, latency })
}

/// Fills the stream, creates the consumer, runs the subscribers.
pub fn run(cfg: &ConsumeConfig<'_>) -> Result<ConsumeOutcome, String> {
    if cfg.fetch == 0 || cfg.ack_sample == 0 || cfg.consumers == 0 {
        return Err("--fetch, --acksample and -ns must be at least 1".to_string());
    }
    let fill = js::run(&JsConfig {
        server: cfg.server,
        subject: cfg.subject,
        stream: cfg.stream,
        storage: cfg.storage,
        msgs: cfg.msgs,
        size: cfg.size,
        publishers: cfg.fill_publishers,
        pace: cfg.fill_pace,
        timeout: cfg.timeout,
    })
    .map_err(|e| format!("filling the stream: {e}"))?;

    let id = run_id();
    let deliver = format!("_BENCH.deliver.{id}");
    let group = "benchq";
    let shared = Arc::new(Shared {
        received: AtomicU64::new(0),
        done: AtomicBool::new(false),
        target: cfg.msgs,
    });
    let gate = Arc::new(Gate::default());
    let (tx, rx) = mpsc::channel::<(usize, Result<SubResult, String>)>();
    let mut threads = Vec::new();
    let mut sockets = Vec::new();
    let mut setup = || -> Result<(), String> {
        for i in 0..cfg.consumers {
            let inbox = format!("_INBOX.{}.", run_id());
            let mut conn = Conn::connect_opts(cfg.server, cfg.timeout, READ_BUF, true)
                .map_err(|e| format!("subscriber {}: {e}", i + 1))?;
            conn.subscribe(&format!("{inbox}*"), None, 1)
                .map_err(|e| format!("subscriber {}: {}", i + 1, describe(&e, cfg.timeout)))?;
            if cfg.mode == Mode::Push {
                conn.subscribe(&deliver, Some(group), 2)
                    .map_err(|e| format!("subscriber {}: {}", i + 1, describe(&e, cfg.timeout)))?;
            }
            sockets.push(conn.shutdown_handle().map_err(|e| e.to_string())?);
            let sub = SubConfig {
                mode: cfg.mode,
                ack: cfg.ack,
                fetch: cfg.fetch,
                ack_sample: cfg.ack_sample,
                size: cfg.size,
                next_subject: format!("$JS.API.CONSUMER.MSG.NEXT.{}.{}", cfg.stream, cfg.durable),
                pull_inbox: format!("{inbox}p"),
                ack_prefix: format!("{inbox}a"),
                timeout: cfg.timeout,
            };
            let (shared, gate, tx) = (shared.clone(), gate.clone(), tx.clone());
            let t = thread::Builder::new()
                .name(format!("bench-consume-{i}"))
                .stack_size(256 * 1024)
                .spawn(move || {
                    let res = consume(&mut conn, &sub, &shared, &gate);
                    if res.is_err() {
                        shared.done.store(true, Ordering::Release);
                    }
                    conn.close();
                    let _ = tx.send((i, res));
                })
                .map_err(|e| format!("cannot start a thread: {e}"))?;
            threads.push(t);
        }
        Ok(())
    };
    let set_up = setup();
    drop(tx);

    // The consumer, once the push subscribers are there (they get its first messages).
    let mut admin = None;
    let created = set_up.and_then(|()| {
        let inbox = format!("_INBOX.{}.", run_id());
        let mut conn = Conn::connect_opts(cfg.server, cfg.timeout, 64 * 1024, true)?;
        conn.subscribe(&format!("{inbox}*"), None, 1)
            .map_err(|e| describe(&e, cfg.timeout))?;
        let body = consumer_config(
            cfg,
            (cfg.mode == Mode::Push).then_some((deliver.as_str(), group)),
        );
        // Push subscribers start first: the consumer delivers as soon as it exists. Pull
        // subscribers start after: a pull request for a consumer not there yet is lost.
        if cfg.mode == Mode::Push {
            gate.open(true);
        }
        let reply = js::request(
            &mut conn,
            &inbox,
            &format!(
                "$JS.API.CONSUMER.DURABLE.CREATE.{}.{}",
                cfg.stream, cfg.durable
            ),
            body.as_bytes(),
        )?;
        if let Some(err) = api_error(&reply) {
            return Err(format!("creating consumer {}: {err}", cfg.durable));
        }
        gate.open(true);
        admin = Some((conn, inbox));
        Ok(())
    });
    if let Err(e) = created {
        gate.open(false);
        shared.done.store(true, Ordering::Release);
        for s in &sockets {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        for t in threads {
            let _ = t.join();
        }
        return Err(e);
    }

    let mut samples = Vec::new();
    let mut ack_latency = new_histogram()?;
    let mut errors = Vec::new();
    for (i, res) in rx.iter() {
        match res {
            Ok(r) => {
                samples.extend(r.sample);
                let _ = ack_latency.add(&r.latency);
            }
            Err(e) => errors.push(format!("subscriber {}: {e}", i + 1)),
        }
    }
    for t in threads {
        if t.join().is_err() {
            errors.push("a subscriber thread panicked".to_string());
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    let received = shared.received.load(Ordering::Acquire);
    if received != cfg.msgs {
        return Err(format!(
            "the subscribers received {received} messages, not {}",
            cfg.msgs
        ));
    }
    // The consumer's state: all acknowledged? (Acks may be applied a little after they are
    // read: look again for up to a second.)
    let mut after = None;
    if let Some((mut conn, inbox)) = admin {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            after = consumer_info(&mut conn, &inbox, cfg);
            let settled = after.as_ref().is_none_or(|a| {
                cfg.ack == AckPolicy::None || a.num_ack_pending == 0 && a.ack_floor >= cfg.msgs
            });
            if settled || Instant::now() > deadline {
                break;
            }
            thread::sleep(Duration::from_millis(50));
        }
        conn.close();
    }
    Ok(ConsumeOutcome {
        fill,
        samples,
        ack_latency,
        after,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_statuses() {
        assert_eq!(
            pull_request(100, Duration::from_secs(5)),
            r#"{"batch":100,"expires":5000000000}"#
        );
        assert_eq!(
            status_code(b"NATS/1.0 404 No Messages\r\n\r\n", b""),
            Some(404)
        );
        assert_eq!(
            status_code(
                b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 2\r\n\r\n",
                b""
            ),
            Some(408)
        );
        assert_eq!(
            status_code(b"NATS/1.0 100 Idle Heartbeat\r\n\r\n", b""),
            Some(100)
        );
        assert_eq!(status_code(b"NATS/1.0\r\nA: b\r\n\r\n", b""), None);
        assert_eq!(status_code(b"", b""), None);
        assert_eq!(status_code(b"NATS/1.0 404 x\r\n\r\n", b"body"), None);
        let server = Server::parse("127.0.0.1:1").unwrap();
        let mut cfg = ConsumeConfig {
            server: &server,
            subject: "bench",
            stream: "S",
            storage: "file",
            durable: "D",
            msgs: 1,
            size: 1,
            consumers: 1,
            mode: Mode::Pull,
            fetch: 100,
            ack: AckPolicy::Explicit,
            ack_sample: 100,
            max_ack_pending: 1000,
            fill_publishers: 1,
            fill_pace: JsPace {
                max_pending: 1000,
                batch: false,
            },
            timeout: Duration::from_secs(1),
        };
        let v: serde_json::Value = serde_json::from_str(&consumer_config(&cfg, None)).unwrap();
        assert_eq!(v["stream_name"], "S");
        assert_eq!(v["config"]["durable_name"], "D");
        assert_eq!(v["config"]["ack_policy"], "explicit");
        assert_eq!(v["config"]["max_ack_pending"], 1000);
        assert!(v["config"].get("deliver_subject").is_none());
        cfg.ack = AckPolicy::None;
        let v: serde_json::Value =
            serde_json::from_str(&consumer_config(&cfg, Some(("d.x", "g")))).unwrap();
        assert_eq!(v["config"]["deliver_subject"], "d.x");
        assert_eq!(v["config"]["deliver_group"], "g");
        assert!(v["config"].get("max_ack_pending").is_none());
        assert!(AckPolicy::parse("sometimes").is_err());
    }
}
