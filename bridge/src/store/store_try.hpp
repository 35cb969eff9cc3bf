#pragma once
// For the backends' statement sequences: returns the error of a result-returning expression.
// (A macro: the early return must leave the enclosing function.)

#define WB_TRY(expr)                                                                               \
    do {                                                                                           \
        auto&& wb_try_result_ = (expr);                                                            \
        if (!wb_try_result_) {                                                                     \
            return wb_try_result_.error();                                                         \
        }                                                                                          \
    } while (0)
