"""Latency of the language server as an editor sees it, over JSON-RPC on stdio.

Prints the time from starting `python -m trainmedic lsp` to the answer to `initialize`, and
p50/p95 of `trainmedic.diagnose` on a 200-line log and on a 20,000-line multi-rank log, and
of a hover on a diagnosed line and on a training script's finding (also right after an edit,
while its re-check waits). Beside each diagnose figure, the same text diagnosed by the
core in this process shows how much of the round trip is the engine. The logs are built from
the real corpus lines in tests/fixtures/lsp. Targets, printed beside each figure: diagnose
p95 < 10 ms (200 lines) and < 300 ms (20,000 lines), hover p95 < 5 ms (after an edit too);
the start's target is relative to its floor, which `bench/speed.py` measures beside it.

Usage: python bench/lsp_latency.py [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose_text
from trainmedic.matching.choice import matcher_for

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "lsp"
SCRIPT = FIXTURES.parent / "checks" / "TM105" / "positive-clip-scaled.py"
SCRIPT_URI = (FIXTURES / "bench-train.py").as_uri()
SERVER = (sys.executable, "-m", "trainmedic", "lsp")
STARTS = 10
CAPABILITIES = types.ClientCapabilities(
    window=types.WindowClientCapabilities(work_done_progress=True),
    text_document=types.TextDocumentClientCapabilities(
        hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown])))


def _lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text("utf-8").splitlines()


def short_log() -> str:
    """200 lines: a healthy start, then a single-process traceback and a 3-rank failure."""
    failing = _lines("bf16-unsupported.log") + _lines("amp-loss-scale-3ranks.log")
    healthy = _lines("healthy-2ranks.log")
    return "\n".join((healthy * 5)[: 200 - len(failing)] + failing) + "\n"


def long_log(lines: int = 20_000) -> str:
    """A long 2-rank run (real lines, repeated) that ends in the real 3-rank failure."""
    failing = _lines("amp-loss-scale-3ranks.log")
    healthy = _lines("healthy-2ranks.log")
    body = (healthy * (lines // len(healthy) + 1))[: lines - len(failing)]
    return "\n".join(body + failing) + "\n"


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {1000 * statistics.median(ordered):7.1f} ms   p95 {1000 * p95:7.1f} ms"


async def timed(action: Callable[[], Awaitable[Any]], runs: int, warmup: int = 2) -> list[float]:
    for _ in range(warmup):
        await action()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await action()
        samples.append(time.perf_counter() - start)
    return samples


def new_client() -> LanguageClient:
    client = LanguageClient("lsp-latency", "1")

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def create_progress(params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.PROGRESS)
    def progress(params: types.ProgressParams) -> None:
        return None

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def log_message(params: types.LogMessageParams) -> None:
        return None  # the server's log lines (a worker pool starting) are not the bench's

    return client


async def start(root: Path) -> tuple[LanguageClient, float]:
    began = time.perf_counter()
    client = new_client()
    await client.start_io(*SERVER)
    await client.initialize_async(types.InitializeParams(
        capabilities=CAPABILITIES, root_uri=root.as_uri(), process_id=None))
    elapsed = time.perf_counter() - began
    client.initialized(types.InitializedParams())
    return client, elapsed


async def stop(client: LanguageClient) -> None:
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


async def main(runs: int) -> None:
    root = FIXTURES
    starts = []
    for _ in range(STARTS):
        client, elapsed = await start(root)
        starts.append(elapsed)
        await stop(client)
    print(f"start to initialize answered      {percentiles(starts)}   ({STARTS} starts)")

    client, _ = await start(root)
    catalogue = bundled()
    matcher = matcher_for(catalogue)
    for name, text, count, target in (("200 lines", short_log(), runs, 10),
                                      ("20,000 lines", long_log(), max(runs // 5, 10), 300)):
        arguments = [{"text": text}]

        async def diagnose(arguments: list[Any] = arguments) -> Any:
            return await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="trainmedic.diagnose", arguments=arguments))

        result = await diagnose()
        found = result["diagnoses"][0]["rule_id"] if result["diagnoses"] else "nothing"
        round_trip = await timed(diagnose, count)

        async def core(text: str = text) -> None:
            diagnose_text(text, catalogue, matcher=matcher)

        engine = await timed(core, count)
        print(f"diagnose {name:<13}            {percentiles(round_trip)}   "
              f"(core alone: {percentiles(engine)}; found {found})  (target p95 < {target} ms)")

    uri = (root / "bench-20000.log").as_uri()
    loop = asyncio.get_running_loop()
    waiting = {uri: loop.create_future(), SCRIPT_URI: loop.create_future()}
    published = waiting[uri]

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params: types.PublishDiagnosticsParams) -> None:
        found = waiting.get(params.uri)
        if found is not None and params.diagnostics and not found.done():
            found.set_result(params.diagnostics)

    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="log", version=1, text=long_log())))
    line = next(d.range.start.line for d in await asyncio.wait_for(published, 60)
                if d.severity == types.DiagnosticSeverity.Error)
    hover_params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                     position=types.Position(line=line, character=0))

    async def hover() -> None:
        assert await client.text_document_hover_async(hover_params) is not None

    print(f"hover on the root-cause line      {percentiles(await timed(hover, runs * 4))}   "
          "(target p95 < 5 ms)")
    await script_hovers(client, waiting[SCRIPT_URI], runs * 4)
    await stop(client)


async def script_hovers(client: LanguageClient, checked: asyncio.Future[Any], runs: int) -> None:
    """Hover on a script check's finding as it stands, and right after each of a run of edits
    (the re-check still debounced)."""
    script, uri = SCRIPT.read_text("utf-8"), SCRIPT_URI
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=script)))
    at = (await asyncio.wait_for(checked, 60))[0].range.start
    params = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=at)

    async def hover() -> None:
        assert await client.text_document_hover_async(params) is not None

    print(f"hover on a training script        {percentiles(await timed(hover, runs))}   "
          "(target p95 < 5 ms)")
    after = []
    for version in range(2, runs + 2):
        script += "#"  # typing at the end of the file
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=script)]))
        start = time.perf_counter()
        await hover()
        after.append(time.perf_counter() - start)
    print(f"  ... right after an edit         {percentiles(after)}   (target p95 < 5 ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="samples per figure (default 50)")
    asyncio.run(main(parser.parse_args().runs))
