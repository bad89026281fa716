#!/usr/bin/env python3
"""docs/config.schema.json and the config parser say the same of every config.

Feeds one set of configs through the schema (python-jsonschema, Draft 2020-12) and through the
library's parser (config_verdict_tool: parse_config, then bind_profile, what pay_client_new
checks before it opens anything), and fails on every config they disagree on:

- examples, which both must accept: each property's own example at every level of the schema
  (the level's example around it), boundary values, and every config in README.md, docs/*.md and
  the bindings' READMEs (JSON blocks, Python dicts, Rust raw strings, C string literals, shell);
- counter-examples, which both must refuse: at least one for each rule the parser enforces and
  the schema states (a type, a range, a length, a pattern, a form, a required key);
- parser-only cases, which the schema accepts and the parser refuses: each must be a rule the
  schema's own description names as one a schema cannot say.

The *_env variables the configs name are set, and their *_file paths and profile files are made,
for the parser's run only (their existence is the parser's to check, never the schema's), except
where a case is about exactly that.

usage: config_schema_agreement.py --tool build/tests/unit/config_verdict_tool --source .
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

try:
    import jsonschema
except ImportError:
    print("FAIL: this python3 has no jsonschema module (Debian: python3-jsonschema, which .ci/setup installs)")
    sys.exit(1)

BASE = {"base_url": "https://api.example.com", "ledger": "memory:"}
SECRET = "a-long-enough-value-0123456789ab"  # 32 printable characters: every secret's rule
# What a variable or a file holds for a key whose value is not a secret (by the key's stem).
VALUE_BY_STEM = {"url": "memory:", "proxy": "http://proxy.internal:3128"}
PROFILE_FILE = '{"name": "acme", "extends": "stripe"}\n'


def cfg(**kw: Any) -> dict:
    """BASE with top-level keys set (None removes one)."""
    out = dict(BASE)
    for k, v in kw.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


# ---- examples ------------------------------------------------------------------------------

def schema_examples(schema: dict) -> Iterator[tuple[str, Any]]:
    """Each property's example in a config: (where, config)."""

    def walk(node: dict, level: list[str], around: dict) -> Iterator[tuple[str, Any]]:
        for name, prop in node.get("properties", {}).items():
            where = ".".join(level + [name])
            if name.endswith("_env"):
                value: Any = "PAYRETRY_AGREE_" + re.sub(r"\W", "_", where).upper()
            elif name.endswith("_file"):
                value = "/etc/payretry-agree/" + where + ".txt"
            else:
                value = prop["examples"][0]
            config = place(around, level, name, value)
            if level == ["auth"] and name.startswith("api_key"):
                config["provider"] = "adyen"  # a profile that names an API-key header (parser-only rule)
            yield where, config
            for child in [prop] + prop.get("oneOf", []):
                if child.get("type") == "object" and "properties" in child:
                    inside = prop["examples"][0] if isinstance(prop["examples"][0], dict) else minimal(child)
                    yield from walk(child, level + [name], place(around, level, name, inside))

    yield from walk(schema, [], dict(BASE))


def minimal(node: dict) -> dict:
    """An object of `node`'s schema with only what it requires, each at its example."""
    props = node["properties"]
    names = list(node.get("required", []))
    names += [alt["oneOf"][0]["required"][0] for alt in node.get("allOf", []) if "oneOf" in alt]
    return {n: props[n]["examples"][0] for n in names}


def place(around: dict, level: list[str], name: str, value: Any) -> dict:
    """`around` with `value` as `name` in the object at `level`, without the key's other forms
    there, and with what that object needs beside it (auth: one form, header with its value)."""
    out = json.loads(json.dumps(around))
    obj = out
    for step in level:
        if not isinstance(obj.get(step), dict):
            obj[step] = {}
        obj = obj[step]
    stem = re.sub(r"_(env|file)$", "", name)
    if level == ["auth"]:
        obj.clear()  # one form of auth at a time
        if stem == "header":
            obj["value"] = SECRET
        if stem == "value":
            obj["header"] = "X-Api-Key"
    for form in (stem, stem + "_env", stem + "_file"):
        obj.pop(form, None)
    obj[name] = value
    return out


