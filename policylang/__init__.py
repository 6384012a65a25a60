"""policylang: policy-as-code for Kubernetes scheduling.

The pipeline, in the order it runs::

    program = load_program("team.sched")      # parse (+ imports and used policies)
    checked = check(program)                  # names, types, stages
    plan = compile_profile(checked)           # the evaluation plan
    decision = schedule(Executable(plan), load_cluster(["cluster.yaml"]), pod)
"""

from .check import check
from .cluster.load import load_cluster, load_objects
from .compile import compile_all, compile_profile
from .program import load_program, stdlib_dir
from .run.schedule import Executable, schedule

__all__ = ["load_program", "check", "compile_profile", "compile_all", "Executable", "schedule",
           "load_cluster", "load_objects", "stdlib_dir", "load_plans"]


def load_plans(profile: str | None = None, config: str | None = None, base=None, alone: bool = False) -> dict:
    """Plans by profile name: from a KubeSchedulerConfiguration file, a .sched file's
    profiles, a stdlib profile by name, or the stdlib default profile. A profile file's
    imports and uses stay under ``base`` (default: its own directory) and the stdlib.
    A .sched file without a profile is an error, or with ``alone`` a profile of its policy alone
    (``plan FILE``)."""
    from pathlib import Path

    if config is not None:
        return _config_plans(config)

    if profile is None or not (profile.endswith(".sched") or Path(profile).is_file()):
        checked = check(load_program(stdlib_dir() / "default.sched"))
        plans = compile_all(checked)
        if profile is not None:
            from .diagnostics import InputError
            if profile not in plans:
                raise InputError(f"no profile named '{profile}' (the stdlib has: {', '.join(sorted(plans))})")
            return {profile: plans[profile]}
        return plans
    program = load_program(profile, base=base)
    plans = compile_all(check(program))
    if plans:
        return plans
    from .diagnostics import InputError
    policy = program.root_module.policy
    if policy is None:
        raise InputError("no profile and no policy here: nothing to schedule with", path=profile)
    use = f'use "./{Path(profile).name}"'
    if not alone:
        raise InputError(f"no profile here, only policy {policy.name}: name a file with a profile, or put it in one "
                         f"(`profile NAME {{ ... {use} }}`)", path=profile)
    text = f"profile {policy.name} {{\n    {use}\n}}\n"
    own = Path(profile).parent
    return compile_all(check(load_program(own / f"{policy.name} (alone).sched", text=text, base=base or own)))


def _config_plans(path: str) -> dict:
    """A KubeSchedulerConfiguration's plans. Its generated .sched text should always check, as the
    configuration was validated; if it does not, the error points into the user's file (the
    line of the plugin's args), never into the generated text."""
    from .config import configuration_source, read_configuration
    from .diagnostics import InputError, InputErrors, PolicyError

    config = read_configuration(path)
    text, lines = configuration_source(config)
    try:
        return compile_all(check(load_program(f"{path}.sched", text=text)))
    except PolicyError as err:
        errors = []
        for d in err.diagnostics:
            span = lines.get(d.span.line) if d.span.path == f"{path}.sched" else None
            errors.append(InputError(d.message, path=path, obj=config.obj, line=span.line if span else None,
                                     column=span.column if span else None))
        raise InputErrors(errors) from None
