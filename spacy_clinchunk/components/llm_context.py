"""clin_llm_context: Contextual Retrieval for clinical notes.

The note is cut into windows of ``chunk_size`` tiktoken tokens overlapping by about
``chunk_overlap`` tokens (span group ``clin_rag_chunks``), optionally snapped to
sentence or chunk boundaries. For each window an LLM (or the heuristic builder) writes
a short context that situates it in the note; ``Span._.clin_enriched_text`` is that context,
a blank line and the window's text, ready to embed.

Windowing costs one tiktoken encode per note plus one per window (linear in the note).
Requests run ``max_concurrency`` at a time from a bounded queue that spans documents and
batches, so later notes are windowed while earlier ones wait on the server; documents
come out in input order. The document goes first in the prompt so servers reuse the
cached prefix across a note's chunks. Answers go to a persistent SQLite cache (a broken
one is dropped with a warning, never at the cost of chunks); failures get the fallback
context and are counted, never raised unless ``strict``.
"""
import hashlib
import logging
import re
import sqlite3
import threading
import time
import warnings
from bisect import bisect_left, bisect_right
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any, Deque, Dict, Iterable, Iterator, List, Optional, Tuple

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.util import ensure_path

from .. import attrs
from ..llm.cache import SQLiteCache, cache_key, resolve_cache_path
from ..spans import seed_ranges
from .base import require_extra
from .settings import check_settings

FACTORY = "clin_llm_context"
ALIGN_MODES = ("tokens", "sentences", "clin_chunks")
OVERSIZED_STRATEGIES = ("truncate_middle", "head", "skip")
DEFAULT_TEMPLATE = "context_v1.txt"
TEMPLATE_VERSION_PREFIX = "context_v1"
STATE_FILE = "llm_context.json"
PROMPT_OVERHEAD_TOKENS = 32  # chat-template tokens the server wraps around our prompt
PROMPT_SLACK_TOKENS = 8  # other chunks may tokenize a little differently against the template
MIDDLE_MARKER = "\n[...]\n"
PLACEHOLDERS = re.compile(r"\{(document_type|document|chunk|context_size)\}")
USAGE_FIELDS = ("calls", "requests", "cache_hits", "prompt_tokens", "completion_tokens", "failures", "skipped", "seconds")

logger = logging.getLogger("spacy_clinchunk")


class LLMContextError(RuntimeError):
    """A chunk got no context and ``strict = true``."""


@Language.factory(
    FACTORY,
    default_config={
        "spans_key": attrs.RAG_CHUNKS_KEY,
        "chunk_size": 1000,
        "chunk_overlap": 200,
        "encoding": "cl100k_base",
        "align": "tokens",
        "align_tolerance": 100,
        "model": {"@misc": "spacy_clinchunk.Ollama.v1"},
        "fallback": None,
        "prompt_template": None,
        "document_type": "Clinical Note",
        "document_chars": 2000,
        "oversized_document": "truncate_middle",
        "context_size": 75,
        "max_concurrency": 4,
        "max_consecutive_failures": 5,
        "strict": False,
        "cache_path": "default",
        "overwrite": True,
    },
    assigns=[
        "doc.spans",
        "span._.clin_chunk_id",
        "span._.clin_token_count",
        "span._.clin_context",
        "span._.clin_enriched_text",
        "doc._.clin_llm_usage",
        "doc._.clin_llm_context_failures",
    ],
)
def make_llm_context(
    nlp: Language,
    name: str,
    spans_key: str,
    chunk_size: int,
    chunk_overlap: int,
    encoding: str,
    align: str,
    align_tolerance: int,
    model: Any,
    fallback: Optional[Any],
    prompt_template: Optional[str],
    document_type: str,
    document_chars: Optional[int],
    oversized_document: str,
    context_size: int,
    max_concurrency: int,
    max_consecutive_failures: int,
    strict: bool,
    cache_path: Optional[str],
    overwrite: bool,
):
    check_settings(FACTORY, name, locals())
    require_extra(nlp, "llm")
    return LLMContext(
        nlp,
        name,
        spans_key=spans_key,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        encoding=encoding,
        align=align,
        align_tolerance=align_tolerance,
        model=model,
        fallback=fallback,
        prompt_template=prompt_template,
        document_type=document_type,
        document_chars=document_chars,
        oversized_document=oversized_document,
        context_size=context_size,
        max_concurrency=max_concurrency,
        max_consecutive_failures=max_consecutive_failures,
        strict=strict,
        cache_path=cache_path,
        overwrite=overwrite,
    )


