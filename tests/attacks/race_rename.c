/* Rename through a swapped destination: one thread flips a shared path
 * buffer between a workspace name and a name in a denied directory while
 * the main thread renames a fresh workspace file to it, ITERATIONS times.
 * Whether a file landed in the denied directory is for the caller to check
 * from outside (the program itself cannot see there under interpose).
 * Usage: race_rename WS DENIED_DIR ITERATIONS */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flip.h"

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    char inside[4096], outside[4096];
    snprintf(inside, sizeof inside, "%s/dst", argv[1]);
    snprintf(outside, sizeof outside, "%s/dst", argv[2]);
    char src[4096];
    snprintf(src, sizeof src, "%s/src", argv[1]);
    long n = atol(argv[3]);
    flip_start(inside, outside);
    for (long i = 0; i < n; i++) {
        close(open(src, O_WRONLY | O_CREAT, 0644));
        rename(src, flip_path);
    }
    flip_stop();
    printf("done\n");
    return 0;
}
