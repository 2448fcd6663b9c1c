// Kernel timelines for baton-bench attention --trace (BATON_TRACE builds only).
#pragma once

namespace baton::bench {

bool trace_supported();           // false unless built with -DBATON_TRACE=ON
bool trace_clear();               // zero the device table
// Summary of the table's marks (then zeroes it); single: the merge marks are the single-launch
// producer's last CTAs (counted in, partials loaded, merged), not a reducer kernel's.
void trace_print(char const* what, bool single = false);
// Trace only the calls on K pools a and b (nullptrs: every call); with one pool per call (or
// with --pools rotating them), calls on two neighbouring pools are neighbours in the chain.
bool trace_focus(void const* a, void const* b);
// Both focused calls' summaries against one t0 (a's first producer wait), then zeroes the table.
void trace_print_pair(char const* what, bool single = false);

}  // namespace baton::bench