@dataclass
class _Job:
    span: Span
    prompt: str
    key: Optional[str]
    result: Optional[str] = None  # cleaned context
    error: Optional[str] = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    requests: int = 0
    future: Optional[Future] = None  # the call, while it runs in the pool
    source: Optional["_Job"] = None  # the identical job whose answer this one shares

    def done(self) -> bool:
        job = self.source or self
        return job.future is None or job.future.done()

    def wait(self) -> None:
        """Block until answered; re-raises ``LLMContextError`` from a strict call."""
        if self.source is not None:
            self.source.wait()
            self.result, self.error = self.source.result, self.source.error
            self.cached = self.source.result is not None
        elif self.future is not None:
            self.future.result()


@dataclass
class _DocWork:
    """One note in flight: its jobs, or the error its windowing raised."""

    doc: Doc
    jobs: List[_Job] = field(default_factory=list)
    skipped: int = 0
    error: Optional[Exception] = None

    def ready(self) -> bool:
        return all(job.done() for job in self.jobs)


@dataclass
class _Breaker:
    """Stops calling a dead server after ``limit`` consecutive failures (for one batch)."""

    limit: int
    consecutive: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def open(self) -> bool:
        return self.limit > 0 and self.consecutive >= self.limit

    def record(self, ok: bool) -> None:
        with self.lock:
            self.consecutive = 0 if ok else self.consecutive + 1


@dataclass
class _StreamState:
    """Per-``pipe`` state: the call pool, and the current batch's breaker and de-duplication."""

    batch_size: int
    batch: int = -1
    breaker: Optional[_Breaker] = None
    unique: Dict[str, _Job] = field(default_factory=dict)
    pool: Optional[ThreadPoolExecutor] = None

    def for_document(self, index: int, limit: int) -> Tuple[_Breaker, Dict[str, _Job]]:
        batch = index // self.batch_size
        if batch != self.batch or self.breaker is None:
            self.batch, self.breaker, self.unique = batch, _Breaker(limit), {}
        return self.breaker, self.unique

    def executor(self, workers: int) -> ThreadPoolExecutor:
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="clin_llm_context")
        return self.pool

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


