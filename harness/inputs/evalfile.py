"""Eval files (`evals/*.yaml`): which scenarios, budgets, summary prompts and strategies to run, on
which model, and when the gate fails a candidate. Paths in an eval file are relative to that file.

`read_eval` reads a file into an `EvalSource`: settings checked, scenario files found and loaded,
prompt files read, subsets applied. Strategies stay names here: binding them to compaction
functions is the runner's step (`execution.evals`).
"""

from __future__ import annotations

import glob
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    StrictFloat,
    StrictInt,
    WithJsonSchema,
)

from ..budget import Budget
from ..errors import InputError
from ..messages import SummaryLayout
from .files import LocatedYaml, load_yaml, shipped, shipped_prompt_names
from .scenario import Scenario
from .scenario_file import load_scenario

# Checked and parsed once, here; a flag's value goes through the same field (`read_eval`).
BudgetField = Annotated[
    Budget,
    PlainValidator(Budget.parse),
    PlainSerializer(str),
    WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
]


def _strategy_name(name: str) -> str:
    # Which names exist is checked when the strategies are bound (`execution.evals`).
    if not re.fullmatch(r"([a-z][a-z0-9-]*|[\w.]+:\w+)(\+pin)?(\+recovery)?", name):
        raise ValueError(
            "a strategy is a name such as summary, or module:function, optionally +pin and then +recovery, "
            f"not {name!r}"
        )
    return name


class RecoverySettings(BaseModel):
    """The recovery arm (`<strategy>+recovery`): the agent may search what compaction folded before
    it answers a probe or takes its next step (docs/frameworks.md)."""

    model_config = ConfigDict(extra="forbid")
    max_searches: StrictInt = Field(default=3, ge=1, description="Searches allowed before each answer or step.")
    results: StrictInt = Field(default=3, ge=1, description="Passages a search returns, best first.")
    snippet_tokens: StrictInt = Field(
        default=48, ge=8, le=64, description="About how many words of each passage, around its matches."
    )


class ProbeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_tokens: StrictInt = Field(default=96, ge=1, description="Token limit of each probe answer.")
    sample: StrictInt | None = Field(
        default=None,
        ge=1,
        description="Probe a random sample of this many facts per scenario (the same sample in every case).",
    )
    seed: StrictInt = Field(default=0, description="Which sample `sample` draws.")


class GateSettings(BaseModel):
    """When `harness gate` fails a candidate; flags override each value."""

    model_config = ConfigDict(extra="forbid")
    max_drop: StrictFloat = Field(
        default=0.05, ge=0, le=1, description="Largest tolerated drop in retention or recall (if significant)."
    )
    alpha: StrictFloat = Field(default=0.05, gt=0, lt=1, description="Significance level of the paired test.")
    floor: StrictFloat = Field(default=0.0, ge=0, le=1, description="Retention or recall under this fails outright.")
    max_kind_drop: StrictFloat = Field(
        default=0.25,
        ge=0,
        le=1,
        description="Largest tolerated drop in one kind of fact's rate (the files changed, "
        "the plan, ...), tested at alpha over the number of kinds.",
    )
    max_error_rate: StrictFloat = Field(default=0.1, ge=0, le=1, description="More errors than this: cannot judge.")
    max_summary_growth: StrictFloat = Field(
        default=0.25,
        ge=0,
        description="Fail when the candidate's median summary is this much longer (in "
        "tokens) than the baseline's: keeping facts by not compressing is no gain.",
    )
    max_cap_increase: StrictFloat = Field(
        default=0.10,
        ge=0,
        le=1,
        description="Fail when the share of the candidate's summaries that stop at their "
        "token cap (summary_max_tokens) exceeds the baseline's by more than this.",
    )
    power: StrictFloat = Field(
        default=0.8,
        gt=0,
        lt=1,
        description="The power at which the minimum detectable drop is "
        "computed; an eval that cannot detect `max_drop` "
        "at this power cannot pass.",
    )


