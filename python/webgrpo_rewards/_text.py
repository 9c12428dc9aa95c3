"""Text measures of webgrpo's reward functions (lib/tasks/text.ts), with JavaScript's semantics.

The rewards here must give the numbers webgrpo's own give on the same replies, so where Python
and JavaScript differ the JavaScript meaning is written out: whitespace is the set JS's \\s and
String.trim use, digits are ASCII, string lengths and the edit distance count UTF-16 code units,
and JSON is JSON.parse's (no NaN or Infinity).
"""
import json
import re

# JavaScript's \s (and what String.prototype.trim strips).
WS = "[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
_RUN = re.compile(WS + "+")
_EDGES = re.compile("^" + WS + "+|" + WS + "+\\Z")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_FENCE = re.compile("```(?:json)?" + WS + "*([\\s\\S]*?)```", re.IGNORECASE)


def trim(text):
    return _EDGES.sub("", text)


def squash(text):
    """Whitespace collapsed, trimmed."""
    return trim(_RUN.sub(" ", text))


def _units(text):
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]


def edit_distance(a, b, cap=2000):
    """Levenshtein distance over UTF-16 code units, inputs capped at `cap` units (editDistance)."""
    s = a[:cap]
    t = b[:cap]
    previous = list(range(len(t) + 1))
    for i in range(1, len(s) + 1):
        current = [i] + [0] * len(t)
        for j in range(1, len(t) + 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (0 if s[i - 1] == t[j - 1] else 1))
        previous = current
    return previous[len(t)]


def similarity(a, b):
    """1 - edit distance / longer length: 1 for equal texts, 0 for nothing in common."""
    s, t = _units(a), _units(b)
    longer = max(len(s), len(t))
    return 1.0 if longer == 0 else 1 - edit_distance(s, t) / longer


def last_number(text):
    """The last integer or decimal number in a text, or None."""
    matches = _NUMBER.findall(text)
    return float(matches[-1]) if matches else None


def js_number(text):
    """Number(text) for the answers webgrpo writes (decimal digits); None where it is NaN."""
    body = trim(text)
    if body == "":
        return 0.0
    try:
        value = float(body)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _no_constant(name):
    raise ValueError(name)


def parse_json_reply(text):
    """(True, value) for a reply that is JSON (whole, or the body of one code fence), else (False, None)."""
    trimmed = trim(text)
    fenced = _FENCE.fullmatch(trimmed)
    try:
        return True, json.loads(fenced.group(1) if fenced else trimmed, parse_constant=_no_constant)
    except Exception:
        return False, None


def character_share(text, test):
    """Share of the characters (code points) of `text` that `test` accepts; 0 for an empty reply."""
    return 0.0 if len(text) == 0 else sum(1 for c in text if test(c)) / len(text)


def combined(scores):
    """The weighted sum of the scores that could be computed, as webgrpo combines rewards.

    `scores` is [(weight, score or None)]. verl needs a number, so a reply that no function could
    score (an item without the answer its rewards need) gets 0.0, where webgrpo leaves it unscored.
    """
    total = 0.0
    for weight, score in scores:
        if score is not None:
            total += score * weight
    return total
