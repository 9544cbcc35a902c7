"""The assertion status of spans: which cues and sections govern each span, and which label wins.

A cue outside a span governs it as ConText says (``ConTextModifier.modifies``). ConText
never lets a cue modify a target it overlaps, but a chunk is often "no developmental
delay" with the cue inside: such a cue governs the span when nothing but light words
(stop words, "patient", ...) of the span lies before the cue's reach. A section with a
status (past history -> historical, family history -> family) governs what it holds unless
a cue of that status already does, or a cue whose rule ``cancels_section`` that status
("currently", "aktuell") governs the span; an exception cue (``metadata.cancels``: "bis auf",
"except for") lifts the statuses it names, cues' and section's. One label per span by
:data:`~.rules.PRECEDENCE`.
"""
from bisect import bisect_left, bisect_right
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

from spacy.tokens import Doc, Span

from .cues import CueMatcher
from .layout import DocLayout
from .rules import CATEGORY_LABELS, PRECEDENCE, QUALIFIES_WORD, rule_metadata
from .lists import ListGrammar
from .scopes import UnitModifiers, unit_modifiers
from .sections import Section, SectionTable

Cue = Dict[str, Any]
_FORWARD = ("FORWARD", "BIDIRECTIONAL")


class Assertion(NamedTuple):
    """What the engine found for one span (plain JSON values)."""

    label: str  # the deciding status, or "affirmed"
    statuses: List[str]  # every governing status, in precedence order
    cues: List[Cue]  # the cues of the deciding status, in text order
    section: Optional[str]  # the name of the section the span stands in


