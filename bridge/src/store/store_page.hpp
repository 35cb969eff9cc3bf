#pragma once
// Cursor paging shared by the store's listing reads.

#include <string>
#include <vector>

namespace wopbridge {

struct page_request {
    int limit = 50;
    std::string cursor; // opaque, from a previous page; empty = first page
};

template <class T>
struct page {
    std::vector<T> items;
    std::string next_cursor; // empty on the last page
};

} // namespace wopbridge
