"""Language detection on short texts of the shared real notes (issue 40, "language auto all the way").

Every shipped config says ``language = "auto"``: each doc's rules come from
``spacy_clinchunk.assertion.language.detect_language``. A whole note has evidence to spare; a short
doc (one sentence a doc, as a user who feeds sentences or small chunks has) is where a wrong guess
hides. This reads the shared notes in place (``../shared/data/real_notes``, or
``CLINCHUNK_SHARED_DATA``), cuts them into sentences with a plain rule (after ``.!?`` before space or
a comma, and at line breaks; pieces of 16 characters or more), and counts per language of the
notes:

* notes: detected surely as their own language;
* sentences: ``right`` (surely their own language), ``unsure`` (the pipeline's own language applies,
  with one warning), ``wrong`` (surely another language: that language's rules would apply silently),
  and which languages the wrong ones went to;
* the detector's speed over the whole notes, in characters per second.

No note text is printed. ``--bundled`` reads the example notes shipped in ``resources/examples``
instead (one or two a language, all five languages): a clone without the shared data can run it.

    .venv/bin/python bench/language.py             # the shared notes
    .venv/bin/python bench/language.py --bundled   # the bundled example notes
"""
import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data") / "real_notes"
FILES = {"en": "mtsamples_dev.jsonl", "de": "grascco_de_dev.jsonl"}
EXAMPLES = ROOT / "resources" / "examples"  # <name>_<lang>[_flat].txt
_SENTENCE_END = re.compile(r"(?<=[.!?])[\s,]+|\n+")
MIN_CHARS = 16


def sentences(text: str):
    return [s.strip() for s in _SENTENCE_END.split(text) if len(s.strip()) >= MIN_CHARS]


def shared_notes() -> dict:
    """Language -> the texts of the shared notes in that language."""
    return {lang: [json.loads(line)["text"] for line in (SHARED / name).read_text(encoding="utf-8").splitlines()
                   if line.strip()] for lang, name in FILES.items()}


def bundled_notes() -> dict:
    """Language -> the texts of the example notes shipped in the repository."""
    notes: dict = {}
    for path in sorted(EXAMPLES.glob("*.txt")):
        lang = next(part for part in path.stem.split("_") if len(part) == 2)
        notes.setdefault(lang, []).append(path.read_text(encoding="utf-8"))
    return notes


def audit(lang: str, texts, detect) -> dict:
    notes = sum(1 for t in texts if (g := detect(t)).sure and g.language == lang)
    counts, went_to = Counter(), Counter()
    for text in texts:
        for sentence in sentences(text):
            guess = detect(sentence)
            if guess.sure and guess.language == lang:
                counts["right"] += 1
            elif guess.sure:
                counts["wrong"] += 1
                went_to[guess.language] += 1
            else:
                counts["unsure"] += 1
    started = time.perf_counter()
    for text in texts:
        detect(text)
    seconds = time.perf_counter() - started
    return {"notes": f"{notes}/{len(texts)}", **counts, "wrong_to": dict(went_to), "total": sum(counts.values()),
            "chars_per_s": round(sum(len(t) for t in texts) / max(seconds, 1e-9))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog="Reads CLINCHUNK_SHARED_DATA.")
    parser.add_argument("--bundled", action="store_true", help="the example notes in resources/examples")
    args = parser.parse_args()
    if not args.bundled and not all((SHARED / name).is_file() for name in FILES.values()):
        print(f"bench/language.py: the shared notes are not at {SHARED} (set CLINCHUNK_SHARED_DATA, or --bundled)",
              file=sys.stderr)
        return 2
    notes = bundled_notes() if args.bundled else shared_notes()
    from spacy_clinchunk.assertion.language import detect_language

    print(f"load {os.getloadavg()[0]:.2f}")
    print("| notes of | notes detected | sentences | right | unsure | wrong (to) | detector chars/s |")
    print("|---|---|---|---|---|---|---|")
    for lang, texts in notes.items():
        r = audit(lang, texts, detect_language)
        total = r["total"]
        share = {k: f"{r.get(k, 0)} ({r.get(k, 0) / total:.1%})" for k in ("right", "unsure", "wrong")}
        print(f"| {lang} | {r['notes']} | {total} | {share['right']} | {share['unsure']} | {share['wrong']} "
              f"{r['wrong_to'] or ''} | {r['chars_per_s']:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
