// Links baton::baton from an install tree and calls it: validation needs no GPU, so this runs
// anywhere. Exit 0 only if the library answered as documented.
#include <baton/baton.h>

#include <cstdio>
#include <string>

int main() {
  baton::DecodeMetadataArgs args;  // everything null
  args.page_size = 48;
  baton::Status s = baton::build_decode_metadata_supported(args);
  std::printf("baton %s: %s\n", baton::version(), s.to_string().c_str());
  bool const ok = s.code() == baton::StatusCode::kInvalidArgument &&
                  s.message().find("seq_lens is null") != std::string::npos;
  return ok ? 0 : 1;
}
