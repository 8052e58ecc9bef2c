"""The gRPC edge of every Paiju service: what every request of every method passes, a wrapper around each method's
handler made once, when the handler is registered (`paiju.platform.serving.build_server`; `Edge` is also a server
interceptor, wrapping each method once too). Nothing that stays the same from call to call is worked out again per
call: the method's policy, limits and request type are settled in the wrapper.

In order, for each call of a `paiju.v1` service:

1. **Readiness.** While a dependency the service needs is unreachable (NATS, PostgreSQL), every call is answered
   ``UNAVAILABLE`` / ``DEPENDENCY_UNAVAILABLE`` at once, with a `RetryInfo`: nothing half-done, no long timeout.
2. **Decoding.** The request's bytes are decoded here (the method's own deserializer is not used), so bytes that
   are not a message of the request type are refused as ``INVALID_ARGUMENT`` / ``MALFORMED_MESSAGE`` instead of
   gRPC's own ``INTERNAL``.
3. **Validation.** The request is checked against the constraints the protos declare (``buf.validate``
   annotations, enforced by protovalidate); violations are ``INVALID_ARGUMENT`` / ``INVALID_REQUEST`` with a
   `google.rpc.BadRequest` naming each field. Bytes found valid are remembered for a while (the same read from
   every seat of a game is checked once).
4. **Authentication.** Except for the methods a service declares public, the bearer token is checked once here
   and the caller's identity is made available to the handler (`caller`); a method the service's policy reserves
   for some roles is refused ``ROLE_REQUIRED`` here to anyone else.
5. **Limits.** The service's rate limits (`paiju.platform.limits`) for the method, by client address and by
   account; a stream also holds one of a limited number of open streams until it ends. The client address is the
   connection's, unless a gateway the service trusts for it (`Policy.forwarders`: the lobby trusts the web view)
   names the client it calls for (`client_peer`).
6. **Answers.** A `Refused` raised by the handler becomes its status: the code that goes with its reason, its
   message, and a `google.rpc.Status` trailer with an `ErrorInfo` and its details. A dependency failing mid-call
   is ``UNAVAILABLE``; anything else unexpected is ``INTERNAL`` / ``INTERNAL_ERROR`` with a reference to quote,
   logged with its traceback — never ``UNKNOWN``, and never internals in the message.

A stream of calls (`CallStream`: the engine's ``ActStream``) passes the edge twice over: the stream with its first
request (readiness, the token, one of its open streams), then each request as one call of the unary method it stands
for (all six steps, that method's limits), whose answer or refusal is one message of the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import ipaddress
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol, TypeAlias

import asyncpg
import grpc
import nats.errors
import nats.js.errors
import protovalidate
import structlog
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from paiju.platform import repeats
from paiju.platform.errors import DOMAIN, Contention, Reason, Refused, Unavailable, retry_after
from paiju.platform.tokens import Role
from paiju.v1 import errors_pb2

CLIENT_ADDRESS = "paiju-client-address"
"""Call metadata: the IP address of the client a gateway makes the call for (a browser, for the web view), as text.
It is believed only when the call also carries `FORWARDER`, a token of a role the service trusts for it; from anyone
else it is ignored, and the connection's address counts."""
FORWARDER = "paiju-forwarder"
"""Call metadata: ``Bearer <token>`` of the gateway vouching for `CLIENT_ADDRESS` (the web view's own token, role
web). Apart from ``authorization``, which carries the client's own token (a browser's session) when it has one."""
MAX_ADDRESS_CHARS = 45
"""The longest IP address in text (an IPv6 address with an IPv4 tail)."""

log = structlog.get_logger("paiju.edge")

