"""Eval definitions (`evals/*.yaml`): which scenarios, budgets, summary prompts and
strategies to run, on which model. Paths in an eval file are relative to that file."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import importlib
import inspect
import re
import sys
import types
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from .compaction import STRATEGIES, StrategySpec, custom_strategy, is_contextual
from .inputs import InputError, load_yaml
from .models import default_summary_layout
from .scenario import Scenario, load_scenario



def _budget(value: Any) -> str:
    text = str(value).strip() if isinstance(value, (int, str)) and not isinstance(value, bool) else ""
    if re.fullmatch(r"[1-9]\d*", text):
        return text
    if re.fullmatch(r"\d+(\.\d+)?%", text) and 0 < float(text[:-1]) <= 100:
        return text
    raise ValueError(f"a budget is a positive number of units (1200) or a percentage up to 100 ('40%'), "
                     f"not {value!r}")


Budget = Annotated[str, BeforeValidator(_budget)]


class ProbeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_tokens: int = Field(default=96, ge=1, description="Token limit of each probe answer.")
    sample: int | None = Field(default=None, ge=1, description="Probe a random sample of this many facts "
                                                               "per scenario (the same sample in every case).")
    seed: int = Field(default=0, description="Which sample `sample` draws.")


class GateSettings(BaseModel):
    """When `harness gate` fails a candidate; flags override each value."""

    model_config = ConfigDict(extra="forbid")
    max_drop: float = Field(default=0.05, ge=0, le=1, description="Largest tolerated drop in recall.")
    alpha: float = Field(default=0.05, gt=0, lt=1, description="Significance level of the paired test.")
    floor: float = Field(default=0.0, ge=0, le=1, description="Recall under this fails outright.")
    max_error_rate: float = Field(default=0.1, ge=0, le=1, description="More errors than this: cannot judge.")
    max_summary_growth: float = Field(
        default=0.25, ge=0, description="Fail when the candidate's median summary is this much longer (in "
                                        "tokens) than the baseline's: keeping facts by not compressing is no gain.")
    power: float = Field(default=0.8, gt=0, lt=1, description="The power at which the minimum detectable drop is "
                                                             "computed; an eval that cannot detect `max_drop` "
                                                             "at this power cannot pass.")


class Prices(BaseModel):
    """What the model costs, in any currency per million tokens; no price is built in."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0, description="Per million input tokens, sent one request at a time.")
    output: float = Field(ge=0, description="Per million output tokens, sent one request at a time.")
    batch_input: float | None = Field(default=None, ge=0, description="Per million input tokens in a batch "
                                                                      "(default: half of `input`, as Anthropic bills).")
    batch_output: float | None = Field(default=None, ge=0, description="Per million output tokens in a batch "
                                                                       "(default: half of `output`).")


