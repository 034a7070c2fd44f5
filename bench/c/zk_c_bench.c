/*
 * The C client anchor of bench/ (issue 34): W1, W2 and W3 with Apache ZooKeeper's own C client
 * (Debian's libzookeeper-mt, its multi-threaded library), in a process of its own.
 *
 *   zk_c_bench <host:port> <w1|w2|w3> <calls> <window> <path>
 *
 * w1: <calls> sequential getData of <path> (zoo_get).
 * w2: <calls> getData of <path> through the async API (zoo_aget), <window> outstanding.
 * w3: <calls> sequential create + delete of <path> (zoo_create, plain create: what a C user
 *     writes; zoo_delete, any version); <path>'s parent must exist. ops = requests (2 a pair).
 *
 * One call is made before the measured part (connection warm). Prints one line:
 *   ops=<n> wall_us=<n> user_us=<n> sys_us=<n> vcsw=<n>
 * where the CPU and the voluntary context switches are the whole process's (getrusage), over
 * the measured part only. Exits 1 with a message on stderr on any failure, 2 on bad usage.
 * Every wait is bounded (10 s to connect, 120 s for the measured part).
 */
#define THREADED /* the sync API of the multi-threaded library */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <zookeeper/zookeeper.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int connected = 0;
static long outstanding = 0;
static long completed = 0;
static int failed_rc = ZOK;

static long long now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static long long tv_us(struct timeval tv) {
    return (long long)tv.tv_sec * 1000000LL + tv.tv_usec;
}

static void deadline_in(struct timespec *ts, int seconds) {
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += seconds;
}

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx) {
    (void)zh;
    (void)path;
    (void)ctx;
    if (type == ZOO_SESSION_EVENT) {
        pthread_mutex_lock(&lock);
        connected = state == ZOO_CONNECTED_STATE ? 1 : (state == ZOO_CONNECTING_STATE ? 0 : -1);
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
    }
}

static void got_data(int rc, const char *value, int len, const struct Stat *stat,
                     const void *data) {
    (void)value;
    (void)len;
    (void)stat;
    (void)data;
    pthread_mutex_lock(&lock);
    outstanding--;
    completed++;
    if (rc != ZOK && failed_rc == ZOK) {
        failed_rc = rc;
    }
    pthread_cond_signal(&changed);
    pthread_mutex_unlock(&lock);
}

static int fail(const char *what, int rc) {
    fprintf(stderr, "zk_c_bench: %s: %s (%d)\n", what, zerror(rc), rc);
    return 1;
}

static int pipelined(zhandle_t *zh, const char *path, long calls, long window) {
    long issued = 0;
    struct timespec until;
    deadline_in(&until, 120);
    pthread_mutex_lock(&lock);
    while (completed < calls && failed_rc == ZOK) {
        while (issued < calls && outstanding < window) {
            outstanding++;
            issued++;
            pthread_mutex_unlock(&lock);
            int rc = zoo_aget(zh, path, 0, got_data, NULL);
            pthread_mutex_lock(&lock);
            if (rc != ZOK) {
                outstanding--;
                failed_rc = rc;
                break;
            }
        }
        if (completed >= calls || failed_rc != ZOK) {
            break;
        }
        if (pthread_cond_timedwait(&changed, &lock, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&lock);
            fprintf(stderr, "zk_c_bench: w2: %ld of %ld done after 120 s\n", completed, calls);
            return 1;
        }
    }
    int rc = failed_rc;
    pthread_mutex_unlock(&lock);
    return rc == ZOK ? 0 : fail("w2 zoo_aget", rc);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: zk_c_bench <host:port> <w1|w2|w3> <calls> <window> <path>\n");
        return 2;
    }
    const char *hosts = argv[1], *workload = argv[2], *path = argv[5];
    long calls = strtol(argv[3], NULL, 10), window = strtol(argv[4], NULL, 10);
    if (calls <= 0 || window <= 0 || calls > 100000000L || window > 100000L) {
        fprintf(stderr, "zk_c_bench: calls and window must be positive (and sane)\n");
        return 2;
    }
    /* Its log goes nowhere: failures are reported on stderr by this program, once. */
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    FILE *quiet = fopen("/dev/null", "w");
    if (quiet != NULL) {
        zoo_set_log_stream(quiet);
    }
    zhandle_t *zh = zookeeper_init(hosts, watcher, 10000, NULL, NULL, 0);
    if (zh == NULL) {
        fprintf(stderr, "zk_c_bench: zookeeper_init failed: %s\n", strerror(errno));
        return 1;
    }
    struct timespec until;
    deadline_in(&until, 10);
    pthread_mutex_lock(&lock);
    while (connected == 0) {
        if (pthread_cond_timedwait(&changed, &lock, &until) == ETIMEDOUT) {
            break;
        }
    }
    int up = connected == 1;
    pthread_mutex_unlock(&lock);
    if (!up) {
        fprintf(stderr, "zk_c_bench: no session with %s within 10 s\n", hosts);
        zookeeper_close(zh);
        return 1;
    }

    char buf[1024];
    char data[100];
    memset(data, 7, sizeof data);
    int rc, status = 0;
    int len = sizeof buf;
    int w3 = strcmp(workload, "w3") == 0;
    /* The warm-up call. */
    rc = w3 ? zoo_exists(zh, path, 0, NULL) : zoo_get(zh, path, 0, buf, &len, NULL);
    if (rc != ZOK && !(w3 && rc == ZNONODE)) {
        status = fail("warm-up", rc);
        goto out;
    }

    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    long long t0 = now_us(), limit = t0 + 120LL * 1000000LL;
    long ops = 0;
    if (strcmp(workload, "w1") == 0) {
        for (long i = 0; i < calls && status == 0; i++) {
            len = sizeof buf;
            rc = zoo_get(zh, path, 0, buf, &len, NULL);
            if (rc != ZOK) {
                status = fail("w1 zoo_get", rc);
            } else if (now_us() > limit) {
                fprintf(stderr, "zk_c_bench: w1 not done after 120 s\n");
                status = 1;
            }
            ops++;
        }
    } else if (strcmp(workload, "w2") == 0) {
        status = pipelined(zh, path, calls, window);
        ops = calls;
    } else if (w3) {
        for (long i = 0; i < calls && status == 0; i++) {
            rc = zoo_create(zh, path, data, sizeof data, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
            if (rc != ZOK) {
                status = fail("w3 zoo_create", rc);
                break;
            }
            rc = zoo_delete(zh, path, -1);
            if (rc != ZOK) {
                status = fail("w3 zoo_delete", rc);
            } else if (now_us() > limit) {
                fprintf(stderr, "zk_c_bench: w3 not done after 120 s\n");
                status = 1;
            }
            ops += 2;
        }
    } else {
        fprintf(stderr, "zk_c_bench: unknown workload %s (w1, w2 or w3)\n", workload);
        status = 2;
    }
    long long wall = now_us() - t0;
    getrusage(RUSAGE_SELF, &r1);
    if (status == 0) {
        printf("ops=%ld wall_us=%lld user_us=%lld sys_us=%lld vcsw=%ld\n", ops, wall,
               tv_us(r1.ru_utime) - tv_us(r0.ru_utime), tv_us(r1.ru_stime) - tv_us(r0.ru_stime),
               r1.ru_nvcsw - r0.ru_nvcsw);
    }
out:
    zookeeper_close(zh);
    return status;
}
