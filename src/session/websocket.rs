//! A WebSocket client's session: the same reader as a TCP client's, with the opening
//! handshake first (after TLS, for `wss`) and every read passed through a frame
//! [`Decoder`]. See [`crate::websocket`] for the design, and nats-server 2.9.10's
//! `server/websocket.go` for the behaviour matched.

use super::*;
use crate::websocket::{self, handshake, ControlFrame, Decoder, Origins};
use std::io::Write;

/// What every connection of one WebSocket listener shares.
pub struct WebSocketListener {
    /// TLS for `wss://`; `None`: `ws://` (`no_tls`).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// `same_origin` and `allowed_origins`.
    pub origins: Origins,
    /// The longest the TLS handshake and the upgrade request may take together.
    pub handshake_timeout: Duration,
    /// `compression`: offer `permessage-deflate` to clients that ask for it.
    pub compression: bool,
    /// The block's own credentials (`authorization`, `no_auth_user`), when it has some:
    /// its clients authenticate with these instead of the server's.
    pub auth: Option<Arc<crate::client::Authenticator>>,
}

/// The reader's WebSocket state.
pub(super) struct WsReader {
    pub(super) listener: Arc<WebSocketListener>,
    /// `None` until the upgrade is answered.
    decoder: Option<Decoder>,
    /// Control frames of the last read (kept for its allocation).
    controls: Vec<ControlFrame>,
    /// The client sent a close frame: the next read is the end of the stream.
    closed: bool,
}

/// Accepts a connection on the WebSocket listener: as [`spawn`], for a client whose reader
/// starts with the WebSocket handshake.
pub(crate) fn spawn_websocket(
    shared: &Arc<Shared>,
    listener: &Arc<WebSocketListener>,
    stream: TcpStream,
    addr: SocketAddr,
) -> io::Result<()> {
    let ws = WsReader {
        listener: listener.clone(),
        decoder: None,
        controls: Vec::new(),
        closed: false,
    };
    start(shared, stream, addr, listener.tls.as_ref(), Some(ws))
}

impl Connection {
    /// The authentication this client goes through: its WebSocket listener's own, or the
    /// server's.
    pub(super) fn auth(&self) -> Arc<crate::client::Authenticator> {
        match self.ws.as_ref().and_then(|w| w.listener.auth.as_ref()) {
            Some(own) => own.clone(),
            None => self.shared.auth(),
        }
    }

    /// Whether this is a WebSocket client.
    pub(super) fn is_websocket(&self) -> bool {
        self.ws.is_some()
    }

