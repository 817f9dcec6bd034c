/* Routes out that are not plain file paths: each subcommand tries one and
 * prints "escaped: ..." (exit 0) when it got through, or "refused: ERROR"
 * (exit 1) when it did not. The tests run each natively, where it must
 * escape, and under interpose, where it must be refused.
 *
 *   routes stat-empty-path PATH      newfstatat(AT_EMPTY_PATH) of a path: size
 *   routes statx-empty-path PATH     statx(AT_EMPTY_PATH) of a path: size
 *   routes sendmmsg SOCKET TEXT      one datagram to a pathname unix socket
 *   routes tiocsti                   push "x" into the terminal on stdin
 *   routes tioclinux                 the VT console ioctl on stdin
 *   routes keyctl-read ID            read a key of the inherited keyring
 *   routes shm-read KEY              attach a System V segment and read it
 *   routes mq-read NAME              receive from a POSIX message queue
 *   routes packet                    a raw packet socket (CAP_NET_RAW)
 *   routes whiteout FROM TO          rename leaving a whiteout device behind
 *   routes setcap FILE               give FILE a file capability
 *   routes trusted-xattr FILE        set a trusted.* extended attribute
 *   routes pagemap                   physical frame of a page of our own
 *   routes proc-stack                our own kernel stack
 *   routes fanotify DIR              a fanotify mark on DIR: names created there
 *   routes syslog                    the size of the kernel log, then its tail
 *   routes perf                      a CPU-clock counter on every process of CPU 0
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/perf_event.h>
#include <mqueue.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

static int refused(const char *what) {
    printf("refused: %s: %s\n", what, strerror(errno));
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *cmd = argv[1];
    if (!strcmp(cmd, "stat-empty-path") && argc == 3) {
        struct stat st;
        if (fstatat(AT_FDCWD, argv[2], &st, AT_EMPTY_PATH) != 0) return refused("newfstatat");
        printf("escaped: size=%lld mode=%o\n", (long long)st.st_size, st.st_mode);
        return 0;
    }
    if (!strcmp(cmd, "statx-empty-path") && argc == 3) {
        struct statx stx;
        if (statx(AT_FDCWD, argv[2], AT_EMPTY_PATH, STATX_SIZE, &stx) != 0) return refused("statx");
        printf("escaped: size=%llu\n", (unsigned long long)stx.stx_size);
        return 0;
    }
    if (!strcmp(cmd, "sendmmsg") && argc == 4) {
        int s = socket(AF_UNIX, SOCK_DGRAM, 0);
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        snprintf(addr.sun_path, sizeof addr.sun_path, "%s", argv[2]);
        struct iovec iov = {.iov_base = argv[3], .iov_len = strlen(argv[3])};
        struct mmsghdr m = {0};
        m.msg_hdr.msg_name = &addr;
        m.msg_hdr.msg_namelen = sizeof addr;
        m.msg_hdr.msg_iov = &iov;
        m.msg_hdr.msg_iovlen = 1;
        if (sendmmsg(s, &m, 1, 0) != 1) return refused("sendmmsg");
        printf("escaped: sent %u bytes\n", m.msg_len);
        return 0;
    }
    if (!strcmp(cmd, "tiocsti")) {
        char c = 'x';
        if (ioctl(0, TIOCSTI, &c) != 0) return refused("TIOCSTI");
        printf("escaped: pushed input into the terminal\n");
        return 0;
    }
    if (!strcmp(cmd, "tioclinux")) {
        char sub = 6; /* TIOCL_GETSHIFTSTATE: harmless, but only the filter refuses it with EPERM */
        if (ioctl(0, TIOCLINUX, &sub) != 0 && errno == EPERM) return refused("TIOCLINUX");
        printf("escaped: the ioctl reached the terminal (%s)\n", strerror(errno));
        return 0;
    }
    if (!strcmp(cmd, "syslog")) {
        char buf[256];
        long n = syscall(SYS_syslog, 3 /* SYSLOG_ACTION_READ_ALL */, buf, (int)sizeof buf - 1);
        if (n < 0) return refused("syslog");
        printf("escaped: %ld bytes of the kernel log\n", n);
        return 0;
    }
    if (!strcmp(cmd, "perf")) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.type = PERF_TYPE_SOFTWARE;
        a.size = sizeof a;
        a.config = PERF_COUNT_SW_CPU_CLOCK;
        /* pid -1, cpu 0: every process on the CPU, the host's included. */
        long fd = syscall(SYS_perf_event_open, &a, -1, 0, -1, 0);
        if (fd < 0) return refused("perf_event_open");
        printf("escaped: a counter on every process of CPU 0\n");
        return 0;
    }
    if (!strcmp(cmd, "keyctl-read") && argc == 3) {
        char buf[256];
        long n = syscall(SYS_keyctl, 11 /* KEYCTL_READ */, atol(argv[2]), buf, sizeof buf - 1);
        if (n < 0) return refused("keyctl");
        buf[n < (long)sizeof buf - 1 ? n : (long)sizeof buf - 1] = 0;
        printf("escaped: %s\n", buf);
        return 0;
    }
    if (!strcmp(cmd, "shm-read") && argc == 3) {
        int id = shmget((key_t)atol(argv[2]), 0, 0);
        if (id < 0) return refused("shmget");
        char *p = shmat(id, NULL, SHM_RDONLY);
        if (p == (void *)-1) return refused("shmat");
        printf("escaped: %.64s\n", p);
        return 0;
    }
    if (!strcmp(cmd, "mq-read") && argc == 3) {
        mqd_t q = mq_open(argv[2], O_RDONLY | O_NONBLOCK);
        if (q == (mqd_t)-1) return refused("mq_open");
        char buf[8192];
        ssize_t n = mq_receive(q, buf, sizeof buf, NULL);
        if (n < 0) return refused("mq_receive");
        printf("escaped: %.*s\n", (int)n, buf);
        return 0;
    }
    if (!strcmp(cmd, "packet")) {
        int s = socket(AF_PACKET, SOCK_RAW, 0);
        if (s < 0) return refused("socket(AF_PACKET)");
        printf("escaped: a raw packet socket\n");
        return 0;
    }
    if (!strcmp(cmd, "whiteout") && argc == 4) {
        if (syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], RENAME_WHITEOUT) != 0)
            return refused("renameat2(RENAME_WHITEOUT)");
        struct stat st;
        if (lstat(argv[2], &st) == 0 && S_ISCHR(st.st_mode)) {
            printf("escaped: %s is now a character device\n", argv[2]);
            return 0;
        }
        return refused("no device was left");
    }
    if (!strcmp(cmd, "setcap") && argc == 3) {
        /* VFS_CAP_REVISION_2 with CAP_DAC_OVERRIDE permitted and effective. */
        uint32_t cap[5] = {0x02000001, 1u << 1, 0, 0, 0};
        if (setxattr(argv[2], "security.capability", cap, sizeof cap, 0) != 0) return refused("setxattr");
        printf("escaped: %s carries a file capability\n", argv[2]);
        return 0;
    }
    if (!strcmp(cmd, "trusted-xattr") && argc == 3) {
        if (setxattr(argv[2], "trusted.interpose", "x", 1, 0) != 0) return refused("setxattr");
        printf("escaped: a trusted.* attribute on %s\n", argv[2]);
        return 0;
    }
    if (!strcmp(cmd, "pagemap")) {
        static volatile char page[4096] __attribute__((aligned(4096)));
        page[0] = 1;
        int fd = open("/proc/self/pagemap", O_RDONLY);
        if (fd < 0) return refused("open pagemap");
        uint64_t entry;
        off_t at = ((uintptr_t)page / 4096) * sizeof entry;
        if (pread(fd, &entry, sizeof entry, at) != sizeof entry) return refused("read pagemap");
        uint64_t pfn = entry & ((1ULL << 55) - 1);
        if (pfn == 0) {
            errno = EPERM;
            return refused("pagemap shows no physical frame");
        }
        printf("escaped: physical frame %#llx\n", (unsigned long long)pfn);
        return 0;
    }
    if (!strcmp(cmd, "proc-stack")) {
        int fd = open("/proc/self/stack", O_RDONLY);
        if (fd < 0) return refused("open stack");
        char buf[512];
        ssize_t n = read(fd, buf, sizeof buf - 1);
        if (n <= 0) return refused("read stack");
        printf("escaped: read %zd bytes of the kernel stack\n", n);
        return 0;
    }
    if (!strcmp(cmd, "fanotify") && argc == 3) {
        /* Unprivileged since Linux 5.13 with FAN_REPORT_FID. */
        int fan = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME, O_RDONLY);
        if (fan < 0) return refused("fanotify_init");
        if (fanotify_mark(fan, FAN_MARK_ADD, FAN_CREATE | FAN_ONDIR, AT_FDCWD, argv[2]) != 0)
            return refused("fanotify_mark");
        printf("escaped: watching %s\n", argv[2]);
        return 0;
    }
    fprintf(stderr, "unknown route or arguments\n");
    return 2;
}
