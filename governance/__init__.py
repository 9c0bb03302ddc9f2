"""loregate's domain core: pure rules, storage and the adapters they need (embedders, LLM).

Nothing here imports from `api`, `activities`, `workflows` or `policy`.
"""
