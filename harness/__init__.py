"""Compaction lossiness harness: plants facts in scripted agent conversations, drives the real
agent through compaction, probes each fact and scores what the summaries kept.

The packages follow the data's path (see docs/layout.md): `inputs` (scenario and eval files,
importers, generators), `compaction` (strategies), `models` (the Messages API client, backends,
cache, batches), `execution` (the agent, the case runner, executors), `records` (the run folder),
`analysis` (rates, paired tests, the gate), `reports` (tables, plots, the explorer) and `cli`.
"""
