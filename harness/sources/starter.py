"""`harness init`: a starter for gating a summary prompt in a user's own repository.

It writes the shipped seed prompt as the prompt to tune (`evals/prompts/summary.txt`) beside the
keeps-nothing control, a gate eval over a small generated scenario set (chats, or coding-agent
sessions for an agent that calls tools), a CI workflow that runs the gate when a prompt changes,
and the lines that record the first baseline. The templates and
prompts ship inside the package, so this works from an installed wheel, outside any clone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..inputs.files import shipped
from .generators import chat, coding
from .writer import write_scenarios


# The designs of this project's own gates. evals/gate.yaml: many short conversations, each compacted
# once; on the default embedded model it detects retention drops of about 4%. evals/agent-gate.yaml:
# 12 coding-agent sessions compacted once inside the tool loop, about 3.7%, by kind of fact.
@dataclass(frozen=True)
class StarterKind:
    template: str  # the gate eval's template under harness/templates
    scenarios: str  # what the generated scenarios are, in the starter's README
    generate: Callable[[], list[dict[str, Any]]]  # the starter's scenarios


STARTER_CHATS = chat.Options(scenarios=64, facts=3, filler_chars=0, seed=1)
STARTER_SESSIONS = coding.Options(scenarios=12, steps=28, file_chars=600, seed=1)
KINDS = {
    "chat": StarterKind(
        template="compaction-gate.yaml",
        scenarios="generated conversations",
        generate=lambda: [chat.scenario(STARTER_CHATS, i) for i in range(STARTER_CHATS.scenarios)],
    ),
    "agent": StarterKind(
        template="agent-gate.yaml",
        scenarios="generated coding-agent sessions",
        generate=lambda: [coding.scenario(STARTER_SESSIONS, i) for i in range(STARTER_SESSIONS.scenarios)],
    ),
}


def shipped_text(*parts: str) -> str:
    return shipped(*parts).read_text(encoding="utf-8")


def starter_files(model: str, install: str, kind: str = "chat") -> dict[str, str]:
    """The starter's files (path relative to the repository -> text), scenarios left out. `install`:
    the workflow's command that installs the model's weights; `kind`: "chat" or "agent", the gate's
    scenarios."""
    version = metadata.version("compaction-harness")

    def fill(*parts: str) -> str:
        return (
            shipped_text(*parts)
            .replace("{model}", model)
            .replace("{version}", version)
            .replace("{install_model}", install)
            .replace("{scenarios}", KINDS[kind].scenarios)
        )

    return {
        "evals/prompts/summary.txt": shipped_text("prompts", "seed.txt"),
        "evals/prompts/keeps-nothing.txt": shipped_text("prompts", "keeps-nothing.txt"),
        "evals/compaction-gate.yaml": fill("templates", KINDS[kind].template),
        "evals/README.md": fill("templates", "README.md"),
        ".github/workflows/compaction-gate.yml": fill("templates", "compaction-gate.yml"),
    }


def write_starter(root: Path, model: str, install: str, force: bool = False, kind: str = "chat") -> list[Path]:
    """Write the starter under `root`; existing files are refused (all of them named) unless `force`."""
    files = starter_files(model, install, kind)
    scenarios = KINDS[kind].generate()
    targets = [root / name for name in files] + [
        root / "scenarios" / "compaction" / f"{s['id']}.yaml" for s in scenarios
    ]
    existing = [str(path) for path in targets if path.exists()]
    if existing and not force:
        raise InputError(
            existing[0],
            f"already exists ({len(existing)} of the starter's files do); "
            "nothing was written: use --force to overwrite them",
        )
    written = []
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    written += [path for path, _ in write_scenarios(scenarios, root / "scenarios" / "compaction", "harness init")]
    return written
