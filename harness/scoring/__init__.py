"""Deterministic scoring: does a text state a fact's value? Text normalisation (`normalize`), the
matchers a fact's `match:` chooses (`matchers`, with LoCoMo's own scoring in `locomo`) and probe
verdicts (`verdict`). Imports nothing else of the harness: scenario validation, the runner and
the analysis all score with this one yardstick."""
