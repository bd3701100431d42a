"""results.json as plain JSON: numpy / jax values turned into lists and numbers, non-finite
floats into null, written whole (a reader never sees half a file). Below everything else in
experiments/lab: provenance fingerprints a config through `jsonable`, outputs digests a result
through it, record writes results.json with `write_json`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from anatomy import paths


def jsonable(x: Any) -> Any:
    """Turn numpy / jax scalars and arrays into plain JSON; non-finite floats into null."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if hasattr(x, "tolist"):  # numpy / jax arrays and scalars
        return jsonable(x.tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def write_json(workdir: str, results: dict, name: str = "results.json") -> str:
    """Write `results` as indented JSON into `workdir/name` (a local folder or a gs:// one:
    anatomy.paths); returns the path."""
    paths.makedirs(workdir)
    path = paths.join(workdir, name)
    # never leave a half-written results.json
    paths.write_text(path, json.dumps(jsonable(results), indent=2, sort_keys=False), atomic=True)
    return path
