"""The bundled note is right: every chunk of the `assertion` and `default` pipelines carries the
status a clinician gave it in ``discharge_summary_en.expected.jsonl``.

The two pipelines chunk the note differently (the default one keeps some coordinations whole), so
the expected file is keyed by chunk offsets: one line per distinct chunk (``start``, ``end``,
``text``, ``status``) with ``pipelines`` naming the pipelines that make it. Headers and form
labels carry no assertion cue of their own: they are ``affirmed``, the status of a span no cue
or section governs.
"""
import json

import pytest

from spacy_clinchunk import attrs
from spacy_clinchunk.pipeline import load_pipeline

from conftest import EXAMPLE_NOTE

PIPELINES = ("assertion", "default")
# the note as written, its flattened twin (issue 40: every line break an export turned into a
# comma, as in MTSamples; the same offsets, and where a chunk is the same, the same status), and a
# German letter dense with abbreviations ("V.a.", "Z.n.", "o. B.", "path.", "bds.", "z.N.", "bei Bedarf"),
# which language "auto" chunks and asserts with German rules
NOTES = {"written": EXAMPLE_NOTE, "flattened": EXAMPLE_NOTE.with_name("discharge_summary_en_flat.txt"),
         "german letter": EXAMPLE_NOTE.with_name("arztbrief_de.txt")}


def expected_rows(note="written"):
    path = NOTES[note].with_name(NOTES[note].name.replace(".txt", ".expected.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_flattened_twin_is_the_note_with_commas_for_line_breaks():
    assert NOTES["flattened"].read_text(encoding="utf-8") == EXAMPLE_NOTE.read_text(encoding="utf-8").replace("\n", ",")


def test_the_twin_keeps_the_statuses_of_the_written_note():
    written = {(r["start"], r["end"], r["text"]): r["status"] for r in expected_rows("written")}
    flattened = expected_rows("flattened")
    same = [r for r in flattened if (r["start"], r["end"], r["text"]) in written]
    assert len(same) >= 0.95 * len(flattened)
    assert all(written[(r["start"], r["end"], r["text"])] == r["status"] for r in same)


@pytest.mark.parametrize("note", list(NOTES))
def test_expected_file_is_well_formed(note):
    text = NOTES[note].read_text(encoding="utf-8")
    rows = expected_rows(note)
    assert rows, "empty expected file"
    assert [(r["start"], r["end"]) for r in rows] == sorted({(r["start"], r["end"]) for r in rows})
    for row in rows:
        assert text[row["start"]:row["end"]] == row["text"]
        assert row["status"] in attrs.ASSERTION_LABELS
        assert set(row["pipelines"]) <= set(PIPELINES) and row["pipelines"]


@pytest.mark.parametrize("note", list(NOTES))
@pytest.mark.parametrize("name", PIPELINES)
def test_pipeline_reproduces_the_clinicians_statuses(name, note):
    nlp = load_pipeline(name)
    doc = nlp(NOTES[note].read_text(encoding="utf-8"))
    got = {(s.start_char, s.end_char): s._.clin_assertion for s in doc.spans[attrs.CHUNKS_KEY]}
    wanted = {(r["start"], r["end"]): r for r in expected_rows(note) if name in r["pipelines"]}
    assert set(got) == set(wanted), "the chunks changed: regenerate the offsets and review the statuses"
    wrong = [
        f"{wanted[key]['text']!r}: expected {wanted[key]['status']}, got {got[key]}"
        for key in sorted(got)
        if got[key] != wanted[key]["status"]
    ]
    assert not wrong, "\n".join(wrong)
