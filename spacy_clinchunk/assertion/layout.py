"""The layout of a note in tokens: scope units, header labels and sections.

Sections come from medspaCy's sectionizer when it has run (``doc._.sections``), else from
our header detection. Scope units are sentences (the whole doc when none are set), cut at
hard line breaks and before headers; header words are never cues, and no cue spans two
units.
"""
import re
from bisect import bisect_left, bisect_right
from typing import Callable, Dict, FrozenSet, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

from spacy.attrs import IDX, IS_SPACE, LENGTH, LOWER, SENT_START
from spacy.tokens import Doc, Span

from ..spans import hard_breaks, has_breaks, opens_its_word
from .sections import SECTIONIZER_STATUS, Section, SectionTable

# Section headers and form labels: an upper-case label followed by ':' (accented capitals
# too: "ANTÉCÉDENTS FAMILIAUX :", with the space French typography puts before a colon), or a
# short label at the start of a line followed by ':' and whitespace.
_UPPER = "A-Z\u00c0-\u00d6\u00d8-\u00de\u0152"
_UPPER_HEADER = re.compile(
    rf"(?<![\w/])[{_UPPER}][{_UPPER}0-9/&()'\-]+(?:[ \t]+[{_UPPER}0-9/&()'\-]+)*[ \t]*:(?!\d)"
)
# (at most five words: "Call for any of the following:" opens a list, it is no label)
# (a bullet or an item number may come first: "• Antecedentes personales:", "1. Past history:")
# (a report's date may close the label: "HNO-Konsil vom 27.05.2034:", "CT Thorax from 03/12/2021:")
# (a capitalised word may be cut short: "Körperl. Untersuchungsbefund:", "Therapievorschlag u. Procedere:";
# a bracket may qualify it: "Medikamente (letzte Gabe in 24 Stunden):"; a comma may join two headers:
# "Vorerkrankungen, Voroperationen:"; a letter may stand right after the colon: "Befunde:Klin. Chemie",
# these two only for a known or a dated label, see scan_headers)
_ABBREVIATED = r"(?:[A-Z\u00c4\u00d6\u00dc][^\s:.;,]*|[a-z\u00e4\u00f6\u00fc]{1,2})\.(?=[ \t])"
_LINE_LABEL = re.compile(
    rf"^[ \t]*(?:[-*\u2022\u00b7\u2013+][ \t]*|\d{{1,2}}[.)][ \t]+)?(?:{_ABBREVIATED}|[^\W\d_][^\s:.;,]*)"
    rf"(?:(?:[ \t]+|,[ \t]+(?=[A-Z\u00c4\u00d6\u00dc]))(?:{_ABBREVIATED}|[^\s:.;,]+)){{0,4}}"
    r"(?:[ \t]+(?:vom|am|from|on|of|del|de|du|le|van|op)[ \t]+\d{1,2}[./]\d{1,2}[./]\d{2,4})?"
    r"(?:[ \t]*\([^()\n:]{0,40}\))?[ \t]*:(?=\s|[^\W_])",
    re.MULTILINE,
)
# a label inside a line, after the end of a sentence ("Familienanamnese: leer. Sozialanamnese: Raucher",
# "Allergies: none. Medications: aspirin"): a header when the section table knows it, see _find_headers
_INLINE_LABEL = re.compile(
    r"(?:(?<=[.!?;][ \t])|(?<=[.!?;],)|(?<=[.!?;][ \t]{2}))[^\W\d_][^\s:.;,]*(?:[ \t]+[^\s:.;,]+){0,3}[ \t]*:(?=\s|[^\W_])"
)
# a title on its own line, without a colon: a report's ("Endoskopischer Befund vom 29.01.2039") or an
# examination's ("CT Abdomen und kl. Becken"); taken where the section table has heads (German), see _title_lines
_TITLE_LINE = re.compile(
    r"^[ \t]*(?:[-*\u2022\u00b7\u2013+][ \t]*)?([^\W\d_][^\n:]{2,70}?)[ \t]*$", re.MULTILINE
)
_DATE_END = re.compile(r"[ \t](?:(?:vom|am)[ \t]+)?\d{1,2}[./]\d{1,2}[./]\d{2,4}$")
_TITLE_WORDS = 8
_DATED = re.compile(r"\s(?:vom|am|from|on|of|del|de|du|le|van|op)\s+\d{1,2}[./]\d{1,2}[./]\d{2,4}$")
# a list marker at the start of a line: a bullet, or an item number ("2.", "3)")
_ITEM_MARKER = re.compile(r"[ \t]*(?:[-*\u2022\u00b7\u2013+](?=[ \t])|\d{1,2}[.)](?=[ \t]))")
_PARAGRAPH = re.compile(r"\n[^\S\n]*\n|,{2,}(?=\S)")  # a blank line, or one an export flattened (",,")
# Languages that open every sentence with a capital: there, a lower-case word after a word cut short by a
# period ("Rhythmusstör. fanden sich nicht") goes on with the sentence, abbreviation list or not. Dictated
# English and the Romance languages start sentences in lower case too often to rely on it.
LOWERCASE_CONTINUES = frozenset({"de"})


