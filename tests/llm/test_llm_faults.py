"""Faults that used to cost time or data: trickling and broken servers, broken caches,
note text echoed into warnings. Real sockets and real SQLite files throughout."""
import logging
import os
import sqlite3
import sys
import time
import warnings

import pytest
import spacy
from spacy.util import registry

from conftest import llm_config
from llm_server import FakeLLMServer, SocketFaultServer, answer_for
from spacy_clinchunk.llm.clients import TransientLLMError

KEY = "clin_rag_chunks"
NOTE = (
    "HISTORY:\nPatient reports intermittent chest pain on exertion, relieved by rest. "
    "Denies syncope or palpitations. MEDICATIONS:\nAspirin 81 mg daily. Lisinopril 10 mg daily. "
    "PLAN:\nStress test next week; follow up in cardiology clinic."
)
PROMPT = "Document context:\nNote.\n\nChunk to contextualize:\nPatient denies chest pain today.\n\nProvide ONLY the context:"


def client(url, **kwargs):
    settings = {"base_url": url, "backoff": 0.01, "max_backoff": 0.02, **kwargs}
    return registry.misc.get("spacy_clinchunk.Ollama.v1")(**settings)


def build(url, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    model = {"@misc": "spacy_clinchunk.Ollama.v1", "base_url": url, "backoff": 0.01, "max_backoff": 0.02,
             **config.pop("model", {})}
    if "cache" in config:
        config["cache"] = {"@misc": "spacy_clinchunk.SQLiteCache.v1", "path": str(config["cache"])}
    nlp.add_pipe("clin_llm_context", config=llm_config(chunk_size=20, chunk_overlap=4, model=model, **config))
    return nlp


def contexts(docs):
    return [[(s.start_char, s.end_char, s._.clin_context) for s in doc.spans[KEY]] for doc in docs]


# -- the total deadline --------------------------------------------------------------
@pytest.mark.parametrize("mode", ["trickle", "trickle_headers"])
def test_a_trickling_answer_fails_at_the_total_deadline_and_is_retried(mode):
    with SocketFaultServer(mode, interval=0.1) as server:  # a whole answer would take ~15 s
        started = time.monotonic()
        with pytest.raises(TransientLLMError, match="total_timeout") as info:
            client(server.url, read_timeout=5.0, total_timeout=0.6, max_retries=1).complete(PROMPT)
        elapsed = time.monotonic() - started
    assert info.value.attempts == 2 and server.connections == 2
    assert 1.1 < elapsed < 4.0, elapsed


def test_the_deadline_is_long_enough_for_a_slow_honest_server():
    with FakeLLMServer(latency=0.3) as server:
        completion = client(server.url, total_timeout=2.0).complete(PROMPT)
    assert completion.text == answer_for(PROMPT) and completion.attempts == 1


@pytest.mark.parametrize("mode", ["stall", "reset", "garbage"])
def test_stall_reset_and_garbage_are_transient_failures(mode):
    with SocketFaultServer(mode) as server:
        started = time.monotonic()
        with pytest.raises(TransientLLMError) as info:
            client(server.url, read_timeout=0.5, total_timeout=0.8, max_retries=1).complete(PROMPT)
        assert time.monotonic() - started < 4.0
    assert info.value.attempts == 2


def test_trickle_opens_the_breaker_and_keeps_every_chunk():
    text = NOTE * 3
    with SocketFaultServer("trickle", interval=0.2) as server:
        nlp = build(server.url, model={"read_timeout": 5.0, "total_timeout": 0.5, "max_retries": 0},
                    max_consecutive_failures=2, max_concurrency=1,
                    fallback={"@misc": "spacy_clinchunk.HeuristicContext.v1"})
        started = time.monotonic()
        with pytest.warns(UserWarning, match="total_timeout"):
            doc = nlp(text)
        elapsed = time.monotonic() - started
    spans = list(doc.spans[KEY])
    assert len(spans) > 4
    assert server.connections == 2, "the breaker stops calling after two trickling requests"
    assert doc._.clin_llm_context_failures == len(spans)
    assert all(s._.clin_context.startswith("Clinical Note") for s in spans)  # the fallback's context
    assert elapsed < 6.0, elapsed  # a full trickled answer would take ~30 s per chunk


# -- note text stays off stderr -------------------------------------------------------
def test_an_error_body_echoing_the_note_is_logged_at_debug_only(caplog):
    with FakeLLMServer() as server:
        server.mode = "echo500"
        nlp = build(server.url, model={"max_retries": 0}, max_consecutive_failures=0)
        with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG, "spacy_clinchunk"):
            warnings.simplefilter("always")
            doc = nlp(NOTE)
    assert doc._.clin_llm_context_failures == len(doc.spans[KEY]) > 1
    messages = " ".join(str(w.message) for w in caught)
    assert "HTTP 500" in messages
    assert "chest pain" not in messages and "Aspirin" not in messages
    above_debug = [r for r in caplog.records if r.levelno > logging.DEBUG]
    assert not any("chest pain" in r.getMessage() for r in above_debug)
    assert any("cannot process" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)


