//! The writer's step for connections whose output is made into other bytes before the
//! socket: TLS (encrypted by the session), WebSocket (framed, see [`crate::websocket`]), or
//! both (`wss`: framed, then encrypted). Batches are consumed whole into the connection's
//! `wire` buffer (or the TLS session), so what waits for the socket is those bytes only; a
//! full socket is handled as for plain text (retry list, `write_deadline`).

use super::{sent, Drainer, Step, RETRY_MAX, WRITE_TARGET};
use crate::client::Client;
use crate::close::CloseReason;
use crate::outbound::{Batch, Output};
use crate::websocket::{close_frame_for, write_compressed, Deflater, Framer, COMPRESS_THRESHOLD};
use smallvec::SmallVec;
use std::io::{IoSlice, Write};

impl Drainer {
    /// One step of an encoded connection: write the waiting `wire` bytes; or, once they are
    /// out, gather batches and encode them into `wire`. Lock order: `Client::output` (held by
    /// the caller), then `Client::tls` (never the other way round); socket I/O is never done
    /// under the session lock.
    pub(super) fn step_encoded(&mut self, client: &Client, st: &mut Output) -> Step {
        // Encoded bytes waiting: write them first, outside the session lock.
        if st.wire_off < st.wire.len() {
            let attempted = st.wire.len() - st.wire_off;
            let result = {
                let guard = client.socket.read();
                let Some(socket) = guard.as_ref() else {
                    return Step::Again; // shut meanwhile: the next turn discards
                };
                socket.try_write_vectored(&[IoSlice::new(&st.wire[st.wire_off..])])
            };
            let pending = client.pending_bytes() + attempted;
            return match self.took(client, st, result, attempted, pending) {
                Ok(n) => {
                    st.wire_off += n;
                    if st.wire_off == st.wire.len() {
                        st.wire.clear();
                        st.wire_off = 0;
                    }
                    sent(n, attempted)
                }
                Err(step) => step,
            };
        }
        if st.wire_close_sent {
            // The close_notify or close frame is out: graceful close done.
            client.shut_socket();
            return Step::Again;
        }
        st.gather(&client.outbound, WRITE_TARGET);
        let closing = st.front().is_some_and(|b| b.is_close());
        // A WebSocket client before its upgrade is answered: the reader owns the socket's
        // writes. Nothing but a close marker or a TLS kick (an empty batch: the reader writes
        // the session's records itself until then) can be queued yet.
        let frame_limit = match client.websocket.as_ref().map(|w| w.frame_limit()) {
            None => None,
            Some(Some(limit)) => Some(limit),
            Some(None) => {
                if closing {
                    client.shut_socket();
                    return Step::Again;
                }
                st.advance(&client.outbound, 0, &self.pool); // drops the empty batches
                return if st.is_empty() {
                    Step::Idle
                } else {
                    Step::Park(RETRY_MAX)
                };
            }
        };
        let compress = client
            .websocket
            .as_ref()
            .is_some_and(|w| w.compress())
            .then_some(&mut self.deflate);
        // The close frame a graceful close ends with, unless the reader queued one already
        // (its answer to the client's close).
        let close_frame = match &client.websocket {
            Some(ws) if closing && ws.queue_close() => Some(close_frame_for(
                client.close_reason().unwrap_or(CloseReason::ServerShutdown),
            )),
            _ => None,
        };
        let mut wire = std::mem::take(&mut st.wire);
        let (plain, handshaking) = match client.tls.as_ref() {
            None => {
                // Writing into a Vec cannot fail.
                let plain = encode(st.batches(), frame_limit, compress, &mut wire);
                if let Some(frame) = &close_frame {
                    wire.extend_from_slice(frame);
                }
                (plain, false)
            }
            Some(tls) => {
                // Encrypt, under the session lock only.
                let Some(mut session) = crate::client::lock_session(tls) else {
                    st.wire = wire;
                    return Step::Again; // the connection left and released it: the next turn discards
                };
                // During the handshake the reader owns the socket's writes (and nothing but
                // a close marker can be queued yet): leave the session alone.
                let handshaking = session.is_handshaking();
                let mut plain = 0;
                if !handshaking {
                    // Cannot fail: the session's buffer is unlimited.
                    plain = encode(st.batches(), frame_limit, compress, &mut session.writer());
                    if closing {
                        if let Some(frame) = &close_frame {
                            let _ = session.writer().write_all(frame);
                        }
                        session.send_close_notify();
                    }
                    while session.wants_write() {
                        // Writing into a Vec cannot fail.
                        if session.write_tls(&mut wire).is_err() {
                            break;
                        }
                    }
                }
                (plain, handshaking)
            }
        };
        st.wire = wire;
        st.advance(&client.outbound, plain, &self.pool);
        if handshaking && !closing && !st.is_empty() {
            // Output before the handshake is done (never queued by beaver itself): try
            // again later rather than spin.
            return Step::Park(RETRY_MAX);
        }
        if closing {
            st.wire_close_sent = true;
            return Step::Again;
        }
        if st.wire.is_empty() && st.is_empty() {
            return Step::Idle;
        }
        // Encoding is work too, and compression's output can be a thousandth of its input:
        // counted by the bytes written alone, a compressed client whose socket always takes
        // its few bytes would never yield its writer to the others. So the batches encoded
        // count against the fair share as well.
        if plain > 0 {
            return Step::Wrote(plain);
        }
        Step::Again
    }
}

