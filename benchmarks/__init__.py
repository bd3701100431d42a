"""Side-by-side speed of anatomy's layers and translators against torch.nn and flax.linen.

    protocol.py          the one Case protocol: implementations, the equal-work check,
                         interleaved timing (every case, layer or translator, goes through it)
    peers.py             torch.nn / flax.linen twins and the mappings of our weights onto them
                         (the tests use the same mappings)
    inputs.py            random weights and padded batches
    cases.py             the layer cases (LSTM, GRU, attention, MHA, encoder layer), presets
    cases_translator.py  whole train steps (Transformer, RNNsearch), presets of both
    cases_decode.py      greedy decoding: KV cache against recomputing the prefix
    timing.py            interleaved rounds, medians, the machine's own matmul rate, machine info
    memory.py            peak memory of one call;  profile.py  XLA's per-op time by kind
    report.py            the tables of BENCHMARKS.md
    run.py               equivalence checks, then the timings; writes BENCHMARKS.md

A new benchmark is a function in a cases*.py module returning a protocol.Case (its peers'
mappings in peers.py), added to that module's build function.

Run ``python -m benchmarks.run [--quick] [--out BENCHMARKS.md]``.
"""
