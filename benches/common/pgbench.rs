//! The database alone: a pgbench script against the bench's own schema, run in the same process
//! and session as the service doing the same work, so the two figures share the machine's
//! mood. Each script is a snapshot read (`benches/floors/read.sql`, the shape of the spend
//! kernel's `READ`) and one write statement (`benches/floors/<write>.sql`, the writes the
//! service's statement makes, with no version check and none of the service's Rust): two round
//! trips without an explicit transaction, as the service's path without a lock. It writes
//! spends against whichever lot the read finds first, so the ledger it leaves does not agree
//! with itself: run it after the bench's audit.

use std::path::Path;
use std::process::Command;

use super::Load;

/// Where the scripts run and whose wallets they use.
pub struct Floor<'a> {
    pub url: &'a str,
    pub org: &'a str,
    pub campaign: &'a str,
    pub clients: usize,
    pub seconds: u64,
}

impl Floor<'_> {
    /// Runs `prelude` (pgbench `\set` lines choosing the wallet `w`, and any other variable the
    /// write names), the read and `floors/<write>.sql`; `None` when pgbench is not installed.
    pub fn run(&self, prelude: &str, write: &str) -> Option<Load> {
        let floors = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/floors");
        let read = std::fs::read_to_string(floors.join("read.sql")).unwrap();
        let write = std::fs::read_to_string(floors.join(format!("{write}.sql"))).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.sql");
        std::fs::write(&script, format!("{prelude}\n{read}\n{write}")).unwrap();
        let logs = dir.path().join("latencies");
        let ran = Command::new("pgbench")
            .args(["--no-vacuum", "--protocol=prepared", "--jobs=2", "--log"])
            .arg(format!("--log-prefix={}", logs.display()))
            .arg(format!("--client={}", self.clients))
            .arg(format!("--time={}", self.seconds))
            .arg(format!("--define=org={}", self.org))
            .arg(format!("--define=campaign={}", self.campaign))
            .arg(format!("--file={}", script.display()))
            .arg(self.url)
            .output();
        let out = match ran {
            Ok(out) => out,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => panic!("pgbench: {e}"),
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "pgbench failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rate = stdout
            .lines()
            .find_map(|l| l.strip_prefix("tps = "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("pgbench prints its rate");
        // One line per transaction: client, number, latency in microseconds, script, epoch...
        let mut micros: Vec<f64> = Vec::new();
        for file in std::fs::read_dir(dir.path()).unwrap() {
            let path = file.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("latencies")
            {
                let text = std::fs::read_to_string(path).unwrap();
                micros.extend(
                    text.lines()
                        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<f64>().ok()),
                );
            }
        }
        micros.sort_by(f64::total_cmp);
        let ms = |q: f64| micros[((micros.len() - 1) as f64 * q) as usize] / 1000.0;
        Some(Load {
            rate,
            p50_ms: ms(0.5),
            p99_ms: ms(0.99),
            max_ms: ms(1.0),
            count: micros.len(),
        })
    }
}
