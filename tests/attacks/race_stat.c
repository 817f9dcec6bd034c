/* Path-buffer race on stat: one thread flips a shared path between an
 * allowed and a denied file while another stats it 20,000 times. Under a
 * checker that lets the kernel re-read the path, some stats describe the
 * denied file. Prints how many did (by its inode); exits 1 if any.
 * Usage: race_stat ALLOWED DENIED ITERATIONS */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "flip.h"

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    const char *allowed = argv[1];
    struct stat secret;
    int can_see = stat(argv[2], &secret) == 0; /* fails under interpose */
    long n = atol(argv[3]), leaks = 0;
    flip_start(argv[1], argv[2]);
    struct stat st;
    for (long i = 0; i < n; i++) {
        if (stat(flip_path, &st) != 0) continue;
        struct stat mine;
        if (stat(allowed, &mine) == 0 && st.st_ino != mine.st_ino) leaks++;
    }
    flip_stop();
    printf("leaks=%ld direct=%d\n", leaks, can_see);
    return leaks ? 1 : 0;
}
