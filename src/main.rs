//! The `beaver` binary: command line, configuration, logging, run until signalled.

use beaver::config::{Cli, Config};
use beaver::protocol::NATS_VERSION;
use beaver::server::{Server, StartError, VERSION};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.version {
        println!("beaver: v{VERSION} (speaks the client protocol of nats-server v{NATS_VERSION})");
        return ExitCode::SUCCESS;
    }
    let config = match Config::load(&cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("beaver: {e}");
            return ExitCode::from(1);
        }
    };
    if cli.test_config {
        match &cli.config {
            Some(path) => eprintln!("beaver: configuration file {} is valid", path.display()),
            None => eprintln!("beaver: configuration is valid (defaults, no file given)"),
        }
        return ExitCode::SUCCESS;
    }
    if let Err(e) = beaver::logging::init(&config) {
        eprintln!("beaver: {e}");
        return ExitCode::from(1);
    }
    log::info!("Starting beaver version {VERSION}");
    log::info!("  Protocol: nats-server {NATS_VERSION} client protocol");
    let writers = config.writer_threads();
    let (host, port) = (config.host.clone(), config.port);
    let server = match Server::start(config) {
        Ok(s) => s,
        Err(StartError::Listen(e)) => {
            log::error!("Error listening on port: {host}:{port}, \"{e}\"");
            return ExitCode::from(1);
        }
        Err(e @ (StartError::Monitor(_) | StartError::Tls(_))) => {
            log::error!("{e}");
            return ExitCode::from(1);
        }
    };
    let shared = server.shared();
    log::info!("  Name:     {}", shared.server_name);
    log::info!("  ID:       {}", shared.server_id);
    log::info!("  Writers:  {writers}");
    if let Some(monitor) = server.monitor() {
        log::info!("Starting http monitor on {}", monitor.display_addr());
    }
    log::info!(
        "Listening for client connections on {}",
        server.local_addr()
    );
    log::info!("Server is ready");
    beaver::signals::wait_for_shutdown();
    log::info!("Initiating Shutdown...");
    server.shutdown();
    log::info!("Server Exiting..");
    ExitCode::SUCCESS
}
