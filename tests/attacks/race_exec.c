/* Exec through a swapped path: one thread flips a shared path buffer
 * between an allowed and a denied program while children exec it. The
 * denied program prints MARKER; it must never run.
 * Usage: race_exec ALLOWED DENIED ITERATIONS  (prints ran_denied=N) */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flip.h"

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    long n = atol(argv[3]), ran_denied = 0;
    flip_start(argv[1], argv[2]);
    for (long i = 0; i < n; i++) {
        /* vfork shares memory, so the flipper keeps racing the exec. */
        pid_t pid = vfork();
        if (pid == 0) {
            char *args[] = {flip_path, NULL};
            execv(flip_path, args);
            _exit(127);
        }
        int status;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 42) ran_denied++;
    }
    flip_stop();
    printf("ran_denied=%ld\n", ran_denied);
    return ran_denied ? 1 : 0;
}