def boundary_examples() -> list[tuple[str, Any]]:
    """Values at the edge of a rule, which both must still accept."""
    return [
        ("create_path of 2048 characters", cfg(create_path="/" + "a" * 2047)),
        ("merchant_id of 128 characters", cfg(merchant_id="m" * 128)),
        ("log.name of 64 characters of two bytes each", cfg(log={"name": "é" * 64})),
        ("ledger.secret of 16 characters", cfg(ledger={"url": "memory:", "secret": "s" * 16})),
        ("base_url with a port, a path and a trailing /", cfg(base_url="http://127.0.0.1:8080/api/")),
        ("header value that is empty", cfg(headers={"X-Empty": ""})),
        ("header named like a reserved one but longer", cfg(headers={"Hosts": "x"})),
        ("memory ledger with its option", cfg(ledger="memory:?max_settled=10")),
        ("postgres:// ledger", cfg(ledger="postgres://payretry@db.internal/payments")),
        ("proxy null", cfg(proxy=None) | {"proxy": None}),
        ("socks5h proxy", cfg(proxy="socks5h://proxy.internal:1080")),
        ("a profile file", cfg(provider="/etc/payretry-agree/acme.json")),
        ("an inline profile", cfg(provider={"name": "acme", "extends": "stripe", "create_path": "/v1/charges"})),
        ("auth header and value_env", cfg(auth={"header": "X-Api-Key", "value_env": "PAYRETRY_AGREE_VALUE"})),
        ("webhook api_v3_key of 32 characters", cfg(webhook={"api_v3_key": "k" * 32})),
        ("retry at its bounds", cfg(retry={"max_attempts": 20, "jitter_seed": 2**53 - 1, "backoff_cap_ms": 0,
                                           "backoff_base_ms": 0})),
        ("an integer written 4.0", cfg(retry={"max_attempts": 4.0})),
    ]


def doc_configs(source: Path) -> list[tuple[str, Any]]:
    """Every config written in the READMEs and docs/: (file, config)."""
    files = [source / "README.md", *sorted((source / "docs").glob("*.md"))]
    files += sorted(source.glob("bindings/*/README.md")) + [source / "python" / "README.md"]
    found: dict[str, tuple[str, Any]] = {}
    for f in files:
        if not f.is_file():
            continue
        for block in re.findall(r"```[^\n]*\n(.*?)```", f.read_text(), re.S):
            for config in configs_in(block):
                found.setdefault(json.dumps(config, sort_keys=True), (str(f.relative_to(source)), config))
    return list(found.values())


def configs_in(text: str) -> Iterator[dict]:
    """The dicts with a base_url written in a code block, whatever the language."""
    # C: adjacent string literals are one string.
    for run in re.findall(r'(?:"(?:[^"\\\n]|\\.)*"\s*)+', text):
        joined = "".join(json.loads(lit) for lit in re.findall(r'"(?:[^"\\\n]|\\.)*"', run))
        yield from objects_in(joined)
    yield from objects_in(text)


def objects_in(text: str) -> Iterator[dict]:
    decoder = json.JSONDecoder()
    for at in [m.start() for m in re.finditer(r"\{", text)]:
        value: Any = None
        try:
            value, _ = decoder.raw_decode(text, at)
        except ValueError:
            end = balanced_end(text, at)
            if end:
                try:
                    value = ast.literal_eval(text[at:end])  # a Python dict (trailing commas, comments)
                except (ValueError, SyntaxError):
                    value = None
        if isinstance(value, dict) and "base_url" in value:
            yield value


def balanced_end(text: str, at: int) -> int:
    depth = 0
    for i in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return 0


# ---- counter-examples ------------------------------------------------------------------------

