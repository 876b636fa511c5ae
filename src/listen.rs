//! Listening sockets and the addresses they can be reached at, as nats-server (Go) has them.
//! A leaf module: it knows nothing of the server.
//!
//! - [`bind`]: a listening socket for `host:port`. When `host` is the unspecified address
//!   (`0.0.0.0`, nats-server's default, or `::`), Go's `net.Listen("tcp", ...)` listens on
//!   every IPv4 *and* IPv6 address (one dual-stack socket, `IPV6_V6ONLY` off), so clients
//!   can use `nats://[::1]:4222` as well as `nats://127.0.0.1:4222`. beaver does the same,
//!   and falls back to IPv4 alone where the system has no IPv6.
//! - [`canonical`]: a peer's address as Go reports it (an IPv4 client of a dual-stack socket
//!   is `127.0.0.1`, not `::ffff:127.0.0.1`).
//! - [`reachable_urls`]: every `scheme://HOST:PORT` a listener accepts connections at (the
//!   ports file); [`advertised_host_ports`]: the ones other machines can use (`connect_urls`,
//!   nats-server's global unicast addresses).
//! - [`join_host_port`]: Go's `net.JoinHostPort`.
//! - [`AcceptLoop`]: a thread blocked in `accept()`, and how to stop it on any system.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long [`AcceptLoop::stop`] waits for the thread before leaving it behind.
pub const STOP_WAIT: Duration = Duration::from_secs(2);

/// A thread that blocks in `accept()` on a listening socket, and what stops it.
///
/// Nothing in `std` interrupts a blocked `accept()`. [`AcceptLoop::stop`] tries what works
/// where: on Linux, `shutdown()` of the listening socket (the blocked `accept` fails at
/// once, and the port stops taking connections); elsewhere, a connection to the socket
/// itself (the loop then sees its stop condition). If neither reaches it (an address this
/// host cannot connect to, a firewall), the caller is not held hostage: the thread is left
/// behind after [`STOP_WAIT`], with a warning, and ends with the process.
pub struct AcceptLoop {
    name: &'static str,
    listener: Arc<TcpListener>,
    thread: Option<JoinHandle<()>>,
}

impl AcceptLoop {
    /// Starts a thread named `name` that runs `run` on `listener` (a loop that returns once
    /// its stop condition, checked after each `accept`, is true).
    pub fn spawn(
        name: &'static str,
        stack_size: usize,
        listener: TcpListener,
        run: impl FnOnce(&TcpListener) + Send + 'static,
    ) -> io::Result<AcceptLoop> {
        let listener = Arc::new(listener);
        let theirs = listener.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .stack_size(stack_size)
            .spawn(move || run(&theirs))?;
        Ok(AcceptLoop {
            name,
            listener,
            thread: Some(thread),
        })
    }

    /// Wakes the thread and waits for it (at most [`STOP_WAIT`]). The caller has made the
    /// loop's stop condition true first. Idempotent.
    pub fn stop(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let _ = socket2::SockRef::from(&*self.listener).shutdown(std::net::Shutdown::Read);
        if let Ok(addr) = self.listener.local_addr() {
            let _ = TcpStream::connect_timeout(&wake_addr(addr), Duration::from_millis(250));
        }
        let deadline = Instant::now() + STOP_WAIT;
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(100));
        }
        if thread.is_finished() {
            let _ = thread.join();
        } else {
            log::warn!(
                "The {} thread did not stop within {STOP_WAIT:?}; leaving it behind",
                self.name
            );
        }
    }
}

impl Drop for AcceptLoop {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where to connect to wake an accept loop: the listen address, with "any" replaced by IPv4
/// loopback (an unspecified IPv6 listener is dual-stack: see [`bind`]).
fn wake_addr(local: SocketAddr) -> SocketAddr {
    let mut a = local;
    if a.ip().is_unspecified() {
        a.set_ip(Ipv4Addr::LOCALHOST.into());
    }
    a
}

/// Backlog of a listening socket: connections the kernel queues before `accept()`. std's
/// `TcpListener::bind` uses 128, which makes a reconnect storm wait for SYN retransmits;
/// nats-server (Go) gets the system maximum. The kernel caps this at its own `somaxconn`.
pub const LISTEN_BACKLOG: i32 = 4096;

/// Binds a listening socket on `host:port` (port 0: any free port). The unspecified hosts
/// (`0.0.0.0`, `::`) listen on every IPv4 and IPv6 address, as Go does (see the module
/// docs). Errors: the last address's bind error, or `InvalidInput` if `host` resolves to
/// nothing.
pub fn bind(host: &str, port: u16) -> io::Result<TcpListener> {
    let unspecified = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified());
    if unspecified {
        let dual = SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port);
        return bind_addr(dual, true).or_else(|e| {
            // No IPv6 on this system (or no dual-stack sockets): IPv4 alone, as Go does.
            log::debug!("No dual-stack listener on port {port} ({e}): IPv4 only");
            bind_addr(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port), false)
        });
    }
    let mut last = None;
    for addr in (host, port).to_socket_addrs()? {
        match bind_addr(addr, false) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("no address for {host}"),
        )
    }))
}

