//! The SFTP operations of one session, on its organisation's tree (see `tree`). Uploads go to
//! `/inbox` only, as `.csv` or `.xlsx` files or under a temporary name (`.part`, `.filepart`,
//! `.tmp`). A file is handed over for processing when its write handle is closed, or when a
//! temporary upload is renamed to its final name; an upload whose connection drops is deleted.

use std::collections::HashMap;
use std::fs::{File as DiskFile, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use russh_sftp::protocol::{
    Attrs, Data, File, FileAttributes, Handle, Name, OpenFlags, Status, StatusCode, Version,
};
use russh_sftp::server::StatusReply;
use store::{BatchState, SftpLogin};

use super::Settings;
use crate::folders::{
    BadPath, Folder, MAX_NAME_BYTES, Place, Tree, is_final_name, is_uploadable, mark_upload, place,
    upload_marker,
};
use crate::intake;

/// What the session shares with the server: the store and where files live.
pub struct Context {
    pub store: store::Store,
    pub data_dir: PathBuf,
    pub settings: Settings,
}

enum Open {
    Dir(Option<Vec<File>>),
    Read(DiskFile),
    Write(Upload),
}

struct Upload {
    file: DiskFile,
    name: String,
    path: PathBuf,
    /// Why the upload can no longer succeed (it passed the size limit).
    refused: Option<String>,
}

pub struct Files {
    context: Arc<Context>,
    login: SftpLogin,
    peer: String,
    tree: Tree,
    handles: HashMap<String, Open>,
    next_handle: u64,
    /// The batch each file this connection handed over became, by its name in the inbox.
    handed_over: HashMap<String, String>,
}

/// Files handed over that one connection remembers (see `received`).
const MAX_REMEMBERED: usize = 1024;

/// The most bytes one read answers with.
const MAX_READ: u32 = 256 * 1024;

fn refused(code: StatusCode, message: impl Into<String>) -> StatusReply {
    code.with_message(message)
}

fn status(id: u32) -> Status {
    Status {
        id,
        status_code: StatusCode::Ok,
        error_message: "Ok".into(),
        language_tag: "en-US".into(),
    }
}

fn io_error(err: std::io::Error) -> StatusReply {
    match err.kind() {
        std::io::ErrorKind::NotFound => StatusCode::NoSuchFile.into(),
        std::io::ErrorKind::PermissionDenied => StatusCode::PermissionDenied.into(),
        _ => refused(StatusCode::Failure, err.to_string()),
    }
}

fn folder_attrs() -> FileAttributes {
    let mut attrs = FileAttributes::empty();
    attrs.permissions = Some(0o040755);
    attrs
}

impl Files {
    pub fn new(context: Arc<Context>, login: SftpLogin, peer: String) -> std::io::Result<Files> {
        let tree = Tree::open(&context.data_dir, &login.org_id)?;
        Ok(Files {
            context,
            login,
            peer,
            tree,
            handles: HashMap::new(),
            next_handle: 0,
            handed_over: HashMap::new(),
        })
    }

    fn resolve(&self, path: &str) -> Result<Place, StatusReply> {
        place(path).map_err(|bad| match bad {
            BadPath::Invalid => refused(StatusCode::BadMessage, "invalid characters in the path"),
            BadPath::Missing => StatusCode::NoSuchFile.into(),
        })
    }

    fn add(&mut self, open: Open) -> String {
        self.next_handle += 1;
        let handle = self.next_handle.to_string();
        self.handles.insert(handle.clone(), open);
        handle
    }

    /// Logs a refused operation with who asked.
    fn refuse(&self, what: &str, path: &str, reply: StatusReply) -> StatusReply {
        tracing::warn!(
            user = %self.login.username, org = %self.login.org_id, peer = %self.peer,
            what, path, reason = reply.error_message.as_deref().unwrap_or("refused"),
            "SFTP request refused"
        );
        reply
    }

    /// A regular file in a folder: never a link, a directory or a device.
    fn regular(
        &self,
        folder: Folder,
        name: &str,
    ) -> Result<(PathBuf, std::fs::Metadata), StatusReply> {
        let path = self.tree.file(folder, name);
        let meta = std::fs::symlink_metadata(&path).map_err(io_error)?;
        if !meta.file_type().is_file() {
            return Err(StatusCode::NoSuchFile.into());
        }
        Ok((path, meta))
    }

    fn listing(&self, place: &Place) -> Result<Vec<File>, StatusReply> {
        match place {
            Place::Root => Ok(Folder::ALL
                .iter()
                .map(|f| File::new(f.name(), folder_attrs()))
                .collect()),
            Place::Folder(folder) => {
                let entries = std::fs::read_dir(self.tree.folder(*folder)).map_err(io_error)?;
                let mut files = Vec::new();
                for entry in entries.flatten() {
                    // Links and anything but plain files are not shown.
                    let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                        continue;
                    };
                    let name = entry.file_name().to_string_lossy().to_string();
                    // Hidden files are the server's own (upload markers).
                    if meta.file_type().is_file() && !name.starts_with('.') {
                        files.push(File::new(name, FileAttributes::from(&meta)));
                    }
                }
                files.sort_by(|a, b| a.filename.cmp(&b.filename));
                Ok(files)
            }
            Place::File(..) => Err(StatusCode::NoSuchFile.into()),
        }
    }

    async fn attrs(&self, place: &Place) -> Result<FileAttributes, StatusReply> {
        match place {
            Place::Root | Place::Folder(_) => Ok(folder_attrs()),
            Place::File(folder, name) => match self.regular(*folder, name) {
                Ok((_, meta)) => Ok(FileAttributes::from(&meta)),
                Err(missing) if *folder == Folder::Inbox => {
                    self.received(name).await?.ok_or(missing)
                }
                Err(missing) => Err(missing),
            },
        }
    }

    /// A file handed over has left the inbox, but `stat` still finds it at its upload path,
    /// with the size written, until its batch ends (a duplicate, which ends as it is received,
    /// for the connection that sent it): clients that confirm an upload by its size
    /// (paramiko's `put`, WinSCP, lftp) find what they sent.
    async fn received(&self, name: &str) -> Result<Option<FileAttributes>, StatusReply> {
        let store = &self.context.store;
        let org = self.login.org();
        let mine = match self.handed_over.get(name) {
            Some(id) => store.batches().get_batch(&org, id).await.ok().filter(|b| {
                matches!(
                    b.state,
                    BatchState::Received | BatchState::Processing | BatchState::Duplicate
                )
            }),
            None => None,
        };
        let batch = match mine {
            Some(batch) => Some(batch),
            None => store
                .batches()
                .waiting_batch_named(&org, name)
                .await
                .map_err(|err| {
                    tracing::error!(%err, file = name, "a received file could not be looked up");
                    refused(
                        StatusCode::Failure,
                        "the file could not be looked up; try again",
                    )
                })?,
        };
        Ok(batch.map(|batch| {
            let mut attrs = FileAttributes::empty();
            attrs.size = Some(batch.size.max(0) as u64);
            attrs.permissions = Some(0o100600);
            let at = u32::try_from(batch.received_at.timestamp()).unwrap_or_default();
            attrs.atime = Some(at);
            attrs.mtime = Some(at);
            attrs
        }))
    }

    /// Hands a complete upload over for processing.
    async fn hand_over(&mut self, path: &std::path::Path, name: &str) -> Result<(), StatusReply> {
        let received = intake::receive(
            &self.context.store,
            &self.context.data_dir,
            &self.login.org(),
            path,
            name,
            "sftp",
            Some(&self.login.username),
        )
        .await;
        match received {
            Ok(batch) => {
                tracing::info!(
                    user = %self.login.username, org = %self.login.org_id, peer = %self.peer,
                    file = name, batch = %batch.id, "upload complete"
                );
                // Kept for the connection's life; a client sending thousands of files on one
                // connection forgets the oldest (the store still answers for waiting batches).
                if self.handed_over.len() >= MAX_REMEMBERED {
                    self.handed_over.clear();
                }
                self.handed_over.insert(name.to_string(), batch.id);
                Ok(())
            }
            Err(err) => {
                tracing::error!(file = name, %err, "an upload could not be handed over");
                Err(refused(
                    StatusCode::Failure,
                    "the file could not be received; send it again",
                ))
            }
        }
    }

    fn check_upload_name(&self, path: &str, name: &str) -> Result<(), StatusReply> {
        if name.len() > MAX_NAME_BYTES {
            return Err(self.refuse(
                "upload",
                path,
                refused(
                    StatusCode::PermissionDenied,
                    format!("file names are at most {MAX_NAME_BYTES} bytes"),
                ),
            ));
        }
        if is_uploadable(name) && !name.starts_with('.') {
            Ok(())
        } else {
            Err(self.refuse(
                "upload",
                path,
                refused(
                    StatusCode::PermissionDenied,
                    "only .csv, .xlsx and .parquet files are accepted (or a temporary name ending .part, .filepart or .tmp)",
                ),
            ))
        }
    }
}

