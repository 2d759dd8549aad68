#!/usr/bin/env python3
"""Writes a large journal for measuring the memory of report, compare and db ingest.

The journal is the envelope of a real numalab run (tests/fixtures/bundles/vm-evaluate)
followed by that run's records: every record once, then the records of the repeated
kinds (default: mem.bandwidth and mem.latency, 1.8 KB and up to 23 KB a line, as a long
bandwidth and latency study writes them) again and again, each copy with its keys
suffixed "/rep-N" so that every key is unique, until the size asked for is reached.

With KINDS "tiny", the repeated records are instead short synthetic ones of about 150
bytes (kind bench.tiny, which numalab does not know: counted, not shown), the most
records a journal of that size can hold: what measures the state a reader keeps per
record.

With KINDS "c2c-matrix=N", the journal is instead the envelope of the
c2c-dual-xeon-gold-6242 fixture and one c2c.matrix record N CPUs wide (N*N cells, CPU
i and i+N/2 an SMT pair, two packages; SIZE_MIB is ignored): what measures the memory a
report or a comparison needs for its largest record (N=2000: a line of about 33 MB).

usage: scripts/big-journal.py OUT_FOLDER SIZE_MIB [KINDS [FIXTURE_FOLDER]]
KINDS: the repeated kinds, comma-separated (e.g. mem.bandwidth,mem.latency,mem.loaded),
"tiny" or "c2c-matrix=N".
Writes OUT_FOLDER/results.jsonl. Delete it after use: it is as large as asked.
"""
import json
import os
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, size = sys.argv[1], int(sys.argv[2]) << 20
    here = os.path.dirname(os.path.abspath(__file__))
    kinds = (sys.argv[3] if len(sys.argv) > 3 else "mem.bandwidth,mem.latency").split(",")
    if kinds[0].startswith("c2c-matrix="):
        return c2c_matrix(out, int(kinds[0].split("=", 1)[1]), here)
    fixture = sys.argv[4] if len(sys.argv) > 4 else os.path.join(
        here, "..", "tests", "fixtures", "bundles", "vm-evaluate")
    with open(os.path.join(fixture, "results.jsonl"), encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    envelope, records = lines[0], lines[1:]
    # Each record line split around its key, so that a copy is a concatenation.
    parts, once = [], []
    for line in records:
        record = json.loads(line)
        once.append(line)
        if record["kind"] not in kinds:
            continue
        key = record["key"]
        quoted = json.dumps(key)
        at = line.index('"key":' + quoted) + len('"key":') + len(quoted) - 1
        parts.append((line[:at], line[at:]))
    if kinds == ["tiny"]:
        # About 150 bytes with a 7-digit copy number: "%s/rep-N%s" as above.
        parts = [('{"line":"record","key":"bench/tiny',
                  '","kind":"bench.tiny","origin":"measured",'
                  '"time_utc":"2026-12-07T10:00:00Z","data":{"value":1.5,"pad":"xx"}}')]
    os.makedirs(out, exist_ok=True)
    written, rep = 0, 0
    with open(os.path.join(out, "results.jsonl"), "w", encoding="utf-8") as f:
        f.write(envelope + "\n")
        written += len(envelope) + 1
        for line in once:
            f.write(line + "\n")
            written += len(line) + 1
        while written < size and parts:
            for head, tail in parts:
                text = "%s/rep-%d%s\n" % (head, rep, tail)
                f.write(text)
                written += len(text)
            rep += 1
    print("%s: %d bytes, %d records once, then %d copies of %d records" %
          (os.path.join(out, "results.jsonl"), written, len(once), rep, len(parts)))


def c2c_matrix(out, n, here):
    """One c2c.matrix record of n CPUs (see the module's doc)."""
    fixture = os.path.join(here, "..", "tests", "fixtures", "bundles",
                           "c2c-dual-xeon-gold-6242", "results.jsonl")
    with open(fixture, encoding="utf-8") as f:
        envelope = f.readline().rstrip("\n")
    half = n // 2
    core = lambda c: c % half
    package = lambda c: 0 if core(c) < half // 2 else 1

    def cell(i, j):
        if i == j:
            return None
        # Four decimals, the last one never 0: about 8 bytes a cell, as measured
        # matrices have (means of samples).
        frac = ((i * 31 + j * 17) % 997) * 10 + 1 + (i + j) % 9
        if core(i) == core(j):
            return round(7.0 + frac / 10000.0, 4)
        base = 48.0 if package(i) == package(j) else 135.0
        return round(base + frac / 10000.0, 4)

    smt = [{"cpus": [c, c + half], "inter_ns": 47.5, "intra_ns": 7.4}
           for c in range(half)]
    packages = [{"cpus": [c for c in range(n) if package(c) == p],
                 "inter_ns": 135.0, "intra_ns": 48.0} for p in (0, 1)]
    data = {
        "cpus": list(range(n)),
        "matrix_ns": [[cell(i, j) for j in range(n)] for i in range(n)],
        "groups": [smt, packages],
        "levels": [
            {"evidence": "both", "hwloc": None, "inter_ns": 47.5, "intra_ns": 7.4,
             "separation": 87.3},
            {"evidence": "both", "hwloc": None, "inter_ns": 135.0, "intra_ns": 48.0,
             "separation": 30.1},
        ],
        "variant": "imported",
        "statistic": "as imported",
        "home_node_policy": None,
        "selection": None,
        "confidence": "high",
        "notes": ["made by scripts/big-journal.py: %d CPUs" % n],
        "topology_comparison": [],
    }
    record = {"line": "record", "key": "c2c/matrix/imported", "kind": "c2c.matrix",
              "origin": "imported", "time_utc": "2026-12-07T10:00:00Z", "data": data}
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "results.jsonl")
    line = json.dumps(record, separators=(",", ":"))
    with open(path, "w", encoding="utf-8") as f:
        f.write(envelope + "\n" + line + "\n")
    print("%s: one c2c.matrix record of %d CPUs, a line of %d bytes" % (path, n, len(line)))


if __name__ == "__main__":
    main()
