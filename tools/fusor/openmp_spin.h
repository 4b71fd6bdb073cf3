// OpenMP's idle threads spin before they sleep: by default for about 300,000 polls (GNU libgomp,
// GOMP_SPINCOUNT). GEMMs too small for fusor's thread pool still run on oneDNN's OpenMP team,
// and a team thread spinning after one of them takes the core the pool's next kernel needs:
// MiniLM at batch 1, length 32 ran ~15% slower. libgomp reads the setting only when it loads, so
// the CLI sets a short spin and re-executes itself, once, unless the user chose a policy
// (OMP_WAIT_POLICY or GOMP_SPINCOUNT set).
#pragma once

namespace fusor::cli {

// Call first in main(). Returns only when nothing needs changing or re-executing failed.
void shorten_openmp_spin(char** argv);

}  // namespace fusor::cli
