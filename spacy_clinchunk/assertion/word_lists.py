"""The word lists the assertion component carries beside its rules and sections: each is a
shipped resource of every language, may be given through ``initialize``, and is saved in the
component's ``cfg.json`` under its key."""

LIGHT_WORDS_RESOURCE = "assertion_light_words"
ABBREVIATIONS_RESOURCE = "abbreviations"  # "bds.", "Pat.": a period after one ends no scope
# "path.", "Dr.": abbreviations that stand before their noun, so a capital after them opens no sentence
ATTRIBUTIVE_RESOURCE = "attributive_abbreviations"
# "or", "nor": a list that goes on to one is one list, which a comma before a graded item does not cut
JOINERS_RESOURCE = "alternative_joiners"
BREAKS_RESOURCE = "alternative_breaks"  # "and", "but", "which": where the list before an alternative ends
# "und", "and": the words that join a list's items (see .lists), shared with the chunkers' coordination
LIST_JOINERS_RESOURCE = "coordination_joiners"
# resource -> its key in cfg.json and its argument of ``initialize``, in that method's order
SAVED_KEYS = {
    LIGHT_WORDS_RESOURCE: "light_words",
    ABBREVIATIONS_RESOURCE: "abbreviations",
    ATTRIBUTIVE_RESOURCE: "attributive_abbreviations",
    JOINERS_RESOURCE: "alternative_joiners",
    BREAKS_RESOURCE: "alternative_breaks",
    LIST_JOINERS_RESOURCE: "list_joiners",
}
WORD_LISTS = tuple(SAVED_KEYS)
