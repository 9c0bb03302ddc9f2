"""The embedding space every stored vector lives in.

Its dimension is the default embedder's (multilingual-e5-small: 384). Switching embedders to another
dimension needs a migration and re-embedding every memory; it is never mixed silently. The table
definitions, the settings and the embedders read it from here, so the tables need no settings.
"""

from __future__ import annotations

__all__ = ["EMBEDDING_DIM"]

EMBEDDING_DIM = 384
