"""The scaling experiment's cases measured on the device JAX runs on, beside the cost model.

    python -m experiments.scaling.on_device            # a GPU or TPU host: under 5 minutes
    python -m experiments.scaling.on_device --quick    # any machine (a CPU too): small shapes
    (or python experiments/scaling/on_device.py, from anywhere)

Cases (experiments/scaling/check.py, the same builders): the `parallelism` experiment's LSTM and
self-attention layers, jit(grad) at N = 64 ... 2,048, and rnn_vs_attn's three translators'
train steps at its default sizes, each in float32 and in bfloat16 (layers: parameters and
inputs in bf16; translators: train.compute_dtype='bfloat16', float32 master parameters).

For each: the measured median time (interleaved rounds) and the cost model's prediction of the
very program compiled here (anatomy.probes.roofline, the dots priced at their own precision)
from two hardware tables: the published one of this device when anatomy.probes.hardware
names it (H100, A100, TPU v5e), and this device's own micro-benchmarks (matmul, memory,
kernel and loop latency) measured in the same rounds. Then the LSTM / attention ratio per N
(the chapter's 5-10x at N = 512) and the Transformer / RNNsearch step ratio, measured and
predicted, and how many programs the model predicts within 2x with each of its terms switched
off (what the device's estimate depends on), and the kernels each program runs (compare the
experiment's deviceless XLA:GPU counts). `--out FILE.json` keeps everything. The experiment's
accelerator rows are estimates; this script is how to measure them on the hardware.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

if __package__ in (None, ""):  # run as a script: this checkout's root in place of this folder
    sys.path[0] = str(pathlib.Path(__file__).resolve().parents[2])

import jax
import jax.numpy as jnp

from anatomy.probes import hardware, hlo, op_cost, roofline
from benchmarks import timing

# device_kind substrings -> anatomy.probes.hardware.ACCELERATORS names
KNOWN = {
    "H100": "H100 SXM",
    "H200": "H100 SXM",
    "A100": "A100 80GB",
    "v5 lite": "TPU v5e",
    "v5e": "TPU v5e",
}


def parse_args(argv):
    ap = timing.argument_parser(
        "python -m experiments.scaling.on_device", __doc__, "small shapes, few rounds: any machine"
    )
    ap.add_argument("--n-grid", default=None, help="comma-separated N for the layers")
    ap.add_argument("--translators", default=None, help="comma-separated translators ('' = none)")
    ap.add_argument("--precisions", default="float32,bfloat16", help="float32 and/or bfloat16")
    ap.add_argument("--out", default=None, help="write every number to this JSON file")
    return ap.parse_args(argv)


def published_table(kind: str):
    """The named table whose key appears in the device kind, else None."""
    for key, name in KNOWN.items():
        if key.lower() in kind.lower():
            return hardware.get(name)
    return None


def cases(args):
    """{(precision, family, n): (compiled, call args)} and the check config used."""
    from experiments.configs import rnn_vs_attn as rva_config
    from experiments.configs import scaling as scaling_config
    from experiments.scaling import check

    preset = "quick" if args.quick else None
    cfg = scaling_config.get_config(preset).check
    rva = rva_config.get_config(preset)
    with cfg.unlocked():
        if args.n_grid:
            cfg.n_grid = tuple(int(n) for n in args.n_grid.split(","))
        if args.translators is not None:
            cfg.translators = tuple(t for t in args.translators.split(",") if t)
    out = {}
    for precision in args.precisions.split(","):
        dtype = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}[precision]
        progs = {
            **check.layer_programs(cfg, dtype),
            **check.translator_programs(cfg, rva, precision),
        }
        out.update({(precision, f, n): v for (f, n), v in progs.items()})
    return out, cfg


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    t0 = time.time()
    dev = jax.devices()[0]
    kind = f"{dev.device_kind} ({dev.platform}) x{len(jax.devices())}"
    print(f"device: {kind}; jax {jax.__version__}")
    from experiments.scaling import check

    progs, cfg = cases(args)
    benches = hardware.benchmarks(quick=args.quick, cpu_caches=dev.platform == "cpu")
    rounds = args.rounds or (2 if args.quick else 5)
    calls = {**hardware.bench_calls(benches), **progs}
    medians = hardware.interleaved_medians(calls, rounds, warmup=1 if args.quick else 2)
    measured_hw, raw = hardware.host_table(benches, {k: medians[k][0] for k in benches}, kind)
    tables = {"measured here": measured_hw}
    named = published_table(dev.device_kind)
    if named is not None:
        tables[f"published {named.name}"] = named
    print(
        f"measured: matmul {raw['matmul'] / 1e12:.3g} TFLOP/s (float32), memory "
        f"{raw['bandwidth'] / 1e9:.4g} GB/s, op latency {measured_hw.op_latency * 1e6:.3g} µs, "
        f"loop latency {measured_hw.loop_latency * 1e6:.3g} µs, call {measured_hw.call_latency * 1e6:.3g} µs"
    )
    rows = []
    for key, (exe, _) in progs.items():
        precision, family, n = key
        m = hlo.Module(exe.as_text())
        ops, prof = op_cost.op_costs(m), op_cost.profile(m)
        fresh = check.fresh_bytes(exe)
        row = {
            "precision": precision,
            "family": family,
            "n": n,
            "measured_s": medians[key][0],
            "kernels": prof["ops"],  # compare: the deviceless count (experiments/scaling)
        }
        for label, hw in tables.items():
            kw = dict(loop_iterations=prof["loop_iterations"], fresh_bytes=fresh)
            p = roofline.predict(ops, hw, **kw)
            row[label] = {
                "seconds": p["seconds"],
                "dominant": p["dominant"],
                # the model with each term off (check.VARIANTS): which terms this device needs
                "variants": {
                    v: roofline.predict(ops, hw.without(*off), **kw)["seconds"]
                    for v, off in check.VARIANTS.items()
                },
            }
        rows.append(row)
    labels = list(tables)
    header = ["precision", "case", "N", "measured ms"] + [f"{lb}: ms (pred/meas)" for lb in labels]
    print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in rows:
        cells = [r["precision"], r["family"], str(r["n"]), f"{1e3 * r['measured_s']:.3g}"]
        cells += [
            f"{1e3 * r[lb]['seconds']:.3g} ({r[lb]['seconds'] / r['measured_s']:.2f}x, {r[lb]['dominant']})"
            for lb in labels
        ]
        print("| " + " | ".join(cells) + " |")
    print("\nthe model with each term off: programs within 2x of the measured time")
    for lb in labels:
        for v in check.VARIANTS:
            ok = sum(
                max(r[lb]["variants"][v] / r["measured_s"], r["measured_s"] / r[lb]["variants"][v])
                <= 2.0
                for r in rows
            )
            print(f"  {lb}, {v}: {ok} of {len(rows)}")
    ratios = _ratios(rows, labels, cfg)
    print(
        "\nLSTM / attention (the chapter: 5-10x at N = 512) and Transformer / RNNsearch per step:"
    )
    for r in ratios:
        pred = ", ".join(f"{lb} {r[lb]:.3g}" for lb in labels)
        print(f"  {r['precision']} {r['what']}: measured {r['measured']:.3g}; predicted: {pred}")
    print(f"\n{time.time() - t0:.0f} s")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(
                {
                    "device": kind,
                    "measured_table": measured_hw.as_dict(),
                    "rows": rows,
                    "ratios": ratios,
                },
                f,
                indent=2,
            )
    return rows, ratios


def _ratios(rows, labels, cfg):
    by = {(r["precision"], r["family"], r["n"]): r for r in rows}
    out = []
    for precision in sorted({r["precision"] for r in rows}):
        pairs = [
            (f"LSTM / attention at N = {n}", ("lstm", n), ("attention", n)) for n in cfg.n_grid
        ]
        pairs.append(
            (
                f"Transformer / RNNsearch step (length {cfg.length})",
                ("transformer", cfg.length),
                ("rnnsearch", cfg.length),
            )
        )
        for what, a, b in pairs:
            ra, rb = by.get((precision, *a)), by.get((precision, *b))
            if ra is None or rb is None:
                continue
            row = {
                "precision": precision,
                "what": what,
                "measured": ra["measured_s"] / rb["measured_s"],
            }
            row.update({lb: ra[lb]["seconds"] / rb[lb]["seconds"] for lb in labels})
            out.append(row)
    return out


if __name__ == "__main__":
    main()
