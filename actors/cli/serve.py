"""`chorus serve [--host H] [--port P]`: the HTTP control plane (actors/api) on uvicorn, on
the same settings, data folder and store as every other `chorus` verb.

With no tokens configured (CHORUS_API_TOKENS or CHORUS_API_TOKENS_FILE) access is open:
it says so loudly at start, and `/v1/health` says so too.

What a request may make the server open or run is the server's configuration (see
actors.api.places): `--pack-dir DIR` (CHORUS_API_PACK_DIRS) and `--workspace-dir DIR`
(CHORUS_API_WORKSPACE_DIRS; default `<data dir>/workspaces`) are the folders run options
may name; `--server-options JSON` (CHORUS_API_SERVER_OPTIONS) sets the options no request
may, e.g. `{"relay": {"resubmit": ["./deploy.sh"]}}`; `--max-body-bytes N`
(CHORUS_API_MAX_BODY_BYTES, default 4 MiB) bounds every request body.
"""

from __future__ import annotations

import argparse
import errno
import socket
import sys

from actors.runtime.errors import UserError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("serve", help="serve the HTTP API and the timeline page (uvicorn)")
    p.add_argument("--host", default=DEFAULT_HOST, help=f"interface to listen on (default {DEFAULT_HOST})")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"),
                   help="uvicorn's log level (default info)")  # fmt: skip
    p.add_argument("--pack-dir", action="append", default=None, metavar="DIR",
                   help="a folder whose content packs runs may name (repeat; env CHORUS_API_PACK_DIRS)")
    p.add_argument("--workspace-dir", action="append", default=None, metavar="DIR",
                   help="a folder inside which run workspaces may lie (repeat; env CHORUS_API_WORKSPACE_DIRS; "
                        "default <data dir>/workspaces)")
    p.add_argument("--server-options", default=None, metavar="JSON",
                   help='options only the server sets, by run kind, e.g. \'{"relay": {"resubmit": ["./deploy.sh"]}}\' '
                        "(env CHORUS_API_SERVER_OPTIONS)")
    p.add_argument("--max-body-bytes", type=int, default=None, metavar="N",
                   help="the largest request body taken (env CHORUS_API_MAX_BODY_BYTES; default 4 MiB)")
    p.set_defaults(func=cmd_serve)


def check_port(host: str, port: int) -> None:
    """A port that cannot be listened on is bad input: one line, before anything starts."""
    if not 0 < port < 65536:
        raise UserError(f"--port must be between 1 and 65535, not {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise UserError(f"--host {host!r} is not an address of this machine ({e.strerror})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as e:
            why = "is in use" if e.errno == errno.EADDRINUSE else f"cannot be used ({e.strerror})"
            raise UserError(f"{host}:{port} {why}") from None


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from actors.api.app import create_app
    from actors.api.auth import load_tokens
    from actors.api.health import OPEN_WARNING
    from actors.api.places import ApiConfig, parse_server_options
    from actors.runtime.client import Client
    from actors.runtime.settings import Settings
    from events.backends import redact

    check_port(args.host, args.port)
    tokens = load_tokens()  # a bad token list: one line, exit 2
    settings = Settings.from_env()
    try:
        config = ApiConfig.from_env(
            settings,
            pack_dirs=getattr(args, "pack_dir", None),
            workspace_dirs=getattr(args, "workspace_dir", None),
            server_options=parse_server_options(args.server_options) if getattr(args, "server_options", None) else None,
            max_body_bytes=getattr(args, "max_body_bytes", None),
        )
    except ValueError as e:
        raise UserError(str(e)) from None
    client = Client(settings=settings)
    try:
        if not tokens:
            bar = "!" * 78
            print(f"{bar}\nchorus serve: WARNING: {OPEN_WARNING}\n{bar}", file=sys.stderr, flush=True)
        else:
            print(f"chorus serve: auth on: {len(tokens)} bearer token(s)", file=sys.stderr, flush=True)
        try:
            client.ensure_ray()  # now, so the first run does not wait for Ray
        except Exception as e:  # noqa: BLE001 - the read routes work without Ray
            print(f"chorus serve: Ray did not start ({e}); runs cannot be submitted", file=sys.stderr, flush=True)
        app = create_app(client=client, tokens=tokens, config=config)
        where = f"http://{args.host}:{args.port}"
        print(
            f"chorus serve: {where}/ (API {where}/v1/docs), store {redact(settings.store_url)}",
            file=sys.stderr,
            flush=True,
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=3)
    finally:
        client.close()
    return 0
