"""The `trainmedic` command: a thin shell over the same core the language server uses."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, NoReturn

from trainmedic import __version__, lasting

if TYPE_CHECKING:
    from trainmedic.catalogue.rules import Catalogue
    from trainmedic.model import Diagnosis

EXIT_OK = 0
EXIT_ROOT_CAUSE = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_RULES = 4
EXIT_CANNOT_CHECK = 5
EXIT_INTERRUPTED = 130

EXIT_CODES = f"""\
exit codes:
  {EXIT_OK}    success (with --exit-code: no root cause found)
  {EXIT_ROOT_CAUSE}    with --exit-code: a root cause was found; check: findings remain
  {EXIT_USAGE}    bad command-line usage
  {EXIT_INPUT}    an input cannot be read as a log (missing, binary, unreadable, empty directory)
       or, for check, a named script or config does not parse
  {EXIT_RULES}    a rule pack is invalid (the message names file, line and field)
  {EXIT_CANNOT_CHECK}    a probe could not run its check here (e.g. torch is not installed)
  {EXIT_INTERRUPTED}  interrupted
"""

DIAGNOSE_HELP = """\
Read training logs and report the root cause, the rank that failed first, the fix and a
command that verifies it. Nothing leaves this machine.

PATH may be a log file, a directory (a torchrun --log-dir, a folder of per-rank files;
*.log, *.out, *.err, *.txt, *.json, stdout, stderr are read), or - for standard input.
Logs compressed with gzip, bzip2 or xz (job-42.log.gz) are read as the text they hold.
All paths are diagnosed together as one run.

examples:
  trainmedic diagnose slurm-1234.out
  torchrun ... 2>&1 | tee run.log; trainmedic diagnose run.log
  trainmedic diagnose /scratch/logs/job-42 --format json
  kubectl logs job/train | trainmedic diagnose - --exit-code
"""

CHECK_HELP = """\
Check training scripts (*.py), DeepSpeed configs (*.json), Accelerate configs (*.yaml, *.yml)
and launch scripts (*.sh) for risky lines: deprecated AMP calls, fp16 without loss scaling,
a scaler that never updates, clipping scaled gradients, torch.load without weights_only, ...
Directories are walked. A line ending in `# trainmedic: ignore[TM104]` (or a bare
`# trainmedic: ignore`) is not reported.

examples:
  trainmedic check train.py ds_config.json
  trainmedic check . --diff
  trainmedic check src --format sarif > trainmedic.sarif
