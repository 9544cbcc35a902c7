"""clin_llm_context: Contextual Retrieval for clinical notes.

The note is cut into windows of ``chunk_size`` tiktoken tokens overlapping by about
``chunk_overlap`` tokens (span group ``clin_rag_chunks``), optionally snapped to sentence
or chunk boundaries (:mod:`spacy_clinchunk.llm.windows`). For each window an LLM (or the
heuristic builder) writes a short context that situates it in the note;
``Span._.clin_enriched_text`` is that context, a blank line and the window's text.
With ``chunks_key`` set (strategy ``contextual``: after the clause chunkers, assertion and
focus), every span of that group also gets the context of the window it shares most text
with, and its own enriched text: clause chunks that carry assertion, focus and context.
The focus spans of ``focus_key`` (``clin_focus``) get their chunk's context (``clin_focus_of``).

The prompt template is data (``initialize(prompt=...)``, saved by ``to_disk``); the calls
run through :mod:`~spacy_clinchunk.llm.scheduler`; answers are cleaned by
:mod:`~spacy_clinchunk.llm.answers`. The answer cache is off unless the ``cache`` setting
names one (``{"@misc": "spacy_clinchunk.SQLiteCache.v1"}``); a broken one is dropped with a
warning, never at the cost of chunks. Failures get the fallback context and are counted,
never raised unless ``strict``.
"""
import logging
import warnings
from typing import Any, Dict, Iterable, Iterator, List, Optional

from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span

from .. import attrs
from ..fileio import warn_once
from ..llm.cache_adapter import AnswerCache
from ..llm.answers import clean_context
from ..llm.parts import CallScheduler, ContextTask, TokenWindows
from ..llm.prompt import PromptTemplate, read_prompt
from ..llm.scheduler import Breaker, CallPool, DocWork, Job, ask, in_order, sum_usage
from ..llm import tokens as llm_tokens  # tiktoken itself loads on first use
from ..llm.windows import content_id, window_of
from .base import factory_settings, json_from_bytes, json_from_disk, json_to_bytes, json_to_disk, require_extra
from .settings import SettingError

__all__ = ["LLMContext", "LLMContextError", "clean_context", "make_llm_context", "sum_usage"]

FACTORY = "clin_llm_context"
STATE_FILE = "llm_context.json"

logger = logging.getLogger("spacy_clinchunk")


class LLMContextError(RuntimeError):
    """A chunk got no context and ``strict = true``."""


WINDOWS = {"@misc": "spacy_clinchunk.TokenWindows.v1"}
TASK = {"@misc": "spacy_clinchunk.ContextTask.v1"}
SCHEDULER = {"@misc": "spacy_clinchunk.CallScheduler.v1"}


