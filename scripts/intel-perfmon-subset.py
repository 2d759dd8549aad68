#!/usr/bin/env python3
"""Extracts the subset of Intel's perfmon files (github.com/intel/perfmon, BSD-3-Clause)
that numalab ships in crates/pmu/data/x86/intel/.

Usage: scripts/intel-perfmon-subset.py PERFMON_CHECKOUT OUT_DIR

Subset rule (documented in crates/pmu/data/README.md):
  * core event files: every event, with only the fields numalab reads (EventName,
    EventCode, UMask, CounterMask, Invert, EdgeDetect, AnyThread, MSRIndex, MSRValue,
    Counter, BriefDescription, Deprecated); the long PublicDescription and the PEBS /
    sampling fields are dropped.
  * metrics files: the metrics that can be computed from core counters of one thread:
    every event is a core event of the same file (or a PERF_METRICS.* / TOPDOWN.SLOTS
    fixed-counter event), with modifiers among cN, eN, iN, u0xNN, perf_metrics,
    percore, retire_latency (only for events the retire-latency file has a mean
    for), ocr_msr_val=...; constants among HYPERTHREADING_ON,
    THREADS_PER_CORE, DURATIONTIMEINMILLISECONDS and plain numbers; no uncore events,
    no socket or TSC constants, no privilege-filtered (:SUP, :USER) events. Metrics
    whose threshold names a dropped metric are dropped too (until nothing changes).
    Fields kept: MetricName, LegacyName, Level, ParentCategory, BriefDescription,
    UnitOfMeasure, Events, Constants, Formula, Category, Threshold {Formula,
    ThresholdMetrics}, MetricGroup, LocateWith (the event to sample).
  * retire-latency files (Granite Rapids): unmodified.
Nothing is rewritten: every kept value is Intel's.
"""
import json, os, re, shutil, sys

GENERATIONS = {
    # id: (core events, metrics, retire latency or None)
    "skx": ("SKX/events/skylakex_core.json", "SKX/metrics/skylakex_metrics.json", None),
    "clx": ("CLX/events/cascadelakex_core.json", "CLX/metrics/cascadelakex_metrics.json", None),
    "icx": ("ICX/events/icelakex_core.json", "ICX/metrics/icelakex_metrics.json", None),
    "spr": ("SPR/events/sapphirerapids_core.json", "SPR/metrics/sapphirerapids_metrics.json", None),
    "emr": ("EMR/events/emeraldrapids_core.json", "EMR/metrics/emeraldrapids_metrics.json", None),
    "gnr": ("GNR/events/graniterapids_core.json", "GNR/metrics/graniterapids_metrics.json",
            "GNR/metrics/graniterapids_retire_latency.json"),
    "srf": ("SRF/events/sierraforest_core.json", "SRF/metrics/sierraforest_metrics.json", None),
}
EVENT_FIELDS = ["EventName", "EventCode", "UMask", "CounterMask", "Invert", "EdgeDetect",
                "AnyThread", "MSRIndex", "MSRValue", "Counter", "BriefDescription", "Deprecated"]
METRIC_FIELDS = ["MetricName", "LegacyName", "Level", "ParentCategory", "BriefDescription",
                 "UnitOfMeasure", "Events", "Constants", "Formula", "Category", "Threshold",
                 "MetricGroup", "LocateWith"]
MODIFIER = re.compile(r"^(c\d+|e\d|i\d|u0x[0-9a-fA-F]+|perf_metrics|percore|retire_latency|ocr_msr_val=0x[0-9a-fA-F]+)$")
CONSTANTS = {"HYPERTHREADING_ON", "THREADS_PER_CORE", "DURATIONTIMEINMILLISECONDS"}
FIXED_PSEUDO = re.compile(r"^PERF_METRICS\.[A-Z_]+$")


def usable(m, core, retire):
    for e in m.get("Events", []):
        base, *mods = e["Name"].split(":")
        if "retire_latency" in mods and base not in retire:
            return False
        if base not in core and not FIXED_PSEUDO.match(base):
            return False
        if not all(MODIFIER.match(x) for x in mods):
            return False
    for c in m.get("Constants", []):
        if c["Name"] not in CONSTANTS and not re.fullmatch(r"[0-9.]+", c["Name"]):
            return False
    f = m.get("Formula", "")
    if "[" in f or "socket_count" in f or "DURATIONTIMEINSECONDS" in f:
        return False
    return True


def main(src, out):
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(src, "LICENSE"), os.path.join(out, "LICENSE"))
    for gid, (events, metrics, retire) in GENERATIONS.items():
        ev = json.load(open(os.path.join(src, events)))
        core = {}
        kept_events = []
        for e in ev["Events"]:
            core[e["EventName"]] = e
            kept_events.append({k: e[k] for k in EVENT_FIELDS if k in e})
        with open(os.path.join(out, f"{gid}-core.json"), "w") as f:
            json.dump({"Header": ev["Header"], "Events": kept_events}, f, indent=0)
            f.write("\n")
        mt = json.load(open(os.path.join(src, metrics)))
        rl = json.load(open(os.path.join(src, retire)))["Data"] if retire else {}
        ms = [m for m in mt["Metrics"] if usable(m, core, rl)]
        while True:
            legacy = {m.get("LegacyName") for m in ms}
            names = {m["MetricName"] for m in ms}
            def ok(m):
                th = m.get("Threshold") or {}
                for t in th.get("ThresholdMetrics", []):
                    if t["Value"] not in legacy:
                        return False
                return True
            nxt = [m for m in ms if ok(m)]
            if len(nxt) == len(ms):
                break
            ms = nxt
        kept = []
        for m in ms:
            k = {f: m[f] for f in METRIC_FIELDS if f in m}
            if "Threshold" in k:
                k["Threshold"] = {f: k["Threshold"][f] for f in ("Formula", "ThresholdMetrics")
                                  if f in k["Threshold"]}
            kept.append(k)
        with open(os.path.join(out, f"{gid}-metrics.json"), "w") as f:
            json.dump({"Header": mt["Header"], "Metrics": kept}, f, indent=0)
            f.write("\n")
        if retire:
            shutil.copy(os.path.join(src, retire), os.path.join(out, f"{gid}-retire-latency.json"))
        print(gid, len(kept_events), "events,", len(kept), "of", len(mt["Metrics"]), "metrics")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
