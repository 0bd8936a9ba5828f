"""Share a tagged dataset with its predictions and evaluations on the
Hugging Face Hub, through FiftyOne's own ``push_to_hub``, with a dataset
card that carries the per-factor error-ratio table and chart.

Colleagues open the same thing with FiftyOne's ``load_from_hub`` (or
``imagenetx load --hub``). Images pulled from a gated repo (ILSVRC/imagenet-1k,
timm/imagenet-1k-wds) are not uploaded again unless asked: the pushed copy
then holds 1-pixel stand-ins under the same file names, and
``imagenetx load --hub REPO --media-from SOURCE`` puts the real images back.
"""

import os
import uuid
import tempfile
from dataclasses import dataclass
from typing import List, Optional

from imagenetx.errors import ImageNetXError
from imagenetx.analysis import compute_ratios
from imagenetx.analysis.readouts import readout_notes
from imagenetx.present.figures import error_ratio_chart
from imagenetx.present.formatting import ratios_rows, readout_markdown
from imagenetx.store.datasets import get_dataset
from imagenetx.store.hub import _hub_error, _token, check_repo_id
from imagenetx.store.schema import prediction_fields

CARD_SECTION = "## ImageNet-X results"


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
            f"`imagenetx load --hub {self.repo_id}`"
        )


def gated_source(dataset) -> Optional[dict]:
    """``{"hub": repo, "split": split}`` when the dataset's images were
    pulled from an ImageNet repo on the Hub (which gates them)."""
    return ((dataset.info.get("imagenetx") or {}).get("source") or {}).get("hub") and \
        dataset.info["imagenetx"]["source"]


def push_results(
    dataset,
    repo_id: str,
    private: bool = False,
    with_media: bool = False,
    token: Optional[str] = None,
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

    Returns:
        a :class:`PushSummary`

    Raises:
        ImageNetXError: for an unknown dataset, a repo outside the token's
            namespace, or any Hub error; the dataset is left as it was
    """
    import fiftyone as fo
    import fiftyone.utils.huggingface as fouh
    import huggingface_hub as hfh

    dataset = get_dataset(dataset)
    check_repo_id(repo_id)
    owner, name = repo_id.split("/")
    token = _token(token)
    try:
        user = hfh.whoami(token=token)["name"]
    except Exception as e:
        raise _hub_error(repo_id, e, token, "push") from e
    if owner != user:
        raise ImageNetXError(
            f"Cannot push to '{repo_id}': FiftyOne's push_to_hub creates repos "
            f"in the token's own namespace; use --repo {user}/{name}")
    fields = prediction_fields(dataset)
    evaluations = list(dataset.list_evaluations())
    source = gated_source(dataset)
    stand_ins = bool(source) and not with_media

    with tempfile.TemporaryDirectory(prefix="imagenetx-push-") as tmp:
        chart = _chart_png(dataset, fields, os.path.join(tmp, "error_ratios.png"))
        pushed = dataset
        if stand_ins:
            pushed = _with_stand_ins(dataset, os.path.join(tmp, "media"))
        try:
            fouh.push_to_hub(
                pushed, name, private=private, token=token, preview_path=chart,
                description=f"{dataset.name}: ImageNet-X factors and predictions",
                tags=["imagenet-x"])
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


def _command(dataset: str, field: str, run: dict):
    """The command that makes ``field`` again, from its run record."""
    if not run.get("spec"):
        return None
    verb = "attack" if run.get("attack") else "predict"
    words = [f"imagenetx {verb} --dataset {dataset} --model {run['spec']} --field {field}"]
    if run.get("arch"):
        words.append(f"--arch {run['arch']}")
    if run.get("prompt"):
        words.append(f'--prompt "{run["prompt"]}"')
    elif run.get("zero_shot") and run.get("templates") not in (None, "openai"):
        words.append(f"--templates {run['templates']}")
    attack = run.get("attack") or {}
    if attack:
        words.append(f"--attack {attack['attack']} --eps {attack['eps']:.6g} --norm "
                     f"{attack['norm']} --steps {attack['steps']}")
    return "`" + " ".join(words) + "`"


def _card_section(dataset, repo_id, fields, evaluations, source, stand_ins,
                  chart: bool) -> str:
    """The card's ImageNet-X part: fields and their producers, evaluations,
    the per-factor error-ratio table, the chart and the media note."""

    lines = [CARD_SECTION, ""]
    lines += ["| prediction field | model | how it was made |", "|---|---|---|"]
    for field in fields:
        info = dataset.get_field(field).info or {}
        run = info.get("imagenetx_model") or {}  # what predict / attack recorded
        model = run.get("spec") or info.get("model") or (
            info.get("imagenetx_probes") or {}).get("model") or "not recorded"
        made = info.get("command") or _command(dataset.name, field, run) or \
            dataset.get_field(field).description or (
                f"`imagenetx predict --dataset {dataset.name} --model MODEL "
                f"--field {field}` or `imagenetx import`")
        lines.append(f"| `{field}` | {model} | {made} |")
    lines += ["", "Evaluations (FiftyOne's `evaluate_classifications`): "
              + (", ".join(f"`{k}` ({dataset.get_evaluation_info(k).config.pred_field})"
                           for k in evaluations) or "none"), ""]
    if fields:
        rows = [r for r in ratios_rows(compute_ratios(dataset, fields).to_dict())
                if r["group"] == "all"]
        slices = list(dict.fromkeys(r["slice"] for r in rows))
        by = {(r["model"], r["slice"]): r for r in rows}
        lines += ["Error ratio per factor, `(1 - accuracy(factor)) / (1 - accuracy)` "
                  "(n: images of the factor):", "",
                  "| factor | n | " + " | ".join(f"`{f}`" for f in fields) + " |",
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
            f"The images come from the gated repo `{source['hub']}` and are not in this "
            "repo (1-pixel stand-ins keep their file names). Accept its terms, set "
            "`HF_TOKEN`, and re-attach them with:", "", "```bash",
            f"imagenetx load --hub {repo_id} --media-from {source['hub']}", "```", ""]
    return "\n".join(lines)


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


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