    /// A WebSocket client's start: the TLS handshake (`wss`), then the upgrade request,
    /// answered directly (no writer touches the client before); `INFO` then goes out
    /// framed, as for any client.
    pub(super) fn websocket_handshake(&mut self) -> Result<(), Closing> {
        self.tls_handshake()?;
        let Some(listener) = self.ws.as_ref().map(|w| w.listener.clone()) else {
            return Ok(());
        };
        let prefix = self.client.log_prefix();
        let deadline = self.handshake_deadline();
        let tls = self.client.is_tls();
        let upgrade = loop {
            let now = Instant::now();
            if now >= deadline {
                log::error!("{prefix} - websocket handshake error: timeout");
                return Err(Closing::new(CloseReason::ReadError, None));
            }
            let _ = self.socket.set_read_timeout(deadline - now);
            match self.read_transport() {
                Ok(0) => return Err(Closing::new(CloseReason::ClientClosed, None)),
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    continue
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    log::error!("{prefix} - websocket handshake error: {e}");
                    return Err(Closing::new(CloseReason::ReadError, None));
                }
            }
            let head = self.buf.take();
            match handshake::parse(&head, &listener.origins, tls, listener.compression) {
                handshake::Head::Partial => self.buf.keep(head, 0),
                handshake::Head::Complete { len, result } => {
                    if len < head.len() {
                        // nats-server (Go's server, once the connection is hijacked) closes
                        // without an answer.
                        log::error!(
                            "{prefix} - websocket handshake error: client sent data before \
                             handshake is complete"
                        );
                        return Err(Closing::new(CloseReason::ProtocolViolation, None));
                    }
                    break result;
                }
            }
        };
        let upgrade = match upgrade {
            Ok(upgrade) => upgrade,
            Err(refusal) => {
                log::error!("{prefix} - websocket handshake error: {}", refusal.reason);
                let date = crate::httpdate::http_date(std::time::SystemTime::now());
                if let Some(answer) = handshake::refusal(&refusal, &date) {
                    let _ = self.write_direct(&answer, deadline);
                }
                return Err(Closing::new(CloseReason::ProtocolViolation, None));
            }
        };
        if let Err(e) = self.write_direct(&handshake::switching_protocols(&upgrade), deadline) {
            log::debug!("{prefix} - Write error: {e}");
            return Err(Closing::new(CloseReason::WriteError, None));
        }
        if let Some(framing) = &self.client.websocket {
            framing.upgraded(upgrade.browser, upgrade.compress);
        }
        if let Some(ws) = self.ws.as_mut() {
            let mut decoder = Decoder::with_masking(!upgrade.no_masking);
            if upgrade.compress {
                // A compressed message may carry many operations, but no more than a client
                // may have waiting for it: `max_pending`.
                decoder = decoder.with_compression(self.shared.config().max_pending);
            }
            ws.decoder = Some(decoder);
        }
        self.auth_deadline = Instant::now() + self.auth().timeout();
        self.wake_for_ping_timer();
        Ok(())
    }

    /// Writes `bytes` to the client before any writer is involved (the handshake's
    /// answer): through the TLS session for `wss`.
    fn write_direct(&mut self, bytes: &[u8], deadline: Instant) -> io::Result<()> {
        let Some(tls) = self.client.tls.as_ref() else {
            return self.socket.write_all_until(bytes, deadline);
        };
        let mut out = Vec::new();
        {
            let Some(mut session) = lock_session(tls) else {
                return Err(ErrorKind::NotConnected.into());
            };
            session.writer().write_all(bytes)?;
            while session.wants_write() {
                session.write_tls(&mut out)?;
            }
        }
        self.socket.write_all_until(&out, deadline)
    }

    /// One read of what the transport carries (TLS plaintext, or the socket's bytes) into
    /// the read buffer, before any WebSocket decoding.
    pub(super) fn read_transport(&mut self) -> io::Result<usize> {
        if self.client.is_tls() {
            return self.read_tls();
        }
        self.buf.read_from(&self.socket, self.parser.bytes_needed())
    }

    /// [`Connection::read`] for a WebSocket client: a transport read, then its frames
    /// decoded in place (the protocol bytes stay in the read buffer, the rest goes). Control
    /// frames are answered through the outbound queue. A read that carried no protocol
    /// bytes is `Interrupted` (the caller goes round again); a frame error closes the
    /// connection at once, without a close frame, as nats-server does.
    pub(super) fn read_websocket(&mut self) -> io::Result<usize> {
        if self.ws.as_ref().is_some_and(|w| w.closed) {
            return Ok(0);
        }
        let before = self.buf.len();
        let n = self.read_transport()?;
        if n == 0 {
            return Ok(0);
        }
        let Some(ws) = self.ws.as_mut() else {
            return Ok(n);
        };
        let Some(decoder) = ws.decoder.as_mut() else {
            return Ok(n);
        };
        let decoded = decoder.decode(self.buf.bytes_mut(), before, &mut ws.controls);
        let produced = match decoded {
            Ok(()) => self.buf.len() - before,
            Err(e) => {
                // A close frame saying why (1002), then the close (RFC 6455, 7.1.7).
                // nats-server queues the same frame but closes the connection at once, so it
                // is sent only now and then; beaver always sends it.
                log::error!("{} - {e}", self.client.log_prefix());
                self.flush();
                if self
                    .client
                    .websocket
                    .as_ref()
                    .is_some_and(|f| f.queue_close())
                {
                    let status = match e {
                        websocket::FrameError::TooBig => websocket::status::TOO_BIG,
                        _ => websocket::status::PROTOCOL_ERROR,
                    };
                    let payload = websocket::close_payload(status, &e.to_string());
                    self.client
                        .queue_verbatim(websocket::close(&payload), &self.shared.pool);
                }
                self.client.close(CloseReason::ReadError);
                return Err(io::Error::new(ErrorKind::InvalidData, e.to_string()));
            }
        };
        let Some(ws) = self.ws.as_mut() else {
            return Ok(produced);
        };
        if !ws.controls.is_empty() {
            let controls = std::mem::take(&mut ws.controls);
            self.answer_controls(&controls);
            if let Some(ws) = self.ws.as_mut() {
                ws.controls = controls;
                ws.controls.clear();
            }
        }
        if produced == 0 {
            return Err(ErrorKind::Interrupted.into());
        }
        Ok(produced)
    }

    /// Answers the client's pings with pongs and its close with a close frame (after what
    /// is staged so far, which is flushed first to keep the order).
    fn answer_controls(&mut self, controls: &[ControlFrame]) {
        self.flush();
        for c in controls {
            match c {
                ControlFrame::Ping(payload) => self
                    .client
                    .queue_verbatim(websocket::pong(payload), &self.shared.pool),
                ControlFrame::Close(payload) => {
                    if self
                        .client
                        .websocket
                        .as_ref()
                        .is_some_and(|f| f.queue_close())
                    {
                        self.client
                            .queue_verbatim(websocket::close(payload), &self.shared.pool);
                    }
                    if let Some(ws) = self.ws.as_mut() {
                        ws.closed = true;
                    }
                }
            }
        }
    }
}
