/* Many processes and threads trapping at once: PROCS processes x THREADS
 * threads x N opens+reads of FILE. Exits 0 only if every open and read
 * succeeded. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *file;
static long n;

static void *worker(void *arg) {
    long failures = 0;
    char buf[64];
    for (long i = 0; i < n; i++) {
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read(fd, buf, sizeof buf) <= 0) failures++;
        if (fd >= 0) close(fd);
    }
    *(long *)arg = failures;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    file = argv[1];
    int procs = atoi(argv[2]), threads = atoi(argv[3]);
    n = atol(argv[4]);
    for (int p = 0; p < procs; p++) {
        if (fork() == 0) {
            pthread_t t[64];
            long fails[64] = {0}, total = 0;
            for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, &fails[i]);
            for (int i = 0; i < threads; i++) {
                pthread_join(t[i], NULL);
                total += fails[i];
            }
            _exit(total ? 1 : 0);
        }
    }
    int bad = 0, status;
    while (wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) bad++;
    printf("processes failed: %d\n", bad);
    return bad ? 1 : 0;
}
