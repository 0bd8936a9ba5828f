"""Share a tagged dataset with its predictions and evaluations on the
Hugging Face Hub, through FiftyOne's own ``push_to_hub``, with a dataset
card that carries the per-factor error-ratio table and chart.

Colleagues open the same thing with FiftyOne's ``load_from_hub`` (or
``imagenetx load imagenet-x --hub``). Images pulled from a gated repo (ILSVRC/imagenet-1k,
timm/imagenet-1k-wds) are not uploaded again unless asked: the pushed copy
then holds 1-pixel stand-ins under the same file names, and
``imagenetx load imagenet-x --hub REPO --media-from SOURCE`` puts the real images back.
"""

import json
import os
import re
import shlex
import tempfile
import uuid
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence

import yaml

from imagenetx.analysis import compute_ratios
from imagenetx.analysis.readouts import readout_notes
from imagenetx.benchmarks.imagenet_x.hub_pull import known_media_roots
from imagenetx.disk import format_size
from imagenetx.errors import ImageNetXError
from imagenetx.models.sources import TEMPLATE_SETS
from imagenetx.present.figures import error_ratio_chart
from imagenetx.present.formatting import code_span, ratios_rows, readout_markdown
from imagenetx.store.datasets import all_slices, get_dataset
from imagenetx.store.hub import _hub_error, _token, check_repo_id
from imagenetx.store.media import Folders, examples, outside, sample_media, system_folder
from imagenetx.store.names import INFO_KEY, PROBE_INFO_KEY
from imagenetx.store.schema import prediction_fields

CARD_SECTION = "## ImageNet-X results"
#: folders named in what a push will upload
FOLDERS_SHOWN = 3


@dataclass
class PushSummary:
    """What :func:`push_results` pushed."""

    repo_id: str
    samples: int
    fields: List[str]
    evaluations: List[str]
    media: str

    def __str__(self):
        return (
            f"Pushed {self.samples:,} samples to '{self.repo_id}' with "
            f"{len(self.fields)} prediction fields ({', '.join(self.fields) or 'none'}) "
            f"and {len(self.evaluations)} evaluations; media: {self.media}. "
            f"Open it with FiftyOne's load_from_hub('{self.repo_id}') or "
            f"`ImageNetX.load(hub='{self.repo_id}')`"
        )


def gated_source(dataset) -> Optional[dict]:
    """``{"hub": repo, "split": split}`` when the dataset's images were
    pulled from an ImageNet repo on the Hub (which gates them)."""
    return ((dataset.info.get("imagenetx") or {}).get("source") or {}).get("hub") and \
        dataset.info["imagenetx"]["source"]


@dataclass
class PushPlan:
    """What a push will upload, said before it uploads.

    Attributes:
        files: the media files uploaded as they are
        size: their bytes
        folders: ``(folder, files)``, the most files first
        stand_ins: the gated repo whose images are replaced by 1-pixel
            stand-ins (None: the images are uploaded)
        samples: the samples
    """

    files: int
    size: int
    folders: List[tuple]
    stand_ins: Optional[str]
    samples: int

    def __str__(self):
        parts = []
        if self.stand_ins:
            parts.append(f"{self.samples:,} 1-pixel stand-ins for the images of the gated "
                         f"'{self.stand_ins}'")
        if self.files:
            shown = ", ".join(f"{f} ({n:,})" for f, n in self.folders[:FOLDERS_SHOWN])
            more = len(self.folders) - FOLDERS_SHOWN
            parts.append(f"{self.files:,} media file{'s' if self.files > 1 else ''} "
                         f"({format_size(self.size)}) from "
                         f"{len(self.folders):,} folder{'s' if len(self.folders) > 1 else ''}: "
                         f"{shown}" + (f" and {more:,} more" if more > 0 else ""))
        return "Uploading " + (" and ".join(parts) or "no media file")


