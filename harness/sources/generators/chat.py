"""`harness generate`: seeded synthetic scenarios built for statistical power.

Each scenario plants many facts (every kind: codes, quantities, money, dates, names, places,
decisions, preferences, and negative constraints: "never send order Amber with Ravelin Freight"),
each bound to its own subject ("crate Amber"), in user lines, scripted assistant replies and tool
results, with neutral filler between them so that compaction folds them. Values are drawn from large
pools so the no-history control cannot guess them; some facts are superseded later and some carry a
near-miss distractor. The output is ordinary scenario YAML, checked by the same validation as
hand-written files before anything is written: same seed, same files.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import plural
from ...inputs.scenario import Scenario
from ...messages import history_size
from ..writer import write_scenarios

TAGS = (
    "Amber Birch Cobalt Dune Ember Fennel Garnet Harbor Indigo Juniper Kestrel Lantern Marble Nectar "
    "Onyx Pebble Quartz Russet Saffron Thistle Umber Velvet Willow Yarrow Zephyr Acorn Bramble Cinder "
    "Drift Flint Gable Heron Ivory Jasper Kelp Lichen Moss Nimbus Orchid Plume Quill Rowan Slate Tansy "
    "Tundra Vesper Wren Sorrel"
).split()
FIRST_NAMES = (
    "Marta Tomasz Ingrid Kofi Amara Dmitri Leilani Oskar Priya Rafael Sunniva Tariq Yuki Zofia "
    "Emeka Hedda Ilse Joaquin Katarina Lorcan Mireille Nils Ottilie Paavo Quentin Rosalind Soren "
    "Thandiwe Ulrike Valentin"
).split()
LAST_NAMES = (
    "Okonkwo Lindqvist Abernathy Castellanos Dvorak Fairweather Gallagher Haraldsen Iwasaki "
    "Jablonski Kowalczyk Lachance Mbeki Nakamura Oyelaran Pettersen Quintero Rasmussen Szabo "
    "Thibodeaux Underhill Vasquez Whitcombe Yilmaz Zielinski Achterberg Bellweather Cernak"
).split()
CITIES = (
    "Tromso Ghent Matera Bergamo Tartu Zadar Plovdiv Olomouc Aarhus Coimbra Lucerne Bilbao Split "
    "Kaunas Graz Bruges Trieste Lublin Uppsala Nantes Salzburg Ljubljana Debrecen Turku Cluj Brno "
    "Malmo Gdansk Porto Valletta Innsbruck Leuven Ulm Arezzo Pecs Sibiu"
).split()
VENDORS = (
    "Brightwell Quorrin Halvard Tessmark Orlovane Pendrake Valcourt Brindlemoor Castoria Wexley "
    "Marrowgate Solvane Fennick Ostrava Kilbride Lowenthal Ravensholm Tidewater Ambergate "
    "Cresswell"
).split()
PREFERENCES = (
    "rooibos tea",
    "a north-facing room",
    "oat porridge",
    "the night ferry",
    "linen sheets",
    "paper invoices",
    "a standing desk",
    "jasmine rice",
    "the corner booth",
    "morning calls",
    "fountain pens",
    "a ground-floor room",
    "sparkling water",
    "the coastal route",
    "wool blankets",
    "printed tickets",
    "a quiet carriage",
    "buckwheat pancakes",
    "the late train",
    "cedar soap",
)
COURIERS = (
    "Ravelin Freight",
    "Tessaro Express",
    "Highmoor Logistics",
    "Corvane Post",
    "Blackfen Carriers",
    "Ashdown Parcel",
    "Vellum Courier",
    "Kestrel Haulage",
    "Oakhurst Delivery",
    "Marrow Lane Shipping",
    "Pellham Cargo",
    "Stonebridge Dispatch",
    "Quillon Transport",
    "Larkspur Logistics",
    "Fenwick Couriers",
    "Drayton Freight",
    "Holloway Express",
    "Ironvale Post",
    "Saltmarsh Carriers",
    "Brackwater Delivery",
)
MONTHS = ("January February March April May June July August September October November December").split()
FILLER = (
    "It helps to keep the overall plan simple and to revisit it once everything is settled.",
    "Most people find that a short checklist saves time when several things happen at once.",
    "There is usually some flexibility, so small changes later on are not a problem.",
    "Good communication with everyone involved tends to prevent misunderstandings.",
    "It is worth leaving a little slack in the schedule in case something takes longer.",
    "A shared document where everyone can see the current state of things is often useful.",
    "When in doubt, it is fine to ask again rather than to guess.",
    "Keeping a record of what was agreed makes later conversations much easier.",
    "The weather can change quickly this time of year, so pack something warm.",
    "Many teams review their arrangements once a week to catch problems early.",
    "Small details matter, but they rarely need a decision right away.",
    "It is often easier to confirm arrangements in writing than over the phone.",
)
FILLER_QUESTIONS = (
    "Any general advice before we go on?",
    "What else should I keep in mind?",
    "Anything I might be forgetting?",
    "How should we organise the rest?",
    "Can you give me a few general tips?",
    "What would you suggest next?",
)


@dataclass(frozen=True)
class Kind:
    """One kind of fact: its subject noun, how a value is drawn and how it is said."""

    name: str
    noun: str
    draw: Callable[[random.Random], tuple[str, str]]  # -> (value as written, canonical answer)
    statement: str  # "{subject}" and "{value}"
    question: str
    near_miss: Callable[[random.Random, str], str] | None = None  # a distractor from the written value


def _code(rng: random.Random) -> tuple[str, str]:
    code = f"{rng.choice('BCDFGHJKLMNPRSTVWXZ')}{rng.choice('BCDFGHJKLMNPRSTVWXZ')}-{rng.randint(1000, 9999)}"
    return code, code


def _swap_digits(rng: random.Random, code: str) -> str:
    digits = list(code[-4:])
    i = rng.randrange(3)
    digits[i], digits[i + 1] = digits[i + 1], digits[i]
    swapped = code[:-4] + "".join(digits)
    return swapped if swapped != code else code[:-1] + str((int(code[-1]) + 1) % 10)


def _quantity(rng: random.Random) -> tuple[str, str]:
    value = str(rng.randint(120, 980))
    return value, value


def _money(rng: random.Random) -> tuple[str, str]:
    value = rng.randint(1100, 9900)
    return f"{value:,}", str(value)


def _date(rng: random.Random) -> tuple[str, str]:
    month, day, year = rng.randrange(12), rng.randint(1, 28), rng.randint(2027, 2029)
    return f"{MONTHS[month]} {day}, {year}", f"{year}-{month + 1:02d}-{day:02d}"


def _person(rng: random.Random) -> tuple[str, str]:
    name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
    return name, name


def _other_surname(rng: random.Random, name: str) -> str:
    first, last = name.split(" ", 1)
    return f"{first} {rng.choice([n for n in LAST_NAMES if n != last])}"


def _pick(pool: tuple[str, ...] | list[str]) -> Callable[[random.Random], tuple[str, str]]:
    def draw(rng: random.Random) -> tuple[str, str]:
        value = rng.choice(pool)
        return value, value

    return draw


KINDS = (
    Kind(
        "identifier",
        "parcel",
        _code,
        "The tracking code for {subject} is {value}.",
        "What is the tracking code for {subject}?",
        _swap_digits,
    ),
    Kind(
        "number",
        "crate",
        _quantity,
        "{subject} weighs {value} kg.",
        "How many kilograms does {subject} weigh?",
        lambda rng, v: str(int(v) + rng.choice([-10, 10, 100])),
    ),
    Kind("money", "invoice", _money, "{subject} comes to {value} euros.", "How many euros does {subject} come to?"),
    Kind("date", "shipment", _date, "{subject} arrives on {value}.", "On what date does {subject} arrive?"),
    Kind(
        "name",
        "project",
        _person,
        "The lead for {subject} is {value}.",
        "Who is the lead for {subject}?",
        _other_surname,
    ),
    Kind("place", "workshop", _pick(CITIES), "{subject} is in {value}.", "In which city is {subject}?"),
    Kind(
        "decision",
        "team",
        _pick(VENDORS),
        "For {subject} we decided on the vendor {value}.",
        "Which vendor did we decide on for {subject}?",
    ),
    Kind("preference", "guest", _pick(PREFERENCES), "{subject} prefers {value}.", "What does {subject} prefer?"),
    # A negative constraint: the value is what must never happen (restating "never X" is recall).
    Kind(
        "constraint",
        "order",
        _pick(COURIERS),
        "Never send {subject} with {value}.",
        "Which courier must never carry {subject}?",
    ),
)
LOOKUP_TOOL = {
    "name": "lookup_record",
    "description": "Look up the record of a parcel, crate, invoice, shipment, project, workshop, team, guest or order.",
    "input_schema": {"type": "object", "properties": {"subject": {"type": "string"}}},
    "result": "No further records.",
}


@dataclass(frozen=True)
class Options:
    scenarios: int
    facts: int  # per scenario
    filler_chars: int | None = 400  # neutral text between consecutive facts...
    filler_turns: int | None = None  # ...or this many neutral exchanges instead
    seed: int = 0
    supersede: float = 0.15  # share of facts given a new value later
    distract: float = 0.25  # share of facts (of kinds that have near misses) planted beside one
    budget: int | None = None  # characters: check that every scenario is long enough to compact


def parse_filler(text: str) -> tuple[int | None, int | None]:
    """'400' (characters) or '3turns' / '3t' (exchanges)."""
    match = re.fullmatch(r"\s*(\d+)\s*(t|turns?)?\s*", text)
    if not match:
        raise ValueError(f"filler is a number of characters (400) or of turns (3turns), not {text!r}")
    return (None, int(match[1])) if match[2] else (int(match[1]), None)


def _check(options: Options) -> None:
    if options.scenarios < 1:
        raise ValueError("--scenarios must be at least 1")
    if options.budget is not None and options.budget < 1:
        raise ValueError("--budget must be at least 1")
    if not 1 <= options.facts <= len(TAGS):
        raise ValueError(f"--facts must be between 1 and {len(TAGS)} per scenario (each fact needs its own subject)")
    if (options.filler_turns or 0) < 0 or (options.filler_chars or 0) < 0:
        raise ValueError("--filler cannot be negative")
    if not (0 <= options.supersede <= 1 and 0 <= options.distract <= 1):
        raise ValueError("--supersede and --distract are shares between 0 and 1")


def _filler_turns(rng: random.Random, options: Options) -> list[dict[str, Any]]:
    if options.filler_turns is not None:
        count, size = options.filler_turns, 300
    else:
        chars = options.filler_chars or 0
        count = -(-chars // 500)
        size = chars // count if count else 0
    turns = []
    for _ in range(count):
        text = ""
        while len(text) < size:
            text = f"{text} {rng.choice(FILLER)}".strip()
        turns.append({"user": rng.choice(FILLER_QUESTIONS), "assistant": text})
    return turns


def _planting_turn(channel: str, subject: str, statement: str) -> dict[str, Any]:
    if channel == "user":
        return {"user": f"Please note this down. {statement}", "assistant": "Noted."}
    if channel == "assistant":
        return {"user": f"What do we have on file for {subject}?", "assistant": f"According to the file: {statement}"}
    return {
        "user": f"Can you look up {subject}?",
        "assistant": {
            "text": "Let me check the records.",
            "tool_calls": [{"tool": "lookup_record", "input": {"subject": subject}, "result": statement}],
            "final": f"I found the record for {subject}.",
        },
    }


def scenario(options: Options, index: int) -> dict[str, Any]:
    """One generated scenario as plain data (what its YAML file holds)."""
    rng = random.Random(f"harness-generate:{options.seed}:{index}")
    tags = rng.sample(TAGS, options.facts)
    kinds = [KINDS[(i + index) % len(KINDS)] for i in range(options.facts)]  # every kind, evenly
    rng.shuffle(kinds)
    turns: list[dict[str, Any]] = []
    pending: list[tuple[dict[str, Any], Kind, str, str]] = []  # facts to supersede later
    for i, (tag, kind) in enumerate(zip(tags, kinds)):
        subject = f"{kind.noun} {tag}"
        written, answer = kind.draw(rng)
        statement = kind.statement.format(subject=subject, value=written)
        statement = statement[0].upper() + statement[1:]
        fact: dict[str, Any] = {
            "id": f"{kind.noun}-{tag.lower()}",
            "kind": kind.name,
            "subject": subject,
            "answer": answer,
            "probe": kind.question.format(subject=subject),
        }
        if kind.near_miss and rng.random() < options.distract:
            miss = kind.near_miss(rng, written)
            statement += f" Do not confuse it with {miss}, which belongs to another record."
            fact["distractors"] = [miss]
        turn = _planting_turn(("user", "assistant", "tool")[i % 3], subject, statement)
        turn["facts"] = [fact]
        turns.append(turn)
        if rng.random() < options.supersede:
            pending.append((fact, kind, subject, written))
        turns += _filler_turns(rng, options)
        if pending and rng.random() < 0.5:  # a correction arrives some turns after the fact
            fact, kind, subject, old = pending.pop(0)
            new_written, new_answer = kind.draw(rng)
            while new_answer == fact["answer"]:
                new_written, new_answer = kind.draw(rng)
            turns.append(
                {
                    "user": f"Correction for {subject}: it is now {new_written}, not {old}.",
                    "assistant": "Thanks, I have updated it.",
                    "supersedes": [{"fact": fact["id"], "answer": new_answer}],
                }
            )
    turns += _filler_turns(rng, options) or [{"user": rng.choice(FILLER_QUESTIONS), "assistant": FILLER[0]}]
    return {
        "id": f"gen-{options.seed}-{index:03d}",
        "description": f"Generated by harness generate (seed {options.seed}, scenario {index}): "
        f"{plural(options.facts, 'fact')} with filler between them.",
        "tools": [LOOKUP_TOOL],
        "turns": turns,
    }


def generate(options: Options, out: Path) -> list[Path]:
    """Write the scenarios into `out`; on any problem raise ValueError and write nothing."""
    _check(options)

    def long_enough(played: Scenario) -> None:
        size = history_size(played.scripted_history())  # measured as the runner measures budgets
        if options.budget is not None and size <= options.budget:
            raise ValueError(
                f"scenario {played.id} is {size:,} characters long, not over the budget of "
                f"{options.budget:,}: compaction would never fire; add facts or filler"
            )

    made = [scenario(options, index) for index in range(options.scenarios)]
    return [path for path, _ in write_scenarios(made, out, "harness generate", long_enough)]
