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
    struct stat secret;
    int can_see = stat(denied, &secret) == 0; /* fails under interpose */
    long n = atol(argv[3]), leaks = 0;
    pthread_t t;
    pthread_create(&t, NULL, flipper, NULL);
    struct stat st;
    for (long i = 0; i < n; i++) {
        if (stat(path, &st) != 0) continue;
        struct stat mine;
        if (stat(allowed, &mine) == 0 && st.st_ino != mine.st_ino) leaks++;
    }
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("leaks=%ld direct=%d\n", leaks, can_see);
    return leaks ? 1 : 0;
}
