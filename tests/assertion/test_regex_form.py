"""Regex cues are searched in their scan form (``assertion/regex_form.py``): the letter guard
moved after a word's first letter, the same matches found faster. Rule files keep the
readable form; the matcher compiles the other."""
import json
import re
from pathlib import Path

import pytest

from spacy_clinchunk.assertion.regex_form import LETTER_GUARD, scan_form
from spacy_clinchunk.resources_io import SUPPORTED_LANGUAGES

G = LETTER_GUARD
MOVED = "(?<![^\\W\\d_].)"
OWN_SENTENCES = sorted((Path(__file__).parents[2] / "bench" / "data" / "assertion").glob("*.jsonl"))


def test_a_guard_before_a_word_moves_after_its_first_letter():
    assert scan_form(G + "seither") == f"(?:s{MOVED}either)"
    assert scan_form(G + "(?:prevention|prophylaxis)[ \\t]+of") == f"(?:p{MOVED}revention|p{MOVED}rophylaxis)[ \\t]+of"
    # literal lookbehinds after the guard move with it, one character further back
    assert scan_form(G + "(?<!not )well") == f"(?:w{MOVED}(?<!not .)ell)"


@pytest.mark.parametrize("pattern", [
    G + "(?:is|was|are)[ \\t]+normal",  # words with different first letters: measured slower
    G + "(?:very[ \\t]+)?good",  # an optional head: without it the guard must still hold
    G + "a?b",  # a quantifier right after the first letter would bind to the guards
    G + "(?:\\d+|ein)",  # an alternative that opens with no letter
    "normal" + G,  # no leading guard
    G + "(?:open",  # a group that never closes: left to the regex compiler to report
])
def test_what_cannot_move_keeps_its_written_form(pattern):
    assert scan_form(pattern) == pattern


def _shipped_regexes():
    for lang in SUPPORTED_LANGUAGES:
        path = Path(__file__).parents[2] / "resources" / lang / "context_rules.json"
        for rule in json.loads(path.read_text(encoding="utf-8"))["context_rules"]:
            if isinstance(rule.get("pattern"), str) and scan_form(rule["pattern"]) != rule["pattern"]:
                yield lang, rule


def test_every_moved_shipped_rule_finds_the_same_matches():
    texts = [json.loads(line)["text"] for path in OWN_SENTENCES for line in path.read_text(encoding="utf-8").splitlines() if line]
    # edges the guard decides: the text's start, a letter, a digit, an underscore, an umlaut before the word
    texts += ["seit 2019", "Xseit 2019", "3seit 2019", "_seit 2019", "ßseit 2019", "and so on", "band so", "o.B.", "bo.B."]
    text = "\n".join(texts)
    rules = list(_shipped_regexes())
    assert len(rules) > 40 and len({lang for lang, _ in rules}) == 5
    for lang, rule in rules:
        written, scanned = (re.compile(p, re.IGNORECASE) for p in (rule["pattern"], scan_form(rule["pattern"])))
        expected = [m.span() for m in written.finditer(text)]
        assert [m.span() for m in scanned.finditer(text)] == expected, (lang, rule["literal"])
