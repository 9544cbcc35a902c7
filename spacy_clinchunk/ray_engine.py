"""Ray Data engine of corpus runs: ``map_batches`` with one pipeline per actor.

The plan is a dataset of shard descriptions (name + input files), one block per shard. A
pool of :class:`ChunkActor` actors, each of which rebuilds the pipeline from a
:class:`~spacy_clinchunk.corpus.PipelineSpec` once, reads a shard, chunks its documents
with ``nlp.pipe`` and returns a header row (the document count) and one row per document.
The driver streams the rows back and writes each shard as soon as all its documents are
in, so shards land (and are recorded in the manifest) while the run goes on. The unit of
parallelism is the shard: split a corpus into at least as many shards as actors.

Workers read the input files and import this package themselves: on a multi-node
cluster the inputs must be on a shared filesystem and the package installed on every node.
"""
import json
import logging
import os
import socket
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from .corpus import (
    THREAD_ENV,
    CorpusError,
    CorpusOutput,
    PipelineSpec,
    Shard,
    ShardResult,
    process_items,
    read_shard,
    serialize,
)

logger = logging.getLogger("spacy_clinchunk")

DEFAULT_GCS_PORT = 6379
DEFAULT_CLIENT_PORT = 10001
COLUMNS = ("shard", "seq", "total", "id", "source", "payload", "chunks", "error", "pid", "max_rss_mb", "seconds")


def probe_address(address: str, timeout: float) -> None:
    """Fail fast (within ``timeout`` seconds) when nothing listens at a Ray address."""
    target = address[len("ray://") :] if address.startswith("ray://") else address
    host, _, port = target.rpartition(":")
    if not host:
        host, port = target, ""
    try:
        port_number = int(port) if port else (DEFAULT_CLIENT_PORT if address.startswith("ray://") else DEFAULT_GCS_PORT)
    except ValueError as err:
        raise CorpusError(f"bad Ray address '{address}': expected auto, host:port or ray://host:port") from err
    try:
        with socket.create_connection((host.strip("[]"), port_number), timeout=timeout):
            pass
    except OSError as err:
        raise CorpusError(
            f"Ray address {address} does not answer ({err.strerror or err}); "
            f"start a cluster with `ray start --head` or check the address"
        ) from err


def connect(address: Optional[str], timeout: float = 10.0) -> bool:
    """Join the Ray cluster at ``address`` or start a local one; True when we started it.

    An already initialized Ray (e.g. ``ray.init`` by the caller) is used as it is.
    """
    import ray

    if ray.is_initialized():
        return False
    options: Dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if address in (None, "", "local"):
        ray.init(**options)
        return True
    if address != "auto":
        probe_address(address, timeout)
    if address.startswith("ray://"):
        options = {"logging_level": logging.WARNING}
    try:
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as err:
        raise CorpusError(f"cannot connect to Ray at {address}: {str(err).splitlines()[0] if str(err) else err}") from err
    return True


class ChunkActor:
    """A Ray Data actor: loads the pipeline once, then reads and chunks one shard per call."""

    def __init__(self, spec: PipelineSpec, fmt: str, spans_key: str, batch_size: int, threads: int = 1) -> None:
        for name in THREAD_ENV:
            os.environ[name] = str(threads)
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        self.nlp = spec.load()
        if "torch" in sys.modules:  # only pipelines with a neural stage import torch
            import torch

            torch.set_num_threads(max(1, int(threads)))
        self.fmt = fmt
        self.spans_key = spans_key
        self.batch_size = batch_size
        self.pid = os.getpid()

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        """A batch of shard descriptions in, one row per document (plus a header per shard) out."""
        import numpy

        out: Dict[str, List[Any]] = {name: [] for name in COLUMNS}
        empty = "" if self.fmt == "jsonl" else b""
        for name, sources in zip(batch["name"], batch["sources"]):
            shard = Shard(str(name), [str(s) for s in sources])
            started = time.time()
            items = read_shard(shard)
            for item, doc, error in process_items(self.nlp, items, n_process=1, batch_size=self.batch_size):
                payload, chunks = empty, 0
                if doc is not None:
                    payload, chunks = serialize(doc, item.id, self.fmt, self.spans_key)
                    if self.fmt == "jsonl":
                        payload = json.dumps(payload, ensure_ascii=False)
                self._append(out, shard.name, item.seq, len(items), item.id, item.source, payload, chunks, error or "")
            # the header (document count, time taken) comes last; the driver waits for it
            self._append(out, shard.name, -1, len(items), "", "", empty, 0, "", time.time() - started)
        columns = {name: numpy.array(values, dtype=object) for name, values in out.items()}
        for name in ("seq", "total", "chunks", "pid"):
            columns[name] = numpy.array(out[name], dtype=numpy.int64)
        for name in ("max_rss_mb", "seconds"):
            columns[name] = numpy.array(out[name], dtype=numpy.float64)
        return columns

    def _append(self, out, shard, seq, total, doc_id, source, payload, chunks, error, seconds=0.0) -> None:
        import resource

        values = (shard, seq, total, doc_id, source, payload, chunks, error, self.pid)
        for name, value in zip(COLUMNS, values):
            out[name].append(value)
        out["max_rss_mb"].append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        out["seconds"].append(seconds)


