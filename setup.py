"""The packages the wheel and the sdist carry (the rest is pyproject.toml).

Besides the ``imagenetx`` library, the plugin folder itself (``fiftyone.yml``,
``requirements.txt``, the root ``__init__.py`` and its modules, ``operators/``
and ``panels/``) goes into the wheel as ``imagenetx/fiftyone_plugin/``, so
``imagenetx plugin install`` works from a wheel as from a checkout.
"""

from setuptools import find_namespace_packages, find_packages, setup
from setuptools.command.build_py import build_py

PLUGIN = "imagenetx.fiftyone_plugin"


class BuildPy(build_py):
    """Leaves this file out of the plugin folder mapped onto the root."""

    def find_package_modules(self, package, package_dir):
        modules = super().find_package_modules(package, package_dir)
        return [m for m in modules if (m[0], m[1]) != (PLUGIN, "setup")]


setup(
    cmdclass={"build_py": BuildPy},
    # namespace packages: the data folders too (class tables, frost pictures), so
    # setuptools neither skips them nor prints a "Package would be ignored" banner each
    packages=find_namespace_packages(include=["imagenetx", "imagenetx.*"],
                                     exclude=["*.__pycache__"])
    + [PLUGIN] + [f"{PLUGIN}.{p}" for p in find_packages(include=["operators", "panels"])],
    package_dir={PLUGIN: "."},
    package_data={
        "imagenetx.classes": ["data/*", "data/**/*"],
        "imagenetx.protocols": ["data/*", "data/**/*"],
        "imagenetx.probes.imagecorruptions": ["frost/*", "LICENSE", "NOTICE"],
        PLUGIN: ["fiftyone.yml", "requirements.txt"],
    },
)
