//! The tokenizer shared by the lexical index and the hashing embedder.
//!
//! Tokens are lower-cased runs of letters, digits and underscores (any script). An identifier
//! is also split at `snake_case` and `camelCase` boundaries, and the whole identifier is kept
//! as well, so `parseHTTPResponse` matches a search for "parse", "response" or the identifier.

/// English function words the lexical index leaves out: nearly every text has them, so their
/// BM25 weight is close to zero while their posting lists are the longest.
const STOPWORDS: [&str; 36] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "into", "is", "it",
    "its", "of", "on", "or", "so", "that", "the", "their", "then", "there", "these", "this", "to", "was",
    "were", "when", "which", "will", "with", "we",
];

/// Whether the lexical index leaves this (lower-cased) token out.
pub fn is_stopword(token: &str) -> bool {
    STOPWORDS.contains(&token)
}

/// The tokens of a text, in order (identifier parts after the whole identifier).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.into_owned()));
    out
}

/// Call `f` with each token of a text, in the order of [`tokenize`]: a plain lower-case word
/// borrowed from the text (no allocation), anything else as the lower-cased copy it needs.
pub(crate) fn for_each_token<'t>(text: &'t str, f: impl FnMut(std::borrow::Cow<'t, str>)) {
    for_each_token_where(text, |c| c.is_alphanumeric() || c == '_', f);
}

/// [`for_each_token`] with words made of the characters for which `joins` holds (letters,
/// digits and underscores there).
pub(crate) fn for_each_token_where<'t>(
    text: &'t str,
    joins: impl Fn(char) -> bool,
    mut f: impl FnMut(std::borrow::Cow<'t, str>),
) {
    use std::borrow::Cow;
    for raw in text.split(|c: char| !joins(c)) {
        if raw.is_empty() {
            continue;
        }
        if raw.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
            // The common case: one plain lower-case word, its own only part.
            f(Cow::Borrowed(raw));
            continue;
        }
        let parts: Vec<String> =
            if raw.is_ascii() { split_ascii_identifier(raw) } else { split_identifier(raw) };
        if parts.len() > 1 {
            let whole = raw.trim_matches('_').to_lowercase();
            if !whole.is_empty() {
                f(Cow::Owned(whole));
            }
        }
        for part in parts {
            f(Cow::Owned(part));
        }
    }
}

/// [`split_identifier`] for ASCII, on bytes (no `char` vector, one allocation per part).
fn split_ascii_identifier(raw: &str) -> Vec<String> {
    let mut parts = Vec::new();
    for piece in raw.split('_').filter(|p| !p.is_empty()) {
        let b = piece.as_bytes();
        let mut start = 0;
        for i in 1..b.len() {
            let (prev, cur) = (b[i - 1], b[i]);
            let next_lower = b.get(i + 1).is_some_and(u8::is_ascii_lowercase);
            let boundary = (prev.is_ascii_lowercase() && cur.is_ascii_uppercase())
                || (prev.is_ascii_uppercase() && cur.is_ascii_uppercase() && next_lower);
            if boundary {
                parts.push(piece[start..i].to_ascii_lowercase());
                start = i;
            }
        }
        parts.push(piece[start..].to_ascii_lowercase());
    }
    parts
}

/// `parseHTTPResponse_v2` -> parse, http, response, v2.
fn split_identifier(raw: &str) -> Vec<String> {
    let mut parts = Vec::new();
    for piece in raw.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<char> = piece.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let boundary = (prev.is_lowercase() && cur.is_uppercase())
                || (prev.is_uppercase() && cur.is_uppercase() && next_lower);
            if boundary {
                parts.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        parts.push(chars[start..].iter().collect::<String>().to_lowercase());
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_identifiers_and_unicode() {
        assert_eq!(tokenize("parseHTTPResponse"), vec!["parsehttpresponse", "parse", "http", "response"]);
        assert_eq!(tokenize("max_retry_count=3"), vec!["max_retry_count", "max", "retry", "count", "3"]);
        assert_eq!(tokenize("Grüße, ВОДА!"), vec!["grüße", "вода"]);
    }

    /// The ASCII paths split exactly as the general one does.
    #[test]
    fn ascii_paths_agree_with_the_general_split() {
        for raw in [
            "parseHTTPResponse_v2",
            "__init__",
            "HTTP",
            "ABCdef",
            "aB",
            "a_b_c",
            "x1Y2z3",
            "snake_Case_ID",
            "getURLs",
            "_",
            "v2",
            "already",
        ] {
            assert_eq!(split_ascii_identifier(raw), split_identifier(raw), "{raw}");
            let general: Vec<String> = {
                let parts = split_identifier(raw);
                let whole = raw.trim_matches('_').to_lowercase();
                let mut v = Vec::new();
                if parts.len() > 1 && !whole.is_empty() {
                    v.push(whole);
                }
                v.extend(parts);
                v
            };
            assert_eq!(tokenize(raw), general, "{raw}");
        }
    }
}