class DocLayout:
    """Where a doc's sentences, headers and sections are, in tokens.

    ``given_sections``: a section span group (``clin_sections``, each span a header and its
    body, labelled with its category) to use instead of the sections found here, so that
    every reader of a doc sees one segmentation.

    The token attributes the engine reads (space, offsets, lengths, lower forms) are taken
    from the doc once, as arrays: a ``Token`` made per look-up cost more than the lookups."""

    def __init__(
        self,
        doc: Doc,
        table: SectionTable,
        text: Optional[str] = None,
        abbreviations: FrozenSet[str] = frozenset(),
        given_sections: Optional[Sequence[Span]] = None,
        attributive: FrozenSet[str] = frozenset(),
        lowercase_continues: bool = False,
    ) -> None:
        n = len(doc)
        self.doc = doc
        self.text = doc.text if text is None else text
        columns = doc.to_array([SENT_START, IS_SPACE, IDX, LENGTH, LOWER]).T.tolist() if n else [[]] * 5
        sent = columns[0]  # 1 start, -1 (as unsigned) not, 0 unset
        self.space: List[int] = columns[1]
        self.idx: List[int] = columns[2]  # char offset of each token
        self.length: List[int] = columns[3]  # chars of each token
        self.lowers: Set[int] = set(columns[4])  # the LOWER hashes the doc holds
        self._groups: Optional[Dict[int, Tuple[int, int]]] = None  # token -> its innermost bracket group (on first use)
        self.has_sents = n > 1 and any(sent[1:])
        starts = {i for i, value in enumerate(sent) if value == 1} if self.has_sents else set()
        if (abbreviations or attributive or lowercase_continues) and starts:
            starts = {i for i in starts if not self._after_abbreviation(i, abbreviations, attributive, lowercase_continues)}
        if starts:
            starts = {i for i in starts if not self._after_glued_mark(i)}
        starts.add(0)
        # header label token ranges (never cues) and sections
        self.labels: List[Tuple[int, int]] = []
        self.field_starts: List[int] = []  # first word of each form field's value ("HEENT: [Normocephalic]")
        self.sections: List[Section] = []
        sectionized = Doc.has_extension("sections") and doc._.sections
        if sectionized:
            self._from_sectionizer(doc, starts)
        else:
            self._from_headers(doc, table, starts, given_sections)
        self.field_starts.sort()
        ordered = sorted(s for s in starts if 0 <= s < n)
        self.unit_starts = ordered
        self.units = [(s, ordered[k + 1] if k + 1 < len(ordered) else n) for k, s in enumerate(ordered)]
        self.label_starts = [a for a, _ in self.labels]
        self.section_starts = [sec.head_start for sec in self.sections]

    def _after_abbreviation(
        self, start: int, abbreviations: FrozenSet[str], attributive: FrozenSet[str], lowercase_continues: bool = False
    ) -> bool:
        """A sentence start the sentencizer set after an abbreviation's period, before a word in
        lower case ("Pupillen bds. isokor", "Pat. verneint"), or after one that stands before its
        noun, before any word ("keine path. Geräusche"): the sentence goes on. With
        ``lowercase_continues`` (languages that open every sentence in upper case, see
        :data:`LOWERCASE_CONTINUES`) any word cut short by a period goes on before a lower-case word,
        listed or not ("Besorgniserregende Rhythmusstör. fanden sich nicht")."""
        if start < 2 or self.length[start - 1] != 1:
            return False
        text, idx = self.text, self.idx
        first = text[idx[start]:idx[start] + 1]
        if text[idx[start - 1]] in ",;" and first.islower() and start >= 3 and self.length[start - 2] == 1:
            start -= 1  # "q.4h. p.r.n., pain", "bowel/bladder, etc.; small-bowel obstruction": a comma or semicolon after the period shows the sentence goes on
        period, word = idx[start - 1], idx[start - 2]
        if text[period] != "." or word + self.length[start - 2] != period:
            return False
        abbreviation = text[word:period].lower()
        if first.islower() and lowercase_continues and abbreviation.isalpha():
            return True
        if first.islower() or first.isdigit():
            return abbreviation in abbreviations or abbreviation in attributive
        return abbreviation in attributive

    def _after_glued_mark(self, start: int) -> bool:
        """A sentence start the sentencizer set after a question mark that opens the word glued
        to it ("Na, K, GOT, ?-GT, CK"; :func:`~spacy_clinchunk.spans.opens_its_word`)."""
        if start < 1 or self.length[start - 1] != 1:
            return False
        mark = self.idx[start - 1]
        return mark + 1 == self.idx[start] and opens_its_word(self.text, mark)

    def _stands_as_header(self, head: int, body: int) -> bool:
        """A title opens its line or ends with a colon."""
        text = self.text
        start = self.idx[head]
        if not text[text.rfind("\n", 0, start) + 1:start].strip():
            return True
        title_end = self.char_end(body - 1)
        return text[title_end - 1:title_end] == ":" or text[title_end:title_end + 1] == ":"

    def _token_holding(self, char: int) -> int:
        """Index of the token that holds ``char`` (the doc's length past its end): a flattened
        header's label may start inside a token (",FAMILY" of "cancer.,FAMILY HISTORY:")."""
        if char >= len(self.text):
            return len(self.idx)
        return max(bisect_right(self.idx, char) - 1, 0)

    def _token_at(self, char: int) -> int:
        """Index of the first token starting at or after ``char``."""
        return bisect_left(self.idx, char)

    def char_end(self, token: int) -> int:
        """The char offset where token ``token`` ends."""
        return self.idx[token] + self.length[token]

    def bracket_group(self, token: int) -> Optional[Tuple[int, int]]:
        """The innermost round-bracket group holding ``token``, as the tokens of its opening and
        closing brackets (None when there is none): "(lytisch-destruktive Veränderung ohne sichtbare
        RF, Biopsie)". Groups of more than :data:`BRACKET_MAX_TOKENS` tokens, and brackets without
        their pair ("1) Fieber"), count as none. Found for the whole doc on first use, in one pass."""
        if self._groups is None:
            self._groups = _bracket_groups(self.text, self.idx, self.length)
        return self._groups.get(token)

    def text_of(self, start: int, end: int) -> str:
        """The text of tokens ``start:end`` (``doc[start:end].text``), from the offsets."""
        return self.text[self.idx[start]:self.char_end(end - 1)] if end > start else ""

    def _from_sectionizer(self, doc: Doc, starts: set) -> None:
        for section in doc._.sections:
            head, body, end = section.title_start, section.body_start, section.body_end
            if head is not None and body is not None and body > head and not self._stands_as_header(head, body):
                continue  # "No known drug allergies." names no section
            name = section.category
            label = SECTIONIZER_STATUS.get(name) if name else None
            if head is not None and body is not None and body > head:
                self.labels.append((head, body))
                starts.update((head, body))
            starts.add(body)
            if name:  # medspaCy's Section stays outside: we keep its category, a string
                self.sections.append(Section(doc, head if head is not None else body, body, end, str(name), label))
        self.labels.sort()
        self.sections.sort(key=lambda sec: sec.head_start)

    def _from_headers(
        self, doc: Doc, table: SectionTable, starts: set, given_sections: Optional[Sequence[Span]] = None
    ) -> None:
        text = self.text
        for _, b_end in hard_breaks(text) if has_breaks(text) else ():
            starts.add(self._token_holding(b_end))  # a flattened comma may open its token (",FAMILY")
        hits = scan_headers(text, table, lambda word: doc.vocab[word].is_stop)
        label_ends: Dict[int, int] = {}
        for hit in hits:
            head_tok, label_tok = self._token_holding(hit.start), self._token_at(hit.label_end)
            starts.add(head_tok)
            if not hit.opens:
                continue  # "- Mother: diabetes" is an item of its section, not a new one
            label_ends[self.idx[head_tok] if head_tok < len(self.idx) else hit.start] = label_tok
            if hit.name is not None and label_tok > head_tok:
                self.labels.append((head_tok, label_tok))
            elif label_tok > head_tok:  # "HEENT: ... is not present": a field's value begins after its label
                self.field_starts.append(self._first_word(hit.body))
        if given_sections is not None:
            for span in given_sections:  # a group's section: its header is the label found at its start
                head_end = label_ends.get(span.start_char, span.start)  # the group's span starts at its label's token
                name = span.label_ or None
                self.sections.append(Section(doc, span.start, head_end, span.end, name, table.status_of(name)))
                starts.add(span.start)
            self.sections.sort(key=lambda sec: sec.head_start)
            return
        for hit, end in section_extents(text, hits):
            head_tok, end_tok = self._token_holding(hit.start), self._token_holding(end)
            self.sections.append(Section(doc, head_tok, self._token_at(hit.label_end), end_tok, hit.name, hit.status))

    def _first_word(self, char: int) -> int:
        token = self._token_at(char)
        while token < len(self.doc) and self.space[token]:
            token += 1
        return token

    def field_floor(self, start: int, unit_start: int) -> int:
        """Where a backward scope from a cue at ``start`` must stop: the first word of the form
        field's value the cue stands in, when the cue is not that word ("HEENT: X is not
        present" leaves the label alone; "Seizures: none" still negates its label)."""
        i = bisect_right(self.field_starts, start - 1) - 1
        if i >= 0 and unit_start <= self.field_starts[i] < start:
            return self.field_starts[i]
        return unit_start

    def is_cue_site(self, start: int, end: int) -> bool:
        """A cue lies within one scope unit and outside every header label."""
        starts = self.unit_starts
        if bisect_right(starts, start) != bisect_right(starts, end - 1):
            return False
        j = bisect_right(self.label_starts, end - 1) - 1
        return j < 0 or self.labels[j][1] <= start

    def section_at(self, token: int) -> Optional[Section]:
        i = bisect_right(self.section_starts, token) - 1
        if i >= 0:
            section = self.sections[i]
            if section.head_end <= token < section.end:
                return section
        return None


