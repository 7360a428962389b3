"""Writes the hostile-log corpus in this folder: logs of the five agent formats that are cut off,
nested, re-encoded, hand-edited, structurally broken, empty or full of credentials, as real logs
turn up. `expected.yaml` says what importing each must do (tests/test_hostile_logs.py checks it).
Run it to rebuild the files: `python tests/data/hostile_logs/make.py`."""

import bz2
import gzip
import io
import json
import lzma
import zipfile
from pathlib import Path

HERE = Path(__file__).parent
TASK = "Fix the crash in billing/invoice.py when the total is zero."


def jsonl(name: str, lines: list, encoding: str = "utf-8", newline: str = "\n") -> None:
    text = newline.join(line if isinstance(line, str) else json.dumps(line, ensure_ascii=False) for line in lines)
    (HERE / name).write_bytes((text + newline).encode(encoding))


def whole(name: str, data, encoding: str = "utf-8") -> None:
    (HERE / name).write_bytes(json.dumps(data, ensure_ascii=False, indent=1).encode(encoding))


def compressed(name: str, plain: str, compress) -> None:
    """`plain` (a file written above) compressed, as logs are archived; the same bytes every run."""
    (HERE / name).write_bytes(compress((HERE / plain).read_bytes()))


def claude(uuid: str, parent: str | None, role: str, content, **extra) -> dict:
    return {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
            "message": {"role": role, "content": content}, **extra}


def tool_use(call: str, name: str, **arguments) -> list:
    return [{"type": "tool_use", "id": call, "name": name, "input": arguments}]


def tool_result(call: str, text: str, error: bool = False) -> list:
    return [{"type": "tool_result", "tool_use_id": call, "content": text, **({"is_error": True} if error else {})}]


def claude_session(secret_output: str = "ZeroDivisionError: division by zero") -> list:
    return [claude("u1", None, "user", TASK),
            claude("a1", "u1", "assistant", tool_use("t1", "Bash", command="pytest tests/test_invoice.py -x")),
            claude("r1", "a1", "user", tool_result("t1", secret_output, error=True)),
            claude("a2", "r1", "assistant", tool_use("t2", "Edit", file_path="billing/invoice.py",
                                                     old_string="a / b", new_string="a / b if b else 0")),
            claude("r2", "a2", "user", tool_result("t2", "The file billing/invoice.py has been updated.")),
            claude("a3", "r2", "assistant", [{"type": "text", "text": "Fixed: a zero total no longer divides."}])]


def codex_line(kind: str, payload: dict) -> dict:
    return {"timestamp": "2026-01-01T10:00:00Z", "type": kind, "payload": payload}


