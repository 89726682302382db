import json, sys
from sentence_transformers import SentenceTransformer
m = SentenceTransformer(sys.argv[1], device="cpu")
sentences = [
    "The quick brown fox jumps over the lazy dog.",
    "We chose redb over SQLite because it is pure Rust and has MVCC.",
    "Decision: use UUIDv7 ids so that keys sort by creation time.",
    "The build fails with error E0502: cannot borrow `x` as mutable because it is also borrowed as immutable",
    "fn parse_timestamp(input: &str) -> Result<DateTime<Utc>, ParseError>",
    "Café naïve résumé — Ünïcödé façade",
    "日本語のテキストも処理できます。",
    "a",
    "",
    "HTTPServerError in getUserById: connection reset by peer (retrying 3x with exponential backoff)",
    "Remember: the staging database password rotates every Monday at 09:00 UTC.",
    " ".join(["token"] * 300),
]
v = m.encode(sentences, normalize_embeddings=True, convert_to_numpy=True)
tok = m.tokenizer
out = []
for s, e in zip(sentences, v):
    ids = tok(s, truncation=True, max_length=m.max_seq_length)["input_ids"]
    out.append({"text": s, "ids": ids, "vector": [round(float(x), 7) for x in e]})
json.dump({"model": "sentence-transformers/all-MiniLM-L6-v2", "max_seq_length": m.max_seq_length, "sentence_transformers": __import__("sentence_transformers").__version__, "torch": __import__("torch").__version__, "cases": out}, open(sys.argv[2], "w"), indent=0)
print(m.max_seq_length, v.shape)
