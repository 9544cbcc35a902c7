"""clin_llm_context: token windows, alignment, LLM context over real loopback HTTP,
reliability (fallback, breaker, strict), concurrency, cache, budget, serialization."""
import random
import warnings
from pathlib import Path

import pytest
import spacy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_helpers import run_cli
from conftest import CONFIG_DIR, llm_config, llm_setting
from llm_server import answer_for, refused_url
from spacy_clinchunk.components.llm_context import LLMContextError, clean_context
from spacy_clinchunk.llm.tokens import count_tokens, get_encoding

KEY = "clin_rag_chunks"
ENC = get_encoding("cl100k_base")
WORDS = (
    "patient denies chest pain fever cough dyspnea reports mild headache since yesterday "
    "blood pressure was elevated metformin aspirin lisinopril daily follow up in clinic "
    "abdomen soft nontender no edema lungs clear heart regular rate rhythm"
).split()


def make_note(sentences, seed=0):
    rng = random.Random(seed)
    parts = []
    for i in range(sentences):
        if i % 9 == 0:
            parts.append(rng.choice(["\n\nHISTORY:\n", "\n\nMEDICATIONS:\n", "\n\nASSESSMENT AND PLAN:\n"]))
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 14))]
        parts.append(" ".join(words).capitalize() + ". ")
    return "".join(parts).strip() + "\n"


@pytest.fixture
def server(module_server):
    module_server.reset()
    module_server.latency = 0.0
    module_server.jitter = 0.0
    yield module_server
    module_server.reset()


def ollama_cfg(url, **kwargs):
    return {"@misc": "spacy_clinchunk.Ollama.v1", "base_url": url, "backoff": 0.01, "max_backoff": 0.02, **kwargs}


def sqlite(path=None):
    """The one config line that turns the answer cache on (at ``path``, else the default file)."""
    return {"@misc": "spacy_clinchunk.SQLiteCache.v1", **({"path": str(path)} if path else {})}


def build(model=None, sentencizer=True, prompt=None, **config):
    nlp = spacy.blank("en")
    if sentencizer:
        nlp.add_pipe("sentencizer")
    config["model"] = model or {"@misc": "spacy_clinchunk.HeuristicContext.v1"}
    component = nlp.add_pipe("clin_llm_context", config=llm_config(**config))
    if prompt is not None:
        component.initialize(prompt=prompt)
    return nlp


def check_windows(doc, chunk_size):
    spans = list(doc.spans[KEY])
    text = doc.text
    assert [(s.start_char, s.end_char) for s in spans] == sorted((s.start_char, s.end_char) for s in spans)
    for span in spans:
        assert span.text == text[span.start_char : span.end_char]
        assert span.text == span.text.strip() and span.text
        assert span._.clin_token_count == count_tokens(span.text, ENC)
        if len(span) > 1:
            assert span._.clin_token_count <= chunk_size
    covered = set()
    for span in spans:
        covered.update(range(span.start, span.end))
    assert covered >= {t.i for t in doc if not t.is_space}, "a word fell between windows"
    for a, b in zip(spans, spans[1:]):
        assert b.start > a.start and b.end > a.end
    return spans


# -- windows ------------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(
        alphabet=st.sampled_from(list("abcdefghij klmnop.,;:\n\n  ABC123é😀-/")), min_size=0, max_size=600
    ),
    chunk_size=st.integers(min_value=12, max_value=80),
    overlap_ratio=st.floats(min_value=0.0, max_value=0.6),
    align=st.sampled_from(["tokens", "sentences"]),
)
def test_windows_keep_offsets_and_token_bounds(text, chunk_size, overlap_ratio, align):
    nlp = _hyp_nlp(chunk_size, int(chunk_size * overlap_ratio), align)
    doc = nlp(text)
    spans = check_windows(doc, chunk_size)
    if not text.strip():
        assert spans == []
    elif count_tokens(text.strip(), ENC) <= chunk_size:
        assert len(spans) == 1


_HYP = {}


