"""policylang profiles → what runs in a cluster: the KubeSchedulerConfiguration (v1) of their
stdlib part, the `extenders:` stanza that sends the team's own policies to `policylang serve`,
and the MutatingWebhookConfiguration that applies their `rule`s to pods (docs/deploy/README.md).

The stdlib part is written as the smallest change to v1.35's defaults that kube-scheduler merges
back into the same plugins (config/read.py merges exactly as upstream's mergePluginSet and MultiPoint
expansion); when no such diff gives the same plan, every plugin is listed explicitly behind
``disabled: [{name: "*"}]``. Either way the result is read back with config/read.py and compared with
the profile's plan before it is returned, so an export never silently schedules differently.
"""

from __future__ import annotations

import base64
import json

import attrs
import yaml

from .. import plan as P
from ..check import check
from ..compile import compile_all
from ..config.read import Configuration, profile_source
from ..diagnostics import InputError
from ..frozen import frozen
from ..plugins import registry
from ..program import load_program, stdlib_dir

API_VERSION = "kubescheduler.config.k8s.io/v1"
DEFAULT_URL = "https://policylang.policylang-system.svc:8443"
# Extender verbs: the paths `policylang serve` answers under the urlPrefix.
FILTER_VERB, PRIORITIZE_VERB, PREEMPT_VERB = "filter", "prioritize", "preempt"
WEBHOOK_PATH = "/mutate"


@frozen
class Export:
    scheduler_config: dict
    webhook_config: "dict | None"    # only when some profile has rules


def is_team(plugin: P.PluginPlan) -> bool:
    """A policy that is not the stdlib's (kube-scheduler cannot run it; the extender does)."""
    return plugin.name not in registry.plugins() and plugin.name not in registry.NO_DECISION


def team_plan(plan: P.Plan) -> P.Plan:
    """The part of a profile `serve` runs as the extender: the team's own policies."""
    return attrs.evolve(plan, plugins=tuple(p for p in plan.plugins if is_team(p)))


def stdlib_plan(plan: P.Plan) -> P.Plan:
    return attrs.evolve(plan, plugins=tuple(p for p in plan.plugins if not is_team(p)))


def _defaults(target) -> dict:
    """The default profile's plugins by name, for ``target``: their default params and the points
    they run (a plugin whose gate is off is not among them, as it is not in kube-scheduler's)."""
    plans = compile_all(check(load_program(stdlib_dir() / "default.sched")), target)
    return {p.name: p for p in plans["default-scheduler"].plugins}


def _points(p: P.PluginPlan) -> dict:
    """Which of the points the plugin implements this use of it runs."""
    return {"filter": bool(p.filters), "score": p.score is not None, "postFilter": p.postfilter}


def _args(p: P.PluginPlan, defaults: dict) -> dict:
    base = defaults[p.name].params if p.name in defaults else {}
    return _changed(p.params, base)


def _changed(value: dict, default: dict) -> dict:
    """The fields of ``value`` that differ from ``default``, nested objects field by field: v1's
    defaulting fills the rest back in, and kube-scheduler refuses some defaults written out (a
    scoringStrategy's requestedToCapacityRatio when its type is another)."""
    out = {}
    for key, v in value.items():
        d = default.get(key)
        if isinstance(v, dict) and isinstance(d, dict):
            if v != d:
                out[key] = _changed(v, d)
        elif key not in default or d != v:
            out[key] = v
    return out


def _plugins_diff(plugins: tuple, explicit: bool, default_plans: dict, target) -> dict:
    from ..config.defaults import default_plugins
    defaults = dict(default_plugins(target))
    enabled, disabled = [], []
    names = {p.name for p in plugins}
    if explicit:
        # Every plugin named, in the profile's order, behind `disabled: *` — with the defaults that
        # decide nothing around them: kube-scheduler refuses a profile without a queue sort plugin
        # (profile.go: "only one queue sort plugin required") or a binder.
        disabled.append({"name": "*"})
        enabled = ([{"name": name} for name in registry.NO_DECISION_BEFORE]
                   + [{"name": p.name, **({"weight": p.weight} if p.score is not None else {})} for p in plugins]
                   + [{"name": name} for name in registry.NO_DECISION_AFTER])
    else:
        for name in defaults:
            # A default plugin whose gate is off for the target is not among kube-scheduler's defaults.
            if name not in names and name not in registry.NO_DECISION and name in default_plans:
                disabled.append({"name": name})
        for p in plugins:
            if p.name not in defaults or (p.score is not None and p.weight != (defaults[p.name] or 1)):
                enabled.append({"name": p.name, **({"weight": p.weight} if p.score is not None else {})})
    out = {}
    if enabled or disabled:
        out["multiPoint"] = {k: v for k, v in (("enabled", enabled), ("disabled", disabled)) if v}
    for point in ("filter", "score", "postFilter"):
        # A point the plugin runs by default (VolumeBinding's score does not) that this use leaves out.
        off = [{"name": p.name} for p in plugins
               if p.name in default_plans and _points(default_plans[p.name])[point] and not _points(p)[point]]
        if off:
            out[point] = {"disabled": off}
    return out


