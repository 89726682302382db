//! The lexical index's decoders run on arbitrary bytes (see `crate::fuzzing`).

use super::block::{Block, BlockBuf};
use super::codec::{
    decode_fresh, decode_posting, decode_segment_row, decode_stats, encode_fresh, encode_posting,
    encode_stats,
};
use super::layout::{BLOCK_VERSION, POSTING_VERSION, STATS_VERSION};

/// A segment block: every accessor on every entry; a block that checks out, written again
/// entry by entry, is the same bytes (version 3).
pub(crate) fn fuzz_block(data: &[u8]) -> Result<(), String> {
    let Some(block) = Block::parse(data) else { return Ok(()) };
    let _ = block.len();
    for i in 0..block.entries {
        let _ = block.term(i);
        if let Some(chunk) = block.chunk(i) {
            for j in 0..chunk.len() {
                let _ = (chunk.get(j), chunk.number(j));
            }
            let _ = (chunk.extremes(), chunk.gallop(0, u32::MAX / 3));
        }
        let _ = (block.postings(i), block.keyed(i));
    }
    let _ = block.find("fuzz");
    if let Some(t) = block.term(0) {
        let _ = block.find(t);
    }
    let _ = block.keyed_entries();
    if let Some(entries) = block.entries() {
        let mut buf = BlockBuf::default();
        for (term, postings) in &entries {
            buf.push(term, postings);
        }
        let again = buf.take();
        if data.first() == Some(&BLOCK_VERSION) && again != data {
            return Err(format!("block of {} entries written again differs", entries.len()));
        }
    }
    Ok(())
}

/// A fresh row (decoded and encoded again), a posting-list row (a sealed one written again is
/// the same bytes), the namespace totals (likewise) and a format-9 segment row.
pub(crate) fn fuzz_rows(data: &[u8]) -> Result<(), String> {
    if let Some((len, terms)) = decode_fresh(data) {
        let again = encode_fresh(terms.iter().map(|(t, tf)| (*t, *tf)), len);
        if decode_fresh(&again) != Some((len, terms.clone())) {
            return Err(format!("fresh row of {} terms written again differs", terms.len()));
        }
    }
    if let Some((tf, len)) = decode_posting(data)
        && data.first() == Some(&POSTING_VERSION)
        && encode_posting(tf, len).as_slice() != data
    {
        return Err("posting written again differs".into());
    }
    if let Some(s) = decode_stats(data)
        && data.first() == Some(&STATS_VERSION)
        && encode_stats(s).as_slice() != data
    {
        return Err("namespace totals written again differ".into());
    }
    let _ = decode_segment_row(data);
    Ok(())
}