impl Drop for Files {
    /// A connection that ends with uploads still open leaves no half file behind.
    fn drop(&mut self) {
        for open in self.handles.values() {
            if let Open::Write(upload) = open {
                tracing::warn!(
                    user = %self.login.username, org = %self.login.org_id, peer = %self.peer,
                    file = %upload.name, "connection ended during an upload; the partial file is deleted"
                );
                let _ = std::fs::remove_file(&upload.path);
                let _ = std::fs::remove_file(upload_marker(&upload.path));
            }
        }
    }
}

impl russh_sftp::server::Handler for Files {
    type Error = StatusReply;

    fn unimplemented(&self) -> Self::Error {
        StatusCode::OpUnsupported.into()
    }

    async fn init(
        &mut self,
        _version: u32,
        _extensions: HashMap<String, String>,
    ) -> Result<Version, Self::Error> {
        Ok(Version::new())
    }

    async fn realpath(&mut self, id: u32, path: String) -> Result<Name, Self::Error> {
        let place = self.resolve(&path)?;
        Ok(Name {
            id,
            files: vec![File::new(place.virtual_path(), folder_attrs())],
        })
    }

    async fn opendir(&mut self, id: u32, path: String) -> Result<Handle, Self::Error> {
        let place = self.resolve(&path)?;
        let listing = self.listing(&place)?;
        let handle = self.add(Open::Dir(Some(listing)));
        Ok(Handle { id, handle })
    }

