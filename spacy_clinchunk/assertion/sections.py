"""Sections of a note: the table of headers per language, and the status a section gives.

The table is data: ``resources/<lang>/assertion_sections.json`` holds ``{"sections": {name:
{"status": label or null, "headers": [...]}}}``. Section names follow medspaCy's section
categories, so our header detection and medspaCy's sectionizer record the same names.

A section may also list ``"heads"``: the head nouns of its headers in a language that builds
compounds and puts the head last (German): an unknown label whose head word is, or ends in,
one of them ("Pleurasonographie", "Psychischer Befund", "HNO-Konsil vom 27.05.2034") takes
that section. Tables without heads (English) look up whole labels only.
"""
import re
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from spacy.tokens import Doc
from spacy.util import registry

from ..resources_io import load_json_resource, read_json_file
from .rules import LABEL_CATEGORY, PRECEDENCE, ContextRulesError

SECTIONS_RESOURCE = "assertion_sections"
SectionData = Dict[str, Dict[str, Any]]

# medspaCy sectionizer categories -> the status their sections give what they hold.
SECTIONIZER_STATUS = {
    "past_medical_history": "historical",
    "past_surgical_history": "historical",
    "family_history": "family",
    "patient_instructions": "hypothetical",
}

_NOT_LABEL = re.compile(r"^[\s\d.)(\-*•#]+|[\s:.\-]+$")
_SPACES = re.compile(r"\s+")
# where a label's first noun phrase ends: a lower-case word after its first ("Abdomenübersicht im
# Stehen", "Sonographiebefund vom 20.05.2034"), a digit or a bracket
_PHRASE_END = re.compile(r"\s(?=[a-zäöüß\d(])|\(")
# the parts of a hyphenated compound ("HNO-Konsil", "Ruhe-EKG"), or of "Pleura/Abdomen"
_PARTS = re.compile(r"[-/]")
# what may follow a header on its line: a bracket, an ICD version, a report's date
_QUALIFIER = (r"(?:[ \t]*\([^()\n]{0,40}\))?(?:[ \t]*,[ \t]*ICD[- ]?1[01])?"
              r"(?:[ \t]+(?:vom[ \t]+|am[ \t]+)?\d{1,2}[./]\d{1,2}[./]\d{2,4})?")
# a head this short names only a whole word ("EKG"), never the end of a compound
_SHORTEST_SUFFIX_HEAD = 6


def check_sections(data: Any, origin: str) -> SectionData:
    """A section table, checked: the file's object (``{"sections": {...}}``) or its
    ``sections`` mapping alone; errors name ``origin`` and the section."""
    if isinstance(data, Mapping) and set(data) == {"sections"} and isinstance(data["sections"], Mapping):
        data = data["sections"]
    if not isinstance(data, Mapping):
        raise ContextRulesError(f"{origin}: expected an object with a 'sections' object")
    table: SectionData = {}
    for name, entry in data.items():
        where = f"{origin}: section '{name}'"
        if not isinstance(entry, Mapping):
            raise ContextRulesError(f"{where}: expected an object with 'status' and 'headers'")
        status, headers, heads = entry.get("status"), entry.get("headers", []), entry.get("heads", [])
        if status is not None and status not in PRECEDENCE:
            raise ContextRulesError(f"{where}: unknown status {status!r}; allowed: {list(PRECEDENCE)} or null")
        if not isinstance(headers, list) or not all(isinstance(h, str) and h.strip() for h in headers):
            raise ContextRulesError(f"{where}: 'headers' must be a list of non-empty strings")
        if not isinstance(heads, list) or not all(isinstance(h, str) and h.strip() for h in heads):
            raise ContextRulesError(f"{where}: 'heads' must be a list of non-empty strings")
        table[str(name)] = {"status": status, "headers": list(headers)}
        if heads:
            table[str(name)]["heads"] = list(heads)
    return table


def section_data(lang: str) -> SectionData:
    """The shipped section table of ``lang``, checked."""
    origin = f"{lang}/{SECTIONS_RESOURCE}.json"
    data = load_json_resource(lang, SECTIONS_RESOURCE)
    if not isinstance(data, dict) or not isinstance(data.get("sections"), dict):
        raise ContextRulesError(f"{origin}: expected an object with a 'sections' object")
    return check_sections(data["sections"], origin)


@registry.misc("spacy_clinchunk.AssertionSections.v1")
def assertion_sections_v1(lang: str = "en", path: Optional[str] = None) -> SectionData:
    """A section table, usable in config: ``@misc = "spacy_clinchunk.AssertionSections.v1"``;
    ``path`` (a JSON file in the format of ``assertion_sections.json``) replaces the shipped one."""
    if path is None:
        return section_data(lang)
    return check_sections(read_json_file(path, "assertion sections"), str(Path(path).expanduser()))


