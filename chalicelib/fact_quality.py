"""Whether a memory's text is a durable fact or one of the junk classes reads leave out.

Pure and deterministic. The rules read a sentence's shape (who did what, when), not its topic:
"ran the tests" is a step of a session, "the user ran a marathon in 2019" is about the user.

Linear time on any input: the text is split on whitespace once and the rules look at its
tokens through set lookups and windows of a few tokens; no regular expression runs on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

JunkClass = Literal[
    "trajectory", "narration", "tool_hint", "code_location", "probe", "status", "restatement"
]
Quality = Literal["durable", JunkClass]
# Classes a single text can fall in; a restatement is only known against a ranked list.
TEXT_CLASSES: tuple[str, ...] = (
    "trajectory",
    "narration",
    "tool_hint",
    "code_location",
    "probe",
    "status",
)
JUNK_CLASSES: tuple[str, ...] = (*TEXT_CLASSES, "restatement")
# What `loom demote-activity-narration` applies without `--classifier fact_quality`.
ACTIVITY_NARRATION: tuple[str, ...] = ("trajectory", "narration")
RESTATEMENT_COSINE = 0.95
# The rules read a sentence's opening and its words; past this a text is no probe or step.
READ_CHARS = 4_000
PROBE_CHARS = 40  # the longest text the probe list is compared with

_STRIP = ",.;:!?()[]{}\"'`*"


def _tokens(text: str) -> list[str]:
    words = (w.strip(_STRIP) for w in text[:READ_CHARS].lower().split())
    return [w for w in words if w]


def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


# ---- who is speaking, and what they did ------------------------------------------------------

_ACTORS = _words("user assistant agent claude codex cursor i we model bot")
_AGENT_ACTORS = _words("assistant agent claude codex cursor model bot")
_LEADS = _words("then just first quickly also next finally again briefly")
_STEP_VERBS = _words(
    """ran reran re-ran opened read executed searched grepped checked listed edited created
    viewed inspected fetched restarted scrolled wrote copied applied updated deleted navigated
    tried took called invoked installed uninstalled cloned pulled pushed committed built rebuilt
    modified added removed renamed moved reviewed reverted stashed rebased merged deployed
    launched started stopped killed tested debugged refactored formatted linted compiled
    downloaded uploaded clicked typed pasted printed logged queried scanned skimmed browsed
    examined looked reproduced patched fixed bumped"""
)
# A step told about a person ("the user ran ...") is a session's step only when it names
# software: the user who ran a marathon did not run a command.
_SOFTWARE = _words(
    """test tests testing file files lint linter build script command commands query tool
    tools branch commit commits diff repo repository pytest npm pnpm yarn git docker cargo make
    ruff mypy server log logs migration migrations package packages codebase lines line
    directory folder function functions class module pr ci benchmark database patch readme
    dashboard fixture config terminal shell bash endpoint api container pipeline suite error
    stack trace output dependency dependencies install binary compiler job workflow stash
    notebook cell prompt session tab console"""
)
# What makes a step worth keeping: it says what was learned, not only what was done.
_OUTCOME_PAIRS = (("found", "that"), ("turned", "out"), ("which", "means"), ("so", "that"))
_OUTCOME_WORDS = _words("because revealed")


def _body_start(tokens: list[str]) -> tuple[str | None, int]:
    """The actor a sentence opens with (None when it opens with its verb) and where the rest
    starts: "the user then ran" -> ("user", 3)."""
    i = 0
    if tokens[:1] == ["the"]:
        i = 1
    actor = None
    if i < len(tokens) and tokens[i] in _ACTORS:
        actor, i = tokens[i], i + 1
    elif i:
        return None, 0
    while i < len(tokens) and tokens[i] in _LEADS:
        i += 1
    return actor, i


def _has_outcome(tokens: list[str]) -> bool:
    if any(t in _OUTCOME_WORDS for t in tokens):
        return True
    return any((a, b) in _OUTCOME_PAIRS for a, b in zip(tokens, tokens[1:], strict=False))


def _is_pathlike(token: str) -> bool:
    return "/" in token or _source_file(token) or "::" in token


def _is_trajectory(tokens: list[str], text: str) -> bool:
    actor, i = _body_start(tokens)
    if i >= len(tokens) or tokens[i] not in _STEP_VERBS or _has_outcome(tokens):
        return False
    if actor is None or actor in _AGENT_ACTORS:
        return True
    rest = tokens[i + 1 :]
    return "`" in text or any(t in _SOFTWARE or _is_pathlike(t) for t in rest)


# ---- session narration ---------------------------------------------------------------------

# A request told as a standing rule ("asked to always use British spelling") is a preference.
_STANDING = _words("always never every whenever future default onwards forward")
_NARRATION_OPENINGS: tuple[tuple[str, ...], ...] = (
    ("let", "me"),
    ("let's",),
    ("next",),
    ("now",),
    ("so", "far"),
    ("after", "that"),
    ("earlier", "in"),
    ("in", "this", "session"),
    ("in", "this", "conversation"),
    ("in", "this", "chat"),
    ("the", "conversation"),
    ("this", "conversation"),
    ("this", "session"),
    ("i'll",),
    ("i'm", "going"),
    ("we'll",),
)
_PLAN_AFTER_I = _words("will am are going shall")
_ASSISTANT_TELLS = _words(
    """explained suggested provided apologized apologised proposed helped answered offered
    recommended summarized summarised gave described clarified responded replied outlined
    showed shared listed walked is was"""
)
_I_TELLS = _words(
    """explained helped suggested provided answered apologized apologised summarized
    summarised proposed described clarified responded replied"""
)
_WE_TELLS = _words("discussed talked worked went chatted covered spoke started")
_USER_ASKS = _words("asked requested thanked greeted inquired enquired")
_USER_ASKING = (
    ("wanted", "to", "know"),
    ("wants", "me"),
    ("wanted", "me"),
    ("is", "asking"),
    ("was", "asking"),
    ("said", "hi"),
    ("said", "hello"),
    ("said", "thanks"),
    ("and", "the", "assistant"),
    ("and", "i"),
)


def _opens_with(tokens: list[str], start: int, words: tuple[str, ...]) -> bool:
    return tuple(tokens[start : start + len(words)]) == words


def _is_narration(tokens: list[str]) -> bool:
    if any(_opens_with(tokens, 0, o) for o in _NARRATION_OPENINGS):
        return True
    actor, i = _body_start(tokens)
    if actor is None or i >= len(tokens):
        return False
    verb = tokens[i]
    if actor in _AGENT_ACTORS:
        return verb in _ASSISTANT_TELLS
    if actor == "i":
        return verb in _I_TELLS or verb in _PLAN_AFTER_I
    if actor == "we":
        return verb in _WE_TELLS or verb in _PLAN_AFTER_I
    if actor == "user":
        if any(t in _STANDING for t in tokens):
            return False
        return verb in _USER_ASKS or any(_opens_with(tokens, i, w) for w in _USER_ASKING)
    return False


# ---- generic tool hints --------------------------------------------------------------------

_TOOLS = _words(
    """git grep rg ripgrep ls cd cat curl wget find tail head chmod chown pip pip3 npm npx
    yarn docker kubectl ps jq sed awk python python3 which pytest bash zsh ssh scp tar
    ctrl+c ctrl+r ctrl+z vim make brew apt apt-get top kill man less"""
)
_AGENT_TOOLS = _words("read edit write bash glob grep webfetch websearch task todowrite")
_EXPLAINS = _words(
    """shows lists installs makes follows creates prints displays avoids stops saves searches
    removes deletes finds runs opens starts kills shows can lets helps gives returns"""
)
# A hint bound to this project or person is a fact about it.
_LOCAL = _words(
    """user user's team team's our we us my this here project repo repository codebase
    not never instead rather company"""
)


def _is_tool_hint(tokens: list[str]) -> bool:
    if any(t in _LOCAL for t in tokens):
        return False
    if _mentions_agent_tool(tokens):
        return True
    first = tokens[0]
    if first in ("use", "press", "try") or tokens[:3] == ["you", "can", "use"]:
        return True
    if first in ("run", "running", "to", "type") and any(t in _TOOLS for t in tokens[1:]):
        return True
    head = tokens[1:4] if first == "the" else tokens[:3]
    if head and head[0] in _TOOLS:
        return any(t in _EXPLAINS for t in tokens[1:8])
    return False


def _mentions_agent_tool(tokens: list[str]) -> bool:
    return any(a in _AGENT_TOOLS and b == "tool" for a, b in zip(tokens, tokens[1:], strict=False))


# ---- code locations --------------------------------------------------------------------------

_SOURCE_SUFFIXES = _words(
    """.py .pyi .ts .tsx .js .jsx .mjs .go .rs .java .kt .rb .php .cs .c .h .cc .cpp .hpp
        .swift .scala .tf .graphql .gql .sql .vue .svelte .sh .ex .exs .dart .lua"""
)
_PLACE_WORDS = _words(
    "defined declared implemented located lives live sits resides happens created registered"
)
_LINE_WORDS = _words("line lines")


def _source_file(token: str) -> bool:
    stem = token.split("::", 1)[0]
    stem = stem.rsplit(":", 1)[0] if stem.rsplit(":", 1)[-1].isdigit() else stem
    name, dot, suffix = stem.rpartition(".")
    return bool(dot and name) and "*" not in stem and "." + suffix in _SOURCE_SUFFIXES


def _is_code_location(tokens: list[str]) -> bool:
    where = [i for i, t in enumerate(tokens) if _source_file(t)]
    if not where:
        return False
    if any(t in _PLACE_WORDS or t in _LINE_WORDS for t in tokens):
        return True
    # "X is in a/b.py", "X is at a/b.py:118", "X is tests/test_x.py::test_y"
    for i in where:
        before = tokens[max(0, i - 2) : i]
        if before[-1:] in (["is"], ["are"]) or before in (["is", "in"], ["is", "at"]):
            return True
        if before in (["are", "in"], ["are", "at"]):
            return True
        # "the upload helper is upload_file in storage/s3.py": a symbol, then its file
        if before[-1:] == ["in"] and any(_is_symbol(t) for t in tokens[:i]):
            return True
    return False


def _is_symbol(token: str) -> bool:
    return ("_" in token or token.endswith("()")) and not _is_pathlike(token)


# ---- probes and placeholders ---------------------------------------------------------------

_PROBE_TEXTS = frozenset(
    """test|tests|testing|asdf|foo|bar|baz|foo bar|foobar|foo bar baz|hello|hello world|hi|hey
    |ping|pong|temp|tmp|placeholder|placeholder text|todo|tbd|dummy|dummy text|sample|sample
    value|sample text|example|x|xx|xxx|abc|abc123|qwerty|lorem ipsum|this is a test|ignore
    this|ignore|blah|blah blah|null|none|undefined|n/a|test test|test test test|testing
    123|test 123|123|1234|12345|123456|ok|okay|yes|no|.|..|...|-""".replace("\n", "").split("|")
)
_PROBE_MARKS = _words(
    """test testing asdf foo bar baz foobar placeholder dummy lorem ipsum blah ping temp
    sample qwerty ignore"""
)
_PROBE_FILLER = _words(
    """this is a an the it just please if saves save saved memory memories fact value text
    from sdk quickstart tool check checking works working see whether of to me only again
    one two new my entry write written hello world dolor sit amet consectetur"""
)
_KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm", "1234567890")


def _normalised(text: str) -> str:
    return " ".join(text.lower().split()).strip(_STRIP + " ")


def _is_probe(tokens: list[str], text: str) -> bool:
    if not tokens or (len(text) <= PROBE_CHARS and _normalised(text) in _PROBE_TEXTS):
        return True
    if len(tokens) <= 2 and all(_is_mash(t) or t.isdigit() for t in tokens):
        return True
    if len(tokens) == 1 and len(tokens[0]) <= 2:
        return True
    if len(tokens) > 8 or not any(t in _PROBE_MARKS for t in tokens):
        return False
    return all(t in _PROBE_MARKS or t in _PROBE_FILLER or t.isdigit() for t in tokens)


def _is_mash(token: str) -> bool:
    """A keyboard run ("asdfghjkl") or a repeated stretch ("sdfsdf", "aaaaaa")."""
    if len(token) < 4 or not token.isalnum():
        return False
    for unit in range(1, len(token) // 2 + 1):
        if len(token) % unit == 0 and token[:unit] * (len(token) // unit) == token:
            return True
    return any(_along_row(token, row) for row in _KEYBOARD_ROWS)


def _along_row(token: str, row: str) -> bool:
    places = [row.find(c) for c in token]
    if min(places) < 0:
        return False
    return all(b - a == 1 for a, b in zip(places, places[1:], strict=False))


# ---- one-moment status ---------------------------------------------------------------------

_MOMENT_PAIRS = (("right", "now"), ("at", "the"), ("as", "we"), ("in", "progress"))
_MOMENT_TRIPLES = (("at", "the", "moment"), ("as", "we", "speak"))
_TRANSIENT_STATES = _words(
    """down broken blocked failing behind offline unavailable waiting running restarting
    starting loading building deploying downloading uploading installing compiling scaling
    stuck hanging red green on in at out away busy"""
)
_TRANSIENT_ING = _words(
    """running restarting starting loading failing building deploying downloading uploading
    installing compiling waiting scaling hanging rebooting syncing"""
)
# A time ahead or a habit makes "is running" a plan or a routine, not this moment.
_NOT_NOW = _words(
    """next every each always usually tomorrow weekly daily nightly monthly yearly january
    february march april may june july august september october november december weekends
    mondays tuesdays wednesdays thursdays fridays saturdays sundays"""
)
_BE = _words("is are was am i'm it's")


def _is_status(tokens: list[str]) -> bool:
    if any(t in _NOT_NOW for t in tokens):
        return False
    triples = list(zip(tokens, tokens[1:], tokens[2:], strict=False))
    if any(t in _MOMENT_TRIPLES for t in triples):
        return True
    pairs = list(zip(tokens, tokens[1:], strict=False))
    if ("right", "now") in pairs or ("in", "progress") in pairs:
        return True
    if tokens[-1] in ("now", "today") or "today" in tokens:
        return True
    for i, t in enumerate(tokens):
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if t == "currently" and (
            after.endswith("ing") or after in _TRANSIENT_STATES or after[:1].isdigit()
        ):
            return True
        if t == "still" and (after.endswith("ing") or after in _TRANSIENT_STATES):
            return True
        if t in _BE and after in _TRANSIENT_ING:
            return True
        if t == "being" and after.endswith("ed"):
            return True
        if t.endswith("%") and t[:-1].isdigit():
            return True
    return False


# ---- the classifier --------------------------------------------------------------------------


def classify(text: str) -> Quality:
    """The class of one memory text: "durable" or the junk class it falls in."""
    tokens = _tokens(text)
    if _is_probe(tokens, text):
        return "probe"
    if _is_trajectory(tokens, text):
        return "trajectory"
    if _is_narration(tokens):
        return "narration"
    if _is_code_location(tokens):
        return "code_location"
    if _is_tool_hint(tokens):
        return "tool_hint"
    if _is_status(tokens):
        return "status"
    return "durable"


def restatement_text(text: str) -> str:
    """The text two restatements share: case, spacing and end punctuation folded."""
    return _normalised(text)


@dataclass(frozen=True)
class Ranked:
    """One hit of a ranked list as the filter reads it."""

    text: str
    vector: Sequence[float] | np.ndarray | None = None
    classify_text: bool = True  # verbatim chunks and digests are read for restatement only


def classify_ranked(hits: Iterable[Ranked], keep: int | None = None) -> list[Quality]:
    """Each hit's class, best first: its own class, else "restatement" when it says what a
    kept higher-ranked hit says (same normalised text, or cosine at least 0.95). With `keep`,
    the list ends at the `keep`-th durable hit: the hits after it are not read."""
    out: list[Quality] = []
    seen: set[str] = set()
    kept_vectors: list[np.ndarray] = []
    kept = 0
    for hit in hits:
        if keep is not None and kept >= keep:
            break
        quality = classify(hit.text) if hit.classify_text else "durable"
        if quality == "durable":
            vector = _unit(hit.vector)
            if restatement_text(hit.text) in seen or _near(vector, kept_vectors):
                quality = "restatement"
            else:
                seen.add(restatement_text(hit.text))
                if vector is not None:
                    kept_vectors.append(vector)
                kept += 1
        out.append(quality)
    return out


def _unit(vector: Sequence[float] | np.ndarray | None) -> np.ndarray | None:
    if vector is None:
        return None
    v = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else None


def _near(vector: np.ndarray | None, kept: list[np.ndarray]) -> bool:
    if vector is None:
        return False
    same_dim = [k for k in kept if k.shape == vector.shape]
    if not same_dim:
        return False
    return bool(np.max(np.stack(same_dim) @ vector) >= RESTATEMENT_COSINE)