def plan_push(dataset, with_media: bool = False, media_roots: Sequence[str] = (),
              confirm_folders: bool = False) -> PushPlan:
    """What :func:`push_results` would upload, refusing any media file
    outside the folders it may upload from:

    -   a dataset from the Hub: the folders its origin gives it
        (:func:`~imagenetx.benchmarks.imagenet_x.hub_pull.known_media_roots`)
        and those named in ``media_roots``;
    -   a dataset of no origin a push can see (built from the user's files,
        or by FiftyOne's own ``load_from_hub``, whose samples may name
        ``/etc/passwd``): the folders the plan shows, once confirmed
        (``confirm_folders``), and those named in ``media_roots``;
    -   either way, a file in a system folder
        (:data:`~imagenetx.store.media.SYSTEM_FOLDERS`) only from a folder
        named at or below it.

    Raises:
        ImageNetXError: for media outside those folders, naming the files
            and the folders to confirm or name
    """
    dataset = get_dataset(dataset)
    source = gated_source(dataset)
    stand_ins = bool(source) and not with_media
    every = sample_media(dataset)
    # with stand-ins the images are not uploaded, the other media files are
    found = sample_media(dataset, skip=["filepath"]) if stand_ins else every
    paths = list(dict.fromkeys(p for _, p in found))
    by_folder = Counter(os.path.dirname(os.path.abspath(p)) for p in paths).most_common()
    origin = known_media_roots(dataset, [p for _, p in every])
    _check_folders(dataset, found, by_folder, origin,
                   [os.path.abspath(os.path.expanduser(f)) for f in media_roots],
                   confirm_folders)
    size = sum(os.path.getsize(p) for p in paths if os.path.isfile(p))
    return PushPlan(len(paths), size, by_folder,
                    source["hub"] if stand_ins else None, len(all_slices(dataset)))


def _check_folders(dataset, found: list, by_folder: list, origin: List[str],
                   named: List[str], confirmed: bool) -> None:
    """Raises for the media files a push may not upload (:func:`plan_push`)."""
    shown = [f for f, _ in by_folder] if confirmed and not origin else []
    refused = outside(found, [*origin, *named, *(f for f in shown if not system_folder(f))])
    in_origin, named_system = Folders(origin), Folders(n for n in named if system_folder(n))
    refused += [(i, p) for i, p in found if p not in in_origin and system_folder(p)
                and p not in named_system and (i, p) not in refused]
    if not refused:
        return
    paths = list(dict.fromkeys(p for _, p in refused))
    folders = list(dict.fromkeys(os.path.dirname(os.path.abspath(p)) for p in paths))
    name_them = ("`media_roots=" + " ".join(shlex.quote(f) for f in folders[:FOLDERS_SHOWN])
                 + "`")
    n = len({i for i, _ in refused})
    samples = f"{n:,} sample{'s' if n > 1 else ''}"
    if origin:
        raise ImageNetXError(
            f"Dataset '{dataset.name}' has {samples} whose media lies outside the folders "
            f"its Hub origin gives it ({', '.join(origin)}): {examples(paths)}; a push would "
            f"upload them. Delete those samples, or name their folders to upload them: "
            + name_them)
    system = sorted({system_folder(p) for p in paths} - {None})
    if all(system_folder(p) for p in paths):
        raise ImageNetXError(
            f"Dataset '{dataset.name}' has {samples} whose media lies in system folders "
            f"({', '.join(system)}): {examples(paths)}; a push uploads those only from a "
            f"folder you name: {name_them}, or delete those samples")
    counts = Counter(os.path.dirname(os.path.abspath(p)) for p in paths).most_common()
    listed = ", ".join(f"{f} ({k:,})" for f, k in counts[:FOLDERS_SHOWN]) + (
        f" and {len(counts) - FOLDERS_SHOWN:,} more" if len(counts) > FOLDERS_SHOWN else "")
    raise ImageNetXError(
        f"Dataset '{dataset.name}' has no Hub origin that says where its media may lie: a "
        f"push would upload {len(paths):,} file{'s' if len(paths) > 1 else ''} of "
        f"{samples} from {len(counts):,} folder{'s' if len(counts) > 1 else ''} "
        f"({listed}). Check them, then confirm the folders shown with "
        f"`confirm_folders=True` or name the folders to upload: {name_them}"
        + (f" (files in system folders such as {system[0]} only by naming their folder)"
           if system else ""))


#: plans :func:`cached_plan` remembers (the most recent datasets and choices)
PLANS_KEPT = 8
_plans: "OrderedDict[tuple, object]" = OrderedDict()


def cached_plan(dataset, with_media: bool = False, media_roots: Sequence[str] = (),
                confirm_folders: bool = False) -> PushPlan:
    """:func:`plan_push`, remembered while the dataset and its samples are
    unchanged: a form re-resolves on every keystroke of any field, and a
    plan reads every sample's media paths and stats every file. The key is
    the dataset's name and last change, its samples' count and last change
    (all slices) and the choices; a push itself always plans afresh.

    Raises:
        ImageNetXError: as :func:`plan_push` (remembered too)
    """
    dataset = get_dataset(dataset)
    samples = all_slices(dataset)
    key = (dataset.name, dataset.last_modified_at, len(samples),
           samples.max("last_modified_at"), bool(with_media), tuple(media_roots),
           bool(confirm_folders))
    if key not in _plans:
        try:
            _plans[key] = plan_push(dataset, with_media, media_roots, confirm_folders)
        except ImageNetXError as e:
            _plans[key] = e
        while len(_plans) > PLANS_KEPT:
            _plans.popitem(last=False)
    _plans.move_to_end(key)
    if isinstance(_plans[key], ImageNetXError):
        raise _plans[key]
    return _plans[key]