class EvalFile(BaseModel):
    """The eval file format; `harness schema eval` prints it as JSON Schema."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    scenarios: list[str] = Field(min_length=1, description="Scenario files or globs.")
    model: str = Field(default="local", description="local, a .gguf path, claude-..., or a name for base_url.")
    base_url: str | None = Field(default=None, description="Another Anthropic-compatible server.")
    budgets: list[Budget] = Field(min_length=1, description="Absolute (1200) or a share of each scenario's history ('50%').")
    unit: Literal["chars", "tokens"] = "chars"
    prompts: list[str] = Field(default=[], description="Summary prompt files (one per variant).")
    strategies: list[str] = Field(default=["summary", "none", "no-history"], min_length=1,
                                  description="summary, none, truncate, no-history, or module:function.")
    max_turns: int | None = Field(
        default=None, ge=1, description="Play only each scenario's first N turns; facts planted later are not "
                                        "probed and percentage budgets are shares of what is played.")
    scenario_ids: list[str] | None = Field(
        default=None, min_length=1, description="Run only these scenarios (by id): try an eval cheaply first.")
    prompt_ids: list[str] | None = Field(
        default=None, min_length=1, description="Run only these summary prompts (by id, the file name without .txt).")
    limit: int | None = Field(default=None, ge=1, description="Run only the first N cases of the plan.")
    keep_recent: int = Field(default=1, ge=0)
    repeats: int = Field(default=1, ge=1)
    temperature: float = Field(default=0.0, ge=0, le=2)
    summary_max_tokens: int = Field(default=512, ge=1)
    summary_transcript_chars: int | None = Field(
        default=None, ge=1000, description="Longest transcript per summary request; longer ones fold in chunks. "
                                           "Set it to fit the model's context window.")
    reply_max_tokens: int = Field(default=200, ge=1, description="Token limit of live agent replies.")
    summary_layout: Literal["system", "transcript-first"] | None = Field(
        default=None, description="system: the seed's request (prompt as system, transcript as the user turn); "
                                  "transcript-first: one user turn, the delimited transcript then the prompt. "
                                  "Default: transcript-first on the embedded model (it follows summary prompts "
                                  "measurably better so), system elsewhere.")
    sampling: dict[str, float | int | bool | str] = Field(
        default={}, description="Extra sampling settings sent with every request (for llama.cpp, e.g. "
                                "repeat_penalty, dry_multiplier); part of the model's identity for caching and gating.")
    probes: bool = Field(default=True, description="false: measure summary retention only, with no probe questions "
                                                   "(several times cheaper).")
    control_prompt: str | None = Field(
        default=None, description="A summary prompt that keeps nothing, run beside the others: reports show "
                                  "prompt sensitivity, the best prompt's retention minus this one's.")
    batch: bool = Field(default=False, description="Run on the Message Batches API, all cases together in waves "
                                                   "(Claude, or a base_url that serves /v1/messages/batches).")
    batch_poll_seconds: float = Field(default=1.0, gt=0, description="First wait between two looks at a batch in "
                                                                    "flight; it grows 1.5x a time to 60 s at most.")
    prices: Prices | None = Field(default=None, description="Prices per million tokens, for `harness plan`.")
    probe: ProbeSettings = ProbeSettings()
    gate: GateSettings = GateSettings()

    @field_validator("strategies")
    @classmethod
    def _known_strategies(cls, strategies: list[str]) -> list[str]:
        for name in strategies:
            if name not in STRATEGIES and not re.fullmatch(r"[\w.]+:\w+", name):
                raise ValueError(f"unknown strategy {name!r}: use one of {', '.join(STRATEGIES)} "
                                 "or module:function")
        return strategies


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str
    path: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]


@dataclass
class Eval:
    """An eval file resolved: scenarios loaded, prompts read, strategies importable."""

    spec: EvalFile
    path: Path
    scenarios: list[Scenario]
    prompts: list[Prompt]
    custom: dict[str, Callable]  # module:function strategies, imported only when named
    control: str | None = None  # id of the keeps-nothing control prompt, one of `prompts`

    def strategy(self, name: str) -> StrategySpec:
        return custom_strategy(name, self.custom[name]) if name in self.custom else STRATEGIES[name]

    @property
    def repeats(self) -> int:
        """Repeats that can differ: at temperature 0 they would be copies of one answer."""
        return self.spec.repeats if self.spec.temperature > 0 else 1


def _read_prompt(name: str, base: Path, origin: Path, line: int | None, field: str) -> Prompt:
    path = base / name
    if not path.is_file():
        raise InputError(origin, f"summary prompt file {name!r} not found (looked for {path})", line, field)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError as exc:
        raise InputError(origin, f"summary prompt file {name!r} is not UTF-8 text ({exc.reason} at byte "
                                 f"{exc.start})", line, field) from None
    if not text:
        raise InputError(path, "summary prompt file is empty")
    return Prompt(path.stem, text, str(path))


SEED_PARAMETERS = ("messages", "client", "output_stream", "context_limit")
CONTEXT_PARAMETERS = ("messages", "context")


def _import_strategy(name: str, origin: Path, line: int | None, field: str) -> Callable:
    """A user's `module:function`, from where they run the harness or beside the eval file, checked
    to take the seed's compaction arguments before anything runs."""
    module_name, function_name = name.split(":")
    for folder in (str(Path.cwd()), str(origin.parent.resolve())):
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # whatever its import prints must not mix into our output
            function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as exc:
        raise InputError(origin, f"cannot import strategy {name!r}: {exc}", line, field) from None
    except Exception as exc:  # a syntax error or a failure inside the user's module
        raise InputError(origin, f"importing strategy {name!r} failed: {type(exc).__name__}: {exc}",
                         line, field) from None
    if not callable(function):
        raise InputError(origin, f"strategy {name!r} is not a function", line, field)
    try:
        inspect.signature(function).bind(*(CONTEXT_PARAMETERS if is_contextual(function) else SEED_PARAMETERS))
    except (TypeError, ValueError) as exc:
        raise InputError(origin, f"strategy {name!r} is not a compaction function ({exc}): it must take "
                                 f"({', '.join(CONTEXT_PARAMETERS)}) or ({', '.join(SEED_PARAMETERS)}) and return "
                                 "the new messages", line, field) from None
    return function


def provenance(function: Callable) -> dict[str, Any]:
    """Where a custom strategy came from, for the manifest: its module's file and source hash, and
    the versions of the installed packages the module uses."""
    module = inspect.getmodule(function)
    path = Path(getattr(module, "__file__", "") or "")
    used = {(value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None) or "")
            .split(".")[0] for value in vars(module).values()} if module else set()
    distributions = metadata.packages_distributions()
    versions = {}
    for package in sorted(used & set(distributions)):
        for distribution in distributions[package]:
            versions[distribution] = metadata.version(distribution)
    return {"module": module.__name__ if module else None, "path": str(path) if path.is_file() else None,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None,
            "packages": versions}