fn bind_addr(addr: SocketAddr, dual_stack: bool) -> io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if dual_stack {
        socket.set_only_v6(false)?;
    }
    // As std does on Unix: a restarted server can bind while old connections linger in
    // TIME_WAIT. (On Windows the option means something else; std leaves it off.)
    #[cfg(unix)]
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    Ok(socket.into())
}

/// A peer address as Go reports it: an IPv4-mapped IPv6 address (an IPv4 client of a
/// dual-stack socket) becomes the IPv4 address.
///
/// ```
/// # use beaver::listen::canonical;
/// let mapped: std::net::SocketAddr = "[::ffff:127.0.0.1]:5000".parse().unwrap();
/// assert_eq!(canonical(mapped).to_string(), "127.0.0.1:5000");
/// ```
pub fn canonical(addr: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr.ip().to_canonical(), addr.port())
}

/// Go's `net.JoinHostPort`: `host:port`, with brackets around an IPv6 host.
///
/// ```
/// # use beaver::listen::join_host_port;
/// assert_eq!(join_host_port("::1", 4222), "[::1]:4222");
/// assert_eq!(join_host_port("127.0.0.1", 4222), "127.0.0.1:4222");
/// ```
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `scheme://HOST:PORT` for every address a listener bound at `bound` accepts connections
/// at: `bound` itself, or, when it is unspecified, every address of every network interface
/// in the system's interface order (as nats-server's ports file lists them), IPv6 ones only
/// when the listener is dual-stack (bound to `::`), and never an IPv6 link-local address
/// (`fe80::/10`): without the interface's zone, which a URL cannot carry portably, a client
/// cannot connect to it.
pub fn reachable_urls(scheme: &str, bound: SocketAddr) -> Vec<String> {
    let ips: Vec<IpAddr> = if bound.ip().is_unspecified() {
        interface_ips()
            .into_iter()
            .filter(|ip| match ip {
                IpAddr::V4(_) => true,
                IpAddr::V6(v6) => bound.is_ipv6() && !is_link_local_v6(v6),
            })
            .collect()
    } else {
        vec![bound.ip()]
    };
    let ips = if ips.is_empty() {
        vec![bound.ip()]
    } else {
        ips
    };
    ips.into_iter()
        .map(|ip| format!("{scheme}://{}", SocketAddr::new(ip, bound.port())))
        .collect()
}

/// The `HOST:PORT`s at which other machines can reach a listener bound at `bound`, for
/// `connect_urls`: `bound` itself, or, when it is unspecified, the global unicast addresses
/// of the interfaces (Go's `IsGlobalUnicast`: no loopback, link-local, multicast or
/// unspecified address), as nats-server's `getNonLocalIPsIfHostIsIPAny`; IPv6 ones only for
/// a dual-stack listener. With none, the loopback addresses it accepts.
pub fn advertised_host_ports(bound: SocketAddr) -> Vec<String> {
    if !bound.ip().is_unspecified() {
        return vec![bound.to_string()];
    }
    let all = interface_ips();
    let usable = |ip: &IpAddr| ip.is_ipv4() || bound.is_ipv6();
    let global: Vec<String> = all
        .iter()
        .filter(|ip| usable(ip) && is_global_unicast(ip))
        .map(|ip| SocketAddr::new(*ip, bound.port()).to_string())
        .collect();
    if !global.is_empty() {
        return global;
    }
    let loopback: Vec<String> = all
        .iter()
        .filter(|ip| usable(ip) && ip.is_loopback())
        .map(|ip| SocketAddr::new(*ip, bound.port()).to_string())
        .collect();
    if loopback.is_empty() {
        vec![bound.to_string()]
    } else {
        loopback
    }
}

/// `fe80::/10`.
fn is_link_local_v6(ip: &Ipv6Addr) -> bool {
    (ip.segments()[0] & 0xffc0) == 0xfe80
}

