"""The protocols of the papers the project reproduces, each pin with the
line of the authors' code it comes from.

Sources read: ImageNet-D (chenshuang-zhang/imagenet_d) ``evaluate_vlm.py``
and ``utils/data_loaders_imgnet_d_id.py``; Gavrikov & Keuper
(paulgavrikov/biases_vs_generalization) ``code/eval_imagenet_adv.py``,
``code/utils.py``, ``code/model_zoo.py``; RobustBench 1.1.1 ``eval.py``,
``data.py``, ``loaders.py``, ``model_zoo/imagenet.py``; model-vs-human
(bethgelab/model-vs-human) ``modelvshuman/datasets/base.py``,
``dataloaders.py``, ``models/wrappers/pytorch.py`` and
``models/pytorch/model_zoo.py``.
"""

from __future__ import annotations

from imagenetx.protocols.base import Protocol
from imagenetx.protocols.registry import register_protocol

IMAGENET_D = register_protocol(Protocol(
    name="imagenet-d",
    title="ImageNet-D (Zhang et al., CVPR 2024): CLIP zero-shot over its 113 classes",
    decoder="pil",
    geometry="clip",
    normalization="model",
    classes="imagenet_d",
    prompt="A photo of a {c}",
    logit_scale=100.0,
    amp="off",
    cuda_zero_shot_amp="fp16",
    metric="top-1 over the 113 ImageNet-D classes, per nuisance (background, texture, "
           "material)",
    benchmarks=("imagenet_d",),
    applies_to=("imagenet_d",),
    references={
        "amp": "evaluate_vlm.py: clip.load(args.model, \"cuda\", jit=False) builds CLIP "
               "in float16 on CUDA (clip's build_model: convert_weights; only a CPU load "
               "calls model.float()); a classifier runs in float32",
        "cuda_zero_shot_amp": "evaluate_vlm.py: clip.load(args.model, \"cuda\", "
                              "jit=False): CLIP's weights in float16 on CUDA",
        "decoder": "utils/data_loaders_imgnet_d_id.py: "
                   "img = Image.open(path_list).convert(\"RGB\")",
        "geometry": "evaluate_vlm.py: model, test_transform = clip.load(args.model, "
                    "\"cuda\", jit=False); ImageNetDIDLoader(..., transform=test_transform)",
        "normalization": "evaluate_vlm.py: clip.load's test_transform ends in CLIP's "
                         "Normalize",
        "classes": "evaluate_vlm.py: category_list = [value[1].replace('_', ' ')"
                   ".replace('-', ' ').replace('/', ' or ').lower() ...] over "
                   "preprocessing/imgnet_d_dir2imgnet_d_id.txt",
        "prompt": "evaluate_vlm.py: clip.tokenize(f\"A photo of a {c}\")",
        "logit_scale": "evaluate_vlm.py: (100.0 * clip_image_features @ text_features.T)"
                       ".softmax(dim=-1)",
        "metric": "evaluate_vlm.py: top1_cnt += correct[:1] ... per subset in "
                  "['background', 'texture', 'material']",
    },
))

#: Gavrikov & Keuper's PGD-40 settings (their ``low`` budget)
GAVRIKOV_ATTACK = {"attack": "pgd", "eps": 0.5 / 255, "norm": "linf", "steps": 40,
                   "step_size": 2 / 255, "random_start": True}

GAVRIKOV = register_protocol(Protocol(
    name="gavrikov",
    title="Gavrikov & Keuper (CVPR 2024), biases vs generalization",
    decoder="pil",
    geometry="resize256-crop224",
    normalization="model",
    n=50000,
    attack=GAVRIKOV_ATTACK,
    amp="off",
    batch_size=128,
    metric="PGD-40 columns: 1 - perturbed / (391 x 128), i.e. (robust + 48) / 50048",
    benchmark_geometry={"cue_conflict": "model-vs-human-loader"},
    references={
        "geometry.cue_conflict": "code/eval_model_vs_human.py: model-vs-human's own loader "
                                 "(load_dataset(dataset_name).loader), x = (x * d_std + "
                                 "d_mean) before the NormalizedModel (the model's own mean "
                                 "/ std at the loader's 224, no resize to its own size)",
        "decoder": "code/utils.py: torchvision.datasets.ImageNet(path, split=\"val\", "
                   "transform=TEST_TRANSFORMS) (torchvision's PIL loader)",
        "geometry": "code/utils.py: TEST_TRANSFORMS = Compose([Resize(256), "
                    "CenterCrop(224), ToTensor()]) for every model, timm ones included",
        "normalization": "code/model_zoo.py: NormalizedModel(model, "
                         "model.default_cfg.get(\"mean\"), model.default_cfg.get(\"std\"))",
        "n": "code/eval_imagenet_adv.py: --n_samples default -1 (all 50,000; "
             "assert_imagenet_consistency(..., total_samples=50000))",
        "attack.attack": "code/eval_imagenet_adv.py: fb.attacks.LinfPGD(steps=pgd_steps, "
                         "abs_stepsize=2/255), pgd_steps = 40",
        "attack.eps": "code/eval_imagenet_adv.py: parser.add_argument('--eps', "
                      "type=float, default=0.5/255) (benchmark.csv's PGD-40/low)",
        "attack.random_start": "foolbox LinfPGD's default random_start=True",
        "amp": "code/eval_imagenet_adv.py: no autocast (float32)",
        "batch_size": "code/eval_imagenet_adv.py: --batch_size default 128",
        "metric": "code/eval_imagenet_adv.py run_foolbox_attack: pos += batch_size; "
                  "return 1 - (perturbed / pos)",
    },
))

