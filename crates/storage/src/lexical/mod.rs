//! The lexical index: BM25 over the tokens of each record's text, kept in the same commits as
//! the records and answerable as of any (valid, known) time.
//!
//! A record's text is indexed when a revision changes it (or creates the record). Revision
//! `from_rev` then starts a new text, kept in one of two ways:
//!
//! - **fresh**: one row `(ns, id, from_rev) -> [2][doc length u32][terms u32]([tf u32][term
//!   length u16][term])*[crc u32]` in `mnemon.fresh`, holding the text's length and terms. A new text
//!   costs one row next to the previous one (ids are time-ordered), not one B-tree leaf per
//!   distinct term: a durable commit of a small record writes a few pages instead of dozens.
//! - **merged**: a row `(ns, id, from_rev) -> [2][0 u32][doc length u32][crc u32]` in `mnemon.texts`
//!   saying that the revision starts a text, and one posting per distinct term, either in a
//!   **segment** (`(text number, tf, doc length)`, the number naming the text's key in the
//!   segment's list of text keys, `mnemon.segment_texts`, format 15; see `numbers.rs`) or in
//!   the **posting lists** (`(ns, term, id, from_rev) -> [2][tf u32][doc length u32][crc u32]`
//!   in `mnemon.postings`).
//!
//! Every row ends with the CRC-32 of the bytes before it (format 18; segment blocks and
//! text-number parts since format 17), checked when it is read: damage is an error, never
//! other counts and a different ranking.
//!
//! When a commit would leave a namespace with [`FRESH_LIMIT`] fresh texts or more, it merges
//! them all (and its own texts, the first [`crate::tables::FEW_ROWS`] of them after reading
//! them back from `mnemon.fresh`, where [`LexicalWriter::write`] put them as the jobs were
//! applied), so a search reads at most that many fresh rows. A merge writes its postings as a
//! new **segment** (format 10): sorted by `(term, id, from_rev)` and cut into blocks of about
//! 32 KiB (16 KiB before format 15), each one row `(ns, segment, first term, part)` in `mnemon.segment_blocks` holding
//! many terms' postings (see [`Block`](block::Block)). A segment is one run of keys, a few large rows, where
//! inserting its postings into the posting lists would touch a leaf per distinct term, spread
//! over the tree (with texts of 30 words from a vocabulary of 5,000, that made merges most of
//! the cost of a write; format 9 wrote one row per term, which was still a B-tree insert per
//! term, format 8 one per posting).
//!
//! Segments are **tiered**: a segment's number holds its level (above bit 56) and a sequence
//! number. A merge of fresh texts makes a segment of level 0 (or, for a bulk commit, of the
//! level of its size, [`level_for`](block::level_for)); when a level would hold [`SEGMENT_FANOUT`] segments, the
//! merge reads them all, and writes them with its own postings as one segment of the next
//! level, and so on up. A merge reads term by term from each of its inputs (its own postings,
//! sorted, and each joined segment one block at a time) and writes the new segment block by
//! block: it holds a block per input, however large the levels. Each posting is thus rewritten once per level,
//! always as whole blocks, never inserted in place. A namespace of `n` texts has at most 7
//! segments per level and about `log8(n / 256) + 1` levels (at most 7, 14, 21, 28 segments
//! up to 2k, 16k, 131k, 1M texts), and a search reads, per term and segment, the blocks
//! holding the term's postings: one (two where they cross a boundary) for all but the common
//! terms, whose postings fill a run of blocks (about 2,700 postings a block). The posting lists are written only by
//! [`crate::WriteOp::MergeTexts`], which moves a namespace's fresh texts and every segment
//! into them at any time (a server's quiet moment), so that searches read one place.
//!
//! A fresh text has no row in `mnemon.texts` (format 6; formats 2 to 5 wrote one for every
//! text at once, an insert per record that a durable commit paid for, and which a file of
//! those formats still holds beside its fresh rows: the two agree). The revisions starting a
//! record's texts are therefore the keys of its rows in `mnemon.texts` and `mnemon.fresh`
//! together.
//!
//! A text's terms serve revision `from_rev` and the later revisions until the next text:
//! a search resolves each matching record to its revision visible at the asked time and
//! counts only the terms of the text serving that revision. `forget` removes all of them,
//! from the posting lists and the segments.

mod block;
mod codec;
mod fuzz;
mod layout;
mod maxscore;
mod numbers;
mod posting;
mod search;
mod segments;
#[cfg(test)]
mod tests;
mod verify;
mod writer;

pub(crate) use block::{number_blocks, seal_block};
pub(crate) use numbers::{is_sealed_part, seal_part};

/// Whether a stored segment block is of the sealed version (format 17).
pub(crate) fn is_sealed_block(b: &[u8]) -> bool {
    b.first() == Some(&layout::BLOCK_VERSION)
}
pub(crate) use codec::{LexStats, RowTable, reseal_row, stats_row};
pub(crate) use fuzz::{fuzz_block, fuzz_rows};
pub use layout::{FRESH_LIMIT, SEGMENT_FANOUT};
pub use search::LexicalHit;
pub(crate) use search::search;
pub(crate) use segments::Segments;
pub(crate) use verify::{Stored, verify};
pub(crate) use writer::{LexicalWriter, PreparedText, prepare};
