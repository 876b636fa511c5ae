//! TLS for a client session: the handshake, on the reader thread before anything else is
//! read (nats-server's order: plain-text `INFO`, then the handshake), and decrypting what is
//! read afterwards. Encryption of output is the writer's (see `crate::writer`).

use super::*;

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
    /// order: plain-text INFO, then the handshake, bounded by the TLS `timeout`). Records
    /// this thread's writes go straight to the socket: no writer touches the client yet.
    pub(super) fn tls_handshake(&mut self) -> Result<(), Closing> {
        let Some(tls) = self.client.tls.as_ref() else {
            return Ok(());
        };
        let prefix = self.client.log_prefix();
        log::debug!("{prefix} - Starting TLS client connection handshake");
        let deadline = self.handshake_deadline();
        let failed = |what: &dyn std::fmt::Display| {
            let what = what.to_string();
            // rustls (webpki) accepts only X.509 v3 certificates; `openssl x509 -req` without
            // `-extfile` makes v1 ones, which nats-server (Go) accepts. Say so plainly.
            let hint = if what.contains("UnsupportedCertVersion") {
                " (the client certificate is X.509 v1; beaver needs v3: see the README, TLS)"
            } else {
                ""
            };
            log::error!("{prefix} - TLS handshake error: {what}{hint}");
            Closing::new(CloseReason::TlsHandshakeError, None)
        };
        let mut buf = vec![0u8; 16 * 1024];
        let mut out = Vec::new();
        let mut first = true;
        loop {
            // Send what the session has for the client. The session lock is held only to
            // produce the bytes; the socket write happens outside it.
            let handshaking = {
                let Some(mut session) = lock_session(tls) else {
                    return Err(failed(&"the connection was closed"));
                };
                while session.wants_write() {
                    if session.write_tls(&mut out).is_err() {
                        break;
                    }
                }
                session.is_handshaking()
            };
            if !out.is_empty() {
                if let Err(e) = self.socket.write_all_until(&out, deadline) {
                    return Err(failed(&e));
                }
                out.clear();
            }
            if !handshaking {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                // nats-server closes first and then fails to send
                // `-ERR 'Secure Connection - TLS Required'`: the client sees the connection
                // close and nothing else. So does beaver's.
                log::error!("{prefix} - TLS handshake error: i/o timeout");
                log::error!("{prefix} - TLS handshake timeout");
                return Err(Closing::new(CloseReason::TlsHandshakeError, None));
            }
            let _ = self.socket.set_read_timeout(deadline - now);
            let n = match self.socket.read(&mut buf) {
                Ok(0) => return Err(failed(&"EOF")),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    continue; // the deadline check above ends it
                }
                Err(e) => return Err(failed(&e)),
            };
            let result = {
                let Some(mut session) = lock_session(tls) else {
                    return Err(failed(&"the connection was closed"));
                };
                let mut rd = &buf[..n];
                let mut result = Ok(());
                while !rd.is_empty() {
                    let step = match session.read_tls(&mut rd) {
                        Err(e) => Err(e.to_string()),
                        Ok(_) => match session.process_new_packets() {
                            Ok(_) => Ok(()),
                            // Not TLS at all (a plain-text client): Go's TLS stack, hence
                            // nats-server, closes without an alert, and says so.
                            Err(rustls::Error::InvalidMessage(_)) if first => {
                                out.clear();
                                result =
                                    Err("tls: first record does not look like a TLS handshake"
                                        .to_string());
                                break;
                            }
                            Err(e) => Err(e.to_string()),
                        },
                    };
                    if let Err(e) = step {
                        // The alert for the client, if rustls made one.
                        while session.wants_write() {
                            if session.write_tls(&mut out).is_err() {
                                break;
                            }
                        }
                        result = Err(e);
                        break;
                    }
                }
                first = false;
                result
            };
            if let Err(e) = result {
                let _ = self.socket.write_all_until(&out, deadline);
                return Err(failed(&e));
            }
        }
        let (version, cipher) = {
            let Some(session) = lock_session(tls) else {
                return Err(failed(&"the connection was closed"));
            };
            (
                crate::auth::tls::version_name(&session),
                crate::auth::tls::cipher_name(&session),
            )
        };
        log::debug!("{prefix} - TLS handshake complete");
        log::debug!("{prefix} - TLS version {version}, cipher suite {cipher}");
        self.client.set_tls_info(version, cipher);
        self.tls_in = buf;
        // The read timeout was the handshake's: back to the ping timer's.
        self.wake_for_ping_timer();
        Ok(())
    }

    /// [`Connection::read`] for TLS: ciphertext is read from the socket outside the session
    /// lock, then decrypted under it, the plaintext going straight into the read buffer.
    /// Returns the plaintext bytes added (0 at the end of the stream).
    pub(super) fn read_tls(&mut self) -> io::Result<usize> {
        let Some(tls) = self.client.tls.as_ref() else {
            return Ok(0);
        };
        let want = self.buf.want(self.parser.bytes_needed());
        let buf = self.buf.bytes_mut();
        let len = buf.len();
        if self.tls_in.len() < want {
            self.tls_in.resize(want, 0);
        }
        let mut fresh = 0;
        loop {
            let mut got = 0;
            let mut closed = false;
            let mut reply = false;
            let result: io::Result<()> = (|| {
                let Some(mut session) = lock_session(tls) else {
                    return Err(ErrorKind::NotConnected.into());
                };
                let mut rd = &self.tls_in[..fresh];
                loop {
                    // Decrypt what was read (nothing, the first time round: plaintext left
                    // over from the handshake or a previous read comes out first).
                    let state = session
                        .process_new_packets()
                        .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
                    let avail = state.plaintext_bytes_to_read();
                    if avail > 0 {
                        let at = len + got;
                        if buf.len() < at + avail {
                            buf.resize(at + avail, 0);
                        }
                        session.reader().read_exact(&mut buf[at..at + avail])?;
                        got += avail;
                    }
                    closed |= state.peer_has_closed();
                    if rd.is_empty() {
                        break;
                    }
                    session.read_tls(&mut rd)?;
                }
                reply = session.wants_write();
                Ok(())
            })();
            buf.truncate(len + got);
            if reply {
                // Records of the session's own (alerts, key updates): the writer sends them,
                // in order with the rest of the ciphertext.
                self.client.kick();
            }
            result?;
            if got > 0 {
                self.buf.adapt(got, want);
                return Ok(got);
            }
            if closed {
                return Ok(0);
            }
            // Nothing decrypted yet: read more ciphertext (blocking, socket timeout applies).
            fresh = self.socket.read(&mut self.tls_in)?;
            if fresh == 0 {
                return Ok(0);
            }
        }
    }
}