@Language.factory(
    FACTORY,
    default_config={
        "spans_key": attrs.RAG_CHUNKS_KEY,
        "chunks_key": None,
        "focus_key": attrs.FOCUS_KEY,
        "windows": WINDOWS,
        "task": TASK,
        "model": {"@misc": "spacy_clinchunk.Ollama.v1"},
        "fallback": None,
        "cache": None,
        "scheduler": SCHEDULER,
        "strict": False,
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
    chunks_key: Optional[str],
    focus_key: Optional[str],
    windows: TokenWindows,
    task: ContextTask,
    model: Any,
    fallback: Optional[Any],
    cache: Optional[Any],
    scheduler: CallScheduler,
    strict: bool,
    overwrite: bool,
):
    settings = factory_settings(locals())
    if windows.chunk_overlap >= windows.chunk_size:
        raise SettingError(
            f"{name}: chunk_overlap ({windows.chunk_overlap}) must be less than chunk_size ({windows.chunk_size})"
        )
    if chunks_key is not None and chunks_key in ("", spans_key):
        raise SettingError(f"{name}: chunks_key must name another group than spans_key ('{spans_key}'), or be null")
    if not (hasattr(model, "complete") or hasattr(model, "describe")):
        raise SettingError(f"{name}: model must be an LLM client or spacy_clinchunk.HeuristicContext.v1")
    if fallback is not None and not hasattr(fallback, "describe"):
        raise SettingError(f"{name}: fallback must be a context builder such as spacy_clinchunk.HeuristicContext.v1")
    require_extra(nlp, "llm")
    return LLMContext(nlp, name, **settings)


class LLMContext(Pipe):
    """Token windows with LLM-written context (Anthropic's Contextual Retrieval).

    Built by :func:`make_llm_context`, whose signature is the typed list of its settings
    (spaCy validates them there); the component takes them by name.
    """

    def __init__(self, nlp: Language, name: str, **settings: Any) -> None:
        attrs.register_extensions()
        self.name = name
        self.spans_key: str = settings["spans_key"]
        self.chunks_key: Optional[str] = settings["chunks_key"]  # clause chunks that get their window's context (None: windows only)
        # focus spans of those chunks (clin_focus_of) get their chunk's context; not ``focus_key``:
        # the resolver reads that attribute as a group the component writes
        self.focus_group: Optional[str] = settings["focus_key"]
        # the slots: registered, versioned parts (llm.parts)
        self.windows: TokenWindows = settings["windows"]
        self.task: ContextTask = settings["task"]
        self.model: Any = settings["model"]
        self.fallback: Optional[Any] = settings["fallback"]
        self.cache: Optional[Any] = settings["cache"]
        self.scheduler: CallScheduler = settings["scheduler"]
        self.strict: bool = settings["strict"]
        self.overwrite: bool = settings["overwrite"]
        self.answers = AnswerCache(self.cache, name)
        self._prompt: Optional[PromptTemplate] = None

    # -- data: the prompt template ------------------------------------------------
    def initialize(self, get_examples: Any = None, *, nlp: Optional[Language] = None, prompt: Optional[str] = None) -> None:
        """Load the prompt template: ``prompt`` (the template's text), else the packaged one."""
        text = prompt if prompt is not None else read_prompt(None, self.name)
        self._prompt = PromptTemplate(text, self.name)

    @property
    def prompt(self) -> PromptTemplate:
        """The template; the packaged one if nothing set it."""
        if self._prompt is None:
            self.initialize()
        return self._prompt  # type: ignore[return-value]

    # -- lazily loaded helpers ------------------------------------------------------
    @property
    def encoding(self) -> Any:
        return self.windows.encoding

    @property
    def uses_llm(self) -> bool:
        return hasattr(self.model, "complete")

    def _render(self, document: str, chunk: str) -> str:
        return self.task.render(self.prompt, document, chunk)

    def _clean(self, answer: Optional[str]) -> str:
        return self.task.clean(answer, self.encoding)

    # -- windows --------------------------------------------------------------------
    def window_ranges(self, doc: Doc) -> List[tuple]:
        """Token windows as ``(first_token, end_token)`` spaCy token indices."""
        return [(start, end) for start, end, _ in self._windows(doc, doc.text)]

    def _windows(self, doc: Doc, text: str) -> List[tuple]:
        return self.windows.cut(doc, text, self.name, self.chunks_key)

    def make_chunks(self, doc: Doc, text: Optional[str] = None) -> List[Span]:
        """Write the window group and the chunk attributes (no context yet)."""
        text = doc.text if text is None else text
        counts: List[int] = []
        if not self.overwrite and self.spans_key in doc.spans:
            spans = list(doc.spans[self.spans_key])
        else:
            windows = self._windows(doc, text)
            doc.spans[self.spans_key] = [Span(doc, start, end) for start, end, _ in windows]
            spans = list(doc.spans[self.spans_key])
            counts = [tokens for _, _, tokens in windows]
        doc_id = doc._.clin_doc_id or content_id(text)
        for index, span in enumerate(spans):
            span._.clin_chunk_id = f"{doc_id}_chunk_{index}"
            span._.clin_token_count = counts[index] if counts else llm_tokens.count_tokens(span.text, self.encoding)
            _set_context(span, "")
        return spans

    def document_part(self, text: str, longest_chunk: str) -> Optional[str]:
        """The note as it goes into every prompt of its chunks; ``None`` means skip (too long)."""
        return self.task.document_part(
            text, self.encoding, self.model,
            lambda document: llm_tokens.count_tokens(self._render(document, longest_chunk), self.encoding),
        )

    # -- spaCy API --------------------------------------------------------------------
    def __call__(self, doc: Doc) -> Doc:
        return next(iter(self.pipe([doc], batch_size=1)))

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 64) -> Iterator[Doc]:
        """Contextualize ``stream`` in order, windowing later notes while earlier ones wait on the LLM.

        Calls run ``max_concurrency`` at a time across documents and batches; at most
        ``max(batch_size, 2 * max_concurrency)`` documents are in flight.
        """
        if hasattr(self.model, "set_pool_size"):  # one kept-alive connection per concurrent call
            self.model.set_pool_size(self.scheduler.max_concurrency)
        calls = self.scheduler.pool(batch_size, self._call)
        limit = self.scheduler.in_flight(batch_size)
        try:
            yield from in_order(stream, lambda doc, index: self._start(doc, index, calls), self._finish, limit)
        finally:
            calls.close()

    def _start(self, doc: Doc, index: int, calls: CallPool) -> DocWork:
        """Window one note, answer what the cache knows and hand the rest to the call pool."""
        work = DocWork(doc)
        try:
            prompt = self.prompt  # a missing template fails here, routed like any error of this doc
            text = doc.text
            spans = self.make_chunks(doc, text)
            if not spans:
                return work
            if not self.uses_llm:
                for i, span in enumerate(spans):
                    _set_context(span, self.model.describe(text, span.start_char, span.end_char, self.task.document_type, i, len(spans)))
                return work
            document = self.document_part(text, max(spans, key=lambda span: span._.clin_token_count).text)
            if document is None:
                work.skipped = len(spans)
                return work
            for span in spans:
                chunk = text[span.start_char : span.end_char]  # == span.text, without a walk over its tokens
                job = Job(span, self._render(document, chunk), self.answers.key(self.model, prompt.version, document, chunk))
                job.result = self._clean(self.answers.get(job.key)) or None
                job.cached = job.result is not None
                if not job.cached:
                    calls.submit(job, index)
                work.jobs.append(job)
        except LLMContextError:
            raise
        except Exception as err:  # routed like spaCy's own pipes
            work.jobs, work.error = [], err
        return work

    def _call(self, job: Job, breaker: Breaker) -> None:
        """One LLM call in a pool thread; a failure is counted (raised only when strict)."""
        completion = ask(self.model, job, breaker, self._clean)
        if completion is None:
            logger.debug("%s: chunk %s failed: %s", self.name, job.span._.clin_chunk_id, job.error)
            if self.strict:
                raise LLMContextError(f"{self.name}: no context for chunk {job.span._.clin_chunk_id}: {job.error}")
        elif job.key:
            self.answers.put(job.key, completion, model=self.model, template_version=self.prompt.version)

    def _finish(self, work: DocWork) -> Doc:
        doc = work.doc
        try:
            if work.error is not None:
                raise work.error
            self._collect(work)
            self.annotate_chunks(doc)
        except LLMContextError:
            raise
        except Exception as err:
            self.get_error_handler()(self.name, self, [doc], err)
        return doc

    def _collect(self, work: DocWork) -> None:
        """Wait for one note's calls and write its contexts, fallbacks, usage and warning."""
        doc, usage = work.doc, work.usage()
        failed = [job for job in work.jobs if not job.result]
        for job in work.jobs:
            if job.result:
                _set_context(job.span, job.result)
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
        doc._.clin_llm_usage = usage
        doc._.clin_llm_context_failures = len(failed)
        if failed or usage["skipped"]:
            doc_id = doc._.clin_doc_id or content_id(text)
            reason = f"; first error: {failed[0].error}" if failed else ""
            skipped = f"; {usage['skipped']} skipped (note too long for num_ctx)" if usage["skipped"] else ""
            warnings.warn(
                f"{self.name}: {len(failed)} of {len(spans)} chunk(s) of document {doc_id} got the fallback "
                f"context{skipped}{reason}",
                UserWarning,
            )

    def annotate_chunks(self, doc: Doc) -> None:
        """Give each span of ``doc.spans[chunks_key]`` the context of its window (the one it
        shares most characters with), whoever wrote it: the model, or the fallback."""
        if self.chunks_key is None:
            return
        if self.chunks_key not in doc.spans:
            warn_once(f"{self.name}: no '{self.chunks_key}' group (chunks_key) to annotate; only the windows got context")
            return
        windows = list(doc.spans[self.spans_key]) if self.spans_key in doc.spans else []
        contexts = [window._.clin_context or "" for window in windows]
        chunks = list(doc.spans[self.chunks_key])
        homes = window_of([(c.start_char, c.end_char) for c in chunks], [(w.start_char, w.end_char) for w in windows])
        for chunk, home in zip(chunks, homes):
            _set_context(chunk, "" if home is None else contexts[home])
        if self.focus_group and self.focus_group in doc.spans:  # a focus span: the context of its chunk
            focus = doc.spans[self.focus_group]
            of = attrs.field_names(focus)["focus_of"]
            for span in focus:
                number = span._.get(of)
                _set_context(span, chunks[number]._.clin_context if isinstance(number, int) and 0 <= number < len(chunks) else "")

    def _fallback(self, text: str, span: Span, index: int, total: int) -> str:
        if self.fallback is None:
            return ""
        return self.fallback.describe(text, span.start_char, span.end_char, self.task.document_type, index, total)

    # -- serialization: data only (the template's text); settings stay with the config ----
    def _state(self) -> Dict[str, Any]:
        return {"template": self.prompt.text}

    def _load_state(self, state: Dict[str, Any]) -> None:
        if state.get("template"):
            self._prompt = PromptTemplate(state["template"], self.name)

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return json_to_bytes({STATE_FILE: self._state}, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "LLMContext":
        json_from_bytes(bytes_data, {STATE_FILE: self._load_state}, exclude)
        return self

    def to_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> None:
        json_to_disk(path, {STATE_FILE: self._state}, exclude)

    def from_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> "LLMContext":
        json_from_disk(path, {STATE_FILE: self._load_state}, exclude)
        return self


def _set_context(span: Span, context: str) -> None:
    span._.clin_context = context
    span._.clin_enriched_text = f"{context}\n\n{span.text}" if context else span.text