STATUS_DETAILS = "grpc-status-details-bin"
PACKAGE = "/paiju.v1."
"""Only the methods of Paiju's own services pass the edge (health checking and reflection are gRPC's)."""
RETRY_UNAVAILABLE_SECONDS = 1.0
MAX_VIOLATIONS = 10
"""The field violations a refusal lists (with "and N more")."""
MAX_TEXT = 200
"""The longest field path or description a violation shows."""
MAX_MESSAGE = 1000
"""The longest message a refusal carries (the status trailer stays small whatever the request)."""


def _codes() -> dict[Reason, grpc.StatusCode]:
    by_number = {code.value[0]: code for code in grpc.StatusCode}
    codes = {}
    for value in errors_pb2.ErrorReason.DESCRIPTOR.values:
        if value.number:
            codes[Reason(value.name)] = by_number[value.GetOptions().Extensions[errors_pb2.status_code]]
    return codes


CODES: dict[Reason, grpc.StatusCode] = _codes()
"""The gRPC status code of each reason, as the contract declares it (the `status_code` option of each `ErrorReason`
value in errors.proto)."""

DEPENDENCY_ERRORS: tuple[type[BaseException], ...] = (
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionDrainingError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.NoServersError,
    nats.errors.NoRespondersError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.StaleConnectionError,
    nats.errors.TimeoutError,
    nats.errors.UnexpectedEOF,
    nats.js.errors.ServiceUnavailableError,
    nats.js.errors.NoStreamResponseError,  # a stream or bucket without a leader (a node lost, an election)
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.CannotConnectNowError,
    ConnectionError,
    TimeoutError,
)
"""Exceptions that mean a dependency (NATS, PostgreSQL) failed the call, not the request: UNAVAILABLE."""
DEPENDENCY_GONE: tuple[type[BaseException], ...] = (Unavailable, *DEPENDENCY_ERRORS)
"""Everything that means a dependency is away: its libraries' errors and Paiju's own `Unavailable`."""


# --- who is calling ------------------------------------------------------------------------------------------

_CALLER: contextvars.ContextVar[Any] = contextvars.ContextVar("paiju_caller")
_CONTEXT: contextvars.ContextVar[Any] = contextvars.ContextVar("paiju_call", default=None)


def caller() -> Any:
    """The identity the edge authenticated for the call being handled (the service's `Authenticator` made it)."""
    try:
        return _CALLER.get()
    except LookupError:
        raise Refused(Reason.TOKEN_MISSING, "send 'authorization: Bearer <token>'") from None


def peer() -> str:
    """The address of the client of the call being handled (gRPC's peer string, e.g. ``ipv4:127.0.0.1:51234``):
    the connection's, or the address a trusted gateway named for the call (``ipv4:203.0.113.7:0``, see
    `client_peer`)."""
    forwarded = _PEER.get()
    if forwarded is not None:
        return forwarded
    context = _CONTEXT.get()
    return str(context.peer() or "") if context is not None else ""


_PEER: contextvars.ContextVar[str | None] = contextvars.ContextVar("paiju_peer", default=None)


def forwarded_peer(value: Any) -> str:
    """A `CLIENT_ADDRESS` value as a peer string (``ipv4:203.0.113.7:0``, ``ipv6:[2001:db8::1]:0``; an IPv4 address
    written as IPv6, ``::ffff:203.0.113.7``, as the IPv4 one), or `Refused` (INVALID_REQUEST) when it is not one IP
    address: empty, longer than an address, with a zone, a port or anything else beside it."""
    text = value if isinstance(value, str) else ""
    found: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None
    if 0 < len(text) <= MAX_ADDRESS_CHARS and "%" not in text:
        with contextlib.suppress(ValueError):
            found = ipaddress.ip_address(text)
    if found is None:
        raise Refused(
            Reason.INVALID_REQUEST,
            f"the {CLIENT_ADDRESS} metadata must be one IP address",
            {"field": CLIENT_ADDRESS},
        )
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        found = found.ipv4_mapped
    return f"ipv4:{found}:0" if found.version == 4 else f"ipv6:[{found}]:0"


