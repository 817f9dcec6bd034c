/* One trapped syscall, its path (or socket address) flipped after the
 * check: a thread keeps rewriting a shared buffer between ALLOWED and
 * DENIED while the main thread makes CALL with it, ITERATIONS times. If
 * the supervisor decided the call on ALLOWED and let the kernel run it,
 * the kernel read DENIED some of the time. Natively every call reaches
 * DENIED some of the time; under interpose none may.
 *
 * Usage: flip_every CALL ALLOWED DENIED ITERATIONS
 * Prints "calls=N leaks=M": M counts what the program itself saw of
 * DENIED (its content read, its link target, attributes or size, a
 * connection to it). What a call would have changed in DENIED (created,
 * removed, written, renamed, re-owned) is checked by the test afterwards.
 *
 * CALL names the syscall and, where one syscall has several routes, the
 * route (`open-write`, `link-from`); `tests/e2e/flips.rs` lists which
 * trapped syscalls each CALL covers and fails when a trapped row of
 * bpf/syscalls.tsv is covered by none. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <stdlib.h>
#include <unistd.h>
#include "flip.h"

/* The marker the test writes into every denied file, the size it gives
 * them, the xattr it sets on them and the target of denied links. */
#define MARKER "top-secret-marker"
#ifndef SYS_getxattrat
#define SYS_getxattrat 464
#define SYS_listxattrat 465
#endif
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
struct xattr_args_ {
    unsigned long long value;
    unsigned size, flags;
};
extern char **environ;
#define DENIED_SIZE 4242

static struct sockaddr_un sun;
static char suns[2][sizeof sun.sun_path];

static void *flip_sun(void *arg) {
    (void)arg;
    while (!atomic_load(&flip_done)) {
        strcpy(sun.sun_path, suns[1]);
        strcpy(sun.sun_path, suns[0]);
    }
    return NULL;
}

/* The msghdr whose msg_name flips between NULL (at check time: the
 * connected peer, allowed) and the denied address. */
static struct msghdr *volatile shared_msg;
static struct sockaddr_un denied_sun;

static void *flip_name(void *arg) {
    (void)arg;
    while (!atomic_load(&flip_done)) {
        /* Volatile: each store must happen, not only the last. */
        struct msghdr volatile *m = shared_msg;
        if (!m) continue;
        m->msg_name = &denied_sun;
        m->msg_namelen = sizeof denied_sun;
        m->msg_name = NULL;
        m->msg_namelen = 0;
    }
    return NULL;
}

static int read_marker(int fd) {
    char buf[64] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 && strstr(buf, MARKER) != NULL;
}

/* Where the allowed side leaves something behind, it is removed before
 * the next call through a copy of ALLOWED (never the shared buffer). */
