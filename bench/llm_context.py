"""clin_llm_context at the speed of the server: wall time beside the ideal.

An out-of-process loopback server (``tests/llm_server.py``: fixed latency, each response
in one write, keep-alive) answers every call. ``configs/contextual_rag.cfg`` runs with
the cache off over short synthetic notes (~150 words, one call each), for each latency
and concurrency:

* ideal = ceil(calls / concurrency) x latency, what a perfect client would take;
* own CPU = this process's CPU time during the run (the server is another process);
* ratio = wall / max(ideal, own CPU); the target is <= 1.2;
* bare requests loop: the same number of calls from a plain ``requests`` thread pool, the
  floor this machine allows at that moment (it is shared: compare with its load average).

Then a warm-cache rerun (target: zero calls), the heuristic (no-LLM) path in words/s
beside the floor of the same run (tokenizer + sentencizer only), and the windowing cost
of one 10 k and one 1 M character note (linear: the same us per 1 000 characters).

    .venv/bin/python bench/llm_context.py [--notes 113] [--latencies 0.001 0.3] [--concurrency 1 8 16]
"""
import argparse
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "contextual_rag.cfg"

VOCAB = (
    "patient reports intermittent chest pain on exertion relieved by rest denies syncope palpitations fever "
    "cough dyspnea mild headache since yesterday blood pressure elevated metformin aspirin lisinopril daily "
    "follow up clinic abdomen soft nontender no edema lungs clear heart regular rate rhythm labs stable"
).split()
HEADERS = ["HISTORY OF PRESENT ILLNESS:", "MEDICATIONS:", "PHYSICAL EXAM:", "ASSESSMENT AND PLAN:"]


