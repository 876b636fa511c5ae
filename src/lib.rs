//! # beaver
//!
//! A NATS server speaking the core NATS client protocol, built as a blocking `std::net`
//! thread-pool server. The modules follow the architecture (docs/architecture.md, where the
//! module layers and "where to start reading" are); from the leaves up:
//!
//! - [`protocol`]: the client and route protocols: the zero-copy parser, `CONNECT`, `INFO`,
//!   `MSG`/`RMSG` framing, and nats-server's exact `-ERR` strings;
//! - [`subjects`]: subject rules and the subscription table (a `dashmap` of literal subjects,
//!   a token trie for wildcards, generation-checked match caches);
//! - [`outbound`]: the per-client lock-free outbound queue, its scheduled [`outbound::Token`],
//!   the batches it carries and the writer's side of it ([`outbound::Output`]);
//! - [`socket`]: a connection's socket as its reader and the writers share it (writers
//!   never block on it), and the read buffer of client and route readers; [`close`]: why a
//!   connection ends; [`jwt`]: NATS JWTs (operator, account and user claims) decoded and
//!   their signatures checked;
//! - [`config`], [`logging`]: configuration files (Config.toml and nats-server's format), the
//!   command line, and nats-server-style logs; [`account`]: accounts and their tables;
//!   [`auth`]: authentication (`CONNECT` credentials, bcrypt), publish/subscribe
//!   permissions, and the TLS configuration;
//! - [`client`]: what other threads touch of a connection (`Client`, `Subscription`);
//! - [`writer`]: the fixed pool of writer threads that drain queues into sockets;
//! - [`shared`]: what every thread shares, and the registry of connections;
//! - [`delivery`]: the path of a message from a publish to its subscribers and routes
//!   (start reading here);
//! - [`session`]: a client's reader thread, from `INFO` to departure;
//! - [`route`]: clustering: the route protocol between servers (nats-server 2.9's), remote
//!   interest, forwarding;
//! - [`monitor`]: the HTTP monitoring endpoints (`/varz`, `/connz`, `/subsz`, ...,
//!   `/metrics`), as nats-server serves them; [`system`]: the same reports over NATS, to the
//!   system account (`$SYS.REQ.SERVER.PING`, ...);
//! - [`server`]: start-up, the acceptor, lame-duck mode and shutdown;
//! - [`signals`], [`reload`], [`runfiles`], [`service`]: what nats-server does as a process:
//!   signals, configuration reload, the pid and ports files, running as a Windows service;
//!   [`process`]: the binary's `main`, which puts them together;
//! - [`listen`]: listening sockets (dual-stack as Go's) and the addresses they are
//!   reached at; [`limits`]: the system limits on clients (descriptors, threads).
// No unsafe code, except the Win32 calls of `signals::windows`, `signals::scm`,
// `socket::windows`, `logging::eventlog` and `service::windows` (each allows it, for itself).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod account;
pub mod auth;
pub mod client;
pub mod close;
pub mod config;
pub mod delivery;
pub mod httpdate;
pub mod imports;
pub mod jetstream;
pub mod jwt;
pub mod leaf;
pub mod limits;
pub mod listen;
pub mod logging;
pub mod monitor;
pub mod outbound;
pub mod process;
pub mod protocol;
pub mod reload;
pub mod route;
pub mod runfiles;
pub mod server;
pub mod service;
pub mod session;
pub mod shared;
pub mod signals;
pub mod socket;
pub mod store;
pub mod subjects;
mod sync;
pub mod system;
pub mod websocket;
pub mod writer;

pub use config::Config;
pub use server::Server;
