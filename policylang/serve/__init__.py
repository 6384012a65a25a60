"""What runs in a cluster: `policylang export`'s manifests (export.py), kube-scheduler's extender
protocol (extender.py), the admission webhook (admission.py) and `policylang serve`, the HTTP
server around them (server.py). docs/deploy/README.md says how they are deployed."""
