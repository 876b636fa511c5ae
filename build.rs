//! Records the compiler's version for `INFO` and `/varz`, whose `go` field says which
//! runtime built the server (nats-server sends Go's, e.g. `go1.19.8`; beaver sends
//! `rust1.95.0`). Clients read the field (nats.py's `nats-core` fails without it).

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    // `rustc 1.95.0 (59807616e 2026-04-14)` -> `rust1.95.0`; `rust` if rustc cannot say.
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.split_whitespace().nth(1).map(str::to_owned))
        .unwrap_or_default();
    println!("cargo:rustc-env=BEAVER_RUSTC_VERSION=rust{version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
    println!("cargo:rerun-if-changed=build.rs");
}
