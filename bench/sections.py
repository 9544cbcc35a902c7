"""Header and section accuracy on the annotated real notes (issue 40).

``bench/data/real_notes/headers_test.jsonl`` marks every section header of 30 test notes (20 English
transcriptions, 10 German letters) with its normalised category, written by a session that never saw the
detector (``docs/real-notes.md``). Measured here, with the shipped section tables and language auto:

* headers: a gold header is found when a header our layout opens a section at overlaps it; precision over
  the section-opening headers we find; category accuracy over the found gold headers whose category is one
  of ours (not "other"; an unknown header counts as wrong);
* sections: for every annotated concept of those notes, the category of the gold header it stands under
  against ``span._.clin_section`` of the concept in the shipped ``default`` pipeline (no section on either
  side counts as agreement).

``--split dev`` reads ``headers_dev.jsonl`` instead (every header of 20 German development letters,
annotated before the detector was read, round 4) and the dev concepts: the split to tune on.

    .venv/bin/python bench/sections.py                # the frozen test notes
    .venv/bin/python bench/sections.py --split dev    # the development letters
"""
import argparse
import json
import sys
import warnings
from bisect import bisect_right
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_notes  # noqa: E402  (the concepts, the notes, the pipeline of both views)

SPLITS = ("test", "dev")


def headers_path(split: str = "test") -> Path:
    return real_notes.DATA_DIR / f"headers_{split}.jsonl"


def read_headers(split: str = "test"):
    rows = [json.loads(line) for line in headers_path(split).read_text(encoding="utf-8").splitlines() if line.strip()]
    grouped = defaultdict(list)
    for row in rows:
        grouped[row["note"]].append(row)
    return grouped


def found_headers(nlp, lang, text):
    """(start, end, category) of the headers that open a section, as the layout finds them."""
    from spacy_clinchunk.assertion.layout import scan_headers
    from spacy_clinchunk.assertion.sections import SectionTable

    pipe = nlp.get_pipe("clin_context_assertion")
    table = SectionTable(pipe.sections_for(lang))
    return [(h.start, h.label_end, h.name) for h in scan_headers(text, table, lambda w: nlp.vocab[w].is_stop) if h.opens]


def gold_section(headers, start):
    starts = [h["start"] for h in headers]
    i = bisect_right(starts, start) - 1
    if i < 0:
        return None
    category = headers[i]["category"]
    return None if category == "other" else category


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=SPLITS)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    from spacy_clinchunk.logs import quiet_third_party_logging

    quiet_third_party_logging()
    gold = read_headers(args.split)
    resolved = real_notes.load_ours("default")
    totals = defaultdict(lambda: defaultdict(int))
    for lang in ("en", "de"):
        notes = real_notes.read_notes(lang)
        concepts = real_notes.by_note(real_notes.read_concepts(lang, args.split))
        for note_id, headers in sorted(gold.items()):
            if note_id not in notes:
                continue
            t = totals[lang]
            text = notes[note_id]
            headers = sorted(headers, key=lambda h: h["start"])
            found = found_headers(resolved.nlp, lang, text)
            matched = set()
            for h in headers:
                hit = next((f for f in found if f[0] < h["end"] and h["start"] < f[1]), None)
                t["gold"] += 1
                if hit is not None:
                    t["found"] += 1
                    matched.add(hit)
                    if h["category"] != "other":
                        t["categorised"] += 1
                        t["category_right"] += hit[2] == h["category"]
            t["predicted"] += len(found)
            t["predicted_right"] += sum(1 for f in found if f in matched)
            items = sorted(concepts.get(note_id, []), key=lambda c: c["start"])
            if items:
                doc = resolved.nlp.make_doc(text)
                doc.spans[real_notes.CONCEPTS_KEY] = [doc.char_span(c["start"], c["end"], alignment_mode="expand") for c in items]
                for _, proc in resolved.nlp.pipeline:
                    doc = proc(doc)
                for c, span in zip(items, doc.spans[real_notes.CONCEPTS_KEY]):
                    t["concepts"] += 1
                    t["section_right"] += (span._.clin_section or None) == gold_section(headers, c["start"])
    print("| language | gold headers | found (recall) | precision | category accuracy | concepts | section accuracy |")
    print("|---|---|---|---|---|---|---|")
    for lang, t in totals.items():
        print(f"| {lang} | {t['gold']} | {t['found'] / t['gold']:.2f} | {t['predicted_right'] / max(t['predicted'], 1):.2f} "
              f"| {t['category_right'] / max(t['categorised'], 1):.2f} ({t['categorised']}) | {t['concepts']} "
              f"| {t['section_right'] / max(t['concepts'], 1):.2f} |")


if __name__ == "__main__":
    main()
