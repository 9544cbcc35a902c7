"""Assertion quality and speed: clin_context_assertion beside medspaCy's ConText and negspacy.

Quality, per concept in its sentence (the concept given as a span), per language and status
(precision / recall / F1 and support), on any of these sets:

* ``shared-dev``: ../shared/data/assertion_dev.jsonl (53 sentences, 5 languages;
  ``CLINCHUNK_SHARED_DATA`` points elsewhere);
* ``own-dev``: bench/data/assertion_dev_own.jsonl (our own writing; rules are tuned on it);
* ``own-test``: bench/data/assertion_test_own.jsonl (our own writing, written before the
  rules were changed and never tuned on);
* ``own-dev-<lang>`` / ``own-test-<lang>``: bench/data/assertion/<lang>_dev.jsonl and
  <lang>_test.jsonl, one file per language (issue 27). Dev sets are for writing rules;
  test sets were written and committed ("frozen") before the rule changes, are never
  tuned on and are measured once. Every file present is a set: en and de hold 139-215
  concepts each with >= 10 (dev) / >= 20 (test) per status; see docs/assertion.md.
* ``own-test2-<lang>``: bench/data/assertion/<lang>_test2.jsonl, a second frozen split
  (about 100 concepts per language, ordinary notes' mix of statuses), written and committed
  before the second rule round and measured once at its end (``--sets 'own-test2-*'``);
  ``own-dev2-<lang>`` (<lang>_dev2.jsonl) are extra development rows (``--sets 'own-dev*'``).
* ``own-test3-<lang>``: bench/data/assertion/<lang>_test3.jsonl, a third frozen split (at least
  150 concepts and 20 per status per language), written and committed before the third rule
  round and measured once at its end (``--sets 'own-test3-*' --skip-speed``).
* ``own-test4-<lang>`` / ``own-dev4-<lang>``: the fourth frozen split and its development set
  (one pool per language, split by text at random), written before rule round 4 by sessions
  that never read the rules; test4 is measured once at the round's end.
* ``own-test5-<lang>``: the fifth frozen split, written before rule round 5 by sessions that
  never read the rules or the older sets, measured once at that round's end. From round 5 on
  the spent splits test to test3 (``SPENT_SPLITS``) are development material; test4 shows its
  figures but not its errors, as a check that the round's rules generalise.

``--sets`` takes names or shell patterns: ``--sets 'own-dev-*'`` or
``--sets own-test-en,own-test-de``. ``--errors`` lists our misses on development sets and
on spent test splits (never on a frozen test set, so nobody tunes on it).

Views and safety (issue 40): ``ours`` gives the concept to ``clin_context_assertion`` as a span;
``ours, chunk view`` runs the shipped ``default`` pipeline (language auto) on the sentence and reads the
status of the chunk that holds the concept, what a user sees. Every table ends with **wrongly present**:
the share of negated, uncertain, hypothetical and family concepts that come out plain ``affirmed``.

Baselines: medspaCy's ConText with its default rules for the sentence's language, the
concept as an entity, the label from its modifiers' categories (same precedence as ours;
French "UNCERTAIN" and "CONDITIONAL" count as uncertain and hypothetical; it has no
"normal"). medspaCy ships rules for en, fr and nl (its de and es files are empty), so its
column shows only there. negspacy's Negex (English clinical termset; negation only,
English only) shows in the English tables' negated row.

Speed: English sentences of the development sets (shared-dev when present, own-dev), one
sentence per doc, the concept given (span group for ours, ``doc.ents`` for the baselines),
repeated to ``--docs`` docs; each system is ``spacy.blank`` + sentencizer + the component,
run with ``nlp.pipe``, all three in the same run (issue 27 target: ours >= 4,600
sentences/s).

    .venv/bin/python bench/assertion.py [--sets shared-dev,own-dev,'own-dev-*'] [--docs 5000]
        [--errors] [--skip-speed] [--skip-quality] [--pipeline-lang en]

Ours runs in ``spacy.blank(<the set's language>)`` with ``language="auto"``: a sentence whose
language the detector is unsure of gets the pipeline's rules, so the pipeline tells the
language, as ``language_code`` tells medspaCy. ``--pipeline-lang en`` runs every set in an
English pipeline instead: the detector alone picks the rules, as a CLI run on a foreign note.
"""
import argparse
import fnmatch
import json
import os
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data")
PER_LANGUAGE_DIR = ROOT / "bench" / "data" / "assertion"
LABELS = ("affirmed", "negated", "normal", "uncertain", "historical", "hypothetical", "family")
# medspaCy rule categories -> our statuses, in our precedence (the first that governs wins).
MEDSPACY_CATEGORIES = (("NEGATED_EXISTENCE", "negated"), ("POSSIBLE_EXISTENCE", "uncertain"),
                       ("UNCERTAIN", "uncertain"), ("HYPOTHETICAL", "hypothetical"),
                       ("CONDITIONAL", "hypothetical"), ("FAMILY", "family"), ("HISTORICAL", "historical"))
