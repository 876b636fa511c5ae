//! Files other programs read to find a running server, as nats-server writes them: the pid
//! file (`-P`, `pid_file`) and the ports file (`--ports_file_dir`, `ports_file_dir`).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

/// Writes the process id to `path`: the decimal number without a newline, as nats-server
/// does (and as `--signal CMD=PIDFILE` reads it back).
pub fn write_pid_file(path: &Path) -> io::Result<()> {
    std::fs::write(path, std::process::id().to_string())
}

/// The ports file: `<dir>/<exe>_<pid>.ports` holding
/// `{"nats":["nats://HOST:PORT"],"monitoring":["http://HOST:PORT"]}` (compact JSON, no
/// newline, `monitoring` only when monitoring is on). `<exe>` is the name the program was
/// started as (`argv[0]`'s last component), so harnesses that run beaver as `nats-server`
/// find `nats-server_<pid>.ports`. Removed when dropped (at exit), as nats-server removes it.
pub struct PortsFile {
    path: PathBuf,
}

/// The ports file's JSON (nats-server's `Ports`, empty lists left out).
#[derive(serde::Serialize)]
struct Ports {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    nats: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    monitoring: Vec<String>,
}

impl PortsFile {
    /// Writes the ports file into `dir` for the client address `nats` and the monitoring
    /// address `monitoring`. The error names the file.
    pub fn write(
        dir: &Path,
        nats: SocketAddr,
        monitoring: Option<SocketAddr>,
    ) -> io::Result<PortsFile> {
        let exe = std::env::args_os()
            .next()
            .and_then(|a| {
                Path::new(&a)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "beaver".into());
        let path = dir.join(format!("{exe}_{}.ports", std::process::id()));
        let ports = Ports {
            nats: urls("nats", nats),
            monitoring: monitoring.map_or_else(Vec::new, |m| urls("http", m)),
        };
        let json = serde_json::to_vec(&ports).map_err(io::Error::other)?;
        std::fs::write(&path, json)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(PortsFile { path })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PortsFile {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path) {
            log::error!("Error cleaning up ports file {}: {e}", self.path.display());
        }
    }
}

/// `scheme://HOST:PORT` for every address the server can be reached at: the bound address,
/// or, when it is unspecified (`0.0.0.0`, `::`), every address of every network interface
/// (IPv4 and IPv6, interface by interface), as nats-server's `resolveHostPorts` lists them.
pub fn urls(scheme: &str, addr: SocketAddr) -> Vec<String> {
    let ips = if addr.ip().is_unspecified() {
        interface_ips()
    } else {
        vec![addr.ip()]
    };
    let ips = if ips.is_empty() { vec![addr.ip()] } else { ips };
    ips.into_iter()
        .map(|ip| format!("{scheme}://{}", SocketAddr::new(ip, addr.port())))
        .collect()
}

/// Addresses of the network interfaces, grouped by interface in the system's interface
/// order (loopback first on Linux), as Go's `net.Interfaces` lists them.
#[cfg(unix)]
fn interface_ips() -> Vec<IpAddr> {
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
fn interface_ips() -> Vec<IpAddr> {
    vec![
        IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_file_error_names_the_file() {
        let dir = Path::new("/nonexistent-beaver-dir");
        let e = PortsFile::write(dir, "127.0.0.1:4222".parse().unwrap(), None)
            .err()
            .unwrap();
        let msg = e.to_string();
        // The directory, a separator (`/` or `\\`), the file name, the OS's reason.
        assert!(
            msg.starts_with("/nonexistent-beaver-dir")
                && msg.contains(&format!("_{}.ports: ", std::process::id())),
            "{msg}"
        );
    }

    #[test]
    fn urls_of_bound_and_unspecified_addresses() {
        assert_eq!(
            urls("nats", "127.0.0.1:4222".parse().unwrap()),
            ["nats://127.0.0.1:4222"]
        );
        assert_eq!(
            urls("http", "[::1]:8222".parse().unwrap()),
            ["http://[::1]:8222"]
        );
        let all = urls("nats", "0.0.0.0:4222".parse().unwrap());
        assert!(all.iter().any(|u| u == "nats://127.0.0.1:4222"), "{all:?}");
    }
}
