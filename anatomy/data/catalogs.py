"""Human translations a Linux machine already has: gettext catalogs as a parallel corpus.

Debian and Ubuntu install, with each package, the translations of its messages and help texts
into dozens of languages: `<dir>/<lang>/LC_MESSAGES/<domain>.mo`. A catalog maps each English
message (gettext's msgid is English by convention) to its translation, so the catalogs of one
language together are an English -> <lang> corpus of human translations, offline.

A .mo file (GNU gettext manual, "The Format of GNU MO Files") is a header of 32-bit words in the
file's byte order, magic 0x950412de, revision, N, O (offset of the originals' table), T (of the
translations'), then N (length, offset) pairs at O and N at T pointing at NUL-terminated
strings. An original is `context EOT msgid` when the message has a context (msgctxt) and
`msgid NUL msgid_plural` for a plural message, whose translation is its forms joined by NUL;
the entry with the empty msgid is the header ("Content-Type: ...; charset=...",
"Plural-Forms: nplurals=...; plural=EXPR;"). `read_mo` reads that, nothing else.

From messages to pairs (`catalog_pairs`):
    * whitespace is normalised: every run of spaces, tabs and newlines becomes one space, and
      the ends are stripped (help texts are laid out for a terminal);
    * the context is dropped (the source is the msgid);
    * a plural message gives two pairs: (msgid, the form for n = 1) and (msgid_plural, the
      form for n = 2), the form index given by the catalog's own plural expression;
    * an untranslated message (empty msgstr; the header; msgfmt leaves fuzzy ones out) and
      one whose source has no letter outside its printf directives ("%s: %s") are skipped
      and counted.
Across catalogs (`read_gettext`) there is one pair per English source: the translation most
catalogs give it (ties: the first catalog in name order). Catalogs whose file name matches
`exclude` (fnmatch patterns; e.g. iso-codes' names of languages and countries) are left out and
named in the report.
"""

from __future__ import annotations

import codecs
import collections
import dataclasses
import fnmatch
import gettext
import os
import re
import struct

from anatomy.data.vocab import CorpusError

MAGIC = 0x950412DE
CONTEXT_SEPARATOR = "\x04"  # msgctxt EOT msgid
PLURAL_SEPARATOR = "\x00"  # msgid NUL msgid_plural; msgstr[0] NUL msgstr[1] ...
_CHARSET = re.compile(r"charset=\s*([\w.-]+)", re.I)
_PLURAL = re.compile(r"plural\s*=\s*([^;\n]+)", re.I)
_LETTER = re.compile(r"[^\W\d_]")
# printf directives ("%s", "%-10.3ld", "%1$s", "%<PRIu64>"): a source of only these has no word
_DIRECTIVE = re.compile(r"%(?:<\w+>|[-+ #0-9.$*']*[hlLqjzt]*[a-zA-Z%])")


@dataclasses.dataclass(frozen=True)
class Message:
    """One catalog entry: msgid (English), msgstr forms (one, or one per plural form)."""

    msgid: str
    msgstr: tuple[str, ...]
    context: str | None = None
    msgid_plural: str | None = None