    async fn readdir(&mut self, id: u32, handle: String) -> Result<Name, Self::Error> {
        match self.handles.get_mut(&handle) {
            Some(Open::Dir(listing)) => match listing.take() {
                Some(files) if !files.is_empty() => Ok(Name { id, files }),
                _ => Err(StatusCode::Eof.into()),
            },
            _ => Err(StatusCode::Failure.into()),
        }
    }

    async fn stat(&mut self, id: u32, path: String) -> Result<Attrs, Self::Error> {
        let place = self.resolve(&path)?;
        Ok(Attrs {
            id,
            attrs: self.attrs(&place).await?,
        })
    }

    async fn lstat(&mut self, id: u32, path: String) -> Result<Attrs, Self::Error> {
        self.stat(id, path).await
    }

    async fn fstat(&mut self, id: u32, handle: String) -> Result<Attrs, Self::Error> {
        let meta = match self.handles.get(&handle) {
            Some(Open::Read(file)) => file.metadata(),
            Some(Open::Write(upload)) => upload.file.metadata(),
            Some(Open::Dir(_)) => {
                return Ok(Attrs {
                    id,
                    attrs: folder_attrs(),
                });
            }
            None => return Err(StatusCode::Failure.into()),
        };
        Ok(Attrs {
            id,
            attrs: FileAttributes::from(&meta.map_err(io_error)?),
        })
    }

