"""Does a summary keep a rule *as a rule*? Mentioning its object is not enough.

A summary can name the purge tool while it softens "never run it alone" into "try to avoid running
it alone", or turns it round: "the purge tool is fine to run alone". `read_rule` reads what a text
(a summary) says of a constraint or a decision, sentence by sentence, as one `Reading`:

- **kept**: the rule as a rule. A constraint stated as a prohibition ("never edit X", "X must not be
  edited", "use rg instead of grep", "Don't: grep"), or as a restriction on when it may be done
  ("purge must always run with a second person"); a decision stated as made ("I'll retry the
  request", "decided to retry the request").
- **weakened**: the rule hedged: "try to avoid X if possible", "X should preferably not be
  edited", "be careful with X"; a decision still open ("we might retry the request", "either retry
  the request or cache the lookup").
- **contradicted**: the rule reversed: "X is fine to run", "you can use grep", "there is no rule
  against grep", "use grep"; a decision rejected ("decided against retrying the request",
  "cache the lookup instead of retrying the request").
- **dropped**: the text does not state the rule: its object is not named, or named with no rule
  ("the agent read zemida/schema.py").

Where sentences disagree, a contradiction wins (an agent may follow it), then kept, then weakened.
A hedge the rule's own words already had ("unless the user approves") does not weaken it
(`original`). The taxonomy follows compaction-guard's (preserved and paraphrased are kept here;
mutated reads as contradicted or dropped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from .affirmation import CLAUSE_END, DENIED_RULE, occurrences
from .matchers import Expectation, item_forms, states
from .normalize import normalize, tokens


class Reading(StrEnum):
    KEPT = "kept"
    WEAKENED = "weakened"
    CONTRADICTED = "contradicted"
    DROPPED = "dropped"


RuleKind = Literal["constraint", "decision"]

# All patterns run on normalised text ("don't" is "don t", "it's" is "it s").
_SENTENCE = re.compile(r"\n|(?<=[.!?;])\s+")
# A prohibition said before its object ("never edit", "don t use", "no grep", "except", "avoid").
_PROHIBITION_BEFORE = re.compile(
    r"\b(?:not|no|never|don t|do not|must not|mustn t|should not|shouldn t|cannot|can t|may not|won t"
    r"|without|avoid|avoiding|except|apart from|other than|forbidden|forbids?|banned|bans?|prohibited|prohibits?"
    r"|off limits|refrain from|stay away from|keep away from|stay out of|keep out of|steer clear of|leave|hands off"
    r"|forbade|forbid|forbidding|disallows?|disallowed|exclude|excluding|excluded|barred)\b"
)
# ... or after it, of the object named earlier ("X is their own and must not be edited", "X: off limits").
_PROHIBITION_AFTER = re.compile(
    r"\b(?:must not|mustn t|should not|shouldn t|cannot|can t|may not|not allowed|not permitted|not supposed"
    r"|not to be|is not to|are not to|never|do not|don t|forbidden|banned|prohibited|off limits|out of bounds"
    r"|read only|untouchable|untouched|unchanged|intact|excluded|avoided|protected"
    r"|not be (?:edited|touched|changed|modified|used|run))\b"
)
# A list's heading that makes its items prohibitions ("Constraints:", "Do not touch:", "Forbidden:").
_PROHIBITION_HEADING = re.compile(
    r"\b(?:constraints?|rules?|restrictions?|prohibitions?|forbidden|off limits|do not|don t|never|avoid"
    r"|must not|not allowed|protected|banned)\b"
)
# The object named second in a contrast is the one not to use ("rg instead of grep", "httpie, not curl").
_CONTRAST = re.compile(r"\b(?:rather than|instead of|as opposed to|in place of|not|over)\s+(?:\w+\s+){0,2}$")
# A restriction on how it may be done: the rule kept in other words ("must always run with a second person").
_RESTRICTION = re.compile(
    r"\b(?:only|must|always|should|has to|have to|needs? to|required to|requires?)\b(?:\s+\w+){0,4}?\s+"
    r"(?:with|after|before|until|when|if|once|by|under|via|through|in|behind|from)\b"
    r"|\bonly\b"
)
# The rule lifted (denied, "no rule against X", is the answers' reading: `affirmation.DENIED_RULE`).
_LIFTED = re.compile(
    r"\b(?:no longer|not anymore|any more|lifted|revoked|rescinded|dropped the (?:rule|restriction|ban))\b"
)
# Permission or endorsement of the object: said after it ("X is fine", "X is allowed", "X is recommended") ...
_PERMITTED_AFTER = re.compile(
    r"^(?:\s+\w+){0,3}?\s+(?:is|are|was|were|s|has been|have been|seems?|looks?)\s+(?:now\s+|also\s+|perfectly\s+)?"
    r"(?:fine|ok|okay|allowed|permitted|approved|safe|acceptable|welcome|preferred|recommended|encouraged"
    r"|the way to go|the right tool|good)\b"
    r"|^(?:\s+\w+){0,3}?\s+(?:can|may|could)\s+(?:now\s+|also\s+|safely\s+)?(?:be\s+)?\w+"
)
# ... or before it ("you can use", "feel free to run", "it s fine to edit", "use grep").
_PERMITTED_BEFORE = re.compile(
    r"\b(?:can|may|free to|allowed to|permitted to|ok to|okay to|fine to|safe to|go ahead and|should|prefer"
    r"|preferably|recommended to|encouraged to|please|use|run|edit|modify|change|touch|call|try|go with"
    r"|update|fix|patch|rewrite|delete|add to|write to)\b"
    r"(?:\s+\w+){0,3}?\s*$"
)
# Hedges that soften a rule or leave a decision open.
_HEDGE = re.compile(
    r"\b(?:try to|tries to|trying to|try not to|if possible|where possible|when possible|whenever possible"
    r"|as much as possible|if you can|preferably|ideally|generally|usually|mostly|probably|perhaps|maybe"
    r"|possibly|might|may want to|could|would be (?:best|better|nice)|better not|rather not|prefer not"
    r"|be careful|with care|with caution|cautious|cautiously|sparingly|minimi[sz]e|discouraged|not recommended"
    r"|recommended not|consider|considering|considered|unless (?:necessary|needed|required|you have to|it s needed)"
    r"|if needed|if necessary|where feasible|not ideal|not preferred|a preference|suggested)\b"
)
_DECISION_OPEN = re.compile(
    r"\b(?:either|options?|alternatives?|undecided|not yet decided|not decided|to be decided|tbd|weighing"
    r"|whether to|choose between|deciding|two ways|two approaches)\b"
)
_DECIDED = re.compile(
    r"\b(?:decided|decide|chose|chosen|choose to|picked|opted|settled on|selected|going with|go with|went with"
    r"|will|ll|plan is|approach is|fix is|the way is|agreed)\b"
)
# A label that states the decision ("Approach: ...", "Decision: ...").
_DECIDED_LABEL = re.compile(r"\b(?:approach|plan|decision|decided|solution|fix|chosen|choice)\b")
_REJECTED_BEFORE = re.compile(
    r"\b(?:not|never|no|against|rejected|rejecting|ruled out|ruling out|abandoned|dropped|declined|instead of"
    r"|rather than|as opposed to|in place of|over|avoid|won t|don t|didn t)\b(?:\s+\w+){0,3}?\s*$"
)
_REJECTED_AFTER = re.compile(
    r"^(?:\s+\w+){0,3}?\s+(?:was|is|were|are|has been|got)\s+(?:\w+\s+)?(?:rejected|ruled out|abandoned|dropped"
    r"|discarded|not (?:chosen|used|an option|the way)|off the table)\b"
    r"|^\s*(?:won t|will not|does not|doesn t|didn t|did not) work\b"
)
# Caution with no prohibition: a rule softened to advice ("be careful when editing X").
_CAUTION = re.compile(r"\b(?:be careful|careful|with care|with caution|cautious|cautiously|double check|think twice)\b")
# The object named earlier, permitted ("X is ours now, so it is fine to edit").
_PERMITTED_AGAIN = re.compile(
    r"\b(?:it|this|that|them|they)\s+(?:is|are|s|re)\s+(?:now\s+|also\s+)?(?:fine|ok|okay|allowed|permitted|safe|free)\b"
    r"|\b(?:it|this|that|them|they)\s+(?:can|may)\s+(?:now\s+|also\s+)?(?:be\s+)?\w+"
)
_PRONOUN = re.compile(r"\b(?:it|this|that|them|these|those|the file|the folder|the tool|the command)\b")
_BULLET = re.compile(r"\s*(?:[-*+\u2022]|\d+[.)])\s+")


@dataclass(frozen=True)
class _Sentence:
    """A sentence or a list line: its clauses, normalised, and what its layout says."""

    clauses: list[str]
    bullet: bool  # a list item ("- X"), which a heading above it governs
    label: str  # an inline label before a colon ("Constraints: X, Y"), normalised
    heading: bool  # the line ends with a colon and governs the items under it

    @property
    def text(self) -> str:
        return " ".join(self.clauses)


def read_rule(text: str, expectation: Expectation, kind: RuleKind, original: str = "") -> Reading:
    """What `text` says of the rule (a constraint fact's prohibition, or a decision) whose value is
    `expectation`; `original` is the text that stated the rule, whose own hedges do not weaken it."""
    sentences = _sentences(text)
    original = normalize(original)
    readings: list[Reading | None] = []
    governed = False  # under a heading that makes its items prohibitions ("Do not touch:")
    for i, sentence in enumerate(sentences):
        found = [(c, span) for c, clause in enumerate(sentence.clauses) for span in _spans(clause, expectation)]
        if sentence.heading and not found:
            governed = bool(_PROHIBITION_HEADING.search(sentence.text))
            continue
        governed = governed and sentence.bullet
        for c, span in found:
            if kind == "decision":
                readings.append(_decision(sentence, c, span, original))
                continue
            following = sentences[i + 1].text if i + 1 < len(sentences) else ""
            readings.append(_constraint(sentence, c, span, following, governed, original))
    for reading in (Reading.CONTRADICTED, Reading.KEPT, Reading.WEAKENED):
        if reading in readings:
            return reading
    return Reading.DROPPED


def _sentences(text: str) -> list[_Sentence]:
    out = []
    for piece in _SENTENCE.split(text):
        piece = piece.strip()
        if not piece:
            continue
        bullet = _BULLET.match(piece)
        body = piece[bullet.end() :] if bullet else piece
        label, colon, rest = body.partition(":")  # the label stays in the text: it may name the value
        label = label if colon and rest.strip() and len(label.split()) <= 6 else ""
        clauses = [c for c in (normalize(part) for part in CLAUSE_END.split(body)) if c]
        if clauses:
            out.append(_Sentence(clauses, bool(bullet), normalize(label), piece.endswith(":")))
    return out


def _spans(clause: str, expectation: Expectation) -> list[tuple[int, int]]:
    """Where the value (an alias, a set's item) is named in a normalised clause; for a value matched
    by overlap (match: f1), the stretch of the clause that names most of its words."""
    forms = [form for item in expectation.items for form in item_forms(item)] or list(expectation.values)
    spans = [span for form in forms for span in occurrences(clause, form, expectation.tolerance)]
    if spans or not states(clause, expectation, within=True):
        return spans
    return [_best_window(clause, expectation)]


def _best_window(clause: str, expectation: Expectation) -> tuple[int, int]:
    words = [(m.start(), m.end(), m[0]) for m in re.finditer(r"\S+", clause)]
    wanted = {t for value in expectation.values for t in tokens(value)}
    width = max(len(tokens(value)) for value in expectation.values) + 2
    best = (0, 0, len(clause))  # how many of the value's words, start, end
    for i, (start, _, word) in enumerate(words):
        if word in wanted:
            window = [(e, w) for _, e, w in words[i : i + width] if w in wanted]
            if len(window) > best[0]:
                best = (len(window), start, window[-1][0])
    return best[1], best[2]


def _hedged(sentence: _Sentence, c: int, original: str) -> bool:
    """A hedge in the value's clause, or in a short clause beside it ("If possible, avoid X")."""
    near = [sentence.clauses[c]] + [
        sentence.clauses[j]
        for j in (c - 1, c + 1)
        if 0 <= j < len(sentence.clauses) and len(sentence.clauses[j].split()) <= 4
    ]
    return any(hedge[0] not in original for clause in near for hedge in _HEDGE.finditer(clause))


def _constraint(
    sentence: _Sentence, c: int, span: tuple[int, int], following: str, governed: bool, original: str
) -> Reading | None:
    clause = sentence.clauses[c]
    before, after = clause[: span[0]], clause[span[1] :]
    if DENIED_RULE.search(clause) or _LIFTED.search(clause):
        return Reading.CONTRADICTED  # "there is no rule against grep", "the ban on X was lifted"
    later = [*sentence.clauses[c + 1 :], following]  # "X is theirs, and they must not edit it. Do not edit it."
    prohibited = (
        bool(_PROHIBITION_BEFORE.search(before) or _CONTRAST.search(before) or _PROHIBITION_AFTER.search(after))
        or governed
        or bool(sentence.label and _PROHIBITION_HEADING.search(sentence.label))
        or any(_PRONOUN.search(text) and _PROHIBITION_AFTER.search(text) for text in later)
    )
    if not prohibited and _RESTRICTION.search(clause):
        prohibited = True  # a restriction on how: "purge must always run with a second person"
    elif not prohibited:
        if (
            _PERMITTED_AFTER.search(after)
            or _PERMITTED_BEFORE.search(before)
            or any(_PERMITTED_AGAIN.search(text) for text in later[:-1])
        ):
            return Reading.CONTRADICTED  # "X is fine", "you can use X", "use X", "X is ours, so it is fine to edit"
        if _CAUTION.search(clause):
            return Reading.WEAKENED  # "be careful when editing X"
        return None  # named, with no rule
    return Reading.WEAKENED if _hedged(sentence, c, original) else Reading.KEPT


def _decision(sentence: _Sentence, c: int, span: tuple[int, int], original: str) -> Reading:
    clause = sentence.clauses[c]
    before, after = clause[: span[0]], clause[span[1] :]
    if _REJECTED_BEFORE.search(before) or _REJECTED_AFTER.search(after):
        return Reading.CONTRADICTED  # "decided against retrying ...", "... was ruled out"
    if (
        _DECIDED.search(" ".join([*sentence.clauses[:c], before]))
        or _DECIDED.search(after)
        or _DECIDED_LABEL.search(sentence.label)
    ):
        return Reading.KEPT
    if _DECISION_OPEN.search(sentence.text) or _hedged(sentence, c, original) or re.search(r"\bor\b", clause):
        return Reading.WEAKENED  # "we might retry ...", "either retry ... or cache ..."
    return Reading.KEPT
