//! What the kernel keeps back from a NUMA node's free memory, read from `/proc/zoneinfo`:
//! free memory that an allocation by a probe still cannot get.
//!
//! A node's `MemFree` counts the pages on the buddy allocator's free lists. Of those, an
//! ordinary allocation cannot take:
//! - each zone's **high watermark** (below the low one the allocating thread reclaims or
//!   the OOM killer wakes; the kernel's own `MemAvailable` leaves out the high one);
//! - each zone's **lower-zone reserve** (`protection`: what a low zone such as DMA32 keeps
//!   from allocations that could have gone to a higher zone);
//! - the room left in the **per-CPU page lists** (`pagesets`: every CPU keeps up to `high`
//!   pages of every zone for itself; pages taken into a list are no longer in `MemFree`,
//!   and only that CPU allocates from them). When many threads allocate at once each of
//!   their CPUs' lists fills from the free lists; pages freed go to the freeing CPU's list.
//!   On a server with 160 CPUs and small nodes this is most of the free memory: an
//!   emulated 2 x 80-CPU guest with 384 MiB nodes held 159 MiB in these lists when its
//!   OOM killer ran.
//!
//! Each zone's reserve is at most its free pages. Kernels of other ages write more or
//! fewer fields per CPU (`high_min`, `high_max`): only `count` and `high` are read.

/// Pages of `node` that the kernel keeps from allocations (see the module's text), or
/// None when `text` (the contents of `/proc/zoneinfo`) has no zone of that node.
pub fn node_reserved_pages(text: &str, node: u32) -> Option<u64> {
    let header = format!("Node {node}, zone");
    let mut found = false;
    let mut total = 0u64;
    let mut zone: Option<Zone> = None;
    for line in text.lines() {
        if line.starts_with("Node ") {
            if let Some(z) = zone.take() {
                total = total.saturating_add(z.reserved());
            }
            if line.starts_with(&header) {
                found = true;
                zone = Some(Zone::default());
            }
            continue;
        }
        let Some(z) = zone.as_mut() else { continue };
        let t = line.trim();
        let (name, value) = match t.split_once(':') {
            Some((n, v)) => (n.trim(), v.trim()),
            None => match t.split_once(char::is_whitespace) {
                Some((n, v)) => (n, v.trim()),
                None => continue,
            },
        };
        let number = || value.split_whitespace().next()?.parse::<u64>().ok();
        match (name, t.contains(':')) {
            ("protection", true) => {
                z.protection = value
                    .trim_matches(|c| c == '(' || c == ')')
                    .split(',')
                    .filter_map(|v| v.trim().parse::<u64>().ok())
                    .max()
                    .unwrap_or(0);
            }
            // The zone's watermark: `high  23785`, no colon.
            ("high", false) => z.watermark_high = number().unwrap_or(0),
            // A CPU's page list: `count: 30`, then `high: 378`.
            ("count", true) => z.cpu_count = number(),
            ("high", true) => {
                if let (Some(count), Some(high)) = (z.cpu_count.take(), number()) {
                    z.cpu_room = z.cpu_room.saturating_add(high.saturating_sub(count));
                }
            }
            _ => {
                if let Some(free) = t.strip_prefix("pages free") {
                    z.free = free.trim().parse().unwrap_or(0);
                }
            }
        }
    }
    if let Some(z) = zone.take() {
        total = total.saturating_add(z.reserved());
    }
    found.then_some(total)
}

#[derive(Debug, Default)]
struct Zone {
    free: u64,
    watermark_high: u64,
    protection: u64,
    cpu_count: Option<u64>,
    cpu_room: u64,
}

impl Zone {
    fn reserved(&self) -> u64 {
        self.watermark_high
            .saturating_add(self.protection)
            .saturating_add(self.cpu_room)
            .min(self.free)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of Linux 6.1's `/proc/zoneinfo` (one zone per node here, two CPUs;
    /// figures from an emulated 2-node guest, fewer CPUs).
    const LINUX_6_1: &str = "Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 2846
  pages free     477
        boost    0
        min      190
        low      237
        high     284
        spanned  4095
        present  3998
        managed  3840
        cma      0
        protection: (0, 1000, 1000, 1000, 1000)
  pagesets
    cpu: 0
              count: 0
              high:  0
              batch: 1
  vm stats threshold: 4
    cpu: 1
              count: 0
              high:  0
              batch: 1
  vm stats threshold: 4
  node_unreclaimable:  0
  start_pfn:           1
Node 0, zone    DMA32
  pages free     3372
        boost    0
        min      3688
        low      4610
        high     5532
        spanned  94208
        present  94208
        managed  76347
        protection: (0, 0, 0, 0, 0)
  pagesets
    cpu: 0
              count: 30
              high:  252
              batch: 63
  vm stats threshold: 24
    cpu: 1
              count: 252
              high:  252
              batch: 63
  vm stats threshold: 24
  node_unreclaimable:  0
  start_pfn:           4096
Node 1, zone    DMA32
  pages free     50000
        min      3800
        low      4750
        high     5700
        protection: (0, 0, 0, 0, 0)
  pagesets
    cpu: 0
              count: 2
              high:  252
              batch: 63
    cpu: 1
              count: 500
              high:  252
              batch: 63
";

    #[test]
    fn a_zones_reserve_is_its_watermark_lower_zone_reserve_and_cpu_list_room_at_most_its_free_pages(
    ) {
        // Node 0: DMA keeps all its 477 free pages (284 + 1000 > 477); DMA32 keeps its
        // whole free 3,372 (5,532 + 222 + 0 > 3,372).
        assert_eq!(node_reserved_pages(LINUX_6_1, 0), Some(477 + 3372));
        // Node 1: 5,700 + (252 - 2) + 0 (a list over its high has no room).
        assert_eq!(node_reserved_pages(LINUX_6_1, 1), Some(5700 + 250));
        assert_eq!(node_reserved_pages(LINUX_6_1, 2), None);
        assert_eq!(node_reserved_pages("", 0), None);
    }

    /// Linux 6.7 and later write `high_min` and `high_max` per CPU: only `high` counts.
    #[test]
    fn newer_kernels_extra_fields_are_ignored() {
        let text = "Node 0, zone   Normal
  pages free     2833014
        min      14479
        low      19132
        high     23785
        managed  4653056
        protection: (0, 0, 0, 0, 0)
  pagesets
    cpu: 0
              count: 1000
              high:  33791
              high_min: 9566
              high_max: 290816
              batch: 63
  vm stats threshold: 125
";
        assert_eq!(node_reserved_pages(text, 0), Some(23785 + 32791));
    }
}
