"""The gettext corpus source (anatomy.data.catalogs, load_corpus name='gettext') on catalogs
the tests write themselves (helpers.write_mo): never the machine's."""

import gettext
import os

import pytest
from helpers import locale_dir, write_mo

import anatomy.data as data
from anatomy.data import catalogs
from anatomy.data.vocab import CorpusError

MESSAGES = [
    ("Open the file", "Ouvrir le fichier"),
    ("menu\x04Open", "Ouvrir"),  # a context: the source is the msgid alone
    ("%d file\x00%d files", ("%d fichier", "%d fichiers")),  # a plural message
    ("  usage:\n   copy   SOURCE\tDEST\n", "  usage :\n   copier   SOURCE\tDEST\n"),
    ("%s: %s", "%s : %s"),  # no letter in the source: skipped
    ("Not translated yet", ""),  # untranslated: skipped
    ("Émoji ✓ naïve", "Émoji ✓ naïf"),
]


@pytest.mark.parametrize("byteorder", ["<", ">"])
def test_read_mo_agrees_with_pythons_gettext(tmp_path, byteorder):
    """Our reader and CPython's GNUTranslations, which looks each message up, read the same
    catalog (both byte orders) the same way: contexts, plural forms, UTF-8."""
    path = write_mo(str(tmp_path / "a.mo"), MESSAGES, byteorder=byteorder)
    header, messages = catalogs.read_mo(path)
    assert header["plural-forms"] == "nplurals=2; plural=(n > 1);"
    with open(path, "rb") as f:
        ref = gettext.GNUTranslations(f)
    assert len(messages) == len(MESSAGES)
    for m in messages:
        if m.context is not None:
            assert ref.pgettext(m.context, m.msgid) == m.msgstr[0] and m.msgid == "Open"
        elif m.msgid_plural is not None:
            for n in (1, 2, 5):
                want = ref.ngettext(m.msgid, m.msgid_plural, n)
                assert m.msgstr[catalogs.plural_index(header)(n)] == want
        elif m.msgstr[0]:
            assert ref.gettext(m.msgid) == m.msgstr[0]


def test_read_mo_refuses_what_is_not_a_catalog(tmp_path):
    bad = tmp_path / "bad.mo"
    bad.write_bytes(b"\x00" * 40)
    with pytest.raises(CorpusError, match="bad.mo: not a gettext .mo file"):
        catalogs.read_mo(str(bad))
    good = write_mo(str(tmp_path / "good.mo"), MESSAGES)
    cut = tmp_path / "cut.mo"
    cut.write_bytes(open(good, "rb").read()[:-30])
    with pytest.raises(CorpusError, match="truncated"):
        catalogs.read_mo(str(cut))
    cut.write_bytes(open(good, "rb").read()[:40])  # the header, part of a table
    with pytest.raises(CorpusError, match="truncated .mo file .its string table is cut"):
        catalogs.read_mo(str(cut))
    latin = write_mo(str(tmp_path / "latin.mo"), [("caf\xe9", "x")])
    blob = open(latin, "rb").read()  # the same length, no longer UTF-8:
    open(latin, "wb").write(blob.replace("caf\xe9".encode(), b"caf\xff\xa9"))
    with pytest.raises(CorpusError, match="latin.mo: a message is not valid utf-8"):
        catalogs.read_mo(latin)


def test_catalog_pairs_normalise_split_plurals_and_skip():
    pairs, skipped = catalogs.catalog_pairs(
        {"plural-forms": "nplurals=2; plural=(n > 1);"},
        [  # built directly: no file needed
            catalogs.Message("Open the file", ("Ouvrir le fichier",)),
            catalogs.Message("Open", ("Ouvrir",), context="menu"),
            catalogs.Message("%d file", ("%d fichier", "%d fichiers"), None, "%d files"),
            catalogs.Message("  a\n\tb  ", ("  c\n d ",)),
            catalogs.Message("%s: %s", ("%s : %s",)),
            catalogs.Message("Not yet", ("",)),
        ],
    )
    assert pairs == [
        ("Open the file", "Ouvrir le fichier"),
        ("Open", "Ouvrir"),
        ("%d file", "%d fichier"),
        ("%d files", "%d fichiers"),
        ("a b", "c d"),
    ]
    assert skipped == {"no_letter": 1, "untranslated": 1}


def test_plural_forms_follow_the_catalogs_own_rule():
    """A three-form language (Slavic rule): n = 1 takes form 0, n = 2 form 1 (not the last)."""
    rule = (
        "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
        "(n%100<10 || n%100>=20) ? 1 : 2);"
    )
    m = catalogs.Message("%d file", ("%d plik", "%d pliki", "%d plików"), None, "%d files")
    pairs, _ = catalogs.catalog_pairs({"plural-forms": rule}, [m])
    assert pairs == [("%d file", "%d plik"), ("%d files", "%d pliki")]
    assert catalogs.plural_index({})(1) == 0 and catalogs.plural_index({})(2) == 1  # English