def client_peer(
    context: Any, identify: Callable[[Iterable[tuple[str, Any]]], Any] | None, forwarders: Collection[Role]
) -> str:
    """The peer a call's per-address limits count: the connection's, or the `CLIENT_ADDRESS` of a call whose
    `FORWARDER` token ``identify`` finds of one of the ``forwarders`` roles. A `CLIENT_ADDRESS` without such a token
    (none, one that does not verify, a player's, a bot runner's) is ignored: nobody chooses the address they are
    counted by. A trusted gateway's address that is not one IP address is refused (INVALID_REQUEST)."""
    connection = str(context.peer() or "")
    if identify is None or not forwarders:
        return connection
    address = forwarder = None
    for key, value in context.invocation_metadata() or ():
        if key == CLIENT_ADDRESS:
            address = value
        elif key == FORWARDER:
            forwarder = value
    if address is None or not isinstance(forwarder, str):
        return connection
    try:
        who = identify((("authorization", forwarder),))
    except Refused:
        return connection
    if getattr(who, "role", None) not in forwarders:
        return connection
    return forwarded_peer(address)


class Authenticator(Protocol):
    """Who a call's metadata says the caller is; raises `Refused` (TOKEN_MISSING, TOKEN_INVALID...) otherwise."""

    def identify(self, metadata: Iterable[tuple[str, Any]] | None) -> Any: ...


class Limits(Protocol):
    """A service's rate limits (see `paiju.platform.limits`): `check` raises `Refused` (RATE_LIMITED)."""

    def keys_for(self, method: str, *, open: bool = False) -> frozenset[str]:
        """What ``method``'s limits count calls (``open``: open streams) by: ``address``, ``account``, ``name``
        (none: the method is not limited, and the edge does not ask)."""
        ...

    def check(self, method: str, address: str, account: str | None, request: Any = None) -> None: ...

    def stream(self, method: str, address: str, account: str | None) -> AbstractAsyncContextManager[None]: ...

    def hold(self, method: str, address: str, account: str | None) -> Any:
        """Take one of the open streams the limits allow (`Refused` otherwise); what to `release` when it ends."""
        ...

    def release(self, held: Any) -> None: ...


# --- statuses ------------------------------------------------------------------------------------------------


def pack(message: Message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def status_of(refused: Refused) -> grpc.Status:
    """The gRPC status of a refusal: its reason's code, its message, and the details trailer (INVALID_REQUEST always
    with a BadRequest: the field the metadata names, or the request as a whole)."""
    converted: grpc.Status = rpc_status.to_status(rich_status(refused))
    return converted


def rich_status(refused: Refused) -> status_pb2.Status:
    """A refusal as the `google.rpc.Status` its call's trailer carries (`status_of`), or a stream of calls sends in
    its answer (`CallStream`)."""
    code = CODES[refused.reason]
    metadata = {key[:MAX_TEXT]: value[:MAX_TEXT] for key, value in refused.metadata.items()}
    info = error_details_pb2.ErrorInfo(reason=refused.reason.value, domain=DOMAIN, metadata=metadata)
    extra = list(refused.details)
    message = refused.message[:MAX_MESSAGE]
    if refused.reason is Reason.INVALID_REQUEST and not any(isinstance(d, error_details_pb2.BadRequest) for d in extra):
        request = error_details_pb2.BadRequest()
        request.field_violations.add(field=metadata.get("field", ""), description=message[:MAX_TEXT])
        extra.append(request)
    details = [pack(info), *(pack(d) for d in extra)]
    return status_pb2.Status(code=code.value[0], message=message, details=details)


def role_required(*roles: Role) -> Refused:
    """ROLE_REQUIRED: the call needs a token of one of ``roles`` (metadata ``required``: their names)."""
    names = " or ".join(role.value for role in roles)
    return Refused(Reason.ROLE_REQUIRED, f"this call needs a {names} token", {"required": names})


def unavailable(what: str) -> Refused:
    """DEPENDENCY_UNAVAILABLE naming the dependency by its kind (NATS, PostgreSQL, the engine; ``what`` is the
    service's name for it, e.g. ``nats:GAMES``, kept in the metadata)."""
    kind = "NATS" if what.startswith("nats") else "PostgreSQL" if what.startswith("postgres") else what
    return Refused(
        Reason.DEPENDENCY_UNAVAILABLE,
        f"the service cannot reach {kind} right now: try again shortly (a change retried with the same command id is"
        " made once)",
        {"dependency": what},
        (retry_after(RETRY_UNAVAILABLE_SECONDS),),
    )


NOT_THE_CLIENTS = frozenset(
    r for r in Reason if CODES.get(r) in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.RESOURCE_EXHAUSTED)
) | {Reason.ROLE_REQUIRED}
"""Refusals a downstream service gives to *our* call (its token, its role, its rate): passed on as UNAVAILABLE, never
as the client's own (a client told TOKEN_EXPIRED would sign in again, in vain)."""


