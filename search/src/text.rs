//! Ranked full-text search over documents made of weighted fields.
//!
//! Every word of a document is indexed twice in one finite-state dictionary: as written (folded
//! to lower case without accents) and as its English stem. A query word matches a document's
//! word when their stems are equal or within its typo allowance (one edit for words of 5
//! characters or more, two from 9; a swap of two letters is one edit); the last word of a query
//! also matches as a prefix of written words, so results come while a word is being typed.
//! Matches are ranked in stages: more query words matched, then fewer typos, then the more
//! important field (a name before a description), then BM25.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use fst::{Automaton, IntoStreamer, Map, MapBuilder, Streamer};
use levenshtein_automata::{Distance, LevenshteinAutomatonBuilder};
use rust_stemmers::{Algorithm, Stemmer};

/// Query words beyond this are ignored.
pub const MAX_QUERY_WORDS: usize = 10;
/// Written words a prefix may expand to: enough for a word being typed, and bounded however
/// short the prefix.
const MAX_PREFIX_TERMS: usize = 64;
/// BM25's usual constants.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// Keys in the dictionary: a kind byte, then the text.
const WRITTEN: u8 = b'w';
const STEM: u8 = b's';

/// One field of a document to index.
#[derive(Debug, Clone, Copy)]
pub struct Field<'a> {
    pub text: &'a str,
    /// 0 is the most important field; a match in a lower rank wins a tie.
    pub rank: u8,
    /// How much an occurrence counts in BM25 (a name's words more than a description's).
    pub weight: f32,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    /// The most important field the term occurs in.
    rank: u8,
    /// Occurrences, each counted by its field's weight.
    frequency: f32,
}

/// How one document matched a query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: u32,
    /// Query words it matched.
    pub words: u8,
    /// Edits summed over the matched words.
    pub typos: u8,
    /// The most important field a word matched in.
    pub rank: u8,
    pub score: f32,
}

impl Hit {
    /// The ranking order: more words, fewer typos, better field, higher score, then document.
    pub fn order(&self, other: &Hit) -> std::cmp::Ordering {
        other
            .words
            .cmp(&self.words)
            .then(self.typos.cmp(&other.typos))
            .then(self.rank.cmp(&other.rank))
            .then(other.score.total_cmp(&self.score))
            .then(self.doc.cmp(&other.doc))
    }
}

/// The best match of the current word in a document: (typos, rank, score); `u8::MAX` typos
/// when not matched.
const UNMATCHED: (u8, u8, f32) = (u8::MAX, 0, 0.0);

/// Dense per-document slots for one search (a catalogue is tens of thousands of documents),
/// kept per thread and handed back empty (every slot at its unmatched value: a search puts
/// back each slot it touched), so a search neither allocates nor clears a slot per document.
#[derive(Default)]
struct Slots {
    /// Each document's place in the hits, `u32::MAX` for none.
    slot_of: Vec<u32>,
    best: Vec<(u8, u8, f32)>,
    /// The documents the current word matched (emptied after each word).
    touched: Vec<u32>,
}

impl Slots {
    fn fit(&mut self, documents: usize) {
        if self.slot_of.len() < documents {
            self.slot_of.resize(documents, u32::MAX);
            self.best.resize(documents, UNMATCHED);
        }
    }
}

thread_local! {
    static SLOTS: std::cell::RefCell<Slots> = std::cell::RefCell::default();
}

pub struct TextIndex {
    terms: Map<Vec<u8>>,
    postings: Vec<Vec<Posting>>,
    /// Weighted length of each document.
    lengths: Vec<f32>,
    average: f32,
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Automaton builders for 1 and 2 typos (a swap counts one), built once: the second takes
/// milliseconds.
fn typo_builder(typos: u8) -> &'static LevenshteinAutomatonBuilder {
    static BUILDERS: OnceLock<[LevenshteinAutomatonBuilder; 2]> = OnceLock::new();
    let builders = BUILDERS.get_or_init(|| {
        [
            LevenshteinAutomatonBuilder::new(1, true),
            LevenshteinAutomatonBuilder::new(2, true),
        ]
    });
    &builders[usize::from(typos.clamp(1, 2) - 1)]
}

