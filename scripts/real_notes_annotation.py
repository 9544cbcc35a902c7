"""Tools for annotating the shared real notes concept by concept (issue 40).

The notes live in ``../shared/data/real_notes`` (``CLINCHUNK_SHARED_DATA`` points elsewhere) and are
never copied into the project: an annotation holds a note id, character offsets, the concept's own
text, its status and the reason. Offsets are computed here, never by hand.

    python scripts/real_notes_annotation.py split            # writes bench/data/real_notes/splits.json
    python scripts/real_notes_annotation.py show NOTE_ID     # prints a note (repr of each line)
    python scripts/real_notes_annotation.py resolve DRAFT OUT  # draft lines -> offset annotations

A draft line names a concept in reading order: ``{"note", "text", "status", "also", "why"}`` and,
when the text alone is ambiguous, ``"anchor"``: a longer passage of the note that holds the text once.
The concept is the first occurrence (of the anchor, then of the text inside it) that starts at or
after the end of the note's previous concept, so repeated words resolve in order.
"""
import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data")
NOTES = {"en": SHARED / "real_notes" / "mtsamples_dev.jsonl", "de": SHARED / "real_notes" / "grascco_de_dev.jsonl"}
SPLITS = ROOT / "bench" / "data" / "real_notes" / "splits.json"
STATUSES = ("affirmed", "negated", "normal", "uncertain", "historical", "hypothetical", "family")
# English notes fall in two pools: those with a history part (consults, H&Ps, ER visits: 67 of 345,
# where most statuses live) and the rest (operative and procedure notes). Each split takes from
# both, in a seeded hash order; the German letters are one pool. Unpicked notes stay for later rounds.
SPLIT_SIZES = {"en-history": {"test": 30, "dev": 14}, "en-other": {"test": 10, "dev": 18},
               "de": {"test": 14, "dev": 22}}
# The English test split then took the rest of the history pool (the first 40 notes held fewer than the
# 1,500 concepts the split needs), all but the note issue 40 names as its example: tuning material, in
# dev. Dev grew once (12 more operative notes, 12 more letters) for the trap suite's 300 traps.
EN_TEST_TAKES_REST_OF_HISTORY_POOL = True
NAMED_IN_ISSUE = frozenset({"mts-55faa9fb"})


def read_notes(lang: str) -> dict:
    with open(NOTES[lang], encoding="utf-8") as handle:
        return {row["id"]: row for row in map(json.loads, handle)}


def _shuffle_key(note_id: str) -> str:
    return hashlib.sha256(f"real-notes-2026-12:{note_id}".encode()).hexdigest()


def make_splits() -> dict:
    """Test and dev note ids per language: a seeded hash order, English notes with sections only."""
    splits = {"en": {"test": [], "dev": []}, "de": {"test": [], "dev": []}}
    for pool_name, sizes in SPLIT_SIZES.items():
        lang = pool_name[:2]
        notes = read_notes(lang)
        pool = [i for i, row in notes.items() if _in_pool(pool_name, row["text"])]
        order = sorted(pool, key=_shuffle_key)
        taken = sizes["test"] + sizes["dev"]
        splits[lang]["test"] += order[:sizes["test"]]
        splits[lang]["dev"] += order[sizes["test"]:taken]
        if pool_name == "en-history" and EN_TEST_TAKES_REST_OF_HISTORY_POOL:
            splits[lang]["test"] += [i for i in order[taken:] if i not in NAMED_IN_ISSUE]
            splits[lang]["dev"] += [i for i in order[taken:] if i in NAMED_IN_ISSUE]
    return {lang: {name: sorted(ids) for name, ids in parts.items()} for lang, parts in splits.items()}


def _in_pool(pool_name: str, text: str) -> bool:
    if pool_name == "de":
        return True
    return ("HISTORY" in text) == (pool_name == "en-history")


def _locate(note: str, item: dict, after: int) -> int:
    text, anchor = item["text"], item.get("anchor") or item["text"]
    inner = anchor.find(text)
    if inner < 0:
        raise ValueError(f"text {text!r} is not inside its anchor {anchor!r}")
    position = note.find(anchor, max(0, after - inner))
    while position >= 0 and position + inner < after:
        position = note.find(anchor, position + 1)
    if position < 0:
        raise ValueError(f"{anchor!r} not found after offset {after}")
    return position + inner


def resolve(draft_lines: list, notes: dict) -> list:
    out, cursor, errors = [], {}, []
    for number, item in enumerate(draft_lines, 1):
        note_id = item["note"]
        if note_id not in notes:
            errors.append(f"line {number}: unknown note {note_id}")
            continue
        if item.get("status") not in STATUSES or any(s not in STATUSES for s in item.get("also", [])):
            errors.append(f"line {number}: bad status {item.get('status')} / {item.get('also')}")
            continue
        note = notes[note_id]["text"]
        try:
            start = _locate(note, item, cursor.get(note_id, 0))
        except ValueError as err:
            errors.append(f"line {number} ({note_id}): {err}")
            continue
        end = start + len(item["text"])
        cursor[note_id] = end
        also = [s for s in item.get("also", []) if s != item["status"]]
        out.append({"note": note_id, "start": start, "end": end, "text": note[start:end],
                    "status": item["status"], "also": also, "why": item.get("why", "")})
    if errors:
        raise SystemExit("\n".join(errors))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("split")
    show = sub.add_parser("show")
    show.add_argument("note")
    res = sub.add_parser("resolve")
    res.add_argument("draft")
    res.add_argument("out")
    args = parser.parse_args(argv)
    if args.cmd == "split":
        SPLITS.write_text(json.dumps(make_splits(), indent=1) + "\n")
        print(SPLITS)
    elif args.cmd == "show":
        lang = "de" if args.note.startswith("grascco") else "en"
        print(read_notes(lang)[args.note]["text"])
    else:
        lines = [json.loads(l) for l in open(args.draft, encoding="utf-8") if l.strip()]
        notes = {**read_notes("en"), **read_notes("de")}
        rows = resolve(lines, notes)
        with open(args.out, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{len(rows)} concepts -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