def refusal_of_rpc_error(error: grpc.aio.AioRpcError, what: str) -> Refused:
    """A downstream service's refusal passed on as ours (same reason and details), or UNAVAILABLE when the
    downstream service could not be reached or answered past its deadline."""
    code = error.code()
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
        return unavailable(what)
    for key, value in error.trailing_metadata() or ():
        if key == STATUS_DETAILS and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            info = error_details_pb2.ErrorInfo()
            others: list[Any] = []
            for detail in status.details:
                if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                    detail.Unpack(info)
                else:
                    others.append(detail)
            if info.domain == DOMAIN and info.reason in Reason.__members__:
                reason = Reason(info.reason)
                if reason in NOT_THE_CLIENTS:
                    break  # our own credentials or budget with the other service: not the client's to fix
                return Refused(reason, status.message, dict(info.metadata), tuple(others))
    return unavailable(what)


def field_path(violation: Any) -> str:
    """A protovalidate violation's field as a path (``seats[2].player_id``)."""
    parts: list[str] = []
    for element in violation.proto.field.elements:
        part = element.field_name or str(element.field_number)
        subscript = element.subscript
        if subscript is not None and subscript.field is not None:
            value = subscript.value
            part += f"[{value!r}]" if isinstance(value, str) else f"[{value}]"
        parts.append(part)
    return ".".join(parts)


def bad_request(violations: Iterable[Any]) -> Refused:
    """INVALID_REQUEST with a BadRequest naming the first `MAX_VIOLATIONS` violations (a request of thousands of bad
    items is answered in a few hundred bytes, not in megabytes of trailers)."""
    request = error_details_pb2.BadRequest()
    described: list[str] = []
    every = list(violations)
    for violation in every[:MAX_VIOLATIONS]:
        path = field_path(violation)[:MAX_TEXT]
        message = (violation.proto.message or violation.proto.rule_id)[:MAX_TEXT]
        request.field_violations.add(field=path, description=message, reason=violation.proto.rule_id[:MAX_TEXT])
        described.append(f"{path}: {message}" if path else message)
    more = len(every) - MAX_VIOLATIONS
    if more > 0:
        described.append(f"and {more} more")
    return Refused(Reason.INVALID_REQUEST, "invalid request: " + "; ".join(described), details=(request,))


# --- the edge ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Policy:
    """What the edge does for one server."""

    authenticator: Authenticator | None = None
    """Checks the bearer token of every method but the public ones (``None``: the service authenticates)."""
    public: Collection[str] = ()
    """Method names (``Register``) that need no token."""
    roles: Mapping[str, Collection[Role]] = field(default_factory=dict)
    """The roles a method's caller must have (``CreateGame``: service or admin), checked here once the token is:
    ``ROLE_REQUIRED`` otherwise. Methods not named take any authenticated caller (their handler decides)."""
    limits: Limits | None = None
    forwarders: Collection[Role] = ()
    """The roles of the gateways whose `FORWARDER` token makes a call's `CLIENT_ADDRESS` the client's address (the
    lobby: the web view's, role web); from anyone else that metadata is ignored."""
    ready: Callable[[], str | None] | None = None
    """The dependency the service is waiting for (``None``: all reachable)."""


