"""The toy_wmt lexicon: seeded pseudo-English source words and pseudo-German target words.

Every content word is generated from syllables, so no word list is needed and a seed fixes the
whole language. The target side is deliberately not a relabelling of the source:

* nouns carry a gender (m / f / n) that picks the article (der / die / das ...) and the
  adjective endings, and a plural class (-e, -en, -er, -s, -n, none), dative plural adds -n;
* some source nouns are two-word compounds ("stam brill") that become one target word
  ("Schnaubrück"), taking the head's gender;
* some verbs govern the dative instead of the accusative, some are separable (their particle
  goes to the end of a main clause), some intransitives build the perfect with "sein";
* prepositions govern the accusative or the dative.

Source forms are unique across the whole lexicon (checked), so the source -> target mapping is
a function: perfect BLEU is reachable.
"""

import random
from dataclasses import dataclass, field

from anatomy.errors import BadInputError

SRC_ONSETS = tuple(
    "b c d f g h j l m n p r s t v w br cl dr fl gr pl sk sl sp st tr th sh ch".split()
)
SRC_VOWELS = ("a", "e", "i", "o", "u", "ea", "oo", "ai", "ou")
SRC_CODAS = ("", "n", "t", "ck", "ll", "m", "nd", "st", "p", "rk", "ng")
TGT_ONSETS = tuple("b d f g h k l m n p r s t w z sch st sp pf kr gr br tr fl kl".split())
TGT_VOWELS = ("a", "e", "i", "o", "u", "ä", "ö", "ü", "au", "ei", "ie", "eu")
TGT_CODAS = ("", "n", "r", "ch", "ng", "tz", "ck", "l", "st", "nd", "lt", "rm")
PARTICLES = ("an", "auf", "aus", "ein", "mit", "zu", "ab", "vor", "weg", "los")
PLURAL_CLASSES = ("e", "en", "er", "s", "n", "")

# Fixed function words (source -> target); content words are generated.
SUBORDINATORS = {
    "because": "weil",
    "when": "wenn",
    "although": "obwohl",
    "while": "während",
    "if": "falls",
    "until": "bis",
    "since": "seit",
}
COORDINATORS = {"and": "und", "but": "aber", "or": "oder"}
SRC_PREPOSITIONS = tuple(
    "in on with under over near behind without from to for at by about against "
    "between through along around beside beyond toward across inside".split()
)
FUNCTION_WORDS = ("the", "a", "no", "who", "that", "has", "have", ".", ",")


def _by_case(**rows):
    """{(case, gender or 'pl'): form} from one row of forms per case, in the order m f n pl."""
    genders = ("m", "f", "n", "pl")
    return {
        (case, g): form for case, forms in rows.items() for g, form in zip(genders, forms.split())
    }


DEF = _by_case(nom="der die das die", acc="den die das die", dat="dem der dem den")
INDEF = _by_case(nom="ein eine ein", acc="einen eine ein", dat="einem einer einem")  # no plural
NEG = {
    **{key: "k" + val for key, val in INDEF.items()},
    ("nom", "pl"): "keine",
    ("acc", "pl"): "keine",
    ("dat", "pl"): "keinen",
}
# Relative pronouns by (case, gender or 'pl').
REL = _by_case(nom="der die das die", acc="den die das die")


def adjective_ending(det, case, gg):
    """German adjective ending after determiner kind det in {'def','indef','neg','none'}.

    gg is the gender 'm'/'f'/'n' or 'pl'. Weak after 'def', mixed after 'indef'/'neg',
    strong with no determiner (plural only in this grammar).
    """
    if case == "dat" or (gg == "pl" and det != "none"):
        return "en"
    if det == "def":
        return "en" if (case, gg) == ("acc", "m") else "e"
    if det in ("indef", "neg"):
        if gg == "m":
            return "er" if case == "nom" else "en"
        return "es" if gg == "n" else "e"
    return "e"  # strong plural nom/acc


def determiner(det, case, gg):
    """The target determiner word, or None for a bare plural."""
    if det == "none":
        return None
    return {"def": DEF, "indef": INDEF, "neg": NEG}[det][(case, gg)]


