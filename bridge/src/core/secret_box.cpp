#include "core/secret_box.hpp"
#include "core/paths.hpp"

#include "wopbridge/signatures.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace wopbridge {
namespace {

constexpr std::size_t nonce_size = 12;
constexpr std::size_t tag_size = 16;
constexpr std::string_view seal_prefix = "v1:";

std::string base64(std::string_view raw) {
    std::string out(4 * ((raw.size() + 2) / 3) + 1, '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(raw.data()),
                            static_cast<int>(raw.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

bool unbase64(std::string_view text, std::string& out) {
    if (text.size() % 4 != 0) {
        return false;
    }
    out.assign(3 * text.size() / 4 + 1, '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(text.data()),
                            static_cast<int>(text.size()));
    if (n < 0) {
        return false;
    }
    std::size_t pad = 0;
    if (!text.empty() && text.back() == '=') {
        ++pad;
        if (text.size() > 1 && text[text.size() - 2] == '=') {
            ++pad;
        }
    }
    out.resize(static_cast<std::size_t>(n) - pad);
    return true;
}

struct ctx_deleter {
    void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using cipher_ctx = std::unique_ptr<EVP_CIPHER_CTX, ctx_deleter>;

result<std::string> read_key_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return make_error_code(errc::invalid_argument);
    }
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
        ::close(fd); // group/world access to the host key defeats sealing
        return make_error_code(errc::invalid_argument);
    }
    std::string key(secret_box::key_size + 1, '\0');
    ssize_t n = ::read(fd, key.data(), key.size());
    ::close(fd);
    if (n != static_cast<ssize_t>(secret_box::key_size)) {
        return make_error_code(errc::invalid_argument);
    }
    key.resize(secret_box::key_size);
    return key;
}

// Writes the key to a private temporary file, fsyncs it and links it into place (link fails when
// the name exists), so the key file appears whole or not at all: a kill during creation never leaves
// an empty key file, and of several nodes starting at once on one key file only one creator wins
// (the others get already_exists and read the winner's key).
result<std::string> create_key_file(const std::string& path, random_source& random) {
    std::string key(secret_box::key_size, '\0');
    random.fill(reinterpret_cast<unsigned char*>(key.data()), key.size());
    unsigned char tag[8];
    random.fill(tag, sizeof tag);
    std::string tmp = path + ".tmp.";
    for (unsigned char c : tag) {
        tmp += "0123456789abcdef"[c >> 4];
        tmp += "0123456789abcdef"[c & 15];
    }
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        return make_error_code(errc::invalid_argument);
    }
    bool ok = ::fchmod(fd, 0600) == 0 &&
              ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) &&
              ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) {
        ::unlink(tmp.c_str());
        return make_error_code(errc::internal);
    }
    const int linked = ::link(tmp.c_str(), path.c_str());
    const int link_errno = errno;
    ::unlink(tmp.c_str());
    if (linked != 0) {
        return make_error_code(link_errno == EEXIST ? errc::already_exists
                                                    : errc::invalid_argument);
    }
    // The new name must survive a power loss too: fsync the directory.
    std::string dir = std::filesystem::path(path).parent_path().string();
    int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    return key;
}

// HMAC-SHA256 keyed with the host key, per thread, duplicated per call: no algorithm fetch and
// no key schedule per dedup key. Rebuilt when a thread meets another key (tests use several).
struct keyed_hmac {
    std::uint64_t key_id = 0; // which key (key_bytes::id): no copy of the key is kept here
    std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx{nullptr, &EVP_MAC_CTX_free};
};

const EVP_MAC_CTX* keyed_hmac_for(std::uint64_t key_id, std::string_view key) {
    static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, OSSL_MAC_NAME_HMAC, nullptr);
    thread_local keyed_hmac cached;
    if (cached.ctx && cached.key_id == key_id) {
        return cached.ctx.get();
    }
    cached.ctx.reset();
    if (mac == nullptr || key.empty()) {
        return nullptr;
    }
    cached.ctx.reset(EVP_MAC_CTX_new(mac));
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
        OSSL_PARAM_construct_end()};
    if (!cached.ctx || EVP_MAC_init(cached.ctx.get(),
                                    reinterpret_cast<const unsigned char*>(key.data()),
                                    key.size(), params) != 1) {
        cached.ctx.reset();
        return nullptr;
    }
    cached.key_id = key_id;
    return cached.ctx.get();
}

} // namespace

