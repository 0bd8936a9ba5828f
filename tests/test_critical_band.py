"""Critical band masking: the probe against pyrtools and a transcription of
Gavrikov's ``solomon_filter``, its noise spectrum, a synthetic observer whose
band is known, and the fit against the published ``benchmark.csv``."""

import json
import math
from pathlib import Path

import numpy as np
import pyrtools as pt
import pytest
import torch
from PIL import Image

from imagenetx.errors import ImageNetXError
from imagenetx.metrics.critical_band import (
    CLEAN,
    NOISE_SDS,
    band_thresholds,
    critical_band_levels,
    fit_critical_band,
    fit_thresholds,
    level_key,
    parse_level,
)
from imagenetx.probes.critical_band import (
    CriticalBand,
    band_noise,
    critical_band_images,
    generators,
    pil_gray,
    pyramid_band,
    white_noise,
)

REPO = Path(__file__).resolve().parents[1]
BENCHMARK = REPO.parent / "shared" / "data" / "gavrikov" / "benchmark.csv"


def _crop224(photo: str) -> np.ndarray:
    """A scikit-image photo as eval_criticalband.py sees it: Resize(256), CenterCrop(224)."""
    import skimage.data

    im = Image.fromarray(getattr(skimage.data, photo)()).convert("RGB")
    w, h = im.size
    s = 256 / min(w, h)
    im = im.resize((round(w * s), round(h * s)), Image.BILINEAR)
    w, h = im.size
    left, top = round((w - 224) / 2), round((h - 224) / 2)
    return np.asarray(im.crop((left, top, left + 224, top + 224)))


@pytest.fixture(scope="module")
def photos():
    u8 = np.stack([_crop224(p) for p in ("chelsea", "astronaut")])
    return u8, torch.tensor(u8).permute(0, 3, 1, 2).to(torch.float64) / 255


def _solomon_reference(gray_u8: np.ndarray, noise: np.ndarray, freq: int):
    """Gavrikov's ``solomon_filter`` (code/eval_criticalband.py) in float64, with
    its ``np.random.randn(...) * noise_sd`` passed in as ``noise``.

    Returns the image and the mask of pixels whose noise it had to redraw
    (those draws are random, so they cannot match).
    """
    def rmspower(im):
        return np.sqrt(np.mean(np.square(im)))

    image = gray_u8 / 255.0
    image = (image - image.mean()) * 0.2 + 0.449
    pyr = pt.pyramids.LaplacianPyramid(noise)
    recon = pyr.recon_pyr(levels=7 - (freq + 1))
    sf_noise = recon * rmspower(pyr.recon_pyr(levels=0)) / rmspower(recon)
    noisyim = image + sf_noise
    redrawn = np.zeros(image.shape, bool)
    rng = np.random.default_rng(0)
    if noisyim.min() < 0 or noisyim.max() > 1:
        for i, j in zip(*np.nonzero((noisyim < 0) | (noisyim > 1))):
            if noisyim[i, j] < 0:
                newp = 0.1 - sf_noise[i, j]
                other = newp > 1
            else:
                newp = 1 - 0.1 - sf_noise[i, j]
                other = newp < 0
            if other:
                newn = sf_noise[i, j]
                while newn + image[i, j] < 0 or newn + image[i, j] > 1:
                    newn = rng.standard_normal() * noise.std()
                sf_noise[i, j] = newn
                redrawn[i, j] = True
            else:
                image[i, j] = newp
        noisyim = image + sf_noise
    return noisyim, redrawn


# --- the probe against pyrtools and the original ---------------------------------------


@pytest.mark.parametrize("shape", [(224, 224), (256, 200)])
def test_pyramid_band_is_pyrtools_recon_pyr(shape):
    noise = np.random.default_rng(1).standard_normal(shape)
    pyr = pt.pyramids.LaplacianPyramid(noise)
    assert pyr.num_scales == 7
    for level in range(pyr.num_scales):
        ours = pyramid_band(torch.tensor(noise)[None], level)[0].numpy()
        np.testing.assert_allclose(ours, pyr.recon_pyr(levels=level), rtol=0, atol=1e-12)


def test_gray_is_pil_convert_L(photos):
    u8, x = photos
    ref = np.stack([np.asarray(Image.fromarray(a).convert("L")) for a in u8])
    assert np.array_equal(np.round(pil_gray(x).numpy() * 255).astype(np.uint8), ref)


