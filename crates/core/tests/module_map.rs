//! The module map in `src/lib.rs` stays true: it lists every module, and a
//! module uses only modules on bullets below its own. Within a module
//! folder, the submodules use each other without a circle.
//!
//! Read from the source: every `crate::` and `super::` path outside
//! comments and test code (`#[cfg(test)]` items, files named `tests.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The modules `lib.rs` declares (`mod x;`, `pub mod x;`).
fn declared(lib: &str) -> BTreeSet<String> {
    lib.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("pub ").unwrap_or(l).strip_prefix("mod "))
        .filter_map(|l| l.strip_suffix(';'))
        .map(str::to_string)
        .collect()
}

/// The map's bullets, top-down: the module names before each bullet's
/// first `:` (written `` [`name`] `` or `` `name` ``).
fn map_layers(lib: &str) -> Vec<Vec<String>> {
    lib.lines()
        .filter_map(|l| l.strip_prefix("//! * "))
        .map(|l| {
            let names = l.split(':').next().unwrap_or("");
            names.split(',').map(|n| n.trim().trim_matches(|c| c == '[' || c == ']' || c == '`').to_string()).collect()
        })
        .collect()
}

/// The source without comments (strings are kept: a path in a string is
/// not a use, but none of ours looks like one) and without test code.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let line = line.split("//").next().unwrap_or("");
        if line.trim() != "#[cfg(test)]" {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // Skip the item the attribute applies to: up to its `;`, or its
        // braced body.
        let mut depth = 0i32;
        let mut opened = false;
        for line in lines.by_ref() {
            let line = line.split("//").next().unwrap_or("");
            depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
            opened |= line.contains('{');
            if (opened && depth <= 0) || (!opened && line.trim_end().ends_with(';')) {
                break;
            }
        }
    }
    out
}

