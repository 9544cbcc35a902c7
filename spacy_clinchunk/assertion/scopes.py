"""Cue scopes: each cue becomes a medspaCy ``ConTextModifier`` whose scope its unit bounds.

A cue's scope is its scope unit (see :mod:`.layout`), limited to ``max_scope`` tokens. A
forward cue that ends its unit reaches into the next one ("NEGATIVE FOR" at the end of a
line), and one whose unit ends with a colon governs the list below it ("Call if:").
Scopes are then cut by other modifiers (TERMINATE cues, same-category cues) with
``ConTextModifier.limit_scope`` in ``ConTextGraph.update_scopes`` order.
"""
from bisect import bisect_left, bisect_right
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from spacy.tokens import Doc

from ..spans import ITEM_LINE_MAX_CHARS
from .cues import CueMatcher
from .layout import DocLayout
from .lists import GOVERNS_LIST, ListGrammar, ListWalk, separates
from .rules import AFTER_CUE_ONLY, PASSES, SPARES, rule_metadata

# Scope limit (tokens) when the doc has no sentence boundaries and max_scope is null.
UNSEGMENTED_MAX_SCOPE = 30
# Cues whose scope reaches further than this many tokens from the cue are looked up
# one by one; the others through a window, so a long unit with many cues stays linear.
_NEAR = 64
_LIST_BULLETS = {"-", "*", "•", "·", "–", "+"}
Unit = Tuple[int, int]


def unit_modifiers(
    doc: Doc, matcher: CueMatcher, layout: DocLayout, max_scope: Optional[int], grammar: ListGrammar = ListGrammar()
) -> List["UnitModifiers"]:
    """The modifiers that reach into each scope unit, scopes already cut as ConText cuts them.

    ``grammar``: what the language's lists are made of, for the rules whose
    ``metadata.governs_list`` asks them to govern a list whole (see :mod:`.lists`)."""
    from medspacy.context import ConTextModifier

    limit = max_scope if (max_scope or layout.has_sents) else UNSEGMENTED_MAX_SCOPE
    units, unit_starts = layout.units, layout.unit_starts
    per_unit: List[List[Any]] = [[] for _ in units]
    found = matcher(doc, layout.is_cue_site, layout.text, layout.space, layout.lowers, layout.idx)
    if not found:
        return [NO_MODIFIERS] * len(units)
    walk = _list_walk(layout, matcher, found, grammar)
    lists: Dict[int, Unit] = {}  # id(modifier) -> the list it governs beyond its own reach
    for match_id, start, end in found:
        rule = matcher.rule_by_id[match_id]
        u = bisect_right(unit_starts, start) - 1
        u_start, u_end = units[u]
        rule_scope = rule.max_scope or limit
        floor = layout.field_floor(start, u_start)
        scope_start, scope_end = scope(rule.direction, rule_scope, start, end, floor, u_end)
        listed = _listed(walk, rule, start, end, floor, u_end) if walk is not None else None
        if listed is not None:  # "Na, K, Cl, Ca unauff.": the cue's list, however long
            scope_start, scope_end = min(scope_start, listed[0]), max(scope_end, listed[1])
        group = layout.bracket_group(start)
        if group is not None and end <= group[1]:  # a cue inside brackets: "(Veränderung ohne sichtbare RF, Biopsie)"
            scope_start, scope_end = _within_brackets(layout, group, start, scope_start, scope_end)
        later = _later_units(doc, layout, rule.direction, u, start, end, scope_end)
        if later:  # "NEGATIVE FOR" at the end of a line, "Call if:" over its list
            last = units[later[-1]][1]
            scope_end = last if rule_scope is None else min(last, end + rule_scope)
        modifier = ConTextModifier(rule, start, end, None, scope_start=scope_start, scope_end=scope_end)
        if listed is not None:
            lists[id(modifier)] = listed
        per_unit[u].append(modifier)
        for k in later:
            per_unit[k].append(modifier)
    for mods in per_unit:
        if len(mods) > 1:
            mods.sort(key=lambda m: m.modifier_span)
            update_scopes(mods, lists)
    return [UnitModifiers(mods) if mods else NO_MODIFIERS for mods in per_unit]


def _governs_list(rule: Any) -> bool:
    return rule_metadata(rule, GOVERNS_LIST) is True


