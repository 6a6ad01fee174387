//! Imports run one way inside every crate: no module imports one that imports it back, directly
//! or through others, and no top-level module folder imports one that imports it back. Crates
//! themselves cannot loop (cargo refuses a cycle); this checks what cargo does not.
//!
//! What counts as an import: a `use` (other than a re-export, `pub use`, which is the module's
//! map, not its code leaning on another) or a path written in the code (`crate::a::b`,
//! `super::x`), resolved to the module that defines the name, following re-exports (so
//! `use crate::Wallet` leans on the module `Wallet` is defined in, not on `lib.rs`). Test
//! modules at the end of a file (`#[cfg(test)] mod tests`) are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::layout::{ROOT, crates, sources};

/// A crate's modules: path (`a::b`, the root `""`) -> what its file says.
struct Modules {
    files: BTreeMap<String, Source>,
}

#[derive(Default)]
struct Source {
    /// Child modules declared (`mod x;`).
    children: BTreeSet<String>,
    /// Names re-exported here (`pub use a::b::X` gives `X` -> `a::b::X`), and glob re-exports.
    exports: BTreeMap<String, Vec<String>>,
    /// Names brought in for this module's own use (`use seam::backend` gives `backend`).
    imported: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
    /// Every path the code names (from `use` statements and written out).
    uses: Vec<Vec<String>>,
}

/// The module path of a source file under `src`.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// `text` without comments and without the test module a file ends with.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a `use` tree names: `a::{b, c::{d, e}}` -> `a::b`, `a::c::d`, `a::c::e`.
fn expand(tree: &str) -> Vec<Vec<String>> {
    fn walk(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let Some(open) = tree.find('{') else {
            let path = tree.split(" as ").next().unwrap_or(tree);
            let leaf: Vec<String> = path
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            // A trailing comma leaves an empty leaf, which names nothing.
            if !leaf.is_empty() {
                out.push([prefix, &leaf].concat());
            }
            return;
        };
        let mut full = prefix.to_vec();
        full.extend(
            tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from),
        );
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    walk(&full, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        if start < inner.len() {
            walk(&full, &inner[start..], out);
        }
    }
    let mut out = Vec::new();
    walk(&[], tree, &mut out);
    // `use a::{self, b}` names `a` itself.
    for path in &mut out {
        if path.last().is_some_and(|s| s == "self") {
            path.pop();
        }
    }
    out
}

/// Paths written in code: `crate::a::b` and `super::a` outside `use` statements.
fn written_paths(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let segments: Vec<String> = path
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            found.push(segments);
        }
    }
    found
}

fn read_source(text: &str) -> Source {
    let code = code_of(text);
    let mut source = Source::default();
    let mut rest = code.as_str();
    let mut outside_use = String::new();
    loop {
        // The next statement starting `use`, `pub use` or `pub(...) use` at a line's start.
        let found = rest.lines().scan(0usize, |offset, line| {
            let here = *offset;
            *offset += line.len() + 1;
            Some((here, line))
        });
        let mut next = None;
        for (offset, line) in found {
            let trimmed = line.trim_start();
            let public = trimmed.starts_with("pub ") || trimmed.starts_with("pub(");
            let after = trimmed
                .strip_prefix("pub(crate) ")
                .or_else(|| trimmed.strip_prefix("pub(super) "))
                .or_else(|| trimmed.strip_prefix("pub "))
                .unwrap_or(trimmed);
            if let Some(body) = after.strip_prefix("use ") {
                let start = offset + (line.len() - body.len());
                next = Some((offset, start, public));
                break;
            }
            if let Some(name) = after.strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
                source.children.insert(name.trim().to_string());
            }
        }
        let Some((line_start, start, public)) = next else {
            outside_use.push_str(rest);
            break;
        };
        outside_use.push_str(&rest[..line_start]);
        let end = start + rest[start..].find(';').expect("a use ends");
        for path in expand(&rest[start..end]) {
            if public {
                match path.last().map(String::as_str) {
                    Some("*") => source.globs.push(path[..path.len() - 1].to_vec()),
                    Some(name) => {
                        source.exports.insert(name.to_string(), path.clone());
                    }
                    None => {}
                }
            } else {
                if let Some(name) = path.last().filter(|name| *name != "*") {
                    source.imported.insert(name.clone(), path.clone());
                }
                source.uses.push(path);
            }
        }
        rest = &rest[end + 1..];
    }
    source.uses.extend(written_paths(&outside_use));
    source
}

impl Modules {
    fn of(src: &Path) -> Modules {
        let mut files = Vec::new();
        sources(src, &mut files);
        let files = files
            .iter()
            .filter(|f| !f.starts_with(src.join("bin")))
            .map(|f| {
                let text = std::fs::read_to_string(f).unwrap();
                (module_of(src, f), read_source(&text))
            })
            .collect();
        Modules { files }
    }

    fn child(module: &str, name: &str) -> String {
        if module.is_empty() {
            name.to_string()
        } else {
            format!("{module}::{name}")
        }
    }

    fn parent(module: &str) -> String {
        module
            .rsplit_once("::")
            .map_or(String::new(), |(p, _)| p.to_string())
    }

