//! nats-server's configuration format: fixtures under `tests/fixtures/natsconf/`, each one
//! checked by Debian's `nats-server -t -c FILE` (proof that it is valid nats-server syntax;
//! skipped when nats-server is missing, unless `BEAVER_REQUIRE_NATS_SERVER=1`), by
//! `beaver -t -c FILE`, and loaded into the same settings as its `Config.toml` twin
//! (`NAME.toml`). Broken fixtures must be refused by both, beaver naming the key and line.

mod common;

use beaver::config::Config;
use common::{ServerProcess, WAIT};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_beaver");
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/natsconf");

/// `variables.conf` reads this environment variable.
const ENV_VAR: (&str, &str) = ("BEAVER_FIXTURE_PORT", "4336");

fn fixture(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

/// Runs `program args` to completion within [`WAIT`]; returns the status and stderr.
fn run(program: &str, args: &[&str]) -> (ExitStatus, String) {
    let mut child = Command::new(program)
        .args(args)
        .env(ENV_VAR.0, ENV_VAR.1)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {program}: {e}"));
    let mut stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{program} {args:?} did not exit within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (status, reader.join().unwrap_or_default())
}

/// `nats-server -t -c FILE`, or `None` when nats-server is not installed (and not required).
fn nats_server_check(file: &Path) -> Option<(ExitStatus, String)> {
    match common::nats_server_path() {
        Some(bin) => Some(run(&bin, &["-t", "-c", file.to_str().expect("UTF-8 path")])),
        None => {
            if std::env::var("BEAVER_REQUIRE_NATS_SERVER").as_deref() == Ok("1") {
                panic!("nats-server is required (BEAVER_REQUIRE_NATS_SERVER=1) but missing");
            }
            eprintln!("SKIPPED: nats-server is not installed; fixtures not checked against it");
            None
        }
    }
}

fn load(file: &Path) -> (Config, Vec<String>) {
    std::env::set_var(ENV_VAR.0, ENV_VAR.1);
    Config::from_file(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

#[test]
fn fixtures_are_valid_nats_server_config_and_load_like_their_toml_twin() {
    for name in [
        "basic",
        "blocks",
        "include",
        "variables",
        "docs_example",
        "block_variables",
    ] {
        let conf = fixture(&format!("{name}.conf"));
        if let Some((status, stderr)) = nats_server_check(&conf) {
            assert!(status.success(), "nats-server -t {name}.conf: {stderr}");
        }
        let (status, stderr) = run(BIN, &["-t", "-c", conf.to_str().unwrap()]);
        assert!(status.success(), "beaver -t {name}.conf: {stderr}");
        assert!(stderr.contains("is valid"), "{stderr}");
        let (from_conf, _) = load(&conf);
        let (from_toml, warnings) = load(&fixture(&format!("{name}.toml")));
        assert!(warnings.is_empty());
        assert_eq!(from_conf, from_toml, "{name}.conf vs {name}.toml");
        assert_ne!(
            from_conf,
            Config::default(),
            "{name}: the fixture sets something"
        );
    }
}

#[test]
fn ignored_keys_get_one_warning_each() {
    let (_, warnings) = load(&fixture("blocks.conf"));
    let keys: Vec<&str> = warnings
        .iter()
        .filter_map(|w| w.split('"').nth(1))
        .collect();
    assert_eq!(keys, ["gateway", "server_tags"], "{warnings:#?}");
    assert!(warnings[0].contains("blocks.conf:5:3"), "{}", warnings[0]);

    let (status, stderr) = run(
        BIN,
        &["-t", "-c", fixture("docs_example.conf").to_str().unwrap()],
    );
    assert!(status.success());
    // Its `cluster` block is read now (no longer ignored with a warning).
    assert!(!stderr.contains("warning: "), "{stderr}");
}

#[test]
fn broken_fixtures_are_refused_by_both_naming_key_and_line() {
    for (name, expected) in [
        (
            "unknown_key",
            &["unknown_key.conf:3:1", "unknown field \"no_such_option\""][..],
        ),
        (
            "bad_value",
            &["bad_value.conf: line 2", "key `max_payload`"][..],
        ),
        (
            "syntax_error",
            &["syntax_error.conf:4:", "Unexpected EOF processing map"][..],
        ),
    ] {
        let conf = fixture(&format!("{name}.conf"));
        if let Some((status, stderr)) = nats_server_check(&conf) {
            assert!(
                !status.success(),
                "nats-server accepted {name}.conf: {stderr}"
            );
        }
        let (status, stderr) = run(BIN, &["-t", "-c", conf.to_str().unwrap()]);
        assert_eq!(status.code(), Some(1), "{name}: {stderr}");
        for e in expected {
            assert!(stderr.contains(e), "{name}: expected {e:?} in {stderr:?}");
        }
    }
}

/// A file of NUL bytes (as a crash can leave one), or with a NUL inside, is refused by both
/// servers, whatever its name: it is never read as an empty file, which would start a
/// server without the authentication the real file had.
#[test]
fn files_with_nul_bytes_are_refused_by_both() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("natsnul-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let zeros = vec![0u8; 4096];
    let auth_then_nul = b"authorization { token: s3cret }\n\0\0\0".to_vec();
    for (name, bytes, line) in [
        ("zeros.conf", &zeros, "zeros.conf:1:"),
        ("zeros.cfg", &zeros, "zeros.cfg:1:"),
        ("zeros", &zeros, "zeros:1:"),
        ("tail.conf", &auth_then_nul, "tail.conf:2:"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        if let Some((status, stderr)) = nats_server_check(&path) {
            assert!(!status.success(), "nats-server accepted {name}: {stderr}");
            assert!(stderr.contains("Unexpected EOF"), "{name}: {stderr}");
        }
        let (status, stderr) = run(BIN, &["-t", "-c", path.to_str().unwrap()]);
        assert_eq!(status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(line) && stderr.contains("Unexpected EOF"),
            "{name}: {stderr}"
        );
    }
    // As TOML it is refused by the TOML reader.
    let path = dir.join("zeros.toml");
    std::fs::write(&path, &zeros).unwrap();
    let (status, stderr) = run(BIN, &["-t", "-c", path.to_str().unwrap()]);
    assert_eq!(status.code(), Some(1), "zeros.toml: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Security settings beaver does not implement stop start-up, naming the key and its line:
/// ignored, they would start a server with less protection than the file asks for (pinned
/// accounts would let every account in); so do an operator JWT that is not one and a pinned
/// account that is not an account's key.
#[test]
fn security_settings_beaver_lacks_stop_start_up() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("natssec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text, expected) in [
        // Operator mode with a JWT that is not one (tests/jwt.rs has the rest).
        (
            "operator.conf",
            "port: -1\noperator: \"eyJ0eXAiOiJKV1QifQ.e30.x\"\nresolver: MEMORY\nresolver_preload {}\n",
            &["operator.conf: line 2", "error parsing operator JWT"][..],
        ),
        (
            "resolver_dir.conf",
            "resolver: { type: cache, dir: \"/tmp/jwt\" }\n",
            &["resolver_dir.conf: line 1", "not supported by beaver yet"][..],
        ),
        (
            "pinned.conf",
            "resolver_pinned_accounts: [\"ABC\"]\n",
            &["pinned.conf: line 1", "not a valid public account nkey"][..],
        ),
        ("trusted.conf", "trusted_keys: [\"OABC\"]\n", &["trusted.conf:1:1: \"trusted_keys\""][..]),
        ("account_nkey.conf", "accounts {\n  A { nkey: ADEF }\n}\n", &["account_nkey.conf: line 2", "accounts.A.nkey"][..]),
        ("non_tls.conf", "allow_non_tls: true\n", &["non_tls.conf:1:1: \"allow_non_tls\""][..]),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        for args in [&["-t", "-c"][..], &["-a", "127.0.0.1", "-c"][..]] {
            let mut all = args.to_vec();
            all.push(path.to_str().unwrap());
            let (status, stderr) = run(BIN, &all);
            assert_eq!(status.code(), Some(1), "{name} {args:?}: {stderr}");
            for e in expected {
                assert!(stderr.contains(e), "{name}: expected {e:?} in {stderr:?}");
            }
            assert!(!stderr.contains("Listening for client connections"), "{stderr}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn format_is_chosen_by_extension_then_content() {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("natsconf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    // No telling extension: nats-server's syntax is recognised because it is not TOML...
    let (c, _) = load(&write("a.cfg", "port: 4337\nmax_payload: 2MB\n"));
    assert_eq!((c.port, c.max_payload), (4337, 2 << 20));
    // ...and TOML is read as Config.toml.
    let (c, _) = load(&write("b.cfg", "port = 4338\n"));
    assert_eq!(c.port, 4338);
    // `.conf` is always nats-server's format (`key = value` lines are valid in both).
    let (c, w) = load(&write("c.conf", "port = 4339\nmqtt = true\n"));
    assert_eq!((c.port, w.len()), (4339, 1));
    // `.toml` is always TOML.
    let e = Config::from_file(&write("d.toml", "port: 4340\n")).unwrap_err();
    assert!(e.message.contains("d.toml"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_started_from_a_conf_file_uses_its_settings() {
    std::env::set_var(ENV_VAR.0, ENV_VAR.1);
    // variables.conf sets max_payload to 4MB through a variable; -a/-p override its host
    // and port (flags win over the file).
    let conf = fixture("variables.conf");
    let server = ServerProcess::beaver(&["-c", conf.to_str().unwrap()]);
    let raw = server.raw();
    assert_eq!(raw.info["max_payload"], 4 << 20, "{}", raw.info);
    let server = ServerProcess::beaver(&["-c", fixture("blocks.conf").to_str().unwrap()]);
    assert!(server.wait_for_log("[WRN]"), "{:#?}", server.log_lines());
    let lines = server.log_lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("[WRN]") && l.contains("\"gateway\"")),
        "{lines:#?}"
    );
}
