"""Voronoi ground truth: annotation territories and word-aligned expansion variants.

Pure geometry on character offsets (no NLP, any script):

* **Sites.** Each annotation contributes one or more *parts*. Evidence spans of one
  annotation that overlap, touch, or are separated by at most ``multi_span_gap``
  characters containing no letter or digit ("Brachydactyly type A-1 (BDA-1") form
  one part, their union; spans further apart ("seizures ... seizure") are separate
  parts, each with its own territory and variants.
* **Clusters.** Parts whose extents overlap form a cluster (``on_overlap="merge"``);
  a cluster is one Voronoi site. ``"skip"`` and ``"error"`` refuse documents in which
  two different annotations overlap.
* **Territories.** A cluster owns the text up to the midpoints to its neighbours
  (the first from 0, the last to the end), each midpoint moved to the nearest word
  boundary that stays between the two clusters.
* **Variants.** A part's variant at ``ratio`` extends ``ratio`` of the free space
  between the part and its territory's edges on each side, then each edge moves to
  the nearest word boundary inside the territory (never inside the part); edge
  whitespace is trimmed. Ratio 0 is the part itself (completed to whole words),
  ratio 1 the whole territory.

Concept isolation: a territory or variant never contains a character of a part
outside its own cluster. A word is a maximal run of Unicode letters, marks and digits.
"""
import math
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Tuple, get_args

Range = Tuple[int, int]

DEFAULT_RATIOS: Tuple[float, ...] = (0.0, 0.5, 1.0)
DEFAULT_MULTI_SPAN_GAP = 3
OverlapPolicy = Literal["merge", "skip", "error"]
OVERLAP_POLICIES: Tuple[str, ...] = get_args(OverlapPolicy)
STRATEGY = "voronoi_midpoint"
VARIANTS_FIELD = "chunk_variants"
VARIANTS_NAME = "voronoi_v1"
# Version of the algorithm written into provenance. 1.0.0 was the seed script; 2.0.0
# merges overlapping annotations, keeps multi-span parts and trims edge whitespace.
SCRIPT_VERSION = "2.0.0"


class VoronoiError(ValueError):
    """Bad parameters for the Voronoi computation."""


class OverlapError(VoronoiError):
    """Two different annotations overlap and the policy does not allow it."""

    def __init__(self, first: int, second: int) -> None:
        self.first, self.second = first, second
        super().__init__(f"Overlapping annotations detected: annotation {first} overlaps with annotation {second}")


@dataclass
class Part:
    """One site of an annotation: the union of its close evidence spans."""

    annotation: int
    start: int
    end: int
    cluster: int = -1
    territory: Range = (0, 0)
    variants: Dict[float, Range] = field(default_factory=dict)


@dataclass(frozen=True)
class VoronoiSettings:
    """How a document's Voronoi ground truth is built; no ``ratios``: none is built."""

    ratios: Tuple[float, ...] = DEFAULT_RATIOS
    on_overlap: str = "merge"
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP

    def compute(self, text: str, annotations: Sequence[Sequence[Range]]) -> Optional["VoronoiResult"]:
        """:func:`compute` with these settings (``None`` without ratios)."""
        if not self.ratios:
            return None
        return compute(text, annotations, self.ratios, self.on_overlap, self.multi_span_gap)


@dataclass
class VoronoiResult:
    parts: List[Part]  # annotation input order, then by position
    clusters: List[Range]  # cluster extents, by position
    territories: List[Range]  # trimmed territory per cluster, by position
    ratios: Tuple[float, ...]


# -- words ------------------------------------------------------------------
def is_word_char(char: str) -> bool:
    return unicodedata.category(char)[0] in "LMN"


def is_boundary(text: str, pos: int) -> bool:
    """Whether ``pos`` falls between two words or at a word edge (never inside a word)."""
    return pos <= 0 or pos >= len(text) or not (is_word_char(text[pos - 1]) and is_word_char(text[pos]))


def nearest_boundary(text: str, pos: int, low: int, high: int, prefer_low: bool) -> int:
    """Nearest word boundary to ``pos`` within ``[low, high]``; ``pos`` when there is none."""
    if is_boundary(text, pos):
        return pos
    for distance in range(1, max(pos - low, high - pos) + 1):
        candidates = (pos - distance, pos + distance) if prefer_low else (pos + distance, pos - distance)
        for candidate in candidates:
            if low <= candidate <= high and is_boundary(text, candidate):
                return candidate
    return pos


def trim(text: str, start: int, end: int, inner_start: int, inner_end: int) -> Range:
    """Drop edge whitespace of ``[start, end)`` without cutting into ``[inner_start, inner_end)``."""
    while start < inner_start and text[start].isspace():
        start += 1
    while end > inner_end and text[end - 1].isspace():
        end -= 1
    return start, end


def ratio_key(ratio: float) -> str:
    """Key of a ratio in the JSON output and span-group names: 0.5 -> ``0.50``."""
    return f"{ratio:.2f}"


def validate_ratios(ratios: Iterable[float]) -> Tuple[float, ...]:
    found: List[float] = []
    for ratio in ratios:
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0.0 <= float(ratio) <= 1.0:
            raise VoronoiError(f"expansion ratio {ratio!r} is not a number in [0, 1]")
        if ratio_key(float(ratio)) not in {ratio_key(r) for r in found}:
            found.append(float(ratio))
    return tuple(sorted(found))


