// Links the installed emulator and uses its built-in MUFU.RSQ table: rsqrt(4) is 1/2 exactly.
#include <boundary/reference.hpp>

#include <bit>
#include <cstdio>

int main() {
  const float r = boundary::ref::rsqrt_approx_ftz_f32(4.0f);
  const std::uint16_t h = boundary::ref::f32_to_bf16_rn(r);
  std::printf("rsqrt_approx_ftz_f32(4) = %a, as BF16 0x%04x\n", r, h);
  return std::bit_cast<std::uint32_t>(r) == 0x3F000000u && h == 0x3F00 ? 0 : 1;
}