"""


def _columns() -> int:
    """The terminal's width as `shutil.get_terminal_size` reads it: $COLUMNS, else the
    terminal's, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(1).columns  # standard output's
        except (ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written, as wide as the terminal. The width is read here: argparse
    makes a formatter for every option it adds, help or not, and would import shutil to read
    it (and with shutil bz2 and lzma: 3 ms of a 90 ms diagnosis)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (the full usage is one `--help` away); help by `_Formatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{"formatter_class": _Formatter, **kwargs})

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


MAX_SIZE = 1 << 60  # an exbibyte: more than any log, and a number every reader can count to
MAX_JOBS = 4096  # more processes than any machine has cores; above this a count is a typo
MAX_INTERVAL = 3600.0  # an hour between looks at a log
MAX_TIMEOUT = 30 * 86400.0  # thirty days of watching


def _size(text: str) -> int:
    """`500M`, `2G`, `1024` → bytes, for --max-bytes."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    number, unit = text.rstrip("BbiI").upper()[:-1], text.rstrip("BbiI").upper()[-1:]
    if unit.isdigit():
        number, unit = number + unit, ""
    try:
        amount = float(number) * units[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 500M or 2G)") from None
    if not 1 <= amount <= MAX_SIZE:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"not a size between 1 byte and 1 EiB: {text!r}")
    return int(amount)


def _jobs(text: str) -> int:
    """A positive process count, for --jobs (more than the cores is capped later)."""
    if not text.isdigit() or len(text) > 6 or not 1 <= int(text) <= MAX_JOBS:
        raise argparse.ArgumentTypeError(
            f"not a process count from 1 to {MAX_JOBS}: {text!r} (try 1, 2 or 8)")
    return int(text)


def _seconds(low: float, high: float) -> Callable[[str], float]:
    """A parser of a finite number of seconds in `(low, high]`, for watch's options."""

    def seconds(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not low < value <= high:  # also refuses nan and inf
            raise argparse.ArgumentTypeError(
                f"not a number of seconds above {low:g} and at most {high:.10g}: {text!r}")
        return value

    return seconds


def _fail(message: str, code: int) -> int:
    print(f"trainmedic: {message}", file=sys.stderr)
    return code


def _catalogue(rule_dirs: Sequence[str]) -> Catalogue:
    from trainmedic.catalogue.load import bundled

    catalogue = bundled()
    for directory in rule_dirs:
        catalogue = catalogue.merged(_pack(directory))
    return catalogue


def _pack(directory: str) -> Catalogue:
    """A rule pack, refused (RuleError) when the matcher backend cannot compile it."""
    from pathlib import Path

    from trainmedic.catalogue.load import load_pack
    from trainmedic.catalogue.rules import RuleError
    from trainmedic.matching.choice import unsupported

    pack = load_pack(Path(directory))
    problem = unsupported(pack)
    if problem is not None:
        raise RuleError(str(directory), None, "fingerprints", problem)
    return pack


def _print_diagnosis(diagnosis: Diagnosis, catalogue: Catalogue,
                     args: argparse.Namespace) -> None:
    if args.format == "json":  # indented for a terminal, one line for the program reading it
        from trainmedic.render.json import render_json

        output = render_json(diagnosis, catalogue, args.no_redact, indent=sys.stdout.isatty())
    else:
        from trainmedic.render.text import render_text

        output = render_text(diagnosis, catalogue, args.no_redact)
    sys.stdout.write(output if output.endswith("\n") else output + "\n")


PROGRESS_MIN_BYTES = 200_000_000  # about a second of reading: below that, no progress line


def _progress(total: int) -> Callable[[int], None]:
    """A progress line on stderr, redrawn at most four times a second."""
    drawn = [0.0]

    def show(done: int) -> None:
        now = time.monotonic()
        if now - drawn[0] >= 0.25:
            drawn[0] = now
            sys.stderr.write(f"\rtrainmedic: read {done / 1e6:,.0f} of {total / 1e6:,.0f} MB "
                             f"({min(100, 100 * done // max(total, 1))}%)\x1b[K")
            sys.stderr.flush()

    return show


def cmd_diagnose(args: argparse.Namespace) -> int:
    from trainmedic.diagnosis.engine import diagnose
    from trainmedic.events.parallel import WorkerError, cores, jobs_for
    from trainmedic.logs.inputs import expand, opened, total_size
    from trainmedic.matching.choice import matcher_for

    catalogue = _catalogue(args.rules)
    matcher = matcher_for(catalogue, args.backend)
    if args.verbose:
        print(f"trainmedic: {len(catalogue.rules)} rules, matcher backend {matcher.name}",
              file=sys.stderr)
    files, warnings = expand(args.paths)
    for warning in warnings:
        print(f"trainmedic: warning: {warning}", file=sys.stderr)
    total = total_size(files, args.max_bytes)
    if args.jobs and args.jobs > cores():
        if args.verbose:
            print(f"trainmedic: --jobs {args.jobs} capped at the {cores()} cores here",
                  file=sys.stderr)
        args.jobs = cores()
    jobs = 1 if args.max_bytes else jobs_for(args.jobs)
    if args.verbose:
        print(f"trainmedic: reading with up to {jobs} process{'es' if jobs > 1 else ''}",
              file=sys.stderr)
    reporting = sys.stderr.isatty() and total >= PROGRESS_MIN_BYTES
    try:
        with opened(files, args.max_bytes) as streams:
            diagnosis = diagnose(streams, catalogue, matcher, jobs,
                                 _progress(total) if reporting else None, total_bytes=total)
    except WorkerError as error:
        return _fail(str(error), EXIT_INPUT)
    if reporting:
        sys.stderr.write("\r\x1b[K")
    for warning in streams.warnings:
        print(f"trainmedic: warning: {warning}", file=sys.stderr)
    _print_diagnosis(diagnosis, catalogue, args)
    if args.exit_code and diagnosis.root_causes:
        return EXIT_ROOT_CAUSE
    return EXIT_OK


@contextmanager
def _collector_off() -> Iterator[None]:
    """Python's cyclic collector off, then back as it was. A diagnosis leaves no reference
    cycles behind (a test checks), so the collector would only walk its growing evidence again
    and again, here and in the workers forked from here; and walk the modules, rules and
    matcher that its start builds, which live as long as the process."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def cmd_watch(args: argparse.Namespace) -> int:
    from trainmedic.diagnosis.watch import Follower, refuse_unwatchable, watch

    catalogue = _catalogue(args.rules)
    refuse_unwatchable(args.paths)
    tty = sys.stderr.isatty()
    printed = {"last": -1.0}

    def progress(follower: Follower, elapsed: float) -> None:
        if tty and elapsed - printed["last"] >= 1.0:
            printed["last"] = elapsed
            sys.stderr.write(f"\rwatching {len(follower.files)} file(s), "
                             f"{follower.bytes_read / 1e6:.1f} MB read, no root cause yet "
                             f"({elapsed:.0f} s)\x1b[K")
            sys.stderr.flush()

    diagnosis = watch(args.paths, catalogue, args.interval, args.timeout, progress)
    if tty:
        sys.stderr.write("\r\x1b[K")
    _print_diagnosis(diagnosis, catalogue, args)
    return EXIT_ROOT_CAUSE if diagnosis.root_causes else EXIT_OK


def _cache_folder() -> str:
    from trainmedic.user_cache import cache_folder

    try:
        return str(cache_folder())
    except OSError:
        return "none: no home folder, so patterns are compiled at every start"


def cmd_doctor(args: argparse.Namespace) -> int:
    import importlib.util
    import platform

    from trainmedic.events.parallel import PARALLEL_MIN_BYTES, jobs_for
    from trainmedic.logs.reader import NATIVE_LOOPS
    from trainmedic.matching.choice import matcher_for

    catalogue = _catalogue(args.rules)
    matcher = matcher_for(catalogue)
    torch = importlib.util.find_spec("torch") is not None
    print(f"trainmedic {__version__} on Python {platform.python_version()} "
          f"({sys.executable})")
    print(f"catalogue: {len(catalogue.rules)} rules, "
          f"{sum(len(r.fingerprints) for r in catalogue.rules)} fingerprints "
          f"({', '.join(catalogue.sources)})")
    print(f"matcher backend: {matcher.name}" + (
        "" if matcher.name == "hyperscan"
        else " (pip install 'trainmedic[fast]' for the native one)"))
    print(f"cache: {_cache_folder()} (compiled Hyperscan databases and regular expressions, "
          "the parsed catalogue; deleting it only slows the next start)")
    print("scan loops: " + ("C (trainmedic-native)" if NATIVE_LOOPS
                            else "Python (pip install 'trainmedic[fast]' for the C ones)"))
    print(f"processes: {jobs_for(None)} for inputs of {PARALLEL_MIN_BYTES >> 20} MiB or more, "
          "or dense with evidence (diagnose --jobs N to change)")
    print(f"probes: {'torch found' if torch else 'torch not installed: probes cannot run here'}")
    return EXIT_OK


def cmd_rules_list(args: argparse.Namespace) -> int:
    catalogue = _catalogue(args.rules)
    if args.format == "json":
        import json

        rows = [{"id": r.id, "title": r.title, "category": r.category, "role": r.role.value,
                 "fingerprints": len(r.fingerprints), "verify": r.verify_command,
                 "source": r.source} for r in catalogue.rules]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return EXIT_OK
    width = max((len(r.id) for r in catalogue.rules), default=2)
    print(f"{'ID':<{width}}  {'CATEGORY':<18} {'ROLE':<10} TITLE")
    for rule in catalogue.rules:
        print(f"{rule.id:<{width}}  {rule.category:<18} {rule.role.value:<10} {rule.title}")
    print(f"\n{len(catalogue.rules)} rules, "
          f"{sum(len(r.fingerprints) for r in catalogue.rules)} fingerprints")
    return EXIT_OK


def cmd_rules_show(args: argparse.Namespace) -> int:
    from trainmedic.render.markdown import rule_markdown
    from trainmedic.render.text import rule_text

    catalogue = _catalogue(args.rules)
    rule = catalogue.get(args.id)
    if rule is None:
        close = [r.id for r in catalogue.rules if args.id in r.id or r.id in args.id]
        hint = f" (did you mean: {', '.join(close)}?)" if close else \
            " (see: trainmedic rules list)"
        return _fail(f"no rule with id {args.id!r}{hint}", EXIT_USAGE)
    sys.stdout.write(rule_markdown(rule) if args.format == "markdown" else rule_text(rule))
    return EXIT_OK


def cmd_rules_test(args: argparse.Namespace) -> int:
    from trainmedic.diagnosis.selftest import self_test_all

    catalogue = _catalogue(args.rules)
    results = self_test_all(catalogue)
    failed = 0
    for result in results:
        mark = "PASS" if result.passed else "FAIL"
        print(f"{mark}  {result.rule_id}  ({result.positives} match, "
              f"{result.negatives} no-match)")
        for failure in result.failures:
            print(f"      {failure}")
        failed += not result.passed
    print(f"\n{len(results) - failed} passed, {failed} failed")
    return EXIT_RULES if failed else EXIT_OK


def cmd_rules_validate(args: argparse.Namespace) -> int:
    for directory in args.dirs:
        pack = _pack(directory)
        print(f"{directory}: {len(pack.rules)} rules valid")
    return EXIT_OK


def cmd_probe(args: argparse.Namespace) -> int:
    import inspect

    from trainmedic.probes import PROBES

    run = PROBES[args.name].run
    if args.target is None:
        return int(run())
    if not inspect.signature(run).parameters:
        return _fail(f"probe {args.name} takes no file argument", EXIT_USAGE)
    if not os.path.exists(args.target):
        return _fail(f"{args.target}: no such file or directory", EXIT_INPUT)
    return int(run(args.target))


def cmd_check(args: argparse.Namespace) -> int:
    from trainmedic.checks.command import check_paths

    outcome = check_paths(args.paths, args.fix, args.diff, args.format, sys.stdout, sys.stderr)
    if outcome.unchecked:
        return EXIT_INPUT
    return EXIT_ROOT_CAUSE if outcome.findings else EXIT_OK


def cmd_lsp(args: argparse.Namespace) -> int:
    # The LSP stack (the protocol's types above all) lives as long as the server: a collection
    # while it loaded took a fifth of the start. It loads only for this command.
    with lasting():
        from trainmedic.lsp.server import serve
    return serve()


def cmd_mcp(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        return _fail("the MCP server needs the mcp extra: pip install 'trainmedic[mcp]'",
                     EXIT_USAGE)
    from trainmedic.agents.mcp_server import serve  # the MCP SDK loads only for this command

    return serve(_catalogue(args.rules))


Commands = argparse._SubParsersAction  # the `add_parser` of the commands


def _add_diagnose(commands: Commands[_Parser], rules_option: _Parser) -> None:
    from trainmedic.logs.inputs import STDIN_MAX_BYTES

    diagnose = commands.add_parser(
        "diagnose", parents=[rules_option], help=SUMMARIES["diagnose"],
        description=DIAGNOSE_HELP, epilog=EXIT_CODES)
    diagnose.add_argument("paths", nargs="+", metavar="PATH", help="log file, directory, or -")
    diagnose.add_argument("--format", choices=("text", "json"), default="text",
                          help="text for people (default), json for programs (indented on "
                               "a terminal, one line when piped)")
    diagnose.add_argument("--exit-code", action="store_true",
                          help=f"exit {EXIT_ROOT_CAUSE} when a root cause is found")
    diagnose.add_argument("--backend", choices=("auto", "python", "hyperscan"), default="auto",
                          help="matcher backend: auto takes hyperscan when installed "
                               "(pip install 'trainmedic[fast]'); results are identical")
    diagnose.add_argument("--verbose", action="store_true",
                          help="say which rules and matcher backend are used")
    diagnose.add_argument("--no-redact", action="store_true",
                          help="show evidence lines as they are; by default tokens, keys and "
                               "passwords in them are replaced by [REDACTED]")
    diagnose.add_argument("--max-bytes", type=_size, metavar="SIZE",
                          help="read at most SIZE of each input (e.g. 500M, 2G); the rest is "
                               "skipped with a warning. Default: everything of a file, "
                               f"{STDIN_MAX_BYTES >> 30} GiB of standard input")
    diagnose.add_argument("--jobs", "-j", type=_jobs, metavar="N",
                          help="processes to read big inputs with (default: every core); "
                               "inputs under 32 MB read in one unless they prove dense with "
                               "evidence, stdin and --max-bytes in one. "
                               "Results are identical whatever N is")
    diagnose.set_defaults(func=cmd_diagnose)


def _add_watch(commands: Commands[_Parser], rules_option: _Parser) -> None:
    watch = commands.add_parser(
        "watch", parents=[rules_option], help=SUMMARIES["watch"],
        description="Follow log files or a torchrun --log-dir while the job runs, reading only "
                    "new bytes, and print the diagnosis as soon as a root cause appears.\n\n"
                    "examples:\n  trainmedic watch slurm-1234.out\n"
                    "  trainmedic watch /scratch/logs/job-42 --timeout 3600",
        epilog=f"exits {EXIT_ROOT_CAUSE} when a root cause was found, {EXIT_OK} when --timeout "
               f"passed without one, {EXIT_INTERRUPTED} on Ctrl-C\n\n" + EXIT_CODES)
    watch.add_argument("paths", nargs="+", metavar="PATH", help="log file or directory")
    watch.add_argument("--interval", type=_seconds(0, MAX_INTERVAL), default=1.0,
                       metavar="SECONDS", help="how often to look for new bytes (default 1, "
                                               f"at most {MAX_INTERVAL:g})")
    watch.add_argument("--timeout", type=_seconds(0, MAX_TIMEOUT), metavar="SECONDS",
                       help="give up after this long and print what was found "
                            f"(at most {MAX_TIMEOUT:g}, thirty days)")
    watch.add_argument("--format", choices=("text", "json"), default="text")
    watch.add_argument("--no-redact", action="store_true", help="as for diagnose")
    watch.set_defaults(func=cmd_watch)


def _add_doctor(commands: Commands[_Parser], rules_option: _Parser) -> None:
    doctor = commands.add_parser(
        "doctor", parents=[rules_option], help=SUMMARIES["doctor"],
        description="Print the version, the catalogue, the matcher backend in use, where "
                    "compiled patterns are cached, whether the scan's C loops run, how many "
                    "processes read big inputs and whether the probes can run.")
    doctor.set_defaults(func=cmd_doctor)


def _add_rules(commands: Commands[_Parser], rules_option: _Parser) -> None:
    rules = commands.add_parser(
        "rules", help=SUMMARIES["rules"],
        description="The catalogue of failure rules: bundled, plus packs given with --rules.",
        epilog=EXIT_CODES)
    rules_commands = rules.add_subparsers(dest="rules_command", metavar="ACTION", required=True)
    listing = rules_commands.add_parser("list", parents=[rules_option], help="one line per rule")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    listing.set_defaults(func=cmd_rules_list)
    show = rules_commands.add_parser("show", parents=[rules_option],
                                     help="the whole entry of one rule")
    show.add_argument("id", help="rule id, e.g. amp-loss-scale")
    show.add_argument("--format", choices=("text", "markdown"), default="text")
    show.set_defaults(func=cmd_rules_show)
    test = rules_commands.add_parser(
        "test", parents=[rules_option],
        help="run every rule's examples: positives must fire, negatives must not")
    test.set_defaults(func=cmd_rules_test)
    validate = rules_commands.add_parser(
        "validate", help="check rule pack directories against the schema")
    validate.add_argument("dirs", nargs="+", metavar="DIR")
    validate.set_defaults(func=cmd_rules_validate)


def _add_probe(commands: Commands[_Parser], rules_option: _Parser) -> None:
    from trainmedic.probes import PROBES  # every probe: only this command needs them

    probe = commands.add_parser(
        "probe", help=SUMMARIES["probe"],
        description="Small real experiments that verify a fix on this machine's torch and "
                    "devices (CPU when there is no GPU). They print what they checked and what "
                    "they could not.\n\n" + "\n".join(f"  {name:<12} {p.SUMMARY}"
                                                     for name, p in sorted(PROBES.items())),
        epilog=EXIT_CODES)
    probe.add_argument("name", choices=sorted(PROBES), metavar="NAME",
                       help="one of: " + ", ".join(sorted(PROBES)))
    probe.add_argument("target", nargs="?", metavar="FILE",
                       help="a file to check, for probes that take one "
                            "(checkpoint: your own checkpoint file)")
    probe.set_defaults(func=cmd_probe)


def _add_check(commands: Commands[_Parser], rules_option: _Parser) -> None:
    check = commands.add_parser(
        "check", help=SUMMARIES["check"],
        description=CHECK_HELP, epilog=EXIT_CODES)
    check.add_argument("paths", nargs="+", metavar="PATH", help="file or directory")
    check.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                       help="text for people (default), json for programs, sarif for code "
                            "scanning (json ranges are 0-based, as in LSP)")
    fixing = check.add_mutually_exclusive_group()
    fixing.add_argument("--fix", action="store_true", help="rewrite the files with the fixes")
    fixing.add_argument("--diff", action="store_true",
                        help="print the fixes as a unified diff; change nothing")
    check.set_defaults(func=cmd_check)


def _add_lsp(commands: Commands[_Parser], rules_option: _Parser) -> None:
    lsp = commands.add_parser(
        "lsp", help=SUMMARIES["lsp"],
        description="The language server behind the VS Code extension, speaking LSP on "
                    "stdin/stdout. Editors start it; there is nothing to type.",
        epilog=EXIT_CODES)
    lsp.set_defaults(func=cmd_lsp)


def _add_mcp(commands: Commands[_Parser], rules_option: _Parser) -> None:
    mcp = commands.add_parser(
        "mcp", parents=[rules_option], help=SUMMARIES["mcp"],
        description="A Model Context Protocol server on stdin/stdout, started by an agent or "
                    "an editor's chat (pip install 'trainmedic[mcp]'). Its tools: diagnose "
                    "(log text or paths), check (scripts and configs) and explain (a rule "
                    "id). Nothing leaves this machine.\n\n"
                    'VS Code, in .vscode/mcp.json:\n  {"servers": {"trainmedic": '
                    '{"type": "stdio", "command": "trainmedic", "args": ["mcp"]}}}',
        epilog=EXIT_CODES)
    mcp.set_defaults(func=cmd_mcp)


# Every command in the order `--help` lists them: its one-line summary and what adds its
# options. A command line names one command, so only that command is built (building them all
# takes longer than a short diagnosis, and the probe command's imports every probe).
SUMMARIES = {
    "diagnose": "diagnose training logs",
    "watch": "follow growing logs until a root cause appears",
    "doctor": "what trainmedic runs with here",
    "rules": "list, show and test the failure catalogue",
    "probe": "run a verification probe on this machine",
    "check": "check training scripts and configs for risky lines",
    "lsp": "run the language server on stdin/stdout (started by the editor)",
    "mcp": "serve diagnose, check and explain to AI agents over MCP (stdin/stdout)",
}
ADDERS = {"diagnose": _add_diagnose, "watch": _add_watch, "doctor": _add_doctor,
          "rules": _add_rules, "probe": _add_probe, "check": _add_check, "lsp": _add_lsp,
          "mcp": _add_mcp}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with `command`'s options (the command a command line names first). Only a
    command line naming none needs the others, by their summaries, for `--help` and for usage
    errors: a command's own help and errors never list them (each takes 0.5 ms to add)."""
    parser = _Parser(
        prog="trainmedic",
        description="Diagnose failed ML training runs from their logs, locally.",
        epilog=EXIT_CODES)
    parser.add_argument("--version", action="version", version=f"trainmedic {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    rules_option = _Parser(add_help=False)
    rules_option.add_argument(
        "--rules", action="append", default=[], metavar="DIR",
        help="a rule pack directory to add to (or override) the bundled catalogue; repeatable")
    if command in ADDERS:
        ADDERS[command](commands, rules_option)
        return parser
    for name, summary in SUMMARIES.items():
        commands.add_parser(name, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # A diagnosis runs without the cyclic collector from its start (see _collector_off); the
    # commands that serve or follow for hours, and check's walk over a tree, keep it.
    with _collector_off() if argv[:1] == ["diagnose"] else nullcontext():
        return _run(argv)


def script() -> int:
    """The `trainmedic` command: `main`, between the command's patterns compiled when it last
    ran and those it compiled kept for its next run (see `user_cache`), then the process ends.
    What the run made is frozen first, so the collection the interpreter runs as it exits leaves
    it alone: walking it all cost 7 of the 94 ms a 200-line diagnosis takes, and more after a
    big log."""
    import gc

    from trainmedic.user_cache import load_regexes, save_regexes

    command = sys.argv[1] if sys.argv[1:2] and sys.argv[1] in ADDERS else None
    if command:
        load_regexes(command)
    # Frozen before a diagnosis turns the collector back on: else its first allocation then
    # walks everything the run made, as the interpreter's exit would.
    with _collector_off() if command == "diagnose" else nullcontext():
        code = main()
        gc.freeze()
    if command:
        save_regexes(command)
    return code


def _run(argv: list[str]) -> int:
    args, unknown = build_parser(argv[0] if argv else None).parse_known_args(argv)
    if unknown:  # argparse says them from the top: say them from the command given them
        command = " ".join(filter(None, ["trainmedic", args.command,
                                         getattr(args, "rules_command", None)]))
        _Parser(prog=command).error(f"unrecognized arguments: {' '.join(unknown)}")

    from trainmedic.catalogue.rules import RuleError  # after parsing: not for --help
    from trainmedic.logs.inputs import InputError
    from trainmedic.matching.choice import BackendError

    try:
        return int(args.func(args))
    except InputError as error:
        return _fail(str(error), EXIT_INPUT)
    except RuleError as error:
        return _fail(f"invalid rule: {error}", EXIT_RULES)
    except BackendError as error:
        return _fail(str(error), EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        sys.stderr.close()
        return EXIT_OK
    except OSError as error:
        return _fail(f"{getattr(error, 'filename', '') or 'input'}: "
                     f"{error.strerror or error}", EXIT_INPUT)
