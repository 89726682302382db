"""An independent BM25 on LoCoMo, beside `mnemon-bench retrieval` (docs/search.md).

rank-bm25's BM25Okapi (k1 1.5, b 0.75) over the same turns as mnemon indexes them ("Speaker:
text", with "[shares an image: caption]" where the turn has one), tokenized by the usual
baseline: lower-cased words, NLTK's English stopwords left out, no stemming. Recall@k is the
share of a question's evidence turns in its first k results, averaged over questions (evidence
ids that name no turn are dropped, as mnemon does).

    python3 -m pip install rank-bm25==0.2.2
    python3 benches/locomo_bm25.py ../shared/data/locomo-dev/locomo-dev.json [--stem]

--stem adds the Snowball English stemmer (python3 -m pip install snowballstemmer==3.0.1).
"""

import json
import re
import sys

from rank_bm25 import BM25Okapi

NLTK = """i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
yourselves he him his himself she she's her hers herself it it's its itself they them their theirs
themselves what which who whom this that that'll these those am is are was were be been being have
has had having do does did doing a an the and but if or because as until while of at by for with
about against between into through during before after above below to from up down in out on off
over under again further then once here there when where why how all any both each few more most
other some such no nor not only own same so than too very s t can will just don don't should
should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't
hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't shan shan't
shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't""".split()
STOP = set(NLTK)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def main():
    path = sys.argv[1]
    stem = "--stem" in sys.argv
    stemmer = None
    if stem:
        import snowballstemmer

        stemmer = snowballstemmer.stemmer("english")

    def tokens(text):
        words = [w for w in re.findall(r"\w+(?:'\w+)?", text.lower()) if w not in STOP]
        return [stemmer.stemWord(w) for w in words] if stemmer else words

    data = json.load(open(path))
    at = (1, 5, 10, 20)
    total = {k: 0.0 for k in at}
    by_cat = {}
    n = 0
    for sample in data:
        conv = sample["conversation"]
        turns = []
        s = 1
        while f"session_{s}" in conv:
            for t in conv[f"session_{s}"]:
                text = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    text += f" [shares an image: {t['blip_caption']}]"
                turns.append((t["dia_id"], text))
            s += 1
        ids = [i for i, _ in turns]
        bm25 = BM25Okapi([tokens(t) for _, t in turns])
        for qa in sample["qa"]:
            evidence = set()
            for e in qa["evidence"]:
                for i in re.split(r"[;,]", e):
                    if i.strip() in ids:
                        evidence.add(i.strip())
            if not evidence:
                continue
            scores = bm25.get_scores(tokens(qa["question"]))
            ranked = [ids[i] for i in sorted(range(len(ids)), key=lambda i: -scores[i])[:20]]
            n += 1
            cat = by_cat.setdefault(qa["category"], [0, 0.0])
            cat[0] += 1
            for k in at:
                r = len(set(ranked[:k]) & evidence) / len(evidence)
                total[k] += r
                if k == 10:
                    cat[1] += r
    print(f"rank-bm25 BM25Okapi, NLTK stopwords{', Snowball stems' if stem else ''}: {n} questions")
    print("  " + "  ".join(f"R@{k} {total[k] / n:.3f}" for k in at))
    for c, (m, r) in sorted(by_cat.items()):
        print(f"  {CATEGORIES.get(c, c)}: {m} questions, R@10 {r / m:.3f}")


if __name__ == "__main__":
    main()
