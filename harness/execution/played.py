"""What passes between the steps of a case (`runner`): the case as played, and each probe's request."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..inputs.probes import Probe
from ..messages import Message
from ..records.schema import ActionRecord, CaseRow, CompactionRecord, RetentionRecord
from .agent import Agent
from .cases import Case


@dataclass(kw_only=True)
class PlayedCase:
    """A case played up to its probes: the agent holding its history, and what its compactions did."""

    case: Case
    row: CaseRow  # what every record of the case carries
    agent: Agent | None  # None: the case failed before its history was complete
    limit: int | None  # the budget resolved in units
    compactions: list[CompactionRecord]
    retention: list[RetentionRecord]
    starts: list[Message] = field(default_factory=list)  # the first message of each turn played
    # Each scripted turn's messages as played (a live turn: its user line), to tell which turns an
    # in-place edit (clearing old tool results) changed.
    turn_messages: list[list[Message]] = field(default_factory=list)
    early: dict[str, ProbeRequest] = field(default_factory=dict)  # facts asked before a turn (`probe_at`)
    error: str | None = None  # why the case failed: every fact is then an error
    full: list[Message] = field(default_factory=list)  # the history as played, never compacted (the ceiling's)
    actions: list[ActionRecord] = field(default_factory=list)  # next-action fidelity at each cut

    def when_asked(self, fact: Probe) -> tuple[list[Message], int, int]:
        """The history a fact's probe saw, and how many compactions and turns came before it."""
        if early := self.early.get(fact.fact_id):
            return early.history, early.compactions, early.turns
        if self.agent is None:
            raise ValueError(f"{self.row.case}: the case failed before its history was complete: nothing to ask")
        return self.agent.messages, len(self.compactions), len(self.starts)


@dataclass(kw_only=True)
class ProbeRequest:
    """One probe of a played case: a fork of its agent whose last message is the probe question.
    `agent.request()` is what to send; `agent.take(response)` reads the answer back. `compactions`
    and `turns` say how far the case had played when it was asked (a `probe_at` fact is asked
    before the conversation ends)."""

    fact: Probe
    agent: Agent
    compactions: int
    turns: int
    question_at: int  # where the question is in `agent.messages`

    @property
    def history(self) -> list[Message]:
        """What the agent held when asked: its messages before the probe question."""
        return self.agent.messages[: self.question_at]

    @property
    def answering(self) -> list[Message]:
        """What followed the question: the answer, and any tool calls made on the way to it."""
        return self.agent.messages[self.question_at + 1 :]
