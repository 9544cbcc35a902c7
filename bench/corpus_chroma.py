"""Cost of a corpus run into Chroma against the same run to jsonl: CPU seconds per note.

    .venv/bin/python bench/corpus_chroma.py [--docs 345] [--workers 2] [--strategy default]

The corpus is the shared real notes (``../shared/data/real_notes/mtsamples_dev.jsonl``, 345
MTSamples notes, read in place; ``--docs N`` takes the first N into a temporary owner-only file).
Each setup runs ``run_corpus`` in a fresh subprocess (its own imports, model loads and worker
processes) into a temporary directory, one after the other:

* ``jsonl``: the default strategy, ``workers`` local workers, one JSON line per document;
* ``chroma``: the same, ``fmt="chroma"``: every chunk embedded with the bundled MiniLM in the
  workers and upserted into a persistent Chroma collection by the driver.

Two CPU figures per setup, per note: ``all`` is the CPU of the whole subprocess and its workers
(``getrusage`` self + children: imports, pipeline and model loads, Chroma), ``shards`` the CPU
the workers spent on their shards (the manifest's ``cpu_seconds``: reading, pipeline, records,
embedding, writing), without start-up. The load average (``uptime``) is printed beside them: on
a shared machine CPU per note rises with the load (caches, memory bus), so compare rows of one run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTES = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data") / "real_notes" / "mtsamples_dev.jsonl"

CHILD = r"""
import json, resource, sys, time
from spacy_clinchunk.corpus import run_corpus
inputs, out, fmt, workers, strategy = sys.argv[1:6]
started = time.time()
settings = {"chroma_path": out + "/chroma"} if fmt == "chroma" else {}
run = run_corpus(strategy, [inputs], out, workers=int(workers), fmt=fmt, **settings)
usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
cpu = sum(u.ru_utime + u.ru_stime for u in usage)
shards = sum(e["cpu_seconds"] for e in run.manifest["shards"].values())
print(json.dumps({"docs": run.docs, "errors": run.errors, "chunks": run.manifest["totals"]["chunks"],
                  "cpu": cpu, "shard_cpu": shards, "wall": time.time() - started}))
"""


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run_setup(inputs: Path, fmt: str, workers: int, strategy: str) -> dict:
    """One setup in a fresh subprocess; its figures."""
    with tempfile.TemporaryDirectory(prefix=f"clinchunk-bench-{fmt}-") as out:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(inputs), out, fmt, str(workers), strategy],
            capture_output=True, text=True, env=env, cwd=ROOT,
        )
        if done.returncode != 0:
            sys.exit(f"{fmt} run failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=None, help="first N notes only (default: all 345)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--strategy", default="default")
    args = parser.parse_args()
    if not NOTES.is_file():
        sys.exit(f"the shared notes are missing: {NOTES}")
    with tempfile.TemporaryDirectory(prefix="clinchunk-bench-in-") as folder:
        inputs = NOTES
        if args.docs:
            inputs = Path(folder) / "notes.jsonl"
            lines = NOTES.read_text(encoding="utf-8").splitlines(keepends=True)[: args.docs]
            fd = os.open(inputs, os.O_WRONLY | os.O_CREAT, 0o600)  # note text: owner-only
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.writelines(lines)
        print(f"load before: {uptime()}")
        rows = {fmt: run_setup(inputs, fmt, args.workers, args.strategy) for fmt in ("jsonl", "chroma")}
        print(f"load after:  {uptime()}")
    print(f"\n{args.strategy}, {args.workers} local workers, {rows['jsonl']['docs']} notes ({inputs.name})\n")
    print("| output | notes | chunks | wall s | CPU s/note (all) | CPU s/note (shards) |")
    print("|---|---:|---:|---:|---:|---:|")
    for fmt, row in rows.items():
        docs = max(1, row["docs"])
        print(f"| {fmt} | {row['docs']} | {row['chunks']} | {row['wall']:.1f} | {row['cpu'] / docs:.4f} | {row['shard_cpu'] / docs:.4f} |")
    ratio_all = rows["chroma"]["cpu"] / rows["jsonl"]["cpu"]
    ratio_shards = rows["chroma"]["shard_cpu"] / max(1e-9, rows["jsonl"]["shard_cpu"])
    print(f"\nchroma / jsonl CPU per note: {ratio_all:.2f}x (all), {ratio_shards:.2f}x (shards); target <= 1.25x")


if __name__ == "__main__":
    main()