def counter_examples() -> list[tuple[str, Any]]:
    """Configs both must refuse: each names the rule it breaks."""
    long_name = "X" * 257
    c = [
        ("base_url missing", cfg(base_url=None)),
        ("ledger missing", cfg(ledger=None)),
        ("an unknown key", cfg(retyr={})),
        ("an unknown nested key", cfg(retry={"max_attemps": 3})),
        ("not an object", ["base_url"]),
        ("base_url ftp://", cfg(base_url="ftp://files.example.com")),
        ("base_url without a scheme", cfg(base_url="api.example.com")),
        ("base_url HTTPS:// in capitals", cfg(base_url="HTTPS://api.example.com")),
        ("base_url without a host", cfg(base_url="https://")),
        ("base_url with a path and no host", cfg(base_url="https:///v1")),
        ("base_url with a space", cfg(base_url="https://api.example.com/a b")),
        ("base_url with a query", cfg(base_url="https://api.example.com/?a=1")),
        ("base_url with a fragment", cfg(base_url="https://api.example.com/#x")),
        ("base_url with credentials", cfg(base_url="https://user:pw@api.example.com")),
        ("base_url not ASCII", cfg(base_url="https://bücher.example")),
        ("base_url with a trailing newline", cfg(base_url="https://api.example.com\n")),
        ("base_url a number", cfg(base_url=443)),
        ("base_url empty", cfg(base_url="")),
        ("provider misspelt", cfg(provider="stripee")),
        ("provider in capitals", cfg(provider="Stripe")),
        ("provider empty", cfg(provider="")),
        ("provider .json alone", cfg(provider=".json")),
        ("provider a profile file with a newline after .json", cfg(provider="/etc/acme.json\n")),
        ("provider a number", cfg(provider=1)),
        ("create_path without /", cfg(create_path="v1/charges")),
        ("create_path with #", cfg(create_path="/v1/charges#x")),
        ("create_path with a space", cfg(create_path="/v1/a b")),
        ("create_path of 2049 characters", cfg(create_path="/" + "a" * 2048)),
        ("merchant_id empty", cfg(merchant_id="")),
        ("merchant_id of 129 characters", cfg(merchant_id="m" * 129)),
        ("merchant_id with a space", cfg(merchant_id="19 00")),
        ("merchant_id not ASCII", cfg(merchant_id="商户")),
        ("account_id with a newline", cfg(account_id="acct_1\n")),
        ("adopt_unscoped_rows a string", cfg(adopt_unscoped_rows="true")),
        ("auth empty", cfg(auth={})),
        ("auth two forms", cfg(auth={"bearer": "a", "api_key": "b"})),
        ("auth.bearer and bearer_env", cfg(auth={"bearer": "a", "bearer_env": "B"})),
        ("auth.bearer_env and bearer_file", cfg(auth={"bearer_env": "B", "bearer_file": "/etc/b"})),
        ("auth.header without value", cfg(auth={"header": "X-Api-Key"})),
        ("auth.value without header", cfg(auth={"value": "v"})),
        ("auth.value_file without header", cfg(auth={"value_file": "/etc/v"})),
        ("auth.header Content-Type", cfg(auth={"header": "Content-Type", "value": "v"})),
        ("auth.header IDEMPOTENCY-KEY", cfg(auth={"header": "IDEMPOTENCY-KEY", "value": "v"})),
        ("auth.header with a space", cfg(auth={"header": "X Api", "value": "v"})),
        ("auth.header of 257 characters", cfg(auth={"header": long_name, "value": "v"})),
        ("auth.bearer with a line break", cfg(auth={"bearer": "sk_test\nX-Evil: 1"})),
        ("auth.bearer not ASCII", cfg(auth={"bearer": "clé"})),
        ("auth.bearer of 8193 characters", cfg(auth={"bearer": "b" * 8193})),
        ("auth.bearer empty", cfg(auth={"bearer": ""})),
        ("auth.bearer_env starting with a digit", cfg(auth={"bearer_env": "1KEY"})),
        ("auth.bearer_env with a dash", cfg(auth={"bearer_env": "STRIPE-KEY"})),
        ("auth.bearer_env holding the secret", cfg(auth={"bearer_env": "sk_live_51H8x..."})),
        ("auth.bearer_env of 257 characters", cfg(auth={"bearer_env": "K" * 257})),
        ("auth.bearer_file empty", cfg(auth={"bearer_file": ""})),
        ("auth.bearer_file holding a PEM key", cfg(auth={"bearer_file": "-----BEGIN PRIVATE KEY-----"})),
        ("auth.bearer_file with a newline", cfg(auth={"bearer_file": "/etc/key\n"})),
        ("auth.basic.username with ':'", cfg(auth={"basic": {"username": "a:b", "password": "p"}})),
        ("auth.basic without password", cfg(auth={"basic": {"username": "shop"}})),
        ("auth.oauth2 without client_id", cfg(auth={"oauth2": {"client_secret": "s"}})),
        ("auth.oauth2.client_id with ':'", cfg(auth={"oauth2": {"client_id": "a:b", "client_secret": "s"}})),
        ("auth.oauth2.token_path without /", cfg(auth={"oauth2": {"client_id": "a", "client_secret": "s",
                                                                  "token_path": "v1/oauth2/token"}})),
        ("auth.wechatpay.private_key inline", cfg(auth={"wechatpay": {
            "serial_no": "3775", "private_key": "-----BEGIN PRIVATE KEY-----",
            "platform_public_key_file": "/etc/p.pem"}})),
        ("auth.alipay without app_id", cfg(auth={"alipay": {"private_key_file": "/etc/k.pem",
                                                            "alipay_public_key_file": "/etc/p.pem"}})),
        ("headers a list", cfg(headers=["X-A: 1"])),
        ("headers Content-Type", cfg(headers={"Content-Type": "text/plain"})),
        ("headers host in lower case", cfg(headers={"host": "evil.example"})),
        ("headers a name with a space", cfg(headers={"X A": "1"})),
        ("headers a name of 257 characters", cfg(headers={long_name: "1"})),
        ("headers a value with a line break", cfg(headers={"X-A": "1\r\nX-Evil: 2"})),
        ("headers a value not ASCII", cfg(headers={"X-A": "é"})),
        ("headers a number value", cfg(headers={"X-A": 1})),
        ("retry.max_attempts 0", cfg(retry={"max_attempts": 0})),
        ("retry.max_attempts 21", cfg(retry={"max_attempts": 21})),
        ("retry.max_attempts 4.5", cfg(retry={"max_attempts": 4.5})),
        ("retry.max_attempts a string", cfg(retry={"max_attempts": "4"})),
        ("retry.deadline_ms 0", cfg(retry={"deadline_ms": 0})),
        ("retry.jitter_seed 2^53", cfg(retry={"jitter_seed": 2**53})),
        ("retry not an object", cfg(retry=4)),
        ("budget.tokens 1000001", cfg(budget={"tokens": 1000001})),
        ("tls.verify a string", cfg(tls={"verify": "false"})),
        ("tls.ca_file empty", cfg(tls={"ca_file": ""})),
        ("log.level verbose", cfg(log={"level": "verbose"})),
        ("log.name empty", cfg(log={"name": ""})),
        ("log.name of 65 characters", cfg(log={"name": "n" * 65})),
        ("log.name of 65 characters of two bytes each", cfg(log={"name": "é" * 65})),
        ("log.name with a tab", cfg(log={"name": "a\tb"})),
        ("log.path empty", cfg(log={"path": ""})),
        ("ledger sqlite:// relative", cfg(ledger="sqlite://payments.db")),
        ("ledger sqlite:/// with no path", cfg(ledger="sqlite:///")),
        ("ledger mysql://", cfg(ledger="mysql://db/payments")),
        ("ledger memory without its colon", cfg(ledger="memory")),
        ("ledger memory: and more", cfg(ledger="memory:x")),
        ("ledger with a line break", cfg(ledger="sqlite:///var/lib/a.db\n")),
        ("ledger object without url", cfg(ledger={"secret": "s" * 16})),
        ("ledger.url and url_env", cfg(ledger={"url": "memory:", "url_env": "LEDGER_URL"})),
        ("ledger.secret of 15 characters", cfg(ledger={"url": "memory:", "secret": "s" * 15})),
        ("ledger.secret of 15 characters of two bytes each", cfg(ledger={"url": "memory:", "secret": "é" * 15})),
        ("ledger.timeout_ms 49", cfg(ledger={"url": "memory:", "timeout_ms": 49})),
        ("webhook.api_v3_key of 31 characters", cfg(webhook={"api_v3_key": "k" * 31})),
        ("webhook.api_v3_key of 33 characters", cfg(webhook={"api_v3_key": "k" * 33})),
        ("webhook.secret with a line break", cfg(webhook={"secret": "whsec_1\n"})),
        ("webhook.public_key inline", cfg(webhook={"public_key": "-----BEGIN PUBLIC KEY-----"})),
        ("webhook.public_key_id of 129 characters", cfg(webhook={"public_key_id": "P" * 129})),
        ("webhook.webhook_id of 129 characters", cfg(webhook={"webhook_id": "W" * 129})),
        ("webhook.notification_url ftp://", cfg(webhook={"notification_url": "ftp://shop.example/hook"})),
        ("webhook.notification_url of 2049 characters",
         cfg(webhook={"notification_url": "https://shop.example/" + "h" * 2028})),
        ("webhook.tolerance_ms 999", cfg(webhook={"tolerance_ms": 999})),
        ("proxy ftp://", cfg(proxy="ftp://proxy.internal")),
        ("proxy with a space", cfg(proxy="http://proxy internal:3128")),
        ("proxy null beside proxy_env", cfg(proxy=None) | {"proxy": None, "proxy_env": "HTTPS_PROXY_URL"}),
        ("in_progress_wait_ms -1", cfg(in_progress_wait_ms=-1)),
        ("key_retention_ms 999", cfg(key_retention_ms=999)),
        ("max_body_bytes 0", cfg(max_body_bytes=0)),
        ("max_connections 65537", cfg(max_connections=65537)),
        ("engine_threads 65", cfg(engine_threads=65)),
    ]
    assert len(c) >= 100, len(c)
    return c


