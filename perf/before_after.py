"""The first wave's speed figures, before and after a change, in one run.

Checks out an earlier commit (default: the last one before the slice
engine) in a temporary git worktree, then runs each figure's script there
and here, alternating, ``--rounds`` times: tagging 50,000 samples, error
ratios of 4 models, importing 50,000 predictions, and the panel refresh.
Prints each figure's median before and after and their ratio.

Usage: perf/before_after.py [--ref COMMIT] [--rounds N]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEFORE = "cf8e38d"  # the last commit of the first wave

#: figure -> (script name, regex of its seconds in the script's output)
FIGURES = {
    "tag 50k (cold)": ("tag_dataset.py", r"first run \(annotations parsed inside\): ([\d.]+) s"),
    "ratios 4 models": ("ratios.py", r"intervals: median ([\d.]+) s"),
    "import 50k CSV": ("import_predictions.py", r"CSV, 50,000 rows \(first run\):\s+([\d.]+) s"),
    "panel refresh 50k": ("panel_refresh.py", r"bootstrap intervals: ([\d.]+) s"),
}


def _script(tree: str, name: str) -> str:
    for folder in ("perf", "benchmarks"):  # the folder was renamed
        path = os.path.join(tree, folder, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"{name} in {tree}")


def _run(tree: str, name: str, pattern: str) -> float:
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, _script(tree, name)], cwd=tree, env=env,
                         capture_output=True, text=True)
    match = re.search(pattern, out.stdout)
    if out.returncode or not match:
        raise RuntimeError(f"{name} in {tree} failed:\n{out.stdout}\n{out.stderr}")
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ref", default=BEFORE)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", nargs="*", choices=list(FIGURES))
    args = parser.parse_args()
    # beside this checkout, so the scripts find ../shared as they do here
    before = tempfile.mkdtemp(prefix=".imagenetx-before-", dir=os.path.dirname(HERE))
    subprocess.run(["git", "worktree", "add", "--detach", "-f", before, args.ref],
                   cwd=HERE, check=True, capture_output=True)
    try:
        rows = []
        for figure in args.only or FIGURES:
            name, pattern = FIGURES[figure]
            old, new = [], []
            for _ in range(args.rounds):
                old.append(_run(before, name, pattern))
                new.append(_run(HERE, name, pattern))
            rows.append((figure, statistics.median(old), statistics.median(new)))
            print(f"{figure:<20} before {rows[-1][1]:.2f} s  after {rows[-1][2]:.2f} s  "
                  f"after/before {rows[-1][2] / rows[-1][1]:.2f}", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", before], cwd=HERE,
                       capture_output=True)
    print(f"(medians of {args.rounds} alternating runs; before = {args.ref})")


if __name__ == "__main__":
    main()
