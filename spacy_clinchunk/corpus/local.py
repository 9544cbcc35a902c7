"""Local engine: the driver itself (one worker) or a pool of spawned worker processes.

Each process loads the pipeline once and then takes one shard at a time over its own
pipe, largest shards first. A process that dies mid-shard (killed, out of memory) is
replaced and its shard is redone, up to ``max_attempts`` times; the other workers go on.
Workers watch the driver and exit when it dies.
"""
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Sequence, Tuple

from ..pipeline import PipelineSpec, ResolvedPipeline
from .errors import CorpusError
from .output import OutputSpec
from .shards import Shard
from .worker import ShardWorker, limit_torch_threads, thread_env, watch_parent

logger = logging.getLogger("spacy_clinchunk")

OnEntry = Callable[[str, Dict[str, Any]], None]
MAX_ATTEMPTS = 2


def run_in_driver(
    resolved: ResolvedPipeline, shards: Sequence[Shard], out: OutputSpec, batch_size: int, on_entry: OnEntry
) -> Dict[str, Any]:
    """One worker: the driver's own pipeline processes every shard, no process started."""
    worker = ShardWorker(resolved.spec, out, batch_size, resolved=resolved)
    with one_torch_thread():
        for shard in shards:
            on_entry(shard.name, worker.run(shard))
    return {"startup_seconds": 0.0, "workers": {str(os.getpid()): worker.ready()}}


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """One torch thread while the driver works, like every worker; the caller's setting after."""
    if "torch" not in sys.modules:
        yield
        return
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


