"""Every botocore failure as a :class:`GenkitError`, the backend's own message kept (S12).

Transient failures (throttling, 5xx, connection resets) are first retried by
botocore's own retry mode (``standard`` by default); what reaches this module
is what is left after those retries.

=====================================================  =====================  ==============================
backend failure                                        status                 what the user should do
=====================================================  =====================  ==============================
ConditionalCheckFailed, TransactionConflict,           ABORTED                retry the call later
TransactionInProgress (after the store's own retries)
ProvisionedThroughputExceeded, ThrottlingException,    RESOURCE_EXHAUSTED     slow down or raise capacity
RequestLimitExceeded, LimitExceeded,
ItemCollectionSizeLimitExceeded
ResourceNotFoundException (missing table)              FAILED_PRECONDITION    create the table
ValidationException, ParamValidationError              INVALID_ARGUMENT       fix the request / the data
AccessDeniedException                                  PERMISSION_DENIED      grant the IAM actions
UnrecognizedClient, InvalidSignature, no credentials   UNAUTHENTICATED        configure credentials
connection refused / reset, InternalServerError,       UNAVAILABLE            retry later, check endpoint
ServiceUnavailable
connect or read timeouts                               DEADLINE_EXCEEDED      retry, raise timeouts
anything else                                          UNKNOWN                report it
=====================================================  =====================  ==============================
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import (  # type: ignore[import-untyped]
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    ReadTimeoutError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from genkit_sessions.errors import GenkitError, Status

__all__ = ["BACKEND_ERRORS", "cancellation_codes", "error_code", "map_error"]

BACKEND_ERRORS = (ClientError, BotoCoreError)
"""What a boto3 call can raise; the store maps each through :func:`map_error`."""

_CODES: dict[str, tuple[Status, str]] = {
    "ConditionalCheckFailedException": (Status.ABORTED, "another writer changed the item first; retry the call"),
    "TransactionConflictException": (Status.ABORTED, "a concurrent transaction touched the same items; retry"),
    "TransactionInProgressException": (Status.ABORTED, "a concurrent transaction is in progress; retry"),
    "ProvisionedThroughputExceededException": (
        Status.RESOURCE_EXHAUSTED,
        "the table is over its provisioned throughput; slow down, or raise capacity / use on-demand billing",
    ),
    "ThrottlingException": (Status.RESOURCE_EXHAUSTED, "DynamoDB throttled the request; slow down and retry"),
    "RequestLimitExceeded": (
        Status.RESOURCE_EXHAUSTED,
        "the account's request limit is exceeded; slow down or ask AWS for a higher limit",
    ),
    "LimitExceededException": (Status.RESOURCE_EXHAUSTED, "a DynamoDB account limit is exceeded; slow down"),
    "ItemCollectionSizeLimitExceededException": (
        Status.RESOURCE_EXHAUSTED,
        "the session's item collection hit the 10 GB limit of a table with a local secondary index; "
        "delete old sessions or drop the index",
    ),
    "ResourceNotFoundException": (
        Status.FAILED_PRECONDITION,
        "the table does not exist; create it with `genkit-sessions dynamodb create-table --table NAME` "
        "or genkit_sessions.dynamodb.create_table()",
    ),
    "ValidationException": (Status.INVALID_ARGUMENT, "DynamoDB rejected the request as invalid"),
    "SerializationException": (Status.INVALID_ARGUMENT, "DynamoDB could not read the request"),
    "AccessDeniedException": (
        Status.PERMISSION_DENIED,
        "grant the caller dynamodb:GetItem, BatchGetItem, Query, PutItem, UpdateItem, DeleteItem, "
        "BatchWriteItem and TransactWriteItems on the table",
    ),
    "UnrecognizedClientException": (Status.UNAUTHENTICATED, "check the AWS credentials"),
    "InvalidSignatureException": (Status.UNAUTHENTICATED, "check the AWS secret key and the clock"),
    "ExpiredTokenException": (Status.UNAUTHENTICATED, "refresh the AWS session credentials"),
    "MissingAuthenticationTokenException": (Status.UNAUTHENTICATED, "configure AWS credentials"),
    "InternalServerError": (Status.UNAVAILABLE, "DynamoDB had an internal error; retry later"),
    "ServiceUnavailable": (Status.UNAVAILABLE, "DynamoDB is unavailable; retry later"),
    "RequestTimeout": (Status.DEADLINE_EXCEEDED, "the request timed out; retry"),
}

_CANCEL_CODES: dict[str, tuple[Status, str]] = {
    "ConditionalCheckFailed": _CODES["ConditionalCheckFailedException"],
    "TransactionConflict": _CODES["TransactionConflictException"],
    "ThrottlingError": _CODES["ThrottlingException"],
    "ProvisionedThroughputExceeded": _CODES["ProvisionedThroughputExceededException"],
    "ItemCollectionSizeLimitExceeded": _CODES["ItemCollectionSizeLimitExceededException"],
    "ValidationError": _CODES["ValidationException"],
}


def error_code(error: BaseException) -> str:
    """The backend's error code of a ClientError (empty for anything else)."""
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", ""))
    return ""


