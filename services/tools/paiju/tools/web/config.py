"""The web view's settings, from the environment or ``paiju web``'s options: each declared once (the table of
docs/operations.md, "Configure", is generated from them). Imports nothing heavy, so that ``paiju --help`` stays
quick."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import ip_network
from typing import TYPE_CHECKING

from paiju.platform import settings as s
from paiju.platform.settings import Setting

if TYPE_CHECKING:
    from paiju.platform.tokens import Signer

LIMITS = "api:address=20/second; live:address=16/open; page:address=30/second"
"""Each client address's limits: JSON calls per second, live tables open at once, page files per second."""
LIMITS_VARIABLE = "PAIJU_WEB_RATE_LIMITS"
TRUSTED_PROXIES_VARIABLE = "PAIJU_WEB_TRUSTED_PROXIES"
"""The networks of the proxies in front (an Ingress controller) whose ``X-Forwarded-For`` names the client."""
DEFAULT_PORT = 8080
MAX_CONNECTIONS = Setting(
    "PAIJU_WEB_MAX_CONNECTIONS",
    1000,
    "the connections the web view holds open at once, pages' live streams included; one more is answered 503",
)
HEADER_SECONDS = Setting(
    "PAIJU_WEB_HEADER_SECONDS",
    10.0,
    "how long a connection may take to send a request's head (its line and headers) before it is closed, in seconds",
)
CACHE_MIB = Setting(
    "PAIJU_WEB_CACHE_MIB",
    32,
    "the memory the web view's caches of answers (replays, tables, ratings) may hold, in MiB",
)


def session_key(raw: str) -> bytes:
    """The session key as its file holds it: 32 bytes in URL-safe base64 (43 or 44 characters) or hexadecimal."""
    import base64
    import binascii

    text = raw.strip()
    if not text:
        return b""
    try:
        key = bytes.fromhex(text) if len(text) == 64 else base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, binascii.Error):
        raise ValueError("the session key must be 32 bytes in URL-safe base64 or hexadecimal") from None
    if len(key) != 32:
        raise ValueError(f"the session key must be 32 bytes (it is {len(key)})")
    return key


SESSION_KEY = Setting(
    "PAIJU_WEB_SESSION_KEY",
    b"",
    "the key (32 random bytes in URL-safe base64; `make run` makes `.data/keys/web-session`) that seals each "
    "browser's sign-in in its cookie; every replica needs the same one. Unset: nobody can sign in (spectators only)",
    parse=session_key,
    secret=True,
    file_only=True,
)


def networks(raw: str) -> str:
    """Networks separated by commas (``10.0.0.0/8,fd00::/8``), as written once each reads (`ValueError`)."""
    for part in raw.split(","):
        if part.strip():
            ip_network(part.strip(), strict=False)
    return raw


def web_signer(key: str, key_id: str) -> Signer | None:
    """The web view's signer (`paiju.platform.tokens.Signer`) from its key file and key id, or ``None`` when no key
    is set; `paiju.platform.settings.SettingsError` when the file cannot be read, or the key is not the web view's
    (``web.<version>``: the web view is given no other issuer's key)."""
    if not key and not key_id:
        return None
    from paiju.platform.tokens import SIGNING_KEY_ID_VARIABLE, SIGNING_KEY_VARIABLE, Issuer, signer_of

    if not key or not key_id:
        raise s.SettingsError(f"{SIGNING_KEY_VARIABLE} and {SIGNING_KEY_ID_VARIABLE} are set together, or neither")
    signer = signer_of(key, key_id)
    if signer.issuer is not Issuer.WEB:
        raise s.SettingsError(f"{SIGNING_KEY_ID_VARIABLE}: the web view signs as web.<version>, not {key_id}")
    return signer


@dataclass(frozen=True)
class Settings(s.Settings):
    """The web view's settings (``paiju web --help`` lists them): options, else the environment, else defaults."""

    lobby: str = s.LOBBY_ADDRESS.but(help="the lobby", option="--lobby", metavar="ADDRESS").field()
    engine: str = s.ENGINE_ADDRESS.but(help="the engine", option="--engine", metavar="ADDRESS").field()
    scoring: str = s.SCORING_ADDRESS.but(help="scoring (tournaments)", option="--scoring", metavar="ADDRESS").field()
    host: str = Setting(
        "PAIJU_WEB_HOST", "127.0.0.1", "the address to listen on (`0.0.0.0` in a container)", option="--host"
    ).field()
    port: int = Setting("PAIJU_WEB_PORT", DEFAULT_PORT, "the HTTP port", parse=s.port, option="--port").field()
    trusted_proxies: str = Setting(
        TRUSTED_PROXIES_VARIABLE,
        "",
        "the networks of the proxies in front, separated by commas (e.g. the Ingress controller's `10.42.7.0/24`): "
        "from them, the client is the nearest address in `X-Forwarded-For` that is not a proxy, and the limits below "
        "count it, not the proxy; none by default (`X-Forwarded-For` is then never read)",
        parse=networks,
    ).field()
    rate_limits: str = Setting(
        LIMITS_VARIABLE,
        "",
        "each client address's limits, changed or added to, in the rules of *Rate limits* (`off` turns them off)",
        parse=s.rate_limits,
        shown_default=LIMITS,
    ).field()
    max_connections: int = MAX_CONNECTIONS.field()
    header_seconds: float = HEADER_SECONDS.field()
    cache_mib: int = CACHE_MIB.field()
    session_key: bytes = SESSION_KEY.field()
    signing_key: str = s.SIGNING_KEY.but(
        required=False,
        help="the web view's own private key (PEM file, issuer `web`): signs its token, with which it tells the lobby "
        "the address of the browser each call is made for, so that the lobby's per-address limits on signing in "
        "count browsers, not the web view (`make run` makes `.data/keys/web.pem`). Unset: every browser's sign-in "
        "counts against the web view's own address",
    ).field()
    signing_key_id: str = s.SIGNING_KEY_ID.but(required=False, help="its key id, `web.<version>`").field()
    log_level: str = s.LOG_LEVEL.field()
    event_loop: str = s.EVENT_LOOP.field()
    otel_service_name: str = s.OTEL_SERVICE_NAME.but(default="paiju-web").field()
    otel_traces_exporter: str = s.OTEL_TRACES_EXPORTER.field()
    otel_exporter_otlp_endpoint: str = s.OTEL_EXPORTER_OTLP_ENDPOINT.field()
    otel_traces_sampler: str = s.OTEL_TRACES_SAMPLER.field()
    otel_traces_sampler_arg: float = s.OTEL_TRACES_SAMPLER_ARG.field()
    otel_bsp_schedule_delay: int = s.OTEL_BSP_SCHEDULE_DELAY.field()
    otel_sdk_disabled: bool = s.OTEL_SDK_DISABLED.field()