def abbreviation_set(words: Iterable[str]) -> FrozenSet[str]:
    """The lower-case abbreviations of a word list, without their final period ("bds." -> "bds")."""
    return frozenset(w.strip().lower()[:-1] for w in words if w.strip().endswith(".") and len(w.strip()) > 1)


class HeaderHit(NamedTuple):
    """A header or form label found in a text, in characters."""

    start: int  # where its label starts
    label_end: int  # where its label ends (before the colon)
    body: int  # where what it heads starts
    name: Optional[str]  # the section category of a known header; None for a form label
    status: Optional[str]  # the status its section gives what it holds
    opens: bool  # it ends the section before it (a known header, or a label opening its line)


def scan_headers(text: str, table: SectionTable, is_stop: Callable[[str], bool]) -> List[HeaderHit]:
    """The headers and form labels of ``text``, in order. A label whose last word is a stop word
    opens a list ("Call if:"), not a section; an unknown label that neither opens its line nor
    follows a flattened line break is an item of the section it stands in ("- Mother: diabetes").
    In a table with heads (German letters), an unknown label before the first known header belongs
    to the letter's head and opens no section."""
    hits: List[HeaderHit] = []
    known_before = False
    for head, label_end, body in _find_headers(text, table):
        label = text[head:label_end]
        name, status = table.lookup(label)
        if name is None and is_stop(label.split()[-1]):
            continue
        tight = body < len(text) and text[body - 1] == ":" and not text[body].isspace()
        if name is None and (tight or ", " in label) and not _is_upper_label(label) and not _DATED.search(label):
            continue  # "Zeit:12", "wach, Orientiert:": only a known or a dated label goes without the space
        opens = name is not None or _opens_section(text, head, label_end)
        if opens and name is None and table.by_head and not known_before:
            opens = False  # a letter's head ("Klinikvorstand:", "Betreff:", "Patientin:") comes before its first section
        known_before = known_before or name is not None
        hits.append(HeaderHit(head, label_end, body, name, status, opens))
    return hits


