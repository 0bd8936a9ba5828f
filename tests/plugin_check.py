"""Does FiftyOne register the plugin with no editable install of the project?

Run in a fresh Python by tests/test_install.py (hiding the editable install
must not disturb the test session)::

    python plugin_check.py [--library none|DIR] [--photos DIR] [--preimport]

It drops the editable install's finder and the checkout from the import
machinery, checks where ``imagenetx`` comes from (``none``: not importable at
all; ``DIR``: from there), then asks FiftyOne's own loader which plugins and
operators it registered in ``FIFTYONE_PLUGINS_DIR`` and, with ``--photos``,
runs ``load_imagenetx`` through ``execute_operator`` on a dataset of those
photos. Prints one JSON object.
"""

import argparse
import importlib.util
import json
import os
import sys

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def hide_editable_install() -> None:
    """As docs/development.md and OFFLINE.md say: no finder, no path entry."""
    def editable(obj) -> bool:
        return "__editable__" in (getattr(obj, "__module__", "") or "")

    sys.meta_path[:] = [f for f in sys.meta_path if not editable(f)]
    sys.path_hooks[:] = [h for h in sys.path_hooks if not editable(h)]
    sys.path[:] = [p for p in sys.path if "__editable__" not in p and not (
        os.path.realpath(p or os.getcwd()) + os.sep).startswith(CHECKOUT + os.sep)]
    sys.path_importer_cache.clear()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", default="none")
    parser.add_argument("--photos")
    parser.add_argument("--preimport", action="store_true",
                        help="import imagenetx before FiftyOne loads the plugin")
    args = parser.parse_args()

    hide_editable_install()
    spec = importlib.util.find_spec("imagenetx")
    if args.library == "none":
        assert spec is None, f"imagenetx is importable from {spec.origin}"
    else:
        assert spec and os.path.realpath(spec.origin).startswith(
            os.path.realpath(args.library)), spec

    if args.preimport:
        import imagenetx  # noqa: F401
    import fiftyone as fo
    import fiftyone.operators as foo
    import fiftyone.plugins as fop
    import yaml
    from fiftyone.operators.registry import OperatorRegistry

    plugins = {p.name: p.directory for p in fop.list_plugins()}
    name = "@imagenet-x/imagenet-x"
    with open(os.path.join(plugins[name], "fiftyone.yml")) as f:
        declared = yaml.safe_load(f)
    registry = OperatorRegistry()
    registered = sorted(op.name for op in registry.list_operators() if op.plugin_name == name)
    out = {"plugins": plugins, "declared": declared["operators"] + declared["panels"],
           "registered": registered, "errors": registry.list_errors(),
           "requirements": fop.load_plugin_requirements(name)}
    if args.photos:
        ds = fo.Dataset(overwrite=True)
        ds.add_samples([fo.Sample(filepath=os.path.join(args.photos, f))
                        for f in sorted(os.listdir(args.photos))])
        result = foo.execute_operator(f"{name}/load_imagenetx",
                                      ctx={"dataset": ds.name, "params": {}})
        out["operator"] = {"error": result.error, "result": result.result,
                           "tags": ds.count_sample_tags()}
        ds.delete()
    out["imagenetx"] = sys.modules["imagenetx"].__file__ if "imagenetx" in sys.modules else None
    print(json.dumps(out))


if __name__ == "__main__":
    main()
