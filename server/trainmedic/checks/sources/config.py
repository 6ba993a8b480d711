"""DeepSpeed JSON and Accelerate YAML configs as trees that remember where each value is.

`json` gives no positions, so JSON is read by a small recursive-descent parser (strings are
decoded by `json` itself, numbers with json's own pattern); YAML comes from
PyYAML's composer, whose nodes carry marks. Both give the same `Node` tree.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

from trainmedic.checks.findings import CheckError, Position, Range, TextEdit, split_lines

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_LITERALS = {"true": True, "false": False, "null": None}
MAX_DEPTH = 200


@dataclass(frozen=True)
class Node:
    """A value and where it is; a mapping keeps its entries as (key, key range, value)."""

    value: object
    range: Range
    entries: tuple[tuple[str, Range, Node], ...] = ()
    items: tuple[Node, ...] = ()
    is_mapping: bool = False

    def get(self, key: str) -> Node | None:
        found = self.entry(key)
        return found[1] if found else None

    def entry(self, key: str) -> tuple[Range, Node] | None:
        """The range of `key` and its value."""
        return next(((where, value) for k, where, value in self.entries if k == key), None)

    def walk(self) -> Iterator[Node]:
        yield self
        for _, _, value in self.entries:
            yield from value.walk()
        for item in self.items:
            yield from item.walk()


@dataclass(frozen=True)
class ConfigDocument:
    path: str
    lines: list[str]
    roots: tuple[Node, ...]

    def find_word(self, where: Range, word: str) -> Position | None:
        """Where `word` starts inside a one-line key or scalar (past any quotes)."""
        start, end = where.start, where.end
        if start.line != end.line:
            return None
        found = self.lines[start.line][start.character:end.character].find(word)
        return Position(start.line, start.character + found) if found >= 0 else None

    def replace_word(self, where: Range, old: str, new: str) -> TextEdit | None:
        at = self.find_word(where, old)
        if at is None:
            return None
        return TextEdit(Range(at, Position(at.line, at.character + len(old))), new)


def is_true(node: Node | None) -> bool:
    return node is not None and node.value is True


def bf16_in_fp16_block(block: Node | None) -> bool:
    """GPT-NeoX's `"fp16": {"enabled": true, "type": "bfloat16"}`: its fp16 block with a
    `type` trains in bf16 (its README: set precision "by adding "type": "bfloat16""), so
    the block's loss-scale settings do nothing."""
    kind = block.get("type") if block is not None and block.is_mapping else None
    return kind is not None and str(kind.value).lower() in ("bfloat16", "bf16")


# --- JSON ---------------------------------------------------------------------------------------

