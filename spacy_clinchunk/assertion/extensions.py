"""The extension attributes assertion values are written to, under a configurable prefix.

With the package prefix (``clin_``) the names are those :mod:`spacy_clinchunk.attrs`
declares: ``Span._.clin_assertion``, ``clin_assertion_cues``, ``clin_assertion_statuses``,
``clin_section`` and the read-only flags ``clin_negated``, ``clin_historical``, ... Another
prefix gives the same set under other names, so a pipeline can avoid a clash with another
package's attributes. Registration is idempotent and never replaces an attribute.
"""
from typing import Any, Callable, Dict, List

from spacy.tokens import Span

from .. import attrs
from .status import Assertion

FIELDS = ("assertion", "assertion_cues", "assertion_statuses", "section")


class ExtensionNames:
    """The names for one prefix: ``fields`` (record field -> attribute) and ``flags``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.fields: Dict[str, str] = {field: prefix + field for field in FIELDS}
        self.flags: Dict[str, str] = {label: prefix + label for label in attrs.ASSERTION_FLAGS}
        self.assertion, self.cues, self.statuses, self.section = (self.fields[f] for f in FIELDS)
        self._names = tuple(self.fields.values())

    def register(self) -> None:
        """Register the attributes (the package's own set for ``clin_``), keeping existing ones."""
        attrs.register_extensions()
        for name in self.fields.values():
            if not Span.has_extension(name):
                Span.set_extension(name, default=None)
        for label, name in self.flags.items():
            if not Span.has_extension(name):
                Span.set_extension(name, getter=_flag_getter(self.statuses, label))

    def read_only(self) -> List[str]:
        """Names of ours registered by someone else with a getter or method (not writable)."""
        return [n for n in self.fields.values() if Span.has_extension(n) and any(Span.get_extension(n)[1:3])]

    def write(self, span: Span, result: Assertion) -> None:
        """Set the four values; stored ones straight into ``doc.user_data``, where
        ``span._.set`` would put them, without building ``span._`` per span."""
        if attrs.plain_span_keys(span) and all(map(attrs.stored_span_extension, self._names)):
            data, start, end = span.doc.user_data, span.start_char, span.end_char
            data[("._.", self.assertion, start, end)] = result.label
            data[("._.", self.statuses, start, end)] = result.statuses
            data[("._.", self.cues, start, end)] = result.cues
            data[("._.", self.section, start, end)] = result.section
            return
        underscore = span._
        underscore.set(self.assertion, result.label)
        underscore.set(self.statuses, result.statuses)
        underscore.set(self.cues, result.cues)
        underscore.set(self.section, result.section)


def _flag_getter(statuses: str, label: str) -> Callable[[Span], bool]:
    def getter(span: Span) -> Any:
        return label in (span._.get(statuses) or ())

    return getter
