"""Where pretrained weights come from, and whether it can be reached now.

A machine without network must hear so in seconds and in one line, not
after a library's minute of retries and pages of warnings. Each host is
asked once, with one short request (through the same proxies the
libraries use), and the answer kept for a minute (a command asks once; a
long-lived App server asks again later); where it cannot be reached, huggingface_hub is put in
offline mode for the load (weights in its cache still load, at once) and a
load that then fails says which weights are missing and how to get them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import warnings
from typing import Callable, Iterator, Optional
from urllib.parse import urlparse

from imagenetx.errors import ImageNetXError

#: seconds a host has to answer the one probe
PROBE_TIMEOUT = 5.0
#: seconds an answer is kept
REMEMBER_FOR = 60.0

_ANSWERS: dict = {}
_LOCK = threading.Lock()
#: the :func:`quiet_hub` blocks that put huggingface_hub offline, running now
_FORCED: list = []


def _remembered(key: str, probe: Callable[[], Optional[str]]) -> Optional[str]:
    """``probe()``'s answer for ``key``, asked again after :data:`REMEMBER_FOR`."""
    with _LOCK:
        kept = _ANSWERS.get(key)
    if kept is not None and time.monotonic() - kept[0] < REMEMBER_FOR:
        return kept[1]
    answer = probe()
    with _LOCK:
        _ANSWERS[key] = (time.monotonic(), answer)
    return answer


def _reason(e: BaseException) -> str:
    """A short cause: the innermost message of a connection error."""
    while getattr(e, "reason", None) is not None and isinstance(e.reason, BaseException):
        e = e.reason  # urllib's URLError wraps the socket error
    text = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _probe_url(root: str) -> Optional[str]:
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(urllib.request.Request(root, method="HEAD"),
                               timeout=PROBE_TIMEOUT).close()
    except urllib.error.HTTPError:
        return None  # it answered
    except Exception as e:  # DNS, refused, timeouts, proxies, TLS
        return _reason(e)
    return None


def unreachable(url: str) -> Optional[str]:
    """Why the host of ``url`` cannot be reached now (None: it answers)."""
    parts = urlparse(url)
    root = f"{parts.scheme}://{parts.netloc}/"
    return _remembered(root, lambda: _probe_url(root))


def _probe_hub(endpoint: str) -> Optional[str]:
    from huggingface_hub.utils import get_session

    try:
        get_session().head(endpoint, timeout=PROBE_TIMEOUT, follow_redirects=False)
    except Exception as e:  # the HTTP client's connection errors, in many types
        return _reason(e)
    return None


def hub_unreachable() -> Optional[str]:
    """Why the Hugging Face Hub (``HF_ENDPOINT``) cannot be reached now,
    ``"HF_HUB_OFFLINE is set"`` in offline mode, else None."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE and not any(_FORCED):  # the user's offline mode, not ours
        return "HF_HUB_OFFLINE is set"
    return _remembered("hub " + constants.ENDPOINT, lambda: _probe_hub(constants.ENDPOINT))


def hub_cache() -> str:
    """huggingface_hub's cache folder (``HF_HUB_CACHE``)."""
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def hub_name() -> str:
    """The Hub in messages: its address."""
    from huggingface_hub import constants

    return f"the Hugging Face Hub ({constants.ENDPOINT})"


@contextlib.contextmanager
def quiet_hub(offline: bool) -> Iterator[None]:
    """While inside: huggingface_hub's log lines and warnings are kept off
    the screen (the caller says what went wrong in one line) and, with
    ``offline``, it serves cached files only, making no request at all."""
    from huggingface_hub import constants

    logger = logging.getLogger("huggingface_hub")
    level, was_offline = logger.level, constants.HF_HUB_OFFLINE
    logger.setLevel(logging.ERROR)
    # open_clip says a failed download with logging.error on the root
    # logger, which also installs a handler there for good: a handler of
    # ours keeps it from doing so, and the level keeps the line off
    root = logging.getLogger()
    null, root_level = logging.NullHandler(), root.level
    if offline:
        _FORCED.append(not was_offline)
        constants.HF_HUB_OFFLINE = True
        root.addHandler(null)
        root.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if offline:
            _FORCED.pop()
        constants.HF_HUB_OFFLINE = was_offline
        logger.setLevel(level)
        root.removeHandler(null)
        root.setLevel(root_level)


def missing_weights(what: str, weights: str, cache: str, host: str, reason: str,
                    local: Optional[str] = None, random_weights: bool = True
                    ) -> ImageNetXError:
    """The one line said when weights are not cached and their host cannot
    be reached.

    Args:
        what: the model, e.g. ``timm model 'resnet18'``
        weights: which weights, e.g. ``timm/resnet18.a1_in1k``
        cache: the folder they would be cached in
        host: where they come from, e.g. the Hub's address
        reason: why that cannot be reached
        local (None): how to load a local copy instead, e.g.
            ``model=checkpoint:PATH`` and ``arch=resnet18`` in backticks
        random_weights (True): whether ``pretrained=False`` applies
    """
    ways = ["connect to the internet and run again",
            f"copy {cache} from a machine that has them"]
    if local:
        ways.append(local)
    if random_weights:
        ways.append("pass `pretrained=False` for a smoke run")
    return ImageNetXError(
        f"No network for the pretrained weights of {what}: {weights} is not in "
        f"{cache} and {host} cannot be reached ({reason}); "
        + ", ".join(ways[:-1]) + f" or {ways[-1]}")


def torch_hub_file(url: str) -> str:
    """Where ``torch.hub.load_state_dict_from_url`` caches ``url``."""
    import torch

    return os.path.join(torch.hub.get_dir(), "checkpoints",
                        os.path.basename(urlparse(url).path))


def weights_offline(hf_hub: Optional[str], url: Optional[str], what: str,
                    local: Optional[str] = None, path: Optional[str] = None):
    """``(Hub repo, why the Hub cannot be reached)`` when the weights come
    from the Hub repo ``hf_hub`` and it cannot be reached now (they may
    still be in its cache), else None; weights from ``url`` that are not
    cached (at ``path``) and cannot be fetched are refused here in one line
    (see :func:`check_url_weights`)."""
    if hf_hub:
        reason = hub_unreachable()
        return None if reason is None else (hf_hub.rstrip("/"), reason)
    if url:
        check_url_weights(url, what, local, path)
    return None


def check_url_weights(url: str, what: str, local: Optional[str] = None,
                      path: Optional[str] = None) -> None:
    """Raises ImageNetXError when weights downloaded from ``url`` into
    ``path`` (default: the torch hub cache) are not there and ``url``'s
    host cannot be reached."""
    path = path or torch_hub_file(url)
    if os.path.isfile(path):
        return
    reason = unreachable(url)
    if reason:
        raise missing_weights(what, os.path.basename(path), os.path.dirname(path),
                              urlparse(url).netloc, reason, local)
