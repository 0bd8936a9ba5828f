"""Installed the way users install it: ``fiftyone plugins download`` (a
``git archive`` of HEAD here), ``pip install`` of a wheel then ``imagenetx
plugin install``, a release; one version; the FiftyOne range tested at both
ends.

Plugin loading runs in a subprocess (tests/plugin_check.py) that hides the
editable install of the project, so the rest of the session keeps it.
"""

import io
import json
import os
import re
import subprocess
import sys
import tarfile
try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from conftest import REPO

PLUGIN = "@imagenet-x/imagenet-x"
CHECK = str(REPO / "tests" / "plugin_check.py")


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _fiftyone_yml() -> dict:
    return yaml.safe_load((REPO / "fiftyone.yml").read_text())


def _env(**extra) -> dict:
    """This session's environment (its database, its folders) without the
    checkout on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(extra)
    return env


def _check(cwd, plugins_dir, *args, **env) -> dict:
    """tests/plugin_check.py's findings, with what it logged as ``"log"``."""
    r = subprocess.run([sys.executable, CHECK, *args], cwd=cwd, capture_output=True,
                       text=True, env=_env(FIFTYONE_PLUGINS_DIR=str(plugins_dir), **env))
    assert r.returncode == 0, r.stderr[-4000:]
    *log, last = r.stdout.strip().splitlines()
    return dict(json.loads(last), log="\n".join(log) + r.stderr)  # FiftyOne logs to stdout


def _extract_head(folder: Path) -> Path:
    """What ``fiftyone plugins download`` extracts: the repository at HEAD."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=REPO,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def _assert_registers_everything(found: dict, plugin_dir) -> None:
    assert os.path.realpath(found["plugins"][PLUGIN]) == os.path.realpath(plugin_dir)
    assert found["errors"] == [], found["errors"]
    assert sorted(found["declared"]) == found["registered"]


def test_one_version_everywhere():
    """``imagenetx --version``, ``fiftyone.yml`` and the package metadata say
    the one version ``imagenetx.__version__`` holds."""
    import imagenetx

    out = subprocess.run([sys.executable, "-m", "imagenetx", "--version"], cwd=REPO,
                         capture_output=True, text=True, env=_env(PYTHONPATH=str(REPO)))
    assert out.returncode == 0 and out.stdout.strip() == f"imagenetx {imagenetx.__version__}"
    assert str(_fiftyone_yml()["version"]) == imagenetx.__version__
    project = _pyproject()
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "imagenetx.__version__"}
    released = [s for s in (REPO / "CHANGELOG.md").read_text().split("\n## ")[1:]
                if not s.startswith("Unreleased")]  # what the next release will list
    assert released[0].startswith(imagenetx.__version__)


def test_requirements_txt_and_the_fiftyone_range_agree_with_pyproject():
    """``fiftyone plugins requirements`` installs what pip would, and the
    App's plugin check uses the range pip enforces."""
    deps = [Requirement(d) for d in _pyproject()["project"]["dependencies"]]
    lines = [l.strip() for l in (REPO / "requirements.txt").read_text().splitlines()
             if l.strip() and not l.startswith("#")]
    assert [str(Requirement(l)) for l in lines] == [str(d) for d in deps]
    fiftyone = next(d for d in deps if d.name == "fiftyone")
    assert str(fiftyone.specifier) == str(
        Requirement("fiftyone" + _fiftyone_yml()["fiftyone"]["version"]).specifier)


def _write_photos(folder: Path) -> Path:
    from conftest import UNANNOTATED_VAL, VAL_FILES, save_photo

    for name, photo in zip(list(VAL_FILES) + [UNANNOTATED_VAL],
                           ["chelsea", "coffee", "astronaut", "rocket"]):
        save_photo(folder / name, photo)
    return folder


@pytest.fixture(scope="module")
def val_photos(tmp_path_factory) -> Path:
    return _write_photos(tmp_path_factory.mktemp("val-photos"))