struct secret_box::key_bytes {
    explicit key_bytes(std::string_view key)
        : data(static_cast<unsigned char*>(OPENSSL_secure_malloc(key.size()))), size(key.size()) {
        if (data == nullptr) {
            std::abort(); // 32 bytes: out of memory
        }
        std::memcpy(data, key.data(), size);
    }
    ~key_bytes() { OPENSSL_secure_clear_free(data, size); }
    key_bytes(const key_bytes&) = delete;
    key_bytes& operator=(const key_bytes&) = delete;

    unsigned char* data;
    std::size_t size;
    // Told apart by id, not address: a freed key's address may be reused by the next one.
    const std::uint64_t id = next_id.fetch_add(1) + 1;
    static inline std::atomic<std::uint64_t> next_id{0};
};

secret_box::secret_box(std::string_view key) : key_(std::make_shared<const key_bytes>(key)) {}

std::string_view secret_box::key() const {
    return {reinterpret_cast<const char*>(key_->data), key_->size};
}

secret_box secret_box::take_key(std::string& key) {
    secret_box box{std::string_view(key)};
    OPENSSL_cleanse(key.data(), key.size());
    return box;
}

bool secret_box::use_secure_heap() {
    // 64 KiB: both keys and OpenSSL's own secure allocations (key schedules, MAC keys) with room.
    return CRYPTO_secure_malloc_initialized() == 1 ||
           CRYPTO_secure_malloc_init(64 * 1024, 16) != 0;
}

result<secret_box> secret_box::open(const std::string& key_file, random_source& random) {
    if (key_file.empty()) {
        std::string key(key_size, '\0');
        random.fill(reinterpret_cast<unsigned char*>(key.data()), key.size());
        return take_key(key);
    }
    struct stat st{};
    if (::stat(key_file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
        // An empty key file is what a kill during creation left behind before creation went
        // through a temporary file: nothing can have been sealed with a key that was never
        // written, so it is replaced.
        ::unlink(key_file.c_str());
    }
    if (::stat(key_file.c_str(), &st) != 0 && errno == ENOENT) {
        auto created = create_key_file(key_file, random);
        if (created) {
            return take_key(*created);
        }
        // Lost a creation race with another process: read what it wrote.
    }
    auto key = read_key_file(key_file);
    if (!key) {
        return key.error();
    }
    return take_key(*key);
}

std::string secret_box::inspect_key_file(const std::string& key_file, bool& exists) {
    exists = false;
    if (key_file.empty()) {
        return "";
    }
    struct stat st{};
    if (::stat(key_file.c_str(), &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            return "cannot be examined (" + std::string(std::strerror(errno)) +
                   "): give this user access to its folder";
        }
        // Absent: serve creates it (and its missing folders).
        if (auto why = why_not_creatable(std::filesystem::path(key_file).parent_path());
            !why.empty()) {
            return "cannot be created: " + why +
                   "; create the key's folder for the service user or point hostKeyFile at an "
                   "existing key";
        }
        return "";
    }
    exists = true;
    if (!S_ISREG(st.st_mode)) {
        return "is not a regular file: point hostKeyFile at the 32-byte key file";
    }
    if (st.st_size == 0) {
        return ""; // left by a kill during creation before it was atomic; open() replaces it
    }
    if ((st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return std::string("is accessible to group or others (mode ") + mode +
               "), which defeats sealing: chmod 600 " + key_file;
    }
    if (st.st_size != static_cast<off_t>(key_size)) {
        return "is " + std::to_string(st.st_size) +
               " bytes; a host key is exactly 32 random bytes: restore the key file this store "
               "was sealed with (on a new store, remove the file and one is created)";
    }
    if (::access(key_file.c_str(), R_OK) != 0) {
        return "cannot be read by this user: give the service user read access (chown it)";
    }
    return "";
}

result<secret_box> secret_box::load(const std::string& key_file) {
    auto key = read_key_file(key_file);
    if (!key) {
        return key.error();
    }
    return take_key(*key);
}

secret_box secret_box::generate(random_source& random) {
    std::string key(key_size, '\0');
    random.fill(reinterpret_cast<unsigned char*>(key.data()), key.size());
    return take_key(key);
}

std::string secret_box::wrap(const secret_box& data_key, random_source& random) const {
    return seal(data_key.key(), random);
}

result<secret_box> secret_box::unwrap(std::string_view wrapped) const {
    auto key = unseal(wrapped);
    if (!key) {
        return key.error();
    }
    return from_key(std::move(*key));
}

std::string secret_box::key_check() const {
    return "hk1:" + hmac_hex("wopbridge host key check v1").substr(0, 32);
}

result<secret_box> secret_box::from_key(std::string key) {
    if (key.size() != key_size) {
        return make_error_code(errc::invalid_argument);
    }
    return take_key(key);
}

std::string secret_box::seal(std::string_view plaintext, random_source& random) const {
    unsigned char nonce[nonce_size];
    random.fill(nonce, nonce_size);
    std::string out(reinterpret_cast<const char*>(nonce), nonce_size);
    out.resize(nonce_size + plaintext.size() + tag_size);
    auto* ct = reinterpret_cast<unsigned char*>(out.data()) + nonce_size;

    cipher_ctx ctx(EVP_CIPHER_CTX_new());
    int len = 0;
    int total = 0;
    bool ok = ctx && EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
              EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, nonce_size, nullptr) == 1 &&
              EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr,
                                 reinterpret_cast<const unsigned char*>(key().data()), nonce) == 1 &&
              EVP_EncryptUpdate(ctx.get(), ct, &len,
                                reinterpret_cast<const unsigned char*>(plaintext.data()),
                                static_cast<int>(plaintext.size())) == 1;
    total = len;
    ok = ok && EVP_EncryptFinal_ex(ctx.get(), ct + total, &len) == 1;
    total += len;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, tag_size, ct + total) == 1;
    if (!ok) {
        std::abort(); // AES-GCM with valid parameters cannot fail short of a broken libcrypto
    }
    return std::string(seal_prefix) + base64(out);
}

