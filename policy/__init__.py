"""Casbin model, default policy, and the enforcer factory with cross-process reload."""
