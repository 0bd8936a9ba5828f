"""Whether a TCP port can be listened on, and which process holds it.

FiftyOne's App starts its server in a child process and waits for it: on a
port another program holds, that is a minute of waiting and pages of
tracebacks. Asking the operating system first takes milliseconds.
"""

import errno
import json
import socket
import urllib.request
from typing import Optional

from imagenetx.errors import ImageNetXError


def port_taken(address: str, port: int) -> bool:
    """Whether listening on ``address:port`` fails because the port is in
    use (a port in TIME_WAIT is free, as it is to FiftyOne's server)."""
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False  # an address the server will refuse in its own words
    family, _, _, _, sockaddr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(sockaddr)
        except OSError as e:
            return e.errno == errno.EADDRINUSE
    return False


def port_holder(port: int) -> Optional[str]:
    """``process 1234 (python -m http.server 8000)``: the process listening
    on ``port``, where this user may see it; else None."""
    import psutil

    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.AccessDenied, OSError):
        return None
    pids = {c.pid for c in conns
            if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN and c.pid}
    for pid in sorted(pids):
        try:
            command = " ".join(psutil.Process(pid).cmdline())[:120]
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            command = ""
        return f"process {pid}" + (f" ({command})" if command else "")
    return None


def serves_fiftyone(address: str, port: int) -> bool:
    """Whether a FiftyOne App server answers on ``address:port`` (FiftyOne
    then connects to it rather than starting one)."""
    host = "127.0.0.1" if address in ("0.0.0.0", "") else address
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/fiftyone", timeout=2) as r:
            return "version" in json.loads(r.read())
    except Exception:  # not HTTP, not FiftyOne, not JSON
        return False


def check_app_port(address: str, port: int) -> None:
    """Raises ImageNetXError when ``port`` is held by something other than a
    FiftyOne App server (one line naming the port and, where it can be
    found, the process holding it)."""
    if not port_taken(address, port) or serves_fiftyone(address, port):
        return
    holder = port_holder(port)
    raise ImageNetXError(
        f"Port {port} is taken by {holder or 'another process'}: pass another `port` "
        + ("(or stop that process)" if holder else
           f"(`ss -ltnp 'sport = :{port}'` names the process holding it)"))
