"""clin_concept_focus: learned concept spans as the focus of each clause chunk, the rules elsewhere.

The rule focus spans of ``clin_focus`` keep concepts whole but carry framing; a span_finder
fine-tuned on annotated concept mentions (``configs/training/concept_spans.cfg``, issue 29)
finds tighter spans but misses some and cuts coordinations. This component, run after
``clin_focus`` and the trained ``span_finder``, rewrites the focus group so that each takes
the part it does best:

* the learned spans (``concepts_key``) are focus spans; with ``nearest`` each learned start
  keeps only its shortest span (span_finder proposes every start-end pair within its
  ``max_length``, so nested pairs repeat one concept);
* a chunk that no learned span overlaps keeps its rule focus spans (the model found nothing:
  the rules are the fallback);
* with ``keep_coordination``, a rule focus span of a chunk that holds a coordination (a
  joiner such as "and"/"or", a comma, a slash: "aplastic or hypoplastic nails") and
  overlaps one of the learned spans stays beside them, whole.

Every focus span is linked to the chunk it overlaps most (``Span._.clin_focus_of``, and the
chunk's ``Span._.clin_focus_ids``) and carries that chunk's assertion, as ``clin_focus``
does. A learned span that overlaps no chunk (text the cleaner dropped) is left out. The
combination is a pure function, :func:`combine_focus`, which ``bench/concept_spans.py``
scores, so the bench measures what ships.
"""

import re
from typing import Dict, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc

from .. import attrs
from .base import ChunkRefiner, refiner_factory
from .focus import phrase_regex, write_linked_focus
from ..resources_io import Override
from .settings import SettingError
from ..spans import Range, TokenIndex, doc_text

FACTORY = "clin_concept_focus"
LEARNED_KEY = "annotations"  # the span group configs/training/concept_spans.cfg's span_finder writes


@refiner_factory(
    FACTORY,
    scored=False,  # focus spans overlap; they are not a chunking
    assigns=("doc.spans", "span._.clin_focus_of", "span._.clin_focus_ids"),
    focus_key=attrs.FOCUS_KEY,
    concepts_key=LEARNED_KEY,
    nearest=True,
    keep_coordination=True,
)
def make_concept_focus(
    nlp: Language,
    name: str,
    focus_key: str,
    concepts_key: str,
    nearest: bool,
    keep_coordination: bool,
    spans_key: str, language: Optional[str], overrides: Dict[str, Override],  # every refiner's
) -> "ClinConceptFocus":
    if len({spans_key, focus_key, concepts_key}) < 3:
        raise SettingError(f"{name}: spans_key, focus_key and concepts_key must differ "
                           f"({spans_key!r}, {focus_key!r}, {concepts_key!r})")
    return ClinConceptFocus(nlp, name, spans_key=spans_key, language=language, overrides=overrides,
                            focus_key=focus_key, concepts_key=concepts_key, nearest=nearest,
                            keep_coordination=keep_coordination)


def nearest_spans(spans: Sequence[Range]) -> List[Range]:
    """Each start with its nearest end: the shortest of the spans that share a start."""
    shortest: Dict[int, int] = {}
    for start, end in spans:
        if start not in shortest or end < shortest[start]:
            shortest[start] = end
    return sorted(shortest.items())


def _overlap(a: Range, b: Range) -> int:
    return min(a[1], b[1]) - max(a[0], b[0])


def _keeps_rule_span(text: str, rule: Range, learned: Sequence[Range],
                     coordination: Optional["re.Pattern[str]"], keep_uncovered: bool) -> bool:
    """Whether a rule focus span stays beside a chunk's learned spans: a coordination that one
    of them overlaps (kept whole), or, with ``keep_uncovered``, a span none of them overlaps."""
    touched = any(_overlap(rule, span) > 0 for span in learned)
    if touched:
        return coordination is not None and coordination.search(text, rule[0], rule[1]) is not None
    return keep_uncovered


def combine_focus(
    text: str,
    chunks: Sequence[Range],
    rule_focus: Sequence[Range],
    rule_links: Sequence[Sequence[int]],
    learned: Sequence[Range],
    coordination: Optional["re.Pattern[str]"],
    keep_uncovered: bool = False,
) -> List[Tuple[int, int, int]]:
    """``(start, end, chunk number)`` of the combined focus spans, sorted, in linear time over
    sorted inputs. ``rule_links[k]`` are the indices into ``rule_focus`` of chunk ``k``'s
    rule focus spans; ``coordination`` (None: keep none) finds a coordination in a span.
    ``keep_uncovered``: a chunk's rule focus spans that overlap none of its learned spans stay
    too (the model found one concept of the chunk, the rules hold the others it missed)."""
    owners: Dict[Range, int] = {}
    learned = sorted(learned)
    first = 0  # the first learned span that may still overlap this chunk or a later one
    for number, chunk in enumerate(chunks):
        while first < len(learned) and learned[first][1] <= chunk[0]:
            first += 1
        inside: List[Range] = []
        k = first
        while k < len(learned) and learned[k][0] < chunk[1]:
            if _overlap(learned[k], chunk) > 0:
                inside.append(learned[k])
            k += 1
        rules = [rule_focus[i] for i in rule_links[number]]
        if not inside:
            kept = rules
        else:
            kept = [r for r in rules if _keeps_rule_span(text, r, inside, coordination, keep_uncovered)]
        for span in inside:
            best = owners.get(span)
            if best is None or _overlap(span, chunk) > _overlap(span, chunks[best]):
                owners[span] = number
        for span in kept:
            owners.setdefault(span, number)
    return sorted((s, e, n) for (s, e), n in owners.items())


class ClinConceptFocus(ChunkRefiner):
    """Rewrite the focus group from learned concept spans, the rule focus spans as fallback."""

    resource_names = ("coordination_joiners",)
    package_data = ()
    compiled = ("coordination_re",)

    def __init__(self, nlp: Language, name: str, *, focus_key: str, concepts_key: str, nearest: bool,
                 keep_coordination: bool, **kwargs) -> None:
        self.focus_key = focus_key
        self.concepts_key = concepts_key
        self.nearest = nearest
        self.keep_coordination = keep_coordination
        super().__init__(nlp, name, scorer=None, **kwargs)

    def setup(self) -> None:
        joiners = phrase_regex(self.resources["coordination_joiners"])
        marks = r"[,/]"
        self.coordination_re = re.compile(f"{joiners.pattern}|{marks}" if joiners else marks, re.IGNORECASE)

    def annotate(self, doc: Doc) -> None:
        chunks = list(doc.spans.get(self.spans_key, []))
        rules = list(doc.spans.get(self.focus_key, []))
        links = [list(c._.clin_focus_ids or []) for c in chunks]
        learned = [(s.start_char, s.end_char) for s in doc.spans.get(self.concepts_key, [])]
        if self.nearest:
            learned = nearest_spans(learned)
        text = doc_text(doc)
        owners = combine_focus(
            text, [(c.start_char, c.end_char) for c in chunks], [(s.start_char, s.end_char) for s in rules],
            links, learned, self.coordination_re if self.keep_coordination else None)
        index = TokenIndex(doc, text)
        placed: Dict[Tuple[int, int], int] = {}  # token range -> chunk number (the first wins)
        for s, e, number in owners:
            span = index.span(s, e)
            if span is not None:
                placed.setdefault((span.start, span.end), number)
        write_linked_focus(doc, self.focus_key, self.spans_key, chunks,
                           sorted((s, e, n) for (s, e), n in placed.items()))

