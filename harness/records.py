"""The run folder: the contract between running an eval and analysing it.

`run` writes a run folder through `RunFolder`, one typed record per line; `report`, `compare` and
`gate` read it through the loaders here, without importing the runner, the agent or any model SDK.
The record types below are the one description of every field. Files:

- `records.jsonl`: one `ProbeRecord` per probe;
- `retention.jsonl`: one `RetentionRecord` per compaction per fact folded so far;
- `compactions.jsonl`: one `CompactionRecord` per compaction;
- `scenarios.jsonl`: each scenario's turns as text (what the report's fact explorer shows);
- `cases.jsonl`: finished cases (what `--resume` skips); `manifest.json`: the `Manifest`.

Lines are appended and synced before a case is marked finished, so a resumed run drops the lines
of an unfinished case (and a half-written last line) and redoes it: nothing lost or doubled.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import socket
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .compaction import STRATEGIES, CompactionEvent, strategy_spec
from .inputs import InputError, describe_error
from .score import VERDICTS

CEILING, NO_HISTORY = STRATEGIES["none"].label, STRATEGIES["no-history"].label
CONTROLS = tuple(spec.label for spec in STRATEGIES.values() if spec.control)
METRICS = ("retention", "recall")  # does the summary state the fact; does the probe answer


# --- records -----------------------------------------------------------------------------


@dataclass(kw_only=True)
class CaseRow:
    """The case a line belongs to; every line of every records file starts with these."""

    case: str  # scenario/strategy/budget/prompt/repeat
    scenario: str
    strategy: str  # a name of `compaction.STRATEGIES`, or a custom `module:function`
    budget: str | None  # as written in the eval ("1200" or "40%"); None: the strategy ignores budgets
    prompt: str | None  # summary prompt id; None: the strategy takes no prompt
    prompt_hash: str | None = None
    repeat: int = 0
    model: str | None = None  # the client's identity
    unit: str | None = None  # the budget's unit: chars or tokens


@dataclass(kw_only=True)
class ProbeRecord(CaseRow):
    """One probe: a fact asked about after the case was played, and how the answer scored."""

    fact: str
    kind: str
    question: str | None = None  # the probe as asked
    planted_turn: int
    changed_turn: int  # the turn that set the value probed (the planting turn unless superseded)
    superseded: bool
    literal: bool  # false: the answer paraphrases the conversation (imported benchmarks)
    expected: str | None  # None: the right outcome is to abstain
    verdict: str  # one of `score.VERDICTS`
    error: str | None = None  # why the probe or its case failed (verdict `error`)
    limit: int | None = None  # the budget resolved in units; None: never compacts (or failed)
    location: str | None = None  # at probe time: verbatim, summary, gone; none (no history)
    compactions: int | None = None  # compactions that folded the fact
    in_summary: bool | None = None  # the last summary states the value; None: no summary
    answer: str | None = None
    f1: float | None = None  # the matcher's graded score (token F1 for `match: f1`), else None
    judge: bool | None = None  # the judge's word on an answer the matcher scored `forgot`
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    latency_s: float | None = None
    cached: bool | None = None  # every call of the probe came from the response cache


@dataclass(kw_only=True)
class RetentionRecord(CaseRow):
    """After one compaction, one fact folded so far: does the summary state its current value?"""

    fact: str
    kind: str
    retained: bool | None  # of its subject, when it has one; None: unknown (or the case failed)
    error: str | None = None  # set when the case failed
    compaction: int | None = None  # index of the compaction in the case's compaction records
    before_turn: int | None = None  # the compaction ran before this turn
    value_turn: int | None = None  # the turn that set the value checked
    expected: str | None = None


@dataclass(kw_only=True)
class CompactionRecord(CaseRow):
    """One compaction: where it ran in the case, and what the strategy reported (the fields of
    `compaction.CompactionEvent`, written on the same line)."""

    before_turn: int
    first_verbatim_turn: int  # turns before this one are no longer verbatim in the history
    event: CompactionEvent

    def row(self) -> dict[str, Any]:
        line = asdict(self)
        event = line.pop("event")
        return {**line, **event}


Record = ProbeRecord | RetentionRecord | CompactionRecord


def _row(record: Record) -> dict[str, Any]:
    return record.row() if isinstance(record, CompactionRecord) else asdict(record)


def _columns(record_type: type) -> list[str]:
    names = [f.name for f in fields(record_type) if f.name != "event"]
    return names + ([f.name for f in fields(CompactionEvent) if f.name not in names]
                    if record_type is CompactionRecord else [])


class PromptInfo(BaseModel):
    id: str
    path: str | None = None
    hash: str | None = None


EXECUTION_SETTINGS = ("batch", "prices")


class Manifest(BaseModel):
    """`manifest.json`: what was run, on what, when."""

    model_config = ConfigDict(extra="ignore")
    eval: dict[str, Any]  # the eval file as run; it has a `name` (`config.EvalFile`, every setting written out)
    model: str  # the client's identity
    eval_file: str | None = None
    scenarios: list[str] = []
    prompts: list[PromptInfo] = []
    control_prompt: str | None = None  # the keeps-nothing prompt id, when the eval has one
    sampling: dict[str, Any] | None = None
    judge: str | None = None
    versions: dict[str, str] = {}
    strategies: dict[str, dict[str, Any]] = {}  # custom ones: module, path, sha256, the packages it uses
    started: str | None = None
    finished: str | None = None
    model_calls: int | None = None  # requests really sent (not cached), over every process that ran it
    waves: int | None = None  # batch execution: waves sent, over every process that ran it
    batches: list[str] = []  # batch execution: the provider's ids of every batch the run submitted

    @field_validator("eval")
    @classmethod
    def _named(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("name"), str):
            raise ValueError("the eval as run has no name")
        return value

    @property
    def name(self) -> str:
        return self.eval["name"]

    @property
    def unfinished(self) -> bool:
        """Started but not finished: killed, or still running; its numbers are partial."""
        return self.started is not None and self.finished is None

    def setting(self, key: str, default: Any = None) -> Any:
        """An eval setting as run (`default` for runs made before the setting existed)."""
        return self.eval.get(key, default)

    def same_experiment(self, other: Manifest) -> bool:
        """Same eval, prompts, model and sampling: a run that may be resumed with this one."""
        keys = {"eval", "prompts", "model", "sampling"}
        mine, theirs = self.model_dump(include=keys), other.model_dump(include=keys)
        for about in (mine, theirs):  # how it is executed and priced does not change what is measured
            about["eval"] = {k: v for k, v in about["eval"].items() if k not in EXECUTION_SETTINGS}
        return mine == theirs

    def write(self, folder: Path) -> None:
        write_atomic(folder / "manifest.json", self.model_dump_json(indent=2))


def _append_lines(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    with path.open("a", encoding="utf-8") as file:
        file.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
        file.flush()
        os.fsync(file.fileno())


def read_jsonl(path: Path) -> list[dict]:
    """Complete lines only: a line cut short by a crash is ignored."""
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            if line.endswith("\n"):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # atomic: the old file or the new one, never half of each


def _rewrite(path: Path, rows: list[dict]) -> None:
    write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


class RunFolder:
    def __init__(self, path: Path):
        self.path = path
        self.records, self.compactions, self.retention, self.cases = (
            path / "records.jsonl", path / "compactions.jsonl", path / "retention.jsonl", path / "cases.jsonl")

    @classmethod
    def new(cls, runs: Path, name: str) -> RunFolder:
        """`<runs>/<name>-<timestamp>`, with a suffix when another run started in the same second."""
        runs.mkdir(parents=True, exist_ok=True)
        stem = f"{name}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
        for attempt in range(1, 1000):
            path = runs / (stem if attempt == 1 else f"{stem}-{attempt}")
            try:
                path.mkdir()  # atomic: two runs never share a folder
                return cls(path)
            except FileExistsError:
                continue
        raise FileExistsError(f"{runs}: too many runs named {stem}")

    @contextlib.contextmanager
    def locked(self):
        """Hold the folder for this process: a second process (a `--resume` while the run is still
        going) is refused, naming the holder. The OS releases the lock when the holder exits, even
        when it is killed, so a crashed run can always be resumed."""
        path = self.path / "run.lock"
        with path.open("a+", encoding="utf-8") as file:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                file.seek(0)
                raise InputError(self.path, f"in use by another run ({file.read().strip() or 'unknown process'}); "
                                            "wait for it to finish or stop it, then --resume") from None
            file.truncate(0)
            file.write(f"process {os.getpid()} on {socket.gethostname()}, since {dt.datetime.now():%Y-%m-%d %H:%M:%S}")
            file.flush()
            yield self

    def finished_cases(self) -> set[str]:
        """Cases marked finished; lines of any other case are dropped, to be redone."""
        done = {row["case"] for row in read_jsonl(self.cases)}
        for path in (self.records, self.compactions, self.retention):
            _rewrite(path, [r for r in read_jsonl(path) if r["case"] in done])
        _rewrite(self.cases, [{"case": c} for c in sorted(done)])
        return done

    def write_scenarios(self, turns: dict[str, list[str]]) -> None:
        """Each scenario's turns as text, for reports that show where a fact was planted."""
        write_atomic(self.path / "scenarios.jsonl", "".join(
            json.dumps({"scenario": s, "turns": texts}, ensure_ascii=False) + "\n" for s, texts in turns.items()))

    def write_case(self, case_id: str, records: list[ProbeRecord], compactions: list[CompactionRecord],
                   retention: list[RetentionRecord]) -> None:
        for path, rows in ((self.records, records), (self.compactions, compactions), (self.retention, retention)):
            _append_lines(path, [_row(r) for r in rows])
        _append_lines(self.cases, [{"case": case_id}])

    # The batch journal (`batches.jsonl`): each batch is written down as soon as the provider
    # accepts it and again when its results are in, so a resumed run collects the ones in flight.

    def submitted(self, batch_id: str, custom_ids: list[str]) -> None:
        _append_lines(self.path / "batches.jsonl", [{"batch": batch_id, "custom_ids": custom_ids}])

    def collected(self, batch_id: str) -> None:
        _append_lines(self.path / "batches.jsonl", [{"batch": batch_id, "collected": True}])

    def in_flight(self) -> list[tuple[str, list[str]]]:
        """Batches submitted and never collected, in submission order."""
        rows = read_jsonl(self.path / "batches.jsonl")
        collected = {row["batch"] for row in rows if row.get("collected")}
        return [(row["batch"], row["custom_ids"]) for row in rows
                if "custom_ids" in row and row["batch"] not in collected]


