"""The scale-out instruments (anatomy.probes: hlo, op_cost, collectives, roofline, hardware) on
small programs whose answer is known: a psum in a scan of length 7 is 7 all-reduces of its
bytes, a hand-written matmul's predicted time is the hand computation, the per-op walk
reproduces XLA's own cost analysis when loops are counted once. No timing is asserted: the
hardware table is built from injected times."""

import dataclasses

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from anatomy import probes
from anatomy.errors import BadInputError
from anatomy.probes import collectives, hardware, hlo, op_cost, roofline

MATMUL_HLO = """HloModule m, entry_computation_layout={(f32[8,16]{1,0}, f32[16,32]{1,0})->f32[8,32]{1,0}}

ENTRY %main (a: f32[8,16], b: f32[16,32]) -> f32[8,32] {
  %a = f32[8,16]{1,0} parameter(0)
  %b = f32[16,32]{1,0} parameter(1)
  ROOT %dot = f32[8,32]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

# a while loop of 5 trips whose body all-reduces a [4,8] float32 over 8 devices
LOOP_HLO = """HloModule m, num_partitions=8

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%body (p: (s32[], f32[4,8])) -> (s32[], f32[4,8]) {
  %p = (s32[], f32[4,8]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %v = f32[4,8]{1,0} get-tuple-element(%p), index=1
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  %r = f32[4,8]{1,0} all-reduce(%v), channel_id=1, replica_groups=[1,8]<=[8], to_apply=%add
  ROOT %t = (s32[], f32[4,8]{1,0}) tuple(%j, %r)
}

%cond (q: (s32[], f32[4,8])) -> pred[] {
  %q = (s32[], f32[4,8]{1,0}) parameter(0)
  %k = s32[] get-tuple-element(%q), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%k, %n), direction=LT
}

