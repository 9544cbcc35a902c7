"""Which language a clinical note is written in: stop-word and cue statistics, no model.

Assertion rules are per language, so a Spanish note run on English rules is a silent
error ("Niega disnea" -> affirmed). The detector counts, over the words of the text,

* function words and frequent clinical words of each language (a word several languages
  share counts for each of them, divided by how many share it: "de" is es/fr/nl). A word
  spelt alike in two languages is listed under both ("general" en/es, "diagnostic" en/fr,
  "beide" de/nl): listed under one, it would carry a short text of the other language
  ("ANESTHESIA: General.") to it,
* French elision ("d'", "l'", "n'", "qu'"),
* letters and endings that only some languages use ("ñ", "ß", "-ción", "-heid", "ij"),
  for words no list knows,

and names the language with the most evidence when the evidence is enough and clearly
ahead. Italian and Portuguese are counted as well, so a note in either is recognised as
not supported instead of being taken for Spanish or French. Abbreviations (short
all-capital words, one-letter words, a lone letter joined to a period or slash: "p.o.",
"o.B.", "y/o") and numbers carry no weight, so "BP 120/80, HR 72" is unsure, not English.
Only the first :data:`MAX_CHARS` characters are read: enough for any note, and detection
stays linear and cheap.
"""
import re
from collections import defaultdict
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Tuple

from .prefilter import Condition, Conditions, all_hold, fold_safe

SUPPORTED = ("en", "de", "es", "fr", "nl")
# counted so that a note in them is "unsupported" instead of a wrong supported language
DECOYS = ("it", "pt")
MAX_CHARS = 20_000
# a guess is sure when its evidence reaches MIN_EVIDENCE, is at least MIN_SHARE of all
# evidence and leads the runner-up by MIN_LEAD (weights: one distinctive word = 1.0)
MIN_EVIDENCE = 0.75
MIN_SHARE = 0.5
MIN_LEAD = 0.5