class AssertionEngine:
    """Compiled rules, the section table and light words of one component."""

    def __init__(
        self, matcher: CueMatcher, sections: SectionTable, light_words: Set[str], max_scope: Optional[int],
        abbreviations: FrozenSet[str] = frozenset(),
        attributive: FrozenSet[str] = frozenset(),
        lowercase_continues: bool = False,
        list_grammar: ListGrammar = ListGrammar(),
    ) -> None:
        self.matcher = matcher
        self.list_grammar = list_grammar
        self.lowercase_continues = lowercase_continues
        self.abbreviations = abbreviations
        self.attributive = attributive
        self.sections = sections
        self.light_words = light_words
        self.max_scope = max_scope

    def annotate(
        self, doc: Doc, groups: Sequence[Iterable[Span]], text: Optional[str] = None, sections_key: Optional[str] = None
    ) -> Iterator[Tuple[Span, Assertion]]:
        """(span, assertion) for every span of ``groups``, all spans of one doc (``text``:
        ``doc.text``, when the caller has it: spaCy joins the tokens anew on each read).

        ``sections_key``: the doc's section span group. When the doc has it (an earlier run or
        component wrote it), its sections are the ones used; when it has none, the sections
        found here are written to it, so chunks, records and the view read one segmentation."""
        given = list(doc.spans[sections_key]) if sections_key and sections_key in doc.spans else None
        layout = DocLayout(
            doc, self.sections, doc.text if text is None else text, self.abbreviations, given, self.attributive,
            self.lowercase_continues,
        )
        if sections_key and given is None:
            write_sections(doc, sections_key, layout.sections)
        per_unit = unit_modifiers(doc, self.matcher, layout, self.max_scope, self.list_grammar)
        for targets in groups:
            for target in targets:
                yield target, self.assess(target, per_unit, layout)

    def assess(self, target: Span, per_unit: List[UnitModifiers], layout: DocLayout) -> Assertion:
        unit_starts = layout.unit_starts
        first = max(bisect_right(unit_starts, target.start) - 1, 0)
        last = max(bisect_left(unit_starts, target.end) - 1, first)
        governing: Dict[str, List[Any]] = {}
        cancelled: Set[str] = set()  # section statuses a governing cue lifts ("now", "aktuell")
        excepted: Set[str] = set()  # statuses an exception cue lifts ("bis auf", "except for")
        seen = set()
        section = layout.section_at(target.start)
        section_name = section.name if section is not None else None
        core_end = _before_closing_aside(target, layout)
        for u in range(first, last + 1):
            for modifier in per_unit[u].near(target.start, target.end):
                if id(modifier) in seen:
                    continue
                seen.add(id(modifier))
                if modifier.direction == "PSEUDO":
                    denied = _pseudo_inside(modifier, target)
                    if denied is not None:  # "had no [changes in the SSEPs]": the concept is what "no" denies
                        governing.setdefault(denied, []).append(modifier)
                    continue
                if modifier.direction == "TERMINATE" or _idle_in(modifier, section_name):
                    continue
                label, lifts = self._status_given(modifier, target), _cancels_section(modifier)
                drops = _cancels(modifier)
                if (label is None and not lifts and not drops) or not self._governs(modifier, target, core_end):
                    continue
                cancelled.update(lifts)
                excepted.update(drops)
                if label is not None:
                    governing.setdefault(label, []).append(modifier)
        for label in excepted:
            governing.pop(label, None)
        cancelled.update(excepted)
        if section is not None and section.label and section.label not in governing and section.label not in cancelled:
            governing[section.label] = [section]
        if not governing:  # most spans: no cue, no section status
            return Assertion("affirmed", [], [], section.name if section is not None else None)
        _give_way(governing)
        decided = next((label for label in PRECEDENCE if label in governing), "affirmed")
        cues = [cue_of(target.doc, m, layout) for m in governing.get(decided, ())]
        if len(cues) > 1:
            cues = _one_per_site(cues)
        return Assertion(
            decided,
            [label for label in PRECEDENCE if label in governing],
            cues,
            section.name if section is not None else None,
        )

    def _governs(self, modifier: Any, target: Span, core_end: int) -> bool:
        """Whether ``modifier`` governs ``target``; ``core_end``: where the target ends without a
        bracketed aside that closes it (:func:`_before_closing_aside`)."""
        m_start, m_end = modifier.modifier_span
        if m_end <= target.start or m_start >= target.end:  # cue outside: plain ConText
            return modifier.modifies(target)
        if m_start < target.start:  # cue straddles the span start: treat as leading cue
            return True
        if _in_compound(target, m_start, m_end):  # "history" in "history-taking" names the concept
            return False
        if _qualifies_word(modifier) and self._runs_on(target.doc, m_end, target.end):
            return False  # "HP-negative [gastritis]": the marker is negative, the finding after it is there
        if _names_the_finding(modifier) and not _comma_between(target.doc, target.start, m_start):
            return True  # "transferred to recovery in stable condition": the cue is the clause's finding
        closes_core = m_end >= core_end and m_start < core_end  # the cue ends the span, or what precedes its aside
        if _normal_by_itself(modifier) and closes_core and not _comma_between(target.doc, target.start, m_start):
            return True  # "[Abdomen nontender]": the subject examined, found as the closing word says
        # cue inside the span: what of the span lies before the cue's reach must be light,
        # or a forward cue's scope runs to the span's end with no comma before the cue: the
        # span's last words, where a finding's head stands, are what it governs ("Evaluation
        # revealed no further bleeding", "Skin warm and dry without lesions")
        reach = m_start
        s_start, s_end = modifier.scope_span
        if modifier.direction != "FORWARD" and s_end > s_start:
            reach = min(m_start, s_start)
        if reach <= target.start or self._light(target.doc, target.start, reach):
            return True
        # a status cue whose own words run past the span's end and hold findings there holds the span's
        # last words itself (a risk-list cue "risks of infection, bleeding, ..." cut by a chunk after
        # "bleeding"); a cue that ends with the span ("... mit fragl.") governs what follows it, and one
        # cut inside its own few words ("Gezielt verneint | werden:") holds no finding of the span
        reaches_end = (m_end < target.end and s_start <= m_end and s_end >= target.end) or (
            m_end > target.end
            and modifier.category in CATEGORY_LABELS
            and _holds_a_phrase(target.doc, m_start, target.end)
        )
        if _comma_between(target.doc, target.start, m_start):
            return False
        # a backward cue that closes the span governs the words just before it, where the span's
        # finding stands ("Will start heparin for [DVT] prophylaxis", "omeprazole for [stress ulcer]
        # prophylaxis"): the mirror of a forward cue whose scope runs to the span's end
        closes_span = (
            modifier.direction != "FORWARD"
            and closes_core
            and target.start < s_start < m_start
            and not self._joins(target.doc, s_start, m_start)
            and not _denies_inside(modifier)
        )
        return closes_span or (modifier.direction in _FORWARD and reaches_end)

    def _status_given(self, modifier: Any, target: Span) -> Optional[str]:
        """The status a cue gives ``target`` (:func:`_label_for`), except that a cue which denies
        only what lies inside it gives its own category's status to a span that names its subject
        first ("[Neurologisch ohne pathologischen Befund]", "[Miktion ohne Auffälligkeiten]",
        "[Echo abdomen zonder afwijkingen]": the examination is normal); a span that begins with
        the cue, or has only light words before it ("There is no acute abnormality"; the French light
        words hold "examen"), is what the cue denies."""
        label = _label_for(modifier, target)
        m_start = modifier.modifier_span[0]
        if (
            _denies_inside(modifier)
            and modifier.direction != "FORWARD"
            and target.start < m_start < target.end
            and not _comma_between(target.doc, target.start, m_start)
            and not self._light(target.doc, target.start, m_start)
        ):
            return CATEGORY_LABELS.get(modifier.category)
        return label

    def _joins(self, doc: Doc, start: int, end: int) -> bool:
        """A coordination joiner among the tokens ``start:end`` ("in gutem Allgemeinzustand und
        beschwerdefrei"): the words before a closing cue hold two findings, not one."""
        return any(doc[i].lower_ in self.list_grammar.joiners for i in range(start, end))

    def _runs_on(self, doc: Doc, start: int, end: int) -> bool:
        """Words that are not light among the tokens ``start:end`` before a comma: the span names
        something after the cue ("Gram-negative bacteremia"), not only what the cue qualifies."""
        for i in range(start, end):
            if doc[i].text == ",":
                return False
            if not self._light(doc, i, i + 1):
                return True
        return False

    def _light(self, doc: Doc, start: int, end: int) -> bool:
        for token in doc[start:end]:
            if token.is_space or token.is_punct or token.is_stop or token.like_num:
                continue
            if token.lower_ in self.light_words:
                continue
            return False
        return True