def test_the_fiftyone_way_registers_every_operator_and_panel(tmp_path, val_photos):
    """``fiftyone plugins download`` of the repository, simulated by
    ``git archive HEAD`` into a plugins folder, with the project not
    installed: FiftyOne registers everything ``fiftyone.yml`` declares, the
    requirements command finds ``requirements.txt``, and ``load_imagenetx``
    runs on real photos named as ImageNet validation files."""
    plugins = tmp_path / "plugins"
    folder = _extract_head(plugins / "fiftyone-imagenet-x")

    found = _check(tmp_path, plugins, "--library", "none", "--photos", str(val_photos))
    _assert_registers_everything(found, folder)
    assert found["imagenetx"] == str(folder / "imagenetx" / "__init__.py")
    assert "fiftyone>=1.21,<1.23" in found["requirements"]
    assert found["operator"]["error"] is None, found["operator"]
    assert found["operator"]["result"]["annotated"] == 3
    assert found["operator"]["tags"] == {"x:background": 2, "x:color": 1}


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """The sdist and the wheel ``python -m build`` makes from the checkout
    (the wheel built from the sdist; no isolation: offline)."""
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                        str(REPO)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    # the data folders are packages: setuptools prints no banner for them
    assert "Package would be ignored" not in r.stdout + r.stderr
    return out


def test_the_release_passes_twine_check_and_carries_the_plugin(release):
    import zipfile

    files = sorted(os.listdir(release))
    assert len(files) == 2 and files[0].endswith(".whl") and files[1].endswith(".tar.gz")
    r = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                        *[str(release / f) for f in files]], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    plugin_files = {"fiftyone.yml", "requirements.txt", "__init__.py", "library.py",
                    "unavailable.py", "operators/__init__.py", "panels/__init__.py"}
    wheel = zipfile.ZipFile(release / files[0]).namelist()
    assert {f"imagenetx/fiftyone_plugin/{f}" for f in plugin_files} <= set(wheel)
    assert "imagenetx/fiftyone_plugin/setup.py" not in wheel
    sdist = tarfile.open(release / files[1]).getnames()
    top = files[1][:-len(".tar.gz")]
    assert {f"{top}/{f}" for f in plugin_files | {"setup.py", "CHANGELOG.md"}} <= set(sdist)


