"""The keeper of the shared database: ``python -m imagenetx.store.keeper FOLDER``.

Starts FiftyOne's database service on a data folder exactly as FiftyOne does
(``fiftyone/service/main.py --51-service db --multi`` around FiftyOne's
``mongod``), as its first client, and stays that client: FiftyOne stops the
service when its last client leaves, so the service runs until the keeper
gets SIGTERM (``imagenetx db stop``). Then it closes the service's stdin,
FiftyOne's own way to say the parent left: ``mongod`` shuts down cleanly once
no other FiftyOne process uses it.

The keeper prints ``ready`` on stdout once ``mongod`` listens and the state
file is written (or one line saying why not), for the command waiting on it.
It runs in its own session, so killing the command's process group leaves
it alone; if the service process dies under it and leaves ``mongod``
behind, the keeper stops that ``mongod`` before it exits.
"""

import os
import signal
import subprocess
import sys
import time

from imagenetx.store.service import (
    START_TIMEOUT_S,
    STOP_TIMEOUT_S,
    ServiceState,
    listening_ports,
    mongod_command,
    remove_state,
    service_main,
    write_state,
)


def _listening_mongod(wrapper):
    """``(pid, port)`` of the service's ``mongod`` once it listens, else None."""
    import psutil

    for child in wrapper.children(recursive=True):
        try:
            if os.path.basename(child.cmdline()[0]).startswith("mongod"):
                ports = listening_ports(child.pid)
                if ports:
                    return child.pid, ports[0]
        except (psutil.Error, IndexError):
            pass
    return None


#: runs FiftyOne's service script with a bare ``fiftyone`` package module:
#: the script needs only ``fiftyone.service.ipc``, and ``fiftyone/__init__``
#: imports all of FiftyOne (seconds) before the database can start
_LIGHT_BOOT = (
    "import os, runpy, sys, types\n"
    "main = sys.argv[1]\n"
    "package = types.ModuleType('fiftyone')\n"
    "package.__path__ = [os.path.dirname(os.path.dirname(main))]\n"
    "sys.modules['fiftyone'] = package\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(main, run_name='__main__')\n"
)


def _service(command, light: bool):
    """FiftyOne's database service process around ``mongod``, as
    ``fiftyone.core.service.DatabaseService`` starts it (the same arguments,
    so FiftyOne's other processes find it and attach)."""
    import psutil

    boot = ["-c", _LIGHT_BOOT] if light else []
    return psutil.Popen(
        [sys.executable, *boot, service_main(), "--51-service", "db", "--multi", *command],
        stdin=subprocess.PIPE, stdout=sys.stderr,  # stdout is the starter's pipe
        env=dict(os.environ, FIFTYONE_DISABLE_SERVICES="1"))


def main(folder: str) -> int:
    command = mongod_command(folder)
    log_path = command[command.index("--logpath") + 1]
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    open(log_path, "a").close()
    light = True
    wrapper = _service(command, light)

    def leave(signum, frame):
        # FiftyOne's Service.stop(): closing stdin tells the service its
        # parent left; it stops mongod once no other client uses it
        remove_state(folder, os.getpid())
        try:
            wrapper.stdin.close()
        except OSError:
            pass
        sys.exit(0)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, leave)

    deadline = time.monotonic() + START_TIMEOUT_S
    found = None
    while found is None:
        if wrapper.poll() is not None:
            if wrapper.returncode != 0 and light:
                # the light start failed (a FiftyOne whose service script
                # needs more): FiftyOne's own start
                light = False
                wrapper = _service(command, light)
                continue
            print(f"FiftyOne's database service exited ({wrapper.returncode})", flush=True)
            return 1
        if time.monotonic() > deadline:
            print(f"mongod did not listen within {START_TIMEOUT_S:.0f} s", flush=True)
            leave(None, None)
        found = _listening_mongod(wrapper)
        if found is None:
            time.sleep(0.05)  # polls mongod's first listen, as FiftyOne does
    mongod, port = found
    write_state(ServiceState(folder=folder, port=port, mongod=mongod, wrapper=wrapper.pid,
                             keeper=os.getpid()))
    print("ready", flush=True)
    sys.stdout.close()

    wrapper.wait()
    # the service process is gone (mongod exited, or it was killed): a
    # mongod left behind still holds the folder
    remove_state(folder, os.getpid())
    import psutil  # only here and in the keeper: not at the CLI's start-up

    try:
        orphan = psutil.Process(mongod)
        if orphan.cmdline()[1:] == command[1:]:
            orphan.terminate()
            orphan.wait(STOP_TIMEOUT_S)
    except psutil.Error:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
