"""Assertion quality and speed: clin_context_assertion beside medspaCy's ConText and negspacy.

Quality, per concept in its sentence (the concept given as a span):

* ``shared-dev``: ../shared/data/assertion_dev.jsonl (53 sentences, 5 languages);
* ``own-dev``: bench/data/assertion_dev_own.jsonl (our own writing; rules are tuned on it);
* ``own-test``: bench/data/assertion_test_own.jsonl (our own writing, written before the
  rules were changed and never tuned on; run it with ``--sets own-test`` when reporting).

Baselines: medspaCy's ConText with its default rules for the sentence's language, the
concept as an entity, the label from its flags (same precedence as ours; it has no
"normal"); negspacy's Negex (English clinical termset; negation only, English only).

Speed: English sentences of both development sets, one sentence per doc, the concept
given (span group for ours, ``doc.ents`` for the baselines), repeated to ``--docs``
docs; each system is ``spacy.blank`` + sentencizer + the component, run with ``nlp.pipe``.

    .venv/bin/python bench/assertion.py [--sets shared-dev,own-dev,own-test] [--docs 5000]
"""
import argparse
import json
import os
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
SETS = {
    "shared-dev": SHARED / "assertion_dev.jsonl",
    "own-dev": ROOT / "bench" / "data" / "assertion_dev_own.jsonl",
    "own-test": ROOT / "bench" / "data" / "assertion_test_own.jsonl",
}
LABELS = ("affirmed", "negated", "normal", "uncertain", "historical", "hypothetical", "family")
BASELINE_FLAGS = (("is_negated", "negated"), ("is_uncertain", "uncertain"), ("is_hypothetical", "hypothetical"),
                  ("is_family", "family"), ("is_historical", "historical"))
KEY = "concept"


def quiet():
    """A quiet console, as the CLI keeps it (this script is an application: it may)."""
    from spacy_clinchunk.logs import quiet_third_party_logging

    quiet_third_party_logging()
    warnings.filterwarnings("ignore")


def read_rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def has_negspacy():
    try:
        import negspacy.negation  # noqa: F401
    except ImportError:
        return False
    return True


# -- systems: each makes a pipeline and reads a label off a doc -------------------------
def ours_nlp(lang):
    import spacy

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_context_assertion", config={"span_keys": [KEY]})
    nlp.initialize()
    return nlp


def medspacy_nlp(lang):
    import spacy
    from medspacy.context import ConText  # noqa: F401  (registers medspacy_context)

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("medspacy_context", config={"rules": "default", "language_code": lang})
    return nlp


def negspacy_nlp(lang):
    import spacy
    from negspacy.negation import Negex  # noqa: F401  (registers negex)
    from negspacy.termsets import termset

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("negex", config={"neg_termset": termset("en_clinical").get_patterns()})
    return nlp


def make_doc(nlp, row, as_ent):
    doc = nlp.make_doc(row["text"])
    span = doc.char_span(row["start"], row["end"], label="CONCEPT", alignment_mode="expand")
    if as_ent:
        doc.ents = [span]
    else:
        doc.spans[KEY] = [span]
    return doc


def label_ours(doc):
    return doc.spans[KEY][0]._.clin_assertion


def label_medspacy(doc):
    ent = doc.ents[0]
    return next((lab for flag, lab in BASELINE_FLAGS if getattr(ent._, flag)), "affirmed")


def label_negspacy(doc):
    return "negated" if doc.ents[0]._.negex else "affirmed"


def systems(lang):
    found = [("ours", ours_nlp, False, label_ours), ("medspaCy ConText", medspacy_nlp, True, label_medspacy)]
    if lang == "en" and has_negspacy():
        found.append(("negspacy (negation only)", negspacy_nlp, True, label_negspacy))
    return found


# -- quality ------------------------------------------------------------------------
def predict(rows):
    by_lang = defaultdict(list)
    for row in rows:
        by_lang[row["lang"]].append(row)
    preds = defaultdict(dict)
    for lang, items in by_lang.items():
        for name, factory, as_ent, read in systems(lang):
            nlp = factory(lang)
            docs = nlp.pipe(make_doc(nlp, row, as_ent) for row in items)
            for row, doc in zip(items, docs):
                preds[name][row["id"]] = read(doc)
    return preds


