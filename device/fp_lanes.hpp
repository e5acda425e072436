// Round-to-nearest F arithmetic over a fully active warp (fp_lanes.cpp): the common case of the
// F executors (exec_fp.cpp), in fixed-width lane loops the compiler vectorizes.
//
// Its own file because it is built without -frounding-math: that flag, which exec_fp.cpp needs for
// its directed rounding modes, also keeps GCC from vectorizing FP operations. These loops only ever
// run in round-to-nearest, the host's mode outside HostRounding, so nothing is lost.
#pragma once

#include <cstdint>

namespace vx {

enum class FpOp : uint8_t { Add, Sub, Mul, Div, Sqrt, MAdd, MSub, NMSub, NMAdd };

// out[l] = op(a[l], b[l], c[l]) for the nt lanes (1, 2, 4, 8, 16 or 32; false for any other count),
// NaN results canonical; the host FPU's flags are raised as the lane-by-lane operations raise them.
// *flags gets fflags' NV when a fused multiply-add multiplied infinity by zero (RISC-V raises it
// even when the addend is a quiet NaN). out may be one of the sources.
bool rne_full_lanes(FpOp op, unsigned nt, uint32_t* out, const uint32_t* a, const uint32_t* b, const uint32_t* c,
                    uint32_t* flags);
// FCVT.S.W / FCVT.S.WU in round-to-nearest over nt lanes (as above): *flags gets NX when a lane's
// integer has no exact float. The host raises the same NX.
bool rne_full_cvt_from_int(bool is_unsigned, unsigned nt, uint32_t* out, const uint32_t* in, uint32_t* flags);
// One operation over exactly N lanes (1, 2, 4, 8, 16 or 32), as rne_full_lanes does it, for the F
// executors' fixed-width copies (exec_fp.cpp): no dispatch on the operation or the width at run time.
// rne_lanes_fma is compiled for AVX2 and FMA hosts (x86-64 only; call it only when
// host_has_avx2_fma()), rne_lanes_base for any host. Instantiated in fp_lanes.cpp.
template <FpOp op, unsigned N>
void rne_lanes_base(uint32_t* out, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* flags);
template <FpOp op, unsigned N>
#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("avx2,fma")]]  // on this first declaration: GCC takes a template's target from it
#endif
void rne_lanes_fma(uint32_t* out, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* flags);
// The same, always with the x86-64 baseline copy (what a host without AVX2 and FMA runs): for tests.
bool rne_full_lanes_baseline(FpOp op, unsigned nt, uint32_t* out, const uint32_t* a, const uint32_t* b,
                             const uint32_t* c, uint32_t* flags);

}  // namespace vx
