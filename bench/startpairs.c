// startpairs N SETUP -- CMD_A... -- CMD_B...
// Runs A and B alternately N times each (fork/exec, stdout and stderr on /dev/null), the target
// made afresh before every run (untimed), and prints one line: A's and B's mean CPU (user + sys,
// from wait4's rusage) in ms, A's mean over B's, the median of the per-pair wall-time ratios,
// and the page faults of the last run of each. At start-up sizes (1-2 ms) hyperfine's wall times
// spread more than the differences; CPU summed over hundreds of pairs does not.
// SETUP: "file:PATH" (an empty file), "dir:PATH:K" (a directory of K empty files).
// Used by bench/small.sh --parts pairs.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static void setup(const char *m) {
    if (!strncmp(m, "file:", 5)) {
        int fd = open(m + 5, O_CREAT | O_WRONLY | O_TRUNC | O_NOFOLLOW, 0644);
        if (fd < 0) die(m + 5);
        close(fd);
    } else if (!strncmp(m, "dir:", 4)) {
        char p[4096];
        snprintf(p, sizeof p, "%s", m + 4);
        char *c = strrchr(p, ':');
        if (!c) { fprintf(stderr, "startpairs: bad setup %s\n", m); exit(2); }
        int k = atoi(c + 1);
        *c = 0;
        if (mkdir(p, 0755) && errno != EEXIST) die(p);
        for (int i = 0; i < k; i++) {
            char q[4200];
            snprintf(q, sizeof q, "%s/f%d", p, i);
            int fd = open(q, O_CREAT | O_WRONLY | O_NOFOLLOW, 0644);
            if (fd < 0) die(q);
            close(fd);
        }
    }
}

static void run(char **argv, double *cpu, double *wall, long *faults) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t p = fork();
    if (p < 0) die("fork");
    if (!p) {
        int dn = open("/dev/null", O_WRONLY);
        dup2(dn, 1);
        dup2(dn, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    struct rusage ru;
    if (wait4(p, &st, 0, &ru) < 0) die("wait4");
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "startpairs: %s failed (status %d)\n", argv[0], st);
        exit(1);
    }
    *cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
    *wall = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    *faults = ru.ru_minflt + ru.ru_majflt;
}

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: startpairs N SETUP -- CMD_A... -- CMD_B...\n"); return 2; }
    int n = atoi(argv[1]);
    const char *m = argv[2];
    if (n < 1 || strcmp(argv[3], "--")) { fprintf(stderr, "startpairs: bad arguments\n"); return 2; }
    char **A = &argv[4];
    int i = 4;
    while (i < argc && strcmp(argv[i], "--")) i++;
    if (i >= argc - 1) { fprintf(stderr, "startpairs: no second command\n"); return 2; }
    argv[i] = 0;
    char **B = &argv[i + 1];
    double *ratio = malloc(n * sizeof *ratio), sa = 0, sb = 0;
    long fa = 0, fb = 0;
    if (!ratio) die("malloc");
    for (int k = 0; k < n; k++) {
        double ca, cb, wa, wb;
        setup(m);
        run(A, &ca, &wa, &fa);
        setup(m);
        run(B, &cb, &wb, &fb);
        sa += ca;
        sb += cb;
        ratio[k] = wa / wb;
    }
    qsort(ratio, n, sizeof *ratio, cmp);
    printf("%.3f\t%.3f\t%.3f\t%.3f\t%ld\t%ld\n", sa / n * 1e3, sb / n * 1e3, sa / sb, ratio[n / 2], fa, fb);
    return 0;
}
