"""One `get_config(preset=None)` per experiment; presets such as `quick`."""
