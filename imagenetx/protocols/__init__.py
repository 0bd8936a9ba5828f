"""Protocols: each paper's setting by name, as its authors' code ran it.

A registry beside the benchmark, model-source and attack ones
(:func:`register_protocol`, :func:`get_protocol`, :func:`list_protocols`);
each benchmark's own protocol by the benchmark's name
(:func:`default_protocol`). A protocol is data (:class:`Protocol`): the
model pipeline applies it, the run record keeps it, and what a user sets
on top of it is recorded as a departure. Nothing here imports a model
library.

Built in (:mod:`imagenetx.protocols.builtin`): ``imagenet-d``,
``gavrikov``, ``robustbench``, ``model-vs-human``.
"""

from imagenetx.protocols.base import GEOMETRIES, NORMALIZATIONS, Protocol
from imagenetx.protocols.registry import (
    NONE,
    default_protocol,
    get_protocol,
    list_protocols,
    protocol_names,
    register_protocol,
    resolve_protocol,
)
from imagenetx.protocols import builtin  # noqa: F401,E402 (registers the built-ins)

__all__ = ["GEOMETRIES", "NONE", "NORMALIZATIONS", "Protocol", "default_protocol",
           "get_protocol", "list_protocols", "protocol_names", "register_protocol",
           "resolve_protocol"]
