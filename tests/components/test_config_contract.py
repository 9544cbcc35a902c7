"""Settings come from config only; to_disk/from_disk carry data (word lists, rules, prompts).

A saved pipeline loaded with ``spacy.load(path, config={...})`` must show each override in
the component, not only in ``nlp.config``; a saved pipeline never reads ``resources/`` again.
"""
import json
import operator
from pathlib import Path

import pytest
import spacy

import semantic_doubles  # noqa: F401  (registers test.TopicEmbedder.v1)
from conftest import chunk_texts
from spacy_clinchunk import resources_io
from spacy_clinchunk.pipeline import load_pipeline

HEURISTIC = {"@misc": "spacy_clinchunk.HeuristicContext.v1"}
TOPIC = {"@misc": "test.TopicEmbedder.v1"}
INLINE_RULES = [{"literal": "no", "category": "NEGATED_EXISTENCE", "direction": "FORWARD"}]


def saved(tmp_path, *components, sentencizer=False):
    nlp = spacy.blank("en")
    if sentencizer:
        nlp.add_pipe("sentencizer")
    for factory, config in components:
        nlp.add_pipe(factory, config=config)
    nlp.initialize()
    path = tmp_path / "pipeline"
    nlp.to_disk(path)
    return nlp, path


# (factory, config when saved, setting, override at load, attribute, value seen in the component)
CASES = [
    ("clin_punct_splitter", {}, "spans_key", "other_key", "spans_key", "other_key"),
    ("clin_conj_splitter", {}, "min_words_before", 7, "min_words_before", 7),
    ("clin_conj_splitter", {}, "min_words_after", 3, "min_words_after", 3),
    ("clin_cleaner", {}, "max_cleanup_passes", 0, "max_cleanup_passes", 0),
    ("clin_cleaner", {}, "min_cleaned_chunk_length_chars", 5, "min_chars", 5),
    ("clin_cleaner", {}, "filter_short_low_value_chunks_max_words", 4, "short_max_words", 4),
    ("clin_cleaner", {}, "strip_list_markers", False, "strip_list_markers", False),
    ("clin_semantic_window", {"embedder": TOPIC}, "threshold", 0.25, "threshold", 0.25),
    ("clin_semantic_window", {"embedder": TOPIC}, "window_size", 4, "window_size", 4),
    ("clin_semantic_window", {"embedder": TOPIC}, "mode", "pooled", "mode", "pooled"),
    ("clin_semantic_window", {"embedder": TOPIC}, "negation_merge", False, "negation_merge", False),
    ("clin_context_assertion", {"include_default_rules": False}, "max_scope", 4, "max_scope", 4),
    ("clin_context_assertion", {"include_default_rules": False}, "span_keys", ["x"], "span_keys", ["x"]),
    ("clin_llm_context", {"model": HEURISTIC}, "windows.chunk_size", 500, "windows.chunk_size", 500),
    ("clin_llm_context", {"model": HEURISTIC}, "task.context_size", 20, "task.context_size", 20),
]


@pytest.mark.matrix
@pytest.mark.parametrize("factory, config, setting, value, attribute, seen", CASES)
def test_saved_pipeline_honours_setting_overrides(tmp_path, factory, config, setting, value, attribute, seen):
    _, path = saved(tmp_path, (factory, config))
    loaded = spacy.load(path, config={f"components.{factory}.{setting}": value})
    section = loaded.config["components"][factory]
    for part in setting.split(".")[:-1]:  # a setting of a part (clin_llm_context's windows, task)
        section = section[part]
    assert section[setting.split(".")[-1]] == value
    assert operator.attrgetter(attribute)(loaded.get_pipe(factory)) == seen


@pytest.mark.matrix
def test_conj_splitter_override_changes_behaviour_of_a_saved_pipeline(tmp_path):
    text = "Patient has seizures but no developmental delay"
    nlp, path = saved(tmp_path, ("clin_conj_splitter", {}))
    assert chunk_texts(nlp(text)) == ["Patient has seizures", "but no developmental delay"]
    loaded = spacy.load(path, config={"components.clin_conj_splitter.min_words_before": 7})
    assert chunk_texts(loaded(text)) == [text]
    assert chunk_texts(spacy.load(path)(text)) == chunk_texts(nlp(text))


