/* Calls that must be refused outright, each printed as NAME=ERRNO-or-ok:
 * a nested seccomp listener (it would receive the command's trapped calls
 * first and could let them continue), io_uring, open_by_handle_at, mount,
 * unshare of a mount or user namespace, ptrace attach and process_vm_writev
 * (on a child of ours), clone3, chroot.
 *
 * Usage: refused DIR. The mount is attempted on DIR only; run natively, run
 * it inside `unshare -m --propagation private` so nothing reaches the host. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static void report(const char *name, long r) {
    printf("%s=%s\n", name, r < 0 ? strerrorname_np(errno) : "ok");
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog prog = {1, allow};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    report("seccomp_listener", syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
    char params[120] = {0};
    report("io_uring_setup", syscall(SYS_io_uring_setup, 4, params));
    char handle[136] = {0};
    report("open_by_handle_at", syscall(SYS_open_by_handle_at, -100, handle, 0));
    report("mount", mount("none", argv[1], "tmpfs", 0, NULL));
    report("unshare_mount_ns", unshare(CLONE_NEWNS));
    report("unshare_user_ns", unshare(CLONE_NEWUSER));
    pid_t victim = fork();
    if (victim == 0) {
        pause();
        _exit(0);
    }
    static char byte;
    struct iovec local = {&byte, 1}, remote = {&byte, 1};
    report("process_vm_writev", syscall(SYS_process_vm_writev, victim, &local, 1, &remote, 1, 0));
    report("ptrace_attach", ptrace(PTRACE_ATTACH, victim, 0, 0));
    kill(victim, SIGKILL);
    char args[88] = {0};
    report("clone3", syscall(SYS_clone3, args, 0));
    report("chroot", chroot(argv[1]));
    return 0;
}