def test_the_python_way_installs_the_plugin_from_a_wheel(release, tmp_path):
    """``pip install`` of the wheel (``--no-deps --target`` here), then
    ``imagenetx plugin install``: FiftyOne registers the plugin, which runs
    on the wheel's library; ``imagenetx plugin uninstall`` removes it."""
    target, plugins = tmp_path / "site", tmp_path / "plugins"
    wheel = next(release.glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(wheel)], check=True, capture_output=True)

    env = _env(PYTHONPATH=str(target), FIFTYONE_PLUGINS_DIR=str(plugins))
    r = subprocess.run([sys.executable, "-m", "imagenetx", "plugin", "install"], cwd=tmp_path,
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    link = plugins / "imagenet-x"
    source = target / "imagenetx" / "fiftyone_plugin"
    assert os.path.realpath(link) == os.path.realpath(source)
    assert f"at {link} -> {source}" in r.stdout
    assert f"FiftyOne finds it in its plugins folder ({plugins})" in r.stdout
    assert "\"Reload plugins\" operator" in r.stdout  # FiftyOne 1.21+: no restart

    r2 = subprocess.run([sys.executable, CHECK, "--library", str(target)], cwd=tmp_path,
                        capture_output=True, text=True, env=env)
    assert r2.returncode == 0, r2.stderr[-4000:]
    found = json.loads(r2.stdout.strip().splitlines()[-1])
    _assert_registers_everything(found, link)
    assert found["imagenetx"] == str(target / "imagenetx" / "__init__.py")

    r = subprocess.run([sys.executable, "-m", "imagenetx", "plugin", "uninstall"],
                       cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stdout.strip() == f"Removed {link}", r.stdout + r.stderr
    assert not os.path.lexists(link)


def test_a_plugin_folder_beside_another_installed_version(release, tmp_path):
    """A downloaded plugin of version 0.2.0 beside a pip-installed imagenetx
    0.1.0: the plugin runs on its own folder's library and the log says so;
    when the process imported 0.1.0 first, one line in the log and in the
    App's plugin errors, and the panel shows it, not a traceback."""
    import imagenetx

    target, plugins = tmp_path / "site", tmp_path / "plugins"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(target), str(next(release.glob("*.whl")))], check=True,
                   capture_output=True)
    folder = _extract_head(plugins / "fiftyone-imagenet-x")
    old, new = imagenetx.__version__, "0.2.0"
    for path in (folder / "fiftyone.yml", folder / "imagenetx" / "__init__.py"):
        path.write_text(path.read_text().replace(old, new))

    found = _check(tmp_path, plugins, "--library", str(target), PYTHONPATH=str(target))
    _assert_registers_everything(found, folder)
    assert found["imagenetx"] == str(folder / "imagenetx" / "__init__.py")
    assert (f"runs on imagenetx {new} (the plugin folder: {folder / 'imagenetx'}); "
            f"the installed imagenetx at {target / 'imagenetx'} is not used") in found["log"]

    found = _check(tmp_path, plugins, "--library", str(target), "--preimport",
                   PYTHONPATH=str(target))
    line = (f"imagenet-x plugin {new} needs imagenetx {new}, but this Python runs imagenetx "
            f"{old} (already imported: {target / 'imagenetx'})")
    assert found["registered"] == ["imagenetx_panel"]  # the panel that shows the line
    assert len(found["errors"]) == 1 and found["errors"][0].startswith(line)
    assert "\n" not in found["errors"][0] and "Traceback" not in found["log"]
    assert line in found["log"]


