"""The interactive agent (`harness chat`): the seed's outer loop, showing what compaction did (each
new summary, the history's size against the budget) and a calculator tool to call."""

from __future__ import annotations

import ast
import contextlib
import itertools
import operator
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TextIO

from ..messages import measure
from .agent import Agent, Tool, ToolRegistry

_OPERATORS: dict[type[ast.AST], Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.Mod: operator.mod,
}


def calculate(expression: str) -> str:
    """Arithmetic without eval(): only numbers and + - * / ** % are allowed."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](value(node.operand))
        raise ValueError(f"unsupported expression: {expression!r}")

    return str(value(ast.parse(expression, mode="eval").body))


CHAT_TOOLS = ToolRegistry(
    [
        Tool(
            name="calculator",
            description="Evaluate an arithmetic expression such as '12 * (3 + 4)'.",
            input_schema={
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
            run=calculate,
        )
    ]
)


@contextlib.contextmanager
def waiting(out: TextIO, what: str) -> Iterator[None]:
    """A spinner on a terminal while the model works (nothing when output is not a terminal)."""
    if not out.isatty():
        yield
        return
    done = threading.Event()

    def spin() -> None:
        for frame in itertools.cycle("|/-\\"):
            if done.wait(0.15):
                break
            out.write(f"\r{frame} {what}")
            out.flush()
        out.write("\r" + " " * (len(what) + 2) + "\r")
        out.flush()

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def chat(agent: Agent, input_stream: TextIO | None = None, show_summaries: bool = True) -> None:
    """The seed's outer loop: read a line, answer it, until end of input or 'quit'. Shows what
    compaction did (each new summary, unless `show_summaries` is off), the history's size against
    the budget after every turn, and marks replies cut at the token limit."""
    out, input_stream = agent.output_stream, input_stream or sys.stdin
    while True:
        out.write("you> ")
        out.flush()
        line = input_stream.readline()
        if not line or line.strip() in {"quit", "exit"}:
            return
        if not line.strip():
            continue
        seen = len(agent.events)
        with waiting(out, "compacting"):
            agent.compact()
        for event in agent.events[seen:]:
            if show_summaries and event.summary:
                out.write(f"[summary] {event.summary}\n")
        agent.messages.append({"role": "user", "content": line.strip()})
        with waiting(out, "thinking"):
            reply = agent.respond()
        cut = " [cut at the token limit]" if agent.stop_reason == "max_tokens" else ""
        out.write(f"agent> {reply}{cut}\n")
        size = measure(agent.messages, agent.client, agent.settings.unit)
        out.write(
            f"[history {size:,}/{agent.limit:,} {agent.settings.unit}]\n"
            if agent.limit
            else f"[history {size:,} {agent.settings.unit}]\n"
        )
