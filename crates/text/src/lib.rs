//! mnemon's text analysis, apart from its storage: what the lexical index (in
//! `mnemon-storage`) and the embedders (in `mnemon-embed`) both read a text with.
//!
//! - [`tokens`]: the tokenizer: lower-cased runs of letters, digits and underscores, with
//!   identifiers split at `snake_case` and `camelCase` boundaries (the hashing embedder's
//!   words, and the terms of the index's first formats).
//! - [`analyzer`]: the analysis of the index's terms: Unicode words (UAX #29), bigrams of
//!   scripts written without spaces, English stopwords left out, Snowball English stems.
//!
//! ```
//! use mnemon_text::analyzer::Analyzer;
//! use mnemon_text::tokens::tokenize;
//!
//! assert_eq!(tokenize("parseHTTPResponse now"), ["parsehttpresponse", "parse", "http", "response", "now"]);
//! let mut terms = Vec::new();
//! let len = Analyzer::Stemmed.terms("The painters painted", |t| terms.push(t.into_owned()));
//! assert_eq!((len, terms), (2, vec!["painter".to_string(), "paint".to_string()]));
//! ```

#![deny(missing_docs)]
#![doc(test(attr(deny(warnings))))]

pub mod analyzer;
pub mod tokens;