@pytest.mark.parametrize("sd", list(NOISE_SDS) + [0.4])
def test_images_equal_solomon_filter(photos, sd):
    """Every band: our batch equals the original per-image function given the
    same white noise, to 1e-9; sd 0.4 drives many pixels out of range, so
    the out-of-range rule is exercised too."""
    u8, x = photos
    seeds = [11, 12]
    white = white_noise(generators(seeds), 224, 224).to(torch.float64).numpy()
    clipped = 0
    for band in range(7):
        ours = critical_band_images(x, band, sd, seeds, dtype=torch.float64)
        assert ours.shape == (2, 3, 224, 224)
        assert torch.equal(ours[:, 0], ours[:, 2])
        for i in range(len(u8)):
            gray = np.asarray(Image.fromarray(u8[i]).convert("L"))
            ref, redrawn = _solomon_reference(gray, white[i] * sd, band)
            got = ours[i, 0].numpy()
            assert np.abs(got - ref)[~redrawn].max() < 1e-9
            assert got.min() >= 0 and got.max() <= 1
            clipped += int(np.isclose(ref, 0.1).sum() + np.isclose(ref, 0.9).sum())
    if sd >= 0.16:
        assert clipped > 0  # the rule did act


def test_clean_is_gray_low_contrast(photos):
    u8, x = photos
    out = CriticalBand().apply(x.float(), CLEAN, [0, 1])
    gray = np.asarray(Image.fromarray(u8[0]).convert("L")) / 255.0
    np.testing.assert_allclose(out[0, 1].numpy(), (gray - gray.mean()) * 0.2 + 0.449, atol=1e-6)
    assert out.dtype == torch.float32


# --- determinism and band limits ------------------------------------------------------


def test_noise_is_deterministic_per_seed(photos):
    _, x = photos
    x = x.float()
    probe = CriticalBand()
    x = torch.cat([x, x.flip(-1)])
    a = probe.apply(x, "3:0.08", [5, 6, 7, 9])
    assert torch.equal(a, probe.apply(x, "3:0.08", [5, 6, 7, 9]))
    # an image's noise depends on its seed alone, not on its batch (the
    # batched matmuls may round differently: 1e-6)
    assert torch.equal(white_noise(generators([5, 6, 7]), 224, 224)[2:],
                       white_noise(generators([7]), 224, 224))
    torch.testing.assert_close(a[2:3], probe.apply(x[2:3], "3:0.08", [7]), atol=1e-6, rtol=0)
    assert (a[2:3] - probe.apply(x[2:3], "3:0.08", [8])).abs().max() > 0.05
    # the same white noise at every level: twice the SD, twice the added noise
    clean = probe.apply(x, CLEAN, [5, 6, 7, 9])
    d1 = probe.apply(x, "3:0.02", [5, 6, 7, 9]) - clean
    d2 = probe.apply(x, "3:0.04", [5, 6, 7, 9]) - clean
    torch.testing.assert_close(d2, 2 * d1, atol=1e-5, rtol=0)
    # SD 3: many noise pixels must be redrawn (the original's while loop),
    # from the image's own generator, so still reproducible and in range
    big = probe.apply(x[:1], "6:3", [5])
    assert torch.equal(big, probe.apply(x[:1], "6:3", [5]))
    assert big.min() >= 0 and big.max() <= 1
    assert ((big > 0.1 + 1e-6) & (big < 0.9 - 1e-6)).float().mean() > 0.05


def _radial_log2_frequency(n: int) -> np.ndarray:
    f = np.fft.fftfreq(n) * n
    r = np.sqrt(f[:, None] ** 2 + f[None, :] ** 2)
    return np.log2(np.where(r > 0, r, np.nan))


