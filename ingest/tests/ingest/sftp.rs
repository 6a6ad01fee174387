//! The SFTP server end to end with OpenSSH's own `sftp` client: key and password logins,
//! uploads that become batches, the temporary-name-then-rename flow, downloads from `reports/`,
//! and every refusal a security review asks for.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ingest::sftp::{BanPolicy, Settings};
use store::testing::TestStore;
use store::{BatchState, NewSftpUser, Page, Store};

struct Server {
    _db: TestStore,
    store: Store,
    org: store::OrgScope,
    port: u16,
    dir: tempfile::TempDir,
    /// Alice's private key (user `alice`, who also has a password).
    alice_key: PathBuf,
    /// A key of another user, `bob`.
    bob_key: PathBuf,
    _stop: tokio::sync::oneshot::Sender<()>,
}

const PASSWORD: &str = "a long enough secret";

fn keygen(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    path
}

fn public_key(private: &Path) -> store::NewSftpKey {
    let text = std::fs::read_to_string(format!("{}.pub", private.display())).unwrap();
    ingest::sftp::keys::parse_public_key(&text).unwrap()
}

async fn start(settings: Settings) -> Server {
    let db = TestStore::sqlite().await;
    let store = db.store.clone();
    let org = store.tenancy().create_org("Acme").await.unwrap().scope();
    let other = store.tenancy().create_org("Other").await.unwrap().scope();
    let dir = tempfile::tempdir().unwrap();
    let alice_key = keygen(dir.path(), "alice");
    let bob_key = keygen(dir.path(), "bob");
    let alice = NewSftpUser {
        username: "alice".into(),
        password: Some(PASSWORD.into()),
        key: Some(public_key(&alice_key)),
    };
    store.tenancy().create_sftp_user(&org, alice).await.unwrap();
    let bob = NewSftpUser {
        username: "bob".into(),
        key: Some(public_key(&bob_key)),
        ..Default::default()
    };
    store.tenancy().create_sftp_user(&other, bob).await.unwrap();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let data_dir = dir.path().join("data");
    tokio::spawn(ingest::sftp::serve(
        listener,
        store.clone(),
        data_dir,
        settings,
        async {
            let _ = stopped.await;
        },
    ));
    Server {
        _db: db,
        store,
        org,
        port,
        dir,
        alice_key,
        bob_key,
        _stop: stop,
    }
}

fn quick() -> Settings {
    Settings {
        auth_rejection_delay: Duration::from_millis(50),
        ..Settings::default()
    }
}

/// What `sftp -b` did: whether every command succeeded, and what it printed.
struct Run {
    ok: bool,
    out: String,
}

enum Login<'a> {
    Key(&'a Path),
    Password(&'a str),
}

impl Server {
    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn file(&self, name: &str, content: &[u8]) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Runs `commands` with OpenSSH's `sftp -b` as `user`.
    async fn sftp(&self, user: &str, login: Login<'_>, commands: &str) -> Run {
        self.sftp_logging(user, login, commands, "ERROR").await
    }

    /// As `sftp`, printing what OpenSSH logs at `level` (`INFO` shows the server's banner).
    async fn sftp_logging(&self, user: &str, login: Login<'_>, commands: &str, level: &str) -> Run {
        let script = self.file("batch.txt", commands.as_bytes());
        let mut command = Command::new("sftp");
        command
            .current_dir(self.dir.path())
            .args(["-P", &self.port.to_string()])
            .args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
            ])
            .args([
                "-o",
                &format!("LogLevel={level}"),
                "-o",
                "ConnectTimeout=10",
            ])
            .stdin(Stdio::null());
        match login {
            Login::Key(key) => {
                command.arg("-i").arg(key).args([
                    "-o",
                    "IdentitiesOnly=yes",
                    "-o",
                    "PreferredAuthentications=publickey",
                ]);
            }
            Login::Password(password) => {
                // `sftp -b` never prompts: the password comes from an askpass program.
                let askpass = self.dir.path().join("askpass.sh");
                let mut script = std::fs::File::create(&askpass).unwrap();
                writeln!(script, "#!/bin/sh\necho '{password}'").unwrap();
                drop(script);
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
                command
                    .env("SSH_ASKPASS", &askpass)
                    .env("SSH_ASKPASS_REQUIRE", "force")
                    .env("DISPLAY", ":0")
                    .args([
                        "-o",
                        "PreferredAuthentications=password",
                        "-o",
                        "PubkeyAuthentication=no",
                    ])
                    .args(["-o", "NumberOfPasswordPrompts=1", "-o", "BatchMode=no"]);
            }
        }
        // After the login options: `-b` turns batch mode on, and the first value of an option wins.
        command
            .arg("-b")
            .arg(&script)
            .arg(format!("{user}@127.0.0.1"));
        let output = tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap();
        Run {
            ok: output.status.success(),
            out: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        }
    }

    async fn batches(&self) -> Vec<store::Batch> {
        self.store
            .batches()
            .list_batches(
                &self.org,
                Page {
                    page: 1,
                    limit: 100,
                },
            )
            .await
            .unwrap()
            .items
    }
}