def _chosen(doc: Any, field: str, noun: str, wanted: list[str] | None, existing: list[str],
            flag: str | None) -> list[str]:
    """The ids a subset names (all when none is named); an unknown one is an error listing what
    exists, naming the flag it came from, or else the eval file's field."""
    for name in wanted or []:
        if name not in existing:
            message = f"no {noun} {name!r} in this eval (it has: {', '.join(existing)})"
            raise InputError(flag, message) if flag else doc.error((field,), message)
    return wanted or existing


def load_eval(path: str | Path, *, prompts: list[str] | None = None, model: str | None = None,
              budgets: list[str] | None = None, repeats: int | None = None, probes: bool | None = None,
              control: bool = True, scenario_ids: list[str] | None = None, prompt_ids: list[str] | None = None,
              limit: int | None = None, batch: bool | None = None, prices: dict[str, float] | None = None) -> Eval:
    """Read and check an eval file; keyword arguments are command-line overrides. `control`: False
    leaves out the keeps-nothing control prompt (a gate's candidate run needs only the baseline's)."""
    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise InputError(path, "an eval is a mapping with name, scenarios and budgets", 1)
    overrides = {k: v for k, v in dict(prompts=prompts, model=model, budgets=budgets, repeats=repeats,
                                       probes=probes, scenario_ids=scenario_ids, prompt_ids=prompt_ids,
                                       limit=limit, batch=batch or None).items() if v is not None}
    if prices:  # flags override the file's prices one by one
        written = doc.data.get("prices")
        doc.data["prices"] = {**(written if isinstance(written, dict) else {}), **prices}
    doc.data.update(overrides)
    spec = doc.validate(EvalFile)
    if spec.summary_layout is None:  # resolved here, so the manifest records what was run
        spec.summary_layout = default_summary_layout(spec.model, spec.base_url)
    base = doc.path.parent

    scenario_paths: list[Path] = []
    for i, pattern in enumerate(spec.scenarios):
        matches = sorted(glob.glob(str(base / pattern))) if glob.has_magic(pattern) else [str(base / pattern)]
        if not matches or not Path(matches[0]).is_file():
            raise doc.error(("scenarios", i), f"no scenario file matches {pattern!r}")
        scenario_paths += [Path(m) for m in matches if Path(m) not in scenario_paths]
    scenarios = [load_scenario(p) for p in scenario_paths]
    if spec.max_turns:
        # A prefix of a valid scenario is valid: facts and supersessions only look backwards.
        scenarios = [s.model_copy(update={"turns": s.turns[:spec.max_turns]}) for s in scenarios]
    seen: dict[str, Path] = {}
    for p, scenario in zip(scenario_paths, scenarios):
        if scenario.id in seen:
            raise InputError(p, f"scenario id {scenario.id!r} is also used by {seen[scenario.id]}", None, "id")
        seen[scenario.id] = p
    chosen = _chosen(doc, "scenario_ids", "scenario", spec.scenario_ids, list(seen), scenario_ids and "--scenario")
    scenarios = [s for s in scenarios if s.id in chosen]

    # Command-line prompt files are relative to where the user stands, not to the eval file.
    prompt_base = Path.cwd() if prompts is not None else base
    loaded = [_read_prompt(p, prompt_base, doc.path, doc.line_of(("prompts", i)), f"prompts[{i}]")
              for i, p in enumerate(spec.prompts)]
    control = _read_prompt(spec.control_prompt, base, doc.path, doc.line_of(("control_prompt",)),
                           "control_prompt") if control and spec.control_prompt else None
    if control and control.id not in [p.id for p in loaded]:
        loaded.append(control)
    needs_prompt = [s for s in spec.strategies if s in STRATEGIES and STRATEGIES[s].uses_prompt]
    if needs_prompt and not loaded:
        raise doc.error(("prompts",), f"the {needs_prompt[0]} strategy needs at least one prompt file")
    ids = [p.id for p in loaded]
    if len(set(ids)) != len(ids):
        raise doc.error(("prompts",), "two prompt files share a name; prompts are identified by file name")
    chosen = _chosen(doc, "prompt_ids", "prompt", spec.prompt_ids, [i for i in ids if i != (control and control.id)],
                     prompt_ids and "--prompt-id")
    loaded = [p for p in loaded if p.id in chosen or p.id == (control and control.id)]
    custom = {s: _import_strategy(s, doc.path, doc.line_of(("strategies", i)), f"strategies[{i}]")
              for i, s in enumerate(spec.strategies) if s not in STRATEGIES}
    return Eval(spec, doc.path, scenarios, loaded, custom, control and control.id)