/// A word in lower case, with the accents of Latin letters removed (`Café` is `cafe`).
fn fold(word: &str) -> String {
    word.chars()
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' => 'a',
            'ç' | 'č' => 'c',
            'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ę' => 'e',
            'ì' | 'í' | 'î' | 'ï' | 'ī' => 'i',
            'ñ' | 'ń' => 'n',
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' => 'o',
            'ù' | 'ú' | 'û' | 'ü' | 'ū' => 'u',
            'ý' | 'ÿ' => 'y',
            'š' | 'ś' => 's',
            'ž' | 'ź' | 'ż' => 'z',
            other => other,
        })
        .collect()
}

/// The words of `text`, folded: runs of letters and digits.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(fold)
}

/// The stem of a folded word.
pub fn stem(word: &str) -> String {
    stemmer().stem(word).into_owned()
}

/// Whether every word of `query` begins a word of `text` (folded; `Veg` matches
/// `Vegetarian food`): how short names such as tags are matched while typing.
pub fn matches_prefix(text: &str, query: &str) -> bool {
    let names: Vec<String> = words(text).collect();
    let mut wanted = words(query).peekable();
    wanted.peek().is_some() && wanted.all(|w| names.iter().any(|n| n.starts_with(&w)))
}

/// Edits a query word of `chars` characters may have and still match.
fn allowed_typos(chars: usize) -> u8 {
    match chars {
        0..=4 => 0,
        5..=8 => 1,
        _ => 2,
    }
}

fn key(kind: u8, text: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(text.len() + 1);
    key.push(kind);
    key.extend_from_slice(text.as_bytes());
    key
}

