#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Validates fleet records against docs/record.schema.json.

    validate-record.py SCHEMA FILE...      (FILE "-": standard input)

Every non-empty line of every FILE must be one record that SCHEMA (JSON
Schema draft 2020-12, checked first) accepts, with python3-jsonschema:
a real validator, not this project's reader.  Prints one line per
problem ("FILE:LINE: where: what") and, on success, how many records and
of which modes and classes.  Exit 0: all valid (at least one record);
1: a record or the schema is not; 2: usage; 77: python3-jsonschema is
not installed (1 under CI=true, where a missing validator fails).
"""
import collections
import json
import os
import sys

try:
    from jsonschema import Draft202012Validator
except ImportError:
    CI = os.environ.get("CI", "") in ("true", "1", "yes")
    print("spank-nccl: validate-record.py: python3-jsonschema is not "
          "installed (bash tests/install-deps.sh)"
          + ("; CI=true does not skip" if CI else ""), file=sys.stderr)
    sys.exit(1 if CI else 77)


def lines(path):
    if path == "-":
        yield from enumerate(sys.stdin, 1)
        return
    with open(path, encoding="utf-8") as f:
        yield from enumerate(f, 1)


def main(argv):
    if len(argv) < 3:
        print("usage: validate-record.py SCHEMA FILE...", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        schema = json.load(f)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    seen = collections.Counter()
    records = bad = 0
    for path in argv[2:]:
        for n, line in lines(path):
            if not line.strip():
                continue
            records += 1
            try:
                record = json.loads(line)
            except ValueError as e:
                print(f"{path}:{n}: not JSON: {e}", file=sys.stderr)
                bad += 1
                continue
            errors = sorted(validator.iter_errors(record),
                            key=lambda e: list(map(str, e.absolute_path)))
            for e in errors:
                where = "/".join(map(str, e.absolute_path)) or "(record)"
                print(f"{path}:{n}: {where}: {e.message}", file=sys.stderr)
            bad += bool(errors)
            if isinstance(record, dict):
                seen[f"mode={record.get('mode')}"] += 1
                seen[f"class={record.get('class')}"] += 1
    if records == 0:
        print("spank-nccl: validate-record.py: no records", file=sys.stderr)
        return 1
    if bad:
        print(f"spank-nccl: validate-record.py: {bad} of {records} records "
              f"do not match {argv[1]}", file=sys.stderr)
        return 1
    print(f"{records} valid: " + " ".join(f"{k}:{v}"
                                          for k, v in sorted(seen.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
