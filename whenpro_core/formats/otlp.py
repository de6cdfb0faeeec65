"""OTLP/JSON, the container of OpenTelemetry trace files: decoding spans and the tree
helpers shared by the span conventions (:mod:`whenpro_core.formats.otel` for GenAI,
:mod:`whenpro_core.formats.openinference`).

``{"resourceSpans": [{"resource": {"attributes": [...]}, "scopeSpans": [{"scope": {...},
"spans": [{traceId, spanId, parentSpanId, name, kind, startTimeUnixNano,
endTimeUnixNano, attributes, events, status}]}]}]}`` (``opentelemetry-proto``
``ExportTraceServiceRequest`` in the OTLP/JSON encoding). Attributes are lists of
``{key, value: {stringValue|intValue|doubleValue|boolValue|arrayValue|kvlistValue|bytesValue}}``;
``intValue`` and times may be strings; ids are hex (OTLP/JSON) or base64 (the protobuf
JSON default); enums may be names or numbers.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from whenpro_core.formats.base import LoadContext, as_text, dict_or_empty, expect, redact_secrets
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Step


@dataclass
class Span:
    """One span, decoded from OTLP/JSON: ids in hex, times in ns, attributes as a dict."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[JSONObject] = field(default_factory=list)
    status_code: str = ""
    status_message: str = ""
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""
    depth: int = 0
    #: The span's JSON path in its export (``$.resourceSpans[0].scopeSpans[0].spans[2]``),
    #: for error messages; ``""`` when unknown.
    where: str = ""

    @property
    def failed(self) -> bool:
        """True when the span's status is ERROR."""
        return self.status_code in ("2", "STATUS_CODE_ERROR", "ERROR")

    def error_text(self) -> str | None:
        """``"<error.type>: <message>"`` for a failed span, else ``None``."""
        if not self.failed:
            return None
        msg = self.status_message
        for ev in self.events:
            if ev["name"] == "exception":
                msg = msg or as_text(ev["attributes"].get("exception.message"))
                kind = ev["attributes"].get("exception.type")
                if kind and not self.attributes.get("error.type"):
                    self.attributes.setdefault("error.type", kind)
        kind = self.attributes.get("error.type") or "error"
        return f"{kind}: {msg}" if msg else str(kind)

    @classmethod
    def from_raw(cls, raw: Any, resource: dict[str, Any] | None = None) -> Span | None:
        """The span back from its :meth:`raw` form (``Step.raw`` of an OpenTelemetry
        trace; secrets stay redacted), or ``None`` when ``raw`` is not one. The live
        store uses it to resume a trace it had evicted from memory."""
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("trace_id"), str)
            or not isinstance(raw.get("span_id"), str)
        ):
            return None
        status = dict_or_empty(raw.get("status"))
        try:
            return cls(
                trace_id=raw["trace_id"],
                span_id=raw["span_id"],
                parent_span_id=raw.get("parent_span_id") or None,
                name=str(raw.get("name") or ""),
                start_ns=int(raw.get("start_ns") or 0),
                end_ns=int(raw.get("end_ns") or 0),
                attributes=dict(raw.get("attributes") or {}),
                events=list(raw.get("events") or []),
                status_code=str(status.get("code") or ""),
                status_message=str(status.get("message") or ""),
                resource=dict(resource or {}),
                scope=str(raw.get("scope") or ""),
            )
        except (TypeError, ValueError):
            return None

    def raw(self) -> JSONObject:
        """The span as stored in ``Step.raw`` (secrets redacted)."""
        return redact_secrets(
            {
                "trace_id": self.trace_id,
                "span_id": self.span_id,
                "parent_span_id": self.parent_span_id,
                "name": self.name,
                "start_ns": self.start_ns,
                "end_ns": self.end_ns,
                "attributes": self.attributes,
                "events": self.events,
                "status": {"code": self.status_code, "message": self.status_message},
                "scope": self.scope,
            }
        )


def any_value(value: Any) -> Any:
    """Decode an OTLP ``AnyValue`` (``{"stringValue": "x"}`` -> ``"x"``, ``intValue``
    strings -> int, arrays and kvlists recursively). Unknown shapes are returned as is."""
    if not isinstance(value, dict) or len(value) != 1:
        return value if not isinstance(value, dict) or value else None
    ((kind, v),) = value.items()
    if kind == "intValue":
        try:
            return int(v)
        except (TypeError, ValueError):
            return v
    if kind == "arrayValue":
        return [any_value(x) for x in (v or {}).get("values", [])] if isinstance(v, dict) else v
    if kind == "kvlistValue":
        return attributes(v.get("values", []) if isinstance(v, dict) else [])
    return v


def attributes(items: Any) -> dict[str, Any]:
    """An OTLP attribute list ``[{key, value}]`` as a dict (a dict is passed through)."""
    if isinstance(items, dict):
        return items
    out: dict[str, Any] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            out[item["key"]] = any_value(item.get("value"))
    return out


_HEX = frozenset("0123456789abcdef")


