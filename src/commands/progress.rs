//! A progress line for long operator commands (`rewards ingest`, `rewards export`).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ingest::batch::pipeline::Progress;

/// Progress on standard error: rows, rows a second and the time left, redrawn in place on a
/// terminal, a line every few seconds otherwise.
pub struct Bar {
    started: Instant,
    last: Mutex<Option<Instant>>,
    terminal: bool,
}

impl Bar {
    pub fn new() -> Bar {
        Bar {
            started: Instant::now(),
            last: Mutex::new(None),
            terminal: std::io::stderr().is_terminal(),
        }
    }

    pub fn show(&self, p: Progress) {
        let every = if self.terminal {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(5)
        };
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.is_some_and(|t| t.elapsed() < every) {
            return;
        }
        *last = Some(Instant::now());
        let seconds = self.started.elapsed().as_secs_f64();
        let rate = p.rows as f64 / seconds.max(1e-3);
        let share = if p.of > 0 {
            p.done as f64 / p.of as f64
        } else {
            0.0
        };
        let left = if share > 0.0 {
            seconds * (1.0 - share) / share
        } else {
            0.0
        };
        let line = format!(
            "{:>10} rows  {:>8.0} rows/s  {:>5.1}%  ETA {}:{:02}",
            p.rows,
            rate,
            share * 100.0,
            left as u64 / 60,
            left as u64 % 60
        );
        let mut err = std::io::stderr();
        if self.terminal {
            let _ = write!(err, "\r{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
    }

    pub fn done(&self) {
        if self.terminal && self.last.lock().is_ok_and(|l| l.is_some()) {
            eprintln!();
        }
    }
}