@dataclass
class Lexicon:
    """All words of one toy language pair; lists are indexed by lexeme id.

    nouns: dicts src (str, may hold two tokens), src_pl, tgt, tgt_pl, gender
    verbs: dicts kind ('trans' | 'intr' | 'say'), src, src_3sg, src_part, tgt stem,
           particle ('' if not separable), dative (bool), sein (bool)
    adjectives, adverbs: dicts src, tgt;  prepositions: dicts src, tgt, case ('acc' | 'dat')
    """

    seed: int
    nouns: list = field(default_factory=list)
    verbs: list = field(default_factory=list)
    adjectives: list = field(default_factory=list)
    adverbs: list = field(default_factory=list)
    prepositions: list = field(default_factory=list)

    def by_kind(self, kind):
        """Indices of verbs of one kind ('trans', 'intr', 'say')."""
        return [i for i, v in enumerate(self.verbs) if v["kind"] == kind]

    def n_source_words(self):
        """Number of source lexemes (compound nouns count once) plus function words."""
        return (
            len(self.nouns)
            + len(self.verbs)
            + len(self.adjectives)
            + len(self.adverbs)
            + len(self.prepositions)
            + len(SUBORDINATORS)
            + len(COORDINATORS)
            + len(FUNCTION_WORDS)
        )


class _Namer:
    """Draws unique pseudo-words; `taken` holds every surface form already used."""

    def __init__(self, rng, onsets, vowels, codas, taken):
        self.rng, self.onsets, self.vowels, self.codas, self.taken = (
            rng,
            onsets,
            vowels,
            codas,
            taken,
        )

    def word(self, n_syll, suffixes=("",), min_len=3):
        while True:
            w = "".join(
                self.rng.choice(self.onsets)
                + self.rng.choice(self.vowels)
                + self.rng.choice(self.codas)
                for _ in range(n_syll)
            )
            forms = [w + s for s in suffixes]
            if len(w) >= min_len and not any(f in self.taken for f in forms):
                self.taken.update(forms)
                return w


# The open word classes and their sizes at scale 1: with the closed classes, 1,063 source words.
CLASS_SIZES = dict(nouns=420, compounds=80, trans=180, intr=100, say=20, adjectives=160, adverbs=60)


def make_lexicon(seed=0, scale=1.0, **sizes):
    """Generate a Lexicon deterministically from seed (default: 1,063 source words).

    sizes: words per open class, overriding CLASS_SIZES (its keys: nouns=, adverbs=, ...).
    scale multiplies every open word class (e.g. 0.5 for an easier, ~560-word language).
    """
    if scale <= 0:
        raise BadInputError(f"lexicon scale must be > 0, got {scale}")
    if unknown := sorted(set(sizes) - set(CLASS_SIZES)):
        raise BadInputError(
            f"make_lexicon: no word class {unknown}; the classes: {list(CLASS_SIZES)}"
        )
    n = {c: max(2, round(size * scale)) for c, size in {**CLASS_SIZES, **sizes}.items()}
    rng = random.Random(f"toy_wmt/lexicon/{seed}")
    src_taken = set(FUNCTION_WORDS) | set(SUBORDINATORS) | set(COORDINATORS) | set(SRC_PREPOSITIONS)
    tgt_taken = set()
    src = _Namer(rng, SRC_ONSETS, SRC_VOWELS, SRC_CODAS, src_taken)
    tgt = _Namer(rng, TGT_ONSETS, TGT_VOWELS, TGT_CODAS, tgt_taken)
    lex = Lexicon(seed=seed)
    for _ in range(n["nouns"]):
        s = src.word(rng.choice((1, 2, 2)), suffixes=("", "s"))
        t = tgt.word(rng.choice((1, 2, 2, 3))).capitalize()
        pl = rng.choice(PLURAL_CLASSES)
        lex.nouns.append(
            dict(src=s, src_pl=s + "s", tgt=t, tgt_pl=t + pl, gender=rng.choice("mfn"))
        )
    for _ in range(n["compounds"]):  # modifier noun + head noun -> one target word
        while True:
            mod, head = rng.sample(lex.nouns[: n["nouns"]], 2)
            s = f"{mod['src']} {head['src']}"
            if s not in src_taken:
                src_taken.add(s)
                break
        t = mod["tgt"] + head["tgt"].lower()
        pl = head["tgt_pl"][len(head["tgt"]) :]
        lex.nouns.append(dict(src=s, src_pl=s + "s", tgt=t, tgt_pl=t + pl, gender=head["gender"]))
    for kind in ("trans", "intr", "say"):
        for _ in range(n[kind]):
            s = src.word(rng.choice((1, 2)), suffixes=("", "s", "ed"))
            stem = tgt.word(rng.choice((1, 2)), min_len=2)
            particle = rng.choice(PARTICLES) if kind != "say" and rng.random() < 0.25 else ""
            lex.verbs.append(
                dict(
                    kind=kind,
                    src=s,
                    src_3sg=s + "s",
                    src_part=s + "ed",
                    tgt=stem,
                    particle=particle,
                    dative=kind == "trans" and rng.random() < 0.2,
                    sein=kind == "intr" and rng.random() < 0.3,
                )
            )
    for _ in range(n["adjectives"]):
        lex.adjectives.append(
            dict(src=src.word(rng.choice((1, 2))), tgt=tgt.word(rng.choice((1, 2))))
        )
    for _ in range(n["adverbs"]):
        lex.adverbs.append(
            dict(
                src=src.word(rng.choice((1, 2)), suffixes=("ly",)) + "ly",
                tgt=tgt.word(rng.choice((1, 2))),
            )
        )
    for p in SRC_PREPOSITIONS:
        lex.prepositions.append(
            dict(src=p, tgt=tgt.word(1, min_len=2), case=rng.choice(("acc", "dat")))
        )
    return lex


