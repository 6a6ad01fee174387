//! Where a file's time went, stage by stage: the profile `pipeline::process` logs with each
//! batch (and the ingest bench prints). The stages before `writing` follow one another on the
//! pipeline's own path and add up to about the file's time; `writing` is the writer's time on
//! the file's chunks, which overlaps them (a chunk is written while the next is read, checked
//! and evaluated), so `waiting` is the part of it the other stages did not hide.

use std::fmt;
use std::ops::AddAssign;
use std::time::{Duration, Instant};

#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Stages {
    /// The spooled file checked against the SHA-256 taken when it was received.
    pub verify: Duration,
    /// Records read from the file (decoding CSV, XLSX or Parquet).
    pub read: Duration,
    /// Rows mapped and checked (in parallel), and the file's repeated ids found.
    pub check: Duration,
    /// The rows' wallets found and the rules evaluated (in parallel).
    pub evaluate: Duration,
    /// Waiting for the writer: a chunk's earns not yet written when the next chunk was ready,
    /// and return and activity rows, which are written in their turn.
    pub waiting: Duration,
    /// Outcomes counted, refused rows written to the rejected-rows report, the summary written
    /// and the batch's outcome recorded.
    pub report: Duration,
    /// The last commit, after which the file's counts may be reported.
    pub commit: Duration,
    /// The writer's time on the file's chunks, from each chunk's turn to its rows written
    /// (on SQLite it includes the periodic commits that fell in it).
    pub writing: Duration,
}

impl Stages {
    /// Runs `work`, adding its time to `stage`.
    pub fn timed<T>(stage: &mut Duration, work: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let done = work();
        *stage += started.elapsed();
        done
    }

    /// Each stage's name and time, in order.
    pub fn each(&self) -> [(&'static str, Duration); 8] {
        [
            ("verify", self.verify),
            ("read", self.read),
            ("check", self.check),
            ("evaluate", self.evaluate),
            ("waiting", self.waiting),
            ("report", self.report),
            ("commit", self.commit),
            ("writing", self.writing),
        ]
    }
}

impl AddAssign for Stages {
    fn add_assign(&mut self, other: Stages) {
        self.verify += other.verify;
        self.read += other.read;
        self.check += other.check;
        self.evaluate += other.evaluate;
        self.waiting += other.waiting;
        self.report += other.report;
        self.commit += other.commit;
        self.writing += other.writing;
    }
}

/// `verify=0.21s read=1.90s ...`, for the log.
impl fmt::Display for Stages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, time)) in self.each().iter().enumerate() {
            let gap = if i == 0 { "" } else { " " };
            write!(f, "{gap}{name}={:.2}s", time.as_secs_f64())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_add_up_and_print_in_order() {
        let mut stages = Stages {
            read: Duration::from_millis(1_500),
            ..Stages::default()
        };
        stages += Stages {
            read: Duration::from_millis(500),
            writing: Duration::from_millis(250),
            ..Stages::default()
        };
        assert_eq!(stages.read, Duration::from_secs(2));
        assert_eq!(
            stages.to_string(),
            "verify=0.00s read=2.00s check=0.00s evaluate=0.00s waiting=0.00s report=0.00s \
             commit=0.00s writing=0.25s"
        );
        let mut slot = Duration::ZERO;
        assert_eq!(Stages::timed(&mut slot, || 7), 7);
        assert!(slot < Duration::from_secs(1));
    }
}
