//! The ids a file (or a chunk of it) has shown so far, for its `duplicate_in_file` check, kept
//! as 64-bit hashes in an open-addressing table of bare `u64`s: 8 bytes an id at a load of up to
//! 80% (10 bytes a row), where a `HashSet<u64>` rounds its buckets up to a power of two and adds
//! a control byte to each (up to 18 bytes a row). Kept for a whole file of millions of rows, it
//! is the largest thing a check keeps in memory (a first load asks the journal instead, see
//! `pipeline`).
//!
//! Two different ids of one file share a hash with a chance of about n²/2⁶⁵ (10⁻⁶ for five
//! million rows); the later would be reported as a repeat, never credited twice.

use std::hash::{DefaultHasher, Hash, Hasher};

/// An empty slot. A hash of 0 is stored as 1 (one more way to collide, out of 2⁶⁴).
const EMPTY: u64 = 0;

/// Slots filled at most, in tenths: past it the table grows by half.
const MAX_LOAD_TENTHS: usize = 8;

#[derive(Default)]
pub struct Seen {
    slots: Vec<u64>,
    len: usize,
}

impl Seen {
    /// Makes room for `more` ids beyond those held, at once: growing later would hold the old
    /// and the new table together, the largest memory of a big file.
    pub fn reserve(&mut self, more: usize) {
        let wanted = (self.len + more) * 10 / MAX_LOAD_TENTHS + 1;
        if wanted > self.slots.len() {
            self.rebuild(wanted);
        }
    }

    /// Adds `id`; false if the file showed it before.
    pub fn insert(&mut self, id: &str) -> bool {
        if (self.len + 1) * 10 > self.slots.len() * MAX_LOAD_TENTHS {
            self.rebuild((self.slots.len() * 3 / 2).max(1_024));
        }
        let hash = id_hash(id);
        let fresh = place(&mut self.slots, hash);
        self.len += usize::from(fresh);
        fresh
    }

    /// Whether the file showed `id` before.
    pub fn contains(&self, id: &str) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        let hash = id_hash(id);
        let mut at = home(hash, self.slots.len());
        loop {
            match self.slots[at] {
                EMPTY => return false,
                held if held == hash => return true,
                _ => {
                    at = if at + 1 == self.slots.len() {
                        0
                    } else {
                        at + 1
                    }
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn rebuild(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; slots]);
        for hash in old.into_iter().filter(|h| *h != EMPTY) {
            place(&mut self.slots, hash);
        }
    }
}

/// Puts `hash` into `slots` (which has a free slot) unless it is there; true if it was not.
fn place(slots: &mut [u64], hash: u64) -> bool {
    let mut at = home(hash, slots.len());
    loop {
        match slots[at] {
            EMPTY => {
                slots[at] = hash;
                return true;
            }
            held if held == hash => return false,
            _ => at = if at + 1 == slots.len() { 0 } else { at + 1 },
        }
    }
}

/// Where `hash` would sit in a table of `slots` with no collision. Hashes are uniform, so their
/// high bits pick it (a multiply, not a division).
fn home(hash: u64, slots: usize) -> usize {
    ((u128::from(hash) * slots as u128) >> 64) as usize
}

fn id_hash(id: &str) -> u64 {
    // `DefaultHasher::new` has fixed keys: the same id hashes the same in every run.
    let mut hasher = DefaultHasher::new();
    id.hash(&mut hasher);
    hasher.finish().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_new_once_across_growth() {
        let mut seen = Seen::default();
        for i in 0..10_000 {
            assert!(seen.insert(&format!("tx-{i}")), "first tx-{i}");
        }
        for i in 0..10_000 {
            assert!(!seen.insert(&format!("tx-{i}")), "repeated tx-{i}");
        }
        assert_eq!(seen.len(), 10_000);
        assert!(seen.contains("tx-9999") && !seen.contains("tx-10000"));
        assert!(seen.insert("tx-10000"));
    }

    #[test]
    fn reserving_keeps_what_is_held_and_sizes_once() {
        let mut seen = Seen::default();
        assert!(seen.insert("a") && seen.insert("b"));
        seen.reserve(100_000);
        let slots = seen.slots.len();
        assert!(slots >= 100_002 * 10 / MAX_LOAD_TENTHS);
        assert!(!seen.insert("a") && !seen.insert("b"));
        for i in 0..100_000 {
            seen.insert(&i.to_string());
        }
        assert_eq!(seen.slots.len(), slots, "no growth within the reservation");
        assert_eq!(seen.len(), 100_002);
    }

    #[test]
    fn the_table_wraps_around_its_end() {
        let mut slots = vec![EMPTY; 4];
        // Both hashes' home is the last slot.
        assert!(place(&mut slots, u64::MAX));
        assert!(place(&mut slots, u64::MAX - 1));
        assert_eq!(slots[0], u64::MAX - 1);
        assert!(!place(&mut slots, u64::MAX - 1));
    }
}
