#!/usr/bin/env python3
"""Extracts from Intel's perfmon files (github.com/intel/perfmon, BSD-3-Clause) the CHA
events and metrics behind Intel's NUMA read shares, into
crates/uncore/data/intel/cha-numa.json.

Usage: scripts/intel-perfmon-cha-numa.py PERFMON_CHECKOUT OUT_FILE

Subset rule (crates/uncore/data/intel/PROVENANCE.md):
  * from each generation's uncore event file, the CHA events that Intel's metrics
    numa_reads_addressed_to_local_dram / numa_reads_addressed_to_remote_dram name
    (the event name before any ':filter' modifier), with the fields EventName, Unit,
    EventCode, UMask, UMaskExt, Filter, Counter, Deprecated;
  * from each generation's metrics file, those two metrics with MetricName,
    UnitOfMeasure, Events, Constants, Formula, BriefDescription.
Nothing is rewritten: every kept value is Intel's.
"""
import json, sys

GENERATIONS = {
    "skx": ("SKX/events/skylakex_uncore.json", "SKX/metrics/skylakex_metrics.json"),
    "clx": ("CLX/events/cascadelakex_uncore.json", "CLX/metrics/cascadelakex_metrics.json"),
    "icx": ("ICX/events/icelakex_uncore.json", "ICX/metrics/icelakex_metrics.json"),
    "spr": ("SPR/events/sapphirerapids_uncore.json", "SPR/metrics/sapphirerapids_metrics.json"),
    "emr": ("EMR/events/emeraldrapids_uncore.json", "EMR/metrics/emeraldrapids_metrics.json"),
    "gnr": ("GNR/events/graniterapids_uncore.json", "GNR/metrics/graniterapids_metrics.json"),
}
METRICS = ["numa_reads_addressed_to_local_dram", "numa_reads_addressed_to_remote_dram"]
EVENT_FIELDS = ["EventName", "Unit", "EventCode", "UMask", "UMaskExt", "Filter", "Counter",
                "Deprecated"]
METRIC_FIELDS = ["MetricName", "UnitOfMeasure", "Events", "Constants", "Formula",
                 "BriefDescription"]


def main(root, out):
    result = {"source": "github.com/intel/perfmon", "generations": {}}
    for gen, (events_path, metrics_path) in GENERATIONS.items():
        with open(f"{root}/{metrics_path}") as f:
            metrics = [m for m in json.load(f)["Metrics"] if m["MetricName"] in METRICS]
        names = {e["Name"].split(":")[0] for m in metrics for e in m["Events"]}
        with open(f"{root}/{events_path}") as f:
            data = json.load(f)
        events = [{k: e[k] for k in EVENT_FIELDS if k in e}
                  for e in data["Events"] if e["EventName"] in names]
        result["generations"][gen] = {
            "events_file": events_path,
            "events_header": data["Header"],
            "metrics_file": metrics_path,
            "events": events,
            "metrics": [{k: m[k] for k in METRIC_FIELDS if k in m} for m in metrics],
        }
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