KEY = "concept"
OURS, MEDSPACY, NEGSPACY = "ours", "medspaCy ConText", "negspacy (negation only)"
OURS_CHUNKS = "ours, chunk view"  # the shipped default pipeline: the status of the chunk holding the concept
# Statuses whose findings a filter on "affirmed" must never return: "wrongly present" is the share of
# concepts of these statuses that come out plain affirmed (issue 40's safety figure).
NOT_PRESENT = ("negated", "uncertain", "hypothetical", "family")
TARGET_SENTENCES_PER_S = 4600


def available_sets():
    """Every set by name: the three pooled ones and one per file in bench/data/assertion/."""
    found = {
        "shared-dev": SHARED / "assertion_dev.jsonl",
        "own-dev": ROOT / "bench" / "data" / "assertion_dev_own.jsonl",
        "own-test": ROOT / "bench" / "data" / "assertion_test_own.jsonl",
    }
    for path in sorted(PER_LANGUAGE_DIR.glob("*_*.jsonl")):
        lang, split = path.stem.split("_", 1)
        found[f"own-{split}-{lang}"] = path
    return found


def resolve_sets(spec, known):
    """Names or shell patterns, comma-separated, to set names in the order given; the
    terms that match no existing file are returned apart, to refuse them in one line."""
    chosen, unknown = [], []
    for term in (t.strip() for t in spec.split(",")):
        if not term:
            continue
        names = [n for n in known if fnmatch.fnmatchcase(n, term) and known[n].is_file()]
        if not names:
            unknown.append(term)
        chosen.extend(n for n in names if n not in chosen)
    return chosen, unknown


# Per-language test splits already measured at the end of their round: they are development
# material for later rounds (their errors may be listed). A split not named here is frozen.
# test4, spent too, stays closed in round 5: its figures (never its errors) tell the round
# whether a rule written on the development sets generalises or fits them.
SPENT_SPLITS = {"test", "test2", "test3"}


def is_frozen(set_name):
    """A test set whose one measurement is still to come: its errors are never listed."""
    if "test" not in set_name:
        return False
    parts = set_name.split("-")
    return not (len(parts) == 3 and parts[1] in SPENT_SPLITS)


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


def medspacy_has_rules(lang):
    """Whether medspaCy ships a non-empty ConText rule file for ``lang`` (its de and es are empty)."""
    import medspacy

    path = Path(medspacy.__file__).resolve().parents[1] / "resources" / lang / "context_rules.json"
    if not path.is_file():
        return False
    data = json.loads(path.read_text(encoding="utf-8"))
    return bool(data.get("context_rules") if isinstance(data, dict) else data)


# -- systems: each makes a pipeline and reads a label off a doc -------------------------
# ``--pipeline-lang``: the language of our pipeline for every set (None: the sentence's own,
# as medspaCy is told it). With "en", auto detection alone picks the rules, as in a CLI run.
OURS_PIPELINE_LANG = None