def normalize_header(label: str) -> str:
    return _SPACES.sub(" ", _NOT_LABEL.sub("", label.lower()))


class SectionTable:
    """Header lookup (header -> section name and status), compiled from a checked table."""

    def __init__(self, sections: SectionData) -> None:
        self.by_header: Dict[str, Tuple[str, Optional[str]]] = {}
        self.statuses: Dict[str, Optional[str]] = {name: entry.get("status") for name, entry in sections.items()}
        self.by_head: Dict[str, Tuple[str, Optional[str]]] = {}
        for name, entry in sections.items():
            for header in entry.get("headers", []):
                self.by_header[normalize_header(header)] = (name, entry.get("status"))
            for head in entry.get("heads", []):
                self.by_head[normalize_header(head)] = (name, entry.get("status"))
        self.suffix_heads = sorted((h for h in self.by_head if len(h) >= _SHORTEST_SUFFIX_HEAD), key=len, reverse=True)
        words = sorted(self.by_header, key=len, reverse=True)
        alternatives = "|".join(re.escape(w).replace("\\ ", r"\s+") for w in words) or "(?!)"
        # a known header alone on its line, with or without a colon, a bullet or an item number; with
        # heads (German), also with what qualifies it there: "Hauptdiagnose(n), ICD-10", "Labor bei Aufnahme 3.8.2033"
        qualifier = _QUALIFIER if self.by_head else ""
        self.line_header = re.compile(
            rf"(?im)^[ \t]*(?:[-*\u2022\u00b7\u2013+][ \t]*|\d{{1,2}}[.)][ \t]+)?(?:{alternatives}){qualifier}[ \t]*:?[ \t]*$"
        )

    def status_of(self, name: Optional[str]) -> Optional[str]:
        """The status a section of this category gives what it holds (None: none, or unknown)."""
        return self.statuses.get(name) if name else None

    def lookup(self, label: str) -> Tuple[Optional[str], Optional[str]]:
        """(section name, status) of a header label; (None, None) when unknown."""
        listed = self.lookup_listed(label)
        if listed[0] is not None:
            return listed
        return self._lookup_head(label) if self.by_head else (None, None)

    def lookup_listed(self, label: str) -> Tuple[Optional[str], Optional[str]]:
        """(section name, status) of a label the table lists, alone or qualified after it ("past
        medical history (reviewed)"); no guess from its head word ("Dortige Diagnose" names none)."""
        key = normalize_header(label)
        if key in self.by_header:
            return self.by_header[key]
        for known, value in self.by_header.items():  # "past medical history (reviewed)"
            if key.startswith(known) and not key[len(known)].isalnum():
                return value
        return None, None

    def _lookup_head(self, label: str) -> Tuple[Optional[str], Optional[str]]:
        """(section name, status) from the head of a label's first noun phrase: its last word, or
        the last part of a hyphenated word, known as a header or a head, or ending in a head."""
        label = label.strip()
        cut = _PHRASE_END.search(label, label.find(" ") if " " in label else len(label))
        phrases = [label[:cut.start()], label] if cut else [label]  # "Stationär erhobene Befunde": the whole
        for phrase in phrases:
            words = normalize_header(phrase).split()
            last = words[-1] if words else ""
            for word in (last, *reversed(_PARTS.split(last))) if last else ():
                word = word.strip(".")
                if word in self.by_header:
                    return self.by_header[word]
                if word in self.by_head:
                    return self.by_head[word]
                for head in self.suffix_heads:
                    if word.endswith(head):
                        return self.by_head[head]
        return None, None


class Section:
    """A header and the body it heads, in tokens; ``label`` is the status it gives."""

    __slots__ = ("doc", "head_start", "head_end", "end", "name", "label")

    def __init__(self, doc: Doc, head_start: int, head_end: int, end: int, name: Optional[str], label: Optional[str]):
        self.doc, self.head_start, self.head_end, self.end = doc, head_start, head_end, end
        self.name, self.label = name, label

    def cue(self) -> Dict[str, Union[str, int]]:
        """The header as the cue of the status the section gives."""
        end = self.head_end
        while end > self.head_start + 1 and (self.doc[end - 1].is_space or self.doc[end - 1].text == ":"):
            end -= 1
        header = self.doc[self.head_start:end]
        return {
            "text": header.text,
            "category": LABEL_CATEGORY[self.label],
            "direction": "SECTION",
            "literal": self.name,
            "start_char": header.start_char,
            "end_char": header.end_char,
        }
