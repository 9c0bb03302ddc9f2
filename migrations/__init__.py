"""Alembic migrations for loregate's schema; run with `loregate migrate` or `alembic upgrade head`."""
