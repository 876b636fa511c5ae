//! The official NATS clients for Python (nats.py, and its new client `nats-core`), Go
//! (nats.go) and JavaScript (nats.js) against the real beaver binary: each runs the same
//! smoke script (`tests/official/`): pub/sub with a wildcard and headers, a queue group,
//! request/reply, no responders; and each one's JetStream API (`jetstream.*`) and its
//! consumers, key-value buckets and object stores (`consumers.*`) against `-js`.
//! (The Rust client, async-nats, has its own, deeper tests in `tests/clients.rs`.)
//!
//! Each test needs its language's toolchain and client library; without them it prints
//! SKIPPED and passes, unless `BEAVER_REQUIRE_OFFICIAL_CLIENTS=1` (set by `.ci/run`, which
//! installs them), where a missing client fails the test.

mod common;

use common::ServerProcess;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const OFFICIAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/official");

/// Skips (or fails under CI) when a client is not available.
fn unavailable(what: &str) {
    if std::env::var("BEAVER_REQUIRE_OFFICIAL_CLIENTS").as_deref() == Ok("1") {
        panic!("{what} is required (BEAVER_REQUIRE_OFFICIAL_CLIENTS=1) but not available");
    }
    eprintln!("SKIPPED: {what} is not available");
}

/// Whether `cmd args` runs and exits 0.
fn works(cmd: &str, args: &[&str], dir: Option<&Path>) -> bool {
    let mut c = Command::new(cmd);
    c.args(args).stdout(Stdio::null()).stderr(Stdio::null());
    if let Some(d) = dir {
        c.current_dir(d);
    }
    c.status().is_ok_and(|s| s.success())
}

/// Runs a smoke script to completion (at most two minutes: `go run` compiles first) and
/// asserts it printed OK.
fn run_smoke(mut cmd: Command, what: &str) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not finish in two minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("OK"),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A scratch directory under the build directory (rebuilt on demand, never committed).
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join("official-clients")
        .join(name);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn nats_py() {
    // `BEAVER_PYTHON` names an interpreter with nats-py (e.g. a venv's); default `python3`.
    let python = std::env::var("BEAVER_PYTHON").unwrap_or_else(|_| "python3".into());
    if !works(&python, &["-c", "import nats"], None) {
        return unavailable("python3 with nats-py (pip install nats-py)");
    }
    let server = ServerProcess::beaver(&[]);
    let mut cmd = Command::new(&python);
    cmd.arg(format!("{OFFICIAL}/smoke.py")).arg(server.url());
    run_smoke(cmd, "nats.py smoke test");
}