# ---- target word forms (used by the oracle and to enumerate the closed vocabulary) ----


def noun_form(noun, number, case):
    """Target noun form: singular, plural, or dative plural (+n unless it ends in n or s)."""
    if number == "sg":
        return noun["tgt"]
    pl = noun["tgt_pl"]
    return pl + "n" if case == "dat" and pl[-1] not in "ns" else pl


def finite_form(verb, number):
    """Target finite present: stem+t (3sg; stem+et after t/d) or stem+en (3pl); no particle."""
    stem = verb["tgt"]
    if number == "pl":
        return stem + ("n" if stem.endswith("e") else "en")
    return stem + ("et" if stem[-1] in "td" else "t")


def participle(verb):
    """Target past participle: particle + ge + stem + t/et."""
    stem = verb["tgt"]
    return verb["particle"] + "ge" + stem + ("et" if stem[-1] in "td" else "t")


def auxiliary(verb, number):
    """Perfect auxiliary: haben, or sein for the verbs marked sein."""
    if verb["sein"]:
        return "ist" if number == "sg" else "sind"
    return "hat" if number == "sg" else "haben"


def target_forms(lex):
    """Every target surface form the oracle can emit (the closed target vocabulary)."""
    forms = set(DEF.values()) | set(INDEF.values()) | set(NEG.values()) | set(REL.values())
    forms |= set(SUBORDINATORS.values()) | set(COORDINATORS.values())
    forms |= {"dass", ".", ",", "hat", "haben", "ist", "sind", "denen"} | set(PARTICLES)
    for n in lex.nouns:
        forms |= {noun_form(n, num, c) for num in ("sg", "pl") for c in ("nom", "dat")}
    for v in lex.verbs:
        for num in ("sg", "pl"):
            forms.add(finite_form(v, num))
            forms.add(v["particle"] + finite_form(v, num))
        forms.add(participle(v))
    for a in lex.adjectives:
        forms |= {a["tgt"] + e for e in ("e", "en", "er", "es")}
    forms |= {a["tgt"] for a in lex.adverbs} | {p["tgt"] for p in lex.prepositions}
    return sorted(forms)


def source_forms(lex):
    """Every source surface token (the closed source vocabulary)."""
    forms = set(FUNCTION_WORDS) | set(SUBORDINATORS) | set(COORDINATORS) | set(SRC_PREPOSITIONS)
    for n in lex.nouns:
        forms |= set(n["src"].split()) | set(n["src_pl"].split())
    for v in lex.verbs:
        forms |= {v["src"], v["src_3sg"], v["src_part"]}
    forms |= {a["src"] for a in lex.adjectives} | {a["src"] for a in lex.adverbs}
    return sorted(forms)