def _listed(walk: ListWalk, rule: Any, start: int, end: int, floor: int, u_end: int) -> Optional[Unit]:
    """The tokens of the list a cue at ``start:end`` governs (None when its rule asks for no
    list or none is there): a bounded cue reaches past its ``max_scope`` over it, and the
    terminators between its items do not cut it (see :func:`update_scopes`)."""
    if not _governs_list(rule):
        return None
    if rule.direction in ("BACKWARD", "BIDIRECTIONAL"):
        first = walk.start_before(start, floor)
        return (first, start) if first < start else None
    if rule.direction == "FORWARD":
        last = walk.end_after(end, u_end)
        return (end, last) if last > end else None
    return None


def _list_walk(
    layout: DocLayout, matcher: CueMatcher, found: List[Tuple[int, int, int]], grammar: ListGrammar
) -> Optional[ListWalk]:
    """The list walker of this doc, when one of its cues governs a list (None otherwise)."""
    if not any(_governs_list(matcher.rule_by_id[match_id]) for match_id, _, _ in found):
        return None
    in_cue = [False] * len(layout.space)
    for match_id, start, end in found:
        if matcher.rule_by_id[match_id].direction == "TERMINATE" and _separator_only(layout, start, end, grammar.joiners):
            continue  # the comma before an item with its own predicate ends other cues' scopes, not a list
        for k in range(start, end):
            in_cue[k] = True
    return ListWalk(lambda k: layout.text_of(k, k + 1), layout.space, in_cue, grammar)


def scope(direction: str, limit: Optional[int], start: int, end: int, u_start: int, u_end: int) -> Tuple[int, int]:
    """The token range a cue at ``start:end`` governs inside its unit ``u_start:u_end``."""
    if direction == "FORWARD":
        return end, (u_end if limit is None else min(u_end, end + limit))
    if direction == "BACKWARD":
        return (u_start if limit is None else max(u_start, start - limit)), start
    if direction == "BIDIRECTIONAL":
        if limit is None:
            return u_start, u_end
        return max(u_start, start - limit), min(u_end, end + limit)
    return start, end  # TERMINATE / PSEUDO


def _within_brackets(layout: DocLayout, group: Unit, start: int, scope_start: int, scope_end: int) -> Unit:
    """The scope of a cue inside a bracket group that names its own subject before the cue: it
    stays between the brackets ("Os pubis (Veränderung ohne sichtbare RF, Biopsie), regionale
    Metastase": the metastasis is there). A group that opens with its cue speaks of what stands
    before it or is its own finding ("Lymphknoten (nicht vergrößert)", "septic shock (probable)",
    "(Vater Herzinfarkt mit 48 Jahren)"): its scope stays as found."""
    opened, closed = group
    if all(layout.space[k] for k in range(opened + 1, start)):
        return scope_start, scope_end
    return max(scope_start, opened + 1), min(scope_end, closed)


def _later_units(
    doc: Doc, layout: DocLayout, direction: str, u: int, start: int, end: int, scope_end: int
) -> List[int]:
    """Units after ``u`` that a forward cue governs: the next one when nothing follows
    the cue in its unit; every list item when its unit ends with a colon."""
    units, space = layout.units, layout.space
    if direction != "FORWARD" or u + 1 >= len(units):
        return []
    u_end = units[u][1]
    opens_list = _ends_with_colon(layout, units[u])  # "Gezielt verneint werden:" over the line below
    if scope_end >= u_end and opens_list:
        last = u  # the last unit of the list below (blank units between items included)
        k = u + 1
        while k < len(units):
            if _is_blank(space, units[k]):
                k += 1  # the line break between two items
                continue
            if not _is_list_item(layout, units[k]):
                break
            if k + 1 < len(units) and _is_bare_marker(doc, space, units[k]):
                k += 1  # a sentence splitter cut "1." from its item
            last = k
            k += 1
        if last > u:
            return list(range(u + 1, last + 1))
    if _ends_unit(layout, end, u_end) and (opens_list or _leads_unit(layout, units[u][0], start)):
        return [u + 1]
    return []


