// One function per subcommand; each lives in its own file and registers itself on the app.
#pragma once
#include <CLI/CLI.hpp>

namespace fusor::cli {

void add_run_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_profile_command(CLI::App& app);

}  // namespace fusor::cli