_WORDS: Dict[str, str] = {
    "en": """the and of with was were is are has have had no not for to in on at this that these those there
        which from as be been being an or after before since by denies denied without history pain fever
        chest left right negative mild severe shortness breath cough blood pressure daily he she his her
        him they their evidence noted reports reported showed shows exam examination follow up year
        years old mother father brother sister family diagnosis treatment discharge admission admitted
        seizure seizures infection because also other should will would may if when any all some status
        post medical patient past present positive possible likely rule out concern suspected
        unremarkable significant hospital course plan continue days weeks months ago prior previous
        known well taken given who what does did done returned normal pneumonia ultrasound headache
        vomiting nausea diarrhea murmur murmurs soft lungs clear heart lesion allergies medications
        surgical rash chief complaint assessment impression findings hypertension change changes tone
        increased decreased swelling weakness onset then new started stopped recommended ventricle
        carcinoma tumor asthma acute bilateral renal pleural type moderate abdomen
        general control edema diagnostic consultation conclusion compatible probable actual plus per non
        begin so none procedure procedures performed complications anesthesia placed applied obtained using
        received preoperative postoperative operative incision function vision than please see below note""",
    "de": """der die das und ist mit nicht kein keine keinen keinem keiner ohne bei auf im ein eine einer
        eines einen dem den des zu zur zum von nach sich auch wurde wurden werden wird hat haben sind
        war waren unter über sowie bzw patient patientin befund befunde verdacht zustand fieber
        schmerzen husten mutter vater bruder schwester anamnese diagnose diagnosen in es er sie wir nur
        noch bis oder aber wegen seit heute unauffällig beidseits links rechts untersuchung therapie
        aufnahme entlassung vorgeschichte familienanamnese kind jahre jahren jährige jähriger jährigen
        fraglich ausgeschlossen regelrecht bekannt bekannte beim vom ins am keinerlei hinweis hinweise
        dass weiter weitere weiterhin zeigt zeigte leichte deutlich empfehlen empfohlen kontrolle normal
        pneumonie normalbefund sonographie röntgen kopfschmerzen erbrechen übelkeit durchfall
        krampfanfall herzgeräusch weich auskultation lunge herz verlauf nachsorge hausarzt notaufnahme
        allergien medikation empfehlung ausschluss vorerkrankungen hypertonie epikrise procedere
        diagnostik körperlicher aktuell änderung veränderung zunahme abnahme schwellung schwäche beginn
        neu begonnen abgesetzt beschwerden linker linke linken rechter rechte ventrikel karzinom tumor
        fragliche raumforderung anamnestisch bronchiale asthma alte alter altes negativ blieben steril
        normwertig fraglicher kleiner kleine großer sollte auftreten bitte akute akuter virale
        leichtgradig mittelgradig hochgradig abdomen
        unklar unklare unklares ehemalige ehemaliger raucher raucherin isokor lichtreagibel bisher
        vermutlich voroperationen seitengleich intakt kraft sensibilität befundlos
        an um beide status normale op so per sehr geehrte geehrter kollegin kollege siehe ansonsten nunmehr
        aufgrund klinik direktor stationär ambulant nachweis postoperative operative""",
    "es": """el la los las de del que en con por para una un se su sus es está están presenta presentó sin no
        niega ni al lo le como pero más muy sobre desde hasta tras hace fue ha han tiene paciente
        antecedentes dolor fiebre tos disnea madre padre hermano hermana diagnóstico tratamiento alta
        ingreso exploración buen estado general años mes meses días día durante también y o refiere
        descarta descartado descartó previo previa sospecha probable posible normales conocido conocida
        control analítica pruebas tórax abdomen cabeza esta este dicho realizó actualmente ambos hijo
        hija normal descartada descartados descartadas negativo negativa ecografía neumonía radiografía
        hemograma cefalea vómitos náuseas diarrea convulsiones soplos soplo blando depresible
        auscultación cardiopulmonar murmullo vesicular rítmico lesiones hallazgos sugestivo podría
        parece seguimiento revisión consulta urgencias médico familiares personales alergias quirúrgicas
        descartar valorar enfermedad actual juicio clínico evolución física motivo hipertensión cambios
        cambio frecuencia aumento disminución edema debilidad inicio nuevo inició suspende suspender
        recomienda molestias izquierdo izquierda derecho derecha ventrículo carcinoma tumor ingresa
        intervenido intervenida cardiopatía isquémica apendicectomía colecistectomía ausencia derrame
        pleural rigidez nuca ausente función renal conservada conservado otoscopia bilateral antecedente
        tratada correctamente infancia varicela episodio aguda agudo origen historia familiar muerte
        súbita complicada complicado tipo moderada moderado leve grave
        anodino anodina isocóricas normorreactivas normalidad exfumador exfumadora impresiona focalidad
        conservadas simétricas fuerza secuelas""",
    "fr": """le la les des du de et est un une en dans pour pas ne sur au aux avec sans par qui que ce cette
        il elle ont été avait sont était aucun aucune absence patient patiente antécédents douleur
        fièvre toux mère père frère sœur soeur examen traitement sortie hospitalisation diagnostic bilan
        mois ans jours depuis chez y à plus également non notion suspicion retrouvé retrouvée absente
        absent probable évocateur évocatrice compatible ses son sa leur après avant lors cas selon puis
        ou mais jamais rien exclu écarté œdème épanchement pneumonie normale normaux anomalie
        échographie radiographie pneumopathie céphalées vomissements nausées diarrhée crises souffle
        souple dépressible auscultation pulmonaire cardiaque lésion lésions suivi consultation urgences
        médecin familiaux personnels allergies chirurgicaux motif maladie conclusion évolution clinique
        hypertension artérielle changement modification augmentation diminution gonflement faiblesse
        début nouveau débuté arrêté recommandé plaintes gauche droit droite ventricule carcinome tumeur
        appendicite rythme sinusal tracé infection urinaire basse oncle maternel paternel épileptique
        histoire familiale mort subite signale nausée vomissement type aiguë aigu modérée légère sévère abdomen
        normales stérile négative négatif ancienne ancien fumeuse fumeur défense particularité réactives isocores
        symétriques indolore conservée régulier réguliers déficit séquellaire limites""",
    "nl": """de het een en van in is met niet geen zonder op voor bij naar te er dat die zijn was werd wordt
        heeft hebben had ook maar of om aan als door uit na nog wel patiënt koorts pijn hoest moeder
        vader broer zus voorgeschiedenis onderzoek behandeling opname ontslag beleid conclusie klachten
        jaar jaren dagen maanden sinds bekend aanwijzingen zich deze hij zij ze ter tot mogelijk
        waarschijnlijk verdenking uitgesloten eerder status links rechts beide werden gehad geleden
        thuis graag controle poli pneumonie normaal afwijkingen echo echografie thoraxfoto hoofdpijn
        braken misselijkheid diarree aanvallen souffle buik soepel auscultatie longen hart harttonen
        vervolg huisarts spoedeisende allergieën medicatie familieanamnese anamnese hypertensie
        lichamelijk aanvullend verandering toename afname zwelling zwakte begin nieuw gestart gestopt
        geadviseerd linker rechter ventrikel carcinoom tumor operatie cholecystectomie appendectomie
        tiener diagnose acute afwezig goed huid gaaf echografisch verdacht differentiaal diagnostisch
        virale infectie terugkomen indien optreden plotse familie doorgemaakt kind mazelen normale matig
        ernstig licht abdomen
        orde bijzonderheden uitval steriel negatief voormalig roker isocoor lichtreactief symmetrisch
        opgewekt kracht sensibiliteit bloedbeeld normaalwaarden rustig drukpijnlijk ademgeruis vesiculair""",
    "it": """il di della delle dei degli che non per nel nella alla sono anni paziente dolore febbre anamnesi
        esame terapia è stato stata anche""",
    "pt": """não com um uma sem paciente dor febre mãe pai anos nega foi está são também exame história ao à
        pelo pela os em""",
}
# one-letter words that count (all others, like "a" or "e", are too shared or initials)
_ONE_LETTER = {"y": ("es", "fr"), "à": ("fr", "pt"), "è": ("it",), "é": ("pt",)}
# (pattern in a word no list knows, language, weight)
_LETTERS: Tuple[Tuple[str, str, float], ...] = (
    ("ñ", "es", 1.0), ("ß", "de", 1.0), ("ã", "pt", 1.0), ("õ", "pt", 1.0), ("ç", "fr", 0.5),
    ("œ", "fr", 1.0), ("ä", "de", 0.5), ("ö", "de", 0.5), ("ü", "de", 0.5), ("è", "fr", 0.5),
    ("ê", "fr", 0.5), ("â", "fr", 0.4), ("î", "fr", 0.4), ("ô", "fr", 0.4), ("û", "fr", 0.4),
    ("ë", "nl", 0.5), ("ï", "nl", 0.3), ("á", "es", 0.4), ("í", "es", 0.4), ("ó", "es", 0.4),
    ("ú", "es", 0.4), ("é", "fr", 0.25), ("ij", "nl", 0.5), ("sch", "de", 0.25), ("th", "en", 0.2),
)
_ENDINGS: Tuple[Tuple[str, str, float], ...] = (
    ("ción", "es", 0.75), ("ciones", "es", 0.75), ("sión", "es", 0.6), ("dad", "es", 0.3),
    ("mente", "es", 0.25), ("ado", "es", 0.2), ("ada", "es", 0.2), ("ido", "es", 0.2),
    ("tion", "en", 0.3), ("tion", "fr", 0.3), ("ement", "fr", 0.4), ("ique", "fr", 0.4),
    ("eux", "fr", 0.4), ("euse", "fr", 0.4), ("ée", "fr", 0.5), ("ung", "de", 0.5),
    ("ungen", "de", 0.5), ("keit", "de", 0.6), ("heit", "de", 0.6), ("lich", "de", 0.4),
    ("heid", "nl", 0.6), ("lijk", "nl", 0.6), ("lijke", "nl", 0.6), ("ing", "en", 0.2),
    ("ing", "nl", 0.15), ("ness", "en", 0.5), ("zione", "it", 0.75), ("ção", "pt", 1.0),
    ("ischer", "de", 0.5), ("isches", "de", 0.5), ("ischen", "de", 0.4), ("iert", "de", 0.5),
    ("ierte", "de", 0.5), ("ierten", "de", 0.5), ("werte", "de", 0.5), ("wertig", "de", 0.6), ("narbe", "de", 0.6), ("schmerz", "de", 0.6), ("schmerzen", "de", 0.6),
    ("erguss", "de", 0.6), ("kulturen", "de", 0.4), ("zeichen", "de", 0.5), ("functie", "nl", 0.6),
    ("stoornis", "nl", 0.6), ("stoornissen", "nl", 0.6), ("operatie", "nl", 0.6), ("pijn", "nl", 0.8),
    ("heid", "nl", 0.6), ("breuk", "nl", 0.6), ("kanker", "nl", 0.6), ("ziekte", "nl", 0.6), ("verlies", "nl", 0.4),
    ("ía", "es", 0.4), ("ismo", "es", 0.4), ("aire", "fr", 0.3), ("eau", "fr", 0.5),
)
# a word, or (as an empty match) a lone letter joined to a period or slash, the part of an
# abbreviation: the "o" of German "p.o." and "o.B." or the "y" and "o" of English "y/o" are not
# Spanish "o" and "y"
_WORD = re.compile(
    r"(?<![^\W\d_])[^\W\d_](?=[./])|(?<=[^\W\d_][./])[^\W\d_](?![^\W\d_])|([^\W\d_]+(?:['’][^\W\d_]+)*)"
)
_ELISION = re.compile(r"(?<![^\W\d_])(?:[dlnjsc]|qu)['’](?=[^\W\d_])", re.IGNORECASE)
_ELISION_WEIGHT = 0.75
# dotted abbreviations that name their language ("Z.n.", "V.a."); the word pass skips their letters
_ABBREVIATIONS = ((re.compile(r"(?<![^\W\d_])(?:z\.\s?n|v\.\s?a|st\.\s?p|o\.\s?b|u\.\s?a|z\.\s?b)\.", re.IGNORECASE), "de", 1.0),)


