//! The process around the server, as nats-server runs it (see README, "Drop-in for
//! nats-server"): the command line, the configuration, logging, the pid and ports files,
//! then the server until a signal (or the Windows service control manager) stops it, with
//! reloads, log re-opening and lame-duck mode on request. The `beaver` binary is this
//! with [`Variant::beaver`]; beaver-async is this with its own client runner.

use crate::config::{Cli, Config};
use crate::protocol::NATS_VERSION;
use crate::runfiles::{write_pid_file, OtherPorts, PortsFile};
use crate::server::{ClientStart, Server, StartError, VERSION};
use crate::service::Host;
use crate::signals::{Request, Signals};
use std::process::ExitCode;

/// What differs between the binaries that run this process.
pub struct Variant {
    /// The binary's name, in `--version`, errors on stderr and the start-up log line.
    pub name: &'static str,
    /// How client connections are run ([`Server::start_with`]); `None`: a reader thread
    /// each (and then the system's thread limits cap them: see `limits`).
    pub clients: Option<ClientStart>,
}

impl Variant {
    /// The `beaver` binary.
    pub fn beaver() -> Variant {
        Variant {
            name: "beaver",
            clients: None,
        }
    }
}

/// Runs the process: the command line, then the server until it is asked to stop; returns
/// the exit code. `variant` names the binary and says how it runs client connections.
pub fn main(variant: Variant) -> ExitCode {
    let Variant { name, clients } = variant;
    crate::limits::set_reader_threads(clients.is_none());
    let cli = Cli::from_env();
    if cli.version {
        println!("{name}: v{VERSION} (speaks the client protocol of nats-server v{NATS_VERSION})");
        return ExitCode::SUCCESS;
    }
    if let Some(spec) = &cli.signal {
        return match crate::signals::send(spec) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{name}: {e}");
                ExitCode::from(1)
            }
        };
    }
    // Started by the Windows service control manager: the main thread serves the SCM and
    // the server runs on the thread it calls back on (see `crate::service`).
    #[cfg(windows)]
    if crate::service::started_by_service_manager() {
        return match crate::service::run_service(move |host| serve(name, &cli, host, clients)) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                eprintln!("{name}: {e}");
                ExitCode::from(1)
            }
        };
    }
    ExitCode::from(serve(name, &cli, &Host::Console, clients))
}

/// Says why the server cannot start: on stderr, and for a service (which has no console)
/// also in the event log.
fn fail(name: &str, host: &Host, message: &str) -> u8 {
    eprintln!("{name}: {message}");
    if host.is_service() && crate::logging::init_service(&Config::default()).is_ok() {
        log::error!("{message}");
    }
    1
}