def _hyp_nlp(chunk_size, overlap, align):
    if align not in _HYP:
        _HYP[align] = build(align=align)
    component = _HYP[align].get_pipe("clin_llm_context")
    component.windows.chunk_size, component.windows.chunk_overlap = chunk_size, overlap
    return _HYP[align]


def test_default_windows_are_1000_tokens_with_about_200_overlap():
    nlp = build(sentencizer=False)
    text = make_note(700, seed=1)
    doc = nlp(text)
    spans = check_windows(doc, 1000)
    assert len(spans) >= 3
    for a, b in zip(spans, spans[1:]):
        shared = count_tokens(doc.text[b.start_char : a.end_char], ENC)
        assert 180 <= shared <= 215, shared
    assert all(950 <= s._.clin_token_count <= 1000 for s in spans[:-1])


def test_short_note_is_one_chunk_with_seed_ids():
    nlp = build()
    doc = nlp.make_doc("Patient denies chest pain.")
    doc._.clin_doc_id = "note_123"
    doc = nlp(doc)
    (span,) = doc.spans[KEY]
    assert span.text == "Patient denies chest pain."
    assert span._.clin_chunk_id == "note_123_chunk_0"
    nameless, twin = nlp("Patient denies chest pain."), nlp("Patient denies chest pain.")
    assert nameless.spans[KEY][0]._.clin_chunk_id.endswith("_chunk_0")
    assert nameless.spans[KEY][0]._.clin_chunk_id == twin.spans[KEY][0]._.clin_chunk_id  # content hash


def test_empty_and_whitespace_docs():
    nlp = build()
    for text in ("", "   \n\n  "):
        doc = nlp(text)
        assert list(doc.spans[KEY]) == []
        assert doc._.clin_llm_context_failures == 0


def test_sentence_alignment_ends_windows_at_sentence_ends():
    text = make_note(120, seed=2)
    plain = check_windows(build(chunk_size=120, chunk_overlap=30, align="tokens")(text), 120)
    aligned = check_windows(build(chunk_size=120, chunk_overlap=30, align="sentences")(text), 120)

    def clean_edges(spans):
        return sum(1 for s in spans[:-1] if s.text.endswith((".", ":")))

    assert clean_edges(aligned) == len(aligned) - 1
    assert clean_edges(plain) < len(plain) - 1
    starts_clean = sum(1 for s in aligned[1:] if s.text[0].isupper())
    assert starts_clean >= 0.8 * (len(aligned) - 1)


def test_clin_chunks_alignment_uses_the_chunk_group():
    from spacy_clinchunk.pipeline import load_pipeline

    nlp = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    nlp.add_pipe(
        "clin_llm_context",
        config=llm_config(chunk_size=120, chunk_overlap=20, align="clin_chunks",
                          model={"@misc": "spacy_clinchunk.HeuristicContext.v1"}),
    )
    doc = nlp(make_note(60, seed=3))
    spans = check_windows(doc, 120)
    text = doc.text
    chunk_ends = [s.end_char for s in doc.spans["clin_chunks"]]
    chunk_starts = [s.start_char for s in doc.spans["clin_chunks"]]

    def at_chunk_end(end):  # a chunk ends here, or only its punctuation follows it
        return any(e <= end and not any(c.isalnum() for c in text[e:end]) for e in chunk_ends)

    def at_chunk_start(start):
        return any(b >= start and not any(c.isalnum() for c in text[start:b]) for b in chunk_starts)

    assert all(at_chunk_end(s.end_char) for s in spans[:-1])
    assert sum(at_chunk_start(s.start_char) for s in spans[1:]) >= 0.8 * (len(spans) - 1)


def test_overwrite_false_contextualizes_an_existing_group():
    nlp = build(overwrite=False)
    doc = nlp.make_doc("Chest pain. No fever. Aspirin daily.")
    doc.spans[KEY] = [doc.char_span(0, 11), doc.char_span(12, 21)]
    doc = nlp(doc)
    assert [s.text for s in doc.spans[KEY]] == ["Chest pain.", "No fever."]
    assert all(s._.clin_context for s in doc.spans[KEY])


