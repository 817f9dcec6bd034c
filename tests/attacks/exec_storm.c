/* Exec while another thread signals the exec'ing one (with SA_RESTART, as
 * Go's runtime preempts runc's init with SIGURG): natively every exec
 * succeeds (a signal interrupts the call, which is made again). Forks N
 * children that each do this; prints how many execs failed (a child that
 * exits 100 after execv returned). Exits 1 if any did. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_t target;

static void on_signal(int sig) { (void)sig; }

static void *storm(void *arg) {
    (void)arg;
    for (;;) {
        pthread_kill(target, SIGUSR1);
        usleep(20);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: exec_storm N PROGRAM\n");
        return 2;
    }
    int n = atoi(argv[1]), failed = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_signal;
            sa.sa_flags = SA_RESTART;
            sigaction(SIGUSR1, &sa, 0);
            target = pthread_self();
            pthread_t t;
            pthread_create(&t, 0, storm, 0);
            usleep(100);
            char *args[] = {argv[2], 0};
            execv(argv[2], args);
            fprintf(stderr, "exec failed: %s\n", strerror(errno));
            _exit(100);
        }
        int status;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 100) failed++;
    }
    printf("execs=%d failed=%d\n", n, failed);
    return failed != 0;
}
