"""The outside world behind small protocols: text embedders, the LLM cognifier, the LLM contradiction judge.

Each adapter is built by one factory from `Settings` (`make_embedder`, `make_llm`, `make_judge`) and says
itself whether its calls block (`blocking`), so callers never test for concrete classes. The pure rules in
`governance/` define the protocols and never import this package.
"""
