"""The trainmedic language server: `create_server()` builds one, `serve()` runs it on stdio.

There is no module-level server: every call to `create_server()` returns a fresh one, so a
test can build as many as it needs. Features live in `trainmedic.lsp.features`, one module
each, and hook into the server through `TrainmedicServer.on` (see that package's docstring).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import logging
import sys
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO

import cattrs
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    PyglsError,
)
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import JsonRPCProtocol, MsgId
from pygls.uris import to_fs_path

from trainmedic import __version__
from trainmedic.catalogue.rules import RuleError
from trainmedic.lsp.active_catalogue import RulePacks
from trainmedic.lsp.conversions import Published
from trainmedic.lsp.features import FEATURES
from trainmedic.lsp.framing import FrameError, FrameReader
from trainmedic.lsp.log_globs import is_log
from trainmedic.lsp.memory import IdleTrim
from trainmedic.lsp.settings import Settings
from trainmedic.lsp.workers import Workers

if TYPE_CHECKING:
    from pygls.protocol.json_rpc import MessageCallback, MessageHandler

logger = logging.getLogger(__name__)

SERVER_NAME = "trainmedic"
DIAGNOSE_THREADS = 2
# Results kept for documents the client has not opened (text diagnosed with a `uri`), newest
# first: enough for hovers on what was just diagnosed, bounded whatever the client sends.
UNOPENED_KEPT = 16

# The server's own events, which features subscribe to with `on` like LSP methods.
SETTINGS_CHANGED = "trainmedic/settingsChanged"
RULES_CHANGED = "trainmedic/rulesChanged"

Handler = Callable[[Any], Any]

# The notebooks whose code cells the script checks read (features/notebook_checks.py).
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(notebook_selector=[
    types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")],
                                          notebook="jupyter-notebook")])

_ANSWERED = object()  # a malformed request that has already been answered with an error


class JsonAnswer(dict[str, Any]):
    """A command's answer that is JSON already (the CLI's own JSON, and text): sent as it is.
    The converter would otherwise rebuild it value by value, a quarter of the time a
    200-line diagnosis's answer takes to send; what JSON cannot hold is still unstructured."""


