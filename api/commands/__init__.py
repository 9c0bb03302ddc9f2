"""Command groups of the `loregate` CLI; each module exposes `register(app)` and `api/cli.py` assembles them."""
