"""Worker code shared by every engine: load the pipeline once, then shard in, shard file out.

A worker (the driver itself, a spawned process or a Ray actor) reads its shard, runs the
pipeline, streams records into the shard's temporary file and renames it into place as
soon as the shard's last document is done. Only the small manifest entry goes back.
"""
import os
import resource
import sys
import threading
import time
from typing import Any, Dict, Optional

from ..pipeline import PipelineSpec, ResolvedPipeline, process_items, resolve_pipeline
from .output import OutputSpec, ShardFiles
from .shards import Shard, read_shard

# environment of worker processes, so that no numeric library spreads over all cores
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def thread_env(threads: int) -> Dict[str, str]:
    """Environment variables that give a new worker process ``threads`` threads per library."""
    env = {name: str(max(1, int(threads))) for name in THREAD_ENV}
    env["TOKENIZERS_PARALLELISM"] = "false"
    return env


def limit_torch_threads(threads: int) -> None:
    """One torch thread pool of ``threads`` (only pipelines with a neural stage import torch)."""
    if "torch" in sys.modules:
        import torch

        torch.set_num_threads(max(1, int(threads)))


def max_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class ShardWorker:
    """A loaded pipeline plus the output settings; :meth:`run` processes one shard."""

    def __init__(
        self, spec: Optional[PipelineSpec], out: OutputSpec, batch_size: int = 64, threads: int = 1,
        resolved: Optional[ResolvedPipeline] = None,
    ) -> None:
        started = time.time()
        if resolved is None:  # a worker of its own: the same spec through the same resolver
            for name, value in thread_env(threads).items():
                os.environ.setdefault(name, value)
            resolved = resolve_pipeline(spec)
            limit_torch_threads(threads)
        self.nlp = resolved.nlp
        self.resolved = resolved
        self.out = out
        self.batch_size = batch_size
        self.startup_seconds = round(time.time() - started, 3)

    def ready(self) -> Dict[str, Any]:
        """Start-up figures, reported once the pipeline is loaded."""
        return {"pid": os.getpid(), "startup_seconds": self.startup_seconds, "max_rss_mb": max_rss_mb()}

    def run(self, shard: Shard) -> Dict[str, Any]:
        """Process one shard into its files; the manifest entry (with who did it) comes back."""
        files = ShardFiles(self.out, shard, self.resolved)
        try:
            for item, doc, error in process_items(self.nlp, read_shard(shard), batch_size=self.batch_size):
                files.add(item.id, item.source, doc, error)
            entry = files.commit()
        except BaseException:
            files.abort()
            raise
        entry["worker"] = {"pid": os.getpid(), "max_rss_mb": max_rss_mb()}
        return entry


def watch_parent(parent_pid: int, interval: float = 0.5) -> None:
    """Exit this process as soon as its parent (the driver) is gone, even mid-shard.

    A killed driver must not leave workers spending CPU or LLM calls on a run nobody
    collects; the unfinished shard keeps only a temporary file, removed by the next run.
    """

    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(3)
            time.sleep(interval)

    threading.Thread(target=watch, name="clinchunk-parent-watch", daemon=True).start()
