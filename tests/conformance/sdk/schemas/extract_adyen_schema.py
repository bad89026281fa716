"""Writes the part of Adyen's Webhooks-v1.json that sim_webhooks_schema.py needs (see README.md).

  python3 extract_adyen_schema.py Webhooks-v1.json > adyen-webhooks-v1.min.json

Kept: openapi, info, and for each webhook payretry-sim sends (EVENT_CODES) the entry's request
schema $ref, with every component schema that schema reaches through $ref, unchanged.
Descriptions and examples are kept too: the subset is the published text, only less of it.
"""
import json
import sys

EVENT_CODES = ["AUTHORISATION"]  # what sim/webhook_notice.cpp sends for Adyen
REF = "#/components/schemas/"


def refs_in(node, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith(REF):
            out.add(r[len(REF):])
        for v in node.values():
            refs_in(v, out)
    elif isinstance(node, list):
        for v in node:
            refs_in(v, out)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    schemas = doc["components"]["schemas"]
    webhooks, todo = {}, []
    for code in EVENT_CODES:
        schema = doc["webhooks"]["/" + code]["post"]["requestBody"]["content"]["application/json"]["schema"]
        webhooks["/" + code] = {"post": {"requestBody": {"content": {"application/json": {"schema": schema}}}}}
        todo.append(schema["$ref"][len(REF):])
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found = set()
        refs_in(schemas[name], found)
        todo.extend(found - seen)
    out = {"openapi": doc["openapi"], "info": doc["info"], "webhooks": webhooks,
           "components": {"schemas": {n: schemas[n] for n in sorted(seen)}}}
    json.dump(out, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
