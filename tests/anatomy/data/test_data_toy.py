"""toy_wmt: determinism, the oracle's reordering and agreement, length buckets, tfds round trip."""

import collections
import importlib.util
import sys

import pytest

from anatomy.data import lexicon as lx
from anatomy.data import toy_wmt as tw
from anatomy.errors import BadInputError


@pytest.fixture(scope="module")
def lex():
    return lx.make_lexicon(0)


def test_lexicon_sizes_override_one_class_and_refuse_an_unknown_one():
    lex = lx.make_lexicon(0, adverbs=5)
    assert len(lex.adverbs) == 5 and len(lex.adjectives) == lx.CLASS_SIZES["adjectives"]
    with pytest.raises(BadInputError, match="no word class"):
        lx.make_lexicon(0, n_adverbs=5)


@pytest.fixture(scope="module")
def small_splits():
    return tw.generate_splits(seed=0, train_size=1500, valid_size=100, test_per_bucket=20)


def test_generator_is_deterministic_per_seed(small_splits):
    again = tw.generate_splits(seed=0, train_size=1500, valid_size=100, test_per_bucket=20)
    assert again == small_splits
    other = tw.generate_splits(seed=1, train_size=1500, valid_size=100, test_per_bucket=20)
    assert other["train"] != small_splits["train"]
    assert lx.make_lexicon(1).nouns[0]["tgt"] != lx.make_lexicon(0).nouns[0]["tgt"]
    small = lx.make_lexicon(0, scale=0.5)
    assert 500 < small.n_source_words() < 600
    easy = tw.generate_splits(
        seed=0, train_size=50, valid_size=5, test_per_bucket=2, lexicon_scale=0.5
    )
    assert {w for s, _ in easy["train"] for w in s.split()} <= set(lx.source_forms(small))


def test_lexicon_size_and_unique_source_forms(lex):
    assert lex.n_source_words() >= 1000
    forms = [n["src"] for n in lex.nouns] + [n["src_pl"] for n in lex.nouns]
    forms += [f for v in lex.verbs for f in (v["src"], v["src_3sg"], v["src_part"])]
    forms += [a["src"] for a in lex.adjectives] + [a["src"] for a in lex.adverbs]
    assert len(forms) == len(set(forms)), "source forms must be unique: the oracle is a function"
    genders = collections.Counter(n["gender"] for n in lex.nouns)
    assert set(genders) == {"m", "f", "n"}
    compounds = [n for n in lex.nouns if " " in n["src"]]
    assert compounds and all(" " not in n["tgt"] for n in compounds)  # two words -> one


def test_splits_disjoint_closed_vocab_and_functional(small_splits, lex):
    src_sets = {k: {s for s, _ in v} for k, v in small_splits.items()}
    assert not src_sets["test"] & src_sets["train"] and not src_sets["valid"] & src_sets["train"]
    src_vocab, tgt_vocab = set(lx.source_forms(lex)), set(lx.target_forms(lex))
    seen = {}
    for s, t in small_splits["train"]:
        assert set(s.split()) <= src_vocab and set(t.split()) <= tgt_vocab
        assert seen.setdefault(s, t) == t
    lengths = [len(s.split()) for s, _ in small_splits["train"]]
    assert min(lengths) <= 5 and max(lengths) > 100


def _np(noun, number="sg", det="def"):
    n = tw.NP()
    n.noun, n.number, n.det, n.adjs, n.post, n.conj = noun, number, det, [], None, None
    return n


def _clause(kind, subj, verb, obj=None, comp=None, perfect=False, front=None, adv=None):
    c = tw.Clause()
    c.kind, c.subj, c.verb, c.obj, c.comp, c.perfect = kind, subj, verb, obj, comp, perfect
    c.front, c.post, c.adv, c.depth = front, None, adv, 0
    return c


def _pick(lex, kind, **want):
    return next(
        i
        for i, v in enumerate(lex.verbs)
        if v["kind"] == kind and all(v[k] == w for k, w in want.items())
    )


