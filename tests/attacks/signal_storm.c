/* Trapped calls interrupted by signals: one thread opens and closes a file
 * N times while the main thread pelts it with SIGUSR1 (handler installed
 * without SA_RESTART). Every call must come back (EINTR is fine), no
 * descriptor may leak, nothing may hang. Prints the counts; exits 0 if all
 * opens either succeeded or failed with EINTR and no descriptor leaked. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *file;
static long n;
static atomic_int done;
static atomic_long signals;
static long ok, eintr, other;

static void on_usr1(int sig) { (void)sig; atomic_fetch_add(&signals, 1); }

static void *opener(void *arg) {
    (void)arg;
    for (long i = 0; i < n; i++) {
        int fd = open(file, O_RDONLY);
        if (fd >= 0) { ok++; close(fd); }
        else if (errno == EINTR) eintr++;
        else { other++; fprintf(stderr, "open: %s\n", strerror(errno)); }
    }
    atomic_store(&done, 1);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    file = argv[1];
    n = atol(argv[2]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1; /* no SA_RESTART */
    sigaction(SIGUSR1, &sa, NULL);
    int before = open("/dev/null", O_RDONLY);
    close(before);
    pthread_t t;
    pthread_create(&t, NULL, opener, NULL);
    while (!atomic_load(&done)) {
        pthread_kill(t, SIGUSR1);
        usleep(50);
    }
    pthread_join(t, NULL);
    int after = open("/dev/null", O_RDONLY);
    printf("ok=%ld eintr=%ld other=%ld signals=%ld fd_before=%d fd_after=%d\n", ok, eintr, other,
           (long)atomic_load(&signals), before, after);
    return (other == 0 && after == before) ? 0 : 1;
}
