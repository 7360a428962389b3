"""mini-swe-agent trajectories (`*.traj.json`): an object with `messages` (and `info`, holding the
submission), or the bare list of messages. The agent writes its one command a step as a fenced
block in its text (```bash or ```mswea_bash_command); the observation comes back as the next user
message (`<returncode>`, `<output>`, or `<output_head>` / `<elided_chars>` / `<output_tail>` for a
long one), kept as it is and marked an error when the return code is not 0. Versions that call
tools natively are read as chat messages (see `openai_messages`). The task is the first user
message; the system prompt is left out.
"""

from __future__ import annotations

import re
from itertools import count
from pathlib import Path

from ...errors import InputError
from .derive import diff_files
from .openai_messages import read_messages
from .session import Call, Session, read_json, slug

_COMMAND = re.compile(r"```(?:mswea_bash_command|bash|sh|shell)\s*\n(.*?)\n?```", re.DOTALL)
_RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def read(path: Path) -> list[Session]:
    data = read_json(path, "a mini-swe-agent trajectory")
    messages = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(messages, list) or not messages:
        raise InputError(path, "not a mini-swe-agent trajectory: expected a `messages` list (or a list of messages)",
                         field="messages" if isinstance(data, dict) else "")
    name = path.name.removesuffix(".json").removesuffix(".traj")
    session = Session(slug(name), f"mini-swe-agent trajectory {path.name}, imported with `harness import "
                                  "mini-swe-agent`.")
    ids = count()

    def commands(text: str) -> list[Call]:
        return [Call("bash", {"command": block.strip()}, id=f"command-{next(ids)}") for block in _COMMAND.findall(text)]

    session = read_messages([(f"{path.name}: messages[{i}]", m) for i, m in enumerate(messages)], session, str(path),
                            text_calls=commands)
    for exchange in session.exchanges:
        for step in exchange.steps:
            for call in step.calls:
                code = _RETURN_CODE.search(call.result or "")
                call.is_error = call.is_error or bool(code and code[1] != "0")
    info = data.get("info") if isinstance(data, dict) and isinstance(data.get("info"), dict) else {}
    session.files_changed = diff_files(str(info.get("submission") or ""))
    if info.get("exit_status"):
        session.notes.append(f"the run ended with exit status {info['exit_status']!r}")
    return [session]