class _JsonReader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def position(self, offset: int) -> Position:
        line = bisect_right(self.starts, offset) - 1
        return Position(line, offset - self.starts[line])

    def fail(self, offset: int, what: str) -> CheckError:
        where = self.position(offset)
        return CheckError(f"invalid JSON: {what} (line {where.line + 1}, column "
                          f"{where.character + 1})", where.line, where.character)

    def skip(self, offset: int) -> int:
        match = _WHITESPACE.match(self.text, offset)
        return match.end() if match else offset

    def value(self, offset: int, depth: int) -> tuple[Node, int]:
        if depth > MAX_DEPTH:
            raise self.fail(offset, "nested too deeply")
        char = self.text[offset:offset + 1]
        if char == "{":
            return self.mapping(offset, depth)
        if char == "[":
            return self.sequence(offset, depth)
        if char == '"':
            string, end = self.string(offset)
            return Node(string, self.span(offset, end)), end
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, offset):
                end = offset + len(word)
                return Node(literal, self.span(offset, end)), end
        match = _NUMBER.match(self.text, offset)
        if match and match.end() > offset:
            text = match.group(0)
            number = float(text) if any(c in text for c in ".eE") else int(text)
            return Node(number, self.span(offset, match.end())), match.end()
        raise self.fail(offset, "expected a value" if char else "unexpected end of file")

    def string(self, offset: int) -> tuple[str, int]:
        try:
            value, end = self.decoder.raw_decode(self.text, offset)
        except json.JSONDecodeError as error:
            raise self.fail(error.pos, error.msg) from None
        return str(value), end

    def span(self, start: int, end: int) -> Range:
        return Range(self.position(start), self.position(end))

    def mapping(self, start: int, depth: int) -> tuple[Node, int]:
        entries: list[tuple[str, Range, Node]] = []
        offset = self.skip(start + 1)
        if self.text.startswith("}", offset):
            return Node(None, self.span(start, offset + 1), is_mapping=True), offset + 1
        while True:
            if not self.text.startswith('"', offset):
                raise self.fail(offset, "expected a key in double quotes")
            key, after = self.string(offset)
            key_range = self.span(offset, after)
            offset = self.skip(after)
            if not self.text.startswith(":", offset):
                raise self.fail(offset, "expected ':'")
            value, offset = self.value(self.skip(offset + 1), depth + 1)
            entries.append((key, key_range, value))
            offset = self.skip(offset)
            if self.text.startswith(",", offset):
                offset = self.skip(offset + 1)
            elif self.text.startswith("}", offset):
                return Node(None, self.span(start, offset + 1), tuple(entries),
                            is_mapping=True), offset + 1
            else:
                raise self.fail(offset, "expected ',' or '}'")

    def sequence(self, start: int, depth: int) -> tuple[Node, int]:
        items: list[Node] = []
        offset = self.skip(start + 1)
        if self.text.startswith("]", offset):
            return Node(None, self.span(start, offset + 1)), offset + 1
        while True:
            item, offset = self.value(offset, depth + 1)
            items.append(item)
            offset = self.skip(offset)
            if self.text.startswith(",", offset):
                offset = self.skip(offset + 1)
            elif self.text.startswith("]", offset):
                return Node(None, self.span(start, offset + 1), items=tuple(items)), offset + 1
            else:
                raise self.fail(offset, "expected ',' or ']'")


def parse_json(path: str, text: str) -> ConfigDocument:
    reader = _JsonReader(text)
    start = reader.skip(1 if text.startswith("\ufeff") else 0)
    root, end = reader.value(start, 0)
    end = reader.skip(end)
    if end != len(text):
        raise reader.fail(end, "extra data after the value")
    return ConfigDocument(path, split_lines(text), (root,))


# --- YAML ---------------------------------------------------------------------------------------

def parse_yaml(path: str, text: str) -> ConfigDocument:
    import yaml

    from trainmedic.catalogue.safe_yaml import LimitedLoader

    try:
        loader = LimitedLoader(text)
    except yaml.YAMLError as error:
        raise CheckError(f"invalid YAML: {error}", 0) from None

    def mark(m: yaml.Mark) -> Position:
        return Position(m.line, m.column)

    def convert(node: yaml.Node, depth: int) -> Node:
        where = Range(mark(node.start_mark), mark(node.end_mark))
        if depth > MAX_DEPTH:
            return Node(None, where)
        if isinstance(node, yaml.MappingNode):
            entries = tuple((str(key.value), Range(mark(key.start_mark), mark(key.end_mark)),
                             convert(value, depth + 1))
                            for key, value in node.value if isinstance(key, yaml.ScalarNode))
            return Node(None, where, entries, is_mapping=True)
        if isinstance(node, yaml.SequenceNode):
            return Node(None, where, items=tuple(convert(v, depth + 1) for v in node.value))
        return Node(loader.construct_object(node), where)

    roots = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                roots.append(convert(node, 0))
    except yaml.YAMLError as error:
        problem_mark = getattr(error, "problem_mark", None)
        line = problem_mark.line if problem_mark else 0
        problem = getattr(error, "problem", None) or "invalid YAML"
        raise CheckError(f"invalid YAML: {problem} (line {line + 1})", line) from None
    finally:
        loader.dispose()
    return ConfigDocument(path, split_lines(text), tuple(roots))