def section_extents(text: str, hits: Sequence[HeaderHit]) -> List[Tuple[HeaderHit, int]]:
    """(header, end char) of every known section: a section ends at the next header that opens
    one, known or not, or at a blank line once its body has begun; never later."""
    opened = [hit for hit in hits if hit.opens]
    extents = []
    for k, hit in enumerate(opened):
        if hit.name is None:
            continue  # an unknown header ends the section before it, but "Denies:" still negates
        end = opened[k + 1].start if k + 1 < len(opened) else len(text)
        extents.append((hit, _body_end(text, hit.body, end)))
    return extents


def _find_headers(text: str, table: SectionTable) -> List[Tuple[int, int, int]]:
    """(start, label end, body start) char offsets of the headers and form labels in ``text``."""
    found: List[Tuple[int, int, int]] = []
    regexes = [_UPPER_HEADER, _LINE_LABEL] if ":" in text else []
    if "\n" in text:
        regexes.append(table.line_header)
    if not regexes:  # a line without a colon or a break holds no header
        return found
    for regex in regexes:
        for match in regex.finditer(text):
            head, label_end = match.start(), match.end()
            marker = _ITEM_MARKER.match(text, head)
            head = marker.end() if marker else head
            while head < label_end and text[head].isspace():
                head += 1
            while label_end > head and (text[label_end - 1].isspace() or text[label_end - 1] == ":"):
                label_end -= 1
            if label_end > head:
                found.append((head, label_end, match.end()))
    if ":" in text:  # where a label already ends at the colon, it is the whole label ("Körperl. Untersuchung:")
        colons = {body for _, _, body in found}
        found.extend(label for label in _inline_labels(text, table) if label[2] not in colons)
    found.extend(_title_lines(text, table))
    # of labels ending at the same colon, the shortest: "No fever IMPRESSION:" -> "IMPRESSION"
    shortest: Dict[int, Tuple[int, int, int]] = {}
    for header in found:
        if header[2] not in shortest or header[0] > shortest[header[2]][0]:
            shortest[header[2]] = header
    kept: List[Tuple[int, int, int]] = []
    for header in sorted(shortest.values()):
        if kept and header[0] < kept[-1][2]:
            continue
        kept.append(header)
    return kept


