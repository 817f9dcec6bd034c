/* Calls left pending by their caller: each round forks a process whose
 * threads trap opens while one of them execs /bin/true (an exec from a
 * non-leader thread, which kills the others mid-call), and every other
 * round the parent SIGKILLs the process while its calls are in flight.
 * Usage: chaos FILE ROUNDS. Prints rounds=N when all rounds finished. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *file;

static void *opener(void *arg) {
    (void)arg;
    for (;;) {
        int fd = open(file, O_RDONLY);
        if (fd >= 0) close(fd);
    }
    return NULL;
}

static void *execer(void *arg) {
    (void)arg;
    usleep(2000);
    char *args[] = {"/bin/true", NULL};
    execv("/bin/true", args);
    _exit(99);
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    file = argv[1];
    int rounds = atoi(argv[2]);
    for (int r = 0; r < rounds; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            pthread_t t;
            for (int i = 0; i < 3; i++) pthread_create(&t, NULL, opener, NULL);
            pthread_create(&t, NULL, execer, NULL);
            opener(NULL);
        }
        if (r % 2) {
            usleep(500 + (r * 37) % 1500);
            kill(pid, SIGKILL);
        }
        int status;
        waitpid(pid, &status, 0);
    }
    printf("rounds=%d\n", rounds);
    return 0;
}
