//! The time the service goes by: the system's clock, at microsecond precision (what PostgreSQL
//! keeps, so a value reads back exactly as it was written on either backend), moved ahead by an
//! offset that only tests set. Every store, job and handler asks the clock its database holds,
//! so a test moves time for all of them at once instead of sleeping until it has passed.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

use chrono::{DateTime, Duration, SubsecRound, Utc};

/// Cheap to clone: clones share one offset.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    /// Microseconds ahead of the system's clock (0 but in tests).
    ahead: Arc<AtomicI64>,
}

impl Clock {
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now().trunc_subsecs(6) + Duration::microseconds(self.ahead.load(Ordering::Relaxed))
    }

    /// The monotonic clock, moved ahead as far as this one: for how long something has held
    /// (the inbox watcher's quiet period), where a wall clock set back must not count.
    pub fn instant(&self) -> Instant {
        let ahead = self.ahead.load(Ordering::Relaxed).max(0);
        Instant::now() + std::time::Duration::from_micros(ahead.unsigned_abs())
    }

    /// Moves this clock, and every store sharing it, `by` ahead.
    pub fn advance(&self, by: Duration) {
        let micros = by.num_microseconds().unwrap_or(i64::MAX);
        self.ahead.fetch_add(micros, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_advanced_clock_runs_ahead_in_every_clone() {
        let clock = Clock::default();
        let other = clock.clone();
        let before = other.now();
        clock.advance(Duration::hours(2));
        let after = other.now();
        assert!(after - before >= Duration::hours(2));
        assert!(after - before < Duration::hours(2) + Duration::minutes(1));
    }

    #[test]
    fn the_monotonic_reading_moves_with_the_clock() {
        let clock = Clock::default();
        let before = clock.instant();
        clock.clone().advance(Duration::seconds(30));
        let after = clock.instant();
        assert!(after - before >= std::time::Duration::from_secs(30));
        assert!(after - before < std::time::Duration::from_secs(90));
    }
}
