"""configs/training/span_finder.cfg trains with `python -m spacy train` from annotated documents."""
import subprocess
import sys

import pytest
import spacy

from conftest import CONFIG_DIR, SAMPLE_JSON


@pytest.mark.slow
def test_span_finder_config_trains_and_predicts_exact_spans(tmp_path):
    files = sorted(SAMPLE_JSON.glob("*.json"))  # the annotated sample that ships in the repository
    assert len(files) >= 4
    for name, part in (("train", files[:3]), ("dev", files[3:])):
        (tmp_path / name).mkdir()
        for file in part:
            (tmp_path / name / file.name).symlink_to(file.resolve())
    subprocess.run(
        [sys.executable, "-m", "spacy", "train", str(CONFIG_DIR / "training" / "span_finder.cfg"), "--output", str(tmp_path / "out"),
         "--paths.train", str(tmp_path / "train"), "--paths.dev", str(tmp_path / "dev"), "--training.max_epochs", "2"],
        check=True, capture_output=True,
    )
    nlp = spacy.load(tmp_path / "out" / "model-last")
    doc = nlp("A syndrome of brachydactyly, aplastic or hypoplastic nails and craniosynostosis.")
    for span in doc.spans.get("annotations", []):
        assert span.text == doc.text[span.start_char:span.end_char]


# The shipped trained strategy: spacy_clinchunk/models/span_finder (make span-finder-model)
MODEL_DIR = CONFIG_DIR.parent / "spacy_clinchunk" / "models" / "span_finder"
SENTENCE = "A syndrome of brachydactyly, aplastic or hypoplastic nails and craniosynostosis."
KEY = "clin_trained"


@pytest.fixture(scope="module")
def trained():
    from spacy_clinchunk.pipeline import load_pipeline

    return load_pipeline("span_finder")


def spans_of(doc):
    spans = list(doc.spans[KEY])
    for span in spans:
        assert span.text == doc.text[span.start_char:span.end_char]
    offsets = [(s.start_char, s.end_char) for s in spans]
    assert offsets == sorted(offsets)
    return offsets


@pytest.mark.matrix
def test_the_shipped_model_is_the_span_finder_strategy():
    from spacy_clinchunk.pipeline import resolve_pipeline, strategies, strategy_config

    assert "span_finder" in strategies() and strategy_config("span_finder") == MODEL_DIR
    assert resolve_pipeline("span_finder").chunks_key == KEY and resolve_pipeline("retrieval").chunks_key == "clin_chunks"
    size = sum(p.stat().st_size for p in MODEL_DIR.rglob("*") if p.is_file())
    assert size < 20_000_000
    config = spacy.util.load_config(MODEL_DIR / "config.cfg", interpolate=False)
    assert config["paths"]["train"] is None and config["paths"]["dev"] is None  # no path of the training machine
    assert config["components"]["span_finder"]["spans_key"] == KEY


def test_the_strategy_and_spacy_load_predict_the_same_exact_spans(trained, tmp_path, monkeypatch):
    offsets = spans_of(trained(SENTENCE))
    assert offsets and trained.pipe_names == ["span_finder"]
    monkeypatch.chdir(tmp_path)  # spacy.load from any folder: no training path in the saved config
    assert spans_of(spacy.load(MODEL_DIR)(SENTENCE)) == offsets


def test_empty_and_whitespace_docs_give_an_empty_group(trained):
    for text in ("", " ", "\n\n  \t"):
        doc = trained(text)
        assert KEY in doc.spans and spans_of(doc) == []


def test_to_disk_and_spacy_load_reproduce_the_spans(trained, tmp_path):
    from conftest import EXAMPLE_NOTE

    texts = [SENTENCE, EXAMPLE_NOTE.read_text(encoding="utf-8")]
    expected = [spans_of(doc) for doc in trained.pipe(texts)]
    trained.to_disk(tmp_path / "sf")
    reloaded = spacy.load(tmp_path / "sf")
    assert [spans_of(doc) for doc in reloaded.pipe(texts)] == expected


def test_cli_chunk_with_the_trained_strategy_prints_its_spans(capsys):
    import json

    from conftest import EXAMPLE_NOTE
    from spacy_clinchunk.cli import main

    assert main(["chunk", str(EXAMPLE_NOTE), "--strategy", "span_finder", "--format", "jsonl"]) == 0
    record = json.loads(capsys.readouterr().out)
    text = EXAMPLE_NOTE.read_text(encoding="utf-8")
    assert record["chunks"] and all(text[c["start"]:c["end"]] == c["text"] for c in record["chunks"])


@pytest.mark.matrix
def test_package_data_declares_every_model_file():
    """setup.cfg's package_data globs cover each file of the saved pipeline (the wheel test builds it)."""
    import configparser
    from fnmatch import fnmatch

    setup = configparser.ConfigParser(interpolation=None)
    setup.read(CONFIG_DIR.parent / "setup.cfg")
    packages = setup["options"]["packages"].split()
    data = {key: [g.strip() for g in value.replace("\n", ",").split(",") if g.strip()]
            for key, value in setup["options.package_data"].items()}
    root = CONFIG_DIR.parent
    files = [p.relative_to(root) for p in MODEL_DIR.rglob("*") if p.is_file()]
    assert len(files) >= 5
    for file in files:
        package = ".".join(file.parent.parts)
        assert package in packages, package
        assert any(fnmatch(file.name, glob) for glob in data.get(package, [])), file
