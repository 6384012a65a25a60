"""Compiled profiles by name, through the cache: from a KubeSchedulerConfiguration, a .sched
file's profiles, or the stdlib (``load_plans``); and a file checked once while it is unchanged
(``check_file``). The Engine compiles its profiles here; so do `plan`, `test` and `lint`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def load_plans(profile: str | None = None, config: str | None = None, base=None, alone: bool = False,
               target=None) -> dict:
    """Plans by profile name: from a KubeSchedulerConfiguration file, a .sched file's
    profiles, a stdlib profile by name, or the stdlib default profile. A profile file's
    imports and uses stay under ``base`` (default: its own directory) and the stdlib.
    A .sched file without a profile is an error, or with ``alone`` a profile of its policy alone
    (``plan FILE``).

    The plans decide as ``target`` (target.py: a Kubernetes version and its feature gates;
    default v1.35's). Compiled plans are kept in the cache (cache.py) by the texts of every file
    they were compiled from and the target, so a second run with the same files only reads them
    back."""
    from pathlib import Path

    from .roots import stdlib_dir
    from .target import DEFAULT

    target = DEFAULT if target is None else target
    if config is not None:
        return _config_plans(config, target)

    if profile is None or not (profile.endswith(".sched") or Path(profile).is_file()):
        plans = _compiled(str(stdlib_dir() / "default.sched"), target=target)
        if profile is not None:
            from .diagnostics import InputError
            if profile not in plans:
                raise InputError(f"no profile named '{profile}' (the stdlib has: {', '.join(sorted(plans))})")
            return {profile: plans[profile]}
        return plans
    plans = _compiled(profile, base=base, target=target)
    if plans:
        return plans
    from .diagnostics import InputError
    from .program import load_program
    policy = load_program(profile, base=base).root_module.policy
    if policy is None:
        raise InputError("no profile and no policy here: nothing to schedule with", path=profile)
    use = f'use "./{Path(profile).name}"'
    if not alone:
        raise InputError(f"no profile here, only policy {policy.name}: name a file with a profile, or put it in one "
                         f"(`profile NAME {{ ... {use} }}`)", path=profile)
    text = f"profile {policy.name} {{\n    {use}\n}}\n"
    own = Path(profile).parent
    return _compiled(str(own / f"{policy.name} (alone).sched"), text, base or own, target=target)


def check_file(path: str | Path) -> None:
    """check(load_program(path)), raising PolicyError. A file that checked clean is noted in
    the cache with the texts of every file it reads; while none of them changes, it is not
    parsed or checked again (a pre-commit hook over unchanged files costs no checking)."""
    _through_cache("checked", str(path), None, None, _check_only, bool)


def _check_only(root: str, text, base):
    from .check import check
    from .compile import compile_all
    from .program import load_program

    from .target import VERSIONS, make_target

    program = load_program(root, text=text, base=base)
    # Compiled too: what only compiling finds (a plan too large, a param that cannot be computed)
    # is as much the file's error as a type error is. A profile whose uses depend on the target
    # (`use … when`) is compiled for every version at its default gates: two uses of one policy
    # that both hold for one of them are an error here, not only once someone targets it.
    checked = check(program)
    conditional = any(u.when is not None for _, p in program.profiles() for u in p.uses)
    for target in [make_target(v) for v in VERSIONS] if conditional else [None]:
        compile_all(checked) if target is None else compile_all(checked, target)
    return True, program


def _compile(root: str, text, base, target=None):
    from .check import check
    from .compile import compile_all
    from .program import load_program
    from .target import DEFAULT

    program = load_program(root, text=text, base=base)
    return compile_all(check(program), DEFAULT if target is None else target), program


def _compiled(root: str, text: str | None = None, base=None, target=None) -> dict:
    """compile_all(check(load_program(root, text, base)), target), through the cache."""
    import functools

    from .plan import Plan
    from .target import DEFAULT

    target = DEFAULT if target is None else target
    make = functools.partial(_compile, target=target)
    plans = _through_cache("plans", root, text, base, make, dict, target.key())
    if not all(isinstance(p, Plan) and p.target == target for p in plans.values()):
        return make(root, text, base)[0]
    return plans


def _through_cache(kind: str, root: str, text, base, make, expect, *options: str):
    """make(root, text, base)'s value, through the cache: the key is the root's name and text
    and the directories it may reach; the entry also names every other file the program read,
    and is used only while each reads the same."""
    import os
    from pathlib import Path

    from . import cache
    from .inputs import read_text
    from .roots import policy_roots

    def build():
        value, program = make(root, text, base)
        return value, {path: source for path, source in program.sources.items() if path != root}

    if not cache.enabled():
        return build()[0]
    try:
        source = read_text(root) if text is None else text
    except Exception:  # noqa: BLE001 - load_program reports an unreadable root as it should
        return build()[0]
    reach = policy_roots(base if base is not None else Path(root).parent if text is None else Path.cwd())
    key = cache.key(kind, root, os.path.realpath(root), source, "\0".join(reach), *options)
    return cache.cached_with_inputs(kind, key, build, expect)


def _config_plans(path: str, target=None) -> dict:
    """A KubeSchedulerConfiguration's plans. Its generated .sched text should always check, as the
    configuration was validated; if it does not, the error points into the user's file (the
    line of the plugin's args), never into the generated text."""
    from .config.read import configuration_source, read_configuration
    from .diagnostics import InputError, InputErrors, PolicyError

    config = read_configuration(path, target)
    text, lines = configuration_source(config, target)
    try:
        return _compiled(f"{path}.sched", text, target=target)
    except PolicyError as err:
        errors = []
        for d in err.diagnostics:
            span = lines.get(d.span.line) if d.span.path == f"{path}.sched" else None
            errors.append(InputError(d.message, path=path, obj=config.obj, line=span.line if span else None,
                                     column=span.column if span else None))
        raise InputErrors(errors) from None
