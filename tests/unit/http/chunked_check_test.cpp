// The strict chunked framing check: what it accepts, what it refuses, and that a body cut at any
// byte gives the verdict of the body whole (the server feeds whatever each read returned).
#include "http/chunked_check.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace wopbridge::http {
namespace {

using verdict = chunked_check::verdict;

verdict whole(std::string_view body) {
    chunked_check c;
    return c.feed(body);
}

// Every cut, and one byte at a time, agree with the whole.
void expect_same_in_pieces(std::string_view body, verdict want) {
    for (std::size_t cut = 0; cut <= body.size(); ++cut) {
        chunked_check c;
        c.feed(body.substr(0, cut));
        EXPECT_EQ(c.feed(body.substr(cut)), want) << "cut at " << cut;
    }
    chunked_check bytewise;
    for (char ch : body) {
        bytewise.feed(std::string_view(&ch, 1));
    }
    EXPECT_EQ(bytewise.state(), want);
}

TEST(ChunkedCheckTest, AcceptsWellFormedBodies) {
    const std::vector<std::string> good = {
        "0\r\n\r\n",
        "5\r\nhello\r\n0\r\n\r\n",
        "A\r\n0123456789\r\n00\r\n\r\n",
        "2;note=\"a \\\"q\\\" ;x\"\r\n{}\r\n0\r\n\r\n",
        "2 ;ext=tok\r\n{}\r\n0;last\r\n\r\n",
        "2\r\n\r\n\r\n0\r\nX-Checksum: abc\r\nX-Other:1\r\n\r\n", // data may hold CRLF
        "FFFFFFFFFFFFFFF\r\n", // 15 digits: only incomplete
    };
    for (const auto& body : good) {
        const auto want = body.back() == '\n' && body.find("FFFF") == std::string::npos
                              ? verdict::complete
                              : verdict::more;
        EXPECT_EQ(whole(body), want) << body;
        expect_same_in_pieces(body, want);
    }
}

TEST(ChunkedCheckTest, RefusesEachBrokenFramingAtTheByteThatBreaksIt) {
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"0x0\r\n\r\n", "0x0"},
        {" 0\r\n\r\n", "leading space"},
        {"-1\r\n\r\n", "-1"},
        {"\r\n\r\n", "empty size"},
        {"10000000000000000\r\n", "17 hex digits"},
        {"0\n\r\n", "bare-LF last chunk"},
        {"0\r\n\n", "bare-LF end of trailer"},
        {"2\n{}\r\n0\r\n\r\n", "bare-LF size line"},
        {"2\r\n{}0\r\n\r\n", "data without CRLF"},
        {"2\r\n{}\n0\r\n\r\n", "data then bare LF"},
        {"2\r\n{}\r\n0\r\nContent-Length: 5\r\n\r\n", "trailer Content-Length"},
        {"2\r\n{}\r\n0\r\ntransfer-encoding: chunked\r\n\r\n", "trailer Transfer-Encoding"},
        {"2\r\n{}\r\n0\r\nno colon\r\n\r\n", "trailer line without a colon"},
        {"2\r\n{}\r\n0\r\n: v\r\n\r\n", "trailer line without a name"},
        {"2;a=\"\r\n\"\r\n{}\r\n0\r\n\r\n", "quoted CRLF in an extension"},
        {"2;a\nb\r\n{}\r\n0\r\n\r\n", "LF in an extension"},
        {"2 x\r\n{}\r\n0\r\n\r\n", "a space then no extension"},
    };
    for (const auto& [body, what] : bad) {
        EXPECT_EQ(whole(body), verdict::malformed) << what;
        expect_same_in_pieces(body, verdict::malformed);
    }
}

TEST(ChunkedCheckTest, StopsAtTheEndOfTheBodyAndLeavesWhatFollows) {
    chunked_check c;
    EXPECT_EQ(c.feed("0\r\n\r\nGET / HTTP/1.1\r\n\n\n garbage"), verdict::complete);
    EXPECT_EQ(c.feed("more garbage\n"), verdict::complete);
}

} // namespace
} // namespace wopbridge::http