# -- sites --------------------------------------------------------------------
def annotation_parts(text: str, spans: Sequence[Range], gap: int) -> List[Range]:
    """Parts of one annotation: its evidence spans, close ones joined (see module doc)."""
    parts: List[Range] = []
    for start, end in sorted(spans):
        if parts:
            last_start, last_end = parts[-1]
            between = text[last_end:start]
            if start <= last_end or (start - last_end <= gap and not any(is_word_char(c) for c in between)):
                parts[-1] = (last_start, max(last_end, end))
                continue
        parts.append((start, end))
    return parts


def compute(
    text: str,
    annotations: Sequence[Sequence[Range]],
    ratios: Iterable[float] = DEFAULT_RATIOS,
    on_overlap: str = "merge",
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
) -> VoronoiResult:
    """Territories and variants of ``annotations`` (each a list of ``(start, end)``).

    Raises :class:`OverlapError` when different annotations overlap and ``on_overlap``
    is ``"skip"`` or ``"error"`` (callers decide what skipping means).
    """
    if on_overlap not in OVERLAP_POLICIES:
        raise VoronoiError(f"on_overlap must be one of {', '.join(OVERLAP_POLICIES)}, not {on_overlap!r}")
    if multi_span_gap < 0:
        raise VoronoiError("multi_span_gap must be >= 0")
    ratios = validate_ratios(ratios)
    parts: List[Part] = []
    for index, spans in enumerate(annotations):
        for start, end in annotation_parts(text, spans, multi_span_gap):
            if not 0 <= start < end <= len(text):
                raise VoronoiError(f"annotation {index}: span ({start}, {end}) outside the text or empty")
            parts.append(Part(annotation=index, start=start, end=end))
    by_position = sorted(parts, key=lambda p: (p.start, p.end, p.annotation))
    if on_overlap != "merge":
        _check_overlaps(by_position)
    clusters: List[Range] = []
    for part in by_position:
        if clusters and part.start < clusters[-1][1]:
            clusters[-1] = (clusters[-1][0], max(clusters[-1][1], part.end))
        else:
            clusters.append((part.start, part.end))
        part.cluster = len(clusters) - 1
    edges = [0]
    for (_, left_end), (right_start, _) in zip(clusters, clusters[1:]):
        middle = (left_end + right_start) // 2
        edges.append(nearest_boundary(text, middle, left_end, right_start, prefer_low=True))
    edges.append(len(text))
    raw_territories = list(zip(edges, edges[1:]))
    territories = [trim(text, s, e, cs, ce) for (s, e), (cs, ce) in zip(raw_territories, clusters)]
    for part in parts:
        low, high = raw_territories[part.cluster]
        part.territory = territories[part.cluster]
        for ratio in ratios:
            part.variants[ratio] = variant_range(text, part.start, part.end, low, high, ratio)
    return VoronoiResult(parts=parts, clusters=clusters, territories=territories, ratios=ratios)


def variant_range(text: str, start: int, end: int, low: int, high: int, ratio: float) -> Range:
    """``[start, end)`` grown by ``ratio`` of the free space to ``[low, high)``, word-aligned."""
    raw_start = start - math.floor(ratio * (start - low) + 1e-9)
    raw_end = end + math.floor(ratio * (high - end) + 1e-9)
    new_start = nearest_boundary(text, raw_start, low, start, prefer_low=True)
    new_end = nearest_boundary(text, raw_end, end, high, prefer_low=False)
    return trim(text, new_start, new_end, start, end)


def _check_overlaps(by_position: List[Part]) -> None:
    reach: Optional[Part] = None  # the part reaching furthest right so far
    for part in by_position:
        if reach is not None and part.start < reach.end and part.annotation != reach.annotation:
            first, second = sorted((reach.annotation, part.annotation))
            raise OverlapError(first, second)
        if reach is None or part.end > reach.end:
            reach = part


# -- the JSON augment format --------------------------------------------------
def voronoi_block(
    record: Mapping[str, Any],
    ratios: Iterable[float] = DEFAULT_RATIOS,
    on_overlap: str = "merge",
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
    generated_at: str = "",
) -> Dict[str, Any]:
    """``chunk_variants.voronoi_v1`` for a validated annotated-document record."""
    text = record["full_text"]
    annotations = record["annotations"]
    ratios = validate_ratios(ratios)
    result = compute(
        text,
        [[(s["start_char"], s["end_char"]) for s in a["evidence_spans"]] for a in annotations],
        ratios,
        on_overlap,
        multi_span_gap,
    )
    chunks = []
    for part in result.parts:
        variants = {}
        for ratio in ratios:
            start, end = part.variants[ratio]
            variants[ratio_key(ratio)] = {"text": text[start:end], "span": [start, end]}
        chunks.append(
            {"hpo_id": annotations[part.annotation]["hpo_id"], "annotation_span": [part.start, part.end], "variants": variants}
        )
    return {
        "provenance": {
            "script_version": SCRIPT_VERSION,
            "generated_at": generated_at,
            "parameters": {
                "expansion_ratios": list(ratios),
                "strategy": STRATEGY,
                "on_overlap": on_overlap,
                "multi_span_gap": multi_span_gap,
            },
        },
        "chunks": chunks,
    }


def same_block(old: Any, new: Mapping[str, Any]) -> bool:
    """Whether two ``voronoi_v1`` blocks agree in everything but ``generated_at``."""
    if not isinstance(old, dict) or not isinstance(old.get("provenance"), dict):
        return False

    def strip(block: Mapping[str, Any]) -> Dict[str, Any]:
        copy = dict(block)
        copy["provenance"] = {k: v for k, v in block["provenance"].items() if k != "generated_at"}
        return copy

    return strip(old) == strip(new)