class Validator(Protocol):
    """What the edge asks of protovalidate's `Validator`: the violations of a message (none: valid)."""

    def collect_violations(self, message: Any) -> Sequence[Any]: ...


_VALIDATOR: list[protovalidate.Validator] = []


def shared_validator() -> protovalidate.Validator:
    """The process's one protovalidate `Validator`: it compiles the rules of each message type the first time it
    sees the type and keeps them, so every edge of the process shares what it compiled."""
    if not _VALIDATOR:
        _VALIDATOR.append(protovalidate.Validator())
    return _VALIDATOR[0]


Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Record: TypeAlias = Callable[[Any, float, bool], None]
"""Told of a call once it has ended: its context, when it started (`time.perf_counter`), whether it raised."""
VALID_REMEMBERED = 2048
"""Valid request bytes each method remembers (see `Edge._admission`)."""
MAX_REMEMBERED_BYTES = 256
"""The longest request remembered valid (the reads' requests are a few dozen bytes)."""


@dataclass(frozen=True)
class CallStream:
    """The behaviour of a bidirectional streaming method that is a stream of calls of a unary method (``each``): each
    request on the stream holds one call's request (``call``) and is admitted by the edge as that call is (decoding,
    validation, the token, ``each``'s rate limits), then handled by ``each``'s handler (``handler``); its answer, or
    the refusal the call would have ended with, goes back on the stream as one message (``result``: the call's
    request, or ``None`` when it could not be read; the answer, or ``None``; the refusal's `google.rpc.Status`, or
    ``None``). The stream itself is admitted with its first request (readiness, the token, the open streams its
    limits allow) and ends with a status only for what ends it. Served only behind the edge (`Edge.wrap`): called
    directly, it refuses."""

    each: str
    handler: Handler
    call: Callable[[Any], Any]
    """The call's request in a request of the stream (``ActStreamRequest.act``)."""
    result: Callable[[Any, Any, status_pb2.Status | None], Any]

    async def __call__(self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "a stream of calls is served behind the edge only")
        yield  # pragma: no cover  (an async generator, as gRPC calls a streaming behaviour)


