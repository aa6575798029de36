"""Creating the store's table: on-demand billing, string ``pk`` / ``sk`` keys, TTL on ``exp``."""

from __future__ import annotations

from typing import Any

from genkit_sessions.dynamodb._errors import BACKEND_ERRORS, error_code, map_error
from genkit_sessions.dynamodb._keys import TTL_ATTRIBUTE
from genkit_sessions.errors import GenkitError, Status

__all__ = ["create_table"]


def create_table(client: Any, table_name: str, *, exist_ok: bool = False, wait: bool = True) -> None:
    """Create the table a :class:`~genkit_sessions.dynamodb.DynamoDBSessionStore` uses.

    Pay-per-request billing and TTL enabled on ``exp``. ``exist_ok`` accepts an
    existing table (ALREADY_EXISTS otherwise); ``wait`` returns once it is ACTIVE.
    """
    try:
        client.create_table(
            TableName=table_name,
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
    except BACKEND_ERRORS as exc:
        if error_code(exc) == "ResourceInUseException":
            if exist_ok:
                return
            raise GenkitError(
                Status.ALREADY_EXISTS,
                f"DynamoDB table {table_name!r} already exists; use it as is, or pick another name",
            ) from exc
        raise map_error(exc, "CreateTable", table_name) from exc
    try:
        if wait:
            client.get_waiter("table_exists").wait(TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
        client.update_time_to_live(
            TableName=table_name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
        )
    except BACKEND_ERRORS as exc:
        raise map_error(exc, "UpdateTimeToLive", table_name) from exc
