"""Does an answer *affirm* a value, rather than only name it?

An answer is read clause by clause (a clause ends at sentence punctuation, a comma, a spaced dash,
or "but"/"however"/"although"). In a clause, an occurrence of the value is affirmed unless
something before it in the clause takes it back:

- a negation or refusal ("not Lisbon", "I'm unable to provide a refund or replacement"), or a
  rejecting verb ("we rejected Brightwell");
- a contrast that names it second ("a replacement rather than a refund", "instead of",
  "as opposed to", "Postgres over MySQL": the first item is the answer).

A fact can be a **negative constraint** ("we never deploy on Fridays", "no peanuts"). Its value is
the object of a prohibition, so restating the prohibition with its own negation is recall:
"We never deploy on Fridays", "Don't use peanuts", "No force pushing", "Use anything except
plastic". What is not recall of a constraint:

- a denial of the value ("It's not Friday", "Not Friday, Monday"): a plain or copular "not"
  with no action between it and the value;
- a denial of the rule ("There is no rule against Fridays", "There's no problem with peanuts");
- a permission ("Peanuts are fine", "Force-push is allowed", "Take the M4", "It can run
  against the reporting replica");
- a refusal ("I can't tell you which database").

A prohibition restated in the passive ("Deploys are never done on Friday") is recall, as is a bare
"Not X" that answers what is prohibited ("Not the M4.", "Not the M4 - route it via the M5"), unless
what follows corrects X ("Not Friday, Monday", "Not Friday. I think it was Monday"): then it is a
denial.

The same clause reading finds prohibitions in a planting turn (`prohibits`: is a fact a
constraint?) and hedges between an old and a new value (`offers_both`: "either 2,350 or 2,800").
"""

from __future__ import annotations

import re

from .normalize import as_number, normalize

# A clause ends at sentence punctuation, a comma (not the one before a year: "March 14, 2025"), a
# dash, or a contrast ("..., not the Baixa Grand", "not 2350 but 2800").
CLAUSE_END = re.compile(r"[;!?]|\.(?=\s|$)|,(?!\s*\d{4}\b)(?=\s)|\s[-\u2013\u2014]\s|\b(?:but|however|although)\b")

# All patterns below run on normalised text ("can't" is "can t", "it's" is "it s").
_NEGATION = re.compile(
    r"\b(?:not|no|never|nothing|none|nobody|cannot|unable|neither|nor|without|\w+n t"
    r"|rejected|declined|dropped|ruled out|turned down|refused)\b"
)
# A contrast names its second item as the one not meant; "over" only right before it.
_CONTRAST = re.compile(r"\b(?:rather than|instead of|as opposed to|in place of)\b|\bover (?:the |a |an )?$")
# Prohibitions that keep their object: restating the constraint.
_EXCLUSION = re.compile(r"\b(?:except|apart from|other than|without|avoid|avoiding)\b")
_COPULA = {"is", "are", "was", "were", "be", "been", "s", "isn", "aren", "wasn", "weren"}
# Words that carry no action: "not on the", "never on a" keep a denial a denial.
_FUNCTION = {
    "a",
    "an",
    "the",
    "on",
    "in",
    "at",
    "to",
    "for",
    "of",
    "from",
    "with",
    "any",
    "it",
    "this",
    "that",
    "them",
    "there",
    "here",
    "really",
    "actually",
    "even",
    "just",
    "ever",
    "so",
    "before",
    "after",
    "during",
    "by",
    "about",
    "one",
    "s",
    "t",
    "that s",
    "it s",
} | _COPULA
# "no rule against", "nothing wrong with", "isn't a problem": the rule is denied, not restated.
DENIED_RULE = re.compile(
    r"\b(?:not|no|never|nothing|n t)\s+(?:\w+\s+){0,2}?(?:rule|rules|restriction|restrictions"
    r"|constraint|constraints|policy|problem|problems|issue|issues|wrong|stops|prevents|reason"
    r"|ban|limit)\b"
)
_REFUSAL = re.compile(
    r"\b(?:unable|cannot|can t|won t|will not|not able)\s+(?:to\s+)?(?:\w+\s+)?(?:provide|help|share"
    r"|tell|say|answer|recall|remember|access|find|determine|confirm|give|disclose|assist)\b"
)
_PERMISSION = re.compile(
    r"^(?:\s+\w+)?\s+(?:is|are|was|were|s|has been|have been)\s+(?:(?!not\b)\w+\s+)?(?:fine|ok|okay|allowed"
    r"|permitted|approved|safe|acceptable|welcome)\b|^(?:\s+\w+)?\s+(?:directly\s+)?(?:that s|it s)"
    r"\s+(?:fine|ok|okay|allowed)\b"
)
_ENDORSE = re.compile(
    r"\b(?:take|use|choose|chose|pick|prefer|go with|route|run|email|contact|book|deploy|ship|push"
    r"|touch|merge|schedule|include|add|pack|allow|permit|can|may)\b(?:\s+\w+){0,3}?\s*$"
)


