"""One concept span, assessed by clin_context_assertion in a blank pipeline or under medspaCy."""
import functools
import json
from pathlib import Path

import pytest
import spacy

from spacy_clinchunk.components.context_assertion import FACTORY
from spacy_clinchunk.pipeline import load_pipeline

KEY = "concepts"
_NLPS = {}


def concept_pipeline(lang, sectionizer=False):
    """spacy.blank(lang) + sentencizer, or medspaCy with PyRuSH and its sectionizer (English)."""
    if (lang, sectionizer) not in _NLPS:
        if sectionizer:
            import medspacy

            nlp = medspacy.load(medspacy_enable=["medspacy_pyrush", "medspacy_sectionizer"])
        else:
            nlp = spacy.blank(lang)
            nlp.add_pipe("sentencizer")
        nlp.add_pipe(FACTORY, config={"span_keys": [KEY]})
        _NLPS[(lang, sectionizer)] = nlp
    return _NLPS[(lang, sectionizer)]


def assess(lang, text, concept, sectionizer=False, occurrence=0):
    """The assessed span of the ``occurrence``-th ``concept`` in ``text``."""
    nlp = concept_pipeline(lang, sectionizer)
    doc = nlp.make_doc(text)
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(concept, start + 1)
    doc.spans[KEY] = [doc.char_span(start, start + len(concept), alignment_mode="expand")]
    return nlp(doc).spans[KEY][0]


def status_of(lang, text, phrase):
    """The status of ``phrase`` (its first occurrence) in ``text``, as a concept span."""
    return assess(lang, text, phrase)._.clin_assertion


def check(lang, text, concept, expected, sectionizer=False):
    span = assess(lang, text, concept, sectionizer)
    cues = [c["text"] for c in span._.clin_assertion_cues]
    assert span._.clin_assertion == expected, (lang, text, concept, span._.clin_assertion, cues)
    return span


def case_groups(name):
    """Regression sentences kept as data (``tests/data/<name>.json``: groups, each with why it
    holds and its ``[lang, text, concept, expected]`` cases): the groups and the cases as
    pytest params, ids ``<group>-<number>``."""
    path = Path(__file__).resolve().parent / "data" / f"{name}.json"
    groups = json.loads(path.read_text(encoding="utf-8"))
    cases = [pytest.param(*case, id=f"{group}-{number}")
             for group, data in groups.items() for number, case in enumerate(data["cases"])]
    return groups, cases


@functools.lru_cache(maxsize=None)
def default_for(lang):
    """The shipped default with ``lang``'s rules forced (``--lang``), built once per language for a
    whole test session, not once per parametrized case."""
    return load_pipeline("default", lang=lang)


def chunk_statuses_of(lang, text, word):
    """The statuses of the chunks that hold ``word`` under the default for ``lang``."""
    from spacy_clinchunk import attrs

    doc = default_for(lang)(text)
    return [s._.clin_assertion for s in doc.spans[attrs.CHUNKS_KEY] if word in s.text]