class LanguageGuess(NamedTuple):
    """What the detector found: the best language, its share of the evidence, and whether
    that is enough to apply its rules (``sure``)."""

    language: Optional[str]  # the best candidate (a decoy such as "it" included); None: no evidence
    score: float  # share of all evidence that went to ``language``, 0..1
    sure: bool  # enough evidence, clearly ahead, and ``language`` is supported


def _word_weights() -> Dict[str, Tuple[Tuple[str, float], ...]]:
    """word -> ((language, weight), ...): a word shared by k languages gives each 1/k."""
    owners: Dict[str, List[str]] = defaultdict(list)
    for lang, words in _WORDS.items():
        for word in dict.fromkeys(words.split()):
            owners[word].append(lang)
    for word, langs in _ONE_LETTER.items():
        owners[word].extend(langs)
    # a language counts once per word, however many of its lists name the word ("y")
    unique = {word: tuple(dict.fromkeys(langs)) for word, langs in owners.items()}
    return {word: tuple((lang, 1.0 / len(langs)) for lang in langs) for word, langs in unique.items()}


_WEIGHTS: Dict[str, Tuple[Tuple[str, float], ...]] = {}  # built on first use (see _weights)
_GUESSES: Dict[str, Tuple[Tuple[str, float], ...]] = {}  # unknown word -> its letter/ending evidence
_EVIDENCE: Dict[str, Tuple[Tuple[str, float], ...]] = {}  # word as written -> what it votes
_MAX_CACHED = 100_000
_GATES: List[Any] = []  # built on first use (see _gates)


