"""Pipelines saved by 0.2 load and keep their output (tests/data/saved_0_2, written by
scripts/save_pinned_pipelines.py): the saved copies are what users' saved pipelines are."""

import json
import sys
from pathlib import Path

import pytest
import spacy

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from save_pinned_pipelines import OUT, PIPELINES, TEXT, build, spans_of  # noqa: E402

import spacy_clinchunk  # noqa: E402


@pytest.mark.parametrize("name", PIPELINES)
def test_a_pipeline_saved_by_0_2_loads_and_keeps_its_output(name):
    saved = OUT / name
    expected = json.loads((saved / "expected.json").read_text(encoding="utf-8"))
    nlp = spacy.load(saved)
    doc = nlp(TEXT)
    assert spans_of(doc) == expected
    for spans in expected.values():
        assert all(TEXT[start:end] == text for start, end, text, _ in spans)  # offsets are exact


@pytest.mark.parametrize("name", PIPELINES)
def test_the_saved_copy_gives_what_the_pipeline_built_today_gives(name):
    assert spans_of(spacy.load(OUT / name)(TEXT)) == spans_of(build(name)(TEXT))


def test_saved_pipelines_name_the_release_they_need(tmp_path):
    """``meta.json`` tells a 0.2 pipeline from an older one: its requirement pins this minor."""
    meta = json.loads((OUT / "llm_context" / "meta.json").read_text(encoding="utf-8"))
    assert meta["requirements"] == ["spacy-clinchunk[llm]>=0.2.0,<0.3.0"]
    assert spacy_clinchunk.__version__ == "0.2.0"


def test_the_old_flat_module_paths_are_gone():
    """0.2 keeps no import hook for the flat layout of 0.1."""
    with pytest.raises(ModuleNotFoundError):
        __import__("spacy_clinchunk.records")
    assert not Path(spacy_clinchunk.__file__).with_name("_moved.py").exists()
