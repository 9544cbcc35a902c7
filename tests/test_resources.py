"""Language resources: schema per language (from the installed package), fallback, overrides."""
import json
import re
import warnings

import pytest
import spacy

from spacy_clinchunk import resources_io
from spacy_clinchunk.resources_io import SUPPORTED_LANGUAGES, ResourceError, resource_path, resource_root

from conftest import chunk_texts, pipeline_config

WORD_LISTS = (
    "abbreviations",
    "attributive_abbreviations",
    "prenominal_abbreviations",
    "introducer_abbreviations",
    "coordinating_conjunctions",
    "transition_markers",
    "status_openers",
    "conjunction_fixed_expressions",
    "leading_cleanup_words",
    "trailing_cleanup_words",
    "low_value_words",
    "negation_words",
)
SINGLE_WORD_LISTS = ("leading_cleanup_words", "trailing_cleanup_words", "low_value_words", "negation_words")


def load(lang, name):
    return json.loads(resource_path(lang, f"{name}.json").read_text(encoding="utf-8"))


def test_resources_come_from_the_installed_package():
    root = resource_root()
    assert {p.name for p in root.iterdir() if p.is_dir()} >= set(SUPPORTED_LANGUAGES)


@pytest.mark.parametrize("lang", SUPPORTED_LANGUAGES)
def test_every_language_has_the_same_files_as_english(lang):
    english = sorted(p.name for p in resource_root().joinpath("en").iterdir())
    assert sorted(p.name for p in resource_root().joinpath(lang).iterdir()) == english


@pytest.mark.parametrize("lang", SUPPORTED_LANGUAGES)
@pytest.mark.parametrize("name", WORD_LISTS)
def test_word_list_schema(lang, name):
    data = load(lang, name)
    assert isinstance(data, list) and data, f"{lang}/{name} is empty"
    assert all(isinstance(x, str) and x == x.strip() and x for x in data)
    assert len({x.lower() for x in data}) == len(data), f"duplicates in {lang}/{name}"
    if name == "abbreviations":
        assert all(x.endswith(".") for x in data)
    if name in SINGLE_WORD_LISTS:
        assert all(" " not in x for x in data)


@pytest.mark.parametrize("lang", SUPPORTED_LANGUAGES)
def test_punct_rules_schema(lang):
    rules = load(lang, "punct_rules")
    assert set(rules) == {"ordinal_period"} and isinstance(rules["ordinal_period"], bool)
    assert rules["ordinal_period"] is (lang == "de")


@pytest.mark.parametrize("lang", SUPPORTED_LANGUAGES)
def test_every_abbreviation_written_before_its_noun_is_an_abbreviation(lang):
    """The assertion units read ``attributive_abbreviations`` beside ``abbreviations``; the chunkers
    read ``abbreviations`` alone, so one missing there loses its period to a chunk cut."""
    known = {w.lower() for w in load(lang, "abbreviations")}
    assert [w for w in load(lang, "attributive_abbreviations") if w.lower() not in known] == []


@pytest.mark.parametrize("lang", SUPPORTED_LANGUAGES)
def test_an_abbreviation_that_never_ends_a_sentence_is_written_before_its_noun(lang):
    """``prenominal_abbreviations`` (the chunkers keep a sentence going after them, before a capital
    too) is a subset of ``attributive_abbreviations``: "li." / "re." stand before or after their noun,
    so they may end a sentence and are not in it."""
    attributive = {w.lower() for w in load(lang, "attributive_abbreviations")}
    prenominal = load(lang, "prenominal_abbreviations")
    assert [w for w in prenominal if w.lower() not in attributive] == []
    assert not {"li.", "re."} & {w.lower() for w in prenominal}


