//! Records of the memory probes (`mem.bandwidth`, `mem.latency`, `mem.loaded`,
//! `mem.migrate`) and what they share: placement, pages, timer.
