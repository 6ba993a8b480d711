"""The C loops (`server/native`, the `trainmedic_native` module) answer as their Python versions.

The Python versions are the reference and run wherever the module is not installed; these tests
compare the two on generated text, on every ASCII character in every place a pattern reads one,
and on every line of the corpus that the sampler would read.
"""

from __future__ import annotations

import string
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shared_files import CORPUS, missing, need

from trainmedic.logs.reader import _newlines, _resolve_overwrites
from trainmedic.metrics import samples
from trainmedic.metrics.samples import _KEYS, _changes, _named_pairs, _zero_loss

try:
    import trainmedic_native
except ImportError:
    trainmedic_native = None


def native() -> ModuleType:
    """The module (make installs it)."""
    if trainmedic_native is not None:
        return trainmedic_native
    missing("trainmedic_native is not installed (pip install ./server/native)")


# What metric lines are made of: the keys _PAIR knows, their look-alikes, the separators and
# spaces it reads, the forms of a number and what may end one.
PAIR_PIECES = ["lm loss", "loss scale", "grad norm", "learning rate",
               "number of skipped iterations", "loss", "Loss", "LR", "lr", "step", "grad_norm",
               "train/loss", "a" * 41, ":", "=", " ", "  ", "\t", "\x1c", "'", '"', ".", "e",
               "E", "+", "-", "nan", "NaN", "inf", "Inf", "-inf", "0", "7", "12", "3.5",
               "1e-4", "x", "_", "/", "|", ",", "{", "}", "\n"]


@given(st.lists(st.sampled_from(PAIR_PIECES), max_size=24))
def test_pairs_are_those_the_pattern_finds(pieces: list[str]) -> None:
    line = "".join(pieces)
    assert native().named_pairs(line, _KEYS) == _named_pairs(line)


@pytest.mark.parametrize("char", [chr(code) for code in range(128)], ids=repr)
def test_every_ascii_character_is_read_as_the_pattern_reads_it(char: str) -> None:
    """Each ASCII character before a key, inside one, around the separator and the value, and
    after the value: where `\\w`, `\\s`, `\\d` and the quotes are told apart."""
    lines = [f"{char}loss: 1", f"x{char}loss=1", f"loss{char}: 1", f"loss{char}{char}=2",
             f"lr{char}{char}{char}{char}=2", f"loss:{char}1", f"loss:{char}{char}{char}{char}1",
             f"loss=1{char}", f"loss=1.{char}", f"loss=1e{char}5", f"loss={char}inf",
             f"lm{char}loss: 3", f"{char}'loss': 0.5", f"step{char}=4 loss=5", f"a{char}b=1"]
    pairs = native().named_pairs
    assert [pairs(line, _KEYS) for line in lines] == [_named_pairs(line) for line in lines]


def test_a_line_that_is_not_ascii_is_left_to_the_pattern() -> None:
    line = "épocha loss: 1.5 | grad norm: 0.2"
    assert native().named_pairs(line, _KEYS) is None
    assert samples.named_pairs(line) == _named_pairs(line) == [("loss", "1.5"),
                                                               ("grad_norm", "0.2")]


def test_every_line_of_the_corpus_is_read_alike() -> None:
    pairs = native().named_pairs
    compared = 0
    for path in sorted(need(CORPUS).rglob("*")):
        if not path.is_file() or path.suffix in {".yaml", ".md"}:
            continue
        for line in path.read_text("utf-8", errors="replace").splitlines():
            if line.isascii():
                assert pairs(line, _KEYS) == _named_pairs(line), (path, line)
                compared += 1
    assert compared > 3000  # the corpus was read


@given(st.lists(st.sampled_from([b"\r", b"\n", b"x", b"yz", b"\r\r", b" 50%|##|", b"\r\n"]),
                max_size=60))
