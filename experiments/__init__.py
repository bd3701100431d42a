"""Experiments: one module per experiment, each with `run(config, workdir) -> dict`.

Their configs live in `experiments/configs/<name>.py` (`get_config(preset=None)`);
`python launch.py --experiment=<name>` runs one.
"""