# -- broken caches --------------------------------------------------------------------
def test_a_corrupt_cache_is_moved_aside_and_the_run_keeps_its_chunks(tmp_path):
    cache = tmp_path / "cache.sqlite"
    cache.write_bytes(b"this is not a SQLite database\n" * 100)
    with FakeLLMServer() as server:
        nlp = build(server.url, cache=cache)
        with pytest.warns(UserWarning, match="moved it to"):
            first = list(nlp.pipe([NOTE, NOTE + " Extra."]))
        calls = server.calls
        again = list(build(server.url, cache=cache).pipe([NOTE, NOTE + " Extra."]))
        assert server.calls == calls, "the fresh cache answers the rerun"
    assert all(s._.clin_context for doc in first for s in doc.spans[KEY])
    assert contexts(again) == contexts(first)
    aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not a SQLite database")
    with sqlite3.connect(cache) as conn:
        assert conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0] > 0
    assert oct(cache.stat().st_mode & 0o777) == "0o600"


def unusable_paths(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    paths = [("under a file", blocker / "cache" / "llm.sqlite")]
    if sys.platform.startswith("linux"):
        paths.append(("read-only filesystem", "/proc/clinchunk_cache/llm.sqlite"))
    if os.geteuid() != 0:  # root ignores folder permissions
        readonly = tmp_path / "readonly"
        readonly.mkdir()
        readonly.chmod(0o500)
        paths.append(("read-only folder", readonly / "llm.sqlite"))
    return paths


def test_an_unusable_cache_path_warns_once_and_runs_without_cache(tmp_path):
    with FakeLLMServer() as server:
        for why, path in unusable_paths(tmp_path):
            server.reset()
            nlp = build(server.url, cache=path)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                docs = list(nlp.pipe([NOTE, NOTE + " More.", NOTE + " Again."]))
            ours = [w for w in caught if "LLM cache" in str(w.message)]
            assert len(ours) == 1, (why, [str(w.message) for w in caught])
            assert "chest pain" not in str(ours[0].message)
            assert all(s._.clin_context for doc in docs for s in doc.spans[KEY]), why
            assert all(doc._.clin_llm_context_failures == 0 for doc in docs), why
    (tmp_path / "readonly").exists() and (tmp_path / "readonly").chmod(0o700)


def test_a_cache_that_breaks_mid_run_is_dropped_without_losing_chunks(tmp_path):
    cache = tmp_path / "cache.sqlite"
    with FakeLLMServer() as server:
        nlp = build(server.url, cache=cache)
        nlp(NOTE)
        component = nlp.get_pipe("clin_llm_context")
        component.cache._conn.close()  # the file's connection dies under the component
        with pytest.warns(UserWarning, match="continuing without it"):
            doc = nlp(NOTE + " New sentence here.")
    assert all(s._.clin_context for s in doc.spans[KEY])
    assert component.answers.live is None
