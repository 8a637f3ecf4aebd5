"""A parser for Java ``.properties`` files (the format of Kafka's server.properties).

It follows java.util.Properties.load: comment lines start with ``#`` or ``!``; a key ends
at the first unescaped ``=``, ``:`` or whitespace (whitespace around the separator is
skipped); a line ending in an odd number of backslashes continues on the next line, whose
leading whitespace is dropped; escapes ``\\t \\n \\r \\f \\uXXXX`` are decoded and a
backslash before any other character stands for that character. Later keys win.
"""

from __future__ import annotations

import re
from pathlib import Path

from kchaos.harness.errors import ConfigError, shown

# What Kafka property names look like (and what the scenario schema allows).
_NAME = re.compile(r"^[A-Za-z0-9._-]+$")

_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_WHITESPACE = " \t\f"


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, logical line) pairs, comments and blanks removed."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        line = lines[i].lstrip(_WHITESPACE)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(_WHITESPACE)
            i += 1
        if _continues(line):  # a continuation at the end of the file: drop the backslash
            line = line[:-1]
        out.append((start + 1, line))
    return out


def _continues(line: str) -> bool:
    backslashes = len(line) - len(line.rstrip("\\"))
    return backslashes % 2 == 1


def _unescape(raw: str, *, file: str, line: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch != "\\" or i + 1 >= len(raw):
            out.append(ch)
            i += 1
            continue
        nxt = raw[i + 1]
        if nxt == "u":
            digits = raw[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(f"malformed \\u escape {raw[i : i + 6]!r}", file=file, line=line)
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_SIMPLE_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """Split a logical line into raw (still escaped) key and value."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _WHITESPACE:
            break
        i += 1
    j = i
    while j < len(line) and line[j] in _WHITESPACE:
        j += 1
    if j < len(line) and line[j] in "=:":
        j += 1
        while j < len(line) and line[j] in _WHITESPACE:
            j += 1
    return line[:i], line[j:]


def parse_properties(text: str, *, file: str = "<properties>") -> dict[str, str]:
    """Parse the text of a properties file into an ordered dict."""
    return parse_properties_lines(text, file=file)[0]


def parse_properties_lines(
    text: str, *, file: str = "<properties>"
) -> tuple[dict[str, str], dict[str, int]]:
    """The properties and the line each was (last) set on."""
    result: dict[str, str] = {}
    lines: dict[str, int] = {}
    for lineno, line in _logical_lines(text):
        raw_key, raw_value = _split(line)
        key = _unescape(raw_key, file=file, line=lineno)
        if not key:
            raise ConfigError("a property has an empty key", file=file, line=lineno)
        result[key] = _unescape(raw_value, file=file, line=lineno)
        lines[key] = lineno
    return result, lines


def _check_kafka_config(text: str, props: dict[str, str], lines: dict[str, int], file: str) -> None:
    """A Kafka broker configuration is text with property names Kafka can have: a NUL
    byte or another control character means a binary file given by mistake, refused
    without echoing it; a name outside Kafka's alphabet is named with its line."""
    bad = re.search(r"[\x00-\x08\x0b\x0e-\x1f\x7f]", text)
    if bad is not None:
        raise ConfigError(
            f"not a properties file: control character {bad.group()!r} (binary content?)",
            file=file,
            line=text.count("\n", 0, bad.start()) + 1,
        )
    for key in props:
        if not _NAME.match(key):
            raise ConfigError(
                f"{shown(key)} is not a Kafka property name (letters, digits, '.', '_', '-')",
                file=file,
                line=lines[key],
            )


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a properties file (ISO-8859-1 as Java does, UTF-8 accepted when it decodes)."""
    return load_properties_lines(path)[0]


def load_properties_lines(path: str | Path) -> tuple[dict[str, str], dict[str, int]]:
    """:func:`load_properties` with the line of each property, for error messages."""
    p = Path(path)
    if p.is_dir():
        raise ConfigError("is a directory, not a broker config file", file=str(p))
    if p.exists() and not p.is_file():
        raise ConfigError("is not a regular file", file=str(p))
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read broker config: {exc.strerror}", file=str(p)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    props, lines = parse_properties_lines(text, file=str(p))
    _check_kafka_config(text, props, lines, str(p))
    return props, lines