/// nats.py logging in with an nkey seed (`nkeys_seed`) and, in operator mode, with a
/// credentials file (`user_credentials`) made at test time as nsc makes them
/// (tests/official/auth.py).
#[test]
fn nats_py_nkeys_and_credentials() {
    use serde_json::json;
    let python = std::env::var("BEAVER_PYTHON").unwrap_or_else(|_| "python3".into());
    if !works(&python, &["-c", "import nats, nkeys"], None) {
        return unavailable("python3 with nats-py and nkeys (pip install nats-py nkeys)");
    }
    let dir = scratch("py-auth");
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("utf-8 path").to_owned()
    };
    // An nkey user.
    let user = nkeys::KeyPair::new_user();
    let stranger = nkeys::KeyPair::new_user();
    let seed = file("user.nk", &user.seed().unwrap());
    let stranger_seed = file("stranger.nk", &stranger.seed().unwrap());
    let nkey_conf = file(
        "nkey.conf",
        &format!(
            "authorization {{ users = [ {{ nkey: {} }} ] }}\n",
            user.public_key()
        ),
    );
    let nkey_server = ServerProcess::beaver(&["-c", &nkey_conf]);
    // An operator, an account, a user with a credentials file.
    let encode = beaver::jwt::encode;
    let op = nkeys::KeyPair::new_operator();
    let acc = nkeys::KeyPair::new_account();
    let op_jwt = encode(
        json!({"sub": op.public_key(), "nats": {"type": "operator", "version": 2}}),
        &op,
    );
    let acc_jwt = encode(
        json!({"sub": acc.public_key(), "nats": {"type": "account", "version": 2,
            "limits": {"subs": -1, "payload": -1, "conn": -1, "data": -1}}}),
        &op,
    );
    let user_jwt = encode(
        json!({"sub": user.public_key(), "nats": {"type": "user", "version": 2,
            "subs": -1, "payload": -1, "data": -1}}),
        &acc,
    );
    let creds = file(
        "user.creds",
        &format!(
            "-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n\
             -----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------\n",
            user.seed().unwrap()
        ),
    );
    let jwt_conf = file(
        "operator.conf",
        &format!(
            "operator: {op_jwt}\nresolver: MEMORY\nresolver_preload: {{ {}: {acc_jwt} }}\n",
            acc.public_key()
        ),
    );
    let jwt_server = ServerProcess::beaver(&["-c", &jwt_conf]);
    let mut cmd = Command::new(&python);
    cmd.arg(format!("{OFFICIAL}/auth.py"))
        .arg(nkey_server.url())
        .arg(&seed)
        .arg(&stranger_seed)
        .arg(jwt_server.url())
        .arg(&creds);
    run_smoke(cmd, "nats.py nkeys and credentials test");
}

/// nats.py's JetStream against `beaver -js` (tests/official/jetstream.py).
#[test]
fn nats_py_jetstream() {
    nats_py_js_script("jetstream.py", "nats.py JetStream test");
}

/// nats.py's consumers, key-value and object store against `beaver -js`
/// (tests/official/consumers.py).
#[test]
fn nats_py_consumers() {
    nats_py_js_script(
        "consumers.py",
        "nats.py consumers, KV and object store test",
    );
}

/// Runs the nats.py script `script` against `beaver -js` on a fresh store.
fn nats_py_js_script(script: &str, what: &str) {
    let python = std::env::var("BEAVER_PYTHON").unwrap_or_else(|_| "python3".into());
    if !works(&python, &["-c", "import nats.js"], None) {
        return unavailable("python3 with nats-py (pip install nats-py)");
    }
    let store = scratch(&format!("py-{script}-store"));
    let _ = std::fs::remove_dir_all(&store);
    let server = ServerProcess::beaver(&["-js", "-sd", store.to_str().expect("utf-8 path")]);
    let mut cmd = Command::new(&python);
    cmd.arg(format!("{OFFICIAL}/{script}")).arg(server.url());
    run_smoke(cmd, what);
}

/// nats.py's new client, `nats-core` (module `nats.client`), which needs Python 3.13 and
/// reads every `INFO` field nats-server sends (it failed on the missing `go`).
/// `BEAVER_PYTHON_CORE` names an interpreter that has it (`.ci/python313.sh` makes one);
/// default `python3`.
#[test]
fn nats_core() {
    let python = std::env::var("BEAVER_PYTHON_CORE").unwrap_or_else(|_| "python3".into());
    if !works(
        &python,
        &["-c", "import nats.client, asyncio; asyncio.QueueShutDown"],
        None,
    ) {
        return unavailable("Python 3.13 with nats-core (.ci/python313.sh DIR)");
    }
    let server = ServerProcess::beaver(&[]);
    let mut cmd = Command::new(&python);
    cmd.arg(format!("{OFFICIAL}/smoke_core.py"))
        .arg(server.url());
    run_smoke(cmd, "nats-core smoke test");
}