def read_mo(path: str) -> tuple[dict, list[Message]]:
    """(header {field: value}, messages) of one .mo file; CorpusError naming the file when it
    is not one."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 20:
        raise CorpusError(f"{path}: not a gettext .mo file (only {len(blob)} bytes)")
    for order in ("<", ">"):
        if struct.unpack(order + "I", blob[:4])[0] == MAGIC:
            break
    else:
        raise CorpusError(f"{path}: not a gettext .mo file (bad magic number)")
    _, n, originals, translations = struct.unpack(order + "4I", blob[4:20])

    def strings(table):
        if table + 8 * n > len(blob):
            raise CorpusError(f"{path}: truncated .mo file (its string table is cut)")
        out = []
        for i in range(n):
            length, offset = struct.unpack(order + "2I", blob[table + 8 * i : table + 8 * i + 8])
            if offset + length > len(blob):
                raise CorpusError(f"{path}: truncated .mo file (string {i} past its end)")
            out.append(blob[offset : offset + length])
        return out

    raw = list(zip(strings(originals), strings(translations)))
    header_bytes = next((t for o, t in raw if o == b""), b"")
    header = _header(header_bytes.decode("ascii", "replace"))
    charset = _charset(header, path)
    messages = []
    for o, t in raw:
        if o == b"":
            continue
        try:
            original, translated = o.decode(charset), t.decode(charset)
        except UnicodeDecodeError as e:
            raise CorpusError(f"{path}: a message is not valid {charset} ({e.reason})") from None
        context = None
        if CONTEXT_SEPARATOR in original:
            context, original = original.split(CONTEXT_SEPARATOR, 1)
        msgid, sep, plural = original.partition(PLURAL_SEPARATOR)
        forms = tuple(translated.split(PLURAL_SEPARATOR))
        messages.append(Message(msgid, forms, context, plural if sep else None))
    return header, messages


def _header(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


def _charset(header: dict, path: str) -> str:
    m = _CHARSET.search(header.get("content-type", ""))
    name = m.group(1) if m else "utf-8"
    if name.upper() == "CHARSET":  # a template's placeholder: gettext reads it as ASCII
        name = "ascii"
    try:
        return codecs.lookup(name).name
    except LookupError:
        raise CorpusError(f"{path}: unknown charset {name!r} in its header") from None


def plural_index(header: dict):
    """n -> the index of the plural form gettext picks for n, from the header's Plural-Forms
    (gettext's own parser of the C expression); without one, English's rule n != 1."""
    m = _PLURAL.search(header.get("plural-forms", ""))
    return gettext.c2py(m.group(1).strip() if m else "n != 1")


def normalise(text: str) -> str:
    """Every run of whitespace (spaces, tabs, newlines) one space; the ends stripped."""
    return " ".join(text.split())


def catalog_pairs(header: dict, messages: list[Message]) -> tuple[list, collections.Counter]:
    """(English, translation) pairs of one catalog's messages, and the skipped counts
    {'untranslated', 'no_letter'} (see the module docstring)."""
    plural = plural_index(header)
    pairs, skipped = [], collections.Counter()
    for m in messages:
        wanted = [(m.msgid, 0)]
        if m.msgid_plural is not None:
            wanted = [(m.msgid, plural(1)), (m.msgid_plural, plural(2))]
        for source, form in wanted:
            src = normalise(source)
            tgt = normalise(m.msgstr[form]) if form < len(m.msgstr) else ""
            if not tgt:
                skipped["untranslated"] += 1
            elif not _LETTER.search(_DIRECTIVE.sub("", src)):
                skipped["no_letter"] += 1
            else:
                pairs.append((src, tgt))
    return pairs, skipped


def catalog_files(lang: str, dirs, exclude=()) -> tuple[list[str], list[str]]:
    """(catalogs, excluded): the .mo files under <dir>/<lang>/LC_MESSAGES/ of every dir in
    `dirs`, sorted by name (a domain found in several dirs: the first dir's), and the names
    matching an `exclude` pattern."""
    found = {}
    for d in dirs:
        folder = os.path.join(d, lang, "LC_MESSAGES")
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                if name.endswith(".mo"):
                    found.setdefault(name, os.path.join(folder, name))
    excluded = sorted(n for n in found if any(fnmatch.fnmatch(n, p) for p in exclude))
    return [found[n] for n in sorted(found) if n not in excluded], excluded


def languages(dirs) -> dict:
    """{language: number of .mo catalogs} under `dirs` (what a machine could give instead)."""
    out = collections.Counter()
    for d in dirs:
        if os.path.isdir(d):
            for lang in os.listdir(d):
                folder = os.path.join(d, lang, "LC_MESSAGES")
                if os.path.isdir(folder):
                    out[lang] += sum(n.endswith(".mo") for n in os.listdir(folder))
    return {k: v for k, v in out.items() if v}


def _missing(lang: str, dirs, excluded) -> CorpusError:
    have = languages(dirs)
    top = ", ".join(f"{k} ({v})" for k, v in sorted(have.items(), key=lambda kv: (-kv[1], kv[0])))
    where = " or ".join(f"{d}/{lang}/LC_MESSAGES" for d in dirs)
    found = (
        f"only excluded catalogs ({', '.join(excluded)})"
        if excluded
        else "no .mo catalog"
        if not have
        else f"catalogs only for: {top[:300]}"
    )
    return CorpusError(
        f"gettext: no catalogs for language {lang!r} in {where} ({found}); set "
        "data.gettext.lang to one of those, install the translations (Debian keeps them unless "
        "dpkg excludes /usr/share/locale, as minimal container images do; Ubuntu ships them in "
        "language-pack-<lang>), or give a corpus of your own (data.name='tsv')"
    )


def read_gettext(lang: str, dirs, exclude=()) -> tuple[list, dict]:
    """(pairs, report): one (English, <lang>) pair per distinct English source across the
    catalogs of `lang` (see the module docstring). report: path, lines (messages read), pairs,
    skipped {reason: n} ('untranslated', 'no_letter', 'same_source': a source another message
    already gave), first_bad_lines {} (catalogs have no lines), catalogs {name: {'messages',
    'pairs' (kept after the per-catalog rules), 'chosen' (pairs of the corpus taken from it)}},
    excluded [names]. CorpusError, one line, when no catalog is found."""
    files, excluded = catalog_files(lang, dirs, exclude)
    if not files:
        raise _missing(lang, dirs, excluded)
    votes = collections.defaultdict(collections.Counter)  # source -> translation -> catalogs
    first = {}  # (source, translation) -> the first catalog (name order) giving it
    catalogs, skipped, read = {}, collections.Counter(), 0
    for path in files:
        name = os.path.basename(path)
        header, messages = read_mo(path)
        pairs, bad = catalog_pairs(header, messages)
        read += len(messages)
        skipped.update(bad)
        catalogs[name] = {"messages": len(messages), "pairs": len(pairs), "chosen": 0}
        for src, tgt in dict.fromkeys(pairs):  # a catalog votes once per pair
            votes[src][tgt] += 1
            first.setdefault((src, tgt), name)
    out = []
    for src, translations in votes.items():
        # most catalogs; ties: the first catalog in name order
        tgt = min(translations, key=lambda t: (-translations[t], first[(src, t)]))
        out.append((src, tgt))
        catalogs[first[(src, tgt)]]["chosen"] += 1
    given = sum(c["pairs"] for c in catalogs.values())
    if len(out) < given:
        skipped["same_source"] = given - len(out)
    out.sort()  # a corpus order that does not depend on the file system's
    report = {
        "path": f"gettext:{lang} ({len(files)} catalogs in {', '.join(dirs)})",
        "lines": read,
        "pairs": len(out),
        "skipped": dict(skipped),
        "bad_lines": [],
        "first_bad_lines": {},
        "catalogs": catalogs,
        "excluded": excluded,
    }
    if not out:
        raise CorpusError(f"gettext: the {len(files)} catalogs of {lang!r} hold no translation")
    return out, report
