"""Cost of a corpus run into Chroma against the same run to jsonl: CPU seconds per note.

    .venv/bin/python bench/corpus_chroma.py [--docs 345] [--workers 2] [--strategy default]
        [--setups jsonl,chroma,chroma-static] [--breakdown static|sentence-transformers]

The corpus is the shared real notes (``../shared/data/real_notes/mtsamples_dev.jsonl``, 345
MTSamples notes, read in place; ``--docs N`` takes the first N into a temporary owner-only file).
Each setup runs ``run_corpus`` in a fresh subprocess (its own imports, model loads and worker
processes) into a temporary directory, one after the other:

* ``jsonl``: the default strategy, ``workers`` local workers, one JSON line per document;
* ``chroma``: the same, ``fmt="chroma"``: every chunk embedded with the bundled MiniLM in the
  workers and upserted into a persistent Chroma collection by the driver;
* ``chroma-static``: the same with ``embedder="static"``: model2vec vectors distilled once from
  MiniLM (the cached distillation; run the static tests or one static run first to make it).

Two CPU figures per setup, per note: ``all`` is the CPU of the whole subprocess and its workers
(``getrusage`` self + children: imports, pipeline and model loads, Chroma), ``shards`` the CPU
the workers spent on their shards (the manifest's ``cpu_seconds``: reading, pipeline, records,
embedding, writing), without start-up; ``Chroma upserts`` the part of ``all`` the driver spent
upserting the shards' rows (the manifest's ``upsert_cpu_seconds``). The load average (``uptime``) is printed beside them: on
a shared machine CPU per note rises with the load (caches, memory bus), so compare rows of one run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
NOTES = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data") / "real_notes" / "mtsamples_dev.jsonl"

CHILD = r"""
import json, resource, sys, time
from spacy_clinchunk.corpus import run_corpus
inputs, out, fmt, workers, strategy, embedder = sys.argv[1:7]
started = time.time()
settings = {"chroma_path": out + "/chroma", "embedder": embedder} if fmt == "chroma" else {}
run = run_corpus(strategy, [inputs], out, workers=int(workers), fmt=fmt, **settings)
usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
cpu = sum(u.ru_utime + u.ru_stime for u in usage)
shards = sum(e["cpu_seconds"] for e in run.manifest["shards"].values())
upserts = sum(e.get("upsert_cpu_seconds", 0) for e in run.manifest["shards"].values())
print(json.dumps({"docs": run.docs, "errors": run.errors, "chunks": run.manifest["totals"]["chunks"],
                  "cpu": cpu, "shard_cpu": shards, "upsert_cpu": upserts, "wall": time.time() - started}))