static void reset(const char *call, const char *allowed) {
    if (!strncmp(call, "mkdir", 5)) rmdir(allowed);
    else if (!strncmp(call, "rmdir", 5)) mkdir(allowed, 0755);
    else if (!strncmp(call, "unlink", 6) || !strncmp(call, "rename-from", 11)) {
        int fd = open(allowed, O_CREAT | O_WRONLY, 0644);
        if (fd >= 0) close(fd);
    } else if (!strncmp(call, "symlink", 7) || !strncmp(call, "link-to", 7) || !strncmp(call, "linkat-to", 9) ||
               !strncmp(call, "mknod", 5) ||
               !strncmp(call, "bind", 4) || !strncmp(call, "creat", 5) || !strncmp(call, "open-create", 11))
        unlink(allowed);
}

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    const char *call = argv[1], *allowed = argv[2], *denied = argv[3];
    long n = atol(argv[4]), calls = 0, leaks = 0;
    /* For link-from and rename-from: the name they make or move to, next
     * to ALLOWED. */
    char made[4096], moved[4096];
    snprintf(made, sizeof made, "%s.made", allowed);
    snprintf(moved, sizeof moved, "%s.moved", allowed);
    int sock = -1;
    int sockets = !strncmp(call, "connect", 7) || !strncmp(call, "bind", 4) || !strncmp(call, "send", 4);
    pthread_t t;
    if (!strcmp(call, "sendmsg-null")) {
        /* ALLOWED is the socket connected to; DENIED the one flipped in. */
        denied_sun.sun_family = AF_UNIX;
        snprintf(denied_sun.sun_path, sizeof denied_sun.sun_path, "%s", denied);
        sun.sun_family = AF_UNIX;
        snprintf(sun.sun_path, sizeof sun.sun_path, "%s", allowed);
        sock = socket(AF_UNIX, SOCK_DGRAM, 0);
        if (connect(sock, (struct sockaddr *)&sun, sizeof sun)) {
            perror("connect");
            return 2;
        }
        pthread_create(&t, NULL, flip_name, NULL);
    } else if (sockets) {
        sun.sun_family = AF_UNIX;
        snprintf(suns[0], sizeof suns[0], "%s", allowed);
        snprintf(suns[1], sizeof suns[1], "%s", denied);
        strcpy(sun.sun_path, suns[0]);
        pthread_create(&t, NULL, flip_sun, NULL);
    } else {
        flip_start(allowed, denied);
    }
    const char *p = flip_path;
    for (long i = 0; i < n; i++) {
        reset(call, allowed);
        if (!strcmp(call, "link-from")) unlink(made);
        if (!strcmp(call, "rename-from")) unlink(moved);
        long r = -1;
        struct stat st;
        if (!strcmp(call, "open-read")) {
            r = syscall(SYS_open, p, O_RDONLY | O_CLOEXEC);
            if (r >= 0) leaks += read_marker(r), r = 0;
        } else if (!strcmp(call, "openat-read")) {
            r = openat(AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
            if (r >= 0) leaks += read_marker(r), r = 0;
        } else if (!strcmp(call, "openat2-read")) {
            struct open_how how = {.flags = O_RDONLY | O_CLOEXEC};
            r = syscall(SYS_openat2, AT_FDCWD, p, &how, sizeof how);
            if (r >= 0) leaks += read_marker(r), r = 0;
        } else if (!strcmp(call, "open-write")) {
            r = syscall(SYS_open, p, O_WRONLY | O_APPEND | O_CLOEXEC);
            if (r >= 0) r = write(r, "x", 1) == 1 ? close(r) : -1;
        } else if (!strcmp(call, "open-create")) {
            r = syscall(SYS_open, p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (r >= 0) close(r), r = 0;
        } else if (!strcmp(call, "creat")) {
            r = syscall(SYS_creat, p, 0644);
            if (r >= 0) close(r), r = 0;
        } else if (!strcmp(call, "truncate")) {
            r = syscall(SYS_truncate, p, 1);
        } else if (!strcmp(call, "chmod")) {
            r = syscall(SYS_chmod, p, 0600);
        } else if (!strcmp(call, "fchmodat")) {
            r = fchmodat(AT_FDCWD, p, 0600, 0);
        } else if (!strcmp(call, "chown")) {
            r = syscall(SYS_chown, p, -1, 1);
        } else if (!strcmp(call, "lchown")) {
            r = syscall(SYS_lchown, p, -1, 1);
        } else if (!strcmp(call, "fchownat")) {
            r = fchownat(AT_FDCWD, p, -1, 1, 0);
        } else if (!strcmp(call, "utimensat")) {
            struct timespec ts[2] = {{1000, 0}, {1000, 0}};
            r = utimensat(AT_FDCWD, p, ts, 0);
        } else if (!strcmp(call, "utimes")) {
            struct timeval tv[2] = {{1000, 0}, {1000, 0}};
            r = syscall(SYS_utimes, p, tv);
        } else if (!strcmp(call, "setxattr")) {
            r = setxattr(p, "user.flipped", "1", 1, 0);
        } else if (!strcmp(call, "lsetxattr")) {
            r = lsetxattr(p, "user.flipped", "1", 1, 0);
        } else if (!strcmp(call, "removexattr")) {
            r = removexattr(p, "user.marker");
        } else if (!strcmp(call, "lremovexattr")) {
            r = lremovexattr(p, "user.marker");
        } else if (!strcmp(call, "getxattr") || !strcmp(call, "lgetxattr")) {
            char v[64] = {0};
            r = call[0] == 'l' ? lgetxattr(p, "user.marker", v, sizeof v - 1) : getxattr(p, "user.marker", v, sizeof v - 1);
            if (r > 0 && !strcmp(v, "secret")) leaks++;
        } else if (!strcmp(call, "listxattr") || !strcmp(call, "llistxattr")) {
            char v[256] = {0};
            r = call[0] == 'l' ? llistxattr(p, v, sizeof v) : listxattr(p, v, sizeof v);
            for (long o = 0; r > 0 && o < r; o += strlen(v + o) + 1)
                if (!strcmp(v + o, "user.marker")) leaks++;
        } else if (!strcmp(call, "readlink")) {
            char v[256] = {0};
            r = syscall(SYS_readlink, p, v, sizeof v - 1);
            if (r > 0 && strstr(v, MARKER)) leaks++;
        } else if (!strcmp(call, "stat") || !strcmp(call, "lstat")) {
            r = syscall(call[0] == 'l' ? SYS_lstat : SYS_stat, p, &st);
            if (!r && st.st_size == DENIED_SIZE) leaks++;
        } else if (!strcmp(call, "statx")) {
            struct statx sx;
            r = statx(AT_FDCWD, p, 0, STATX_SIZE, &sx);
            if (!r && sx.stx_size == DENIED_SIZE) leaks++;
        } else if (!strcmp(call, "access")) {
            /* ALLOWED is missing: success is DENIED's existence. */
            r = syscall(SYS_access, p, F_OK);
            if (!r) leaks++;
        } else if (!strcmp(call, "faccessat2")) {
            r = syscall(SYS_faccessat2, AT_FDCWD, p, F_OK, 0);
            if (!r) leaks++;
        } else if (!strcmp(call, "fchmodat2")) {
            r = syscall(SYS_fchmodat2, AT_FDCWD, p, 0600, 0);
        } else if (!strcmp(call, "utime")) {
            struct utimbuf_ { long a, m; } ut = {1000, 1000};
            r = syscall(SYS_utime, p, &ut);
        } else if (!strcmp(call, "futimesat")) {
            struct timeval tv[2] = {{1000, 0}, {1000, 0}};
            r = syscall(SYS_futimesat, AT_FDCWD, p, tv);
        } else if (!strcmp(call, "getxattrat")) {
            char v[64] = {0};
            struct xattr_args_ a = {.value = (unsigned long)v, .size = sizeof v - 1};
            r = syscall(SYS_getxattrat, AT_FDCWD, p, 0, "user.marker", &a, sizeof a);
            if (r > 0 && !strcmp(v, "secret")) leaks++;
        } else if (!strcmp(call, "listxattrat")) {
            char v[256] = {0};
            r = syscall(SYS_listxattrat, AT_FDCWD, p, 0, v, sizeof v);
            for (long o = 0; r > 0 && o < r; o += strlen(v + o) + 1)
                if (!strcmp(v + o, "user.marker")) leaks++;
        } else if (!strcmp(call, "readlinkat")) {
            char v[256] = {0};
            r = readlinkat(AT_FDCWD, p, v, sizeof v - 1);
            if (r > 0 && strstr(v, MARKER)) leaks++;
        } else if (!strcmp(call, "newfstatat")) {
            r = fstatat(AT_FDCWD, p, &st, 0);
            if (!r && st.st_size == DENIED_SIZE) leaks++;
        } else if (!strcmp(call, "faccessat")) {
            r = syscall(SYS_faccessat, AT_FDCWD, p, F_OK);
            if (!r) leaks++;
        } else if (!strcmp(call, "execve") || !strcmp(call, "execveat")) {
            /* DENIED exits 42 when it runs. */
            pid_t child = fork();
            if (child == 0) {
                char *args[] = {(char *)"flipped", NULL};
                if (call[6] == 'a') syscall(SYS_execveat, AT_FDCWD, p, args, environ, 0);
                else syscall(SYS_execve, p, args, environ);
                _exit(127);
            }
            int status = 0;
            waitpid(child, &status, 0);
            r = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 42) leaks++;
        } else if (!strcmp(call, "mkdir")) {
            r = syscall(SYS_mkdir, p, 0755);
        } else if (!strcmp(call, "mkdirat")) {
            r = mkdirat(AT_FDCWD, p, 0755);
        } else if (!strcmp(call, "rmdir")) {
            r = syscall(SYS_rmdir, p);
        } else if (!strcmp(call, "unlink")) {
            r = syscall(SYS_unlink, p);
        } else if (!strcmp(call, "unlinkat")) {
            r = unlinkat(AT_FDCWD, p, 0);
        } else if (!strcmp(call, "symlink")) {
            r = syscall(SYS_symlink, "target", p);
        } else if (!strcmp(call, "symlinkat")) {
            r = symlinkat("target", AT_FDCWD, p);
        } else if (!strcmp(call, "mknod")) {
            r = syscall(SYS_mknod, p, S_IFIFO | 0644, 0);
        } else if (!strcmp(call, "mknodat")) {
            r = mknodat(AT_FDCWD, p, S_IFIFO | 0644, 0);
        } else if (!strcmp(call, "link-to")) {
            /* ALLOWED's directory holds `source`: a new name for it. */
            char src[4096];
            snprintf(src, sizeof src, "%s.source", allowed);
            r = syscall(SYS_link, src, p);
        } else if (!strcmp(call, "linkat-to")) {
            char src[4096];
            snprintf(src, sizeof src, "%s.source", allowed);
            r = linkat(AT_FDCWD, src, AT_FDCWD, p, 0);
        } else if (!strcmp(call, "link-from")) {
            /* A name for whichever file the kernel found: DENIED's content
             * read through it is a leak. */
            r = syscall(SYS_link, p, made);
            if (!r) leaks += read_marker(open(made, O_RDONLY | O_CLOEXEC));
        } else if (!strcmp(call, "rename-from")) {
            r = syscall(SYS_rename, p, moved);
            if (!r) leaks += read_marker(open(moved, O_RDONLY | O_CLOEXEC));
        } else if (!strcmp(call, "rename-to") || !strcmp(call, "renameat-to") || !strcmp(call, "renameat2-to")) {
            char src[4096];
            snprintf(src, sizeof src, "%s.source", allowed);
            int fd = open(src, O_CREAT | O_WRONLY, 0644);
            if (fd >= 0) close(fd);
            r = call[6] == '-'   ? syscall(SYS_rename, src, p)
                : call[8] == '2' ? syscall(SYS_renameat2, AT_FDCWD, src, AT_FDCWD, p, 0)
                                 : syscall(SYS_renameat, AT_FDCWD, src, AT_FDCWD, p);
        } else if (!strcmp(call, "connect")) {
            sock = socket(AF_UNIX, SOCK_STREAM, 0);
            r = connect(sock, (struct sockaddr *)&sun, sizeof sun);
            if (!r) {
                struct sockaddr_un peer = {0};
                socklen_t len = sizeof peer;
                if (!getpeername(sock, (struct sockaddr *)&peer, &len) && !strcmp(peer.sun_path, suns[1])) leaks++;
            }
            close(sock);
        } else if (!strcmp(call, "bind")) {
            unlink(suns[0]);
            sock = socket(AF_UNIX, SOCK_DGRAM, 0);
            r = bind(sock, (struct sockaddr *)&sun, sizeof sun);
            close(sock);
        } else if (!strcmp(call, "sendto") || !strcmp(call, "sendmsg") || !strcmp(call, "sendmmsg")) {
            if (sock < 0) sock = socket(AF_UNIX, SOCK_DGRAM, 0);
            char byte = 'x';
            struct iovec iov = {&byte, 1};
            struct msghdr msg = {.msg_name = &sun, .msg_namelen = sizeof sun, .msg_iov = &iov, .msg_iovlen = 1};
            struct mmsghdr mm = {.msg_hdr = msg};
            r = call[4] == 't'   ? sendto(sock, &byte, 1, MSG_DONTWAIT, (struct sockaddr *)&sun, sizeof sun)
                : call[5] == 'm' ? sendmmsg(sock, &mm, 1, MSG_DONTWAIT)
                                 : sendmsg(sock, &msg, MSG_DONTWAIT);
            r = r > 0 ? 0 : -1;
        } else if (!strcmp(call, "sendmsg-null")) {
            char byte = 'x';
            struct iovec iov = {&byte, 1};
            struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
            shared_msg = &msg;
            r = sendmsg(sock, &msg, MSG_DONTWAIT);
            shared_msg = NULL;
            r = r > 0 ? 0 : -1;
        } else {
            fprintf(stderr, "unknown call %s\n", call);
            return 2;
        }
        if (r == 0) calls++;
    }
    if (sockets || !strcmp(call, "sendmsg-null")) {
        atomic_store(&flip_done, 1);
        pthread_join(t, NULL);
    } else {
        flip_stop();
    }
    printf("calls=%ld leaks=%ld\n", calls, leaks);
    return 0;
}
