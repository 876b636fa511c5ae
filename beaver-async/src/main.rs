//! beaver-async: beaver with its client connections run as tokio tasks instead of a reader
//! thread each, for comparing blocking threads with async tasks on identical logic (issue
//! 18; docs/async.md).
//!
//! Everything but the waiting is beaver's own code, called through two seams:
//! [`beaver::session::Session`] (a client's reader, its I/O left to the caller) and
//! [`beaver::writer::Drainer`] (a writer's work for one client, without the decision of what
//! comes next). The process around them (configuration, signals, monitoring, routes,
//! leafnodes, WebSocket, JetStream) is `beaver::process`, unchanged: only the client port's
//! connections are tasks. See `runner` for the tasks.

#[cfg(unix)]
mod runner;

use std::process::ExitCode;

#[cfg(unix)]
fn main() -> ExitCode {
    // One worker per CPU (tokio's default), as beaver has one writer per CPU.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("beaver-async-worker")
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("beaver-async: cannot start the tokio runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // The process runs on this thread (it waits for signals); the runtime's workers run the
    // client tasks. Dropping the runtime at the end stops whatever tasks remain.
    beaver::process::main(beaver::process::Variant {
        name: "beaver-async",
        clients: Some(runner::clients(runtime.handle().clone())),
    })
}

#[cfg(not(unix))]
fn main() -> ExitCode {
    eprintln!(
        "beaver-async runs on Unix only (it waits on beaver's sockets with tokio's AsyncFd); \
         use beaver"
    );
    ExitCode::from(1)
}