def _inline_labels(text: str, table: SectionTable) -> List[Tuple[int, int, int]]:
    """Known section labels inside a line, after the end of a sentence: a letter or an export
    that runs its sections on in one line ("Familienanamnese: leer. Sozialanamnese: Raucher").
    Only a label the section table lists counts there, not one it would guess from a head word
    ("Dortige Diagnose: ..." in a narrative): an unknown one after a sentence ("Er berichtet.
    Schmerzen: stark") is a form label of the section it stands in."""
    found = []
    for match in _INLINE_LABEL.finditer(text):
        label_end = match.end() - 1
        while label_end > match.start() and text[label_end - 1].isspace():
            label_end -= 1
        if table.lookup_listed(text[match.start():label_end])[0] is not None:
            found.append((match.start(), label_end, match.end()))
    return found


def _title_lines(text: str, table: SectionTable) -> List[Tuple[int, int, int]]:
    """Lines that title a report or an examination without a colon, in a table with heads: a
    line of a few words that ends in a date and names a known section ("Labor vom 5.11.51"), or
    whose first word is an imaging header ("CT Abdomen und kl. Becken", "MDCT des Abdomens")."""
    if not table.by_head or "\n" not in text:
        return []
    titles = []
    for match in _TITLE_LINE.finditer(text):
        label = match.group(1)
        if len(label.split()) > _TITLE_WORDS or label.endswith((".", ",", ";")):
            continue
        first = table.lookup(label.split()[0].rstrip("."))[0]
        if (_DATE_END.search(label) and table.lookup(label)[0]) or first == "imaging":
            titles.append((match.start(1), match.end(1), match.end()))
    return titles