def _leads_unit(layout: DocLayout, unit_start: int, cue_start: int) -> bool:
    """Nothing but a label ("Urine: negative for"), a list marker or nothing stands before the
    cue in its unit: a cue after an item's own words ("Zopiclon 7,5 mg z.N.") ends with its
    line, and the next line is the next item."""
    words = [layout.text_of(i, i + 1) for i in range(unit_start, cue_start) if not layout.space[i]]
    if not words or words[-1] == ":":
        return True
    cue_char = layout.idx[cue_start]
    if cue_char - (layout.text.rfind("\n", 0, cue_char) + 1) > ITEM_LINE_MAX_CHARS:
        return True  # a long line is prose wrapped at its width ("Verlauf: ... Dieser wurde ohne" / "Komplikationen")
    return all(w in _LIST_BULLETS or w.rstrip(".)").isdigit() or w in ".)" for w in words)


def _ends_with_colon(layout: DocLayout, unit: Unit) -> bool:
    """The unit's last word is a colon, also when a flattened export put a comma after it
    ("Potential complications include:,1.  Infection.,2.  Bleeding.")."""
    space = layout.space
    words = [i for i in range(unit[1] - 1, max(unit[0] - 1, unit[1] - 8), -1) if not space[i]][:2]
    if not words:
        return False
    last = layout.text_of(words[0], words[0] + 1)
    if last == ":":
        return True
    return last == "," and len(words) == 2 and layout.text_of(words[1], words[1] + 1) == ":"


def _is_blank(space: List[int], unit: Unit) -> bool:
    return all(space[i] for i in range(*unit))


def _is_list_item(layout: DocLayout, unit: Unit) -> bool:
    """A unit that opens with a bullet or an item number ("- fever", "2. rash")."""
    space = layout.space
    words = [i for i in range(unit[0], min(unit[1], unit[0] + 4)) if not space[i]]
    if not words:
        return False
    first = layout.text_of(words[0], words[0] + 1)
    if first in _LIST_BULLETS:
        return True
    return first.rstrip(".)").isdigit() and (
        first[-1] in ".)" or len(words) > 1 and layout.text_of(words[1], words[1] + 1) in ".)"
    )


def _is_bare_marker(doc: Doc, space: List[int], unit: Unit) -> bool:
    return all(space[i] or doc[i].is_punct or doc[i].is_digit for i in range(*unit))


def _ends_unit(layout: DocLayout, cue_end: int, unit_end: int) -> bool:
    """Nothing follows the cue in its unit but space, or the period of an abbreviated
    cue that a sentence splitter took for a full stop ("V.a. Pneumonie")."""
    space = layout.space
    rest = [i for i in range(cue_end, unit_end) if not space[i]]
    if not rest:
        return True
    if len(rest) != 1:
        return False
    word = layout.text_of(rest[0], rest[0] + 1)
    return word == ":" or (word == "." and "." in layout.text_of(cue_end - 1, cue_end))


HEDGE = "POSSIBLE_EXISTENCE"  # the category whose adjacent cues read as one (:func:`_one_hedge`)


def _extent(m: Any) -> Tuple[int, int]:
    """Tokens a modifier touches: its cue and its scope."""
    return min(m.scope_span[0], m.modifier_span[0]), max(m.scope_span[1], m.modifier_span[1])


def update_scopes(mods: List[Any], lists: Optional[Dict[int, Unit]] = None) -> None:
    """medspaCy's ``ConTextGraph.update_scopes`` (same pair order, same ``limit_scope``),
    skipping pairs whose scopes cannot overlap, so a long unit is not quadratic.

    ``lists``: id of a modifier -> the list it governs (see :func:`_listed`); a terminator
    between the items of that list ("Na, K, Tri unauff.": the comma before an item with a
    predicate) cuts the scopes of other cues, not the list's own predicate."""
    lists = lists or {}
    starts = [m.modifier_span[0] for m in mods]
    far_left = [k for k, m in enumerate(mods) if starts[k] - _extent(m)[0] > _NEAR]
    for i in range(len(mods) - 1):
        first = mods[i]
        window_end = max(i + 1, bisect_left(starts, _extent(first)[1] + _NEAR))
        others = far_left[bisect_left(far_left, window_end):]
        for j in [*range(i + 1, window_end), *others]:
            second = mods[j]
            if _one_hedge(first, second):
                continue
            if not _inside_list(first, second, lists) and not _spared(first, second):
                first.limit_scope(second)
            if not _inside_list(second, first, lists) and not _spared(second, first):
                second.limit_scope(first)


