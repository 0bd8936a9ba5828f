"""The choices of the library's options, in one import-free place so the
command line and the App forms offer exactly what the library accepts."""

#: which factor labels to count an image under
WHICH = ("top", "multi")

#: the ways to decide whether a prediction is correct
CORRECTNESS = ("class", "metaclass", "real")

#: how ``real`` correctness treats images whose ReaL label set is empty
REAL_MODES = ("clean", "paper")

#: where inference runs
DEVICES = ("auto", "cpu", "cuda")

#: autocast precision of inference
AMPS = ("auto", "bf16", "fp16", "off")

#: who decodes images for inference (``imagenetx.models.decode``)
DECODERS = ("auto", "pil", "torchvision")

#: how the rows of a logits pickle without file names map to val images
ROW_ORDERS = ("toolkit", "val")

#: how slice discovery ranks conjunctions
DISCOVERY_SCORES = ("bound", "sliceline")

#: slice discovery's defaults: most slices per conjunction, fewest images
#: per slice, slices reported, SliceLine's alpha
DISCOVERY_MAX_ORDER = 3
DISCOVERY_MIN_SUPPORT = 20
DISCOVERY_TOP_K = 10
DISCOVERY_ALPHA = 0.95

#: ImageNetV2's three variants (Recht et al., 2019)
V2_VARIANTS = ("matched-frequency", "threshold-0.7", "top-images")
