//! The ping timer, without a timer thread: the socket's read timeout wakes the reader when
//! a check is due (nats-server's `processPingTimer`, `setFirstPingTimer`).

use super::*;

impl Connection {
    /// nats-server's ping timer, without a timer: the first check comes
    /// `min(ping_interval, 2 s)` (plus up to 20% jitter) after the connection opens, then one
    /// every `ping_interval`. A check sends a PING unless the client published, subscribed or
    /// PINGed within the last interval (activity makes PINGs unnecessary), except that until
    /// a round trip has been seen (CONNECT or PONG) it always PINGs. A client that left
    /// `ping_max` PINGs unanswered is closed as stale.
    /// At each `CONNECT`, as nats-server: the ping timer restarts with the short first delay
    /// (see [`first_ping_delay`]); when it fires, a PING goes out whatever the activity
    /// unless one was sent within [`RTT_MEASUREMENT_INTERVAL`], so the client's first PING
    /// comes about 2 s after `CONNECT`, and none before `CONNECT` until a whole
    /// `ping_interval` has passed.
    pub(super) fn schedule_first_ping(&mut self) {
        let delay = first_ping_delay(self.limits.ping_interval);
        self.next_ping_check = Instant::now() + delay;
        self.first_ping_pending = true;
        let _ = self.socket.set_read_timeout(self.until_next_timer());
    }

    /// Makes the next read wake up when the ping timer is next due (after a shorter
    /// timeout: the authentication timer's, or the TLS handshake's).
    pub(super) fn wake_for_ping_timer(&mut self) {
        let _ = self.socket.set_read_timeout(self.until_next_timer());
    }

    /// How long until the reader must wake: the ping timer, or the JWT's expiry if sooner.
    fn until_next_timer(&self) -> Duration {
        let due = match self.auth_expires {
            Some(at) => at.min(self.next_ping_check),
            None => self.next_ping_check,
        };
        due.saturating_duration_since(Instant::now())
            .max(MIN_TIMEOUT)
    }

    pub(super) fn check_ping(&mut self) -> Result<(), Closing> {
        let now = Instant::now();
        if self.active {
            // At most once per read: the reader's own copy for the ping timer, and the
            // client's for monitoring (one Relaxed store).
            self.active = false;
            self.last_activity = now;
            self.client.set_last_activity(now);
        }
        // (A read timeout never fires early, but allow for clock granularity.)
        if now + Duration::from_millis(5) < self.next_ping_check {
            return Ok(());
        }
        let interval = self.limits.ping_interval;
        // `interval` is at most a year (config::MAX_DURATION); saturate anyway.
        self.next_ping_check = now.checked_add(interval).unwrap_or(now);
        if self.first_ping_pending {
            // From now on the reader only needs to wake once per interval.
            self.first_ping_pending = false;
            let _ = self.socket.set_read_timeout(self.until_next_timer());
        }
        if self.auth_expires.is_some() {
            // The JWT's expiry may come before the next ping check: wake for whichever is
            // first (without one, the timeout stays the interval set above).
            self.wake_for_ping_timer();
        }
        let recent = |t: Instant| now.duration_since(t) < interval;
        let need_rtt = self
            .last_ping_sent
            .is_none_or(|t| now.duration_since(t) > RTT_MEASUREMENT_INTERVAL);
        if !need_rtt && (recent(self.last_activity) || self.last_remote_ping.is_some_and(recent)) {
            return Ok(()); // recent activity: no PING needed
        }
        if self.pings_out + 1 > self.limits.ping_max {
            log::debug!(
                "{} - Stale Client Connection - Closing",
                self.client.log_prefix()
            );
            return Err(Closing::new(
                CloseReason::StaleConnection,
                Some(err::STALE_CONNECTION),
            ));
        }
        self.pings_out += 1;
        self.ping_sent = Some(now);
        self.last_ping_sent = Some(now);
        self.send_traced(protocol::PING, "PING");
        Ok(())
    }
}

/// How often the ping timer PINGs to measure the round trip even when the client is busy
/// (nats-server's `DEFAULT_RTT_MEASUREMENT_INTERVAL`).
const RTT_MEASUREMENT_INTERVAL: Duration = Duration::from_secs(3600);

/// The delay of the first ping check after a `CONNECT`: `ping_interval`, at most 2 s, plus up
/// to 20 % of random jitter (nats-server's `setFirstPingTimer` for clients,
/// `firstClientPingInterval`), so that the round trip is measured soon after connecting.
fn first_ping_delay(interval: std::time::Duration) -> std::time::Duration {
    let d = interval.min(std::time::Duration::from_secs(2));
    let jitter = d.as_nanos() as u64 / 5;
    d + std::time::Duration::from_nanos(fastrand::u64(0..=jitter))
}
