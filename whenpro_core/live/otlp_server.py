"""An OTLP/HTTP trace receiver (``whenpro serve --otlp``; docs/architecture.md, 'Data flow', ``live/``).

An agent instrumented with the OpenTelemetry SDK (and a GenAI or OpenInference
instrumentation) exports to it with only the endpoint set, e.g.
``OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318``. It follows the OTLP/HTTP
specification (opentelemetry-proto ``docs/specification.md``, "OTLP/HTTP"):

* ``POST /v1/traces`` with ``Content-Type: application/x-protobuf`` (a binary
  ``ExportTraceServiceRequest``, parsed with ``opentelemetry-proto``) or
  ``application/json`` (OTLP/JSON: hex ids, lowerCamelCase); ``Content-Encoding: gzip``
  (every member of a multi-member body; other bytes after them are a 400) or none; ``Content-Length`` or chunked bodies.
* ``200`` with an ``ExportTraceServiceResponse`` in the request's encoding (with
  ``partialSuccess`` when spans were rejected over a trace's span cap); ``400`` for a
  malformed body (nothing of it is stored); ``404`` another path; ``405`` another method;
  ``411`` no length; ``413`` a body over ``max_body`` bytes (compressed or not); ``415``
  another content type or encoding; ``408`` a request not received whole within
  ``request_timeout`` seconds; ``503`` (with ``Retry-After``) when too many exports are
  in flight, too many connections are open (in all or from one client address) or too
  many body bytes are held. Error bodies are a ``google.rpc.Status`` in the request's
  encoding. A refused request's body is read (and dropped) before the answer, so the
  client gets the answer, not a TCP reset.

Safety: it binds to loopback unless ``allow_remote`` is set, and off loopback it needs a
token (given, or generated): every export must carry ``Authorization: Bearer <token>``
(401 otherwise; a token given on loopback is checked too). Traffic is plain HTTP, not
encrypted: :attr:`OtlpReceiver.client_note` says so with the header to set. On loopback it answers only
requests whose ``Host`` is a loopback name (no DNS rebinding from a web page), and
browsers cannot post to it without a CORS preflight it never grants. Bodies are capped
before and after decompression; a socket silent for ``socket_timeout`` seconds is closed,
and a whole request must arrive within ``request_timeout`` seconds
(:mod:`whenpro_core.live.admission`): slow clients hold no export slot (the slot is
taken once the body is in) and cannot hold a connection for longer than that.

The receiver is the standard library's ``ThreadingHTTPServer`` (HTTP/1.1 keep-alive),
which needs no further dependency and is enough for the export rates of agents; the
heavy work (rebuilding and writing traces) happens in the store's flusher thread.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import secrets
import socket
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson

from whenpro_core.errors import ConfigError, TraceFormatError
from whenpro_core.formats.base import LoadContext
from whenpro_core.formats.otlp import spans_of
from whenpro_core.formats.otlp_proto import spans_from_protobuf
from whenpro_core.live.admission import Admission, Deadlines
from whenpro_core.live.events import ExportRejected, ExportWarning
from whenpro_core.live.store import LiveStore
from whenpro_core.storage.jsonio import JSONObject

DEFAULT_HOST = "127.0.0.1"
#: The OTLP/HTTP default port.
DEFAULT_PORT = 4318
#: Largest request body accepted, in bytes (before and after decompression).
DEFAULT_MAX_BODY = 8 * 1024 * 1024
#: Seconds a connection has to deliver a whole request once the server waits for it.
DEFAULT_REQUEST_TIMEOUT = 30.0
#: Connections open at once (in all; from one client address).
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_MAX_PER_CLIENT = 64
#: Request body bytes held in memory at once, over all connections.
DEFAULT_MAX_BUFFERED = 64 * 1024 * 1024
TRACES_PATH = "/v1/traces"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_REQUEST = LoadContext(path=Path("<request>"))
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def parse_address(text: str | None) -> tuple[str, int]:
    """``HOST:PORT``, ``HOST``, ``:PORT`` or ``[v6]:PORT`` as (host, port); defaults
    127.0.0.1 and 4318. A ``HOST`` alone is an IP address or ``localhost`` (a bare word
    is more likely a mistyped port). ConfigError for a bad port or address."""
    text = (text or "").strip()
    host, port = DEFAULT_HOST, DEFAULT_PORT
    if not text:
        return host, port
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ConfigError(f"bad address {text!r}", expected="HOST:PORT (e.g. 127.0.0.1:4318)")
        host, rest = text[1:end], text[end + 1 :]
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif text.isdigit():
        host, port_text = DEFAULT_HOST, text
    else:
        host, port_text = text, ""
        if not _is_ip(host) and host.lower() != "localhost":  # "notaport": a mistyped port, not a host
            raise ConfigError(f"bad address {text!r}", expected="HOST:PORT (e.g. 127.0.0.1:4318)")
    host = host or DEFAULT_HOST
    if port_text:
        if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
            raise ConfigError(f"bad port {port_text!r}", expected="a number 0..65535 (0 picks a free port)")
        port = int(port_text)
    return host, port


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and addresses in 127.0.0.0/8 or ::1."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _status_proto(code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` {code, message} in protobuf wire format (two fields:
    varint 1, string 2), so error bodies need no googleapis package."""

    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            b, n = n & 0x7F, n >> 7
            out.append(b | (0x80 if n else 0))
            if not n:
                return bytes(out)

    msg = message.encode("utf-8")[:1024]
    return b"\x08" + varint(code) + b"\x12" + varint(len(msg)) + msg


