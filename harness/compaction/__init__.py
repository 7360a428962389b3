"""Compaction strategies: the seed's (`seed`: fold old exchanges into a model-written summary, or
drop them), users' own functions (`custom`), and the registry an eval file's names resolve
through (`registry`). A strategy takes a history and returns the compacted one, reporting each
compaction as a `records.schema.CompactionEvent`."""
