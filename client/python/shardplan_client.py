#!/usr/bin/env python3
"""Minimal shardplan client an orchestrator can copy.

Streams ShardingPlanner.PlanSharding and prints each PlanUpdate as it arrives: first the
Megatron baseline, then every improvement the search finds, then the final plan
(final = true).

Stubs: generated at build time (`make` or `cmake --build build --target
shardplan_python_stubs`) into build/client/python; put that directory on PYTHONPATH:

    PYTHONPATH=build/client/python python3 client/python/shardplan_client.py \
        --server 127.0.0.1:50051 --model llama-3.1-70b --gpus 16 --max-seconds 10

TLS and tokens: --tls-ca CA.pem (server certificate), --tls-cert/--tls-key (mutual TLS),
--token TOKEN or $SHARDPLAN_TOKEN (sent as "authorization: Bearer TOKEN").

Needs python3-grpcio and python3-protobuf (Debian packages). Exit status: 0 when the stream
ended with a final update, 1 on a gRPC error (the code and the server's message, which names
the offending field for INVALID_ARGUMENT, are printed to stderr).
"""

import argparse
import json
import os
import sys

import grpc
from google.protobuf import json_format

from shardplan.v1 import shardplan_pb2
from shardplan.v1 import shardplan_pb2_grpc


def build_request(args):
    """The PlanRequest for the command-line arguments (field names as in shardplan.proto)."""
    return shardplan_pb2.PlanRequest(
        model=shardplan_pb2.ModelSource(catalog_name=args.model),
        cluster=shardplan_pb2.ClusterSpec(
            hardware=args.hardware, num_gpus=args.gpus, gpus_per_node=args.gpus_per_node),
        workload=shardplan_pb2.Workload(
            input_tokens=args.isl, output_tokens=args.osl, concurrency=args.concurrency),
        options=shardplan_pb2.SearchOptions(
            method=args.method,
            max_evaluations=args.max_evaluations,
            max_seconds=args.max_seconds,
            seed=args.seed,
            warm_start=not args.no_warm_start),
    )


def describe(update):
    """One human-readable line per update."""
    p = update.prediction
    best = (f"{p.output_tokens_per_s:,.0f} tok/s, TTFT {p.ttft_ms:.1f} ms, "
            f"TPOT {p.tpot_ms:.1f} ms" if p.feasible else f"infeasible: {p.infeasible_reason}")
    plan = update.plan
    return (f"[{update.kind or 'update':>11}] {update.evaluations:>6} evals "
            f"{update.elapsed_seconds:6.2f} s  dp={plan.dp} tp={plan.tp} pp={plan.pp} "
            f"ep={plan.ep}  {best}  x{update.speedup_vs_baseline:.3f} vs Megatron")


def open_channel(args):
    """A plaintext channel, or TLS (mutual TLS with --tls-cert/--tls-key)."""
    if not (args.tls or args.tls_ca or args.tls_cert or args.tls_key
            or args.tls_server_name):
        return grpc.insecure_channel(args.server)

    def read(path):
        if not path:
            return None
        with open(path, "rb") as f:
            return f.read()

    credentials = grpc.ssl_channel_credentials(
        root_certificates=read(args.tls_ca), private_key=read(args.tls_key),
        certificate_chain=read(args.tls_cert))
    options = []
    if args.tls_server_name:
        options.append(("grpc.ssl_target_name_override", args.tls_server_name))
    return grpc.secure_channel(args.server, credentials, options=options)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="127.0.0.1:50051")
    parser.add_argument("--model", default="llama-3.1-8b", help="catalog model name")
    parser.add_argument("--hardware", default="h100-sxm-80gb")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--isl", type=int, default=1024)
    parser.add_argument("--osl", type=int, default=1024)
    parser.add_argument("--concurrency", type=int, default=0)
    parser.add_argument("--method", default="rl")
    parser.add_argument("--max-evaluations", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-warm-start", action="store_true")
    parser.add_argument("--timeout", type=float, default=600,
                        help="gRPC deadline for the whole stream, seconds")
    parser.add_argument("--json", action="store_true",
                        help="print each update as one line of proto JSON instead")
    parser.add_argument("--tls-ca", help="PEM CA bundle of the server's certificate "
                        "(switches to TLS; without it: system roots with --tls)")
    parser.add_argument("--tls", action="store_true", help="connect with TLS")
    parser.add_argument("--tls-cert", help="PEM client certificate (mutual TLS)")
    parser.add_argument("--tls-key", help="PEM client private key (mutual TLS)")
    parser.add_argument("--tls-server-name",
                        help="name expected in the server's certificate")
    parser.add_argument("--token", default=os.environ.get("SHARDPLAN_TOKEN"),
                        help="bearer token (default: $SHARDPLAN_TOKEN)")
    args = parser.parse_args(argv)

    # Bearer token: plain call metadata, so that it also works on a plaintext
    # loopback channel (gRPC's call credentials insist on TLS).
    metadata = [("authorization", "Bearer " + args.token)] if args.token else None
    with open_channel(args) as channel:
        stub = shardplan_pb2_grpc.ShardingPlannerStub(channel)
        final = None
        try:
            # A server-streaming call returns an iterator; cancel it with .cancel().
            for update in stub.PlanSharding(build_request(args), timeout=args.timeout,
                                            metadata=metadata):
                if args.json:
                    print(json.dumps(json_format.MessageToDict(update), separators=(",", ":")))
                else:
                    print(describe(update))
                sys.stdout.flush()
                if update.final:
                    final = update
        except grpc.RpcError as error:
            print(f"shardplan: {error.code().name}: {error.details()}", file=sys.stderr)
            return 1
    if final is None:
        print("shardplan: stream ended without a final update", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
