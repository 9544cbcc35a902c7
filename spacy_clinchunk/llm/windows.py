"""Token windows over a note, snapped to sentences or chunks, the window each chunk falls in,
and the note cut to fit a prompt.

Windowing costs one tiktoken encode of the note plus one per window (linear in the note):
windows are fitted by bisect over the tokens' character extents
(:class:`~spacy_clinchunk.llm.tokens.TokenOffsets`), and only the chosen window is
encoded again to check it (an estimate can be a token or two short of a fresh encode).
Windows are whole spaCy tokens: ``(first_token, end_token, tiktoken_count)``.
"""
import hashlib
from bisect import bisect_left, bisect_right
from typing import Any, Callable, List, Literal, Optional, Sequence, Tuple, get_args

from spacy.tokens import Doc

from .. import attrs
from ..fileio import warn_once
from ..spans import seed_ranges
from .tokens import TokenOffsets, count_tokens

Align = Literal["tokens", "sentences", "clin_chunks"]  # where a window may end: anywhere, sentences, chunks
Oversized = Literal["truncate_middle", "head", "skip"]  # a note too long for the model's window
ALIGN_MODES = get_args(Align)
OVERSIZED_STRATEGIES = get_args(Oversized)
PROMPT_OVERHEAD_TOKENS = 32  # chat-template tokens the server wraps around our prompt
PROMPT_SLACK_TOKENS = 8  # other chunks may tokenize a little differently against the template
MIDDLE_MARKER = "\n[...]\n"

Window = Tuple[int, int, int]  # first spaCy token, end token, tiktoken count


