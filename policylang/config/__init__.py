"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), read as kube-scheduler reads its
--config: strict decoding against the v1 types (schema.py), kube-scheduler's validation
(validation.py), then the merge with the target version's default plugins (defaults.py) and the translation into .sched
profiles (read.py)."""
