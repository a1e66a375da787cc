// The captured MUFU.RSQ table (fixtures/rsqrt/mufu_rsq_delta.tar.xz, unpacked and checked by
// cmake/EmbedRsqrtTable.cmake), assembled into read-only data: 2^22 bytes, no run-time file.
#include "mufu_rsq_table.hpp"

#ifndef BOUNDARY_RSQRT_TABLE_PATH
#error "BOUNDARY_RSQRT_TABLE_PATH must name the unpacked mufu_rsq_delta.bin"
#endif

__asm__(
    ".section .rodata\n"
    ".balign 64\n"
    ".globl boundary_mufu_rsq_delta\n"
    ".type boundary_mufu_rsq_delta, @object\n"
    "boundary_mufu_rsq_delta:\n"
    ".incbin \"" BOUNDARY_RSQRT_TABLE_PATH "\"\n"
    ".size boundary_mufu_rsq_delta, . - boundary_mufu_rsq_delta\n"
    ".previous\n");
