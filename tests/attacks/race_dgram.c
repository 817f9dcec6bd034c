/* Path-buffer race on datagram sends: one thread flips the sun_path of a
 * shared sockaddr_un between an allowed and a denied socket while another
 * sends a datagram to it 20,000 times (sendto, sendmsg or sendmmsg). A
 * checker that decides the address and lets the kernel send re-reads it:
 * some datagrams reach the denied socket, which the test counts.
 * Usage: race_dgram sendto|sendmsg|sendmmsg ALLOWED DENIED ITERATIONS */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static struct sockaddr_un target;
static char paths[2][sizeof target.sun_path];
static atomic_int done;

static void *flip(void *arg) {
    (void)arg;
    while (!atomic_load(&done)) {
        strcpy(target.sun_path, paths[1]);
        strcpy(target.sun_path, paths[0]);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    const char *how = argv[1];
    long n = atol(argv[4]), sent = 0;
    snprintf(paths[0], sizeof paths[0], "%s", argv[2]);
    snprintf(paths[1], sizeof paths[1], "%s", argv[3]);
    target.sun_family = AF_UNIX;
    strcpy(target.sun_path, paths[0]);
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    pthread_t t;
    pthread_create(&t, NULL, flip, NULL);
    for (long i = 0; i < n; i++) {
        char byte = 'x';
        struct iovec iov = {&byte, 1};
        struct msghdr msg = {.msg_name = &target, .msg_namelen = sizeof target, .msg_iov = &iov, .msg_iovlen = 1};
        long r;
        if (!strcmp(how, "sendto")) {
            r = sendto(s, &byte, 1, MSG_DONTWAIT, (struct sockaddr *)&target, sizeof target);
        } else if (!strcmp(how, "sendmsg")) {
            r = sendmsg(s, &msg, MSG_DONTWAIT);
        } else {
            struct mmsghdr m = {.msg_hdr = msg};
            r = sendmmsg(s, &m, 1, MSG_DONTWAIT);
        }
        if (r > 0) sent++;
    }
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("sent=%ld\n", sent);
    return 0;
}
