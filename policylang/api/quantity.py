"""Kubernetes resource quantities (``500m``, ``1Gi``, ``2e3``), exact.

Values are held as exact fractions, so arithmetic never drifts; ``milli`` and ``value``
round up to integers the way the API's ``MilliValue()`` and ``Value()`` do, which is what
kube-scheduler compares and scores with.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache, total_ordering

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_EXPONENT_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_BINARY_SUFFIX = {v: k for k, v in _BINARY.items()}

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)


class QuantityError(ValueError):
    pass


class QuantityRangeError(QuantityError):
    """A well-formed quantity the API cannot hold: beyond int64 milli-units."""


# resource.Quantity's bound: MilliValue() must fit an int64. The digits and exponent are
# checked against it before any power of ten is computed, so `1e999999999` costs nothing.
MAX_MILLI = 2**63 - 1
_MAX_DIGITS = 64


NANO = 10**9


@total_ordering
class Quantity:
    """An exact quantity, held as a whole number of nano-units (the API's finest precision),
    so arithmetic is integer arithmetic. ``format`` (DecimalSI, BinarySI, DecimalExponent)
    only affects printing."""

    __slots__ = ("nanos", "format")

    def __init__(self, amount=0, format: str = "DecimalSI", *, nanos: int | None = None):
        if nanos is None:
            exact = Fraction(amount) * NANO
            nanos = exact.numerator // exact.denominator
            if nanos * exact.denominator != exact.numerator:
                nanos += 1  # finer than a nano-unit rounds up, as the API does
        self.nanos = nanos
        self.format = format

    @property
    def amount(self) -> Fraction:
        return Fraction(self.nanos, NANO)

    def __eq__(self, other):
        if isinstance(other, Quantity):
            return self.nanos == other.nanos
        if isinstance(other, (int, Fraction)) and not isinstance(other, bool):
            return self.nanos == other * NANO
        return NotImplemented

    def __lt__(self, other):
        if isinstance(other, Quantity):
            return self.nanos < other.nanos
        if isinstance(other, (int, float, Fraction)) and not isinstance(other, bool):
            return self.nanos < other * NANO
        return NotImplemented

    def __hash__(self):
        return hash(self.nanos)

    def __add__(self, other):
        return Quantity(format=self.format, nanos=self.nanos + _nanos(other))

    __radd__ = __add__

    def __sub__(self, other):
        return Quantity(format=self.format, nanos=self.nanos - _nanos(other))

    def __rsub__(self, other):
        return Quantity(format=self.format, nanos=_nanos(other) - self.nanos)

    def __neg__(self):
        return Quantity(format=self.format, nanos=-self.nanos)

    def __mul__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            return Quantity(format=self.format, nanos=self.nanos * other)
        return Quantity(self.amount * Fraction(_nanos(other), NANO), self.format)

    __rmul__ = __mul__

    def milli(self) -> int:
        """``MilliValue()``: thousandths, rounded up."""
        return -((-self.nanos) // 10**6)

    def value(self) -> int:
        """``Value()``: whole units, rounded up."""
        return -((-self.nanos) // NANO)

    def __str__(self) -> str:
        return format_quantity(self)

    def __repr__(self) -> str:
        return f"Quantity({format_quantity(self)!r})"


def _nanos(x) -> int:
    if isinstance(x, Quantity):
        return x.nanos
    if isinstance(x, bool):
        raise TypeError("booleans are not quantities")
    if isinstance(x, int):
        return x * NANO
    return Quantity(x).nanos


ZERO = Quantity(0)


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse a quantity as the API server does; raises QuantityError with the reason."""
    if isinstance(text, str):
        return _parse_text(text)
    return _parse(text)


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    # Cluster dumps repeat the same few quantities ("100m", "128Mi") thousands of times.
    return _parse(text)


def _parse(text) -> Quantity:
    if isinstance(text, bool):
        raise QuantityError(f"quantities must match the regular expression, got {text!r}")
    if isinstance(text, int):
        _check_range(Fraction(text), text)
        return Quantity(Fraction(text))
    if isinstance(text, float):
        # YAML gives floats for `0.5`; go through the decimal text to stay exact.
        text = repr(text)
    s = str(text).strip()
    m = _QUANTITY.match(s)
    if not m:
        raise QuantityError(f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}")
    if len(m["num"]) > _MAX_DIGITS:
        raise QuantityRangeError(f"quantity {_short(s)} has more than {_MAX_DIGITS} digits")
    num = Fraction(m["num"] if not m["num"].endswith(".") else m["num"][:-1] or "0")
    if m["sign"] == "-":
        num = -num
    suffix = m["suffix"] or ""
    if suffix and suffix not in _BINARY and suffix not in _DECIMAL:
        exponent = int(suffix[1:]) if len(suffix) < 12 else (1 if suffix[1] != "-" else -1) * 10**11
        if num == 0:
            suffix = ""
        elif exponent > _MAX_DIGITS:
            raise QuantityRangeError(_range_message(s))
        elif exponent < -(_MAX_DIGITS + 9):
            # Far finer than a nano-unit: the API rounds it up to one nano-unit.
            return Quantity(format="DecimalExponent", nanos=1 if num > 0 else -1)
    if suffix in _BINARY:
        amount, fmt = num * (1024 ** _BINARY[suffix]), "BinarySI"
    elif suffix in _DECIMAL:
        amount, fmt = num * Fraction(10) ** _DECIMAL[suffix], "DecimalSI"
    else:
        amount, fmt = num * Fraction(10) ** int(suffix[1:]), "DecimalExponent"
    # The API rounds anything finer than a nano-unit up to the next nano-unit, in magnitude
    # (inf.RoundUp rounds away from zero: -0.1n is -1n).
    nanos = amount * 10**9
    if nanos.denominator != 1:
        magnitude = math.ceil(abs(nanos))
        amount = Fraction(magnitude if nanos > 0 else -magnitude, 10**9)
    _check_range(amount, s)
    return Quantity(amount, fmt)


def _check_range(amount: Fraction, text) -> None:
    if abs(amount) * 1000 > MAX_MILLI:
        raise QuantityRangeError(_range_message(text))


def _range_message(text) -> str:
    return (f"quantity {_short(str(text))} is out of range: a Kubernetes quantity must fit in a 64-bit "
            f"count of milli-units (at most {Quantity(nanos=MAX_MILLI * 10**6)})")


def _short(text: str, limit: int = 40) -> str:
    return repr(text) if len(text) <= limit else repr(text[:limit] + "…")


def format_quantity(q: Quantity) -> str:
    """The canonical text the API server would print for ``q``."""
    amount, fmt = q.amount, q.format
    if fmt == "BinarySI":
        if -1024 < amount < 1024 or amount.denominator != 1:
            fmt = "DecimalSI"
        else:
            n, power = int(amount), 0
            while power < 6 and n % 1024 == 0 and n != 0:
                n //= 1024
                power += 1
            return f"{n}{_BINARY_SUFFIX.get(power, '')}"
    # Decimal: the largest exponent (a multiple of 3) that keeps the mantissa whole.
    if amount == 0:
        return "0"
    exponent = -9
    mantissa = amount * 10**9
    while mantissa.denominator == 1 and int(mantissa) % 1000 == 0 and exponent < 18:
        mantissa /= 1000
        exponent += 3
    mantissa_text = str(int(mantissa))
    if fmt == "DecimalExponent":
        return mantissa_text if exponent == 0 else f"{mantissa_text}e{exponent}"
    return f"{mantissa_text}{_EXPONENT_SUFFIX[exponent]}"


def readable_quantity(q: Quantity, *, down: bool = False) -> str:
    """``q`` as a person would write it, for explain's prose: the canonical text where it is short
    (``3500m``, ``4Gi``, ``5G``), and a byte count of more than four digits in binary units with at
    most one decimal (``5833945088`` is ``5.5Gi``). The decimal is rounded up, or down with ``down``,
    so that "needs 5.5Gi" and "lower it to ≤ 5.4Gi" both stay true."""
    canonical = format_quantity(q)
    amount = q.amount
    if amount.denominator != 1 or abs(amount) < 10_000 or not canonical.isdigit():
        return canonical
    power = 1
    while power < 6 and abs(amount) >= 1024 ** (power + 1):
        power += 1
    tenths = amount * 10 / 1024**power
    tenths = math.floor(tenths) if down else math.ceil(tenths)
    whole, tenth = divmod(tenths, 10)
    return f"{whole}{'.' + str(tenth) if tenth else ''}{_BINARY_SUFFIX[power]}"
