//! The source layout's rules (docs/architecture.md, "Modules"), checked on every test run:
//!
//! - no import cycle between the top-level modules of `src/`: a module names another
//!   (`crate::other` in code, tests included, comments excluded) only if that one does not
//!   lead back to it, so dependencies point one way, down to the leaves (`protocol`,
//!   `subjects`, `outbound`, ...);
//! - no source file over 800 lines, unless its first lines say why (a line starting with
//!   `//! Over 800 lines:`).
//!
//! These read the files; they start no server.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Longest source file without a written reason.
const MAX_LINES: usize = 800;
/// What a longer file says at its top.
const REASON: &str = "//! Over 800 lines:";

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file belongs to (`src/route/conn.rs` → `route`); `None` for the
/// crate roots.
fn top_module(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).expect("under src");
    let first = rel.components().next()?.as_os_str().to_str()?.to_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    (name != "lib" && name != "main").then_some(name)
}

/// The modules a file's code names as `crate::NAME`, comment lines excluded.
fn named_modules(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

/// Module → (module it names → files that name it).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn graph() -> Graph {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(f)).collect();
    let mut g: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeMap::new()))
        .collect();
    for f in &files {
        let Some(from) = top_module(f) else { continue };
        let text = std::fs::read_to_string(f).expect("read source");
        for to in named_modules(&text) {
            if to != from && modules.contains(&to) {
                let rel = f.strip_prefix(src()).expect("under src");
                g.entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(rel.display().to_string());
            }
        }
    }
    g
}

/// Whether `to` is reachable from `from`.
fn reaches(g: &Graph, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(m) = stack.pop() {
        if m == to {
            return true;
        }
        if seen.insert(m.clone()) {
            stack.extend(g.get(&m).into_iter().flat_map(|e| e.keys().cloned()));
        }
    }
    false
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let g = graph();
    assert!(
        g.len() > 10,
        "the modules of src/ were found: {:?}",
        g.keys()
    );
    let mut cycles = Vec::new();
    for (from, edges) in &g {
        for (to, files) in edges {
            if reaches(&g, to, from) {
                cycles.push(format!("{from} -> {to} (in {files:?}) and back"));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "import cycles between top-level modules:\n{}",
        cycles.join("\n")
    );
}

/// The leaves stay leaves: the protocol, subjects and outbound queue name no other module
/// of the crate but `sync` (loom's stand-ins), so they can be read and tested alone.
#[test]
fn the_core_leaves_depend_on_nothing_above_them() {
    let g = graph();
    for leaf in ["protocol", "subjects", "outbound", "close", "socket"] {
        let named: Vec<&String> = g[leaf].keys().filter(|m| *m != "sync").collect();
        assert!(named.is_empty(), "{leaf} names {named:?}");
    }
}

#[test]
fn no_file_over_800_lines_without_a_reason() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).expect("read source");
            let lines = text.lines().count();
            let explained = text.lines().take(30).any(|l| l.starts_with(REASON));
            (lines > MAX_LINES && !explained).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines without `{REASON} ...` at their top:\n{}",
        long.join("\n")
    );
}
