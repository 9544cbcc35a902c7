"""spaCy's serialization contract for every component: a serializers dict through
``spacy.util`` (to_disk / from_disk / to_bytes / from_bytes), ``exclude`` honoured by name,
and round trips (bytes and disk) that keep the output."""

import pytest
import spacy

from conftest import EXAMPLE_NOTE
from spacy_clinchunk.pipeline import load_pipeline

NOTE = EXAMPLE_NOTE.read_text(encoding="utf-8")[:3000]
# strategy -> its components (every factory of ours, among them)
STRATEGIES = ("default", "retrieval", "contextual")


def output(nlp, text=NOTE):
    doc = nlp(text)
    return {
        key: [(s.start_char, s.end_char, s._.clin_assertion, s._.clin_context) for s in doc.spans[key]]
        for key in sorted(doc.spans)
    }


@pytest.fixture(scope="module", params=STRATEGIES)
def pipeline(request):
    nlp = load_pipeline(request.param)
    return nlp, output(nlp)


def test_bytes_round_trip_keeps_the_output(pipeline):
    nlp, expected = pipeline
    again = spacy.util.load_model_from_config(nlp.config, auto_fill=True)
    again.from_bytes(nlp.to_bytes())
    assert output(again) == expected


def test_disk_round_trip_keeps_the_output(pipeline, tmp_path):
    nlp, expected = pipeline
    nlp.to_disk(tmp_path / "saved")
    assert output(spacy.load(tmp_path / "saved")) == expected


def test_each_component_round_trips_through_bytes_and_disk(pipeline, tmp_path):
    nlp, _ = pipeline
    for name, pipe in nlp.pipeline:
        if not name.startswith("clin_"):
            continue
        data = pipe.to_bytes()
        assert pipe.from_bytes(data).to_bytes() == data, name
        pipe.to_disk(tmp_path / name)
        assert pipe.from_disk(tmp_path / name).to_bytes() == data, name


# component -> the names its data is saved under (one JSON file each), excluded by name
SAVED = {
    "clin_punct_splitter": ["resources"],
    "clin_size_ceiling": ["resources"],
    "clin_focus": ["resources"],
    "clin_context_assertion": ["cfg", "context_rules"],
    "clin_llm_context": ["llm_context"],
}


def test_exclude_is_honoured_by_name(tmp_path):
    nlp = load_pipeline("contextual")
    for name, parts in SAVED.items():
        pipe = nlp.get_pipe(name)
        pipe.to_disk(tmp_path / name)
        assert {p.name.split(".")[0] for p in (tmp_path / name).iterdir()} == set(parts), name
        for part in parts:
            pipe.to_disk(tmp_path / f"{name}-{part}", exclude=[part])
            assert not list((tmp_path / f"{name}-{part}").glob(f"{part}*")), (name, part)
        everything = pipe.to_bytes()
        assert pipe.to_bytes(exclude=parts) != everything
        pipe.from_bytes(everything, exclude=parts)  # nothing read: the component is as it was
        assert pipe.to_bytes() == everything


def test_whole_pipeline_exclude_skips_a_component(tmp_path):
    """``nlp.to_disk(exclude=[name])`` (spaCy's own) writes no folder for that component."""
    nlp = load_pipeline("default")
    nlp.to_disk(tmp_path / "saved", exclude=["clin_context_assertion"])
    assert not (tmp_path / "saved" / "clin_context_assertion").exists()
    assert (tmp_path / "saved" / "clin_focus" / "resources.json").is_file()
