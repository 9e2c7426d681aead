/* A program built with musl (musl-gcc), dynamically linked: musl's loader starts it, and
 * cannot load a glibc library such as the drop-in. Prints a line and exits with the status
 * its argument names.
 *
 *   musl_program STATUS */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  puts("musl program ran");
  return argc > 1 ? atoi(argv[1]) : 0;
}
