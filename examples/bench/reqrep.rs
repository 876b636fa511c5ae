//! The request/reply latency mode (`--reqrep`), which Go's nats-bench does not have.
//!
//! One responder connection subscribes to the subject in queue group `q` and answers every
//! request with the same payload. Each of the `-np` requester connections subscribes to its own
//! `_INBOX.<id>.*` and does its share of the requests one after the other: `PUB subject
//! _INBOX.<id>.<n> size`, then it waits for the reply on `_INBOX.<id>.<n>`. Every round trip is
//! recorded in an HDR histogram (microseconds, 3 significant digits). `--warmup` requests (split
//! the same way) run first and are not recorded; all requesters then start measuring together.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::client::{describe, pub_frame, Conn, Frame, Server, READ_BUF};
use crate::report::{comma_format, msgs_per_client, run_id, Sample, SampleGroup};
use crate::Gate;

/// What the request/reply run measured.
pub struct ReqRepOutcome {
    /// Per requester, in the order they finished: its sample (job = requests) and histogram.
    pub requesters: Vec<(Sample, Histogram<u64>)>,
    pub group: SampleGroup,
    pub latency: Histogram<u64>,
}

pub struct ReqRepConfig<'a> {
    pub server: &'a Server,
    pub subject: &'a str,
    pub requests: u64,
    pub size: usize,
    pub requesters: usize,
    pub warmup: u64,
    pub timeout: Duration,
}

pub fn new_histogram() -> Result<Histogram<u64>, String> {
    // 1 us to 1 hour, 3 significant digits.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).map_err(|e| format!("histogram: {e}"))
}

pub fn percentiles(h: &Histogram<u64>) -> String {
    format!(
        "p50 {} us | p90 {} us | p99 {} us | p99.9 {} us | max {} us",
        h.value_at_quantile(0.50),
        h.value_at_quantile(0.90),
        h.value_at_quantile(0.99),
        h.value_at_quantile(0.999),
        h.max()
    )
}

impl ReqRepOutcome {
    /// `Request/reply stats: 9,123 requests/sec ~ p50 98 us | ... | max 1200 us`, then one
    /// line per requester and their spread when there is more than one (as nats-bench does
    /// for publishers).
    pub fn report(&self) -> String {
        let Some(agg) = self.group.agg else {
            return "No requesters. Nothing to report.".to_string();
        };
        let mut out = format!(
            "Request/reply stats: {} requests/sec ~ {}\n",
            comma_format(agg.rate()),
            percentiles(&self.latency)
        );
        if self.requesters.len() > 1 {
            for (i, (s, h)) in self.requesters.iter().enumerate() {
                out.push_str(&format!(
                    " [{}] {} requests/sec ~ {} ({} requests)\n",
                    i + 1,
                    comma_format(s.rate()),
                    percentiles(h),
                    s.job_msg_cnt
                ));
            }
            out.push_str(&format!(" {}\n", self.group.statistics_of("requests")));
        }
        out
    }

    pub fn requests_per_sec(&self) -> Option<f64> {
        self.group.agg.map(|a| a.rate_f64())
    }
}

/// Answers every request with its own payload until `stop` is set and the socket shut down.
fn respond(mut conn: Conn, stop: &AtomicBool) -> Result<u64, String> {
    let timeout = conn.timeout();
    let mut served = 0u64;
    let mut itoa = itoa::Buffer::new();
    loop {
        let frame = match conn.r.next_frame(&mut conn.w) {
            Ok(f) => f,
            Err(_) if stop.load(Ordering::Acquire) => return Ok(served),
            // Idle (between runs, or a slow requester): keep waiting, stop is checked above.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => return Err(format!("responder: {}", describe(&e, timeout))),
        };
        match frame {
            Frame::Msg {
                reply: Some(reply),
                payload,
                ..
            } => {
                let out = &mut conn.w.out;
                out.extend_from_slice(b"PUB ");
                out.extend_from_slice(reply);
                out.push(b' ');
                out.extend_from_slice(itoa.format(payload.len()).as_bytes());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(payload);
                out.extend_from_slice(b"\r\n");
                served += 1;
                // Replies are written when no more requests are buffered (next_frame flushes
                // before it blocks), or when a lot has piled up.
                if conn.w.out.len() >= 64 * 1024 {
                    if let Err(e) = conn.w.flush() {
                        if stop.load(Ordering::Acquire) {
                            return Ok(served);
                        }
                        return Err(format!("responder: {}", describe(&e, timeout)));
                    }
                }
            }
            Frame::Err(msg) => {
                return Err(format!(
                    "responder: server error: -ERR {}",
                    String::from_utf8_lossy(msg).trim()
                ))
            }
            Frame::Msg { reply: None, .. } | Frame::Pong | Frame::Ok | Frame::Info(_) => {}
        }
    }
}

