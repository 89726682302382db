//! How the lexical index turns a text (or a query) into terms. The analysis is part of the
//! file format: a file's postings were made by one analyzer, and its queries must be analysed
//! by the same one (`mnemon_storage::format::analyzer_for`).
//!
//! Format 11 on ([`Analyzer::Stemmed`]):
//!
//! 1. Words by Unicode's word boundaries (UAX #29, `unicode-segmentation`), so that combining
//!    marks stay inside their word (a decomposed "café" is one word) and punctuation never
//!    joins two words.
//! 2. Scripts written without spaces between words (Han, Hiragana, Katakana, Hangul, Thai,
//!    Lao, Khmer, Myanmar): each run of them gives its overlapping character bigrams ("日本語"
//!    gives "日本" and "本語"; a lone character itself), the scheme of Lucene's CJK bigram
//!    filter. A query is analysed the same way, so a two-character word matches.
//! 3. Other words as [`crate::tokens::tokenize`] splits them: lower-cased, split at
//!    apostrophes and other punctuation, and identifiers split at `snake_case` and
//!    `camelCase` boundaries with the whole identifier kept too.
//! 4. English stopwords left out: NLTK's list of 179 words (the list the usual BM25
//!    baselines use), contraction pieces included ("don't" gives "don" and "t", both on it).
//! 5. Each remaining word stemmed by the Snowball English (Porter 2) stemmer: "painting",
//!    "painted" and "paints" all give "paint".
//!
//! A text's length for BM25 is the number of terms it gives (stopwords not counted); terms of
//! more than 64 bytes count but are not indexed.
//!
//! Formats 2 to 10 ([`Analyzer::Words`]) indexed the tokens of [`crate::tokens::tokenize`]
//! less 36 function words, unstemmed, and counted every token in a text's length. A file of
//! those formats is re-indexed when a writer opens it; a read-only handle on one analyses its
//! queries the old way.

use std::borrow::Cow;

use unicode_segmentation::UnicodeSegmentation;

use crate::tokens::{for_each_token_where, is_stopword};

/// Terms longer than this many bytes are counted in a text's length but not indexed.
pub(crate) const MAX_TERM_BYTES: usize = 64;

/// NLTK's English stopword list (179 words).
const NLTK_STOPWORDS: [&str; 179] = [
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "you're",
    "you've",
    "you'll",
    "you'd",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "she's",
    "her",
    "hers",
    "herself",
    "it",
    "it's",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "that'll",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    "s",
    "t",
    "can",
    "will",
    "just",
    "don",
    "don't",
    "should",
    "should've",
    "now",
    "d",
    "ll",
    "m",
    "o",
    "re",
    "ve",
    "y",
    "ain",
    "aren",
    "aren't",
    "couldn",
    "couldn't",
    "didn",
    "didn't",
    "doesn",
    "doesn't",
    "hadn",
    "hadn't",
    "hasn",
    "hasn't",
    "haven",
    "haven't",
    "isn",
    "isn't",
    "ma",
    "mightn",
    "mightn't",
    "mustn",
    "mustn't",
    "needn",
    "needn't",
    "shan",
    "shan't",
    "shouldn",
    "shouldn't",
    "wasn",
    "wasn't",
    "weren",
    "weren't",
    "won",
    "won't",
    "wouldn",
    "wouldn't",
];

/// Whether the stemmed analysis leaves this lower-cased word out.
pub fn is_english_stopword(word: &str) -> bool {
    NLTK_STOPWORDS.contains(&word)
}

/// How a file's lexical index analyses texts and queries (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Analyzer {
    /// Formats 2 to 10: [`crate::tokens::tokenize`] less 36 function words, unstemmed.
    Words,
    /// Format 11 on: UAX #29 words, bigrams of unspaced scripts, NLTK's stopwords left out,
    /// Snowball English stems.
    Stemmed,
}