def occurrences(norm: str, value: str, tolerance: float | None = None) -> list[tuple[int, int]]:
    """Where in normalised text `value` is stated (start and end): numerically within the
    tolerance, or as a whole-word phrase (a word's plural counts: "Fridays" states Friday)."""
    number = as_number(value)
    if number is not None:
        return [
            m.span()
            for m in re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", norm)
            if abs(float(m[0]) - number) <= (tolerance or 0) + 1e-9
        ]
    needle = normalize(value)
    plural = "(?:s|es)?" if needle[-1:].isalpha() else ""
    return [m.span() for m in re.finditer(rf"(?<!\w){re.escape(needle)}{plural}(?!\w)", norm)] if needle else []


def clauses(text: str) -> list[str]:
    return [normalize(clause) for clause in CLAUSE_END.split(text)]


def affirms(text: str, value: str, tolerance: float | None = None, constraint: bool = False) -> bool:
    """Whether some clause of an answer affirms `value` (see the module docstring)."""
    parts = clauses(text)
    return any(
        _affirmed(clause, span, constraint, " ".join(parts[i + 1 :]))
        for i, clause in enumerate(parts)
        for span in occurrences(clause, value, tolerance)
    )


# What follows a bare "Not X" when it corrects X ("Not Friday, it was Monday", "Not Friday. I think it
# was Monday"): a statement of what it was, or a bare alternative of a few words ("Not Friday, Monday").
_CORRECTION = re.compile(
    r"^\s*(?:(?:i think|i believe|actually|rather|but)\s+)*(?:it|that|this|the \w+|they)?\s*"
    r"(?:was|is|s|were|are|would be)\b"
)
# ... unlike an instruction that goes on from the rule ("Not the M4 - route it via the M5").
_INSTRUCTION = re.compile(
    r"^\s*(?:please\s+)?(?:use|take|book|route|try|go|choose|pick|send|ship|deploy|run|prefer"
    r"|stick|switch|stay|email|contact|call|ask|keep|buy|order|cook|serve)\b"
)


def _corrects(following: str) -> bool:
    return bool(_CORRECTION.match(following)) or (0 < len(following.split()) <= 3 and not _INSTRUCTION.match(following))


def _affirmed(clause: str, span: tuple[int, int], constraint: bool, rest: str = "") -> bool:
    before, after = clause[: span[0]], clause[span[1] :]
    if _CONTRAST.search(before):
        return False
    if not constraint:
        return not _NEGATION.search(before)
    if _REFUSAL.search(clause) or DENIED_RULE.search(clause) or _PERMISSION.search(after):
        return False
    cues = list(_NEGATION.finditer(before)) + list(_EXCLUSION.finditer(before))
    if not cues:
        return not _ENDORSE.search(before)  # "take the M4": using it is no prohibition
    cue = max(cues, key=lambda m: m.end())
    if _EXCLUSION.fullmatch(cue[0]) or cue[0] in ("no", "nothing", "none"):
        return True  # "no peanuts", "nothing before 10 am", "anything except plastic"
    between = before[cue.end() :].split()
    preceding = before[: cue.start()].split()
    acts = any(word not in _FUNCTION for word in between)  # "don t use", "must not make changes in"
    copular = bool(preceding and preceding[-1] in _COPULA)
    if cue[0] == "never":  # "never on a Friday"; "deploys are never done on Fridays"; not "it was never Friday"
        return acts or not copular
    if cue[0] == "not" and not preceding and not acts:  # a bare "Not the M4.": the rule, unless it corrects
        return not _corrects(f"{after} {rest}".strip())
    return acts  # "don t use", "are not shipped on"; not "it s not", "isn t", "not on the"


def offers_both(text: str, value: str, other: str, tolerance: float | None = None) -> bool:
    """Whether an answer hedges between two values: both in one clause, joined by "or" ("either
    2,350 or 2,800"). Naming an old value beside the new one otherwise is history, not a hedge."""
    for clause in clauses(text):
        spans = occurrences(clause, value, tolerance)
        for start, end in occurrences(clause, other):
            for a, b in spans:
                left, right = (end, a) if start < a else (b, start)
                if re.search(r"\bor\b", clause[left:right]):
                    return True
    return False


def prohibits(text: str, value: str) -> bool:
    """Whether a text (a planting turn) states `value` as the object of a prohibition: "we never
    deploy on Fridays", "no peanuts", "X is forbidden" (a fact stated so is a constraint)."""
    for clause in clauses(text):
        for start, end in occurrences(clause, value):
            before, after = clause[:start], clause[end:]
            if re.search(
                r"\b(?:never|no|without|avoid|except|don t|do not|must not|mustn t|shouldn t|should not"
                r"|cannot|can t|not allowed to|forbidden to|not to)\b",
                before,
            ) or re.search(
                r"\b(?:forbidden|banned|prohibited|off limits|not allowed|not permitted"
                r"|out of bounds)\b",
                after,
            ):
                return True
    return False