def test_load_pipeline_stage_settings_reach_a_saved_pipeline(tmp_path):
    _, path = saved(tmp_path, ("clin_semantic_window", {"embedder": TOPIC}))
    nlp = load_pipeline(path, stage_settings={"threshold": 0.3, "window_size": 5})
    pipe = nlp.get_pipe("clin_semantic_window")
    assert pipe.threshold == pytest.approx(0.3) and pipe.window_size == 5


def test_cli_window_flags_reach_a_saved_pipeline(tmp_path, capsys):
    from spacy_clinchunk.cli import main

    text = "apple avocado apricot anchovy almond banana berry bread butter biscuit"
    note = tmp_path / "note.txt"
    note.write_text(text, encoding="utf-8")
    config = {"embedder": TOPIC, "window_size": 2, "threshold": 0.9, "min_segment_words": 1}
    _, path = saved(tmp_path, ("clin_semantic_window", config))
    assert main(["chunk", str(note), "--config", str(path), "--format", "jsonl"]) == 0
    split = capsys.readouterr().out
    window = "--components.clin_semantic_window.window_size"  # a config override, as for any setting
    assert main(["chunk", str(note), "--config", str(path), "--format", "jsonl", window, "20"]) == 0
    whole = capsys.readouterr().out
    assert text not in split and '"text": "apple avocado apricot anchovy almond"' in split
    assert f'"text": "{text}"' in whole  # fewer words than one window: never split


@pytest.mark.matrix
def test_changed_overrides_on_a_saved_pipeline_take_effect(tmp_path):
    text = "fever for days plus cough and rash"
    _, path = saved(tmp_path, ("clin_conj_splitter", {}))
    loaded = spacy.load(path, config={"components.clin_conj_splitter.overrides": {"coordinating_conjunctions": ["plus"]}})
    assert chunk_texts(loaded(text)) == ["fever for days", "plus cough and rash"]


@pytest.mark.matrix
def test_a_saved_pipeline_never_reads_the_package_resources(tmp_path, monkeypatch):
    text = "Dr. Smith saw the patient, i.e., a child. Seizures but no fever and no rash."
    nlp, path = saved(
        tmp_path,
        ("clin_punct_splitter", {}),
        ("clin_conj_splitter", {}),
        ("clin_cleaner", {}),
        ("clin_context_assertion", {"include_default_rules": False, "rules": INLINE_RULES}),
        sentencizer=True,
    )
    doc = nlp(text)
    expected = [(s.text, s._.clin_assertion) for s in doc.spans["clin_chunks"]]

    def refuse(*args, **kwargs):
        raise AssertionError(f"resources/ read by a saved pipeline: {args}")

    monkeypatch.setattr(resources_io, "resource_path", refuse)
    resources_io.load_json_resource.cache_clear()
    try:
        loaded = spacy.load(path)
        again = loaded(text)
        assert [(s.text, s._.clin_assertion) for s in again.spans["clin_chunks"]] == expected
    finally:
        monkeypatch.undo()
        resources_io.load_json_resource.cache_clear()


@pytest.mark.matrix
def test_saved_data_holds_rules_and_fallback_lists(tmp_path):
    _, path = saved(tmp_path, ("clin_punct_splitter", {}), ("clin_conj_splitter", {}), ("clin_context_assertion", {}))
    punct = json.loads((path / "clin_punct_splitter" / "resources.json").read_text())
    conj = json.loads((path / "clin_conj_splitter" / "resources.json").read_text())
    assertion = json.loads((path / "clin_context_assertion" / "cfg.json").read_text())
    assert punct["resources"]["punct_rules"] == {"ordinal_period": False}
    assert "dr." in conj["resources"]["abbreviations"]  # seeding from sentences needs them
    assert assertion["light_words"] and "min_words_before" not in json.dumps(conj)


