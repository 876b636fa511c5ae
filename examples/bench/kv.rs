//! The key-value mode (`--kv put|get`): put and get rates on a KV bucket, as nats.go's
//! `kv.Put` and `kv.Get` do them on the wire.
//!
//! The bucket's stream, `KV_<bucket>`, is deleted and created again with what nats.go's
//! `CreateKeyValue` asks for (`"subjects":["$KV.<bucket>.>"]`, `max_msgs_per_subject: 1`,
//! `allow_direct`, `allow_rollup_hdrs`, `deny_delete`, `discard: new`, and `--storage`).
//! Then `-np` clients, each on its own connection and OS thread, make `-n` requests in all
//! over `--keys` keys (`k0`, `k1`, ...; request `i` uses key `i % keys`):
//!
//! - `put`: `PUB $KV.<bucket>.<key> <inbox> <-ms bytes>`, answered by a PubAck;
//! - `get`: first every key is put once (not measured), then `PUB
//!   $JS.API.DIRECT.GET.KV_<bucket>.$KV.<bucket>.<key> <inbox> 0`, answered by the stored
//!   message (an `HMSG` with `Nats-Stream`, `Nats-Subject`, `Nats-Sequence` headers).
//!
//! With `--sync` each client waits for every answer before the next request (what `kv.Put`
//! and `kv.Get` do); otherwise at most `--maxacks` requests are out per client. Every request's
//! round trip goes into an HDR histogram. An error answer fails the run.

use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::client::{self, describe, is_pub_ack, Conn, Frame, Server};
use crate::consume::status_code;
use crate::js::{self, api_error};
use crate::report::{msgs_per_client, run_id, Sample};
use crate::reqrep::new_histogram;
use crate::Gate;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Put,
    Get,
}

impl Op {
    pub fn parse(s: &str) -> Result<Op, String> {
        match s {
            "put" => Ok(Op::Put),
            "get" => Ok(Op::Get),
            _ => Err(format!("--kv {s}: put or get")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::Get => "get",
        }
    }
}

pub struct KvConfig<'a> {
    pub server: &'a Server,
    pub bucket: &'a str,
    pub storage: &'a str,
    pub op: Op,
    pub keys: u64,
    pub requests: u64,
    pub size: usize,
    pub clients: usize,
    /// Requests out at once per client (1: synchronous).
    pub window: u64,
    pub timeout: Duration,
}

pub struct KvOutcome {
    /// Per client, in the order they finished.
    pub samples: Vec<Sample>,
    pub latency: Histogram<u64>,
}

/// The bucket's stream config, as nats.go's `CreateKeyValue` sends it (the parts that matter).
pub fn bucket_config(bucket: &str, storage: &str) -> String {
    serde_json::json!({
        "name": format!("KV_{bucket}"),
        "subjects": [format!("$KV.{bucket}.>")],
        "storage": storage,
        "max_msgs_per_subject": 1,
        "allow_direct": true,
        "allow_rollup_hdrs": true,
        "deny_delete": true,
        "discard": "new",
    })
    .to_string()
}

fn recreate_bucket(cfg: &KvConfig<'_>) -> Result<(), String> {
    let mut conn = Conn::connect_opts(cfg.server, cfg.timeout, 64 * 1024, true)?;
    let inbox = format!("_INBOX.{}.", run_id());
    conn.subscribe(&format!("{inbox}*"), None, 1)
        .map_err(|e| describe(&e, cfg.timeout))?;
    let stream = format!("KV_{}", cfg.bucket);
    let deleted = js::request(
        &mut conn,
        &inbox,
        &format!("$JS.API.STREAM.DELETE.{stream}"),
        b"",
    )
    .map_err(|e| format!("deleting stream {stream}: {e} (is JetStream enabled?)"))?;
    if let Some(err) = api_error(&deleted) {
        if !err.contains("10059") {
            return Err(format!("deleting stream {stream}: {err}"));
        }
    }
    let created = js::request(
        &mut conn,
        &inbox,
        &format!("$JS.API.STREAM.CREATE.{stream}"),
        bucket_config(cfg.bucket, cfg.storage).as_bytes(),
    )?;
    if let Some(err) = api_error(&created) {
        return Err(format!("creating stream {stream}: {err}"));
    }
    conn.close();
    Ok(())
}