@pytest.mark.parametrize("lang", SUPPORTED_LANGUAGES)
def test_every_negation_word_survives_the_cleaner(lang):
    nlp = spacy.blank(lang)
    nlp.add_pipe("clin_cleaner")
    leading = load(lang, "leading_cleanup_words")
    for negation in load(lang, "negation_words"):
        text = f"{leading[0]} {negation} fever"
        assert chunk_texts(nlp(text)) == [f"{negation} fever"], (lang, negation)


def test_unsupported_language_falls_back_to_english_with_exactly_one_warning():
    nlp = spacy.blank("it")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nlp.add_pipe("clin_conj_splitter", name="conj_fallback_test")
        nlp.add_pipe("clin_cleaner", name="cleaner_fallback_test", config={"language": "xx"})
        again = spacy.blank("it")
        again.add_pipe("clin_conj_splitter", name="conj_fallback_test")
    ours = [w for w in caught if "falling back to English" in str(w.message)]
    assert len([w for w in ours if "conj_fallback_test" in str(w.message)]) == 1
    assert len([w for w in ours if "cleaner_fallback_test" in str(w.message)]) == 1
    assert nlp.get_pipe("conj_fallback_test").lang == "en"
    assert chunk_texts(nlp("Patient has seizures but no developmental delay")) == [
        "Patient has seizures",
        "no developmental delay",  # English cleanup words trimmed "but"
    ]


def test_language_codes_are_normalised():
    assert resources_io.resolve_language("de_DE", "t") == "de"
    assert resources_io.resolve_language("NL-be", "t") == "nl"


def test_override_inline_list():
    nlp = spacy.blank("en")
    nlp.add_pipe("clin_conj_splitter", config={"overrides": {"coordinating_conjunctions": ["plus"]}})
    assert chunk_texts(nlp("fever for days plus cough and rash")) == ["fever for days", "plus cough and rash"]


def test_override_json_path_and_round_trip_after_the_file_is_gone(tmp_path):
    path = tmp_path / "conj.json"
    path.write_text(json.dumps(["plus"]), encoding="utf-8")
    nlp = spacy.blank("en")
    nlp.add_pipe("clin_conj_splitter", config={"overrides": {"coordinating_conjunctions": str(path)}})
    text = "fever for days plus cough and rash"
    assert chunk_texts(nlp(text)) == ["fever for days", "plus cough and rash"]
    nlp.to_disk(tmp_path / "pipeline")
    path.unlink()  # the saved pipeline carries its own copy
    loaded = spacy.load(tmp_path / "pipeline")
    assert chunk_texts(loaded(text)) == ["fever for days", "plus cough and rash"]


def test_missing_override_file_is_an_error_on_first_use(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("clin_conj_splitter", config={"overrides": {"coordinating_conjunctions": str(tmp_path / "nope.json")}})
    with pytest.raises(ResourceError, match="file not found"):
        nlp.initialize()
    with pytest.raises(ResourceError):
        nlp("fever and cough")


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"no_such_list": ["x"]}, "unknown resource override"),
        ({"coordinating_conjunctions": ["and", " "]}, "list of non-empty strings"),
    ],
)
def test_bad_overrides_raise(overrides, message):
    nlp = spacy.blank("en")
    with pytest.raises(ResourceError, match=message):
        nlp.add_pipe("clin_conj_splitter", config={"overrides": overrides})


def test_registered_resource_list():
    from spacy.util import registry

    func = registry.misc.get("spacy_clinchunk.ResourceList.v1")
    assert func("de", "negation_words") == load("de", "negation_words")


# -- word lists through initialize: [initialize.components.<name>.resources] -----------------
INIT_CONFIG = pipeline_config("clin_conj_splitter", "clin_cleaner") + """
[initialize]

[initialize.components]

[initialize.components.clin_conj_splitter]

[initialize.components.clin_conj_splitter.resources]
coordinating_conjunctions = ["plus"]

[initialize.components.clin_cleaner]

[initialize.components.clin_cleaner.resources]
leading_cleanup_words = ["patient"]

[initialize.components.clin_cleaner.resources.negation_words]
@misc = "spacy_clinchunk.ResourceList.v1"
lang = "de"
name = "negation_words"
"""


