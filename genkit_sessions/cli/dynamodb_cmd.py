"""``genkit-sessions dynamodb create-table`` and ``doctor``: create the table the store uses, and check one."""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from genkit_sessions.cli._command import (
    add_command,
    add_dynamodb_arguments,
    connection_options,
    dynamodb_client,
    suggest,
)
from genkit_sessions.errors import GenkitError, Status


def register(subparsers: Any) -> None:
    """Add the ``dynamodb`` command group."""
    parser = subparsers.add_parser(
        "dynamodb",
        help="DynamoDB store administration: create-table, doctor",
        description="Create and check the table a DynamoDBSessionStore uses.",
    )
    commands = parser.add_subparsers(dest="dynamodb_command", required=True, metavar="SUBCOMMAND")
    create = add_command(
        commands,
        "create-table",
        help="create the store's table (on-demand billing, TTL on 'exp')",
        description="Create the table a DynamoDBSessionStore uses: string keys pk/sk, "
        "pay-per-request billing, TTL enabled on the 'exp' attribute.",
        example="genkit-sessions dynamodb create-table --table chats --endpoint-url http://127.0.0.1:8000",
    )
    add_dynamodb_arguments(create, tenant=False)
    create.add_argument("--exist-ok", action="store_true", help="succeed when the table already exists")
    create.set_defaults(func=_create_table)

    doctor = add_command(
        commands,
        "doctor",
        help="check that a table is what the store needs (exists, key schema, TTL on 'exp')",
        description="Check the table a DynamoDBSessionStore uses: it exists and is ACTIVE, its keys are string "
        "pk (HASH) and sk (RANGE), and TTL is enabled on 'exp'. The store needs no secondary index (its "
        "metadata and expiry indexes are items of the table). Each problem says what to run to fix it; "
        "the exit status is 1 when there is one.",
        example="genkit-sessions dynamodb doctor --table chats --endpoint-url http://127.0.0.1:8000",
    )
    add_dynamodb_arguments(doctor, tenant=False)
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON")
    doctor.set_defaults(func=_doctor)


def _create_table(args: argparse.Namespace) -> int:
    from genkit_sessions.dynamodb import create_table

    client = dynamodb_client(args)
    create_table(client, args.table, exist_ok=args.exist_ok)
    print(f"DynamoDB table {args.table!r} is ready (on-demand billing, TTL on 'exp')")
    return 0


def check_table(client: Any, table: str, options: list[str]) -> list[dict[str, Any]]:
    """The doctor's findings: ``{"check", "ok", "detail", "fix"}`` each (``fix`` is a command line, shell-quoted,
    or None); ``options`` (``--endpoint-url``, ``--region``) go into every command suggested."""
    from genkit_sessions.dynamodb._errors import BACKEND_ERRORS, error_code, map_error
    from genkit_sessions.dynamodb._keys import TTL_ATTRIBUTE

    findings: list[dict[str, Any]] = []

    def finding(check: str, ok: bool, detail: str, fix: str | None = None) -> None:
        findings.append({"check": check, "ok": ok, "detail": detail, "fix": None if ok else fix})

    create = suggest("dynamodb", "create-table", "--table", table, *options)
    try:
        described = client.describe_table(TableName=table)["Table"]
    except BACKEND_ERRORS as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise map_error(exc, "DescribeTable", table) from exc
        finding("table", False, f"table {table!r} does not exist", create)
        return findings
    status = described.get("TableStatus", "?")
    finding(
        "table",
        status == "ACTIVE",
        f"table {table!r} is {status}",
        "wait until it is ACTIVE: "
        + shlex.join(["aws", "dynamodb", "wait", "table-exists", "--table-name", table, *options]),
    )
    types = {a["AttributeName"]: a["AttributeType"] for a in described.get("AttributeDefinitions", [])}
    schema = [(k["AttributeName"], k["KeyType"], types.get(k["AttributeName"])) for k in described.get("KeySchema", [])]
    wanted = [("pk", "HASH", "S"), ("sk", "RANGE", "S")]
    new_table = suggest("dynamodb", "create-table", "--table", f"{table}-v2", *options)
    copy = (
        suggest("export", "--all", "--table", table, *options)
        + " | "
        + suggest("import", "-", "--table", f"{table}-v2", *options)
    )
    shown = ", ".join(f"{n} {t} {a}" for n, t, a in schema)
    finding(
        "key schema",
        schema == wanted,
        f"keys {shown}" + ("" if schema == wanted else " (the store needs pk HASH S, sk RANGE S)"),
        f"the keys of a table cannot change: create a new table ({new_table}), then copy each tenant's "
        f"sessions (add --tenant NAME to both for a tenant other than the default): {copy}",
    )
    try:
        ttl = client.describe_time_to_live(TableName=table).get("TimeToLiveDescription", {})
    except BACKEND_ERRORS as exc:
        raise map_error(exc, "DescribeTimeToLive", table) from exc
    ttl_specification = ["--time-to-live-specification", f"Enabled=true,AttributeName={TTL_ATTRIBUTE}"]
    enabled = ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING") and ttl.get("AttributeName") == TTL_ATTRIBUTE
    finding(
        "ttl",
        enabled,
        f"TTL {ttl.get('TimeToLiveStatus', 'DISABLED')} on {ttl.get('AttributeName', '-')!r}"
        + ("" if enabled else f" (the store's expiries are in {TTL_ATTRIBUTE!r})"),
        shlex.join(["aws", "dynamodb", "update-time-to-live", "--table-name", table, *options, *ttl_specification]),
    )
    indexes = [i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])]
    finding("indexes", True, "no secondary index needed" + (f" (has {', '.join(indexes)})" if indexes else ""))
    return findings


def _doctor(args: argparse.Namespace) -> int:
    import json

    client = dynamodb_client(args)
    findings = check_table(client, args.table, connection_options(args))
    if args.json:
        print(json.dumps({"table": args.table, "findings": findings}, indent=2))
    else:
        for item in findings:
            print(f"{'ok  ' if item['ok'] else 'FAIL'} {item['check']}: {item['detail']}")
            if item["fix"]:
                print(f"     fix: {item['fix']}")
    bad = [f for f in findings if not f["ok"]]
    if bad and bad[0]["check"] == "table" and len(findings) == 1:  # the table does not exist
        raise GenkitError(
            Status.NOT_FOUND,
            f"DynamoDB table {args.table!r} does not exist; create it with `{bad[0]['fix']}`",
        )
    if bad:
        raise GenkitError(
            Status.FAILED_PRECONDITION,
            f"table {args.table!r} is not ready for the store: {len(bad)} problem(s) above; run the fix shown",
        )
    return 0
