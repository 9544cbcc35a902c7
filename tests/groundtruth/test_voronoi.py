"""Voronoi territories and variants: geometry, policies, multi-span parts, isolation property."""
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import GSC_DIR, SAMPLE_JSON, requires_shared_data
from spacy_clinchunk.groundtruth.voronoi import (
    OverlapError,
    VoronoiError,
    annotation_parts,
    compute,
    is_boundary,
    ratio_key,
    validate_ratios,
    voronoi_block,
)

TEXT = "A syndrome of brachydactyly (absence of phalanges), hypoplastic nails and craniosynostosis."


def find(text, phrase, start=0):
    i = text.index(phrase, start)
    return (i, i + len(phrase))


def test_territories_partition_by_midpoints_and_ratios_interpolate():
    spans = [find(TEXT, "brachydactyly"), find(TEXT, "hypoplastic nails"), find(TEXT, "craniosynostosis")]
    result = compute(TEXT, [[s] for s in spans], [0.0, 0.5, 1.0])
    first, second, third = result.parts
    assert first.territory[0] == 0 and third.territory[1] == len(TEXT)
    # the boundary between two annotations lies between them, at a word boundary near the midpoint
    assert spans[0][1] <= first.territory[1] <= second.territory[0] <= spans[1][0]
    middle = (spans[0][1] + spans[1][0]) // 2
    assert abs(first.territory[1] - middle) <= len("phalanges")
    for part, span in zip(result.parts, spans):
        assert part.variants[0.0] == span
        assert part.variants[1.0] == part.territory
        inner, outer = part.variants[0.5]
        assert part.territory[0] <= inner <= span[0] and span[1] <= outer <= part.territory[1]
    assert TEXT[slice(*first.variants[1.0])] == "A syndrome of brachydactyly (absence of"
    assert TEXT[slice(*third.variants[1.0])].endswith("craniosynostosis.")


def test_ratio_zero_completes_a_cut_word_and_edges_never_start_with_whitespace():
    text = "Affected families are described here."
    result = compute(text, [[find(text, "milie")]], [0.0, 0.5])
    part = result.parts[0]
    assert text[slice(*part.variants[0.0])] == "families"
    start, end = part.variants[0.5]
    assert not text[start].isspace() and not text[end - 1].isspace()


def test_word_alignment_in_other_scripts():
    # Devanagari vowel signs are combining marks: still part of the word
    text = "रोगी को बुखार है और खांसी नहीं है।"
    target = find(text, "खांसी")
    result = compute(text, [[find(text, "बुखार")], [target]], [0.0, 0.3, 0.6, 1.0])
    for part in result.parts:
        for start, end in [part.territory, *part.variants.values()]:
            assert is_boundary(text, start) and is_boundary(text, end)
    cyrillic = "Пациент жалуется на головную боль и тошноту."
    result = compute(cyrillic, [[find(cyrillic, "боль")], [find(cyrillic, "тошноту")]], [0.5])
    for part in result.parts:
        start, end = part.variants[0.5]
        assert is_boundary(cyrillic, start) and is_boundary(cyrillic, end)


def test_input_order_does_not_change_results():
    spans = [[find(TEXT, w)] for w in ("nails", "brachydactyly", "phalanges", "craniosynostosis")]
    reference = compute(TEXT, spans)
    order = [2, 0, 3, 1]
    shuffled = compute(TEXT, [spans[i] for i in order])
    for new_index, old_index in enumerate(order):
        old = [p for p in reference.parts if p.annotation == old_index][0]
        new = [p for p in shuffled.parts if p.annotation == new_index][0]
        assert (old.start, old.end, old.territory, old.variants) == (new.start, new.end, new.territory, new.variants)


def test_overlap_policies():
    nails = [[find(TEXT, "hypoplastic nails")], [find(TEXT, "nails")], [find(TEXT, "brachydactyly")]]
    with pytest.raises(OverlapError, match="Overlapping annotations detected: annotation 0 overlaps with annotation 1"):
        compute(TEXT, nails, on_overlap="error")
    with pytest.raises(OverlapError):
        compute(TEXT, nails, on_overlap="skip")
    with pytest.raises(VoronoiError):
        compute(TEXT, nails, on_overlap="ignore")
    merged = compute(TEXT, nails)
    wide, narrow, other = sorted(merged.parts, key=lambda p: p.annotation)
    assert wide.cluster == narrow.cluster != other.cluster
    assert wide.territory == narrow.territory
    assert narrow.variants[0.0] == find(TEXT, "nails") and wide.variants[0.0] == find(TEXT, "hypoplastic nails")
    assert len(merged.territories) == 2


def test_multi_span_parts():
    text = "Brachydactyly type A-1 (BDA-1) is rare. Later, the same brachydactyly type A-1 recurred."
    close = [find(text, "Brachydactyly type A-1"), find(text, "BDA-1")]
    assert annotation_parts(text, close, 3) == [(close[0][0], close[1][1])]
    assert annotation_parts(text, close, 1) == close  # gap of 2 > 1
    far = [find(text, "Brachydactyly type A-1"), find(text, "brachydactyly type A-1")]
    assert annotation_parts(text, far, 3) == far
    # spans of one annotation that overlap are one part, never an overlap error
    nested = [find(text, "Brachydactyly type A-1"), find(text, "type A-1")]
    assert annotation_parts(text, nested, 0) == [nested[0]]
    result = compute(text, [far, [find(text, "rare")]], on_overlap="error")
    assert [(p.annotation, p.start) for p in result.parts] == [(0, far[0][0]), (0, far[1][0]), (1, text.index("rare"))]
    # a word between two spans keeps them apart even when the gap is small
    assert annotation_parts("pain in leg", [(0, 4), (8, 11)], 10) == [(0, 4), (8, 11)]


