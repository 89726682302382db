"""sentence-transformers' speed on the texts of `mnemon-bench embed`, for a side-by-side ratio.

    mnemon-bench embed --embedders minilm --write-texts /tmp/texts.jsonl
    pip install sentence-transformers   # torch comes with it
    python3 benches/embed_baseline.py ~/.cache/mnemon/models/all-minilm-l6-v2 /tmp/texts.jsonl

Prints embeddings/s in batches of 32 and the median latency of one text, with the thread
count torch uses (set OMP_NUM_THREADS to compare like with like).
"""
import time, sys, json, subprocess
from sentence_transformers import SentenceTransformer
import torch
m = SentenceTransformer(sys.argv[1], device="cpu")
texts = [json.loads(l)["text"] for l in open(sys.argv[2])]
m.encode(texts[:8])
t = time.time(); m.encode(texts, batch_size=32); s = time.time() - t
one = []
for x in texts[:200]:
    t0 = time.perf_counter(); m.encode([x]); one.append(time.perf_counter() - t0)
one.sort()
print(f"torch {torch.__version__} threads {torch.get_num_threads()}: {len(texts)/s:.0f} embeddings/s, one text p50 {one[100]*1e6:.0f} us")