#[test]
fn nats_go() {
    // Debian's golang-go and golang-github-nats-io-go-nats-dev: the library is in the
    // classic GOPATH, so the script builds in GOPATH mode without downloading anything.
    let gopath = std::env::var("BEAVER_GOPATH").unwrap_or_else(|_| "/usr/share/gocode".into());
    if !works("go", &["version"], None)
        || !Path::new(&gopath)
            .join("src/github.com/nats-io/nats.go")
            .exists()
    {
        return unavailable(
            "go with nats.go (apt-get install golang-go golang-github-nats-io-go-nats-dev)",
        );
    }
    let server = ServerProcess::beaver(&[]);
    let mut cmd = Command::new("go");
    cmd.args(["run", &format!("{OFFICIAL}/smoke.go"), &server.url()])
        .env("GO111MODULE", "off")
        .env("GOPATH", &gopath)
        .env("GOCACHE", scratch("gocache"))
        .env("GOFLAGS", "");
    run_smoke(cmd, "nats.go smoke test");
}

/// nats.go's JetStream against `beaver -js` (tests/official/jetstream.go).
#[test]
fn nats_go_jetstream() {
    nats_go_js_script("jetstream.go", "nats.go JetStream test");
}

/// nats.go's consumers, key-value and object store against `beaver -js`
/// (tests/official/consumers.go).
#[test]
fn nats_go_consumers() {
    nats_go_js_script(
        "consumers.go",
        "nats.go consumers, KV and object store test",
    );
}

/// Runs the nats.go program `script` against `beaver -js` on a fresh store.
fn nats_go_js_script(script: &str, what: &str) {
    let gopath = std::env::var("BEAVER_GOPATH").unwrap_or_else(|_| "/usr/share/gocode".into());
    if !works("go", &["version"], None)
        || !Path::new(&gopath)
            .join("src/github.com/nats-io/nats.go")
            .exists()
    {
        return unavailable(
            "go with nats.go (apt-get install golang-go golang-github-nats-io-go-nats-dev)",
        );
    }
    let store = scratch(&format!("go-{script}-store"));
    let _ = std::fs::remove_dir_all(&store);
    let server = ServerProcess::beaver(&["-js", "-sd", store.to_str().expect("utf-8 path")]);
    let mut cmd = Command::new("go");
    cmd.args(["run", &format!("{OFFICIAL}/{script}"), &server.url()])
        .env("GO111MODULE", "off")
        .env("GOPATH", &gopath)
        .env("GOCACHE", scratch("gocache"))
        .env("GOFLAGS", "");
    run_smoke(cmd, what);
}

/// The scratch directory with nats.js installed (`npm install nats@2`, and nats.ws with the
/// `ws` package for the WebSocket test, once: the nats.js tests run at once, and two npm
/// installs into one directory break each other).
fn nats_js_dir() -> Option<PathBuf> {
    static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("js");
    let installed = ["nats", "nats.ws", "ws"]
        .iter()
        .all(|p| dir.join(format!("node_modules/{p}/package.json")).exists());
    if !installed {
        std::fs::write(dir.join("package.json"), "{\"private\": true}\n").expect("package.json");
        if !works(
            "npm",
            &[
                "install",
                "--no-audit",
                "--no-fund",
                "--silent",
                "nats@2",
                "nats.ws@1",
                "ws@8",
            ],
            Some(&dir),
        ) {
            return None;
        }
    }
    Some(dir)
}

#[test]
fn nats_js() {
    if !works("node", &["--version"], None) {
        return unavailable("node");
    }
    let Some(dir) = nats_js_dir() else {
        return unavailable("npm install nats@2");
    };
    std::fs::copy(format!("{OFFICIAL}/smoke.mjs"), dir.join("smoke.mjs")).expect("copy smoke.mjs");
    let server = ServerProcess::beaver(&[]);
    let mut cmd = Command::new("node");
    cmd.current_dir(&dir)
        .arg("smoke.mjs")
        .arg(format!("127.0.0.1:{}", server.port));
    run_smoke(cmd, "nats.js smoke test");
}