fn ident(s: &str) -> (&str, &str) {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// The paths of a use tree at `s` (after `crate::` or `super::`), each as
/// its segments: `{a, b::{c, d}}` gives `[a], [b, c], [b, d]`.
fn tree(s: &str) -> (Vec<Vec<String>>, &str) {
    let s = s.trim_start();
    if let Some(mut rest) = s.strip_prefix('{') {
        let mut all = Vec::new();
        loop {
            rest = rest.trim_start();
            if let Some(r) = rest.strip_prefix('}') {
                return (all, r);
            }
            let (paths, r) = tree(rest);
            all.extend(paths);
            rest = r.trim_start();
            rest = rest.strip_prefix(',').unwrap_or(rest);
            if rest.is_empty() {
                return (all, rest);
            }
        }
    }
    let (name, rest) = ident(s);
    if name.is_empty() {
        return (vec![], rest);
    }
    if let Some(r) = rest.strip_prefix("::") {
        let (subs, r) = tree(r);
        let paths = if subs.is_empty() { vec![vec![name.to_string()]] } else { subs };
        return (
            paths
                .into_iter()
                .map(|mut p| {
                    p.insert(0, name.to_string());
                    p
                })
                .collect(),
            r,
        );
    }
    (vec![vec![name.to_string()]], rest)
}

/// Every module path (from the crate root) that the code of module `me`
/// names, as far as it can be told apart from an item's name.
fn uses(me: &[String], code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let before_ok = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        let rest = &code[i..];
        let anchor = if !before_ok {
            None
        } else if let Some(r) = rest.strip_prefix("crate::") {
            Some((Vec::new(), r))
        } else if rest.starts_with("super::") || rest.starts_with("self::") {
            // Relative to this module (`self`) or its parent, once per `super`.
            let mut base = me.to_vec();
            let mut r = rest;
            if let Some(x) = r.strip_prefix("self::") {
                r = x;
            }
            while let Some(x) = r.strip_prefix("super::") {
                base.pop();
                r = x;
            }
            Some((base, r))
        } else {
            None
        };
        if let Some((base, r)) = anchor {
            let (paths, after) = tree(r);
            for p in paths {
                let mut full = base.clone();
                full.extend(p);
                found.push(full);
            }
            i = code.len() - after.len();
            continue;
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// Re-exports: `parent::Item` -> the path it names (`pub use child::Item;`
/// in `parent`), so that a use of `super::Item` counts as a use of `child`.
fn re_exports(files: &[(Vec<String>, String)]) -> BTreeMap<Vec<String>, Vec<String>> {
    let modules: BTreeSet<&Vec<String>> = files.iter().map(|(m, _)| m).collect();
    let mut out = BTreeMap::new();
    for (me, code) in files {
        for line in code.lines() {
            let Some(at) = line.find("use ") else { continue };
            if !line[..at].trim().trim_start_matches("pub").trim().trim_matches(|c| c == '(' || c == ')').chars().all(|c| c.is_ascii_alphabetic()) {
                continue;
            }
            let rest = &line[at + 4..];
            let (paths, _) = if rest.starts_with("crate::") || rest.starts_with("super::") || rest.starts_with("self::") {
                (uses(me, rest), "")
            } else {
                let (p, r) = tree(rest);
                (p.into_iter().map(|p| me.iter().cloned().chain(p).collect()).collect(), r)
            };
            for full in paths {
                let Some(item) = full.last() else { continue };
                let mut alias = me.clone();
                alias.push(item.clone());
                if !modules.contains(&alias) && full != alias {
                    out.insert(alias, full);
                }
            }
        }
    }
    out
}

/// `used` with a re-exported item replaced by the path it names.
fn resolve(used: Vec<String>, aliases: &BTreeMap<Vec<String>, Vec<String>>) -> Vec<String> {
    for n in (1..=used.len()).rev() {
        if let Some(real) = aliases.get(&used[..n]) {
            return real.iter().chain(&used[n..]).cloned().collect();
        }
    }
    used
}

/// Every source file as (its module path, its code).
fn files() -> Vec<(Vec<String>, String)> {
    fn walk(dir: &Path, at: &[String], out: &mut Vec<(Vec<String>, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).expect("src folder").map(|e| e.expect("entry").path()).collect();
        entries.sort();
        for path in entries {
            let name = path.file_stem().and_then(|n| n.to_str()).expect("name").to_string();
            if path.is_dir() {
                let mut here = at.to_vec();
                here.push(name);
                walk(&path, &here, out);
            } else if path.extension().is_some_and(|e| e == "rs") && name != "tests" {
                let mut me = at.to_vec();
                if name != "mod" && name != "lib" {
                    me.push(name);
                }
                out.push((me, code(&std::fs::read_to_string(&path).expect("source"))));
            }
        }
    }
    let mut out = Vec::new();
    walk(&src(), &[], &mut out);
    out
}

#[test]
fn the_map_lists_every_module_once() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let listed: Vec<String> = map_layers(&lib).into_iter().flatten().collect();
    let set: BTreeSet<String> = listed.iter().cloned().collect();
    assert_eq!(set.len(), listed.len(), "a module is on two bullets of the map: {listed:?}");
    assert_eq!(set, declared(&lib), "the map in lib.rs and the `mod` lines differ");
}

#[test]
fn each_module_uses_only_modules_below_it_in_the_map() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let layer: BTreeMap<String, usize> =
        map_layers(&lib).into_iter().enumerate().flat_map(|(i, names)| names.into_iter().map(move |n| (n, i))).collect();
    let mut wrong = BTreeSet::new();
    // Paths as written: `crate::count::CountStats` uses `count`, whatever
    // `count` re-exports it from.
    for (me, code) in &files() {
        let Some(mine) = me.first() else { continue };
        for used in uses(me, code) {
            let Some(theirs) = used.first() else { continue };
            if theirs == mine {
                continue;
            }
            if let (Some(a), Some(b)) = (layer.get(mine), layer.get(theirs)) {
                if b <= a {
                    wrong.insert(format!("{} uses crate::{} (not below it in lib.rs's map)", me.join("::"), used.join("::")));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.into_iter().collect::<Vec<_>>().join("\n"));
}

#[test]
fn submodules_use_each_other_without_a_circle() {
    // Edges between siblings: a file under `parent::a` naming `parent::b::..`.
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    let files = files();
    let aliases = re_exports(&files);
    for (me, code) in &files {
        for used in uses(me, code) {
            let used = resolve(used, &aliases);
            let common = me.iter().zip(&used).take_while(|(a, b)| a == b).count();
            if common < me.len() && common < used.len() {
                let from = me[..=common].to_vec();
                let to = used[..=common].to_vec();
                edges.entry(from).or_default().insert(to);
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit(
        node: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        path: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        match state.get(node) {
            Some(2) => return None,
            Some(1) => {
                let at = path.iter().position(|n| n == node).unwrap_or(0);
                let mut circle = path[at..].to_vec();
                circle.push(node.clone());
                return Some(circle);
            }
            _ => {}
        }
        state.insert(node.clone(), 1);
        path.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, edges, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(node.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if let Some(circle) = visit(node, &edges, &mut state, &mut Vec::new()) {
            let names: Vec<String> = circle.iter().map(|p| p.join("::")).collect();
            panic!("modules use each other in a circle: {}", names.join(" -> "));
        }
    }
}

#[test]
fn the_bindings_use_only_the_api() {
    // Every `bpeforge_core::` path in crates/python goes through `api`.
    let bindings = Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/src");
    let mut wrong = Vec::new();
    let mut seen = 0;
    for entry in std::fs::read_dir(&bindings).expect("crates/python/src") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let text = code(&std::fs::read_to_string(&path).expect("source"));
        for (at, _) in text.match_indices("bpeforge_core::") {
            seen += 1;
            if !text[at..].starts_with("bpeforge_core::api::") {
                wrong.push(format!("{}: {}", path.display(), text[at..].lines().next().unwrap_or("")));
            }
        }
    }
    assert!(seen > 0, "no use of the core found in {}", bindings.display());
    assert!(wrong.is_empty(), "the bindings name the core outside `api`:\n{}", wrong.join("\n"));
}

#[test]
fn the_reader_finds_what_it_checks() {
    // The parser itself: groups, nesting, `super`, test code left out.
    let me = vec!["train".to_string(), "driver".to_string()];
    let code = code(
        "use crate::{count::{CountStats, WordCounts}, error};\nuse super::superbpe::x;\nlet a = crate::steps::watch();\n#[cfg(test)]\nmod tests {\n    use crate::pipeline;\n}\n// crate::shard\n",
    );
    let got: Vec<String> = uses(&me, &code).iter().map(|p| p.join("::")).collect();
    assert_eq!(got, ["count::CountStats", "count::WordCounts", "error", "train::superbpe::x", "steps::watch"]);
}