#: gRPC status codes used in error bodies, by HTTP status.
_GRPC = {400: 3, 401: 16, 404: 5, 405: 12, 408: 4, 411: 3, 413: 8, 415: 3, 500: 13, 503: 14}


class _Rejected(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class OtlpReceiver:
    """The HTTP server in front of a :class:`~whenpro_core.live.store.LiveStore`.

    Args:
        store: where traces go (its flusher is started and stopped with the receiver).
        host, port: where to listen (port 0 picks a free one; see :attr:`port`).
        allow_remote: permit a non-loopback address (ConfigError otherwise).
        token: the bearer token exports must carry; off loopback one is generated when
            none is given (see :attr:`token`, :attr:`client_note`). ConfigError when empty.
        max_body: the request size limit in bytes.
        max_in_flight: exports decoded and stored at once; more get 503 with
            ``Retry-After: 1`` (the slot is taken once the body is read).
        socket_timeout: seconds a connection may stay silent.
        request_timeout: seconds a connection has to deliver a whole request (408 after).
        max_connections, max_per_client: connections open at once, in all and from one
            client IP address; more are answered 503 (``Retry-After``) and closed.
        max_buffered: request body bytes held in memory at once; over it, 503.

    Usage::

        with OtlpReceiver(LiveStore(folder)) as rx:
            print(rx.endpoint)          # http://127.0.0.1:4318/v1/traces
            sub = rx.store.subscribe()  # TraceStarted / TraceUpdated / ... events
    """

    def __init__(
        self,
        store: LiveStore,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        allow_remote: bool = False,
        token: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        max_in_flight: int = 32,
        socket_timeout: float = 30.0,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_per_client: int = DEFAULT_MAX_PER_CLIENT,
        max_buffered: int = DEFAULT_MAX_BUFFERED,
    ) -> None:
        if not is_loopback(host) and not allow_remote:
            raise ConfigError(
                f"refusing to listen on {host}, which is not a loopback address",
                expected="127.0.0.1 / localhost / ::1, or --allow-remote to receive from other machines",
            )
        self.store = store
        self.host = host
        self.max_body = max_body
        self.socket_timeout = socket_timeout
        self.request_timeout = request_timeout
        self.loopback_only = is_loopback(host)
        if token is not None and not token.strip():
            raise ConfigError("--token is empty", expected="a token exporters send as Authorization: Bearer TOKEN")
        #: The bearer token exports must carry (``None``: none needed, loopback only).
        self.token = token if token is not None else None if self.loopback_only else secrets.token_hex(24)
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self.admission = Admission(max_connections, max_per_client, max(max_buffered, max_body))
        self.deadlines = Deadlines()
        self._thread: threading.Thread | None = None
        handler = type("OtlpHandler", (_Handler,), {"receiver": self, "timeout": socket_timeout})
        server_cls = _Server6 if ":" in host else _Server
        try:
            self.server = server_cls((host, port), handler)
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}", expected="a free port (0 picks one)"
            ) from None
        self.server.daemon_threads = True
        #: Counters: requests answered 200, and rejected (any 4xx/5xx).
        self.stats = {"exports": 0, "rejected": 0}
        self._stats_lock = threading.Lock()

    @property
    def port(self) -> int:
        """The port actually bound."""
        return self.server.server_address[1]

    @property
    def endpoint(self) -> str:
        """The traces URL to give an exporter (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{TRACES_PATH}"

    @property
    def base_url(self) -> str:
        """The base URL (``OTEL_EXPORTER_OTLP_ENDPOINT``; exporters append /v1/traces)."""
        return self.endpoint.removesuffix(TRACES_PATH)

    @property
    def client_note(self) -> str:
        """What an exporter must send when a token is needed, and that traffic is not
        encrypted; empty when no token is needed."""
        if self.token is None:
            return ""
        return (
            f"exporters must send the token {self.token}, e.g. "
            f"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20{self.token}; traffic is unencrypted "
            "plain HTTP: spans and the token can be read on the network (use a TLS proxy or an SSH tunnel)"
        )

    def authorized(self, header: str | None) -> bool:
        """True when no token is needed or ``header`` (an ``Authorization`` value) carries it."""
        if self.token is None:
            return True
        return hmac.compare_digest((header or "").strip().encode(), f"Bearer {self.token}".encode())

    def start(self) -> OtlpReceiver:
        """Serve in a background thread (and start the store's flusher)."""
        self.store.start()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.server.serve_forever, kwargs={"poll_interval": 0.2}, name="whenpro-otlp", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, then flush and stop the store."""
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self.server.server_close()
        self.deadlines.close()
        self.store.stop()

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ one export

    def handle(self, content_type: str, encoding: str, body: bytes) -> tuple[bytes, JSONObject]:
        """Decode, validate and store one export body; returns the response body and a
        summary. Raises ``_Rejected`` (status, reason) on bad input."""
        if encoding == "gzip":
            body = self._gunzip(body)
        elif encoding not in ("", "identity"):
            raise _Rejected(415, f"unsupported Content-Encoding {encoding!r} (gzip or none)")
        try:
            if content_type == PROTOBUF:
                spans = spans_from_protobuf(body)
            else:
                try:
                    doc = orjson.loads(body) if body.strip() else {}
                except orjson.JSONDecodeError as exc:
                    raise TraceFormatError(f"not valid JSON: {str(exc).split(':')[0]}") from None
                if isinstance(doc, dict) and "resourceSpans" not in doc:
                    doc = {**doc, "resourceSpans": []}  # an empty export is valid
                spans = list(spans_of(doc, _REQUEST))
            result = self.store.ingest(spans)
        except TraceFormatError as exc:
            exc.path = None
            raise _Rejected(400, exc.one_line()) from None
        except RecursionError:
            raise _Rejected(400, "attributes nested too deeply") from None
        with self._stats_lock:
            self.stats["exports"] += 1
        partial = None
        if result.rejected:
            partial = (
                result.rejected,
                f"{result.rejected} spans over the limit of {self.store.max_spans_per_trace} spans a trace",
            )
        if result.warnings:  # OTLP: a partial success with 0 rejected carries warnings
            warning = "; ".join(result.warnings[:5]) + (
                f"; and {len(result.warnings) - 5} more" if len(result.warnings) > 5 else ""
            )
            partial = (partial[0], f"{partial[1]}; {warning}") if partial else (0, warning)
            self.store.bus.publish(ExportWarning(result.trace_ids[0] if len(result.trace_ids) == 1 else "", warning))
        if content_type == PROTOBUF:
            # lazy: protobuf classes load only for protobuf bodies
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

            resp = ExportTraceServiceResponse()
            if partial:
                resp.partial_success.rejected_spans, resp.partial_success.error_message = partial
            out = resp.SerializeToString()
        else:
            out = orjson.dumps(
                {"partialSuccess": {"rejectedSpans": str(partial[0]), "errorMessage": partial[1]}} if partial else {}
            )
        return out, {"spans": result.accepted, "traces": result.trace_ids}

    def _gunzip(self, body: bytes) -> bytes:
        """``body`` decompressed: every gzip member in turn (as ``gzip -d`` reads them),
        at most ``max_body`` bytes in all (413 over it); 400 for a bad or truncated
        member, or bytes after the last member that do not start another one."""
        out = bytearray()
        rest = body
        while rest:
            if not rest.startswith(b"\x1f\x8b"):
                raise _Rejected(400, f"bad gzip body: {len(rest)} bytes after the gzip data are not a gzip member")
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                out += d.decompress(rest, self.max_body + 1 - len(out))
            except zlib.error as exc:
                raise _Rejected(400, f"bad gzip body: {exc}") from None
            if len(out) > self.max_body or d.unconsumed_tail:
                raise _Rejected(413, f"body is over {self.max_body} bytes once decompressed")
            if not d.eof:
                raise _Rejected(400, "bad gzip body: truncated")
            rest = d.unused_data
        return bytes(out)

    def reject(self, status: int, reason: str) -> None:
        """Count and announce a refused request."""
        with self._stats_lock:
            self.stats["rejected"] += 1
        self.store.bus.publish(ExportRejected("", status, reason))


class _Server(ThreadingHTTPServer):
    # A deep accept queue: a burst of connections waits to be answered (503 when over
    # the limits) instead of being dropped or reset by the kernel.
    request_queue_size = 1024


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    receiver: OtlpReceiver
    protocol_version = "HTTP/1.1"
    # One send per response (headers and body buffered; flushed after each request) and
    # no Nagle delay: otherwise a small body after the headers waits for a delayed ACK.
    wbufsize = 64 * 1024
    disable_nagle_algorithm = True
    server_version = "whenpro-otlp"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # events and counters report what happened; no stderr noise

    def _reply(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, reason: str, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.receiver.reject(status, reason)
        code = _GRPC.get(status, 2)
        if content_type == PROTOBUF:
            body, ctype = _status_proto(code, reason), PROTOBUF
        else:
            body, ctype = orjson.dumps({"code": code, "message": reason}), JSON
        self._reply(status, body, ctype, extra)

    def _host_ok(self) -> bool:
        if not self.receiver.loopback_only:
            return True
        host = (self.headers.get("Host") or "").strip()
        if host.startswith("["):
            name = host[1 : host.find("]")] if "]" in host else host
        else:
            name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        return not host or is_loopback(name)

    def setup(self) -> None:
        super().setup()
        self.client = str(self.client_address[0]) if self.client_address else ""
        self.refused = self.receiver.admission.enter(self.client)
        self.reserved = 0

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.receiver.deadlines.unwatch(self.connection)
            if self.refused is None:
                self.receiver.admission.leave(self.client)

    def handle_one_request(self) -> None:
        # the whole request (line, headers, body) must come within request_timeout
        self.receiver.deadlines.watch(self.connection, self.receiver.request_timeout)
        super().handle_one_request()

    def _read(self, n: int, keep: bool) -> bytes:
        """``n`` body bytes (fewer when the client stopped or the deadline passed); with
        ``keep`` False they are read and dropped (a refused request), else they are held
        within the receiver's byte budget (_Rejected 503 when over it)."""
        if keep:
            if not self.receiver.admission.reserve(n):
                self._read(n, keep=False)
                raise _Rejected(503, "too many request bytes held; retry")
            self.reserved += n
            return self.rfile.read(n)
        left = n
        while left > 0:
            chunk = self.rfile.read(min(1 << 16, left))
            if not chunk:
                break
            left -= len(chunk)
        return b""

    def _body(self, keep: bool = True) -> bytes:
        """The request body (Content-Length or chunked), read whole before anything else
        happens; ``keep`` False reads it away. _Rejected for a bad, missing or too long
        length, an unfinished body (408 at the deadline) or the byte budget (503)."""
        limit = self.receiver.max_body
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._chunked(limit, keep)
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            raise _Rejected(411, "Content-Length or chunked encoding required")
        if not length.strip().isdigit():
            self.close_connection = True
            raise _Rejected(400, "bad Content-Length")
        n = int(length)
        if n > limit:
            self.close_connection = True
            self._read(n if n <= 4 * limit else 0, keep=False)  # so the client sees the 413, not a reset
            raise _Rejected(413, f"body of {length.strip()} bytes is over {limit} bytes")
        body = self._read(n, keep)
        if keep and len(body) < n:
            self._unfinished()
        return body

    def _chunked(self, limit: int, keep: bool) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            if not line:
                self._unfinished()
            try:
                size = int(line.split(b";")[0].strip() or b"x", 16)
            except ValueError:
                self.close_connection = True
                raise _Rejected(400, "bad chunked encoding") from None
            if size == 0:
                while self.rfile.readline(1024).strip():
                    pass  # trailers
                return b"".join(chunks)
            total += size
            if total > limit:
                self.close_connection = True
                raise _Rejected(413, f"body is over {limit} bytes")
            chunk = self._read(size, keep)
            if keep and len(chunk) < size:
                self._unfinished()
            chunks.append(chunk)
            self.rfile.readline(8)

    def _unfinished(self) -> None:
        self.close_connection = True
        if self.receiver.deadlines.unwatch(self.connection):
            raise _Rejected(408, f"request not received within {self.receiver.request_timeout:g} s")
        raise _Rejected(400, "body shorter than its length (the client stopped sending)")

    def _refuse_early(self, ctype: str) -> str | None:
        """Why a request is refused before its body is kept (host, path, type, too many
        connections), or ``None``; the caller reads the body away and answers. Headers
        cut short by the request deadline are a late request (408), whatever they lack."""
        if self.receiver.deadlines.passed(self.connection):
            return f"408 request not received within {self.receiver.request_timeout:g} s"
        if not self._host_ok():
            return "400 Host is not a loopback name"
        if self.path.split("?")[0] != TRACES_PATH:
            return f"404 no such endpoint (traces go to {TRACES_PATH})"
        if not self.receiver.authorized(self.headers.get("Authorization")):
            return "401 missing or wrong token (Authorization: Bearer TOKEN, as whenpro printed)"
        if ctype not in (PROTOBUF, JSON):
            return f"415 unsupported Content-Type {ctype!r} ({PROTOBUF} or {JSON})"
        if self.refused is not None:
            return f"503 {self.refused}; retry"
        return None

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        reply_type = PROTOBUF if ctype == PROTOBUF else JSON
        try:
            self._export(ctype, reply_type)
        except _Rejected as exc:
            retry = {"Retry-After": "1"} if exc.status == 503 else None
            self._error(exc.status, exc.reason, reply_type, retry)
        except Exception as exc:  # noqa: BLE001 - a bug or a full disk must not kill the server
            self._error(500, f"internal error: {type(exc).__name__}", reply_type)
        finally:
            self.receiver.admission.release(self.reserved)
            self.reserved = 0

    def _export(self, ctype: str, reply_type: str) -> None:
        early = self._refuse_early(ctype)
        if early is not None:
            self.close_connection = True
            with contextlib.suppress(_Rejected):  # the first reason is the one to give
                self._body(keep=False)
            status, reason = early.split(" ", 1)
            raise _Rejected(int(status), reason)
        body = self._body()
        self.receiver.deadlines.unwatch(self.connection)  # the request is in: the rest is our time
        if not self.receiver._slots.acquire(blocking=False):
            raise _Rejected(503, "busy; retry")
        try:
            encoding = (self.headers.get("Content-Encoding") or "").strip().lower()
            out, _summary = self.receiver.handle(ctype, encoding, body)
        finally:
            self.receiver._slots.release()
        self._reply(200, out, reply_type)

    def _not_allowed(self) -> None:
        self.close_connection = True
        self._error(405, "only POST is supported", JSON, {"Allow": "POST"})

    do_GET = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _not_allowed  # noqa: N815


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_MAX_BODY",
    "DEFAULT_PORT",
    "OtlpReceiver",
    "TRACES_PATH",
    "is_loopback",
    "parse_address",
]
