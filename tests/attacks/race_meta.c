/* Path-buffer race on the calls that return information about a path
 * without opening it: one thread flips a shared path between an allowed
 * and a denied object while another makes the call 20,000 times. A checker
 * that decides the path and then lets the kernel run the call (re-reading
 * the path) sometimes answers about the denied object. Prints how many
 * answers described it; exits 1 if any.
 *
 * Usage: race_meta ROUTE ALLOWED DENIED ITERATIONS
 *   getxattr   DENIED carries user.marker=secret; ALLOWED has no such value
 *   listxattr  as getxattr: a list naming user.marker is a leak
 *   access     ALLOWED does not exist; F_OK succeeding is a leak
 *   statfs     ALLOWED and DENIED lie on file systems of different types
 *   opath      an O_PATH open then fstat: another inode is a leak
 *   fstatfs    an O_PATH open then fstatfs: another file system type is a leak
 *   chdir      chdir then fstat of the cwd (AT_EMPTY_PATH): another inode
 *   inotify    a watch on another inode gets another watch descriptor */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "flip.h"

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    const char *route = argv[1], *allowed = argv[2], *denied = argv[3];
    long n = atol(argv[4]), leaks = 0;
    struct stat mine, st;
    struct statfs mine_fs, fs;
    int have_mine = stat(allowed, &mine) == 0;
    int have_mine_fs = statfs(allowed, &mine_fs) == 0;
    int notify = inotify_init1(IN_CLOEXEC), allowed_wd = -1;
    if (!strcmp(route, "inotify")) allowed_wd = inotify_add_watch(notify, allowed, IN_ALL_EVENTS);
    char here[4096];
    if (!getcwd(here, sizeof here)) return 2;
    /* Whether the denied object can be reached directly (never, under
     * interpose). */
    int direct = access(denied, F_OK) == 0;

    flip_start(allowed, denied);
    for (long i = 0; i < n; i++) {
        char buf[256];
        if (!strcmp(route, "getxattr")) {
            ssize_t k = getxattr(flip_path, "user.marker", buf, sizeof buf);
            if (k == 6 && !memcmp(buf, "secret", 6)) leaks++;
        } else if (!strcmp(route, "listxattr")) {
            ssize_t k = listxattr(flip_path, buf, sizeof buf);
            for (ssize_t at = 0; at < k; at += strlen(buf + at) + 1)
                if (!strcmp(buf + at, "user.marker")) leaks++;
        } else if (!strcmp(route, "access")) {
            if (access(flip_path, F_OK) == 0) leaks++;
        } else if (!strcmp(route, "statfs")) {
            if (statfs(flip_path, &fs) == 0 && have_mine_fs && fs.f_type != mine_fs.f_type) leaks++;
        } else if (!strcmp(route, "opath") || !strcmp(route, "fstatfs")) {
            int fd = open(flip_path, O_PATH | O_CLOEXEC);
            if (fd < 0) continue;
            if (!strcmp(route, "opath")) {
                if (fstat(fd, &st) == 0 && have_mine && st.st_ino != mine.st_ino) leaks++;
            } else if (fstatfs(fd, &fs) == 0 && have_mine_fs && fs.f_type != mine_fs.f_type) {
                leaks++;
            }
            close(fd);
        } else if (!strcmp(route, "chdir")) {
            if (chdir(flip_path) != 0) continue;
            if (fstatat(AT_FDCWD, "", &st, AT_EMPTY_PATH) == 0 && have_mine && st.st_ino != mine.st_ino) leaks++;
            if (chdir(here) != 0) return 2;
        } else if (!strcmp(route, "inotify")) {
            int wd = inotify_add_watch(notify, flip_path, IN_ALL_EVENTS);
            if (wd >= 0 && wd != allowed_wd) {
                leaks++;
                inotify_rm_watch(notify, wd);
            }
        } else {
            return 2;
        }
    }
    flip_stop();
    printf("leaks=%ld direct=%d\n", leaks, direct);
    return leaks ? 1 : 0;
}
