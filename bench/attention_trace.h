// Kernel timelines for baton-bench attention --trace (BATON_TRACE builds only).
#pragma once

namespace baton::bench {

bool trace_supported();           // false unless built with -DBATON_TRACE=ON
bool trace_clear();               // zero the device table
void trace_print(char const* what);  // summary of the table's marks (then zeroes it)

}  // namespace baton::bench