"""


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# setup -> (format, embedder kind)
SETUPS = {"jsonl": ("jsonl", ""), "chroma": ("chroma", "sentence-transformers"), "chroma-static": ("chroma", "static")}


def run_setup(inputs: Path, setup: str, workers: int, strategy: str) -> dict:
    """One setup in a fresh subprocess; its figures."""
    fmt, embedder = SETUPS[setup]
    with tempfile.TemporaryDirectory(prefix=f"clinchunk-bench-{setup}-") as out:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(inputs), out, fmt, str(workers), strategy, embedder],
            capture_output=True, text=True, env=env, cwd=ROOT,
        )
        if done.returncode != 0:
            sys.exit(f"{setup} run failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])


def cpu_of(work: Callable[[], Any]) -> float:
    """CPU seconds of this process that ``work`` takes."""
    started = time.process_time()
    work()
    return time.process_time() - started


def write_all(writer: Any, docs: List[Tuple[str, Any]]) -> None:
    for doc_id, doc in docs:
        writer.add(doc, doc_id)
    writer.close()


def breakdown(inputs: Path, strategy: str, kind: str) -> Dict[str, float]:
    """Where a chroma run's extra CPU goes, measured apart in this one process on the same
    processed notes: the jsonl writer, the chroma writer (records, metadata, rows, embedding,
    model loaded beforehand), the embedding alone, and Chroma's upsert of the rows into a fresh
    collection by what is stored (vectors; + documents; + metadata: everything)."""
    import chromadb
    from chromadb.config import Settings

    from spacy_clinchunk.corpus.chroma import read_rows
    from spacy_clinchunk.export.vectorstores import offline_embedder
    from spacy_clinchunk.export.writers import open_writer
    from spacy_clinchunk.pipeline import InputDoc, process_items, resolve_pipeline

    resolved = resolve_pipeline(strategy)
    notes = [json.loads(line) for line in inputs.read_text(encoding="utf-8").splitlines()]
    items = (InputDoc(note["id"], note["text"], "bench") for note in notes)
    docs = [(item.id, doc) for item, doc, _ in process_items(resolved.nlp, items, batch_size=64)]
    embedder = offline_embedder(kind=kind)
    embedder.encode(["loads the model"])
    figures: Dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="clinchunk-bench-parts-") as out:
        figures["jsonl writer"] = cpu_of(lambda: write_all(open_writer("jsonl", f"{out}/a.jsonl", resolved), docs))
        chroma = open_writer("chroma", f"{out}/rows", resolved, embedder=kind)
        figures["chroma writer (all)"] = cpu_of(lambda: write_all(chroma, docs))
        ids, documents, metadatas, vectors = read_rows(Path(out) / "rows")
        figures["of which embedding"] = cpu_of(lambda: embedder.encode(list(dict.fromkeys(documents))))
        parts = {"vectors": {}, "+ documents": {"documents": documents}, "+ metadata": {"documents": documents, "metadatas": metadatas}}
        for number, (name, stored) in enumerate(parts.items()):
            client = chromadb.PersistentClient(path=f"{out}/store{number}", settings=Settings(anonymized_telemetry=False))
            collection = client.get_or_create_collection("bench", embedding_function=None)

            def upsert() -> None:
                for start in range(0, len(ids), 5000):
                    end = start + 5000
                    collection.upsert(ids=ids[start:end], embeddings=vectors[start:end],
                                      **{key: values[start:end] for key, values in stored.items()})

            figures[f"Chroma upsert: {name}"] = cpu_of(upsert)
    return {name: seconds / max(1, len(docs)) for name, seconds in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=None, help="first N notes only (default: all 345)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--strategy", default="default")
    parser.add_argument("--setups", default=",".join(SETUPS), help="comma-separated, jsonl first: " + ", ".join(SETUPS))
    parser.add_argument("--breakdown", choices=("static", "sentence-transformers"), default=None,
                        help="instead: where the CPU of a chroma run with this embedder goes, measured apart in one process")
    args = parser.parse_args()
    setups = args.setups.split(",")
    if setups[0] != "jsonl" or not set(setups) <= set(SETUPS):
        sys.exit(f"--setups: jsonl first, then any of {', '.join(SETUPS)}")
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
        if args.breakdown:
            parts = breakdown(inputs, args.strategy, args.breakdown)
            print(f"load after:  {uptime()}\n\n| {args.breakdown}: part | CPU ms/note |\n|---|---:|")
            print("\n".join(f"| {name} | {seconds * 1000:.1f} |" for name, seconds in parts.items()))
            return
        rows = {setup: run_setup(inputs, setup, args.workers, args.strategy) for setup in setups}
        print(f"load after:  {uptime()}")
    print(f"\n{args.strategy}, {args.workers} local workers, {rows['jsonl']['docs']} notes ({inputs.name})\n")
    print("| setup | notes | chunks | wall s | CPU s/note (all) | CPU s/note (shards) | of all: Chroma upserts |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for setup, row in rows.items():
        docs = max(1, row["docs"])
        print(f"| {setup} | {row['docs']} | {row['chunks']} | {row['wall']:.1f} | {row['cpu'] / docs:.4f} "
              f"| {row['shard_cpu'] / docs:.4f} | {row['upsert_cpu'] / docs:.4f} |")
    print()
    jsonl = rows["jsonl"]
    for setup in setups[1:]:
        ratio_all = rows[setup]["cpu"] / jsonl["cpu"]
        ratio_shards = rows[setup]["shard_cpu"] / max(1e-9, jsonl["shard_cpu"])
        print(f"{setup} / jsonl CPU per note: {ratio_all:.2f}x (all), {ratio_shards:.2f}x (shards); target <= 1.25x")


if __name__ == "__main__":
    main()