def prf(gold, pred, label):
    tp = sum(1 for g, p in zip(gold, pred) if g == label and p == label)
    fp = sum(1 for g, p in zip(gold, pred) if g != label and p == label)
    fn = sum(1 for g, p in zip(gold, pred) if g == label and p != label)
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return prec, rec, f1


def quality(set_name, show_errors):
    rows = read_rows(SETS[set_name])
    preds = predict(rows)
    names = ["ours", "medspaCy ConText"]
    langs = sorted(set(r["lang"] for r in rows))
    print(f"\n### {set_name}: {SETS[set_name].name} ({len(rows)} concepts, {len(langs)} languages)\n")
    print("| label | n | " + " | ".join(f"{s} P / R / F1" for s in names) + " |")
    print("|" + "---|" * (2 + len(names)))
    gold = [r["label"] for r in rows]
    for label in LABELS:
        cells = []
        for s in names:
            p, r, f = prf(gold, [preds[s][x["id"]] for x in rows], label)
            cells.append(f"{p:.2f} / {r:.2f} / {f:.2f}")
        print(f"| {label} | {gold.count(label)} | " + " | ".join(cells) + " |")
    accs = [sum(preds[s][x["id"]] == x["label"] for x in rows) / len(rows) for s in names]
    print(f"| accuracy | {len(rows)} | " + " | ".join(f"{a:.2f}" for a in accs) + " |")
    en = [r for r in rows if r["lang"] == "en"]
    if en and "negspacy (negation only)" in preds:
        g = [r["label"] for r in en]
        cells = [prf(g, [preds[s][x["id"]] for x in en], "negated") for s in names + ["negspacy (negation only)"]]
        print(f"\nNegation, English only ({len(en)} concepts), P / R / F1: "
              + "; ".join(f"{s} {p:.2f} / {r:.2f} / {f:.2f}"
                          for s, (p, r, f) in zip(names + ["negspacy"], cells)))
    if show_errors:
        wrong = [r for r in rows if preds["ours"][r["id"]] != r["label"]]
        for r in wrong:
            print(f"  miss {r['id']} {r['lang']} '{r['concept']}' gold={r['label']} ours={preds['ours'][r['id']]}"
                  f" medspacy={preds['medspaCy ConText'][r['id']]}: {r['text']!r}")


# -- speed --------------------------------------------------------------------------
def speed(n_docs, repeats):
    rows = [r for name in ("shared-dev", "own-dev") for r in read_rows(SETS[name]) if r["lang"] == "en"]
    rows = (rows * (n_docs // len(rows) + 1))[:n_docs]
    print(f"\n### Throughput: {len(rows)} English sentences, one per doc, concept given, "
          f"blank + sentencizer + component through nlp.pipe, best of {repeats}\n")
    print("| system | seconds | sentences/s |")
    print("|---|---|---|")
    for name, factory, as_ent, _ in systems("en"):
        nlp = factory("en")
        list(nlp.pipe(make_doc(nlp, r, as_ent) for r in rows[:50]))  # warm-up: compile matchers
        best = float("inf")
        for _ in range(repeats):
            docs = [make_doc(nlp, r, as_ent) for r in rows]
            start = time.perf_counter()
            for _doc in nlp.pipe(docs, batch_size=256):
                pass
            best = min(best, time.perf_counter() - start)
        print(f"| {name} | {best:.3f} | {len(rows) / best:,.0f} |")
    if not has_negspacy():
        print("\nnegspacy is not installed (pip install negspacy==1.0.4); its row is missing.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="shared-dev,own-dev", help="comma-separated: " + ", ".join(SETS))
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--errors", action="store_true", help="list our misses (development sets only)")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    args = parser.parse_args(argv)
    chosen = [s for s in args.sets.split(",") if s]
    missing = [s for s in chosen if s not in SETS or not SETS[s].is_file()]
    if missing:
        print(f"data set(s) not found: {missing}", file=sys.stderr)
        return 1
    quiet()
    if not args.skip_quality:
        for name in chosen:
            quality(name, args.errors and name != "own-test")
    if not args.skip_speed:
        speed(args.docs, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