/// Go's `net.IP.IsGlobalUnicast`.
fn is_global_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_loopback()
                || v4.is_link_local()
                || v4.is_multicast()
                || v4.is_unspecified()
                || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            !(v6.is_loopback() || is_link_local_v6(v6) || v6.is_multicast() || v6.is_unspecified())
        }
    }
}

/// Addresses of the network interfaces, grouped by interface in the system's interface
/// order (loopback first on Linux), as Go's `net.Interfaces` lists them.
#[cfg(unix)]
pub fn interface_ips() -> Vec<IpAddr> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    let mut by_iface: Vec<(String, Vec<IpAddr>)> = Vec::new();
    for a in addrs {
        let ip = match a.address.as_ref() {
            Some(s) => match (s.as_sockaddr_in(), s.as_sockaddr_in6()) {
                (Some(v4), _) => IpAddr::V4(v4.ip()),
                (_, Some(v6)) => IpAddr::V6(v6.ip()),
                _ => continue,
            },
            None => continue,
        };
        match by_iface.iter_mut().find(|(n, _)| *n == a.interface_name) {
            Some((_, ips)) => ips.push(ip),
            None => by_iface.push((a.interface_name.clone(), vec![ip])),
        }
    }
    by_iface.into_iter().flat_map(|(_, ips)| ips).collect()
}

/// Windows: the loopback addresses (listing interfaces needs the IP Helper API).
#[cfg(not(unix))]
pub fn interface_ips() -> Vec<IpAddr> {
    vec![
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(Ipv6Addr::LOCALHOST),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpStream;

    #[test]
    fn urls_of_bound_and_unspecified_addresses() {
        assert_eq!(
            reachable_urls("nats", "127.0.0.1:4222".parse().unwrap()),
            ["nats://127.0.0.1:4222"]
        );
        assert_eq!(
            reachable_urls("http", "[::1]:8222".parse().unwrap()),
            ["http://[::1]:8222"]
        );
        let v4 = reachable_urls("nats", "0.0.0.0:4222".parse().unwrap());
        assert!(v4.iter().any(|u| u == "nats://127.0.0.1:4222"), "{v4:?}");
        assert!(v4.iter().all(|u| !u.contains('[')), "{v4:?}");
        let all = reachable_urls("nats", "[::]:4222".parse().unwrap());
        assert!(all.iter().all(|u| !u.contains("[fe80:")), "{all:?}");
    }

    #[test]
    fn global_unicast_as_go() {
        for (ip, global) in [
            ("127.0.0.1", false),
            ("169.254.1.1", false),
            ("224.0.0.1", false),
            ("0.0.0.0", false),
            ("255.255.255.255", false),
            ("10.1.2.3", true),
            ("192.0.2.2", true),
            ("::1", false),
            ("fe80::1", false),
            ("febf::1", false),
            ("ff02::1", false),
            ("fd00::2", true),
            ("2001:db8::1", true),
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(is_global_unicast(&ip), global, "{ip}");
        }
    }

    /// `stop` ends an accept loop (on Linux by shutting the socket, elsewhere by connecting
    /// to it), and gives up waiting, without hanging, on a thread that never returns.
    #[test]
    fn accept_loops_stop_and_stuck_threads_are_left_behind() {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let mut l = AcceptLoop::spawn(
            "test-accept",
            64 * 1024,
            bind("127.0.0.1", 0).unwrap(),
            move |l| loop {
                let _ = l.accept();
                if flag.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
            },
        )
        .unwrap();
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        l.stop();
        assert!(l.thread.is_none());
        // A loop that ignores every wake-up: `stop` returns anyway.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let mut stuck = AcceptLoop::spawn(
            "test-stuck",
            64 * 1024,
            bind("127.0.0.1", 0).unwrap(),
            move |_| {
                let _ = rx.recv();
            },
        )
        .unwrap();
        stuck.stop();
        drop(tx);
    }

    /// The unspecified host listens on IPv4 and, where the system has it, IPv6 too: every
    /// URL the ports file would list accepts a connection.
    #[test]
    fn unspecified_host_accepts_every_listed_address() {
        let l = bind("0.0.0.0", 0).unwrap();
        let bound = l.local_addr().unwrap();
        for url in reachable_urls("nats", bound) {
            let hp = url.trim_start_matches("nats://");
            let addr: SocketAddr = hp.parse().unwrap();
            if !addr.ip().is_loopback() {
                continue; // loopback only: tests talk to 127.0.0.1 and ::1 alone
            }
            TcpStream::connect(addr).unwrap_or_else(|e| panic!("{url}: {e}"));
            let (_, peer) = l.accept().unwrap();
            assert_eq!(canonical(peer).ip(), addr.ip(), "{url}");
        }
    }
}