def _profile(plan: P.Plan, explicit: bool, defaults: dict) -> dict:
    plugins = stdlib_plan(plan).plugins
    out: dict = {"schedulerName": plan.profile}
    diff = _plugins_diff(plugins, explicit, defaults, plan.target)
    if diff:
        out["plugins"] = diff
    config = [{"name": p.name, "args": {"apiVersion": API_VERSION, "kind": f"{p.name}Args", **args}}
              for p in plugins if (args := _args(p, defaults))]
    if config:
        out["pluginConfig"] = config
    if plan.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = plan.percentage_of_nodes_to_score
    return out


def _canonical(params) -> str:
    return json.dumps(params, sort_keys=True, default=repr)


def decision_key(plan: P.Plan) -> tuple:
    """What decides where a pod goes, by plugin name and params (the stdlib's policies compile
    alike for alike params): the filters in order, the PostFilters in order, the scores with their
    weights (their order only changes a sum)."""
    plugins = plan.plugins
    return (plan.profile, plan.percentage_of_nodes_to_score,
            tuple((p.name, _canonical(p.params)) for p in plugins if p.filters),
            tuple(p.name for p in plugins if p.postfilter),
            tuple(sorted((p.name, p.weight, _canonical(p.params))
                         for p in plugins if p.score is not None)))


def _read_back(profile: dict, target) -> P.Plan:
    """The plan kube-scheduler's reading of this profile gives, through config/read.py as --config reads it."""
    text = profile_source(profile, 0, Configuration("<export>", {"profiles": [profile]}, {}), {}, target)
    plans = compile_all(check(load_program("<export>.sched", text=text)), target)
    return plans[profile["schedulerName"]]


def _stdlib_profile(plan: P.Plan, defaults: dict) -> dict:
    want = decision_key(stdlib_plan(plan))
    for explicit in (False, True):
        profile = _profile(plan, explicit, defaults)
        if decision_key(_read_back(profile, plan.target)) == want:
            return profile
    raise InputError(f"profile {plan.profile}: its stdlib plugins cannot be written as a "
                     f"KubeSchedulerConfiguration that kube-scheduler reads back the same (their order?)")


def _tls(ca_bundle: "bytes | None") -> dict:
    return {"caData": base64.b64encode(ca_bundle).decode()} if ca_bundle else {}


def extender(plans: dict, url: str, ca_bundle: "bytes | None" = None,
             managed_resources: tuple = (), ignorable: bool = False) -> "dict | None":
    """The extender stanza for the profiles' team policies (None when they have none).

    One extender serves every profile (kube-scheduler's extenders are not per profile): `serve`
    picks the profile by the pod's schedulerName, and passes every node for a profile without team
    policies. Its weight is the sum of the team score plugins' weights, so that kube-scheduler's
    `Score × weight × 10` (MaxNodeScore / MaxExtenderPriority) gives back the plugins' weighted sum
    (docs/deploy/README.md, "Scores")."""
    team = [p for plan in plans.values() for p in team_plan(plan).plugins]
    if not any(p.filters or p.score is not None for p in team):
        return None     # no team policies, or only rules (the webhook's)
    out: dict = {"urlPrefix": url}
    if any(p.filters for p in team):
        out["filterVerb"] = FILTER_VERB
        out["preemptVerb"] = PREEMPT_VERB
    weights = [extender_weight(plan) for plan in plans.values()]
    if any(weights):
        out["prioritizeVerb"] = PRIORITIZE_VERB
        if len(set(w for w in weights if w)) > 1:
            raise InputError("profiles whose team scores weigh differently in all need one extender weight each; "
                             "export them one at a time (--profile NAME)")
        out["weight"] = max(weights)
    out["enableHTTPS"] = url.startswith("https://")
    if ca_bundle:
        out["tlsConfig"] = _tls(ca_bundle)
    out["httpTimeout"] = "5s"
    out["nodeCacheCapable"] = True
    out["managedResources"] = [{"name": r, "ignoredByScheduler": False} for r in managed_resources]
    out["ignorable"] = ignorable
    return out


def extender_weight(plan: P.Plan) -> int:
    return sum(p.weight for p in team_plan(plan).plugins if p.score is not None)


def webhook(plans: dict, url: str, ca_bundle: "bytes | None" = None, failure_policy: str = "Fail") -> "dict | None":
    if not any(p.rules for plan in plans.values() for p in plan.plugins):
        return None
    client: dict = {"url": url.rstrip("/") + WEBHOOK_PATH}
    if ca_bundle:
        client["caBundle"] = base64.b64encode(ca_bundle).decode()
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "policylang-rules"},
            "webhooks": [{"name": "rules.policylang.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "failurePolicy": failure_policy, "reinvocationPolicy": "Never", "timeoutSeconds": 5,
                          "clientConfig": client,
                          "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                     "resources": ["pods"], "scope": "Namespaced"}]}]}


def export(plans: dict, url: str = DEFAULT_URL, ca_bundle: "bytes | None" = None,
           managed_resources: tuple = (), ignorable: bool = False) -> Export:
    config: dict = {"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration",
                    "profiles": [_stdlib_profile(plan, _defaults(plan.target)) for plan in plans.values()]}
    ext = extender(plans, url, ca_bundle, managed_resources, ignorable)
    if ext is not None:
        config["extenders"] = [ext]
    return Export(config, webhook(plans, url, ca_bundle))


def to_yaml(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