def token_windows(
    doc: Doc, text: str, encoding: Any, *, size: int, overlap: int, align: str, tolerance: int, owner: str,
    chunks_key: str = attrs.CHUNKS_KEY,
) -> List[Window]:
    """Windows of at most ``size`` tokens overlapping by about ``overlap``, in order
    (``align = "clin_chunks"`` snaps them to the spans of ``doc.spans[chunks_key]``)."""
    from spacy.attrs import IDX, IS_SPACE, LENGTH

    if not len(doc):
        return []
    table = doc.to_array([IDX, LENGTH, IS_SPACE])
    kept = table[table[:, 2] == 0]
    if not len(kept):
        return []
    words = (table[:, 2] == 0).nonzero()[0].tolist()
    starts = kept[:, 0].tolist()
    ends = (kept[:, 0] + kept[:, 1]).tolist()
    tokens = encoding.encode_ordinary(text[starts[0] : ends[-1]])
    if len(tokens) <= size:  # most notes: one window, one encode
        return [(words[0], words[-1] + 1, len(tokens))]
    offsets = TokenOffsets(text[starts[0] : ends[-1]], encoding, tokens, offset=starts[0])
    boundaries = _boundaries(doc, starts, ends, align, owner, chunks_key)
    n = len(words)
    tolerance = min(tolerance, size // 4)
    windows: List[Window] = []
    s = 0
    while True:
        first_char = starts[s]
        budget = size
        for _ in range(8):
            e = _fit(offsets, starts, ends, s, n, budget)
            if e < n and boundaries:
                b = boundaries[bisect_right(boundaries, e) - 1] if bisect_right(boundaries, e) else 0
                if b > s and offsets.count(ends[b - 1], ends[e - 1]) <= tolerance:
                    e = b
            count = count_tokens(text[first_char : ends[e - 1]], encoding)
            if count <= size or e == s + 1:
                break
            budget -= count - size
        while e > s + 1 and count > size:
            e -= 1
            count = count_tokens(text[first_char : ends[e - 1]], encoding)
        windows.append((words[s], words[e - 1] + 1, count))
        if e >= n:
            return windows
        t = _overlap_start(offsets, starts, s, e, ends[e - 1], overlap)
        if boundaries:
            t = _snap_start(offsets, starts, boundaries, s, e, t, tolerance)
        s = max(t, s + 1)


def _fit(offsets: TokenOffsets, starts: List[int], ends: List[int], s: int, n: int, size: int) -> int:
    """The largest ``e`` with words ``[s, e)`` within ``size`` tokens (at least ``s + 1``)."""
    lo, hi = s + 1, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if offsets.count(starts[s], ends[mid - 1]) <= size:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _overlap_start(offsets: TokenOffsets, starts: List[int], s: int, e: int, last_char: int, overlap: int) -> int:
    """The smallest word index in ``(s, e]`` whose suffix of the window has at most ``overlap`` tokens."""
    lo, hi = s + 1, e
    while lo < hi:
        mid = (lo + hi) // 2
        if offsets.count(starts[mid], last_char) <= overlap:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _snap_start(
    offsets: TokenOffsets, starts: List[int], boundaries: List[int], s: int, e: int, t: int, tolerance: int
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


def _boundaries(doc: Doc, starts: List[int], ends: List[int], align: str, owner: str, chunks_key: str) -> List[int]:
    """Word indices ``i`` where a unit begins (a boundary between word ``i-1`` and ``i``)."""
    if align == "tokens":
        return []
    if align == "clin_chunks" and chunks_key in doc.spans:
        units = [(span.start_char, span.end_char) for span in doc.spans[chunks_key]]
    else:
        if align == "clin_chunks":
            warn_once(f"{owner}: align='clin_chunks' but no '{chunks_key}' group; using sentences")
        units = seed_ranges(doc)
    found = set()
    for start, end in units:
        found.add(bisect_left(starts, start))
        found.add(bisect_right(ends, end))
    return sorted(b for b in found if 0 < b < len(starts))


# -- the window of each chunk ---------------------------------------------------------
def window_of(chunks: Sequence[Tuple[int, int]], windows: Sequence[Tuple[int, int]]) -> List[Optional[int]]:
    """For each chunk ``(start_char, end_char)``, the index of the window it shares most
    characters with; ``None`` for a chunk that touches no window.

    A chunk inside the overlap of two windows shares all of itself with both: it goes to the
    one whose middle is nearest its own (the one it is more central to), the first of equals.
    ``windows`` are in order, their starts and ends both increasing (as :func:`token_windows`
    writes them), so the windows a chunk touches are found by bisect: linear in practice.
    """
    window_starts = [start for start, _ in windows]
    window_ends = [end for _, end in windows]
    found: List[Optional[int]] = []
    for start, end in chunks:
        best, best_key = None, (0, 0)
        for index in range(bisect_right(window_ends, start), bisect_left(window_starts, end)):
            shared = min(end, window_ends[index]) - max(start, window_starts[index])
            key = (shared, -abs(window_starts[index] + window_ends[index] - start - end))
            if shared > 0 and (best is None or key > best_key):
                best, best_key = index, key
        found.append(best)
    return found


# -- the note as it goes into each prompt ----------------------------------------------
def prompt_limit(model: Any) -> Optional[int]:
    """Tokens a prompt may have for ``model`` (its window less output and overhead); None: no limit known."""
    window = getattr(model, "context_window", None)
    if not window:
        return None
    return window - getattr(model, "max_output_tokens", 0) - PROMPT_OVERHEAD_TOKENS - PROMPT_SLACK_TOKENS


def fit_document(
    text: str,
    encoding: Any,
    *,
    document_chars: Optional[int],
    limit: Optional[int],
    strategy: str,
    prompt_tokens: Callable[[str], int],
) -> Optional[str]:
    """The note's part of every prompt of its chunks; ``None`` means skip (too long).

    ``document_chars`` first cuts the note to its head. ``prompt_tokens(document)`` counts
    the prompt of the note's longest chunk with that document, which must stay within
    ``limit``; when it does not, ``strategy`` keeps the head, the head and tail around
    :data:`MIDDLE_MARKER`, or skips the note.
    """
    document = head_chars(text, document_chars) if document_chars else text
    if limit is None or prompt_tokens(document) <= limit:
        return document
    budget = limit - prompt_tokens("")
    if strategy == "skip" or budget <= len(MIDDLE_MARKER):
        return None
    offsets = TokenOffsets(document, encoding)
    target = budget
    for _ in range(20):
        if strategy == "head":
            cut = document[: offsets.char_after_tokens(0, target)].rstrip()
        else:
            head = (target - 4) // 2
            tail = target - 4 - head
            cut = (
                document[: offsets.char_after_tokens(0, head)].rstrip()
                + MIDDLE_MARKER
                + document[offsets.char_before_tokens(len(document), tail) :].lstrip()
            )
        if prompt_tokens(cut) <= limit:
            return cut
        target = int(target * 0.95)
    return None


def head_chars(text: str, limit: int) -> str:
    """The first ``limit`` characters, backed off to a word boundary."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space > limit * 0.8 and not text[limit].isspace():
        cut = cut[:space]
    return cut.rstrip()


def content_id(text: str) -> str:
    """A note's id when it has no ``Doc._.clin_doc_id``: a hash of its text."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]
