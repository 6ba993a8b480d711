"""Catalogue invariants, the compiled JSON, and one clear line for every invalid rule file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from shared_files import TAXONOMIES, need, taxonomy

from trainmedic.catalogue.compile import (
    EXAMPLES,
    OUTPUT,
    RULES_DIR,
    SCHEMA,
    compile_rules,
    schema_text,
)
from trainmedic.catalogue.load import bundled, load, load_pack
from trainmedic.catalogue.rules import RuleError, quantity
from trainmedic.diagnosis.selftest import self_test
from trainmedic.render.reference import DOCS, reference_pages

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = bundled()
VALID = (RULES_DIR / "training-stability" / "amp-bf16-vs-fp16.yaml").read_text("utf-8")


def test_compiled_catalogue_is_in_sync_with_rules_dir() -> None:
    assert (OUTPUT.read_text("utf-8"), EXAMPLES.read_text("utf-8")) == compile_rules(), \
        "server/trainmedic/catalogue/data/ is stale: run `make catalogue`"


def test_schema_declares_the_registered_detectors() -> None:
    assert SCHEMA.read_text("utf-8") == schema_text(SCHEMA.read_text("utf-8")), \
        "the rule schema's detectors are stale: run `make catalogue`"


def test_markdown_reference_is_in_sync() -> None:
    pages = reference_pages(load_pack(RULES_DIR))
    on_disk = {p.name: p.read_text("utf-8") for p in DOCS.glob("*.md")}
    assert on_disk == pages, "docs/catalogue is stale: run `make catalogue`"


def test_every_taxonomy_id_has_a_rule() -> None:
    for path in TAXONOMIES:
        need(path)
    ids = {entry["id"] for entry in taxonomy()}
    assert sorted(ids - CATALOGUE.by_id.keys()) == []


def test_ids_unique_and_files_where_ids_and_categories_say() -> None:
    ids = [rule.id for rule in CATALOGUE.rules]
    assert len(ids) == len(set(ids))
    for rule in CATALOGUE.rules:
        assert Path(rule.source) == Path("rules") / rule.category / f"{rule.id}.yaml"


def test_related_and_outranked_ids_exist() -> None:
    for rule in CATALOGUE.rules:
        for other in (*rule.related, *rule.outranks):
            assert other in CATALOGUE.by_id, f"{rule.id} names unknown rule {other}"


def test_taxonomy_categories_and_roles_are_kept() -> None:
    need(TAXONOMIES[0])
    for entry in taxonomy():
        rule = CATALOGUE.by_id[entry["id"]]
        assert (rule.category, rule.role.value) == (entry["category"], entry["role"]), rule.id


@pytest.mark.parametrize("rule_id", sorted(CATALOGUE.by_id))
def test_rule_examples(rule_id: str) -> None:
    examples = CATALOGUE.examples(rule_id)
    assert len(examples.match) >= 3
    assert len(examples.no_match) >= 2
    result = self_test(CATALOGUE.by_id[rule_id], CATALOGUE)
    assert result.passed, result.failures


def write_rule(tmp_path: Path, text: str, category: str = "training-stability",
               name: str = "amp-bf16-vs-fp16") -> Path:
    folder = tmp_path / "pack" / category
    folder.mkdir(parents=True)
    (folder / f"{name}.yaml").write_text(text, "utf-8")
    return tmp_path / "pack"


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (("weight: 0.95", "weight: 1.5"), "fingerprints[0].weight: must be smaller"),
        (("role: root", "role: cause"), "role: must be one of"),
        (("monitor: bf16-needs-compute-8", "monitor: nothing"), "monitor: names no fingerprint"),
        (("fingerprints:", "fingerprint_list:"),
         "fingerprint_list: unknown field (did you mean 'fingerprints'?)"),
        (("pattern: \"Your setup doesn't support bf16\"", "pattern: '(unclosed'"),
         "fingerprints[0].pattern: invalid regex"),
        (("pattern: \"Your setup doesn't support bf16\"", "pattern: '(a+)+b'"),
         "fingerprints[0].pattern: unbounded repetition"),
        (("pattern: \"Your setup doesn't support bf16\"", "pattern: '(?:\\w{1,5}){1,30}c'"),
         "fingerprints[0].pattern: a repeated group that itself repeats or alternates"),
        (("pattern: \"Your setup doesn't support bf16\"", "pattern: '(x)y\\1'"),
         "fingerprints[0].pattern: backreferences are not allowed"),
        (("id: amp-bf16-vs-fp16", "id: other-id"), "id: must equal the file name"),
        (("  explains: >-", "  explain: >-"), "verify.explain: unknown field"),
        (("title: BF16 vs", "title: BF16: vs"), "(yaml): mapping values are not allowed here"),
    ],
)
def test_invalid_rule_names_file_line_and_field(tmp_path: Path, change: tuple[str, str],
                                                 where: str) -> None:
    assert change[0] in VALID
    text = VALID.replace(*change, 1)
    line = text.splitlines().index(next(ln for ln in text.splitlines() if change[1] in ln)) + 1
    pack = write_rule(tmp_path, text)
    with pytest.raises(RuleError) as raised:
        load_pack(pack)
    message = str(raised.value)
    path = pack / "training-stability" / "amp-bf16-vs-fp16.yaml"
    assert message.startswith(f"{path}:{line}: "), message
    assert where in message
    assert "\n" not in message


FIRST_WEIGHT = "    weight: 0.95\n"  # the first fingerprint's, in VALID
OWN_FIX = "    fix: Keep fp32 master weights and let autocast cast to fp16.\n"
OWN_VERIFY = ("    verify:\n      command: trainmedic probe amp\n"
              "      explains: Shows the scale move.\n")


@pytest.mark.parametrize(
    ("own", "at", "where"),
    [
        ("    fix: short\n", "    fix: short",
         "fingerprints[0].fix: must be longer than or equal to 10"),
        (OWN_VERIFY, "    verify:", "fingerprints[0].verify: needs fix beside it"),
        (OWN_FIX + "    verify:\n      command: trainmedic probe amp\n", "    verify:",
         "fingerprints[0].verify.explains: required field is missing"),
        (OWN_FIX.replace("fix:", "fixes:"), OWN_FIX.replace("fix:", "fixes:").rstrip(),
         "fingerprints[0].fixes: unknown field"),
    ],
)
def test_invalid_fix_of_one_cause_names_file_line_and_field(tmp_path: Path, own: str, at: str,
                                                            where: str) -> None:
    assert FIRST_WEIGHT in VALID
    text = VALID.replace(FIRST_WEIGHT, FIRST_WEIGHT + own, 1)
    with pytest.raises(RuleError) as raised:
        load_pack(write_rule(tmp_path, text))
    line = text.splitlines().index(at) + 1
    assert f".yaml:{line}: {where}" in str(raised.value)


def test_fingerprints_and_detectors_carry_their_own_fix(tmp_path: Path) -> None:
    detector = ("detectors:\n  - name: scale-floor\n    weight: 0.6\n"
                "    fix: The scale collapsed, so train in bf16 which needs no loss scale.\n"
                + OWN_VERIFY.replace("probe amp", "probe numerics"))
    text = VALID.replace(FIRST_WEIGHT, FIRST_WEIGHT + OWN_FIX, 1).replace(
        "monitor:", detector + "monitor:", 1)
    rule = load_pack(write_rule(tmp_path, text)).by_id["amp-bf16-vs-fp16"]
    first, second = rule.fingerprints[0].name, rule.fingerprints[1].name
    own = rule.advice((first,))
    assert (own.fix, own.verify_command, own.verify_explains) == (
        OWN_FIX.split(": ", 1)[1].strip(), rule.verify_command, rule.verify_explains)
    floor = rule.advice(("scale-floor", first))  # the first matched part with a fix wins
    assert floor.fix.startswith("The scale collapsed")
    assert floor.verify_command == "trainmedic probe numerics"
    assert rule.advice((second, first)) == own  # `second` has no fix of its own
    plain = rule.advice((second,))
    assert (plain.fix, plain.verify_command) == (rule.fix, rule.verify_command)


def test_folder_must_equal_category(tmp_path: Path) -> None:
    pack = write_rule(tmp_path, VALID, category="memory")
    with pytest.raises(RuleError, match=r":3: category: must equal the folder name 'memory'"):
        load_pack(pack)


def test_user_pack_adds_and_overrides(tmp_path: Path) -> None:
    changed = VALID.replace("title: BF16 vs FP16 confusion", "title: Site-specific bf16 entry")
    catalogue = load([write_rule(tmp_path, changed)])
    assert catalogue.by_id["amp-bf16-vs-fp16"].title.startswith("Site-specific bf16 entry")
    assert len(catalogue.rules) == len(CATALOGUE.rules)
    extra = VALID.replace("id: amp-bf16-vs-fp16", "id: site-bf16").replace(
        "title: BF16 vs FP16 confusion", "title: Site bf16")
    second = tmp_path / "second"
    (second / "training-stability").mkdir(parents=True)
    (second / "training-stability" / "site-bf16.yaml").write_text(extra, "utf-8")
    assert "site-bf16" in load([second]).by_id


def test_a_pack_rule_brings_its_own_examples(tmp_path: Path) -> None:
    changed = VALID.replace("source: shared corpus real-b/006.log", "source: the site's own log")
    catalogue = load([write_rule(tmp_path, changed)])
    assert catalogue.examples("amp-bf16-vs-fp16").match[0].source.startswith("the site's own")
    assert CATALOGUE.examples("amp-bf16-vs-fp16").match[0].source.startswith("shared corpus")
    assert catalogue.examples("nan-loss") == CATALOGUE.examples("nan-loss")
    assert catalogue.examples("no-such-rule") == ((), ())


def test_the_examples_are_read_when_first_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    from trainmedic.catalogue import load as loading
    from trainmedic.diagnosis.engine import diagnose_text

    read: list[str] = []
    real = loading.load_json
    monkeypatch.setattr(loading, "load_json", lambda path: read.append(path) or real(path))
    catalogue = bundled()
    diagnose_text("RuntimeError: CUDA error: an illegal memory access was encountered\n",
                  catalogue)
    assert [Path(p).name for p in read] == ["catalogue.json"]
    assert catalogue.examples("nan-loss") == CATALOGUE.examples("nan-loss")
    assert catalogue.examples("disk-full").match
    assert [Path(p).name for p in read] == ["catalogue.json", "examples.json"]  # once


def test_a_pickled_catalogue_holds_its_rules_not_their_examples() -> None:
    import pickle

    copy = pickle.loads(pickle.dumps(CATALOGUE))
    assert (copy.rules, copy.sources) == (CATALOGUE.rules, CATALOGUE.sources)
    assert copy.examples("nan-loss") == ((), ())


def test_where_conditions_compare_sizes_as_bytes() -> None:
    assert quantity("3.87 GiB") == pytest.approx(3.87 * 2**30)
    assert quantity("250.00 MiB") == 250 * 2**20
    assert quantity("1e-4") == pytest.approx(1e-4)
    assert quantity("nan GiB?") is None


def test_empty_pack_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RuleError, match=r"no \*\.yaml rule files"):
        load_pack(tmp_path)


def test_an_unknown_detector_parameter_is_refused_with_file_line_and_field(tmp_path: Path) -> None:
    rule = (RULES_DIR / "training-stability" / "amp-loss-scale.yaml").read_text("utf-8")
    pack = tmp_path / "training-stability"
    pack.mkdir()
    entry = "  - name: scale-collapse\n    weight: 0.8\n"
    typo = rule.replace(entry, entry + "    params: {min_decreasse: 6}\n", 1)
    assert typo != rule
    (pack / "amp-loss-scale.yaml").write_text(typo, "utf-8")
    with pytest.raises(RuleError) as refused:
        load_pack(tmp_path)
    line = typo.splitlines().index("    params: {min_decreasse: 6}") + 1
    assert str(refused.value).startswith(f"{pack / 'amp-loss-scale.yaml'}:{line}: "
                                         "detectors[0].params.min_decreasse:")
    assert "scale-collapse takes no parameter 'min_decreasse'" in str(refused.value)


def test_a_rule_fired_by_attribution_is_declared_and_checked(tmp_path: Path) -> None:
    hang = CATALOGUE.by_id["collective-hang"]
    assert hang.attribution is not None
    assert hang.attribution.when == "waited-for-rank"
    text = VALID + "attribution:\n  when: every-rank\n  weight: 0.5\n"
    with pytest.raises(RuleError, match=r"attribution\.when: must be one of"):
        load_pack(write_rule(tmp_path, text))
    fired = load([write_rule(tmp_path / "ok", VALID + "attribution:\n  when: waited-for-rank\n"
                                                      "  weight: 0.6\n")])
    assert fired.by_id["amp-bf16-vs-fp16"].attribution is not None


FRAMEWORK_SOURCE = re.compile(r"^[\w.-]+/[\w.-]+ (?:v?\d[\w.+-]*|main|master) [\w./-]+")


@pytest.mark.parametrize("rule_id", sorted(CATALOGUE.by_id))
def test_each_rule_cites_where_its_messages_come_from(rule_id: str) -> None:
    """At least one real message of every rule is cited as `owner/repo version path`."""
    sources = [example.source for example in CATALOGUE.examples(rule_id).match]
    assert any(FRAMEWORK_SOURCE.match(source) for source in sources), sources