def worker_main(conn: Connection, spec: PipelineSpec, out: OutputSpec, batch_size: int, threads: int, parent: int) -> None:
    """Body of a spawned worker: load, say ready, then answer one shard per message.

    Ctrl-C is the driver's to handle (it stops the workers): a worker ignores SIGINT, so an
    interrupted run prints one line, not a traceback per worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked while it started (_no_sigint)
    watch_parent(parent)
    try:
        worker = ShardWorker(spec, out, batch_size, threads)
        limit_torch_threads(threads)
    except BaseException as err:  # a pipeline that loads in the driver but not here
        conn.send(("fail", f"worker could not load the pipeline: {type(err).__name__}: {err}"))
        return
    conn.send(("ready", worker.ready()))
    while True:
        try:
            shard = conn.recv()
        except EOFError:  # the driver is gone
            return
        if shard is None:
            return
        try:
            conn.send(("done", worker.run(shard)))
        except CorpusError as err:
            conn.send(("fail", str(err)))
        except Exception as err:
            conn.send(("fail", f"shard {shard.name}: {type(err).__name__}: {err}"))


@dataclass
class _Proc:
    process: Any
    conn: Connection
    shard: Optional[Shard] = None
    ready: bool = False
    closed: bool = False  # its pipe reached end of file


@contextmanager
def _environment(env: Dict[str, str]) -> Iterator[None]:
    """``env`` set while worker processes start (a spawned process copies it)."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _no_sigint() -> Iterator[None]:
    """SIGINT blocked while a worker process starts: the worker inherits the blocked signal, so a
    Ctrl-C while it imports (before :func:`worker_main` ignores SIGINT) gives no traceback
    either. Blocked, not ignored: a Ctrl-C that reaches the driver in that moment stays pending
    and interrupts the run as soon as the worker has started, instead of being lost (the run
    would then wait on its workers for good)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, saved)


class ProcessPool:
    """Spawned worker processes, one pipe each; the driver hands out shards and collects entries."""

    def __init__(self, spec: PipelineSpec, out: OutputSpec, batch_size: int, threads: int = 1) -> None:
        self.context = multiprocessing.get_context("spawn")  # fork is unsafe with threads and torch
        self.args = (spec, out, batch_size, threads)
        self.threads = threads
        self.procs: List[_Proc] = []
        self.started = time.time()
        self.ready_at: Optional[float] = None
        self.stats: Dict[str, Any] = {}

    def start_one(self) -> None:
        parent_end, child_end = self.context.Pipe()
        process = self.context.Process(
            target=worker_main, args=(child_end, *self.args, os.getpid()), name="clinchunk-worker", daemon=True
        )
        with _environment(thread_env(self.threads)), _no_sigint():
            process.start()
        child_end.close()
        self.procs.append(_Proc(process, parent_end))

    def close(self, graceful: bool = True) -> None:
        """Stop the workers: ask them to exit, or (after a failure) terminate them now."""
        for proc in self.procs:
            try:
                proc.conn.send(None)
            except OSError:
                pass
        deadline = time.time() + (10 if graceful else 0)
        for proc in self.procs:
            proc.process.join(max(0.1, deadline - time.time()))
            if proc.process.is_alive():
                proc.process.terminate()
                proc.process.join(5)
            proc.conn.close()
        self.procs = []

    def run(self, shards: Sequence[Shard], workers: int, on_entry: OnEntry) -> List[str]:
        """Process ``shards``; returns the names of shards lost after ``MAX_ATTEMPTS`` worker deaths."""
        queue: Deque[Tuple[Shard, int]] = deque((s, 1) for s in shards)
        attempts: Dict[str, int] = {}
        lost: List[str] = []
        for _ in range(min(workers, len(shards))):
            self.start_one()
        while queue or any(p.shard is not None for p in self.procs):
            for proc in self.procs:
                if proc.shard is None and queue:
                    shard, tries = queue.popleft()
                    attempts[shard.name] = tries
                    proc.shard = shard
                    try:
                        proc.conn.send(shard)
                    except OSError:  # died meanwhile: its sentinel requeues the shard
                        pass
            if not self.procs:  # cannot happen: a dead worker is replaced while work is left
                lost.extend(shard.name for shard, _ in queue)
                break
            waiting = [p.conn for p in self.procs if not p.closed] + [p.process.sentinel for p in self.procs]
            signalled = set(wait(waiting))
            for proc in list(self.procs):
                if proc.conn in signalled:
                    self._receive(proc, on_entry)
                if proc.process.sentinel in signalled:  # exited: read what it sent last, then replace it
                    while not proc.closed and proc.conn.poll():
                        self._receive(proc, on_entry)
                    self._replace_dead(proc, queue, attempts, lost)
        return lost

    def _receive(self, proc: _Proc, on_entry: OnEntry) -> None:
        try:
            kind, payload = proc.conn.recv()
        except (EOFError, OSError):
            proc.closed = True  # the worker is gone; its sentinel says so too
            return
        if kind == "ready":
            proc.ready = True
            self.stats[str(payload["pid"])] = payload
            if self.ready_at is None and all(p.ready for p in self.procs):
                self.ready_at = time.time()
        elif kind == "done":
            name, proc.shard = proc.shard.name, None
            worker = self.stats.setdefault(str(payload["worker"]["pid"]), {})
            worker["max_rss_mb"] = max(worker.get("max_rss_mb", 0.0), payload["worker"]["max_rss_mb"])
            worker["docs"] = worker.get("docs", 0) + payload["docs"] + payload["errors"]
            on_entry(name, payload)
        else:
            raise CorpusError(payload)

    def _replace_dead(self, proc: _Proc, queue, attempts: Dict[str, int], lost: List[str]) -> None:
        code = proc.process.exitcode
        self.procs.remove(proc)
        proc.conn.close()
        if not proc.ready:  # a worker that cannot start will not start on a second try either
            raise CorpusError(f"a worker process could not start (exit code {code}); its error is on stderr")
        shard = proc.shard
        if shard is not None:
            tries = attempts.get(shard.name, 1)
            if tries < MAX_ATTEMPTS:
                logger.warning("worker %s died (exit %s) in shard %s; redoing it", proc.process.pid, code, shard.name)
                queue.appendleft((shard, tries + 1))
            else:
                logger.error("shard %s lost: its worker died %d times (last exit %s)", shard.name, tries, code)
                lost.append(shard.name)
        if queue:
            self.start_one()


def run_pool(
    spec: PipelineSpec, shards: Sequence[Shard], out: OutputSpec, workers: int, batch_size: int, on_entry: OnEntry
) -> Dict[str, Any]:
    """Several workers: a spawned process pool over ``shards``; returns per-worker figures."""
    pool = ProcessPool(spec, out, batch_size)
    try:
        lost = pool.run(shards, workers, on_entry)
    except BaseException:
        pool.close(graceful=False)
        raise
    pool.close()
    startup = (pool.ready_at or time.time()) - pool.started
    stats = {"startup_seconds": round(startup, 3), "workers": pool.stats}
    if lost:
        stats["lost"] = lost
    return stats
