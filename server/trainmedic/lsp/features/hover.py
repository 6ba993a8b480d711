"""Hover on a diagnosed line: the catalogue entry of what was found there, as Markdown."""

from __future__ import annotations

from lsprotocol import types

from trainmedic.lsp.server import TrainmedicServer
from trainmedic.render.markdown import finding_markdown


def register(ls: TrainmedicServer) -> None:
    def hover(params: types.HoverParams) -> types.Hover | None:
        published = ls.published.get(params.text_document.uri)
        line = params.position.line
        findings = published.findings_at.get(line) if published else None
        if published is None or not findings:
            return None
        text = "\n\n---\n\n".join(finding_markdown(finding, published.diagnosis,
                                                   published.catalogue) for finding in findings)
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
            range=types.Range(start=types.Position(line=line, character=0),
                              end=types.Position(line=line + 1, character=0)))

    ls.on(types.TEXT_DOCUMENT_HOVER, hover)
