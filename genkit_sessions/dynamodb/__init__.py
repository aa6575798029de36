"""The DynamoDB session store: ``DynamoDBSessionStore(table_name, client=None, **options)``.

See ``docs/dynamodb.md`` for the key design, the write protocol and the error table.
"""

from genkit_sessions.dynamodb.store import AsyncDynamoDBSessionStore, DynamoDBSessionStore, build_client
from genkit_sessions.dynamodb.table import create_table

__all__ = ["AsyncDynamoDBSessionStore", "DynamoDBSessionStore", "build_client", "create_table"]