def _one_per_site(cues: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The cues in text order, one per site: two rules of one category on the same words (each
    read in its own direction, see ``cues._longest_first``) are one cue to a reader."""
    cues = sorted(cues, key=lambda c: (c["start_char"], c["end_char"]))
    sites = set()
    kept = []
    for cue in cues:
        site = (cue["start_char"], cue["end_char"], cue["category"])
        if site not in sites:
            sites.add(site)
            kept.append(cue)
    return kept


def _comma_between(doc: Doc, start: int, end: int) -> bool:
    """A comma before the cue inside the span: the span lists items ("Soft, non-tender,
    non-distended"), and a cue of a later item does not speak for the whole span."""
    return any(doc[i].text == "," for i in range(start, end))


def _holds_a_phrase(doc: Doc, start: int, end: int) -> bool:
    """The tokens ``start:end`` hold a list (a comma) or at least three words: more than the few
    words of a cue's own wording."""
    words = 0
    for token in doc[start:end]:
        if token.text == ",":
            return True
        words += not (token.is_space or token.is_punct)
    return words >= 3


def write_sections(doc: Doc, key: str, sections: Sequence[Section]) -> None:
    """The sections as a span group: one span per section (its header and body, trailing space
    trimmed), labelled with its category, in text order."""
    spans = []
    for section in sections:
        end = section.end
        while end > section.head_start and doc[end - 1].is_space:
            end -= 1
        if end > section.head_start and section.name:
            spans.append(Span(doc, section.head_start, end, label=section.name))
    doc.spans[key] = sorted(spans, key=lambda span: (span.start, span.end))


def _give_way(governing: Dict[str, List[Any]]) -> None:
    """A status whose every cue yields to another status that also governs is dropped: a
    rule's ``metadata.yields_to`` lists those ("History of febrile seizures, resolved" is
    historical: "resolved" says the finding ended, the history says when it was)."""
    for label in list(governing):
        yielding = [_yields_to(m) for m in governing[label]]
        if all(yielding) and any(other in governing for names in yielding for other in names if other != label):
            del governing[label]


def _label_for(modifier: Any, target: Span) -> Optional[str]:
    """The status a cue gives ``target``: its category's, except that a cue overlapping the
    span gives the rule's ``metadata.inside_span`` status when it has one. "No acute
    intracranial abnormality" calls the CT before it normal, while the concept
    "acute intracranial abnormality" inside the cue is absent: ``negated``."""
    label = CATEGORY_LABELS.get(modifier.category)
    m_start, m_end = modifier.modifier_span
    if label is not None and m_start < target.end and target.start < m_end:
        inside = rule_metadata(modifier.rule, "inside_span")
        if isinstance(inside, str) and inside in PRECEDENCE:
            return inside
    return label


def _pseudo_inside(modifier: Any, target: Span) -> Optional[str]:
    """A pseudo cue keeps its head word off what follows it ("no change in [the mass]": the mass
    is there), but a span that begins among the cue's own later words is what the head word
    speaks of ("no [change in the SSEPs]", "keine [Befundänderung]"), and so is a span that lies
    within the cue ("([Fokus pulmonal] oder Harnwege)") or (a chunk) ends with it ("[the case had
    no changes]"): the rule's ``metadata.inside_span`` status, when it has one. A span that
    begins with the cue and runs past it ("[no change in the mass]") is what the cue protects."""
    m_start, m_end = modifier.modifier_span
    begins_inside = m_start < target.start < m_end or (m_start == target.start and target.end <= m_end)
    if not (begins_inside or (target.start <= m_start and target.end == m_end)):
        return None
    inside = rule_metadata(modifier.rule, "inside_span")
    return inside if isinstance(inside, str) and inside in PRECEDENCE else None


def _inside_and_own(modifier: Any) -> Tuple[Optional[str], Optional[str]]:
    """What a cue says of the words inside it (``metadata.inside_span``, None when unset) and what it
    says of the words it governs (its category's status): the three readings below compare the two."""
    return rule_metadata(modifier.rule, "inside_span"), CATEGORY_LABELS.get(modifier.category)


def _names_the_finding(modifier: Any) -> bool:
    """A cue that is a finding of its own status ("in stable condition", "in stabilem Zustand":
    ``metadata.inside_span`` equal to its category's status): a clause holding it reports that
    finding, whatever words of the clause come before it."""
    inside, own = _inside_and_own(modifier)
    return inside is not None and inside == own


def _normal_by_itself(modifier: Any) -> bool:
    """A self-negating exam word ("nontender", "afebrile": a denial whose ``metadata.inside_span`` is
    ``normal``): closing a span after its subject with no comma between ("[Abdomen nontender]", "[The
    abdomen is nontender]"), it reports the subject examined and found normal, whichever way it reads."""
    return _inside_and_own(modifier) == ("normal", "negated")


def _qualifies_word(modifier: Any) -> bool:
    """A cue that speaks only of the word it is glued to (a rule's ``metadata.qualifies_word``: the
    marker in "HP-negative", "ER-negative"): a span that runs on past the cue names a finding of its
    own, which the cue leaves alone ("HP-negative gastritis" is a gastritis)."""
    return rule_metadata(modifier.rule, QUALIFIES_WORD) is True


def _denies_inside(modifier: Any) -> bool:
    """A cue that denies what lies inside it and speaks of the words before it otherwise ("TC craneal
    sin hallazgos agudos", "no acute intracranial abnormality": the scan normal, the findings absent;
    ``metadata.inside_span`` ``negated`` unlike its category's status). A span it closes holds both,
    so closing it decides nothing; the cue's own scope still does."""
    inside, own = _inside_and_own(modifier)
    return inside == "negated" and own != "negated"


def _cancels_section(modifier: Any) -> Tuple[str, ...]:
    """The section statuses a cue lifts from what it governs (a rule's ``metadata.cancels_section``):
    under "Past history:", "currently on dialysis for renal failure" is no past event. Only the
    section's status goes; a cue of the same status still holds."""
    names = rule_metadata(modifier.rule, "cancels_section")
    return tuple(n for n in names if n in PRECEDENCE) if isinstance(names, list) else ()


def _idle_in(modifier: Any, section_name: Optional[str]) -> bool:
    """Whether a cue says nothing in the span's section (a rule's ``metadata.idle_in_sections``):
    under "Indications:" "a boy with a history of hypospadias" names the condition the operation
    treats now, so "history" dates nothing there; under "Past history:" or in a narrative it does."""
    if section_name is None:
        return False
    names = rule_metadata(modifier.rule, "idle_in_sections")
    return isinstance(names, list) and section_name in names


def _cancels(modifier: Any) -> Tuple[str, ...]:
    """The statuses an exception cue lifts from what it governs, cues' and section's alike (a
    rule's ``metadata.cancels``): in "Neurologisch bis auf einen leichten Tremor unauffällig" the
    tremor is the exception to "unauffällig", so it is not ``normal``."""
    names = rule_metadata(modifier.rule, "cancels")
    return tuple(n for n in names if n in PRECEDENCE) if isinstance(names, list) else ()


def _yields_to(modifier: Any) -> Tuple[str, ...]:
    if isinstance(modifier, Section):
        return ()
    names = rule_metadata(modifier.rule, "yields_to")
    return tuple(names) if isinstance(names, list) else ()


def cue_of(doc: Doc, modifier: Any, layout: Optional[DocLayout] = None) -> Cue:
    """A governing cue as a plain dict: text, category, direction, literal, offsets
    (from the ``layout``'s token offsets when given, without making a ``Span``)."""
    if isinstance(modifier, Section):
        return modifier.cue()
    start, end = modifier.modifier_span
    if layout is not None and end > start:
        start_char, end_char = layout.idx[start], layout.char_end(end - 1)
        text = layout.text[start_char:end_char]
    else:
        span = doc[start:end]
        text, start_char, end_char = span.text, span.start_char, span.end_char
    return {
        "text": text,
        "category": modifier.category,
        "direction": modifier.direction,
        "literal": modifier.rule.literal,
        "start_char": start_char,
        "end_char": end_char,
    }


def _before_closing_aside(target: Span, layout: DocLayout) -> int:
    """Where ``target`` ends without the bracketed aside that closes it: "raucht nicht
    (Nikotinabstinenz seit 2010)" is closed by its "nicht" as "raucht nicht" is; the aside
    qualifies what stands before it. The span's own end when no bracket group of the layout
    closes it, or the group opens it."""
    last = target.end - 1
    group = layout.bracket_group(last - 1) if last > target.start else None
    if group is None or group[1] != last or group[0] <= target.start:
        return target.end
    return group[0]


def _in_compound(target: Span, start: int, end: int) -> bool:
    """A cue glued by a hyphen to a word of the concept is part of its name."""
    doc = target.doc
    after = end + 1 < target.end and doc[end].text == "-" and not doc[end - 1].whitespace_
    before = start - 2 >= target.start and doc[start - 1].text == "-" and not doc[start - 2].whitespace_
    return after or before
