//! The JetStream publish mode (`--js`), as `nats bench --js` measures it: publishers whose
//! every message is stored by a stream and acknowledged by a PubAck.
//!
//! Before publishing, one connection deletes the stream (`$JS.API.STREAM.DELETE.<name>`; "not
//! found" is fine) and creates it again (`$JS.API.STREAM.CREATE.<name>` with the subject and
//! the storage), so every run starts from an empty stream. Then each of the `-np` publishers,
//! on its own connection and OS thread, subscribes to its own inbox `_INBOX.<id>.*` and
//! publishes its share with a reply subject `_INBOX.<id>.<token>` per message (as nats.go's
//! `PublishAsync` does), counting the PubAcks ([`client::publish_js`]):
//!
//! - asynchronous (the default): at most `--maxacks` publishes without their PubAck, the
//!   window sliding as acks come back (nats.go's `PublishAsyncMaxPending`); or, with
//!   `--pubbatch`, `--maxacks` publishes then a wait for all of their acks (what `nats bench
//!   --js` does with its `--pubbatch`, 100 by default);
//! - `--sync`: one publish, its PubAck, the next (nats.go's `js.Publish`).
//!
//! A publisher's sample spans from its first publish to its last PubAck. An error reply
//! (`{"error":...}`) fails the run.

use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use crate::client::{self, describe, Conn, Frame, JsPace, Server};
use crate::report::{msgs_per_client, run_id, Sample};
use crate::Gate;

pub struct JsConfig<'a> {
    pub server: &'a Server,
    pub subject: &'a str,
    pub stream: &'a str,
    /// `file` or `memory`.
    pub storage: &'a str,
    pub msgs: u64,
    pub size: usize,
    pub publishers: usize,
    pub pace: JsPace,
    pub timeout: Duration,
}

/// One request on `conn` (subscribed to `<inbox>*`), and its reply's payload.
pub fn request(
    conn: &mut Conn,
    inbox: &str,
    subject: &str,
    body: &[u8],
) -> Result<Vec<u8>, String> {
    let timeout = conn.timeout();
    let reply = format!("{inbox}api");
    client::pub_frame(subject, Some(reply.as_bytes()), body, &mut conn.w.out);
    conn.w.flush().map_err(|e| describe(&e, timeout))?;
    loop {
        match conn
            .r
            .next_frame(&mut conn.w)
            .map_err(|e| describe(&e, timeout))?
        {
            Frame::Msg {
                subject, payload, ..
            } if subject == reply.as_bytes() => return Ok(payload.to_vec()),
            Frame::Err(msg) => {
                return Err(format!(
                    "server error: -ERR {}",
                    String::from_utf8_lossy(msg).trim()
                ))
            }
            _ => {}
        }
    }
}

/// The `error` of an API response, if it has one.
pub fn api_error(reply: &[u8]) -> Option<String> {
    let v: serde_json::Value = match serde_json::from_slice(reply) {
        Ok(v) => v,
        Err(_) => return Some(format!("not JSON: {}", String::from_utf8_lossy(reply))),
    };
    v.get("error").map(|e| e.to_string())
}

/// The stream-create request: the stream, the subject, the storage, and nothing else.
pub fn create_request(stream: &str, subject: &str, storage: &str) -> String {
    serde_json::json!({
        "name": stream,
        "subjects": [subject],
        "storage": storage,
    })
    .to_string()
}

