"""LLM calls of a document stream: a bounded pool, a breaker per batch, documents out in order.

Requests run ``max_concurrency`` at a time from a pool that spans documents and
``nlp.pipe`` batches, so later notes are windowed while earlier ones wait on the server;
:func:`in_order` hands documents back in input order, with at most ``limit`` in flight.
Within a batch, identical requests are sent once, and after ``max_consecutive_failures``
failures in a row the rest of the batch makes no calls (calls in flight finish).
"""
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Tuple

from spacy.tokens import Doc, Span

USAGE_FIELDS = ("calls", "requests", "cache_hits", "prompt_tokens", "completion_tokens", "failures", "skipped", "seconds")


@dataclass
class Job:
    """One chunk's request and, once answered, its cleaned context or its error."""

    span: Span
    prompt: str
    key: Optional[str]  # cache key; None without a cache
    result: Optional[str] = None  # cleaned context
    error: Optional[str] = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    requests: int = 0
    future: Optional[Future] = None  # the call, while it runs in the pool
    source: Optional["Job"] = None  # the identical job whose answer this one shares

    def done(self) -> bool:
        job = self.source or self
        return job.future is None or job.future.done()

    def wait(self) -> None:
        """Block until answered; re-raises what a strict call raised."""
        if self.source is not None:
            self.source.wait()
            self.result, self.error = self.source.result, self.source.error
            self.cached = self.source.result is not None
        elif self.future is not None:
            self.future.result()


@dataclass
class DocWork:
    """One note in flight: its jobs, or the error its windowing raised."""

    doc: Doc
    jobs: List[Job] = field(default_factory=list)
    skipped: int = 0
    error: Optional[Exception] = None

    def ready(self) -> bool:
        return all(job.done() for job in self.jobs)

    def usage(self) -> Dict[str, Any]:
        """Wait for every job; what the note's calls cost (``failures`` is left to the caller)."""
        usage = new_usage()
        usage["skipped"] = self.skipped
        for job in self.jobs:
            job.wait()
            usage["requests"] += job.requests
            usage["prompt_tokens"] += job.prompt_tokens
            usage["completion_tokens"] += job.completion_tokens
            usage["seconds"] += job.seconds
            if job.cached:
                usage["cache_hits"] += 1
            elif job.requests:
                usage["calls"] += 1
        usage["seconds"] = round(usage["seconds"], 4)
        return usage


@dataclass
class Breaker:
    """Stops calling a dead server after ``limit`` consecutive failures (0: never)."""

    limit: int
    consecutive: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def open(self) -> bool:
        return self.limit > 0 and self.consecutive >= self.limit

    def record(self, ok: bool) -> None:
        with self.lock:
            self.consecutive = 0 if ok else self.consecutive + 1


class CallPool:
    """One ``pipe`` call's requests: the thread pool, and the current batch's breaker and de-duplication.

    ``call(job, breaker)`` runs in a pool thread and fills in the job.
    """

    def __init__(self, *, batch_size: int, workers: int, breaker_limit: int, call: Callable[[Job, Breaker], None]) -> None:
        self.batch_size = max(1, batch_size)
        self.workers = workers
        self.breaker_limit = breaker_limit
        self.call = call
        self._batch = -1
        self._breaker = Breaker(breaker_limit)
        self._unique: Dict[str, Job] = {}
        self._pool: Optional[ThreadPoolExecutor] = None

    def submit(self, job: Job, index: int) -> None:
        """Send ``job`` of document ``index``, or let it share an identical request of its batch."""
        breaker, unique = self._for_document(index)
        identity = job.key or job.prompt
        if identity in unique:  # the same chunk of the same note twice in a batch: one call
            job.source = unique[identity]
            return
        unique[identity] = job
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="clin_llm_context")
        job.future = self._pool.submit(self.call, job, breaker)

    def _for_document(self, index: int) -> Tuple[Breaker, Dict[str, Job]]:
        batch = index // self.batch_size
        if batch != self._batch:
            self._batch, self._breaker, self._unique = batch, Breaker(self.breaker_limit), {}
        return self._breaker, self._unique

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def ask(model: Any, job: Job, breaker: Breaker, clean: Callable[[str], str]) -> Optional[Any]:
    """One LLM call (in a pool thread): the cleaned answer goes to ``job.result``.

    Returns the model's ``Completion``, or None with ``job.error`` set; a failure never raises.
    """
    from .clients import LLMError

    if breaker.open:
        job.error = f"skipped: {breaker.limit} consecutive failures, server considered down for this batch"
        return None
    try:
        completion = model.complete(job.prompt)
    except LLMError as err:
        job.requests = getattr(err, "attempts", 1)
        job.error = str(err)
        breaker.record(False)
        return None
    job.requests = completion.attempts
    job.prompt_tokens = completion.prompt_tokens
    job.completion_tokens = completion.completion_tokens
    job.seconds = completion.seconds
    cleaned = clean(completion.text)
    if not cleaned:
        job.error = "empty or refused answer"
        breaker.record(False)
        return None
    breaker.record(True)
    job.result = cleaned
    return completion


def in_order(
    stream: Iterable[Doc], start: Callable[[Doc, int], DocWork], finish: Callable[[DocWork], Doc], limit: int
) -> Iterator[Doc]:
    """``finish(start(doc, i))`` for each document, in input order, at most ``limit`` in flight."""
    in_flight: Deque[DocWork] = deque()
    for index, doc in enumerate(stream):
        in_flight.append(start(doc, index))
        time.sleep(0)  # let waiting call threads take the GIL now, not after the 5 ms switch interval
        while in_flight and (len(in_flight) > limit or in_flight[0].ready()):
            yield finish(in_flight.popleft())
    while in_flight:
        yield finish(in_flight.popleft())


def new_usage() -> Dict[str, Any]:
    usage: Dict[str, Any] = {name: 0 for name in USAGE_FIELDS}
    usage["seconds"] = 0.0
    return usage


def sum_usage(usages: Iterable[Optional[Dict[str, Any]]]) -> Dict[str, Any]:
    """Add up ``Doc._.clin_llm_usage`` dictionaries (the CLI's end-of-run summary)."""
    total = new_usage()
    for usage in usages:
        for name, value in (usage or {}).items():
            if isinstance(value, (int, float)):
                total[name] = total.get(name, 0) + value
    total["seconds"] = round(total["seconds"], 3)
    return total