ENTRY %main (x: f32[4,8]) -> f32[4,8] {
  %x = f32[4,8]{1,0} parameter(0)
  %z = s32[] constant(0)
  %init = (s32[], f32[4,8]{1,0}) tuple(%z, %x)
  %w = (s32[], f32[4,8]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"5"}}
  ROOT %out = f32[4,8]{1,0} get-tuple-element(%w), index=1
}
"""

TOY = hardware.Hardware(
    "toy",
    matmul_flops={"float32": 1e6, "bfloat16": 2e6},
    vector_flops=1e6,
    bandwidth=1e6,
    op_latency=1e-3,
    loop_latency=1e-2,
    link_bandwidth=1e3,
    collective_latency=0.5,
)


def test_shapes_and_instructions():
    assert hlo.shape_bytes("(s32[], f32[8,128]{1,0})") == 4 + 8 * 128 * 4
    assert hlo.shape_bytes("bf16[3,5]") == 30 and hlo.shape_bytes("pred[]") == 1
    ins = hlo.parse_instruction(
        "  ROOT %dot.3 = f32[8,32]{1,0} dot(%a, %b.1), lhs_contracting_dims={1}, "
        'rhs_contracting_dims={0}, metadata={op_name="x"}'
    )
    assert (ins.name, ins.opcode, ins.operands, ins.root) == ("dot.3", "dot", ("a", "b.1"), True)
    assert ins.attr("lhs_contracting_dims") == "{1}"


def test_runs_multiply_trip_counts():
    m = hlo.Module(LOOP_HLO)
    assert m.runs() == {"main": 1.0, "body": 5.0, "cond": 6.0}
    assert m.runs(loops=False) == {"main": 1.0, "body": 1.0, "cond": 1.0}
    assert m.loop_depth == {"main": 0, "body": 1, "cond": 1}


def test_replica_groups_forms():
    assert collectives.replica_groups("{{0,1},{2,3}}", 4) == [[0, 1], [2, 3]]
    assert collectives.replica_groups("[2,4]<=[8]", 8) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert collectives.replica_groups("[4,2]<=[2,4]T(1,0)", 8) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert collectives.replica_groups(None, 4) == [[0, 1, 2, 3]]
    assert collectives.wire_factor("all-reduce", 8) == pytest.approx(2 * 7 / 8)
    assert collectives.wire_factor("collective-permute", 8) == 1.0


def test_gpu_library_matmul_counts_as_a_dot():
    """XLA:GPU calls cuBLAS for a dot: a custom-call whose FLOPs come from its backend_config."""
    text = MATMUL_HLO.replace(
        "ROOT %dot = f32[8,32]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "ROOT %gemm = (bf16[8,32]{1,0}, s8[64]{0}) custom-call(%a, %b), custom_call_target="
        '"__cublas$gemm", backend_config={"gemm_backend_config":{"dot_dimension_numbers":'
        '{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"]}}}',
    ).replace("f32[8,16]{1,0} parameter(0)", "bf16[8,16]{1,0} parameter(0)")
    (op,) = op_cost.op_costs(text)
    assert op.dot_flops == 2 * 8 * 32 * 16 and op.dot_dtype == "bf16"
    # priced at the bf16 peak as compiled (precision=None): half the float32 time on TOY
    assert roofline.predict([op], TOY)["compute"] == pytest.approx(2 * 8 * 32 * 16 / 2e6)


def test_memory_tiers_and_first_touch():
    """An op that fits a cache tier streams at its rate; fresh buffers cost their first write."""
    (op,) = op_cost.op_costs(MATMUL_HLO)  # 3,584 bytes, 8,192 FLOPs
    slow = hardware.Hardware("t", {"float32": 1e12}, 1e12, 1e3, 0, 0, caches=((4096, 1e6),))
    assert roofline.predict([op], slow)["memory"] == pytest.approx(3584 / 1e6)
    big = hardware.Hardware("t", {"float32": 1e12}, 1e12, 1e3, 0, 0, caches=((1024, 1e6),))
    assert roofline.predict([op], big)["memory"] == pytest.approx(3584 / 1e3)
    touch = dataclasses.replace(slow, first_touch_bandwidth=1e2)
    p = roofline.predict([op], touch, fresh_bytes=1024)
    assert p["memory"] == pytest.approx(3584 / 1e6 + 1024 / 1e2)


def test_matmul_prediction_is_the_hand_computation():
    (op,) = op_cost.op_costs(MATMUL_HLO)
    assert op.flops == op.dot_flops == 2 * 8 * 32 * 16
    assert op.bytes == 4 * (8 * 16 + 16 * 32 + 8 * 32)
    p = roofline.predict([op], TOY)
    compute = 2 * 8 * 32 * 16 / 1e6  # > bytes / bandwidth = 3584 / 1e6: compute-bound
    assert p["seconds"] == pytest.approx(compute + 1e-3)
    assert (
        p["compute"] == pytest.approx(compute) and p["memory"] == 0 and p["dominant"] == "compute"
    )
    half = roofline.predict(
        [op], TOY, precision="bfloat16"
    )  # dots at the bf16 peak, half the bytes
    assert half["seconds"] == pytest.approx(compute / 2 + 1e-3)
    with pytest.raises(BadInputError, match="precision"):
        roofline.predict([op], TOY, precision="int8")


def test_loop_collective_priced_per_trip():
    cs = collectives.collectives(LOOP_HLO)
    assert len(cs) == 1
    c = cs[0]
    assert (c["kind"], c["bytes"], c["group_size"], c["runs"], c["in_loop"]) == (
        "all-reduce",
        4 * 8 * 4,
        8,
        5.0,
        True,
    )
    p = roofline.predict_text(LOOP_HLO, TOY)
    assert p["communication"] == pytest.approx(5 * (0.5 + 2 * 7 / 8 * 128 / 1e3))
    prof = op_cost.profile(LOOP_HLO)
    assert prof["loop_iterations"] == 5 and prof["collectives"] == 5
    # ops: the add in the body (5 runs), the compare in the condition (6), the all-reduce (5)
    assert prof["ops"] == 16
    # a collective's launch is in its α: the latency term counts the 11 other ops
    assert p["latency"] == pytest.approx(11 * 1e-3 + 5 * 1e-2)
    with pytest.raises(BadInputError, match="link"):
        roofline.predict_text(LOOP_HLO, hardware.Hardware("lone", {"float32": 1.0}, 1.0, 1.0, 0, 0))


def _shard_map_text(f, shape=(128, 32)):
    mesh = jax.make_mesh((8,), ("x",))
    g = jax.shard_map(f, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)
    x = jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, P("x")))
    return jax.jit(g).lower(x).compile().as_text()


def test_psum_in_scan_counts_each_trip():
    def f(x):  # a psum inside a scan of 7, inside a scan of 3: 21 all-reduces of [16,32] f32
        def outer(c, _):
            c, _ = jax.lax.scan(lambda c, _: (jax.lax.psum(c * 2.0, "x"), None), c, None, length=7)
            return c, None

        return jax.lax.scan(outer, x, None, length=3)[0]

    one = _shard_map_text(
        lambda x: jax.lax.scan(lambda c, _: (jax.lax.psum(c * 2.0, "x"), None), x, None, length=7)[
            0
        ]
    )
    (c,) = collectives.collectives(one)
    assert (c["kind"], c["bytes"], c["runs"], c["in_loop"], c["group_size"]) == (
        "all-reduce",
        16 * 32 * 4,
        7.0,
        True,
        8,
    )
    s = collectives.summarize(collectives.collectives(_shard_map_text(f)))
    assert s["by_kind"]["all-reduce"]["executions"] == 21
    assert s["total"]["in_loop_executions"] == 21
    assert s["total"]["bytes"] == 21 * 16 * 32 * 4


def test_all_gather_outside_the_loop():
    text = _shard_map_text(lambda x: jax.lax.all_gather(x, "x", tiled=True)[:16])
    (c,) = collectives.collectives(text)
    assert (c["kind"], c["bytes"], c["runs"], c["in_loop"]) == (
        "all-gather",
        128 * 32 * 4,
        1.0,
        False,
    )


def _lstm_grad(n):
    from anatomy.mixers import get_cell
    from anatomy.mixers.cells import init_lstm
    from anatomy.scan import run as run_cell

    params = init_lstm(jax.random.PRNGKey(0), 16, 16)
    x = jax.random.normal(jax.random.PRNGKey(1), (2, n, 16))
    loss = lambda p, x: jnp.sum(run_cell(get_cell("lstm"), p, x)[1] ** 2)
    return probes.compiled(jax.grad(loss, argnums=(0, 1)), params, x)


def _attention_grad():
    from anatomy.attention import init_mha, multi_head_attention

    params = init_mha(jax.random.PRNGKey(0), 16, 2)
    x = jax.random.normal(jax.random.PRNGKey(1), (2, 12, 16))
    loss = lambda p, x: jnp.sum(multi_head_attention(p, x, x) ** 2)
    return probes.compiled(jax.grad(loss, argnums=(0, 1)), params, x)


@pytest.mark.parametrize("which", ["lstm", "attention"])
def test_op_walk_reproduces_xla_cost_analysis(which):
    """The slow obvious twin: loops counted once, the per-op walk equals XLA's totals."""
    exe = _lstm_grad(9) if which == "lstm" else _attention_grad()
    mine = op_cost.profile(exe.as_text(), loops=False)
    xla = probes.cost_of(exe)
    for k in ("flops", "bytes", "transcendentals"):
        assert mine[k] == pytest.approx(xla[k], rel=1e-9), k