def hex_id(value: Any) -> str | None:
    """A trace or span id as lower-case hex: hex (any length: OTLP/JSON writes hex) as
    is, else base64 (protobuf's JSON mapping) decoded, else the value as given (refused
    later, quoted as sent); empty -> None."""
    if not isinstance(value, str) or not value:
        return None
    low = value.lower()
    if _HEX.issuperset(low):
        return low
    try:
        return base64.b64decode(value, validate=True).hex() or None
    except (binascii.Error, ValueError):
        return value


def _nanos(value: Any, ctx: LoadContext, where: str) -> int:
    if value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ctx.error("not a time in nanoseconds", where, "an integer or a string of digits") from None


def spans_of(doc: Any, ctx: LoadContext, where: str = "$") -> Iterator[Span]:
    """Every span of one OTLP/JSON document; TraceFormatError names the JSON path of a
    malformed resource, scope or span."""
    expect(doc, dict, ctx, where, 'an OTLP document {"resourceSpans": [...]}')
    rss = expect(doc.get("resourceSpans"), list, ctx, f"{where}.resourceSpans", "a list of resource spans")
    for i, rs in enumerate(rss):
        rw = f"{where}.resourceSpans[{i}]"
        expect(rs, dict, ctx, rw, "a resource spans object")
        res = dict_or_empty(rs.get("resource"))
        resource = attributes(res.get("attributes"))
        scopes = rs.get("scopeSpans", rs.get("instrumentationLibrarySpans", []))
        expect(scopes, list, ctx, f"{rw}.scopeSpans", "a list of scope spans")
        for j, ss in enumerate(scopes):
            sw = f"{rw}.scopeSpans[{j}]"
            expect(ss, dict, ctx, sw, "a scope spans object")
            scope = dict_or_empty(ss.get("scope"))
            spans = expect(ss.get("spans", []), list, ctx, f"{sw}.spans", "a list of spans")
            for k, sp in enumerate(spans):
                yield _span(sp, resource, str(scope.get("name") or ""), ctx, f"{sw}.spans[{k}]")


def _span(sp: Any, resource: JSONObject, scope: str, ctx: LoadContext, where: str) -> Span:
    expect(sp, dict, ctx, where, "a span object")
    trace_id, span_id = hex_id(sp.get("traceId")), hex_id(sp.get("spanId"))
    if trace_id is None:
        raise ctx.error("missing traceId", f"{where}.traceId", "a hex trace id")
    if span_id is None:
        raise ctx.error("missing spanId", f"{where}.spanId", "a hex span id")
    name = sp.get("name", "")
    if not isinstance(name, str):
        raise ctx.error("wrong type", f"{where}.name", "the span name as a string")
    events = []
    for n, ev in enumerate(expect(sp.get("events") or [], list, ctx, f"{where}.events", "a list of events")):
        expect(ev, dict, ctx, f"{where}.events[{n}]", "a span event {name, attributes}")
        events.append(
            {
                "name": str(ev.get("name", "")),
                "attributes": attributes(ev.get("attributes")),
                "time_ns": _nanos(ev.get("timeUnixNano"), ctx, f"{where}.events[{n}].timeUnixNano"),
            }
        )
    status = dict_or_empty(sp.get("status"))
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=hex_id(sp.get("parentSpanId")),
        name=name,
        start_ns=_nanos(sp.get("startTimeUnixNano"), ctx, f"{where}.startTimeUnixNano"),
        end_ns=_nanos(sp.get("endTimeUnixNano"), ctx, f"{where}.endTimeUnixNano"),
        attributes=attributes(sp.get("attributes")),
        events=events,
        status_code=str(status.get("code", "")),
        status_message=as_text(status.get("message")),
        resource=resource,
        scope=scope,
        where=where,
    )


def order_spans(spans: list[Span]) -> list[Span]:
    """Spans sorted by start time (parents before children on ties), with ``depth`` set
    from the parent chain (a span whose parent is not in the file is a root)."""
    by_id = {s.span_id: s for s in spans}
    for s in spans:
        depth, seen, cur = 0, {s.span_id}, s
        while cur.parent_span_id in by_id and cur.parent_span_id not in seen:
            seen.add(cur.parent_span_id)
            cur = by_id[cur.parent_span_id]
            depth += 1
        s.depth = depth
    return sorted(spans, key=lambda s: (s.start_ns, s.depth))


def enclosing(span: Span, by_id: dict[str, Span], test: Callable[[Span], bool]) -> Span | None:
    """The nearest span (``span`` itself or an ancestor) for which ``test`` holds."""
    seen: set[str] = set()
    cur: Span | None = span
    while cur is not None and cur.span_id not in seen:
        if test(cur):
            return cur
        seen.add(cur.span_id)
        cur = by_id.get(cur.parent_span_id or "")
    return None


def base_step(i: int, span: Span, agent: str, kind: str) -> Step:
    """A step for ``span`` with the tree metadata every span convention shares."""
    meta = {
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
        "depth": span.depth,
        "name": span.name,
        "start_ns": span.start_ns,
        "duration_ms": round((span.end_ns - span.start_ns) / 1e6, 3) if span.end_ns else None,
    }
    return Step(index=i, coord=str(i), agent=agent, kind=kind, error=span.error_text(), meta=meta, raw=span.raw())
