"""Whether a text "reads as high": it holds a pasted secret, a card number, an SSN or a stated PIN.

Pure and side-effect free: every pattern is compiled once at import.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path

_A, _AI = re.ASCII, re.ASCII | re.IGNORECASE

_AWS_KEY = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])", _A)
# The random part needs a digit and a 16-character alphanumeric run: "sk-learn-..." never matches.
_OPENAI_KEY = re.compile(
    r"(?<![\w-])sk-(?:(?:proj|svcacct|admin)-)?(?=[\w-]{20})(?=[\w-]*\d)[\w-]*?[A-Za-z0-9]{16}", _A
)
_GITHUB_TOKEN = re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,})", _A)
# Slack's kinds: bot, user, app, refresh, session, rotated (e), browser (c) and cookie (d, which
# is URL-encoded); "xoxo-" is a sign-off.
_SLACK_TOKEN = re.compile(
    r"(?<![A-Za-z0-9])xox[abcdeprs]-(?=[A-Za-z0-9%-]*\d)[A-Za-z0-9%-]{10,}", _A
)
_JWT = re.compile(r"(?<![\w-])eyJ[\w-]{7,}\.[\w-]{7,}\.[\w-]*", _A)
_PRIVATE_KEY = re.compile(r"-{5}\s*BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?\s*-{5}", _A)
_BEARER = re.compile(r"\b(?:bearer|authorization\s*:\s*(?:basic|token))\s+([\w.~+/=-]{16,})", _AI)

# A name such as DB_PASSWORD matches at PASSWORD: "_" is no letter or digit.
_SECRET_NAME = (
    r"(?:password|passwd|passphrase|passcode|pwd|(?<![A-Za-z] )pass"
    r"|secret[ _-]?(?:access[_-]?)?key|(?:api|access|private)[ _-]?key|apikey|client[_-]?secret"
    r"|secret"
    r"|(?:access|auth|refresh|api|bot|session|github|gh|npm|hf)[_-]?token)"
)
_VALUE = r"(?:\"([^\"\n]*)\"|'([^'\n]*)'|`([^`\n]*)`|(\S+))"
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9])"
    + _SECRET_NAME
    + r"(?![A-Za-z0-9_-])[\"'\]]{0,2}\s*(?:=>|:=|==?|:)[ \t]*\n?[ \t]*"
    + _VALUE,
    _AI,
)
_STATED = re.compile(
    r"\b(?:password|passwd|passcode|passphrase|pwd|(?:api|secret)[ _-]?key)"
    r"(?:\s+(?:for|to|on|of)(?:\s+[\w.@'-]+){1,3}?)?"
    r"(?:\s+(?:is(?:\s+set\s+to|\s+now)?|was|to)|'s|(?<=\w)(?=\s*:))\s*:?\s+" + _VALUE,
    _AI,
)
_URL_CREDENTIALS = re.compile(r"(?<![\w+.-])[a-z][a-z0-9+.-]*://[^\s/:@]+:([^\s/@]+)@[^\s/@]", _AI)

_NULLISH = re.compile(r"none|null|nil|undefined|true|false|n/a|na|tbd|todo|redacted|hidden", _AI)
# Prose words that follow "password:" or "password is" without being one.
_STOPWORD = re.compile(
    r"a|an|the|and|or|but|not|no|yes|is|are|was|be|been|to|of|in|on|at|for|by|with|from|as|it|"
    r"its|this|that|here|there|my|your|our|their|his|her|me|you|we|they|above|below|same|"
    r"different|new|old|empty|blank|required|optional|mandatory|needed|missing|wrong|incorrect|"
    r"invalid|valid|correct|right|weak|strong|secure|insecure|safe|unsafe|long|short|expired|"
    r"reset|changed|saved|stored|hashed|encrypted|masked|locked|unlocked|compromised|leaked|"
    r"known|unknown|forgotten|lost|ok|okay|fine|good|bad|simple|complex|easy|hard|private|public|"
    r"secret|temporary|random|unique|default|case|sensitive|too|very|also|still|now|then|please|"
    r"see|check|click|use|enter|type|set|unset|str|string|bytes|int|secretstr|any|password|"
    r"passwd|pwd|pass|passphrase|token|key|apikey|credentials|creds",
    _AI,
)
_WORDISH_SUFFIX = re.compile(r"(?:ed|ing|able|ible|ous|ive|ful|less|ly|ment|tion|sion)$", _A)
_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*", _A)
# Masked values, templates and format slots hold no secret: ****, <your password>, ${DB_PASS}, %s.
_PLACEHOLDER = re.compile(
    r"[*•xX.#_-]+|…|[<\[({].*|\$\{.*|%s|%\(\w+\)s|(?:your|insert|enter|replace)[_ -].*|.*[_ -]here",
    _AI,
)
_ENV_REF = re.compile(r"\$[A-Z_][A-Z0-9_]*")
_CODE_REF = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[A-Za-z_$][\w$.]*[(\[].*", _A)
_IDENTIFIER_WITH_UNDERSCORE = re.compile(r"\w*_\w*", _A)
_SECRET_FRAGMENT = re.compile(r"pass|pwd|secret|key|token|cred", _AI)
# Paths, prices, small numbers, scores and shares ("pass: 15/15", "pass: 87%").
_PATH_PRICE_OR_SMALL_NUMBER = re.compile(
    r"(?:~|\.{1,2})?/.*|[$€£¥]\d.*|\d{1,3}|\d+/\d+|\d+(?:\.\d+)?%", _A
)
_LINE_END = re.compile(r"[ \t]*(?:\r?\n|$)")

_DIGIT_RUN = re.compile(r"(?<![\w.+-])\d+(?:[ -]\d+)*(?!\w|[.,]\d)", _A)
# Issuer ranges an unbroken run must open with: keeps 1xxx and 20xx/21xx (millisecond
# timestamps, ids) out. A run grouped as a card is written (4-4-4-4) is one whatever it opens
# with (UATP 1, UnionPay and RuPay 8).
_CARD_PREFIX = re.compile(r"2[2-7]|[3-9]")
_SSN = re.compile(r"(?<![\w.+-])(?<!\d[ -])(\d{3})([ -])(\d{2})\2(\d{4})(?!\w|[.,-]\d)", _A)
# Nine digits unseparated are an SSN where they are named one ("SSN: 123456789").
_SSN_STATED = re.compile(
    r"\b(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)\b[^\w\n]{0,3}(?:\s*(?:is|was|:)\s*)?"
    r"(?<![\w.+-])(\d{3})(\d{2})(\d{4})(?![\w.,-]\d|\w)",
    _AI,
)
_PIN = re.compile(
    r"\b(pin)(?P<qual>[ -]?(?:code|number|no\.?))?(?:\s+(?:for|on|of)(?:\s+[A-Za-z']+){1,3}?)?"
    r"(?:\s*(?P<sep>is\s+now|is|was|to|'s|:|=))?\s*:?\s*(\d{4,8})(?!\d|[.,:/-]\d)",
    _AI,
)
_PIN_OWNER = re.compile(
    r"(?:my|your|his|her|our|the|card|atm|bank|debit|credit|sim|phone|new|old|door|safe)\s+$", _AI
)


def _value_is_secret(raw: str | None, quoted: str | None, ends_line: bool) -> bool:
    """True when an assigned or stated value looks like a secret, not prose, code or a template."""
    value = quoted.strip() if quoted is not None else (raw or "").rstrip(".,;:!?)]}'\"")
    if not value or any(p.fullmatch(value) for p in (_NULLISH, _PLACEHOLDER, _ENV_REF)):
        return False
    if quoted is not None:
        return True
    if any(p.fullmatch(value) for p in (_STOPWORD, _PATH_PRICE_OR_SMALL_NUMBER, _CODE_REF)):
        return False
    # A variable like db_password names a secret without holding it.
    if _IDENTIFIER_WITH_UNDERSCORE.fullmatch(value) and _SECRET_FRAGMENT.search(value):
        return False
    if _PLAIN_WORD.fullmatch(value):
        # A lone word is a value only where its clause ends: "pass: dragon", not "pass: use it".
        ends_clause = value != raw or ends_line
        return ends_clause and not _WORDISH_SUFFIX.search(value.lower())
    return True


def _has_password(text: str) -> bool:
    for pattern in (_ASSIGNMENT, _STATED):
        for m in pattern.finditer(text):
            quoted = next((q for q in m.group(1, 2, 3) if q is not None), None)
            if _value_is_secret(m.group(4), quoted, bool(_LINE_END.match(text, m.end()))):
                return True
    return any(_value_is_secret(m.group(1), None, True) for m in _URL_CREDENTIALS.finditer(text))


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _is_card(digits: str, grouped: bool = False) -> bool:
    issued = grouped or _CARD_PREFIX.match(digits)
    valid_shape = 13 <= len(digits) <= 19 and issued and len(set(digits)) > 1
    return bool(valid_shape) and _luhn_ok(digits)


def _has_card(text: str) -> bool:
    for m in _DIGIT_RUN.finditer(text):
        groups = re.split(r"[ -]", m.group())
        for i, first in enumerate(groups):
            if _is_card(first):
                return True
            # Grouped cards open with four digits (4-4-4-4, 4-6-5, 4-4-4-4-3); a run of 4-digit
            # groups longer than a card is a list of numbers, so a window may not cut into one.
            if len(first) != 4 or (i and len(groups[i - 1]) == 4):
                continue
            digits = first
            for j in range(i + 1, len(groups)):
                digits += groups[j]
                if not 3 <= len(groups[j]) <= 6 or len(digits) > 19:
                    break
                cut_list = j + 1 < len(groups) and len(groups[j]) == len(groups[j + 1]) == 4
                if not cut_list and _is_card(digits, grouped=True):
                    return True
    return False


def _has_ssn(text: str) -> bool:
    return any(
        m.group(1) not in ("000", "666") and m.group(3) != "00" and m.group(4) != "0000"
        for m in _SSN.finditer(text)
    ) or any(
        m.group(1) not in ("000", "666") and m.group(2) != "00" and m.group(3) != "0000"
        for m in _SSN_STATED.finditer(text)
    )


def _has_pin(text: str) -> bool:
    for m in _PIN.finditer(text):
        stated = m.group(1) == "PIN" or m.group("qual") or m.group("sep")
        if stated or _PIN_OWNER.search(text[max(0, m.start() - 12) : m.start()]):
            return True
    return False


def _has_bearer(text: str) -> bool:
    for m in _BEARER.finditer(text):
        token = m.group(1)
        mixed_case = any(c.islower() for c in token) and any(c.isupper() for c in token)
        if any(c.isdigit() for c in token) or (mixed_case and len(token) >= 20):
            return True
    return False


def _matches(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda text: pattern.search(text) is not None


_DIGITS = tuple("0123456789")

# Each detector, with literals one of which every match holds (in the text as written, or in
# lower case where the detector ignores case): a text holding none of them is not searched.
_DETECTORS: tuple[tuple[str, tuple[str, ...], bool, Callable[[str], bool]], ...] = (
    ("aws_key", ("AKIA", "ASIA"), False, _matches(_AWS_KEY)),
    ("openai_key", ("sk-",), False, _matches(_OPENAI_KEY)),
    (
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        False,
        _matches(_GITHUB_TOKEN),
    ),
    ("slack_token", ("xox",), False, _matches(_SLACK_TOKEN)),
    ("jwt", ("eyJ",), False, _matches(_JWT)),
    ("private_key", ("PRIVATE KEY",), False, _matches(_PRIVATE_KEY)),
    ("bearer_token", ("bearer", "authorization"), True, _has_bearer),
    ("password", ("pass", "pwd", "secret", "key", "token", "://"), True, _has_password),
    ("card_number", _DIGITS, False, _has_card),
    ("ssn", _DIGITS, False, _has_ssn),
    ("pin", ("pin",), True, _has_pin),
)
KINDS: tuple[str, ...] = tuple(kind for kind, *_ in _DETECTORS)


def _shapes(text: str) -> Iterator[str]:
    lower = text.lower()
    for kind, needles, folded, found in _DETECTORS:
        held = lower if folded else text
        for needle in needles:  # a plain loop: this runs on every search hit
            if needle in held:
                if found(text):
                    yield kind
                break


def high_shapes(text: str) -> list[str]:
    """The kinds of high-sensitivity shape found in text, each once, in KINDS order."""
    return list(_shapes(text))


def reads_as_high(text: str) -> bool:
    """True when text holds any high-sensitivity shape."""
    return next(_shapes(text), None) is not None


def embedded_reads_as_high(text: str, embed_chars: int) -> bool:
    """True when text, or the first `embed_chars` of it (what an embedder is sent and an index
    keeps), holds a high shape: a cut can make one out of a longer run (five groups of four
    digits, cut after the fourth, read as a card number)."""
    return reads_as_high(text) or (len(text) > embed_chars and reads_as_high(text[:embed_chars]))


@functools.cache
def guard_fingerprint() -> str:
    """This guard's fingerprint: a hash of its source. A build whose guard reads differently
    has another, and the guard sweep reads every indexed text again."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def excerpt_reads_as_high(text: str, shown_chars: int, lookahead: int = 1024) -> bool:
    """True when the shown excerpt, or the lookahead characters past it, holds a high shape;
    the excerpt is checked as cut too (a cut can make a card number of a longer digit run)."""
    shown = max(0, shown_chars)
    return reads_as_high(text[: shown + max(0, lookahead)]) or (
        len(text) > shown and reads_as_high(text[:shown])
    )
