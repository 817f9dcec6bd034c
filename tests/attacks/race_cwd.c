/* A relative open under a moving cwd. One thread moves the process's cwd
 * between A and B (threads share it); the other opens NAME, relative, and
 * reads it. A checker that decides the open on the cwd it read back, and
 * lets the kernel look the name up, is deciding on A/NAME while the kernel
 * may open B/NAME. Here B/NAME is the secret (a carve-out of the surface)
 * and A/NAME a harmless file.
 *
 * Usage: race_cwd A B NAME ITERATIONS MARKER
 * Prints leaks=N opened=M: reads that returned MARKER, and opens that
 * succeeded at all. Exits 1 if any leaked. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir_a, *dir_b;
static atomic_int done;

static void *mover(void *arg) {
    (void)arg;
    while (!atomic_load(&done)) {
        if (chdir(dir_a) != 0 || chdir(dir_b) != 0) {
            /* Refused: keep trying; the opens report what they got. */
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 6) return 2;
    dir_a = argv[1];
    dir_b = argv[2];
    const char *name = argv[3], *marker = argv[5];
    long n = atol(argv[4]), leaks = 0, opened = 0;
    if (chdir(dir_a) != 0) return 2;
    pthread_t t;
    pthread_create(&t, NULL, mover, NULL);
    for (long i = 0; i < n; i++) {
        int fd = open(name, O_RDONLY);
        if (fd < 0) continue;
        opened++;
        char buf[256] = {0};
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r > 0 && strstr(buf, marker)) leaks++;
    }
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("leaks=%ld opened=%ld\n", leaks, opened);
    return leaks > 0;
}