def parser_only() -> list[tuple[str, Any, str]]:
    """Configs the schema accepts and the parser refuses: (label, config, what the schema's
    description says of it). A config given as a string is sent as that text."""
    ledger_twice = '{"base_url": "https://api.example.com", "ledger": "memory:", "ledger": "memory:"}'
    return [
        ("a key given twice", ledger_twice, "a key given twice"),
        ("\\u0000 in a string", json.dumps(cfg(log={"path": "/var/log/a\u0000b"})), "\\u0000 in a string"),
        ("a *_env variable that is not set", cfg(auth={"bearer_env": "PAYRETRY_AGREE_NEVER_SET"}),
         "variable that is not set"),
        ("a *_file that cannot be read", cfg(auth={"bearer_file": "/nonexistent/payretry-agree/key"}),
         "a *_file that cannot be read"),
        ("a variable's value that breaks the key's rule", cfg(auth={"bearer_env": "PAYRETRY_AGREE_BAD_BEARER"}),
         "a value read from either that breaks its key's rule"),
        ("retry.backoff_cap_ms below the default backoff_base_ms", cfg(retry={"backoff_cap_ms": 100}),
         "retry.backoff_cap_ms below retry.backoff_base_ms"),
        ("retry.deadline_ms below the default min_attempt_ms", cfg(retry={"deadline_ms": 100}),
         "retry.deadline_ms below retry.min_attempt_ms"),
        ("a profile file that cannot be read", cfg(provider="/nonexistent/payretry-agree/acme.json"),
         "a profile file is read as docs/profiles.md says"),
        ("an inline profile extending no built-in", cfg(provider={"name": "acme", "extends": "stripee"}),
         "an inline profile"),
        ("wechatpay_v3 without merchant_id",
         cfg(provider="wechatpay_v3", auth={"wechatpay": {"serial_no": "3775", "private_key_env": "PAYRETRY_AGREE_PEM",
                                                          "platform_public_key_env": "PAYRETRY_AGREE_PEM"}}),
         "merchant_id is required where the profile's paths name {merchant_id}"),
        ("alipay without auth.alipay", cfg(provider="alipay"), "auth.wechatpay or auth.alipay"),
        ("auth.api_key for stripe", cfg(provider="stripe", auth={"api_key": "k"}),
         "auth.api_key only where the profile names an API-key header"),
        ("checkout_com's key header in headers", cfg(provider="checkout_com", headers={"Cko-Idempotency-Key": "k"}),
         "no header named as the profile's idempotency-key header"),
    ]


