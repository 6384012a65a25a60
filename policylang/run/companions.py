"""The plugins' **companions**: engine code a stdlib plugin needs, one module of ``policylang.plugins``
per plugin, named as the policy's file (DefaultPreemption's is ``default_preemption.py``), found by
the plugin's name and imported when one of its hooks is first asked for. The lookup lives here, in
run/, which asks for the hooks; the companions live above run/ (they call its phases), so run/
names them only by their module's name. Nothing here parses a policy,
so a command that runs plans imports no parser, and one that only checks or lints imports no
companion (DefaultPreemption's pulls in the cluster state and numpy).

A companion may define:

- ``postfilter(exe, state, pod, pre, statuses, *, plugin, preemption, rng)``: its PostFilter, a
  ``PostFilterOutcome`` (or None to take no part), for a plugin whose policy says
  ``implements postFilter``.
- ``reserve(exe, state, pod, node_name, plugin)``: its Reserve, before ``simulate`` binds the pod;
  it may return the error that stops the binding (its PreBind refused by the API server).
- ``fix(state, pod, node, status)``: explain's changes that might let the pod onto a node this
  plugin alone rejected, smallest first, as ``edits.Change`` (one text for the same change
  found on several nodes).
- ``detail(state, pod, reason, node_names)``: what a reason amounts to across the nodes it
  rejects ("needs 4, the most free is 3500m on node-a"), or None.
- ``distance(state, pod, node_name, status)``: how far such a near miss is from fitting (0..1).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from types import ModuleType

from ..roots import snake_case, stdlib_dir

PACKAGE = "policylang.plugins"


@functools.cache
def _module(plugin: str) -> "ModuleType | None":
    stem = snake_case(plugin)
    if not (stdlib_dir() / f"{stem}.sched").is_file():    # no stdlib plugin (nor this package's other modules)
        return None
    name = f"{PACKAGE}.{stem}"
    return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None


def hook(plugin: str, name: str):
    """The function ``name`` of plugin ``plugin``'s companion, or None."""
    module = _module(plugin)
    # The module's namespace, not getattr: a missing hook is the common case (simulate asks
    # every plugin for its Reserve on every pod) and getattr makes an AttributeError for it.
    return vars(module).get(name) if module is not None else None
