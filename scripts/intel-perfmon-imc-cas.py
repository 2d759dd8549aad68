#!/usr/bin/env python3
"""Extracts from Intel's perfmon files (github.com/intel/perfmon, BSD-3-Clause) the
memory-controller (iMC) CAS-count events behind numalab's read + write = total rule,
into crates/uncore/data/intel/imc-cas.json.

Usage: scripts/intel-perfmon-imc-cas.py PERFMON_CHECKOUT OUT_FILE

Subset rule (crates/uncore/data/intel/PROVENANCE.md):
  * from each generation's uncore event file, the events named UNC_M_CAS_COUNT.RD,
    .WR, .ALL and, where the iMC has two sub-channel schedulers (Granite Rapids),
    UNC_M_CAS_COUNT_SCH0.* / UNC_M_CAS_COUNT_SCH1.* with the suffixes RD, WR and ALL,
    with the fields EventName, Unit, EventCode, UMask, UMaskExt, Counter, Deprecated,
    BriefDescription.
Nothing is rewritten: every kept value is Intel's.
"""
import json, sys

GENERATIONS = {
    "skx": "SKX/events/skylakex_uncore.json",
    "clx": "CLX/events/cascadelakex_uncore.json",
    "icx": "ICX/events/icelakex_uncore.json",
    "spr": "SPR/events/sapphirerapids_uncore.json",
    "emr": "EMR/events/emeraldrapids_uncore.json",
    "gnr": "GNR/events/graniterapids_uncore.json",
}
PREFIXES = ["UNC_M_CAS_COUNT", "UNC_M_CAS_COUNT_SCH0", "UNC_M_CAS_COUNT_SCH1"]
NAMES = {f"{p}.{s}" for p in PREFIXES for s in ("RD", "WR", "ALL")}
EVENT_FIELDS = ["EventName", "Unit", "EventCode", "UMask", "UMaskExt", "Counter",
                "Deprecated", "BriefDescription"]


def main(root, out):
    result = {"source": "github.com/intel/perfmon", "generations": {}}
    for gen, events_path in GENERATIONS.items():
        with open(f"{root}/{events_path}") as f:
            data = json.load(f)
        events = [{k: e[k] for k in EVENT_FIELDS if k in e}
                  for e in data["Events"] if e["EventName"] in NAMES]
        result["generations"][gen] = {
            "events_file": events_path,
            "events_header": data["Header"],
            "events": events,
        }
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