def push_results(
    dataset,
    repo_id: str,
    private: bool = False,
    with_media: bool = False,
    token: Optional[str] = None,
    media_roots: Sequence[str] = (),
    confirm_folders: bool = False,
    announce: Optional[Callable[[PushPlan], None]] = None,
) -> PushSummary:
    """Pushes a dataset with its prediction fields and evaluations.

    Args:
        dataset: a dataset or its name
        repo_id: ``USER/NAME``: FiftyOne's ``push_to_hub`` creates the repo
            in the namespace of the token's user
        private (False): whether the new repo is private
        with_media (False): upload images pulled from a gated repo too
        token (None): a Hugging Face token with write access (default:
            ``HF_TOKEN``)
        media_roots (()): folders whose files may be uploaded, though the
            dataset's Hub origin does not give them (:func:`plan_push`); a
            file in a system folder only from a folder named at or below it
        confirm_folders (False): confirms the folders the plan shows, for a
            dataset of no Hub origin (system folders excepted)
        announce (None): called with the :class:`PushPlan` before anything
            is uploaded

    Returns:
        a :class:`PushSummary`

    Raises:
        ImageNetXError: for an unknown dataset, media outside the folders
            it may upload from (:func:`plan_push`), a repo outside the token's namespace, or any Hub error;
            the dataset is left as it was
    """
    import fiftyone.utils.huggingface as fouh
    import huggingface_hub as hfh

    dataset = get_dataset(dataset)
    check_repo_id(repo_id)
    plan = plan_push(dataset, with_media, media_roots, confirm_folders)
    owner, name = repo_id.split("/")
    token = _token(token)
    try:
        user = hfh.whoami(token=token)["name"]
    except Exception as e:
        raise _hub_error(repo_id, e, token, "push") from e
    if owner != user:
        raise ImageNetXError(
            f"Cannot push to '{repo_id}': FiftyOne's push_to_hub creates repos "
            f"in the token's own namespace; use `repo_id={user}/{name}`")
    fields = prediction_fields(dataset)
    evaluations = list(dataset.list_evaluations())
    source = gated_source(dataset)
    stand_ins = plan.stand_ins is not None
    if announce is not None:
        announce(plan)

    with tempfile.TemporaryDirectory(prefix="imagenetx-push-") as tmp:
        chart = _chart_png(dataset, fields, os.path.join(tmp, "error_ratios.png"))
        pushed = dataset
        info, fields_info = _public_infos(dataset)
        if stand_ins:
            pushed = _with_stand_ins(dataset, os.path.join(tmp, "media"))
        elif info is not None or fields_info:  # the copy pushed shows no local folder
            pushed = dataset.clone(f"{dataset.name}-for-hub-{uuid.uuid4().hex[:6]}")
        try:
            if info is not None:
                pushed.info = info
                pushed.save()
            for field, field_info in fields_info.items():
                pushed.get_field(field).info = field_info
                pushed.get_field(field).save()
            # FiftyOne's card shows the dataset name as a heading: as code there too
            fouh.push_to_hub(
                pushed, name, private=private, token=token, preview_path=chart,
                description=f"{dataset.name}: ImageNet-X factors and predictions",
                tags=["imagenet-x"], pretty_name=code_span(dataset.name, False))
            if pushed is not dataset:
                _name_pushed_repo(repo_id, dataset.name, token)
            card = _card_section(dataset, repo_id, fields, evaluations, source,
                                 stand_ins, chart is not None)
            _append_to_card(repo_id, card, token)
        except ImageNetXError:
            raise
        except Exception as e:
            raise _hub_error(repo_id, e, token, "push") from e
        finally:
            if pushed is not dataset:
                pushed.delete()
    media = (f"1-pixel stand-ins (images of the gated '{source['hub']}' not uploaded)"
             if stand_ins else "uploaded")
    return PushSummary(repo_id, len(dataset), fields, evaluations, media)


def _public_infos(dataset) -> tuple:
    """``(dataset info, {field: field info})`` with every local path made
    public (:func:`public_text`): the dataset's info (None when it holds no
    local path) and the infos of the fields whose info holds one."""
    info = _public(dataset.info)
    fields = {}
    for name, f in dataset.get_field_schema().items():
        if f.info and _public(f.info) != f.info:
            fields[name] = _public(f.info)
    return (None if info == dataset.info else info), fields


