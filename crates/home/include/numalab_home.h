/*
 * numalab_home.h - memory homed near a core, from a numalab home map.
 *
 * A mesh CPU serves each cache line from a "home agent" on some mesh stop; a line
 * whose home is close to the core that uses it is reached in fewer hops. `numalab home
 * map --floorplan LAYOUT.json` measures where the homes are and recovers the address
 * hash that picks the home of any physical address. This library reads such a map,
 * makes a pool of real memory, finds the home of each of its lines from their physical
 * addresses, and hands out lines homed within a chosen distance (Manhattan hops on the
 * floorplan) of a CPU.
 *
 * Requirements: the map was made on this machine (same CPU model, stepping, CPU count,
 * NUMA nodes and memory, modes), its home hash was recovered ("status": "recovered"),
 * and it has a floorplan. Physical addresses come from /proc/self/pagemap, which needs
 * root (CAP_SYS_ADMIN).
 *
 * Link with -lnumalab_home (target/release/libnumalab_home.so, built by
 * `cargo build --release -p numalab-home`).
 *
 * Errors: functions return NULL or -1 and keep a message, per thread, readable with
 * numalab_home_last_error(). No function lets an internal failure escape as anything
 * but an error code. A handle may be used from several threads at once.
 *
 * Example:
 *
 *     #include <stdio.h>
 *     #include <string.h>
 *     #include "numalab_home.h"
 *
 *     int main(void) {
 *         numalab_home *h = numalab_home_open("map.json", 64u << 20);
 *         if (!h) {
 *             fprintf(stderr, "numalab_home_open: %s\n", numalab_home_last_error());
 *             return 1;
 *         }
 *         void *lines[256];
 *         // 256 lines homed at most 2 hops from CPU 3.
 *         if (numalab_home_alloc(h, 3, 2, 256, lines) != 0) {
 *             fprintf(stderr, "numalab_home_alloc: %s\n", numalab_home_last_error());
 *             numalab_home_close(h);
 *             return 1;
 *         }
 *         size_t line = numalab_home_line_bytes(h);
 *         for (int i = 0; i < 256; i++)
 *             memset(lines[i], 0, line);   // each pointer is one line, line bytes long
 *         numalab_home_free(h, lines, 256);
 *         numalab_home_close(h);
 *         return 0;
 *     }
 */
#ifndef NUMALAB_HOME_H
#define NUMALAB_HOME_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open pool: its memory, the home of each of its lines, and the floorplan. */
typedef struct numalab_home numalab_home;

/*
 * Loads the home map at map_path and makes a pool of at least `bytes` of memory
 * (rounded up to whole 2 MiB pages).
 *
 * map_path is a JSON file holding one `home.map` record: the bare record, a stored
 * record ({"kind": "home.map", "data": {...}}, as a journal line or not), a results
 * bundle, or a journal (results.jsonl) with exactly one home.map record.
 *
 * The pool is on 2 MiB hugetlbfs pages when enough are free, else on transparent huge
 * pages; it is touched and locked in memory (mlock), each page's physical address is
 * read from /proc/self/pagemap, and each line gets the home the map's hash gives it.
 * A pool may take at most half the memory available.
 *
 * Returns NULL on error: no such file, not a home map, a map of another machine (the
 * message names what differs), a hash not recovered, a map without floorplan, no root
 * ("physical addresses need root..."), not enough memory.
 */
numalab_home *numalab_home_open(const char *map_path, size_t bytes);

/*
 * Fills out[0..count) with pointers to `count` distinct lines of the pool, each
 * numalab_home_line_bytes(h) long and aligned to it, whose home is within `distance`
 * hops of CPU `cpu` (the OS CPU number; distance < 0: any line, whatever its home).
 * Among the lines close enough, the lowest addresses come first, so consecutive data
 * goes to consecutive eligible lines. The lines stay handed out until given back.
 *
 * Returns 0, or -1 on error, with nothing handed out and out untouched: h or out NULL,
 * a CPU not on the map's floorplan (with distance >= 0), or fewer free lines that
 * close than asked for (the message says how many there are; ask for a larger
 * distance or open a larger pool).
 */
int numalab_home_alloc(numalab_home *h, unsigned cpu, int distance, size_t count,
                       void **out);

/*
 * Gives lines[0..count) back to the pool. Pointers that are not the start of a line of
 * this pool are skipped and reported in numalab_home_last_error(); giving a line back
 * twice is harmless. A NULL h or lines does nothing (and is reported).
 */
void numalab_home_free(numalab_home *h, void *const *lines, size_t count);

/* The line size of the pool, bytes (from the map: the machine's cache line); 0 for
 * NULL. */
size_t numalab_home_line_bytes(const numalab_home *h);

/*
 * The message of the last failed call on the calling thread, "" when none failed. The
 * string is owned by the library and valid until the next failing call on this thread;
 * a successful call does not clear it.
 */
const char *numalab_home_last_error(void);

/* Frees the pool and the handle; every line handed out becomes invalid. NULL is
 * ignored. */
void numalab_home_close(numalab_home *h);

#ifdef __cplusplus
}
#endif

#endif /* NUMALAB_HOME_H */
