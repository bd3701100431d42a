"""Progress lines: k of n with the time left, and a training bar that follows a time budget
when there is one (injected clocks and numbers: no assertion reads a real clock)."""

import io

from anatomy.train.metrics import Progress as TrainProgress
from experiments.lab.progress import Progress, clock


def test_an_experiment_says_k_of_n_and_the_time_left():
    now = iter([0.0, 0.0, 10.0, 30.0])
    out = io.StringIO()
    p = Progress("depth", total=3, stream=out, now=lambda: next(now))
    p.step("pre L=1")  # nothing done yet: no estimate
    p.step("pre L=2")  # one done in 10 s, two left
    p.step("pre L=4")  # two done in 30 s, one left
    lines = out.getvalue().splitlines()
    assert lines[0] == "[depth 1/3] pre L=1 (elapsed 0:00:00)"
    assert lines[1] == "[depth 2/3] pre L=2 (elapsed 0:00:10, about 0:00:20 left)"
    assert lines[2] == "[depth 3/3] pre L=4 (elapsed 0:00:30, about 0:00:15 left)"
    assert clock(3725.4) == "1:02:05"


def test_a_time_budget_sets_the_bar_and_the_eta_not_the_steps():
    steps = TrainProgress(2000, name="transformer")
    line = steps.line(500, elapsed=100.0, loss=1.5)
    assert "500/2000" in line and "[#####...............]" in line and "ETA 0:05:00" in line
    # under a 180 s budget the number of steps is unknown: 45 s trained is a quarter
    timed = TrainProgress(2000, name="transformer", budget_s=180.0)
    line = timed.line(1234, elapsed=60.0, seconds=45.0, loss=1.5)
    assert "step 1234, 45/180 s trained" in line and "/2000" not in line
    assert "[#####...............]" in line and "ETA 0:02:15" in line