def test_noise_is_band_limited(photos):
    """FFT of what the probe adds (sd 0.02: nothing clipped): each band holds
    >= 70% of its power within one octave of its spectral centroid (white
    noise: <= 19% for bands 0..5), centroids climb about an octave a band,
    and each sits at or up to 1.2 octaves below the nominal 1.75 * 2**band
    cycles/image (the Nyquist frequency of its pyramid level)."""
    _, x = photos
    probe = CriticalBand()
    lf = _radial_log2_frequency(224)
    ok = ~np.isnan(lf)
    seeds = list(range(20, 22))
    clean = probe.apply(x.float(), CLEAN, seeds)
    centroids = []
    for band in range(7):
        added = (probe.apply(x.float(), level_key(band, 0.02), seeds) - clean)[:, 0].double()
        power = (torch.fft.fft2(added).abs() ** 2).mean(0).numpy()
        power[~ok] = 0
        c = float((power[ok] * lf[ok]).sum() / power[ok].sum())
        near = ok & (np.abs(lf - c) <= 1)
        assert power[near].sum() / power.sum() >= 0.7, band
        if band < 6:
            assert near.sum() / ok.sum() <= 0.19
        assert math.log2(1.75 * 2 ** band) - 1.2 <= c <= math.log2(1.75 * 2 ** band) + 0.01
        centroids.append(c)
    steps = np.diff(centroids)
    assert np.all((steps > 0.2) & (steps < 1.7)), centroids


# --- a synthetic observer whose band is known -----------------------------------------


class BandObserver(torch.nn.Module):
    """A fixed linear classifier that sees one octave of spatial frequency:
    the annulus within half an octave of ``2**centre`` cycles/image of its
    gray input, matched against each class's clean probe image there
    (nearest template; ``-|f - t|^2`` up to a class-independent term)."""

    def __init__(self, centre_log2: float, clean: torch.Tensor):
        super().__init__()
        lf = torch.tensor(_radial_log2_frequency(clean.shape[-1]))
        self.register_buffer("mask", ((lf - centre_log2).abs() <= 0.5).to(torch.float32))
        self.register_buffer("templates", self.features(clean))

    def features(self, x):
        return torch.fft.ifft2(torch.fft.fft2(x[:, 0]) * self.mask).real.flatten(1)

    def forward(self, x):
        t = self.templates
        return 2 * self.features(x) @ t.T - (t * t).sum(1)


def _noise_centroid(band: int) -> float:
    """Power-weighted mean log2 frequency of the probe's band noise."""
    lf = _radial_log2_frequency(224)
    ok = ~np.isnan(lf)
    n = band_noise(white_noise(generators(range(100, 104)), 224, 224).double(), band)
    power = (torch.fft.fft2(n).abs() ** 2).mean(0).numpy()
    return float((power[ok] * lf[ok]).sum() / power[ok].sum())


@pytest.mark.parametrize("band, amplitude", [(2, 0.02), (4, 0.008)])
def test_observer_band_is_the_fitted_centre(band, amplitude):
    """8 classes of texture confined to the observer's octave, 2 noise draws
    each per level, through CriticalBand.apply: the fitted channel is centred
    on the observer's band (its Gaussian's mu within half a band)."""
    centre = _noise_centroid(band)
    lf = torch.tensor(_radial_log2_frequency(224))
    mask = ((lf - centre).abs() <= 0.5).to(torch.float32)
    g = torch.Generator().manual_seed(0)
    s = torch.fft.ifft2(torch.fft.fft2(torch.randn(8, 224, 224, generator=g)) * mask).real
    images = (0.5 + amplitude * s / s.std(dim=(-2, -1), keepdim=True)).clamp(0, 1)
    images = images[:, None].expand(-1, 3, -1, -1).float()

    probe = CriticalBand()
    observer = BandObserver(centre, probe.apply(images, CLEAN, list(range(8))))
    batch, labels = images.repeat(2, 1, 1, 1), torch.arange(8).repeat(2)
    seeds = list(range(len(batch)))
    accuracy = {}
    with torch.no_grad():
        for level in probe.levels():
            logits = observer(probe.apply(batch, level, seeds))
            accuracy[level] = float((logits.argmax(1) == labels).float().mean())
    assert accuracy[CLEAN] == 1.0
    fit = fit_critical_band(accuracy, probe.levels())
    assert not fit.degenerate
    assert abs(fit.mu - band) < 0.5, fit.to_dict()
    assert int(np.argmax(fit.thresholds)) == band
    assert fit.center_frequency == pytest.approx(1.75 * 2 ** fit.mu)


# --- the fit --------------------------------------------------------------------------


