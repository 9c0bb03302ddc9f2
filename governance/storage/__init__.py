"""Postgres storage: table definitions, the async engine, and repositories (one per aggregate)."""
