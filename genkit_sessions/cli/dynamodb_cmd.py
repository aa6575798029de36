"""``genkit-sessions dynamodb create-table``: create the DynamoDB table the store uses."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``dynamodb`` command group."""
    parser = subparsers.add_parser("dynamodb", help="DynamoDB store administration")
    commands = parser.add_subparsers(dest="dynamodb_command", required=True, metavar="SUBCOMMAND")
    create = commands.add_parser(
        "create-table",
        help="create the store's table (on-demand billing, TTL on 'exp')",
        description="Create the table a DynamoDBSessionStore uses: string keys pk/sk, "
        "pay-per-request billing, TTL enabled on the 'exp' attribute.",
    )
    create.add_argument("--table", required=True, help="table name")
    create.add_argument("--endpoint-url", default=None, help="DynamoDB endpoint (DynamoDB Local, moto); default AWS")
    create.add_argument("--region", default=None, help="AWS region (default: from the environment, else us-east-1)")
    create.add_argument("--exist-ok", action="store_true", help="succeed when the table already exists")
    create.set_defaults(func=_create_table)


def _create_table(args: argparse.Namespace) -> int:
    from genkit_sessions.dynamodb import build_client, create_table

    client = build_client(args.region, args.endpoint_url)
    create_table(client, args.table, exist_ok=args.exist_ok)
    print(f"DynamoDB table {args.table!r} is ready (on-demand billing, TTL on 'exp')")
    return 0
