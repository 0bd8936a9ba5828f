"""The protocol registry, beside the benchmark, model-source and attack
ones: :func:`register_protocol`, :func:`get_protocol`, :func:`list_protocols`,
and each benchmark's own protocol by the benchmark's name
(:func:`default_protocol`)."""

from __future__ import annotations

from typing import Dict, List, Optional

from imagenetx.errors import ImageNetXError
from imagenetx.protocols.base import Protocol

#: the name that asks for no protocol (the model's own configuration)
NONE = "none"

_PROTOCOLS: Dict[str, Protocol] = {}


def register_protocol(protocol: Protocol) -> Protocol:
    """Adds ``protocol`` to the registry (replacing one of the same name)."""
    _PROTOCOLS[protocol.name] = protocol
    return protocol


def list_protocols() -> List[Protocol]:
    """The registered protocols, in registration order."""
    return list(_PROTOCOLS.values())


def protocol_names() -> List[str]:
    """The names ``--protocol`` takes (``none`` included)."""
    return [*_PROTOCOLS, NONE]


def get_protocol(name: Optional[str]) -> Optional[Protocol]:
    """The protocol named ``name`` (None for None or ``none``).

    Raises:
        ImageNetXError: for an unknown name
    """
    if name is None or name == NONE:
        return None
    if name not in _PROTOCOLS:
        raise ImageNetXError(
            f"Unknown `protocol={name}`: use one of {', '.join(protocol_names())} "
            "(`imagenetx protocols` lists what each pins)")
    return _PROTOCOLS[name]


def default_protocol(benchmark: str) -> Optional[Protocol]:
    """The protocol a benchmark's datasets get by default: the one whose
    ``benchmarks`` name it, else None."""
    return next((p for p in _PROTOCOLS.values() if benchmark in p.benchmarks), None)


def resolve_protocol(name: Optional[str], benchmark: str) -> Optional[Protocol]:
    """``name``'s protocol; with no name, the benchmark's own."""
    return default_protocol(benchmark) if name is None else get_protocol(name)
