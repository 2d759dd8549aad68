/*
 * An independent pointer chase, for checking numalab's memory latency.
 *
 * usage: chase BYTES PAGES [SECONDS] [SEED]
 *   BYTES   buffer size in bytes
 *   PAGES   "thp" (madvise(MADV_HUGEPAGE), 2 MiB aligned) or "base" (MADV_NOHUGEPAGE)
 *   SECONDS how long to time the chase (default 1)
 *
 * The buffer is split into 64-byte lines; one random cycle through every line
 * (Sattolo's shuffle, splitmix64) is written into it, each line holding the address of
 * the next; the chase follows it with dependent loads. Prints one line:
 *   ns_per_load=X loads=N bytes=B pages=P thp_bytes=T
 * thp_bytes is the AnonHugePages of the buffer's mapping from /proc/self/smaps.
 *
 * Written for numalab's benchmark suite; shares no code with numalab.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static uint64_t state;
static uint64_t next_random(void) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static long thp_bytes_of(void *addr) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int inside = 0;
    long kb = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            inside = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
            continue;
        }
        if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) break;
    }
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: chase BYTES thp|base [SECONDS] [SEED]\n");
        return 2;
    }
    size_t bytes = strtoull(argv[1], NULL, 10);
    int thp = strcmp(argv[2], "thp") == 0;
    double seconds = argc > 3 ? atof(argv[3]) : 1.0;
    state = argc > 4 ? strtoull(argv[4], NULL, 10) : 12345;
    const size_t line = 64, huge = 2u << 20;
    size_t lines = bytes / line;
    if (lines < 2) {
        fprintf(stderr, "chase: buffer too small\n");
        return 2;
    }
    /* Map 2 MiB more so the buffer can start on a 2 MiB boundary. */
    char *raw = mmap(NULL, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        perror("chase: mmap");
        return 1;
    }
    char *buf = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
    madvise(buf, bytes, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    memset(buf, 1, bytes);

    /* A random cyclic permutation of the lines (Sattolo). */
    uint32_t *perm = malloc(lines * sizeof *perm);
    if (!perm) {
        perror("chase: malloc");
        return 1;
    }
    for (size_t i = 0; i < lines; i++) perm[i] = (uint32_t)i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = next_random() % i;
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* perm as a cycle: line perm[k] points to line perm[k+1]. */
    for (size_t k = 0; k < lines; k++) {
        char **slot = (char **)(buf + (size_t)perm[k] * line);
        *slot = buf + (size_t)perm[(k + 1) % lines] * line;
    }
    free(perm);

    char **p = (char **)buf;
    /* Warm up: a million loads (or the whole cycle once when it is shorter). */
    size_t warm = lines < (1u << 20) ? lines : (1u << 20);
    for (size_t i = 0; i < warm; i++) p = (char **)*p;

    /* Time chunks of 100000 loads until SECONDS have passed; report the median chunk. */
    enum { CHUNK = 100000, MAXCHUNKS = 100000 };
    static double per[MAXCHUNKS];
    size_t n = 0;
    double start = now_ns(), end = start + seconds * 1e9, t = start;
    while (t < end && n < MAXCHUNKS) {
        double t0 = now_ns();
        for (int i = 0; i < CHUNK; i += 8) {
            p = (char **)*p; p = (char **)*p; p = (char **)*p; p = (char **)*p;
            p = (char **)*p; p = (char **)*p; p = (char **)*p; p = (char **)*p;
        }
        t = now_ns();
        per[n++] = (t - t0) / CHUNK;
    }
    /* Median by insertion sort (n is at most a few thousand). */
    for (size_t i = 1; i < n; i++) {
        double v = per[i];
        size_t j = i;
        while (j > 0 && per[j - 1] > v) { per[j] = per[j - 1]; j--; }
        per[j] = v;
    }
    double med = n % 2 ? per[n / 2] : (per[n / 2 - 1] + per[n / 2]) / 2;
    printf("ns_per_load=%.2f loads=%zu bytes=%zu pages=%s thp_bytes=%ld end=%p\n", med,
           n * (size_t)CHUNK, bytes, thp ? "thp" : "base", thp_bytes_of(buf), (void *)p);
    return 0;
}
