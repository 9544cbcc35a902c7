"""SQLite answer cache: keys, persistence, file mode, threads, and several processes."""
import os
import subprocess
import sys
import threading
import textwrap

from spacy.util import registry

from conftest import llm_config
from llm_server import FakeLLMServer
from spacy_clinchunk.llm.cache import SQLiteCache, cache_key


def test_put_get_and_persistence(tmp_path):
    path = tmp_path / "sub" / "c.sqlite"
    cache = SQLiteCache(path)
    key = cache_key("ollama:phi4", "context_v1:abc", "the note", "the chunk")
    assert cache.get(key) is None and key not in cache
    cache.put(key, {"text": "Context.", "prompt_tokens": 3}, model="ollama:phi4", template_version="context_v1:abc")
    cache.close()
    reopened = SQLiteCache(path)
    assert reopened.get(key) == {"text": "Context.", "prompt_tokens": 3}
    assert len(reopened) == 1 and list(reopened.keys()) == [key]
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    for sidecar in (str(path) + "-wal", str(path) + "-shm"):
        if os.path.exists(sidecar):
            assert oct(os.stat(sidecar).st_mode & 0o777) == "0o600"
    import sqlite3

    assert sqlite3.connect(str(path)).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_key_depends_on_every_part():
    base = ("m", "v1", "doc", "chunk")
    keys = {cache_key(*base)}
    for i in range(4):
        changed = list(base)
        changed[i] = changed[i] + "x"
        keys.add(cache_key(*changed))
    assert len(keys) == 5
    assert cache_key("a", "b", "c|d", "e") != cache_key("a", "b", "c", "d|e")


def test_registered_cache_paths_default_env_and_disabled(tmp_path, monkeypatch):
    factory = registry.misc.get("spacy_clinchunk.SQLiteCache.v1")
    monkeypatch.delenv("SPACY_CLINCHUNK_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert factory().path == tmp_path / "xdg" / "spacy_clinchunk" / "llm_context.sqlite"
    monkeypatch.setenv("SPACY_CLINCHUNK_CACHE", str(tmp_path / "mine"))  # the package's cache folder
    assert factory(path="default").path == tmp_path / "mine" / "llm_context.sqlite"
    assert factory(path=None) is None
    assert factory(path=str(tmp_path / "x.sqlite")).path == tmp_path / "x.sqlite"


def test_threads_share_one_cache(tmp_path):
    cache = SQLiteCache(tmp_path / "t.sqlite")

    def work(n):
        for i in range(40):
            cache.put(f"{n}-{i}", {"text": str(i)})
            assert cache.get(f"{n}-{i}") == {"text": str(i)}

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 240


WORKER = textwrap.dedent(
    """
    import sys
    import spacy
    nlp = spacy.blank("en")
    nlp.add_pipe("clin_llm_context", config={
        "windows": {"@misc": "spacy_clinchunk.TokenWindows.v1", "chunk_size": 30, "chunk_overlap": 5},
        "scheduler": {"@misc": "spacy_clinchunk.CallScheduler.v1", "max_concurrency": 4},
        "cache": {"@misc": "spacy_clinchunk.SQLiteCache.v1", "path": sys.argv[1]},
        "model": {"@misc": "spacy_clinchunk.Ollama.v1", "base_url": sys.argv[2], "backoff": 0.01}})
    texts = sys.stdin.read().split("\\f")
    docs = list(nlp.pipe(texts))
    print(sum(d._.clin_llm_usage["calls"] for d in docs), sum(d._.clin_llm_usage["cache_hits"] for d in docs),
          sum(d._.clin_llm_context_failures for d in docs))
    """
)


def run_workers(cache, url, batches):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(cache), url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        for _ in batches
    ]
    results = []
    for proc, texts in zip(procs, batches):
        out, err = proc.communicate("\f".join(texts), timeout=300)
        assert proc.returncode == 0, err[-2000:]
        results.append([int(x) for x in out.split()])
    return results


def test_two_processes_share_the_cache(tmp_path):
    import spacy

    from test_llm_context import make_note

    notes = [make_note(20, seed=s) for s in range(6)]
    cache = tmp_path / "shared.sqlite"
    with FakeLLMServer(latency=0.01) as server:
        # two processes write the same file at the same time (notes 2 and 3 in both)
        first = run_workers(cache, server.url, [notes[0:4], notes[2:6]])
        assert all(failures == 0 for _, _, failures in first)
        calls_first = len(server.requests)
        assert calls_first == sum(calls for calls, _, _ in first)
        # a later run (this process) over all notes: every chunk comes from the cache
        nlp = spacy.blank("en")
        nlp.add_pipe("clin_llm_context", config=llm_config(**{
            "chunk_size": 30, "chunk_overlap": 5,
            "cache": {"@misc": "spacy_clinchunk.SQLiteCache.v1", "path": str(cache)},
            "model": {"@misc": "spacy_clinchunk.Ollama.v1", "base_url": server.url}}))
        docs = list(nlp.pipe(notes))
        assert len(server.requests) == calls_first
        n_chunks = sum(len(d.spans["clin_rag_chunks"]) for d in docs)
        assert sum(d._.clin_llm_usage["cache_hits"] for d in docs) == n_chunks
        assert all(s._.clin_context for d in docs for s in d.spans["clin_rag_chunks"])
    assert oct(cache.stat().st_mode & 0o777) == "0o600"
    assert len(SQLiteCache(cache)) == n_chunks
