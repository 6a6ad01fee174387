//! The one cache of the stores, for what many requests read and almost never changes (campaigns,
//! programme policies, compiled rule sets, catalogue indexes), with one freshness rule: an entry is
//! trusted for a window (`FRESH_FOR` in the service) after it was put or last confirmed; past
//! it, its owner asks the database whether it still holds (a policy read again, a rule set's or
//! a catalogue's version looked up: one indexed query) and confirms it or puts a new value. So a
//! change made by another process is seen within the window, and this process drops an entry as
//! soon as it changes the record itself. An entry a key never changes under (a rule-set version)
//! is read as it is (`any`). Age is measured on the store's clock, so a test moves the clock
//! past a window instead of waiting. API keys are not cached: a revoked key must fail at once in
//! every process.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::clock::Clock;

/// How long an entry is trusted in the service before it is checked again.
pub const FRESH_FOR: Duration = Duration::from_secs(1);
/// More entries than this and the cache starts again empty, so memory stays bounded.
const MAX_ENTRIES: usize = 10_000;

pub struct Cache<V> {
    entries: Mutex<HashMap<String, Entry<V>>>,
    clock: Clock,
}

struct Entry<V> {
    value: V,
    /// When the value was put or last confirmed.
    checked: Instant,
}

impl<V: Clone> Cache<V> {
    /// An empty cache whose entries age on `clock`.
    pub fn on(clock: Clock) -> Self {
        Cache {
            entries: Mutex::new(HashMap::new()),
            clock,
        }
    }

    /// The value under `key` if it was put or confirmed less than `within` ago.
    pub fn fresh(&self, key: &str, within: Duration) -> Option<V> {
        self.lock()
            .get(key)
            .filter(|entry| self.clock.instant() < entry.checked + within)
            .map(|entry| entry.value.clone())
    }

    /// The value under `key`, however long ago it was checked.
    pub fn any(&self, key: &str) -> Option<V> {
        self.lock().get(key).map(|entry| entry.value.clone())
    }

    pub fn put(&self, key: &str, value: V) {
        let mut entries = self.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        let checked = self.clock.instant();
        entries.insert(key.to_string(), Entry { value, checked });
    }

    /// Marks the value under `key` as checked now: the database still holds it.
    pub fn confirm(&self, key: &str) {
        let now = self.clock.instant();
        if let Some(entry) = self.lock().get_mut(key) {
            entry.checked = now;
        }
    }

    pub fn remove(&self, key: &str) {
        self.lock().remove(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry<V>>> {
        // A panic elsewhere while the lock was held leaves whole entries behind.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_fresh_within_its_window_and_confirmed_anew() {
        let clock = Clock::default();
        let cache = Cache::on(clock.clone());
        cache.put("k", 1);
        assert_eq!(cache.fresh("k", Duration::from_secs(60)), Some(1));
        clock.advance(chrono::Duration::seconds(61));
        assert_eq!(
            cache.fresh("k", Duration::from_secs(60)),
            None,
            "past the window"
        );
        assert_eq!(cache.any("k"), Some(1), "kept for a check");
        cache.confirm("k");
        assert_eq!(cache.fresh("k", Duration::from_secs(60)), Some(1));
        cache.remove("k");
        assert_eq!(cache.any("k"), None);
    }
}
