"""`manifest.json`: what a run ran, on what, when; read back with `load_manifest`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ..errors import InputError, describe_error
from .folder import write_atomic


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
    judge_calibration: dict[str, Any] | None = None  # the judge on labelled answers: accepts wrong, rejects right
    versions: dict[str, str] = {}
    strategies: dict[str, dict[str, Any]] = {}  # custom ones: module, path, sha256, the packages it uses
    started: str | None = None
    finished: str | None = None
    model_calls: int | None = None  # requests really sent (not cached), over every process that ran it
    # requests identical to the gated baseline's, answered by its recorded responses (a gate's candidate)
    answered_by_baseline: int | None = None
    waves: int | None = None  # batch execution: waves sent, over every process that ran it
    batches: list[str] = []  # batch execution: the provider's ids of every batch the run submitted
    wave_seconds: list[float] = []  # batch execution: each wave's wait, from submission to results

    @field_validator("eval")
    @classmethod
    def _named(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("name"), str):
            raise ValueError("the eval as run has no name")
        return value

    @property
    def name(self) -> str:
        return str(self.eval["name"])

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
