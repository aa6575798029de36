"""``genkit-sessions dynamodb create-table``: create the DynamoDB table the store uses."""

from __future__ import annotations

import argparse
from typing import Any

from genkit_sessions.cli._command import add_command, add_dynamodb_arguments, dynamodb_client


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


def _create_table(args: argparse.Namespace) -> int:
    from genkit_sessions.dynamodb import create_table

    client = dynamodb_client(args)
    create_table(client, args.table, exist_ok=args.exist_ok)
    print(f"DynamoDB table {args.table!r} is ready (on-demand billing, TTL on 'exp')")
    return 0
