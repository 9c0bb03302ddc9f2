"""How two statements' wording is compared: pure rules, no I/O.

- `canonical`: one spelling of what a statement says (aliases, loanwords, units, spelt-out numbers) and
  what it names (tools, products, identifiers).
- `differences`: why two near-identical statements still say different things (another value, unit,
  negation, opposite term, choice, owner or name); `material_difference` is what deduplication and the
  contradiction judges (governance/supersession.py) ask.
- `order`: word order that changes a statement (two words exchanging roles, a moved qualifier, a long
  reordering).
- `subjects`: the same said of two different subjects ("web-4" beside "web-3"): another fact, which neither
  supersedes nor merges with the first.
"""