    async fn open(
        &mut self,
        id: u32,
        filename: String,
        pflags: OpenFlags,
        _attrs: FileAttributes,
    ) -> Result<Handle, Self::Error> {
        let Place::File(folder, name) = self.resolve(&filename)? else {
            return Err(StatusCode::NoSuchFile.into());
        };
        let writes = pflags.intersects(
            OpenFlags::WRITE | OpenFlags::CREATE | OpenFlags::TRUNCATE | OpenFlags::APPEND,
        );
        if !writes {
            let (path, _) = self.regular(folder, &name)?;
            let file = DiskFile::open(path).map_err(io_error)?;
            let handle = self.add(Open::Read(file));
            return Ok(Handle { id, handle });
        }
        if folder != Folder::Inbox {
            return Err(self.refuse(
                "upload",
                &filename,
                refused(
                    StatusCode::PermissionDenied,
                    "reports/ and templates/ are read only; upload into inbox/",
                ),
            ));
        }
        self.check_upload_name(&filename, &name)?;
        let path = self.tree.file(folder, &name);
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && !meta.file_type().is_file()
        {
            return Err(self.refuse("upload", &filename, StatusCode::PermissionDenied.into()));
        }
        let mut options = OpenOptions::new();
        options.write(true).create(true);
        if pflags.contains(OpenFlags::EXCLUDE) {
            options.create_new(true);
        } else if !pflags.contains(OpenFlags::APPEND) {
            options.truncate(true);
        }
        // Marks the upload as in progress for the inbox watcher (see `watcher`), and keeps a
        // second writer (another connection, on any node) off the same file: the bytes a batch
        // is read from are the bytes of one upload.
        if let Err(err) = mark_upload(&path) {
            if err.kind() == std::io::ErrorKind::AlreadyExists {
                return Err(self.refuse(
                    "upload",
                    &filename,
                    refused(
                        StatusCode::Failure,
                        format!("{name} is being uploaded by another connection"),
                    ),
                ));
            }
            return Err(io_error(err));
        }
        let file = match options.open(&path) {
            Ok(file) => file,
            Err(err) => {
                let _ = std::fs::remove_file(upload_marker(&path));
                return Err(io_error(err));
            }
        };
        tracing::info!(
            user = %self.login.username, org = %self.login.org_id, peer = %self.peer,
            file = %name, "upload started"
        );
        let handle = self.add(Open::Write(Upload {
            file,
            name,
            path,
            refused: None,
        }));
        Ok(Handle { id, handle })
    }

    async fn read(
        &mut self,
        id: u32,
        handle: String,
        offset: u64,
        len: u32,
    ) -> Result<Data, Self::Error> {
        let Some(Open::Read(file)) = self.handles.get(&handle) else {
            return Err(StatusCode::Failure.into());
        };
        let mut data = vec![0u8; len.min(MAX_READ) as usize];
        let read = file.read_at(&mut data, offset).map_err(io_error)?;
        if read == 0 {
            return Err(StatusCode::Eof.into());
        }
        data.truncate(read);
        Ok(Data { id, data })
    }

    async fn write(
        &mut self,
        id: u32,
        handle: String,
        offset: u64,
        data: Vec<u8>,
    ) -> Result<Status, Self::Error> {
        let limit = self.context.settings.max_upload_bytes;
        let Some(Open::Write(upload)) = self.handles.get_mut(&handle) else {
            return Err(StatusCode::Failure.into());
        };
        if let Some(reason) = &upload.refused {
            return Err(refused(StatusCode::Failure, reason.clone()));
        }
        if offset.saturating_add(data.len() as u64) > limit {
            let reason = format!("the file is larger than the {limit}-byte limit");
            upload.refused = Some(reason.clone());
            let name = upload.name.clone();
            return Err(self.refuse("upload", &name, refused(StatusCode::Failure, reason)));
        }
        upload.file.write_all_at(&data, offset).map_err(io_error)?;
        Ok(status(id))
    }

