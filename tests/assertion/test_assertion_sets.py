"""Our assertion evaluation sets are well formed, as large as documented, and kept apart.

The per-language sets (bench/data/assertion/<lang>_dev.jsonl, <lang>_test.jsonl) are the
yardstick of issue 27: a broken offset or a test sentence that leaked into a dev file would
make every figure measured on them wrong, silently. The files are read as they are; no
rule runs here (the sets must stay independent of the rules).
"""
import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Dict, List

import pytest

ROOT = Path(__file__).resolve().parents[2]  # tests/<wing>/test_x.py -> the repository
PER_LANGUAGE_DIR = ROOT / "bench" / "data" / "assertion"
POOLED_FILES = [ROOT / "bench" / "data" / "assertion_dev_own.jsonl", ROOT / "bench" / "data" / "assertion_test_own.jsonl"]
LABELS = {"affirmed", "negated", "normal", "uncertain", "historical", "hypothetical", "family"}
FIELDS = {"id", "lang", "text", "start", "end", "concept", "label"}
# split -> (fewest concepts, fewest per label), as docs/assertion.md states them; "test2" is the
# second frozen split (written before the second rule round), "test3" the third (before the
# third), "dev2" and "dev3" extra development rows; "test4" and "test5" the frozen splits of rounds 4 and 5.
MINIMUMS = {"dev": (100, 10), "test": (140, 20), "test2": (100, 10), "test3": (140, 20), "dev2": (30, 0), "dev3": (30, 0),
            "test4": (150, 20), "dev4": (80, 8), "test5": (300, 30)}
PER_LANGUAGE_FILES = sorted(PER_LANGUAGE_DIR.glob("*_*.jsonl"))


def read_rows(path: Path) -> List[Dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert all(line.strip() for line in lines), f"{path.name}: blank line"
    return [json.loads(line) for line in lines]


def lang_and_split(path: Path):
    lang, split = path.stem.split("_", 1)
    return lang, split


def test_english_and_german_sets_exist():
    names = {p.name for p in PER_LANGUAGE_FILES}
    assert {"en_dev.jsonl", "en_test.jsonl", "de_dev.jsonl", "de_test.jsonl"} <= names


@pytest.mark.parametrize("path", PER_LANGUAGE_FILES + POOLED_FILES, ids=lambda p: p.name)
def test_rows_have_the_schema_and_exact_offsets(path):
    for row in read_rows(path):
        assert set(row) == FIELDS, (path.name, row.get("id"), sorted(row))
        assert row["label"] in LABELS, (path.name, row["id"], row["label"])
        assert isinstance(row["start"], int) and isinstance(row["end"], int), row["id"]
        assert 0 <= row["start"] < row["end"] <= len(row["text"]), row["id"]
        assert row["text"][row["start"]:row["end"]] == row["concept"], row["id"]
        assert row["concept"] == row["concept"].strip() and row["concept"], row["id"]


@pytest.mark.parametrize("path", PER_LANGUAGE_FILES, ids=lambda p: p.name)
def test_per_language_file_holds_one_language_and_the_stated_counts(path):
    lang, split = lang_and_split(path)
    assert split in MINIMUMS, f"{path.name}: a split is one of {sorted(MINIMUMS)}"
    rows = read_rows(path)
    assert {r["lang"] for r in rows} == {lang}
    fewest_concepts, fewest_per_label = MINIMUMS[split]
    assert len(rows) >= fewest_concepts, (path.name, len(rows))
    per_label = Counter(r["label"] for r in rows)
    short = {label: per_label[label] for label in LABELS if per_label[label] < fewest_per_label}
    assert not short, f"{path.name}: fewer than {fewest_per_label} concepts for {short}"


def test_ids_are_unique_across_every_set_file():
    ids = Counter(r["id"] for path in PER_LANGUAGE_FILES + POOLED_FILES for r in read_rows(path))
    assert not [i for i, n in ids.items() if n > 1]


def test_no_concept_is_marked_twice_in_one_file():
    for path in PER_LANGUAGE_FILES:
        keys = Counter((r["text"], r["start"], r["end"]) for r in read_rows(path))
        assert not [k for k, n in keys.items() if n > 1], path.name


@pytest.mark.parametrize("lang", sorted({lang_and_split(p)[0] for p in PER_LANGUAGE_FILES}))
def test_dev_and_test_share_no_sentence(lang):
    """Not only no row: no text at all, so tuning on dev cannot fit a test sentence; the
    frozen splits share none either, so each measures something the other did not."""
    dev, test = PER_LANGUAGE_DIR / f"{lang}_dev.jsonl", PER_LANGUAGE_DIR / f"{lang}_test.jsonl"
    assert dev.is_file() and test.is_file(), f"{lang}: a dev and a frozen test set go together"
    files = [p for p in PER_LANGUAGE_FILES if lang_and_split(p)[0] == lang]
    texts = {p: {r["text"] for r in read_rows(p)} for p in files}
    for a in files:
        for b in files:
            if a.name < b.name and "test" in lang_and_split(a)[1] + lang_and_split(b)[1]:
                shared = texts[a] & texts[b]
                assert not shared, (a.name, b.name, sorted(shared)[:3])


def test_the_bench_offers_every_file_as_a_set():
    spec = importlib.util.spec_from_file_location("bench_assertion", ROOT / "bench" / "assertion.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    known = bench.available_sets()
    for path in PER_LANGUAGE_FILES:
        lang, split = lang_and_split(path)
        assert known[f"own-{split}-{lang}"] == path
    chosen, unknown = bench.resolve_sets("own-test-*,no-such-set", known)
    assert unknown == ["no-such-set"]
    assert sorted(chosen) == sorted(f"own-test-{lang_and_split(p)[0]}" for p in PER_LANGUAGE_FILES
                                    if lang_and_split(p)[1] == "test")
