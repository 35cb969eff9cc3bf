// Mutation robustness: the MIME, multipart, encoded-word and SMTP parsers take network input, so
// thousands of corrupted variants of realistic inputs must never throw, crash or emit invalid
// UTF-8 (run under WOPBRIDGE_SANITIZE=ON to catch memory errors too).
#include "email/mime.hpp"
#include "email/smtp_session.hpp"
#include <wopbridge/multipart.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace wopbridge::email {
namespace {

class ParserRobustnessTest : public ::testing::Test {
  protected:
    std::string mutate(std::string s) {
        std::uniform_int_distribution<int> op(0, 5);
        std::uniform_int_distribution<int> byte(0, 255);
        int edits = 1 + static_cast<int>(rng_() % 8);
        static const char* tokens[] = {
            "\r\n", "\n", "--",        "=?",       "?=",         "=",        "\"",
            ";",    ":",  "boundary=", "\r\n\r\n", "=?UTF-8?B?", "=?x?Q?=FF"};
        for (int i = 0; i < edits && !s.empty(); ++i) {
            std::size_t pos = rng_() % s.size();
            switch (op(rng_)) {
            case 0:
                s[pos] = static_cast<char>(byte(rng_));
                break;
            case 1:
                s.erase(pos, 1 + rng_() % 16);
                break;
            case 2:
                s.insert(pos, tokens[rng_() % (sizeof tokens / sizeof *tokens)]);
                break;
            case 3:
                s.resize(pos);
                break;
            case 4:
                s.insert(pos, s.substr(rng_() % s.size(), rng_() % 64));
                break;
            default:
                s.insert(pos, 1, static_cast<char>(byte(rng_)));
                break;
            }
        }
        return s;
    }

    static bool valid_utf8(const std::string& s) { return sanitize_utf8(s) == s; }

    std::mt19937_64 rng_{20261130};
};

const std::string sample_message =
    "From: =?UTF-8?Q?J=C3=B6rg?= <j@x.test>\r\nTo: a@b.test, \"C, D\" <c@d.test>\r\n"
    "Subject: =?iso-8859-1?B?R3L832U=?= und mehr\r\nMessage-ID: <id@x>\r\n"
    "Content-Type: multipart/mixed; boundary=\"o\"\r\n\r\npre\r\n--o\r\n"
    "Content-Type: multipart/alternative; boundary=a\r\n\r\n--a\r\n"
    "Content-Type: text/plain; charset=windows-1252\r\nContent-Transfer-Encoding: "
    "quoted-printable\r\n\r\n=93hi=94 =\r\nthere\r\n--a\r\nContent-Type: text/html\r\n\r\n<p>x</p>"
    "\r\n--a--\r\n--o\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; "
    "filename*=UTF-8''r%C3%A9.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n"
    "--o--\r\nepilogue\r\n";

TEST_F(ParserRobustnessTest, MutatedMessagesParseSafely) {
    std::size_t parsed = 0;
    for (int i = 0; i < 3000; ++i) {
        auto input = mutate(sample_message);
        std::optional<parsed_message> m;
        ASSERT_NO_THROW(m = parse_message(input)) << i;
        if (!m) {
            continue;
        }
        ++parsed;
        EXPECT_TRUE(valid_utf8(m->subject)) << i;
        EXPECT_TRUE(valid_utf8(m->from)) << i;
        EXPECT_TRUE(valid_utf8(m->text)) << i;
        EXPECT_TRUE(valid_utf8(m->html.value_or(""))) << i;
        for (const auto& t : m->to) {
            EXPECT_TRUE(valid_utf8(t)) << i;
        }
        for (const auto& a : m->attachments) {
            EXPECT_TRUE(valid_utf8(a.filename)) << i;
        }
    }
    EXPECT_GT(parsed, 1000u); // the mutations mostly keep a header block
}

TEST_F(ParserRobustnessTest, MutatedMultipartNeverThrows) {
    const std::string body =
        "--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n"
        "--b\r\nContent-Disposition: form-data; name=\"f\"; "
        "filename=\"x.txt\"\r\nContent-Type: text/plain\r\n\r\nabc\r\n--b--\r\n";
    http::multipart_limits limits;
    limits.max_parts = 8;
    limits.max_part_bytes = 256;
    for (int i = 0; i < 3000; ++i) {
        auto input = mutate(body);
        for (bool lenient : {false, true}) {
            http::multipart_result r;
            ASSERT_NO_THROW(r = http::parse_multipart(input, "b", limits, lenient)) << i;
            EXPECT_LE(r.parts.size(), limits.max_parts);
            for (const auto& p : r.parts) {
                EXPECT_LE(p.body.size(), limits.max_part_bytes);
                ASSERT_NO_THROW(http::form_part_info_of(p));
            }
        }
    }
}

TEST_F(ParserRobustnessTest, MutatedSmtpDialogueNeverThrows) {
    const std::string dialogue =
        "EHLO c\r\nAUTH PLAIN AHUAcA==\r\nMAIL FROM:<a@b> SIZE=10\r\nRCPT TO:<in@x>\r\nDATA\r\n"
        "Subject: s\r\n..x\r\n.\r\nRSET\r\nSTARTTLS\r\nQUIT\r\n";
    for (int i = 0; i < 2000; ++i) {
        smtp_config cfg;
        cfg.max_message_bytes = 64;
        cfg.auth_required = (i % 2) == 0;
        cfg.tls_available = (i % 3) == 0;
        smtp_hooks hooks;
        hooks.recipient_known = [](std::string_view a) { return a == "in@x"; };
        hooks.has_capacity = [] { return true; };
        hooks.check_auth = [](std::string_view, std::string_view) { return true; };
        smtp_session s(cfg, hooks);
        auto input = mutate(dialogue);
        std::size_t pos = 0;
        while (pos < input.size()) {
            auto nl = input.find('\n', pos);
            auto line =
                std::string_view(input).substr(pos, nl == std::string::npos ? nl : nl - pos);
            pos = nl == std::string::npos ? input.size() : nl + 1;
            smtp_step step;
            ASSERT_NO_THROW(step = s.on_line(line)) << i;
            if (step.message_ready) {
                auto env = s.take_envelope();
                EXPECT_FALSE(env.recipients.empty());
                EXPECT_LE(env.data.size(), cfg.max_message_bytes);
                step = s.finish_message(smtp_session::commit_result::committed);
            }
            if (step.start_tls) {
                s.tls_started();
            }
            if (step.close) {
                break;
            }
        }
    }
}

TEST_F(ParserRobustnessTest, EncodedWordsAlwaysYieldUtf8) {
    const std::string subject = "=?UTF-8?B?SMOpbGxv?= =?windows-1252?Q?=93x=94?= plain \xE9";
    for (int i = 0; i < 5000; ++i) {
        auto input = mutate(subject);
        std::string out;
        ASSERT_NO_THROW(out = decode_encoded_words(input)) << i;
        EXPECT_TRUE(valid_utf8(out)) << i;
    }
}

} // namespace
} // namespace wopbridge::email
