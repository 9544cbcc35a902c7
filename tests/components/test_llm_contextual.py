"""Strategy ``contextual``: the flagship's clause chunks, with assertion and focus, each given
the context of its token window by ``clin_llm_context`` (``chunks_key``), over real loopback
HTTP (Ollama and OpenAI-compatible), a dead server, two processes and a saved pipeline."""
import random
import warnings

import pytest
import spacy
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import CONFIG_DIR, EXAMPLE_NOTE, llm_config
from llm_server import refused_url
from spacy_clinchunk.components.settings import SettingError
from spacy_clinchunk.export.records import chunk_records
from spacy_clinchunk.llm.windows import window_of
from spacy_clinchunk.pipeline import resolve_pipeline

WINDOWS, CHUNKS, FOCUS = "clin_rag_chunks", "clin_chunks", "clin_focus"
NOTE = EXAMPLE_NOTE.read_text(encoding="utf-8")
SMALL = {"chunk_size": 120, "chunk_overlap": 20}  # several windows on the example note
HEURISTIC = {"@misc": "spacy_clinchunk.HeuristicContext.v1"}
ANSWER = "This part of the clinical note begins with"  # how the loopback server starts every context


def model_of(api, url):
    if api == "ollama":
        return {"@misc": "spacy_clinchunk.Ollama.v1", "base_url": url, "max_retries": 1, "backoff": 0.01, "max_backoff": 0.02}
    return {"@misc": "spacy_clinchunk.OpenAICompatible.v1", "base_url": f"{url}/v1", "api_key_env": None,
            "max_retries": 1, "backoff": 0.01, "max_backoff": 0.02}


_LOADED = {}


def contextual(model, tmp_path_factory):
    """The shipped strategy with another model block (an override cannot swap a whole block),
    loaded once per model for the module."""
    from thinc.api import Config

    key = repr(sorted(model.items()))
    if key in _LOADED:
        return _LOADED[key]
    config = Config().from_disk(CONFIG_DIR / "contextual.cfg", interpolate=False)
    config["components"]["clin_llm_context"]["windows"].update(SMALL)
    config["components"]["clin_llm_context"]["model"] = model
    path = tmp_path_factory.mktemp("contextual") / "contextual.cfg"
    config.to_disk(path, interpolate=False)
    _LOADED[key] = resolve_pipeline(path)
    return _LOADED[key]


def chunk_view(doc):
    """What the assertion and focus components wrote, and what clin_llm_context added."""
    chunks = [(c.start_char, c.end_char, c._.clin_assertion, c._.clin_assertion_cues, c._.clin_focus_ids,
               c._.clin_context, c._.clin_enriched_text) for c in doc.spans[CHUNKS]]
    focus = [(f.start_char, f.end_char, f._.clin_focus_of, f._.clin_assertion) for f in doc.spans[FOCUS]]
    return chunks, focus


@pytest.fixture(scope="module")
def flagship_doc(tmp_path_factory):
    """The note through the same chain without clin_llm_context: the reference for assertion and focus."""
    nlp = contextual(HEURISTIC, tmp_path_factory).nlp
    with nlp.select_pipes(disable=["clin_llm_context"]):
        return nlp(NOTE)


# -- which window a chunk falls in -----------------------------------------------------------
def test_window_of_takes_the_largest_overlap_then_the_nearest_middle():
    windows = [(0, 10), (6, 20), (18, 30)]
    chunks = [(0, 5), (6, 8), (18, 20), (8, 19), (19, 25), (31, 40), (10, 10)]
    assert window_of(chunks, windows) == [0, 0, 2, 1, 2, None, None]
    assert window_of([(4, 6)], [(0, 10), (0, 10)]) == [0]  # the first of equals
    assert window_of([(1, 2)], []) == [None]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_window_of_agrees_with_a_scan_of_every_window(data):
    starts = sorted(set(data.draw(st.lists(st.integers(0, 200), min_size=1, max_size=12))))
    windows = [(s, s + data.draw(st.integers(1, 60))) for s in starts]
    for i in range(1, len(windows)):  # ends increase with the starts, as token_windows writes them
        windows[i] = (windows[i][0], max(windows[i][1], windows[i - 1][1] + 1))
    chunks = [(s, s + n) for s, n in data.draw(st.lists(st.tuples(st.integers(0, 260), st.integers(1, 40)), max_size=20))]

    def scan(start, end):
        keys = [(min(end, e) - max(start, s), -abs(s + e - start - end)) for s, e in windows]
        best = max(keys)
        return keys.index(best) if best[0] > 0 else None

    assert window_of(chunks, windows) == [scan(s, e) for s, e in chunks]


