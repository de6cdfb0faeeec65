"""Error injection, warm-start replay and verification (docs/architecture.md, 'Injection and warm-start replay').

Modules: :mod:`.mutators` (offline mode-specific mutators), :mod:`.generate` (the
Generator protocol), :mod:`.toolcache`, :mod:`.executors` (the Executor protocol, the
builtin executor, plugins), :mod:`.cmd_executor` (JSON-lines subprocess executor),
:mod:`.replay` (warm start), :mod:`.verify`, :mod:`.inject` (end to end) and :mod:`.diff`.
"""
