"""Context without an LLM (``spacy_clinchunk.HeuristicContext.v1``): document type, section
header and position in the note, for air-gapped use and as the fallback's content."""
import re
from bisect import bisect_left
from typing import Any, Dict, List, Optional, Tuple

from spacy.util import registry

_HEADER = re.compile(
    r"^[^\S\n]*(?P<name>[A-Z][A-Za-z0-9 /&().,'-]{1,60}?)[^\S\n]*:(?:[^\S\n]*$|[^\S\n]+\S)", re.MULTILINE
)
_CAPS_LINE = re.compile(r"^[^\S\n]*(?P<name>[A-Z][A-Z0-9 /&(),'-]{2,60})[^\S\n]*$", re.MULTILINE)


class HeuristicContext:
    """Context without an LLM: "<type>, section '<header>', part i of n (beginning of the note)."."""

    kind = "heuristic"

    def __init__(self, document_type: Optional[str], include_position: bool) -> None:
        self.document_type = document_type
        self.include_position = include_position
        self._headers: Optional[Tuple[str, List[int], List[str]]] = None  # the last note's headers

    @property
    def identity(self) -> str:
        return "heuristic"

    def section(self, text: str, start: int) -> Optional[str]:
        """The last header at or before ``start`` (or on the chunk's first line)."""
        line_end = text.find("\n", start)
        limit = len(text) if line_end == -1 else line_end
        positions, names = self._find_headers(text)
        index = bisect_left(positions, limit) - 1  # headers never span lines
        return names[index] if index >= 0 else None

    def _find_headers(self, text: str) -> Tuple[List[int], List[str]]:
        """Header positions and names of ``text``, found once per note (not once per chunk)."""
        if self._headers is None or self._headers[0] is not text:
            found: Dict[int, str] = {}
            for pattern in (_HEADER, _CAPS_LINE):
                for match in pattern.finditer(text):
                    if len(match.group("name").split()) <= 6:
                        found.setdefault(match.start(), match.group("name").strip())
            positions = sorted(found)
            self._headers = (text, positions, [found[p] for p in positions])
        return self._headers[1], self._headers[2]

    def __getstate__(self) -> Dict[str, Any]:
        return {**self.__dict__, "_headers": None}

    def describe(self, text: str, start: int, end: int, document_type: str, index: int, total: int) -> str:
        kind = self.document_type or document_type or "Clinical note"
        parts = [kind[:1].upper() + kind[1:]]
        header = self.section(text, start)
        if header:
            parts.append(f"section '{header}'")
        if self.include_position and total > 0:
            if total == 1:
                where = "the whole note"
            else:
                fraction = (start + end) / 2 / max(1, len(text))
                place = "beginning" if fraction < 1 / 3 else "middle" if fraction < 2 / 3 else "end"
                where = f"part {index + 1} of {total} ({place} of the note)"
            parts.append(where)
        return ", ".join(parts) + "."



@registry.misc("spacy_clinchunk.HeuristicContext.v1")
def heuristic_context_v1(document_type: Optional[str] = None, include_position: bool = True) -> HeuristicContext:
    """No-LLM context: document type, section header, position in the note."""
    return HeuristicContext(document_type=document_type, include_position=include_position)