def _gates() -> Tuple[Tuple[Condition, ...], List[Tuple[Condition, ...]]]:
    """What a text must hold for the elision and abbreviation patterns to match (most texts
    hold no apostrophe and no "z.n."): their searches are skipped elsewhere."""
    if not _GATES:
        conditions = Conditions()
        _GATES.append((conditions.of(_ELISION.pattern), [conditions.of(p.pattern) for p, _, _ in _ABBREVIATIONS]))
    return _GATES[0]


def _weights() -> Dict[str, Tuple[Tuple[str, float], ...]]:
    """The word table, built on first use: importing the package costs nothing for it."""
    if not _WEIGHTS:
        _WEIGHTS.update(_word_weights())
    return _WEIGHTS


def _shape_evidence(word: str) -> Tuple[Tuple[str, float], ...]:
    """Evidence of a word no list knows, from its letters and ending (cached per word)."""
    found = _GUESSES.get(word)
    if found is None:
        votes: Dict[str, float] = defaultdict(float)
        for letters, lang, weight in _LETTERS:
            if letters in word:
                votes[lang] = max(votes[lang], weight)
        for ending, lang, weight in _ENDINGS:
            if word.endswith(ending) and len(word) > len(ending) + 1:
                votes[lang] = max(votes[lang], weight)
        found = tuple(votes.items())
        if len(_GUESSES) < _MAX_CACHED:
            _GUESSES[word] = found
    return found


