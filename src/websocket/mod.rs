//! WebSocket clients (RFC 6455): browsers and other applications that reach NATS over
//! `ws://` and `wss://`, as nats-server 2.9.10's `websocket` listener serves them. A leaf
//! module: the bytes and rules of the protocol, no I/O.
//!
//! A WebSocket client is an ordinary client of beaver's with two more steps:
//! - its **reader thread** (`crate::session`) first does the TLS handshake (`wss`), then
//!   reads the HTTP upgrade request ([`handshake`]) and answers it directly, before any
//!   writer is involved; from then on every read goes through a [`Decoder`], which unmasks
//!   the frames' payload in place, so the NATS parser sees the same bytes as from a TCP
//!   client. Pings and closes are answered through the outbound queue, as pre-framed
//!   [`Batch::verbatim`](crate::outbound::Batch::verbatim) batches.
//! - the **writer** (`crate::writer`) frames each gather of batches as binary frames
//!   ([`Framer`], cut at 4 KiB for browsers) as it copies them into the connection's wire
//!   buffer (or into the TLS session, for `wss`), and ends a graceful close with a close
//!   frame whose status says why ([`close_frame_for`]).
//!
//! With `compression`, `permessage-deflate` ([`deflate`], RFC 7692) is negotiated with
//! clients that offer it: the reader inflates each compressed message in place of its
//! frames, the writers deflate each run of batches as one message.
//!
//! Not yet: leafnodes and MQTT over WebSocket, JWT cookies.

pub mod deflate;
mod frame;
pub mod handshake;

pub use frame::{
    close, close_frame_for, close_payload, control_frame, pong, status, write_compressed,
    ControlFrame, Decoder, FrameError, Framer, BROWSER_FRAME, MAX_CONTROL_PAYLOAD,
};

/// Server output smaller than this is not compressed (nats-server's `wsCompressThreshold`).
pub const COMPRESS_THRESHOLD: usize = 64;
pub use deflate::Deflater;
pub use handshake::{Origins, Upgrade};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// What the writers must know of a WebSocket client, shared through its `Client`: whether
/// the upgrade is done and how large its frames may be, and whether a close frame has been
/// queued already.
#[derive(Debug, Default)]
pub struct Framing {
    /// 0 until the upgrade is answered; then the payload limit of a frame (`usize::MAX`:
    /// none). Release/Acquire: the reader stores it before queueing the first framed bytes
    /// (`INFO`), so a writer that took those bytes sees it; the pair makes that hold even
    /// without the queue's own ordering.
    frame_limit: AtomicUsize,
    /// A close frame is queued (the reader's answer to the client's close): a graceful close
    /// then sends no second one. Release/Acquire, for the same reason as `frame_limit`.
    close_queued: AtomicBool,
    /// `permessage-deflate` was negotiated. Relaxed: stored before `frame_limit`'s Release
    /// store and read after its Acquire load, which order it.
    compress: AtomicBool,
}

impl Framing {
    /// A client whose upgrade is not done yet.
    pub fn new() -> Framing {
        Framing::default()
    }

    /// The reader answered the upgrade: frames may go out, cut at [`BROWSER_FRAME`] bytes
    /// for a browser, compressed if `compress`.
    pub fn upgraded(&self, browser: bool, compress: bool) {
        self.compress.store(compress, Ordering::Relaxed);
        let limit = if browser { BROWSER_FRAME } else { usize::MAX };
        self.frame_limit.store(limit, Ordering::Release);
    }

    /// Whether `permessage-deflate` was negotiated (read after [`Framing::frame_limit`]).
    pub fn compress(&self) -> bool {
        self.compress.load(Ordering::Relaxed)
    }

    /// The payload limit of a frame, `None` before the upgrade.
    pub fn frame_limit(&self) -> Option<usize> {
        match self.frame_limit.load(Ordering::Acquire) {
            0 => None,
            n => Some(n),
        }
    }

    /// Records that a close frame was queued; false if one already was.
    pub fn queue_close(&self) -> bool {
        !self.close_queued.swap(true, Ordering::AcqRel)
    }

    /// Whether a close frame was queued.
    pub fn close_queued(&self) -> bool {
        self.close_queued.load(Ordering::Acquire)
    }
}
