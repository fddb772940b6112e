"""Whether a text "reads as high": it holds a pasted secret, a card number, an SSN or a stated PIN.

Pure and side-effect free: every pattern is compiled once at import.

Every detector runs in time linear in its text (decision 0019): a pattern starts only at a
literal, or behind a lookbehind that keeps it from starting inside a run it reads; a quantifier
that could give back what the next one takes is possessive (`*+`, `++`, `?+`), and no
quantifier is nested in another over the same characters; a bounded choice (a few words, a
label) stays bounded; a run read to its end is captured whole and judged in Python, so no
attempt scans a run twice.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path

_A, _AI = re.ASCII, re.ASCII | re.IGNORECASE

# Patterns open with a literal, so the engine skips to where one stands; the lookbehind that
# keeps a match from starting inside a word comes after it, spanning it.
_AWS_KEY = re.compile(r"A(?:KIA|SIA)(?<![A-Za-z0-9]....)[A-Z0-9]{16}(?![A-Za-z0-9])", _A)
# The random part (a project's "proj-" included) needs 20 characters, a digit and a 16-character
# alphanumeric stretch: "sk-learn-..." never matches.
_OPENAI_KEY = re.compile(r"sk-(?<![\w-]...)([\w-]{20,}+)", _A)
_ALNUM_16 = re.compile(r"[A-Za-z0-9]{16}", _A)
# Scans of a captured run, in C: a run may be as long as its text.
_DIGIT, _LOWER, _UPPER = re.compile(r"\d", _A), re.compile(r"[a-z]"), re.compile(r"[A-Z]")
_GITHUB_TOKEN = re.compile(
    r"g(?:h[pousr]_(?<![A-Za-z0-9]....)[A-Za-z0-9]{30}|ithub_pat_(?<![A-Za-z0-9]...........)\w{30})",
    _A,
)
# Slack's kinds: bot, user, app, refresh, session, rotated (e), browser (c) and cookie (d, which
# is URL-encoded); "xoxo-" is a sign-off. The rest of the run is read once: a later "xox?-" in
# the same run has less of it.
_SLACK_TOKEN = re.compile(r"xox[abcdeprs]-(?<![A-Za-z0-9].....)([A-Za-z0-9%-]{10,}+)", _A)
_JWT = re.compile(r"eyJ(?<![\w-]...)[\w-]{7,}+\.[\w-]{7,}+\.", _A)
_PRIVATE_KEY = re.compile(
    r"-----\s*+BEGIN (?:[A-Z0-9]{1,16}+ ){0,3}PRIVATE KEY(?: BLOCK)?+\s*+-----", _A
)

# The case-blind patterns below are written in lower case and run on the folded text (`_fold`).
_BEARER = re.compile(
    r"(?:b(?<!\wb)earer|a(?<!\wa)uthorization\s*+:\s*+(?:basic|token))\s++([\w.~+/=-]{16,}+)", _A
)
# A name such as DB_PASSWORD matches at PASSWORD: "_" is no letter or digit.
_SECRET_NAME = (
    r"(?:p(?<![a-z0-9]p)(?:assword|asswd|assphrase|asscode|wd|(?<![a-z] p)ass|rivate[ _-]?key)"
    r"|s(?<![a-z0-9]s)(?:ecret(?:[ _-]?(?:access[_-]?)?key)?|ession[_-]?token)"
    r"|a(?<![a-z0-9]a)(?:(?:pi|ccess)[ _-]?key|pikey|(?:ccess|uth|pi)[_-]?token)"
    r"|c(?<![a-z0-9]c)lient[_-]?secret"
    r"|(?:r(?<![a-z0-9]r)efresh|b(?<![a-z0-9]b)ot|g(?<![a-z0-9]g)(?:ithub|h)|n(?<![a-z0-9]n)pm"
    r"|h(?<![a-z0-9]h)f)[_-]?token)"
)
# A value: quoted, else the run of non-space characters, read once. A quote that does not close
# reads to the line's end; a later quote of its kind on that line would have closed it.
_VALUE = r"(?:\"([^\"\n]*+)\"|'([^'\n]*+)'|`([^`\n]*+)`|(\S++))"
_ASSIGNMENT = re.compile(
    _SECRET_NAME + r"(?![a-z0-9_-])[\"'\]]{0,2}+\s*+(?:=>|:=|==?|:)[ \t]*+\n?+[ \t]*+" + _VALUE,
    _A,
)
_STATED_NAME = (
    r"(?:p(?<!\wp)(?:assword|asswd|asscode|assphrase|wd)|a(?<!\wa)pi[ _-]?key"
    r"|s(?<!\ws)ecret[ _-]?key)"
)
_SAID = r"(?:\s++(?:is(?:\s++set\s++to|\s++now)?|was|to)|(?<=\w)(?=\s*+:))"
_STATED_WORD = r"\s++[\w.@'-]++"
_STATED = re.compile(
    _STATED_NAME
    # "for the staging db": up to three words before "is" or ":", the fewest first; else the
    # last of them that ends in "'s" ("the password for bob's hunter2").
    + rf"(?:\s++(?:for|to|on|of)(?:(?:{_STATED_WORD}){{1,3}}?{_SAID}"
    + rf"|(?:{_STATED_WORD}){{0,2}}{_STATED_WORD}(?<=[\w.@'-]'s))"
    + rf"|{_SAID}|'s)(?:\s*+:)?+\s++"
    + _VALUE,
    _A,
)
_URL_CREDENTIALS = re.compile(r"://[^\s/:@]++:([^\s/@]++)@[^\s/@]", _A)
# The scheme before "://", read back from it: a letter where a word starts, then up to 63
# letters, digits, "+", "." or "-"; a run of 64 or more is taken for one, unread.
_SCHEME_BEFORE = re.compile(r"(?<![\w+.-])[a-z][a-z0-9+.-]{0,63}+\Z|[a-z0-9+.-]{64}\Z", _A)

_NULLISH_WORDS = "none null nil undefined true false n/a na tbd todo redacted hidden"
_NULLISH = frozenset(_NULLISH_WORDS.split())
# Prose words that follow "password:" or "password is" without being one.
_STOPWORD_WORDS = """
    a an the and or but not no yes is are was be been to of in on at for by with from as it
    its this that here there my your our their his her me you we they above below same
    different new old empty blank required optional mandatory needed missing wrong incorrect
    invalid valid correct right weak strong secure insecure safe unsafe long short expired
    reset changed saved stored hashed encrypted masked locked unlocked compromised leaked
    known unknown forgotten lost ok okay fine good bad simple complex easy hard private public
    secret temporary random unique default case sensitive too very also still now then please
    see check click use enter type set unset str string bytes int secretstr any password
    passwd pwd pass passphrase token key apikey credentials creds"""
_STOPWORDS = frozenset(_STOPWORD_WORDS.split())
_WORDISH_SUFFIX = re.compile(r"(?:ed|ing|able|ible|ous|ive|ful|less|ly|ment|tion|sion)$", _A)
_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*", _A)
# Masked values, templates and format slots hold no secret: ****, <your password>, ${DB_PASS}, %s.
_PLACEHOLDER = re.compile(
    r"[*•xX.#_-]+|…|[<\[({].*|\$\{.*|%s|%\(\w+\)s|(?:your|insert|enter|replace)[_ -].*|.*[_ -]here",
    _AI,
)
_ENV_REF = re.compile(r"\$[A-Z_][A-Z0-9_]*")
_CODE_REF = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[A-Za-z_$][\w$.]*[(\[].*", _A)
_WORD_CHARS = re.compile(r"\w++", _A)
_SECRET_FRAGMENT = re.compile(r"pass|pwd|secret|key|token|cred", _AI)
# Paths, prices, small numbers, scores and shares ("pass: 15/15", "pass: 87%").
_PATH_PRICE_OR_SMALL_NUMBER = re.compile(
    r"(?:~|\.{1,2})?/.*|[$€£¥]\d.*|\d{1,3}|\d+/\d+|\d+(?:\.\d+)?%", _A
)
_LINE_END = re.compile(r"[ \t]*+(?:\r?\n|$)")

# A run of 13 digits or more (no fewer make a card). It gives back whole groups only: a run
# that ends inside a group is followed by a digit.
_DIGIT_RUN = re.compile(r"\d(?<![\w.+-]\d)(?=(?:[ -]?+\d){12})\d*+(?:[ -]\d++)*(?!\w|[.,]\d)", _A)
_GROUP_SEPARATOR = re.compile(r"[ -]")
# Where a card can open in a run: a group of 13-19 digits, or one of four after a group that
# is not four digits long and before one of three to six.
_CARD_OPENING = re.compile(
    r"(?<!\d)(?:\d{13,19}(?!\d)|(?<!(?<!\d)\d{4}[ -])\d{4}(?=[ -]\d{3,6}(?!\d)))", _A
)
# Issuer ranges an unbroken run must open with: keeps 1xxx and 20xx/21xx (millisecond
# timestamps, ids) out. A run grouped as a card is written (4-4-4-4) is one whatever it opens
# with (UATP 1, UnionPay and RuPay 8).
_CARD_PREFIX = re.compile(r"2[2-7]|[3-9]")
# Three digits and a separator first: inside a digit run the separator fails at once, before
# the lookbehinds that keep the area from starting inside one.
_SSN = re.compile(
    r"(\d{3})([ -])(?<![\w.+-]\d\d\d[ -])(?<!\d[ -]\d\d\d[ -])(\d{2})\2(\d{4})(?!\w|[.,-]\d)", _A
)
# Nine digits unseparated are an SSN where they are named one ("SSN: 123456789").
_SSN_STATED = re.compile(
    r"s(?<!\ws)(?:sn|ocial\s++security(?:\s++(?:number|no\.?|#))?)\b[^\w\n]{0,3}"
    r"(?:\s*+(?:is|was|:))?+\s*+"
    r"(?<![\w.+-])(\d{3})(\d{2})(\d{4})(?![\w.,-]\d|\w)",
    _A,
)
_PIN = re.compile(
    r"p(?<!\wp)in(?P<qual>[ -]?+(?:code|number|no\.?+))?+"
    r"(?:\s++(?:for|on|of)(?:\s++[a-z']++){1,3}?)?"
    r"(?:\s*+(?P<sep>is\s++now|is|was|to|'s|:|=))?+\s*+:?+\s*+(\d{4,8})(?!\d|[.,:/-]\d)",
    _A,
)
_PIN_OWNER = re.compile(
    r"(?:my|your|his|her|our|the|card|atm|bank|debit|credit|sim|phone|new|old|door|safe)\s+$", _A
)


# What no value holds, quoted or not; and what an unquoted value that is prose or code holds.
_NO_SECRET = re.compile(f"(?:{_PLACEHOLDER.pattern})|(?-i:{_ENV_REF.pattern})", _AI)
_PROSE_OR_CODE = re.compile(
    "|".join(f"(?:{p.pattern})" for p in (_PATH_PRICE_OR_SMALL_NUMBER, _CODE_REF)), _A
)


def _is_one_of(value: str, words: frozenset[str]) -> bool:
    """Whether value is one of the words, in any ASCII letter case."""
    return value.isascii() and value.lower() in words


# A lone word is a value only where its clause ends: "pass: dragon", not "pass: use it".
_WHERE_CLAUSE_ENDS = 2


def _value_verdict(raw: str | None, quoted: str | None) -> int:
    """Whether an assigned or stated value looks like a secret, not prose, code or a template:
    1 or 0, or _WHERE_CLAUSE_ENDS for a lone word, a secret only where its clause ends."""
    value = quoted.strip() if quoted is not None else (raw or "").rstrip(".,;:!?)]}'\"")
    if not value or _is_one_of(value, _NULLISH) or _NO_SECRET.fullmatch(value):
        return 0
    if quoted is not None:
        return 1
    if _is_one_of(value, _STOPWORDS) or _PROSE_OR_CODE.fullmatch(value):
        return 0
    # A variable like db_password names a secret without holding it.
    if "_" in value and _WORD_CHARS.fullmatch(value) and _SECRET_FRAGMENT.search(value):
        return 0
    if _PLAIN_WORD.fullmatch(value):
        if _WORDISH_SUFFIX.search(value.lower()):
            return 0
        return 1 if value != raw else _WHERE_CLAUSE_ENDS  # stripped punctuation ended it
    return 1


class _TooManyCandidates(Exception):
    """A text held more candidates than the guard judges one by one."""


class _Reading:
    """One text as the detectors read it: as written, folded, and what they judged in it.

    A candidate a detector judges in Python (a value after a secret's name, a card's opening
    group, a PIN's owner) costs microseconds, against tens of nanoseconds a character for the
    scans. The same candidate is judged once a text, but each time it is found costs the
    finding. A text may hold MIN_JUDGEMENTS plus one per CHARS_PER_JUDGEMENT characters of
    candidates, shared by every detector; a text that holds more reads as high, since what
    was not judged may hold a secret.
    """

    MIN_JUDGEMENTS = 256
    CHARS_PER_JUDGEMENT = 32

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = _fold(text)
        self.left = self.MIN_JUDGEMENTS + len(text) // self.CHARS_PER_JUDGEMENT
        self._verdicts: dict[tuple[object, ...], int] = {}

    def matches(self, pattern: re.Pattern[str], *, folded: bool) -> Iterator[re.Match[str]]:
        return pattern.finditer(self.folded if folded else self.text)

    def judge(self, verdict: Callable[..., object], *candidate: object) -> int:
        """`verdict(*candidate)` as an int, judged once a text; each candidate found costs the
        budget one."""
        self.left -= 1
        if self.left < 0:
            raise _TooManyCandidates
        key = (verdict, *candidate)
        known = self._verdicts.get(key)
        if known is None:
            result = verdict(*candidate)
            known = self._verdicts[key] = result if isinstance(result, int) else int(bool(result))
        return known

    def span(self, m: re.Match[str], group: int) -> str | None:
        """A group of a match on the folded text, as the text writes it."""
        return None if m.start(group) < 0 else self.text[m.start(group) : m.end(group)]


def _has_password(r: _Reading) -> bool:
    for pattern in (_ASSIGNMENT, _STATED):
        for m in r.matches(pattern, folded=True):
            value_group = m.lastindex or 4  # the value's alternatives close the pattern
            value = r.span(m, value_group)
            raw, quoted = (value, None) if value_group == 4 else (None, value)
            verdict = r.judge(_value_verdict, raw, quoted)
            if verdict == 1 or (verdict and _LINE_END.match(r.text, m.end())):
                return True
    return "://" in r.folded and any(
        _SCHEME_BEFORE.search(r.folded, max(0, m.start() - 64), m.start())
        and r.judge(_value_verdict, r.span(m, 1), None) > 0  # a URL's password ends its clause
        for m in r.matches(_URL_CREDENTIALS, folded=True)
    )


# Luhn's doubled digit, as ASCII: 5 doubles to 10, whose digits sum to 1.
_LUHN_DOUBLED = bytes.maketrans(b"0123456789", b"0246813579")


def _luhn_ok(digits: str) -> bool:
    codes = digits.encode("ascii")[::-1]
    total = sum(codes[0::2]) + sum(codes[1::2].translate(_LUHN_DOUBLED)) - 48 * len(codes)
    return total % 10 == 0


def _is_card(digits: str, grouped: bool = False) -> bool:
    if not 13 <= len(digits) <= 19:
        return False
    issued = grouped or _CARD_PREFIX.match(digits)
    return bool(issued) and bool(digits.strip(digits[0])) and _luhn_ok(digits)


def _has_card(r: _Reading) -> bool:
    for m in r.matches(_DIGIT_RUN, folded=False):
        run = m.group()
        if " " not in run and "-" not in run:  # one group: a card, or none
            if 13 <= len(run) <= 19 and _CARD_PREFIX.match(run) and r.judge(_is_card, run):
                return True
            continue
        for opening in _CARD_OPENING.finditer(run):
            first = opening.group()
            if len(first) != 4:
                if _CARD_PREFIX.match(first) and r.judge(_is_card, first):
                    return True
                continue
            # What follows is read as far as a card can reach, and one group past it.
            reach = run[opening.end() + 1 : opening.end() + 40]
            if r.judge(_is_grouped_card, first, reach):
                return True
    return False


def _is_grouped_card(first: str, reach: str) -> bool:
    """Whether four digits and the groups after them make a card as cards are written
    (4-4-4-4, 4-6-5, 4-4-4-4-3); a run of 4-digit groups longer than a card is a list of
    numbers, so a window may not cut into one."""
    groups = _GROUP_SEPARATOR.split(reach)
    digits = first
    for j, group in enumerate(groups):
        digits += group
        if not 3 <= len(group) <= 6 or len(digits) > 19:
            return False
        cut_list = j + 1 < len(groups) and len(group) == len(groups[j + 1]) == 4
        if not cut_list and _is_card(digits, grouped=True):
            return True
    return False


def _has_ssn(r: _Reading) -> bool:
    return any(
        m.group(1) not in ("000", "666") and m.group(3) != "00" and m.group(4) != "0000"
        for m in r.matches(_SSN, folded=False)
    ) or any(
        m.group(1) not in ("000", "666") and m.group(2) != "00" and m.group(3) != "0000"
        for m in r.matches(_SSN_STATED, folded=True)
    )


def _has_pin(r: _Reading) -> bool:
    for m in r.matches(_PIN, folded=True):
        if r.text[m.start() : m.start() + 3] == "PIN" or m.group("qual") or m.group("sep"):
            return True  # a stated PIN
        if r.judge(_PIN_OWNER.search, r.folded[max(0, m.start() - 12) : m.start()]):
            return True
    return False


def _has_bearer(r: _Reading) -> bool:
    for m in r.matches(_BEARER, folded=True):
        if r.judge(_is_bearer_token, r.text[m.start(1) : m.end(1)]):
            return True
    return False


def _is_bearer_token(token: str) -> bool:
    mixed_case = _LOWER.search(token) and _UPPER.search(token)
    return bool(_DIGIT.search(token) or (mixed_case and len(token) >= 20))


def _is_openai_key_run(run: str) -> bool:
    return bool(_DIGIT.search(run) and _ALNUM_16.search(run))


def _has_openai_key(r: _Reading) -> bool:
    return any(r.judge(_is_openai_key_run, m[1]) for m in r.matches(_OPENAI_KEY, folded=False))


def _has_slack_token(r: _Reading) -> bool:
    return any(r.judge(_DIGIT.search, m[1]) for m in r.matches(_SLACK_TOKEN, folded=False))


def _matches(pattern: re.Pattern[str]) -> Callable[[_Reading], bool]:
    return lambda r: pattern.search(r.text) is not None


_DIGITS = tuple("0123456789")

# Each detector, with literals one of which every match holds (in the text as written, or in
# the folded text where the detector ignores case): a text holding none of them is not searched.
_DETECTORS: tuple[tuple[str, tuple[str, ...], bool, Callable[[_Reading], bool]], ...] = (
    ("aws_key", ("AKIA", "ASIA"), False, _matches(_AWS_KEY)),
    ("openai_key", ("sk-",), False, _has_openai_key),
    (
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        False,
        _matches(_GITHUB_TOKEN),
    ),
    ("slack_token", ("xox",), False, _has_slack_token),
    ("jwt", ("eyJ",), False, _matches(_JWT)),
    ("private_key", ("PRIVATE KEY",), False, _matches(_PRIVATE_KEY)),
    ("bearer_token", ("bearer", "authorization"), True, _has_bearer),
    ("password", ("pass", "pwd", "secret", "key", "token", "://"), True, _has_password),
    ("card_number", _DIGITS, False, _has_card),
    ("ssn", _DIGITS, False, _has_ssn),
    ("pin", ("pin",), True, _has_pin),
)
# A text with more candidates to judge than its budget (`_Reading`) reads as high, this kind.
TOO_MANY_CANDIDATES = "too_many_candidates"
KINDS: tuple[str, ...] = (*(kind for kind, *_ in _DETECTORS), TOO_MANY_CANDIDATES)


# The two characters whose lower case is ASCII: KELVIN SIGN ("k") and I WITH DOT ABOVE ("i"
# and a combining dot, one character longer). A case-blind ASCII pattern matches neither.
_FOLDS_TO_ASCII = ("\u212a", "\u0130")


def _fold(text: str) -> str:
    """The text in lower case, each character where it stands, so that a pattern written in
    lower case reads it as an ASCII case-blind pattern reads the text."""
    if any(c in text for c in _FOLDS_TO_ASCII):
        for c in _FOLDS_TO_ASCII:
            text = text.replace(c, "\u0131")  # dotless i: not ASCII, its own lower case
    return text.lower()


def _shapes(text: str) -> Iterator[str]:
    reading = _Reading(text)
    for kind, needles, case_blind, found in _DETECTORS:
        held = reading.folded if case_blind else text
        for needle in needles:  # a plain loop: this runs on every search hit
            if needle in held:
                try:
                    if found(reading):
                        yield kind
                except _TooManyCandidates:
                    yield TOO_MANY_CANDIDATES
                    return
                break


def high_shapes(text: str) -> list[str]:
    """The kinds of high-sensitivity shape found in text, each once, in KINDS order."""
    return list(_shapes(text))


def is_sensitive(text: str) -> bool:
    """True when text "reads as high" (the spec's high sensitivity): it holds any high shape."""
    return next(_shapes(text), None) is not None


def is_sensitive_embedded(text: str, embed_chars: int) -> bool:
    """True when text, or the first `embed_chars` of it (what an embedder is sent and an index
    keeps), holds a high shape: a cut can make one out of a longer run (five groups of four
    digits, cut after the fourth, read as a card number)."""
    return is_sensitive(text) or (len(text) > embed_chars and is_sensitive(text[:embed_chars]))


@functools.cache
def guard_fingerprint() -> str:
    """This guard's fingerprint: a hash of its source. A build whose guard reads differently
    has another, and the guard sweep reads every indexed text again."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def is_sensitive_excerpt(text: str, shown_chars: int, lookahead: int = 1024) -> bool:
    """True when the shown excerpt, or the lookahead characters past it, holds a high shape;
    the excerpt is checked as cut too (a cut can make a card number of a longer digit run)."""
    shown = max(0, shown_chars)
    return is_sensitive(text[: shown + max(0, lookahead)]) or (
        len(text) > shown and is_sensitive(text[:shown])
    )