    async fn close(&mut self, id: u32, handle: String) -> Result<Status, Self::Error> {
        match self.handles.remove(&handle) {
            Some(Open::Write(upload)) => {
                drop(upload.file);
                if let Some(reason) = upload.refused {
                    let _ = std::fs::remove_file(upload_marker(&upload.path));
                    let _ = std::fs::remove_file(&upload.path);
                    return Err(refused(StatusCode::Failure, reason));
                }
                let _ = std::fs::remove_file(upload_marker(&upload.path));
                if is_final_name(&upload.name) {
                    self.hand_over(&upload.path, &upload.name).await?;
                }
                Ok(status(id))
            }
            Some(_) => Ok(status(id)),
            None => Err(StatusCode::Failure.into()),
        }
    }

    async fn remove(&mut self, id: u32, filename: String) -> Result<Status, Self::Error> {
        match self.resolve(&filename)? {
            Place::File(Folder::Inbox, name) => {
                let (path, _) = self.regular(Folder::Inbox, &name)?;
                std::fs::remove_file(path).map_err(io_error)?;
                Ok(status(id))
            }
            _ => Err(self.refuse("remove", &filename, StatusCode::PermissionDenied.into())),
        }
    }

    async fn rename(
        &mut self,
        id: u32,
        oldpath: String,
        newpath: String,
    ) -> Result<Status, Self::Error> {
        let (Place::File(Folder::Inbox, old), Place::File(Folder::Inbox, new)) =
            (self.resolve(&oldpath)?, self.resolve(&newpath)?)
        else {
            return Err(self.refuse(
                "rename",
                &newpath,
                refused(
                    StatusCode::PermissionDenied,
                    "files can only be renamed within inbox/",
                ),
            ));
        };
        self.check_upload_name(&newpath, &new)?;
        let (from, _) = self.regular(Folder::Inbox, &old)?;
        let to = self.tree.file(Folder::Inbox, &new);
        if std::fs::symlink_metadata(&to).is_ok() || upload_marker(&to).exists() {
            return Err(refused(
                StatusCode::Failure,
                format!("{new} already exists"),
            ));
        }
        // An upload this connection still has open is renamed with its marker, and is handed
        // over when it is closed: a file is complete only then, whatever its name.
        let open = self.handles.values_mut().find_map(|open| match open {
            Open::Write(upload) if upload.path == from => Some(upload),
            _ => None,
        });
        if let Some(upload) = open {
            std::fs::rename(upload_marker(&from), upload_marker(&to)).map_err(io_error)?;
            std::fs::rename(&from, &to).map_err(io_error)?;
            upload.path = to;
            upload.name = new;
            return Ok(status(id));
        }
        if upload_marker(&from).exists() {
            return Err(refused(
                StatusCode::Failure,
                format!("{old} is being uploaded by another connection"),
            ));
        }
        std::fs::rename(&from, &to).map_err(io_error)?;
        if is_final_name(&new) {
            self.hand_over(&to, &new).await?;
        }
        Ok(status(id))
    }

    async fn setstat(
        &mut self,
        id: u32,
        path: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        // Clients set times and modes after an upload; they are accepted and ignored.
        self.resolve(&path)?;
        Ok(status(id))
    }

    async fn fsetstat(
        &mut self,
        id: u32,
        _handle: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        Ok(status(id))
    }

