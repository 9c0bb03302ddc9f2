"""Temporal workflows: deterministic orchestration only."""
