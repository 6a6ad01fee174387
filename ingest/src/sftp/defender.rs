//! Bans an address for a while after repeated failed logins, as SFTPGo's defender and fail2ban
//! do: password guessing from one address stops being worth the attempt.

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

#[derive(Default)]
struct Record {
    failures: Vec<Instant>,
    banned_until: Option<Instant>,
}

pub struct Defender {
    policy: Policy,
    records: Mutex<HashMap<IpAddr, Record>>,
}

/// Addresses remembered at most; past this, the oldest knowledge is dropped first.
const MAX_TRACKED: usize = 100_000;

impl Defender {
    pub fn new(policy: Policy) -> Defender {
        Defender {
            policy,
            records: Mutex::new(HashMap::new()),
        }
    }

    pub fn is_banned(&self, address: IpAddr) -> bool {
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records
            .get(&address)
            .and_then(|r| r.banned_until)
            .is_some_and(|until| Instant::now() < until)
    }

    /// Notes a failed login; returns true when it bans the address.
    pub fn failed(&self, address: IpAddr) -> bool {
        let now = Instant::now();
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        if records.len() >= MAX_TRACKED && !records.contains_key(&address) {
            records.retain(|_, r| r.banned_until.is_some_and(|until| now < until));
        }
        let record = records.entry(address).or_default();
        record
            .failures
            .retain(|at| now.duration_since(*at) < self.policy.window);
        record.failures.push(now);
        if record.failures.len() as u32 >= self.policy.failures {
            record.failures.clear();
            record.banned_until = Some(now + self.policy.ban);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bans_after_the_configured_failures_and_only_that_address() {
        let defender = Defender::new(Policy {
            failures: 3,
            window: Duration::from_secs(60),
            ban: Duration::from_secs(60),
        });
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        assert!(!defender.failed(a));
        assert!(!defender.failed(a));
        assert!(!defender.is_banned(a));
        assert!(defender.failed(a));
        assert!(defender.is_banned(a));
        assert!(!defender.is_banned(b));
    }

    #[test]
    fn a_ban_ends() {
        let defender = Defender::new(Policy {
            failures: 1,
            window: Duration::from_secs(60),
            ban: Duration::from_millis(20),
        });
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        defender.failed(a);
        assert!(defender.is_banned(a));
        std::thread::sleep(Duration::from_millis(30));
        assert!(!defender.is_banned(a));
    }
}