def cancellation_codes(error: ClientError) -> list[str]:
    """Per-action codes of a TransactionCanceledException (``"None"`` for actions that were fine)."""
    reasons = error.response.get("CancellationReasons")
    if isinstance(reasons, list):
        return [str(r.get("Code", "None")) if isinstance(r, dict) else "None" for r in reasons]
    message = str(error.response.get("Error", {}).get("Message", ""))
    start, end = message.rfind("["), message.rfind("]")
    if 0 <= start < end:
        return [code.strip() for code in message[start + 1 : end].split(",")]
    return []


def map_error(error: BaseException, operation: str, table: str) -> GenkitError:
    """The GenkitError for a botocore failure of ``operation`` on ``table``."""
    where = f"DynamoDB {operation} on table {table!r}"
    details: dict[str, Any] = {"backend": "dynamodb", "operation": operation, "table": table}
    if isinstance(error, ClientError):
        code = error_code(error)
        backend_message = str(error.response.get("Error", {}).get("Message", "")) or str(error)
        details["code"] = code
        if code == "TransactionCanceledException":
            codes = [c for c in cancellation_codes(error) if c not in ("None", "")]
            details["cancellation_reasons"] = codes
            for candidate in (
                "ThrottlingError",
                "ProvisionedThroughputExceeded",
                "ValidationError",
                "ItemCollectionSizeLimitExceeded",
                "TransactionConflict",
                "ConditionalCheckFailed",
            ):
                if candidate in codes:
                    status, advice = _CANCEL_CODES[candidate]
                    break
            else:
                status, advice = Status.ABORTED, "the transaction was cancelled; retry"
        elif code in _CODES:
            status, advice = _CODES[code]
        else:
            http = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            if isinstance(http, int) and http >= 500:
                status, advice = Status.UNAVAILABLE, "DynamoDB failed on its side; retry later"
            else:
                status, advice = Status.UNKNOWN, "an unexpected DynamoDB error; report it with this message"
        return GenkitError(status, f"{where} failed: {code}: {backend_message}; {advice}", details=details)
    details["code"] = type(error).__name__
    if isinstance(error, (ReadTimeoutError, ConnectTimeoutError)):
        status, advice = Status.DEADLINE_EXCEEDED, "the request timed out; retry, or raise the client's timeouts"
    elif isinstance(error, (EndpointConnectionError, ConnectionClosedError, BotoConnectionError)):
        status, advice = Status.UNAVAILABLE, "DynamoDB could not be reached; check the endpoint and network, retry"
    elif isinstance(error, NoCredentialsError):
        status, advice = Status.UNAUTHENTICATED, "configure AWS credentials (environment, profile or role)"
    elif isinstance(error, NoRegionError):
        status, advice = Status.INVALID_ARGUMENT, "pass region_name= or set AWS_DEFAULT_REGION"
    elif isinstance(error, ParamValidationError):
        status, advice = Status.INVALID_ARGUMENT, "the request did not validate; report it with this message"
    else:
        status, advice = Status.UNKNOWN, "an unexpected botocore error; report it with this message"
    return GenkitError(status, f"{where} failed: {error}; {advice}", details=details)