impl Analyzer {
    /// Call `term` with each term of `text` that the index holds, in text order (repeats
    /// included), and return the text's length for BM25.
    pub fn terms<'t>(self, text: &'t str, mut term: impl FnMut(Cow<'t, str>)) -> u32 {
        let mut len = 0u32;
        match self {
            Analyzer::Words => crate::tokens::for_each_token(text, |t| {
                len = len.saturating_add(1);
                if t.len() <= MAX_TERM_BYTES && !is_stopword(&t) {
                    term(t);
                }
            }),
            Analyzer::Stemmed => stemmed(text, &mut |t| {
                len = len.saturating_add(1);
                if t.len() <= MAX_TERM_BYTES {
                    term(t);
                }
            }),
        }
        len
    }

    /// The distinct terms of a query, sorted.
    pub fn query_terms(self, query: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.terms(query, |t| out.push(t.into_owned()));
        out.sort();
        out.dedup();
        out
    }
}

/// Characters of scripts written without spaces between words.
fn is_unspaced(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF // Thai, Lao
        | 0x1000..=0x109F // Myanmar
        | 0x1780..=0x17FF // Khmer
        | 0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF // Hangul
        | 0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F // Hiragana, Katakana
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3134F // Han
    )
}

/// A letter, digit or underscore, or a combining mark (which belongs to the letter before it).
fn joins_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || is_mark(c)
}

