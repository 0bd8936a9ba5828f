"""Start-up of the ``imagenetx`` command, before and after, in one run.

Measures, with the code of ``--before-ref`` (default: the last commit before
the start-up work: one 804-line cli.py whose parser imports FiftyOne, and
FiftyOne's own database started per process) and with this checkout (the
command-line package and the database service):

-   ``imagenetx --help`` and ``imagenetx ratios --help``: wall seconds
    (median of 3);
-   ``imagenetx ratios --dataset <demo> --pred-field imagenet_labels`` twice
    in a row (before and after alternating, ``--rounds`` times; medians): wall
    seconds of each, and its own overhead per stage (parser,
    database service, ``import fiftyone``, database connection, benchmark
    detection; the rest is the work, other imports and printing; the
    interpreter's start and exit, FiftyOne's exit handlers included, are the
    wall time outside ``main``).

The demo is built once (``imagenetx demo``, a few minutes) on a private data
folder, and removed with it at the end. As root, the run happens in its own
PID namespace (``unshare``): FiftyOne attaches to any database service process
it can see, so other FiftyOne processes on the machine would otherwise serve
the "before" runs; the namespace also ends every process the run started.

    python perf/startup.py [--before-ref REF] [--rounds 3]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEFORE_REF = "37485de"  # main before issue 23 (start-up and the database service)
STAGES = ("parser", "database service", "import fiftyone", "database connection",
          "benchmark detection", "work and the rest")


# -- the child: one command with timers around its stages --------------------


def _child(code: str, argv: list) -> None:
    """Runs ``imagenetx.cli.main(argv)`` from ``code`` with timers; prints
    the stage seconds as JSON on the last line of stderr."""
    import importlib
    import importlib.abc
    import importlib.util

    sys.path.insert(0, code)
    seconds = dict.fromkeys(STAGES, 0.0)
    nested = [0.0]  # seconds of inner stages, per open stage

    def clock(stage, fn, *args, **kwargs):
        """Runs ``fn``; counts its time, less that of stages inside it."""
        t = time.perf_counter()
        nested.append(0.0)
        try:
            return fn(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - t
            seconds[stage] += elapsed - nested.pop()
            nested[-1] += elapsed

    def timed(stage, fn):
        return lambda *args, **kwargs: clock(stage, fn, *args, **kwargs)

    # patched when their modules load (before anyone imports from them)
    patches = {
        "fiftyone.core.odm.database": ("establish_db_conn", "database connection"),
        "imagenetx.benchmarks": ("get_benchmark", "benchmark detection"),
    }

    class Hook(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "fiftyone" and name not in patches:
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(name)
            finally:
                sys.meta_path.insert(0, self)
            run = spec.loader.exec_module

            def exec_module(module):
                if name == "fiftyone":
                    clock("import fiftyone", run, module)
                else:
                    run(module)
                    attr, stage = patches[name]
                    setattr(module, attr, timed(stage, getattr(module, attr)))
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Hook())
    t0 = time.perf_counter()
    cli = clock("parser", importlib.import_module, "imagenetx.cli")
    for name in ("build_parser", "_parser"):
        if hasattr(cli, name):
            setattr(cli, name, timed("parser", getattr(cli, name)))
    try:
        from imagenetx.store import service
    except ImportError:  # before: no service
        pass
    else:
        service.connect = timed("database service", service.connect)
    status = cli.main(argv)
    total = time.perf_counter() - t0
    seconds["work and the rest"] = total - sum(v for k, v in seconds.items()
                                               if k != "work and the rest")
    print(json.dumps({"status": status, "seconds": seconds}), file=sys.stderr)


# -- the parent ---------------------------------------------------------------


def _run(code: str, env: dict, *args, stages: bool = False):
    """``(wall seconds, stages or None)`` of one command."""
    if stages:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", code, "--", *args]
    else:
        cmd = [sys.executable, "-m", "imagenetx", *args]
    t = time.perf_counter()
    r = subprocess.run(cmd, env=dict(env, PYTHONPATH=code), cwd=code, capture_output=True,
                       text=True)
    wall = time.perf_counter() - t
    if r.returncode != 0 or (stages and '"status": 0' not in r.stderr.splitlines()[-1]):
        raise SystemExit(f"{' '.join(args)} failed ({code}):\n{r.stderr[-3000:]}")
    return wall, (json.loads(r.stderr.splitlines()[-1])["seconds"] if stages else None)


def _median_run(runs: list) -> tuple:
    """``(wall, stages)``: the median of each over runs."""
    return (statistics.median(w for w, _ in runs),
            {k: statistics.median(s[k] for _, s in runs) for k in runs[0][1]})


def _seconds(cmd: list) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t


def _checkout(ref: str, into: str) -> str:
    """The ``imagenetx`` package of a commit, in a folder."""
    archive = subprocess.run(["git", "-C", REPO, "archive", ref, "imagenetx"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return into


def _isolate() -> None:
    """Re-runs this script in its own PID namespace when it can."""
    if os.environ.get("IMAGENETX_PERF_ISOLATED") or os.geteuid() != 0 \
            or not shutil.which("unshare"):
        if not os.environ.get("IMAGENETX_PERF_ISOLATED"):
            print("note: not isolated (needs root and unshare); other FiftyOne processes "
                  "may serve the 'before' runs", file=sys.stderr)
        return
    env = dict(os.environ, IMAGENETX_PERF_ISOLATED="1")
    code = subprocess.call(["unshare", "--pid", "--fork", "--mount-proc", sys.executable,
                            *sys.argv], env=env)
    sys.exit(code)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[4:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before-ref", default=BEFORE_REF,
                        help=f"the commit measured as 'before' (default: {BEFORE_REF})")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the two runs each, before and after alternating "
                             "(default: 3; each cell is the median)")
    args = parser.parse_args()
    _isolate()

    tmp = tempfile.mkdtemp(prefix="imagenetx-startup-")
    name = f"startup-{uuid.uuid4().hex[:6]}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("FIFTYONE_DATABASE_URI", "IMAGENETX_DB_AUTOSTART")}
    env.update(FIFTYONE_DATABASE_DIR=os.path.join(tmp, "db"), FIFTYONE_DO_NOT_TRACK="true",
               FIFTYONE_DEFAULT_DATASET_DIR=os.path.join(tmp, "media"),
               FIFTYONE_SHOW_PROGRESS_BARS="false", FIFTYONE_DATABASE_VALIDATION="false")
    before = _checkout(args.before_ref, tempfile.mkdtemp(dir=tmp, prefix="before-"))
    after = REPO
    try:
        print(f"before: {args.before_ref} ({before}); after: this checkout ({after})")
        print(f"building the demo '{name}' on a private data folder ({tmp}) ...", flush=True)
        t = time.perf_counter()
        _run(after, env, "demo", "--name", name)
        print(f"  built in {time.perf_counter() - t:.0f} s")
        _run(after, env, "db", "stop")  # "before" starts FiftyOne's own database per command

        print("\nhelp (median of 3 runs, wall seconds)")
        floor = statistics.median(_seconds([sys.executable, "-c", "pass"]) for _ in range(3))
        print(f"  python -c pass (the floor)  {floor:6.2f}")
        for cmd in (["--help"], ["ratios", "--help"]):
            b = statistics.median(_run(before, env, *cmd)[0] for _ in range(3))
            a = statistics.median(_run(after, env, *cmd)[0] for _ in range(3))
            print(f"  imagenetx {' '.join(cmd):<15} before {b:6.2f}  after {a:6.2f}  "
                  f"{b / a:5.1f}x faster")

        ratios = ["ratios", "--dataset", name, "--pred-field", "imagenet_labels"]
        rounds = {"before": [], "after": []}
        for _ in range(args.rounds):  # alternating, so both see the same machine load
            for label, code in (("before", before), ("after", after)):
                rounds[label].append([_run(code, env, *ratios, stages=True) for _ in range(2)])
            _run(after, env, "db", "stop")  # the next "after #1" starts it again
        runs = {label: [_median_run([r[i] for r in rounds[label]]) for i in range(2)]
                for label in rounds}
        print(f"\nimagenetx {' '.join(ratios)}, twice in a row (seconds, median of "
              f"{args.rounds} rounds)")
        header = "".join(f"{f'{lab} #{i + 1}':>12}" for lab in runs for i in range(2))
        print(f"  {'stage':<24}{header}")
        for stage in ("wall",) + STAGES + ("interpreter start, exit",):
            cells = []
            for label in runs:
                for wall, seconds in runs[label]:
                    value = {"wall": wall, "interpreter start, exit": wall - sum(seconds.values())
                             }.get(stage, seconds.get(stage))
                    cells.append(f"{value:12.2f}")
            print(f"  {stage:<24}{''.join(cells)}")
        for i in range(2):
            b, a = runs["before"][i][0], runs["after"][i][0]
            print(f"  run #{i + 1}: {b:.2f} s -> {a:.2f} s, {b / a:.1f}x faster")
        overhead = {lab: [w - s["work and the rest"] for w, s in runs[lab]] for lab in runs}
        print(f"  overhead before the work, run #2: {overhead['before'][1]:.2f} s -> "
              f"{overhead['after'][1]:.2f} s")
    finally:
        subprocess.run([sys.executable, "-m", "imagenetx", "db", "stop"],
                       env=dict(env, PYTHONPATH=after), cwd=after, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)  # the demo and its private data folder


if __name__ == "__main__":
    main()