def _one_hedge(first: Any, second: Any) -> bool:
    """Two hedges side by side read as one ("lijkt waarschijnlijk", "parece probable", "seems
    likely"): medspaCy's ``limit_scope`` would let each cut the other's reach, the first's forward
    scope ending at the second and the second's backward scope at the first, so that neither governs
    the finding before or after them. Only hedges (``POSSIBLE_EXISTENCE``): adjacent cues of other
    categories ("regelr. Sinusrhythmus", "in 2015 and 2018") keep medspaCy's cut, which the
    development notes were measured with."""
    if first.category.upper() != HEDGE or second.category.upper() != HEDGE:
        return False
    return first.modifier_span[1] == second.modifier_span[0] or second.modifier_span[1] == first.modifier_span[0]


def _spared(modifier: Any, other: Any) -> bool:
    """``other`` is a terminator that leaves ``modifier``'s scope uncut: its rule spares the
    modifier's category (``metadata.spares``: the comma before an item with a predicate of its own
    ends a denial, "No fever, elevated JVP", not a list of risks, "risks including bleeding,
    infection, elevated pressure"), or the modifier's rule passes it (``metadata.passes``, literals
    of terminators: a list of risks dictated with semicolons, "risks to include bleeding requiring
    transfusion; infection; sepsis", while "salbutamol zo nodig; vandaag piepende ademhaling" ends
    the "as needed" at the semicolon). A terminator before the cue is spared only when its rule ends
    what reads forward alone (``metadata.after_cue_only``: German "bei" inside a sentence ends "Keine
    Ödeme bei Herzinsuffizienz", not "Übelkeit wurde bei der Visite nicht angegeben"); any other still
    bounds the cue's backward reach ("Nodule du sein droit, biopsie programmée" keeps the plan off
    the nodule)."""
    if other.direction.upper() != "TERMINATE":
        return False
    if other.modifier_span[0] < modifier.modifier_span[1]:
        return rule_metadata(other.rule, AFTER_CUE_ONLY) is True
    # both are lists of strings or absent: compile_rules checks them
    spares, passes = rule_metadata(other.rule, SPARES) or (), rule_metadata(modifier.rule, PASSES) or ()
    return modifier.category.upper() in spares or other.rule.literal in passes


def _separator_only(layout: DocLayout, start: int, end: int, joiners: FrozenSet[str]) -> bool:
    """The cue's words are one list separator: a comma, a slash or a joiner ("and")."""
    return separates(layout.text_of(start, end).strip(), joiners)


def _inside_list(modifier: Any, other: Any, lists: Dict[int, Unit]) -> bool:
    """``other`` is a terminator between the items of the list ``modifier`` governs (only a
    separator can be: the walk of :mod:`.lists` stops at the words of any other cue)."""
    listed = lists.get(id(modifier))
    if listed is None or other.direction.upper() != "TERMINATE":
        return False
    return listed[0] <= other.modifier_span[0] and other.modifier_span[1] <= listed[1]


class UnitModifiers:
    """The modifiers of one scope unit, sorted, with a fast lookup of those near a span."""

    __slots__ = ("mods", "starts", "before", "after", "far")

    def __init__(self, mods: List[Any]) -> None:
        near, self.far = [], []
        self.starts: List[int] = []
        self.before = self.after = 0  # how far a scope reaches right / left of its cue start
        for m in mods:  # (scopes are final here: each extent is read once)
            lo, hi = _extent(m)
            start = m.modifier_span[0]
            if hi - start <= _NEAR and start - lo <= _NEAR:
                near.append(m)
                self.starts.append(start)
                self.before = max(self.before, hi - start)
                self.after = max(self.after, start - lo)
            else:
                self.far.append(m)
        self.mods = near

    def near(self, start: int, end: int) -> List[Any]:
        lo = bisect_left(self.starts, start - self.before)
        hi = bisect_right(self.starts, end + self.after)
        found = self.mods[lo:hi]
        for m in self.far:
            m_lo, m_hi = _extent(m)
            if m_lo < end and start < m_hi:
                found.append(m)
        return found


NO_MODIFIERS = UnitModifiers([])  # a unit without cues
