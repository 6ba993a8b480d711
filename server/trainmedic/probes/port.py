"""Is the rendezvous port free? Bind MASTER_PORT (29500 when unset) on 127.0.0.1 like a new job.

A job's rank 0 (or torchrun's agent) listens on MASTER_PORT; when another process already
listens there, the job dies with EADDRINUSE. This probe tries the same bind on the loopback
address, names the process that holds the port when /proc lets this user see it, and proposes
a free port. It needs no torch and opens no connection.
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

from trainmedic.probes._torch import Report

SUMMARY = ("is MASTER_PORT (default 29500) free on 127.0.0.1; who holds it; "
           "a free port to use instead")
DEFAULT_PORT = 29500
_LISTEN = "0A"


def _bind(port: int) -> OSError | None:
    """None when a listening socket could be opened on 127.0.0.1:port (then closed again)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # torch's TCPStore sets SO_REUSEADDR too, so ports in TIME_WAIT count as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(1)
        except OSError as error:
            return error
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text("ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or fields[3] != _LISTEN:
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _link(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:  # closed meanwhile, or not ours to read
        return ""


def holders(port: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes this user can see listening on `port`."""
    inodes = _listening_inodes(port)
    if not inodes:
        return []
    wanted = {f"socket:[{inode}]" for inode in inodes}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        if any(_link(fd) in wanted for fd in fds):
            try:
                raw = (entry / "cmdline").read_bytes()
                command = " ".join(raw.replace(b"\0", b" ").decode("utf-8", "replace").split())
            except OSError:
                command = "?"
            found.append((int(entry.name), command[:200] or "?"))
    return sorted(found)


def _requested_port(report: Report) -> int | None:
    raw = os.environ.get("MASTER_PORT", "").strip()
    if not raw:
        report.info(f"MASTER_PORT is not set: checking torchrun's default port {DEFAULT_PORT} "
                    "(set MASTER_PORT=<port> to check another one)")
        return DEFAULT_PORT
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        report.check(False, f"MASTER_PORT={raw!r} is not a port number (1-65535)")
        return None
    report.info(f"checking MASTER_PORT={raw} from this environment")
    return int(raw)


def run() -> int:
    report = Report()
    port = _requested_port(report)
    if port is None:
        return report.code
    error = _bind(port)
    if error is None:
        report.check(True, f"port {port} is free on 127.0.0.1: a rendezvous server can listen "
                           "on it now")
        return report.code
    in_use = error.errno == errno.EADDRINUSE
    report.check(False, f"port {port} cannot be used on 127.0.0.1: "
                        f"{'already in use (EADDRINUSE)' if in_use else error.strerror}")
    if in_use:
        owners = holders(port)
        for pid, command in owners:
            report.info(f"  held by pid {pid}: {command}")
        if not owners:
            report.info("  the holder is not visible to this user (another user's process, or "
                        f"no /proc): try `ss -ltnp 'sport = :{port}'` or `lsof -i :{port}`")
        report.info("  if it is a leftover run of yours, stop it by its pid; otherwise use "
                    "another port")
    elif error.errno == errno.EACCES:
        report.info("  ports below 1024 need privileges: use a port above 1024")
    spare = _free_port()
    report.info(f"  a free port right now: {spare} -> torchrun --master-port {spare} ... "
                f"(accelerate launch --main_process_port {spare}, deepspeed --master_port {spare},"
                f" or export MASTER_PORT={spare})")
    return report.code
