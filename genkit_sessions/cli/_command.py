"""What every command module shares: a subcommand with an example in its help, and the DynamoDB options.

``add_command`` gives each subcommand a description and an ``example:`` epilog
that ``--help`` prints as written. ``add_dynamodb_arguments`` and
``open_dynamodb_store`` are the one way a command reaches a table: a table name
plus the usual AWS settings, or ``--endpoint-url`` for a local endpoint, where
placeholder credentials stand in (with a note on stderr) when none are configured.
"""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import sys
from pathlib import Path
from typing import Any, TextIO

from genkit_sessions.errors import GenkitError, Status

__all__ = [
    "PLACEHOLDER_CREDENTIALS",
    "add_command",
    "add_dynamodb_arguments",
    "check_connection_options",
    "connection_options",
    "context_of",
    "dynamodb_client",
    "open_dynamodb_store",
    "refuse_directory",
    "suggest",
    "target_options",
    "tenant_of",
    "unwritable",
    "write_output",
]

PLACEHOLDER_CREDENTIALS = {
    "aws_access_key_id": "testing",
    "aws_secret_access_key": "testing",
    "aws_session_token": "testing",
}
"""What a local endpoint (moto, DynamoDB Local) is sent when no AWS credentials are configured: it checks none."""


def add_command(subparsers: Any, name: str, *, help: str, description: str, example: str) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` ends with ``example:`` and the example's lines, as written."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help,
        description=description,
        epilog="example:\n" + "\n".join(f"  {line}" for line in example.strip().splitlines()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def add_dynamodb_arguments(parser: argparse.ArgumentParser, *, tenant: bool = True) -> None:
    """``--table`` (required), ``--endpoint-url``, ``--region`` and, with ``tenant``, ``--tenant``."""
    group = parser.add_argument_group("DynamoDB")
    group.add_argument("--table", required=True, help="the store's table name")
    group.add_argument(
        "--endpoint-url",
        default=None,
        help="a local DynamoDB endpoint (moto, DynamoDB Local); placeholder credentials are used if none are set",
    )
    group.add_argument("--region", default=None, help="AWS region (default: from the environment, else us-east-1)")
    if tenant:
        group.add_argument(
            "--tenant", default=None, help="the tenant whose sessions to use (default: the default tenant)"
        )


def suggest(*argv: str) -> str:
    """A ``genkit-sessions`` command line to show a user, each word shell-quoted so that it runs as shown."""
    return shlex.join(["genkit-sessions", *argv])


def connection_options(args: argparse.Namespace) -> list[str]:
    """``--endpoint-url`` and ``--region`` as given, for a suggested command (ours or the AWS CLI's)."""
    options: list[str] = []
    if getattr(args, "endpoint_url", None) is not None:
        options += ["--endpoint-url", args.endpoint_url]
    if getattr(args, "region", None):
        options += ["--region", args.region]
    return options


def target_options(args: argparse.Namespace, *, tenant: bool = True) -> list[str]:
    """The options that reach the table (and, with ``tenant``, the tenant) ``args`` names, for a suggestion."""
    options = ["--table", args.table, *connection_options(args)]
    if tenant and tenant_of(args):
        options += ["--tenant", tenant_of(args)]
    return options


def tenant_of(args: argparse.Namespace) -> str:
    """The tenant ``--tenant`` names, ``""`` (the default tenant) when it is omitted.

    The one check every command applies: INVALID_ARGUMENT, naming the value, for a tenant no store
    accepts (empty, whitespace only, over 512 UTF-8 bytes, a control character).
    """
    from genkit_sessions.model.ids import MAX_ID_BYTES, id_problem, shown

    tenant = getattr(args, "tenant", None)
    if tenant is None:
        return ""
    problem = "names no tenant" if tenant == "" else id_problem(tenant)
    if problem is not None:
        raise GenkitError(
            Status.INVALID_ARGUMENT,
            f"--tenant {shown(tenant)} {problem}; pass the tenant's id (at most {MAX_ID_BYTES} UTF-8 bytes, not only "
            "spaces, no control characters), or leave --tenant out for the default tenant",
        )
    return str(tenant)


def context_of(args: argparse.Namespace) -> dict[str, str] | None:
    """The request context a store derives the tenant from (``{"tenant": ...}``), None for the default
    tenant; the tenant checked by :func:`tenant_of`."""
    tenant = tenant_of(args)
    return {"tenant": tenant} if tenant else None


def _credentials_configured() -> bool:
    import boto3  # type: ignore[import-untyped]

    try:
        return boto3.Session().get_credentials() is not None
    except Exception:  # a broken profile: let the client say what is wrong
        return True


def _endpoint_problem(url: str) -> str | None:
    from urllib.parse import urlsplit

    from botocore.utils import is_valid_endpoint_url, is_valid_ipv6_endpoint_url  # type: ignore[import-untyped]

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
        if parts.scheme.lower() not in ("http", "https"):
            return "it does not start with http:// or https://"
        if not parts.hostname:
            return "it names no host"
        if not (is_valid_endpoint_url(url) or is_valid_ipv6_endpoint_url(url)):
            return "its host is not a valid host name"
    except ValueError as exc:
        return str(exc)
    return None


def check_connection_options(args: argparse.Namespace) -> None:
    """INVALID_ARGUMENT, naming the option, for an ``--endpoint-url`` that is not an http(s) URL or a
    ``--region`` that is not a region name; what every command checks before it reaches DynamoDB."""
    endpoint = getattr(args, "endpoint_url", None)
    if endpoint is not None:
        problem = _endpoint_problem(endpoint)
        if problem is not None:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"--endpoint-url {endpoint!r} is not an endpoint URL: {problem}; pass one such as "
                "http://127.0.0.1:8000 (DynamoDB Local, moto), or leave --endpoint-url out to reach AWS",
            )
    region = getattr(args, "region", None)
    if region:
        from botocore.exceptions import InvalidRegionError  # type: ignore[import-untyped]
        from botocore.utils import validate_region_name

        try:
            validate_region_name(region)
        except InvalidRegionError:
            raise GenkitError(
                Status.INVALID_ARGUMENT,
                f"--region {region!r} is not a region name; pass one such as us-east-1, or leave --region out "
                "to use the environment's (AWS_REGION, the profile), else us-east-1",
            ) from None


def dynamodb_client(args: argparse.Namespace, err: TextIO | None = None) -> Any:
    """A boto3 client for ``args``: real credentials when configured; for a local endpoint without any,
    placeholder credentials, with a note on ``err`` (stderr) saying so. INVALID_ARGUMENT first for a
    malformed ``--endpoint-url`` or ``--region`` (:func:`check_connection_options`)."""
    from genkit_sessions.dynamodb import build_client

    check_connection_options(args)
    endpoint = getattr(args, "endpoint_url", None)
    if endpoint and not _credentials_configured():
        print(
            f"note: no AWS credentials are configured; using placeholder credentials for {endpoint} "
            "(a local endpoint checks none; set AWS_PROFILE or AWS_ACCESS_KEY_ID to send real ones)",
            file=err or sys.stderr,
        )
        return build_client(args.region, endpoint, client_options=dict(PLACEHOLDER_CREDENTIALS))
    return build_client(getattr(args, "region", None), endpoint)


def open_dynamodb_store(args: argparse.Namespace, err: TextIO | None = None, *, indexed: tuple[str, ...] = ()) -> Any:
    """The :class:`~genkit_sessions.dynamodb.DynamoDBSessionStore` on ``args.table``.

    INVALID_ARGUMENT first for a bad ``--tenant`` (:func:`tenant_of`); NOT_FOUND, naming the command
    that creates it, when the table does not exist.
    """
    from genkit_sessions.dynamodb import DynamoDBSessionStore
    from genkit_sessions.dynamodb._errors import BACKEND_ERRORS, error_code, map_error

    tenant_of(args)  # a bad --tenant is refused before anything is sent
    client = dynamodb_client(args, err)
    try:
        client.describe_table(TableName=args.table)
    except BACKEND_ERRORS as exc:
        if error_code(exc) == "ResourceNotFoundException":
            create = suggest("dynamodb", "create-table", *target_options(args, tenant=False))
            raise GenkitError(
                Status.NOT_FOUND,
                f"DynamoDB table {args.table!r} does not exist; create it with `{create}`",
            ) from exc
        raise map_error(exc, "DescribeTable", args.table) from exc
    return DynamoDBSessionStore(args.table, client, indexed_metadata=indexed)


def unwritable(path: Path, exc: OSError, what: str) -> GenkitError:
    """FAILED_PRECONDITION naming ``path``, why ``what`` cannot be written there, and what to do instead."""
    shown = str(path) or "."
    if isinstance(exc, FileNotFoundError):
        mkdir = shlex.join(["mkdir", "-p", str(path.parent)])
        hint = f"create the directory first (`{mkdir}`), or name a file in one that exists"
    elif isinstance(exc, IsADirectoryError):
        hint = f"name a file in it, such as {str(path / 'out.txt')!r}"
    elif isinstance(exc, NotADirectoryError):
        hint = "a part of the path is a file, not a directory; name a file in a directory that exists"
    else:
        hint = "check the path, its permissions and the free space, or write to stdout and redirect it"
    return GenkitError(
        Status.FAILED_PRECONDITION,
        f"cannot write {what} to {shown!r}: {exc.strerror or exc}; {hint}",
        details={"path": shown},
    )


def refuse_directory(path: Path, what: str) -> None:
    """FAILED_PRECONDITION (see :func:`unwritable`) when ``path`` names a directory (``.``, ``/``, ``""``)."""
    if not path.name or path.is_dir():
        raise unwritable(path, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)), what)


def write_output(path: Path, data: str | bytes, what: str) -> None:
    """Write ``data`` (text as UTF-8) to ``path``; FAILED_PRECONDITION naming the path when it cannot be."""
    refuse_directory(path, what)
    try:
        if isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            path.write_bytes(data)
    except OSError as exc:
        raise unwritable(path, exc, what) from None
