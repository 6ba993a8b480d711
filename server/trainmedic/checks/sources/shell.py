"""Launch scripts (`*.sh`): lines with their comments set aside, and flag-level edits.

A launch script is read line by line, not parsed as shell: the checks look for environment
assignments and command-line flags, which sit on one physical line each.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

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


@dataclass(frozen=True)
class ShellScript:
    path: str
    lines: list[str]

    @classmethod
    def parse(cls, path: str, text: str) -> ShellScript:
        return cls(path, split_lines(text))

    def matches(self, pattern: re.Pattern[str]) -> Iterator[tuple[int, re.Match[str]]]:
        """(line, match) for every match in the code part of each line."""
        for number, line in enumerate(self.lines):
            yield from ((number, m) for m in pattern.finditer(code_part(line)))

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