/// `count` requests numbered from `first`, at most `window` out; each round trip recorded.
/// Returns the instants of the first request and the last answer.
#[allow(clippy::too_many_arguments)]
fn requests(
    conn: &mut Conn,
    op: Op,
    bucket: &str,
    inbox: &str,
    keys: u64,
    first: u64,
    count: u64,
    size: usize,
    window: u64,
    hist: &mut Histogram<u64>,
) -> Result<(Instant, Instant), String> {
    let timeout = conn.timeout();
    let payload = vec![0u8; if op == Op::Put { size } else { 0 }];
    let window = window.max(1);
    let mut sent_at = vec![Instant::now(); window as usize];
    let (mut sent, mut done) = (0u64, 0u64);
    let mut subject = String::new();
    let mut reply = String::new();
    let start = Instant::now();
    let mut itoa = itoa::Buffer::new();
    while done < count {
        while sent < count && sent - done < window {
            let i = first + sent;
            subject.clear();
            match op {
                Op::Put => subject.push_str(&format!("$KV.{bucket}.k")),
                Op::Get => {
                    subject.push_str(&format!("$JS.API.DIRECT.GET.KV_{bucket}.$KV.{bucket}.k"))
                }
            }
            subject.push_str(itoa.format(i % keys));
            reply.clear();
            reply.push_str(inbox);
            reply.push_str(itoa.format(sent));
            client::pub_frame(&subject, Some(reply.as_bytes()), &payload, &mut conn.w.out);
            sent_at[(sent % window) as usize] = Instant::now();
            sent += 1;
            if conn.w.out.len() >= 32 * 1024 {
                conn.w.flush().map_err(|e| describe(&e, timeout))?;
            }
        }
        // next_frame writes what is buffered before it blocks.
        let frame = conn
            .r
            .next_frame(&mut conn.w)
            .map_err(|e| describe(&e, timeout))?;
        let (subj, headers, body) = match frame {
            Frame::Msg {
                subject,
                headers,
                payload,
                ..
            } => (subject, headers, payload),
            Frame::Err(msg) => {
                return Err(format!(
                    "server error: -ERR {}",
                    String::from_utf8_lossy(msg).trim()
                ))
            }
            _ => continue,
        };
        let now = Instant::now();
        let Some(n) = subj
            .strip_prefix(inbox.as_bytes())
            .and_then(|t| std::str::from_utf8(t).ok())
            .and_then(|t| t.parse::<u64>().ok())
            .filter(|&n| n < sent && n + window >= sent)
        else {
            return Err(format!(
                "an answer on {} that no request asked for",
                String::from_utf8_lossy(subj)
            ));
        };
        let ok = match op {
            Op::Put => is_pub_ack(body),
            Op::Get => status_code(headers, body).is_none() && body.len() == size,
        };
        if !ok {
            return Err(format!(
                "{} k{}: error answer: {}{}",
                op.name(),
                (first + n) % keys,
                String::from_utf8_lossy(headers).trim(),
                String::from_utf8_lossy(body)
            ));
        }
        let us = now
            .duration_since(sent_at[(n % window) as usize])
            .as_micros()
            .max(1) as u64;
        let _ = hist.record(us);
        done += 1;
    }
    Ok((start, Instant::now()))
}

