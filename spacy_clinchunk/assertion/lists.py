"""Coordinated lists a bounded cue governs whole ("Na, K, Cl, Ca, Lipase unauff.").

A cue whose rule keeps a small ``max_scope`` (a short predicate: "unauffällig", "o.B.") reaches
a few tokens; where those tokens are the last items of a list, the predicate is said of the
whole list ("Elektrolyte (Na, K, Cl, Ca), Niere (Krea, Harnstoff), Glucose, CRP unauff.",
"Motorik/Durchblutung/Sensibilität peripher oB.", "Normwerte für Na, K, GOT, CK, ..."). A
rule asks for this with ``metadata.governs_list: true``; its scope then runs over the items
of the list it is attached to, however many.

An item is a few words (a bracketed group counts as one word) between separators: a comma,
a slash or one of the language's coordination joiners ("und", "and"). A list ends at a
longer stretch (a clause, not an item), at a colon, semicolon or full stop, at the edge of
the cue's unit, and at the words of any other cue ("keine RGs, Abdomen unauff." leaves the
denied item to its own cue). The walk never passes another cue, so the walks of all cues
of a unit together read each token a bounded number of times: linear in the unit.
"""
from typing import Callable, FrozenSet, List, NamedTuple

GOVERNS_LIST = "governs_list"  # the rule metadata switch
# Words an item may hold: "Sensibilität peripher", "fanden sich HbA1c", "TSH basal".
ITEM_MAX_WORDS = 3
_SEPARATORS = {",", "/"}
_OPEN, _CLOSE = "(", ")"
_ENDS = {".", ":", ";", "[", "]", "{", "}"}


# Languages that write every noun with a capital: there an item that ends in a lower-case word
# states its own finding ("Allgemeinzustand vermindert, Ernährungszustand normal").
NOUNS_CAPITALISED = frozenset({"de"})


class ListGrammar(NamedTuple):
    """What a language's lists are made of."""

    joiners: FrozenSet[str] = frozenset()  # lower-case words that join items ("und", "and")
    nouns_capitalised: bool = False  # see NOUNS_CAPITALISED


def list_grammar(lang: str, joiners: List[str]) -> ListGrammar:
    return ListGrammar(frozenset(w.lower() for w in joiners), lang in NOUNS_CAPITALISED)


def separates(word: str, joiners: FrozenSet[str]) -> bool:
    """``word`` separates two items of a list: a comma, a slash or a joiner."""
    return word in _SEPARATORS or word.lower() in joiners


class ListWalk:
    """The token view a walk reads: words, spaces, cue tokens, and the language's list grammar."""

    __slots__ = ("word_of", "space", "in_cue", "joiners", "nouns_capitalised")

    def __init__(self, word_of: Callable[[int], str], space: List[int], in_cue: List[bool], grammar: ListGrammar):
        self.word_of = word_of
        self.space = space
        self.in_cue = in_cue
        self.joiners = grammar.joiners
        self.nouns_capitalised = grammar.nouns_capitalised

    def _states_a_finding(self, word: str) -> bool:
        """The last word of an item before a comma is a predicate of its own ("vermindert" in
        "AZ vermindert, EZ normal"), told by its lower case where nouns are capitalised ("a-Amy",
        "ing." are no plain lower-case words; before "und" a lower-case word is an adjective of
        the next noun: "der internistische und neurologische Status"). Read in backward walks
        only: a list after its summary is one of names ("Unauffällig fanden sich TSH basal, AFP")."""
        return self.nouns_capitalised and word.isalpha() and word.islower()

    def _separates(self, word: str) -> bool:
        return separates(word, self.joiners)

    def _stops(self, k: int, word: str) -> bool:
        """Token ``k`` (``word``) belongs to no item of the list: another cue's words, or a
        number, the value of a measurement ("Hb 10,5 g/dl, Quick 69%, übrige Serumchemie o.B.":
        the summary is said of the items without a value of their own; "HbA1c", "IL6" are names)."""
        return self.in_cue[k] or word[:1].isdigit()

    def start_before(self, cue_start: int, floor: int) -> int:
        """The first token of the list that ends right before ``cue_start``; ``cue_start`` when
        there is none, or when what precedes the list is no edge of an item (a clause: "She
        reports chest pain, nausea, and her abdomen is normal" lists no subjects)."""
        best, words, k, comma, joined = cue_start, 0, cue_start - 1, False, False
        while k >= floor:
            if self.space[k]:
                k -= 1
                continue
            word = self.word_of(k)
            if self._stops(k, word):
                return best  # the item next to another cue or a value is not the list's
            if word == _CLOSE:
                k = self._matching(k, floor, -1)
                if k < 0:
                    return best
                words += 1
            elif self._separates(word):
                if words:
                    best, words, comma = k + 1, 0, word in _SEPARATORS
                    joined = word.lower() in self.joiners
                elif joined and word in _SEPARATORS:
                    joined, comma = False, True  # "tubes, and ovaries": one separator
                else:
                    return cue_start
            elif word in _ENDS or word == _OPEN:
                break
            elif not words and comma and self._states_a_finding(word):
                return cue_start  # an earlier item with its own predicate: a clause, no list
            else:
                words += 1
            if words > ITEM_MAX_WORDS:
                return cue_start
            k -= 1
        if best == cue_start:
            return cue_start  # one item, no list
        return k + 1 if words else best

    def end_after(self, cue_end: int, ceiling: int) -> int:
        """The end of the list that starts right after ``cue_end``; ``cue_end`` when there is
        none, or when the list runs into a clause before its sentence ends."""
        best, words, separators, k, comma = cue_end, 0, 0, cue_end, False
        while k < ceiling:
            if self.space[k]:
                k += 1
                continue
            word = self.word_of(k)
            if self._stops(k, word):
                return best
            if word == _OPEN:
                k = self._matching(k, ceiling, 1)
                if k < 0:
                    return best
                words += 1
            elif self._separates(word):
                if words:
                    best, words, separators, comma = k, 0, separators + 1, word in _SEPARATORS
                elif comma and word.lower() in self.joiners:
                    comma = False  # "tubes, and ovaries": one separator
                else:
                    return cue_end
            elif word in _ENDS or word == _CLOSE:
                break
            else:
                words += 1
            if words > ITEM_MAX_WORDS:
                return cue_end
            k += 1
        if not separators:
            return cue_end  # one item, no list
        return k if words else best

    def _matching(self, k: int, bound: int, step: int) -> int:
        """The token of the bracket that matches the one at ``k`` walking by ``step``; -1 when
        it is not there before ``bound`` or the group holds a cue, a value or a sentence end."""
        depth = 0
        while (k >= bound) if step < 0 else (k < bound):
            word = self.word_of(k)
            if self._stops(k, word) or word in _ENDS:
                return -1
            if word in (_OPEN, _CLOSE):
                depth += 1 if (word == _CLOSE) == (step < 0) else -1
                if depth == 0:
                    return k
            k += step
        return -1
