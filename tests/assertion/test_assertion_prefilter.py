"""The prefilters of clin_context_assertion skip only searches that cannot match: the
conditions read from a regex hold wherever it matches, the lowered substring test answers as
``re.IGNORECASE`` does, and token patterns keep their anchors. (Outputs are pinned by the
other assertion tests; these check the shortcuts themselves.)"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from spacy_clinchunk.assertion import prefilter
from spacy_clinchunk.assertion.prefilter import Condition, Conditions, all_hold, fold_safe, needed_strings
from spacy_clinchunk.assertion.rules import build_rules

ROOT = Path(__file__).resolve().parents[2]  # tests/<wing>/test_x.py -> the repository
LANGUAGES = ("en", "de", "es", "fr", "nl")


def sample_texts(lang):
    """Our development sentences and the bundled note of ``lang``: real text, many cues."""
    rows = (ROOT / "bench" / "data" / "assertion" / f"{lang}_dev.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [json.loads(line)["text"] for line in rows if line.strip()]
    note = ROOT / "resources" / "examples" / f"discharge_summary_{lang}.txt"
    texts.append(note.read_text(encoding="utf-8"))
    return texts + [t.upper() for t in texts]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_conditions_hold_wherever_the_shipped_regex_cues_match(lang):
    conditions = Conditions()
    regexes = [r["pattern"] for r in build_rules(lang, None, True, "test") if isinstance(r.get("pattern"), str)]
    assert regexes
    matched = 0
    for text in sample_texts(lang):
        lowered = text.lower() if fold_safe(text) else None
        for pattern in regexes:
            needs = conditions.of(pattern)
            if any(m.end() > m.start() for m in re.finditer(pattern, text, re.IGNORECASE)):
                matched += 1
                assert all_hold(needs, text, lowered, {}), (pattern, text)
    assert matched  # the sample reaches the cues


def test_conditions_read_from_a_pattern():
    needs = needed_strings(r"\bnon-?(?=(?:tender|distended)\b)")
    assert frozenset({"non"}) in needs and frozenset({"tender", "distended"}) in needs
    # optional parts, negative lookarounds and wide classes add nothing
    assert needed_strings(r"(?:abc)?(?!xyz)[a-z]+\d") == []
    # a repeat needs what one pass needs; a small class is a condition
    assert needed_strings(r"(?:ab){2,}[.;]") and frozenset({".", ";"}) in needed_strings(r"(?:ab){2,}[.;]")
    # whitespace alone tells nothing
    assert needed_strings(r"[ \t]+") == []


def test_lowered_substring_tests_answer_as_ignorecase_does():
    safe = [chr(c) for c in [*range(0x180), *range(0x2000, 0x2070)] if chr(c) not in "\u0130\u0131\u017f"]
    everything = "".join(safe)
    assert fold_safe(everything)
    for char in safe:
        found = set(re.findall(re.escape(char), everything, re.IGNORECASE))
        assert found == {c for c in safe if c.lower() == char.lower()}, repr(char)
        assert all(len(c.lower()) == 1 for c in found)
    for tricky in ("\u0130", "\u0131", "\u017f", "\u212a", "\u03bc"):  # İ ı ſ K(elvin) μ
        assert not fold_safe(f"abc {tricky}")


@pytest.mark.parametrize(
    "strings, text",
    [
        ({"kin"}, "s\u212aIN"),  # Kelvin sign: re.IGNORECASE equates it with "k"
        ({"is"}, "\u0130\u017f"),  # "İ" and "ſ" match "i" and "s"
        ({"été"}, "ÉTÉ"),
        ({"-free", ","}, "latex-FREE"),
        ({"absent"}, "ABSENT"),
    ],
)
def test_a_condition_holds_where_ignorecase_finds_its_strings(strings, text):
    condition = Condition(frozenset(strings))
    expected = any(re.search(re.escape(s), text, re.IGNORECASE) for s in strings)
    assert expected
    assert condition.holds(text, text.lower() if fold_safe(text) else None)


def test_token_anchors_are_the_words_every_match_uses():
    from spacy.strings import StringStore

    strings = StringStore()
    pattern = [
        {"LOWER": {"IN": ["her", "his"]}, "OP": "?"},
        {"LOWER": {"IN": ["mother", "father"]}},
        {"IS_SPACE": True, "OP": "*"},
        {"LOWER": "reports"},
    ]
    anchors = prefilter.token_anchors(pattern, strings)
    assert anchors == [frozenset({strings["mother"], strings["father"]}), frozenset({strings["reports"]})]
    assert prefilter.anchors_hold(anchors, {strings.add(w) for w in ("the", "father", "reports")})
    assert not prefilter.anchors_hold(anchors, {strings.add(w) for w in ("her", "mother", "says")})
    assert prefilter.anchors_hold([], set())  # a pattern without anchors is always searched


def test_the_language_table_is_built_on_first_use():
    code = (
        "import spacy_clinchunk.assertion.language as l; assert not l._WEIGHTS; "
        "assert l.detect_language('The patient denies chest pain and fever.').language == 'en'; assert l._WEIGHTS"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_language_detector_gates_hold_wherever_its_patterns_match(lang):
    from spacy_clinchunk.assertion import language

    elision_gate, abbreviation_gates = language._gates()
    texts = sample_texts(lang) + ["V.a. Pneumonie, Z.n. Appendektomie.", "L'enfant n'a pas de fièvre, qu'il dit."]
    for text in texts:
        lowered = text.lower() if fold_safe(text) else None
        if language._ELISION.search(text):
            assert all_hold(elision_gate, text, lowered, {}), text
        for (pattern, _, _), gate in zip(language._ABBREVIATIONS, abbreviation_gates):
            if pattern.search(text):
                assert all_hold(gate, text, lowered, {}), text


def test_token_reach_bounds_a_match_around_each_anchor():
    from spacy.strings import StringStore

    from spacy_clinchunk.assertion.cues import token_reach

    strings = StringStore()
    pattern = [
        {"LOWER": {"IN": ["her", "his"]}, "OP": "?"},
        {"LOWER": {"IN": ["mother", "father"]}},
        {"LOWER": "reports"},
    ]
    reach = token_reach(pattern, strings)
    assert [(sorted(strings[int(h)] for h in hashes), before, after) for hashes, before, after in reach] == [
        (["father", "mother"], 1, 1), (["reports"], 2, 0),
    ]
    # an element that may take many tokens leaves the whole doc to the Matcher
    assert token_reach([{"LOWER": "no"}, {"IS_ALPHA": True, "OP": "*"}, {"LOWER": "seen"}], strings) is None
    assert token_reach([{"IS_ALPHA": True}, {"LOWER": "x", "OP": "?"}], strings) is None  # no anchor


@pytest.mark.parametrize("lang", LANGUAGES)
def test_windowed_token_matches_are_the_matches_of_one_run_over_the_doc(lang):
    """The Matcher runs only around the tokens every match uses (speed, issue 25): on long
    docs of real sentences, cue-rich and with runs of whitespace, it finds exactly what one
    run over the whole doc finds."""
    import spacy

    from spacy_clinchunk.assertion.cues import _WINDOWED_MIN_TOKENS, compile_rules

    nlp = spacy.blank(lang)
    matcher = compile_rules(nlp, "test", build_rules(lang, None, True, "test"), None)
    bounded = bool(matcher._token_reach) and all(r is not None for r in matcher._token_reach)
    texts = sample_texts(lang)
    docs = [nlp(" ".join(texts)), nlp("\n\n   ".join(texts)), nlp("  \n ".join(reversed(texts)))]
    found = 0
    for doc in docs:
        assert len(doc) >= _WINDOWED_MIN_TOKENS
        # a language with a pattern of unbounded reach searches the whole doc, as before
        assert (matcher._windows(doc, None) is not None) == bounded
        whole = sorted(set(matcher.tokens(doc)), key=lambda m: (m[1], m[2], matcher._order[m[0]][0]))
        assert matcher._token_matches(doc) == whole
        found += len(whole)
    assert found  # the sample reaches the token patterns
