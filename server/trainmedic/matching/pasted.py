"""Text as people paste it: retyped in one case, or hard-wrapped at a terminal's width.

Framework messages are mixed case, so a text without lower-case or without upper-case letters
was changed by hand: it is matched blind to case. In ordinary text case still counts, which
keeps look-alike prose from matching. A text hard-wrapped at one width is matched a second time
with each wrap joined to the next line: a terminal cuts at exactly the width, mid-word, so those
lines join directly; a word wrap leaves its line a little shorter and is joined with a space
when the next line goes on in lower case. Only chunks of at most PASTE_MAX_BYTES are looked at:
the 1 MiB chunks of a big log are left alone, but a small log file, and each small piece a
followed log appends, are looked at like a paste (a second scan at most, and only when the
text is in one case or hard-wrapped).
"""

from __future__ import annotations

from bisect import bisect_right

from trainmedic.matching.python import Matcher
from trainmedic.model import Hit

PASTE_MAX_BYTES = 1 << 18
WRAP_WIDTHS = range(60, 201)  # the terminal or editor widths a wrap is recognised at
WORD_WRAP_SLACK = 16  # a word carried to the next line leaves its line at most this much short
MIN_WRAPS = 2


def uncased(text: str) -> bool:
    """No upper-case letter, or no lower-case one: the text was retyped or changed in case."""
    return text.islower() or text.isupper()


def unwrapped(text: str) -> tuple[str, list[int]] | None:
    """`text` with its hard wraps joined, and where characters were removed (offsets in the
    joined text, ascending); None when the text is not hard-wrapped."""
    lines = text.split("\n")
    width = max(map(len, lines))
    if width not in WRAP_WIDTHS:
        return None
    pieces, removed, joined_length, wraps = [], [], 0, 0
    for line, following in zip(lines, [*lines[1:], None], strict=True):
        pieces.append(line)
        joined_length += len(line)
        if following is None:
            break
        if len(line) == width:  # cut by the terminal, mid-word
            removed.append(joined_length)
            wraps += 1
            continue
        word_wrapped = width - WORD_WRAP_SLACK <= len(line) < width and following[:1].islower()
        pieces.append(" " if word_wrapped else "\n")
        wraps += word_wrapped
        joined_length += 1
    return ("".join(pieces), removed) if wraps >= MIN_WRAPS else None


def pasted_hits(matcher: Matcher, text: str) -> list[tuple[int, Hit]]:
    """The hits that only the text as it was before it was pasted shows, at offsets of `text`."""
    chosen = matcher.caseless() if uncased(text) else matcher
    found = list(chosen.scan(text)) if chosen is not matcher else []
    joined = unwrapped(text)
    if joined is not None:
        whole, removed = joined
        found.extend((offset + bisect_right(removed, offset), hit)
                     for offset, hit in chosen.scan(whole))
    return found
