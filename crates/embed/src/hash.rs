//! The offline default embedder: feature hashing.

use crate::{EmbedError, Embedder, unit};

/// Feature hashing of word unigrams (weight 1), word bigrams (0.7) and character trigrams of
/// each word with boundary marks (0.4) into `dimension` signed buckets, L2-normalised. Words
/// are lower-cased runs of letters and digits (any script); identifiers are also split at
/// `snake_case` and `camelCase` boundaries, keeping the whole identifier too.
#[derive(Clone, Debug)]
pub struct HashEmbedder {
    dimension: usize,
    id: String,
}

impl Default for HashEmbedder {
    fn default() -> Self {
        HashEmbedder::new(384)
    }
}

/// 64-bit FNV-1a over byte strings (joined by a separator), then a finaliser that spreads the
/// bits (stable across platforms).
fn hash(parts: &[&[u8]], salt: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ salt;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0x1f;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

impl HashEmbedder {
    /// A hashing embedder of the given dimension.
    pub fn new(dimension: usize) -> Self {
        HashEmbedder { dimension: dimension.max(1), id: format!("mnemon-hash-v1-{}", dimension.max(1)) }
    }

    fn add(&self, v: &mut [f32], h: u64, w: f32) {
        let i = usize::try_from(h % self.dimension as u64).unwrap_or(0);
        let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
        v[i] += sign * w;
    }

    fn one(&self, text: &str) -> Option<Vec<f32>> {
        let words = mnemon_text::tokens::tokenize(text);
        let mut v = vec![0f32; self.dimension];
        let mut marked: Vec<char> = Vec::new();
        let mut tri = [0u8; 12];
        for w in &words {
            self.add(&mut v, hash(&[w.as_bytes()], 1), 1.0);
            marked.clear();
            marked.push('#');
            marked.extend(w.chars());
            marked.push('#');
            for t in marked.windows(3) {
                // The trigram's UTF-8 bytes, without a string per trigram.
                let mut n = 0;
                for c in t {
                    n += c.encode_utf8(&mut tri[n..]).len();
                }
                self.add(&mut v, hash(&[&tri[..n]], 3), 0.4);
            }
        }
        for pair in words.windows(2) {
            self.add(&mut v, hash(&[pair[0].as_bytes(), pair[1].as_bytes()], 2), 0.7);
        }
        unit(v)
    }
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().enumerate().map(|(index, t)| self.one(t).ok_or(EmbedError::Empty { index })).collect()
    }
    /// No: hashing a text is cheaper than looking its vector up, and a cache row per text
    /// would cost every durable commit a page write.
    fn worth_caching(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn deterministic_unit_and_lexically_similar() {
        let e = HashEmbedder::default();
        let v = e
            .embed(&[
                "Use exponential backoff for retries",
                "retries need exponential backoff",
                "the cat sat on the mat",
            ])
            .unwrap();
        assert_eq!(
            v,
            e.embed(&[
                "Use exponential backoff for retries",
                "retries need exponential backoff",
                "the cat sat on the mat"
            ])
            .unwrap()
        );
        for x in &v {
            assert!((cos(x, x) - 1.0).abs() < 1e-5);
        }
        assert!(cos(&v[0], &v[1]) > 0.4, "{}", cos(&v[0], &v[1]));
        assert!(cos(&v[0], &v[2]) < 0.2, "{}", cos(&v[0], &v[2]));
        assert!(matches!(e.embed(&["ok", " -- "]), Err(EmbedError::Empty { index: 1 })));
        assert_eq!(e.model_id(), "mnemon-hash-v1-384");
    }
}

#[cfg(test)]
mod pinned {
    use super::*;

    /// The vectors of `mnemon-hash-v1-*` are stored in databases and must never change: a
    /// digest of a few embeddings, taken when the embedder was first published.
    #[test]
    fn vectors_never_change() {
        let e = HashEmbedder::default();
        let v = e
            .embed(&["Use exponential backoff for retries", "parseHTTPResponse_v2 in Grüße ВОДА", "x"])
            .unwrap();
        let digest = v.iter().flatten().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
            (h ^ u64::from(x.to_bits())).wrapping_mul(0x0100_0000_01b3)
        });
        assert_eq!(format!("{digest:016x}"), "59764500510e43c2");
    }
}
