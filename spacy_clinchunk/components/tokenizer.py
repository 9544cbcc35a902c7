"""The clinical tokenizer: spaCy's rule-based tokenizer of the pipeline's language, plus the splits a
flattened export needs.

Exports that turn every line break into a comma (MTSamples, many EHR exports) glue words across the
former lines: "Neurology,,CHIEF", "COMPLAINT:,Recurrent", "stable.,PAST". spaCy's tokenizer keeps such
a run as one token, so no chunk, header or scope can start where the line did. This tokenizer splits
commas glued between words and a colon glued to a comma; text and offsets are untouched, and "1,200"
stays one number. Chosen in config (``[nlp.tokenizer] @tokenizers = "spacy_clinchunk.ClinicalTokenizer.v1"``),
saved with the pipeline like spaCy's own.
"""
from typing import Callable

from spacy.language import Language
from spacy.tokenizer import Tokenizer
from spacy.util import compile_infix_regex, compile_prefix_regex, registry

# a comma run glued between a non-digit and the next word, or between a number and a letter
# ("03/14/2024,Discharge"); a colon glued to a comma ("HISTORY:,")
FLATTENED_INFIXES = (r"(?<=[^\s\d,]),+(?=[^\s,])", r"(?<=\d),+(?=[^\W\d_])", r"(?<=[^\W\d_]):(?=,)")
FLATTENED_PREFIXES = (r",+",)  # ",,HISTORY" at a token's start


@registry.tokenizers("spacy_clinchunk.ClinicalTokenizer.v1")
def clinical_tokenizer_v1() -> Callable[[Language], Tokenizer]:
    """spaCy's tokenizer of the language with the flattened-export splits added."""

    def create_tokenizer(nlp: Language) -> Tokenizer:
        tokenizer = registry.tokenizers.get("spacy.Tokenizer.v1")()(nlp)
        infixes = [*(nlp.Defaults.infixes or ()), *FLATTENED_INFIXES]
        prefixes = [*(nlp.Defaults.prefixes or ()), *FLATTENED_PREFIXES]
        tokenizer.infix_finditer = compile_infix_regex(infixes).finditer
        tokenizer.prefix_search = compile_prefix_regex(prefixes).search
        return tokenizer

    return create_tokenizer
