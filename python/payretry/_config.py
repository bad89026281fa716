"""The client config as TypedDicts, for type checkers: annotate a config dict as
``payretry.ClientConfig`` and mypy checks its keys and value types.

Generated from the parser's key table (src/model/config_keys.cpp) by
``build/tests/unit/config_reference_tool --write .``; do not edit. Every key is optional
here (total=False); docs/config.md says which are required, and the parser checks
ranges, choices and that exactly one form of a secret is given.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, TypedDict, Union

WebhookConfig = TypedDict(
    "WebhookConfig",
    {
        "secret": str,
        "secret_env": str,
        "secret_file": str,
        "previous_secret": str,
        "previous_secret_env": str,
        "previous_secret_file": str,
        "api_v3_key": str,
        "api_v3_key_env": str,
        "api_v3_key_file": str,
        "public_key_env": str,
        "public_key_file": str,
        "public_key_id": str,
        "webhook_id": str,
        "notification_url": str,
        "tolerance_ms": int,
    },
    total=False,
)

LedgerConfig = TypedDict(
    "LedgerConfig",
    {
        "url": str,
        "url_env": str,
        "url_file": str,
        "secret": str,
        "secret_env": str,
        "secret_file": str,
        "lease_margin_ms": int,
        "timeout_ms": int,
    },
    total=False,
)

LogConfig = TypedDict(
    "LogConfig",
    {
        "path": Optional[str],
        "level": str,
        "name": str,
    },
    total=False,
)

TlsConfig = TypedDict(
    "TlsConfig",
    {
        "verify": bool,
        "ca_file": Optional[str],
    },
    total=False,
)

BudgetConfig = TypedDict(
    "BudgetConfig",
    {
        "tokens": int,
        "retry_cost": int,
        "success_refund": int,
    },
    total=False,
)

RetryConfig = TypedDict(
    "RetryConfig",
    {
        "max_attempts": int,
        "connect_timeout_ms": int,
        "attempt_timeout_ms": int,
        "deadline_ms": int,
        "backoff_base_ms": int,
        "backoff_cap_ms": int,
        "retry_after_max_ms": int,
        "min_attempt_ms": int,
        "jitter_seed": int,
    },
    total=False,
)

AuthAlipayConfig = TypedDict(
    "AuthAlipayConfig",
    {
        "app_id": str,
        "private_key_env": str,
        "private_key_file": str,
        "alipay_public_key_env": str,
        "alipay_public_key_file": str,
    },
    total=False,
)

AuthWechatpayConfig = TypedDict(
    "AuthWechatpayConfig",
    {
        "serial_no": str,
        "private_key_env": str,
        "private_key_file": str,
        "platform_public_key_env": str,
        "platform_public_key_file": str,
        "platform_serial": str,
    },
    total=False,
)

AuthOauth2Config = TypedDict(
    "AuthOauth2Config",
    {
        "client_id": str,
        "client_secret": str,
        "client_secret_env": str,
        "client_secret_file": str,
        "token_path": str,
        "scope": str,
    },
    total=False,
)

AuthBasicConfig = TypedDict(
    "AuthBasicConfig",
    {
        "username": str,
        "password": str,
        "password_env": str,
        "password_file": str,
    },
    total=False,
)

AuthConfig = TypedDict(
    "AuthConfig",
    {
        "bearer": str,
        "bearer_env": str,
        "bearer_file": str,
        "header": str,
        "value": str,
        "value_env": str,
        "value_file": str,
        "api_key": str,
        "api_key_env": str,
        "api_key_file": str,
        "basic": AuthBasicConfig,
        "oauth2": AuthOauth2Config,
        "wechatpay": AuthWechatpayConfig,
        "alipay": AuthAlipayConfig,
    },
    total=False,
)

ClientConfig = TypedDict(
    "ClientConfig",
    {
        "provider": Union[str, Dict[str, Any]],
        "base_url": str,
        "create_path": str,
        "merchant_id": str,
        "account_id": str,
        "adopt_unscoped_rows": bool,
        "auth": AuthConfig,
        "headers": Dict[str, str],
        "retry": RetryConfig,
        "budget": BudgetConfig,
        "tls": TlsConfig,
        "log": LogConfig,
        "max_body_bytes": int,
        "ledger": Union[str, LedgerConfig],
        "webhook": WebhookConfig,
        "in_progress_wait_ms": int,
        "key_retention_ms": int,
        "not_found_grace_ms": int,
        "max_connections": int,
        "max_opening_connections": int,
        "engine_threads": int,
        "proxy": Optional[str],
        "proxy_env": str,
        "proxy_file": str,
    },
    total=False,
)

__all__ = ["AuthAlipayConfig", "AuthBasicConfig", "AuthConfig", "AuthOauth2Config", "AuthWechatpayConfig", "BudgetConfig", "ClientConfig", "LedgerConfig", "LogConfig", "RetryConfig", "TlsConfig", "WebhookConfig"]
