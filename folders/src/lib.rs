//! Where files live on a node, the one place that names them: each organisation's SFTP tree
//! (`Tree`, `Folder`): `/inbox` (uploads), `/reports`, `/exports` and `/templates` (read only),
//! the names an upload may take, and the spool where received files wait (`spool_dir`,
//! `spooled`, `sidecar_of`), and how a small record beside a file is written whole or not at
//! all (`write_atomically`). Shared by `ingest` (the doors and the pipeline) and `exports`.
//! Client paths are virtual POSIX paths, normalised so that no path can leave the root: `..`
//! stops at `/`, and anything but the folders and the files directly in them does not
//! exist. Symbolic links are never followed, listed or created.

use std::path::{Path, PathBuf};

/// The folders every organisation sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folder {
    Inbox,
    Reports,
    /// Scheduled ledger exports.
    Exports,
    Templates,
}

impl Folder {
    pub const ALL: [Folder; 4] = [
        Folder::Inbox,
        Folder::Reports,
        Folder::Exports,
        Folder::Templates,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Folder::Inbox => "inbox",
            Folder::Reports => "reports",
            Folder::Exports => "exports",
            Folder::Templates => "templates",
        }
    }

    fn named(name: &str) -> Option<Folder> {
        Folder::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Where a virtual path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Root,
    Folder(Folder),
    File(Folder, String),
}

impl Place {
    /// The normalised virtual path, as `realpath` answers it.
    pub fn virtual_path(&self) -> String {
        match self {
            Place::Root => "/".into(),
            Place::Folder(folder) => format!("/{}", folder.name()),
            Place::File(folder, name) => format!("/{}/{name}", folder.name()),
        }
    }
}

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadPath {
    /// A NUL byte or another control character.
    Invalid,
    /// Nothing there (outside the folders, or deeper than a file in one).
    Missing,
}

/// Normalises `path` (absolute, or relative to `/`) and says where it leads.
pub fn place(path: &str) -> Result<Place, BadPath> {
    if path.chars().any(char::is_control) {
        return Err(BadPath::Invalid);
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            name => parts.push(name),
        }
    }
    match parts.as_slice() {
        [] => Ok(Place::Root),
        [folder] => Folder::named(folder)
            .map(Place::Folder)
            .ok_or(BadPath::Missing),
        // Hidden names are the server's own (upload markers): not there for clients.
        [_, name] if name.starts_with('.') => Err(BadPath::Missing),
        [folder, name] => Folder::named(folder)
            .map(|f| Place::File(f, (*name).to_string()))
            .ok_or(BadPath::Missing),
        _ => Err(BadPath::Missing),
    }
}

const TEMPORARY: [&str; 3] = [".part", ".filepart", ".tmp"];
const ACCEPTED: [&str; 3] = [".csv", ".xlsx", ".parquet"];

fn ends_with_any(name: &str, suffixes: &[&str]) -> bool {
    let lower = name.to_ascii_lowercase();
    suffixes.iter().any(|s| lower.ends_with(s))
}

/// A temporary upload name (WinSCP's and FileZilla's `.filepart` and `.part`, or `.tmp`).
pub fn is_temporary(name: &str) -> bool {
    ends_with_any(name, &TEMPORARY)
}

/// The longest name a file may be uploaded under, in bytes: what the service derives from it
/// (its spool name, `<batch id>__<source>__<name>`, and reports such as
/// `<name>.dry-run.rejected.csv.tmp`) must stay within the file system's 255.
pub const MAX_NAME_BYTES: usize = 200;

/// The checksum sidecar's suffix: `earns.csv.sha256` holds the SHA-256 of `earns.csv` (as
/// `sha256sum` prints it), which must match before the file is read.
pub const SIDECAR: &str = ".sha256";

/// A name that may be uploaded at all: final, temporary or a checksum sidecar, not too long.
pub fn is_uploadable(name: &str) -> bool {
    let sidecar = name.strip_suffix(SIDECAR).is_some_and(is_final_name);
    (ends_with_any(name, &ACCEPTED) || is_temporary(name) || sidecar)
        && name.len() <= MAX_NAME_BYTES
}

/// A complete file's name: `.csv`, `.xlsx` or `.parquet`, not temporary.
pub fn is_final_name(name: &str) -> bool {
    ends_with_any(name, &ACCEPTED) && !is_temporary(name)
}

/// Marks `path` as being uploaded by this process; `AlreadyExists` if an upload of it is in
/// progress. The marker names the host and the process (its id and start time, since ids are
/// reused), so that a restart can tell its own interrupted uploads from another node's live
/// ones (see `marker_is_orphaned`).
pub fn mark_upload(path: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let mut marker = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(upload_marker(path))?;
    let pid = std::process::id();
    let started = process_start(pid).unwrap_or_default();
    writeln!(marker, "{}\n{pid}\n{started}", host_name())
}

/// Whether the upload marked by `marker` belonged to a process of this host that is gone.
pub fn marker_is_orphaned(marker: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(marker) else {
        return false;
    };
    let mut lines = text.lines();
    let owner = (
        lines.next(),
        lines.next().and_then(|p| p.parse::<u32>().ok()),
        lines.next(),
    );
    let (Some(host), Some(pid), Some(started)) = owner else {
        // A marker without an owner (an earlier version's): this host's restart owns it.
        return true;
    };
    host == host_name() && process_start(pid).as_deref() != Some(started)
}

