// The last line of defence of our binaries' main(): an exception that escapes
// (a library's; our code never throws) ends the program with one line on
// stderr and an exit code instead of std::terminate. Header-only.
#ifndef SHARDPLAN_PROTO_GUARDED_MAIN_H_
#define SHARDPLAN_PROTO_GUARDED_MAIN_H_

#include <exception>
#include <iostream>

namespace shardplan {

// run(), or `internal_error_code` after "<program>: internal error: <what>"
// when it throws.
template <typename Run>
int GuardedMain(const char* program, int internal_error_code, Run run) {
  try {
    return run();
  } catch (const std::exception& e) {
    std::cerr << program << ": internal error: " << e.what() << "\n";
    return internal_error_code;
  }
}

}  // namespace shardplan

#endif  // SHARDPLAN_PROTO_GUARDED_MAIN_H_
