"""Assertion on real notes: the annotated real-note splits, concept view and chunk view, beside medspaCy.

The splits (``bench/data/real_notes/<lang>_<split>.jsonl``, one concept a line: ``note``, ``start``,
``end``, ``text``, ``status``, ``also``, ``why``) annotate the shared real notes
(``../shared/data/real_notes``; ``CLINCHUNK_SHARED_DATA`` points elsewhere) concept by concept, as
``docs/real-notes.md`` describes. The notes themselves are never copied into the project.

Two views of the same run of a pipeline (default: the shipped ``default`` strategy, language auto):

* concept view: the annotated concepts given to ``clin_context_assertion`` as a span group
  (``clin_concepts``, added to its ``span_keys``), each with its own status;
* chunk view: what a user of the pipeline sees: the status of the ``clin_chunks`` chunk that
  holds the concept (the chunk with the largest overlap; a concept no chunk overlaps counts as
  "no chunk", neither affirmed nor any status).

Measures, per language: P/R/F1 of each status as a flag (gold: status and ``also``; ours: every
status that governs the span, "affirmed" when none), primary accuracy, and **wrongly present**:
the share of concepts that are negated, uncertain, hypothetical or a relative's in truth and come
out plain ``affirmed`` (a filter on affirmed findings returns them). medspaCy (PyRuSH, sectionizer,
ConText with its default English rules, concepts as entities, the label from the entity's
``is_*`` attributes in our precedence) runs in the same run where it has rules (English).

The test split is frozen: measured once per round, its errors never listed. ``--errors`` lists
misses on the dev split only.

    .venv/bin/python bench/real_notes.py [--split test|dev] [--langs en,de] [--config default]
        [--errors] [--no-medspacy]
"""
import argparse
import json
import os
import sys
import time
import warnings
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data")
DATA_DIR = ROOT / "bench" / "data" / "real_notes"
NOTE_FILES = {"en": "mtsamples_dev.jsonl", "de": "grascco_de_dev.jsonl"}
STATUSES = ("affirmed", "negated", "normal", "uncertain", "historical", "hypothetical", "family")
PRECEDENCE = ("negated", "uncertain", "hypothetical", "family", "historical", "normal")
NOT_PRESENT = frozenset({"negated", "uncertain", "hypothetical", "family"})
CONCEPTS_KEY = "clin_concepts"
NO_CHUNK = "(no chunk)"
FROZEN = {"test"}


def notes_path(lang: str) -> Path:
    return SHARED / "real_notes" / NOTE_FILES[lang]


def read_notes(lang: str) -> Dict[str, str]:
    with open(notes_path(lang), encoding="utf-8") as handle:
        return {row["id"]: row["text"] for row in map(json.loads, handle)}


def read_concepts(lang: str, split: str, added_in: Optional[str] = None) -> List[dict]:
    """The split's concepts; ``added_in``: only the dev notes a round added (``splits.json``'s
    ``dev_added``), so a round can measure its new notes before its first rule change."""
    path = DATA_DIR / f"{lang}_{split}.jsonl"
    with open(path, encoding="utf-8") as handle:
        concepts = [json.loads(line) for line in handle if line.strip()]
    if added_in is None:
        return concepts
    added = json.loads((DATA_DIR / "splits.json").read_text(encoding="utf-8"))[lang].get("dev_added", {})
    if split != "dev" or added_in not in added:
        raise SystemExit(f"no {lang} dev notes added in round {added_in} (splits.json dev_added: {sorted(added)})")
    return [c for c in concepts if c["note"] in set(added[added_in])]


def by_note(concepts: Sequence[dict]) -> Dict[str, List[dict]]:
    grouped: Dict[str, List[dict]] = defaultdict(list)
    for concept in concepts:
        grouped[concept["note"]].append(concept)
    return grouped


def gold_flags(concept: dict) -> frozenset:
    return frozenset([concept["status"], *concept.get("also", [])])


def is_trap(concept: dict) -> bool:
    """Negated, uncertain, hypothetical or a relative's in truth: must never read plain affirmed."""
    return bool(gold_flags(concept) & NOT_PRESENT)


# -- our pipeline: both views of one run --------------------------------------------------
def load_ours(config: str = "default", lang: Optional[str] = None):
    from spacy_clinchunk.pipeline import resolve_pipeline

    overrides = {"components.clin_context_assertion.span_keys": ["clin_chunks", CONCEPTS_KEY]}
    return resolve_pipeline(config, overrides, lang=lang)


