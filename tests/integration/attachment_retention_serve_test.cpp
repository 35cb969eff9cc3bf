// attachments.retention through the real `wopbridge serve`: housekeeping (at start, then every
// interval) removes attachment files not put again for the retention plus a margin, keeps the
// younger ones and anything that is not an attachment; a retention shorter than the dead-letter
// retention is refused at start with file:line:col.
#include "support/eventually.hpp"
#include "support/serve_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>

namespace wopbridge::testing::attachment_retention_serve_test {
namespace {

constexpr const char* api_key = "hk_attachments";

class AttachmentRetentionServeTest : public ::testing::Test {
protected:
    void write_config(const std::string& extra) {
        std::ofstream out(dir_.file("wopbridge.yaml"));
        out << sqlite_serve_prelude(api_key) << "runs: {local: {workflows: [{id: wf}]}}\n"
            << extra;
    }

    // A file in the attachments folder whose mtime is `age_hours` ago.
    std::string file_aged(const std::string& name, int age_hours) {
        std::filesystem::create_directories(dir_.file("attachments"));
        const std::string path = dir_.file("attachments/" + name);
        std::ofstream(path) << "bytes of " << name;
        const auto then = std::chrono::system_clock::now() - std::chrono::hours(age_hours);
        const auto secs =
            std::chrono::duration_cast<std::chrono::seconds>(then.time_since_epoch()).count();
        const struct timespec times[2] = {{secs, 0}, {secs, 0}};
        EXPECT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
        return path;
    }

    temp_dir dir_;
};

TEST_F(AttachmentRetentionServeTest, FilesNotPutForTheRetentionArePurgedAndOthersKept) {
    write_config("attachments: {retention: 200h}\n");
    const auto gone = file_aged("0123456789abcdef0123456789abcdef", 205);   // past 200 h + 1 h
    const auto margin = file_aged("1123456789abcdef0123456789abcdef", 200); // inside the margin
    const auto young = file_aged("2123456789abcdef0123456789abcdef", 2);
    const auto foreign = file_aged("notes.txt", 900); // not an attachment: never touched

    serve_process serve;
    ASSERT_TRUE(serve.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"))) << serve.error;
    EXPECT_TRUE(eventually([&] { return !std::filesystem::exists(gone); }))
        << read_text_file(dir_.file("serve.log"));
    EXPECT_TRUE(std::filesystem::exists(margin));
    EXPECT_TRUE(std::filesystem::exists(young));
    EXPECT_TRUE(std::filesystem::exists(foreign));
    // The line follows the unlink.
    EXPECT_TRUE(eventually([&] {
        return read_text_file(dir_.file("serve.log")).find("\"event\":\"attachments.purged\"") !=
               std::string::npos;
    }));
    serve.signal(SIGTERM);
    EXPECT_EQ(serve.wait_exit(), 0);
}

TEST_F(AttachmentRetentionServeTest, ARetentionShorterThanTheDeadLettersIsRefusedAtStart) {
    write_config("deadLetter: {retentionDays: 10}\nattachments:\n  retention: 200h\n");
    serve_process serve;
    EXPECT_FALSE(serve.start(dir_.file("wopbridge.yaml"), dir_.file("serve.log"), 10));
    EXPECT_NE(read_text_file(dir_.file("serve.log"))
                  .find("wopbridge.yaml:10:14: attachments.retention: must be at least 240h"),
              std::string::npos)
        << read_text_file(dir_.file("serve.log"));
}

} // namespace
} // namespace wopbridge::testing::attachment_retention_serve_test