struct RequesterJob {
    conn: Conn,
    subject: String,
    inbox: String,
    size: usize,
    warmup: u64,
    count: u64,
}

/// Warm-up requests, then "ready", then waits for the gate, then the measured requests.
fn request(
    job: RequesterJob,
    ready: &mpsc::Sender<Result<(), String>>,
    gate: &Gate,
) -> Result<(Sample, Histogram<u64>), String> {
    let RequesterJob {
        mut conn,
        subject,
        inbox,
        size,
        warmup,
        count,
    } = job;
    let timeout = conn.timeout();
    let payload = vec![0u8; size];
    let mut hist = new_histogram()?;
    let mut reply = Vec::with_capacity(inbox.len() + 20);
    let mut itoa = itoa::Buffer::new();
    let mut start = Instant::now();
    let mut end = start;
    let fail = |e: std::io::Error, i: u64| {
        format!(
            "after {} of {} requests: {}",
            i.saturating_sub(warmup),
            count,
            describe(&e, timeout)
        )
    };
    for i in 0..warmup + count {
        if i == warmup {
            let _ = ready.send(Ok(()));
            if !gate.wait() {
                return Err("stopped".to_string());
            }
            start = Instant::now();
        }
        reply.clear();
        reply.extend_from_slice(inbox.as_bytes());
        reply.extend_from_slice(itoa.format(i).as_bytes());
        pub_frame(&subject, Some(&reply), &payload, &mut conn.w.out);
        let t0 = Instant::now();
        conn.w.flush().map_err(|e| fail(e, i))?;
        loop {
            match conn.r.next_frame(&mut conn.w).map_err(|e| fail(e, i))? {
                Frame::Msg { subject, .. } if subject == &reply[..] => break,
                Frame::Err(msg) => {
                    return Err(format!(
                        "server error: -ERR {}",
                        String::from_utf8_lossy(msg).trim()
                    ))
                }
                // A late reply to an earlier request, PONG, INFO, +OK: not ours.
                _ => {}
            }
        }
        let t1 = Instant::now();
        if i >= warmup {
            let us = u64::try_from((t1 - t0).as_micros()).unwrap_or(u64::MAX);
            hist.saturating_record(us);
            end = t1;
        }
    }
    if count == 0 {
        let _ = ready.send(Ok(()));
        if !gate.wait() {
            return Err("stopped".to_string());
        }
        start = Instant::now();
        end = start;
    }
    conn.close();
    Ok((Sample::new(count, size, start, end, count), hist))
}

