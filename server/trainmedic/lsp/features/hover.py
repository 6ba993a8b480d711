"""Hover on a diagnosed line: the catalogue entry of what was found there, as Markdown."""

from __future__ import annotations

from lsprotocol import types

from trainmedic.lsp.server import TrainmedicServer
from trainmedic.render import finding_markdown


def register(ls: TrainmedicServer) -> None:
    def hover(params: types.HoverParams) -> types.Hover | None:
        published = ls.published.get(params.text_document.uri)
        marks = published.marks.get(params.position.line, ()) if published else ()
        if not marks or published is None:
            return None
        seen = dict.fromkeys(mark.finding for mark in marks)  # one entry per finding, in order
        text = "\n\n---\n\n".join(finding_markdown(finding, published.diagnosis,
                                                   published.catalogue) for finding in seen)
        line = params.position.line
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
            range=types.Range(start=types.Position(line=line, character=0),
                              end=types.Position(line=line + 1, character=0)))

    ls.on(types.TEXT_DOCUMENT_HOVER, hover)
