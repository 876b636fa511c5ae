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
        if self.auth().nonce_required() {
            let Some(nonce) = crate::auth::Nonce::generate() else {
                log::error!("{} - no random bytes for a nonce", self.client.log_prefix());
                return Err(Closing::new(CloseReason::ServerShutdown, None));
            };
            self.nonce = Some(nonce);
        }
        let info = self.shared.info_line_auth(
            &self.client,
            false,
            self.auth().required(),
            self.nonce.as_ref().map(|n| n.as_str()),
        );
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
        self.client
            .set_response_permission(self.perms.as_ref().and_then(|p| p.response()));
        self.jwt = login.jwt;
        self.auth_expires = self.jwt.as_ref().and_then(|j| j.expires).map(|at| {
            let left = at
                .duration_since(std::time::SystemTime::now())
                .unwrap_or_default();
            let now = Instant::now();
            now.checked_add(left)
                .unwrap_or(now + crate::config::MAX_DURATION)
        });
        self.apply_jwt_limits();
        self.pub_cache.clear();
        // nats-server's `applyAccountLimits`: a client already at its limit (a JWT limit of
        // 0, or lower than its subscriptions) is told and closed.
        let subs = self.client.subs.lock().len();
        if self.limits.max_subscriptions.is_some_and(|l| subs >= l) {
            log::error!(
                "{} - maximum subscriptions exceeded",
                self.client.log_prefix()
            );
            return Err(Closing::new(
                CloseReason::MaxSubscriptionsExceeded,
                Some(err::MAX_SUBSCRIPTIONS),
            ));
        }
        if std::mem::replace(&mut self.awaiting_auth, false) {
            // The read timeout was shortened for the authentication timer: back to the ping
            // timer's.
            self.wake_for_ping_timer();
        }
        Ok(())
    }

    /// What this client authenticates with now: its options, and what the server knows of
    /// it (see [`crate::auth::Credentials`]).
    pub(super) fn credentials(&self) -> crate::auth::Credentials {
        crate::auth::Credentials {
            opts: self.opts.clone(),
            nonce: self
                .nonce
                .as_ref()
                .map_or_else(Vec::new, |n| n.as_str().as_bytes().to_vec()),
            ip: self.client.addr.ip(),
            connection_type: if self.is_websocket() {
                "WEBSOCKET"
            } else {
                "STANDARD"
            },
        }
    }

    /// After a reload replaced the authentication: takes the user's new permissions (and
    /// JWT limits), as nats-server's `reloadAuthorization` does for every client. A client
    /// the new settings refuse, or put in another account, was closed by the reload
    /// (`crate::reload`); its reader only stops here. Subscriptions the new permissions
    /// forbid are removed, each with nats-server's `-ERR` and log line.
    pub(super) fn reauthenticate(&mut self) {
        if self.awaiting_auth || self.client.is_closing() {
            return;
        }
        let auth = self.auth();
        let credentials = self.credentials();
        let login = if auth.required() {
            match auth.authenticate(&self.opts, &credentials.peer()) {
                Ok(login) => login,
                Err(_) => return,
            }
        } else {
            auth.anonymous()
        };
        if !Arc::ptr_eq(&login.account, &self.account) {
            return;
        }
        self.client.set_authorized_user(&login.user);
        self.user = login.user;
        self.perms = login.permissions;
        self.client
            .set_response_permission(self.perms.as_ref().and_then(|p| p.response()));
        self.pub_cache.clear();
        self.prune_subscriptions();
    }

    /// Lowers the limits from the configuration to the JWT's (`subs`, `payload`), after a
    /// login and after a reload.
    pub(super) fn apply_jwt_limits(&mut self) {
        let Some(jwt) = &self.jwt else {
            return;
        };
        // A JWT limit of 0 means no subscription at all (a publish-only user).
        if let Some(j) = jwt.max_subscriptions {
            self.limits.max_subscriptions =
                Some(self.limits.max_subscriptions.map_or(j, |l| l.min(j)));
        }
        if let Some(p) = jwt.max_payload {
            self.limits.max_payload = self.limits.max_payload.min(p);
        }
        self.parser
            .set_limits(self.limits.max_control_line, self.limits.max_payload);
    }

    /// Closes a client whose JWT expired (nats-server's `authExpired`).
    pub(super) fn check_auth_expiry(&mut self) -> Result<(), Closing> {
        match self.auth_expires {
            Some(at) if Instant::now() >= at => {
                let account = self.jwt.as_ref().is_some_and(|j| j.account_expires);
                let (text, line) = if account {
                    (
                        "Account Authentication Expired",
                        err::ACCOUNT_AUTHENTICATION_EXPIRED,
                    )
                } else {
                    ("User Authentication Expired", err::AUTHENTICATION_EXPIRED)
                };
                log::debug!("{} - {text}", self.client.log_prefix());
                Err(Closing::new(CloseReason::AuthenticationExpired, Some(line)))
            }
            _ => Ok(()),
        }
    }

    /// Refuses a client that failed authentication (nats-server's `authViolation`).
    pub(super) fn auth_violation(&self, log_line: &str) -> Closing {
        log::error!("{} - {log_line}", self.client.log_prefix());
        if let Some(events) = self.shared.events() {
            let user = if self.opts.nkey.is_empty() {
                &self.opts.user
            } else {
                &self.opts.nkey
            };
            events.auth_failed(&self.client, user);
        }
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
        // nats-server's first RTT estimate: from accept to CONNECT (computeRTT(c.start)),
        // taken before the credentials are checked (an authentication error event shows it).
        self.client.set_rtt_since_accept(Instant::now());
        let auth = self.auth();
        if auth.required() {
            // Every CONNECT is checked, a repeated one too (as nats-server does). A JWT
            // login's place under its account's connection limit is given back first, so
            // that logging in again does not count the connection twice.
            self.jwt = None;
            let credentials = self.credentials();
            match auth.authenticate(&self.opts, &credentials.peer()) {
                Ok(login) => {
                    self.login(login)?;
                    self.client.set_credentials(credentials);
                }
                Err(e) if e.account_full => {
                    log::error!("{} - {}", self.client.log_prefix(), e.message);
                    return Err(Closing::new(
                        CloseReason::MaxAccountConnectionsExceeded,
                        Some(err::MAX_ACCOUNT_CONNECTIONS),
                    ));
                }
                Err(e) => return Err(self.auth_violation(&e.message)),
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
        if !std::mem::replace(&mut self.announced, true) {
            if let Some(events) = self.shared.events() {
                events.connected(&self.client);
            }
        }
        Ok(())
    }
}