class Edge(grpc.aio.ServerInterceptor):
    """Readiness, decoding, validation, authentication, limits and the error model for one server (see above).

    `wrap` makes a method's handler pass the edge, once per method: `paiju.platform.serving.build_server` wraps
    each handler as it is registered, so a call costs the edge's checks and nothing of gRPC's interceptor
    machinery. As an interceptor it wraps the handler it is given, once per method too."""

    def __init__(self, policy: Policy | None = None, validator: Validator | None = None) -> None:
        self._policy = policy or Policy()
        self._validator = validator if validator is not None else shared_validator()
        self._wrapped: dict[str, tuple[Handler, Handler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        return cached_wrap(
            self._wrapped, self.wrap, handler_call_details.method, await continuation(handler_call_details)
        )

    def wrap(self, full: str, handler: Handler | None, record: Record | None = None) -> Handler | None:
        """``handler`` of the method ``full`` (``/paiju.v1.EngineService/Act``) behind the edge: the request is
        admitted (`_admission`) before the handler runs, and whatever it raises is answered as the error model
        says. Its response serializer is the handler's own. ``record``: told of each call once it has ended (its
        context, when it started by `time.perf_counter`, whether it raised: `paiju.platform.callmetrics`), from
        the same wrapper. Methods outside Paiju's services pass unchanged."""
        if handler is None or not full.startswith(PACKAGE):
            return handler
        method = full.rpartition("/")[2]
        admit = self._admission(method, handler.request_deserializer)
        done = record or _unrecorded
        if handler.unary_unary is not None:
            inner: Any = handler.unary_unary

            async def unary(raw: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
                started, failed = time.perf_counter(), True
                try:
                    request = admit(raw, context)
                    answer = await inner(request, context)
                    failed = False
                    return answer
                except BaseException as e:
                    await _answer(method, e, context)
                finally:
                    done(context, started, failed)

            return grpc.unary_unary_rpc_method_handler(unary, None, handler.response_serializer)
        if handler.unary_stream is not None:
            streaming: Any = handler.unary_stream
            limits = self._policy.limits
            held = limits.keys_for(method, open=True) if limits is not None else frozenset()
            by_address = "address" in held

            async def stream(raw: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
                started, failed = time.perf_counter(), True
                try:
                    request = admit(raw, context)
                    if limits is None or not held:
                        async for item in streaming(request, context):
                            yield item
                    else:
                        taken = limits.hold(method, peer() if by_address else "", _account())
                        try:
                            async for item in streaming(request, context):
                                yield item
                        finally:
                            limits.release(taken)
                    failed = False
                except BaseException as e:
                    await _answer(method, e, context)
                finally:
                    done(context, started, failed)

            return grpc.unary_stream_rpc_method_handler(stream, None, handler.response_serializer)
        if isinstance(handler.stream_stream, CallStream):
            return self._call_stream(
                method, handler.stream_stream, handler.request_deserializer, done, handler.response_serializer
            )
        return handler

    def _call_stream(
        self,
        method: str,
        calls: CallStream,
        decode: Callable[[bytes], Any] | None,
        done: Record,
        serializer: Any,
    ) -> Handler:
        """The handler of a stream of calls (`CallStream`): admitted with its first request as ``method`` (readiness,
        the token, an open stream of its limits), then each request admitted and answered as a call of
        ``calls.each``, in order, one at a time."""
        admit = self._admission(calls.each, decode, remember=False)  # each request holds a new command id
        admit_open = self._admission(method, None)
        unwrap = calls.call
        inner: Any = calls.handler.unary_unary
        each = calls.each
        result = calls.result
        limits = self._policy.limits
        held = limits.keys_for(method, open=True) if limits is not None else frozenset()
        by_address = "address" in held

        async def answers(first: bytes, raws: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            raw: bytes | None = first
            while raw is not None:
                started, request = time.perf_counter(), None
                try:
                    request = unwrap(admit(raw, context))
                    answer = await inner(request, context)
                except BaseException as e:
                    refused = rich_status(refusal_for(each, e))
                    done(_Outcome(refused.code), started, True)
                    if request is None:
                        readable = _readable(decode, raw)
                        request = unwrap(readable) if readable is not None else None
                    yield result(request, None, refused)
                else:
                    done(_OK, started, False)
                    yield result(request, answer, None)
                raw = await anext(raws, None)

        async def stream(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            try:
                # admitted at its first request, not before: a client's first write always arrives, and it reads the
                # refusal as the stream's status (a stream ended while the client writes its first request shows
                # the client gRPC's own "Internal error from Core" instead)
                raws = aiter(requests)
                first = await anext(raws, None)
                if first is None:
                    return
                admit_open(b"", context)
                if limits is None or not held:
                    async for item in answers(first, raws, context):
                        yield item
                else:
                    taken = limits.hold(method, peer() if by_address else "", _account())
                    try:
                        async for item in answers(first, raws, context):
                            yield item
                    finally:
                        limits.release(taken)
            except BaseException as e:
                await _answer(method, e, context)

        return grpc.stream_stream_rpc_method_handler(stream, None, serializer)

    def _admission(
        self, method: str, decode: Callable[[bytes], Any] | None, *, remember: bool = True
    ) -> Callable[[bytes, grpc.aio.ServicerContext[Any, Any]], Any]:
        """What admits one call of ``method``, everything that does not change between calls settled here, once:
        readiness, decoding, validation, the token and its role, the rate limits (in this order; the first
        refusal is raised).

        A request's bytes found valid are remembered (`VALID_REMEMBERED` per method, the oldest forgotten first),
        so the same bytes again — every seat of a game asking for the view at the same version — are not
        validated again: the rules are a function of the message alone. Only for methods that need a token and
        whose requests hold no password (the public sign-ins' do: they are not kept), and not for a command's
        requests (a field ``command_id``, or ``remember`` False: a stream of calls' requests hold one): each is new by
        design."""
        policy = self._policy
        ready = policy.ready
        validate = self._validator.collect_violations
        remembered: dict[bytes, None] | None = None
        messages = False
        """Whether the method's requests decode to messages (validated): known from its decoder at once."""
        if decode is not None:
            with contextlib.suppress(Exception):
                empty = decode(b"")
                messages = isinstance(empty, Message)
                fields = empty.DESCRIPTOR.fields_by_name if messages else {"command_id": None}
                if (
                    remember
                    and method not in policy.public
                    and not any(f == "command_id" or "password" in f for f in fields)
                ):
                    remembered = {}
                validate(empty)  # the rules of the request's type compiled now, not at its first call
        authenticate = policy.authenticator.identify if policy.authenticator is not None else None
        forwarders = frozenset(policy.forwarders)
        # who a gateway's token says it is: the same verifier as the callers' own, for public methods too
        vouched = authenticate if forwarders else None
        if method in policy.public:
            authenticate = None
        allowed = policy.roles.get(method)
        limits = policy.limits
        counted = limits.keys_for(method) if limits is not None else frozenset()
        check = limits.check if limits is not None and counted else None
        by_address = "address" in counted

        def admit(raw: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            _CONTEXT.set(context)
            if ready is not None:
                missing = ready()
                if missing:
                    raise unavailable(missing)
            try:
                request: Any = decode(raw) if decode is not None else raw
            except (DecodeError, ValueError, TypeError):
                raise Refused(
                    Reason.MALFORMED_MESSAGE,
                    f"the request is not a valid {method} request message (undecodable bytes)",
                ) from None
            if (messages or isinstance(request, Message)) and (remembered is None or raw not in remembered):
                violations = validate(request)
                if violations:
                    raise bad_request(violations)
                if remembered is not None and len(raw) <= MAX_REMEMBERED_BYTES:
                    if len(remembered) >= VALID_REMEMBERED:
                        del remembered[next(iter(remembered))]
                    remembered[raw] = None
            who = None
            if authenticate is not None:
                who = authenticate(context.invocation_metadata())
                _CALLER.set(who)
                if allowed is not None and getattr(who, "role", None) not in allowed:
                    raise role_required(*allowed)
            if vouched is not None:
                _PEER.set(client_peer(context, vouched, forwarders))
            if check is not None:
                check(method, peer() if by_address else "", _account_of(who), request)
            return request

        return admit


class _Outcome:
    """How one call of a stream of calls ended, as the call metrics read a call's context (`Record`)."""

    __slots__ = ("_code",)

    def __init__(self, code: int) -> None:
        self._code = _STATUS_CODES.get(code, grpc.StatusCode.UNKNOWN)

    def code(self) -> grpc.StatusCode:
        return self._code


_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}
_OK = _Outcome(0)


def _readable(decode: Callable[[bytes], Any] | None, raw: bytes) -> Any:
    """``raw`` decoded, for what a refusal's answer repeats of it (its command id), or ``None`` if it is not."""
    if decode is None:
        return None
    try:
        return decode(raw)
    except Exception:  # undecodable: refused as such, nothing of it repeated
        return None


def _unrecorded(context: Any, started: float, failed: bool) -> None:
    """No call metrics (an edge installed alone, as an interceptor)."""


def cached_wrap(
    wrapped: dict[str, tuple[Handler, Handler]],
    wrap: Callable[[str, Handler | None], Handler | None],
    full: str,
    handler: Handler | None,
) -> Handler | None:
    """``wrap(full, handler)``, made once per method and handler and remembered in ``wrapped``."""
    if handler is None:
        return None
    known = wrapped.get(full)
    if known is not None and known[0] is handler:
        return known[1]
    made = wrap(full, handler)
    if made is not None:
        wrapped[full] = (handler, made)
    return made


def _account() -> str | None:
    """The account per-account limits count for the call being handled (`_account_of` its caller)."""
    return _account_of(_CALLER.get(None))


def _account_of(identity: Any) -> str | None:
    """The account per-account limits count: the caller's subject, but none for another Paiju service (the lobby
    acting for every table at once is limited by the limits of the calls that made it act)."""
    if identity is None or getattr(identity, "role", None) is Role.SERVICE:
        return None
    return getattr(identity, "subject", None)


REPEATED_REFUSALS = frozenset(
    {Reason.RATE_LIMITED, Reason.DEPENDENCY_UNAVAILABLE, Reason.DRAINING, Reason.STALE_VERSION}
)
"""Refusals that a flood or an outage makes by the thousand, each call like the last, and the stale moves that play
makes routinely (several seats may act in one phase: the first move wins, the others are stale; they were most of an
engine's log, about 3 % of its moves): logged once a minute per method and reason, with how many were held back
(`paiju.platform.repeats`); the metrics count every one. Any other refusal is a line of its own."""


def _told(reason: Reason) -> Callable[..., None]:
    """How a refusal for ``reason`` is logged: at info, its repeats held back when a crowd or an outage makes them."""
    if reason in REPEATED_REFUSALS:
        return lambda event, **facts: repeats.REPEATS.tell(log.info, event, **facts)
    said: Callable[..., None] = log.info
    return said


def refusal_for(method: str, error: BaseException) -> Refused:
    """The refusal that answers a call of ``method`` which raised ``error`` (logged as the error model says); gRPC's
    and asyncio's own control flow is raised again, not answered."""
    if isinstance(error, (asyncio.CancelledError, GeneratorExit, KeyboardInterrupt, SystemExit)):
        raise error
    if isinstance(error, grpc.aio.AbortError):
        raise error  # the handler ended the call itself (context.abort)
    if isinstance(error, Refused):
        refused = error
        _told(refused.reason)("refused", method=method, reason=refused.reason.value, message=refused.message)
    elif isinstance(error, grpc.aio.AioRpcError):
        refused = refusal_of_rpc_error(error, "another Paiju service")
        _told(refused.reason)("refused", method=method, reason=refused.reason.value, downstream=error.code().name)
    elif isinstance(error, Contention):
        refused = Refused(
            Reason.CONTENTION,
            "too many changes to the same game, table or tournament at once; nothing was changed: try again",
        )
        log.warning("contention", method=method, error=str(error))
    elif isinstance(error, DEPENDENCY_GONE):
        refused = unavailable("a dependency")  # what failed is logged, not sent
        repeats.REPEATS.warn(log, "dependency failed", method=method, error=repr(error))  # each call of an outage
    else:
        reference = uuid.uuid4().hex[:12]
        refused = Refused(
            Reason.INTERNAL_ERROR,
            f"the server failed to answer (reference {reference})",
            {"reference": reference},
        )
        log.error("internal error", method=method, reference=reference, exc_info=error)
    return refused


async def _answer(method: str, error: BaseException, context: grpc.aio.ServicerContext[Any, Any]) -> NoReturn:
    """End the call with the status ``error`` stands for (or let gRPC's own control flow through)."""
    status = status_of(refusal_for(method, error))
    await context.abort(status.code, status.details, trailing_metadata=status.trailing_metadata)
    raise AssertionError("unreachable")  # context.abort raises


def code_name(reason: Reason) -> str:
    """The `google.rpc.Code` name of a reason's status (for documents and tests)."""
    return str(code_pb2.Code.Name(CODES[reason].value[0]))