def test_ratio_validation():
    assert validate_ratios([1, 0.5, 0.5, 0]) == (0.0, 0.5, 1.0)
    for bad in ([1.5], [-0.1], ["x"], [True]):
        with pytest.raises(VoronoiError):
            validate_ratios(bad)
    assert ratio_key(0.25) == "0.25"


def test_seed_output_format_on_a_sample_document():
    record = json.loads((SAMPLE_JSON / "case_report_cholestasis.json").read_text(encoding="utf-8"))
    block = voronoi_block(record, [0.0, 0.5, 1.0], generated_at="2025-01-01T00:00:00Z")
    assert list(block) == ["provenance", "chunks"]
    assert list(block["provenance"]) == ["script_version", "generated_at", "parameters"]
    assert block["provenance"]["parameters"]["expansion_ratios"] == [0.0, 0.5, 1.0]
    assert block["provenance"]["parameters"]["strategy"] == "voronoi_midpoint"
    first = block["chunks"][0]
    assert list(first) == ["hpo_id", "annotation_span", "variants"]
    assert first["hpo_id"] == "HP:0000989" and first["annotation_span"] == [76, 84]
    assert list(first["variants"]) == ["0.00", "0.50", "1.00"]
    for chunk in block["chunks"]:
        for variant in chunk["variants"].values():
            assert variant["text"] == record["full_text"][slice(*variant["span"])]
    assert first["variants"]["0.00"] == {"text": "pruritus", "span": [76, 84]}
    assert first["variants"]["1.00"]["span"][0] == 0


# -- property tests -------------------------------------------------------------
ALPHABET = "abcxyzABé日本кот१२ि्  ,.;()-\n0123"


@st.composite
def annotated_texts(draw, word_aligned=False):
    text = draw(st.text(alphabet=ALPHABET, min_size=1, max_size=80))
    if word_aligned:
        edges = [i for i in range(len(text) + 1) if is_boundary(text, i)]
    else:
        edges = list(range(len(text) + 1))
    annotations = []
    for _ in range(draw(st.integers(0, 6))):
        spans = []
        for _ in range(draw(st.integers(1, 3))):
            a, b = sorted(draw(st.lists(st.sampled_from(edges), min_size=2, max_size=2, unique=True)) if len(edges) > 1 else (0, 0))
            if a < b:
                spans.append((a, b))
        if spans:
            annotations.append(spans)
    ratios = draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=4))
    gap = draw(st.integers(0, 5))
    return text, annotations, ratios, gap


def foreign_characters(result, part):
    """Character positions of parts outside ``part``'s cluster."""
    return {i for p in result.parts if p.cluster != part.cluster for i in range(p.start, p.end)}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(annotated_texts())
def test_property_concept_isolation_containment_and_monotonicity(case):
    text, annotations, ratios, gap = case
    result = compute(text, annotations, ratios, multi_span_gap=gap)
    for part in result.parts:
        foreign = foreign_characters(result, part)
        ranges = [part.territory, *part.variants.values()]
        for start, end in ranges:
            assert not foreign & set(range(start, end)), (text, annotations, part)
        t_start, t_end = part.territory
        previous = (part.start, part.end)
        for ratio in result.ratios:
            start, end = part.variants[ratio]
            assert t_start <= start <= part.start and part.end <= end <= t_end
            assert start <= previous[0] and end >= previous[1]  # larger ratio, larger variant
            previous = (start, end)
    covered = set()
    for p in result.parts:
        covered.update(range(p.start, p.end))
    evidence = {i for spans in annotations for s, e in spans for i in range(s, e)}
    assert evidence <= covered  # parts never lose evidence


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(annotated_texts(word_aligned=True), st.randoms(use_true_random=False))
def test_property_word_aligned_and_order_free(case, rng):
    text, annotations, ratios, gap = case
    result = compute(text, annotations, ratios, multi_span_gap=gap)
    for part in result.parts:
        for start, end in [part.territory, *part.variants.values()]:
            assert is_boundary(text, start) and is_boundary(text, end), (text, start, end)
    order = list(range(len(annotations)))
    rng.shuffle(order)
    shuffled = compute(text, [annotations[i] for i in order], ratios, multi_span_gap=gap)

    def by_annotation(res, mapping):
        return sorted((mapping[p.annotation], p.start, p.end, p.territory, sorted(p.variants.items())) for p in res.parts)

    assert by_annotation(result, list(range(len(annotations)))) == by_annotation(shuffled, order)


@pytest.mark.parametrize("folder,documents,with_overlaps", [
    pytest.param(SAMPLE_JSON, 4, 1, id="sample"),
    pytest.param(GSC_DIR, 228, 60, id="shared", marks=requires_shared_data()),
])
def test_every_document_is_processed_with_merge_and_isolated(folder, documents, with_overlaps):
    files = sorted(folder.glob("*.json"))
    assert len(files) == documents
    overlapping = 0
    for file in random.Random(0).sample(files, documents):
        record = json.loads(file.read_text(encoding="utf-8"))
        spans = [[(s["start_char"], s["end_char"]) for s in a["evidence_spans"]] for a in record["annotations"]]
        try:
            compute(record["full_text"], spans, on_overlap="error")
        except OverlapError:
            overlapping += 1
        result = compute(record["full_text"], spans, [0.0, 0.5, 1.0])
        assert {p.annotation for p in result.parts} == set(range(len(spans)))
        for part in result.parts:
            foreign = foreign_characters(result, part)
            start, end = part.territory
            assert not any(start <= i < end for i in foreign)
    assert overlapping == with_overlaps  # documents in which two different annotations overlap