@pytest.mark.matrix
def test_data_of_format_1_is_not_read(tmp_path):
    """0.1 wrote settings into resources.json/cfg.json (format 1); 0.2 reads no such file: the
    settings come from the config and the data from the package, as for a changed config."""
    text = "fever for days plus cough and rash"
    nlp, path = saved(tmp_path, ("clin_conj_splitter", {}), ("clin_context_assertion", {"include_default_rules": False}))
    conj_file = path / "clin_conj_splitter" / "resources.json"
    data = json.loads(conj_file.read_text())
    resources = {k: v for k, v in data["resources"].items() if k != "abbreviations"}
    resources["coordinating_conjunctions"] = ["plus"]
    conj_file.write_text(json.dumps({"lang": "en", "resources": resources, "min_words_before": 9}))
    (path / "clin_context_assertion" / "cfg.json").write_text(
        json.dumps({"lang": "en", "span_keys": ["old"], "max_scope": 2, "include_default_rules": False})
    )
    loaded = spacy.load(path)
    assert loaded.get_pipe("clin_conj_splitter").min_words_before == 2
    assert chunk_texts(loaded(text)) == chunk_texts(nlp(text))  # "plus" of the old file is not read
    assert chunk_texts(loaded(text)) != ["fever for days", "plus cough and rash"]
    assertion = loaded.get_pipe("clin_context_assertion")
    assert assertion.span_keys == ["clin_chunks"] and assertion.max_scope is None
    assert assertion.rules == nlp.get_pipe("clin_context_assertion").rules


# -- bad settings: one line naming the component, the setting and what it allows -----------
# (factory, setting, bad value, part of the one line); the types and ranges are the factory's
NOT_INT, TOO_LOW_0, TOO_LOW_1 = "must be an integer", "must be an integer >= 0", "must be an integer >= 1"
NOT_BOOL = "must be true or false"
BAD = [
    ("clin_punct_splitter", "keep_coordinated", "maybe", NOT_BOOL),
    ("clin_conj_splitter", "min_words_before", 0, TOO_LOW_1),
    ("clin_conj_splitter", "min_words_before", 1.5, NOT_INT),
    ("clin_conj_splitter", "min_words_after", -5, TOO_LOW_1),
    ("clin_conj_splitter", "keep_coordinated", "maybe", NOT_BOOL),
    ("clin_conj_splitter", "split_before_status_openers", "maybe", NOT_BOOL),
    ("clin_cleaner", "max_cleanup_passes", -1, TOO_LOW_0),
    ("clin_cleaner", "max_cleanup_passes", "abc", NOT_INT),
    ("clin_cleaner", "max_cleanup_passes", True, NOT_INT),  # integers are strict: no bools
    ("clin_cleaner", "min_cleaned_chunk_length_chars", -1, TOO_LOW_0),
    ("clin_cleaner", "filter_short_low_value_chunks_max_words", -2, TOO_LOW_0),
    ("clin_cleaner", "strip_list_markers", "maybe", NOT_BOOL),
    ("clin_semantic_window", "mode", "fast", "must be one of 'exact', 'pooled'"),
    ("clin_semantic_window", "window_size", 0, TOO_LOW_1),
    ("clin_semantic_window", "step_size", 0, TOO_LOW_1),
    ("clin_semantic_window", "threshold", 3, "must be a number from -1 to 1, got 3"),
    ("clin_semantic_window", "threshold", -1.5, "must be a number from -1 to 1, got -1.5"),
    ("clin_semantic_window", "threshold", "abc", "must be a number from -1 to 1, got 'abc'"),
    ("clin_semantic_window", "min_segment_words", -1, TOO_LOW_0),
    ("clin_semantic_window", "split_at", "max", "must be one of 'drop', 'minimum'"),
    ("clin_semantic_window", "negation_merge", "maybe", NOT_BOOL),
    ("clin_semantic_window", "negation_merge_max_words", -1, TOO_LOW_0),
    ("clin_semantic_window", "batch_size", 0, TOO_LOW_1),
    ("clin_semantic_window", "save_model", "maybe", NOT_BOOL),
    ("clin_focus", "min_focus_chars", 0, TOO_LOW_1),
    ("clin_focus", "max_conjuncts", -1, TOO_LOW_0),
    ("clin_focus", "min_conjunct_words", 0, TOO_LOW_1),
    ("clin_focus", "segment_min_words", -1, TOO_LOW_0),
    ("clin_focus", "trim_counts", "maybe", NOT_BOOL),
]
# settings that contradict each other: one line from the factory
CONTRADICTIONS = [
    ("clin_semantic_window", {"window_size": 3, "step_size": 4}, "step_size (4) must not exceed window_size (3)"),
    (
        "clin_semantic_window",
        {"embedder": {"@misc": "spacy_clinchunk.TransformerListener.v1"}, "mode": "exact"},
        'gives token vectors only; set mode = "pooled"',
    ),
    ("clin_focus", {"focus_key": "clin_chunks"}, "spans_key and focus_key must differ"),
]
NEEDS = {"clin_semantic_window": {"embedder": TOPIC}}  # no model download for a settings test


