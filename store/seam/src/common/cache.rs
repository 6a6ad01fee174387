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
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::clock::Clock;

/// How long an entry is trusted in the service before it is checked again.
pub const FRESH_FOR: Duration = Duration::from_secs(1);
/// More entries than this and the cache starts again empty, so memory stays bounded.
const MAX_ENTRIES: usize = 10_000;

pub struct Cache<V> {
    entries: Mutex<HashMap<String, Entry<V>>>,
    clock: Clock,
    /// How many times an entry was dropped because its record changed (under the lock).
    removals: AtomicU64,
}

/// A count of a cache's removals, taken before reading what is to be put (see `put_since`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Removals(u64);

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
            removals: AtomicU64::new(0),
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
        Self::insert(&mut entries, key, value, self.clock.instant());
    }

    /// Where the cache's removals stand: taken before a value is read from the database, and
    /// handed to `put_since`.
    pub fn removals(&self) -> Removals {
        let _entries = self.lock();
        Removals(self.removals.load(Ordering::Relaxed))
    }

    /// Puts `value`, read after `removals` were taken, unless an entry was removed since: the
    /// record may have changed after it was read (a rule set made active meanwhile), and the
    /// value put would then be trusted, stale, for a whole window.
    pub fn put_since(&self, key: &str, value: V, removals: Removals) {
        let mut entries = self.lock();
        if self.removals.load(Ordering::Relaxed) == removals.0 {
            Self::insert(&mut entries, key, value, self.clock.instant());
        }
    }

    fn insert(entries: &mut HashMap<String, Entry<V>>, key: &str, value: V, checked: Instant) {
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
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
        let mut entries = self.lock();
        entries.remove(key);
        self.removals.fetch_add(1, Ordering::Relaxed);
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
    fn a_value_read_before_a_removal_is_not_put() {
        let cache = Cache::on(Clock::default());
        let before = cache.removals();
        cache.remove("k");
        cache.put_since("k", 1, before);
        assert_eq!(cache.any("k"), None, "read before the change: stale");
        cache.put_since("k", 2, cache.removals());
        assert_eq!(cache.any("k"), Some(2));
    }

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
