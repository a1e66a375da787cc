// Links the installed emulator and uses its built-in MUFU.RSQ table: rsqrt(4) is 1/2 exactly, and a
// row of ones through the boundary (eps 0, alpha 0, beta 1) comes out as ones. The second also
// checks that the installed headers name the library's symbols (its inline namespace).
#include <boundary/reference.hpp>

#include <bit>
#include <cstdio>
#include <vector>

int main() {
  using namespace boundary;
  const float r = ref::rsqrt_approx_ftz_f32(4.0f);
  const std::uint16_t h = ref::f32_to_bf16_rn(r);
  std::printf("rsqrt_approx_ftz_f32(4) = %a, as BF16 0x%04x\n", r, h);

  const NormConstants no_weight{.eps = 0.0};
  const std::vector<float> alpha(kH, 0.0f), beta(kH, 1.0f), stream(kH, 0.0f);
  const std::vector<std::uint16_t> branch(kH, 0x3F80);
  std::vector<std::uint16_t> out(kH);
  ref::Inputs in;
  in.m = 1;
  in.branch = branch.data();
  in.stream = stream.data();
  ref::Outputs o;
  o.out = out.data();
  ref::Boundary({no_weight, no_weight}, {alpha.data(), beta.data(), nullptr, nullptr}).run(in, o);
  std::printf("a row of ones: out[0] = 0x%04x\n", out[0]);

  return std::bit_cast<std::uint32_t>(r) == 0x3F000000u && h == 0x3F00 && out == branch ? 0 : 1;
}