def config_of(tmp_path, factory):
    nlp = spacy.blank("en")
    nlp.add_pipe(factory, config=NEEDS.get(factory, {}))
    path = tmp_path / f"{factory}.cfg"
    nlp.config.to_disk(path)
    return path


@pytest.mark.matrix
@pytest.mark.parametrize("factory, setting, value, message", BAD)
def test_bad_setting_fails_at_load_with_one_line(tmp_path, factory, setting, value, message):
    from spacy_clinchunk.pipeline import PipelineError

    with pytest.raises(PipelineError) as info:
        load_pipeline(config_of(tmp_path, factory), {f"components.{factory}.{setting}": value})
    line = str(info.value)
    assert line.startswith(f"{factory}: {setting} ") and message in line and "\n" not in line, line


@pytest.mark.matrix
@pytest.mark.parametrize("factory, settings, message", CONTRADICTIONS)
def test_contradicting_settings_are_one_line(tmp_path, factory, settings, message):
    from spacy_clinchunk.pipeline import PipelineError

    path = config_of(tmp_path, factory)
    config = spacy.util.load_config(path, interpolate=False)
    config["components"][factory].update(settings)
    config.to_disk(path)
    with pytest.raises(PipelineError) as info:
        load_pipeline(path)
    assert str(info.value).startswith(f"{factory}: ") and message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.matrix
def test_bad_setting_of_a_saved_pipeline_is_one_line(tmp_path):
    from spacy_clinchunk.pipeline import PipelineError

    load_pipeline("punct_conj_cleaned").to_disk(tmp_path / "p")
    with pytest.raises(PipelineError) as info:
        load_pipeline(tmp_path / "p", {"components.clin_cleaner.max_cleanup_passes": -1})
    assert str(info.value) == "clin_cleaner: max_cleanup_passes must be an integer >= 0, got -1"


def test_pipe_classes_have_no_setting_defaults():
    """Defaults live in default_config only: every setting of a Pipe class is required."""
    import inspect

    from spacy_clinchunk.components import base, cleaner, conj_splitter, focus, punct_splitter, semantic_window

    classes = [
        base.ChunkRefiner, punct_splitter.PunctSplitter, conj_splitter.ConjSplitter, cleaner.ChunkCleaner,
        semantic_window.SemanticWindow, focus.ClinFocus,
    ]
    for cls in classes:
        params = inspect.signature(cls.__init__).parameters.values()
        with_default = [p.name for p in params if p.default is not inspect.Parameter.empty]
        assert with_default == [], (cls.__name__, with_default)


def test_cli_prints_one_line_for_a_bad_setting(tmp_path, capsys):
    from spacy_clinchunk.cli import main

    note = tmp_path / "n.txt"
    note.write_text("fever and cough", encoding="utf-8")
    code = main(["chunk", str(note), "--strategy", "punct_conj_cleaned", "--components.clin_cleaner.max_cleanup_passes=-1"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == "error: clin_cleaner: max_cleanup_passes must be an integer >= 0, got -1"


@pytest.mark.matrix
def test_every_shipped_config_is_a_strategy():
    from spacy_clinchunk.pipeline import strategies, strategy_config

    root = Path(__file__).resolve().parents[2]
    shipped = sorted(p.stem for p in (root / "configs").glob("*.cfg"))
    trained = sorted(p.parent.name for p in (root / "spacy_clinchunk" / "models").glob("*/config.cfg"))
    assert strategies() == sorted(shipped + trained) and "assertion" in shipped and trained == ["span_finder"]
    for name in shipped:
        assert strategy_config(name).name == f"{name}.cfg"
    for name in trained:  # a trained strategy is a saved pipeline directory
        assert (strategy_config(name) / "config.cfg").is_file()