def codex_session(compacted: dict | None = None) -> list:
    lines = [codex_line("session_meta", {"id": "x", "cwd": "/repo", "cli_version": "0.99.0"}),
             codex_line("response_item", {"type": "message", "role": "user",
                                          "content": [{"type": "input_text", "text": TASK}]}),
             codex_line("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                                          "arguments": json.dumps({"command": ["bash", "-lc", "pytest -x"]})}),
             codex_line("response_item", {"type": "function_call_output", "call_id": "c1",
                                          "output": json.dumps({"output": "ZeroDivisionError: division by zero",
                                                                "metadata": {"exit_code": 1}})})]
    if compacted is not None:
        lines.append(codex_line("compacted", compacted))
    lines += [codex_line("response_item", {"type": "message", "role": "user",
                                           "content": [{"type": "input_text", "text": "Now run the whole suite."}]}),
              codex_line("response_item", {"type": "message", "role": "assistant",
                                           "content": [{"type": "output_text", "text": "All green."}]})]
    return lines


def swe_trajectory(steps: int = 3) -> dict:
    return {"trajectory": [{"action": f"open billing/invoice_{n}.py", "observation": f"[File: billing/invoice_{n}.py]",
                            "thought": f"Look at part {n}."} for n in range(steps)],
            "history": [{"role": "system", "content": "You are SWE-agent."}, {"role": "user", "content": TASK}],
            "info": {"exit_status": "submitted", "submission": ""}}


def mini_trajectory() -> dict:
    return {"messages": [{"role": "system", "content": "You run bash."}, {"role": "user", "content": TASK},
                         {"role": "assistant", "content": "THOUGHT: run the tests.\n\n```bash\npytest -x\n```"},
                         {"role": "user", "content": "<returncode>1</returncode>\n<output>ZeroDivisionError</output>"},
                         {"role": "assistant", "content": "Done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
                         {"role": "user", "content": "<returncode>0</returncode>\n<output></output>"}]}


def openai_messages() -> list:
    return [{"role": "system", "content": "You are a coding agent."}, {"role": "user", "content": TASK},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "pytest -x"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ZeroDivisionError: division by zero"},
            {"role": "assistant", "content": "Fixed it."}]


CREDENTIALS = {  # each form a credential file or printout takes, with the secret that must not survive
    "aws-credentials": ("[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
                        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
                        ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"]),
    "aws-config": ("[profile ci]\nregion = eu-west-1\naws_session_token = FwoGZXIvYXdzEBYaDH8sessiontokenvalue\n",
                   ["FwoGZXIvYXdzEBYaDH8sessiontokenvalue"]),
    "netrc": ("machine api.example.com login deploy password n3trc-s3cret-pass\n", ["n3trc-s3cret-pass"]),
    "pgpass": ("db.internal:5432:billing:app:pgp4ss-Secret!\n", ["pgp4ss-Secret!"]),
    "npmrc": ("//registry.npmjs.org/:_authToken=npm_a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8\n",
              ["npm_a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8"]),
    "pypirc": ("[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmcCJDEyMzQ1Njc4LWFiY2QtZWZnaC1pamtsLW1ub3BxcnN0dXZ3\n",
               ["pypi-AgEIcHlwaS5vcmcCJDEyMzQ1Njc4LWFiY2QtZWZnaC1pamtsLW1ub3BxcnN0dXZ3"]),
    "docker-config": ('{"auths": {"https://index.docker.io/v1/": {"auth": "ZGVwbG95OmQwY2tlci1wYXNz"}}}',
                      ["ZGVwbG95OmQwY2tlci1wYXNz"]),
    "yaml-password": ("database:\n  host: db.internal\n  password: \"yaml pass phrase 42\"\n", ["yaml pass phrase 42"]),
    "json-token": ('{"client_id": "billing", "client_secret": "cs-7f3a9b2c1d"}', ["cs-7f3a9b2c1d"]),
    "ini-secret": ("[auth]\nsecret = ini-s3cret-value\n", ["ini-s3cret-value"]),
    "connection-string": ("Server=db;Database=billing;User Id=sa;Password=Adm1n-Pa55;\n"
                          "DATABASE_URL=postgresql://app:pgurl-pass@db.internal:5432/billing\n",
                          ["Adm1n-Pa55", "pgurl-pass"]),
}


def main() -> None:
    # Claude Code
    session = [json.dumps(line) for line in claude_session()]
    jsonl("cc-cut-mid-line.jsonl", session[:-1] + [session[-1][:40]])
    jsonl("cc-crlf.jsonl", claude_session(), newline="\r\n")
    rtl = claude_session()
    rtl[0]["message"]["content"] = TASK + " שלום עולם 🚀 مرحبا"
    jsonl("cc-rtl-emoji.jsonl", rtl)
    jsonl("cc-deep-line.jsonl", claude_session()[:3] + ['{"type": "user", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"]
          + claude_session()[3:])
    cycle = claude_session()
    cycle[0]["parentUuid"] = "a3"  # the root points at the last line
    jsonl("cc-parent-cycle.jsonl", cycle)
    missing = claude_session()
    missing[3]["parentUuid"] = "lost-line"
    jsonl("cc-missing-parent.jsonl", missing)
    duplicate = claude_session()
    duplicate.insert(2, claude("a1", "u1", "assistant", [{"type": "text", "text": "Let me look first."}]))
    jsonl("cc-duplicate-uuid.jsonl", duplicate)
    orphan = claude_session()
    orphan.insert(3, claude("rx", "r1", "user", tool_result("t-unknown", "output of a call nobody made")))
    orphan[4]["parentUuid"] = "rx"
    jsonl("cc-orphan-result.jsonl", orphan)
    jsonl("cc-call-without-result.jsonl", claude_session()[:2] + [claude("a2", "a1", "assistant", [
        {"type": "text", "text": "The test run never came back."}])])
    empty_summary = claude_session() + [
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None, "logicalParentUuid": "a3",
         "content": "Conversation compacted"},
        claude("s1", "b1", "user", "", isCompactSummary=True),
        claude("u2", "s1", "user", "Now run the whole suite.")]
    jsonl("cc-empty-compaction.jsonl", empty_summary)
    latin = claude_session()
    latin[0]["message"]["content"] = TASK + " The café's façade total is 0 €."
    jsonl("cc-latin1.jsonl", latin, encoding="cp1252")
    jsonl("cc-newer-version.jsonl", claude_session() + [
        {"type": "attachment", "uuid": "x1", "parentUuid": "a3", "attachment": {"kind": "diagnostics"}},
        {"type": "assistant", "uuid": "a4", "parentUuid": "x1", "message": {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "st1", "name": "web_search", "input": {"query": "zero totals"}},
            {"type": "text", "text": "Checked the docs too."}]}}])
    (HERE / "cc-empty.jsonl").write_text("")
    (HERE / "cc-binary.jsonl").write_bytes(bytes(range(256)) * 8)
    jsonl("cc-is-codex.jsonl", codex_session())
    jsonl("cc-no-tool-call.jsonl", [claude("u1", None, "user", TASK),
                                    claude("a1", "u1", "assistant", [{"type": "text", "text": "Which total?"}])])
    jsonl("cc-credentials.jsonl", claude_session("\n".join(text for text, _ in CREDENTIALS.values())))
    bare_input = claude_session()
    bare_input[3]["message"]["content"][0]["input"] = "billing/invoice.py: a / b -> a / b if b else 0"
    jsonl("cc-input-not-object.jsonl", bare_input)

    # Codex CLI
    jsonl("codex-empty-compaction.jsonl", codex_session({"message": ""}))
    jsonl("codex-cut-mid-line.jsonl", [json.dumps(line) for line in codex_session()][:-1] + ['{"timestamp": "2026'])
    jsonl("codex-deep-line.jsonl", codex_session()[:2] + ['{"type": "response_item", "payload": '
                                                          + "[" * 50_000 + "]" * 50_000 + "}"] + codex_session()[2:])
    jsonl("codex-utf16.jsonl", codex_session(), encoding="utf-16")
    jsonl("codex-newer-version.jsonl", codex_session() + [
        codex_line("response_item", {"type": "web_search_call", "action": {"query": "x"}}),
        codex_line("ghost_snapshot", {"commit": "abc"})])
    bare_arguments = codex_session()
    bare_arguments[2]["payload"]["arguments"] = "pytest -x"  # a hand-written or truncated call: not JSON
    jsonl("codex-arguments-not-json.jsonl", bare_arguments)
    jsonl("codex-no-user.jsonl", [codex_line("session_meta", {"id": "x"}),
                                  codex_line("response_item", {"type": "message", "role": "user", "content": [
                                      {"type": "input_text", "text": "<environment_context>\n</environment_context>"}]})])

    # SWE-agent
    whole("swe-hand-edited.traj", swe_trajectory())
    text = (HERE / "swe-hand-edited.traj").read_text().replace('"submitted"', '"submitted",')
    (HERE / "swe-hand-edited.traj").write_text(text)  # a trailing comma, as a hand edit leaves one
    (HERE / "swe-deep.traj").write_text('{"trajectory": ' + "[" * 100_000 + "]" * 100_000 + "}")
    whole("swe-no-steps.traj", {"trajectory": [], "history": [], "info": {}})
    whole("swe-not-a-trajectory.traj", {"messages": []})

    # mini-swe-agent
    whole("mini-utf16-bom.traj.json", mini_trajectory(), encoding="utf-16")
    whole("mini-empty-messages.traj.json", {"messages": [], "info": {}})
    whole("mini-only-system.traj.json", {"messages": [{"role": "system", "content": "You run bash."}]})

    # Chat messages (OpenAI's shape)
    nulls = [{**message, "content": None} for message in openai_messages() if "tool_calls" not in message]
    whole("openai-all-null.json", nulls)
    whole("openai-ok.json", openai_messages())
    jsonl("openai-conversation-per-line.jsonl", [{"messages": openai_messages()}, {"messages": nulls}])
    whole("openai-not-a-list.json", {"choices": []})
    orphan_tool = openai_messages() + [{"role": "tool", "tool_call_id": "c9", "content": "late output"}]
    whole("openai-orphan-tool.json", orphan_tool)
    listed = openai_messages()
    listed[2]["tool_calls"][0]["function"]["arguments"] = '["pytest", "-x"]'  # JSON, but not an object
    whole("openai-arguments-not-object.json", listed)

    # Archived: compressed as a whole (read through), cut off, or in an archive (refused)
    compressed("cc-compressed.jsonl.gz", "cc-crlf.jsonl", lambda data: gzip.compress(data, mtime=0))
    compressed("swe-compressed.traj.xz", "swe-hand-edited.traj",
               lambda data: lzma.compress(data.replace(b'"submitted",', b'"submitted"')))
    compressed("openai-lines.jsonl.bz2", "openai-conversation-per-line.jsonl", bz2.compress)
    compressed("codex-cut-off.jsonl.gz", "codex-newer-version.jsonl", lambda data: gzip.compress(data, mtime=0)[:200])
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as folder:
        folder.writestr(zipfile.ZipInfo("rollout.jsonl", date_time=(2026, 1, 1, 0, 0, 0)),
                        (HERE / "codex-newer-version.jsonl").read_bytes())
    (HERE / "codex-archive.zip").write_bytes(archive.getvalue())


if __name__ == "__main__":
    main()
