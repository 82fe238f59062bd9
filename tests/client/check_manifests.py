#!/usr/bin/env python3
"""Validates Kubernetes / Dynamo manifests (multi-document YAML; comment lines ignored) against
the JSON Schemas in deploy/schemas/ (see its README for their sources), by apiVersion and kind.

Usage: check_manifests.py SCHEMA_DIR [--expect-invalid] FILE_OR_DIR... (a directory: its *.yaml)
Exit 0 when every document of every file is valid (with --expect-invalid: when every file has at
least one invalid document, so the negative cases prove the check can fail); prints each error
with its field path.
"""
import json
import pathlib
import sys

import jsonschema
import yaml

SCHEMAS = {
    ("apps/v1", "Deployment"): "deployment-apps-v1.json",
    ("v1", "Service"): "service-v1.json",
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): "leaderworkerset-v1.json",
    ("nvidia.com/v1alpha1", "DynamoGraphDeployment"): "dynamographdeployment-v1alpha1.json",
}


def errors_of(schema_dir, path):
    """The schema errors of one file, as 'file: kind: path: message' lines."""
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except yaml.YAMLError as error:
        return [f"{path}: invalid YAML: {error}"]
    if not docs:
        return [f"{path}: no manifest"]
    out = []
    for doc in docs:
        key = (doc.get("apiVersion"), doc.get("kind")) if isinstance(doc, dict) else None
        if key not in SCHEMAS:
            out.append(f"{path}: no schema for apiVersion/kind {key}")
            continue
        schema = json.loads((schema_dir / SCHEMAS[key]).read_text())
        validator = jsonschema.Draft7Validator(schema)
        for error in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
            field = ".".join(str(p) for p in error.path) or "(root)"
            out.append(f"{path}: {key[1]}: {field}: {error.message}")
    return out


def main(argv):
    schema_dir = pathlib.Path(argv[1])
    expect_invalid = "--expect-invalid" in argv[2:]
    files = []
    for arg in argv[2:]:
        if arg == "--expect-invalid":
            continue
        path = pathlib.Path(arg)
        files += sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    if not files:
        print("no files given")
        return 1
    failed = 0
    for path in files:
        errors = errors_of(schema_dir, path)
        if expect_invalid:
            if errors:
                print(f"rejected as expected: {errors[0]}")
            else:
                print(f"FAIL: {path} passed the schemas but is invalid")
                failed += 1
        else:
            for e in errors:
                print("FAIL:", e)
            failed += bool(errors)
    print(f"manifest schema checks: {len(files)} file(s),",
          "OK" if failed == 0 else f"{failed} failure(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
