"""The sensitivity guard on adversarial text: its worst 100 KB against 100 KB of prose.

An adversarial text opens every detector's literal gate, then repeats what a detector starts
to read and gives up on: a prefix of its pattern, a run of a class it reads, or both by turns;
or it holds candidates that differ each time. The texts are screened at 10 KB and the slowest
timed again at full size. Python's `re` holds the interpreter lock, so a text the guard reads
slowly stalls every request of every tenant.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator

from bench.harness import BenchDb, Figure, say
from chalicelib.sensitivity import high_shapes

SIZE = 100_000
SCREEN_SIZE = 10_000
CONFIRM = {"quick": 4, "full": 12}  # the slowest screened texts, timed again at full size
# Every detector's gate literal once: the cheapest way for a text to be read by all of them.
GATES = "AKIA ASIA sk- ghp_ github_pat_ xoxb- eyJ PRIVATE KEY bearer password pwd :// 0 pin\n"
PREFIXES = (
    "",
    "AKIA",
    "sk-",
    "sk-proj-",
    "ghp_",
    "github_pat_",
    "xoxb-",
    "eyJ",
    "eyJaaaaaaaa.",
    "-----BEGIN ",
    "-----BEGIN RSA ",
    "PRIVATE KEY",
    "bearer ",
    "authorization: ",
    "authorization: basic",
    "password",
    "password=",
    'password="',
    "password is",
    "password for",
    "api_key:",
    "secret",
    "token",
    "pass",
    "a://",
    "a://b:",
    "ssn",
    "ssn is",
    "social security",
    "pin",
    "pin for",
    "my pin",
    "PIN",
    "1",
    "4111111111112",
    "123-45-",
)
PUMPS = (
    " ",
    "\t",
    "\n",
    "a",
    "A",
    "1",
    "-",
    "_",
    "=",
    ":",
    "'",
    '"',
    "%",
    ".",
    "/",
    "@",
    "a ",
    "1 ",
    "1-",
    "a-",
    "a:",
    "a=",
    "12 ",
    "1234 ",
    "123-45-",
    "null ",
    "x.y ",
    "<x> ",
    "4111 ",
    "4111111111112 ",
)


def _luhn_broken(digits: str) -> str:
    """digits with a last digit that fails Luhn's check: no card, so every one is judged."""
    total = sum(
        (2 * int(d) - 9 if int(d) > 4 else 2 * int(d)) if i % 2 == 0 else int(d)
        for i, d in enumerate(reversed(digits))
    )
    return digits + str((10 - total % 10 + 1) % 10)  # one past the check digit


def _different(unit: Callable[[int], str], size: int) -> str:
    """Units, each a different candidate, to `size` characters."""
    out: list[str] = []
    length, i = 0, 0
    while length < size:
        out.append(unit(i))
        length += len(out[-1])
        i += 1
    return "".join(out)


# Candidates that differ each time, so none is judged once for all: the budget's work.
DIFFERENT: dict[str, Callable[[int], str]] = {
    "placeholders after password=": lambda i: f"password=<v{i}> ",
    "small numbers after api_key:": lambda i: f"api_key: {i % 1000} ",
    "13-digit runs no card": lambda i: _luhn_broken(str(400_000_000_000 + i)) + " ",
    "grouped openings": lambda i: f"1 {i % 10_000:04d} 567 ",
    "PINs without an owner": lambda i: f"pin {i % 10_000:04d} ",
    "SSNs never issued": lambda i: f"000-{i % 100:02d}-{i % 10_000:04d} ",
    "bearer words": lambda i: "bearer " + "".join("abcdefghij"[int(c)] for c in f"{i:016d}") + " ",
}


SHAPES = ("then", "then closed", "by turns", "between")


def _shaped(shape: str, prefix: str, pump: str, body: int) -> str:
    """The pump after the prefix, then closed by a character no value or word takes; the pair
    repeated; or the pump between two prefixes: `body` characters at most."""
    count = (body - 2 * len(prefix) - 2) // len(pump)
    if shape == "by turns":
        return (prefix + pump) * (body // (len(prefix) + len(pump)))
    closing = {"then": "", "then closed": "%x", "between": prefix}[shape]
    return prefix + pump * count + closing


def _texts(size: int, names: Collection[str] | None = None) -> Iterator[tuple[str, str]]:
    """(name, text) of each prefix, pump and shape, then of each run of different candidates;
    only those in `names` when given, and only those are built."""
    body = size - len(GATES)
    for prefix in PREFIXES:
        for pump in PUMPS:
            for shape in SHAPES:
                name = f"{prefix!r} {shape} {pump!r}"
                if names is None or name in names:
                    yield name, GATES + _shaped(shape, prefix, pump, body)[:body]
    for name, unit in DIFFERENT.items():
        if names is None or name in names:
            yield name, GATES + _different(unit, body)[:body]


TEXTS = len(PREFIXES) * len(PUMPS) * len(SHAPES) + len(DIFFERENT)


def adversarial_texts(size: int, names: Collection[str] | None = None) -> dict[str, str]:
    """The generated adversarial texts of about `size` characters by name: all of them, or
    those in `names`."""
    return dict(_texts(size, names))


def guard_seconds(text: str, repeat: int) -> float:
    """The guard's best time on text over `repeat` runs (the least disturbed by the machine)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        high_shapes(text)
        best = min(best, time.perf_counter() - start)
    return best


def prose_of(turns: list[str], size: int) -> str:
    """Turns one to a line, repeated to `size` characters."""
    out: list[str] = []
    length = 0
    while length < size:
        for turn in turns:
            out.append(turn)
            length += len(turn) + 1
            if length >= size:
                break
    return "\n".join(out)[:size]


def slowest(size: int, prose: str, confirm: int) -> list[tuple[float, str]]:
    """The `confirm` adversarial texts the guard reads slowest at `size`, each as a ratio to
    `prose` (of the same size), slowest first: each text is screened once, the slowest timed
    again."""
    base = guard_seconds(prose, 5)
    screened = sorted(((guard_seconds(text, 1), name) for name, text in _texts(size)), reverse=True)
    texts = adversarial_texts(size, [name for _, name in screened[:confirm]])
    timed = [(guard_seconds(text, 3) / base, name) for name, text in texts.items()]
    return sorted(timed, reverse=True)


def run(db: BenchDb, quick: bool) -> list[Figure]:
    from bench import locomo

    turns = [t.text for conv in locomo.load() for t in conv.turns]
    prose = prose_of(turns, SIZE)
    confirm = CONFIRM["quick" if quick else "full"]
    say(f"guard: {TEXTS:,} adversarial texts screened at 10 KB ...")
    screened = slowest(SCREEN_SIZE, prose_of(turns, SCREEN_SIZE), confirm)
    texts = adversarial_texts(SIZE, [name for _, name in screened])
    base = guard_seconds(prose, 7)
    worst_ratio, worst = max((guard_seconds(text, 5) / base, name) for name, text in texts.items())
    say(f"guard: the slowest 100 KB text is {worst}")
    return [
        Figure(
            "guard: worst adversarial 100 KB",
            base * worst_ratio * 1e3,
            "ms",
            "100 KB of LoCoMo prose",
            base * 1e3,
            "<= 2x",
        )
    ]
