"""The contenders recall and copy train: a contender is a string, its family and the knobs
that set its size,

    "attention"                         softmax attention (anatomy.mixers' 'attention')
    "gated_deltanet:n_heads=2"          any mixer of anatomy.mixers' registry, a knob set
    "mamba:d_state=8:d_model=32"        ... the width too
    "lstm:d_model=128"                  an LSTM language model (anatomy.lm 'recurrent')
    "hybrid:mixer=gated_deltanet"       the mixer's layers with softmax attention at the
                                        'A' of pattern (default 'AR': the first layer)

"family[:field=value[:field=value ...]]", each field an anatomy.lm config field or a knob of
the mixer's config (an unknown one is a BadInputError). The string is the contender's name in
results.json, so a point of a plot says what it is. ``build`` gives one
anatomy.lm.LanguageModel per distinct config (jit compiles one step per model and shape).

Every mixer contender is built alike (``lm_config``): the experiment's width and layers, no
MLP (Zoology's MQAR models replace it with the identity), and the same short causal conv in
front of every mixer, softmax attention's included (the recipe of Zoology's and Based's
MQAR sweeps: every model gets the conv; Mamba, Griffin, xLSTM and Gated DeltaNet have one of
their own); softmax attention's knobs (cfg.attention: heads, positions) alone or in a
hybrid; each mixer in the form cfg.forms names (a speed choice only: every form computes the
same function, tests/anatomy/mixers/: a twin file per mixer). The LSTM is the chapter's, as it is.
"""

import ast

import jax

from anatomy import lm
from anatomy.errors import BadInputError
from anatomy.params import count_params

RECURRENT = ("lstm", "gru")  # anatomy.lm's 'recurrent' family: these cells as they are
HYBRID = "hybrid"  # 'hybrid:mixer=NAME[:pattern=AR]': NAME's layers, softmax attention at 'A'


def parse(spec):
    """(family, {field: value}) of a contender string (module docstring)."""
    family, *parts = str(spec).split(":")
    knobs = {}
    for part in parts:
        field, eq, value = part.partition("=")
        if not eq or not field:
            raise BadInputError(f"contender {spec!r}: {part!r} is not field=value")
        try:
            knobs[field] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            knobs[field] = value
    return family, knobs


def family_of(spec):
    return parse(spec)[0]


def lm_config(spec, cfg):
    """The anatomy.lm config of contender `spec` under the experiment config `cfg`: the
    library's default of its kind, the experiment's width and layers, no MLP, the
    experiment's short conv in front of every mixer (cfg.conv), then the contender's knobs
    (an lm field, else a field of its mixer's config)."""
    family, knobs = parse(spec)
    if family in RECURRENT:
        c = lm.default_config("recurrent")
        c.cell = family
    else:
        mixer = knobs.pop("mixer", None) if family == HYBRID else family
        if family == HYBRID and mixer is None:
            raise BadInputError(f"contender {spec!r}: a hybrid names its mixer=")
        c = lm.default_config("mixer", mixer=mixer)
        c.d_ff = 0  # no MLP (Zoology's MQAR models)
        c.mixer_config.conv = int(cfg.conv)
        c.attention_config.conv = int(cfg.conv)
        for field, value in cfg.attention.items():  # softmax attention, alone or in a hybrid
            c.attention_config[field] = value
            if mixer == "attention":
                c.mixer_config[field] = value
        for field, value in cfg.forms.items():  # the fastest form at these shapes, per mixer
            if mixer == field:
                c.mixer_config.form = value
        if family == HYBRID:
            c.pattern = knobs.pop("pattern", "AR")
    c.d_model, c.n_layers = int(cfg.d_model), int(cfg.n_layers)
    for field, value in knobs.items():
        if field in c and field not in ("mixer_config", "attention_config"):
            c[field] = value
        elif "mixer_config" in c and field in c.mixer_config:
            c.mixer_config[field] = value
        else:
            raise BadInputError(f"contender {spec!r}: no field {field!r} in its config")
    return c


def build(spec, cfg, vocab) -> lm.LanguageModel:
    """The LanguageModel of contender `spec` over `vocab` ids."""
    return lm.build_lm_once(lm_config(spec, cfg), vocab)


def param_count(spec, cfg, vocab):
    """Parameters of contender `spec` (shapes only: nothing is initialised)."""
    model = build(spec, cfg, vocab)
    return count_params(jax.eval_shape(model.init, jax.random.PRNGKey(0)))


def matched(spec, cfg, vocab, target, step=8):
    """`spec` with the d_model (a multiple of `step`) whose parameter count comes closest to
    `target`: contenders compared "at matched parameter count" (copy). Widths a mixer refuses
    (heads that do not divide it) are skipped."""
    best, width = None, step
    while True:
        try:
            n = param_count(f"{spec}:d_model={width}", cfg, vocab)
        except BadInputError:
            width += step
            continue
        if best is None or abs(n - target) < abs(best[1] - target):
            best = (width, n)
        if n >= target or width >= 64 * step * 8:
            return f"{spec}:d_model={best[0]}"
        width += step
