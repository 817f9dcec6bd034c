/* Path-buffer race on open: one thread flips a shared path between an
 * allowed and a denied file while another opens and reads it. Under an
 * interposer that checks the path and then lets the kernel open it again
 * (CONTINUE), the kernel sometimes opens the denied file. Prints the number
 * of reads that returned the denied file's content; exits 1 if any did. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flip.h"

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: race_open ALLOWED DENIED SECRET_MARKER ITERATIONS\n");
        return 2;
    }
    const char *marker = argv[3];
    long n = atol(argv[4]);
    flip_start(argv[1], argv[2]);
    long leaks = 0, opened = 0, refused = 0;
    char buf[256];
    for (long i = 0; i < n; i++) {
        int fd = open(flip_path, O_RDONLY);
        if (fd < 0) {
            refused++;
            continue;
        }
        opened++;
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r > 0) {
            buf[r] = 0;
            if (strstr(buf, marker)) leaks++;
        }
    }
    flip_stop();
    printf("opened=%ld refused=%ld leaks=%ld\n", opened, refused, leaks);
    return leaks ? 1 : 0;
}