def run_ours(resolved, text: str, concepts: Sequence[dict]) -> Tuple[List[Tuple[str, frozenset]], List[Tuple[str, frozenset]]]:
    """(concept view, chunk view): a (label, statuses) pair per concept, in order."""
    nlp = resolved.nlp
    doc = nlp.make_doc(text)
    doc.spans[CONCEPTS_KEY] = [doc.char_span(c["start"], c["end"], alignment_mode="expand") for c in concepts]
    concept_view: List[Tuple[str, frozenset]] = []
    for name, proc in nlp.pipeline:
        doc = proc(doc)
        if name == "clin_context_assertion":
            # read now: spaCy keys span extensions by offsets alone (3.7), so a later focus span
            # or chunk with a concept's exact offsets would overwrite what the concept was given
            concept_view = [_status_of(span) for span in doc.spans[CONCEPTS_KEY]]
    from spacy_clinchunk.groundtruth.assertion_score import holding_spans

    chunks = sorted(doc.spans[resolved.chunks_key], key=lambda s: s.start_char)
    chunk_view = [_status_of(chunk) if chunk is not None else (NO_CHUNK, frozenset())
                  for chunk in holding_spans(chunks, [(c["start"], c["end"]) for c in concepts])]
    return concept_view, chunk_view


def _status_of(span) -> Tuple[str, frozenset]:
    statuses = frozenset(span._.clin_assertion_statuses or ()) or frozenset({"affirmed"})
    return span._.clin_assertion, statuses


# -- medspaCy -------------------------------------------------------------------------------
MEDSPACY_ATTRS = (("is_negated", "negated"), ("is_uncertain", "uncertain"), ("is_hypothetical", "hypothetical"),
                  ("is_family", "family"), ("is_historical", "historical"))


def load_medspacy(lang: str):
    import spacy
    from medspacy.context import ConText  # noqa: F401  (registers medspacy_context)
    from medspacy.section_detection import Sectionizer  # noqa: F401
    from medspacy.sentence_splitting import PyRuSHSentencizer  # noqa: F401

    nlp = spacy.blank(lang)
    nlp.add_pipe("medspacy_pyrush")
    nlp.add_pipe("medspacy_sectionizer", config={"rules": "default", "language_code": lang})
    nlp.add_pipe("medspacy_context", config={"rules": "default", "language_code": lang})
    return nlp


def run_medspacy(nlp, text: str, concepts: Sequence[dict]) -> List[Tuple[str, frozenset]]:
    doc = nlp.make_doc(text)
    ents, kept = [], []
    for k, c in enumerate(concepts):
        span = doc.char_span(c["start"], c["end"], label="CONCEPT", alignment_mode="expand")
        if ents and span.start < ents[-1].end:  # expanded into the previous concept: skip (counted affirmed)
            continue
        ents.append(span)
        kept.append(k)
    doc.ents = ents
    for _, proc in nlp.pipeline:
        doc = proc(doc)
    out = [("affirmed", frozenset({"affirmed"}))] * len(concepts)
    for k, ent in zip(kept, doc.ents):
        flags = frozenset(label for attr, label in MEDSPACY_ATTRS if getattr(ent._, attr, False))
        label = next((lab for lab in PRECEDENCE if lab in flags), "affirmed")
        out[k] = (label, flags or frozenset({"affirmed"}))
    return out


# -- measures ---------------------------------------------------------------------------------
def flag_prf(concepts: Sequence[dict], preds: Sequence[Tuple[str, frozenset]], status: str) -> Tuple[float, float, float]:
    tp = fp = fn = 0
    for concept, (label, flags) in zip(concepts, preds):
        gold = status in gold_flags(concept) if status != "affirmed" else concept["status"] == "affirmed"
        ours = status in flags if status != "affirmed" else label == "affirmed"
        tp += gold and ours
        fp += ours and not gold
        fn += gold and not ours
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def accuracy(concepts: Sequence[dict], preds: Sequence[Tuple[str, frozenset]]) -> float:
    return sum(c["status"] == label for c, (label, _) in zip(concepts, preds)) / max(len(concepts), 1)


def wrongly_present(concepts: Sequence[dict], preds: Sequence[Tuple[str, frozenset]]) -> Tuple[int, int]:
    traps = [(c, label) for c, (label, _) in zip(concepts, preds) if is_trap(c)]
    return sum(label == "affirmed" for _, label in traps), len(traps)


