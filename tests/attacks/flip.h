/* The path-buffer flipper shared by the race attacks: a thread that keeps
 * rewriting `flip_path` between two strings while the attack's main thread
 * hands `flip_path` to a syscall. */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>

static char flip_path[4096], flip_a[4096], flip_b[4096];
static atomic_int flip_done;
static pthread_t flip_thread;

static void *flip_loop(void *arg) {
    (void)arg;
    while (!atomic_load(&flip_done)) {
        strcpy(flip_path, flip_b);
        strcpy(flip_path, flip_a);
    }
    return NULL;
}

/* Starts flipping between `a` (also the initial value) and `b`. */
static void flip_start(const char *a, const char *b) {
    snprintf(flip_a, sizeof flip_a, "%s", a);
    snprintf(flip_b, sizeof flip_b, "%s", b);
    strcpy(flip_path, flip_a);
    pthread_create(&flip_thread, NULL, flip_loop, NULL);
}

static void flip_stop(void) {
    atomic_store(&flip_done, 1);
    pthread_join(flip_thread, NULL);
}
