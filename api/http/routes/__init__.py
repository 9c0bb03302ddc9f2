"""HTTP routes, one module per resource; each handler authenticates and calls one service function."""