class TrainmedicProtocol(LanguageServerProtocol):
    """pygls' protocol, answering what pygls 2.1.1 leaves unanswered and forwarding cancels.

    pygls logs a request whose params do not validate, a message that is not JSON-RPC, and a
    body that is not JSON, but sends no response, so the client waits forever. Here each gets
    the JSON-RPC error the specification asks for. A `$/cancelRequest` also sets the event of
    the request's work (`TrainmedicServer.cancellation`), so a running diagnosis stops.
    """

    def __init__(self, server: LanguageServer, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        converter.register_unstructure_hook(JsonAnswer, lambda answer: answer)
        self.cancel_events: dict[MsgId, threading.Event] = {}

    def reject(self, msg_id: MsgId | None, error: JsonRpcException) -> None:
        """Answer a request (or, with no usable id, the message) with a JSON-RPC error."""
        # pygls 2.1.1 has no public call that sends a raw response; `_send_data` is its own.
        self._send_data({"jsonrpc": JsonRPCProtocol.VERSION, "id": msg_id,
                         "error": {"code": error.code, "message": error.message}})

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            msg_id = data.get("id")
            if "method" not in data or not _usable_id(msg_id):
                raise
            reason = "; ".join(_reasons(error.__cause__)) or error.message
            logger.warning("rejected a malformed %r request: %s", data["method"], reason)
            self.reject(msg_id, type(error)(f"{error.message}: {reason}"))
            return _ANSWERED

    def handle_message(self, message: Any) -> None:
        if message is _ANSWERED:
            return
        if getattr(message, "jsonrpc", None) != JsonRPCProtocol.VERSION:
            msg_id = message.get("id") if isinstance(message, dict) else None
            logger.warning("rejected a message that is not JSON-RPC 2.0: %.200r", message)
            self.reject(msg_id if _usable_id(msg_id) else None,
                        JsonRpcInvalidRequest("Invalid Request: not a JSON-RPC 2.0 message"))
            return
        super().handle_message(message)

    def _execute_handler(self, msg_id: MsgId, handler: MessageHandler,
                         callback: MessageCallback, args: tuple[Any, ...] | None = None,
                         kwargs: dict[str, Any] | None = None) -> None:
        """Run a handler, first forgetting the handlers that have finished.

        pygls 2.1.1 keeps the future of each handler it runs for a notification, or for a
        built-in feature such as `workspace/executeCommand` (under an id of its own), and never
        removes it: every message would keep its handler's result, a diagnosis, for good.
        Rebinding rather than deleting in place leaves any loop over the old dict undisturbed.
        Written against pygls 2.1.1's private `_execute_handler` and `_request_futures`, for
        which it has no public hook.
        """
        self._request_futures = {msg: future for msg, future in self._request_futures.items()
                                 if not future.done()}
        super()._execute_handler(msg_id, handler, callback, args, kwargs)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """Cancel the work in flight, then answer `null`.

        pygls 2.1.1 cancels each request while iterating over the dict of requests, and a
        cancelled command is answered, and removed from that dict, at once: a `shutdown`
        during a diagnosis was answered "dictionary changed size during iteration". Here the
        requests are cancelled from a copy, and the workers' cancel events set as well.
        """
        handler = self.fm.features.get(types.SHUTDOWN)
        if handler is not None:
            yield handler, args, None
        current = self.msg_id
        for event in list(self.cancel_events.values()):
            event.set()
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        self._shutdown = True

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        # pygls 2.1.1 cancels only the request's future, which a thread already running cannot
        # see; its private handler is the one place a cancel arrives.
        event = self.cancel_events.get(msg_id)
        if event is not None:
            event.set()
        super()._handle_cancel_notification(msg_id)


def _usable_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _reasons(cause: BaseException | None) -> list[str]:
    if isinstance(cause, cattrs.BaseValidationError):
        return cattrs.transform_error(cause)
    return [str(cause)] if cause is not None else []


class TrainmedicServer(LanguageServer):
    """The server and the state its features share: settings, rules, published results."""

    protocol: TrainmedicProtocol

    def __init__(self) -> None:
        super().__init__(SERVER_NAME, __version__, protocol_cls=TrainmedicProtocol,
                         notebook_document_sync=NOTEBOOK_SYNC)
        self.settings = Settings()
        self.rules = RulePacks(self._rule_error)
        self.published: dict[str, Published] = {}
        self.jobs = ThreadPoolExecutor(DIAGNOSE_THREADS, thread_name_prefix="trainmedic-job")
        self.workers = Workers()
        self.idle_trim = IdleTrim()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.exit_code = 0
        self._handlers: dict[str, list[Handler]] = {}
        self._options: dict[str, Any] = {}

    # --- how features hook in --------------------------------------------------------------

    def on(self, method: str, handler: Handler, options: Any = None) -> None:
        """Call `handler(params)` for an LSP method or one of the server's own events.

        Several features may handle the same method: each handler runs in the order the
        features were registered, a failing one is logged and skipped, and the results of
        requests are combined (lists are concatenated, otherwise the first result wins).
        `options` are the method's registration options; the first feature to give them wins.
        Call it from a feature's `register(ls)`, before the server starts.
        """
        self._handlers.setdefault(method, []).append(handler)
        if options is not None:
            self._options.setdefault(method, options)

    async def dispatch(self, method: str, params: Any) -> Any:
        """Run every handler of `method` and combine what they return."""
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        results = []
        for handler in self._handlers.get(method, ()):
            try:
                result = handler(params)
                if inspect.isawaitable(result):
                    result = await result
            except Exception:
                logger.exception("%s handler %s failed", method, _name(handler))
                continue
            if result is not None:
                results.append(result)
        if results and all(isinstance(r, list) for r in results):
            return [item for r in results for item in r]
        return results[0] if results else None

    def apply_features(self) -> None:
        """Register one pygls handler per LSP method that a feature subscribed to."""
        for method in self._handlers:
            if method not in types.METHOD_TO_TYPES:
                continue

            async def handle(params: Any, method: str = method) -> Any:
                return await self.dispatch(method, params)

            self.feature(method, self._options.get(method))(handle)

    # --- what features share ---------------------------------------------------------------

    @contextmanager
    def cancellation(self) -> Iterator[threading.Event]:
        """An event that is set when the client cancels the request being handled."""
        event = threading.Event()
        msg_id = self.protocol.msg_id
        if msg_id is not None:
            self.protocol.cancel_events[msg_id] = event
        try:
            yield event
        finally:
            if msg_id is not None:
                self.protocol.cancel_events.pop(msg_id, None)

    def publish(self, uri: str, result: Published | None, version: int | None = None) -> None:
        """Publish a document's diagnostics (none when `result` is None) and keep the result:
        for every open document, and for the `UNOPENED_KEPT` last others."""
        self.published.pop(uri, None)
        if result is not None:
            self.published[uri] = result  # last in order: the newest
            self._forget_unopened()
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=version,
            diagnostics=list(result.diagnostics) if result is not None else []))

    def _forget_unopened(self) -> None:
        opened = self.workspace.text_documents
        unopened = [uri for uri in self.published if uri not in opened]
        for uri in unopened[: max(len(unopened) - UNOPENED_KEPT, 0)]:
            del self.published[uri]

    def diagnoses_on_open(self, uri: str) -> bool:
        """Whether `uri` is a log (by `logGlobs`) that is diagnosed when opened."""
        path = to_fs_path(uri)
        if not self.settings.diagnose_on_open or path is None:
            return False
        workspace = self.workspace
        roots = [p for p in (to_fs_path(f.uri) for f in workspace.folders.values()) if p]
        if workspace.root_path:
            roots.append(workspace.root_path)
        return is_log(path, self.settings.log_globs, roots)

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run `callback` on the event loop; safe from worker threads."""
        if self.loop is None or _on_loop(self.loop):
            callback(*args)
        else:
            self.loop.call_soon_threadsafe(callback, *args)

    # --- reading the client's messages ---------------------------------------------------

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve on stdin/stdout until `exit` (its code in `exit_code`) or the end of input.

        pygls' own loop, reading frames with `FrameReader` instead of pygls 2.1.1's reader,
        which a malformed frame leaves deaf, and keeping the code `exit` gives (0 after
        `shutdown`, else 1), which pygls' loop discards.
        """
        source = stdin or sys.stdin.buffer
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def read_line(limit: int) -> bytes:
            return await asyncio.get_running_loop().run_in_executor(
                self.thread_pool, source.readline, limit)

        async def read_exactly(size: int) -> bytes:
            return await asyncio.get_running_loop().run_in_executor(
                self.thread_pool, source.read, size)

        try:
            asyncio.run(self._read(FrameReader(read_line, read_exactly)))
        except SystemExit as exit:
            self.exit_code = exit.code if isinstance(exit.code, int) else 1
        except BrokenPipeError:
            logger.error("the client has gone: stopping")
        finally:
            self.shutdown()

    async def _read(self, frames: FrameReader) -> None:
        stop = self._stop_event
        while stop is not None and not stop.is_set():
            try:
                body = await frames.next()
            except FrameError as error:
                logger.warning("rejected a frame: %s", error)
                self.protocol.reject(None, JsonRpcParseError(f"Parse error: {error}"))
                continue
            if body is None:
                return
            try:
                message = json.loads(body, object_hook=self.protocol.structure_message)
            except ValueError as error:  # not JSON, not UTF-8, or a frame cut short
                frames.broken(body)
                logger.warning("rejected a message that is not JSON: %s", error)
                self.protocol.reject(None, JsonRpcParseError(f"Parse error: {error}"))
                continue
            except Exception as error:
                self.report_server_error(error, JsonRpcException)
                continue
            try:
                self.protocol.handle_message(message)
            except Exception as error:
                logger.exception("handling a message failed")
                self.report_server_error(error, JsonRpcException)

    # --- errors ----------------------------------------------------------------------------

    def report_server_error(self, error: Exception,
                            source: type[PyglsError] | type[JsonRpcException]) -> None:
        """Log what pygls caught (to the client's output channel); never pop up a message."""
        if isinstance(error, JsonRpcException) and error.code != JsonRpcInternalError.CODE:
            logger.warning("%s", error)  # the client's mistake, already answered
            return
        detail = ""
        if isinstance(error, JsonRpcException) and isinstance(error.data, dict):
            detail = "".join(error.data.get("traceback", ()))
        logger.error("%s: %s%s", source.__name__, error, f"\n{detail}" if detail else "")

    def _rule_error(self, error: RuleError) -> None:
        message = f"rule pack not loaded: {error}"
        logger.error("%s", message)
        self.call_soon(self.window_show_message, types.ShowMessageParams(
            type=types.MessageType.Warning, message=f"trainmedic: {message}"))

    def shutdown(self) -> None:
        # Running diagnoses stop on their own: leaving the event loop cancels their tasks.
        self.jobs.shutdown(wait=False, cancel_futures=True)
        self.workers.shutdown()
        super().shutdown()  # type: ignore[no-untyped-call]


