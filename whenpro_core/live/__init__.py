"""Live: follow a running agent and attribute as it goes (docs/architecture.md, 'Data flow', ``live/``).

No UI here; a viewer (the TUI's follow view and incoming-traces list) subscribes to the
events below. Every event is a frozen dataclass from :mod:`whenpro_core.live.events`
with a ``kind`` (its JSON name) and a ``trace_id``; ``event_record(ev)`` gives its JSON
form.

Following a file (:mod:`whenpro_core.live.follow`)::

    follower = FileFollower(path)                 # native step lines, chat messages or OTLP lines
    async for ev in follower:                     # StepAdded / TraceReset / HeaderUpdated / LineError / Idle
        ...                                       # follower.trace() is the Trace so far
    follower.close()                              # ends the iteration (also: cancel the task)

    StepAdded(trace_id, step)                     # step.index == position; in order, no gaps
    TraceReset(trace_id, reason, kept, step_count)  # drop steps >= kept; StepAdded for kept.. follow
                                                  # reason: truncated | rotated | reordered
    HeaderUpdated(trace_id, fields)               # trace fields changed (outcome, final_answer, ...)
    LineError(trace_id, line, message, text)      # line skipped; following goes on
    Idle(trace_id, seconds)                       # once per quiet spell

Receiving OpenTelemetry exports (:mod:`whenpro_core.live.otlp_server`, :mod:`whenpro_core.live.store`)::

    rx = OtlpReceiver(LiveStore(folder), "127.0.0.1", 4318).start()   # rx.endpoint, rx.stop()
    sub = rx.store.subscribe()                    # thread-safe; `async for ev in sub` or sub.get(timeout)
    rx.store.traces()                             # [LiveTraceInfo(trace_id, path, in_memory, step_count,
                                                  #                service, updated)]
    rx.store.trace(trace_id)                      # the latest stored Trace (memory or disk)

    TraceStarted(trace_id, path, service, step_count)   # a new trace id; a TraceUpdated follows
    TraceUpdated(trace_id, path, step_count, kept, added)  # steps [0, kept) unchanged, then `added`
    TraceEvicted(trace_id, path)                  # left memory; still on disk; resumes on new spans
    ExportRejected("", status, reason)            # a refused request (nothing stored)
    ExportWarning(trace_id, message)              # accepted, values changed (nested too deep)
    TraceSetAside(trace_id, path, reason)         # a trace could not be written; spans kept at path

Judging live (:mod:`whenpro_core.live.judge_live`, :mod:`whenpro_core.live.session`)::

    judge = LiveJudge("heuristic" | "step-by-step", judge=make_judge(model), budget=Budget(...),
                      final_pass=True)
    async for ev in attribute_live(follower, judge, idle_timeout=30): ...   # follow + judge events
    async for ev in attribute_store(rx.store, lambda tid: LiveJudge(...)): ...  # per-trace judges
    # or drive it yourself: `async for ev in judge.update(trace)` after each change,
    # `async for ev in judge.finish(trace, reason)` at the end.

    StepJudged(trace_id, index, step, agent, decisive, mode, reason)   # one step-by-step call
    Suspect(trace_id, index, step, agent, mode, reason, protocol, confidence)
    DecisiveError(trace_id, index, step, agent, mode, reason, protocol, attribution)  # once per trace
    BudgetExhausted(trace_id, limit, usage)       # limit: calls | tokens | usd | context; judging stops
    JudgeFailed(trace_id, message)                # backend failed after retries; judging stops
    RunEnded(trace_id, reason, step_count)        # final_answer | outcome | root_span_ended | idle | closed
    ReplayTried(trace_id, step, agent, outcome, final_answer, detail)  # counterfactual final pass, one per step
    FinalVerdict(trace_id, attribution)           # the full pass (all-at-once with a model, or counterfactual)

For a viewer (the TUI's live views): :func:`whenpro_core.live.viewer.follow_live` is
``attribute_live`` that keeps following after the run ends, and
:class:`whenpro_core.live.listing.LiveListing` keeps the rows of an incoming-traces list
from the store's and the judges' events.

``index`` is a position in ``Trace.steps``; ``step`` is the coordinate users and judges
see. Event text is untrusted trace content: render it as plain text.
"""
