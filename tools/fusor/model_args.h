// Options shared by every subcommand that runs a model: shapes, batch, seq, threads.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fusor/engine.h"

namespace fusor::cli {

struct ModelArgs {
  std::string model;
  std::vector<std::string> shapes;  // NAME=d0,d1,...
  int threads = 0;
  bool reference = false;
  bool mem_guard = false;
  bool no_mem_reuse = false;

  void add_to(CLI::App& cmd);
  // Parses --shape values; throws fusor::Error on a malformed one.
  std::map<std::string, Dims> parsed_shapes() const;
  SessionOptions session_options() const;
  // Sets the OpenMP thread count (shared with oneDNN) when --threads was given.
  void apply_threads() const;
};

// "1,8,32" -> {1, 8, 32}; every value must be a positive integer.
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what);

}  // namespace fusor::cli