fn is_mark(c: char) -> bool {
    // The combining blocks cover the marks of Latin, Greek and Cyrillic text; marks of other
    // scripts are alphabetic in Rust's sense (`Alphabetic` includes `Mn` of Indic scripts, for
    // example) or belong to the unspaced scripts handled above.
    matches!(c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// The stemmed analysis of a text: every term, stopwords already left out.
fn stemmed<'t>(text: &'t str, term: &mut impl FnMut(Cow<'t, str>)) {
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    let mut run: Vec<char> = Vec::new();
    for piece in text.split_word_bounds() {
        if !piece.chars().any(char::is_alphanumeric) {
            // Spaces and punctuation end a run of an unspaced script.
            bigrams(&mut run, term);
            continue;
        }
        // A word: its stretches of unspaced script join the run, the rest are words.
        let mut rest = piece;
        while !rest.is_empty() {
            let unspaced = rest.chars().next().is_some_and(is_unspaced);
            let end =
                rest.char_indices().find(|&(_, c)| is_unspaced(c) != unspaced).map_or(rest.len(), |(i, _)| i);
            let (part, tail) = rest.split_at(end);
            if unspaced {
                run.extend(part.chars());
            } else {
                bigrams(&mut run, term);
                for_each_token_where(part, joins_word, |t| {
                    if is_english_stopword(&t) {
                        return;
                    }
                    term(stem(&stemmer, t));
                });
            }
            rest = tail;
        }
    }
    bigrams(&mut run, term);
}

/// Words whose stems a thread keeps: a word's stem is looked up rather than computed again
/// (Snowball's suffix search is most of the analysis of a text, and words repeat); the cache
/// is emptied when it holds this many.
const STEM_CACHE: usize = 1 << 15;

thread_local! {
    /// Stems of the words this thread analysed lately: `None` when a word is its own stem.
    static STEMS: std::cell::RefCell<std::collections::HashMap<Box<str>, Option<Box<str>>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// Words longer than this (in bytes) are indexed as they are, not stemmed: no English word
/// is, and Snowball's stemmer copies the whole word at every change it makes, so a long run of
/// letters (a pasted blob, a megabyte of `y`) took time growing with its square.
pub(crate) const LONGEST_STEMMED: usize = 64;

/// The stem of `word` (what `stemmer` gives), from the thread's cache when it is there; a word
/// longer than [`LONGEST_STEMMED`] is its own stem.
fn stem<'t>(stemmer: &rust_stemmers::Stemmer, word: Cow<'t, str>) -> Cow<'t, str> {
    if word.len() > LONGEST_STEMMED {
        return word;
    }
    let cached = STEMS.with(|c| c.borrow().get(word.as_ref()).cloned());
    let found = match cached {
        Some(found) => found,
        None => {
            let stemmed = stemmer.stem(&word);
            let computed = (stemmed != word).then(|| stemmed.into_owned().into_boxed_str());
            STEMS.with(|c| {
                let mut c = c.borrow_mut();
                if c.len() >= STEM_CACHE {
                    c.clear();
                }
                c.insert(word.as_ref().into(), computed.clone());
            });
            computed
        }
    };
    match found {
        None => word,
        Some(s) => Cow::Owned(s.into_string()),
    }
}

/// Emit a run of unspaced-script characters as overlapping bigrams (a lone character as
/// itself), lower-cased, and empty the run.
fn bigrams<'t>(run: &mut Vec<char>, term: &mut impl FnMut(Cow<'t, str>)) {
    match run.len() {
        0 => {}
        1 => term(Cow::Owned(run[0].to_lowercase().collect())),
        _ => {
            for pair in run.windows(2) {
                term(Cow::Owned(pair.iter().flat_map(|c| c.to_lowercase()).collect()));
            }
        }
    }
    run.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        let mut v = Vec::new();
        Analyzer::Stemmed.terms(text, |t| v.push(t.into_owned()));
        v
    }

    #[test]
    fn cached_stems_are_the_stemmers() {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let words: Vec<String> = (0..(super::STEM_CACHE * 2 + 100))
            .map(|i| format!("{}ing{}", ["runn", "jump", "flush", "cach"][i % 4], "s".repeat(i % 3)))
            .chain(["running", "caches", "redb", "flushed", "running"].map(String::from))
            .collect();
        // A long word is its own stem (the stemmer would take time growing with its square).
        let long = "y".repeat(super::LONGEST_STEMMED + 1);
        assert!(matches!(super::stem(&stemmer, Cow::Borrowed(long.as_str())), Cow::Borrowed(w) if w == long));
        // Twice over, past the cache's size: hits, misses and clears all give the stemmer's
        // own answer, borrowed when the word is its own stem.
        for _ in 0..2 {
            for w in &words {
                let cached = super::stem(&stemmer, Cow::Borrowed(w.as_str()));
                assert_eq!(cached, stemmer.stem(w), "{w}");
                assert_eq!(matches!(cached, Cow::Borrowed(_)), stemmer.stem(w) == w.as_str(), "{w}");
            }
        }
    }

    #[test]
    fn english_is_stemmed_without_stopwords() {
        assert_eq!(terms("She was painting the sunrises she'd painted"), ["paint", "sunris", "paint"]);
        assert_eq!(terms("Caroline's adoption; they adopted"), ["carolin", "adopt", "adopt"]);
        assert_eq!(terms("I don't know"), ["know"]);
        assert_eq!(Analyzer::Stemmed.terms("the cat and a dog", |_| {}), 2);
    }

    #[test]
    fn identifiers_are_split_and_kept() {
        assert_eq!(terms("parseHTTPResponse"), ["parsehttprespons", "pars", "http", "respons"]);
        assert_eq!(terms("max_retry_count=3"), ["max_retry_count", "max", "retri", "count", "3"]);
    }

    #[test]
    fn accents_and_other_scripts() {
        // A decomposed é (e and U+0301) stays inside its word.
        assert_eq!(terms("cafe\u{301} Grüße ВОДА"), ["cafe\u{301}", "grüße", "вода"]);
        assert_eq!(terms("日本語です"), ["日本", "本語", "語で", "です"]);
        assert_eq!(terms("東京 in 日本"), ["東京", "日本"]);
        assert_eq!(terms("猫"), ["猫"]);
        assert_eq!(terms("ภาษาไทย"), ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]);
        // "i" of the camelCase split is a stopword.
        assert_eq!(terms("iPhone用"), ["iphon", "phone", "用"]);
    }

    #[test]
    fn long_terms_count_but_are_not_indexed() {
        let long = "x".repeat(65);
        let mut v = Vec::new();
        assert_eq!(Analyzer::Stemmed.terms(&format!("{long} cat"), |t| v.push(t.into_owned())), 2);
        assert_eq!(v, ["cat"]);
    }

    #[test]
    fn the_old_analysis_is_unchanged() {
        let mut v = Vec::new();
        let len = Analyzer::Words.terms("The painted sunrise of parseHTTP", |t| v.push(t.into_owned()));
        assert_eq!(len, 7);
        assert_eq!(v, ["painted", "sunrise", "parsehttp", "parse", "http"]);
    }
}
