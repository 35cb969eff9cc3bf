// bench-fsync: the durability ceiling of the disk under the store. Appends 4 KiB and fdatasync()s,
// in a loop, in the directory the store uses, like a WAL commit does; prints
// {"fsync_per_s":X,"count":N,"seconds":S}. One writer, so this is the rate of *sequential* durable
// commits: a store without group commit cannot acknowledge faster than this.
//
//   bench-fsync DIR [SECONDS]

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench-fsync DIR [SECONDS]\n");
        return 2;
    }
    const std::string path = std::string(argv[1]) + "/fsync-probe.dat";
    const double seconds = argc > 2 ? std::atof(argv[2]) : 3.0;
    int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
        std::perror("bench-fsync: open");
        return 1;
    }
    std::vector<char> block(4096, 'w');
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto until = start + std::chrono::duration<double>(seconds);
    long count = 0;
    while (clock::now() < until) {
        if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size()) ||
            ::fdatasync(fd) != 0) {
            std::perror("bench-fsync: write/fdatasync");
            return 1;
        }
        ++count;
        if (count % 4096 == 0) {
            (void)!::ftruncate(fd, 0); // keep the file small; the WAL is recycled the same way
            ::lseek(fd, 0, SEEK_SET);
        }
    }
    double elapsed = std::chrono::duration<double>(clock::now() - start).count();
    ::close(fd);
    ::unlink(path.c_str());
    std::printf("{\"fsync_per_s\":%.1f,\"count\":%ld,\"seconds\":%.2f}\n", count / elapsed, count,
                elapsed);
    return 0;
}
