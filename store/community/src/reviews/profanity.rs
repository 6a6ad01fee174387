//! The profanity score of a review's text, from `rustrict`, which grades what it finds per
//! category (profane, offensive, sexual, mean) as mild, moderate or severe, and sees through
//! the usual evasions (spaced letters, digits or look-alike characters for letters, repeated
//! letters) while leaving place names such as "Scunthorpe" alone.

use std::sync::LazyLock;

use rustrict::{Censor, Trie, Type};

/// Words `rustrict` flags that are ordinary in reviews of food and places.
const SAFE: [&str; 3] = ["shiitake", "hancock", "hancocks"];

/// rustrict's own word list with `SAFE` marked safe, built once.
static WORDS: LazyLock<Trie> = LazyLock::new(|| {
    let mut trie = Trie::default();
    for word in SAFE {
        trie.set(word, Type::SAFE);
    }
    trie
});

/// How offensive `text` is, from 0.0 to 1.0: the most severe thing found in any category,
/// severe 1.0, moderate 0.6, mild 0.25, nothing 0.0 (so the default threshold of 0.5 hides
/// moderate and severe findings and lets mild ones such as "crap" through).
pub fn profanity_score(text: &str) -> f64 {
    let found = Censor::from_str(text).with_trie(&WORDS).analyze();
    let categories = Type::PROFANE | Type::OFFENSIVE | Type::SEXUAL | Type::MEAN;
    if found.is(categories & Type::SEVERE) {
        1.0
    } else if found.is(categories & Type::MODERATE) {
        0.6
    } else if found.is(categories & Type::MILD) {
        0.25
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::profanity_score;

    #[test]
    fn clean_text_scores_nothing() {
        for text in [
            "Lovely hotel, great breakfast, would book again.",
            "The service was slow and the room was cold.",
            "Scunthorpe was lovely",
            "A day out in Penistone, reading Dickens",
            "The shiitake risotto was superb",
            "Mr Hancock at the desk was kind",
        ] {
            assert_eq!(profanity_score(text), 0.0, "{text}");
        }
    }

    #[test]
    fn offensive_text_and_its_evasions_score_high() {
        for text in [
            "this place is shit",
            "f u c k this place",
            "sh1t service",
            "what a fcking joke",
            "ѕһіt",
            "the staff are retarded",
        ] {
            assert!(profanity_score(text) >= 0.5, "{text}");
        }
    }

    #[test]
    fn mild_words_score_below_the_default_threshold() {
        for text in ["crap food", "damn good coffee"] {
            let score = profanity_score(text);
            assert!(score > 0.0 && score < 0.5, "{text}: {score}");
        }
    }
}
