"""Pipelines saved by release 0.1 load with ``spacy.load`` and reproduce what they gave then.

``tests/data/saved_0_1/<strategy>/expected.json`` holds, for the example note, every span
group (``[start, end, label]``) and the extension values of each span under their 0.1
names (``assertion``, ``assertion_cues``, ``section``, ``focus_of``, ``focus_ids``), which
are ``clin_<name>`` now.
"""
import json
from pathlib import Path

import pytest
import spacy

from conftest import EXAMPLE_NOTE

SAVED = Path(__file__).resolve().parent / "data" / "saved_0_1"
REPRODUCED = ["retrieval", "default", "sliding_window", "assertion"]
OLD_NAMES = ("assertion", "assertion_cues", "section", "focus_of", "focus_ids")


def test_every_saved_pipeline_is_covered():
    assert sorted(p.name for p in SAVED.iterdir() if p.is_dir()) == sorted([*REPRODUCED, "contextual_rag"])


@pytest.mark.parametrize("strategy", REPRODUCED)
def test_saved_pipeline_reproduces_its_output(strategy):
    if strategy == "assertion":
        pytest.importorskip("medspacy")
    from spacy_clinchunk.attrs import ext, register_extensions

    register_extensions()
    expected = json.loads((SAVED / strategy / "expected.json").read_text(encoding="utf-8"))
    doc = spacy.load(SAVED / strategy)(EXAMPLE_NOTE.read_text(encoding="utf-8"))
    apply_changes(SAVED / f"{strategy}.changed.json", doc, expected["ext"])
    for key, spans in expected["groups"].items():
        assert [[s.start_char, s.end_char, s.label_] for s in doc.spans[key]] == spans, key
        got = [{name: getattr(s._, ext(name)) for name in OLD_NAMES} for s in doc.spans[key]]
        assert got == expected["ext"][key], key


def apply_changes(changed, doc, ext):
    """Where the engine's code changed what a saved pipeline's own rules give, the change is
    listed with its reason (``<strategy>.changed.json`` beside the pipeline), checked against
    the chunk it names."""
    if not changed.is_file():
        return
    for change in json.loads(changed.read_text(encoding="utf-8"))["changes"]:
        assert change["why"]
        assert doc.spans["clin_chunks"][change["index"]].text == change["text"]
        ext["clin_chunks"][change["index"]].update(change["now"])


def test_saved_contextual_rag_pipeline_loads():
    nlp = spacy.load(SAVED / "contextual_rag")
    assert nlp.pipe_names == ["sentencizer", "clin_llm_context"]