def test_loop_trips_restore_the_body():
    """A scan of 7 steps c <- tanh(c @ w): XLA counts the body once, the walk 7 times."""
    w = jax.random.normal(jax.random.PRNGKey(0), (16, 16))
    c0 = jax.random.normal(jax.random.PRNGKey(1), (2, 16))

    def f(c, w):
        return jax.lax.scan(lambda c, _: (jnp.tanh(c @ w), None), c, None, length=7)[0]

    exe = probes.compiled(f, c0, w)
    once, seven = (op_cost.profile(exe.as_text(), loops=lp) for lp in (False, True))
    assert once["dot_flops"] == 2 * 2 * 16 * 16 and seven["dot_flops"] == 7 * 2 * 2 * 16 * 16
    assert seven["transcendentals"] == 7 * 2 * 16
    assert seven["loop_iterations"] == 7 == probes.hlo_sequential_steps(exe.as_text())


def test_host_table_from_injected_times():
    benches = {
        "matmul": {"work": 2e9, "how": "m"},
        "bandwidth": {"work": 4e9, "size": 1 << 27, "how": "b"},
        "cache_2": {"work": 6e9, "size": 1 << 19, "how": "c"},
        "first_touch": {"size": 1 << 27, "how": "f"},
        "call": {"how": "call"},
        "loop_stream_short": {"work": 1e9, "how": "s"},
        "loop_stream": {"work": 5e9, "how": "l"},
    }
    # streaming 2 x 128 MiB at 2 GB/s, plus first-touching 128 MiB at 1 GB/s
    touch = 2 * 2**27 / 2e9 + 2**27 / 1e9
    medians = {"matmul": 0.5, "bandwidth": 2.0, "cache_2": 0.1, "call": 4e-5, "first_touch": touch}
    medians |= {"loop_stream_short": 0.7, "loop_stream": 1.7}  # 4 GB more in 1 s more
    op, loop = 3e-6, 7e-6
    for k, ops in ((1, 4.0), (2, 6.0), (4, 10.0)):
        benches[f"latency_{k}"] = {"k": k, "trips": 100, "ops_per_iteration": ops}
        medians[f"latency_{k}"] = 100 * (loop + ops * op)
    hw, raw = hardware.host_table(benches, medians)
    assert hw.matmul_flops["float32"] == pytest.approx(4e9)
    assert hw.bandwidth == pytest.approx(2e9) and hw.caches == ((1 << 19, pytest.approx(6e10)),)
    assert hw.first_touch_bandwidth == pytest.approx(1e9)
    assert hw.loop_bandwidth == pytest.approx(4e9)
    assert hw.op_latency == pytest.approx(op) and hw.loop_latency == pytest.approx(loop)
    assert hw.call_latency == 4e-5
    assert len(raw["latency_points"]) == 3


