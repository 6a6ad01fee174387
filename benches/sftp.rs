//! Upload throughput of one 100 MB file over loopback: to our SFTP server, and to OpenSSH's own
//! `sftp-server` behind `sshd` (package openssh-server) started on another port with a throwaway
//! configuration, in the same run, with the same client (OpenSSH's `sftp`), best of three each.
//!
//! `cargo bench --bench sftp`. Goal: at least 0.8x OpenSSH's throughput.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MEGABYTES: usize = 100;
const RUNS: usize = 3;

fn keygen(path: &Path) {
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen");
    assert!(made.success());
}

/// `sshd` on `port` with its own host key, only `authorized` allowed in, the stock sftp-server.
fn start_sshd(dir: &Path, port: u16, authorized: &Path) -> Child {
    let sshd = Path::new("/usr/sbin/sshd");
    assert!(
        sshd.exists(),
        "the baseline needs OpenSSH's server: apt-get install openssh-server"
    );
    std::fs::create_dir_all("/run/sshd").ok();
    let host_key = dir.join("sshd_host_key");
    keygen(&host_key);
    let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let config = dir.join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             StrictModes no\nPermitRootLogin yes\nAllowUsers {user}\nPidFile none\n\
             Subsystem sftp /usr/lib/openssh/sftp-server\n",
            host_key.display(),
            authorized.display()
        ),
    )
    .unwrap();
    let child = Command::new(sshd)
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stderr(Stdio::null())
        .spawn()
        .expect("start sshd");
    // Wait until it listens.
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// Seconds to upload `file` with `sftp -b` (best of `RUNS`), after `before` clears the target.
fn upload(dir: &Path, port: u16, user: &str, key: &Path, file: &Path, remote: &str) -> f64 {
    let script = dir.join(format!("put-{port}.txt"));
    std::fs::write(&script, format!("put {} {remote}\n", file.display())).unwrap();
    let mut best = f64::MAX;
    for _ in 0..RUNS {
        let started = Instant::now();
        let status = Command::new("sftp")
            .args(["-P", &port.to_string(), "-i"])
            .arg(key)
            .args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
            ])
            .args(["-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR", "-b"])
            .arg(&script)
            .arg(format!("{user}@127.0.0.1"))
            .stdout(Stdio::null())
            .status()
            .expect("sftp");
        assert!(status.success(), "upload to port {port} failed");
        best = best.min(started.elapsed().as_secs_f64());
    }
    best
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("earns.csv");
    // Realistic text, different in every run's file so no layer can shortcut it.
    let mut content = String::with_capacity(MEGABYTES << 20);
    let mut i = 0u64;
    while content.len() < MEGABYTES << 20 {
        content.push_str(&format!(
            "e-{i},w-{},{}.{:02},2026-11-20T10:00:00Z,Coffee\n",
            i % 9973,
            i % 500,
            i % 100
        ));
        i += 1;
    }
    std::fs::write(&file, &content).unwrap();
    let key = dir.path().join("client_key");
    keygen(&key);
    let public = PathBuf::from(format!("{}.pub", key.display()));

    // Ours, with a user holding the key; each upload becomes a batch (different names, same
    // content: the later ones are recorded as duplicates, the work is the same).
    let db = store::testing::TestStore::sqlite().await;
    let org = db
        .store
        .tenancy()
        .create_org("Bench")
        .await
        .unwrap()
        .scope();
    let user = store::NewSftpUser {
        username: "bench".into(),
        key: Some(
            ingest::sftp::keys::parse_public_key(&std::fs::read_to_string(&public).unwrap())
                .unwrap(),
        ),
        ..Default::default()
    };
    db.store
        .tenancy()
        .create_sftp_user(&org, user)
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ours = listener.local_addr().unwrap().port();
    tokio::spawn(ingest::sftp::serve(
        listener,
        db.store.clone(),
        dir.path().join("data"),
        ingest::sftp::Settings::default(),
        std::future::pending(),
    ));

    let theirs = free_port();
    let mut sshd = start_sshd(dir.path(), theirs, &public);
    let remote = dir.path().join("openssh-upload.csv");
    let user_name = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let (dir_path, key_path, file_path) = (dir.path().to_owned(), key.clone(), file.clone());
    let (openssh, rewards) = tokio::task::spawn_blocking(move || {
        let openssh = upload(
            &dir_path,
            theirs,
            &user_name,
            &key_path,
            &file_path,
            &remote.display().to_string(),
        );
        let rewards = upload(
            &dir_path,
            ours,
            "bench",
            &key_path,
            &file_path,
            "inbox/earns.csv",
        );
        (openssh, rewards)
    })
    .await
    .unwrap();
    let _ = sshd.kill();
    let _ = sshd.wait();

    // Every upload arrived whole.
    let batches = db
        .store
        .batches()
        .list_batches(&org, store::Page { page: 1, limit: 10 })
        .await
        .unwrap();
    assert_eq!(batches.total, RUNS as u64);
    assert!(batches.items.iter().all(|b| b.size == content.len() as i64));

    let rate = |seconds: f64| MEGABYTES as f64 / seconds;
    println!("{MEGABYTES} MB upload over loopback, OpenSSH sftp client, best of {RUNS}");
    println!("{:<40} {:>8} {:>8}", "server", "MB/s", "s");
    println!(
        "{:<40} {:>8.0} {:>8.2}",
        "baseline: OpenSSH sshd + sftp-server",
        rate(openssh),
        openssh
    );
    println!(
        "{:<40} {:>8.0} {:>8.2}",
        "rewards (russh + russh-sftp)",
        rate(rewards),
        rewards
    );
    println!(
        "ratio: {:.2}x OpenSSH's throughput (goal >= 0.8x)",
        openssh / rewards
    );
}