class NextActionSettings(BaseModel):
    """Next-action fidelity: at every compaction where the agent's next step is a step of the log, ask
    the model for its next step from the compacted history and from the full one (the ceiling, twice:
    the second sample is the noise floor), with the scenario's tools; no tool is run."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = Field(
        default=False,
        description="Measure it (three more requests a cut, the ceiling's shared by "
        "every prompt and budget through the response cache).",
    )
    temperature: StrictFloat | None = Field(
        default=None,
        ge=0,
        le=2,
        description="Sampling temperature of these requests (default: the eval's). At 0 "
        "the two ceiling samples differ only by the server's nondeterminism; "
        "above it the floor is the agent's own variability.",
    )
    max_tokens: StrictInt = Field(default=160, ge=1, description="Token limit of each next-step reply.")


def _next_action(value: Any) -> Any:
    return {"enabled": value} if isinstance(value, bool) else value  # `next_action: true` is enough


class ToolResultSettings(BaseModel):
    """What mask-observations, clear-tool-results and anthropic-context-editing keep (the fields of
    Anthropic's `clear_tool_uses_20250919` edit)."""

    model_config = ConfigDict(extra="forbid")
    keep: StrictInt = Field(default=3, ge=0, description="The most recent tool uses whose results stay.")
    exclude_tools: list[str] = Field(default=[], description="Tools whose results are never cleared.")
    clear_tool_inputs: bool | list[str] = Field(
        default=False, description="Also clear the inputs of cleared calls: true for all, or a list of tool names."
    )
    clear_at_least: StrictInt = Field(
        default=0, ge=0, description="Clear only when at least this many units (the eval's unit) would go."
    )


class Prices(BaseModel):
    """What the model costs, in any currency per million tokens; no price is built in."""

    model_config = ConfigDict(extra="forbid")
    input: StrictFloat = Field(ge=0, description="Per million input tokens, sent one request at a time.")
    output: StrictFloat = Field(ge=0, description="Per million output tokens, sent one request at a time.")
    batch_input: StrictFloat | None = Field(
        default=None,
        ge=0,
        description="Per million input tokens in a batch (default: half of `input`, as Anthropic bills).",
    )
    batch_output: StrictFloat | None = Field(
        default=None, ge=0, description="Per million output tokens in a batch (default: half of `output`)."
    )


class EvalFile(BaseModel):
    """The eval file format; `harness schema eval` prints it as JSON Schema."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    scenarios: list[str] = Field(min_length=1, description="Scenario files or globs.")
    model: str = Field(
        default="local",
        description="An embedded model (qwen2.5-coder-1.5b, the default, also called "
        "local; smollm2-135m: fast, ignores summary prompts; `harness models` lists them), a .gguf path, "
        "claude-..., or a name for base_url.",
    )
    base_url: str | None = Field(default=None, description="Another Anthropic-compatible server.")
    budgets: list[BudgetField] = Field(
        min_length=1, description="Absolute (1200) or a share of each scenario's history ('50%')."
    )
    unit: Literal["chars", "tokens"] = "chars"
    prompts: list[str] = Field(
        default=[],
        description="Summary prompts, one per variant: a file (relative to the eval file), or the name of a "
        "prompt the harness ships (`seed`, `facts-first`, `keeps-nothing`, ...).",
    )
    strategies: list[Annotated[str, AfterValidator(_strategy_name)]] = Field(
        default=["summary", "none", "no-history"],
        min_length=1,
        description="summary, none, truncate, no-history, or module:function (see docs/strategies.md); "
        "any that compacts with +pin: the user's rules from what it folded put back verbatim after it "
        "(docs/actions.md), and/or then +recovery: the agent may search what it folded (docs/frameworks.md).",
    )
    claude_strategies: list[Annotated[str, AfterValidator(_strategy_name)]] = Field(
        default=[],
        description="Strategies run only when the model is not the embedded one (Claude, or a --base-url "
        "server): Anthropic's server-side compaction and context editing. On the embedded "
        "model they are skipped, and validate, plan and run say so.",
    )
    max_turns: StrictInt | None = Field(
        default=None,
        ge=1,
        description="Play only each scenario's first N turns; facts planted later are not "
        "probed and percentage budgets are shares of what is played.",
    )
    scenario_ids: list[str] | None = Field(
        default=None, min_length=1, description="Run only these scenarios (by id): try an eval cheaply first."
    )
    prompt_ids: list[str] | None = Field(
        default=None, min_length=1, description="Run only these summary prompts (by id, the file name without .txt)."
    )
    limit: StrictInt | None = Field(default=None, ge=1, description="Run only the first N cases of the plan.")
    keep_recent: StrictInt = Field(default=1, ge=0)
    tool_results: ToolResultSettings = Field(
        default_factory=ToolResultSettings, description="For strategies that clear old tool results in place."
    )
    strategy_options: dict[str, dict[str, Any]] = Field(
        default={},
        description="Settings for a strategy that takes them, by its name as listed under strategies "
        "(for example Inspect AI's `keep_tool_uses`): which ones each takes is in docs/frameworks.md.",
    )
    repeats: StrictInt = Field(
        default=1,
        ge=1,
        description="How many times each case is played (independent samples only above temperature 0).",
    )
    temperature: StrictFloat = Field(default=0.0, ge=0, le=2)
    summary_max_tokens: StrictInt = Field(default=512, ge=1)
    summary_transcript_chars: StrictInt | None = Field(
        default=None,
        ge=1000,
        description="Longest transcript per summary request; longer ones fold in chunks. "
        "Set it to fit the model's context window.",
    )
    reply_max_tokens: StrictInt = Field(default=200, ge=1, description="Token limit of live agent replies.")
    agent_system: str | None = Field(
        default=None,
        min_length=1,
        description="The agent's system prompt, in every request it makes (live turns, probes, action "
        "probes); unset: a helpful assistant that answers briefly from the conversation.",
    )
    cut: Literal["turns", "steps", "recorded"] = Field(
        default="turns",
        description="Where compaction may cut: turns (the seed's: only between user turns), steps "
        "(also before every model call inside a tool loop, keeping the last keep_recent "
        "steps), recorded (only where an imported log's agent compacted: budgets are "
        "then labels only).",
    )
    summary_layout: SummaryLayout | None = Field(
        default=None,
        description="system: the seed's request (prompt as system, transcript as the user turn); "
        "transcript-first: one user turn, the delimited transcript then the prompt. "
        "Default: each embedded model's measured layout (transcript-first for both: "
        "they follow summary prompts measurably better so), system elsewhere.",
    )
    sampling: dict[str, float | int | bool | str] = Field(
        default={},
        description="Extra sampling settings sent with every request (for llama.cpp, e.g. "
        "repeat_penalty, dry_multiplier); part of the model's identity for caching and gating.",
    )
    probes: bool = Field(
        default=True,
        description="Ask the probe questions (recall); false (--no-probes) measures summary retention only, "
        "several times cheaper.",
    )
    control_prompt: str | None = Field(
        default=None,
        description="A summary prompt that keeps nothing, run beside the others: reports show "
        "prompt sensitivity, the best prompt's retention minus this one's. A file or a shipped prompt's "
        "name, as in `prompts`.",
    )
    batch: bool = Field(
        default=False,
        description="Run on the Message Batches API, all cases together in waves "
        "(Claude, or a base_url that serves /v1/messages/batches).",
    )
    batch_poll_seconds: StrictFloat = Field(
        default=1.0,
        gt=0,
        description="First wait between two looks at a batch in flight; it grows 1.5x a time to 60 s at most.",
    )
    prices: Prices | None = Field(default=None, description="Prices per million tokens, for `harness plan`.")
    probe: ProbeSettings = ProbeSettings()
    recovery: RecoverySettings = Field(
        default_factory=RecoverySettings, description="For strategies named with +recovery."
    )
    next_action: Annotated[NextActionSettings, BeforeValidator(_next_action)] = Field(
        default_factory=NextActionSettings,
        description="true, or settings: measure whether the compacted agent "
        "takes the step it would have taken (off by default).",
    )
    gate: GateSettings = GateSettings()


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str
    path: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]


@dataclass
class EvalSource:
    """An eval file read and checked: its settings, scenarios and prompts; strategies still names."""

    spec: EvalFile
    path: Path
    doc: LocatedYaml  # the file as read, to locate errors found later (an unknown strategy)
    scenarios: list[Scenario]
    prompts: list[Prompt]
    control: str | None  # id of the keeps-nothing control prompt, one of `prompts`

    @property
    def repeats(self) -> int:
        """Repeats that can differ: at temperature 0 they would be copies of one answer."""
        return self.spec.repeats if self.spec.temperature > 0 else 1


def _read_prompt(name: str, base: Path, origin: str | Path, line: int | None, field: str) -> Prompt:
    """A summary prompt: a file relative to `base`, or a bare name (`seed`) of a prompt this package
    ships, so an eval copied into another repository still finds it. A problem is blamed on `origin`
    (the eval file's line, or the flag)."""
    path = base / name
    bare = "/" not in name and "\\" not in name and not name.endswith(".txt")
    if not path.is_file() and bare and (ours := shipped("prompts", f"{name}.txt")).is_file():
        path = ours
    if not path.is_file():
        names = f"; or name a shipped prompt: {', '.join(shipped_prompt_names())}" if bare else ""
        raise InputError(origin, f"summary prompt file {name!r} not found (looked for {path}){names}", line, field)
    try:
        text = path.read_text(encoding="utf-8").strip()
    except UnicodeDecodeError as exc:
        raise InputError(
            origin, f"summary prompt file {name!r} is not UTF-8 text ({exc.reason} at byte {exc.start})", line, field
        ) from None
    if not text:
        raise InputError(path, "summary prompt file is empty")
    return Prompt(path.stem, text, str(path))


def _chosen(
    doc: Any, field: str, noun: str, wanted: list[str] | None, existing: list[str], flag: str | None
) -> list[str]:
    """The ids a subset names (all when none is named); an unknown one is an error listing what
    exists, naming the flag it came from, or else the eval file's field."""
    for name in wanted or []:
        if name not in existing:
            message = f"no {noun} {name!r} in this eval (it has: {', '.join(existing)})"
            raise InputError(flag, message) if flag else doc.error((field,), message)
    return wanted or existing


def read_eval(
    path: str | Path,
    *,
    control: bool = True,
    prices: dict[str, float] | None = None,
    flags: dict[str, str] | None = None,
    **overrides: Any,
) -> EvalSource:
    """Read and check an eval file. `overrides`: fields of the file (`EvalFile`) set from the command
    line or the API (`budgets=["40%"]`; None: not given), applied to a copy of what the file says.
    `control`: False leaves out the keeps-nothing control prompt (a gate's candidate run needs only
    the baseline's). `prices`: override the file's prices one by one. `flags`: the command-line flag
    each override came from (`{"budgets": "--budget"}`), which a bad value is blamed on; an override
    without one is blamed on its keyword."""
    unknown = sorted(set(overrides) - set(EvalFile.model_fields))
    if unknown:
        raise TypeError(f"read_eval() got overrides that are no eval setting: {', '.join(unknown)}")
    given = {k: v for k, v in overrides.items() if v is not None}

    def blame(field: str) -> str:
        return (flags or {}).get(field, f"{field}=")

    doc = load_yaml(path)
    if not isinstance(doc.data, dict):
        raise InputError(path, "an eval is a mapping with name, scenarios and budgets", 1)
    if prices:
        written = doc.data.get("prices")
        given["prices"] = {**(written if isinstance(written, dict) else {}), **prices}
    try:
        spec = doc.validate(EvalFile, overrides=given)
    except InputError as error:
        if _from_command_line(error.loc, given, prices or {}):  # the flag's value is wrong, not the file
            raise InputError(blame(str(error.loc[0])), error.message) from None
        raise
    scenarios = _scenarios(doc, spec, blame("scenario_ids") if "scenario_ids" in given else None)
    loaded, control_id = _prompts(doc, spec, control, blame("prompts") if "prompts" in given else None)
    chosen = _chosen(
        doc,
        "prompt_ids",
        "prompt",
        spec.prompt_ids,
        [p.id for p in loaded if p.id != control_id],
        blame("prompt_ids") if "prompt_ids" in given else None,
    )
    loaded = [p for p in loaded if p.id in chosen or p.id == control_id]
    return EvalSource(spec, doc.path, doc, scenarios, loaded, control_id)


def _from_command_line(loc: tuple[str | int, ...], given: dict[str, Any], prices: dict[str, float]) -> bool:
    """Whether a bad value at `loc` came from an override rather than the file: prices merge the
    file's with the flags', so a price is the flag's only when a flag gave that price."""
    if not loc or loc[0] not in given:
        return False
    return loc[0] != "prices" or (len(loc) > 1 and loc[1] in prices)


def _scenarios(doc: LocatedYaml, spec: EvalFile, flag: str | None) -> list[Scenario]:
    """The eval's scenarios, each file once and each id once, cut to `max_turns` and to the chosen
    ids (`flag`: the command-line flag that chose them, else the file did)."""
    base = doc.path.parent
    paths: list[Path] = []
    for i, pattern in enumerate(spec.scenarios):
        matches = sorted(glob.glob(str(base / pattern))) if glob.has_magic(pattern) else [str(base / pattern)]
        if not matches or not Path(matches[0]).is_file():
            raise doc.error(("scenarios", i), f"no scenario file matches {pattern!r}")
        paths += [Path(m) for m in matches if Path(m) not in paths]
    scenarios = [load_scenario(p) for p in paths]
    if spec.max_turns:
        # A prefix of a valid scenario is valid: facts and supersessions only look backwards.
        scenarios = [s.model_copy(update={"turns": s.turns[: spec.max_turns]}) for s in scenarios]
    seen: dict[str, Path] = {}
    for p, scenario in zip(paths, scenarios):
        if scenario.id in seen:
            raise InputError(p, f"scenario id {scenario.id!r} is also used by {seen[scenario.id]}", None, "id")
        seen[scenario.id] = p
    chosen = _chosen(doc, "scenario_ids", "scenario", spec.scenario_ids, list(seen), flag)
    return [s for s in scenarios if s.id in chosen]


def _prompts(doc: LocatedYaml, spec: EvalFile, control: bool, flag: str | None) -> tuple[list[Prompt], str | None]:
    """The eval's summary prompts with its keeps-nothing control (when `control`), and the control's id.
    Prompts given by a flag (`flag`) are read relative to where the user stands, and blamed on it."""
    base = doc.path.parent
    if flag:
        loaded = [_read_prompt(p, Path.cwd(), flag, None, "") for p in spec.prompts]
    else:
        loaded = [
            _read_prompt(p, base, doc.path, doc.line_of(("prompts", i)), f"prompts[{i}]")
            for i, p in enumerate(spec.prompts)
        ]
    kept = (
        _read_prompt(spec.control_prompt, base, doc.path, doc.line_of(("control_prompt",)), "control_prompt")
        if control and spec.control_prompt
        else None
    )
    if kept and kept.id not in [p.id for p in loaded]:
        loaded.append(kept)
    ids = [p.id for p in loaded]
    if len(set(ids)) != len(ids):
        raise doc.error(("prompts",), "two prompt files share a name; prompts are identified by file name")
    return loaded, kept.id if kept else None
