"""A Python with the lowest FiftyOne the project supports, for its smoke set.

Makes (or reuses) a venv at ``.venv-fiftyone-floor/`` beside the checkout,
into which only the lowest FiftyOne in ``pyproject.toml``'s range (and what
that version pins) is installed; torch and the rest are reused from the
environment that runs this script. ``--system-site-packages`` alone would
expose the *base* interpreter's packages, not those of a venv the script runs
in, so a ``.pth`` file in the floor's site-packages adds the running
environment's site-packages after the floor's own (the floor's FiftyOne and
its pins come first). ``make install-test`` runs it, so the test
(tests/test_install.py) finds it made; prints the venv's Python.
"""

import os
import site
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


#: the floor's .pth file that adds the running environment's site-packages
OUTER_PTH = "_imagenetx_outer_environment.pth"


def outer_site_dirs() -> list:
    """The site-packages of the environment running this script (a venv's,
    or the interpreter's own), the user's site-packages when it is on."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if os.path.isdir(d)]


def see_outer_environment(python: str) -> str:
    """Writes the floor's .pth file: each line ``site.addsitedir``s one of
    :func:`outer_site_dirs` (so their own .pth files, editable installs
    included, are read too). Returns its path."""
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip()
    path = os.path.join(purelib, OUTER_PTH)
    with open(path, "w") as f:
        for d in outer_site_dirs():
            if os.path.realpath(d) != os.path.realpath(purelib):
                f.write(f"import site; site.addsitedir({d!r})\n")
    return path


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
    see_outer_environment(python)
    if installed_fiftyone(python) != wanted:
        subprocess.check_call([python, "-m", "pip", "install", "-q",
                               "--disable-pip-version-check", f"fiftyone=={wanted}"])
    return python


if __name__ == "__main__":
    print(ensure())
    sys.exit(0)
