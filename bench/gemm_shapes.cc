// gemm_shapes: GFLOP/s of oneDNN f32 matmul (the primitive fusor uses, weights packed with
// format any) vs inner_product on MiniLM's GEMM shapes, with the current thread count.
//   OMP_NUM_THREADS=2 gemm_shapes [reps=50]
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

template <class F>
double time_it(int reps, F&& f) {
  f();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 50;
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  struct Shape { memory::dim m, k, n; };
  for (Shape sh : {Shape{128, 384, 384}, Shape{128, 384, 1536}, Shape{128, 1536, 384}, Shape{1024, 384, 384},
                   Shape{1024, 384, 1536}, Shape{1024, 1536, 384}}) {
    const double flop = 2.0 * sh.m * sh.k * sh.n;
    std::vector<float> a(sh.m * sh.k, 0.5f), b(sh.k * sh.n, 0.25f), c(sh.m * sh.n);
    // matmul, weights any
    memory::desc src({sh.m, sh.k}, dt::f32, tag::ab), dst({sh.m, sh.n}, dt::f32, tag::ab);
    memory::desc wany({sh.k, sh.n}, dt::f32, tag::any);
    matmul::primitive_desc mpd(matmul::desc(src, wany, dst), eng);
    matmul mm(mpd);
    memory wu({{sh.k, sh.n}, dt::f32, tag::ab}, eng, b.data());
    memory wp(mpd.weights_desc(), eng);
    reorder(wu, wp).execute(s, wu, wp);
    memory ms(src, eng, a.data()), md(dst, eng, c.data());
    double tm = time_it(reps, [&] { mm.execute(s, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, wp}, {DNNL_ARG_DST, md}}); s.wait(); });
    // inner product: weights [N, K], any
    memory::desc ip_w({sh.n, sh.k}, dt::f32, tag::any);
    memory::desc ip_src({sh.m, sh.k}, dt::f32, tag::any);
    inner_product_forward::primitive_desc ipd(
        inner_product_forward::desc(prop_kind::forward_inference, ip_src, ip_w, dst), eng);
    inner_product_forward ip(ipd);
    memory ipw(ipd.weights_desc(), eng);
    double tip = -1;
    if (ipd.src_desc() == src) {
      tip = time_it(reps, [&] { ip.execute(s, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, ipw}, {DNNL_ARG_DST, md}}); s.wait(); });
    }
    std::printf("%5lld x %5lld x %5lld  matmul %-18s %6.1f GFLOP/s   inner_product %-18s %6.1f GFLOP/s\n",
                (long long)sh.m, (long long)sh.k, (long long)sh.n, mpd.impl_info_str(), flop / tm * 1e-9,
                ipd.impl_info_str(), tip > 0 ? flop / tip * 1e-9 : 0.0);
  }
  return 0;
}
