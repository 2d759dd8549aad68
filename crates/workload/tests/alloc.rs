//! Serving a request allocates nothing once a worker is warmed up (counted by a global
//! allocator wrapper, per thread). Its own binary: the allocator is process-wide.

use numalab_workload::graph::{generate, GraphSpec};
use numalab_workload::itinerary::EaParams;
use numalab_workload::request::{Request, RequestGen, RequestKind, Worker};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: forwards to the system allocator; only counts (const thread-local, no
// allocation of its own).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn count() -> u64 {
    ALLOCS.with(|c| c.get())
}

#[test]
fn requests_do_not_allocate_in_steady_state() {
    let g = generate(&GraphSpec {
        seed: 31,
        nodes: 60_000,
    })
    .unwrap();
    let v = g.view();
    let mut worker = Worker::new(v.nodes(), EaParams::default());
    let mut gen = RequestGen::new(&v, 31, 0, 0.75);
    let mut req = Request::default();
    for _ in 0..30 {
        gen.next(&mut req);
        std::hint::black_box(worker.serve(&v, &req));
    }
    let before = count();
    let (mut routes, mut plans) = (0, 0);
    for _ in 0..300 {
        gen.next(&mut req);
        let a = worker.serve(&v, &req);
        match a.kind {
            RequestKind::Route => routes += 1,
            RequestKind::Itinerary => plans += 1,
        }
        std::hint::black_box(a);
    }
    let allocs = count() - before;
    assert!(routes > 150 && plans > 40, "{routes} routes, {plans} plans");
    assert_eq!(allocs, 0, "{allocs} allocations in 300 requests");
    // The counter works: building state allocates.
    let c0 = count();
    std::hint::black_box(Worker::new(1000, EaParams::default()));
    assert!(count() > c0);
}
