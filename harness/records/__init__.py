"""The run folder: the contract between running an eval and analysing it.

`execution` writes a run folder through `RunFolder`, one typed record per line (`schema`: the one
description of every field); `analysis` and `reports` read it through `load_run`, without
importing the runner, the agent or any model SDK. Files: `records.jsonl` (one `ProbeRecord` per
probe), `retention.jsonl` (one `RetentionRecord` per compaction per fact folded so far),
`compactions.jsonl` (one `CompactionRecord` per compaction), `actions.jsonl` (one `ActionRecord`
per cut whose next step is measured), `action_probes.jsonl` (one `ActionProbeRecord` per action
probe), `scenarios.jsonl` (each scenario's turns as text), `cases.jsonl` (finished cases, what
`--resume` skips), `manifest.json`.
"""

from .folder import RunFolder, read_jsonl
from .load import Run, load_compactions, load_records, load_retention, load_run
from .manifest import Manifest, load_manifest

__all__ = [
    "Manifest",
    "Run",
    "RunFolder",
    "load_compactions",
    "load_manifest",
    "load_records",
    "load_retention",
    "load_run",
    "read_jsonl",
]
