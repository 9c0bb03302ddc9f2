"""Command groups of the `loregate` CLI: each module exposes `register(app)`; `api/cli.py` assembles them."""
