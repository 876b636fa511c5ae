//! # beaver
//!
//! A NATS server speaking the core NATS client protocol, built as a blocking `std::net`
//! thread-pool server. The modules follow the architecture (docs/architecture.md):
//!
//! - [`protocol`]: the client protocol: the zero-copy parser, `CONNECT`, `INFO`, `MSG`
//!   framing, and nats-server's exact `-ERR` strings;
//! - [`subjects`]: subject rules and the subscription table (a `dashmap` of literal subjects,
//!   a token trie for wildcards, generation-checked match caches);
//! - [`client`]: a connection's shared state, its reader thread, and the outbox in which a
//!   reader stages output per destination; [`close`]: why a connection ends;
//! - [`outbound`]: the per-client lock-free outbound queue and the batches it carries;
//! - [`socket`]: a connection's socket as its reader and the writers share it (writers
//!   never block on it);
//! - [`writer`]: the fixed pool of writer threads that drain queues into sockets;
//! - [`server`]: shared state, the acceptor, start-up and shutdown;
//! - [`route`]: clustering: the route protocol between servers (nats-server 2.9's), remote
//!   interest, forwarding;
//! - [`monitor`]: the HTTP monitoring endpoints (`/varz`, `/connz`, `/subsz`, ...,
//!   `/metrics`), as nats-server serves them;
//! - [`auth`]: authentication (`CONNECT` credentials, bcrypt), publish/subscribe
//!   permissions, and the TLS configuration;
//! - [`config`], [`logging`]: configuration files (Config.toml and nats-server's format), the
//!   command line, and nats-server-style logs;
//! - [`signals`], [`reload`], [`runfiles`]: what nats-server does as a process: signals,
//!   configuration reload, the pid and ports files;
//! - [`listen`]: listening sockets (dual-stack as Go's) and the addresses they are
//!   reached at; [`limits`]: the system limits on clients (descriptors, threads).
// No unsafe code, except the Win32 calls of `signals::windows` and `socket::windows` (each
// allows it, for itself).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod account;
pub mod auth;
pub mod client;
pub mod close;
pub mod config;
pub mod delivery;
pub mod limits;
pub mod listen;
pub mod logging;
pub mod monitor;
pub mod outbound;
pub mod protocol;
pub mod reload;
pub mod route;
pub mod runfiles;
pub mod server;
pub mod session;
pub mod shared;
pub mod signals;
pub mod socket;
pub mod subjects;
mod sync;
pub mod writer;

pub use config::Config;
pub use server::Server;