def _opens_section(text: str, head: int, label_end: int) -> bool:
    """An unknown header ends the section before it when it opens its line without a
    list marker ("- Mother: diabetes" and "1. CAD: s/p stent" are items of their section),
    or when an upper-case label follows a separator: an export that flattened its line
    breaks into commas ("...father.,HOME MEDICATIONS:, Lisinopril") keeps its headers so."""
    line_start = text.rfind("\n", 0, head) + 1
    before = text[line_start:head].rstrip()
    if not before:
        return True
    if before[-1] == "." and before[:-1].split()[-1:] and before[:-1].split()[-1].isdigit():
        return False  # "1. CAD: s/p stent": an item number, not the end of a flattened line
    return before[-1] in ",.;" and _is_upper_label(text[head:label_end])


def _is_upper_label(label: str) -> bool:
    letters = [c for c in label if c.isalpha()]
    return len(letters) >= 3 and all(c.isupper() for c in letters)


def _body_end(text: str, body: int, end: int) -> int:
    """A section ends at the next header, or at a blank line once its body has begun,
    unless the list of its body goes on after the blank line ("2. Asthma", blank, "3. ...")."""
    for match in _PARAGRAPH.finditer(text, body, end):
        if text[body:match.start()].strip() and not _list_goes_on(text, body, match.start(), match.end()):
            return match.start()
    return end


def _list_goes_on(text: str, body: int, gap: int, after: int) -> bool:
    """The last line before a blank line and the first after it carry the same kind of list marker."""
    before = _ITEM_MARKER.match(text, text.rfind("\n", body, gap) + 1 if "\n" in text[body:gap] else body)
    following = _ITEM_MARKER.match(text, after)
    if not before or not following:
        return False
    kind = before.group().strip()
    return kind[0].isdigit() == following.group().strip()[0].isdigit() and (kind[0].isdigit() or kind == following.group().strip())


BRACKET_MAX_TOKENS = 60  # a longer "group" is a stray bracket's, not an aside


def _bracket_groups(text: str, idx: List[int], length: List[int]) -> Dict[int, Tuple[int, int]]:
    """Each token inside a matched pair of round brackets -> the (open, close) tokens of the
    innermost pair: a stack over the bracket tokens, each inner token written once per pair that
    is its innermost, so the pass is linear."""
    if "(" not in text:
        return {}
    inside: Dict[int, Tuple[int, int]] = {}
    stack: List[int] = []
    for k, (at, size) in enumerate(zip(idx, length)):
        if size != 1:
            continue
        char = text[at]
        if char == "(":
            stack.append(k)
        elif char == ")" and stack:
            opened = stack.pop()
            if k - opened <= BRACKET_MAX_TOKENS:
                for inner in range(opened + 1, k):
                    inside.setdefault(inner, (opened, k))  # an inner pair closed first has claimed its tokens
    return inside