class LLMContext(Pipe):
    """Token windows with LLM-written context (Anthropic's Contextual Retrieval)."""

    def __init__(
        self,
        nlp: Language,
        name: str = FACTORY,
        *,
        spans_key: str = attrs.RAG_CHUNKS_KEY,
        chunk_size: int = 1000,
        chunk_overlap: int = 200,
        encoding: str = "cl100k_base",
        align: str = "tokens",
        align_tolerance: int = 100,
        model: Any = None,
        fallback: Optional[Any] = None,
        prompt_template: Optional[str] = None,
        document_type: str = "Clinical Note",
        document_chars: Optional[int] = 2000,
        oversized_document: str = "truncate_middle",
        context_size: int = 75,
        max_concurrency: int = 4,
        max_consecutive_failures: int = 5,
        strict: bool = False,
        cache_path: Optional[str] = "default",
        overwrite: bool = True,
    ) -> None:
        attrs.register_extensions()
        if chunk_size < 1:
            raise ValueError(f"{name}: chunk_size must be positive, not {chunk_size}")
        if not 0 <= chunk_overlap < chunk_size:
            raise ValueError(f"{name}: chunk_overlap must be in [0, chunk_size), not {chunk_overlap}")
        if align not in ALIGN_MODES:
            raise ValueError(f"{name}: align must be one of {ALIGN_MODES}, not {align!r}")
        if oversized_document not in OVERSIZED_STRATEGIES:
            raise ValueError(f"{name}: oversized_document must be one of {OVERSIZED_STRATEGIES}")
        if max_concurrency < 1:
            raise ValueError(f"{name}: max_concurrency must be at least 1")
        if fallback is not None and not hasattr(fallback, "describe"):
            raise ValueError(f"{name}: fallback must be a context builder such as spacy_clinchunk.HeuristicContext.v1")
        if model is None or not (hasattr(model, "complete") or hasattr(model, "describe")):
            raise ValueError(f"{name}: model must be an LLM client or spacy_clinchunk.HeuristicContext.v1")
        self.name = name
        self.spans_key = spans_key
        self.chunk_size = int(chunk_size)
        self.chunk_overlap = int(chunk_overlap)
        self.encoding_name = encoding
        self.align = align
        self.align_tolerance = max(0, int(align_tolerance))
        self.model = model
        self.fallback = fallback
        self.document_type = document_type
        self.document_chars = document_chars or None
        self.oversized_document = oversized_document
        self.context_size = int(context_size)
        self.max_concurrency = int(max_concurrency)
        self.max_consecutive_failures = int(max_consecutive_failures)
        self.strict = bool(strict)
        self.overwrite = bool(overwrite)
        self.cache_path = cache_path
        self._cache: Optional[SQLiteCache] = None
        self._cache_resolved = False
        self._template_source = prompt_template
        self.template: Optional[str] = None
        self._template_error: Optional[str] = None
        self._load_template(prompt_template)

    # -- prompt template ----------------------------------------------------
    def _load_template(self, source: Optional[str]) -> None:
        if source is None:
            text = importlib_resources.files("spacy_clinchunk.resources").joinpath("prompts").joinpath(
                DEFAULT_TEMPLATE
            ).read_text(encoding="utf-8")
        else:
            path = Path(source).expanduser()
            if not path.is_file():  # a saved pipeline restores its copy in from_disk
                self._template_error = f"{self.name}: prompt template not found: {source}"
                return
            text = path.read_text(encoding="utf-8")
        self.set_template(text)

    def set_template(self, text: str) -> None:
        if "{chunk}" not in text:
            raise ValueError(f"{self.name}: the prompt template has no {{chunk}} placeholder")
        if "{document}" in text and text.index("{document}") > text.index("{chunk}"):
            warnings.warn(
                f"{self.name}: the prompt template puts {{chunk}} before {{document}}; servers cannot reuse "
                "the note's cached prefix across its chunks",
                UserWarning,
            )
        self.template = text
        self._template_error = None

    @property
    def template_version(self) -> str:
        if self.template is None:
            raise ValueError(self._template_error or f"{self.name}: no prompt template")
        digest = hashlib.sha256(self.template.encode("utf-8")).hexdigest()[:12]
        return f"{TEMPLATE_VERSION_PREFIX}:{digest}"

    def render(self, document: str, chunk: str) -> str:
        values = {
            "document_type": self.document_type,
            "document": document,
            "chunk": chunk,
            "context_size": str(self.context_size),
        }
        return PLACEHOLDERS.sub(lambda m: values[m.group(1)], self.template or "")

    # -- lazily loaded helpers ---------------------------------------------
    @property
    def encoding(self) -> Any:
        from ..llm.tokens import get_encoding

        return get_encoding(self.encoding_name)

    @property
    def cache(self) -> Optional[SQLiteCache]:
        """The answer cache, opened on first use; ``None`` when off or unusable (warned once)."""
        if not self._cache_resolved:
            self._cache_resolved = True
            path = resolve_cache_path(self.cache_path)
            self._cache = SQLiteCache(path) if path is not None else None
            if self._cache is not None:
                try:
                    self._cache.open()
                except (sqlite3.Error, OSError) as err:
                    self._drop_cache(err)
        return self._cache

    @property
    def uses_llm(self) -> bool:
        return hasattr(self.model, "complete")

    # -- windows ------------------------------------------------------------
    def window_ranges(self, doc: Doc) -> List[Tuple[int, int]]:
        """Token windows as ``(first_token, end_token)`` spaCy token indices."""
        return [(start, end) for start, end, _ in self._windows(doc, doc.text)]

    def _windows(self, doc: Doc, text: str) -> List[Tuple[int, int, int]]:
        """Windows with their tiktoken counts, in time linear in the note.

        The note is encoded once; windows are fitted by bisect over the tokens' character
        extents, and only the chosen window is re-encoded to verify it (an estimate can be
        a token or two short of a fresh encode).
        """
        from spacy.attrs import IDX, IS_SPACE, LENGTH

        from ..llm.tokens import TokenOffsets, count_tokens

        if not len(doc):
            return []
        table = doc.to_array([IDX, LENGTH, IS_SPACE])
        kept = table[table[:, 2] == 0]
        if not len(kept):
            return []
        words = (table[:, 2] == 0).nonzero()[0].tolist()
        starts = kept[:, 0].tolist()
        ends = (kept[:, 0] + kept[:, 1]).tolist()
        encoding = self.encoding
        tokens = encoding.encode_ordinary(text[starts[0] : ends[-1]])
        if len(tokens) <= self.chunk_size:  # most notes: one window, one encode
            return [(words[0], words[-1] + 1, len(tokens))]
        offsets = TokenOffsets(text[starts[0] : ends[-1]], encoding, tokens, offset=starts[0])
        boundaries = self._boundaries(doc, starts, ends)
        n = len(words)
        size, overlap = self.chunk_size, self.chunk_overlap
        tolerance = min(self.align_tolerance, size // 4)
        windows: List[Tuple[int, int, int]] = []
        s = 0
        while True:
            first_char = starts[s]
            budget = size
            for _ in range(8):
                e = self._fit(offsets, starts, ends, s, n, budget)
                if e < n and boundaries:
                    b = boundaries[bisect_right(boundaries, e) - 1] if bisect_right(boundaries, e) else 0
                    if b > s and offsets.count(ends[b - 1], ends[e - 1]) <= tolerance:
                        e = b
                tokens = count_tokens(text[first_char : ends[e - 1]], encoding)
                if tokens <= size or e == s + 1:
                    break
                budget -= tokens - size
            while e > s + 1 and tokens > size:
                e -= 1
                tokens = count_tokens(text[first_char : ends[e - 1]], encoding)
            windows.append((words[s], words[e - 1] + 1, tokens))
            if e >= n:
                return windows
            last_char = ends[e - 1]
            t = self._overlap_start(offsets, starts, s, e, last_char, overlap)
            if boundaries:
                t = self._snap_start(offsets, starts, boundaries, s, e, t, tolerance)
            s = max(t, s + 1)

    @staticmethod
    def _fit(offsets: Any, starts: List[int], ends: List[int], s: int, n: int, size: int) -> int:
        """The largest ``e`` with words ``[s, e)`` within ``size`` tokens (at least ``s + 1``)."""
        lo, hi = s + 1, n
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if offsets.count(starts[s], ends[mid - 1]) <= size:
                lo = mid
            else:
                hi = mid - 1
        return lo

    @staticmethod
    def _overlap_start(offsets: Any, starts: List[int], s: int, e: int, last_char: int, overlap: int) -> int:
        """The smallest word index in ``(s, e]`` whose suffix of the window has at most ``overlap`` tokens."""
        lo, hi = s + 1, e
        while lo < hi:
            mid = (lo + hi) // 2
            if offsets.count(starts[mid], last_char) <= overlap:
                hi = mid
            else:
                lo = mid + 1
        return lo

    @staticmethod
    def _snap_start(
        offsets: Any, starts: List[int], boundaries: List[int], s: int, e: int, t: int, tolerance: int
    ) -> int:
        """The boundary in ``(s, e]`` nearest to word ``t`` within ``tolerance`` tokens, else ``t``."""
        best, best_distance = t, None
        i = bisect_left(boundaries, t)
        for b in boundaries[max(0, i - 1) : i + 1]:
            if not s < b <= e:
                continue
            low, high = (b, t) if b < t else (t, b)
            distance = offsets.count(starts[low], starts[high]) if high < len(starts) and low != high else 0
            if distance <= tolerance and (best_distance is None or distance < best_distance):
                best, best_distance = b, distance
        return best

    def _boundaries(self, doc: Doc, starts: List[int], ends: List[int]) -> List[int]:
        """Word indices ``i`` where a unit begins (a boundary between word ``i-1`` and ``i``)."""
        if self.align == "tokens":
            return []
        if self.align == "clin_chunks" and attrs.CHUNKS_KEY in doc.spans:
            units = [(span.start_char, span.end_char) for span in doc.spans[attrs.CHUNKS_KEY]]
        else:
            if self.align == "clin_chunks":
                _warn_once(f"{self.name}: align='clin_chunks' but no '{attrs.CHUNKS_KEY}' group; using sentences")
            units = seed_ranges(doc)
        found = set()
        for start, end in units:
            found.add(bisect_left(starts, start))
            found.add(bisect_right(ends, end))
        return sorted(b for b in found if 0 < b < len(starts))

    def make_chunks(self, doc: Doc, text: Optional[str] = None) -> List[Span]:
        """Write the window group and the chunk attributes (no context yet)."""
        counts: List[int] = []
        if not self.overwrite and self.spans_key in doc.spans:
            spans = list(doc.spans[self.spans_key])
        else:
            text = doc.text if text is None else text
            windows = self._windows(doc, text)
            doc.spans[self.spans_key] = [Span(doc, start, end) for start, end, _ in windows]
            spans = list(doc.spans[self.spans_key])
            counts = [tokens for _, _, tokens in windows]
        from ..llm.tokens import count_tokens

        doc_id = doc._.clin_doc_id or _content_id(doc.text if text is None else text)
        for index, span in enumerate(spans):
            span._.clin_chunk_id = f"{doc_id}_chunk_{index}"
            span._.clin_token_count = counts[index] if counts else count_tokens(span.text, self.encoding)
            span._.clin_context = ""
            span._.clin_enriched_text = span.text
        return spans

    # -- document part of the prompt --------------------------------------
    def document_part(self, text: str, longest_chunk: str) -> Optional[str]:
        """The note as it goes into every prompt of its chunks; ``None`` means skip (too long).

        The prompt of the longest chunk must fit ``num_ctx`` minus the output budget and
        the server's chat-template overhead, counted with tiktoken on our side.
        """
        from ..llm.tokens import TokenOffsets, count_tokens

        document = _head_chars(text, self.document_chars) if self.document_chars else text
        window = getattr(self.model, "context_window", None)
        if not window:
            return document
        limit = window - getattr(self.model, "max_output_tokens", 0) - PROMPT_OVERHEAD_TOKENS - PROMPT_SLACK_TOKENS

        def fits(candidate: str) -> bool:
            return count_tokens(self.render(candidate, longest_chunk), self.encoding) <= limit

        if fits(document):
            return document
        budget = limit - count_tokens(self.render("", longest_chunk), self.encoding)
        if self.oversized_document == "skip" or budget <= len(MIDDLE_MARKER):
            return None
        offsets = TokenOffsets(document, self.encoding)
        target = budget
        for _ in range(20):
            if self.oversized_document == "head":
                cut = document[: offsets.char_after_tokens(0, target)].rstrip()
            else:
                head = (target - 4) // 2
                tail = target - 4 - head
                cut = (
                    document[: offsets.char_after_tokens(0, head)].rstrip()
                    + MIDDLE_MARKER
                    + document[offsets.char_before_tokens(len(document), tail) :].lstrip()
                )
            if fits(cut):
                return cut
            target = int(target * 0.95)
        return None

    # -- spaCy API --------------------------------------------------------------
    def __call__(self, doc: Doc) -> Doc:
        return next(iter(self.pipe([doc], batch_size=1)))

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 64) -> Iterator[Doc]:
        """Contextualize ``stream`` in order, windowing later notes while earlier ones wait on the LLM.

        Calls run ``max_concurrency`` at a time across documents and batches; at most
        ``max(batch_size, 2 * max_concurrency)`` documents are in flight.
        """
        limit = max(1, batch_size, 2 * self.max_concurrency)
        state = _StreamState(batch_size=max(1, batch_size))
        in_flight: Deque[_DocWork] = deque()
        try:
            for index, doc in enumerate(stream):
                in_flight.append(self._start(doc, index, state))
                time.sleep(0)  # let waiting call threads take the GIL now, not after the 5 ms switch interval
                while in_flight and (len(in_flight) > limit or in_flight[0].ready()):
                    yield self._finish(in_flight.popleft())
            while in_flight:
                yield self._finish(in_flight.popleft())
        finally:
            state.close()

    def _start(self, doc: Doc, index: int, state: "_StreamState") -> "_DocWork":
        """Window one note, answer what the cache knows and hand the rest to the call pool."""
        work = _DocWork(doc)
        try:
            if self.template is None:
                raise ValueError(self._template_error or f"{self.name}: no prompt template")
            text = doc.text
            spans = self.make_chunks(doc, text)
            if not spans:
                return work
            if not self.uses_llm:
                for i, span in enumerate(spans):
                    _set_context(span, self.model.describe(text, span.start_char, span.end_char, self.document_type, i, len(spans)))
                return work
            document = self.document_part(text, max(spans, key=lambda span: span._.clin_token_count).text)
            if document is None:
                work.skipped = len(spans)
                return work
            breaker, unique = state.for_document(index, self.max_consecutive_failures)
            for span in spans:
                work.jobs.append(self._job(span, text, document, breaker, unique, state))
        except LLMContextError:
            raise
        except Exception as err:  # routed like spaCy's own pipes
            work.jobs, work.error = [], err
        return work

    def _job(self, span: Span, text: str, document: str, breaker: "_Breaker", unique: Dict[str, "_Job"], state: "_StreamState") -> "_Job":
        chunk = text[span.start_char : span.end_char]  # == span.text, without a walk over its tokens
        prompt = self.render(document, chunk)
        key = cache_key(self.model.identity, self.template_version, document, chunk) if self.cache is not None else None
        job = _Job(span, prompt, key)
        hit = self._cache_get(key)
        cleaned = clean_context(hit["text"], self.encoding, self.context_size) if hit else ""
        if cleaned:
            job.result, job.cached = cleaned, True
            return job
        identity = key or prompt
        if identity in unique:  # the same chunk of the same note twice in a batch: one call
            job.source = unique[identity]
            return job
        unique[identity] = job
        if hasattr(self.model, "set_pool_size"):
            self.model.set_pool_size(self.max_concurrency)
        job.future = state.executor(self.max_concurrency).submit(self._call, job, breaker)
        return job

    def _finish(self, work: "_DocWork") -> Doc:
        doc = work.doc
        try:
            if work.error is not None:
                raise work.error
            self._collect(work)
        except LLMContextError:
            raise
        except Exception as err:
            self.get_error_handler()(self.name, self, [doc], err)
        return doc

    def _collect(self, work: "_DocWork") -> None:
        """Wait for one note's calls and write its contexts, fallbacks, usage and warning."""
        doc, usage = work.doc, _new_usage()
        usage["skipped"] = work.skipped
        failed: List[_Job] = []
        for job in work.jobs:
            job.wait()
            usage["requests"] += job.requests
            usage["prompt_tokens"] += job.prompt_tokens
            usage["completion_tokens"] += job.completion_tokens
            usage["seconds"] += job.seconds
            if job.cached:
                usage["cache_hits"] += 1
            elif job.requests:
                usage["calls"] += 1
            if job.result:
                _set_context(job.span, job.result)
            else:
                failed.append(job)
        if not self.uses_llm:
            doc._.clin_llm_usage, doc._.clin_llm_context_failures = usage, 0
            return
        spans = list(doc.spans[self.spans_key]) if self.spans_key in doc.spans else []
        failed_offsets = {(job.span.start_char, job.span.end_char) for job in failed}
        text = doc.text
        for index, span in enumerate(spans):
            if usage["skipped"] or (span.start_char, span.end_char) in failed_offsets:
                _set_context(span, self._fallback(text, span, index, len(spans)))
        usage["failures"] = len(failed)
        usage["seconds"] = round(usage["seconds"], 4)
        doc._.clin_llm_usage = usage
        doc._.clin_llm_context_failures = len(failed)
        if failed or usage["skipped"]:
            doc_id = doc._.clin_doc_id or _content_id(text)
            reason = f"; first error: {failed[0].error}" if failed else ""
            skipped = f"; {usage['skipped']} skipped (note too long for num_ctx)" if usage["skipped"] else ""
            warnings.warn(
                f"{self.name}: {len(failed)} of {len(spans)} chunk(s) of document {doc_id} got the fallback "
                f"context{skipped}{reason}",
                UserWarning,
            )

    def _fallback(self, text: str, span: Span, index: int, total: int) -> str:
        if self.fallback is None:
            return ""
        return self.fallback.describe(text, span.start_char, span.end_char, self.document_type, index, total)

    def _call(self, job: "_Job", breaker: "_Breaker") -> None:
        """One LLM call (in a pool thread); failures become ``job.error``, never exceptions unless strict."""
        from ..llm.clients import LLMError

        if breaker.open:
            job.error = f"skipped: {breaker.limit} consecutive failures, server considered down for this batch"
            self._fail(job)
            return
        try:
            completion = self.model.complete(job.prompt)
        except LLMError as err:
            job.requests = getattr(err, "attempts", 1)
            job.error = str(err)
            breaker.record(False)
            self._fail(job)
            return
        job.requests = completion.attempts
        job.prompt_tokens = completion.prompt_tokens
        job.completion_tokens = completion.completion_tokens
        job.seconds = completion.seconds
        cleaned = clean_context(completion.text, self.encoding, self.context_size)
        if not cleaned:
            job.error = "empty or refused answer"
            breaker.record(False)
            self._fail(job)
            return
        breaker.record(True)
        job.result = cleaned
        if job.key:
            value = {"text": completion.text, "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens}
            self._cache_put(job.key, value)

    # -- the cache: a broken one costs the cache, never the chunks ----------------
    def _cache_get(self, key: Optional[str]) -> Optional[Dict[str, Any]]:
        cache = self.cache
        if cache is None or not key:
            return None
        try:
            return cache.get(key)
        except (sqlite3.Error, OSError, ValueError) as err:
            self._drop_cache(err)
            return None

    def _cache_put(self, key: str, value: Dict[str, Any]) -> None:
        cache = self.cache
        if cache is None:
            return
        try:
            cache.put(key, value, model=self.model.identity, template_version=self.template_version)
        except (sqlite3.Error, OSError) as err:
            self._drop_cache(err)

    def _drop_cache(self, err: Exception) -> None:
        cache, self._cache = self._cache, None  # pool threads may get here together
        path = cache.path if cache is not None else self.cache_path
        _warn_once(f"{self.name}: the LLM cache at {path} failed ({type(err).__name__}: {err}); continuing without it")

    def _fail(self, job: _Job) -> None:
        logger.debug("%s: chunk %s failed: %s", self.name, job.span._.clin_chunk_id, job.error)
        if self.strict:
            raise LLMContextError(f"{self.name}: no context for chunk {job.span._.clin_chunk_id}: {job.error}")

    # -- serialization --------------------------------------------------------
    # Data only: the prompt template's text. Settings stay with the config; a saved
    # template is used only while the config names the same ``prompt_template``.
    def _state(self) -> Dict[str, Any]:
        return {"template": self.template, "template_source": self._template_source}

    def _load_state(self, state: Dict[str, Any]) -> None:
        if state.get("template") and state.get("template_source") == self._template_source:
            self.set_template(state["template"])

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return srsly.json_dumps(self._state()).encode("utf-8")

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "LLMContext":
        self._load_state(srsly.json_loads(bytes_data))
        return self

    def to_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> None:
        path = ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        srsly.write_json(path / STATE_FILE, self._state())

    def from_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> "LLMContext":
        file = ensure_path(path) / STATE_FILE
        if file.exists():
            self._load_state(srsly.read_json(file))
        return self

    def __getstate__(self) -> Dict[str, Any]:  # picklable for nlp.pipe(n_process=...)
        state = dict(self.__dict__)
        state.update(_cache=None, _cache_resolved=False)
        return state


# -- output cleaning -------------------------------------------------------------
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_CHATTER_LINE = re.compile(
    r"^\s*(?:sure|certainly|of course|okay|ok|here(?:'s| is| are)|below is)\b[^\n]*?[:.!]\s*$", re.IGNORECASE
)
_TRAILING_CHATTER = re.compile(r"^\s*(?:note:|let me know|i hope|feel free|this context)\b", re.IGNORECASE)
_PREFIX = re.compile(r"^\s*(?:\*\*|__)?\s*(?:chunk\s+)?(?:context(?:ual)?(?:\s+summary)?|situating context)\s*(?:\*\*|__)?\s*[:\-–]\s*(?:\*\*|__)?\s*", re.IGNORECASE)
_REFUSAL = re.compile(
    r"^\s*(?:i'?m sorry|i am sorry|sorry,|i cannot|i can'?t|i can not|i am unable|i'?m unable|as an ai|i won'?t)",
    re.IGNORECASE,
)
_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb"


def clean_context(text: Optional[str], encoding: Any, context_size: int) -> str:
    """The LLM's answer as context: no "Context:" prefix, quotes or chatter; at most ``context_size`` tokens.

    Returns ``""`` for empty or refused answers (counted as failures by the component).
    """
    if not text:
        return ""
    text = _THINK.sub("", text).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    while lines and _CHATTER_LINE.match(lines[0]) and len(lines) > 1:
        lines.pop(0)
    while len(lines) > 1 and _TRAILING_CHATTER.match(lines[-1]):
        lines.pop()
    text = " ".join(line.strip() for line in lines)
    previous = None
    while previous != text:
        previous = text
        text = _PREFIX.sub("", text).strip().strip(_QUOTES).strip()
        text = text.strip("*_").strip()
    text = re.sub(r"\s+", " ", text)
    if not text or _REFUSAL.match(text):
        return ""
    tokens = encoding.encode_ordinary(text)
    if context_size > 0 and len(tokens) > context_size:
        cut = encoding.decode(tokens[:context_size]).rstrip("\ufffd")
        sentence_end = max(cut.rfind(". "), cut.rfind("; "))
        if sentence_end >= len(cut) // 2:
            cut = cut[: sentence_end + 1]
        elif " " in cut:
            cut = cut[: cut.rfind(" ")]
        text = cut.rstrip(" ,;:-")
        while text and len(encoding.encode_ordinary(text)) > context_size:
            text = text[: text.rfind(" ")] if " " in text else ""
    return text.strip()


# -- helpers ---------------------------------------------------------------------
def _set_context(span: Span, context: str) -> None:
    span._.clin_context = context
    span._.clin_enriched_text = f"{context}\n\n{span.text}" if context else span.text


def _new_usage() -> Dict[str, Any]:
    usage: Dict[str, Any] = {name: 0 for name in USAGE_FIELDS}
    usage["seconds"] = 0.0
    return usage


def sum_usage(usages: Iterable[Optional[Dict[str, Any]]]) -> Dict[str, Any]:
    """Add up ``Doc._.clin_llm_usage`` dictionaries (the CLI's end-of-run summary)."""
    total = _new_usage()
    for usage in usages:
        for name, value in (usage or {}).items():
            if isinstance(value, (int, float)):
                total[name] = total.get(name, 0) + value
    total["seconds"] = round(total["seconds"], 3)
    return total


def _content_id(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def _head_chars(text: str, limit: int) -> str:
    """The first ``limit`` characters, backed off to a word boundary."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space > limit * 0.8 and not text[limit].isspace():
        cut = cut[:space]
    return cut.rstrip()


_warned: set = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)
