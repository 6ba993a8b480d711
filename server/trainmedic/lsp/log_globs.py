"""Which documents are logs: the `logGlobs` setting, VS Code's glob syntax, matched on paths.

Shared by the log diagnostics, which take those documents, and the script checks, which leave
them alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import PurePosixPath


def _translate(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        close = {"{": "}", "[": "]"}.get(char)
        end = pattern.find(close, i + 1) if close else -1
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "{" and end > i:
            alternatives = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_translate(a) for a in alternatives) + ")")
            i = end + 1
            continue
        elif char == "[" and end > i + 1:
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
            continue
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@lru_cache(maxsize=64)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A VS Code glob (`**`, `*`, `?`, `{a,b}`, `[...]`) as a regular expression over paths."""
    return re.compile(_translate(pattern.replace("\\", "/")))


def is_log(path: str, globs: Iterable[str], roots: Iterable[str]) -> bool:
    """Whether `path` matches a glob, taken from a workspace folder or absolute."""
    path = path.replace("\\", "/")
    candidates = [path]
    for root in roots:
        try:
            candidates.append(str(PurePosixPath(path).relative_to(root.replace("\\", "/"))))
        except ValueError:
            continue
    return any(glob_regex(glob).fullmatch(c) for glob in globs for c in candidates)
