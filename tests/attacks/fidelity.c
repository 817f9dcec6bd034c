/* Fidelity probe: path calls whose answer under interpose must be the
 * kernel's own (issue 27). Each line is NAME RESULT ERRNO-NAME; a run
 * natively and a run under interpose must print the same lines.
 * Usage: fidelity DIR RO  (a scratch directory, writable, and a directory
 * holding data.txt that the sandbox may only read) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#define R(name, expr)                                                                  \
    do {                                                                               \
        errno = 0;                                                                     \
        long r_ = (long)(expr);                                                        \
        printf("%-30s %ld %s\n", name, r_ < 0 ? -1L : r_, r_ < 0 ? strerrorname_np(errno) : "-"); \
    } while (0)

static volatile sig_atomic_t xfsz;
static void on_xfsz(int sig) { (void)sig; xfsz++; }

int main(int argc, char **argv) {
    if (argc != 3 || chdir(argv[1])) return 2;
    const char *ro = argv[2];
    setvbuf(stdout, NULL, _IONBF, 0);
    char buf[4096];
    close(open("f", O_CREAT | O_WRONLY, 0644));
    mkdir("dir", 0755);

    /* The caller's file size limit holds for a truncate made for it. */
    signal(SIGXFSZ, on_xfsz);
    struct rlimit old, small;
    getrlimit(RLIMIT_FSIZE, &old);
    small = old;
    small.rlim_cur = 100;
    setrlimit(RLIMIT_FSIZE, &small);
    R("truncate past RLIMIT_FSIZE", truncate("f", 1000));
    setrlimit(RLIMIT_FSIZE, &old);
    printf("%-30s %d\n", "SIGXFSZ delivered", xfsz > 0);
    struct stat st;
    stat("f", &st);
    printf("%-30s %ld\n", "size after", (long)st.st_size);

    /* Unknown flag bits are refused before anything is done. */
    R("unlinkat REMOVEDIR|0x1000", unlinkat(AT_FDCWD, "dir", AT_REMOVEDIR | 0x1000));
    R("linkat unknown flag", linkat(AT_FDCWD, "f", AT_FDCWD, "f2", 0x8000));
    R("fchownat unknown flag", fchownat(AT_FDCWD, "f", getuid(), getgid(), 0x8000));
    struct timespec ts[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
    R("utimensat unknown flag", utimensat(AT_FDCWD, "f", ts, 0x8000));
    R("fchmodat2 unknown flag", syscall(452, AT_FDCWD, "f", 0600, 0x8000));
    /* newfstatat takes what statx takes of its flags (AT_NO_AUTOMOUNT, the
     * sync bits) and refuses the rest. */
    R("fstatat AT_NO_AUTOMOUNT", fstatat(AT_FDCWD, "f", &st, 0x800));
    R("fstatat AT_STATX_DONT_SYNC", fstatat(AT_FDCWD, "f", &st, 0x4000));
    R("fstatat AT_STATX_FORCE_SYNC", fstatat(AT_FDCWD, "f", &st, 0x2000));
    R("fstatat AT_SYMLINK_FOLLOW", fstatat(AT_FDCWD, "f", &st, 0x400));
    R("fstatat unknown flag", fstatat(AT_FDCWD, "f", &st, 0x8000));
    stat("f", &st);
    printf("%-30s %o\n", "mode after", st.st_mode & 07777);
    R("linkat across mounts", linkat(AT_FDCWD, "/proc/cpuinfo", AT_FDCWD, "cpuinfo", 0));
    R("renameat2 NOREPLACE|EXCHANGE", syscall(SYS_renameat2, AT_FDCWD, "none", AT_FDCWD, "x", RENAME_NOREPLACE | RENAME_EXCHANGE));

    /* Calls that take an open file refuse an O_PATH descriptor. */
    int op = open("f", O_PATH);
    R("fchmod O_PATH", fchmod(op, 0600));
    R("fchown O_PATH", fchown(op, getuid(), getgid()));
    R("fgetxattr O_PATH", fgetxattr(op, "user.x", buf, sizeof buf));
    R("fsetxattr O_PATH", fsetxattr(op, "user.x", "v", 1, 0));
    R("utimensat(O_PATH fd, NULL)", syscall(SYS_utimensat, op, NULL, ts, 0));
    R("fchmodat2 O_PATH EMPTY_PATH", syscall(452, op, "", 0644, AT_EMPTY_PATH));
    stat("f", &st);
    printf("%-30s %o\n", "mode after", st.st_mode & 07777);

    /* readlinkat of an O_PATH handle on a symlink, by an empty name. */
    symlink("f", "lnk");
    int ol = open("lnk", O_PATH | O_NOFOLLOW);
    R("readlinkat O_PATH ''", readlinkat(ol, "", buf, sizeof buf));
    R("readlinkat cwd ''", readlinkat(AT_FDCWD, "", buf, sizeof buf));
    R("readlink size 0 first", readlink("none/none", buf, 0));

    /* readlink of names that are no link (EINVAL from one lookup where the
     * name is plain), of links, of missing names and of names through a
     * link or with a trailing slash, relative and absolute. */
    symlink("dir", "dlnk");
    const char *names[] = {"f", "f/", "dir", "dir/", "dir//", "./f", "none", "none/x", "f/x", "dlnk", "dlnk/", "dlnk/x", "lnk/"};
    char cwd[2048], name[4200];
    if (!getcwd(cwd, sizeof cwd)) return 2;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(name, sizeof name, "readlink %s", names[i]);
        R(name, readlink(names[i], buf, sizeof buf));
        snprintf(name, sizeof name, "readlink /abs/%s", names[i]);
        char abs[4200];
        snprintf(abs, sizeof abs, "%s/%s", cwd, names[i]);
        R(name, readlink(abs, buf, sizeof buf));
    }
    /* Names with `..`, missing or not, through a link or not: what a
     * loader's $ORIGIN/../lib search looks up. */
    const char *dotted[] = {"dir/../none/x", "dir/../none", "dir/../f", "dlnk/../f", "dlnk/../none", "none/../f", "f/../f"};
    for (size_t i = 0; i < sizeof dotted / sizeof *dotted; i++) {
        char abs[4200];
        snprintf(abs, sizeof abs, "%s/%s", cwd, dotted[i]);
        int fd = open(abs, O_RDONLY | O_CLOEXEC);
        int e = errno;
        snprintf(name, sizeof name, "open /abs/%s", dotted[i]);
        printf("%-30s %d %s\n", name, fd < 0 ? -1 : 0, fd < 0 ? strerrorname_np(e) : "-");
        if (fd >= 0) close(fd);
        struct stat ds;
        snprintf(name, sizeof name, "stat /abs/%s", dotted[i]);
        R(name, stat(abs, &ds));
    }
    /* Relative stats of missing names, looked up by the cwd's path. */
    const char *absent[] = {"none", "none/x", "dir/none", "dir/none/", "f/x", "dlnk/none", "./none"};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++) {
        struct stat ms;
        snprintf(name, sizeof name, "stat %s", absent[i]);
        R(name, stat(absent[i], &ms));
        snprintf(name, sizeof name, "lstat %s", absent[i]);
        R(name, lstat(absent[i], &ms));
    }
    /* Relative access(2), looked up by the cwd's path too. */
    R("access f R_OK|W_OK", access("f", R_OK | W_OK));
    R("access dir X_OK", access("dir", X_OK));
    R("access none F_OK", access("none", F_OK));
    R("access dir/none F_OK", access("dir/none", F_OK));
    R("access f/x F_OK", access("f/x", F_OK));
    R("access dlnk X_OK", access("dlnk", X_OK));
    R("faccessat2 lnk NOFOLLOW", syscall(439, AT_FDCWD, "lnk", F_OK, AT_SYMLINK_NOFOLLOW));
    R("readlink /", readlink("/", buf, sizeof buf));
    snprintf(name, sizeof name, "%s/data.txt", ro);
    R("readlink ro data.txt", readlink(name, buf, sizeof buf));

    /* utimensat's NULL name: the cwd's is a bad address, a descriptor's
     * takes no flags. */
    R("utimensat(CWD, NULL)", syscall(SYS_utimensat, AT_FDCWD, NULL, ts, 0));
    int od = open("f", O_RDONLY);
    R("utimensat(fd, NULL, NOFOLLOW)", syscall(SYS_utimensat, od, NULL, ts, AT_SYMLINK_NOFOLLOW));

    /* Under a default ACL the kernel ignores the umask. */
    mkdir("acl", 0755);
    /* posix_acl_xattr: version 2, then user::rwx group::rwx other::rwx. */
    uint32_t acl[7] = {2, 0x00070001, 0xffffffff, 0x00070004, 0xffffffff, 0x00070020, 0xffffffff};
    R("set a default ACL", setxattr("acl", "system.posix_acl_default", acl, sizeof acl, 0));
    umask(022);
    mkdir("acl/sub", 0777);
    close(open("acl/file", O_CREAT | O_WRONLY, 0666));
    stat("acl/sub", &st);
    printf("%-30s %o\n", "mkdir under default ACL", st.st_mode & 07777);
    stat("acl/file", &st);
    printf("%-30s %o\n", "creat under default ACL", st.st_mode & 07777);
    mkdir("plain", 0777);
    stat("plain", &st);
    printf("%-30s %o\n", "mkdir with umask 022", st.st_mode & 07777);

    /* What the lookup alone decides comes before any permission: an
     * existing name with O_CREAT|O_EXCL, a directory opened to write. */
    char data[4096];
    snprintf(data, sizeof data, "%s/data.txt", ro);
    R("O_CREAT|O_EXCL existing, ro", open(data, O_CREAT | O_EXCL | O_WRONLY, 0644));
    R("O_RDWR of a ro directory", open(ro, O_RDWR));
    R("O_CREAT of a ro directory", open(ro, O_CREAT | O_RDONLY, 0644));

    /* A name that does not exist is looked up before any permission is
     * checked: writing, changing or connecting to it is ENOENT in a
     * read-only tree and outside the surface (a probe of /run/docker.sock). */
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/no-such-name", ro);
    R("O_WRONLY of a missing name, ro", open(missing, O_WRONLY));
    R("chmod of a missing name, ro", chmod(missing, 0644));
    R("truncate of a missing name, ro", truncate(missing, 0));
    R("O_WRONLY missing, outside", open("/run/interpose-no-such.sock", O_WRONLY));
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    snprintf(sun.sun_path, sizeof sun.sun_path, "%s/no-such.sock", ro);
    int us = socket(AF_UNIX, SOCK_STREAM, 0);
    R("connect a missing socket, ro", connect(us, (struct sockaddr *)&sun, sizeof sun));
    snprintf(sun.sun_path, sizeof sun.sun_path, "/run/interpose-no-such.sock");
    R("connect a missing socket, out", connect(us, (struct sockaddr *)&sun, sizeof sun));
    close(us);

    /* O_CREAT of a name written with a trailing slash is EISDIR once the
     * directories on the way are found, whatever is at the name, and makes
     * nothing (a missing one was made a file, a file said ENOTDIR). */
    R("O_CREAT of missing new/", open("slashed/", O_CREAT | O_WRONLY, 0644));
    R("slashed made", access("slashed", F_OK));
    R("O_CREAT of file f/", open("f/", O_CREAT | O_WRONLY, 0644));
    R("O_CREAT|O_EXCL of dir/", open("dir/", O_CREAT | O_EXCL | O_WRONLY, 0644));
    R("O_CREAT under a missing dir", open("no-dir/x/", O_CREAT | O_WRONLY, 0644));
    R("O_CREAT|O_EXCL of /proc/self/", open("/proc/self/", O_CREAT | O_EXCL | O_WRONLY, 0644));
    /* With RESOLVE_* flags too (the kernel's own create of the name says
     * EISDIR for the trailing slash; O_EXCL of a directory must not say
     * EEXIST first). */
    struct { uint64_t flags, mode, resolve; } beneath = {O_CREAT | O_WRONLY, 0644, 0x08 /* RESOLVE_BENEATH */};
    R("openat2 BENEATH O_CREAT new/", syscall(SYS_openat2, AT_FDCWD, "slashed2/", &beneath, sizeof beneath));
    R("slashed2 made", access("slashed2", F_OK));
    beneath.flags |= O_EXCL;
    R("openat2 BENEATH O_EXCL dir/", syscall(SYS_openat2, AT_FDCWD, "dir/", &beneath, sizeof beneath));

    /* Searching the directories above the surface is what every lookup
     * does (autoconf's `test -x /`). */
    R("access / X_OK", access("/", X_OK));
    R("access . X_OK", access(".", X_OK));
    return 0;
}
