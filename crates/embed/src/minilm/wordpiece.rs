//! BERT's uncased WordPiece tokenizer, as `tokenizer.json` of all-MiniLM-L6-v2 configures it:
//! the BERT normaliser (clean text, space around CJK ideographs, strip accents, lowercase),
//! the BERT pre-tokeniser (split on whitespace, isolate punctuation), greedy longest-match
//! WordPiece with the `##` continuation prefix, and `[CLS] … [SEP]` around the result.
//!
//! The token ids it gives are checked against Hugging Face's tokenizer on the fixed sentences
//! of `tests/data/minilm_expected.json`.

use std::collections::HashMap;
use std::path::Path;

use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

use crate::EmbedError;

/// Words longer than this (in characters) become `[UNK]`, as in BERT.
const MAX_CHARS_PER_WORD: usize = 100;

/// A WordPiece vocabulary and the special tokens.
#[derive(Debug)]
pub(crate) struct WordPiece {
    vocab: HashMap<String, u32>,
    unk: u32,
    cls: u32,
    sep: u32,
}

impl WordPiece {
    /// Read the vocabulary from a Hugging Face `tokenizer.json` (a WordPiece model).
    pub(crate) fn from_tokenizer_json(path: &Path) -> Result<WordPiece, EmbedError> {
        let bad = |reason: String| EmbedError::Model { path: path.to_path_buf(), reason };
        let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
        let doc: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        let model = &doc["model"];
        if model["type"] != "WordPiece" {
            return Err(bad(format!("the tokenizer is {}, not WordPiece", model["type"])));
        }
        let Some(entries) = model["vocab"].as_object() else {
            return Err(bad("no model.vocab object".into()));
        };
        let mut vocab = HashMap::with_capacity(entries.len());
        for (token, id) in entries {
            let id = id.as_u64().and_then(|i| u32::try_from(i).ok());
            let id = id.ok_or_else(|| bad(format!("token {token:?} has no integer id")))?;
            vocab.insert(token.clone(), id);
        }
        let special = |t: &str| vocab.get(t).copied().ok_or_else(|| bad(format!("no {t} token")));
        Ok(WordPiece { unk: special("[UNK]")?, cls: special("[CLS]")?, sep: special("[SEP]")?, vocab })
    }

    /// The ids of `[CLS] text [SEP]`, at most `max_len` in all (the text's pieces are cut).
    pub(crate) fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let mut ids = vec![self.cls];
        let room = max_len.saturating_sub(2);
        let normal = normalize(text);
        'words: for word in pre_tokenize(&normal) {
            for id in self.pieces(word) {
                if ids.len() > room {
                    break 'words;
                }
                ids.push(id);
            }
        }
        ids.push(self.sep);
        ids
    }

    /// Greedy longest-match pieces of one word; the whole word is `[UNK]` if some part of it
    /// matches nothing.
    fn pieces(&self, word: &str) -> Vec<u32> {
        if word.chars().count() > MAX_CHARS_PER_WORD {
            return vec![self.unk];
        }
        let mut out = Vec::new();
        let mut start = 0;
        let mut key = String::with_capacity(word.len() + 2);
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while end > start {
                key.clear();
                if start > 0 {
                    key.push_str("##");
                }
                key.push_str(&word[start..end]);
                if let Some(&id) = self.vocab.get(&key) {
                    found = Some(id);
                    break;
                }
                // Step back one character, not one byte.
                end = word[..end].char_indices().next_back().map_or(start, |(i, _)| i);
            }
            match found {
                Some(id) => {
                    out.push(id);
                    start = end;
                }
                None => return vec![self.unk],
            }
        }
        out
    }
}

/// The BERT normaliser with lowercasing (which also strips accents when, as here,
/// `strip_accents` is left unset).
fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if c.is_whitespace() {
            cleaned.push(' ');
        } else if is_cjk(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    let stripped: String =
        cleaned.nfd().filter(|c| get_general_category(*c) != GeneralCategory::NonspacingMark).collect();
    stripped.to_lowercase()
}

/// Split on whitespace, and make every punctuation character a word of its own.
fn pre_tokenize(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    for chunk in text.split_whitespace() {
        let mut start = 0;
        for (i, c) in chunk.char_indices() {
            if is_punctuation(c) {
                if start < i {
                    words.push(&chunk[start..i]);
                }
                let end = i + c.len_utf8();
                words.push(&chunk[i..end]);
                start = end;
            }
        }
        if start < chunk.len() {
            words.push(&chunk[start..]);
        }
    }
    words
}

fn is_control(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::Unassigned
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
    )
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(
            get_general_category(c),
            GeneralCategory::ConnectorPunctuation
                | GeneralCategory::DashPunctuation
                | GeneralCategory::OpenPunctuation
                | GeneralCategory::ClosePunctuation
                | GeneralCategory::InitialPunctuation
                | GeneralCategory::FinalPunctuation
                | GeneralCategory::OtherPunctuation
        )
}

/// The CJK Unified Ideographs blocks BERT pads with spaces (not Hiragana, Katakana or Hangul).
fn is_cjk(c: char) -> bool {
    matches!(
        u32::from(c),
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B820..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> WordPiece {
        let vocab = ["[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "hello", ",", "cafe", "a", "##b"]
            .iter()
            .enumerate()
            .map(|(i, t)| ((*t).to_string(), u32::try_from(i).unwrap_or(0)))
            .collect();
        WordPiece { vocab, unk: 0, cls: 1, sep: 2 }
    }

    #[test]
    fn greedy_longest_match_with_continuations() {
        let wp = tiny();
        assert_eq!(wp.encode("unaffable", 16), vec![1, 3, 4, 5, 2]);
        assert_eq!(wp.encode("Hello, CAFÉ", 16), vec![1, 6, 7, 8, 2]);
        // A word with an unmatched part is one [UNK].
        assert_eq!(wp.encode("unaffablex hello", 16), vec![1, 0, 6, 2]);
    }

    #[test]
    fn truncation_keeps_the_special_tokens() {
        let wp = tiny();
        assert_eq!(wp.encode("hello hello hello hello", 4), vec![1, 6, 6, 2]);
        assert_eq!(wp.encode("", 4), vec![1, 2]);
    }

    #[test]
    fn normaliser_and_pre_tokeniser() {
        assert_eq!(normalize("Ünï\u{0}cödé\tX"), "unicode x");
        assert_eq!(pre_tokenize("get_user(id)—ok"), vec!["get", "_", "user", "(", "id", ")", "—", "ok"]);
        // Ideographs stand alone; kana do not, and lose their voicing marks with the accents
        // (で is て plus a combining mark after NFD), exactly as BERT's tokenizer does.
        assert_eq!(pre_tokenize(&normalize("日本語です")), vec!["日", "本", "語", "てす"]);
    }
}
