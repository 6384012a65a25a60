"""Consumable capacity (DRAConsumableCapacity, beta and on from v1.36): how much of a device's
capacity a request consumes, and whether it still fits beside what is allocated and being
allocated. Transcribed from k8s.io/dynamic-resource-allocation@v0.36.3 and @v0.37.2
structured/internal/incubating/consumable_capacity.go; v1.37 adds DRAFractionalCapacityRange
(a valid range whose min, max and step are whole milli-units is stepped in milli-units), turns
a request naming a capacity the device lacks into "does not fit" (v1.36: an error the caller
skips the device for), and refuses a negative or unrepresentable amount with an error.

Quantities are policylang's exact Quantity (nano-units): Go's Value() and MilliValue() round up,
as Quantity.value() and .milli() do. One approximation: upstream tells a request equal to the
policy's default by Go struct equality of the two quantities (their representation), here by
amount."""

from __future__ import annotations

from typing import Mapping, Optional

from ..api import model
from ..api.quantity import MAX_MILLI, Quantity

INT64_MAX = 2**63 - 1


class CapacityError(Exception):
    """The request cannot be compared with the device's capacity (upstream's error text)."""


def fits(consumed: Mapping[str, Quantity], request: Optional[model.CapacityRequirements],
         capacity: Mapping[str, model.DeviceCapacity], allocating: Mapping[str, Quantity],
         version: str, fractional: bool = False) -> bool:
    """CmpRequestOverCapacity: each capacity of the device, as much as the request consumes of
    it (a policy's default, or all of it, where the request names none) plus what is allocated
    (``consumed``) and being allocated (``allocating``), within the device's value and its
    request policy. Raises CapacityError where upstream returns an error. ``fractional``:
    DRAFractionalCapacityRange (v1.37)."""
    requests = request.requests if request is not None else {}
    if any(name not in capacity for name in requests):
        if version == "1.36":
            raise CapacityError("some requested capacity has not been defined")
        return False
    wanted = {}
    for name, cap in capacity.items():
        amount = _named(name, requests.get(name), cap, fractional, version)
        if version != "1.36" and amount.nanos < 0:
            raise CapacityError(f'capacity "{name}": capacity value is negative')
        wanted[name] = amount
        if version == "1.36" and not _checked(name, amount, cap, allocating, consumed, fractional):
            return False
    if version == "1.36":
        return True
    return all(_checked(name, wanted[name], cap, allocating, consumed, fractional) for name, cap in capacity.items())


def _checked(name, amount: Quantity, cap: model.DeviceCapacity, allocating, consumed, fractional: bool) -> bool:
    if _violates_policy(amount, cap.request_policy, fractional):
        return False
    total = amount + consumed.get(name, Quantity(0))
    if name in allocating:
        total = total + allocating[name]
    return not total > cap.value


def consumed_from_request(request: Optional[model.CapacityRequirements],
                          capacity: Mapping[str, model.DeviceCapacity], fractional: bool = False,
                          version: str = "1.37") -> dict[str, Quantity]:
    """GetConsumedCapacityFromRequest: what an allocation of the device consumes of each of
    its capacities."""
    requests = request.requests if request is not None else {}
    return {name: _named(name, requests.get(name), cap, fractional, version) for name, cap in capacity.items()}


def _named(name: str, requested, cap, fractional: bool, version: str) -> Quantity:
    """consumed_amount, its error wrapped with the capacity's name as v0.37.2 wraps it."""
    try:
        return consumed_amount(requested, cap, fractional, version)
    except CapacityError as err:
        raise CapacityError(f'capacity "{name}": {err}') from None


def consumed_amount(requested: Optional[Quantity], cap: model.DeviceCapacity, fractional: bool = False,
                    version: str = "1.37") -> Quantity:
    """calculateConsumedCapacity."""
    policy = cap.request_policy
    if requested is None:
        # fillEmptyRequest
        return policy.default if policy is not None and policy.default is not None else cap.value
    if policy is None:
        return requested
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(requested, policy.valid_range, fractional, version)
    if policy.valid_values:
        for valid in policy.valid_values:
            if not requested > valid:
                return valid
    return requested


def _round_up_range(requested: Quantity, valid: model.CapacityRequestPolicyRange, fractional: bool,
                    version: str) -> Quantity:
    if requested < valid.min:
        return valid.min
    if valid.step is None:
        return requested
    fmt = valid.step.format
    if fractional and _use_milli(valid):
        requested_milli = _safe_milli(requested)
        if requested_milli is None:
            raise CapacityError(f"capacity request cannot be represented in the device's range arithmetic: "
                                f"request {requested} is not a representable milli value")
        step, low = valid.step.milli(), valid.min.milli()
        added = requested_milli - low
        n = -(-added // step)
        if n > (INT64_MAX - low) // step:
            raise CapacityError(f"capacity request cannot be represented in the device's range arithmetic: "
                                f"rounding request {requested} up to the next step passes the milli-value range")
        milli = low + step * n
        return Quantity(milli // 1000, fmt) if milli % 1000 == 0 else Quantity(nanos=milli * 10**6, format=fmt)
    if version != "1.36" and requested.value() > INT64_MAX:
        raise CapacityError(f"capacity request cannot be represented in the device's range arithmetic: "
                            f"request {requested} exceeds MaxInt64")
    step, low = valid.step.value(), valid.min.value()
    added = requested.value() - low
    n = -(-added // step)
    if version != "1.36" and low >= 0 and n > (INT64_MAX - low) // step:
        raise CapacityError(f"capacity request cannot be represented in the device's range arithmetic: "
                            f"rounding request {requested} up to the next step passes MaxInt64")
    return Quantity(low + step * n, "BinarySI" if version == "1.36" else fmt)


def _violates_policy(amount: Quantity, policy: Optional[model.CapacityRequestPolicy], fractional: bool) -> bool:
    if policy is None:
        return False
    if policy.default is not None and amount == policy.default:
        return False
    if policy.valid_range is not None:
        valid = policy.valid_range
        if valid.max is not None and amount > valid.max:
            return True
        if valid.step is not None:
            if fractional and _use_milli(valid):
                requested = _safe_milli(amount)
                if requested is None:
                    return True
                step, low = valid.step.milli(), valid.min.milli()
            else:
                requested, step, low = amount.value(), valid.step.value(), valid.min.value()
            return (requested - low) % step != 0
        return False
    if policy.valid_values:
        return not any(amount == v for v in policy.valid_values)
    return False


def _use_milli(valid: model.CapacityRequestPolicyRange) -> bool:
    for i, q in enumerate((valid.min, valid.max, valid.step)):
        if q is None:
            continue
        milli = _safe_milli(q)
        if milli is None or (i == 2 and milli < 1):
            return False
    return True


def _safe_milli(q: Quantity) -> Optional[int]:
    """safeMilliValue: the quantity in whole milli-units, or None where it has finer digits (or
    does not fit an int64)."""
    milli = q.milli()
    if milli * 10**6 != q.nanos or abs(milli) > MAX_MILLI:
        return None
    return milli