/// The writer's compressor and its output buffer (`permessage-deflate`), kept for their
/// allocations: one per writer thread serves every client (no context takeover).
#[derive(Default)]
pub(super) struct Deflate {
    /// `None` when no listener compresses.
    deflater: Option<Deflater>,
    scratch: Vec<u8>,
}

impl Deflate {
    /// With a compressor if `compression` (built by the caller's thread: see
    /// `WriterPool::start`).
    pub(super) fn new(compression: bool) -> Deflate {
        Deflate {
            deflater: compression.then(Deflater::new),
            scratch: Vec::new(),
        }
    }
}

/// Writes the batches before the first close marker to `out`: as they are without
/// `frame_limit`; otherwise each run of ordinary batches as binary WebSocket frames of at
/// most `frame_limit` payload bytes (with `compress`: as one compressed message, when over
/// [`COMPRESS_THRESHOLD`] bytes), and verbatim batches (control frames) as they are.
/// Returns the batch bytes consumed.
fn encode<'a>(
    batches: impl Iterator<Item = &'a Batch>,
    frame_limit: Option<usize>,
    compress: Option<&mut Deflate>,
    out: &mut impl Write,
) -> usize {
    let mut compress = compress;
    let batches: SmallVec<[&Batch; 32]> = batches.take_while(|b| !b.is_close()).collect();
    let mut plain = 0;
    let mut i = 0;
    while i < batches.len() {
        let (Some(limit), false) = (frame_limit, batches[i].is_verbatim()) else {
            for seg in batches[i].segments() {
                let _ = out.write_all(seg);
            }
            plain += batches[i].len();
            i += 1;
            continue;
        };
        let run = batches[i..].iter().take_while(|b| !b.is_verbatim()).count();
        let total: usize = batches[i..i + run].iter().map(|b| b.len()).sum();
        let deflate = compress
            .as_deref_mut()
            .filter(|_| total > COMPRESS_THRESHOLD);
        if let Some(Deflate {
            deflater: Some(deflater),
            scratch,
        }) = deflate
        {
            let segments = batches[i..i + run].iter().flat_map(|b| b.segments());
            deflater.deflate(segments, scratch);
            write_compressed(out, scratch, if limit == usize::MAX { 0 } else { limit });
            plain += total;
            i += run;
            continue;
        }
        let mut framer = Framer::new(total, limit);
        for b in &batches[i..i + run] {
            for seg in b.segments() {
                let _ = framer.segment(seg, out);
            }
        }
        plain += total;
        i += run;
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_framed_and_control_frames_pass_as_they_are() {
        let mut a = Batch::new();
        a.push(b"INFO {}\r\n");
        let mut b = Batch::new();
        b.push(b"PONG\r\n");
        let pong = Batch::verbatim(vec![0x8a, 0x01, b'x']);
        let mut c = Batch::new();
        c.push(b"+OK\r\n");
        let close = Batch::close_marker();
        let mut after = Batch::new();
        after.push(b"never");
        let all = [a, b, pong, c, close, after];
        let mut out = Vec::new();
        let plain = encode(all.iter(), Some(usize::MAX), None, &mut out);
        assert_eq!(plain, 9 + 6 + 3 + 5);
        assert_eq!(
            out,
            b"\x82\x0fINFO {}\r\nPONG\r\n\x8a\x01x\x82\x05+OK\r\n".to_vec()
        );
        // Not WebSocket (TLS alone): the bytes as they are.
        let mut out = Vec::new();
        encode(all.iter(), None, None, &mut out);
        assert_eq!(out, b"INFO {}\r\nPONG\r\n\x8a\x01x+OK\r\n".to_vec());
    }
}
