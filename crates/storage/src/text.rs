//! Short strings stored inline, and short lists of them.

/// A string that keeps up to 24 bytes inline (no heap allocation): tags, agent names, keys,
/// categories, file paths. It derefs to `str` and converts from `&str` and `String`.
///
/// Reading a record allocates once per heap string; most of a record's strings are short, so
/// this halves the allocations of a listing.
pub type Text = compact_str::CompactString;

/// A list of [`Text`] that keeps up to two entries inline: a record's tags, the files of a
/// learning or an episode. Most records have two tags or fewer, so reading one allocates no list.
/// It derefs to a slice, converts from a `Vec`, and is built with [`crate::text_list!`] like
/// `vec!`; JSON sees a plain array.
pub type TextList = smallvec::SmallVec<[Text; 2]>;

/// Build a [`TextList`] like `vec!`: `text_list!["a", "b"]`.
#[macro_export]
macro_rules! text_list {
    () => { $crate::TextList::new() };
    ($($x:expr),+ $(,)?) => {{
        let mut list = $crate::TextList::new();
        $( list.push($crate::Text::from($x)); )+
        list
    }};
}