def test_levels_and_keys():
    levels = CriticalBand().levels()
    assert CriticalBand.name == "critical_band"
    assert len(levels) == 29 and levels[0] == "clean"
    assert levels[1:5] == ["0:0.02", "0:0.04", "0:0.08", "0:0.16"] and levels[-1] == "6:0.16"
    assert levels == critical_band_levels()
    assert [parse_level(k) for k in levels[1:3]] == [(0, 0.02), (0, 0.04)]
    assert parse_level("clean") is None


def test_thresholds_follow_find_thresholds():
    """Rows clean, 0.02, 0.04, 0.08, 0.16; from 0.16 down, the levels passed
    before the first above the criterion; 4 when none is (their loop's end)."""
    m = np.full((5, 7), 0.9)
    m[4, 1] = 0.5                      # 0.16 at the criterion: not above -> 1
    m[3:, 2] = 0.2                     # 0.08 and 0.16 below -> 2
    m[2:, 3] = 0.2                     # -> 3
    m[1:, 4] = 0.2                     # only clean above -> 4
    m[:, 5] = 0.1                      # nothing above, clean included -> 4
    assert band_thresholds(m).tolist() == [0, 1, 2, 3, 4, 4, 0]


#: (thresholds, published bw, cf, pns) rows of benchmark.csv, to 6 decimals
PUBLISHED_FITS = [
    ("0123444", 5.666261, 54.677255, 1.000000),   # resnet50.a1_in1k etc., absolute
    ("0012333", 4.432845, 55.416491, 0.611499),   # vit_base_patch16_224.mae_in1k, absolute
    ("0012342", 3.335985, 42.290853, 0.809027),   # resnet101 / resnet152, normalized
    ("1222333", 10.456492, 114.495013, 0.516747), # robust_resnet50_linf_eps4.0, normalized
]


@pytest.mark.parametrize("thresholds, bw, cf, pns", PUBLISHED_FITS)
def test_fit_reproduces_published_numbers(thresholds, bw, cf, pns):
    fit = fit_thresholds([int(c) for c in thresholds])
    assert fit.bandwidth_octaves == pytest.approx(bw, rel=1e-6)
    assert fit.center_frequency == pytest.approx(cf, rel=1e-6)
    assert fit.peak_sensitivity == pytest.approx(pns, rel=1e-6)
    assert len(fit.curve) == 60 and max(fit.curve) <= 4 + 1e-9


def test_fit_from_accuracies_normalizes_by_clean():
    """Accuracy 0.3 everywhere but clean 0.5: nothing is above 50% absolute
    (flat at 4, degenerate), but 0.3 / 0.5 = 60% of clean is (flat at 0)."""
    acc = {k: 0.3 for k in critical_band_levels()}
    acc[CLEAN] = 0.5
    absolute = fit_critical_band(acc, normalize=False)
    assert absolute.degenerate and absolute.thresholds == (4,) * 7
    assert math.isnan(absolute.center_frequency) and absolute.peak_sensitivity == 1.0
    # a flat fit still prints as JSON (no width, no centre: null, not inf)
    flat = json.loads(json.dumps(absolute.to_dict(), allow_nan=False))
    assert flat["sigma"] is None and flat["center_frequency"] is None
    normalized = fit_critical_band(acc)
    assert normalized.thresholds == (0,) * 7 and normalized.peak_sensitivity == 2.0 ** -4
    # one band made fragile: a lone spike there (beyond SciPy's default budget)
    for sd in NOISE_SDS:
        acc[level_key(3, sd)] = 0.1
    fit = fit_critical_band(acc)
    assert fit.thresholds == (0, 0, 0, 4, 0, 0, 0) and fit.mu == pytest.approx(3, abs=1e-3)
    assert fit.center_frequency == pytest.approx(14.0, rel=1e-3)
    assert 0 < fit.bandwidth_octaves < 1 and fit.peak_sensitivity == pytest.approx(1, abs=1e-5)
    assert fit.to_dict()["thresholds"] == [0, 0, 0, 4, 0, 0, 0]


