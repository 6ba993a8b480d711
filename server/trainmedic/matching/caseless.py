"""Text as a pattern that ignores case sees it: what a caseless literal is looked for in."""

# The letters outside ASCII that Python's `re` matches to an ASCII letter when it ignores case
# (U+0130, U+0131, U+017F; the Kelvin sign U+212A lower-cases to "k" by itself).
_ODD_LETTERS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"))


def folded(text: str) -> str:
    """`text` lower-cased, with every letter a caseless pattern takes for an ASCII one made
    that letter: where a caseless ASCII literal occurs in `text`, its lower case occurs here."""
    for odd, letter in _ODD_LETTERS:
        text = text.replace(odd, letter)
    return text.lower()