# -- context over HTTP ------------------------------------------------------------------
def test_contexts_land_on_their_chunks_under_concurrency(server):
    server.latency, server.jitter = 0.01, 0.08  # answers complete out of order
    nlp = build(ollama_cfg(server.url), chunk_size=40, chunk_overlap=8, max_concurrency=8)
    texts = [make_note(30, seed=s) for s in range(4)]
    docs = list(nlp.pipe(texts, batch_size=4))
    total = 0
    for doc in docs:
        for span in doc.spans[KEY]:
            total += 1
            expected = answer_for("Chunk to contextualize:\n" + span.text + "\n\nProvide ONLY")
            assert span._.clin_context == expected
            assert span._.clin_enriched_text == f"{expected}\n\n{span.text}"
        assert doc._.clin_llm_context_failures == 0
        assert doc._.clin_llm_usage["calls"] == len(doc.spans[KEY])
    assert server.calls == total
    assert 1 < server.max_inflight <= 8


def test_prompt_puts_the_document_before_the_chunk_and_one_notes_chunks_together(server):
    nlp = build(ollama_cfg(server.url), chunk_size=40, chunk_overlap=8, max_concurrency=1, document_chars=300)
    texts = [make_note(20, seed=10), make_note(20, seed=11)]
    docs = list(nlp.pipe(texts))
    prompts = [r["body"]["messages"][0]["content"] for r in server.requests]
    first_note = len(docs[0].spans[KEY])
    assert all(texts[0][:120] in p for p in prompts[:first_note])
    assert all(texts[1][:120] in p for p in prompts[first_note:])
    for prompt in prompts:
        assert prompt.index("Document context:") < prompt.index("Chunk to contextualize:")
        assert "Document title/type: Clinical Note" in prompt
    prefixes = {p[: p.index("Chunk to contextualize:")] for p in prompts[:first_note]}
    assert len(prefixes) == 1, "one note's prompts share their prefix"
    assert {r["body"]["stream"] for r in server.requests} == {False}


def test_whole_note_when_document_chars_is_null(server):
    text = make_note(40, seed=12)
    nlp = build(ollama_cfg(server.url), chunk_size=2000, document_chars=None)
    nlp(text)
    assert text.strip() in server.requests[-1]["body"]["messages"][0]["content"]


CUSTOM = "Type {document_type}\n{document}\n---\nChunk to contextualize:\n{chunk}\n\nProvide ONLY it."


def test_prompt_given_to_initialize(server):
    nlp = build(ollama_cfg(server.url), prompt=CUSTOM, document_type="Discharge summary")
    doc = nlp("Aspirin 81 mg daily.")
    prompt = server.requests[-1]["body"]["messages"][0]["content"]
    assert prompt.startswith("Type Discharge summary\nAspirin 81 mg daily.\n---")
    assert doc.spans[KEY][0]._.clin_context == answer_for(prompt)


def test_prompt_file_from_the_initialize_block(server, tmp_path):
    from spacy.util import load_model_from_config

    template = tmp_path / "t.txt"
    template.write_text(CUSTOM)
    nlp = build(ollama_cfg(server.url), sentencizer=False)
    config = nlp.config.copy()
    config["initialize"]["components"]["clin_llm_context"] = {
        "prompt": {"@misc": "spacy_clinchunk.PromptTemplate.v1", "path": str(template)}
    }
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    nlp.initialize()
    assert nlp.get_pipe("clin_llm_context").prompt.text == CUSTOM
    nlp("Aspirin 81 mg daily.")
    assert server.requests[-1]["body"]["messages"][0]["content"].startswith("Type Clinical Note\n")


def test_a_prompt_without_a_chunk_placeholder_is_refused():
    component = build().get_pipe("clin_llm_context")
    with pytest.raises(ValueError, match="no {chunk} placeholder"):
        component.initialize(prompt="Summarize {document}.")
    with pytest.warns(UserWarning, match="before {document}"):
        component.initialize(prompt="{chunk} in {document}")


