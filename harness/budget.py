"""A compaction budget as an eval or a flag writes it, parsed once.

A budget is a size in the eval's unit (`1200`: characters or tokens) or a share of each
scenario's scripted history (`40%`). A case resolves it into its `limit`, the size in units its
history must fit, which is what a strategy receives (`CompactionContext.limit`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Budget:
    text: str  # as written, normalised: "1200" or "40%"

    def __post_init__(self) -> None:
        text = self.text
        if not re.fullmatch(r"[1-9]\d*", text) and not (
            re.fullmatch(r"\d+(\.\d+)?%", text) and 0 < float(text[:-1]) <= 100
        ):
            raise _invalid(text)

    @classmethod
    def parse(cls, value: Any) -> Budget:
        """A budget from what a YAML file or a flag holds (`1200`, `"1200"`, `"40%"`)."""
        if isinstance(value, Budget):
            return value
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise _invalid(value)
        return cls(str(value).strip())

    @property
    def is_share(self) -> bool:
        """A share of each scenario's scripted history rather than a size in units."""
        return self.text.endswith("%")

    @property
    def amount(self) -> float:
        """Units, or percent of the scripted history."""
        return float(self.text.rstrip("%"))

    def limit(self, scripted_size: int) -> int:
        """The size in units a history must fit, for a scenario whose scripted history is `scripted_size`."""
        if not self.is_share:
            return int(self.amount)
        return max(1, round(self.amount / 100 * scripted_size))

    def sort_key(self) -> tuple[bool, float]:
        """Absolute budgets first, each kind by size."""
        return (self.is_share, self.amount)

    def __str__(self) -> str:
        return self.text


def _invalid(value: Any) -> ValueError:
    return ValueError(f"a budget is a positive number of units (1200) or a percentage up to 100 ('40%'), not {value!r}")