    /// The module that defines what `path` names, written in `module`; `None` outside the
    /// crate.
    fn resolve(&self, module: &str, path: &[String], depth: usize) -> Option<String> {
        if depth > 16 {
            return None;
        }
        let (mut current, rest) = match path.first().map(String::as_str) {
            Some("crate") => (String::new(), &path[1..]),
            Some("self") => (module.to_string(), &path[1..]),
            Some("super") => {
                let mut current = module.to_string();
                let mut rest = path;
                while rest.first().is_some_and(|s| s == "super") {
                    current = Modules::parent(&current);
                    rest = &rest[1..];
                }
                (current, rest)
            }
            Some(first) if self.files.get(module)?.children.contains(first) => {
                (module.to_string(), path)
            }
            _ => return None,
        };
        for (i, segment) in rest.iter().enumerate() {
            let Some(source) = self.files.get(&current) else {
                return Some(current);
            };
            if segment == "*" {
                break;
            }
            if source.children.contains(segment) {
                current = Modules::child(&current, segment);
                continue;
            }
            // A name this module imports from elsewhere: follow it (outside the crate: `None`).
            if let Some(target) = source.exports.get(segment).or(source.imported.get(segment)) {
                let mut target = target.clone();
                target.extend(rest[i + 1..].iter().cloned());
                return self.resolve(&current, &target, depth + 1);
            }
            if let [glob] = source.globs.as_slice() {
                let mut target = glob.clone();
                target.extend(rest[i..].iter().cloned());
                return self.resolve(&current, &target, depth + 1).or(Some(current));
            }
            break;
        }
        Some(current)
    }

    /// Module -> the modules its code leans on.
    fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut graph = BTreeMap::new();
        for (module, source) in &self.files {
            let edges: BTreeSet<String> = source
                .uses
                .iter()
                .filter_map(|path| self.resolve(module, path, 0))
                .filter(|target| target != module && self.files.contains_key(target))
                .collect();
            graph.insert(module.clone(), edges);
        }
        graph
    }
}

/// The groups of nodes that reach each other (strongly connected, more than one node).
fn loops(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(node) = todo.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|node| (node, reach(node))).collect();
    let mut groups: Vec<Vec<String>> = Vec::new();
    let mut placed = BTreeSet::new();
    for node in graph.keys() {
        if placed.contains(node) || !reaches[node].contains(node) {
            continue;
        }
        let group: Vec<String> = reaches[node]
            .iter()
            .filter(|other| reaches[*other].contains(node))
            .cloned()
            .collect();
        placed.extend(group.iter().cloned());
        groups.push(group);
    }
    groups
}

/// The edges among `group`, to say where a loop runs: `a -> b, b -> a`.
fn within(graph: &BTreeMap<String, BTreeSet<String>>, group: &[String]) -> String {
    let mut edges = Vec::new();
    for from in group {
        for to in &graph[from] {
            if group.contains(to) {
                edges.push(format!("{from} -> {to}"));
            }
        }
    }
    edges.join(", ")
}

/// Each module's top-level folder (`a::b::c` -> `a`), with the edges between folders.
fn folders(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let top = |m: &String| m.split("::").next().unwrap_or("").to_string();
    let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, edges) in graph {
        let entry = folders.entry(top(module)).or_default();
        for target in edges {
            if top(target) != top(module) && !top(target).is_empty() && !top(module).is_empty() {
                entry.insert(top(target));
            }
        }
    }
    folders
}

fn crate_sources() -> Vec<(String, PathBuf)> {
    crates()
        .into_iter()
        .map(|krate| {
            let src = Path::new(ROOT).join(&krate).join("src");
            (krate, src)
        })
        .collect()
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mut found = Vec::new();
    for (krate, src) in crate_sources() {
        let graph = Modules::of(&src).graph();
        for group in loops(&graph) {
            found.push(format!("{krate}: modules {}", within(&graph, &group)));
        }
        let folders = folders(&graph);
        for group in loops(&folders) {
            found.push(format!("{krate}: folders {}", within(&folders, &group)));
        }
    }
    assert!(found.is_empty(), "import loops:\n{}", found.join("\n"));
}

#[test]
fn the_import_reader_finds_a_loop_through_a_re_export() {
    let lib = read_source("mod a;\nmod b;\npub use a::Thing;\n");
    let a = read_source("use crate::b::helper;\npub struct Thing;\n");
    let b = read_source("use crate::Thing;\npub fn helper() {}\n");
    let modules = Modules {
        files: [("".into(), lib), ("a".into(), a), ("b".into(), b)]
            .into_iter()
            .collect(),
    };
    let graph = modules.graph();
    assert_eq!(graph["b"], BTreeSet::from(["a".to_string()]));
    assert_eq!(loops(&graph), vec![vec!["a".to_string(), "b".to_string()]]);
    assert_eq!(
        expand("crate::{x::{self, Y}, z as w}"),
        [
            vec!["crate", "x"],
            vec!["crate", "x", "Y"],
            vec!["crate", "z"]
        ]
        .map(|p| p
            .iter()
            .map(std::string::ToString::to_string)
            .collect::<Vec<_>>())
    );
}
