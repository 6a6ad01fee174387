//! A short-lived cache for what many requests read and almost never changes (programme
//! policies, compiled rule-set versions). API keys are not cached: a revoked key must fail at once in every process. Entries live a second: a change made by another process is seen within
//! that time, and this process drops an entry as soon as it changes the record itself.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const TTL: Duration = Duration::from_secs(1);
/// More entries than this and the cache starts again empty, so memory stays bounded.
const MAX_ENTRIES: usize = 10_000;

pub struct Cache<V> {
    entries: Mutex<HashMap<String, (V, Instant)>>,
}

impl<V> Default for Cache<V> {
    fn default() -> Self {
        Cache {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl<V: Clone> Cache<V> {
    pub fn get(&self, key: &str) -> Option<V> {
        let entries = self.entries.lock().expect("cache lock");
        entries
            .get(key)
            .filter(|(_, at)| at.elapsed() < TTL)
            .map(|(value, _)| value.clone())
    }

    pub fn put(&self, key: &str, value: V) {
        let mut entries = self.entries.lock().expect("cache lock");
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key.to_string(), (value, Instant::now()));
    }

    pub fn remove(&self, key: &str) {
        self.entries.lock().expect("cache lock").remove(key);
    }
}