/// This host's name, as the kernel knows it, or empty.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

/// When process `pid` started (clock ticks after boot, `/proc/<pid>/stat`), if it runs.
fn process_start(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces) start at the third; the start
    // time is the 22nd.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19).map(str::to_string)
}

/// The hidden file that marks `path` as being uploaded.
pub fn upload_marker(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.uploading"))
}

/// The templates every organisation finds in `templates/`, built into the binary.
const TEMPLATES: [(&str, &[u8]); 6] = [
    ("earn.csv", include_bytes!("../../templates/earn.csv")),
    ("earn.xlsx", include_bytes!("../../templates/earn.xlsx")),
    (
        "activities.csv",
        include_bytes!("../../templates/activities.csv"),
    ),
    (
        "activities.xlsx",
        include_bytes!("../../templates/activities.xlsx"),
    ),
    (
        "earn.parquet",
        include_bytes!("../../templates/earn.parquet"),
    ),
    ("README.md", include_bytes!("../../templates/README.md")),
];

/// The organisation's folders on disk.
#[derive(Debug, Clone)]
pub struct Tree {
    root: PathBuf,
}

impl Tree {
    /// `data_dir/sftp/<org_id>`, with its folders made if missing and the current
    /// templates in `templates/`.
    pub fn open(data_dir: &Path, org_id: &str) -> std::io::Result<Tree> {
        let root = data_dir.join("sftp").join(org_id);
        for folder in Folder::ALL {
            std::fs::create_dir_all(root.join(folder.name()))?;
        }
        for (name, content) in TEMPLATES {
            let path = root.join(Folder::Templates.name()).join(name);
            if std::fs::read(&path).ok().as_deref() != Some(content) {
                std::fs::write(&path, content)?;
            }
        }
        Ok(Tree { root })
    }

    pub fn folder(&self, folder: Folder) -> PathBuf {
        self.root.join(folder.name())
    }

    pub fn file(&self, folder: Folder, name: &str) -> PathBuf {
        self.folder(folder).join(name)
    }
}

/// Where received files wait for processing: `data_dir/spool/<org_id>/`.
pub fn spool_dir(data_dir: &Path, org_id: &str) -> PathBuf {
    data_dir.join("spool").join(org_id)
}

/// The spooled file of batch `id`, received from `source` under `file_name`:
/// `<batch_id>__<source>__<name>` in its organisation's spool.
pub fn spooled(spool: &Path, id: &str, source: &str, file_name: &str) -> PathBuf {
    spool.join(format!("{id}__{source}__{file_name}"))
}

/// Where the sidecar of the spooled file `spooled` of batch `id` is kept: hidden beside it.
pub fn sidecar_of(spooled: &Path, id: &str) -> PathBuf {
    spooled.with_file_name(format!(".{id}{SIDECAR}"))
}

/// Writes `bytes` to `path` whole or not at all: into a temporary file beside it (its
/// extension with `.tmp` added), then renamed over it, so a reader never sees half a record.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy())
        .unwrap_or_default();
    let temporary = path.with_extension(format!("{extension}.tmp"));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uploadable_names() {
        for name in ["a.csv", "a.XLSX", "a.parquet", "a.csv.part", "a.csv.sha256"] {
            assert!(is_uploadable(name), "{name}");
        }
        let long = format!("{}.csv", "n".repeat(MAX_NAME_BYTES));
        for name in ["a.txt", "a.txt.sha256", "a.sha256", long.as_str()] {
            assert!(!is_uploadable(name), "{name}");
        }
        assert!(!is_final_name("a.csv.sha256"), "a sidecar is not a batch");
    }

    #[test]
    fn paths_never_leave_the_root() {
        let cases = [
            ("/", Ok(Place::Root)),
            ("", Ok(Place::Root)),
            ("..", Ok(Place::Root)),
            ("/../../..", Ok(Place::Root)),
            ("inbox", Ok(Place::Folder(Folder::Inbox))),
            ("/inbox/./", Ok(Place::Folder(Folder::Inbox))),
            (
                "/inbox/a.csv",
                Ok(Place::File(Folder::Inbox, "a.csv".into())),
            ),
            (
                "/reports/../inbox/a.csv",
                Ok(Place::File(Folder::Inbox, "a.csv".into())),
            ),
            ("../../etc/passwd", Err(BadPath::Missing)),
            ("/etc/passwd", Err(BadPath::Missing)),
            ("/inbox/sub/a.csv", Err(BadPath::Missing)),
            ("/inbox/.a.csv.uploading", Err(BadPath::Missing)),
            ("/inbox/a\0.csv", Err(BadPath::Invalid)),
            ("/inbox/a\n.csv", Err(BadPath::Invalid)),
        ];
        for (path, expected) in cases {
            assert_eq!(place(path), expected, "{path:?}");
        }
        assert_eq!(
            place("/inbox/../templates/x").unwrap().virtual_path(),
            "/templates/x"
        );
    }

    #[test]
    fn a_record_is_written_whole_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv.result.json");
        write_atomically(&path, b"{\"state\":\"done\"}").unwrap();
        write_atomically(&path, b"{\"state\":\"failed\"}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"state\":\"failed\"}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.csv.result.json")]);
    }
}
