/* Opens a file through the 32-bit `int 0x80` entry point (i386 open is
 * syscall 5), which a filter that only knows x86_64 numbers would let
 * through. Built with -no-pie so the path lies below 4 GiB. Prints what it
 * read; exits 0 if it read the file, 1 if the open failed. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char path[4096];

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    strncpy(path, argv[1], sizeof path - 1);
    long fd;
    __asm__ volatile("int $0x80" : "=a"(fd) : "a"(5), "b"(path), "c"(0), "d"(0) : "memory");
    if (fd < 0) {
        printf("int80 open failed: %ld\n", fd);
        return 1;
    }
    char buf[256];
    ssize_t r = read((int)fd, buf, sizeof buf - 1);
    if (r < 0) r = 0;
    buf[r] = 0;
    printf("int80 read: %s\n", buf);
    return 0;
}