const EARNS: &[u8] = b"id,walletId,amount,date\ne-1,card-1,12.50,2026-11-20\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_login_uploads_a_file_that_becomes_a_batch() {
    let server = start(quick()).await;
    server.file("earns.csv", EARNS);
    // `ls -l` of the file just sent: clients confirm an upload so (paramiko's `put` by `stat`).
    let run = server
        .sftp(
            "alice",
            Login::Key(&server.alice_key),
            "ls\nput earns.csv inbox/earns.csv\nls inbox\nls -l inbox/earns.csv\n",
        )
        .await;
    assert!(run.ok, "{}", run.out);
    for folder in ["inbox", "reports", "templates"] {
        assert!(run.out.contains(folder), "{}", run.out);
    }
    let confirmed = run
        .out
        .lines()
        .find(|l| l.starts_with("-rw") && l.ends_with("inbox/earns.csv"));
    let size = EARNS.len().to_string();
    assert!(
        confirmed.is_some_and(|l| l.split_whitespace().any(|w| w == size)),
        "stat finds the upload with its size until its batch ends: {}",
        run.out
    );
    let batches = server.batches().await;
    assert_eq!(batches.len(), 1);
    let batch = &batches[0];
    assert_eq!(
        (batch.file_name.as_str(), batch.state),
        ("earns.csv", BatchState::Received)
    );
    assert_eq!(batch.size, EARNS.len() as i64);
    assert_eq!(batch.username.as_deref(), Some("alice"));
    // Handed over: out of the inbox, into the spool.
    let inbox = server
        .data()
        .join("sftp")
        .join(server.org.id())
        .join("inbox");
    assert_eq!(std::fs::read_dir(inbox).unwrap().count(), 0);
    let spool = ingest::intake::spool_dir(&server.data(), server.org.id());
    let spooled: Vec<_> = std::fs::read_dir(spool).unwrap().flatten().collect();
    assert_eq!(spooled.len(), 1);
    assert_eq!(std::fs::read(spooled[0].path()).unwrap(), EARNS);

    // The same content again is a duplicate.
    let again = server
        .sftp(
            "alice",
            Login::Key(&server.alice_key),
            "put earns.csv inbox/again.csv\n",
        )
        .await;
    assert!(again.ok, "{}", again.out);
    let batches = server.batches().await;
    assert_eq!(batches[0].state, BatchState::Duplicate);
    assert_eq!(batches[0].duplicate_of.as_deref(), Some(batch.id.as_str()));
    // It is reported at once, naming the batch it repeats, and it is an event.
    let reports = server
        .data()
        .join("sftp")
        .join(server.org.id())
        .join("reports");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reports.join("again.csv.result.json")).unwrap())
            .unwrap();
    assert_eq!(report["state"], "duplicate");
    assert_eq!(report["duplicateOf"], batch.id.as_str());
    assert_eq!(report["batch"], batches[0].id.as_str());
    while server
        .store
        .events()
        .dispatch_events(500)
        .await
        .unwrap()
        .events
        > 0
    {}
    let duplicates = store::EventFilter {
        types: vec![store::EventType::BatchDuplicate],
        ..Default::default()
    };
    let page = Page { page: 1, limit: 10 };
    let events = server
        .store
        .events()
        .feed(&server.org, None, &duplicates, page)
        .await;
    let events = events.unwrap().items;
    assert_eq!(events.len(), 1, "one batch.duplicate");
    match &store::EventData::of(&events[0].data).unwrap() {
        store::EventData::Batch(b) => {
            assert_eq!(b.duplicate_of.as_deref(), Some(batch.id.as_str()));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_temporary_upload_is_handed_over_when_renamed() {
    let server = start(quick()).await;
    server.file("earns.csv", EARNS);
    let run = server
        .sftp(
            "alice",
            Login::Password(PASSWORD),
            "put earns.csv inbox/earns.csv.filepart\nls inbox\nrename inbox/earns.csv.filepart inbox/earns.csv\n",
        )
        .await;
    assert!(run.ok, "{}", run.out);
    assert!(
        run.out.contains("earns.csv.filepart"),
        "listed while uploading: {}",
        run.out
    );
    let batches = server.batches().await;
    assert_eq!(batches.len(), 1, "only the rename hands the file over");
    assert_eq!(batches[0].file_name, "earns.csv");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_can_be_downloaded_but_not_written() {
    let server = start(quick()).await;
    let reports = server
        .data()
        .join("sftp")
        .join(server.org.id())
        .join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    std::fs::write(
        reports.join("earns.csv.result.json"),
        b"{\"state\":\"completed\"}",
    )
    .unwrap();
    let run = server
        .sftp(
            "alice",
            Login::Key(&server.alice_key),
            "get reports/earns.csv.result.json result.json\nget templates/earn.csv template.csv\n-put result.json reports/x.csv\n",
        )
        .await;
    assert!(run.ok, "{}", run.out);
    assert_eq!(
        std::fs::read(server.dir.path().join("result.json")).unwrap(),
        b"{\"state\":\"completed\"}"
    );
    assert!(!reports.join("x.csv").exists());
    let template = std::fs::read_to_string(server.dir.path().join("template.csv")).unwrap();
    assert!(
        template.starts_with("id,walletId,amount,date"),
        "{template}"
    );
    assert!(
        run.out.contains("read only") || run.out.contains("ermission denied"),
        "{}",
        run.out
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_links_names_and_sizes_are_refused() {
    let server = start(Settings {
        max_upload_bytes: 1024,
        ..quick()
    })
    .await;
    server.file("notes.txt", b"hello");
    server.file("big.csv", &vec![b'x'; 4096]);
    let outside = server.dir.path().join("outside.csv");
    std::fs::write(&outside, b"outside").unwrap();
    let escape = format!("put notes.txt ../../../../../..{}\n", outside.display());
    // 236 characters: more than what the service can derive its own names from.
    let long = format!("put small.csv inbox/{}.csv\n", "n".repeat(232));
    server.file("small.csv", b"id\n");
    for (commands, what) in [
        ("cd ..\npwd\n", None),
        ("get ../../etc/passwd passwd\n", Some("etc/passwd")),
        ("get /etc/passwd passwd\n", Some("/etc/passwd")),
        ("put notes.txt inbox/notes.txt\n", Some("extension")),
        ("put big.csv inbox/big.csv\n", Some("size")),
        ("ln -s /etc/passwd inbox/link.csv\n", Some("symlink")),
        ("mkdir inbox/sub\n", Some("mkdir")),
        (escape.as_str(), Some("outside")),
        (long.as_str(), Some("long name")),
    ] {
        let run = server
            .sftp("alice", Login::Key(&server.alice_key), commands)
            .await;
        match what {
            None => {
                assert!(run.ok, "{commands}: {}", run.out);
                assert!(
                    run.out.contains("Remote working directory: /\n"),
                    "{}",
                    run.out
                );
            }
            Some(what) => assert!(!run.ok, "{what} should be refused: {}", run.out),
        }
    }
    assert!(!server.dir.path().join("passwd").exists());
    assert_eq!(std::fs::read(&outside).unwrap(), b"outside");
    let inbox = server
        .data()
        .join("sftp")
        .join(server.org.id())
        .join("inbox");
    assert_eq!(
        std::fs::read_dir(inbox).unwrap().count(),
        0,
        "nothing was left behind"
    );
    assert!(server.batches().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_fail_and_repeated_failures_ban_the_address() {
    let server = start(Settings {
        ban: BanPolicy {
            failures: 3,
            window: Duration::from_secs(60),
            ban: Duration::from_secs(60),
        },
        ..quick()
    })
    .await;
    // Bob's key is bob's only: it cannot log in as alice (nor count as a guess).
    let run = server
        .sftp("alice", Login::Key(&server.bob_key), "ls\n")
        .await;
    assert!(!run.ok, "{}", run.out);
    let ok = server
        .sftp("alice", Login::Password(PASSWORD), "ls\n")
        .await;
    assert!(ok.ok, "{}", ok.out);
    for _ in 0..3 {
        let run = server
            .sftp("alice", Login::Password("not the password"), "ls\n")
            .await;
        assert!(!run.ok);
    }
    let banned = server
        .sftp_logging("alice", Login::Password(PASSWORD), "ls\n", "INFO")
        .await;
    assert!(!banned.ok, "the address is banned: {}", banned.out);
    assert!(
        banned.out.contains("This address (127.0.0.1) is banned") && banned.out.contains("UTC"),
        "told so, and until when: {}",
        banned.out
    );
    let bans = server.store.tenancy().sftp_bans().await.unwrap();
    assert_eq!(bans.len(), 1);
    assert_eq!(
        (bans[0].address.as_str(), bans[0].failures),
        ("127.0.0.1", 3)
    );
    // Lifted, the address logs in again at once.
    assert!(
        server
            .store
            .tenancy()
            .unban_sftp_address("127.0.0.1")
            .await
            .unwrap()
    );
    let again = server
        .sftp("alice", Login::Password(PASSWORD), "ls\n")
        .await;
    assert!(again.ok, "{}", again.out);
    assert!(server.store.tenancy().sftp_bans().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_leaves_no_half_file() {
    let server = start(quick()).await;
    // Big enough that the upload is still running when the client is killed.
    let big = server.file("big.csv", &vec![b'7'; 400 << 20]);
    let script = server.file("put.txt", b"put big.csv inbox/big.csv\n");
    let mut client = Command::new("sftp")
        .current_dir(server.dir.path())
        .args(["-P", &server.port.to_string(), "-i"])
        .arg(&server.alice_key)
        .args([
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
        ])
        .args(["-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-b"])
        .arg(&script)
        .arg("alice@127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let partial = server
        .data()
        .join("sftp")
        .join(server.org.id())
        .join("inbox")
        .join("big.csv");
    let started = std::time::Instant::now();
    while std::fs::metadata(&partial).map_or(0, |m| m.len()) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the upload never started"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    client.kill().unwrap();
    client.wait().unwrap();
    let inbox = partial.parent().unwrap().to_owned();
    let started = std::time::Instant::now();
    while std::fs::read_dir(&inbox).unwrap().count() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the partial file stayed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(server.batches().await.is_empty(), "nothing was received");
    drop(big);
}
