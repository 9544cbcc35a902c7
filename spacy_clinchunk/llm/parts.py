"""The swappable parts of ``clin_llm_context``, registered and versioned as spacy-llm's are.

The component has a few slots; each is filled in config by a registered function:

* ``windows``: how the note is cut (``spacy_clinchunk.TokenWindows.v1``: tiktoken windows of
  ``chunk_size`` tokens overlapping by ``chunk_overlap``, snapped to ``align``);
* ``task``: what is asked and how the answer is kept (``spacy_clinchunk.ContextTask.v1``: the
  note as it goes into the prompt, the answer cut to ``context_size`` tokens);
* ``model`` / ``fallback`` (:mod:`.clients`, :mod:`.heuristic`), ``cache`` (:mod:`.cache`);
* ``scheduler``: how calls run (``spacy_clinchunk.CallScheduler.v1``: a bounded pool and the
  breaker of consecutive failures).

A part with a changed meaning or signature gets a ``.v2`` beside its ``.v1``. Annotations stay
real objects (no ``from __future__ import annotations``): spaCy validates the settings of each
part against its registered function's signature.
"""

from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from spacy.util import registry

try:  # spaCy validates with pydantic's v1 API under both pydantic generations
    from pydantic.v1 import conint
except ImportError:  # pragma: no cover - pydantic 1
    from pydantic import conint  # type: ignore[no-redef]

from .. import attrs
from . import tokens as llm_tokens  # tiktoken itself loads on first use
from .answers import clean_context
from .scheduler import Breaker, CallPool, Job
from .windows import Align, Oversized, fit_document, prompt_limit, token_windows

# integers are strict (a float or a bool is refused, never truncated), as in components.settings
NonNegativeInt = conint(strict=True, ge=0)
PositiveInt = conint(strict=True, ge=1)


@dataclass
class TokenWindows:
    """Windows of ``chunk_size`` tokens (``encoding``) overlapping by about ``chunk_overlap``."""

    chunk_size: int = 1000
    chunk_overlap: int = 200
    encoding_name: str = "cl100k_base"
    align: str = "tokens"
    align_tolerance: int = 100

    @property
    def encoding(self) -> Any:
        return llm_tokens.get_encoding(self.encoding_name)

    def cut(self, doc: Any, text: str, owner: str, chunks_key: Optional[str]) -> List[tuple]:
        """``(first_token, end_token, token_count)`` of each window of ``doc``."""
        return token_windows(
            doc,
            text,
            self.encoding,
            size=self.chunk_size,
            overlap=self.chunk_overlap,
            align=self.align,
            tolerance=self.align_tolerance,
            owner=owner,
            chunks_key=chunks_key or attrs.CHUNKS_KEY,
        )


@registry.misc("spacy_clinchunk.TokenWindows.v1")
def token_windows_v1(
    chunk_size: PositiveInt = 1000,
    chunk_overlap: NonNegativeInt = 200,
    encoding: str = "cl100k_base",
    align: Align = "tokens",
    align_tolerance: NonNegativeInt = 100,
) -> TokenWindows:
    """tiktoken windows; ``align``: ``tokens`` (anywhere), ``sentences`` or ``clin_chunks``."""
    return TokenWindows(chunk_size, chunk_overlap, encoding, align, align_tolerance)


@dataclass
class ContextTask:
    """Contextual Retrieval's question: the note (or ``document_chars`` of it around the
    window, shrunk by ``oversized_document`` to the model's window), the chunk, and an answer of
    at most ``context_size`` tokens."""

    document_type: str = "Clinical Note"
    document_chars: Optional[int] = 2000
    oversized_document: str = "truncate_middle"
    context_size: int = 75

    def render(self, prompt: Any, document: str, chunk: str) -> str:
        return prompt.render(document=document, chunk=chunk, document_type=self.document_type, context_size=self.context_size)

    def clean(self, answer: Optional[str], encoding: Any) -> str:
        return clean_context(answer, encoding, self.context_size)

    def document_part(self, text: str, encoding: Any, model: Any, prompt_tokens: Callable[[str], int]) -> Optional[str]:
        """The note as it goes into every prompt of its chunks; ``None`` means skip (too long)."""
        return fit_document(
            text,
            encoding,
            document_chars=self.document_chars,
            limit=prompt_limit(model),
            strategy=self.oversized_document,
            prompt_tokens=prompt_tokens,
        )


@registry.misc("spacy_clinchunk.ContextTask.v1")
def context_task_v1(
    document_type: str = "Clinical Note",
    document_chars: Optional[NonNegativeInt] = 2000,
    oversized_document: Oversized = "truncate_middle",
    context_size: PositiveInt = 75,
) -> ContextTask:
    """The context question of Contextual Retrieval (the prompt's text is data: ``initialize``)."""
    return ContextTask(document_type, document_chars, oversized_document, context_size)


@dataclass
class CallScheduler:
    """``max_concurrency`` calls at a time; ``max_consecutive_failures`` in a row stop a batch's calls."""

    max_concurrency: int = 4
    max_consecutive_failures: int = 5

    def pool(self, batch_size: int, call: Callable[[Job, Breaker], None]) -> CallPool:
        return CallPool(
            batch_size=batch_size, workers=self.max_concurrency, breaker_limit=self.max_consecutive_failures, call=call
        )

    def in_flight(self, batch_size: int) -> int:
        """Documents in flight at most: a batch, or enough to keep every worker busy."""
        return max(1, batch_size, 2 * self.max_concurrency)


@registry.misc("spacy_clinchunk.CallScheduler.v1")
def call_scheduler_v1(max_concurrency: PositiveInt = 4, max_consecutive_failures: NonNegativeInt = 5) -> CallScheduler:
    """A bounded pool of LLM calls with a breaker (``0``: never stop calling)."""
    return CallScheduler(max_concurrency, max_consecutive_failures)
