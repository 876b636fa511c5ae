//! Files other programs read to find a running server, as nats-server writes them: the pid
//! file (`-P`, `pid_file`) and the ports file (`--ports_file_dir`, `ports_file_dir`).

use crate::listen::reachable_urls;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Writes the process id to `path`: the decimal number without a newline, as nats-server
/// does (and as `--signal CMD=PIDFILE` reads it back).
pub fn write_pid_file(path: &Path) -> io::Result<()> {
    std::fs::write(path, std::process::id().to_string())
}

/// The ports file: `<dir>/<exe>_<pid>.ports` holding
/// `{"nats":["nats://HOST:PORT"],"monitoring":["http://HOST:PORT"],"cluster":["nats://HOST:PORT"]}`
/// (compact JSON, no newline, `monitoring` only when monitoring is on, `cluster` only with
/// a route listener), every address each listener accepts connections at
/// ([`crate::listen::reachable_urls`]). `<exe>` is the name the program was
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
    #[serde(skip_serializing_if = "Vec::is_empty")]
    cluster: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    websocket: Vec<String>,
}

/// The listeners a ports file lists besides the client port.
#[derive(Debug, Clone, Copy, Default)]
pub struct OtherPorts {
    /// The monitoring address, when monitoring is on.
    pub monitoring: Option<SocketAddr>,
    /// The route listen address, when clustering.
    pub cluster: Option<SocketAddr>,
    /// The WebSocket address and whether it is `wss`, when `websocket` is set.
    pub websocket: Option<(SocketAddr, bool)>,
}

impl PortsFile {
    /// Writes the ports file into `dir` for the bound client address `nats` and the
    /// `other` listeners. The error names the file.
    pub fn write(dir: &Path, nats: SocketAddr, other: OtherPorts) -> io::Result<PortsFile> {
        let OtherPorts {
            monitoring,
            cluster,
            websocket,
        } = other;
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
            nats: reachable_urls("nats", nats),
            monitoring: monitoring.map_or_else(Vec::new, |m| reachable_urls("http", m)),
            cluster: cluster.map_or_else(Vec::new, |c| reachable_urls("nats", c)),
            websocket: websocket.map_or_else(Vec::new, |(w, tls)| {
                reachable_urls(if tls { "wss" } else { "ws" }, w)
            }),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_file_error_names_the_file() {
        let dir = Path::new("/nonexistent-beaver-dir");
        let e = PortsFile::write(
            dir,
            "127.0.0.1:4222".parse().unwrap(),
            OtherPorts::default(),
        )
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
}
