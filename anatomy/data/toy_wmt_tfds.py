"""tfds builder for toy_wmt, written as array_record and read with tfds.data_source.

No TensorFlow is needed: `build_toy_wmt(data_dir, ...)` prepares the splits and
`read_toy_wmt(data_dir, ...)` reads them back as lists of (source, target) strings.
The builder config name encodes every generation parameter, so a different seed or size is a
different dataset directory and a stale cache is never read.
"""

import dataclasses

import tensorflow_datasets as tfds

from anatomy.data import defaults, toy_wmt
from anatomy.data.readers import as_text


@dataclasses.dataclass
class ToyWmtConfig(tfds.core.BuilderConfig):
    """Generation parameters of one toy_wmt variant: toy_wmt.generate_splits's keyword
    arguments, with its defaults."""

    seed: int = defaults.SEED
    train_size: int = defaults.TRAIN_SIZE
    valid_size: int = defaults.VALID_SIZE
    test_per_bucket: int = defaults.TEST_PER_BUCKET
    max_src_len: int = defaults.MAX_SRC_LEN
    length_weights: tuple = toy_wmt.DEFAULT_LENGTH_WEIGHTS
    lexicon_scale: float = defaults.LEXICON_SCALE

    def params(self) -> dict:
        """{name: value} of the generation parameters (the fields BuilderConfig lacks)."""
        base = {f.name for f in dataclasses.fields(tfds.core.BuilderConfig)}
        return {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in base
        }


def make_config(**params):
    """The ToyWmtConfig of these generation parameters (the others at their defaults), named
    after every one of them."""
    c = ToyWmtConfig(name="", **params)
    weights = "_".join(f"{w:g}" for w in c.length_weights).replace(".", "p")
    name = f"s{c.seed}_n{c.train_size}_v{c.valid_size}_t{c.test_per_bucket}_m{c.max_src_len}"
    name += f"_w{weights}"
    if c.lexicon_scale != 1.0:
        name += f"_x{c.lexicon_scale:g}".replace(".", "p")
    return dataclasses.replace(c, name=name, length_weights=tuple(c.length_weights))


class ToyWmt(tfds.core.GeneratorBasedBuilder):
    """toy_wmt: English-like -> German-like pairs with an exact oracle (anatomy.data.toy_wmt)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "First grammar."}
    BUILDER_CONFIGS = [make_config()]

    def _info(self):
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(
                {"source": tfds.features.Text(), "target": tfds.features.Text()}
            ),
            supervised_keys=("source", "target"),
            disable_shuffling=True,
        )  # keep corpus order: test is grouped by length bucket

    def _split_generators(self, dl_manager):
        splits = toy_wmt.generate_splits(**self.builder_config.params())
        return {name: self._generate_examples(pairs) for name, pairs in splits.items()}

    def _generate_examples(self, pairs):
        for i, (source, target) in enumerate(pairs):
            yield i, {"source": source, "target": target}


def build_toy_wmt(data_dir, **params):
    """Generate and write toy_wmt (array_record) under data_dir once; returns the builder."""
    builder = ToyWmt(
        config=make_config(**params), data_dir=str(data_dir), file_format="array_record"
    )
    builder.download_and_prepare()
    return builder


def read_toy_wmt(data_dir, **params):
    """{split: [(source, target), ...]} read back with tfds.data_source (building if needed)."""
    config = make_config(**params)
    build_toy_wmt(data_dir, **params)
    out = {}
    for split in ("train", "valid", "test"):
        source = tfds.data_source(
            f"toy_wmt/{config.name}", split=split, data_dir=str(data_dir), download=False
        )
        out[split] = [
            (as_text(ex["source"]), as_text(ex["target"]))
            for ex in (source[i] for i in range(len(source)))
        ]
    return out
