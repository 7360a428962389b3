"""Secrets stay out of imported scenarios: agent logs carry API keys, tokens, passwords and private
hosts (in commands, environment dumps, file contents), and imported scenarios, baselines, gate
summaries and reports are committed and shared. Every text of a session is rewritten with each
common secret shape replaced by `[REDACTED:<kind>]`, before any fact is derived from it."""

from __future__ import annotations

import re
from collections import Counter

from .session import Session

MARK = "[REDACTED"
# A name whose last part says it holds a secret: password, token, secret, and the keys that are
# credentials (api_key, secret_access_key, ...), in any case, as settings in env, INI, YAML and JSON
# files name them (aws_secret_access_key, DB_PASSWORD, authToken, client-secret).
_SECRET_NAME = (
    r"(?i:[A-Za-z0-9_.-]*?(?:password|passwd|pwd|passphrase|secret|token|credentials?|auth"
    r"|(?:api|access|secret|private|client|signing|encryption|master)[_-]?key))"
)
# A value: quoted (spaces allowed), or bare up to whitespace, a quote, a comma or a semicolon (a
# connection string's `Password=x;`); never one already redacted.
_VALUE = r"(?!\[REDACTED)(?:\"[^\"\n]{2,}\"|'[^'\n]{2,}'|[^\s\"',;]{4,})"

# (kind, pattern, the group kept in front of the secret: a variable's name, a URL's scheme)
PATTERNS: list[tuple[str, re.Pattern[str], int]] = [
    (
        "private-key",
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.DOTALL),
        0,
    ),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}"), 0),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}"), 0),
    ("aws-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), 0),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"), 0),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), 0),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0),
    ("pypi-token", re.compile(r"\bpypi-[A-Za-z0-9_-]{40,}"), 0),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    ("bearer-token", re.compile(r"(\b[Bb]earer\s+)[A-Za-z0-9._~+/=-]{12,}"), 1),
    ("url-credentials", re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^\s/:@]+:[^\s/@]+@"), 1),
    # ~/.netrc: `machine HOST login USER password SECRET` (one line or several).
    (
        "netrc-password",
        re.compile(
            r"(\b(?:machine\s+\S+|default)\b(?:\s+(?:login|account)\s+\S+)*\s+password\s+)"
            r"(?!\[REDACTED)\S+"
        ),
        1,
    ),
    # ~/.pgpass: `host:port:database:user:password`.
    ("pgpass-password", re.compile(r"(?m)^([\w.*-]+:(?:\d+|\*):[\w.*-]+:[\w.*-]+:)(?!\[REDACTED)\S+$"), 1),
    # JSON: "password": "...", "auth": "..." (Docker's config.json auths), "apiKey": "...".
    ("secret-json", re.compile(r"(\"" + _SECRET_NAME + r"\"\s*:\s*\")(?!\[REDACTED)[^\"\n]{4,}(?=\")"), 1),
    # KEY=value lines of env files and shells, `name = value` of INI files (.pypirc, AWS credentials and
    # config, .npmrc's _authToken), `name: value` of YAML: the name stays, the value goes.
    (
        "secret-setting",
        re.compile(
            r"(?m)(\b(?:export\s+)?(?:[A-Za-z0-9_]*(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD"
            r"|CREDENTIALS?)[A-Za-z0-9_]*|" + _SECRET_NAME + r")\s*[=:]\s*)" + _VALUE
        ),
        1,
    ),
]


def redact_text(text: str, counts: Counter[str]) -> str:
    for kind, pattern, kept in PATTERNS:

        def replace(match: re.Match[str], kind: str = kind, kept: int = kept) -> str:
            counts[kind] += 1
            return (match[kept] if kept else "") + f"{MARK}:{kind}]"

        text = pattern.sub(replace, text)
    return text


def redact(session: Session) -> Counter[str]:
    """Rewrite every text of the session in place; how many secrets of each kind were replaced."""
    counts: Counter[str] = Counter()
    for slot in list(session.strings()):
        if isinstance(value := slot.get(), str):
            slot.set(redact_text(value, counts))
    return counts
