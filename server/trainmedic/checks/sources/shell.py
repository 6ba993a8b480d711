"""Launch scripts (`*.sh`): lines with their comments set aside, and flag-level edits.

A launch script is read line by line, not parsed as shell: the checks look for environment
assignments and command-line flags, which sit on one physical line each.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from trainmedic.checks.findings import Position, Range, TextEdit, split_lines


def code_part(line: str) -> str:
    """`line` up to an unquoted `#` that starts a word (the rest is a comment)."""
    quote = ""
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\" and quote != "'":
            index += 2
            continue
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t;"):
            return line[:index]
        index += 1
    return line


_ASSIGNMENT = re.compile(
    r"^\s*(?:export\s+|local\s+|readonly\s+|declare\s+)?([A-Za-z_]\w*)="
    r"(?:\"([^\"$`]*)\"|'([^']*)'|\$\{\1:-([^}$`\s]*)\}|([^\s;&|$`'\"]*))(?=\s|;|$)")
_REFERENCE = re.compile(r"\$(?:\{([A-Za-z_]\w*)(?::?-([^}$`\s]*))?\}|([A-Za-z_]\w*))")


@dataclass(frozen=True)
class Expanded:
    """A line with the variables of one known value put in, and where each character of
    it came from (a put-in value maps to the whole `$VAR` it replaced)."""

    text: str
    starts: list[int]
    ends: list[int]
    names: list[str]  # the variables put in

    def span(self, start: int, end: int) -> tuple[int, int]:
        return self.starts[start], self.ends[end - 1]


@dataclass(frozen=True)
class ShellScript:
    path: str
    lines: list[str]
    variables: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def parse(cls, path: str, text: str) -> ShellScript:
        """The lines, and every plain `NAME=value` the script sets (any line, any branch)."""
        lines = split_lines(text)
        variables: dict[str, set[str]] = {}
        for line in lines:
            match = _ASSIGNMENT.match(code_part(line))
            if match:
                value = next((g for g in match.groups()[1:] if g is not None), "")
                variables.setdefault(match.group(1), set()).add(value)
        return cls(path, lines, variables)

    def matches(self, pattern: re.Pattern[str]) -> Iterator[tuple[int, re.Match[str]]]:
        """(line, match) for every match in the code part of each line."""
        for number, line in enumerate(self.lines):
            yield from ((number, m) for m in pattern.finditer(code_part(line)))

    def expand(self, line: str) -> Expanded:
        """`line`'s code with `$NAME`, `${NAME}` and `${NAME:-default}` replaced where the
        script gives the variable exactly one value (or only its default is known)."""
        code = code_part(line)
        text: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        names: list[str] = []
        last = 0
        for ref in _REFERENCE.finditer(code):
            name = ref.group(1) or ref.group(3)
            known = self.variables.get(name, set())
            value = next(iter(known)) if len(known) == 1 else \
                ref.group(2) if not known and ref.group(2) is not None else None
            if value is None:
                continue
            text.append(code[last:ref.start()])
            starts += range(last, ref.start())
            ends += range(last + 1, ref.start() + 1)
            text.append(value)
            starts += [ref.start()] * len(value)
            ends += [ref.end()] * len(value)
            names.append(name)
            last = ref.end()
        text.append(code[last:])
        starts += range(last, len(code))
        ends += range(last + 1, len(code) + 1)
        return Expanded("".join(text), starts, ends, names)

    def expanded_matches(self, pattern: re.Pattern[str]
                         ) -> Iterator[tuple[int, re.Match[str], Expanded]]:
        """(line, match, expansion) for matches that need a variable put in to appear; the
        match's positions are in the expanded text (`Expanded.span` maps them back)."""
        for number, line in enumerate(self.lines):
            if "$" not in line:
                continue
            expanded = self.expand(line)
            for match in pattern.finditer(expanded.text) if expanded.names else ():
                start, end = expanded.span(*match.span())
                if line[start:end] != match.group(0):  # else `matches` finds it as written
                    yield number, match, expanded

    def span(self, line: int, match: re.Match[str], group: int | str = 0) -> Range:
        return Range(Position(line, match.start(group)), Position(line, match.end(group)))

    def delete_words(self, line: int, start: int, end: int) -> TextEdit:
        """Remove `line[start:end]` and the blank before it, or the whole line when the words
        were all it held (a `\\`-continued flag line in a long launch command)."""
        text = self.lines[line]
        rest = code_part(text)[:start] + code_part(text)[end:]
        if not rest.strip().rstrip("\\").strip() and line + 1 < len(self.lines):
            return TextEdit(Range(Position(line, 0), Position(line + 1, 0)), "")
        while start > 0 and text[start - 1] in " \t":
            start -= 1
        return TextEdit(Range(Position(line, start), Position(line, end)), "")
