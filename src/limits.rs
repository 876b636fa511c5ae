//! The operating system's limits on how many clients a server process can hold, and the one
//! beaver raises at start, as nats-server does.
//!
//! A client costs beaver one file descriptor (the socket, shared by its reader and the
//! writers) and one thread (its reader). So the number of clients is capped by:
//! - the open-file limit (`RLIMIT_NOFILE`). Go raises its soft limit to the hard limit when
//!   a program starts (nats-server therefore does too); [`raise_open_file_limit`] does the
//!   same for beaver;
//! - on Linux, the thread limits: `kernel.pid_max` and `kernel.threads-max` (system-wide),
//!   `RLIMIT_NPROC` (per user), and `vm.max_map_count`: each thread costs the process four
//!   memory mappings ([`MAPPINGS_PER_THREAD`]). A thread started past that limit does not
//!   fail cleanly: Rust's runtime cannot protect its signal stack, panics in the new
//!   thread before any of our code runs, and the whole process aborts (seen at 16,360
//!   reader threads with the default 65,530). So the ceiling keeps well below it.
//!
//! [`client_capacity`] says which of these caps the clients below `max_connections`, so
//! that start-up can log it: an operator then knows why connection number N is refused,
//! rather than finding out under load. [`client_ceiling`] is that cap as a number, which
//! admission enforces: a connection past it is refused with nats-server's
//! `-ERR 'maximum connections exceeded'` while descriptors and threads are still left to
//! say so (the reserves below), instead of failing in `accept()` or a thread spawn.

/// Raises the soft open-file limit to the hard limit (on macOS at most `OPEN_MAX`, 10240,
/// as Go does). On Linux, a process allowed to (root, or `CAP_SYS_RESOURCE`) first raises
/// the hard limit itself to [`OPEN_FILES_TARGET`] (at most the kernel's `fs.nr_open`):
/// each client costs a descriptor, and a shell's default hard limit would otherwise cap a
/// thread-per-client server far below its thread limits. Returns the soft limit now in
/// force, or `None` where there is no such limit (Windows) or it cannot be read.
#[cfg(unix)]
pub fn raise_open_file_limit() -> Option<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, mut hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if cfg!(target_os = "linux") && hard < OPEN_FILES_TARGET {
        let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(OPEN_FILES_TARGET);
        let wanted = OPEN_FILES_TARGET.min(nr_open);
        // Fails (EPERM) without the privilege: the hard limit stays as it was.
        if wanted > hard && setrlimit(Resource::RLIMIT_NOFILE, soft, wanted).is_ok() {
            hard = wanted;
        }
    }
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

/// The open-file limit a privileged beaver raises its hard limit to on Linux (see
/// [`raise_open_file_limit`]): more descriptors than its thread limits allow clients.
pub const OPEN_FILES_TARGET: u64 = 1 << 20;

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
    let threads = thread_caps().into_iter().map(|(n, _)| n).min();
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

/// Threads beaver keeps besides client readers: writers, acceptors, up to 64 monitoring
/// connections (128 on Windows), routes, leafnodes, JetStream consumers, and the readers
/// of connections being refused (`shared::MAX_REFUSING`).
const RESERVED_THREADS: u64 = 256;

/// Memory mappings a thread costs (Linux): its stack and the stack's guard page (glibc),
/// and the alternate signal stack Rust's runtime gives every thread with its guard page
/// (`/proc/PID/maps` of a beaver with 16,000 clients shows 4 per reader).
pub const MAPPINGS_PER_THREAD: u64 = 4;

/// Mappings of the process that are not threads' (the executable, libraries, heap arenas,
/// the batch pool), kept out of `vm.max_map_count` before it is divided by threads.
#[cfg(target_os = "linux")]
const RESERVED_MAPPINGS: u64 = 1024;

/// What caps the number of clients below `max_connections`: the capacity and a sentence
/// naming the limit (and the setting to raise), or `None` when `max_connections` clients
/// fit. `open_files` is the soft open-file limit in force ([`raise_open_file_limit`]).
pub fn client_capacity(max_connections: u64, open_files: Option<u64>) -> Option<(u64, String)> {
    let (cap, why) = smallest_cap(open_files)?;
    (cap < max_connections).then_some((cap, why))
}

/// The most connections (clients and routes) this process admits whatever
/// `max_connections` says: the smallest of its system limits less the reserves, so that
/// the connection after the last one admitted can still be accepted, told
/// `-ERR 'maximum connections exceeded'` and closed. Read once, at the first call (after
/// `main` raised the open-file limit); `None` where no limit is known (Windows).
pub fn client_ceiling() -> Option<u64> {
    static CEILING: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *CEILING.get_or_init(|| smallest_cap(open_file_limit()).map(|(cap, _)| cap))
}

/// The smallest of the caps the system's limits put on clients, and its sentence.
fn smallest_cap(open_files: Option<u64>) -> Option<(u64, String)> {
    let mut caps: Vec<(u64, String)> = Vec::new();
    if let Some(n) = open_files {
        caps.push((
            n.saturating_sub(RESERVED_DESCRIPTORS),
            format!("the open file limit is {n} (ulimit -n)"),
        ));
    }
    for (threads, what) in thread_caps() {
        caps.push((threads.saturating_sub(RESERVED_THREADS), what));
    }
    caps.into_iter().min_by_key(|(n, _)| *n)
}

/// Whether each client connection has a thread of its own (its reader): true in `beaver`;
/// beaver-async runs them as tasks ([`set_reader_threads`]). Relaxed: set once by `main`
/// before anything reads it.
static READER_THREADS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Says whether client connections have a reader thread each (see `process::Variant`):
/// without, the thread limits cap nothing and only descriptors count. Call before the
/// first [`client_ceiling`].
pub fn set_reader_threads(on: bool) {
    READER_THREADS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The thread limits that cap connections: [`thread_limits`], when each has a thread.
fn thread_caps() -> Vec<(u64, String)> {
    if READER_THREADS.load(std::sync::atomic::Ordering::Relaxed) {
        thread_limits()
    } else {
        Vec::new()
    }
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
            n.saturating_sub(RESERVED_MAPPINGS) / MAPPINGS_PER_THREAD,
            format!(
                "vm.max_map_count is {n} ({MAPPINGS_PER_THREAD} mappings per thread: its \
                 stack, its signal stack and their guard pages)"
            ),
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
