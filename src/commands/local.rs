//! The command line's changes in the audit trail: a command that can change something runs for
//! the `local` actor (the OS user running it), its operation named by its subcommands
//! (`key.revoke`), its arguments as given (secrets redacted) as the entry's `after`, and the
//! organisation it names (`--org`, resolved to its id).

use clap::ArgMatches;
use clap::parser::ValueSource;
use serde_json::{Map, Value};
use store::Store;
use store::audit::{Action, Actor};

/// How a command's changes are recorded.
pub enum Audited {
    /// Each write it makes appends the command's entry in its own transaction.
    EachWrite(Action),
    /// One entry after it has run, with its outcome: commands whose writes are many and
    /// bulk (a file's load, the expiry of every due lot).
    Once(Action),
    /// It changes nothing in the database.
    Not,
}

/// Operations that only read: they leave no entry, even when they fail.
const READS: [&str; 9] = [
    "list",
    "show",
    "schedules",
    "pending",
    "backtest",
    "attempts",
    "bans",
    "verify",
    "export",
];

/// Commands that run as one entry (`Audited::Once`).
const ONCE: [&str; 2] = ["ingest", "expire"];

/// Arguments that name what a command acts on, the first present becoming the entry's target.
const TARGETS: [&str; 10] = [
    "key_id", "operator", "email", "username", "id", "campaign", "endpoint", "review", "address",
    "name",
];

/// How the command `matches` parsed is recorded.
pub async fn audited(store: &Store, matches: &ArgMatches) -> Audited {
    let mut names = Vec::new();
    let mut leaf = matches;
    while let Some((name, sub)) = leaf.subcommand() {
        names.push(name.to_owned());
        leaf = sub;
    }
    let operation = names.join(".");
    let last = names.last().map_or("", String::as_str);
    let read = READS.contains(&last)
        || [
            "serve",
            "migrate",
            "generate",
            "audit",
            "rules.test",
            "catalogue.generate",
        ]
        .contains(&operation.as_str())
        || operation.starts_with("audit-log.")
        || operation == "sftp.host-key";
    if read {
        return Audited::Not;
    }
    let arguments = arguments(leaf);
    let mut action = Action::new(operation.clone());
    // `--org`, given once (`operator add` names it `orgs`, and may give several).
    let org = arguments.get("org").or_else(|| arguments.get("orgs"));
    if let Some(Value::String(org)) = org
        && let Ok(found) = store.tenancy().find_org(org).await
    {
        action = action.org(found.id);
    }
    if let Some(target) = TARGETS
        .iter()
        .find_map(|name| arguments.get(*name).and_then(Value::as_str))
    {
        action = action.target(target);
    }
    action = action.after(Value::Object(arguments));
    if ONCE.contains(&operation.as_str()) {
        Audited::Once(action)
    } else {
        Audited::EachWrite(action)
    }
}

/// The arguments given on the command line (not defaults, not `--config` or `--json`): one
/// value as text, several as a list.
fn arguments(matches: &ArgMatches) -> Map<String, Value> {
    let mut out = Map::new();
    for id in matches.ids() {
        let id = id.as_str();
        let given = matches.value_source(id) == Some(ValueSource::CommandLine);
        if !given || id == "config" || id == "json" {
            continue;
        }
        let Ok(Some(raw)) = matches.try_get_raw(id) else {
            continue;
        };
        let mut values: Vec<Value> = raw
            .map(|v| Value::from(v.to_string_lossy().into_owned()))
            .collect();
        let value = if values.len() == 1 {
            values.remove(0)
        } else {
            Value::Array(values)
        };
        out.insert(id.to_owned(), value);
    }
    out
}

/// The OS user running the command: `$USER`, `$LOGNAME`, else the numeric user id.
pub fn os_user() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .filter(|user| !user.is_empty())
        .unwrap_or_else(|| format!("uid {}", uid()))
}

#[cfg(unix)]
#[allow(unsafe_code)]
fn uid() -> u32 {
    // SAFETY: `getuid` reads the process's user id and cannot fail.
    unsafe { libc::getuid() }
}

#[cfg(not(unix))]
fn uid() -> u32 {
    0
}

/// The local actor.
pub fn actor() -> Actor {
    Actor::local(os_user())
}
