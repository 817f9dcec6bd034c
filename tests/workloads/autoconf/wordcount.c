/* Counts the words on standard input. */
#include "config.h"
#include <ctype.h>
#include <stdio.h>
#ifdef HAVE_LOCALE_H
#include <locale.h>
#endif

int main(void) {
#ifdef HAVE_SETLOCALE
    setlocale(LC_ALL, "");
#endif
    long words = 0;
    int c, in_word = 0;
    while ((c = getchar()) != EOF) {
        if (isspace(c)) {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            words++;
        }
    }
    printf("%ld\n", words);
    return 0;
}
