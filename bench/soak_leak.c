/* A deliberate leak, to check that bench/soak catches one (not part of trainrun).
 *
 * LD_PRELOADed, it wraps rename(), which every checkpoint commit, rotation and checkpoint-best
 * update calls (~16 times an epoch in bench/soak's default run), and on each call whose target
 * names a checkpoint it leaks LEAK_KIB KiB of touched heap (default 64) and, with LEAK_FD set,
 * one open /dev/null.
 *
 *   gcc -shared -fPIC -O1 -o /tmp/soak_leak.so bench/soak_leak.c -ldl
 *   LD_PRELOAD=/tmp/soak_leak.so LEAK_FD=1 bench/soak --epochs 12 --baseline 3   # exit 1: fds grow
 *   LD_PRELOAD=/tmp/soak_leak.so bench/soak                                      # exit 1: RSS grows
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

int rename(const char *from, const char *to) {
  static int (*real)(const char *, const char *);
  static void *volatile kept;  /* so the compiler cannot drop the malloc and memset */
  if (!real) real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  if (strstr(to, "checkpoint-")) {
    size_t bytes = (getenv("LEAK_KIB") ? (size_t)atol(getenv("LEAK_KIB")) : 64) * 1024;
    void *p = malloc(bytes);
    memset(p, 1, bytes);
    kept = p;
    (void)kept;
    if (getenv("LEAK_FD")) open("/dev/null", O_RDONLY);
  }
  return real(from, to);
}
