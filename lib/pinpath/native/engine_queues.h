/* engine_queues.h: the copy queues every run's threads take and give back, kept for the process.
 * Part of engine.c, which includes it once at this point of its text: one translation unit, as
 * the loader compiles engine.c alone. It uses the types and names engine.c defines before it. */

/* -- copy queues, kept for the process ------------------------------------------------------
 * An offload runtime keeps its streams (LLVM's plugins keep pools of them), and so does an
 * application: a queue made for every plan is a state neither has (on the H200 a new CUDA
 * stream took a pageable 4 KiB D2H to 0.88-0.89x of a long-lived stream's time in three pinned
 * runs of tools/pageable_probe.c).
 * Each thread of a run takes a queue of its device from here (made on first need) and gives it
 * back, waited for, when the run ends; pe_fini closes them. */
#define KEPT_QUEUES 64
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { queue_t *q; int device; } kept[KEPT_QUEUES];
static int nkept, queues_made;
static queue_t *queue_take(int device) {
    pthread_mutex_lock(&kept_mu);
    for (int k = nkept - 1; k >= 0; --k)
        if (kept[k].device == device) {
            queue_t *q = kept[k].q;
            kept[k] = kept[--nkept];
            pthread_mutex_unlock(&kept_mu);
            return q;
        }
    pthread_mutex_unlock(&kept_mu);
    queue_t *q = calloc(1, sizeof *q);
    if (!q || queue_new(q) != 0) { free(q); return NULL; }
    pthread_mutex_lock(&kept_mu);
    ++queues_made;
    pthread_mutex_unlock(&kept_mu);
    return q;
}
static void queue_give(queue_t *q, int device) {
    queue_wait(q);   /* nothing of this run is left in flight on it */
    pthread_mutex_lock(&kept_mu);
    if (nkept < KEPT_QUEUES) { kept[nkept].q = q; kept[nkept++].device = device; q = NULL; }
    pthread_mutex_unlock(&kept_mu);
    if (q) { queue_close(q); free(q); }
}
static void queues_close(void) {
    pthread_mutex_lock(&kept_mu);
    while (nkept > 0) {
        queue_t *q = kept[--nkept].q;
        queue_close(q);
        free(q);
    }
    pthread_mutex_unlock(&kept_mu);
}