/// Deletes the stream if it is there and creates it empty.
fn recreate_stream(cfg: &JsConfig<'_>) -> Result<(), String> {
    let mut conn = Conn::connect(cfg.server, cfg.timeout, 64 * 1024)?;
    let inbox = format!("_INBOX.{}.", run_id());
    conn.subscribe(&format!("{inbox}*"), None, 1)
        .map_err(|e| describe(&e, cfg.timeout))?;
    let deleted = request(
        &mut conn,
        &inbox,
        &format!("$JS.API.STREAM.DELETE.{}", cfg.stream),
        b"",
    )
    .map_err(|e| {
        format!(
            "deleting stream {}: {e} (is JetStream enabled?)",
            cfg.stream
        )
    })?;
    if let Some(err) = api_error(&deleted) {
        // 10059: stream not found, the usual case on a fresh server.
        if !err.contains("10059") {
            return Err(format!("deleting stream {}: {err}", cfg.stream));
        }
    }
    let created = request(
        &mut conn,
        &inbox,
        &format!("$JS.API.STREAM.CREATE.{}", cfg.stream),
        create_request(cfg.stream, cfg.subject, cfg.storage).as_bytes(),
    )
    .map_err(|e| format!("creating stream {}: {e}", cfg.stream))?;
    if let Some(err) = api_error(&created) {
        return Err(format!("creating stream {}: {err}", cfg.stream));
    }
    conn.close();
    Ok(())
}

/// Runs the JetStream publishers; their samples in the order they finished.
pub fn run(cfg: &JsConfig<'_>) -> Result<Vec<Sample>, String> {
    recreate_stream(cfg)?;
    let gate = Arc::new(Gate::default());
    let (tx, rx) = mpsc::channel::<(usize, Result<Sample, String>)>();
    let mut threads = Vec::new();
    let mut setup_err = None;
    for (i, count) in msgs_per_client(cfg.msgs, cfg.publishers)
        .into_iter()
        .enumerate()
    {
        let inbox = format!("_INBOX.{}.", run_id());
        let conn = Conn::connect(cfg.server, cfg.timeout, 256 * 1024).and_then(|mut c| {
            if let Some(max) = c.info.max_payload {
                if cfg.size as u64 > max {
                    return Err(format!(
                        "message size {} is larger than the server's max_payload {max}",
                        cfg.size
                    ));
                }
            }
            c.subscribe(&format!("{inbox}*"), None, 1)
                .map_err(|e| describe(&e, cfg.timeout))?;
            Ok(c)
        });
        let mut conn = match conn {
            Ok(c) => c,
            Err(e) => {
                setup_err = Some(format!("publisher {}: {e}", i + 1));
                break;
            }
        };
        let (subject, size, pace) = (cfg.subject.to_string(), cfg.size, cfg.pace);
        let (gate, tx) = (gate.clone(), tx.clone());
        let spawned = thread::Builder::new()
            .name(format!("bench-jspub-{i}"))
            .stack_size(256 * 1024)
            .spawn(move || {
                if !gate.wait() {
                    return;
                }
                let timeout = conn.timeout();
                let start = Instant::now();
                let res = client::publish_js(&mut conn, &subject, &inbox, size, count, pace);
                let end = Instant::now();
                conn.close();
                let done = res
                    .map(|()| Sample::new(count, size, start, end, count))
                    .map_err(|e| describe(&e, timeout));
                let _ = tx.send((i, done));
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
    let mut errors = Vec::new();
    for (i, res) in rx.iter() {
        match res {
            Ok(s) => samples.push(s),
            Err(e) => errors.push(format!("publisher {}: {e}", i + 1)),
        }
    }
    for t in threads {
        if t.join().is_err() {
            errors.push("a publisher thread panicked".to_string());
        }
    }
    if let Some(e) = setup_err {
        return Err(e);
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_requests() {
        assert_eq!(
            create_request("benchstream", "bench", "file"),
            r#"{"name":"benchstream","storage":"file","subjects":["bench"]}"#
        );
        assert_eq!(api_error(br#"{"type":"x","did_create":true}"#), None);
        let e = api_error(
            br#"{"type":"io.nats.jetstream.api.v1.stream_delete_response","error":{"code":404,"err_code":10059,"description":"stream not found"}}"#,
        )
        .unwrap();
        assert!(e.contains("10059"), "{e}");
        assert!(api_error(b"nope").is_some());
    }
}
