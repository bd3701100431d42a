"""Running a cell over time with ``jax.lax.scan``: padding masks, reverse, bidirectional.

Inputs are batch-major, xs [B, T, D]; outputs ys [B, T, H]. The scan itself
runs time-major (its leading axis is time), so the runner transposes once on
the way in and once on the way out.

The fast path (``hoist=True``) computes the input projection of every step
as ONE matmul [B, T, D] x [D, G*H] before the scan, so each serial step only
does the recurrent matmul h [B, H] x w_h [H, G*H] and elementwise gates. The
plain path (``hoist=False``) calls the cell itself at each step; both use
the same formulas (``cell = recur ∘ project``, the CellSpec's).
"""

import jax
import jax.numpy as jnp

from anatomy.scan.sequences import check_inputs, reverse_padded


def run(
    spec,
    params,
    xs,
    *,
    lengths=None,
    carry0=None,
    reverse=False,
    hoist=True,
    return_carries=False,
    form="associative",
    vjp="autodiff",
):
    """Run a cell over every time step of a batch of sequences with ``jax.lax.scan``.

    Args:
      spec: the cell, a CellSpec (anatomy.mixers.get_cell(name): 'rnn', 'lstm', 'gru', ...;
        the cell part of a mixer's registration).
      params: the cell's parameters (from its init).
      xs: [B, T, D] inputs, batch-major.
      lengths: [B] int or None. Step t of sequence b is real iff t < lengths[b]; past
        its length a sequence's carry stays frozen and its outputs are exactly zero.
      carry0: the initial carry (leaves [B, H]); zeros if None.
      reverse: read each sequence backwards within its own length (torch packed-sequence
        semantics); ys stay aligned with xs (ys[:, t] is the state after reading x[:, t]).
      hoist: True = project all inputs with one [B, T, D] x [D, G*H] matmul before the
        scan (fast path); False = call the plain cell inside the scan.
      return_carries: also return the carry after every step (e.g. LSTM cell states), a
        carry pytree with leaves [B, T, H], aligned like ys and zero past each length.
      form: for a linear-recurrence cell (spec.sequence: sru, qrnn, mingru, mamba), which
        runs its own sequence form, the linear_scan form it runs in: 'associative'
        (jax.lax.associative_scan), 'sequential' (jax.lax.scan) or 'chunked'. Ignored by the
        other cells (a nonlinear cell has the one form, its scan).
      vjp: how the gradient is computed: "autodiff" (JAX differentiates the scan: two small
        matmuls per backward step) or "fused" (the cell's spec.fused, over fused.py's custom
        VJP: one matmul per backward step, the weight gradients as one matmul over all steps;
        the cells whose spec.fused is set, same values, gradients equal up to float rounding).

    Returns:
      (final_carry, ys [B, T, H]), or (final_carry, ys, carries) with return_carries.
    """
    if not hasattr(spec, "recur"):
        raise ValueError(f"run takes a CellSpec (anatomy.mixers.get_cell(name)), got {spec!r}")
    xs = jnp.asarray(xs)
    lengths = None if lengths is None else jnp.asarray(lengths)
    if vjp not in ("autodiff", "fused"):
        raise ValueError(f"run: vjp must be 'autodiff' or 'fused', got {vjp!r}")
    if vjp == "fused":
        return _run_fused(spec, params, xs, lengths, carry0, reverse, hoist, return_carries)
    if spec.sequence is not None:
        return _run_sequence(spec, params, xs, lengths, carry0, reverse, form, return_carries)
    check_inputs(params, xs, lengths)
    batch, n_time, _ = xs.shape
    d_hidden = params["w_h"].shape[0]
    if carry0 is None:
        carry0 = spec.zero_carry(batch, d_hidden, jnp.result_type(xs.dtype, params["w_h"].dtype))

    if reverse:
        xs = reverse_padded(xs, lengths)
    if hoist:
        inputs, step = spec.project(params, xs), spec.recur  # [B, T, G*H], one matmul
    else:
        inputs, step = xs, spec.cell
    inputs = jnp.swapaxes(inputs, 0, 1)  # [T, B, ·], time-major for scan
    mask = None if lengths is None else jnp.arange(n_time)[:, None] < lengths[None, :]  # [T, B]

    def body(carry, inp):
        x_t, m_t = inp
        new_carry, y = step(params, carry, x_t)
        if m_t is not None:
            m = m_t[:, None]  # [B, 1]
            new_carry = jax.tree_util.tree_map(lambda n, o: jnp.where(m, n, o), new_carry, carry)
            y = jnp.where(m, y, jnp.zeros_like(y))
        if not return_carries:
            return new_carry, y
        if m_t is not None:
            step_carry = jax.tree_util.tree_map(
                lambda c: jnp.where(m, c, jnp.zeros_like(c)), new_carry
            )
        else:
            step_carry = new_carry
        return new_carry, (y, step_carry)

    final, outs = jax.lax.scan(body, carry0, (inputs, mask))

    def to_batch_major(a):  # [T, B, H] -> [B, T, H], undoing the reverse
        a = jnp.swapaxes(a, 0, 1)
        return reverse_padded(a, lengths) if reverse else a

    if not return_carries:
        return final, to_batch_major(outs)
    ys, carries = outs
    return final, to_batch_major(ys), jax.tree_util.tree_map(to_batch_major, carries)


def _run_fused(spec, params, xs, lengths, carry0, reverse, hoist, return_carries):
    """``run`` through the cell's custom-VJP path, spec.fused (over fused.py; same values)."""
    if spec.fused is None:
        raise ValueError(
            f"run: vjp='fused' exists for the cells with a fused layer (spec.fused), not {spec.name!r}"
        )
    if return_carries:
        raise ValueError("run: return_carries is not supported with vjp='fused'")
    return spec.fused(params, xs, lengths=lengths, carry0=carry0, reverse=reverse, hoist=hoist)


def _run_sequence(spec, params, xs, lengths, carry0, reverse, form, return_carries):
    """``run`` for a linear-recurrence cell: its own sequence form, reversed like ``run``."""
    if return_carries:
        raise ValueError(f"run: return_carries is not supported for the cell {spec.name!r}")
    if xs.ndim != 3:
        raise ValueError(f"xs must be batch-major [B, T, D], got shape {xs.shape}")
    if reverse:
        xs = reverse_padded(xs, lengths)
    final, ys = spec.sequence(params, xs, carry0, lengths=lengths, form=form)
    return final, reverse_padded(ys, lengths) if reverse else ys


def bidirectional(spec, params_fw, params_bw, xs, *, lengths=None, hoist=True, vjp="autodiff"):
    """Bidirectional encoder: a forward and a backward (within-length reversed) run.

    Args: as ``run``; params_fw / params_bw are two parameter sets of the same cell.
    Returns:
      ys [B, T, 2H] = forward ys ‖ backward ys (zero past each length), and
      (carry_fw, carry_bw): the forward carry after the last real step and the backward
      carry after reading position 0 (torch's h_n for bidirectional=True).
    """
    kw = dict(lengths=lengths, hoist=hoist, vjp=vjp)
    carry_fw, ys_fw = run(spec, params_fw, xs, **kw)
    carry_bw, ys_bw = run(spec, params_bw, xs, reverse=True, **kw)
    return jnp.concatenate([ys_fw, ys_bw], axis=-1), (carry_fw, carry_bw)