def test_overwrites_are_resolved_alike(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    assert native().resolve_overwrites(data) == _resolve_overwrites(data)


@given(st.lists(st.sampled_from([b"\n", b"x", b"loss=1.0 step 12 " * 3, b"\n\n\n", b"y" * 300]),
                max_size=300), st.integers(-600, 6000), st.integers(-600, 6000))
def test_newlines_are_counted_alike_in_any_span(pieces: list[bytes], start: int,
                                                end: int) -> None:
    """Spans of any density and length (blocks of 255 bytes and what is left), the ends
    clipped as a slice's are."""
    data = b"".join(pieces)
    assert native().newlines(data, start, end) == data.count(b"\n", start, end)
    if 0 <= start <= end:
        assert _newlines(data, start, end) == data.count(b"\n", start, end)


SCALE_PIECES = [b"loss scale: ", b"65536.0", b"32768.0", b" | ", b"\n", b"[rank3]: ", b"x",
                b"scale", b"scale" * 5]


@given(st.lists(st.sampled_from(SCALE_PIECES), max_size=40), st.integers(1, 40))
def test_changes_are_those_of_the_words_compared_in_python(pieces: list[bytes],
                                                          width: int) -> None:
    data = b"".join(pieces)
    positions = list(samples._found(data, b"scale"))
    says = [data[p:p + width].partition(b"\n")[0] for p in positions]
    expected = [i for i in range(1, len(says)) if says[i] != says[i - 1]]
    assert native().changes(data, positions, width) == expected
    if width == samples._SAYS_BYTES:
        assert _changes(data, positions) == expected


WORD_PIECES = [b"scale", b"sca", b"le", b"s", b"Skipping step", b"skipped iterations",
               b"skipped", b" ", b"\n", b"x" * 250, b"x" * 7]


@given(st.lists(st.sampled_from(WORD_PIECES), max_size=120),
       st.lists(st.sampled_from([b"scale", b"s", b"ss", b"sxs", b"Skipping step", b"le\ns",
                                 b"skipped iterations"]), max_size=4))
def test_words_are_found_where_python_finds_them(pieces: list[bytes], words: list[bytes]) -> None:
    """Words of one byte and more, overlapping themselves, in blocks (256 bytes) and across
    their ends; each occurrence after the end of the one before."""
    data = b"".join(pieces)
    expected = [list(samples._found(data, word)) for word in words]
    assert native().word_starts(data, words) == expected


# What the zero-loss signal reads: the word and its near misses, quotes, blanks of a bytes
# pattern and one it does not count (\x1c), separators, zeros and what may end or extend one.
ZERO_PIECES = [b"loss", b"los", b"l", b"oss", b"s", b"Loss", b"'", b'"', b" ", b"\t", b"\x0b",
               b"\x1c", b"\n", b":", b"=", b"0", b"00", b".", b"5", b"e", b"_", b",", b"|",
               b"\xc3\xa9", b"x" * 17, b"loss=0.0\n", b"loss=0.5 "]


@given(st.lists(st.sampled_from(ZERO_PIECES), max_size=80), st.integers(-5, 400))
def test_zero_losses_are_found_where_the_pattern_finds_them(pieces: list[bytes],
                                                            start: int) -> None:
    """From any start, in blocks of sixteen places and across their ends, and at the end."""
    data = b"".join(pieces)
    assert native().zero_loss(data, start) == _zero_loss(data, max(start, 0))


def test_an_empty_word_is_refused_not_searched_for_ever() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        native().word_starts(b"scale", [b""])
    with pytest.raises(ValueError, match="non-empty"):
        native().word_starts(b"scale", ["scale"])


def test_a_position_outside_the_data_is_refused_not_read() -> None:
    with pytest.raises(ValueError, match="outside"):
        native().changes(b"scale: 1\n", [0, 10], 24)
    with pytest.raises(TypeError):
        native().changes(b"scale: 1\n", [0, "1"], 24)


def test_keys_are_lowered_as_ascii() -> None:
    """`str.lower` and the C loop agree on every ASCII letter and the characters a key holds."""
    for key in (string.ascii_uppercase, string.ascii_lowercase, "A_b/C9z0"):
        assert native().named_pairs(f"{key}=1", {key.lower(): "k"}) == [("k", "1")]
