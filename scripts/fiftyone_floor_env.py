"""A Python with the lowest FiftyOne the project supports, for its smoke set.

Makes (or reuses) a venv at ``.venv-fiftyone-floor/`` beside the checkout,
created with ``--system-site-packages`` so torch and the rest are reused,
into which only the lowest FiftyOne in ``pyproject.toml``'s range (and what
that version pins) is installed. ``make install-test`` runs it, so the test
(tests/test_install.py) finds it made; prints the venv's Python.
"""

import os
import subprocess
import sys
try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib
import venv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(REPO, ".venv-fiftyone-floor")


def lowest_fiftyone() -> str:
    """The lowest version ``pyproject.toml`` allows (its ``>=`` bound)."""
    from packaging.requirements import Requirement

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    fiftyone = next(Requirement(d) for d in deps if Requirement(d).name == "fiftyone")
    floor = next(s.version for s in fiftyone.specifier if s.operator == ">=")
    return floor if floor.count(".") == 2 else floor + ".0"


def venv_python() -> str:
    return os.path.join(VENV, "Scripts" if os.name == "nt" else "bin", "python")


def installed_fiftyone(python: str) -> str:
    r = subprocess.run([python, "-c", "import importlib.metadata as m; "
                        "print(m.version('fiftyone'))"], capture_output=True, text=True)
    return r.stdout.strip()


def ensure() -> str:
    """The venv's Python, with the lowest FiftyOne installed in it."""
    wanted = lowest_fiftyone()
    python = venv_python()
    if not os.path.exists(python):
        venv.EnvBuilder(system_site_packages=True, with_pip=True).create(VENV)
    if installed_fiftyone(python) != wanted:
        subprocess.check_call([python, "-m", "pip", "install", "-q",
                               "--disable-pip-version-check", f"fiftyone=={wanted}"])
    return python


if __name__ == "__main__":
    print(ensure())
    sys.exit(0)
