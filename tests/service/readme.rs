//! The README's walk-through, run as a newcomer would run it: its blocks marked
//! `<!-- quick-start -->` are read from the README itself and run in order with `bash`, against
//! a service started with the settings its `<!-- quick-start: serve -->` block names, so the
//! test breaks when the README and the product disagree.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::serve_both;

const README: &str = include_str!("../../README.md");

/// The `sh` blocks that follow a line `marker`, in order.
fn blocks(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut lines = README.lines();
    while let Some(line) = lines.next() {
        if line.trim() != marker {
            continue;
        }
        assert_eq!(
            lines.next().map(str::trim),
            Some("```sh"),
            "{marker} precedes a block"
        );
        let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        found.push(block.join("\n"));
    }
    found
}

/// A receiver of webhook deliveries: every request's head and body, answered 204.
fn receiver() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let received = Arc::new(Mutex::new(Vec::new()));
    let seen = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            seen.lock()
                .unwrap()
                .push(format!("{head}\n{}", String::from_utf8_lossy(&body)));
            let _ = reader
                .get_mut()
                .write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n");
        }
    });
    (url, received)
}

#[test]
fn the_readme_walk_through_runs_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // `rewards` on the PATH, and the project's samples where the README's commands look.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_rewards"), bin.join("rewards")).unwrap();
    std::os::unix::fs::symlink(root.join("samples"), dir.path().join("samples")).unwrap();
    let data = (
        "REWARDS_DATA_DIR",
        dir.path().join("data").display().to_string(),
    );

    let serve = blocks("<!-- quick-start: serve -->");
    assert_eq!(serve.len(), 1, "one serve block");
    // Its `export NAME=value ...` line, then `rewards serve`.
    let exported = serve[0].lines().find_map(|l| l.strip_prefix("export "));
    let settings: Vec<(&str, String)> = exported
        .expect("the serve block exports its settings")
        .split_whitespace()
        .map(|word| {
            let (name, value) = word.split_once('=').expect("NAME=value");
            (name, value.to_string())
        })
        .collect();
    assert!(
        serve[0].lines().any(|l| l.trim() == "rewards serve"),
        "{}",
        serve[0]
    );
    let env: Vec<(&str, String)> = settings.into_iter().chain([data.clone()]).collect();
    let (_server, http, sftp_port) = serve_both(&env);
    let (receiver_url, received) = receiver();

    let steps = blocks("<!-- quick-start -->");
    assert!(
        steps.len() >= 4,
        "the walk-through's blocks: {}",
        steps.len()
    );
    let script = format!("set -euo pipefail\n{}\n", steps.join("\n"));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir.path())
        .env(data.0, &data.1)
        .env("API", &http)
        .env("SFTP_PORT", sftp_port.to_string())
        .env("RECEIVER", &receiver_url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        out.read_to_string(&mut text)
            .map(|_| text)
            .unwrap_or_default()
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        err.read_to_string(&mut text)
            .map(|_| text)
            .unwrap_or_default()
    });
    // The walk-through waits for its file's report and the leaderboard; it may not wait forever.
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the walk-through did not end within 180 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(
        status.success(),
        "{status:?}\n--- out\n{out}\n--- err\n{err}"
    );

    // What the README says each step shows.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("earns.csv.result.json")).unwrap())
            .unwrap();
    assert_eq!(report["state"], "completed", "{report}");
    assert_eq!(
        (report["loaded"].clone(), report["rejected"].clone()),
        (4.into(), 1.into())
    );
    assert!(
        out.contains("completed") && out.contains("earns.csv"),
        "batch list: {out}"
    );
    assert!(out.contains("difference"), "the backtest's report: {out}");
    assert!(out.contains("\"rank\":1"), "the leaderboard: {out}");
    assert!(out.contains("\"data\""), "the product search: {out}");
    let deliveries = received.lock().unwrap().clone();
    assert!(
        deliveries.iter().any(|d| d.contains("batch.completed")),
        "the webhook received the file's outcome: {deliveries:?}"
    );
}