@pytest.mark.parametrize("strategy", ["truncate_middle", "head", "skip"])
def test_oversized_document_is_shrunk_to_fit_num_ctx(server, strategy):
    text = make_note(150, seed=13)
    nlp = build(
        ollama_cfg(server.url, num_ctx=700, num_predict=100),
        chunk_size=150, chunk_overlap=20, document_chars=None, oversized_document=strategy,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc = nlp(text)
    if strategy == "skip":
        assert server.requests == []
        assert doc._.clin_llm_usage["skipped"] == len(doc.spans[KEY])
        assert len([w for w in caught if "clin_llm_context" in str(w.message)]) == 1
        return
    assert len(server.requests) == len(doc.spans[KEY])
    for request in server.requests:
        prompt = request["body"]["messages"][0]["content"]
        assert count_tokens(prompt, ENC) + 32 + 100 <= 700
        assert request["body"]["options"]["num_ctx"] == 700
        assert prompt.count("Chunk to contextualize") == 1
    prompt = server.requests[0]["body"]["messages"][0]["content"]
    assert text[:60] in prompt
    tail = text.strip()[-60:]
    if strategy == "truncate_middle":
        assert "[...]" in prompt.split("Chunk to contextualize")[0]
        assert tail in prompt.split("Chunk to contextualize")[0]
    else:
        assert tail not in prompt.split("Chunk to contextualize")[0]
    assert doc._.clin_llm_context_failures == 0


# -- reliability --------------------------------------------------------------------
def test_failed_chunk_gets_empty_fallback_and_one_warning_per_document(server):
    server.mode = "500"
    nlp = build(ollama_cfg(server.url, max_retries=0), chunk_size=30, chunk_overlap=5, max_consecutive_failures=0)
    texts = [make_note(12, seed=20), make_note(12, seed=21)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs = list(nlp.pipe(texts))
    ours = [w for w in caught if "clin_llm_context" in str(w.message)]
    assert len(ours) == 2
    for doc in docs:
        n = len(doc.spans[KEY])
        assert n > 1
        assert doc._.clin_llm_context_failures == n == doc._.clin_llm_usage["failures"]
        assert all(s._.clin_context == "" and s._.clin_enriched_text == s.text for s in doc.spans[KEY])


def test_heuristic_fallback_content(server):
    server.mode = "404"
    nlp = build(ollama_cfg(server.url), fallback={"@misc": "spacy_clinchunk.HeuristicContext.v1"})
    with pytest.warns(UserWarning, match="ollama pull phi4"):
        doc = nlp("MEDICATIONS:\nAspirin 81 mg daily.")
    span = doc.spans[KEY][0]
    assert span._.clin_context.startswith("Clinical Note, section 'MEDICATIONS'")
    assert doc._.clin_llm_context_failures == 1


def test_some_failures_only_affect_their_chunks(server):
    server.queue("ok", "400")
    nlp = build(ollama_cfg(server.url), chunk_size=30, chunk_overlap=5, max_concurrency=1)
    with pytest.warns(UserWarning, match="1 of "):
        doc = nlp(make_note(6, seed=22)[:400])
    spans = list(doc.spans[KEY])
    assert len(spans) >= 3
    assert [bool(s._.clin_context) for s in spans] == [True, False] + [True] * (len(spans) - 2)
    assert doc._.clin_llm_context_failures == 1


@pytest.mark.parametrize("concurrency", [1, 4])
def test_dead_server_is_not_called_after_max_consecutive_failures(concurrency):
    nlp = build(
        ollama_cfg(refused_url(), max_retries=0),
        chunk_size=20, chunk_overlap=0, max_consecutive_failures=3, max_concurrency=concurrency,
    )
    with pytest.warns(UserWarning):
        doc = nlp(make_note(30, seed=23))
    usage = doc._.clin_llm_usage
    assert len(doc.spans[KEY]) > 10
    assert usage["failures"] == len(doc.spans[KEY])
    assert usage["calls"] <= 3 + concurrency - 1


def test_breaker_counts_consecutive_failures_only(server):
    server.queue("400", "400", "ok", "400", "400", "ok")
    nlp = build(ollama_cfg(server.url), chunk_size=20, chunk_overlap=0, max_consecutive_failures=3, max_concurrency=1)
    with pytest.warns(UserWarning):
        doc = nlp(make_note(10, seed=24))
    assert len(server.requests) == len(doc.spans[KEY])
    assert doc._.clin_llm_context_failures == 4


def test_strict_turns_failures_into_exceptions(server):
    server.mode = "400"
    nlp = build(ollama_cfg(server.url), strict=True, chunk_size=30, chunk_overlap=5, max_concurrency=4)
    with pytest.raises(LLMContextError, match="HTTP 400"):
        nlp(make_note(10, seed=25))


@pytest.mark.parametrize("mode,ok", [("empty", False), ("refusal", False), ("chatter", True)])
def test_answers_are_cleaned_and_empty_or_refused_ones_fail(server, mode, ok):
    server.mode = mode
    nlp = build(ollama_cfg(server.url))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        doc = nlp("Aspirin 81 mg daily.")
    span = doc.spans[KEY][0]
    if ok:
        assert span._.clin_context == answer_for("Chunk to contextualize:\nAspirin 81 mg daily.\n\nProvide ONLY")
        assert doc._.clin_llm_context_failures == 0
    else:
        assert span._.clin_context == "" and doc._.clin_llm_context_failures == 1


def test_clean_context_cuts_to_context_size():
    long_answer = "Context: " + " ".join(["The chunk describes cardiac medications."] * 40)
    cleaned = clean_context(long_answer, ENC, 75)
    assert 0 < count_tokens(cleaned, ENC) <= 75
    assert not cleaned.lower().startswith("context")
    assert cleaned.endswith(".")
    assert clean_context('**Context:** "Labs of day 2."', ENC, 75) == "Labs of day 2."
    assert clean_context("<think>hmm</think>\nVitals section.", ENC, 75) == "Vitals section."
    assert clean_context("As an AI, I cannot summarize medical notes.", ENC, 75) == ""
    assert clean_context("   ", ENC, 75) == ""


def test_openai_compatible_client_in_the_component(server, monkeypatch):
    monkeypatch.setenv("CLINCHUNK_KEY", "sk-component")
    model = {"@misc": "spacy_clinchunk.OpenAICompatible.v1", "base_url": server.openai_url, "api_key_env": "CLINCHUNK_KEY"}
    doc = build(model)("Aspirin 81 mg daily.")
    assert doc.spans[KEY][0]._.clin_context
    assert doc._.clin_llm_usage["prompt_tokens"] > 0 and doc._.clin_llm_usage["completion_tokens"] > 0
    assert server.requests[-1]["authorization"] == "Bearer sk-component"


# -- cache ------------------------------------------------------------------------------
def test_second_run_makes_zero_calls_and_interrupted_run_resumes(server, tmp_path):
    cache = tmp_path / "cache.sqlite"
    texts = [make_note(14, seed=s) for s in (30, 31)]
    nlp = build(ollama_cfg(server.url, max_retries=0), chunk_size=30, chunk_overlap=5, max_concurrency=1,
                cache=sqlite(cache), max_consecutive_failures=2)
    server.queue("ok", "ok", "ok")
    server.mode = "500"  # the server dies after three answers: the run is "interrupted"
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        first = list(nlp.pipe(texts))
    n_chunks = sum(len(d.spans[KEY]) for d in first)
    assert sum(d._.clin_llm_context_failures for d in first) == n_chunks - 3
    server.reset()
    resumed = list(nlp.pipe(texts))
    assert server.calls == n_chunks - 3
    assert sum(d._.clin_llm_usage["cache_hits"] for d in resumed) == 3
    server.reset()
    again = list(nlp.pipe(texts))
    assert server.requests == []
    assert sum(d._.clin_llm_usage["calls"] for d in again) == 0
    assert sum(d._.clin_llm_usage["cache_hits"] for d in again) == n_chunks
    assert [s._.clin_context for d in again for s in d.spans[KEY]] == [s._.clin_context for d in resumed for s in d.spans[KEY]]
    assert oct(cache.stat().st_mode & 0o777) == "0o600"


def test_cache_key_changes_with_model_and_template(server, tmp_path):
    cache = tmp_path / "c.sqlite"
    build(ollama_cfg(server.url), cache=sqlite(cache))("Aspirin 81 mg daily.")
    build(ollama_cfg(server.url), cache=sqlite(cache))("Aspirin 81 mg daily.")
    assert len(server.requests) == 1
    server.model = "phi4-mini"
    try:
        build(ollama_cfg(server.url, model="phi4-mini"), cache=sqlite(cache))("Aspirin 81 mg daily.")
    finally:
        server.model = "phi4"
    assert len(server.requests) == 2
    other = "{document}\nChunk to contextualize:\n{chunk}\n\nProvide ONLY:"
    build(ollama_cfg(server.url), cache=sqlite(cache), prompt=other)("Aspirin 81 mg daily.")
    assert len(server.requests) == 3


def private_files(root):
    return {path.relative_to(root): oct(path.stat().st_mode & 0o777) for path in root.rglob("*")}


def test_the_cache_is_off_by_default_and_one_line_turns_it_on(server, tmp_path, monkeypatch):
    root = tmp_path / "envcache"
    monkeypatch.setenv("SPACY_CLINCHUNK_CACHE", str(root))
    build(ollama_cfg(server.url))("Aspirin 81 mg daily.")
    assert not root.exists()
    nlp = build(ollama_cfg(server.url), cache={"@misc": "spacy_clinchunk.SQLiteCache.v1"})
    nlp("Aspirin 81 mg daily.")
    assert nlp.get_pipe("clin_llm_context").cache.path == root / "llm_context.sqlite"
    files = private_files(root)
    assert files.pop(Path("llm_context.sqlite")) == "0o600"
    assert set(files.values()) <= {"0o600"}  # the WAL side files
    assert oct(root.stat().st_mode & 0o777) == "0o700"


def test_a_cache_in_a_new_folder_is_owner_only(server, tmp_path):
    cache = tmp_path / "new" / "c.sqlite"
    build(ollama_cfg(server.url), cache=sqlite(cache))("Aspirin 81 mg daily.")
    assert oct(cache.parent.stat().st_mode & 0o777) == "0o700"
    assert set(private_files(cache.parent).values()) == {"0o600"}


# -- serialization, config, CLI ------------------------------------------------------------
def test_to_disk_and_load_give_identical_output_without_secrets(server, tmp_path, monkeypatch):
    monkeypatch.setenv("CLINCHUNK_SECRET", "sk-never-on-disk")
    template = "Custom {document_type}: {document}\nChunk to contextualize:\n{chunk}\n\nProvide ONLY:"
    model = {"@misc": "spacy_clinchunk.OpenAICompatible.v1", "base_url": server.openai_url, "api_key_env": "CLINCHUNK_SECRET"}
    nlp = build(model, chunk_size=30, chunk_overlap=5, align="sentences", prompt=template)
    text = make_note(10, seed=40)
    before = nlp(text)
    expected = [(s.start_char, s.end_char, s._.clin_context, s._.clin_chunk_id) for s in before.spans[KEY]]
    nlp.to_disk(tmp_path / "pipe")
    for path in (tmp_path / "pipe").rglob("*"):
        if path.is_file():
            assert b"sk-never-on-disk" not in path.read_bytes()
    reloaded = spacy.load(tmp_path / "pipe")  # carries the template: initialize is not called again
    after = reloaded(text)
    got = [(s.start_char, s.end_char, s._.clin_context, s._.clin_chunk_id) for s in after.spans[KEY]]
    assert got == expected
    assert reloaded.get_pipe("clin_llm_context").prompt.text == template
    component = nlp.get_pipe("clin_llm_context")
    fresh = build(model).get_pipe("clin_llm_context")
    assert fresh.prompt.text != template  # the packaged one
    fresh.from_bytes(component.to_bytes())
    assert fresh.prompt == component.prompt
    shrunk = spacy.load(tmp_path / "pipe", config={llm_setting("context_size"): 20})
    assert shrunk.get_pipe("clin_llm_context").task.context_size == 20  # a setting: from the config
    assert shrunk.get_pipe("clin_llm_context").prompt.text == template  # data: from disk


def test_contextual_rag_config_assembles_and_runs(server, tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_CLINCHUNK_CACHE", str(tmp_path / "cache"))
    from spacy_clinchunk.pipeline import load_pipeline

    nlp = load_pipeline(
        CONFIG_DIR / "contextual_rag.cfg", {"components.clin_llm_context.model.base_url": server.url}
    )
    text = make_note(300, seed=41)
    doc = nlp(text)
    spans = check_windows(doc, 1000)
    assert len(spans) >= 2
    assert all(s._.clin_context for s in spans)
    assert doc._.clin_llm_usage["calls"] == len(spans)
    assert not (tmp_path / "cache").exists(), "no cache unless chosen"


def test_cli_sums_llm_usage(server, tmp_path, monkeypatch):
    note, copy = tmp_path / "note.txt", tmp_path / "copy.txt"  # one file given twice is read once
    note.write_text(make_note(30, seed=42))
    copy.write_text(note.read_text())
    monkeypatch.setenv("SPACY_CLINCHUNK_CACHE", str(tmp_path / "cache"))
    result = run_cli(
        "chunk", note, copy, "--config", CONFIG_DIR / "contextual_rag.cfg", "--spans-key", KEY, "--format", "jsonl",
        "--components.clin_llm_context.model.base_url", server.url,
        "--" + llm_setting("chunk_size"), "100", "--" + llm_setting("chunk_overlap"), "20",
        "--components.clin_llm_context.cache", '{"@misc": "spacy_clinchunk.SQLiteCache.v1"}',
    )
    assert result.returncode == 0, result.stderr[-2000:]
    summary = [line for line in result.stderr.splitlines() if line.startswith("llm usage:")]
    assert len(summary) == 1
    fields = dict(item.split("=") for item in summary[0].split(": ", 1)[1].split())
    n_chunks = sum(len(__import__("json").loads(line)["chunks"]) for line in result.stdout.splitlines())
    assert int(fields["calls"]) + int(fields["cache_hits"]) == n_chunks
    assert int(fields["cache_hits"]) >= n_chunks // 2  # the same text twice: the second is cached
    assert int(fields["failures"]) == 0
    assert (tmp_path / "cache" / "llm_context.sqlite").is_file()


def test_multiprocess_pipe_with_heuristic_context():
    nlp = build(chunk_size=30, chunk_overlap=5)
    texts = [make_note(8, seed=s) for s in range(4)]
    single = [[(s.start_char, s.end_char, s._.clin_context) for s in d.spans[KEY]] for d in nlp.pipe(texts)]
    multi = [[(s.start_char, s.end_char, s._.clin_context) for s in d.spans[KEY]] for d in nlp.pipe(texts, n_process=2)]
    assert multi == single


@pytest.mark.parametrize("setting,value,says", [  # a part's setting: named with its slot
    ("chunk_overlap", 1000, "chunk_overlap (1000) must be less than chunk_size (1000)"),
    ("chunk_size", 0, "windows: chunk_size: ensure this value is greater than or equal to 1, got 0"),
    ("align", "paragraphs", "windows: align: unexpected value; permitted: 'tokens', 'sentences', 'clin_chunks'"),
    ("oversized_document", "truncate", "task: oversized_document: unexpected value; permitted: 'truncate_middle', 'head', 'skip'"),
    ("max_concurrency", 1.5, "scheduler: max_concurrency: value is not a valid integer, got 1.5"),
    ("document_chars", -1, "task: document_chars: ensure this value is greater than or equal to 0, got -1"),
])
def test_a_bad_setting_is_one_line_naming_it(setting, value, says):
    from spacy_clinchunk.pipeline import PipelineError, load_pipeline

    with pytest.raises(PipelineError) as info:
        load_pipeline(CONFIG_DIR / "contextual_rag.cfg", {llm_setting(setting): value})
    message = str(info.value)
    assert message.startswith("clin_llm_context") and says in message and "\n" not in message


def test_contradicting_settings_raise_setting_error():
    from spacy_clinchunk.components.settings import SettingError

    with pytest.raises(SettingError, match="chunk_overlap"):
        build(chunk_size=100, chunk_overlap=100)
    with pytest.raises(SettingError, match="model must be"):
        build(model={"@misc": "spacy_clinchunk.SQLiteCache.v1", "path": None})
