"""Answers of the labelled corpus when its logs are handed on the ways real logs are.

Usage: python bench/pasted.py [--corpus DIR] [--backend auto|python|hyperscan] [NAME ...]
--corpus defaults to ../shared/corpus beside this repository. Each log is diagnosed as it is
and after each change below, none of which changes what the log says: a terminal's hard wrap,
Windows line ends, colours, a quote or a code block's indentation, a collector's frame, a web
page's no-break spaces and curly quotes, a terminal copy's tabs, blank lines between lines,
lost or collapsed indentation, JSON records. Printed per change: how many logs' first finding
or initiating rank changed, the right first findings against the labels, and each change.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose
from trainmedic.matching.choice import matcher_for

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"


def _wrapped(width: int) -> Callable[[str], str]:
    def wrap(text: str) -> str:
        return "\n".join(line[i:i + width] for line in text.split("\n")
                         for i in range(0, max(len(line), 1), width))
    return wrap


def _each_line(change: Callable[[str], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(change(line) for line in text.split("\n"))


CHANGES: dict[str, Callable[[str], str]] = {
    "wrap 120": _wrapped(120),
    "wrap 200": _wrapped(200),
    "CRLF": lambda text: text.replace("\n", "\r\n"),
    "colour": _each_line(lambda line: f"\x1b[31m{line}\x1b[0m" if "rror" in line else line),
    "quoted": _each_line(lambda line: "> " + line),
    "indented": _each_line(lambda line: "    " + line),
    "compose frame": _each_line(lambda line: "trainer-1  | " + line),
    "tabs": lambda text: text.replace("    ", "\t"),
    "no-break spaces": lambda text: text.replace(": ", ":\u00a0"),
    "curly quotes": lambda text: re.sub(r"'([^'\n]{0,80})'", "\u2018\\1\u2019", text),
    "blank lines": lambda text: text.replace("\n", "\n\n"),
    "no indentation": _each_line(str.lstrip),
    "collapsed spaces": _each_line(lambda line: re.sub(r"[ \t]+", " ", line)),
    "docker json": _each_line(lambda line: json.dumps(
        {"log": line + "\n", "stream": "stderr", "time": "2024-05-12T13:45:12.123456789Z"})),
    "JSON logger": _each_line(lambda line: json.dumps({"level": "INFO", "message": line})),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT, metavar="DIR")
    parser.add_argument("--backend", default="auto", choices=("auto", "python", "hyperscan"))
    parser.add_argument("changes", nargs="*", metavar="NAME", default=list(CHANGES),
                        help=f"changes to make (default: all of {', '.join(CHANGES)})")
    args = parser.parse_args()
    unknown = set(args.changes) - set(CHANGES)
    if unknown:
        parser.error(f"no such change: {', '.join(sorted(unknown))}")
    catalogue = bundled()
    matcher = matcher_for(catalogue, args.backend)

    def answer(text: str, name: str) -> tuple[str | None, int | None]:
        data = text.encode("utf-8", "surrogateescape")
        diagnosis = diagnose([(name, io.BytesIO(data))], catalogue, matcher)
        return (diagnosis.findings[0].rule_id if diagnosis.findings else None,
                diagnosis.initiating_rank)

    cases = [(labels.parent / case["file"], {case["expected"], *(case.get("also_ok") or [])})
             for labels in sorted(args.corpus.glob("**/labels.yaml"))
             for case in yaml.safe_load(labels.read_text("utf-8"))]
    if not cases:
        print(f"no labelled logs under {args.corpus}", file=sys.stderr)
        return 1
    texts = {path: path.read_text("utf-8", "surrogateescape") for path, _ in cases}
    base = {path: answer(texts[path], path.name) for path, _ in cases}
    right = sum(base[path][0] in accepted for path, accepted in cases)
    print(f"as they are: {right}/{len(cases)} first findings right")
    for name in args.changes:
        changed, right = [], 0
        for path, accepted in cases:
            now = answer(CHANGES[name](texts[path]), path.name)
            right += now[0] in accepted
            if now != base[path]:
                changed.append(f"    {path.parent.name}/{path.name}: {base[path]} -> {now}")
        print(f"{name}: {len(changed)} changed, {right}/{len(cases)} right", *changed, sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