    async fn mkdir(
        &mut self,
        _id: u32,
        path: String,
        _attrs: FileAttributes,
    ) -> Result<Status, Self::Error> {
        Err(self.refuse(
            "mkdir",
            &path,
            refused(StatusCode::PermissionDenied, "folders cannot be made"),
        ))
    }

    async fn rmdir(&mut self, _id: u32, path: String) -> Result<Status, Self::Error> {
        Err(self.refuse("rmdir", &path, StatusCode::PermissionDenied.into()))
    }

    async fn symlink(
        &mut self,
        _id: u32,
        linkpath: String,
        _targetpath: String,
    ) -> Result<Status, Self::Error> {
        Err(self.refuse(
            "symlink",
            &linkpath,
            refused(StatusCode::PermissionDenied, "links cannot be made"),
        ))
    }

    async fn readlink(&mut self, _id: u32, path: String) -> Result<Name, Self::Error> {
        Err(self.refuse("readlink", &path, StatusCode::NoSuchFile.into()))
    }
}

#[cfg(test)]
mod tests {
    use russh_sftp::protocol::{FileAttributes, OpenFlags};
    use russh_sftp::server::Handler;

    use super::*;

    const WRITE: OpenFlags = OpenFlags::WRITE
        .union(OpenFlags::CREATE)
        .union(OpenFlags::TRUNCATE);

    /// Two connections of one organisation's user.
    async fn connections(
        store: &store::Store,
        dir: &std::path::Path,
    ) -> (Files, Files, store::OrgScope) {
        let org = store.tenancy().create_org("Acme").await.unwrap().scope();
        let password = "a long enough password";
        let user = store::NewSftpUser {
            username: "acme".into(),
            password: Some(password.into()),
            key: None,
        };
        store.tenancy().create_sftp_user(&org, user).await.unwrap();
        let login = store
            .tenancy()
            .sftp_login_password("acme", password)
            .await
            .unwrap()
            .expect("the user logs in");
        let context = Arc::new(Context {
            store: store.clone(),
            data_dir: dir.to_path_buf(),
            settings: Settings::default(),
        });
        let first = Files::new(context.clone(), login.clone(), "first".into()).unwrap();
        let second = Files::new(context, login, "second".into()).unwrap();
        (first, second, org)
    }

    /// A file has one writer at a time, and is received only when that writer closes it, even
    /// if it was renamed to its final name while open: the batch holds every byte written.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_upload_has_one_writer_and_is_received_when_closed() {
        let db = store::testing::TestStore::sqlite().await;
        let dir = tempfile::tempdir().unwrap();
        let (mut first, mut second, org) = connections(&db.store, dir.path()).await;
        let empty = FileAttributes::empty;
        let handle = first
            .open(1, "/inbox/earns.part".into(), WRITE, empty())
            .await
            .unwrap()
            .handle;
        first
            .write(2, handle.clone(), 0, b"id,walletId,amount,date\n".to_vec())
            .await
            .unwrap();
        let other = second
            .open(3, "/inbox/earns.part".into(), WRITE, empty())
            .await;
        assert!(other.is_err(), "a second writer is refused");

        first
            .rename(4, "/inbox/earns.part".into(), "/inbox/earns.csv".into())
            .await
            .unwrap();
        let other = second
            .open(5, "/inbox/earns.csv".into(), WRITE, empty())
            .await;
        assert!(other.is_err(), "the renamed upload is still being written");
        let batches = || {
            db.store
                .batches()
                .list_batches(&org, store::Page::default())
        };
        assert_eq!(batches().await.unwrap().total, 0, "not received while open");
        let rest = b"e-1,w-1,5,2026-11-20\n".to_vec();
        first.write(6, handle.clone(), 24, rest).await.unwrap();
        first.close(7, handle).await.unwrap();
        let received = batches().await.unwrap();
        assert_eq!(received.total, 1);
        assert_eq!(received.items[0].file_name, "earns.csv");
        assert_eq!(received.items[0].size, 45, "every byte written");
    }
}
