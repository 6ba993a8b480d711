"""Catalogues from the bundled compiled JSON or from YAML packs, refusing what is invalid.

A YAML pack is validated against the published JSON Schema and a few checks the schema cannot
express (the regular expressions compile, `monitor` and `where` name real things, the file sits
where its id and category say). An invalid file fails with one line: file, line and field.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from trainmedic.catalogue.rules import Catalogue, Condition, Rule, RuleError
from trainmedic.user_cache import load_json

if TYPE_CHECKING:  # packs are read by path, the bundled catalogue by text (see `bundled`);
    from pathlib import Path  # examples are made only where they are read

    from trainmedic.catalogue.examples import Examples

DATA = os.path.join(os.path.dirname(os.path.realpath(__file__)), "data")
SCHEMA_RESOURCE = "rule.schema.json"
CATALOGUE_RESOURCE = "catalogue.json"
EXAMPLES_RESOURCE = "examples.json"  # the rules' examples, kept apart: see `Catalogue`


def bundled() -> Catalogue:
    """The catalogue shipped in the package (compiled from `rules/` by `catalogue.compile`),
    its JSON read through the user cache (see `user_cache.load_json`); by a path as text, not
    pathlib's: importing it and what it imports takes 5 ms, a tenth of a short diagnosis."""
    data = load_json(os.path.join(DATA, CATALOGUE_RESOURCE))
    return Catalogue(tuple(Rule.from_dict(r, r.get("source", "")) for r in data["rules"]),
                     ("bundled",), _bundled_examples)


def _bundled_examples() -> dict[str, Examples]:
    from trainmedic.catalogue.examples import Examples

    data = load_json(os.path.join(DATA, EXAMPLES_RESOURCE))
    return {rule_id: Examples.from_dict(examples) for rule_id, examples in data.items()}


def _schema() -> dict[str, Any]:
    """The published rule schema."""
    import json  # here: the bundled catalogue is read without it (see `bundled`)

    with open(os.path.join(DATA, SCHEMA_RESOURCE), encoding="utf-8") as stored:
        schema: dict[str, Any] = json.loads(stored.read())
    return schema


def _schema_validator() -> Callable[[Any], Any]:
    import fastjsonschema

    return fastjsonschema.compile(_schema())


def _node_line(root: Any, path: Iterable[str | int]) -> int | None:
    """The 1-based line of the YAML node at `path`, as deep as the path can be followed."""
    import yaml

    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for key in path:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode):
            index = int(key)
            if index >= len(node.value):
                return line
            node = node.value[index]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _dotted(path: Iterable[str | int]) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) or str(key).isdigit() else f".{key}"
    return text.lstrip(".") or "(rule)"


def load_rule_file(path: Path, validate: Callable[[Any], Any] | None = None,
                   base: Path | None = None) -> tuple[Rule, Examples]:
    """Load and check one YAML rule and its examples; raises `RuleError` naming file, line and
    field."""
    import yaml

    from trainmedic.catalogue.examples import Examples
    from trainmedic.catalogue.safe_yaml import compose_and_load

    file_name = str(path)
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RuleError(file_name, None, "(file)", f"cannot read: {error}") from None
    try:
        root, data = compose_and_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or "invalid YAML"
        raise RuleError(file_name, mark.line + 1 if mark else None, "(yaml)", problem) from None
    validate = validate or _schema_validator()

    def fail(field_path: list[str | int], reason: str) -> RuleError:
        return RuleError(file_name, _node_line(root, field_path), _dotted(field_path), reason)

    import fastjsonschema

    try:
        validate(data)
    except fastjsonschema.JsonSchemaValueException as error:
        field_path: list[str | int] = list(error.path[1:])
        reason = error.message.split(" ", 1)[1] if " " in error.message else error.message
        if error.rule in ("additionalProperties", "required") and isinstance(error.value, dict):
            known = _schema_keys(field_path)
            extra = sorted(set(error.value) - set(known))
            missing = [k for k in _schema_required(field_path) if k not in error.value]
            if extra:
                import difflib

                close = difflib.get_close_matches(extra[0], missing or known, n=1)
                field_path.append(extra[0])
                reason = "unknown field" + (f" (did you mean {close[0]!r}?)" if close else "")
            elif missing:
                field_path.append(missing[0])
                reason = "required field is missing"
        elif error.rule == "dependencies" and isinstance(error.value, dict):
            needing = next(k for k in error.rule_definition if k in error.value)
            field_path.append(needing)
            reason = f"needs {' and '.join(error.rule_definition[needing])} beside it"
        raise fail(field_path, reason) from None
    _check_semantics(data, path, base, fail)
    source = str(path.relative_to(base.parent)) if base else file_name
    return Rule.from_dict(data, source), Examples.from_dict(data["examples"])


