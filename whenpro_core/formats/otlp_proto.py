"""OTLP/protobuf trace exports (``ExportTraceServiceRequest``, the body an
OpenTelemetry SDK's OTLP/HTTP exporter posts to ``/v1/traces``) decoded into the same
:class:`~whenpro_core.formats.otlp.Span` objects as the OTLP/JSON reader, so both
encodings give equal traces: ids as lower-case hex, status codes as the enum names the
protobuf JSON mapping writes (``STATUS_CODE_ERROR``; unset is ``""``), ``bytesValue``
attributes as base64 text.

Parsing uses the ``opentelemetry-proto`` package (imported on first use).
"""

from __future__ import annotations

import base64
from typing import Any

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.otlp import Span


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return _attrs(v.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(v.bytes_value).decode("ascii")
    return getattr(v, kind)


def _attrs(items: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in items}


def decode_request(body: bytes) -> Any:
    """Parse an ``ExportTraceServiceRequest``; TraceFormatError when the bytes are not
    one."""
    from google.protobuf.message import DecodeError  # lazy: protobuf classes load only for protobuf bodies

    # lazy: protobuf classes load only for protobuf bodies
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        return ExportTraceServiceRequest.FromString(body)
    except (DecodeError, ValueError) as exc:
        raise TraceFormatError(
            f"not an OTLP protobuf export: {exc}", expected="an ExportTraceServiceRequest (application/x-protobuf)"
        ) from None


def spans_from_request(request: Any) -> list[Span]:
    """Every span of a parsed ``ExportTraceServiceRequest``; TraceFormatError names the
    span of a missing or malformed trace or span id."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Status  # lazy: protobuf classes load only for protobuf bodies

    out: list[Span] = []
    for i, rs in enumerate(request.resource_spans):
        resource = _attrs(rs.resource.attributes)
        for j, ss in enumerate(rs.scope_spans):
            scope = ss.scope.name
            for k, sp in enumerate(ss.spans):
                where = f"$.resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                if len(sp.trace_id) != 16:
                    raise TraceFormatError(
                        "missing or malformed traceId", json_path=f"{where}.traceId", expected="16 bytes"
                    )
                if len(sp.span_id) != 8:
                    raise TraceFormatError(
                        "missing or malformed spanId", json_path=f"{where}.spanId", expected="8 bytes"
                    )
                code = sp.status.code
                try:
                    status = Status.StatusCode.Name(code) if code else ""
                except ValueError:
                    status = str(code)
                out.append(
                    Span(
                        trace_id=sp.trace_id.hex(),
                        span_id=sp.span_id.hex(),
                        parent_span_id=sp.parent_span_id.hex() or None,
                        name=sp.name,
                        start_ns=sp.start_time_unix_nano,
                        end_ns=sp.end_time_unix_nano,
                        attributes=_attrs(sp.attributes),
                        events=[
                            {"name": ev.name, "attributes": _attrs(ev.attributes), "time_ns": ev.time_unix_nano}
                            for ev in sp.events
                        ],
                        status_code=status,
                        status_message=sp.status.message,
                        resource=resource,
                        scope=scope,
                        where=where,
                    )
                )
    return out


def spans_from_protobuf(body: bytes) -> list[Span]:
    """:func:`decode_request` then :func:`spans_from_request`."""
    return spans_from_request(decode_request(body))


__all__ = ["decode_request", "spans_from_protobuf", "spans_from_request"]
