"""orbax checkpoints of a TrainState plus JSON metadata (data position, seed, wall time).

One folder per step under `directory` (CheckpointManager layout: `<dir>/<step>/{state,meta}`).
Saves are synchronous and atomic (orbax writes a temporary folder and renames it), so a
process killed mid-save leaves the previous checkpoints intact. Non-finite parameters are
never written; a checkpoint that cannot be read raises CorruptCheckpointError naming it and
touches nothing on disk. `directory` may be local or a bucket (gs://...): orbax takes it
as an etils.epath.Path (anatomy.paths) and writes the arrays through tensorstore's driver
for it.
"""

from __future__ import annotations

import jax
import orbax.checkpoint as ocp

from anatomy import paths
from anatomy.errors import BadInputError
from anatomy.train.state import TrainState, all_finite, as_dict, from_dict


class CorruptCheckpointError(BadInputError, RuntimeError):
    """A checkpoint folder exists but cannot be restored."""


class NonFiniteStateError(BadInputError, FloatingPointError):
    """Refused to checkpoint parameters or optimiser state that hold NaN or Inf."""


def _abstract(tree, shardings=None):
    """ShapeDtypeStructs for StandardRestore's target, with `shardings` (a tree like `tree`)
    or else each leaf's own sharding: orbax reads every array straight into its target layout,
    whatever mesh wrote it (elastic resume)."""
    if shardings is None:
        shardings = jax.tree.map(lambda x: getattr(x, "sharding", None), tree)
    return jax.tree.map(
        lambda x, s: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s), tree, shardings
    )


class Checkpointer:
    """Save / restore TrainStates in `directory`, keeping the newest `max_to_keep`."""

    def __init__(self, directory: str, *, max_to_keep: int | None = 3):
        where = paths.absolute(directory)  # orbax wants an absolute folder (or a gs:// URI)
        self.directory = str(where)
        options = ocp.CheckpointManagerOptions(
            max_to_keep=max_to_keep, create=True, enable_async_checkpointing=False
        )
        self.manager = ocp.CheckpointManager(where, options=options, item_names=("state", "meta"))

    def steps(self) -> list[int]:
        """Steps with a finished checkpoint, ascending."""
        return sorted(self.manager.all_steps())

    def latest_step(self) -> int | None:
        """The newest finished checkpoint's step, or None."""
        return self.manager.latest_step()

    def path(self, step: int) -> str:
        """The folder of the checkpoint at `step`."""
        return paths.join(self.directory, str(step))

    def save(self, state: TrainState, meta: dict) -> str:
        """Write state (params, opt_state, step) and JSON `meta` at step = state.step.

        Raises NonFiniteStateError (writing nothing) if any parameter or optimiser value is
        NaN/Inf. Returns the checkpoint folder.
        """
        step = int(state.step)
        if not all_finite((state.params, state.opt_state)):
            raise NonFiniteStateError(
                f"Refusing to write checkpoint {self.path(step)}: parameters or optimiser state "
                "contain NaN/Inf."
            )
        self.manager.save(
            step,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(as_dict(state)), meta=ocp.args.JsonSave(dict(meta))
            ),
            force=True,
        )
        self.manager.wait_until_finished()
        return self.path(step)

    def read_meta(self, step: int | None = None) -> dict:
        """The JSON meta of the checkpoint at `step` (default latest), without reading arrays."""
        step = self.latest_step() if step is None else step
        if step is None or step not in self.steps():
            raise FileNotFoundError(
                f"No checkpoint at step {step} in {self.directory} (have {self.steps()})"
            )
        try:
            out = self.manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))
        except Exception as e:  # orbax raises many kinds
            raise CorruptCheckpointError(
                f"Cannot read the meta of checkpoint {self.path(step)} "
                f"({type(e).__name__}: {str(e)[:300]})"
            ) from e
        return dict(out["meta"])

    def restore(
        self, like: TrainState, step: int | None = None, *, shardings: TrainState | None = None
    ) -> tuple[TrainState, dict]:
        """Restore the checkpoint at `step` (default: latest) into the structure of `like`.

        `like` gives shapes and dtypes (an abstract target for StandardRestore); `shardings`
        (a TrainState of jax Shardings, default: like's own) is where every array lands, on
        any mesh: a checkpoint written on a (4, 2) mesh restores onto (8, 1) or one device.
        Raises FileNotFoundError when there is none, CorruptCheckpointError when it is unreadable.
        """
        step = self.latest_step() if step is None else step
        if step is None or step not in self.steps():
            raise FileNotFoundError(
                f"No checkpoint at step {step} in {self.directory} (have {self.steps()})"
            )
        path = self.path(step)
        try:
            out = self.manager.restore(
                step,
                args=ocp.args.Composite(
                    state=ocp.args.StandardRestore(
                        _abstract(as_dict(like), None if shardings is None else as_dict(shardings))
                    ),
                    meta=ocp.args.JsonRestore(),
                ),
            )
            state, meta = from_dict(out["state"]), dict(out["meta"])
        except Exception as e:  # orbax / tensorstore raise many kinds
            others = [s for s in self.steps() if s != step]
            raise CorruptCheckpointError(
                f"Checkpoint {path} is corrupt or incompatible and cannot be restored "
                f"({type(e).__name__}: {str(e)[:300]}). Nothing was deleted; other checkpoints "
                f"in {self.directory}: steps {others}. Move {path} away to resume from an "
                "earlier one."
            ) from e
        if int(state.step) != step:
            raise CorruptCheckpointError(
                f"Checkpoint {path} holds step {int(state.step)}, not {step}."
            )
        return state, meta

    def restore_params(self, like_params, step: int | None = None):
        """Only the parameters of the checkpoint at `step` (default latest), e.g. to translate.

        like_params gives the structure, shapes and dtypes; the optimiser state is not read.
        """
        step = self.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"No checkpoint in {self.directory}")
        target = {"params": _abstract(like_params)}
        try:
            out = self.manager.restore(
                step,
                args=ocp.args.Composite(
                    state=ocp.args.PyTreeRestore(
                        item=target,
                        restore_args=ocp.checkpoint_utils.construct_restore_args(target),
                        partial_restore=True,
                    )
                ),
            )
        except Exception as e:
            raise CorruptCheckpointError(
                f"Cannot read the parameters of checkpoint {self.path(step)} "
                f"({type(e).__name__}: {str(e)[:300]})"
            ) from e
        return out["state"]["params"]

    def close(self):
        self.manager.close()
