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
from .logfile import log_name, read_json
from .openai_messages import read_messages
from .session import Call, Session, slug
from .swe_agent import read_info

_COMMAND = re.compile(r"```(?:mswea_bash_command|bash|sh|shell)\s*\n(.*?)\n?```", re.DOTALL)
_RETURN_CODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def read(path: Path) -> list[Session]:
    name = log_name(path).name.removesuffix(".json").removesuffix(".traj")
    session = Session(
        slug(name), f"mini-swe-agent trajectory {path.name}, imported with `harness import mini-swe-agent`."
    )
    data = read_json(path, "a mini-swe-agent trajectory", session.notes)
    messages = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(messages, list) or not messages:
        raise InputError(
            path,
            "not a mini-swe-agent trajectory: expected a `messages` list (or a list of messages)",
            field="messages" if isinstance(data, dict) else "",
        )
    ids = count()

    def commands(text: str) -> list[Call]:
        return [Call("bash", {"command": block.strip()}, id=f"command-{next(ids)}") for block in _COMMAND.findall(text)]

    session = read_messages(
        [(f"{path.name}: messages[{i}]", m) for i, m in enumerate(messages)], session, str(path), text_calls=commands
    )
    for call in session.calls():
        code = _RETURN_CODE.search(call.result or "")
        call.is_error = call.is_error or bool(code and code[1] != "0")
    read_info(data, session)
    return [session]