/// nats.js's JetStream against `beaver -js` (tests/official/jetstream.mjs).
#[test]
fn nats_js_jetstream() {
    nats_js_js_script("jetstream.mjs", "nats.js JetStream test");
}

/// nats.js's consumers, key-value and object store against `beaver -js`
/// (tests/official/consumers.mjs).
#[test]
fn nats_js_consumers() {
    nats_js_js_script(
        "consumers.mjs",
        "nats.js consumers, KV and object store test",
    );
}

/// A beaver with a `ws://` listener on a random port: (the server, `ws://` URL, `nats://` URL).
/// With `compression`, clients that offer `permessage-deflate` (nats.ws on Node's `ws`
/// does) get it.
fn beaver_with_websocket(tag: &str, compression: bool) -> (ServerProcess, String, String) {
    let dir = scratch(&format!("ws-{tag}"));
    let conf = dir.join("ws.conf");
    std::fs::write(
        &conf,
        format!(
            "websocket {{ host: 127.0.0.1, port: -1, no_tls: true, compression: {compression} }}\n"
        ),
    )
    .expect("write ws.conf");
    let server = ServerProcess::beaver(&["-c", conf.to_str().expect("utf-8 path")]);
    let ws = server
        .websocket_port()
        .expect("the websocket port is logged");
    let urls = (format!("ws://127.0.0.1:{ws}"), server.url());
    (server, urls.0, urls.1)
}

/// nats.ws (the JavaScript client for browsers, on Node with the `ws` package) over
/// WebSocket and nats.js over TCP exchange messages, headers and requests through beaver
/// (tests/official/websocket.mjs).
#[test]
fn nats_ws_websocket() {
    if !works("node", &["--version"], None) {
        return unavailable("node");
    }
    let Some(dir) = nats_js_dir() else {
        return unavailable("npm install nats@2 nats.ws@1 ws@8");
    };
    std::fs::copy(
        format!("{OFFICIAL}/websocket.mjs"),
        dir.join("websocket.mjs"),
    )
    .expect("copy websocket.mjs");
    let (_server, ws, nats) = beaver_with_websocket("js", true);
    let mut cmd = Command::new("node");
    cmd.current_dir(&dir).arg("websocket.mjs").arg(ws).arg(nats);
    run_smoke(cmd, "nats.ws WebSocket test");
}

/// nats.py with a `ws://` URL (aiohttp) and nats.py over TCP exchange messages, headers and
/// requests through beaver (tests/official/websocket.py).
#[test]
fn nats_py_websocket() {
    let python = std::env::var("BEAVER_PYTHON").unwrap_or_else(|_| "python3".into());
    if !works(&python, &["-c", "import nats, aiohttp"], None) {
        return unavailable("python3 with nats-py and aiohttp (pip install nats-py aiohttp)");
    }
    let (_server, ws, nats) = beaver_with_websocket("py", false);
    let mut cmd = Command::new(&python);
    cmd.arg(format!("{OFFICIAL}/websocket.py"))
        .arg(ws)
        .arg(nats);
    run_smoke(cmd, "nats.py WebSocket test");
}

/// Runs the nats.js script `script` against `beaver -js` on a fresh store.
fn nats_js_js_script(script: &str, what: &str) {
    if !works("node", &["--version"], None) {
        return unavailable("node");
    }
    let Some(dir) = nats_js_dir() else {
        return unavailable("npm install nats@2");
    };
    std::fs::copy(format!("{OFFICIAL}/{script}"), dir.join(script)).expect("copy the script");
    let store = scratch(&format!("js-{script}-store"));
    let _ = std::fs::remove_dir_all(&store);
    let server = ServerProcess::beaver(&["-js", "-sd", store.to_str().expect("utf-8 path")]);
    let mut cmd = Command::new("node");
    cmd.current_dir(&dir)
        .arg(script)
        .arg(format!("127.0.0.1:{}", server.port));
    run_smoke(cmd, what);
}
