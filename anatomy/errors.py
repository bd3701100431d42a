"""The project's one error type for bad input: what launch.py turns into a one-line message.

    raise BadInputError("train.num_steps must be positive, got 0")

Every check of what a user supplies (a config that cannot work, a malformed corpus, a corrupt
checkpoint, a NaN loss from a recipe that diverges, a mesh that does not fit the devices, a
workdir trained with another config) raises a subclass of BadInputError with a message
written to be read, not debugged. Anything else is a bug and keeps its traceback.
BadInputError is a ValueError, so `except ValueError` / `pytest.raises(ValueError)` still catch it.
"""

from __future__ import annotations


class BadInputError(ValueError):
    """Bad input from the user (config, data, workdir): the message names the problem and the fix."""
