"""The grammar of a person's rules: the prohibitions their words state ("don't edit the config.yaml",
"use httpie, not curl") and a later line that lifts one. Derivation plants them as constraints;
the audit follows them through a session."""

from __future__ import annotations

import re

from ..scoring.matchers import mentions

_PROHIBITION = re.compile(
    r"\b(?:don'?t|do not|never|must not|mustn'?t|avoid)\s+(?:(?:ever|just|simply|really|"
    r"actually|try to|attempt to)\s+)*(\w+)\s+((?:[^.!?;:,\n]|\.(?=\w)){3,80})",
    re.IGNORECASE,
)
# A rule said as a contrast forbids what it names second: "use httpie, not curl", "rg instead of grep",
# "prefer pnpm over npm": (verb, the thing not to use).
_CONTRAST_RULE = re.compile(
    r"\b(use|run|call|prefer|try)\s+(?:the\s+)?[\w./@+-]+(?:\s+\w+){0,2}?,?\s+"
    r"(?:not|instead of|rather than|over|in place of)\s+(?:the\s+)?([\w./@+-]*[\w@+])",
    re.IGNORECASE,
)
_NOT_AN_OBJECT = re.compile(r"^(?:it|this|that|them|these|those|so|anything|any|yourself|me|you)\b", re.IGNORECASE)

# A user lifting an earlier prohibition ("X is ours now, so you may edit it").
_PERMITS = re.compile(
    r"\b(?:you (?:may|can)(?: now)?|(?:is|are) (?:now )?(?:fine|ok|okay|allowed)|no longer (?:off limits"
    r"|forbidden))\b",
    re.IGNORECASE,
)


def prohibitions(said: str) -> list[tuple[str, str]]:
    """The prohibitions a person's words state ("don't edit the config.yaml", "use httpie, not curl"):
    each (verb, its object of up to four words)."""
    found = [("use" if verb.lower() == "prefer" else verb, obj) for verb, obj in _CONTRAST_RULE.findall(said)]
    for verb, rest in _PROHIBITION.findall(said):
        obj = re.sub(r"^(?:the|a|an|to)\s+", "", rest.strip(), flags=re.IGNORECASE)
        obj = " ".join(obj.split()[:4])
        if len(obj) >= 3 and not _NOT_AN_OBJECT.match(obj) and verb.lower() not in ("be", "have"):
            found.append((verb, obj))
    return found


def lifts(said: str, obj: str) -> bool:
    """A person's words lift an earlier prohibition: they name its object with a permission."""
    return bool(_PERMITS.search(said)) and mentions(said, obj)
