"""Tool calls a model wrote as text: read as the tool_use blocks it meant, counted, and nothing else."""

import json

import pytest

from harness.models.backends import open_model
from harness.models.tool_text import read_tool_calls

READ = {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}
EDIT = {"name": "Edit", "description": "Edit a file", "input_schema": {"type": "object"}}


def reply(text: str) -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
    }


@pytest.mark.parametrize(
    "text",
    [
        # Qwen's first call:
        '```json\n{\n  "name": "Read",\n  "arguments": {\n    "file_path": "src/app/config.py"\n  }\n}\n```',
        '{"name": "Read", "arguments": {"file_path": "src/app/config.py"}}',  # Qwen's later calls
        # its chat template's:
        '<tool_call>\n{"name": "Read", "arguments": {"file_path": "src/app/config.py"}}\n</tool_call>',
        '```\n{"name": "Read", "input": {"file_path": "src/app/config.py"}}\n```',
        '{"type": "function", "function": {"name": "Read", "arguments": "{\\"file_path\\": \\"src/app/config.py\\"}"}}',
    ],
)
def test_a_call_written_as_text_becomes_a_tool_use(text):
    data, count = read_tool_calls(reply(text), [READ, EDIT])
    assert count == 1 and data["stop_reason"] == "tool_use"
    (block,) = data["content"]
    assert (
        block["type"] == "tool_use" and block["name"] == "Read" and block["input"] == {"file_path": "src/app/config.py"}
    )
    assert block["id"].startswith("toolu_text_")


def test_text_around_the_call_stays_and_several_calls_are_read_in_order():
    text = (
        'I will read both files.\n```json\n{"name": "Read", "arguments": {"file_path": "a.py"}}\n```\n'
        '```json\n{"name": "Read", "arguments": {"file_path": "b.py"}}\n```'
    )
    data, count = read_tool_calls(reply(text), [READ])
    assert count == 2
    assert data["content"][0] == {"type": "text", "text": "I will read both files."}
    assert [b["input"]["file_path"] for b in data["content"][1:]] == ["a.py", "b.py"]
    assert len({b["id"] for b in data["content"][1:]}) == 2


@pytest.mark.parametrize(
    "text",
    [
        "The file is src/app/config.py.",  # prose
        '```json\n{"name": "Write", "arguments": {"file_path": "a.py"}}\n```',  # a tool the request does not offer
        '```json\n{"name": "Read", "arguments": "not json"}\n```',  # arguments that are not an object
        '```python\nprint({"name": "Read", "arguments": {}})\n```',  # code that merely mentions a call
        '{"name": "Read", "arguments": {"file_path": "a.py"}',  # cut off: not JSON
    ],
)
def test_anything_else_stays_text(text):
    original = reply(text)
    assert read_tool_calls(original, [READ, EDIT]) == (original, 0)


def test_a_reply_with_real_tool_use_blocks_or_a_request_without_tools_is_left_alone():
    native = {**reply('{"name": "Read", "arguments": {}}'), "stop_reason": "tool_use"}
    native["content"].append({"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}})
    assert read_tool_calls(native, [READ]) == (native, 0)
    plain = reply('{"name": "Read", "arguments": {}}')
    assert read_tool_calls(plain, []) == (plain, 0)


@pytest.mark.e2e
def test_the_default_embedded_model_answers_a_tool_call_with_a_tool_use_block():
    """Qwen2.5-Coder-1.5B writes its call as text (measured: a ```json block, stop reason end_turn);
    the backend returns it as the tool_use block it meant, and says it was read from text."""
    model = open_model("qwen2.5-coder-1.5b")
    tools = [
        {
            "name": "Read",
            "description": "Read a file from disk",
            "input_schema": {
                "type": "object",
                "properties": {"file_path": {"type": "string"}},
                "required": ["file_path"],
            },
        }
    ]
    response = model.create(
        max_tokens=120,
        tools=tools,
        messages=[
            {"role": "user", "content": "The bug is in src/app/config.py. Read that file first, using the Read tool."}
        ],
    )
    calls = [b for b in response["content"] if b["type"] == "tool_use"]
    assert response["stop_reason"] == "tool_use", json.dumps(response)
    assert [c["name"] for c in calls] == ["Read"] and calls[0]["input"]["file_path"].endswith("config.py")
    assert response.usage.tool_calls_from_text == 1
