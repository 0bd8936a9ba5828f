"""The workers that run the App's delegated operations (FiftyOne's legacy
orchestrator: ``fiftyone delegated launch``), and this plugin's runs that
are queued or running."""

import os
import signal
import subprocess
import sys

import fiftyone as fo

from imagenetx.app.install import PLUGIN_NAME

#: what FiftyOne's open-source App needs to offer "Schedule" for delegated
#: operations: without it the App shows "Background compute is not yet
#: configured" and no button
ALLOW_DELEGATION_ENV = "FIFTYONE_ALLOW_LEGACY_ORCHESTRATORS"


def enable_delegation() -> None:
    """Lets this process and the App it starts schedule delegated operations
    (FiftyOne's legacy orchestrator: any ``fiftyone delegated launch``
    worker on the same database runs them)."""
    os.environ[ALLOW_DELEGATION_ENV] = "true"
    fo.config.allow_legacy_orchestrators = True


def start_worker(log_path: str = None):
    """Starts ``fiftyone delegated launch`` as a child process: it runs the
    delegated operations queued on this database, one at a time.

    Args:
        log_path (None): a file for its output (default: discarded)

    Returns:
        the ``subprocess.Popen`` of the worker
    """
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    return subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from fiftyone.core.cli import main; "
         "sys.argv = ['fiftyone', 'delegated', 'launch']; main()"],
        env=dict(os.environ, **{ALLOW_DELEGATION_ENV: "true"}),
        # in the caller's process group: a signal that stops the App's
        # group (Ctrl-C, a supervisor) stops the worker too
        stdout=out, stderr=subprocess.STDOUT,
    )


def stop_worker(worker, timeout: float = 10.0) -> None:
    """Stops a worker from :func:`start_worker` (its running operation, if
    any, is marked failed by FiftyOne and can be run again)."""
    if worker is None or worker.poll() is not None:
        return
    try:
        worker.send_signal(signal.SIGINT)
        worker.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


def worker_running() -> bool:
    """Whether a ``fiftyone delegated launch`` worker runs on this machine
    (one started by :func:`start_worker` or by hand)."""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or ())
        if "delegated" in cmdline and "launch" in cmdline and "fiftyone" in cmdline:
            return True
    return False


def background_runs(dataset_name: str) -> list:
    """This plugin's delegated operations on a dataset that are queued or
    running, oldest first, with their progress.

    Returns:
        ``[{"id", "operator", "label", "state", "progress", "detail"}]``
        (``progress`` a fraction or None, ``detail`` FiftyOne's progress
        label such as "1,024 of 50,000 images")
    """
    from fiftyone.operators.delegated import DelegatedOperationService
    from fiftyone.operators.executor import ExecutionRunState

    service = DelegatedOperationService()
    runs = []
    for state in (ExecutionRunState.RUNNING, ExecutionRunState.QUEUED):
        for op in service.list_operations(dataset_name=dataset_name, run_state=state):
            if not (op.operator or "").startswith(PLUGIN_NAME + "/"):
                continue
            status = (op._doc or {}).get("status") or {}
            runs.append({
                "id": str(op.id),
                "operator": op.operator,
                "label": op.label or op.operator.rsplit("/", 1)[-1],
                "state": state,
                "progress": status.get("progress"),
                "detail": status.get("label"),
                "queued_at": str(op.queued_at),
            })
    return sorted(runs, key=lambda r: r["queued_at"])