/// Runs the KV clients; their samples (job = requests) and the merged latency histogram.
pub fn run(cfg: &KvConfig<'_>) -> Result<KvOutcome, String> {
    if cfg.keys == 0 || cfg.clients == 0 {
        return Err("--keys and -np must be at least 1".to_string());
    }
    recreate_bucket(cfg)?;
    if cfg.op == Op::Get {
        // Every key once, so every get finds its key.
        let mut conn = Conn::connect_opts(cfg.server, cfg.timeout, 256 * 1024, true)?;
        let inbox = format!("_INBOX.{}.", run_id());
        conn.subscribe(&format!("{inbox}*"), None, 1)
            .map_err(|e| describe(&e, cfg.timeout))?;
        let mut h = new_histogram()?;
        requests(
            &mut conn,
            Op::Put,
            cfg.bucket,
            &inbox,
            cfg.keys,
            0,
            cfg.keys,
            cfg.size,
            1000,
            &mut h,
        )
        .map_err(|e| format!("putting the keys: {e}"))?;
        conn.close();
    }
    let gate = Arc::new(Gate::default());
    let (tx, rx) = mpsc::channel::<(usize, Result<(Sample, Histogram<u64>), String>)>();
    let mut threads = Vec::new();
    let mut setup_err = None;
    let mut first = 0u64;
    for (i, count) in msgs_per_client(cfg.requests, cfg.clients)
        .into_iter()
        .enumerate()
    {
        let inbox = format!("_INBOX.{}.", run_id());
        let conn =
            Conn::connect_opts(cfg.server, cfg.timeout, 256 * 1024, true).and_then(|mut c| {
                c.subscribe(&format!("{inbox}*"), None, 1)
                    .map_err(|e| describe(&e, cfg.timeout))?;
                Ok(c)
            });
        let mut conn = match conn {
            Ok(c) => c,
            Err(e) => {
                setup_err = Some(format!("client {}: {e}", i + 1));
                break;
            }
        };
        let (op, bucket, keys, size, window) = (
            cfg.op,
            cfg.bucket.to_string(),
            cfg.keys,
            cfg.size,
            cfg.window,
        );
        let (gate, tx) = (gate.clone(), tx.clone());
        let from = first;
        first += count;
        let spawned = thread::Builder::new()
            .name(format!("bench-kv-{i}"))
            .stack_size(256 * 1024)
            .spawn(move || {
                if !gate.wait() {
                    return;
                }
                let res = new_histogram().and_then(|mut h| {
                    let (start, end) = requests(
                        &mut conn, op, &bucket, &inbox, keys, from, count, size, window, &mut h,
                    )?;
                    Ok((Sample::new(count, size, start, end, count), h))
                });
                conn.close();
                let _ = tx.send((i, res));
            });
        match spawned {
            Ok(t) => threads.push(t),
            Err(e) => {
                setup_err = Some(format!("cannot start a thread: {e}"));
                break;
            }
        }
    }
    drop(tx);
    gate.open(setup_err.is_none());
    let mut samples = Vec::new();
    let mut latency = new_histogram()?;
    let mut errors = Vec::new();
    for (i, res) in rx.iter() {
        match res {
            Ok((s, h)) => {
                samples.push(s);
                let _ = latency.add(&h);
            }
            Err(e) => errors.push(format!("client {}: {e}", i + 1)),
        }
    }
    for t in threads {
        if t.join().is_err() {
            errors.push("a client thread panicked".to_string());
        }
    }
    if let Some(e) = setup_err {
        return Err(e);
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    Ok(KvOutcome { samples, latency })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_stream() {
        let v: serde_json::Value = serde_json::from_str(&bucket_config("b", "file")).unwrap();
        assert_eq!(v["name"], "KV_b");
        assert_eq!(v["subjects"][0], "$KV.b.>");
        assert_eq!(v["max_msgs_per_subject"], 1);
        assert_eq!(v["allow_direct"], true);
        assert_eq!(v["discard"], "new");
        assert_eq!(Op::parse("get").unwrap(), Op::Get);
        assert!(Op::parse("del").is_err());
    }
}
