"""Token counters for ``clin_size_ceiling``: how many tokens each word of a piece costs.

A counter maps a sequence of whitespace-separated words to one count per word; the
ceiling adds them up, so a piece's size is known for every cut without counting again.

- ``spacy_clinchunk.WordCounter.v1``: one per word (the default; no model).
- ``spacy_clinchunk.EmbedderTokenCounter.v1``: the wordpieces of the downstream embedder's
  tokenizer (``transformers.AutoTokenizer``, loaded on first use). Special tokens
  ([CLS], [SEP]) are not counted: leave room for them under the model's limit. For a
  WordPiece tokenizer (MiniLM, BERT) the sum over words equals the count of the piece;
  for byte-level BPE it is close, not exact.
"""
from typing import Any, Dict, List, Optional, Sequence

from spacy.util import registry

_CACHE_LIMIT = 200_000  # distinct words remembered by one counter


class WordCounter:
    """Every word costs one token."""

    name = "words"

    def __call__(self, words: Sequence[str]) -> List[int]:
        return [1] * len(words)


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


@registry.misc("spacy_clinchunk.WordCounter.v1")
def word_counter_v1() -> WordCounter:
    return WordCounter()


@registry.misc("spacy_clinchunk.EmbedderTokenCounter.v1")
def embedder_token_counter_v1(model: Optional[str] = None) -> EmbedderTokenCounter:
    from ..embed.embedders import DEFAULT_MODEL

    return EmbedderTokenCounter(model or DEFAULT_MODEL)
