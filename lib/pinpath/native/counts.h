/* counts.h: pinpath's own count of locks, shared by the timing library (ptime.c: C7, C9, C12
 * case 4, C13) and the engine (engine.c: C10's counted arm of the replica), each library with its
 * own table. Include once, after platform.h (it calls do_lock and do_unlock). */

/* pinpath's own count of locks: the analogue of ROCT's registration count (fmm keeps one per
 * registered range, under a mutex), for runtimes that refuse a re-lock (CUDA: 712) or keep no count
 * (mlock). A table of locked ranges under one mutex: a lock of a range inside one of them adds one
 * to its count and calls nothing of the runtime; an unlock takes one off and unlocks through the
 * runtime only at zero. Ranges the caller locked itself are adopted (count 1, no call) and forgotten
 * (no call) around the timed reps, so the caller's own lock is left as it was. */
#define PP_COUNTS 4096
static struct { uintptr_t base; size_t n; int count; } counts[PP_COUNTS];
static int ncounts;
static pthread_mutex_t counts_mu = PTHREAD_MUTEX_INITIALIZER;

static int count_find(uintptr_t p, size_t n) {   /* under counts_mu */
    for (int k = 0; k < ncounts; ++k)
        if (counts[k].count > 0 && counts[k].base <= p && p + n <= counts[k].base + counts[k].n) return k;
    return -1;
}
static int count_add(uintptr_t p, size_t n) {    /* under counts_mu; a free slot, else a new one */
    int k = 0;
    while (k < ncounts && counts[k].count > 0) ++k;
    if (k == PP_COUNTS) return -1;
    if (k == ncounts) ++ncounts;
    counts[k].base = p; counts[k].n = n; counts[k].count = 1;
    return k;
}
static int counted_lock(void *p, size_t n) {
    pthread_mutex_lock(&counts_mu);
    int k = count_find((uintptr_t)p, n), rc = 0;
    if (k >= 0) {
        counts[k].count++;
    } else if ((rc = do_lock(p, n)) == 0 && count_add((uintptr_t)p, n) < 0) {
        do_unlock(p, n);
        rc = PP_EARG;
    }
    pthread_mutex_unlock(&counts_mu);
    return rc;
}
static int counted_unlock(void *p, size_t n) {
    pthread_mutex_lock(&counts_mu);
    int k = count_find((uintptr_t)p, n), rc = 0;
    if (k < 0) rc = do_unlock(p, n);
    else if (--counts[k].count == 0) rc = do_unlock((void *)counts[k].base, counts[k].n);
    pthread_mutex_unlock(&counts_mu);
    return rc;
}
/* adopt: the caller's own lock of [p, p + n) counted as one more (a range held already: its count up;
 * PP_EARG if the table is full); forget: that one count taken back, without an unlock */
static int count_adopt(void *p, size_t n) {
    pthread_mutex_lock(&counts_mu);
    int k = count_find((uintptr_t)p, n);
    if (k >= 0 && counts[k].base == (uintptr_t)p && counts[k].n == n) ++counts[k].count;
    else k = count_add((uintptr_t)p, n);
    pthread_mutex_unlock(&counts_mu);
    return k < 0 ? PP_EARG : 0;
}
static void count_forget(void *p, size_t n) {
    pthread_mutex_lock(&counts_mu);
    int k = count_find((uintptr_t)p, n);
    if (k >= 0 && counts[k].count > 0) --counts[k].count;   /* the one count its adopt added */
    pthread_mutex_unlock(&counts_mu);
}

/* count_up / count_down: the runtime's lock and its unlock of a range the table holds (the
 * application's registration, adopted), counted without a runtime call: its count one up / one
 * down. PP_EARG where the table holds no such range, or (count_down) where only the holder's own
 * count is left: that unlock is its holder's and goes to the runtime (counted_unlock). */
static int count_up(void *p, size_t n) {
    pthread_mutex_lock(&counts_mu);
    int k = count_find((uintptr_t)p, n);
    if (k >= 0) counts[k].count++;
    pthread_mutex_unlock(&counts_mu);
    return k >= 0 ? 0 : PP_EARG;
}
static int count_down(void *p, size_t n) {
    pthread_mutex_lock(&counts_mu);
    int k = count_find((uintptr_t)p, n), ok = k >= 0 && counts[k].count > 1;
    if (ok) counts[k].count--;
    pthread_mutex_unlock(&counts_mu);
    return ok ? 0 : PP_EARG;
}
