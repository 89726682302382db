//! The local MiniLM embedder against sentence-transformers' own output.
//!
//! `tests/data/minilm_expected.json` was written by `tests/data/minilm_expected.py` with
//! sentence-transformers (its version is in the file) from the same model files that
//! `scripts/fetch-minilm.sh` installs; the model must be fetched before these tests run.
#![cfg(feature = "local-minilm")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mnemon_embed::{Embedder, LocalMiniLm};

fn model() -> LocalMiniLm {
    let dir = LocalMiniLm::default_dir();
    LocalMiniLm::open(&dir).unwrap_or_else(|e| {
        panic!("{e}\n(the local-minilm tests need the model: run scripts/fetch-minilm.sh)")
    })
}

fn expected() -> Vec<(String, Vec<u32>, Vec<f32>)> {
    let doc: serde_json::Value = serde_json::from_str(include_str!("data/minilm_expected.json")).unwrap();
    doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let ids = c["ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
            let v = c["vector"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect();
            (c["text"].as_str().unwrap().to_string(), ids, v)
        })
        .collect()
}

#[test]
fn token_ids_match_hugging_face() {
    let m = model();
    for (text, ids, _) in expected() {
        assert_eq!(m.token_ids(&text), ids, "token ids of {text:?}");
    }
}

#[test]
fn vectors_match_sentence_transformers() {
    let m = model();
    let cases = expected();
    let texts: Vec<&str> = cases.iter().map(|c| c.0.as_str()).collect();
    // All together (padded batches) and one at a time must both match.
    let batched = m.embed(&texts).unwrap();
    for ((text, _, want), got) in cases.iter().zip(&batched) {
        assert_eq!(got.len(), 384);
        let cos: f32 = got.iter().zip(want).map(|(a, b)| a * b).sum();
        assert!(cos > 0.999, "cosine {cos} for {text:?}");
        let single = &m.embed(&[text.as_str()]).unwrap()[0];
        let cos1: f32 = single.iter().zip(want).map(|(a, b)| a * b).sum();
        assert!(cos1 > 0.999, "cosine {cos1} for {text:?} alone");
        let norm: f32 = got.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
    }
    assert_eq!(m.model_id(), "all-MiniLM-L6-v2");
    assert_eq!(m.dimension(), 384);
}

#[test]
fn similar_sentences_are_closer_than_unrelated_ones() {
    let m = model();
    let v = m
        .embed(&[
            "The deploy failed because the database migration timed out.",
            "A schema migration took too long and broke the release.",
            "My cat likes to sleep in the sun.",
        ])
        .unwrap();
    let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]) + 0.2);
}

#[test]
fn a_missing_model_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = LocalMiniLm::open(dir.path()).unwrap_err().to_string();
    assert!(e.contains("model.safetensors") && e.contains("mnemon model fetch"), "{e}");
    // A damaged weights file is an error, not a panic.
    std::fs::write(dir.path().join("model.safetensors"), b"not safetensors").unwrap();
    std::fs::copy(LocalMiniLm::default_dir().join("config.json"), dir.path().join("config.json")).unwrap();
    std::fs::copy(LocalMiniLm::default_dir().join("tokenizer.json"), dir.path().join("tokenizer.json"))
        .unwrap();
    let e = LocalMiniLm::open(dir.path()).unwrap_err().to_string();
    assert!(e.contains("model.safetensors"), "{e}");
}
