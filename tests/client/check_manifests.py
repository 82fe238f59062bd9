#!/usr/bin/env python3
"""Validates Kubernetes / Dynamo manifests (multi-document YAML; comment lines ignored) against
the JSON Schemas in deploy/schemas/ (see its README for their sources), by apiVersion and kind;
and the TensorRT-LLM config files that launch scripts (*.trtllm*.sh) write with heredocs
(`cat > FILE <<EOF` ... `EOF`), by file name: the LLM API options files and the
`trtllm-serve disaggregated` router config.

Usage: check_manifests.py SCHEMA_DIR [--expect-invalid] FILE_OR_DIR... (a directory: its *.yaml
and *.trtllm*.sh)
Exit 0 when every document of every file is valid (with --expect-invalid: when every file has at
least one invalid document, so the negative cases prove the check can fail); prints each error
with its field path.
"""
import json
import pathlib
import re
import sys

import jsonschema
import yaml

SCHEMAS = {
    ("apps/v1", "Deployment"): "deployment-apps-v1.json",
    ("v1", "Service"): "service-v1.json",
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): "leaderworkerset-v1.json",
    ("nvidia.com/v1alpha1", "DynamoGraphDeployment"): "dynamographdeployment-v1alpha1.json",
    ("nvidia.com/v1beta1", "DynamoGraphDeployment"): "dynamographdeployment-v1beta1.json",
}


# Config files of TensorRT-LLM launch scripts, by the name the script writes them under.
TRTLLM_ROUTER_FILE = "shardplan-trtllm-disagg.yaml"
TRTLLM_OPTIONS_FILE = re.compile(r"^shardplan-trtllm(-ctx|-gen)?\.yaml$")


VALIDATORS = {}
# libyaml's loader when the system has it (Debian python3-yaml does): the generated launch test
# hands over about a thousand manifests.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def schema_errors(schema_dir, schema_file, doc, label):
    key = (schema_dir, schema_file)
    if key not in VALIDATORS:
        schema = json.loads((schema_dir / schema_file).read_text())
        VALIDATORS[key] = jsonschema.Draft7Validator(schema)
    validator = VALIDATORS[key]
    out = []
    for error in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
        field = ".".join(str(p) for p in error.path) or "(root)"
        out.append(f"{label}: {field}: {error.message}")
    return out


def heredocs(text):
    """(file name, content) of each `cat > NAME <<EOF` / `<<'EOF'` block of a script."""
    out = []
    current = None
    for line in text.splitlines():
        if current is not None:
            if line == "EOF":
                out.append(tuple(current))
                current = None
            else:
                current[1] += line + "\n"
        elif line.startswith("cat > "):
            current = [line.split()[2], ""]
    return out


def script_errors(schema_dir, path):
    """The errors of the TensorRT-LLM config files a launch script writes."""
    out = []
    for name, content in heredocs(path.read_text()):
        label = f"{path}: {name}"
        try:
            doc = yaml.load(content, Loader=LOADER)
        except yaml.YAMLError as error:
            out.append(f"{label}: invalid YAML: {error}")
            continue
        if name == TRTLLM_ROUTER_FILE:
            errors = schema_errors(schema_dir, "trtllm-disagg-config.json", doc, label)
            if not errors:
                for role in ("context_servers", "generation_servers"):
                    servers = doc[role]
                    if servers["num_instances"] != len(servers["urls"]):
                        errors.append(f"{label}: {role}: num_instances {servers['num_instances']} "
                                      f"but {len(servers['urls'])} urls")
            out += errors
        elif TRTLLM_OPTIONS_FILE.match(name):
            out += schema_errors(schema_dir, "trtllm-llm-api-options.json", doc, label)
        else:
            out.append(f"{label}: no schema for this config file")
    return out


def errors_of(schema_dir, path):
    """The schema errors of one file, as 'file: kind: path: message' lines."""
    if path.suffix == ".sh":
        return script_errors(schema_dir, path)
    try:
        docs = [d for d in yaml.load_all(path.read_text(), Loader=LOADER) if d is not None]
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
        out += schema_errors(schema_dir, SCHEMAS[key], doc, f"{path}: {key[1]}")
    return out


def main(argv):
    schema_dir = pathlib.Path(argv[1])
    expect_invalid = "--expect-invalid" in argv[2:]
    files = []
    for arg in argv[2:]:
        if arg == "--expect-invalid":
            continue
        path = pathlib.Path(arg)
        if path.is_dir():
            files += sorted(path.glob("*.yaml")) + sorted(path.glob("*.trtllm*.sh"))
        else:
            files.append(path)
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
