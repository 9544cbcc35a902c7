"""The failure table of clin_llm_context: each fault injected, what the user sees, how
long it takes, what is lost.

Every fault runs against a real loopback server (``tests/llm_server.py``): an HTTP
server that answers with errors, and a raw socket server that trickles, stalls, resets
or answers garbage. The component runs ``configs/contextual_rag.cfg`` with short
timeouts so the table takes about a minute (the settings are printed with it):
chunk_size 100, read_timeout 2 s, total_timeout 3 s, max_retries 1, backoff 0.1 s,
max_consecutive_failures 3, max_concurrency 4, over 8 notes of ~150 words.

    .venv/bin/python bench/faults.py [--notes 8]
"""
import argparse
import os
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from llm_context import CONFIG, notes  # noqa: E402
from llm_server import FakeLLMServer, SocketFaultServer, refused_url  # noqa: E402

KEY = "clin_rag_chunks"
MODEL = {"read_timeout": 2.0, "total_timeout": 3.0, "max_retries": 1, "backoff": 0.1, "max_backoff": 0.2,
         "connect_timeout": 1.0}
SETTINGS = {"chunk_size": 100, "chunk_overlap": 20, "max_consecutive_failures": 3, "max_concurrency": 4}


def build(url, cache=None):
    from spacy.util import load_config, load_model_from_config

    slot = {"chunk_size": "windows", "chunk_overlap": "windows", "max_consecutive_failures": "scheduler", "max_concurrency": "scheduler"}
    overrides = {f"components.clin_llm_context.{slot[k]}.{k}": v for k, v in SETTINGS.items()}
    overrides.update({f"components.clin_llm_context.model.{k}": v for k, v in MODEL.items()})
    overrides["components.clin_llm_context.model.base_url"] = url
    # the answer cache is off unless a run asks for one (its file holds note-derived text)
    overrides["components.clin_llm_context.cache"] = {"@misc": "spacy_clinchunk.SQLiteCache.v1", "path": str(cache)} if cache else None
    config = load_config(CONFIG, overrides=overrides, interpolate=False)
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    nlp.initialize()
    return nlp


def expected_chunks(texts):
    """Chunks the same pipeline writes when nothing fails (windows never depend on the LLM)."""
    with FakeLLMServer() as server:
        return [[(s.start_char, s.end_char) for s in d.spans[KEY]] for d in build(server.url).pipe(texts)]


def run(url, texts, expected, cache=None):
    """Run once; what the user saw, the time, and what was lost."""
    started = time.perf_counter()
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            docs = list(build(url, cache).pipe(texts))
        except Exception as err:  # a fault that escapes is a finding of the table
            docs, error = [], err
    seconds = time.perf_counter() - started
    got = [[(s.start_char, s.end_char) for s in d.spans[KEY]] for d in docs]
    lost = sum(len(e) for e in expected) - sum(len(g) for g, e in zip(got, expected) if g == e)
    with_context = sum(1 for d in docs for s in d.spans[KEY] if s._.clin_context)
    messages = [str(w.message) for w in caught]
    leaked = any(word in m for m in messages for word in ("chest pain", "Patient reports", "metformin"))
    seen = _shape(messages[0]) if messages else "nothing"
    if error is not None:
        seen = f"{type(error).__name__}: {_shape(str(error))}"
    return {"seen": seen, "warnings": len(messages), "seconds": seconds, "lost": lost,
            "context": with_context, "chunks": sum(len(e) for e in expected), "leaked": leaked, "docs": docs}


def _shape(message):
    message = re.sub(r"document [0-9a-f]{16}", "document <id>", message)
    message = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", message)
    message = re.sub(r"/tmp/\S+", "<tmp>/…", message)
    return message.replace("|", "/")[:170]


def http_fault(mode, texts, expected, **server_settings):
    with FakeLLMServer() as server:
        server.mode = mode
        for name, value in server_settings.items():
            setattr(server, name, value)
        return run(server.url, texts, expected)


def socket_fault(mode, texts, expected, interval=0.5):
    with SocketFaultServer(mode, interval=interval) as server:
        return run(server.url, texts, expected)


def dies_mid_run(texts, expected):
    """The server answers 5 calls, then fails; the rerun with the cache makes only the missing calls."""
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        cache = str(Path(tmp) / "c.sqlite")
        server.queue(*["ok"] * 5)
        server.mode = "500"
        first = run(server.url, texts, expected, cache)
        server.reset()
        second = run(server.url, texts, expected, cache)
        first["seen"] += f" — rerun: {server.calls} calls, {sum(d._.clin_llm_usage['cache_hits'] for d in second['docs'])} cache hits, all contexts"
        return first


def corrupt_cache(texts, expected):
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "c.sqlite"
        cache.write_bytes(b"not a database\n" * 100)
        result = run(server.url, texts, expected, str(cache))
        kept = [p.name for p in Path(tmp).iterdir() if ".corrupt-" in p.name]
        result["seen"] += f" (old file kept: {len(kept)})"
        return result


def unwritable_cache(texts, expected):
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        blocker = Path(tmp) / "a_file"
        blocker.write_text("x")
        return run(server.url, texts, expected, str(blocker / "cache" / "c.sqlite"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=8)
    args = parser.parse_args()
    texts = notes(args.notes, seed=3)
    expected = expected_chunks(texts)
    faults = [
        ("server trickles the body, 1 byte / 0.5 s", lambda: socket_fault("trickle", texts, expected)),
        ("server trickles the headers, 1 byte / 0.5 s", lambda: socket_fault("trickle_headers", texts, expected)),
        ("server accepts, never answers (stall)", lambda: socket_fault("stall", texts, expected)),
        ("connection reset (TCP RST)", lambda: socket_fault("reset", texts, expected)),
        ("garbage instead of HTTP", lambda: socket_fault("garbage", texts, expected)),
        ("nothing listens (refused)", lambda: run(refused_url(), texts, expected)),
        ("HTTP 500 on every call", lambda: http_fault("500", texts, expected)),
        ("HTTP 500 whose body echoes the prompt", lambda: http_fault("echo500", texts, expected)),
        ("HTTP 429, Retry-After: 1", lambda: http_fault("429", texts, expected, retry_after="1")),
        ("HTTP 404 model not pulled", lambda: http_fault("404", texts, expected)),
        ("malformed JSON (200)", lambda: http_fault("malformed", texts, expected)),
        ("empty answer", lambda: http_fault("empty", texts, expected)),
        ("server dies after 5 answers, rerun with cache", lambda: dies_mid_run(texts, expected)),
        ("cache file is not SQLite", lambda: corrupt_cache(texts, expected)),
        ("cache path under a file (cannot create)", lambda: unwritable_cache(texts, expected)),
    ]
    chunks = sum(len(e) for e in expected)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs); "
          f"{len(texts)} notes, {chunks} chunks; model {MODEL}; component {SETTINGS}\n")
    print("| fault | what the user sees (first warning; one per affected note) | warnings | time (s) "
          "| chunks with LLM context | chunks lost | note text in warnings |")
    print("|---|---|---:|---:|---:|---:|---|")
    for name, fault in faults:
        r = fault()
        print(f"| {name} | {r['seen']} | {r['warnings']} | {r['seconds']:.1f} | {r['context']}/{r['chunks']} "
              f"| {r['lost']} | {'YES' if r['leaked'] else 'no'} |")


if __name__ == "__main__":
    main()
