"""The rule families. Importing this package registers every rule in the catalogue."""

from . import config, kubernetes, logic, manifests, meta, names, performance, scoring, style  # noqa: F401
