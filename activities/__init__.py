"""Temporal activities: thin, idempotent wrappers over governance/ (all I/O of the workflows lives here)."""
