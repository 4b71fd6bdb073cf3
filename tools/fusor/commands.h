// One function per subcommand; each lives in its own file and registers itself on the app.
#pragma once
#include <CLI/CLI.hpp>

namespace fusor::cli {

void add_run_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_optimize_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_onboard_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_generate_command(CLI::App& app);

// For an option naming a file the command writes at its end: its folder must exist and it must
// not be a folder, checked before any work so that a typo does not cost the whole run.
CLI::Validator writable_file();

// For an option taking positive integers: one ("16"), a list ("1,512"), or a list that may be
// empty (""). A malformed value is a usage error (exit 2), found before any work; fusor check
// needs this for --seq and --batch too, where ModelArgs' own parsers exit 1 like a failed gate.
enum class Count { One, List, ListOrNone };
CLI::Validator positive_integers(Count count);

// For an option taking a real number > 0 (>= 0): finite, the whole text a number. CLI11's
// PositiveNumber and NonNegativeNumber let "nan" through to the command and, refusing 0 or
// "inf", printed their range up to DBL_MAX in 309 digits.
CLI::Validator positive_number();
CLI::Validator non_negative_number();

// For --headroom (plan, onboard): a number in [0, 0.95) (capacity::headroom_in_range), so that
// onboard refuses what its plan step would, before any work.
CLI::Validator headroom_fraction();

// Thrown by a command that ran to completion but must exit non-zero (check: 1 when the plan
// still fails); main returns the code without printing an error.
struct ExitCode {
  int code;
};

}  // namespace fusor::cli