def test_named_tables():
    h100 = hardware.get("H100 SXM")
    assert h100.matmul_flops["bfloat16"] > h100.matmul_flops["float32"] > h100.vector_flops
    assert {"op_latency", "loop_latency", "collective_latency"} <= set(h100.assumptions)
    assert h100.scaled(op_latency=2.0).op_latency == pytest.approx(2 * h100.op_latency)
    with pytest.raises(BadInputError, match="H100 SXM"):
        hardware.get("H200 PCIe")
    assert hardware.cache_bytes(level=99) == 0  # no such cache: no tier


def test_fused_loops_charge_one_launch_per_iteration():
    """fused_loops: the loop body's ops cost one latency per iteration, the work unchanged."""
    ops = op_cost.op_costs(LOOP_HLO)
    plain = roofline.predict(ops, TOY, loop_iterations=5)
    fused = roofline.predict(ops, TOY, loop_iterations=5, fused_loops=True)
    # in the loops: the body's add (5 runs) and the condition's compare (6); fused: 5 launches
    assert plain["latency"] - fused["latency"] == pytest.approx((5 + 6 - 5) * TOY.op_latency)
    assert plain["memory"] + plain["compute"] == pytest.approx(fused["memory"] + fused["compute"])


def _loop_of_adds(k: int) -> str:
    """HLO: a while loop of 3 trips whose body doubles k carried f32[128] arrays (512 B each),
    one add per array."""
    arrays = ", ".join(["f32[128]{0}"] * k)
    state = f"(s32[], {arrays})"
    gets = "\n".join(
        f"  %v{i} = f32[128]{{0}} get-tuple-element(%p), index={i + 1}\n"
        f"  %a{i} = f32[128]{{0}} add(%v{i}, %v{i})"
        for i in range(k)
    )
    outs = ", ".join(f"%a{i}" for i in range(k))
    params = ", ".join(f"%x{i}" for i in range(k))
    entry_params = "\n".join(f"  %x{i} = f32[128]{{0}} parameter({i})" for i in range(k))
    return f"""HloModule m

%body (p: {state}) -> {state} {{
  %p = {state} parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
{gets}
  ROOT %t = {state} tuple(%j, {outs})
}}

%cond (q: {state}) -> pred[] {{
  %q = {state} parameter(0)
  %c = s32[] get-tuple-element(%q), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%c, %n), direction=LT
}}

ENTRY %main ({", ".join(f"x{i}: f32[128]" for i in range(k))}) -> f32[128] {{
{entry_params}
  %z = s32[] constant(0)
  %init = {state} tuple(%z, {params})
  %w = {state} while(%init), condition=%cond, body=%body, backend_config={{"known_trip_count":{{"n":"3"}}}}
  ROOT %out = f32[128]{{0}} get-tuple-element(%w), index=1
}}
"""


