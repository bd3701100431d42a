"""Readers for user corpora: UTF-8 TSV, two aligned text files, tfds datasets.

Every reader returns (pairs, report): pairs is a list of (source, target) strings, report a dict
with the number of lines read, skipped lines by reason and the first few bad line numbers.
Hard problems (missing file, invalid UTF-8, no usable line, misaligned files) raise
CorpusError naming the file and line.
"""

import logging
import os

from anatomy.data.vocab import CorpusError

MAX_REPORTED = 5


def _check_file(path):
    if not path:
        raise CorpusError("corpus path is empty")
    if not os.path.isfile(path):
        raise CorpusError(f"corpus file not found: {path}")


def _lines(path):
    """Yield (line_number, text) of a UTF-8 file; invalid UTF-8 raises CorpusError(file:line)."""
    _check_file(path)
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise CorpusError(
                    f"{path}:{number}: invalid UTF-8 ({e.reason} at byte {e.start})"
                ) from None
            if number == 1:
                text = text.lstrip("\ufeff")  # a UTF-8 byte-order mark is not data
            yield number, text.rstrip("\r\n")


def _report(path):
    """lines read, pairs kept, skipped {reason: count}, bad_lines (the first few, any reason),
    first_bad_lines {reason: the first few line numbers of that reason}."""
    return {
        "path": path,
        "lines": 0,
        "pairs": 0,
        "skipped": {},
        "bad_lines": [],
        "first_bad_lines": {},
    }


def _skip(report, reason, number):
    report["skipped"][reason] = report["skipped"].get(reason, 0) + 1
    if len(report["bad_lines"]) < MAX_REPORTED:
        report["bad_lines"].append(number)
    first = report["first_bad_lines"].setdefault(reason, [])
    if len(first) < MAX_REPORTED:
        first.append(number)


def _finish(pairs, report, path):
    if not pairs:
        raise CorpusError(
            f"{path}: no usable line (read {report['lines']} lines, "
            f"skipped {report['skipped']}, first bad lines {report['bad_lines']})"
        )
    report["pairs"] = len(pairs)
    if report["skipped"]:
        logging.warning(
            "%s: skipped %s lines (%s); first bad line numbers %s",
            path,
            sum(report["skipped"].values()),
            report["skipped"],
            report["first_bad_lines"],
        )
    return pairs, report


def read_tsv(path):
    """`source<TAB>target` lines -> (pairs, report).

    A line with no tab, more than one tab, or an empty (whitespace-only) side is skipped and
    counted under report['skipped'] ('no_tab', 'extra_tab', 'empty_side'); the first line
    numbers go to report['bad_lines'].
    """
    pairs, report = [], _report(path)
    for number, line in _lines(path):
        report["lines"] += 1
        fields = line.split("\t")
        if len(fields) < 2:
            _skip(report, "no_tab", number)
        elif len(fields) > 2:
            _skip(report, "extra_tab", number)
        elif not fields[0].strip() or not fields[1].strip():
            _skip(report, "empty_side", number)
        else:
            pairs.append((fields[0].strip(), fields[1].strip()))
    return _finish(pairs, report, path)


def read_text_pair(src_path, tgt_path):
    """Two aligned files, line i of one translating line i of the other -> (pairs, report)."""
    src, tgt = list(_lines(src_path)), list(_lines(tgt_path))
    if len(src) != len(tgt):
        raise CorpusError(
            f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}: "
            "the files must be aligned line by line"
        )
    pairs, report = [], _report(f"{src_path} + {tgt_path}")
    for (number, s), (_, t) in zip(src, tgt):
        report["lines"] += 1
        if not s.strip() or not t.strip():
            _skip(report, "empty_side", number)
        else:
            pairs.append((s.strip(), t.strip()))
    return _finish(pairs, report, report["path"])


def as_text(value):
    """A tfds text feature (bytes, or already str) as str."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def read_tfds(
    name, split, *, data_dir=None, src_key=None, tgt_key=None, max_examples=0, download=True
):
    """A tfds translation dataset read with tfds.data_source (array_record; no TensorFlow).

    name e.g. 'wmt14_translate/de-en'; src_key / tgt_key default to the two language codes of
    the name ('de-en' -> source 'de', target 'en'). max_examples 0 reads the whole split.
    """
    import tensorflow_datasets as tfds

    _register_translate()
    if src_key is None or tgt_key is None:
        config = name.split("/")[-1].split(":")[0]
        if "-" not in config:
            raise CorpusError(
                f"tfds {name}: give data.src_key and data.tgt_key (the feature names)"
            )
        src_key, tgt_key = config.split("-")[:2]
    try:
        source = tfds.data_source(
            name,
            split=split,
            data_dir=data_dir or None,
            download=download,
            builder_kwargs={"file_format": "array_record"},
        )
    except Exception as e:  # tfds raises many kinds; name the dataset in a clean error
        raise CorpusError(f"tfds {name} split {split!r} could not be loaded: {e}") from e
    n = len(source) if not max_examples else min(len(source), max_examples)
    pairs, report = [], _report(f"tfds:{name}/{split}")
    for i in range(n):
        ex = source[i]
        if src_key not in ex or tgt_key not in ex:
            raise CorpusError(
                f"tfds {name}: example has keys {sorted(ex)}, not {src_key!r}/{tgt_key!r}"
            )
        s, t = as_text(ex[src_key]).strip(), as_text(ex[tgt_key]).strip()
        report["lines"] += 1
        if not s or not t or "\n" in s or "\n" in t:
            _skip(report, "empty_side", i)
        else:
            pairs.append((s, t))
    return _finish(pairs, report, report["path"])


def _register_translate():
    """tfds registers wmt builders only once their module is imported."""
    try:
        import tensorflow_datasets.translate  # noqa: F401
    except Exception:  # pragma: no cover - optional builders with extra deps
        pass
