// bench-wal-frames (LD_PRELOAD): which pages a SQLite process writes, for bench/cost --pages.
// SQLite appends a WAL frame as two pwrite64 calls, the 24-byte frame header (page number, and
// the database size on a commit's last frame) then the page; a checkpoint writes pages into the
// database file at (page - 1) * page size. Each such write is logged as one binary record
// {u8 kind ('w' frame, 'c' commit frame, 'd' database page), u32 page} to $WAL_FRAMES_LOG, and
// the call is passed on unchanged. bench/cost maps the pages to tables and indexes afterwards
// (the dbstat virtual table), giving the pages written per event by b-tree.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn)(int, const void*, size_t, off_t);

enum { max_fds = 4096 };
static char fd_kind[max_fds]; // 0 unknown, 'w' -wal, 'd' database, 'o' other
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE* out;

static char kind_of(int fd) {
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) {
        return 'o';
    }
    path[n] = '\0';
    const char* db = getenv("WAL_FRAMES_DB");
    if (db == NULL) {
        return 'o';
    }
    size_t len = strlen(db);
    if (strncmp(path, db, len) != 0) {
        return 'o';
    }
    if (path[len] == '\0') {
        return 'd';
    }
    return strcmp(path + len, "-wal") == 0 ? 'w' : 'o';
}

static void record(char kind, uint32_t page) {
    pthread_mutex_lock(&mu);
    if (out == NULL) {
        const char* p = getenv("WAL_FRAMES_LOG");
        out = p ? fopen(p, "ab") : NULL;
    }
    if (out != NULL) {
        unsigned char rec[5] = {(unsigned char)kind, (unsigned char)(page >> 24),
                                (unsigned char)(page >> 16), (unsigned char)(page >> 8),
                                (unsigned char)page};
        fwrite(rec, 1, sizeof rec, out);
        fflush(out); // the bridge may be killed: every record reaches the file
    }
    pthread_mutex_unlock(&mu);
}

static uint32_t be32(const unsigned char* b) {
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

static void observe(int fd, const void* buf, size_t count, off_t offset) {
    if (fd < 0 || fd >= max_fds) {
        return;
    }
    char k = __atomic_load_n(&fd_kind[fd], __ATOMIC_RELAXED);
    if (k == 0) {
        k = kind_of(fd);
        __atomic_store_n(&fd_kind[fd], k, __ATOMIC_RELAXED);
    }
    if (k == 'w' && count == 24) {
        const unsigned char* b = buf;
        record(be32(b + 4) != 0 ? 'c' : 'w', be32(b));
    } else if (k == 'd' && count >= 512 && offset >= 0) {
        record('d', (uint32_t)(offset / (off_t)count) + 1);
    }
}

static pwrite_fn next_pwrite64(void) {
    static pwrite_fn fn;
    if (fn == NULL) {
        fn = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
    }
    return fn;
}

ssize_t pwrite64(int fd, const void* buf, size_t count, off_t offset) {
    observe(fd, buf, count, offset);
    return next_pwrite64()(fd, buf, count, offset);
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
    return pwrite64(fd, buf, count, offset);
}

// A closed descriptor's number is reused for another file: forget what it was.
int close(int fd) {
    static int (*next_close)(int);
    if (next_close == NULL) {
        next_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    }
    if (fd >= 0 && fd < max_fds) {
        __atomic_store_n(&fd_kind[fd], 0, __ATOMIC_RELAXED);
    }
    return next_close(fd);
}
