#!/usr/bin/env python3
"""Trims a provider's OpenAPI document to the operations payretry uses.

    trim.py FULL_DOCUMENT OUT.json METHOD:PATH [METHOD:PATH ...]

keeps `openapi`, `info`, `servers`, the named operations (with their path's
own `parameters`) and every component they reach through `$ref`, transitively,
unchanged. Everything else is dropped. A provider's whole document is large
(Stripe's is 8 MB) and openapi-core would walk it on every load; the subset
validates the same answers the same way, because nothing an operation refers
to is lost. A named operation the document does not have is an error: the
spec moved, and a subset without it would validate nothing.

Only references inside the document (`#/...`) are followed; a document split
into files (Checkout.com's) is loaded whole by run_sim_openapi.py instead.
Reads JSON, or YAML when the name ends in .yaml/.yml (PyYAML, in the venv)."""
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        if path.endswith((".yaml", ".yml")):
            import yaml

            # Timestamps stay strings: JSON Schema has no dates, and Mollie's
            # examples hold a "2024-02-30"-like value PyYAML cannot make a date.
            class Loader(yaml.SafeLoader):
                pass

            Loader.yaml_implicit_resolvers = {
                k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
                for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
            }
            return yaml.load(f, Loader=Loader)
        return json.load(f)


def refs_in(node, out):
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            out.add(ref)
        for v in node.values():
            refs_in(v, out)
    elif isinstance(node, list):
        for v in node:
            refs_in(v, out)


def resolve(doc, ref):
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[part]
    return node


def trim(doc, operations):
    out = {k: doc[k] for k in ("openapi", "info", "servers") if k in doc}
    out["paths"] = {}
    for op in operations:
        method, path = op.split(":", 1)
        method = method.lower()
        item = doc.get("paths", {}).get(path)
        if item is None or method not in item:
            raise SystemExit(f"trim.py: the document has no {method.upper()} {path}")
        kept = out["paths"].setdefault(path, {})
        if "parameters" in item:
            kept["parameters"] = item["parameters"]
        kept[method] = item[method]

    # Follow $ref to a fixed point; copy each component once, as it is.
    seen, todo = set(), set()
    refs_in(out["paths"], todo)
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        target = resolve(doc, ref)
        parts = ref[2:].split("/")
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p.replace("~1", "/").replace("~0", "~"), {})
        node[parts[-1].replace("~1", "/").replace("~0", "~")] = target
        refs_in(target, todo)
    return out


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    doc = load(argv[1])
    sub = trim(doc, argv[3:])
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(sub, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv)