def test_one_pair_per_source_by_majority_then_catalog_order(tmp_path):
    root = locale_dir(
        tmp_path / "locale",
        {
            "b.mo": [("Quit", "Quitter"), ("Save", "Sauver")],
            "a.mo": [("Quit", "Fermer"), ("Save", "Enregistrer")],
            "c.mo": [("Quit", "Quitter"), ("Help", "Aide")],
            "iso_639.mo": [("French", "français")],
        },
    )
    pairs, report = catalogs.read_gettext("fr", [root, str(tmp_path / "none")], ("iso_*",))
    # Quit: 2 catalogs say Quitter; Save: a tie, a.mo comes first by name
    assert dict(pairs) == {"Quit": "Quitter", "Save": "Enregistrer", "Help": "Aide"}
    assert report["excluded"] == ["iso_639.mo"] and report["pairs"] == 3
    assert report["catalogs"] == {
        "a.mo": {"messages": 2, "pairs": 2, "chosen": 1},
        "b.mo": {"messages": 2, "pairs": 2, "chosen": 1},
        "c.mo": {"messages": 2, "pairs": 2, "chosen": 1},
    }
    assert report["skipped"] == {"same_source": 3} and report["lines"] == 6


def test_a_machine_without_the_language_gets_one_line_saying_what_to_do(tmp_path):
    root = locale_dir(tmp_path / "locale", {"a.mo": MESSAGES}, lang="de")
    locale_dir(tmp_path / "locale", {"iso_639.mo": MESSAGES}, lang="es")
    with pytest.raises(CorpusError) as e:
        catalogs.read_gettext("fr", [root], ("iso_*",))
    msg = str(e.value)
    assert "\n" not in msg and "'fr'" in msg and "de (1)" in msg and "data.name='tsv'" in msg
    with pytest.raises(CorpusError, match=r"only excluded catalogs \(iso_639.mo\)"):
        catalogs.read_gettext("es", [root], ("iso_*",))
    with pytest.raises(CorpusError, match="no .mo catalog"):
        catalogs.read_gettext("fr", [str(tmp_path / "empty")])


def _sentence(words, k):
    return " ".join(f"w{k}x{i}" for i in range(words))


@pytest.fixture(scope="module")
def long_and_short(tmp_path_factory):
    """A locale dir whose one catalog has 60 short messages and 12 in each longer bucket."""
    messages = [(_sentence(3, k), _sentence(4, k).upper()) for k in range(60)]
    for lo in (11, 21, 31, 41, 51, 61):
        messages += [(_sentence(lo + 2, lo * 100 + k), f"t{lo} {k}") for k in range(12)]
    return locale_dir(tmp_path_factory.mktemp("locale"), {"app.mo": messages})


def _config(root, **gettext):
    c = data.default_config()
    c.name = "gettext"
    c.gettext.dirs = (root,)
    c.gettext.update(dict(valid_per_bucket=3, test_per_bucket=5, **gettext))
    return c


def test_load_corpus_gettext_stratifies_held_out_splits_by_length(long_and_short, tmp_path):
    corpus = data.load_corpus(_config(long_and_short), str(tmp_path / "wd"))
    test, valid = corpus.test_by_bucket("test"), corpus.test_by_bucket("valid")
    # every bucket in test: 5 of the 60 short ones, 12 // 3 = 4 of each longer bucket
    assert {k: len(v) for k, v in test.items()} == {
        "1-10": 5,
        "11-20": 4,
        "21-30": 4,
        "31-40": 4,
        "41-50": 4,
        "51-60": 4,
        "61+": 4,
    }
    assert [len(v) for v in valid.values()] == [3] * 7
    train = corpus.splits["train"]
    assert len(train) == 60 + 72 - 29 - 21
    sources = [set(s for s, _ in corpus.splits[k]) for k in ("train", "valid", "test")]
    assert not (sources[0] & sources[1] or sources[0] & sources[2] or sources[1] & sources[2])
    summary = data.corpus_report(corpus)
    assert summary["catalogs"] == {"app.mo": {"messages": 132, "pairs": 132, "chosen": 132}}
    assert "app.mo 132" in data.describe_corpus_report(summary)
    again = data.load_corpus(_config(long_and_short), str(tmp_path / "wd2"))
    assert again.splits == corpus.splits  # the seed decides the split
    other = data.load_corpus(_config(long_and_short, max_words=20), str(tmp_path / "wd3"))
    assert max(len(s.split()) for s, _ in other.splits["train"]) <= 20
    assert other.report["files"]["train"]["skipped"]["over_max_words"] == 60


def test_gettext_fingerprint_reads_the_catalogs(long_and_short, tmp_path):
    """Another machine's catalogs are another corpus: the fingerprint hashes every file read."""
    from anatomy.data.corpus import data_fingerprint

    root = locale_dir(tmp_path / "locale", {"a.mo": MESSAGES})
    before = data_fingerprint(_config(root))
    assert list(before["files"]) == [os.path.join(root, "fr", "LC_MESSAGES", "a.mo")]
    write_mo(os.path.join(root, "fr", "LC_MESSAGES", "a.mo"), MESSAGES[:2])
    assert data_fingerprint(_config(root))["files"] != before["files"]
    assert before["gettext.lang"] == "fr"
    toy = data_fingerprint(data.default_config())  # as before the gettext fields existed
    assert not [k for k in toy if k.startswith("gettext")]
