"""The protocol registry, beside the benchmark, model-source and attack
ones: :func:`register_protocol`, :func:`get_protocol`, :func:`list_protocols`,
and each benchmark's own protocol by the benchmark's name
(:func:`default_protocol`)."""

from __future__ import annotations

from typing import List, Optional

from imagenetx.protocols.base import Protocol
from imagenetx.registry import Registry

#: the name that asks for no protocol (the model's own configuration)
NONE = "none"

#: the protocols by name, in registration order
PROTOCOLS: Registry = Registry("protocol")


def register_protocol(protocol: Protocol) -> Protocol:
    """Adds ``protocol`` to the registry (replacing one of the same name)
    and returns it."""
    return PROTOCOLS.register(protocol.name, protocol)


def list_protocols() -> List[Protocol]:
    """The registered protocols, in registration order."""
    return [protocol for _, protocol in PROTOCOLS.items()]


def protocol_names() -> List[str]:
    """The names ``protocol=`` takes (``none`` included)."""
    return [*PROTOCOLS.names(), NONE]


def get_protocol(name: Optional[str]) -> Optional[Protocol]:
    """The protocol named ``name`` (None for None or ``none``).

    Raises:
        ImageNetXError: for an unknown name
    """
    if name is None or name == NONE:
        return None
    if name not in PROTOCOLS:
        raise PROTOCOLS.unknown(name, protocol_names())
    return PROTOCOLS.get(name)


def default_protocol(benchmark: str) -> Optional[Protocol]:
    """The protocol a benchmark's datasets get by default: the one whose
    ``benchmarks`` name it, else None."""
    return next((p for p in list_protocols() if benchmark in p.benchmarks), None)


def resolve_protocol(name: Optional[str], benchmark: str) -> Optional[Protocol]:
    """``name``'s protocol; with no name, the benchmark's own."""
    return default_protocol(benchmark) if name is None else get_protocol(name)
