"""Extra headers as the caller gives them (a mapping, or (name, value)
pairs), checked for what the C library cannot see."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterable, List, Tuple, Union

from ._errors import InvalidArgumentError

#: Extra headers: a mapping, or (name, value) pairs (which may repeat a name).
Headers = Union[Mapping[str, str], Iterable[Tuple[str, str]]]


def header_pairs(headers: Any, what: str = "header") -> List[Tuple[str, str]]:
    """``headers`` as (name, value) pairs, in order. The library checks the
    names and values themselves (and names the header it refuses); here only
    the types, and a NUL that would cut a C string short. ``what`` names them
    in errors."""
    if headers is None:
        return []
    if isinstance(headers, (str, bytes)):
        raise TypeError(f"{what}s must be a mapping or (name, value) pairs, not {type(headers).__name__}")
    try:
        pairs = list(headers.items() if isinstance(headers, Mapping) else headers)
    except TypeError:
        raise TypeError(f"{what}s must be a mapping or (name, value) pairs, not {type(headers).__name__}") from None
    out: List[Tuple[str, str]] = []
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"{what}s must be a mapping or (name, value) pairs")
        name, value = pair
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"{what} names and values must be str, not {type(name).__name__}: {type(value).__name__}")
        if "\x00" in name or "\x00" in value:
            raise InvalidArgumentError(InvalidArgumentError.code, f"{what} {name!r} contains a NUL character")
        out.append((name, value))
    return out
