"""Benchmark of clin_llm_context against the loopback test server (300 ms per call).

Runs in one process, side by side: 40 chunks with max_concurrency 1 (the baseline,
one request at a time like the seed) and 8, then a rerun with the warm cache.

    .venv/bin/python bench/llm_context.py [--latency 0.3] [--chunks 40]
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import spacy  # noqa: E402

from llm_server import FakeLLMServer  # noqa: E402

SENTENCE = "Patient reports intermittent chest pain on exertion relieved by rest, denies syncope or palpitations. "


def notes(n_chunks: int, per_note: int = 10):
    # chunk_size 100, overlap 20: each note of ~ (per_note * 80 + 20) tokens gives per_note chunks
    return [
        f"NOTE {i}. " + "".join(f"Day {j}: {SENTENCE}" for j in range(per_note * 4 - 7))
        for i in range(max(1, n_chunks // per_note))
    ]


def build(url: str, concurrency: int, cache_path):
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "clin_llm_context",
        config={
            "chunk_size": 100,
            "chunk_overlap": 20,
            "max_concurrency": concurrency,
            "cache_path": cache_path,
            "model": {"@misc": "spacy_clinchunk.Ollama.v1", "base_url": url},
        },
    )
    return nlp


def run(nlp, texts, server):
    server.requests.clear()
    started = time.perf_counter()
    docs = list(nlp.pipe(texts, batch_size=len(texts)))
    seconds = time.perf_counter() - started
    chunks = sum(len(d.spans["clin_rag_chunks"]) for d in docs)
    hits = sum(d._.llm_usage["cache_hits"] for d in docs)
    failures = sum(d._.llm_context_failures for d in docs)
    return chunks, len(server.requests), hits, failures, seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--chunks", type=int, default=40)
    args = parser.parse_args()
    texts = notes(args.chunks)
    rows = []
    with FakeLLMServer(latency=args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        build(server.url, 1, None)("warm up tiktoken and the pipeline")
        server.requests.clear()
        rows.append(("max_concurrency=1, no cache (baseline)",) + run(build(server.url, 1, None), texts, server))
        rows.append(("max_concurrency=8, no cache",) + run(build(server.url, 8, None), texts, server))
        cache = str(Path(tmp) / "bench.sqlite")
        rows.append(("max_concurrency=8, cold cache",) + run(build(server.url, 8, cache), texts, server))
        rows.append(("rerun, warm cache",) + run(build(server.url, 8, cache), texts, server))
    print(f"clin_llm_context against the loopback server, {args.latency * 1000:.0f} ms per call\n")
    print("| run | chunks | LLM calls | cache hits | failures | wall time (s) | speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    baseline = rows[0][-1]
    for name, chunks, calls, hits, failures, seconds in rows:
        print(f"| {name} | {chunks} | {calls} | {hits} | {failures} | {seconds:.2f} | {baseline / seconds:.1f}x |")


if __name__ == "__main__":
    main()