def test_loop_body_past_the_cache_streams_at_the_loop_rate():
    """A small op in a loop body whose working set exceeds the last cache tier streams at
    loop_bandwidth (the body evicts what the next iteration reuses); in a body that fits, at
    the tier's rate; a table without loop_bandwidth (the accelerators) keeps the tier."""
    hw = hardware.Hardware(
        "t", {"float32": 1e12}, 1e12, 1e2, 0, 0, caches=((4096, 1e6),), loop_bandwidth=1e3
    )

    def adds(k):
        ops = op_cost.op_costs(_loop_of_adds(k))
        return [o for o in ops if o.computation == "body" and o.opcode == "add" and o.bytes > 12]

    for k, rate in ((2, 1e6), (8, 1e3)):
        ops = adds(k)
        assert len(ops) == k and all(o.bytes == 3 * 512 for o in ops)
        # each add: its 512-byte result written, its operand read once; the counter's 12 bytes
        assert ops[0].footprint == pytest.approx(k * 2 * 512 + 12)
        assert roofline.predict(ops, hw)["memory"] == pytest.approx(3 * k * 3 * 512 / rate)
        tier_only = dataclasses.replace(hw, loop_bandwidth=None)
        assert roofline.predict(ops, tier_only)["memory"] == pytest.approx(3 * k * 1536 / 1e6)


def test_run_in_calls_are_untimed_and_precede_each_turn():
    """run_in: each program's turn in a round starts with untimed calls of itself, so a timed
    call follows a call of the same program; the clock is read only around timed calls."""
    log, ticks = [], iter(range(1000))

    def program(name):
        return lambda: log.append(name)

    calls = {"a": (program("a"), ()), "b": (program("b"), (), 2)}
    out = hardware.interleaved_medians(
        calls, rounds=2, warmup=1, run_in=1, clock=lambda: float(next(ticks))
    )
    # warmup once each, then per round: a (untimed), a; b (untimed), b, b
    assert log == ["a", "b"] + ["a", "a", "b", "b", "b"] * 2
    assert [len(out[k][1]) for k in "ab"] == [2, 4]  # 1 and 2 timed calls per round
    assert all(t == 1.0 for k in "ab" for t in out[k][1])  # one tick between a timed call's reads
    log.clear()
    hardware.interleaved_medians(calls, rounds=1, warmup=0, clock=lambda: 0.0)
    assert log == ["a", "b", "b"]  # run_in=0: the previous protocol, every call timed