# --- loading, for analysis -----------------------------------------------------------------


def _labelled(rows: list[dict], record_type: type) -> pd.DataFrame:
    columns = _columns(record_type)
    # Every field is a column, also for files written before the field existed.
    df = pd.DataFrame(rows).reindex(columns=list(dict.fromkeys([*columns, *(rows[0] if rows else [])])))
    # One label per row of the main table: a summary prompt, or a strategy without one.
    df["variant"] = [strategy_spec(s).variant(p if isinstance(p, str) else None)  # pandas holds no prompt as NaN
                     for s, p in zip(df["strategy"], df["prompt"])]
    return df


def read_rows(run_dir: str | Path, name: str) -> list[dict]:
    """The lines of one records file, for analysis: every line must be a JSON record (else an
    error names the file and line); only the last line of an unfinished run may be
    cut short. Lines of cases not marked finished (a run still going, or killed) are left out, so
    half a case is never reported as if it were whole."""
    path = Path(run_dir) / name
    if not path.exists():
        return []
    rows = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    for number, line in enumerate(lines, 1):
        if not line.endswith("\n") and number == len(lines):
            break  # cut short by a crash: its case is unfinished
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"not a JSON record ({exc.msg})", number) from None
        if not isinstance(row, dict):
            raise InputError(path, f"not a record (a JSON object), but {type(row).__name__}", number)
        if name == "records.jsonl" and row.get("verdict") not in VERDICTS:
            raise InputError(path, f"verdict {row.get('verdict')!r} is none of {', '.join(VERDICTS)}", number, "verdict")
        rows.append(row)
    cases = Path(run_dir) / "cases.jsonl"
    if cases.exists():  # a run folder; a baseline keeps finished cases only
        finished = {row["case"] for row in read_jsonl(cases)}
        rows = [row for row in rows if row.get("case") in finished]
    return rows