#: the integer threshold vectors (absolute, normalized) whose fits are
#: benchmark.csv's metric/criticalband/{bw,cf,pns} and *_norm, found by search
#: over all 5**7 vectors; "4444444" is the flat, degenerate case
GAVRIKOV_THRESHOLDS = {
    "vit_base_patch16_224.mae_in1k": ("0012333", "0012232"),
    "vit_base_patch16_224.dino_in1k": ("0223443", "0123443"),
    "vit_base_patch16_224.torchvision_deit": ("0233444", "0022343"),
    "vit_base_patch16_224.augreg_in1k": ("1234444", "0123343"),
    "vit_base_patch16_224.sam_in1k": ("4444444", "0123443"),
    "vit_base_patch32_224.augreg_in1k": ("3444444", "0233442"),
    "resnet50_diffusionnoise_fixed_nonoise": ("4444444", "1233443"),
    "resnet50_diffusionnoise_fixed": ("4444444", "1233332"),
    "resnet50_simclrv2": ("4444444", "0123443"),
    "resnet50_swav": ("1234444", "0123443"),
    "resnet50_diffusionnoise": ("4444444", "1234443"),
    "vonenet_resnet50": ("4444444", "0234443"),
    "resnet50_opticsaugment": ("4444444", "0012444"),
    "resnet50_frozen_random": ("4444444", "0123443"),
    "resnet50_tsbias_sbias": ("4444444", "0123443"),
    "resnet50_tsbias_tbias": ("4444444", "0123444"),
    "resnet50_tsbias_debiased": ("4444444", "0123444"),
    "resnet50.a3_in1k": ("2344444", "0013444"),
    "resnet50.a1h_in1k": ("0123444", "0012443"),
    "resnet50.d_in1k": ("0123444", "0013443"),
    "resnet50.c1_in1k": ("0123444", "0013443"),
    "resnet50.b1k_in1k": ("0123444", "0013343"),
    "resnet50.c2_in1k": ("0123444", "0012343"),
    "resnet50.b2k_in1k": ("0123444", "0013343"),
    "resnet50.a2_in1k": ("0123444", "0023443"),
    "resnet50.a1_in1k": ("0123444", "0013443"),
    "resnet50_dino": ("1234444", "0123443"),
    "resnet50_moco_v3_300ep": ("1234444", "0123443"),
    "resnet50_moco_v3_100ep": ("1344444", "0123443"),
    "resnet50_moco_v3_1000ep": ("1234444", "0123443"),
    "resnet50_gn": ("0123444", "0123343"),
    "resnet50_noisymix": ("2344444", "0123443"),
    "resnet50_prime": ("1234444", "0123443"),
    "robust_resnet50_l2_eps3": ("4444444", "1233333"),
    "tv_resnet50": ("4444444", "0123444"),
    "ssl_resnet50": ("1234444", "0123443"),
    "swsl_resnet50": ("0123444", "0013443"),
    "resnet50_trained_on_SIN_and_IN": ("4444444", "0023443"),
    "resnet50_trained_on_SIN_and_IN_then_finetuned_on_IN": ("4444444", "0123444"),
    "resnet50_trained_on_SIN": ("4444444", "0013333"),
    "tv2_resnet50": ("0123444", "0012343"),
    "robust_resnet50_l2_eps0": ("4444444", "0123444"),
    "robust_resnet50_linf_eps4.0": ("4444444", "1222333"),
    "robust_resnet50_linf_eps2.0": ("4444444", "1223333"),
    "robust_resnet50_linf_eps1.0": ("4444444", "1233343"),
    "robust_resnet50_linf_eps0.5": ("4444444", "1233444"),
    "robust_resnet50_l2_eps5": ("4444444", "1223333"),
    "robust_resnet50_linf_eps8.0": ("4444444", "1233333"),
    "robust_resnet50_l2_eps1": ("4444444", "1233444"),
    "robust_resnet50_l2_eps0.5": ("4444444", "1233444"),
    "robust_resnet50_l2_eps0.25": ("4444444", "1233444"),
    "robust_resnet50_l2_eps0.1": ("4444444", "0234444"),
    "robust_resnet50_l2_eps0.05": ("4444444", "0134444"),
    "robust_resnet50_l2_eps0.03": ("4444444", "0123444"),
    "robust_resnet50_l2_eps0.01": ("4444444", "0123444"),
    "resnet50_pixmix_90ep": ("0234444", "0123443"),
    "resnet50_pixmix_180ep": ("0134444", "0123443"),
    "resnet50_augmix_180ep": ("2344444", "0123443"),
    "resnet50_deepaugment": ("4444444", "0122343"),
    "resnet50_deepaugment_augmix": ("2344444", "0122342"),
    "resnet18": ("1234444", "0123444"),
    "resnet34": ("0124444", "0023443"),
    "resnet101": ("0023443", "0012342"),
    "resnet152": ("0023443", "0012342"),
    "resnetv2_50x1_bit_distilled": ("0123443", "0122332"),
    "nf_resnet50": ("0123444", "0123443"),
    "resnet50_untrained": ("4444444", "0000000"),
    "lambda_resnet50ts": ("0123444", "0023443"),
}


