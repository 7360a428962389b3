"""SWE-agent trajectories (`*.traj`, one JSON object): `trajectory`, the steps (`thought`, `action`,
`observation`), `history`, the chat messages the model saw, and `info` (`submission`, the diff it
submitted; `exit_status`).

The task is the first user message of `history` that is not a demonstration (`is_demo`); each
step becomes one call of a tool named `swe_agent` whose input is the action (SWE-agent's own
commands such as `open`, `edit 12:14`, `submit`, or a shell line) and whose result is the
observation, with the thought as the agent's words. The files of the submitted diff are the
session's changed files. A trajectory without `trajectory` steps is read from `history`'s
assistant messages (`action`) and the observations that follow them. Left out: the system
prompt and demonstrations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import InputError, plural
from ...tool_vocabulary import patched_files
from .logfile import log_name, read_json
from .session import LOG_STARTS, Builder, Call, Session, slug, text_of

TOOL = "swe_agent"


def read(path: Path) -> list[Session]:
    session = Session(
        slug(log_name(path).name.removesuffix(".traj")),
        f"SWE-agent trajectory {path.name}, imported with `harness import swe-agent`.",
    )
    data = read_json(path, "a SWE-agent trajectory", session.notes)
    if not isinstance(data, dict) or not isinstance(data.get("trajectory", data.get("history")), list):
        raise InputError(path, "not a SWE-agent trajectory: no `trajectory` or `history` list", field="trajectory")
    history = [m for m in data.get("history") or [] if isinstance(m, dict)]
    demos = _demos(history)
    task = next((m for m in history if m.get("role") == "user" and id(m) not in demos), None)
    builder = Builder(session)
    builder.user(text_of(task.get("content")) if task else LOG_STARTS)
    steps = [s for s in data.get("trajectory") or [] if isinstance(s, dict)] or _steps_from(history, task)
    for n, step in enumerate(steps):
        where = f"{path.name}: trajectory[{n}]"
        action = str(step.get("action") or "").strip()
        if not action:
            session.notes.append(f"{where}: a step with no action, left out")
            continue
        call_id = f"step-{n}"
        call = Call(TOOL, {"command": action}, id=call_id)
        builder.assistant(str(step.get("thought") or step.get("response") or ""), [call], where)
        builder.result(call_id, text_of(step.get("observation")), False, where)
    read_info(data, session)
    session.notes.append(f"the system prompt and {plural(len(demos), 'demonstration message')} left out")
    return [builder.finish()]


def read_info(data: Any, session: Session) -> None:
    """The run's own record (`info`, as SWE-agent and mini-swe-agent write it): the files of the
    diff it submitted, and how it ended."""
    info: dict[str, Any] = data["info"] if isinstance(data, dict) and isinstance(data.get("info"), dict) else {}
    session.files_changed = patched_files(str(info.get("submission") or ""))
    if info.get("exit_status"):
        session.notes.append(f"the run ended with exit status {info['exit_status']!r}")


def _demos(history: list[dict[str, Any]]) -> set[int]:
    """The demonstration messages (by identity): SWE-agent writes `is_demo` as true or "True"."""
    return {id(m) for m in history if m.get("is_demo") in (True, "True", "true")}


def _steps_from(history: list[dict[str, Any]], task: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Steps from `history` alone: each assistant message's action and the user message after it."""
    demos = _demos(history)
    steps, live = [], [m for m in history if id(m) not in demos and m is not task and m.get("role") != "system"]
    for message, after in zip(live, live[1:] + [{}]):
        if message.get("role") == "assistant" and message.get("action"):
            observation = after.get("content") if after.get("role") in ("user", "tool") else ""
            steps.append(
                {
                    "thought": message.get("thought") or message.get("content"),
                    "action": message["action"],
                    "observation": observation,
                }
            )
    return steps