# -- the strategy against the loopback server --------------------------------------------------
@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_every_clause_chunk_gets_its_windows_context(api, module_server, flagship_doc, tmp_path_factory):
    module_server.reset()
    resolved = contextual(model_of(api, module_server.url), tmp_path_factory)
    assert resolved.chunks_key == CHUNKS and resolved.spans_keys == (CHUNKS, "clin_sections", FOCUS, WINDOWS)
    doc = resolved.nlp(NOTE)
    windows, chunks = list(doc.spans[WINDOWS]), list(doc.spans[CHUNKS])
    assert len(windows) >= 4 and module_server.calls == len(windows) == doc._.clin_llm_usage["calls"]
    assert all(w._.clin_context.startswith(ANSWER) for w in windows)
    homes = window_of([(c.start_char, c.end_char) for c in chunks], [(w.start_char, w.end_char) for w in windows])
    for chunk, home in zip(chunks, homes):
        window = windows[home]
        assert window.start_char <= chunk.start_char and chunk.end_char <= window.end_char  # snapped: no straddling
        assert chunk._.clin_context == window._.clin_context
        assert chunk._.clin_enriched_text == f"{window._.clin_context}\n\n{chunk.text}"
        assert chunk.text == NOTE[chunk.start_char : chunk.end_char]
    got_chunks, got_focus = chunk_view(doc)
    want_chunks, want_focus = chunk_view(flagship_doc)
    assert [c[:5] for c in got_chunks] == [c[:5] for c in want_chunks]  # assertion and focus untouched
    assert got_focus == want_focus
    assert all(c[5] is None for c in want_chunks)
    assert doc._.clin_llm_context_failures == 0
    focus = list(doc.spans[FOCUS])
    assert focus and all(f._.clin_context is None for f in flagship_doc.spans[FOCUS])
    for span in focus:  # each focus span: the context of its chunk, and its own enriched text
        parent = chunks[span._.clin_focus_of]
        assert span._.clin_context == parent._.clin_context and span._.clin_context.startswith(ANSWER)
        assert span._.clin_enriched_text == f"{parent._.clin_context}\n\n{span.text}"


def test_records_of_the_chunks_carry_assertion_focus_and_context(module_server, tmp_path_factory):
    module_server.reset()
    doc = contextual(model_of("ollama", module_server.url), tmp_path_factory).nlp(NOTE)
    records = chunk_records(doc, CHUNKS)
    assert len(records) == len(doc.spans[CHUNKS])
    for record, chunk in zip(records, doc.spans[CHUNKS]):
        assert record["context"] == chunk._.clin_context and record["context"].startswith(ANSWER)
        assert record["enriched_text"] == f"{record['context']}\n\n{record['text']}"
        assert record["assertion"] == chunk._.clin_assertion in ("affirmed", "negated", "normal", "uncertain",
                                                                 "historical", "hypothetical", "family")
        focus = [doc.spans["clin_focus"][i] for i in chunk._.clin_focus_ids]
        assert record["focus"] == [{"start": s.start_char, "end": s.end_char, "text": s.text} for s in focus]
    assert any(r["assertion"] == "negated" for r in records)


def test_focus_records_carry_their_chunks_context(module_server, tmp_path_factory):
    module_server.reset()
    doc = contextual(model_of("openai", module_server.url), tmp_path_factory).nlp(NOTE)
    chunks = {r["id"]: r for r in chunk_records(doc, CHUNKS)}
    records = chunk_records(doc, CHUNKS, index="focus")
    assert len(records) == len(doc.spans[FOCUS]) > 0
    for record in records:
        parent = chunks[record["parent_id"]]
        # cut from the ceiling's loose pieces, a focus span overlaps its chunk (most), it may reach past it
        assert parent["start"] < record["end"] and record["start"] < parent["end"]
        assert record["context"] == parent["context"] and record["context"].startswith(ANSWER)
        assert record["enriched_text"] == f"{parent['context']}\n\n{record['text']}"
        assert record["assertion"] == parent["assertion"]