def notes(count: int, words: int = 150, seed: int = 0):
    """Deterministic short notes of about ``words`` words under four section headers."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        parts, n = [], 0
        for header in HEADERS:
            parts.append(f"\n\n{header}\n")
            while n < words * (HEADERS.index(header) + 1) // len(HEADERS):
                sentence = [rng.choice(VOCAB) for _ in range(rng.randint(5, 14))]
                parts.append(" ".join(sentence).capitalize() + ". ")
                n += len(sentence)
        texts.append("".join(parts).strip() + "\n")
    return texts


class ServerProcess:
    """``tests/llm_server.py`` in its own process, so its threads never share our GIL."""

    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "llm_server.py"), "--latency", str(latency)],
            stdout=subprocess.PIPE, text=True,
        )
        self.url = self.process.stdout.readline().strip()

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait(10)


def build(url=None, concurrency=4, cache=None):
    """``contextual_rag.cfg`` against ``url``, or with the heuristic context when ``url`` is None."""
    from spacy.util import load_config, load_model_from_config

    overrides = {
        "components.clin_llm_context.cache": {"@misc": "spacy_clinchunk.SQLiteCache.v1", "path": cache} if cache else None,
        "components.clin_llm_context.scheduler.max_concurrency": concurrency,
    }
    if url is not None:
        overrides["components.clin_llm_context.model.base_url"] = url
    config = load_config(CONFIG, overrides=overrides, interpolate=False)
    if url is None:
        config["components"]["clin_llm_context"]["model"] = {"@misc": "spacy_clinchunk.HeuristicContext.v1"}
    nlp = load_model_from_config(config, auto_fill=True, validate=True)
    nlp.initialize()
    return nlp


def timed_run(nlp, texts):
    wall, cpu = time.perf_counter(), time.process_time()
    docs = list(nlp.pipe(texts))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    calls = sum(d._.clin_llm_usage["calls"] for d in docs)
    hits = sum(d._.clin_llm_usage["cache_hits"] for d in docs)
    failures = sum(d._.clin_llm_context_failures for d in docs)
    return docs, calls, hits, failures, wall, cpu


def bare_calls(url, calls, concurrency):
    """The floor of the same run: a plain ``requests`` loop making the same number of calls."""
    from concurrent.futures import ThreadPoolExecutor

    import requests
    from requests.adapters import HTTPAdapter

    session = requests.Session()
    session.mount("http://", HTTPAdapter(pool_maxsize=concurrency))
    body = {"model": "phi4", "stream": False, "messages": [{"role": "user", "content": "Chunk to contextualize:\nx\n\nProvide ONLY"}]}
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda _: session.post(f"{url}/api/chat", json=body).json(), range(calls)))
    return time.perf_counter() - started


def server_table(texts, latencies, concurrencies):
    print(f"{len(texts)} notes, ~{sum(len(t.split()) for t in texts) // len(texts)} words each, "
          f"{CONFIG.name}, cache off\n")
    print("| server latency | concurrency | calls | failures | wall (s) | ideal (s) | own CPU (s) | ratio "
          "| bare requests loop, same calls (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for latency in latencies:
        with ServerProcess(latency) as server:
            build(server.url, 1)("Warm up tiktoken and the connection.")
            for concurrency in concurrencies:
                _, calls, _, failures, wall, cpu = timed_run(build(server.url, concurrency), texts)
                ideal = math.ceil(calls / concurrency) * latency
                ratio = wall / max(ideal, cpu)
                bare = bare_calls(server.url, calls, concurrency)
                print(f"| {latency * 1000:g} ms | {concurrency} | {calls} | {failures} | {wall:.2f} | {ideal:.2f} "
                      f"| {cpu:.2f} | {ratio:.2f} | {bare:.2f} |")


def cache_table(texts):
    with ServerProcess(0.001) as server, tempfile.TemporaryDirectory() as tmp:
        cache = str(Path(tmp) / "bench.sqlite")
        _, cold_calls, _, _, cold, _ = timed_run(build(server.url, 8, cache), texts)
        _, warm_calls, hits, _, warm, _ = timed_run(build(server.url, 8, cache), texts)
    print("\n| run | LLM calls | cache hits | wall (s) |")
    print("|---|---:|---:|---:|")
    print(f"| cold cache | {cold_calls} | 0 | {cold:.2f} |")
    print(f"| warm cache (rerun) | {warm_calls} | {hits} | {warm:.2f} |")


def heuristic_table(texts):
    import spacy

    words = sum(len(t.split()) for t in texts)
    floor = spacy.blank("en")
    floor.add_pipe("sentencizer")
    list(floor.pipe(texts[:5]))
    nlp = build()
    list(nlp.pipe(texts[:5]))
    rows = []
    for name, pipeline in (("tokenizer + sentencizer (floor, same run)", floor), ("contextual_rag, heuristic context", nlp)):
        wall, cpu = time.perf_counter(), time.process_time()
        list(pipeline.pipe(texts))
        rows.append((name, time.perf_counter() - wall, time.process_time() - cpu))
    print(f"\n| heuristic path, {len(texts)} notes | wall (s) | CPU (s) | words/s (wall) |")
    print("|---|---:|---:|---:|")
    for name, wall, cpu in rows:
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {words / wall:,.0f} |")
    own = (rows[1][2] - rows[0][2]) / len(texts) * 1000
    print(f"\nclin_llm_context's own CPU: {own:.2f} ms per note (the CPU difference of the two rows)")


def windowing_table():
    nlp = build()
    nlp.max_length = 3_000_000
    component = nlp.get_pipe("clin_llm_context")
    sentencizer = nlp.get_pipe("sentencizer")
    long_text = "\n\n".join(notes(8000, seed=1))
    print("\n| note length (chars) | windows | windowing (s) | us per 1 000 chars |")
    print("|---:|---:|---:|---:|")
    for size in (10_000, 100_000, 1_000_000):
        doc = sentencizer(nlp.make_doc(long_text[:size]))
        started = time.perf_counter()
        windows = component.window_ranges(doc)
        seconds = time.perf_counter() - started
        print(f"| {size:,} | {len(windows)} | {seconds:.3f} | {seconds / size * 1e9:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=113)
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.001, 0.3])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 16])
    args = parser.parse_args()
    texts = notes(args.notes)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)\n")
    server_table(texts, args.latencies, args.concurrency)
    cache_table(texts)
    heuristic_table(texts)
    windowing_table()
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
