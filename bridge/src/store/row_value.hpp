#pragma once
// What a backend's row reader yields, for the row-collecting helpers of both backends: the T of
// a reader returning T or result<T>.

#include "core/error.hpp"

#include <type_traits>

namespace wopbridge::store_codec {

template <class T> struct row_value { using type = T; };
template <class T> struct row_value<result<T>> { using type = T; };

// The answer of `read_row(row)` without cv/ref, and the value it carries.
template <class ReadRow, class Row>
using read_answer_t = std::remove_cvref_t<std::invoke_result_t<ReadRow&, Row>>;
template <class ReadRow, class Row>
using row_value_t = typename row_value<read_answer_t<ReadRow, Row>>::type;

} // namespace wopbridge::store_codec
