"""The stdlib plugins' registry (registry.py) and their Python companions: one module per plugin
that needs engine code, named as its policy's file (``DefaultPreemption`` →
``default_preemption.sched`` → ``default_preemption.py``), found by run/companions.py."""