def _public(value):
    if isinstance(value, dict):
        return {k: _public(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_public(v) for v in value]
    return public_text(value) if isinstance(value, str) else value


def public_text(text: str) -> str:
    """A recorded string as a card or a pushed dataset shows it: a local
    path (``/home/alice/ckpt.pth``) or a spec holding one
    (``checkpoint:/home/alice/ckpt.pth``) made public
    (:func:`public_path`); anything else as it is."""
    if _is_local_path(text):
        return public_path(text)
    if re.match(r"^[A-Za-z_]+:(/(?!/)|~)", text):  # not a URL (scheme://)
        return public_spec(text)
    return text


def _with_stand_ins(dataset, folder: str):
    """A temporary copy of the dataset (fields, evaluations, info) whose
    images are 1-pixel JPEGs under the original file names."""
    from PIL import Image

    os.makedirs(folder)
    blank = os.path.join(folder, ".stand-in.jpg")
    Image.new("RGB", (1, 1), (128, 128, 128)).save(blank, "JPEG")
    copy = dataset.clone(f"{dataset.name}-for-hub-{uuid.uuid4().hex[:6]}")
    paths = []
    for path in copy.values("filepath"):
        target = os.path.join(folder, os.path.basename(path))
        if not os.path.exists(target):
            os.link(blank, target)
        paths.append(target)
    copy.set_values("filepath", paths)
    return copy


def _chart_png(dataset, fields: list, path: str) -> Optional[str]:
    """The panel's error-ratio chart as a PNG, or None without predictions."""
    if not fields:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces, layout = error_ratio_chart(compute_ratios(dataset, fields).to_dict())
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(traces)
    for k, trace in enumerate(traces):
        xs = [i + (k - (len(traces) - 1) / 2) * width for i in range(len(trace["x"]))]
        ax.bar(xs, [y or 0 for y in trace["y"]], width, label=trace["name"],
               color=trace["marker"]["color"])
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(traces[0]["x"])))
    ax.set_xticklabels(traces[0]["x"], rotation=40, ha="right")
    ax.set_ylabel("error ratio")
    ax.set_title(layout["title"]["text"], fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def public_path(path: str) -> str:
    """A local path as a card shows it: under the pusher's home as
    ``~/...``, elsewhere its base name only (a card is public: it should
    not publish user names or folder layouts)."""
    full = os.path.abspath(os.path.expanduser(path))
    home = os.path.expanduser("~")
    if full == home or full.startswith(home.rstrip(os.sep) + os.sep):
        return os.path.join("~", os.path.relpath(full, home))
    return os.path.basename(full.rstrip(os.sep)) or full


def public_spec(spec: str) -> str:
    """A model spec as a card shows it: a local path in it (``checkpoint:PATH``,
    an ``hf:`` folder) through :func:`public_path`."""
    scheme, sep, rest = str(spec).partition(":")
    if sep and (scheme == "checkpoint" or _is_local_path(rest)):
        return f"{scheme}:{public_path(rest)}"
    return spec


def _is_local_path(text: str) -> bool:
    return text.startswith(("/", "~/", "./", "../")) or text == "~" or os.path.isabs(text)


def _command(dataset: str, field: str, run: dict) -> Optional[str]:
    """The command that makes ``field`` again, from its run record, each
    word shell-quoted and local paths made public (:func:`public_path`)."""
    if not run.get("spec"):
        return None
    verb = "attack" if run.get("attack") else "predict"
    words = ["imagenetx", verb, "--dataset", dataset, "--model", public_spec(run["spec"]),
             "--field", field]
    if run.get("arch"):
        words += ["--arch", run["arch"]]
    if run.get("prompt"):
        words += ["--prompt", run["prompt"]]
    elif run.get("zero_shot") and run.get("templates") not in (None, "openai"):
        templates = run["templates"]
        words += ["--templates", templates if templates in TEMPLATE_SETS
                  else public_path(templates)]
    attack = run.get("attack") or {}
    if attack:
        words += ["--attack", attack["attack"], "--eps", f"{attack['eps']:.6g}",
                  "--norm", attack["norm"], "--steps", attack["steps"]]
    return shlex.join(str(w) for w in words)


def _card_section(dataset, repo_id, fields, evaluations, source, stand_ins,
                  chart: bool) -> str:
    """The card's ImageNet-X part: fields and their producers, evaluations,
    the per-factor error-ratio table, the chart and the media note. Every
    string a user chose (dataset, field, model, evaluation names, prompts)
    is a code span (:func:`code_span`); commands are shell-quoted."""

    lines = [CARD_SECTION, ""]
    lines += ["| prediction field | model | how it was made |", "|---|---|---|"]
    for field in fields:
        info = dataset.get_field(field).info or {}
        run = info.get(INFO_KEY) or {}  # what predict / attack recorded
        model = run.get("spec") or info.get("model") or (
            info.get(PROBE_INFO_KEY) or {}).get("model")
        model = code_span(public_spec(model)) if model else "not recorded"
        made = info.get("command") or _command(dataset.name, field, run)
        if made:
            made = code_span(made)
        elif dataset.get_field(field).description:
            made = code_span(dataset.get_field(field).description)
        else:
            made = (code_span(shlex.join(["imagenetx", "predict", "--dataset", dataset.name,
                                          "--model", "MODEL", "--field", field]))
                    + " or `imagenetx import`")
        lines.append(f"| {code_span(field)} | {model} | {made} |")
    lines += ["", "Evaluations (FiftyOne's `evaluate_classifications`): "
              + (", ".join(f"{code_span(k, False)} (of "
                           f"{code_span(dataset.get_evaluation_info(k).config.pred_field, False)})"
                           for k in evaluations) or "none"), ""]
    if fields:
        rows = [r for r in ratios_rows(compute_ratios(dataset, fields).to_dict())
                if r["group"] == "all"]
        slices = list(dict.fromkeys(r["slice"] for r in rows))
        by = {(r["model"], r["slice"]): r for r in rows}
        lines += ["Error ratio per factor, `(1 - accuracy(factor)) / (1 - accuracy)` "
                  "(n: images of the factor):", "",
                  "| factor | n | " + " | ".join(code_span(f) for f in fields) + " |",
                  "|---|---:|" + "---:|" * len(fields)]
        for s in slices:
            cells = [_fmt(by[(f, s)]["error_ratio"]) for f in fields]
            lines.append(f"| {s} | {by[(fields[0], s)]['n']:,} | " + " | ".join(cells) + " |")
        lines.append("")
        readouts = readout_notes(dataset, fields)
        if readouts:
            lines += ["Which images the numbers count, and what they compare with:", "",
                      readout_markdown(readouts), ""]
    if chart:
        lines += ["![error ratio per factor](dataset_preview.png)", ""]
    if stand_ins:
        lines += [
            f"The images come from the gated repo {code_span(source['hub'], False)} and are "
            "not in this repo (1-pixel stand-ins keep their file names). Accept its terms, "
            "set `HF_TOKEN`, and re-attach them with:", "", "```bash",
            shlex.join(["imagenetx", "load", "imagenet-x", "--hub", repo_id, "--media-from",
                        source["hub"]]),
            "```", ""]
    return "\n".join(lines)


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _name_pushed_repo(repo_id: str, name: str, token: Optional[str]) -> None:
    """Writes the dataset's own name into the ``fiftyone.yml`` and
    ``metadata.json`` that FiftyOne's push_to_hub wrote for a pushed copy
    (which has another name): ``load_from_hub`` names the dataset it makes
    after them."""
    import huggingface_hub as hfh

    def fetch(filename: str) -> str:
        with open(hfh.hf_hub_download(repo_id, filename, repo_type="dataset", token=token,
                                      force_download=True)) as f:
            return f.read()

    config = yaml.safe_load(fetch("fiftyone.yml"))
    metadata = json.loads(fetch("metadata.json"))
    config["name"] = metadata["name"] = name
    hfh.HfApi(token=token).create_commit(
        repo_id, repo_type="dataset", commit_message="The dataset's own name",
        operations=[
            hfh.CommitOperationAdd("fiftyone.yml", yaml.safe_dump(config).encode()),
            hfh.CommitOperationAdd("metadata.json", json.dumps(metadata).encode())])


def _append_to_card(repo_id: str, section: str, token: Optional[str]) -> None:
    """Adds the section to the card FiftyOne's push_to_hub wrote."""
    import huggingface_hub as hfh

    readme = hfh.hf_hub_download(repo_id, "README.md", repo_type="dataset",
                                 token=token, force_download=True)
    with open(readme) as f:
        text = f.read()
    hfh.HfApi(token=token).upload_file(
        path_or_fileobj=(text.rstrip() + "\n\n" + section + "\n").encode(),
        path_in_repo="README.md", repo_id=repo_id, repo_type="dataset",
        commit_message="ImageNet-X results in the card")