def run_ray(
    spec: PipelineSpec,
    shards: Sequence[Shard],
    output: CorpusOutput,
    *,
    workers: int = 2,
    batch_size: int = 64,
    address: Optional[str] = None,
    cpus_per_worker: float = 1.0,
    gpus_per_worker: Optional[float] = None,
    connect_timeout: float = 10.0,
    on_written: Optional[Callable[[Dict[str, Any]], None]] = None,
) -> Dict[str, Any]:
    """Process ``shards`` on Ray Data; returns per-actor figures (pid -> peak memory, docs)."""
    try:
        import ray
    except ImportError as err:
        raise CorpusError("the Ray engine needs Ray Data: pip install 'spacy-clinchunk[ray]'") from err

    started_here = connect(address, connect_timeout)
    try:
        if gpus_per_worker is None:  # one model copy per GPU when the cluster has GPUs
            gpus_per_worker = 1.0 if ray.cluster_resources().get("GPU", 0) > 0 else 0.0
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        threads = max(1, int(cpus_per_worker))
        dataset = ray.data.from_items(
            [{"name": s.name, "sources": list(s.sources)} for s in shards], override_num_blocks=len(shards)
        )
        remote_args: Dict[str, Any] = {"num_cpus": cpus_per_worker}
        if gpus_per_worker:
            remote_args["num_gpus"] = gpus_per_worker
        dataset = dataset.map_batches(
            ChunkActor,
            fn_constructor_kwargs={
                "spec": spec,
                "fmt": output.fmt,
                "spans_key": output.spans_key,
                "batch_size": batch_size,
                "threads": threads,
            },
            compute=ray.data.ActorPoolStrategy(size=max(1, workers)),
            batch_size=1,  # one shard per call; documents go through nlp.pipe in batch_size
            batch_format="numpy",
            **remote_args,
        )
        return _collect(dataset, shards, output, on_written)
    finally:
        if started_here:
            ray.shutdown()


def _collect(dataset, shards: Sequence[Shard], output: CorpusOutput, on_written) -> Dict[str, Any]:
    pending = {s.name: ShardResult(s) for s in shards}
    stats: Dict[str, Dict[str, Any]] = {}
    try:
        for row in dataset.iter_rows():
            result = pending.get(str(row["shard"]))
            if result is None:
                continue
            seq = int(row["seq"])
            if seq < 0:
                result.total = int(row["total"])
                result.started = time.time() - float(row["seconds"])  # the shard's time in its actor
            else:
                error = str(row["error"]) or None
                result.add(seq, str(row["id"]), str(row["source"]), row["payload"], int(row["chunks"]), error)
                worker = stats.setdefault(str(int(row["pid"])), {"docs": 0, "max_rss_mb": 0.0})
                worker["docs"] += 1
                worker["max_rss_mb"] = round(max(worker["max_rss_mb"], float(row["max_rss_mb"])), 1)
            if result.complete:
                entry = output.write(result)
                del pending[result.shard.name]
                if on_written is not None:
                    on_written(entry)
    except CorpusError:
        raise
    except Exception as err:
        first = next((line for line in str(err).splitlines() if line.strip()), type(err).__name__)
        raise CorpusError(f"Ray run failed: {first}") from err
    if pending:
        raise CorpusError(f"incomplete shards after the Ray run: {', '.join(sorted(pending))}")
    return stats
