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

EXPECTED = EXAMPLE_NOTE.with_name("discharge_summary_en.expected.jsonl")
PIPELINES = ("assertion", "default")


def expected_rows():
    return [json.loads(line) for line in EXPECTED.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_expected_file_is_well_formed():
    text = EXAMPLE_NOTE.read_text(encoding="utf-8")
    rows = expected_rows()
    assert rows, "empty expected file"
    assert [(r["start"], r["end"]) for r in rows] == sorted({(r["start"], r["end"]) for r in rows})
    for row in rows:
        assert text[row["start"]:row["end"]] == row["text"]
        assert row["status"] in attrs.ASSERTION_LABELS
        assert set(row["pipelines"]) <= set(PIPELINES) and row["pipelines"]


@pytest.mark.parametrize("name", PIPELINES)
def test_pipeline_reproduces_the_clinicians_statuses(name):
    nlp = load_pipeline(name)
    doc = nlp(EXAMPLE_NOTE.read_text(encoding="utf-8"))
    got = {(s.start_char, s.end_char): s._.clin_assertion for s in doc.spans[attrs.CHUNKS_KEY]}
    wanted = {(r["start"], r["end"]): r for r in expected_rows() if name in r["pipelines"]}
    assert set(got) == set(wanted), "the chunks changed: regenerate the offsets and review the statuses"
    wrong = [
        f"{wanted[key]['text']!r}: expected {wanted[key]['status']}, got {got[key]}"
        for key in sorted(got)
        if got[key] != wanted[key]["status"]
    ]
    assert not wrong, "\n".join(wrong)
