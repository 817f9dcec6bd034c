/* A write through a name another thread keeps swapping, for the undo
 * journal: `p` is a symlink that a second thread re-points, by rename over
 * it, at one of N files in turn, and a third renames those files away and
 * back, while the main thread opens `p` with O_WRONLY|O_TRUNC and writes.
 * A journal that kept the file the supervisor checked, while the kernel
 * (after a CONTINUE) truncated the one the name pointed to by then, would
 * leave files undo cannot put back.
 *
 * usage: race_journal DIR FILES ROUNDS
 * DIR holds f0 .. f(FILES-1) and the symlink p. Prints
 * "written=W distinct=D" (opens that wrote, and how many of the files
 * they reached). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile int stop;
static int files;

static void *flip(void *arg) {
    (void)arg;
    unsigned i = 0;
    char target[32];
    while (!stop) {
        snprintf(target, sizeof target, "f%u", i++ % files);
        unlink("p.tmp");
        if (symlink(target, "p.tmp") == 0)
            rename("p.tmp", "p");
    }
    return NULL;
}

static void *shuffle(void *arg) {
    (void)arg;
    unsigned i = 0;
    char name[32], away[32];
    while (!stop) {
        unsigned n = (i++ * 7) % files;
        snprintf(name, sizeof name, "f%u", n);
        snprintf(away, sizeof away, "f%u.away", n);
        if (rename(name, away) == 0)
            rename(away, name);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: race_journal DIR FILES ROUNDS\n");
        return 2;
    }
    if (chdir(argv[1]) != 0) {
        perror("chdir");
        return 2;
    }
    files = atoi(argv[2]);
    int rounds = atoi(argv[3]);
    ino_t *inodes = calloc(files, sizeof *inodes);
    char *reached = calloc(files, 1);
    for (int i = 0; i < files; i++) {
        char name[32];
        struct stat st;
        snprintf(name, sizeof name, "f%d", i);
        if (stat(name, &st) != 0) {
            perror(name);
            return 2;
        }
        inodes[i] = st.st_ino;
    }
    pthread_t a, b;
    pthread_create(&a, NULL, flip, NULL);
    pthread_create(&b, NULL, shuffle, NULL);
    int written = 0;
    for (int r = 0; r < rounds; r++) {
        int fd = open("p", O_WRONLY | O_TRUNC);
        if (fd < 0)
            continue;
        struct stat st;
        if (fstat(fd, &st) == 0)
            for (int i = 0; i < files; i++)
                if (st.st_ino == inodes[i])
                    reached[i] = 1;
        char line[64];
        int n = snprintf(line, sizeof line, "overwritten in round %d\n", r);
        if (write(fd, line, n) == n)
            written++;
        close(fd);
    }
    stop = 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    int distinct = 0;
    for (int i = 0; i < files; i++)
        distinct += reached[i];
    printf("written=%d distinct=%d\n", written, distinct);
    return 0;
}
