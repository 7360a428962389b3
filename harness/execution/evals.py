"""An eval ready to run: its file read (`inputs.evalfile.read_eval`) and its strategies bound to
compaction functions, built-in (`compaction.registry`) or the user's own `module:function`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import plugins
from ..compaction.custom import Compactor, import_strategy
from ..compaction.registry import STRATEGIES, StrategySpec, custom_strategy
from ..errors import did_you_mean
from ..inputs.evalfile import EvalSource, read_eval
from ..messages import SummaryLayout
from ..models.backends import default_summary_layout, is_local
from ..records.schema import PIN, RECOVERY
from .pin import pinned


@dataclass
class Eval(EvalSource):
    """An eval file resolved: scenarios loaded, prompts read, every strategy bound."""

    strategies: dict[str, StrategySpec]
    custom: dict[str, Compactor]  # module:function and plugin strategies, imported only when named
    skipped: list[str]  # claude_strategies left out because the model is the embedded one

    def strategy(self, name: str) -> StrategySpec:
        return self.strategies[name]

    @property
    def summary_layout(self) -> SummaryLayout:
        """The eval's summary layout, or where it names none its model's measured one."""
        return self.spec.summary_layout or default_summary_layout(self.spec.model, self.spec.base_url)


def load_eval(path: str | Path, **overrides: Any) -> Eval:
    """Read an eval file (keyword arguments are command-line overrides, as `read_eval` takes them)
    and bind its strategies; an unknown or unusable strategy is an error located in the file."""
    source = read_eval(path, **overrides)
    spec, doc = source.spec, source.doc
    local = is_local(spec.model, spec.base_url)
    skipped = list(spec.claude_strategies) if local else []
    listed = list(spec.strategies)
    # Resolved here, on a copy of the settings as read, so the manifest records what runs: the
    # summary layout, and Claude's strategies where the model is not the embedded one.
    spec = spec.model_copy(
        update={
            "summary_layout": spec.summary_layout or default_summary_layout(spec.model, spec.base_url),
            "strategies": listed + ([] if local else [s for s in spec.claude_strategies if s not in listed]),
        }
    )
    source = replace(source, spec=spec)
    custom = _custom_strategies(source)
    strategies = {
        name: _with_arms(name, custom_strategy(name, custom[name]) if name in custom else STRATEGIES[base_of(name)])
        for name in spec.strategies
    }
    _check_servable(source, strategies, listed, local)
    _check_options(source, strategies, custom)
    needs_prompt = [name for name, s in strategies.items() if s.uses_prompt and name not in custom]
    if needs_prompt and not source.prompts:
        raise doc.error(("prompts",), f"the {needs_prompt[0]} strategy needs at least one prompt file")
    return Eval(**vars(source), strategies=strategies, custom=custom, skipped=skipped)


def _custom_strategies(source: EvalSource) -> dict[str, Compactor]:
    """The eval's strategies that are users' (`module:function`) or other packages', imported; an
    unknown name, or a +recovery arm on a strategy that never compacts, is an error in the file."""
    spec, doc = source.spec, source.doc
    for i, name in enumerate(spec.claude_strategies):
        if name not in STRATEGIES:
            raise doc.error(
                ("claude_strategies", i), f"unknown strategy {name!r}{did_you_mean(name, list(STRATEGIES))}"
            )
    custom = {}
    installed = plugins.installed("strategies")  # other packages' strategies, by entry point
    for i, name in enumerate(spec.strategies):
        base = base_of(name)
        if ":" in base or (base not in STRATEGIES and base in installed):
            custom[name] = import_strategy(base, doc.path, doc.line_of(("strategies", i)), f"strategies[{i}]")
        elif base not in STRATEGIES:
            known = [*STRATEGIES, *installed]
            raise doc.error(
                ("strategies",),
                f"unknown strategy {base!r}: use one of {', '.join(known)}, module:function, or install "
                "a package that adds it (see Strategies and alternatives)",
            )
        elif name != base and STRATEGIES[base].compact is None:
            arm = "search" if name.endswith(RECOVERY) else "pin back"
            raise doc.error(("strategies", i), f"{name}: {base} never compacts, so there is nothing to {arm}")
    return custom


def _check_servable(source: EvalSource, strategies: dict[str, StrategySpec], listed: list[str], local: bool) -> None:
    """Each strategy can run as the eval sets it up: Claude's server-side ones not on the embedded
    model nor in batch mode, a token-triggered one only with `unit: tokens`."""
    spec, doc = source.spec, source.doc
    for name, strategy in strategies.items():
        where = (
            ("strategies", listed.index(name))
            if name in listed
            else ("claude_strategies", spec.claude_strategies.index(name))
        )
        if strategy.needs_claude and local:
            raise doc.error(
                where,
                f"{name} needs Claude's Messages API (server-side compaction or context editing); "
                f"the embedded model cannot serve it: run with --model claude-sonnet-4-5 (or "
                "--base-url a server that implements it), or list it under claude_strategies",
            )
        if strategy.needs_claude and spec.batch:
            raise doc.error(
                ("batch",),
                f"{name} sends beta requests one at a time (its block goes into the next "
                "request): run it without batch mode",
            )
        if strategy.needs_tokens and spec.unit != "tokens":
            raise doc.error(
                ("unit",), f"{name} sends its budget to the server as an input-token trigger: set unit: tokens"
            )


def _check_options(source: EvalSource, strategies: dict[str, StrategySpec], custom: dict[str, Compactor]) -> None:
    """Each of `strategy_options` names one of the eval's strategies and only settings it takes."""
    for name, options in source.spec.strategy_options.items():
        if name not in strategies:
            raise source.doc.error(("strategy_options", name), f"{name!r} is not one of this eval's strategies")
        accepted = custom[name].options if name in custom else frozenset()
        for option in options:
            if option not in accepted:
                takes = f"it takes {', '.join(sorted(accepted))}" if accepted else "it takes none"
                raise source.doc.error(("strategy_options", name, option), f"{name} has no setting {option!r}: {takes}")


def base_of(name: str) -> str:
    """A strategy's name without its arms (`summary+pin+recovery` -> `summary`)."""
    return name.removesuffix(RECOVERY).removesuffix(PIN)


def _with_arms(name: str, spec: StrategySpec) -> StrategySpec:
    """`<strategy>+pin`: the strategy, then the user's rules put back verbatim (`pin`);
    `+recovery`: its agent offered a search over what it folded."""
    pin = name.removesuffix(RECOVERY).endswith(PIN)
    compact = pinned(spec.compact) if pin and spec.compact is not None else spec.compact
    return replace(spec, name=name, compact=compact, pin=pin, recovery=name.endswith(RECOVERY))
