"""Side-by-side speed of anatomy's layers against torch.nn and flax.linen, in one process.

    mapping.py  our parameter pytrees -> torch modules / flax.linen variables (same weights)
    cases.py    one Case per benchmark: the implementations, their inputs, analytic FLOPs
    timing.py   interleaved rounds, medians, the machine's own matmul rate, machine info
    run.py      equivalence checks, then the timings; writes BENCHMARKS.md

Run ``python -m benchmarks.run [--quick] [--out BENCHMARKS.md]``.
"""