def _name(handler: Handler) -> str:
    return f"{getattr(handler, '__module__', '?')}.{getattr(handler, '__qualname__', handler)}"


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class ClientLogHandler(logging.Handler):
    """Sends the package's log records to the client's output channel (`window/logMessage`)."""

    LEVELS = ((logging.ERROR, types.MessageType.Error),
              (logging.WARNING, types.MessageType.Warning),
              (logging.INFO, types.MessageType.Info))

    def __init__(self, ls: TrainmedicServer) -> None:
        super().__init__(logging.INFO)
        self.ls = ls
        self.setFormatter(logging.Formatter("%(message)s"))
        # Sending can fail (the client has gone), which is reported, which is logged, which
        # is sent...: a record logged while one is being sent is dropped.
        self.sending = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        if self.ls.protocol.writer is None or getattr(self.sending, "active", False):
            return
        kind = next((t for level, t in self.LEVELS if record.levelno >= level),
                    types.MessageType.Log)
        self.sending.active = True
        try:
            params = types.LogMessageParams(type=kind, message=self.format(record))
            self.ls.call_soon(self.ls.window_log_message, params)
        except Exception:
            self.handleError(record)
        finally:
            self.sending.active = False


def create_server(features: Iterable[str] = FEATURES) -> TrainmedicServer:
    """A new server with every feature that loads; a feature that fails is logged and left out."""
    ls = TrainmedicServer()
    for name in features:
        try:
            importlib.import_module(name).register(ls)
        except Exception:
            logger.exception("feature %s failed to load; the server runs without it", name)
    ls.apply_features()
    return ls


def serve() -> int:
    """Run a server on stdin/stdout until the client says exit."""
    ls = create_server()
    package = logging.getLogger("trainmedic")
    package.setLevel(logging.INFO)
    package.addHandler(ClientLogHandler(ls))
    ls.start_io()
    return ls.exit_code