def load_records(run_dir: str | Path) -> pd.DataFrame:
    """Probe records (empty for a run without probes)."""
    if not (Path(run_dir) / "records.jsonl").is_file() and not (Path(run_dir) / "retention.jsonl").is_file():
        raise FileNotFoundError(f"{run_dir}: no records (is this a run folder?)")
    records = _labelled(read_rows(run_dir, "records.jsonl"), ProbeRecord)
    # Runs written before `expected: null` marked abstain facts with this text.
    records.loc[records["expected"] == "(abstain)", "expected"] = None
    return records


def load_retention(run_dir: str | Path) -> pd.DataFrame:
    """Retention rows: per compaction, per fact folded so far, whether the summary states it."""
    return _labelled(read_rows(run_dir, "retention.jsonl"), RetentionRecord)


def load_compactions(run_dir: str | Path) -> pd.DataFrame:
    return _labelled(read_rows(run_dir, "compactions.jsonl"), CompactionRecord)


def failed(rows: pd.DataFrame, metric: str) -> pd.Series:
    """Which rows of a metric failed with an error (a model, API, scoring or strategy failure)."""
    return rows["error"].notna() if metric == "retention" else rows["verdict"] == "error"


def prompted(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of the strategies that take a summary prompt (built-in or custom: their rows carry
    one): where prompts are compared."""
    return rows[rows["prompt"].notna()] if not rows.empty else rows


def summaries(compactions: pd.DataFrame) -> pd.DataFrame:
    """Compactions that produced a summary, each with its `ratio` of size after to size before."""
    made = compactions[compactions["summary"].notna()]
    return made.assign(ratio=made["size_after"] / made["size_before"])


def budget_order(budget: str) -> tuple[bool, float]:
    """Sort key of budgets as written: absolute ones first, each kind by size."""
    return (budget.endswith("%"), float(budget.rstrip("%")))


def load_manifest(run_dir: str | Path) -> Manifest:
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        raise InputError(run_dir, "not a run folder (no manifest.json)")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        return Manifest.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not JSON ({exc.msg})", exc.lineno) from None
    except ValidationError as exc:
        error = exc.errors()[0]
        raise InputError(path, describe_error(error), None, ".".join(map(str, error["loc"]))) from None


@dataclass
class Run:
    """A run folder read once: its records, compactions, retention and manifest."""

    records: pd.DataFrame
    compactions: pd.DataFrame
    retention: pd.DataFrame
    about: Manifest
    turns: dict[str, list[str]] = field(default_factory=dict)  # per scenario; empty for older runs

    def rows(self, metric: str) -> pd.DataFrame:
        """The rows a metric is computed from: retention rows, or probe records for recall."""
        return self.retention if metric == "retention" else self.records

    def errors(self) -> tuple[int, int]:
        """Observations (probe records and retention rows) that failed with an error, of all."""
        return (int(failed(self.records, "recall").sum()) + int(failed(self.retention, "retention").sum()),
                len(self.records) + len(self.retention))

    def prompts(self, strategy: str | None = None) -> list[str]:
        """The prompt ids one strategy ran with (None: any strategy that takes a prompt), in either
        metric's rows."""
        data = pd.concat([prompted(self.records), prompted(self.retention)])
        if strategy is not None:
            data = data[data["strategy"] == strategy]
        return sorted(data["prompt"].dropna().unique())


def load_run(run_dir: str | Path) -> Run:
    turns = {row["scenario"]: row["turns"] for row in read_jsonl(Path(run_dir) / "scenarios.jsonl")
             if isinstance(row, dict) and isinstance(row.get("turns"), list)}
    return Run(load_records(run_dir), load_compactions(run_dir), load_retention(run_dir), load_manifest(run_dir),
               turns)