/// Runs the request/reply benchmark.
pub fn run(cfg: &ReqRepConfig<'_>) -> Result<ReqRepOutcome, String> {
    let stop = Arc::new(AtomicBool::new(false));

    let mut responder = Conn::connect(cfg.server, cfg.timeout, READ_BUF)?;
    if let Some(max) = responder.info.max_payload {
        if cfg.size as u64 > max {
            return Err(format!(
                "message size {} is larger than the server's max_payload {max}",
                cfg.size
            ));
        }
    }
    responder
        .subscribe(cfg.subject, Some("q"), 1)
        .map_err(|e| format!("responder: {}", describe(&e, cfg.timeout)))?;
    let responder_handle = responder
        .shutdown_handle()
        .map_err(|e| format!("responder: {e}"))?;
    let responder_thread = {
        let stop = stop.clone();
        thread::Builder::new()
            .name("bench-responder".into())
            .spawn(move || respond(responder, &stop))
            .map_err(|e| format!("cannot start the responder thread: {e}"))?
    };
    let stop_responder = |stop: &AtomicBool| {
        stop.store(true, Ordering::Release);
        let _ = responder_handle.shutdown(std::net::Shutdown::Both);
    };

    let gate = Arc::new(Gate::default());
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
    let (done_tx, done_rx) = mpsc::channel::<(usize, Result<(Sample, Histogram<u64>), String>)>();
    let counts = msgs_per_client(cfg.requests, cfg.requesters);
    let warmups = msgs_per_client(cfg.warmup, cfg.requesters);
    let mut threads = Vec::new();
    let mut setup_err = None;
    for i in 0..cfg.requesters {
        let id = run_id();
        let inbox = format!("_INBOX.{id}.");
        let conn = Conn::connect(cfg.server, cfg.timeout, READ_BUF).and_then(|mut c| {
            c.subscribe(&format!("{inbox}*"), None, 1)
                .map_err(|e| describe(&e, cfg.timeout))?;
            Ok(c)
        });
        let conn = match conn {
            Ok(c) => c,
            Err(e) => {
                setup_err = Some(format!("requester {}: {e}", i + 1));
                break;
            }
        };
        let job = RequesterJob {
            conn,
            subject: cfg.subject.to_string(),
            inbox,
            size: cfg.size,
            warmup: warmups.get(i).copied().unwrap_or(0),
            count: counts.get(i).copied().unwrap_or(0),
        };
        let (ready, done, gate) = (ready_tx.clone(), done_tx.clone(), gate.clone());
        let spawned = thread::Builder::new()
            .name(format!("bench-req-{i}"))
            .stack_size(256 * 1024)
            .spawn(move || {
                let res = request(job, &ready, &gate);
                if let Err(e) = &res {
                    // Unblocks the main thread if it fails before it is ready.
                    let _ = ready.send(Err(e.clone()));
                }
                let _ = done.send((i, res));
            });
        match spawned {
            Ok(t) => threads.push(t),
            Err(e) => {
                setup_err = Some(format!("cannot start a requester thread: {e}"));
                break;
            }
        }
    }
    drop(ready_tx);
    drop(done_tx);

    // Wait until every requester has warmed up, then start them together.
    let mut ready = 0;
    while setup_err.is_none() && ready < threads.len() {
        match ready_rx.recv() {
            Ok(Ok(())) => ready += 1,
            Ok(Err(e)) => setup_err = Some(format!("a requester failed while warming up: {e}")),
            Err(_) => setup_err = Some("the requesters stopped".to_string()),
        }
    }
    gate.open(setup_err.is_none());

    let mut requesters = Vec::new();
    let mut errors = Vec::new();
    for (i, res) in done_rx.iter() {
        match res {
            Ok(r) => requesters.push(r),
            Err(e) => errors.push(format!("requester {}: {e}", i + 1)),
        }
    }
    for t in threads {
        if t.join().is_err() {
            errors.push("a requester thread panicked".to_string());
        }
    }
    stop_responder(&stop);
    match responder_thread.join() {
        Ok(Ok(_served)) => {}
        Ok(Err(e)) => errors.push(e),
        Err(_) => errors.push("the responder thread panicked".to_string()),
    }
    if let Some(e) = setup_err {
        return Err(e);
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }

    let mut latency = new_histogram()?;
    let mut group = SampleGroup::default();
    for (s, h) in &requesters {
        latency
            .add(h)
            .map_err(|e| format!("merging histograms: {e}"))?;
        group.add(*s);
    }
    Ok(ReqRepOutcome {
        requesters,
        group,
        latency,
    })
}
