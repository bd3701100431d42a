"""The data package's defaults, written once: default_config(), the batchers and the toy_wmt
generators all read them from here (an experiment config overrides them in config.data).
"""

SEED = 0  # corpus generation, splitting and batch shuffling
TOKEN_BUDGET = 1024  # padded tokens per batch: B * L <= TOKEN_BUDGET
MAX_LEN = 160  # pairs longer than this (tokens; target + eos) are filtered, never truncated
# toy_wmt
TRAIN_SIZE = 30000  # training pairs
VALID_SIZE = 1000  # validation pairs (same length mix as train)
TEST_PER_BUCKET = 100  # test pairs per LENGTH_BUCKETS bucket (stratified)
MAX_SRC_LEN = 120  # longest generated source (tokens, incl. the full stop)
LEXICON_SCALE = 1.0  # multiplies every open word class (1.0: 1,063 source words)
# user corpora without valid / test files: pairs held out of train
HELD_OUT_SIZE = 1000
# gettext: the machine's own translations (anatomy.data.catalogs)
GETTEXT_DIRS = ("/usr/share/locale", "/usr/share/locale-langpack")  # Debian's; Ubuntu's packs
# iso-codes' catalogs: names of languages, countries, currencies and scripts, not messages
GETTEXT_EXCLUDE = ("iso_*",)
GETTEXT_MAX_WORDS = 100  # longer help texts (up to ~700 words) are left out
GETTEXT_VALID_PER_BUCKET = 50  # valid pairs per source-length bucket (stratified)
GETTEXT_TEST_PER_BUCKET = 100  # test pairs per source-length bucket (stratified)
GETTEXT_HELD_OUT_SHARE = 1 / 3  # valid and test each take at most this share of a bucket
