//! Bans an address for a while after repeated failed logins, as SFTPGo's defender and fail2ban
//! do: password guessing from one address stops being worth the attempt. The failures are
//! counted here, per node; a ban is kept by the store, so that every node honours it and an
//! operator can list and lift it (`rewards sftp bans`, `rewards sftp unban`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Failed logins from one address within `window` that earn a ban.
    pub failures: u32,
    pub window: Duration,
    pub ban: Duration,
}

pub struct Defender {
    pub policy: Policy,
    failures: Mutex<HashMap<IpAddr, Vec<Instant>>>,
}

/// Addresses remembered at most; past this, what is known of the others is dropped first.
const MAX_TRACKED: usize = 100_000;

impl Defender {
    pub fn new(policy: Policy) -> Defender {
        Defender {
            policy,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Notes a failed login at `now`; the failures within the window when they earn a ban (the
    /// count starts again after it).
    pub fn failed(&self, address: IpAddr, now: Instant) -> Option<u32> {
        let mut failures = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if failures.len() >= MAX_TRACKED && !failures.contains_key(&address) {
            failures.clear();
        }
        let recent = failures.entry(address).or_default();
        recent.retain(|at| now.duration_since(*at) < self.policy.window);
        recent.push(now);
        let count = recent.len() as u32;
        if count >= self.policy.failures {
            failures.remove(&address);
            return Some(count);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defender(failures: u32) -> Defender {
        Defender::new(Policy {
            failures,
            window: Duration::from_secs(60),
            ban: Duration::from_secs(60),
        })
    }

    #[test]
    fn a_ban_is_earned_by_the_configured_failures_of_one_address() {
        let defender = defender(3);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let now = Instant::now();
        assert_eq!(defender.failed(a, now), None);
        assert_eq!(defender.failed(a, now), None);
        assert_eq!(defender.failed(b, now), None);
        assert_eq!(defender.failed(a, now), Some(3));
        assert_eq!(defender.failed(a, now), None, "counted afresh after a ban");
    }

    #[test]
    fn failures_outside_the_window_do_not_count() {
        let defender = defender(2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let start = Instant::now();
        assert_eq!(defender.failed(a, start), None);
        let later = start + Duration::from_secs(61);
        assert_eq!(defender.failed(a, later), None);
        assert_eq!(defender.failed(a, later), Some(2));
    }
}
