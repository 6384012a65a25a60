"""A batch or a change played forward on the cluster state, as kube-scheduler and the controllers
would: simulate (a batch of pending pods, in queue order), diff (one batch under two profiles),
whatif (cordon, drain, taint, lose or add nodes; budgets.py: PodDisruptionBudgets), capacity (how
many more copies fit; how many nodes a batch needs), and the utilisation each shows before and
after (utilisation.py)."""