def ours_nlp(lang):
    import spacy

    nlp = spacy.blank(OURS_PIPELINE_LANG or lang)
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


def ours_chunks_nlp(lang):
    """The shipped ``default`` strategy as a user runs it (language auto)."""
    from spacy_clinchunk.pipeline import load_pipeline

    return load_pipeline("default")


def make_doc(nlp, row, as_ent):
    doc = nlp.make_doc(row["text"])
    if as_ent == "chunks":  # the chunk view: the pipeline finds its own chunks; the concept is looked up after
        doc.user_data["bench_concept"] = (row["start"], row["end"])
        return doc
    span = doc.char_span(row["start"], row["end"], label="CONCEPT", alignment_mode="expand")
    if as_ent:
        doc.ents = [span]
    else:
        doc.spans[KEY] = [span]
    return doc


def label_ours(doc):
    return doc.spans[KEY][0]._.clin_assertion


def label_medspacy(doc):
    categories = {modifier.category.upper() for modifier in doc.ents[0]._.modifiers}
    return next((lab for cat, lab in MEDSPACY_CATEGORIES if cat in categories), "affirmed")


def label_negspacy(doc):
    return "negated" if doc.ents[0]._.negex else "affirmed"


def label_ours_chunks(doc):
    """The status of the chunk with the largest overlap with the concept ("affirmed" when none holds it)."""
    start, end = doc.user_data["bench_concept"]
    best, overlap = None, 0
    for chunk in doc.spans["clin_chunks"]:
        shared = min(chunk.end_char, end) - max(chunk.start_char, start)
        if shared > overlap:
            best, overlap = chunk, shared
    return best._.clin_assertion if best is not None else "affirmed"


def systems(lang):
    found = [(OURS, ours_nlp, False, label_ours), (OURS_CHUNKS, ours_chunks_nlp, "chunks", label_ours_chunks),
             (MEDSPACY, medspacy_nlp, True, label_medspacy)]
    if lang == "en" and has_negspacy():
        found.append((NEGSPACY, negspacy_nlp, True, label_negspacy))
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


def status_table(rows, preds, names, negation_only=()):
    """One markdown table: a row per status (support = gold count) and accuracy; the
    systems in ``negation_only`` get a cell in the negated row only."""
    print("| status | n | " + " | ".join(f"{s} P / R / F1" for s in names) + " |")
    print("|" + "---|" * (2 + len(names)))
    gold = [r["label"] for r in rows]
    for label in LABELS:
        cells = []
        for s in names:
            if s in negation_only and label != "negated":
                cells.append("—")
                continue
            p, r, f = prf(gold, [preds[s][x["id"]] for x in rows], label)
            cells.append(f"{p:.2f} / {r:.2f} / {f:.2f}")
        print(f"| {label} | {gold.count(label)} | " + " | ".join(cells) + " |")
    accs = ["—" if s in negation_only else f"{sum(preds[s][x['id']] == x['label'] for x in rows) / len(rows):.2f}"
            for s in names]
    print(f"| accuracy | {len(rows)} | " + " | ".join(accs) + " |")
    traps = [x for x in rows if x["label"] in NOT_PRESENT]
    cells = []
    for s in names:
        wrong = sum(preds[s][x["id"]] == "affirmed" for x in traps)
        cells.append("—" if s in negation_only else f"**{wrong / max(len(traps), 1):.1%}** ({wrong})")
    print(f"| wrongly present | {len(traps)} | " + " | ".join(cells) + " |")


def language_names(lang, preds):
    """The systems shown for one language: ours, medspaCy where it has rules, negspacy for en."""
    names = [OURS, OURS_CHUNKS]
    if medspacy_has_rules(lang):
        names.append(MEDSPACY)
    if lang == "en" and NEGSPACY in preds:
        names.append(NEGSPACY)
    return names


