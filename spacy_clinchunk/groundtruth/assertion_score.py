"""Assertion quality against annotated ground truth, as spaCy scores it.

An annotated document (our JSON, brat or BioC, read by :mod:`.reader`) gives each annotation
an ``assertion_status`` (``Span._.clin_assertion`` of ``doc.spans["annotations"]``; a missing
status reads as ``affirmed``, the formats' default). The pipeline's status of an annotation
is the status of the predicted span that overlaps it most in the scored group (the chunk a
user sees, ``clin_chunks`` by default): what a filter on ``affirmed`` would return. An
annotation no predicted span touches counts as ``affirmed`` (nothing marks it otherwise).

Scores, pooled over the examples (micro averages), in spaCy's naming:

* ``assertion_acc``: share of annotations whose label is the annotated one;
* ``assertion_per_status``: ``{status: {"p", "r", "f"}}`` for every status: an annotation is
  flagged with a status when it is the span's label or among its ``assertion_statuses``
  (``affirmed``: the label only);
* ``assertion_wrongly_present``: share of the annotations that are not ``affirmed`` whose
  span reads plain ``affirmed`` (the figure a cohort query or a RAG filter suffers from);
* ``assertion_annotations``: how many annotations were scored.

``spacy_clinchunk.AssertionScorer.v1`` (``@scorers``) is the default ``scorer`` of
``clin_context_assertion``, so ``nlp.evaluate(examples)`` and ``spacy train`` report these
beside the chunk scores; ``evaluate`` prints them when the pipeline assigns statuses.
"""

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from spacy.tokens import Span
from spacy.training import Example
from spacy.util import registry

from .. import attrs

AFFIRMED = "affirmed"
# what `spacy train` weighs (accuracy) and shows without weighing
ASSERTION_SCORE_WEIGHTS: Dict[str, Optional[float]] = {
    "assertion_acc": 1.0,
    "assertion_wrongly_present": None,
    "assertion_per_status": None,
}
_LOOK_BACK = 8  # spans before the bisect point that may still reach an annotation (pieces overlap)


@dataclass
class AssertionTally:
    """The counts behind the scores; tallies of several examples add up."""

    annotations: int = 0
    correct: int = 0
    traps: int = 0  # annotated as anything but affirmed
    traps_affirmed: int = 0
    counts: Dict[str, List[int]] = field(default_factory=dict)  # status -> [tp, fp, fn]

    def add(self, gold: str, label: str, flags: frozenset) -> None:
        self.annotations += 1
        self.correct += gold == label
        if gold != AFFIRMED:
            self.traps += 1
            self.traps_affirmed += label == AFFIRMED
        for status in attrs.ASSERTION_LABELS:
            is_gold, is_ours = gold == status, (label == status if status == AFFIRMED else status in flags)
            tp_fp_fn = self.counts.setdefault(status, [0, 0, 0])
            tp_fp_fn[0] += is_gold and is_ours
            tp_fp_fn[1] += is_ours and not is_gold
            tp_fp_fn[2] += is_gold and not is_ours

    def __add__(self, other: "AssertionTally") -> "AssertionTally":
        total = AssertionTally(
            self.annotations + other.annotations,
            self.correct + other.correct,
            self.traps + other.traps,
            self.traps_affirmed + other.traps_affirmed,
        )
        for status in {*self.counts, *other.counts}:
            mine, theirs = self.counts.get(status, [0, 0, 0]), other.counts.get(status, [0, 0, 0])
            total.counts[status] = [a + b for a, b in zip(mine, theirs)]
        return total

    def scores(self) -> Dict[str, Any]:
        """spaCy-style scores; ``None`` where nothing was there to score."""
        return {
            "assertion_acc": self.correct / self.annotations if self.annotations else None,
            "assertion_per_status": {s: _prf(*self.counts[s]) for s in sorted(self.counts) if any(self.counts[s])},
            "assertion_wrongly_present": self.traps_affirmed / self.traps if self.traps else None,
            "assertion_annotations": self.annotations,
        }


def _prf(tp: int, fp: int, fn: int) -> Dict[str, float]:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"p": p, "r": r, "f": 2 * p * r / (p + r) if p + r else 0.0}


def holding_spans(spans: Sequence[Span], ranges: Sequence[Tuple[int, int]]) -> List[Optional[Span]]:
    """For each character range, the span of ``spans`` (sorted by start) overlapping it most
    (``None`` when none does); linear in spans and ranges together for non-nested groups."""
    starts = [span.start_char for span in spans]
    found: List[Optional[Span]] = []
    for start, end in ranges:
        best, best_overlap = None, 0
        for span in spans[max(bisect_right(starts, start) - 1 - _LOOK_BACK, 0) :]:
            if span.start_char >= end:
                break
            overlap = min(span.end_char, end) - max(span.start_char, start)
            if overlap > best_overlap:
                best, best_overlap = span, overlap
        found.append(best)
    return found


def example_tally(example: Example, spans_key: str, prefix: str = attrs.PREFIX) -> AssertionTally:
    """Counts for one ``Example``: statuses from ``predicted``, annotations from ``reference``."""
    reference, predicted = example.reference, example.predicted
    if reference.text != predicted.text:
        raise ValueError("reference and predicted texts differ")
    annotations = list(reference.spans.get(attrs.ANNOTATIONS_KEY, []))
    spans = sorted(predicted.spans.get(spans_key, []), key=lambda s: (s.start_char, s.end_char))
    tally = AssertionTally()
    holders = holding_spans(spans, [(a.start_char, a.end_char) for a in annotations])
    for annotation, holder in zip(annotations, holders):
        gold = annotation._.get(attrs.ext("assertion")) or AFFIRMED
        tally.add(gold, *_status_of(holder, prefix))
    return tally


def _status_of(span: Optional[Span], prefix: str) -> Tuple[str, frozenset]:
    if span is None:
        return AFFIRMED, frozenset()
    label = span._.get(prefix + "assertion") or AFFIRMED
    return label, frozenset(span._.get(prefix + "assertion_statuses") or ()) | {label}


class AssertionScorer:
    """Assertion scorer: a ``scorers`` function and an ``nlp.evaluate(scorer=...)`` object.

    ``score(examples, spans_key=...)`` scores that group instead of the scorer's own, as
    ``clin_context_assertion`` asks for the first group it annotates.
    """

    def __init__(self, spans_key: str = attrs.CHUNKS_KEY, extension_prefix: str = attrs.PREFIX) -> None:
        self.spans_key = spans_key
        self.extension_prefix = extension_prefix

    def tally(self, examples: Iterable[Example], spans_key: Optional[str] = None) -> AssertionTally:
        total = AssertionTally()
        for example in examples:
            total = total + example_tally(example, spans_key or self.spans_key, self.extension_prefix)
        return total

    def score(self, examples: Iterable[Example], *, spans_key: Optional[str] = None, **kwargs: Any) -> Dict[str, Any]:
        return self.tally(examples, spans_key).scores()

    __call__ = score


@registry.scorers("spacy_clinchunk.AssertionScorer.v1")
def make_assertion_scorer(spans_key: str = attrs.CHUNKS_KEY, extension_prefix: str = attrs.PREFIX) -> AssertionScorer:
    """Registered scorer: ``{"@scorers": "spacy_clinchunk.AssertionScorer.v1"}``."""
    return AssertionScorer(spans_key, extension_prefix)