impl TextIndex {
    /// Indexes `docs`; a document's number is its position.
    pub fn build<'a>(docs: impl IntoIterator<Item = Vec<Field<'a>>>) -> TextIndex {
        let mut terms: BTreeMap<Vec<u8>, Vec<Posting>> = BTreeMap::new();
        let mut lengths = Vec::new();
        for (doc, fields) in docs.into_iter().enumerate() {
            let doc = doc as u32;
            let mut length = 0.0;
            let mut seen: HashMap<Vec<u8>, Posting> = HashMap::new();
            for field in fields {
                for word in words(field.text) {
                    length += field.weight;
                    let stem = stem(&word);
                    for term in [key(WRITTEN, &word), key(STEM, &stem)] {
                        let posting = seen.entry(term).or_insert(Posting {
                            doc,
                            rank: field.rank,
                            frequency: 0.0,
                        });
                        posting.rank = posting.rank.min(field.rank);
                        posting.frequency += field.weight;
                    }
                }
            }
            for (term, posting) in seen {
                terms.entry(term).or_default().push(posting);
            }
            lengths.push(length);
        }
        let mut builder = MapBuilder::memory();
        let mut postings = Vec::with_capacity(terms.len());
        for (i, (term, list)) in terms.into_iter().enumerate() {
            builder
                .insert(&term, i as u64)
                .expect("terms arrive sorted and unique");
            postings.push(list);
        }
        let terms =
            Map::new(builder.into_inner().expect("an in-memory map")).expect("a map just built");
        let average = if lengths.is_empty() {
            1.0
        } else {
            (lengths.iter().sum::<f32>() / lengths.len() as f32).max(1.0)
        };
        TextIndex {
            terms,
            postings,
            lengths,
            average,
        }
    }

    pub fn documents(&self) -> usize {
        self.lengths.len()
    }

    /// Bytes the index holds, roughly: its dictionary and postings.
    pub fn memory(&self) -> usize {
        self.terms.as_fst().as_bytes().len()
            + self
                .postings
                .iter()
                .map(std::vec::Vec::capacity)
                .sum::<usize>()
                * std::mem::size_of::<Posting>()
            + self.lengths.capacity() * std::mem::size_of::<f32>()
    }

    /// Every document matching at least one word of `query`, best first. The last word is also
    /// taken as a prefix unless the query ends with white space.
    pub fn search(&self, query: &str) -> Vec<Hit> {
        let mut hits = self.matches(query);
        hits.sort_unstable_by(Hit::order);
        hits
    }

    /// Every document matching at least one word of `query`, in no order: for a caller that
    /// puts only the best few in order (`Hit::order`).
    pub fn matches(&self, query: &str) -> Vec<Hit> {
        let query_words: Vec<String> = words(query).take(MAX_QUERY_WORDS).collect();
        let typing = !query.ends_with(char::is_whitespace);
        let documents = self.lengths.len();
        SLOTS.with_borrow_mut(|slots| {
            slots.fit(documents);
            let Slots {
                slot_of,
                best,
                touched,
            } = slots;
            let mut hits: Vec<Hit> = Vec::new();
            for (i, word) in query_words.iter().enumerate() {
                let last = i + 1 == query_words.len();
                let terms = self.matching_terms(word, last && typing);
                // Room for every document the word can match, so the hits grow at most once.
                let most: usize = terms.iter().map(|(t, _)| self.postings[*t].len()).sum();
                touched.reserve(most.min(documents));
                hits.reserve(most.min(documents).saturating_sub(hits.len()));
                for (term, typos) in terms {
                    let postings = &self.postings[term];
                    let idf = self.idf(postings.len());
                    for p in postings {
                        let length = self.lengths[p.doc as usize];
                        let tf = p.frequency * (K1 + 1.0)
                            / (p.frequency + K1 * (1.0 - B + B * length / self.average));
                        let candidate = (typos, p.rank, idf * tf);
                        let b = &mut best[p.doc as usize];
                        if b.0 == u8::MAX {
                            touched.push(p.doc);
                            *b = candidate;
                        } else if (candidate.0, candidate.1) < (b.0, b.1)
                            || ((candidate.0, candidate.1) == (b.0, b.1) && candidate.2 > b.2)
                        {
                            *b = candidate;
                        }
                    }
                }
                for doc in touched.drain(..) {
                    let (typos, rank, score) =
                        std::mem::replace(&mut best[doc as usize], UNMATCHED);
                    let slot = &mut slot_of[doc as usize];
                    if *slot == u32::MAX {
                        *slot = hits.len() as u32;
                        hits.push(Hit {
                            doc,
                            words: 0,
                            typos: 0,
                            rank: u8::MAX,
                            score: 0.0,
                        });
                    }
                    let hit = &mut hits[*slot as usize];
                    hit.words += 1;
                    hit.typos = hit.typos.saturating_add(typos);
                    hit.rank = hit.rank.min(rank);
                    hit.score += score;
                }
            }
            for hit in &hits {
                slot_of[hit.doc as usize] = u32::MAX;
            }
            hits
        })
    }

    fn idf(&self, documents_with_term: usize) -> f32 {
        let n = self.lengths.len() as f32;
        let df = documents_with_term as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// The terms `word` matches, each with its edits: its stem exactly or within its typo
    /// allowance, and, when `prefix`, written words that it begins.
    fn matching_terms(&self, word: &str, prefix: bool) -> Vec<(usize, u8)> {
        let mut found: HashMap<usize, u8> = HashMap::new();
        let mut note = |term: u64, typos: u8| {
            let entry = found.entry(term as usize).or_insert(typos);
            *entry = (*entry).min(typos);
        };
        let stem_key = key(STEM, &stem(word));
        let allowed = allowed_typos(word.chars().count());
        if allowed == 0 {
            if let Some(term) = self.terms.get(&stem_key) {
                note(term, 0);
            }
        } else {
            let text = String::from_utf8_lossy(&stem_key).into_owned();
            let dfa = typo_builder(allowed).build_dfa(&text);
            let mut stream = self.terms.search(&dfa).into_stream();
            while let Some((term, id)) = stream.next() {
                if let Distance::Exact(d) = dfa.eval(term) {
                    note(id, d.min(allowed));
                }
            }
        }
        if prefix {
            let written = key(WRITTEN, word);
            if allowed == 0 {
                let automaton =
                    fst::automaton::Str::new(std::str::from_utf8(&written).expect("keys are text"))
                        .starts_with();
                let mut stream = self.terms.search(automaton).into_stream();
                let mut taken = 0;
                while let Some((_, id)) = stream.next() {
                    note(id, 0);
                    taken += 1;
                    if taken == MAX_PREFIX_TERMS {
                        break;
                    }
                }
            } else {
                let text = String::from_utf8_lossy(&written).into_owned();
                let dfa = typo_builder(allowed).build_prefix_dfa(&text);
                let mut stream = self.terms.search(&dfa).into_stream();
                let mut taken = 0;
                while let Some((term, id)) = stream.next() {
                    if let Distance::Exact(d) = dfa.eval(term) {
                        note(id, d.min(allowed));
                        taken += 1;
                        if taken == MAX_PREFIX_TERMS {
                            break;
                        }
                    }
                }
            }
        }
        found.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(docs: &[(&str, &str)]) -> TextIndex {
        TextIndex::build(docs.iter().map(|(name, description)| {
            vec![
                Field {
                    text: name,
                    rank: 0,
                    weight: 3.0,
                },
                Field {
                    text: description,
                    rank: 1,
                    weight: 1.0,
                },
            ]
        }))
    }

    fn found(index: &TextIndex, query: &str) -> Vec<u32> {
        index.search(query).iter().map(|h| h.doc).collect()
    }

    #[test]
    fn words_fold_case_and_accents() {
        let folded: Vec<String> = words("Café AU-LAIT, Zürich 2x").collect();
        assert_eq!(folded, ["cafe", "au", "lait", "zurich", "2x"]);
    }

    #[test]
    fn more_words_then_fewer_typos_then_the_name_rank_first() {
        let idx = index(&[
            ("Chocolate cake", "A rich dessert"),
            ("Cake stand", "Holds a chocolate cake or two"),
            ("Chocolate", "Dark, 70 percent"),
            ("Vanilla cake", "Light sponge"),
        ]);
        // Both words: the one with them in its name first.
        assert_eq!(&found(&idx, "chocolate cake ")[..2], [0, 1]);
        // A typo in a long word still matches; exact matches rank first.
        let hits = idx.search("chocolte ");
        assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), [2, 0, 1]);
        assert!(hits.iter().all(|h| h.typos == 1));
    }

    #[test]
    fn plurals_and_stems_match() {
        let idx = index(&[("Spa day", "Massages and treatments"), ("Dinner", "")]);
        assert_eq!(found(&idx, "massage "), [0]);
        assert_eq!(found(&idx, "treatment spas "), [0]);
    }

    #[test]
    fn the_last_word_is_a_prefix_while_typing() {
        let idx = index(&[
            ("Balloon flight", ""),
            ("Ballet tickets", ""),
            ("Ball game", ""),
        ]);
        let typing = found(&idx, "ballo");
        assert_eq!(typing[0], 0);
        // With a space after it, the word is complete: no prefix expansion.
        assert_eq!(found(&idx, "bal "), Vec::<u32>::new());
    }

    #[test]
    fn short_words_allow_no_typo_and_long_ones_two() {
        let idx = index(&[("Wine tasting", ""), ("Photography workshop", "")]);
        assert!(found(&idx, "wina ").is_empty(), "4 letters: exact only");
        assert_eq!(found(&idx, "photograhpy "), [1], "a swap is one edit");
        assert_eq!(found(&idx, "fotography "), [1], "two edits in a long word");
        assert!(
            found(&idx, "fotograpy ").is_empty(),
            "three edits are too many"
        );
    }

    #[test]
    fn names_match_words_being_typed() {
        assert!(matches_prefix("Vegetarian food", "veg"));
        assert!(matches_prefix("Food & Drink", "drink fo"));
        assert!(!matches_prefix("Food & Drink", "drinks"));
        assert!(!matches_prefix("Food", "  "));
    }

    #[test]
    fn an_empty_query_or_index_finds_nothing() {
        let idx = index(&[("Dinner", "")]);
        assert!(idx.search("  ").is_empty());
        assert!(
            TextIndex::build(Vec::<Vec<Field>>::new())
                .search("dinner")
                .is_empty()
        );
    }
}
