"""Token counters for ``clin_size_ceiling``: how many tokens each word of a piece costs.

A counter maps a sequence of whitespace-separated words to one count per word; the
ceiling adds them up, so a piece's size is known for every cut without counting again.

- ``spacy_clinchunk.AutoTokenCounter.v1`` (the default): the wordpieces of the pipeline's
  embedder when one is configured (a component with an ``embedder``, such as
  ``clin_semantic_window``, or a spacy-transformers ``transformer``), words otherwise. It
  looks at the pipeline when the ceiling first runs (components after the ceiling count),
  and imports no model library when there is no embedder.
- ``spacy_clinchunk.WordCounter.v1``: one per word (no model).
- :class:`WordpieceEstimate`: about the wordpieces of a WordPiece vocabulary (MiniLM, BERT)
  without loading one (the record blocks' default budget counter, :mod:`spacy_clinchunk.export.blocks`).
- ``spacy_clinchunk.EmbedderTokenCounter.v1``: the wordpieces of the downstream embedder's
  tokenizer (``transformers.AutoTokenizer``, loaded on first use). Special tokens
  ([CLS], [SEP]) are not counted: leave room for them under the model's limit. For a
  WordPiece tokenizer (MiniLM, BERT) the sum over words equals the count of the piece;
  for byte-level BPE it is close, not exact.
"""
import re
from typing import Any, Callable, Dict, List, Optional, Sequence

from spacy.util import registry

# the budget of a record's section block (export.blocks), in tokens of its counter: MiniLM's limit
DEFAULT_BLOCK_TOKENS = 256
_CACHE_LIMIT = 200_000  # distinct words remembered by one counter


class WordCounter:
    """Every word costs one token."""

    name = "words"

    def __call__(self, words: Sequence[str]) -> List[int]:
        return [1] * len(words)


_PIECE = re.compile(r"[^\W_]+|[^\w\s]|_")


class WordpieceEstimate:
    """About the wordpieces of an English WordPiece vocabulary (MiniLM's), with no tokenizer
    loaded: a punctuation mark is one, a run of letters or digits one per started
    ``chars_per_piece`` characters. English (7: common words are one piece, "hypertension"
    two) is within 4% of MiniLM's count on the shared English notes. German, French, Spanish or
    Dutch words split into far more pieces in that vocabulary: :func:`wordpiece_estimate`
    gives them 3 characters a piece (0.97 of MiniLM's count on the shared German letters, where
    7 gave 0.62 and let blocks run past the budget); ``EmbedderTokenCounter.v1`` counts exactly."""

    name = "wordpiece estimate"

    def __init__(self, chars_per_piece: int = 7) -> None:
        self.chars_per_piece = max(1, int(chars_per_piece))

    def __call__(self, words: Sequence[str]) -> List[int]:
        n = self.chars_per_piece
        return [max(1, sum(-(-len(p) // n) for p in _PIECE.findall(w))) for w in words]


# characters per wordpiece of an English vocabulary, by the text's language (other: 3)
_CHARS_PER_PIECE = {"en": 7}


def wordpiece_estimate(lang: Optional[str]) -> WordpieceEstimate:
    """The estimate for text in ``lang`` (ISO code; None or unknown: a non-English text)."""
    return WordpieceEstimate(_CHARS_PER_PIECE.get(lang or "", 3))


class EmbedderTokenCounter:
    """Wordpieces of a Hugging Face tokenizer, counted per distinct word (cached)."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._tokenizer: Any = None
        self._cache: Dict[str, int] = {}

    @property
    def name(self) -> str:
        return f"tokens of {self.model}"

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer  # heavy: only when a count is needed

            from ..embed.embedders import resolve_model

            self._tokenizer = AutoTokenizer.from_pretrained(resolve_model(self.model))
        return self._tokenizer

    def __call__(self, words: Sequence[str]) -> List[int]:
        cache = self._cache
        missing = list({w for w in words if w not in cache})
        if missing:
            if len(cache) + len(missing) > _CACHE_LIMIT:
                cache.clear()
            ids = self.tokenizer(missing, add_special_tokens=False)["input_ids"]
            # a word the tokenizer drops (a control character) still costs one
            cache.update((w, max(1, len(i))) for w, i in zip(missing, ids))
        return [cache[w] for w in words]

    def __getstate__(self) -> Dict[str, Any]:  # n_process: the worker loads its own tokenizer
        return {"model": self.model, "_tokenizer": None, "_cache": {}}


class AutoTokenCounter:
    """Words, or the wordpieces of the embedder the pipeline has: decided by :meth:`bind`."""

    def __init__(self) -> None:
        self.delegate: Optional[Callable[[Sequence[str]], List[int]]] = None

    @property
    def name(self) -> str:
        return "auto" if self.delegate is None else f"auto: {self.delegate.name}"  # type: ignore[attr-defined]

    def bind(self, nlp: Any) -> None:
        """Pick the counter for ``nlp``'s pipeline (once; a later call keeps the first choice)."""
        if self.delegate is None:
            model = embedder_model(nlp) if nlp is not None else None
            self.delegate = WordCounter() if model is None else EmbedderTokenCounter(model)

    def __call__(self, words: Sequence[str]) -> List[int]:
        if self.delegate is None:
            self.bind(None)
        return self.delegate(words)  # type: ignore[misc]


def counts_words(counter: Any) -> bool:
    """Whether ``counter`` gives one token per word (the ceiling's fast path)."""
    if isinstance(counter, AutoTokenCounter):
        counter = counter.delegate
    return isinstance(counter, WordCounter)


def embedder_model(nlp: Any) -> Optional[str]:
    """The model name of the first embedder in ``nlp``'s pipeline, or None.

    An embedder is a component's ``embedder`` with a model name (``clin_semantic_window``'s
    sentence-transformers model), or a spacy-transformers ``transformer`` component (its
    ``model.name``; also what a ``TransformerListener.v1`` embedder reads).
    """
    for pipe_name, pipe in nlp.pipeline:
        embedder = getattr(pipe, "embedder", None)
        model = getattr(embedder, "model_name", None)
        if isinstance(model, str) and model:
            return model
        if type(pipe).__name__ == "Transformer":
            name = nlp.get_pipe_config(pipe_name).get("model", {}).get("name")
            if isinstance(name, str) and name:
                return name
    return None


@registry.misc("spacy_clinchunk.AutoTokenCounter.v1")
def auto_token_counter_v1() -> AutoTokenCounter:
    return AutoTokenCounter()


@registry.misc("spacy_clinchunk.WordCounter.v1")
def word_counter_v1() -> WordCounter:
    return WordCounter()


@registry.misc("spacy_clinchunk.EmbedderTokenCounter.v1")
def embedder_token_counter_v1(model: Optional[str] = None) -> EmbedderTokenCounter:
    from ..embed.embedders import DEFAULT_MODEL

    return EmbedderTokenCounter(model or DEFAULT_MODEL)