def _schema_at(field_path: list[str | int]) -> dict[str, Any]:
    """The sub-schema that describes the value at `field_path`."""
    root = _schema()
    schema = root
    for key in field_path:
        if str(key).isdigit():
            schema = schema.get("items", {})
        else:
            schema = schema.get("properties", {}).get(str(key), {})
        if "$ref" in schema:
            schema = root["definitions"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _schema_keys(field_path: list[str | int]) -> list[str]:
    return list(_schema_at(field_path).get("properties", {}))


def _schema_required(field_path: list[str | int]) -> list[str]:
    return list(_schema_at(field_path).get("required", []))


def _check_semantics(data: dict[str, Any], path: Path, base: Path | None,
                     fail: Callable[[list[str | int], str], RuleError]) -> None:
    # Only packs are checked so (the bundled catalogue was when it was compiled).
    from trainmedic.catalogue.regex_safety import check_pattern
    from trainmedic.metrics.detectors.registry import unknown_params
    from trainmedic.metrics.samples import METRIC_GROUPS

    if path.stem != data["id"]:
        raise fail(["id"], f"must equal the file name {path.stem!r}")
    if base is not None and path.parent != base and path.parent.name != data["category"]:
        raise fail(["category"], f"must equal the folder name {path.parent.name!r}")
    names = set()
    for index, fp in enumerate(data["fingerprints"]):
        if fp["name"] in names:
            raise fail(["fingerprints", index, "name"], f"duplicate name {fp['name']!r}")
        names.add(fp["name"])
        flags = re.IGNORECASE if fp.get("ignore_case") else 0
        try:
            compiled = re.compile(fp["pattern"], flags)
        except re.error as error:
            raise fail(["fingerprints", index, "pattern"], f"invalid regex: {error}") from None
        problem = check_pattern(fp["pattern"])
        if problem:
            raise fail(["fingerprints", index, "pattern"], problem)
        if fp.get("where"):
            condition = Condition.parse(fp["where"])
            missing = [n for n in condition.names if n not in compiled.groupindex]
            if missing:
                raise fail(["fingerprints", index, "where"],
                           f"names no group of the pattern: {', '.join(missing)}")
    for index, metric in enumerate(data.get("metrics", ())):
        where: list[str | int] = ["metrics", index, "pattern"]
        try:
            groups = set(re.compile(metric["pattern"]).groupindex)
        except re.error as error:
            raise fail(where, f"invalid regex: {error}") from None
        problem = check_pattern(metric["pattern"]) or (
            None if groups and groups <= METRIC_GROUPS else
            f"named groups must be metric names ({', '.join(sorted(METRIC_GROUPS))})")
        if problem:
            raise fail(where, problem)
    for index, detector in enumerate(data.get("detectors", ())):
        unknown = unknown_params(detector["name"], detector.get("params") or {})
        if unknown:
            raise fail(["detectors", index, "params", unknown[0]],
                       f"{detector['name']} takes no parameter {unknown[0]!r}")
    detectors = {d["name"] for d in data.get("detectors", ())}
    if data["monitor"] not in names | detectors:
        raise fail(["monitor"], f"names no fingerprint or detector: {data['monitor']!r}")


def _pack_files(directory: Path) -> Iterable[Path]:
    """The YAML files under `directory`; a folder that cannot be listed raises RuleError (a
    silent skip would report a readable pack as empty)."""
    from pathlib import Path

    def unreadable(error: OSError) -> None:
        reason = "permission denied" if isinstance(error, PermissionError) else \
            f"cannot read: {error.strerror or error}"
        raise RuleError(str(error.filename or directory), None, "(pack)", reason)

    for root, _dirs, names in os.walk(directory, onerror=unreadable):
        yield from (Path(root, n) for n in names if n.endswith((".yaml", ".yml")))


def load_pack(directory: Path) -> Catalogue:
    """Every `*.yaml`/`*.yml` rule under `directory`; the first invalid one raises."""
    if not directory.is_dir():
        raise RuleError(str(directory), None, "(pack)", "not a directory")
    files = sorted(_pack_files(directory))
    if not files:
        raise RuleError(str(directory), None, "(pack)", "no *.yaml rule files")
    validate = _schema_validator()
    loaded = [load_rule_file(p, validate, directory) for p in files]
    seen: dict[str, str] = {}
    for rule, _ in loaded:
        if rule.id in seen:
            raise RuleError(rule.source, 1, "id", f"duplicate of {seen[rule.id]}")
        seen[rule.id] = rule.source
    examples = {rule.id: examples for rule, examples in loaded}
    return Catalogue(tuple(rule for rule, _ in loaded), (str(directory),), lambda: examples)


def load(packs: Iterable[Path] = ()) -> Catalogue:
    """The bundled catalogue with the user's packs layered over it, in order."""
    catalogue = bundled()
    for pack in packs:
        catalogue = catalogue.merged(load_pack(pack))
    return catalogue
