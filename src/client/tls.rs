//! A connection's TLS session, and the reader thread's two jobs with it: the handshake and
//! decrypting what is read. Shared by client sessions (rustls server side) and routes
//! (server side when accepted, client side when dialled: routes use mutual TLS, as
//! nats-server's). Encrypting output is the writers' (see `crate::writer`).

use super::Client;
use crate::socket::{ReadBuffer, Socket};
use parking_lot::Mutex;
use std::io::{self, ErrorKind, Read};
use std::sync::Arc;
use std::time::Instant;

/// A connection's TLS session, `None` once the connection has left (see [`Client::tls`]).
/// A `rustls::Connection`: a client's is always its server side; a route's is either side.
/// The enum costs one branch per call, no lock and no allocation.
pub(crate) type TlsSlot = Mutex<Option<rustls::Connection>>;

/// Locks a TLS session that is still there: `None` once the connection has left and
/// released it (the caller then treats the connection as closed).
pub(crate) fn lock_session(
    slot: &TlsSlot,
) -> Option<parking_lot::MappedMutexGuard<'_, rustls::Connection>> {
    parking_lot::MutexGuard::try_map(slot.lock(), |s| s.as_mut()).ok()
}

/// Why a TLS handshake failed.
#[derive(Debug)]
pub(crate) enum HandshakeError {
    /// The deadline passed first.
    Timeout,
    /// Anything else, in words (Go's where the peer sees the same thing: a peer speaking
    /// plain text gets `tls: first record does not look like a TLS handshake`).
    Failed(String),
}

/// Go's words (hence nats-server's) for a peer whose first bytes are not TLS.
pub(crate) const NOT_TLS: &str = "tls: first record does not look like a TLS handshake";

/// The TLS handshake of `client`'s session (which must be set), on the reader thread, over
/// `socket`, until `deadline`. Records go straight to the socket: no writer touches the
/// connection during the handshake (the writers leave a handshaking session alone).
/// `buf` is the read scratch, returned for the reads after it (16 KiB). A peer that is
/// not speaking TLS is closed without an alert, as Go's TLS stack does.
pub(crate) fn handshake(
    client: &Client,
    socket: &Socket,
    deadline: Instant,
) -> Result<Vec<u8>, HandshakeError> {
    let Some(tls) = client.tls.as_ref() else {
        return Ok(Vec::new());
    };
    let closed = || HandshakeError::Failed("the connection was closed".into());
    let mut buf = vec![0u8; 16 * 1024];
    let mut out = Vec::new();
    let mut first = true;
    loop {
        // Send what the session has for the peer. The session lock is held only to
        // produce the bytes; the socket write happens outside it.
        let handshaking = {
            let Some(mut session) = lock_session(tls) else {
                return Err(closed());
            };
            while session.wants_write() {
                if session.write_tls(&mut out).is_err() {
                    break;
                }
            }
            session.is_handshaking()
        };
        if !out.is_empty() {
            socket
                .write_all_until(&out, deadline)
                .map_err(|e| HandshakeError::Failed(e.to_string()))?;
            out.clear();
        }
        if !handshaking {
            return Ok(buf);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(HandshakeError::Timeout);
        }
        let _ = socket.set_read_timeout(deadline - now);
        let n = match socket.read(&mut buf) {
            Ok(0) => return Err(HandshakeError::Failed("EOF".into())),
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                continue; // the deadline check above ends it
            }
            Err(e) => return Err(HandshakeError::Failed(e.to_string())),
        };
        let result = {
            let Some(mut session) = lock_session(tls) else {
                return Err(closed());
            };
            let mut rd = &buf[..n];
            let mut result = Ok(());
            while !rd.is_empty() {
                let step = match session.read_tls(&mut rd) {
                    Err(e) => Err(e.to_string()),
                    Ok(_) => match session.process_new_packets() {
                        Ok(_) => Ok(()),
                        // Not TLS at all: Go's TLS stack closes without an alert.
                        Err(rustls::Error::InvalidMessage(_)) if first => {
                            out.clear();
                            result = Err(NOT_TLS.to_string());
                            break;
                        }
                        Err(e) => Err(e.to_string()),
                    },
                };
                if let Err(e) = step {
                    // The alert for the peer, if rustls made one.
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
            let _ = socket.write_all_until(&out, deadline);
            return Err(HandshakeError::Failed(e));
        }
    }
}

/// The negotiated protocol version and cipher suite, as nats-server shows them (see
/// [`crate::auth::tls::version_name`]); empty strings once the session is gone.
pub(crate) fn negotiated(client: &Client) -> (String, String) {
    client
        .tls
        .as_ref()
        .and_then(lock_session)
        .map(|s| {
            (
                crate::auth::tls::version_name(&s),
                crate::auth::tls::cipher_name(&s),
            )
        })
        .unwrap_or_default()
}

/// One read for a TLS connection, after its handshake: ciphertext is read from `socket`
/// into `tls_in` outside the session lock, then decrypted under it, the plaintext going
/// straight into `buf` (up to about `want` bytes a read). Returns the plaintext bytes added;
/// 0 at the end of the stream. Records the session must answer (alerts, key updates) are
/// left to the writers, woken through `client`.
pub(crate) fn read_plaintext(
    client: &Arc<Client>,
    socket: &Socket,
    buf: &mut ReadBuffer,
    want: usize,
    tls_in: &mut Vec<u8>,
) -> io::Result<usize> {
    let Some(tls) = client.tls.as_ref() else {
        return Ok(0);
    };
    let bytes = buf.bytes_mut();
    let len = bytes.len();
    if tls_in.len() < want {
        tls_in.resize(want, 0);
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
            let mut rd = &tls_in[..fresh];
            loop {
                // Decrypt what was read (nothing, the first time round: plaintext left over
                // from the handshake or a previous read comes out first).
                let state = session
                    .process_new_packets()
                    .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
                let avail = state.plaintext_bytes_to_read();
                if avail > 0 {
                    let at = len + got;
                    if bytes.len() < at + avail {
                        bytes.resize(at + avail, 0);
                    }
                    session.reader().read_exact(&mut bytes[at..at + avail])?;
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
        bytes.truncate(len + got);
        if reply {
            // The session's own records: the writer sends them, in order with the rest of
            // the ciphertext.
            client.kick();
        }
        result?;
        if got > 0 {
            buf.adapt(got, want);
            return Ok(got);
        }
        if closed {
            return Ok(0);
        }
        // Nothing decrypted yet: read more ciphertext (blocking, socket timeout applies).
        fresh = socket.read(tls_in)?;
        if fresh == 0 {
            return Ok(0);
        }
    }
}
