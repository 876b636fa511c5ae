//! Why a connection ends: the vocabulary the reader, the writers, the routes and monitoring
//! share. A leaf module: it depends on nothing of beaver.

/// Why a connection was closed; the strings are nats-server's (`ClosedState`), as shown by
/// its logs and its monitoring endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CloseReason {
    /// The client closed the connection.
    ClientClosed = 1,
    /// No valid `CONNECT` in time (auth on).
    AuthenticationTimeout,
    /// Bad credentials.
    AuthenticationViolation,
    /// The client's queue would pass `max_pending`.
    SlowConsumerPendingBytes,
    /// A write made no progress for `write_deadline`.
    SlowConsumerWriteDeadline,
    /// Writing to the socket failed.
    WriteError,
    /// Reading from the socket failed.
    ReadError,
    /// Unknown operation, or a client `-ERR`.
    ParseError,
    /// The client did not answer `ping_max` PINGs.
    StaleConnection,
    /// Malformed arguments.
    ProtocolViolation,
    /// `CONNECT` with an unsupported protocol level.
    BadClientProtocolVersion,
    /// Over `max_connections`.
    MaxConnectionsExceeded,
    /// Message over `max_payload`.
    MaxPayloadExceeded,
    /// Control line over `max_control_line`.
    MaxControlLineExceeded,
    /// The server is shutting down.
    ServerShutdown,
    /// `no_responders` without `headers`.
    NoRespondersRequiresHeaders,
    /// A bug in beaver ended the connection's reader thread (not a nats-server reason).
    ServerError,
    /// The TLS handshake failed or timed out.
    TlsHandshakeError,
    /// A second route to the same server, or a route to this server itself.
    DuplicateRoute,
    /// A route from a server of another cluster.
    ClusterNameConflict,
    /// A client connected to the route port.
    WrongPort,
    /// The user's (or its account's) JWT expired while connected.
    AuthenticationExpired,
    /// Over the account JWT's `limits.conn`.
    MaxAccountConnectionsExceeded,
    /// At login, already at the JWT's subscription limit (a limit of 0).
    MaxSubscriptionsExceeded,
    /// The user was revoked by a new account JWT while connected.
    Revocation,
    /// A route a reload removed from `cluster.routes`.
    RouteRemoved,
}

impl CloseReason {
    /// nats-server's name for this reason.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::ClientClosed => "Client Closed",
            CloseReason::AuthenticationTimeout => "Authentication Timeout",
            CloseReason::AuthenticationViolation => "Authentication Failure",
            CloseReason::SlowConsumerPendingBytes => "Slow Consumer (Pending Bytes)",
            CloseReason::SlowConsumerWriteDeadline => "Slow Consumer (Write Deadline)",
            CloseReason::WriteError => "Write Error",
            CloseReason::ReadError => "Read Error",
            CloseReason::ParseError => "Parse Error",
            CloseReason::StaleConnection => "Stale Connection",
            CloseReason::ProtocolViolation => "Protocol Violation",
            CloseReason::BadClientProtocolVersion => "Bad Client Protocol Version",
            CloseReason::MaxConnectionsExceeded => "Maximum Connections Exceeded",
            CloseReason::MaxPayloadExceeded => "Maximum Message Payload Exceeded",
            CloseReason::MaxControlLineExceeded => "Maximum Control Line Exceeded",
            CloseReason::ServerShutdown => "Server Shutdown",
            CloseReason::NoRespondersRequiresHeaders => "No Responders Requires Headers",
            CloseReason::ServerError => "Server Error",
            CloseReason::TlsHandshakeError => "TLS Handshake Failure",
            CloseReason::DuplicateRoute => "Duplicate Route",
            CloseReason::ClusterNameConflict => "Cluster Name Conflict",
            CloseReason::WrongPort => "Incorrect Port",
            CloseReason::AuthenticationExpired => "Authentication Expired",
            CloseReason::MaxAccountConnectionsExceeded => "Maximum Account Connections Exceeded",
            CloseReason::MaxSubscriptionsExceeded => "Maximum Subscriptions Exceeded",
            CloseReason::Revocation => "Credentials Revoked",
            CloseReason::RouteRemoved => "Route Removed",
        }
    }

    /// Every reason, in declaration order (`ALL[r.index()] == r`).
    pub const ALL: [CloseReason; 26] = [
        CloseReason::ClientClosed,
        CloseReason::AuthenticationTimeout,
        CloseReason::AuthenticationViolation,
        CloseReason::SlowConsumerPendingBytes,
        CloseReason::SlowConsumerWriteDeadline,
        CloseReason::WriteError,
        CloseReason::ReadError,
        CloseReason::ParseError,
        CloseReason::StaleConnection,
        CloseReason::ProtocolViolation,
        CloseReason::BadClientProtocolVersion,
        CloseReason::MaxConnectionsExceeded,
        CloseReason::MaxPayloadExceeded,
        CloseReason::MaxControlLineExceeded,
        CloseReason::ServerShutdown,
        CloseReason::NoRespondersRequiresHeaders,
        CloseReason::ServerError,
        CloseReason::TlsHandshakeError,
        CloseReason::DuplicateRoute,
        CloseReason::ClusterNameConflict,
        CloseReason::WrongPort,
        CloseReason::AuthenticationExpired,
        CloseReason::MaxAccountConnectionsExceeded,
        CloseReason::MaxSubscriptionsExceeded,
        CloseReason::Revocation,
        CloseReason::RouteRemoved,
    ];

    /// This reason's position in [`CloseReason::ALL`] (0-based), for arrays of counters
    /// indexed by reason.
    pub fn index(self) -> usize {
        self as usize - 1
    }

    /// Whether the client was closed as a slow consumer (nats-server's `slow_consumers`
    /// counts both kinds).
    pub fn is_slow_consumer(self) -> bool {
        matches!(
            self,
            CloseReason::SlowConsumerPendingBytes | CloseReason::SlowConsumerWriteDeadline
        )
    }

    /// The reason stored as `r as u8` (0 or an unknown value: none).
    pub fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|r| *r as u8 == v)
    }
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
