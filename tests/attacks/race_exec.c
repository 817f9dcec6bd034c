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

static char path[4096], allowed[4096], denied[4096];
static atomic_int done;

static void *flipper(void *arg) {
    (void)arg;
    while (!atomic_load(&done)) {
        strcpy(path, denied);
        strcpy(path, allowed);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    strcpy(allowed, argv[1]);
    strcpy(denied, argv[2]);
    strcpy(path, allowed);
    long n = atol(argv[3]), ran_denied = 0;
    pthread_t t;
    pthread_create(&t, NULL, flipper, NULL);
    for (long i = 0; i < n; i++) {
        /* vfork shares memory, so the flipper keeps racing the exec. */
        pid_t pid = vfork();
        if (pid == 0) {
            char *args[] = {path, NULL};
            execv(path, args);
            _exit(127);
        }
        int status;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 42) ran_denied++;
    }
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("ran_denied=%ld\n", ran_denied);
    return ran_denied ? 1 : 0;
}
