#!/usr/bin/env python3
"""Checks the module rules (docs/architecture.md) on the #include lines of the sources.

The compiler does not stop a stray include (every target sees the repository root and
/usr/include), so this reads the include graph and fails on:
  - simulator/ including a server/, policy/ or client/ header;
  - the simulator's model (every simulator/ file but the API adapter and the calibration
    tools above it) including a generated proto or gRPC header, or the adapter's headers;
  - policy/ including a server/ or client/ header, a generated proto/gRPC header or the
    simulator's API adapter (the policy works on the compact types); proto/ including any
    module above it;
  - client/ including a simulator/, policy/ or server/ header;
  - LibTorch (<torch/...>, <ATen/...>, <c10/...>) outside policy/rl/ (tests included);
  - an include cycle between the files of one folder.
Run by ctest (label unit):
  scripts/check_module_rules.py [SOURCE_DIR]
Exit 0 when every rule holds; 1 with one line per violation otherwise.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_SUFFIXES = ('.h', '.hpp', '.cc', '.cpp', '.cu')
MODULES = ('proto', 'simulator', 'policy', 'server', 'client')

# The API adapter: the one place in the simulator's library that reads and writes the API's
# proto messages.
SIM_ADAPTER = re.compile(
    r'^simulator/(spec[^/]*|traffic_spec\.(h|cc)|internal/spec_checks\.h)$')
# Offline tools above the model (shardplan_calibration_harness, the two binaries): they use
# the adapter and the API messages, the model never uses them.
SIM_TOOLS = re.compile(
    r'^simulator/(calibration_harness[^/]*|internal/calibration_harness\.h|'
    r'calibration_transfer\.(h|cc)|calibrate_main\.cc|sim_main\.cc)$')
GENERATED = re.compile(r'(^shardplan/v1/|\.pb\.h$|^grpc|^grpcpp/)')
TORCH = re.compile(r'^(torch|ATen|c10)/')


def list_files(root):
    try:
        out = subprocess.run(
            ['git', 'ls-files', '--cached', '--others', '--exclude-standard'],
            cwd=root, check=True, capture_output=True, text=True).stdout
        files = out.splitlines()
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in ('build', '.git')
                       and not x.startswith('build-')]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files
                  if f.endswith(SOURCE_SUFFIXES) and os.path.isfile(os.path.join(root, f)))


def includes(root, path):
    result = []
    with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                result.append((number, m.group(1), m.group(2)))
    return result


def module_of(path):
    top = path.split('/', 1)[0]
    return top if top in MODULES else None


def check_layers(path, number, bracket, target, errors):
    where = f'{path}:{number}: #include {target}'
    if TORCH.match(target) and not path.startswith('policy/rl/'):
        errors.append(f'{where}: LibTorch outside policy/rl/')
    module = module_of(path)
    target_module = module_of(target) if bracket == '"' else None
    if module is None:
        return
    forbidden = {
        'proto': ('simulator', 'policy', 'server', 'client'),
        'simulator': ('policy', 'server', 'client'),
        'policy': ('server', 'client'),
        'client': ('simulator', 'policy', 'server'),
    }.get(module, ())
    if target_module in forbidden:
        errors.append(f'{where}: {module}/ may not include {target_module}/')
    if module == 'policy' and (GENERATED.search(target) or SIM_ADAPTER.match(target)):
        errors.append(f'{where}: policy/ works on the simulator\'s compact types, not the API '
                      'messages')
    if module != 'simulator':
        return
    if SIM_ADAPTER.match(path) or SIM_TOOLS.match(path):
        return
    if GENERATED.search(target):
        errors.append(f'{where}: generated proto/gRPC header outside the simulator\'s API '
                      'adapter (simulator/spec*.h, traffic_spec.h)')
    elif SIM_ADAPTER.match(target) or SIM_TOOLS.match(target):
        errors.append(f'{where}: the simulator\'s model includes the API adapter or a '
                      'calibration tool')


def find_cycles(files, graph_includes):
    """Include cycles among the files of one folder."""
    known = set(files)
    edges = {}
    for path in files:
        folder = os.path.dirname(path)
        for _, bracket, target in graph_includes[path]:
            if bracket != '"' or target not in known or os.path.dirname(target) != folder:
                continue
            edges.setdefault(path, set()).add(target)
    cycles = []
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return cycles


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    files = list_files(root)
    graph = {path: includes(root, path) for path in files}
    errors = []
    for path in files:
        for number, bracket, target in graph[path]:
            check_layers(path, number, bracket, target, errors)
    sources = [f for f in files if module_of(f) is not None]
    for cycle in find_cycles(sources, graph):
        errors.append('include cycle: ' + ' -> '.join(cycle))
    if errors:
        print('module rules violated (docs/architecture.md):', file=sys.stderr)
        for e in errors:
            print('  ' + e, file=sys.stderr)
        return 1
    print(f'module rules hold ({len(files)} files)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
