//! What the binary's tests share: running `rewards` with a clean environment, and a server
//! process that cannot outlive its test.

#![allow(dead_code)] // each test file uses its own part

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};

/// The binary with a clean environment: only what the test sets reaches it.
pub fn rewards(env: &[(&str, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rewards"));
    for var in [
        "DATABASE_URL",
        "REWARDS_DATA_DIR",
        "REWARDS_HTTP_ADDR",
        "REWARDS_SFTP_ADDR",
        "REWARDS_ADMIN_ADDR",
        "REWARDS_LOG_FORMAT",
        "REWARDS_CODES_KEY",
        "REWARDS_LEADERBOARD_REFRESH_SECS",
        "REWARDS_REVIEWS_PROFANITY_THRESHOLD",
        "REWARDS_REVIEWS_REPORT_THRESHOLD",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().map(|(k, v)| (k, v)));
    command
}

pub fn run(env: &[(&str, String)], args: &[&str]) -> Output {
    rewards(env).args(args).output().expect("run rewards")
}

pub fn ok(env: &[(&str, String)], args: &[&str]) -> String {
    let output = run(env, args);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// A command's `--json` output.
pub fn json_of(env: &[(&str, String)], args: &[&str]) -> serde_json::Value {
    let mut args = args.to_vec();
    args.push("--json");
    serde_json::from_str(&ok(env, &args)).unwrap()
}

/// An organisation `Acme` with a campaign `Main` (`PTS`) and an API key for it, made with the
/// operator's commands: (organisation id, campaign id, the key as `key issue --json` prints it).
pub fn programme(env: &[(&str, String)]) -> (String, String, serde_json::Value) {
    let org = json_of(env, &["org", "create", "--name", "Acme"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let create = [
        "campaign",
        "create",
        "--org",
        &org,
        "--name",
        "Main",
        "--currency",
        "PTS",
    ];
    let campaign = json_of(env, &create)["id"].as_str().unwrap().to_string();
    let key = json_of(
        env,
        &["key", "issue", "--org", &org, "--campaign", &campaign],
    );
    (org, campaign, key)
}

/// A server process that is killed if a test ends (or fails) without stopping it, and the
/// lines it has logged so far.
pub struct Server {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    /// The admin API's base URL.
    pub admin: String,
}

impl Server {
    /// What the server has logged (on standard output) so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl std::ops::Deref for Server {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.child
    }
}

impl std::ops::DerefMut for Server {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.child
    }
}

/// Starts `rewards serve` on a free port and returns it with its base URL, read from the log.
pub fn serve(env: &[(&str, String)]) -> (Server, String) {
    let (server, http, _) = serve_both(env);
    (server, http)
}

/// Like `serve`, also returning the SFTP port.
pub fn serve_both(env: &[(&str, String)]) -> (Server, String, u16) {
    let mut child = rewards(env)
        .arg("serve")
        .env("REWARDS_HTTP_ADDR", "127.0.0.1:0")
        .env("REWARDS_SFTP_ADDR", "127.0.0.1:0")
        .env("REWARDS_ADMIN_ADDR", "127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start rewards serve");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (http, sftp, admin) = loop {
        let line = lines
            .next()
            .expect("server exited before listening")
            .unwrap();
        let field = |name: &str| {
            line.split(&format!("{name}="))
                .nth(1)
                .map(|rest| rest.split_whitespace().next().unwrap().to_string())
        };
        if let (Some(http), Some(sftp), Some(admin)) =
            (field("http"), field("sftp"), field("admin"))
        {
            break (http, sftp, admin);
        }
    };
    // Keep draining the log so the server never blocks on a full pipe.
    let log = Arc::new(Mutex::new(Vec::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            kept.lock().unwrap().push(line);
        }
    });
    let port = sftp.rsplit(':').next().unwrap().parse().unwrap();
    let admin = format!("http://{admin}");
    (Server { child, log, admin }, format!("http://{http}"), port)
}