def table(concepts: Sequence[dict], systems: Dict[str, List[Tuple[str, frozenset]]]) -> List[str]:
    names = list(systems)
    lines = ["| status | n | " + " | ".join(f"{n} P / R / F1" for n in names) + " |",
             "|" + "---|" * (2 + len(names))]
    support = Counter(s for c in concepts for s in gold_flags(c))
    support["affirmed"] = sum(c["status"] == "affirmed" for c in concepts)
    for status in STATUSES:
        cells = ["{:.2f} / {:.2f} / {:.2f}".format(*flag_prf(concepts, systems[n], status)) for n in names]
        lines.append(f"| {status} | {support[status]} | " + " | ".join(cells) + " |")
    lines.append(f"| accuracy | {len(concepts)} | " + " | ".join(f"{accuracy(concepts, systems[n]):.3f}" for n in names) + " |")
    cells = []
    for n in names:
        wrong, total = wrongly_present(concepts, systems[n])
        cells.append(f"**{wrong / max(total, 1):.1%}** ({wrong}/{total})")
    lines.append("| wrongly present | " + str(wrongly_present(concepts, systems[names[0]])[1]) + " | " + " | ".join(cells) + " |")
    return lines


def evaluate(lang: str, split: str, config: str, pipeline_lang: Optional[str], with_medspacy: bool,
             added_in: Optional[str] = None):
    """(concepts in note order, {system: predictions}, seconds of ours)."""
    notes, concepts = read_notes(lang), read_concepts(lang, split, added_in)
    grouped = by_note(concepts)
    resolved = load_ours(config, pipeline_lang)
    ordered: List[dict] = []
    systems: Dict[str, List] = {"ours, concept view": [], "ours, chunk view": []}
    started = time.perf_counter()
    for note_id in sorted(grouped):
        items = sorted(grouped[note_id], key=lambda c: c["start"])
        concept_view, chunk_view = run_ours(resolved, notes[note_id], items)
        ordered += items
        systems["ours, concept view"] += concept_view
        systems["ours, chunk view"] += chunk_view
    seconds = time.perf_counter() - started
    if with_medspacy and lang == "en":
        med = load_medspacy(lang)
        systems["medspaCy"] = [p for note_id in sorted(grouped)
                               for p in run_medspacy(med, notes[note_id], sorted(grouped[note_id], key=lambda c: c["start"]))]
    return ordered, systems, seconds


def print_errors(concepts, systems, notes, view="ours, chunk view"):
    for c, (label, flags), (clabel, _) in zip(concepts, systems[view], systems["ours, concept view"]):
        if label != c["status"]:
            text = notes[c["note"]]
            context = text[max(0, c["start"] - 70):c["start"]] + "[[" + c["text"] + "]]" + text[c["end"]:c["end"] + 50]
            print(f"  {c['note']} gold={c['status']}{'+' + ','.join(c['also']) if c['also'] else ''} "
                  f"chunk={label} concept={clabel}: {context!r}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--langs", default="en,de")
    parser.add_argument("--config", default="default", help="a strategy name or config path")
    parser.add_argument("--lang", default=None, help="the pipeline's --lang (default: as the config ships: auto)")
    parser.add_argument("--errors", action="store_true", help="list misses (dev split only)")
    parser.add_argument("--no-medspacy", action="store_true")
    parser.add_argument("--added-in", default=None, metavar="ROUND",
                        help="dev only: just the notes that round added (measured before its first rule change)")
    args = parser.parse_args(argv)
    from spacy_clinchunk.logs import quiet_third_party_logging

    quiet_third_party_logging()
    warnings.filterwarnings("ignore")
    for lang in [x.strip() for x in args.langs.split(",") if x.strip()]:
        if not (DATA_DIR / f"{lang}_{args.split}.jsonl").is_file():
            print(f"no {lang} {args.split} split: {DATA_DIR / f'{lang}_{args.split}.jsonl'}", file=sys.stderr)
            return 1
        if not notes_path(lang).is_file():
            print(f"the shared notes are missing: {notes_path(lang)}", file=sys.stderr)
            return 1
        concepts, systems, seconds = evaluate(lang, args.split, args.config, args.lang, not args.no_medspacy,
                                             args.added_in)
        n_notes = len({c["note"] for c in concepts})
        part = f" (notes added in round {args.added_in})" if args.added_in else ""
        print(f"\n### {lang} {args.split}{part}: {len(concepts)} concepts in {n_notes} notes "
              f"(config {args.config}, pipeline lang {args.lang or 'as shipped'}; ours {seconds:.1f} s)\n")
        print("\n".join(table(concepts, systems)))
        if args.errors:
            if args.split in FROZEN:
                print("\n(frozen test split: errors are not listed)")
            else:
                print_errors(concepts, systems, read_notes(lang))
    return 0


if __name__ == "__main__":
    sys.exit(main())
