"""clin_llm_context keeps 0.1's configs and saved pipelines working: the pipeline saved by
0.1 loads and writes no cache; the deprecated ``cache_path`` and ``prompt_template`` still
mean what they can, each said once."""
import warnings

import pytest
import spacy

from conftest import CONFIG_DIR, EXAMPLE_NOTE, ROOT
from llm_server import answer_for
from spacy_clinchunk import fileio
from spacy_clinchunk.components.settings import SettingError

KEY = "clin_rag_chunks"
SAVED = ROOT / "tests" / "data" / "saved_0_1" / "contextual_rag"
HEURISTIC = {"@misc": "spacy_clinchunk.HeuristicContext.v1"}


@pytest.fixture
def fresh_warnings(monkeypatch):
    """Warnings given once per process are given again in this test."""
    monkeypatch.setattr(fileio, "_warned", set())


@pytest.fixture
def cache_homes(tmp_path, monkeypatch):
    """Every place a cache could go by default, inside ``tmp_path``."""
    homes = {name: tmp_path / name for name in ("clinchunk_cache", "xdg", "home")}
    monkeypatch.setenv("SPACY_CLINCHUNK_CACHE", str(homes["clinchunk_cache"]))
    monkeypatch.setenv("XDG_CACHE_HOME", str(homes["xdg"]))
    monkeypatch.setenv("HOME", str(homes["home"]))
    return homes


def contexts(doc):
    return [(s.start_char, s.end_char, s._.clin_context) for s in doc.spans[KEY]]


def test_the_pipeline_saved_by_0_1_loads_runs_and_writes_no_cache(module_server, cache_homes, fresh_warnings, tmp_path):
    module_server.reset()
    text = EXAMPLE_NOTE.read_text(encoding="utf-8")
    with pytest.warns(UserWarning, match='cache_path = "default" is deprecated and writes no cache') as caught:
        nlp = spacy.load(SAVED, config={"components.clin_llm_context.model.base_url": module_server.url})
        doc = nlp(text)
        nlp(text)
    assert len([w for w in caught if "cache_path" in str(w.message)]) == 1
    component = nlp.get_pipe("clin_llm_context")
    assert component.cache is None and component.answers.live is None
    assert component.prompt.text.startswith("Given the whole document context")  # the saved copy
    spans = list(doc.spans[KEY])
    assert spans and doc._.clin_llm_context_failures == 0
    for span in spans:
        assert span._.clin_context == answer_for("Chunk to contextualize:\n" + span.text + "\n\nProvide ONLY")
    assert module_server.calls == 2 * len(spans), "no cache: the second run asks again"
    assert not any(home.exists() for home in cache_homes.values())
    assert not [p for p in tmp_path.rglob("*") if p.suffix == ".sqlite"]
    from spacy_clinchunk.pipeline import load_pipeline

    today = load_pipeline(CONFIG_DIR / "contextual_rag.cfg", {"components.clin_llm_context.model.base_url": module_server.url})
    assert contexts(today(text)) == contexts(doc), "0.1's pipeline gives today's chunks and contexts"


def build(**config):
    nlp = spacy.blank("en")
    nlp.add_pipe("clin_llm_context", config={"model": HEURISTIC, **config})
    return nlp


def test_an_explicit_cache_path_still_caches_and_is_deprecated(module_server, tmp_path, fresh_warnings):
    module_server.reset()
    path = tmp_path / "old.sqlite"
    model = {"@misc": "spacy_clinchunk.Ollama.v1", "base_url": module_server.url}
    with pytest.warns(DeprecationWarning, match="cache_path is deprecated"):
        nlp = build(model=model, cache_path=str(path))
    nlp("Aspirin 81 mg daily.")
    nlp("Aspirin 81 mg daily.")
    assert module_server.calls == 1 and path.is_file()
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_null_cache_path_is_silent_and_cache_plus_cache_path_is_one_error(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build(cache_path=None)
    cache = {"@misc": "spacy_clinchunk.SQLiteCache.v1", "path": str(tmp_path / "c.sqlite")}
    with pytest.raises(SettingError, match="cache and the deprecated cache_path") as info:
        build(cache=cache, cache_path=str(tmp_path / "d.sqlite"))
    assert "\n" not in str(info.value)


def test_a_prompt_template_file_is_still_read_and_its_saved_copy_kept(tmp_path, fresh_warnings):
    template = tmp_path / "t.txt"
    template.write_text("Old style {document}\nChunk to contextualize:\n{chunk}\n")
    with pytest.warns(DeprecationWarning, match="prompt_template is deprecated"):
        nlp = build(prompt_template=str(template))
    assert nlp.get_pipe("clin_llm_context").prompt.text.startswith("Old style")
    nlp.to_disk(tmp_path / "pipe")
    template.unlink()  # the saved pipeline carries its copy
    assert spacy.load(tmp_path / "pipe").get_pipe("clin_llm_context").prompt.text.startswith("Old style")
    other = tmp_path / "other.txt"
    other.write_text("New file {document}\nChunk to contextualize:\n{chunk}\n")
    changed = spacy.load(tmp_path / "pipe", config={"components.clin_llm_context.prompt_template": str(other)})
    assert changed.get_pipe("clin_llm_context").prompt.text.startswith("New file")  # the config names another file
    missing = build(prompt_template=str(tmp_path / "gone.txt"))
    with pytest.raises(ValueError, match="prompt template not found"):
        missing.get_pipe("clin_llm_context").initialize()
