//! The map a newcomer reads first stays true: each crate's `lib.rs` names every module it
//! declares, and the README's layout line names every crate of the workspace.

use std::path::Path;

pub(super) const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The workspace's crates, as its `Cargo.toml` lists them, and the root package (`.`).
pub(super) fn crates() -> Vec<String> {
    let manifest = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    let start = manifest.find("members = [").expect("a members list");
    let list = &manifest[start..manifest[start..].find(']').unwrap() + start];
    let mut crates: Vec<String> = list
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    crates.push(".".into());
    crates
}

/// The modules `lib.rs` declares at its top (`mod x;`, `pub mod x;`, `pub(crate) mod x;`).
fn declared(lib: &str) -> Vec<&str> {
    lib.lines()
        .filter_map(|line| {
            let line = line
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            line.strip_prefix("mod ")?.strip_suffix(';')
        })
        .collect()
}

#[test]
fn every_crate_map_names_its_modules() {
    let mut missing = Vec::new();
    for krate in crates() {
        let lib = std::fs::read_to_string(Path::new(ROOT).join(&krate).join("src/lib.rs"))
            .unwrap_or_else(|e| panic!("{krate}/src/lib.rs: {e}"));
        let map: String = lib
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        for module in declared(&lib) {
            let named = [
                format!("`{module}`"),
                format!("`{module}.rs`"),
                format!("`{module}/`"),
            ]
            .iter()
            .any(|form| map.contains(form.as_str()))
                || map.contains(&format!("`{module}`:"));
            if !named {
                missing.push(format!("{krate}: {module}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "modules their lib.rs does not name: {missing:?}"
    );
}

#[test]
fn the_readme_layout_names_every_crate() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let layout = readme
        .lines()
        .find(|l| l.starts_with("- Layout:"))
        .expect("a layout line");
    let layout = &readme[readme.find(layout).unwrap()..];
    let layout = &layout[..layout.find("\n- ").unwrap_or(layout.len())];
    let missing: Vec<String> = crates()
        .into_iter()
        .filter(|c| c != ".")
        .filter(|c| !layout.contains(&format!("`{c}/`")))
        .collect();
    assert!(
        missing.is_empty(),
        "crates the README's layout does not name: {missing:?}"
    );
}

/// Every `.rs` file under `dir`.
pub(super) fn sources(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && path.file_name().is_some_and(|n| n != "target") {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The seal on the records a scope is made from (`seam::scope`), and tenancy's reading of a
/// campaign row, are public only because the store's domains are several crates: no code
/// outside `store/` may vouch for a record.
#[test]
fn only_the_store_vouches_for_a_scope() {
    let mut files = Vec::new();
    for krate in crates().into_iter().filter(|c| !c.starts_with("store")) {
        let dir = Path::new(ROOT).join(&krate);
        if krate == "." {
            sources(&dir.join("src"), &mut files);
            sources(&dir.join("tests"), &mut files);
            sources(&dir.join("benches"), &mut files);
        } else {
            sources(&dir, &mut files);
        }
    }
    let vouching: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            // Spelt in two halves, so that this file does not find itself.
            text.contains(concat!("Sealed", "::vouched"))
                || text.contains(concat!("OrgScope", "::vouched"))
                || text.contains(concat!("campaign", "_from_row"))
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        files.len() > 50,
        "the workspace's sources were found: {}",
        files.len()
    );
    assert!(
        vouching.is_empty(),
        "code outside the store vouches for a scope: {vouching:?}"
    );
}

/// What a node runs is answered in one place: the HTTP crate starts no task but its server's
/// connections (the runtime and the composition root start the rest), and the binary's own code
/// reaches the webhook client directly, not through the HTTP crate.
#[test]
fn the_http_crate_starts_nothing_beside_its_server() {
    let mut files = Vec::new();
    sources(&Path::new(ROOT).join("api/src"), &mut files);
    let spawning: Vec<String> = files
        .iter()
        .filter(|path| !path.ends_with("http/server.rs"))
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            [
                "tokio::spawn",
                "spawn_blocking",
                "JoinSet",
                "std::thread::spawn",
            ]
            .iter()
            .any(|spawn| text.contains(spawn))
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(files.len() > 20, "the API's sources were found");
    assert!(
        spawning.is_empty(),
        "the HTTP crate starts tasks in: {spawning:?}"
    );

    let mut binary = Vec::new();
    sources(&Path::new(ROOT).join("src"), &mut binary);
    let through_api: Vec<String> = binary
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            text.contains(concat!("api::", "webhooks")) || text.contains(concat!("api::", "jobs"))
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        through_api.is_empty(),
        "the binary reaches deliveries through the HTTP crate in: {through_api:?}"
    );
}

/// The wall clock is read in one place, the clock every store, job and handler asks (so tests
/// move time instead of waiting for it), and where no store is at hand: a record id's time
/// prefix and `rewards rules test`, which evaluates a file of rows without a database.
#[test]
fn the_wall_clock_is_read_only_by_the_clock() {
    let allowed = [
        "store/seam/src/common/clock.rs",
        "store/seam/src/common/ids.rs",
        "src/commands/rules.rs",
    ];
    let mut files = Vec::new();
    for krate in crates() {
        sources(&Path::new(ROOT).join(&krate).join("src"), &mut files);
    }
    let reading: Vec<String> = files
        .iter()
        .filter(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            let code = match text.find("#[cfg(test)]\nmod tests") {
                Some(at) => &text[..at],
                None => &text,
            };
            // Spelt in two halves, so that this file does not find itself.
            code.contains(concat!("Utc::", "now()")) || code.contains(concat!("ids::", "now()"))
        })
        .map(|path| {
            let relative = path.strip_prefix(ROOT).unwrap_or(path);
            relative
                .display()
                .to_string()
                .trim_start_matches('/')
                .to_string()
        })
        .filter(|path| !allowed.contains(&path.as_str()))
        .collect();
    assert!(files.len() > 50, "the workspace's sources were found");
    assert!(
        reading.is_empty(),
        "production code that reads the wall clock instead of the store's clock: {reading:?}"
    );
}