def test_chunk_strategy_contextual_prints_the_clause_chunks_with_their_context(module_server):
    import json

    from cli_helpers import run_cli

    module_server.reset()
    result = run_cli("chunk", EXAMPLE_NOTE, "--strategy", "contextual", "--format", "jsonl",
                     "--components.clin_llm_context.model.base_url", module_server.url)
    assert result.returncode == 0, result.stderr[-2000:]
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    chunks = record["chunks"]  # the clause chunks (clin_chunks), not the windows
    assert len(chunks) > 3 * len(record["groups"][WINDOWS]) and module_server.calls == len(record["groups"][WINDOWS])
    assert all(c["context"].startswith(ANSWER) and c["assertion"] for c in chunks)
    assert all(c["enriched_text"] == f"{c['context']}\n\n{c['text']}" for c in chunks)


@pytest.mark.parametrize("mode", ["dead", "malformed", "refusal"])
def test_a_failing_server_gives_the_heuristic_context_and_one_warning(mode, module_server, tmp_path_factory):
    module_server.reset()
    module_server.mode = mode if mode != "dead" else "ok"
    url = refused_url() if mode == "dead" else module_server.url
    nlp = contextual(model_of("ollama", url), tmp_path_factory).nlp
    heuristic = contextual(HEURISTIC, tmp_path_factory).nlp
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            doc = nlp(NOTE)
    finally:
        module_server.reset()
    ours = [str(w.message) for w in caught if "clin_llm_context" in str(w.message)]
    assert len(ours) == 1 and "got the fallback context" in ours[0]
    assert "Jane" not in ours[0] and "Example" not in ours[0]  # no note text in the warning
    windows = list(doc.spans[WINDOWS])
    assert doc._.clin_llm_context_failures == len(windows)
    expected = heuristic(NOTE)  # the fallback is the heuristic context of each chunk's window
    assert [(c.start_char, c.end_char, c._.clin_context) for c in doc.spans[CHUNKS]] == [
        (c.start_char, c.end_char, c._.clin_context) for c in expected.spans[CHUNKS]
    ]
    assert all(c._.clin_context.startswith("Clinical Note") for c in doc.spans[CHUNKS])


def test_two_processes_and_a_saved_pipeline_give_the_same_chunks(module_server, tmp_path, tmp_path_factory):
    module_server.reset()
    nlp = contextual(model_of("ollama", module_server.url), tmp_path_factory).nlp
    rng = random.Random(7)
    lines = NOTE.splitlines()
    texts = [NOTE] + ["\n".join(rng.sample(lines, len(lines) // 2)) for _ in range(3)]
    single = [chunk_view(d) for d in nlp.pipe(texts)]
    assert all(c[5].startswith(ANSWER) for chunks, _ in single for c in chunks)
    assert [chunk_view(d) for d in nlp.pipe(texts, n_process=2)] == single
    nlp.to_disk(tmp_path / "contextual")
    reloaded = spacy.load(tmp_path / "contextual")
    assert reloaded.get_pipe("clin_llm_context").chunks_key == CHUNKS
    assert [chunk_view(d) for d in reloaded.pipe(texts)] == single


# -- the setting -----------------------------------------------------------------------------
def heuristic_pipeline(**config):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_punct_splitter")
    config = {"model": HEURISTIC, "chunk_size": 40, "chunk_overlap": 8, **config}
    nlp.add_pipe("clin_llm_context", config=llm_config(**config))
    return nlp


def test_without_chunks_key_the_clause_chunks_are_left_alone():
    doc = heuristic_pipeline()(NOTE[:1500])
    assert all(w._.clin_context for w in doc.spans[WINDOWS])
    assert len(doc.spans[CHUNKS]) and all(c._.clin_context is None for c in doc.spans[CHUNKS])


def test_chunks_key_naming_the_windows_or_a_missing_group():
    with pytest.raises(SettingError, match="chunks_key must name another group than spans_key"):
        heuristic_pipeline(chunks_key=WINDOWS)
    nlp = heuristic_pipeline(chunks_key="nowhere", align="clin_chunks")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc = nlp(NOTE[:1500])
        nlp(NOTE[:1500])
    assert sum("no 'nowhere' group (chunks_key) to annotate" in str(w.message) for w in caught) == 1
    assert all(w._.clin_context for w in doc.spans[WINDOWS])


def test_an_empty_note_has_no_windows_and_no_chunks():
    doc = heuristic_pipeline(chunks_key=CHUNKS)("  \n ")
    assert list(doc.spans[WINDOWS]) == [] and list(doc.spans.get(CHUNKS, [])) == []