def test_the_floor_environment_sees_the_venv_that_makes_it(tmp_path):
    """``make install-test`` run in a venv: the floor environment
    (scripts/fiftyone_floor_env.py) sees that venv's packages, not only the
    base interpreter's, and its own come first. Two real venvs."""
    import venv

    def python(env):
        return str(env / ("Scripts" if os.name == "nt" else "bin") / "python")

    def purelib(env):
        return Path(subprocess.run(
            [python(env), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True).stdout.strip())

    outer, floor = tmp_path / "outer", tmp_path / "floor"
    venv.create(outer, with_pip=False)
    venv.create(floor, system_site_packages=True, with_pip=False)
    (purelib(outer) / "only_in_outer.py").write_text("HERE = True\n")
    (purelib(outer) / "in_both.py").write_text("WHERE = 'outer'\n")
    (purelib(floor) / "in_both.py").write_text("WHERE = 'floor'\n")
    scripts = str(REPO / "scripts")
    subprocess.run([python(outer), "-c", f"import sys; sys.path.insert(0, {scripts!r}); "
                    "import fiftyone_floor_env as f; "
                    f"f.see_outer_environment({python(floor)!r})"], check=True)
    r = subprocess.run([python(floor), "-c", "import only_in_outer, in_both; "
                        "print(only_in_outer.HERE, in_both.WHERE)"],
                       capture_output=True, text=True)
    assert r.stdout.split() == ["True", "floor"], r.stderr


def test_one_opencv_the_headless_build():
    """Nothing the project requires pulls the GUI OpenCV (``opencv-python``)
    beside FiftyOne's headless one: walked through the installed packages'
    own requirements; ``pip check`` finds no OpenCV problem; ``cv2`` is the
    headless build, in FiftyOne's range."""
    import importlib.metadata as md

    import cv2

    def requires(name):
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            return []
        return [r for r in map(Requirement, reqs)
                if r.marker is None or r.marker.evaluate({"extra": ""})]

    seen, todo = set(), [Requirement(d) for d in _pyproject()["project"]["dependencies"]]
    while todo:
        req = todo.pop()
        name = req.name.lower().replace("_", "-")
        if name not in seen:
            seen.add(name)
            todo += requires(name)
    assert "opencv-python-headless" in seen and "opencv-python" not in seen
    check = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    opencv = [line for line in check.stdout.splitlines() if "opencv" in line.lower()]
    assert not opencv, check.stdout
    with pytest.raises(md.PackageNotFoundError):
        md.version("opencv-python")
    headless = md.distribution("opencv-python-headless")
    owned = {str(f) for f in headless.files or []}
    assert f"cv2{os.sep}__init__.py" in owned and Path(cv2.__file__).parent.name == "cv2"
    assert cv2.__version__ == md.version("opencv-python-headless").rsplit(".", 1)[0]
    assert int(cv2.__version__.split(".")[0]) < 5  # FiftyOne's pin


@pytest.mark.parametrize("end", ["lowest", "highest"])
def test_the_supported_fiftyone_range_passes_the_smoke_set(end, val_photos, tmp_path):
    """The range ``pyproject.toml`` declares, at both ends: the lowest
    FiftyOne in the venv ``make install-test`` makes (scripts/
    fiftyone_floor_env.py; made here when missing), the highest in this
    environment. tests/fiftyone_smoke.py: plugin, load, predict, ratios,
    an operator."""
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import fiftyone_floor_env as floor
    finally:
        sys.path.pop(0)
    import fiftyone as fo
    import fiftyone.core.odm as foodm

    spec = next(Requirement(d) for d in _pyproject()["project"]["dependencies"]
                if d.startswith("fiftyone")).specifier
    if end == "lowest":
        python, version = floor.ensure(), floor.lowest_fiftyone()
        assert floor.installed_fiftyone(python) == version
    else:
        from packaging.version import Version

        python, version = sys.executable, fo.__version__
        # the range ends right after the minor version tested here
        installed, upper = Version(version), next(s.version for s in spec if s.operator == "<")
        assert Version(upper) == Version(f"{installed.major}.{installed.minor + 1}")
    assert version in spec
    database = f"{fo.config.database_name}-{end}"  # one FiftyOne version per database
    r = subprocess.run([python, str(REPO / "tests" / "fiftyone_smoke.py"), str(val_photos)],
                       cwd=tmp_path, capture_output=True, text=True,
                       env=_env(PYTHONPATH=str(REPO), FIFTYONE_DATABASE_NAME=database,
                                FIFTYONE_PLUGINS_DIR=str(tmp_path / "plugins")))
    foodm.get_db_client().drop_database(database)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert r.stdout.strip().splitlines()[-1] == f"SMOKE OK fiftyone {version}"


DOCTOR_TOPICS = ["imagenetx", "Python", "FiftyOne", "torch", "torchvision", "timm", "numpy",
                 "scipy", "annotations", "CUDA", "open_clip", "transformers", "foolbox",
                 "AutoAttack", "corruptions", "plugin", "plug-ins", "database", "heads", "downloads",
                 "reports", "Hub pulls", "published", "indexes"]


def _topics(out: str) -> list:
    return list(dict.fromkeys(line[4:17].strip() for line in out.splitlines()
                              if line[:4] in ("ok  ", "--  ", "ERR ")))


def test_doctor_on_this_machine(capsys):
    """Every line, each piece present, the plugin registered: exit 0."""
    import fiftyone as fo

    from imagenetx.cli import main
    from imagenetx.app.install import PLUGIN_ROOT, install_plugin

    link = install_plugin()
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert _topics(out) == DOCTOR_TOPICS, out
    assert f"ok  FiftyOne     {fo.__version__}\n" in out
    assert f"ok  plugin       {PLUGIN} at {link} -> {os.path.realpath(PLUGIN_ROOT)}" in out
    declared = _fiftyone_yml()
    count = len(declared["operators"]) + len(declared["panels"])
    assert f"ok  plugin       FiftyOne registers it: {count} operators and panels" in out
    assert "ok  database     reachable" in out
    assert "ok  plug-ins     none installed (entry points of imagenetx.plugins)\n" in out
    assert "ok  published    accuracy tables: timm, open_clip, robustbench (" in out
    assert not [l for l in out.splitlines() if l.startswith(("ERR", "-- "))], out


def test_doctor_says_what_is_missing(tmp_path):
    """No plugin in FiftyOne's plugins folder, an optional and a core
    package that do not import (blocked as Python blocks a module):
    one line each with the command that fixes it, and exit 1 for the core."""
    code = ("import sys; sys.modules['foolbox'] = sys.modules['timm'] = None; "
            "from imagenetx.cli import main; sys.exit(main(['doctor']))")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, env=_env(PYTHONPATH=str(REPO),
                                           FIFTYONE_PLUGINS_DIR=str(tmp_path / "none")))
    assert r.returncode == 1, r.stdout + r.stderr
    assert _topics(r.stdout) == DOCTOR_TOPICS, r.stdout
    assert "ERR timm         missing: pip install 'timm'" in r.stdout
    assert ("--  foolbox      missing (for attacks (PGD, FGSM)): pip install 'foolbox>=3.3'"
            in r.stdout)
    assert (f"--  plugin       not installed in FiftyOne's plugins folder ({tmp_path / 'none'}): "
            "imagenetx plugin install") in r.stdout


