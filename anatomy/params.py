"""Parameter pytrees: how many scalars one holds. A leaf: it imports nothing of anatomy, so
the translators, the language models and every experiment count parameters the same way."""

import jax


def count_params(params):
    """Total number of scalars in a parameter pytree (an int): of arrays, or of their shapes
    alone (jax.eval_shape's ShapeDtypeStructs: nothing need be initialised)."""
    return int(sum(x.size for x in jax.tree_util.tree_leaves(params)))
