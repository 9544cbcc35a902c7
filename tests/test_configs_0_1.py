"""Configs of the previous release (0.1, copied verbatim into tests/data/configs_0_1) still load
and, where a pipeline saved by 0.1 records its output (tests/data/saved_0_1/*/expected.json),
chunk the bundled note exactly as they did then. Where 0.1 gave a clinically wrong status, the
config's output differs by what ``tests/data/configs_0_1/<name>.changed.json`` lists, each
change with its reason (the saved 0.1 pipeline keeps its own rules and still gives expected.json)."""
import json
import importlib.util
from pathlib import Path

import pytest

from conftest import EXAMPLE_NOTE, ROOT
from spacy_clinchunk.pipeline import load_pipeline
from test_saved_0_1 import apply_changes

OLD_CONFIGS = ROOT / "tests" / "data" / "configs_0_1"
OLD_SAVED = ROOT / "tests" / "data" / "saved_0_1"
NEEDS = {"transformer": "spacy_transformers"}  # config -> optional package it needs
NEEDS_SERVER = {"contextual_rag"}  # built here; running it needs an LLM server (tests/test_llm_*.py)
OLD_NAMES = {"assertion": "clin_assertion", "assertion_cues": "clin_assertion_cues", "section": "clin_section",
             "focus_of": "clin_focus_of", "focus_ids": "clin_focus_ids"}


def _configs():
    return sorted(p.stem for p in OLD_CONFIGS.glob("*.cfg"))


# groups a 0.1 pipeline did not write: clin_context_assertion's sections (issue 40)
NEW_GROUPS = {"clin_sections"}


def _groups(doc):
    return {key: [[s.start_char, s.end_char, s.label_] for s in group] for key, group in doc.spans.items()
            if key not in NEW_GROUPS}


def _values(doc, expected_ext):
    got = {}
    for key, rows in expected_ext.items():
        fields = sorted({field for row in rows for field in row})
        got[key] = [
            {f: getattr(s._, OLD_NAMES[f]) for f in fields if s.has_extension(OLD_NAMES[f])} for s in doc.spans[key]
        ]
    return got


def test_every_config_of_the_previous_release_is_here():
    assert {"assertion", "contextual_rag", "default", "punct_conj_cleaned", "retrieval", "simple",
            "sliding_window", "transformer"} <= set(_configs())


@pytest.mark.parametrize("name", _configs())
def test_a_config_of_the_previous_release_loads_and_chunks_as_before(name):
    package = NEEDS.get(name)
    if package and importlib.util.find_spec(package) is None:
        pytest.skip(f"{name}.cfg needs {package} (the [transformers] extra; .ci/run tests it in its own venv)")
    nlp = load_pipeline(OLD_CONFIGS / f"{name}.cfg")
    assert nlp.pipe_names
    if name in NEEDS_SERVER:
        return
    doc = nlp(EXAMPLE_NOTE.read_text(encoding="utf-8"))
    expected_file = OLD_SAVED / name / "expected.json"
    if not expected_file.is_file():
        assert any(len(g) for g in doc.spans.values())
        return
    expected = json.loads(expected_file.read_text(encoding="utf-8"))
    assert _groups(doc) == expected["groups"]
    _apply_changes(name, doc, expected["ext"])
    assert json.loads(json.dumps(_values(doc, expected["ext"]), default=str)) == expected["ext"]


def _apply_changes(name, doc, ext):
    """The documented corrections of 0.1's statuses, checked against the chunk they name."""
    apply_changes(OLD_CONFIGS / f"{name}.changed.json", doc, ext)