def _word_evidence(raw: str) -> Tuple[Tuple[str, float], ...]:
    """What a word as written votes (cached): its list weights, else its shape; nothing for
    abbreviations (BP, HR, DD, TA) and short unknown words."""
    found = _EVIDENCE.get(raw)
    if found is None:
        word = raw.lower()
        if raw.isupper() and len(raw) <= 3:
            found = ()
        else:
            known = _weights().get(word)
            found = known if known is not None else (_shape_evidence(word) if len(word) > 3 else ())
        if len(_EVIDENCE) < _MAX_CACHED:
            _EVIDENCE[raw] = found
    return found


def language_evidence(text: str) -> Dict[str, float]:
    """Evidence per language (supported and decoys) over the first MAX_CHARS of ``text``."""
    sample = text[:MAX_CHARS]
    votes: Dict[str, float] = defaultdict(float)
    lowered = sample.lower() if fold_safe(sample) else None
    elision_gate, abbreviation_gates = _gates()
    words, elisions = _ELISION.subn(" ", sample) if all_hold(elision_gate, sample, lowered, {}) else (sample, 0)
    if elisions:
        votes["fr"] += _ELISION_WEIGHT * elisions
    for (pattern, lang, weight), gate in zip(_ABBREVIATIONS, abbreviation_gates):
        found = len(pattern.findall(sample)) if all_hold(gate, sample, lowered, {}) else 0
        if found:
            votes[lang] += weight * found
    evidence = _EVIDENCE.get
    for raw in _WORD.findall(words):
        if not raw:  # an abbreviation's letter
            continue
        found = evidence(raw)
        if found is None:
            found = _word_evidence(raw)
        for lang, weight in found:
            votes[lang] += weight
    return dict(votes)


def detect_language(text: str, candidates: Iterable[str] = SUPPORTED) -> LanguageGuess:
    """The language of ``text`` among ``candidates`` (see the module docstring for how)."""
    allowed = set(candidates)
    votes = language_evidence(text)
    total = sum(votes.values())
    if total <= 0:
        return LanguageGuess(None, 0.0, False)
    ranked = sorted(votes.items(), key=lambda item: (-item[1], item[0]))
    best, best_votes = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    share = best_votes / total
    sure = (
        best in allowed
        and best_votes >= MIN_EVIDENCE
        and share >= MIN_SHARE
        and best_votes - runner_up >= MIN_LEAD
    )
    return LanguageGuess(best, round(share, 3), sure)


def recorded_language(doc: Any, names: Tuple[str, str]) -> Optional[str]:
    """The language an earlier component detected for ``doc`` and was sure of (``names``: the
    doc extensions of the language and its score), or None: detection runs once per doc."""
    language_attr, score_attr = names
    if not (doc.has_extension(language_attr) and doc.has_extension(score_attr)):
        return None
    language, score = doc._.get(language_attr), doc._.get(score_attr)
    return language if language in SUPPORTED and score is not None else None


def foreign_stop_words(tokenizer_lang: str, lang: str) -> set:
    """spaCy's stop words of ``lang`` when the tokenizer is of another language: with "auto",
    "le" in "Le patient ne présente plus ..." is as light under an English tokenizer."""
    if lang == tokenizer_lang:
        return set()
    from spacy.util import get_lang_class

    return {w.lower() for w in get_lang_class(lang).Defaults.stop_words}
