//! The operating system's limits on how many clients a server process can hold, and the one
//! beaver raises at start, as nats-server does.
//!
//! A client costs beaver one file descriptor (the socket, shared by its reader and the
//! writers) and one thread (its reader). So the number of clients is capped by:
//! - the open-file limit (`RLIMIT_NOFILE`). Go raises its soft limit to the hard limit when
//!   a program starts (nats-server therefore does too); [`raise_open_file_limit`] does the
//!   same for beaver;
//! - on Linux, the thread limits: `kernel.pid_max` and `kernel.threads-max` (system-wide),
//!   `RLIMIT_NPROC` (per user), and `vm.max_map_count` (each thread's stack is two memory
//!   mappings: the stack and its guard page).
//!
//! [`client_capacity`] says which of these caps the clients below `max_connections`, so
//! that start-up can log it: an operator then knows why connection number N is refused,
//! rather than finding out under load.

/// Raises the soft open-file limit to the hard limit (on macOS at most `OPEN_MAX`, 10240,
/// as Go does). Returns the soft limit now in force, or `None` where there is no such
/// limit (Windows) or it cannot be read.
#[cfg(unix)]
pub fn raise_open_file_limit() -> Option<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    let target = if cfg!(target_os = "macos") {
        hard.min(10240)
    } else {
        hard
    };
    if target > soft && setrlimit(Resource::RLIMIT_NOFILE, target, hard).is_ok() {
        return Some(target);
    }
    Some(soft)
}

/// Windows has no per-process descriptor limit of this kind.
#[cfg(not(unix))]
pub fn raise_open_file_limit() -> Option<u64> {
    None
}

/// The most connections (clients and routes) this process could ever hold at once, as the
/// system limits it now: the soft open-file limit and the thread limits (each connection
/// needs a descriptor and a reader thread), whichever is lowest; `None` where none is
/// known (Windows). Whatever `max_connections` says, and whatever a reload sets it to,
/// no more connections than this can exist: the server sizes its writers' ready queue by
/// it, so that handing a connection to the writers never waits.
pub fn connection_ceiling() -> Option<u64> {
    let open_files = open_file_limit();
    let threads = thread_limits().into_iter().map(|(n, _)| n).min();
    match (open_files, threads) {
        (Some(f), Some(t)) => Some(f.min(t)),
        (f, t) => f.or(t),
    }
}

/// The soft open-file limit in force.
#[cfg(unix)]
fn open_file_limit() -> Option<u64> {
    use nix::sys::resource::{getrlimit, Resource};
    getrlimit(Resource::RLIMIT_NOFILE)
        .ok()
        .map(|(soft, _)| soft)
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<u64> {
    None
}

/// Descriptors beaver keeps for itself besides clients: listeners, the monitoring port's
/// connections, log and configuration files, routes.
const RESERVED_DESCRIPTORS: u64 = 64;

/// Threads beaver keeps besides client readers: writers, acceptors, monitoring, routes.
const RESERVED_THREADS: u64 = 64;

/// What caps the number of clients below `max_connections`: the capacity and a sentence
/// naming the limit (and the setting to raise), or `None` when `max_connections` clients
/// fit. `open_files` is the soft open-file limit in force ([`raise_open_file_limit`]).
pub fn client_capacity(max_connections: u64, open_files: Option<u64>) -> Option<(u64, String)> {
    let mut caps: Vec<(u64, String)> = Vec::new();
    if let Some(n) = open_files {
        caps.push((
            n.saturating_sub(RESERVED_DESCRIPTORS),
            format!("the open file limit is {n} (ulimit -n)"),
        ));
    }
    for (threads, what) in thread_limits() {
        caps.push((threads.saturating_sub(RESERVED_THREADS), what));
    }
    let (cap, why) = caps.into_iter().min_by_key(|(n, _)| *n)?;
    (cap < max_connections).then_some((cap, why))
}

/// The thread limits of this system and process, each with its name (Linux).
#[cfg(target_os = "linux")]
fn thread_limits() -> Vec<(u64, String)> {
    let read =
        |path: &str| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let mut v = Vec::new();
    if let Some(n) = read("/proc/sys/kernel/pid_max") {
        v.push((
            n,
            format!("kernel.pid_max is {n} (threads of all processes)"),
        ));
    }
    if let Some(n) = read("/proc/sys/kernel/threads-max") {
        v.push((n, format!("kernel.threads-max is {n}")));
    }
    if let Some(n) = read("/proc/sys/vm/max_map_count") {
        v.push((
            n / 2,
            format!("vm.max_map_count is {n} (two mappings per thread stack)"),
        ));
    }
    if let Ok((soft, _)) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NPROC)
    {
        v.push((soft, format!("the process limit is {soft} (ulimit -u)")));
    }
    v
}

#[cfg(not(target_os = "linux"))]
fn thread_limits() -> Vec<(u64, String)> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_limit_is_named() {
        let (cap, why) = client_capacity(u64::MAX, Some(256)).expect("a cap");
        assert!(cap <= 256 - RESERVED_DESCRIPTORS, "{cap}");
        assert!(
            why.contains("open file limit is 256") || cap < 256 - RESERVED_DESCRIPTORS,
            "{why}"
        );
        assert_eq!(client_capacity(1, Some(1 << 20)), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_ceiling_is_at_most_the_open_file_limit() {
        let files = open_file_limit().expect("Unix has an open-file limit");
        let ceiling = connection_ceiling().expect("and so a ceiling");
        assert!(ceiling <= files, "{ceiling} > {files}");
    }
}