def test_initialize_block_gives_the_word_lists(tmp_path):
    from spacy_clinchunk.pipeline import load_pipeline

    path = tmp_path / "init.cfg"
    path.write_text(INIT_CONFIG, encoding="utf-8")
    nlp = load_pipeline(path)
    cleaner = nlp.get_pipe("clin_cleaner")
    assert cleaner.resources["leading_cleanup_words"] == ["patient"]
    assert cleaner.resources["negation_words"] == load("de", "negation_words")  # a registered list
    assert cleaner.resources["low_value_words"] == load("en", "low_value_words")  # not named: shipped
    text = "patient has fever for days plus cough and rash"
    assert chunk_texts(nlp(text)) == ["has fever for days", "plus cough and rash"]
    nlp.to_disk(tmp_path / "saved")  # the lists travel with the pipeline
    assert chunk_texts(spacy.load(tmp_path / "saved")(text)) == chunk_texts(nlp(text))


def test_initialize_lists_win_over_overrides_and_survive_a_changed_override(tmp_path):
    nlp = spacy.blank("en")
    conj = nlp.add_pipe("clin_conj_splitter", config={"overrides": {"coordinating_conjunctions": ["and"]}})
    assert conj.resources["coordinating_conjunctions"] == ["and"]  # nobody called initialize: loaded on use
    nlp.initialize()
    assert conj.resources["coordinating_conjunctions"] == ["and"]
    conj.initialize(resources={"coordinating_conjunctions": ["plus"], "transition_markers": ["meanwhile"]})
    assert conj.resources["coordinating_conjunctions"] == ["plus"]
    nlp.to_disk(tmp_path / "p")
    override = {"components.clin_conj_splitter.overrides": {"conjunction_fixed_expressions": ["plus one"]}}
    loaded = spacy.load(tmp_path / "p", config=override).get_pipe("clin_conj_splitter")
    assert loaded.resources["coordinating_conjunctions"] == ["plus"]  # initialize data is kept
    assert loaded.resources["transition_markers"] == ["meanwhile"]
    assert loaded.resources["conjunction_fixed_expressions"] == ["plus one"]  # the new override applies
    again = spacy.blank("en").add_pipe("clin_conj_splitter")
    again.from_bytes(conj.to_bytes())
    assert again.resources["transition_markers"] == ["meanwhile"]


def test_initialize_list_from_a_json_path(tmp_path):
    path = tmp_path / "low.json"
    path.write_text(json.dumps(["meh"]), encoding="utf-8")
    nlp = spacy.blank("en")
    nlp.add_pipe("clin_cleaner")
    nlp.initialize()
    nlp.get_pipe("clin_cleaner").initialize(resources={"low_value_words": str(path)})
    assert chunk_texts(nlp("fever\n\nmeh")) == ["fever"]


@pytest.mark.parametrize(
    "resources, message",
    [
        ({"no_such_list": ["x"]}, "clin_cleaner: unknown word list(s) for initialize ['no_such_list']; known: "),
        ({"low_value_words": ["ok", ""]}, "list of non-empty strings"),
    ],
)
def test_bad_initialize_lists_are_one_line(tmp_path, resources, message):
    from spacy_clinchunk.pipeline import PipelineError, load_pipeline

    nlp = spacy.blank("en")
    nlp.add_pipe("clin_cleaner")
    with pytest.raises(ResourceError, match=re.escape(message)):
        nlp.get_pipe("clin_cleaner").initialize(resources=resources)
    config = nlp.config.copy()
    config["initialize"]["components"] = {"clin_cleaner": {"resources": resources}}
    config.to_disk(tmp_path / "bad.cfg")
    with pytest.raises(PipelineError) as info:
        load_pipeline(tmp_path / "bad.cfg")
    assert message in str(info.value) and "\n" not in str(info.value)