def test_terms_switch_off_and_rates_scale():
    """Hardware.without: a term off is charged nothing (the others unchanged); at_fraction
    divides every rate, so a roofline term grows by 1 / fraction and latency does not."""
    (op,) = op_cost.op_costs(MATMUL_HLO)
    full = roofline.predict([op], TOY)
    no_lat = roofline.predict([op], TOY.without("latency"))
    assert no_lat["latency"] == 0 and no_lat["compute"] == pytest.approx(full["compute"])
    assert roofline.predict([op], TOY.without("compute"))["compute"] == 0
    mem_bound = roofline.predict([op], TOY.without("compute"))  # then memory bounds it
    assert mem_bound["memory"] == pytest.approx(3584 / 1e6)
    assert roofline.predict([op], TOY.without("compute", "memory"))["seconds"] == pytest.approx(
        TOY.op_latency
    )
    quarter = roofline.predict([op], TOY.at_fraction(0.25))
    assert quarter["compute"] == pytest.approx(4 * full["compute"])
    assert quarter["latency"] == pytest.approx(full["latency"])
    with pytest.raises(BadInputError, match="term"):
        TOY.without("launches")


def test_small_lstm_of_the_check_is_latency_bound():
    """The check's lstm_small is there to exercise the latency term: on a table with CPU-like
    rates and a quarter-µs per op, its predicted time is mostly latency (the parallelism-size
    layers are not), so the check cannot pass with the latency term wrong or off."""
    from experiments.configs.scaling import get_config
    from experiments.scaling import check

    cfg = get_config("quick").check
    cpu = hardware.Hardware(
        "cpu-like", {"float32": 3e11, "bfloat16": 3e11}, 3e11, 1.5e10, 2.5e-7, 0
    )
    (exe, _) = check.layer_programs(cfg)[(check.SMALL, cfg.small_n_grid[0])]
    p = roofline.predict_text(exe.as_text(), cpu)
    assert p["dominant"] == "latency" and p["latency"] > 0.5 * p["seconds"]


def test_gpu_target_without_the_plugin_says_why():
    """Deviceless GPU compilation needs the CUDA plugin, which this environment lacks: the
    module says so by name, and compile_text refuses with that reason."""
    from anatomy.probes import gpu_target

    if gpu_target.plugin_installed():
        pytest.skip("the CUDA plugin is installed here")
    ok, why = gpu_target.available()
    assert not ok and gpu_target.PLUGIN in why and "virtualenv" in why
    with pytest.raises(BadInputError, match="cannot compile for H100 SXM"):
        gpu_target.compile_text(jax.jit(jnp.sin), jnp.ones(3), target="H100 SXM")
    with pytest.raises(BadInputError, match="A100 80GB"):
        gpu_target.target_config("V100")
    assert "core_count: 132" in gpu_target.target_config("H100 SXM")


@pytest.mark.slow
def test_gpu_programs_subprocess_reports_unavailable(tmp_path):
    """experiments/scaling/gpu_programs.py through its subprocess with this Python (no
    plugin): it answers 'not available' with the reason, and no texts."""
    import sys

    from anatomy.probes import gpu_target
    from experiments.configs.scaling import get_config
    from experiments.scaling import gpu_programs

    if gpu_target.plugin_installed():
        pytest.skip("the CUDA plugin is installed here")
    cfg = get_config("quick")
    cfg.applied.gpu_target = "H100 SXM"
    assert gpu_programs.start(cfg)["available"] is False  # no gpu_python: nothing started
    cfg.applied.gpu_python = sys.executable
    got = gpu_programs.collect(gpu_programs.start(cfg))
    assert got["available"] is False and gpu_target.PLUGIN in got["why"] and got["texts"] == {}