def test_fit_reproduces_benchmark_csv():
    """Every critical-band number in Gavrikov's benchmark.csv (68 models with
    values, both variants) is our fit of an integer threshold vector, to
    1e-6; the normalized vector never exceeds the absolute one (what dividing
    by a clean accuracy <= 1 implies); flat vectors are marked degenerate.
    The CSV holds no per-level accuracies, so only the fit can be checked."""
    if not BENCHMARK.is_file():
        pytest.skip(f"{BENCHMARK} is absent (Gavrikov's raw-data/benchmark.csv)")
    import pandas as pd

    table = pd.read_csv(BENCHMARK).set_index("model")
    cols = ["metric/criticalband/" + c for c in ("bw", "cf", "pns")]
    rows = table[cols + [c + "_norm" for c in cols]].dropna()
    assert set(rows.index) == set(GAVRIKOV_THRESHOLDS)
    checked = 0
    for model, (absolute, normalized) in GAVRIKOV_THRESHOLDS.items():
        assert all(n <= a for a, n in zip(absolute, normalized)), model
        for vector, suffix in ((absolute, ""), (normalized, "_norm")):
            published = rows.loc[model, [c + suffix for c in cols]].to_numpy(float)
            fit = fit_thresholds([int(c) for c in vector], normalized=bool(suffix))
            if len(set(vector)) == 1:
                assert fit.degenerate
                # SciPy's stopping point on a flat line: bandwidth beyond any
                # band (published 11295 octaves absolute, 10.3 for the
                # untrained model normalized)
                assert published[0] > 10
                continue
            np.testing.assert_allclose(
                [fit.bandwidth_octaves, fit.center_frequency, fit.peak_sensitivity],
                published, rtol=1e-6, atol=1e-6, err_msg=f"{model}{suffix}")
            checked += 1
    assert checked == 36 + 67  # all but 32 flat absolute and 1 flat normalized


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("level, words", [
    ("foo", "Unknown critical band level 'foo'"),
    ("7:0.02", "band 7 is out of range"),
    ("-1:0.02", "band -1 is out of range"),
    ("3:0", "noise SD must be a positive number"),
    ("3:-0.1", "noise SD must be a positive number"),
    ("3:nan", "Unknown critical band level"),
    ("3:1e400", "noise SD must be a positive number"),
    ("3:abc", "Unknown critical band level"),
])
def test_bad_level_is_one_clear_error(level, words):
    images = torch.rand(1, 3, 224, 224)
    with pytest.raises(ImageNetXError, match=words):
        CriticalBand().apply(images, level, [0])


def test_bad_images_seeds_and_accuracies_are_one_clear_error():
    probe = CriticalBand()
    with pytest.raises(ImageNetXError, match="one seed per image"):
        probe.apply(torch.rand(2, 3, 224, 224), "3:0.02", [0])
    with pytest.raises(ImageNetXError, match=r"\(n, 3, H, W\)"):
        probe.apply(torch.rand(2, 224, 224), "3:0.02", [0, 1])
    with pytest.raises(ImageNetXError, match="at least 160 pixels"):
        probe.apply(torch.rand(1, 3, 64, 64), "3:0.02", [0])
    acc = {k: 0.5 for k in critical_band_levels()}
    with pytest.raises(ImageNetXError, match=r"levels \['6:0.16'\] are missing"):
        fit_critical_band({k: v for k, v in acc.items() if k != "6:0.16"})
    with pytest.raises(ImageNetXError, match="not a fraction"):
        fit_critical_band({**acc, "2:0.04": 50.0})
    with pytest.raises(ImageNetXError, match="clean accuracy is 0"):
        fit_critical_band({**acc, CLEAN: 0.0})
    with pytest.raises(ImageNetXError, match="band 9 is out of range"):
        fit_critical_band({**acc, "9:0.02": 0.5})