result<std::string> secret_box::unseal(std::string_view sealed) const {
    if (sealed.substr(0, seal_prefix.size()) != seal_prefix) {
        return make_error_code(errc::invalid_argument);
    }
    std::string raw;
    if (!unbase64(sealed.substr(seal_prefix.size()), raw) || raw.size() < nonce_size + tag_size) {
        return make_error_code(errc::invalid_argument);
    }
    const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
    const std::size_t ct_size = raw.size() - nonce_size - tag_size;
    std::string plain(ct_size, '\0');
    auto* out = reinterpret_cast<unsigned char*>(plain.data());
    std::vector<unsigned char> tag(bytes + nonce_size + ct_size, bytes + raw.size());

    cipher_ctx ctx(EVP_CIPHER_CTX_new());
    int len = 0;
    bool ok = ctx && EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
              EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, nonce_size, nullptr) == 1 &&
              EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr,
                                 reinterpret_cast<const unsigned char*>(key().data()), bytes) == 1 &&
              EVP_DecryptUpdate(ctx.get(), out, &len, bytes + nonce_size,
                                static_cast<int>(ct_size)) == 1 &&
              EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, tag_size, tag.data()) == 1;
    int final_len = 0;
    ok = ok && EVP_DecryptFinal_ex(ctx.get(), out + len, &final_len) == 1;
    if (!ok) {
        return make_error_code(errc::invalid_argument);
    }
    plain.resize(static_cast<std::size_t>(len + final_len));
    return plain;
}

std::string secret_box::hmac_hex(std::string_view message) const {
    if (const auto* keyed = keyed_hmac_for(key_->id, key())) {
        std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(EVP_MAC_CTX_dup(keyed),
                                                                      &EVP_MAC_CTX_free);
        unsigned char mac[EVP_MAX_MD_SIZE];
        std::size_t len = 0;
        if (ctx &&
            EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(message.data()),
                           message.size()) == 1 &&
            EVP_MAC_final(ctx.get(), mac, &len, sizeof mac) == 1) {
            return sig::to_hex(std::string_view(reinterpret_cast<const char*>(mac), len));
        }
    }
    // The SDK's HMAC (one fetched algorithm, keyed per call).
    return sig::to_hex(sig::hmac_sha256(key(), message));
}

std::string secret_box::fingerprint(std::string_view secret) const {
    return hmac_hex(secret).substr(0, 16);
}

std::string secret_box::dedup_key(std::string_view subscription_id,
                                  std::string_view provider_event_id) const {
    std::string message;
    message.reserve(subscription_id.size() + 1 + provider_event_id.size());
    message.append(subscription_id).append("\n").append(provider_event_id);
    return "dk_" + hmac_hex(message).substr(0, 32);
}

} // namespace wopbridge
