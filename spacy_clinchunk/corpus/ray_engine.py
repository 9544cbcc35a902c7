"""Ray engine: a pool of Ray actors, each running the same :class:`ShardWorker` as local workers.

The driver hands one shard at a time to an idle actor (largest first); the actor reads the
shard, writes its shard file and returns the manifest entry, so no ``Doc`` or record goes
through the object store. An actor that dies mid-shard is replaced and its shard redone.
On a multi-node cluster, inputs and the output directory must be on a shared filesystem
and the package installed on every node.
"""
import logging
import socket
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

from ..pipeline import PipelineSpec
from .errors import CorpusError
from .output import OutputSpec
from .shards import Shard
from .worker import ShardWorker

logger = logging.getLogger("spacy_clinchunk")

DEFAULT_GCS_PORT = 6379
DEFAULT_CLIENT_PORT = 10001
MAX_ATTEMPTS = 2


@dataclass
class RayOptions:
    """Settings of the Ray engine only."""

    address: Optional[str] = None  # auto | host:port | ray://host:port; None starts a local Ray
    cpus_per_worker: float = 1.0  # also the actor's torch thread count
    gpus_per_worker: Optional[float] = None  # None: 1 per actor when the cluster has GPUs
    connect_timeout: float = 10.0  # seconds to wait for ``address`` to answer
    logging_level: Optional[int] = None  # Ray's own log level; None leaves Ray's default (our CLI: WARNING)


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


def connect(address: Optional[str], timeout: float = 10.0, logging_level: Optional[int] = None) -> bool:
    """Join the Ray cluster at ``address`` or start a local one; True when we started it.

    An already initialized Ray (e.g. ``ray.init`` by the caller) is used as it is. Ray's log
    level is left to Ray unless ``logging_level`` is given (the application's choice).
    """
    import ray

    if ray.is_initialized():
        return False
    level: Dict[str, Any] = {} if logging_level is None else {"logging_level": logging_level}
    options: Dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, **level}
    if address in (None, "", "local"):
        ray.init(**options)
        return True
    if address != "auto":
        probe_address(address, timeout)
    if address.startswith("ray://"):
        options = level
    try:
        ray.init(address=address, **options)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as err:
        raise CorpusError(f"cannot connect to Ray at {address}: {str(err).splitlines()[0] if str(err) else err}") from err
    return True


def run_ray(
    spec: PipelineSpec,
    shards: Sequence[Shard],
    out: OutputSpec,
    workers: int,
    batch_size: int,
    options: RayOptions,
    on_entry: Callable[[str, Dict[str, Any]], None],
) -> Dict[str, Any]:
    """Process ``shards`` on ``workers`` Ray actors; returns start-up time and per-actor figures."""
    try:
        import ray
    except ImportError as err:
        raise CorpusError("the Ray engine needs Ray: pip install 'spacy-clinchunk[ray]'") from err

    began = time.time()
    started_here = connect(options.address, options.connect_timeout, options.logging_level)
    try:
        connected = time.time()
        gpus = options.gpus_per_worker
        if gpus is None:  # one model copy per GPU when the cluster has GPUs
            gpus = 1.0 if ray.cluster_resources().get("GPU", 0) > 0 else 0.0
        actor_class = ray.remote(num_cpus=options.cpus_per_worker, num_gpus=gpus or 0)(ShardWorker)
        threads = max(1, int(options.cpus_per_worker))

        def new_actor():
            return actor_class.remote(spec, out, batch_size, threads)

        pool = _ActorPool(ray, new_actor, min(workers, len(shards)))
        stats = pool.run(shards, on_entry)
        stats["connect_seconds"] = round(connected - began, 3)
        stats["startup_seconds"] = round(connected - began + pool.startup, 3)
        return stats
    finally:
        if started_here:
            ray.shutdown()


class _ActorPool:
    """Idle actors take the next shard; a dead actor is replaced and its shard redone once."""

    def __init__(self, ray, new_actor: Callable[[], Any], size: int) -> None:
        self.ray = ray
        self.new_actor = new_actor
        began = time.time()
        self.actors = [new_actor() for _ in range(size)]
        ready = self._get([a.ready.remote() for a in self.actors], "start")
        self.startup = time.time() - began
        self.workers: Dict[str, Dict[str, Any]] = {str(r["pid"]): dict(r, docs=0) for r in ready}

    def _get(self, refs, what: str):
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayTaskError as err:
            raise CorpusError(_first_line(err.cause if err.cause is not None else err)) from err
        except self.ray.exceptions.RayError as err:
            raise CorpusError(f"Ray actors failed to {what}: {_first_line(err)}") from err

    def run(self, shards: Sequence[Shard], on_entry) -> Dict[str, Any]:
        queue: Deque[Tuple[Shard, int]] = deque((s, 1) for s in shards)
        idle = list(self.actors)
        running: Dict[Any, Tuple[Any, Shard, int]] = {}
        lost: List[str] = []
        while queue or running:
            while idle and queue:
                actor, (shard, tries) = idle.pop(), queue.popleft()
                running[actor.run.remote(shard)] = (actor, shard, tries)
            done, _ = self.ray.wait(list(running), num_returns=1)
            actor, shard, tries = running.pop(done[0])
            try:
                entry = self.ray.get(done[0])
            except self.ray.exceptions.RayTaskError as err:  # raised inside run(): disk full, a bug
                cause = err.cause if err.cause is not None else err
                raise CorpusError(_first_line(cause)) from err
            except self.ray.exceptions.RayActorError:  # the actor died: replace it, redo the shard
                if tries < MAX_ATTEMPTS:
                    logger.warning("Ray actor died in shard %s; redoing it", shard.name)
                    queue.appendleft((shard, tries + 1))
                else:
                    lost.append(shard.name)
                idle.append(self.new_actor())
                continue
            worker = self.workers.setdefault(str(entry["worker"]["pid"]), {"docs": 0})
            worker["docs"] = worker.get("docs", 0) + entry["docs"] + entry["errors"]
            worker["max_rss_mb"] = max(worker.get("max_rss_mb", 0.0), entry["worker"]["max_rss_mb"])
            on_entry(shard.name, entry)
            idle.append(actor)
        stats: Dict[str, Any] = {"workers": self.workers}
        if lost:
            stats["lost"] = lost
        return stats


def _first_line(err: BaseException) -> str:
    return next((line for line in str(err).splitlines() if line.strip()), type(err).__name__)
