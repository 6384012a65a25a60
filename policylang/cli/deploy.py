"""The verbs that take a policy to a cluster: snapshot (a live cluster's state as a dump),
export (the KubeSchedulerConfiguration and webhook configuration that run a profile) and serve
(the extender and admission webhook)."""

from __future__ import annotations

import os
import sys

from ..profiles import load_plans
from ..diagnostics import InputError
from .common import (byte_size, check_state_target, cluster_arguments, live, positive_count, seconds, state_of,
                     target_arguments, target_of)


def register(sub) -> None:
    """snapshot, export and serve."""
    sn = sub.add_parser("snapshot", help="write a live cluster's state (or a dump's) as a dump every verb reads")
    cluster_arguments(sn)
    sn.add_argument("out", nargs="?", default="-", metavar="FILE",
                    help="where to write it (default: standard output); .json is JSON, anything else YAML")
    sn.add_argument("-n", "--namespace", help="read pending pods from this namespace only (bound pods always "
                                              "from all)")
    sn.add_argument("-o", "--output", choices=("yaml", "json"), help="the format (default: by FILE's extension)")
    sn.add_argument("--redact", action="store_true",
                    help="replace names, namespaces, label values and images by stand-ins (the same original, "
                         "the same stand-in, in the same order), for sharing in a bug report")
    sn.set_defaults(run=cmd_snapshot)

    ex = sub.add_parser("export", help="write the KubeSchedulerConfiguration (and webhook config) that runs a profile "
                                       "in a cluster, with `policylang serve` as its extender")
    ex.add_argument("profile", nargs="?", metavar="PATH|NAME")
    ex.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    ex.add_argument("-o", "--output", default="-", metavar="FILE",
                    help="where to write the KubeSchedulerConfiguration (default: standard output)")
    ex.add_argument("--webhook-output", metavar="FILE",
                    help="where to write the MutatingWebhookConfiguration of the profile's rules")
    ex.add_argument("--url", default=None, metavar="URL",
                    help="where kube-scheduler and the API server reach `policylang serve` "
                         "(default: https://policylang.policylang-system.svc:8443)")
    ex.add_argument("--ca-bundle", metavar="PEM",
                    help="the CA that signed serve's certificate (the extender's tlsConfig.caData, the webhook's "
                         "caBundle)")
    ex.add_argument("--managed-resource", action="append", default=[], metavar="NAME",
                    help="send only pods requesting this extended resource to the extender (repeatable; default: "
                         "every pod, which a filter such as GPU isolation needs)")
    ex.add_argument("--scheduler-kubeconfig", metavar="PATH",
                    help="the kubeconfig kube-scheduler connects with (clientConnection.kubeconfig; default: "
                         "in-cluster)")
    ex.add_argument("--ignorable", action="store_true",
                    help="schedule without the extender when it cannot be reached (default: the pod waits)")
    ex.set_defaults(run=cmd_export)

    sv = sub.add_parser("serve", help="serve a profile's team policies as kube-scheduler's extender and its rules as "
                                      "an admission webhook")
    sv.add_argument("--profile", metavar="PATH|NAME")
    sv.add_argument("--config", metavar="PATH", help="a KubeSchedulerConfiguration file")
    cluster_arguments(sv)
    sv.add_argument("--address", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    sv.add_argument("--port", type=int, default=8443, help="the port (default: 8443)")
    sv.add_argument("--tls-cert", metavar="PEM", help="serve HTTPS with this certificate (and --tls-key)")
    sv.add_argument("--tls-key", metavar="PEM")
    sv.add_argument("--client-ca", metavar="PEM", help="require client certificates signed by this CA")
    sv.add_argument("--max-request-size", type=byte_size, default=32 * 2**20, metavar="BYTES",
                    help="refuse larger request bodies with 413 (default 32M)")
    sv.add_argument("--decision-log", metavar="FILE", help="append one JSON line per decision to FILE")
    sv.add_argument("--reload-interval", type=float, default=2.0, metavar="SECONDS",
                    help="how often to look for a changed policy or dump (default 2; 0: never)")
    sv.add_argument("--executor", choices=("vector", "reference"), default="vector")
    sv.add_argument("--request-timeout", type=seconds, default=4.0, metavar="SECONDS",
                    help="the deadline on each request's policy work, after which it is answered with an error "
                         "(default 4: under kube-scheduler's 5 s extender httpTimeout)")
    sv.add_argument("--header-timeout", type=seconds, default=10.0, metavar="SECONDS",
                    help="close a connection whose request line and headers are not complete this long after it "
                         "opened (or after its next request's first byte), with 408 (default 10)")
    sv.add_argument("--body-timeout", type=seconds, default=10.0, metavar="SECONDS",
                    help="answer 408 and close when a request's body is not complete this long after its headers "
                         "(default 10)")
    sv.add_argument("--keep-alive-timeout", type=seconds, default=30.0, metavar="SECONDS",
                    help="close a kept-alive connection idle this long between requests (default 30)")
    sv.add_argument("--max-connections", type=positive_count, default=1000, metavar="N",
                    help="connections open at once; at the cap the one stalled longest (idle, sending its request "
                         "or not reading its answer) is closed to make room for a new one (default 1000, lowered "
                         "to fit the open-files limit)")
    target_arguments(sv)
    sv.set_defaults(run=cmd_serve)


def cmd_snapshot(args) -> int:
    import json

    import yaml

    from ..cluster.dump import dump_state
    from ..write import write_atomic

    to_stdout = args.out == "-"
    if not to_stdout:
        check_state_target(args.out, args.cluster or [])
    state = state_of(args, args.namespace)
    doc = dump_state(state)
    if args.redact:
        from ..cluster.redact import redact
        doc = redact(doc)
    as_json = args.output == "json" or (args.output is None and args.out.endswith(".json"))
    text = json.dumps(doc, indent=2) + "\n" if as_json else yaml.safe_dump(doc, sort_keys=False, width=120)
    if to_stdout:
        sys.stdout.write(text)
    else:
        write_atomic(args.out, text)
    return 0


def cmd_export(args) -> int:
    from ..serve.export import DEFAULT_URL, export, to_yaml
    from ..inputs import read_text
    from ..write import writable_target, write_atomic

    if args.config and args.profile:
        raise InputError("give a profile or --config, not both")
    for path in (args.output, args.webhook_output):
        if path not in (None, "-"):
            writable_target(path)
    ca = read_text(args.ca_bundle).encode() if args.ca_bundle else None
    result = export(load_plans(args.profile, args.config), args.url or DEFAULT_URL, ca,
                    tuple(args.managed_resource), args.ignorable)
    config = result.scheduler_config
    if args.scheduler_kubeconfig:
        config = {**config, "clientConnection": {"kubeconfig": os.path.abspath(args.scheduler_kubeconfig)}}
    text = to_yaml(config)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        write_atomic(args.output, text)
    if result.webhook_config is not None:
        hook = to_yaml(result.webhook_config)
        if args.webhook_output in (None, "-"):
            if args.output == "-":
                sys.stdout.write("---\n")
            sys.stdout.write(hook)
        else:
            write_atomic(args.webhook_output, hook)
    elif args.webhook_output:
        print("note: the profile has no rules, so no webhook configuration was written", file=sys.stderr)
    return 0


def cmd_serve(args) -> int:
    try:
        from ..serve.server import Listen, Options, run
    except ImportError as err:     # the `serve` extra is not installed
        raise InputError(f"policylang serve needs starlette, uvicorn and prometheus_client "
                         f"(pip install 'policylang[serve]'): {err}") from None
    if args.config and args.profile:
        raise InputError("give --profile or --config, not both")
    if args.cluster and live(args):
        raise InputError("give --cluster or a live cluster (--kubeconfig, --context, --in-cluster), not both")
    if not args.cluster and not live(args):
        raise InputError("give --cluster PATH, or a live cluster with --kubeconfig PATH, --context NAME or --in-cluster")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise InputError("--tls-cert and --tls-key go together")
    if args.client_ca and not args.tls_cert:
        raise InputError("--client-ca needs --tls-cert and --tls-key")
    for path in (args.tls_cert, args.tls_key, args.client_ca):
        if path and not os.path.isfile(path):
            raise InputError("no such file", path=path)
    options = Options(profile=args.profile, config=args.config, cluster=tuple(args.cluster or ()),
                      kubeconfig=args.kubeconfig, context=args.context or None, in_cluster=args.in_cluster,
                      executor=args.executor, max_request_bytes=args.max_request_size,
                      decision_log=args.decision_log, reload_interval=args.reload_interval,
                      request_timeout=args.request_timeout, body_timeout=args.body_timeout, target=target_of(args))
    return run(options, Listen(args.address, args.port, args.tls_cert, args.tls_key, args.client_ca,
                               keep_alive_timeout=args.keep_alive_timeout, header_timeout=args.header_timeout,
                               max_connections=args.max_connections))

