"""`harness chat`: talk to the agent and watch compaction fire."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_OK, Commands, at_least, model_flags


def cmd_chat(args: argparse.Namespace) -> int:
    from ..compaction.context import SEED_SUMMARY_PROMPT, CompactionSettings
    from ..execution.agent import Agent
    from ..execution.chat import CHAT_TOOLS, chat
    from ..models.backends import default_summary_layout, open_model

    prompt = Path(args.summary_prompt).read_text().strip() if args.summary_prompt else SEED_SUMMARY_PROMPT
    client = open_model(args.model, base_url=args.base_url)
    client.check()
    settings = CompactionSettings(
        summary_prompt=prompt,
        keep_recent=args.keep_recent,
        summary_max_tokens=args.summary_max_tokens,
        unit=args.unit,
        layout=default_summary_layout(args.model, args.base_url),
    )
    print(
        f"Chatting with {client.identity}; compaction above {args.budget} {args.unit}. Type 'quit' or Ctrl-D to leave."
    )
    chat(
        Agent(client=client, tools=CHAT_TOOLS, limit=args.budget, settings=settings),
        show_summaries=not args.hide_summaries,
    )
    return EXIT_OK


def register(commands: Commands) -> None:
    chat = commands.add_parser("chat", help="talk to the agent and watch compaction fire")
    model_flags(chat, "local")
    chat.add_argument("--budget", type=at_least(1), default=1200, help="compact above this size (default 1200)")
    chat.add_argument(
        "--unit", choices=["chars", "tokens"], default="chars", help="what --budget counts (default chars)"
    )
    chat.add_argument("--keep-recent", type=at_least(0), default=1, help="exchanges kept verbatim (default 1)")
    chat.add_argument("--summary-prompt", metavar="FILE", help="summary prompt file (default: the seed's)")
    chat.add_argument(
        "--summary-max-tokens", type=at_least(1), default=512, help="token limit of each summary (default 512)"
    )
    chat.add_argument("--hide-summaries", action="store_true", help="do not print each new summary")
    chat.set_defaults(handler=cmd_chat)
