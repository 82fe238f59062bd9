#!/usr/bin/env bash
# make demo: placeholder until the server lands.
echo "demo: not yet wired"