def test_doctor_with_a_database_that_does_not_answer(tmp_path):
    """FIFTYONE_DATABASE_URI naming a port nothing listens on: FiftyOne is
    not imported (its import waits half a minute for the database), the
    checks that need the database say so by name, the database line names
    the database, and no check fails unnamed."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("import sys; from imagenetx.cli import main; status = main(['doctor']); "
            "print('FiftyOne imported:', 'fiftyone' in sys.modules); sys.exit(status)")
    uri = f"mongodb://127.0.0.1:{port}"
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, env=_env(PYTHONPATH=str(REPO), FIFTYONE_DATABASE_URI=uri,
                                           FIFTYONE_DATABASE_NAME="doctor-db"))
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert _topics(out) == DOCTOR_TOPICS, out
    assert "FiftyOne imported: False" in out
    assert (f"ERR database     not reachable: no database answers at {uri} "
            "(FIFTYONE_DATABASE_URI)") in out and "(database 'doctor-db')" in out
    assert "--  plugin       not checked: it needs the database, which is not reachable" in out
    assert "--  Hub pulls    not checked: which datasets use them is in the database" in out
    assert "check failed" not in out


def test_db_install_is_a_command():
    """The offline database fallback from the command line: with mongod
    there, it says where (and installs nothing)."""
    from imagenetx.store.service import mongod_path

    r = subprocess.run([sys.executable, "-m", "imagenetx", "db", "install"],
                       capture_output=True, text=True, env=_env(PYTHONPATH=str(REPO)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"FiftyOne's mongod is installed: {mongod_path()}"


def test_the_readme_install_section_shows_the_three_tested_ways():
    """The README's three command blocks, FiftyOne way first, name what the
    tests above install: the repository URL and plugin name of
    ``fiftyone.yml``, the package's own ``imagenetx plugin install``."""
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Install"):readme.index("## Quick start")]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    url, name = _fiftyone_yml()["url"], _fiftyone_yml()["name"]
    assert blocks == [
        f"fiftyone plugins download {url}\nfiftyone plugins requirements {name} --install\n",
        f"pip install git+{url}\nimagenetx plugin install\n",
        f"git clone {url} && cd {url.rsplit('/', 1)[1]}\nmake demo\n",
    ]
    assert "make demo" in readme and "make test" in readme
