"""One forward pass: clin_semantic_window on an upstream spacy-transformers ``transformer``.

Run: ``.venv-trf/bin/python bench/transformer.py [--docs N]`` (needs ``spacy-clinchunk[transformers]``).

Rows, each in its own process (so peak RSS is the row's own), on the shared GSC+ abstracts
(or the example note when ../shared is absent), through ``nlp.pipe``, after one warm-up doc:

* ``default``: configs/default.cfg (SentenceTransformer embedder, exact windows);
* ``default-pooled``: the same with ``mode = "pooled"`` (one model pass per chunk);
* ``transformer``: configs/transformer.cfg (the transformer runs once per doc, the window
  pools its token vectors through ``spacy_clinchunk.TransformerListener.v1``);
* ``transformer+second-model``: the transformer is in the pipeline for another component
  and clin_semantic_window still loads and runs its own MiniLM (pooled) — what users pay
  today when a pipeline already has a transformer. ``saved`` = this row minus ``transformer``.

Agreement: documents whose chunk offsets equal the reference row's, out of all documents.
"""
import argparse
import json
import subprocess
import sys
import time

from common import GSC_DIR, KEY, NOTE, ROOT  # noqa: E402  (sets the offline environment first)

ROWS = ("default", "default-pooled", "transformer", "transformer+second-model")


def load_texts(limit):
    if GSC_DIR.is_dir():
        files = sorted(GSC_DIR.glob("*.json"))[:limit]
        return [json.loads(f.read_text(encoding="utf-8"))["full_text"] for f in files], "GSC+"
    return [NOTE.read_text(encoding="utf-8")], "example note"


def build(row):
    from spacy.util import load_config, load_model_from_config

    if row.startswith("default"):
        config = load_config(ROOT / "configs" / "default.cfg")
        if row == "default-pooled":
            config["components"]["clin_semantic_window"]["mode"] = "pooled"
    else:
        config = load_config(ROOT / "configs" / "transformer.cfg")
        if row == "transformer+second-model":
            window = config["components"]["clin_semantic_window"]
            window["embedder"] = {
                "@misc": "spacy_clinchunk.SentenceTransformerEmbedder.v1",
                "model": "all-MiniLM-L6-v2", "device": "cpu", "batch_size": 64, "normalize": True,
            }
    nlp = load_model_from_config(config, auto_fill=True)
    nlp.initialize()
    return nlp


def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_row(row, limit):
    texts, _ = load_texts(limit)
    started = time.perf_counter()
    nlp = build(row)
    list(nlp.pipe(texts[:1]))  # warm-up: model loads lazily in some rows
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    docs = list(nlp.pipe(texts, batch_size=32))
    seconds = time.perf_counter() - started
    words = sum(len(t.split()) for t in texts)
    chunks = [[(s.start_char, s.end_char) for s in d.spans[KEY]] for d in docs]
    return {"row": row, "words": words, "seconds": seconds, "load_s": load_s, "peak_mb": peak_mb(), "chunks": chunks}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=228)
    parser.add_argument("--row", choices=ROWS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.row:
        print(json.dumps(run_row(args.row, args.docs)))
        return
    texts, corpus = load_texts(args.docs)
    results = {}
    for row in ROWS:
        out = subprocess.run([sys.executable, __file__, "--row", row, "--docs", str(args.docs)],
                             capture_output=True, text=True, check=True)
        results[row] = json.loads(out.stdout.strip().splitlines()[-1])
    n = len(texts)
    print(f"{corpus}: {n} docs, {results['default']['words']} words; one process per row, nlp.pipe batch 32\n")
    print("| row | words/s | seconds | load s | peak RSS MB | same chunks as default | same as default-pooled |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in ROWS:
        r = results[row]
        same = sum(a == b for a, b in zip(r["chunks"], results["default"]["chunks"]))
        same_pooled = sum(a == b for a, b in zip(r["chunks"], results["default-pooled"]["chunks"]))
        print(f"| {row} | {r['words'] / r['seconds']:,.0f} | {r['seconds']:.1f} | {r['load_s']:.1f} | "
              f"{r['peak_mb']:,.0f} | {same}/{n} | {same_pooled}/{n} |")
    saved = results["transformer+second-model"]["seconds"] - results["transformer"]["seconds"]
    share = saved / results["transformer+second-model"]["seconds"]
    print(f"\nsaved when the transformer is already in the pipeline: {saved:.1f} s ({share:.0%} of that pipeline's time)")


if __name__ == "__main__":
    main()