def test_oracle_verb_second_and_verb_final(lex):
    see = _pick(lex, "trans", particle="", dative=False)
    say = _pick(lex, "say")
    man, dog, cat = 0, 1, 2
    inner = _clause("comp", _np(dog), see, obj=_np(cat))
    main = _clause("main", _np(man), say, comp=inner)
    src, tgt = tw.translate(lex, [(None, main)])
    finite = lx.finite_form(lex.verbs[see], "sg")
    s, t = src.split(), tgt.split()
    # source: ... that the dog sees the cat .   target: ... dass der Hund die Katze sieht .
    assert s[s.index("that") + 3] == lex.verbs[see]["src_3sg"]
    assert t[-2] == finite and t[t.index("dass") + 2] != finite
    # fronted adverb: the finite verb comes second, before the subject (inversion)
    front = _clause("main", _np(man), see, obj=_np(dog), front=("adv", 0))
    t = tw.translate(lex, [(None, front)])[1].split()
    assert t[0] == lex.adverbs[0]["tgt"] and t[1] == finite
    # perfect: auxiliary second, participle last (the verb bracket)
    perf = _clause("main", _np(man), see, obj=_np(dog), perfect=True)
    s, t = (x.split() for x in tw.translate(lex, [(None, perf)]))
    assert s[2:4] == ["has", lex.verbs[see]["src_part"]]
    assert t[2] == "hat" and t[-2] == lx.participle(lex.verbs[see])
    # separable verb: the particle closes a main clause, joins the verb in a subordinate one
    sep = next(i for i, v in enumerate(lex.verbs) if v["kind"] == "trans" and v["particle"])
    t = tw.translate(lex, [(None, _clause("main", _np(man), sep, obj=_np(dog)))])[1].split()
    assert t[-2] == lex.verbs[sep]["particle"]
    sub = _clause("main", _np(man), say, comp=_clause("comp", _np(dog), sep, obj=_np(cat)))
    t = tw.translate(lex, [(None, sub)])[1].split()
    assert t[-2] == lex.verbs[sep]["particle"] + lx.finite_form(lex.verbs[sep], "sg")


def test_oracle_agreement_across_a_relative_clause(lex):
    see = _pick(lex, "trans", particle="", dative=False)
    run = _pick(lex, "intr", particle="")
    man, dogs = 0, 1
    for number in ("sg", "pl"):
        subj = _np(man, number)
        rc = tw.RC()
        rc.kind, rc.verb, rc.perfect, rc.adv, rc.subj = "subj", see, False, None, None
        rc.obj = _np(dogs, "pl" if number == "sg" else "sg")  # the nearer noun disagrees
        subj.post = ("rc", rc)
        src, tgt = tw.translate(lex, [(None, _clause("main", subj, run))])
        v = lex.verbs[run]
        assert src.split()[-2] == (v["src_3sg"] if number == "sg" else v["src"])
        assert tgt.split()[-2] == lx.finite_form(v, number)
        gender = lex.nouns[man]["gender"] if number == "sg" else "pl"
        # relative pronoun agrees with the antecedent; the RC is verb-final between commas
        t = tgt.split()
        assert t[t.index(",") + 1] == lx.REL[("nom", gender)]
        assert t[t.index(",", t.index(",") + 1) - 1] == lx.finite_form(lex.verbs[see], number)


def test_articles_follow_gender_and_case(lex):
    see = _pick(lex, "trans", particle="", dative=False)
    for noun in range(6):
        t = tw.translate(lex, [(None, _clause("main", _np(noun), see, obj=_np(noun)))])[1].split()
        g = lex.nouns[noun]["gender"]
        assert t[0] == lx.DEF[("nom", g)] and t[3] == lx.DEF[("acc", g)]


def test_test_split_fills_every_length_bucket(lex):
    pairs = tw.generate_stratified(100, seed=3, lexicon=lex, max_src_len=120)
    counts = collections.Counter(tw.length_bucket(len(s.split())) for s, _ in pairs)
    assert [counts[b] for b in range(len(tw.LENGTH_BUCKETS))] == [100] * len(tw.LENGTH_BUCKETS)
    assert max(len(s.split()) for s, _ in pairs) <= 120
    assert (
        tw.bucket_label(61, None) == "61+"
        and tw.length_bucket(10) == 0
        and tw.length_bucket(11) == 1
    )


def test_tfds_build_and_read_round_trip_without_tensorflow(tmp_path):
    from anatomy.data import toy_wmt_tfds

    params = dict(seed=0, train_size=300, valid_size=30, test_per_bucket=5)
    splits = toy_wmt_tfds.read_toy_wmt(tmp_path, **params)
    assert splits == tw.generate_splits(**params)
    assert list(tmp_path.glob("toy_wmt/*/1.0.0/*.array_record*"))
    from anatomy.data import default_config, load_corpus

    config = default_config()
    config.toy.update(dict(train_size=300, valid_size=30, test_per_bucket=5, via_tfds=True))
    config.tfds_data_dir = str(tmp_path)
    assert load_corpus(config, str(tmp_path / "wd")).splits == splits  # reuses the built data
    assert importlib.util.find_spec("tensorflow") is None and "tensorflow" not in sys.modules
