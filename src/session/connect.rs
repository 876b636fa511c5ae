//! A session's start and its `CONNECT`: the `INFO` greeting (refused over
//! `max_connections`), authentication and its timeout, the login to an account, and the
//! options `CONNECT` sets (client protocol doc, "INFO" and "CONNECT"; nats-server's
//! `processConnect`).

use super::*;

impl Connection {
    /// Sends INFO; refuses the connection if over `max_connections`. With TLS, INFO goes out
    /// in plain text straight from this thread (nothing else is queued yet), then the
    /// handshake runs here too; after it, every byte to the client goes through its writer.
    pub(super) fn greet(&mut self) -> Result<(), Closing> {
        let info = self
            .shared
            .info_line_auth(&self.client, false, self.auth().required());
        if self.is_websocket() {
            // TLS (wss) and the upgrade first; INFO then goes out framed, as below.
            self.websocket_handshake()?;
        } else if self.client.is_tls() {
            if let Err(e) = self
                .socket
                .write_all_until(&info, self.handshake_deadline())
            {
                log::debug!("{} - Write error: {e}", self.client.log_prefix());
                return Err(Closing::new(CloseReason::WriteError, None));
            }
            if self.admission.is_none() {
                log::error!(
                    "{} - maximum connections exceeded",
                    self.client.log_prefix()
                );
                let _ = self
                    .socket
                    .write_all_until(err::MAX_CONNECTIONS, self.handshake_deadline());
                return Err(Closing::new(CloseReason::MaxConnectionsExceeded, None));
            }
            self.tls_handshake()?;
            self.auth_deadline = Instant::now() + self.auth().timeout();
            return Ok(());
        }
        self.send(&info);
        if self.admission.is_none() {
            log::error!(
                "{} - maximum connections exceeded",
                self.client.log_prefix()
            );
            return Err(Closing::new(
                CloseReason::MaxConnectionsExceeded,
                Some(err::MAX_CONNECTIONS),
            ));
        }
        self.flush();
        Ok(())
    }

    /// Before `CONNECT` with authentication on: closes the client once the authentication
    /// timeout has passed, and otherwise makes the next read wake up by then.
    pub(super) fn check_auth_timeout(&mut self) -> Result<(), Closing> {
        let now = Instant::now();
        if now >= self.auth_deadline {
            // nats-server's order: the -ERR (traced), then the debug line.
            self.send_traced(err::AUTHENTICATION_TIMEOUT, "-ERR");
            log::debug!("{} - Authentication Timeout", self.client.log_prefix());
            return Err(Closing::new(CloseReason::AuthenticationTimeout, None));
        }
        let wake = self.auth_deadline.min(self.next_ping_check);
        let _ = self
            .socket
            .set_read_timeout(wake.saturating_duration_since(now).max(MIN_TIMEOUT));
        Ok(())
    }

    /// Records a successful authentication. A client stays in the account of its first
    /// login: a later `CONNECT` as a user of another account is refused (its subscriptions
    /// and match cache belong to the first one).
    pub(super) fn login(&mut self, login: Login) -> Result<(), Closing> {
        if !Arc::ptr_eq(&login.account, &self.account) {
            if !self.awaiting_auth {
                log::error!(
                    "{} - Authorization Error - a connection cannot move from account {:?} \
                     to {:?}",
                    self.client.log_prefix(),
                    self.account.name,
                    login.account.name
                );
                return Err(Closing::new(
                    CloseReason::AuthenticationViolation,
                    Some(err::AUTHORIZATION_VIOLATION),
                ));
            }
            self.client.set_account(&login.account);
            self.cache = MatchCache::new(crate::subjects::MATCH_CACHE_CAPACITY);
            self.account = login.account;
        }
        self.client.set_authorized_user(&login.user);
        self.user = login.user;
        self.perms = login.permissions;
        self.pub_cache.clear();
        if std::mem::replace(&mut self.awaiting_auth, false) {
            // The read timeout was shortened for the authentication timer: back to the ping
            // timer's.
            self.wake_for_ping_timer();
        }
        Ok(())
    }

    /// Refuses a client that failed authentication (nats-server's `authViolation`).
    pub(super) fn auth_violation(&self, log_line: &str) -> Closing {
        log::error!("{} - {log_line}", self.client.log_prefix());
        Closing::new(
            CloseReason::AuthenticationViolation,
            Some(err::AUTHORIZATION_VIOLATION),
        )
    }

    pub(super) fn on_connect(&mut self, json: &[u8]) -> Result<(), Closing> {
        if let Err(e) = self.opts.merge_json(json) {
            log::error!("{} - CONNECT: {e}", self.client.log_prefix());
            return Err(Closing::new(CloseReason::ProtocolViolation, None));
        }
        if self.auth().required() {
            // Every CONNECT is checked, a repeated one too (as nats-server does).
            match self.auth().authenticate(&self.opts) {
                Ok(login) => self.login(login)?,
                Err(e) => return Err(self.auth_violation(&e.0)),
            }
        }
        if !self.opts.account.is_empty() || self.opts.new_account {
            log::error!("{} - Authorization Error", self.client.log_prefix());
            return Err(Closing::new(
                CloseReason::AuthenticationViolation,
                Some(err::AUTHORIZATION_VIOLATION),
            ));
        }
        if !(0..=1).contains(&self.opts.protocol) {
            return Err(Closing::new(
                CloseReason::BadClientProtocolVersion,
                Some(err::INVALID_CLIENT_PROTOCOL),
            ));
        }
        self.active = true;
        // nats-server's first RTT estimate: from accept to CONNECT (computeRTT(c.start)).
        self.client.set_rtt_since_accept(Instant::now());
        self.schedule_first_ping();
        self.parser.set_headers(self.opts.headers);
        self.client.set_headers(self.opts.headers);
        self.client.set_async_info(self.opts.protocol >= 1);
        self.client
            .set_identity(&self.opts.name, &self.opts.lang, &self.opts.version);
        if self.opts.no_responders && !self.opts.headers {
            return Err(Closing::new(
                CloseReason::NoRespondersRequiresHeaders,
                Some(err::NO_RESPONDERS_REQUIRES_HEADERS),
            ));
        }
        if self.opts.verbose {
            self.send_traced(protocol::OK, "OK");
        }
        Ok(())
    }
}
