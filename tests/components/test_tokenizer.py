"""The clinical tokenizer (``spacy_clinchunk.ClinicalTokenizer``): its versions, what each splits,
and that a pipeline keeps the version its config names through ``to_disk`` / ``spacy.load``."""
import pytest
import spacy
from spacy.util import registry

from spacy_clinchunk.pipeline import load_pipeline

from conftest import ROOT


def tokens(version, lang, text):
    nlp = spacy.blank(lang)
    tokenizer = registry.tokenizers.get(f"spacy_clinchunk.ClinicalTokenizer.{version}")()(nlp)
    return [t.text for t in tokenizer(text)]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_both_versions_split_a_flattened_export(version):
    assert tokens(version, "en", "Neurology,,CHIEF COMPLAINT:,Recurrent 1,200 mg") == [
        "Neurology", ",,", "CHIEF", "COMPLAINT", ":", ",", "Recurrent", "1,200", "mg"]


@pytest.mark.parametrize("text,expected", [
    ("St.p. SHT 1995. Pleuraerguss", ["SHT", "1995", ".", "Pleuraerguss"]),
    ("am 12.03.2019. Keine", ["am", "12.03.2019", ".", "Keine"]),
    ("seit 1880.", ["seit", "1880", "."]),
])
def test_v2_ends_a_german_sentence_after_a_year(text, expected):
    """German rules keep "1995." as an ordinal; nobody writes the 1995th, so v2 splits its full stop."""
    got = tokens("v2", "de", text)
    assert got[-len(expected):] == expected, got
    assert tokens("v1", "de", text) != got  # v1 keeps what saved pipelines of earlier versions did


@pytest.mark.parametrize("text", ["am 3. Mai", "der 12. Zyklus", "Nr. 11995. Rest", "2019"])
def test_v2_keeps_ordinals_and_other_numbers(text):
    assert tokens("v2", "de", text) == tokens("v1", "de", text)


def test_every_shipped_config_names_v2():
    for path in sorted((ROOT / "configs").glob("*.cfg")):
        text = path.read_text(encoding="utf-8")
        if "ClinicalTokenizer" in text:
            assert "spacy_clinchunk.ClinicalTokenizer.v2" in text, path.name


def test_a_saved_pipeline_keeps_its_tokenizer_version(tmp_path):
    nlp = load_pipeline("default", lang="de")
    nlp.to_disk(tmp_path / "pipe")
    again = spacy.load(tmp_path / "pipe")
    assert again.config["nlp"]["tokenizer"]["@tokenizers"] == "spacy_clinchunk.ClinicalTokenizer.v2"
    text = "St.p. SHT 1995. Pleuraerguss re."
    assert [t.text for t in again.make_doc(text)] == [t.text for t in nlp.make_doc(text)]
    assert "1995" in [t.text for t in again.make_doc(text)]
