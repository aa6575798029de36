"""What a DynamoDB write costs on a moto server, by kind, as the table grows.

Stock moto deep-copies the whole table once per action of a TransactWriteItems
(to roll back on failure), so on moto a transaction's latency grows with the
table and with its action count, which DynamoDB's does not. This prints the
median latency of one PutItem, two PutItems, and transactions of 1, 2 and 3
Puts, on tables of a few sizes, to show how much of a transactional save's
latency on moto is that copy.

    .venv/bin/python benchmarks/moto_transaction_cost.py
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

SIZES = (0, 200, 400, 800)
REPEATS = 30


def _item(key: str) -> dict[str, Any]:
    # Shaped like a snapshot item: keys, a compressed record, a status, a version, an inline delta.
    return {
        "pk": {"S": key},
        "sk": {"S": "s"},
        "rec": {"B": os.urandom(300)},
        "st": {"S": "completed"},
        "v": {"N": "1"},
        "x": {"B": os.urandom(3000)},
    }


def _median_ms(operation: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    client = boto3.client(
        "dynamodb",
        endpoint_url=f"http://{host}:{port}",
        region_name="us-east-1",
        aws_access_key_id="bench",
        aws_secret_access_key="bench",
    )
    client.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    items = [0]  # how many items the table holds: every write below adds one

    def fresh() -> str:
        items[0] += 1
        return f"k{items[0]}"

    def puts(count: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(count):
                client.put_item(TableName="t", Item=_item(fresh()))

        return run

    def transaction(actions: int) -> Callable[[], None]:
        def run() -> None:
            client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": "t",
                            "Item": _item(fresh()),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    }
                    for _ in range(actions)
                ]
            )

        return run

    kinds = {
        "1 PutItem": puts(1),
        "2 PutItems": puts(2),
        "TransactWriteItems, 1 Put": transaction(1),
        "TransactWriteItems, 2 Puts": transaction(2),
        "TransactWriteItems, 3 Puts": transaction(3),
    }
    rows: dict[str, list[float]] = {kind: [] for kind in kinds}
    sizes: list[int] = []
    for size in SIZES:
        grow = puts(1)
        while items[0] < size:  # fill up to the size (measuring the smaller sizes added items too)
            grow()
        sizes.append(items[0])
        for kind, operation in kinds.items():
            rows[kind].append(_median_ms(operation))
    print(f"moto server at http://{host}:{port}; median of {REPEATS} calls, ms; columns: items in the table")
    print(f"{'write':<28}" + "".join(f"{f'{size} items':>12}" for size in sizes))
    for kind, values in rows.items():
        print(f"{kind:<28}" + "".join(f"{value:>12.2f}" for value in values))
    server.stop()


if __name__ == "__main__":
    main()
