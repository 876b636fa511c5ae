//! TLS for a client session: the handshake, on the reader thread before anything else is
//! read (nats-server's order: plain-text `INFO`, then the handshake), and decrypting what is
//! read afterwards. Encryption of output is the writer's (see `crate::writer`).

use super::*;
use crate::client::tls::HandshakeError;

impl Connection {
    /// When a TLS handshake starting now must be over.
    pub(super) fn handshake_deadline(&self) -> Instant {
        if let Some(ws) = &self.ws {
            return Instant::now() + ws.listener.handshake_timeout;
        }
        let timeout = self
            .shared
            .config()
            .tls
            .as_ref()
            .map_or(crate::config::DEFAULT_TLS_TIMEOUT, |t| {
                t.effective_timeout()
            });
        Instant::now() + timeout
    }

    /// The TLS handshake, on this thread, before anything else is read (nats-server's
    /// order: plain-text INFO, then the handshake, bounded by the TLS `timeout`; see
    /// [`crate::client::tls::handshake`]).
    pub(super) fn tls_handshake(&mut self) -> Result<(), Closing> {
        if self.client.tls.is_none() {
            return Ok(());
        }
        let prefix = self.client.log_prefix();
        log::debug!("{prefix} - Starting TLS client connection handshake");
        let deadline = self.handshake_deadline();
        match crate::client::tls::handshake(&self.client, &self.socket, deadline) {
            Ok(buf) => self.tls_in = buf,
            Err(HandshakeError::Timeout) => {
                // nats-server closes first and then fails to send
                // `-ERR 'Secure Connection - TLS Required'`: the client sees the connection
                // close and nothing else. So does beaver's.
                log::error!("{prefix} - TLS handshake error: i/o timeout");
                log::error!("{prefix} - TLS handshake timeout");
                return Err(Closing::new(CloseReason::TlsHandshakeError, None));
            }
            Err(HandshakeError::Failed(what)) => {
                // rustls (webpki) accepts only X.509 v3 certificates; `openssl x509 -req`
                // without `-extfile` makes v1 ones, which nats-server (Go) accepts. Say so
                // plainly.
                let hint = if what.contains("UnsupportedCertVersion") {
                    " (the client certificate is X.509 v1; beaver needs v3: see the README, TLS)"
                } else {
                    ""
                };
                log::error!("{prefix} - TLS handshake error: {what}{hint}");
                return Err(Closing::new(CloseReason::TlsHandshakeError, None));
            }
        }
        let (version, cipher) = crate::client::tls::negotiated(&self.client);
        log::debug!("{prefix} - TLS handshake complete");
        log::debug!("{prefix} - TLS version {version}, cipher suite {cipher}");
        self.client.set_tls_info(version, cipher);
        // The read timeout was the handshake's: back to the ping timer's.
        self.wake_for_ping_timer();
        Ok(())
    }

    /// [`Connection::read`] for TLS (see [`crate::client::tls::read_plaintext`]). Returns
    /// the plaintext bytes added (0 at the end of the stream).
    pub(super) fn read_tls(&mut self) -> io::Result<usize> {
        let want = self.buf.want(self.parser.bytes_needed());
        crate::client::tls::read_plaintext(
            &self.client,
            &self.socket,
            &mut self.buf,
            want,
            &mut self.tls_in,
        )
    }
}