ROBUSTBENCH = register_protocol(Protocol(
    name="robustbench",
    title="RobustBench (Croce et al.), ImageNet L-inf leaderboard",
    decoder="pil",
    geometry="robustbench",
    normalization="robustbench",
    subset="robustbench",
    n=5000,
    attack={"attack": "autoattack", "eps": 4 / 255, "norm": "linf"},
    amp="off",
    metric="robust accuracy: AutoAttack's prediction right, over the 5,000 images",
    references={
        "decoder": "robustbench/loaders.py pil_loader: img = Image.open(f); "
                   "return img.convert('RGB')",
        "geometry": "robustbench/data.py get_preprocessing: PREPROCESSINGS[model_zoo/"
                    "imagenet.py's entry['preprocessing']] (Res256Crop224, "
                    "BicubicRes256Crop224, Res224, Crop288; data/robustbench/"
                    "imagenet_linf_preprocessing.json), get_timm_model_preprocessing only "
                    "for the XCiT entries RobustBench registers in timm; a model outside "
                    "the zoo must name its preprocessing (load_imagenet's default "
                    "Res256Crop224)",
        "normalization": "robustbench/model_zoo/imagenet.py and architectures/*.py: 19 "
                         "entries normalize_model(..., mu, sigma) (ImageNet's mean / std) "
                         "or normalize inside the architecture; 11 read the raw [0, 1] "
                         "tensor (the XCiTs, five Singh2023 ConvStem models, "
                         "Chen2024Data_WRN_50_2, the MIMIR Swins); data/robustbench/"
                         "imagenet_linf_preprocessing.json's imagenet_linf_input",
        "subset": "robustbench/loaders.py: make_custom_dataset(self.root, "
                  "'helper_files/imagenet_test_image_ids.txt', class_to_idx)",
        "n": "robustbench/data.py load_imagenet(n_examples=5000)",
        "attack.attack": "robustbench/eval.py: AutoAttack(model, norm=threat_model_.value, "
                         "eps=eps, version='standard', device=device)",
        "attack.eps": "RobustBench's ImageNet Linf leaderboard: eps = 4/255",
        "amp": "robustbench/eval.py: no autocast (float32)",
        "metric": "robustbench/eval.py: adv_accuracy = clean_accuracy(model, x_adv, "
                  "clean_y_test)",
    },
))

MODEL_VS_HUMAN = register_protocol(Protocol(
    name="model-vs-human",
    title="model-vs-human (Geirhos et al.), cue conflict and shape bias",
    decoder="pil",
    geometry="model-vs-human",
    normalization="model",
    templates="openai",
    logit_scale=100.0,
    amp="off",
    cuda_zero_shot_amp="fp16",
    metric="shape bias: shape / (shape + texture) decisions over the conflict images "
           "(shape and texture classes differ)",
    benchmarks=("cue_conflict",),
    applies_to=("cue_conflict",),
    references={
        "decoder": "modelvshuman/datasets/dataloaders.py: ImageFolderWithPaths"
                   "(datasets.ImageFolder) (torchvision's PIL loader)",
        "geometry": "modelvshuman/datasets/base.py: resize = False if params.image_size == "
                    "224 else True; dataloaders.py PytorchLoader: Resize(256), "
                    "CenterCrop(224) only if resize; models/wrappers/pytorch.py: "
                    "ClipPytorchModel, ViTPytorchModel, SwagPytorchModel, "
                    "EfficientNetPytorchModel.forward_batch: images = "
                    "undo_default_preprocessing(images); [self.preprocess()(ToPILImage()"
                    "(image)) ...] with the model's own Resize / CenterCrop (CLIP n_px, "
                    "SWAG 384-518, EfficientNet-L2 475) and Normalize",
        "normalization": "modelvshuman/datasets/dataloaders.py: transforms.Normalize("
                         "mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]) for "
                         "PytorchModel; the wrappers' own Normalize otherwise (CLIP's "
                         "(0.48145466, ...), ViT's 0.5 / 0.5)",
        "templates": "modelvshuman/models/pytorch/clip/imagenet_templates.py: "
                     "imagenet_templates (OpenAI's 80), used by ClipPytorchModel's "
                     "_get_zeroshot_weights",
        "logit_scale": "modelvshuman/models/wrappers/pytorch.py ClipPytorchModel: "
                       "logits = 100. * image_features @ self.zeroshot_weights",
        "amp": "modelvshuman/models/wrappers/pytorch.py PytorchModel: float32",
        "cuda_zero_shot_amp": "modelvshuman/models/pytorch/model_zoo.py clip: "
                              "clip.load(\"ViT-B/32\") on CUDA when available (float16 "
                              "weights)",
    },
))