def quality(set_name, path, show_errors):
    rows = read_rows(path)
    preds = predict(rows)
    langs = sorted(set(r["lang"] for r in rows))
    print(f"\n### {set_name}: {path.name} ({len(rows)} concepts, {len(langs)} language{'s' if len(langs) > 1 else ''})")
    if len(langs) > 1:
        print("\n#### all languages (medspaCy without rules for de/es counts as affirmed there)\n")
        status_table(rows, preds, [OURS, OURS_CHUNKS, MEDSPACY])
    for lang in langs:
        items = [r for r in rows if r["lang"] == lang]
        names = language_names(lang, preds)
        note = "" if MEDSPACY in names else "; medspaCy ConText has no rules for it"
        print(f"\n#### {lang} ({len(items)} concepts{note})\n")
        status_table(items, preds, names, negation_only=(NEGSPACY,))
    if show_errors:
        print_errors(rows, preds)
    elif is_frozen(set_name):
        print("\n(frozen test set: errors are not listed)")


def print_errors(rows, preds):
    wrong = [r for r in rows if preds[OURS][r["id"]] != r["label"]]
    print(f"\nOur misses: {len(wrong)} of {len(rows)}")
    for r in wrong:
        print(f"  miss {r['id']} {r['lang']} '{r['concept']}' gold={r['label']} ours={preds[OURS][r['id']]}"
              f" medspacy={preds[MEDSPACY][r['id']]}: {r['text']!r}")


# -- speed --------------------------------------------------------------------------
def speed_rows(known, n_docs):
    """English sentences of the development sets that exist, repeated to ``n_docs``."""
    rows = [r for name in ("shared-dev", "own-dev") if known[name].is_file()
            for r in read_rows(known[name]) if r["lang"] == "en"]
    return (rows * (n_docs // len(rows) + 1))[:n_docs]


def speed(known, n_docs, repeats):
    rows = speed_rows(known, n_docs)
    print(f"\n### Throughput: {len(rows)} English sentences, one per doc, concept given, "
          f"blank + sentencizer + component through nlp.pipe, best of {repeats}\n")
    print("| system | seconds | sentences/s |")
    print("|---|---|---|")
    for name, factory, as_ent, _ in systems("en"):
        if name == OURS_CHUNKS:
            continue  # the speed of the whole default pipeline is bench/structural.py's
        nlp = factory("en")
        list(nlp.pipe(make_doc(nlp, r, as_ent) for r in rows[:50]))  # warm-up: compile matchers
        best = float("inf")
        for _ in range(repeats):
            docs = [make_doc(nlp, r, as_ent) for r in rows]
            start = time.perf_counter()
            for _doc in nlp.pipe(docs, batch_size=256):
                pass
            best = min(best, time.perf_counter() - start)
        rate = len(rows) / best
        mark = f" (target {TARGET_SENTENCES_PER_S:,}: {'met' if rate >= TARGET_SENTENCES_PER_S else 'missed'})"
        print(f"| {name} | {best:.3f} | {rate:,.0f}{mark if name == OURS else ''} |")
    if not has_negspacy():
        print("\nnegspacy is not installed (pip install negspacy==1.0.4); its row is missing.")


def main(argv=None):
    known = available_sets()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_sets = ("shared-dev," if known["shared-dev"].is_file() else "") + "own-dev,own-dev-*"
    parser.add_argument("--sets", default=default_sets,
                        help="comma-separated names or shell patterns (default: the development sets "
                             "present): " + ", ".join(known))
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--errors", action="store_true", help="list our misses (development sets only)")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--pipeline-lang", help="our pipeline's language for every set (default: the set's "
                        "own); 'en' measures auto detection alone, as a CLI run on a foreign note")
    args = parser.parse_args(argv)
    global OURS_PIPELINE_LANG
    OURS_PIPELINE_LANG = args.pipeline_lang
    chosen, unknown = resolve_sets(args.sets, known)
    if unknown:
        print(f"data set(s) not found: {unknown} (known: {', '.join(known)})", file=sys.stderr)
        return 1
    quiet()
    if not args.skip_quality:
        for name in chosen:
            quality(name, known[name], args.errors and not is_frozen(name))
    if not args.skip_speed:
        speed(known, args.docs, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
