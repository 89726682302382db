//! Short strings stored inline.

/// A string that keeps up to 24 bytes inline (no heap allocation): tags, agent names, keys,
/// categories, file paths. It derefs to `str` and converts from `&str` and `String`.
///
/// Reading a record allocates once per heap string; most of a record's strings are short, so
/// this halves the allocations of a listing.
pub type Text = compact_str::CompactString;