/// Loads the configuration, starts the server and runs it until it is asked to stop;
/// returns the exit code. `host` hears when it is ready and when it stops.
fn serve(name: &str, cli: &Cli, host: &Host, clients: Option<ClientStart>) -> u8 {
    let (config, warnings) = match Config::load_with_warnings(cli) {
        Ok(c) => c,
        Err(e) => return fail(name, host, &e.to_string()),
    };
    let warnings: Vec<String> = cli.warnings().into_iter().chain(warnings).collect();
    // Certificates and keys are read now, before anything starts, so that a missing or bad
    // file fails `-t` as nats-server's does, and names the configuration file.
    let source = cli
        .config
        .as_ref()
        .map_or_else(|| "command line".to_owned(), |p| p.display().to_string());
    if clients.is_some() && config.tls.is_some() {
        // A runner of its own drives `session::Session`, which serves plain-text clients
        // only.
        return fail(
            name,
            host,
            &format!(
                "{source}: TLS on the client port needs a reader thread per client (its \
                 handshake blocks): use beaver"
            ),
        );
    }
    if let Some(tls) = &config.tls {
        if let Err(e) = crate::auth::tls::server_config(tls) {
            return fail(name, host, &format!("{source}: {e}"));
        }
    }
    if let Some(tls) = config.cluster.as_ref().and_then(|c| c.tls.as_ref()) {
        if let Err(e) = crate::auth::tls::route_configs(tls) {
            return fail(name, host, &format!("{source}: {e}"));
        }
    }
    if cli.test_config {
        for w in &warnings {
            eprintln!("{name}: warning: {w}");
        }
        match &cli.config {
            Some(path) => eprintln!("{name}: configuration file {} is valid", path.display()),
            None => eprintln!("{name}: configuration is valid (defaults, no file given)"),
        }
        return 0;
    }
    let logging = if host.is_service() {
        crate::logging::init_service(&config)
    } else {
        crate::logging::init(&config)
    };
    if let Err(e) = logging {
        return fail(name, host, &e);
    }
    // Before anything else can take long: a SIGHUP that arrives early must not kill us
    // (its default action).
    let signals = Signals::install_for(!host.is_service());
    host.attach(&signals);
    log::info!("Starting {name} version {VERSION}");
    log::info!("  Protocol: nats-server {NATS_VERSION} client protocol");
    if let Some(path) = &cli.config {
        log::info!("Using configuration file: {}", path.display());
    }
    for w in &warnings {
        log::warn!("{w}");
    }
    // As Go programs (nats-server) do at start: the soft open-file limit up to the hard one.
    let open_files = crate::limits::raise_open_file_limit();
    let max_connections = config.connection_limit().map_or(u64::MAX, |n| n as u64);
    // Part of the start-up banner (at INFO, as the banner's other lines): what caps the
    // clients below max_connections, when something does.
    let capacity = crate::limits::client_capacity(max_connections, open_files);
    let writers = config.writer_threads();
    let (listen_host, port) = (config.host.clone(), config.port);
    let pid_file = config.pid_file.clone();
    let mut server = match Server::start_with(config, clients) {
        Ok(s) => s,
        Err(StartError::Listen(e)) => {
            log::error!("Error listening on port: {listen_host}:{port}, \"{e}\"");
            return 1;
        }
        Err(e @ (StartError::Monitor(_) | StartError::Tls(_) | StartError::JetStream(_))) => {
            log::error!("{e}");
            return 1;
        }
    };
    let shared = server.shared().clone();
    log::info!("  Name:     {}", shared.server_name);
    log::info!("  ID:       {}", shared.server_id);
    log::info!("  Writers:  {writers}");
    if let Some((cap, why)) = capacity {
        log::info!(
            "  Clients:  at most about {cap}, below max_connections ({}): {why}",
            shared
                .config()
                .connection_limit()
                .map_or_else(|| "unlimited".to_owned(), |n| n.to_string())
        );
    }
    if let Some(path) = &pid_file {
        if let Err(e) = write_pid_file(path) {
            log::error!("Could not write pidfile: {e}");
            return 1;
        }
    }
    let monitor_addr = server.monitor().map(|m| m.local_addr());
    if let Some(monitor) = server.monitor() {
        log::info!("Starting http monitor on {}", monitor.display_addr());
    }
    // As nats-server: the configured host (`0.0.0.0` even when the socket is dual-stack).
    log::info!(
        "Listening for client connections on {}",
        crate::listen::join_host_port(&shared.config().host, server.local_addr().port())
    );
    // Written before "Server is ready", so a harness that waits for either finds both.
    let mut ports_file = write_ports_file(&shared.config(), &server, monitor_addr);
    log::info!("Server is ready");
    host.ready();
    loop {
        match signals.wait() {
            Request::Interrupt | Request::Terminate => break,
            Request::Reopen => match shared.config().logfile {
                None => log::info!("File log re-open ignored, not a file logger"),
                Some(_) => match crate::logging::reopen() {
                    Ok(()) => log::info!("File log re-opened"),
                    Err(e) => log::error!("File log re-open failed: {e}"),
                },
            },
            Request::Reload => match crate::reload::reload(cli, &shared) {
                Ok(r) => {
                    server.after_reload(&r);
                    for w in &r.warnings {
                        log::warn!("{w}");
                    }
                    for c in &r.changed {
                        log::info!("Reloaded: {c}");
                        if c.starts_with("pid_file = ") {
                            if let Some(path) = &r.config.pid_file {
                                if let Err(e) = write_pid_file(path) {
                                    log::error!("Failed to write pidfile: {e}");
                                }
                            }
                        }
                        if c.starts_with("ports_file_dir = ") {
                            drop(ports_file.take());
                            ports_file = write_ports_file(&r.config, &server, monitor_addr);
                        }
                    }
                    log::info!("Reloaded server configuration");
                }
                Err(e) => log::error!("Failed to reload server configuration: {e}"),
            },
            Request::LameDuck => {
                server.lame_duck(&|| signals.take(Request::Interrupt));
                break;
            }
        }
    }
    log::info!("Initiating Shutdown...");
    host.stopping();
    server.shutdown();
    drop(ports_file);
    log::info!("Server Exiting..");
    0
}

/// Writes the ports file if `ports_file_dir` is set (an error is logged, not fatal, as in
/// nats-server).
fn write_ports_file(
    config: &Config,
    server: &Server,
    monitoring: Option<std::net::SocketAddr>,
) -> Option<PortsFile> {
    let dir = config.ports_file_dir.as_ref()?;
    let other = OtherPorts {
        monitoring,
        cluster: server.cluster_addr(),
        websocket: server.websocket_addr().map(|a| {
            (
                a,
                config.websocket.as_ref().is_some_and(|w| w.tls.is_some()),
            )
        }),
    };
    match PortsFile::write(dir, server.local_addr(), other) {
        Ok(f) => {
            log::debug!("Wrote ports file {}", f.path().display());
            Some(f)
        }
        Err(e) => {
            log::error!("Error writing ports file {e}");
            None
        }
    }
}