# ---- the parser's run ------------------------------------------------------------------------

class Fixtures:
    """The variables and files the configs name, made for the parser's run."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.env = dict(os.environ)
        self.env["PAYRETRY_AGREE_BAD_BEARER"] = "sk_test\nX-Evil: 1"
        self.env.pop("PAYRETRY_AGREE_NEVER_SET", None)
        self.set_here: dict[str, str] = {}
        self.files: dict[str, str] = {}

    def prepare(self, node: Any, key: str = "") -> Any:
        """`node` as the parser should see it: *_env variables set, *_file paths and profile files
        that could exist made (the schema sees the config as written)."""
        if isinstance(node, dict):
            return {k: self.prepare(v, k) for k, v in node.items()}
        if isinstance(node, list) or not isinstance(node, str):
            return node
        value = VALUE_BY_STEM.get(re.sub(r"_(env|file)$", "", key), SECRET)
        if key.endswith("_env") and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,255}", node) \
                and node not in ("PAYRETRY_AGREE_BAD_BEARER", "PAYRETRY_AGREE_NEVER_SET"):
            assert self.set_here.setdefault(node, value) == value, f"{node} is wanted with two values"
            self.env[node] = value
        if key.endswith("_file") and plain_path(node) and not node.startswith("/nonexistent/"):
            return self.file(node, value + "\n")
        # config.cpp parse_provider: a file when the name ends in .json after something.
        if key == "provider" and len(node) > 5 and node.endswith(".json") and plain_path(node) \
                and not node.startswith("/nonexistent/"):
            return self.file(node, PROFILE_FILE)
        return node

    def file(self, path: str, content: str) -> str:
        if path not in self.files:
            made = self.folder / f"f{len(self.files)}{'.json' if path.endswith('.json') else ''}"
            made.write_text(content)
            self.files[path] = str(made)
        return self.files[path]


def plain_path(p: str) -> bool:
    return bool(p) and len(p) <= 4096 and "-----" not in p and not re.search(r"[\x00-\x1f\x7f]", p)


def verdicts(tool: str, configs: list[Any], fixtures: Fixtures) -> list[dict]:
    # Each config goes as its text, as a user's file would: numbers keep every digit, a string
    # keeps its \u0000 (the tool would lose both re-printing a parsed object).
    texts = [c if isinstance(c, str) else json.dumps(fixtures.prepare(c), ensure_ascii=False) for c in configs]
    with tempfile.NamedTemporaryFile("w", suffix=".json", dir=fixtures.folder, delete=False) as f:
        json.dump(texts, f)
    out = subprocess.run([tool, f.name], env=fixtures.env, capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    assert len(result) == len(configs), (len(result), len(configs))
    return result


def schema_errors(validator: Any, config: Any) -> list[str]:
    instance = json.loads(config) if isinstance(config, str) else config
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:160]}"
            for e in validator.iter_errors(instance)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True, help="config_verdict_tool")
    ap.add_argument("--source", required=True, help="the repository")
    args = ap.parse_args()
    source = Path(args.source)
    schema = json.loads((source / "docs" / "config.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    examples = list(schema_examples(schema)) + boundary_examples()
    docs = doc_configs(source)
    if len(docs) < 8:
        print(f"FAIL: only {len(docs)} configs found in the READMEs and docs/: is the extraction broken?")
        return 1
    examples += [(f"{where}: {json.dumps(c)[:100]}", c) for where, c in docs]
    counters = counter_examples()
    only = parser_only()

    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="payretry-schema-agree-") as tmp:
        fixtures = Fixtures(Path(tmp))
        configs = [c for _, c in examples] + [c for _, c in counters] + [c for _, c, _ in only]
        said = verdicts(args.tool, configs, fixtures)
    said_examples = said[:len(examples)]
    said_counters = said[len(examples):len(examples) + len(counters)]
    said_only = said[len(examples) + len(counters):]
    for v in said:
        if v.get("unexpected"):
            problems.append(f"the parser threw something other than a ConfigError: {v['error']}")

    for (where, config), v in zip(examples, said_examples):
        errors = schema_errors(validator, config)
        if errors:
            problems.append(f"example {where}: the schema refuses it: {errors}")
        if not v["ok"]:
            problems.append(f"example {where}: the parser refuses it: {v['error']}")
    for (label, config), v in zip(counters, said_counters):
        if not schema_errors(validator, config):
            problems.append(f"counter-example '{label}': the schema accepts it"
                            + ("" if v["ok"] else f" (the parser: {v['error']})"))
        if v["ok"]:
            problems.append(f"counter-example '{label}': the parser accepts it")
    description = schema["description"]
    for (label, config, says), v in zip(only, said_only):
        errors = schema_errors(validator, config)
        if errors:
            problems.append(f"parser-only '{label}': the schema refuses it too: {errors} (move it to the counter-examples)")
        if v["ok"]:
            problems.append(f"parser-only '{label}': the parser accepts it")
        if says not in description:
            problems.append(f"parser-only '{label}': the schema's description does not say '{says}'")

    for p in problems:
        print("FAIL:", p)
    print(f"{len(examples)} examples ({len(docs)} from the READMEs and docs/), {len(counters)} counter-examples, "
          f"{len(only)} parser-only cases: {len(problems)} disagreements")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
