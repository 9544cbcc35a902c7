"""The clinical tokenizer: spaCy's rule-based tokenizer of the pipeline's language, plus the splits a
flattened export needs.

Exports that turn every line break into a comma (MTSamples, many EHR exports) glue words across the
former lines: "Neurology,,CHIEF", "COMPLAINT:,Recurrent", "stable.,PAST". spaCy's tokenizer keeps such
a run as one token, so no chunk, header or scope can start where the line did. This tokenizer splits
commas glued between words and a colon glued to a comma; text and offsets are untouched, and "1,200"
stays one number. Chosen in config (``[nlp.tokenizer] @tokenizers = "spacy_clinchunk.ClinicalTokenizer.v2"``),
saved with the pipeline like spaCy's own.

Versions: ``v1`` adds the flattened-export splits; ``v2`` (issue 40, round 18) also splits the full
stop after a four-digit year, which spaCy's German rules keep as an ordinal ("1995." in
"St.p. SHT 1995. Pleuraerguss re."), so a sentence, a chunk and a cue's scope end after the year in
every language. Saved pipelines keep the version their config names.
"""
from typing import Callable, Sequence

from spacy.language import Language
from spacy.tokenizer import Tokenizer
from spacy.util import compile_infix_regex, compile_prefix_regex, compile_suffix_regex, registry

# a comma run glued between a non-digit and the next word, or between a number and a letter
# ("03/14/2024,Discharge"); a colon glued to a comma ("HISTORY:,")
FLATTENED_INFIXES = (r"(?<=[^\s\d,]),+(?=[^\s,])", r"(?<=\d),+(?=[^\W\d_])", r"(?<=[^\W\d_]):(?=,)")
FLATTENED_PREFIXES = (r",+",)  # ",,HISTORY" at a token's start
# the full stop after a year of four digits, alone or closing a date ("1995.", "12.03.1995."): nobody
# writes the 1995th, so it is a sentence's end, not an ordinal's point
YEAR_FULL_STOP_SUFFIXES = (r"(?<=(?<!\d)(?:1[89]|20)\d\d)\.",)


def _clinical_tokenizer(nlp: Language, suffixes: Sequence[str]) -> Tokenizer:
    """spaCy's tokenizer of ``nlp``'s language with the flattened-export splits and ``suffixes``."""
    tokenizer = registry.tokenizers.get("spacy.Tokenizer.v1")()(nlp)
    infixes = [*(nlp.Defaults.infixes or ()), *FLATTENED_INFIXES]
    prefixes = [*(nlp.Defaults.prefixes or ()), *FLATTENED_PREFIXES]
    tokenizer.infix_finditer = compile_infix_regex(infixes).finditer
    tokenizer.prefix_search = compile_prefix_regex(prefixes).search
    if suffixes:
        tokenizer.suffix_search = compile_suffix_regex([*(nlp.Defaults.suffixes or ()), *suffixes]).search
    return tokenizer


@registry.tokenizers("spacy_clinchunk.ClinicalTokenizer.v1")
def clinical_tokenizer_v1() -> Callable[[Language], Tokenizer]:
    """spaCy's tokenizer of the language with the flattened-export splits added."""

    def create_tokenizer(nlp: Language) -> Tokenizer:
        return _clinical_tokenizer(nlp, ())

    return create_tokenizer


@registry.tokenizers("spacy_clinchunk.ClinicalTokenizer.v2")
def clinical_tokenizer_v2() -> Callable[[Language], Tokenizer]:
    """``v1`` plus a split before the full stop after a four-digit year (see the module docstring)."""

    def create_tokenizer(nlp: Language) -> Tokenizer:
        return _clinical_tokenizer(nlp, YEAR_FULL_STOP_SUFFIXES)

    return create_tokenizer
