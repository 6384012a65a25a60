"""``@frozen``: ``attrs.frozen`` with one ``__repr__`` shared by every class.

attrs writes the source of each class's ``__repr__`` and compiles it when the class is built;
policylang builds ~250 frozen classes, a command ~170 of them at start-up (the cluster model,
the plan, the syntax tree), and those compiles were about a quarter of the time the classes
took (~0.25 ms a class on a 2-core machine). The shared one prints what attrs' would:
``Name(field=value, ...)``, leaving out the fields declared ``repr=False``. A class that
writes its own ``__repr__`` keeps it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs


def _repr(self) -> str:
    cls = type(self)
    fields = ", ".join(f"{a.name}={getattr(self, a.name)!r}" for a in cls.__attrs_attrs__ if a.repr)
    return f"{cls.__qualname__.rsplit('>.', 1)[-1]}({fields})"


def _frozen(cls: type | None = None, **options):
    """``@frozen`` or ``@frozen(order=True)``: as ``attrs.frozen``, with the shared ``__repr__``."""
    def build(c: type) -> type:
        built = attrs.frozen(c, repr=False, **options)
        if "__repr__" not in c.__dict__:
            built.__repr__ = _repr
        return built
    return build if cls is None else build(cls)


# To a type checker it is attrs.frozen, whose classes it knows (their fields, attrs.evolve).
if TYPE_CHECKING:
    from attrs import frozen as frozen
else:
    frozen = _frozen
