"""Dump what every bundled strategy writes on the bundled example notes, to compare two trees.

    python scripts/dump_outputs.py OUT_DIR [STRATEGY ...]
    diff -r BEFORE_DIR AFTER_DIR        # "same output as before" (issue 41)

One JSON file per strategy: for each note (resources/examples/*.txt), every span group with each
span's offsets, text, group and the package's extension values (assertion, cues, section,
context, focus links ...). A strategy that cannot load here (transformer without its venv)
writes its one-line error instead. Every span's text is checked against the note's offsets.
"""

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def plain(value):
    try:
        json.dumps(value)
        return value
    except TypeError:
        return "<object>" if " at 0x" in repr(value) else repr(value)


def dump(nlp, text, names):
    from spacy.tokens import Span

    doc = nlp(text)
    groups = {}
    for key in sorted(doc.spans):
        spans = []
        for span in doc.spans[key]:
            assert text[span.start_char : span.end_char] == span.text  # offsets are sacred
            ext = {n: plain(getattr(span._, n)) for n in names if Span.has_extension(n) and getattr(span._, n) is not None}
            spans.append({"start": span.start_char, "end": span.end_char, "text": span.text, "group": key, "ext": ext})
        groups[key] = spans
    return groups


def main(out: Path, wanted) -> None:
    from spacy_clinchunk.attrs import ASSERTION_FLAGS, SPAN_EXTENSIONS
    from spacy_clinchunk.pipeline import load_pipeline, strategies

    names = ["clin_" + f for f in [*SPAN_EXTENSIONS, *ASSERTION_FLAGS]]
    notes = sorted((ROOT / "resources" / "examples").glob("*.txt"))
    out.mkdir(parents=True, exist_ok=True)
    for name in wanted or strategies():
        started = time.time()
        try:
            nlp = load_pipeline(name)
        except Exception as err:  # reported, not raised: the other strategies still dump
            (out / f"{name}.json").write_text(json.dumps({"error": f"{type(err).__name__}: {err}"}) + "\n")
            print(f"{name}: cannot load ({err})")
            continue
        rows = {note.name: dump(nlp, note.read_text(encoding="utf-8"), names) for note in notes}
        text = json.dumps(rows, indent=1, ensure_ascii=False, sort_keys=True)
        (out / f"{name}.json").write_text(text + "\n", encoding="utf-8")
        print(f"{name}: {time.time() - started:.1f} s")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
