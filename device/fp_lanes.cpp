#include "device/fp_lanes.hpp"

#include <bit>
#include <cmath>
#include <cstring>

#include "device/isa.hpp"

namespace vx {

namespace {

constexpr uint32_t kSignBit = 0x80000000u, kInfBits = 0x7f800000u, kCanonicalNan = 0x7fc00000u;
constexpr uint32_t kNV = 16;

inline uint32_t canonical(uint32_t b) { return (b & ~kSignBit) > kInfBits ? kCanonicalNan : b; }

template <FpOp op>
constexpr bool kFused = op == FpOp::MAdd || op == FpOp::MSub || op == FpOp::NMSub || op == FpOp::NMAdd;

// N lanes through a local array: a fixed trip count and no overlap between the result and the sources.
// kFma: the host has FMA (the function is compiled for it), so the fused operation is one instruction.
template <FpOp op, unsigned N, bool kFma>
inline void lanes(uint32_t* out, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* flags) {
  uint32_t t[N];
  uint32_t invalid = 0;
  for (unsigned l = 0; l < N; ++l) {
    const float x = std::bit_cast<float>(a[l]);
    float r;
    if constexpr (op == FpOp::Sqrt) {
      r = std::sqrt(x);
    } else if constexpr (!kFused<op>) {
      const float y = std::bit_cast<float>(b[l]);
      if constexpr (op == FpOp::Add) r = x + y;
      if constexpr (op == FpOp::Sub) r = x - y;
      if constexpr (op == FpOp::Mul) r = x * y;
      if constexpr (op == FpOp::Div) r = x / y;
    } else {
      const uint32_t ma = a[l] & ~kSignBit, mb = b[l] & ~kSignBit;
      invalid |= uint32_t(ma == kInfBits && mb == 0) | uint32_t(ma == 0 && mb == kInfBits);
      // The operands are negated, not the result: FNMSUB = -(a*b)+c, FNMADD = -(a*b)-c, FMSUB = a*b-c.
      const float px = op == FpOp::NMSub || op == FpOp::NMAdd ? -x : x;
      const float z = std::bit_cast<float>(c[l]);
      const float pz = op == FpOp::MSub || op == FpOp::NMAdd ? -z : z;
      if constexpr (kFma)
        r = __builtin_fmaf(px, std::bit_cast<float>(b[l]), pz);
      else
        r = std::fmaf(px, std::bit_cast<float>(b[l]), pz);
    }
    t[l] = canonical(std::bit_cast<uint32_t>(r));
  }
  copy_lanes<N>(out, t);
  if (invalid) *flags |= kNV;
}

template <FpOp op, bool kFma>
inline bool by_width(unsigned nt, uint32_t* out, const uint32_t* a, const uint32_t* b, const uint32_t* c,
                     uint32_t* flags) {
  switch (nt) {
    case 1: lanes<op, 1, kFma>(out, a, b, c, flags); return true;
    case 2: lanes<op, 2, kFma>(out, a, b, c, flags); return true;
    case 4: lanes<op, 4, kFma>(out, a, b, c, flags); return true;
    case 8: lanes<op, 8, kFma>(out, a, b, c, flags); return true;
    case 16: lanes<op, 16, kFma>(out, a, b, c, flags); return true;
    case 32: lanes<op, 32, kFma>(out, a, b, c, flags); return true;
    default: return false;
  }
}

template <bool kFma>
inline bool dispatch(FpOp op, unsigned nt, uint32_t* out, const uint32_t* a, const uint32_t* b, const uint32_t* c,
                     uint32_t* flags) {
  switch (op) {
    case FpOp::Add: return by_width<FpOp::Add, kFma>(nt, out, a, b, c, flags);
    case FpOp::Sub: return by_width<FpOp::Sub, kFma>(nt, out, a, b, c, flags);
    case FpOp::Mul: return by_width<FpOp::Mul, kFma>(nt, out, a, b, c, flags);
    case FpOp::Div: return by_width<FpOp::Div, kFma>(nt, out, a, b, c, flags);
    case FpOp::Sqrt: return by_width<FpOp::Sqrt, kFma>(nt, out, a, b, c, flags);
    case FpOp::MAdd: return by_width<FpOp::MAdd, kFma>(nt, out, a, b, c, flags);
    case FpOp::MSub: return by_width<FpOp::MSub, kFma>(nt, out, a, b, c, flags);
    case FpOp::NMSub: return by_width<FpOp::NMSub, kFma>(nt, out, a, b, c, flags);
    case FpOp::NMAdd: return by_width<FpOp::NMAdd, kFma>(nt, out, a, b, c, flags);
  }
  return false;
}

constexpr uint32_t kNX = 1;

template <bool kUnsigned, unsigned N>
inline void cvt_lanes(uint32_t* out, const uint32_t* in, uint32_t* flags) {
  uint32_t t[N];
  uint32_t inexact = 0;
  for (unsigned l = 0; l < N; ++l) {
    const float r = kUnsigned ? float(in[l]) : float(int32_t(in[l]));
    // Exact in double, so the comparison is exact: NX exactly when the float is not the integer.
    const double exact = kUnsigned ? double(in[l]) : double(int32_t(in[l]));
    inexact |= uint32_t(double(r) != exact);
    t[l] = std::bit_cast<uint32_t>(r);
  }
  copy_lanes<N>(out, t);
  if (inexact) *flags |= kNX;
}

template <bool kUnsigned>
inline bool cvt_by_width(unsigned nt, uint32_t* out, const uint32_t* in, uint32_t* flags) {
  switch (nt) {
    case 1: cvt_lanes<kUnsigned, 1>(out, in, flags); return true;
    case 2: cvt_lanes<kUnsigned, 2>(out, in, flags); return true;
    case 4: cvt_lanes<kUnsigned, 4>(out, in, flags); return true;
    case 8: cvt_lanes<kUnsigned, 8>(out, in, flags); return true;
    case 16: cvt_lanes<kUnsigned, 16>(out, in, flags); return true;
    case 32: cvt_lanes<kUnsigned, 32>(out, in, flags); return true;
    default: return false;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("avx2,fma"), gnu::flatten]] bool cvt_avx2(bool is_unsigned, unsigned nt, uint32_t* out,
                                                        const uint32_t* in, uint32_t* flags) {
  return is_unsigned ? cvt_by_width<true>(nt, out, in, flags) : cvt_by_width<false>(nt, out, in, flags);
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("avx2,fma"), gnu::flatten]] bool dispatch_fma(FpOp op, unsigned nt, uint32_t* out, const uint32_t* a,
                                                            const uint32_t* b, const uint32_t* c, uint32_t* flags) {
  return dispatch<true>(op, nt, out, a, b, c, flags);
}
#endif

}  // namespace

// The fixed-width copies reach the same loops as rne_full_lanes through its dispatch, with the operation
// and the width constant: the switches fold away.
template <FpOp op, unsigned N>
void rne_lanes_base(uint32_t* out, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* flags) {
  dispatch<false>(op, N, out, a, b, c, flags);
}

template <FpOp op, unsigned N>
#if defined(__x86_64__) && defined(__GNUC__)
[[gnu::target("avx2,fma"), gnu::flatten]]
#endif
void rne_lanes_fma(uint32_t* out, const uint32_t* a, const uint32_t* b, const uint32_t* c, uint32_t* flags) {
#if defined(__x86_64__) && defined(__GNUC__)
  dispatch<true>(op, N, out, a, b, c, flags);
#else
  dispatch<false>(op, N, out, a, b, c, flags);
#endif
}

#define VX_RNE_LANES(op)                                                                                         \
  template void rne_lanes_base<op, 1>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*);  \
  template void rne_lanes_base<op, 2>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*);  \
  template void rne_lanes_base<op, 4>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*);  \
  template void rne_lanes_base<op, 8>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*);  \
  template void rne_lanes_base<op, 16>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*); \
  template void rne_lanes_base<op, 32>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*); \
  template void rne_lanes_fma<op, 1>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*);   \
  template void rne_lanes_fma<op, 2>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*);   \
  template void rne_lanes_fma<op, 4>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*);   \
  template void rne_lanes_fma<op, 8>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*);   \
  template void rne_lanes_fma<op, 16>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*);  \
  template void rne_lanes_fma<op, 32>(uint32_t*, const uint32_t*, const uint32_t*, const uint32_t*, uint32_t*);
VX_RNE_LANES(FpOp::Add)
VX_RNE_LANES(FpOp::Sub)
VX_RNE_LANES(FpOp::Mul)
VX_RNE_LANES(FpOp::Div)
VX_RNE_LANES(FpOp::Sqrt)
VX_RNE_LANES(FpOp::MAdd)
VX_RNE_LANES(FpOp::MSub)
VX_RNE_LANES(FpOp::NMSub)
VX_RNE_LANES(FpOp::NMAdd)
#undef VX_RNE_LANES

bool rne_full_lanes(FpOp op, unsigned nt, uint32_t* out, const uint32_t* a, const uint32_t* b, const uint32_t* c,
                    uint32_t* flags) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (host_has_avx2_fma()) return dispatch_fma(op, nt, out, a, b, c, flags);
#endif
  return dispatch<false>(op, nt, out, a, b, c, flags);
}

bool rne_full_cvt_from_int(bool is_unsigned, unsigned nt, uint32_t* out, const uint32_t* in, uint32_t* flags) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (host_has_avx2_fma()) return cvt_avx2(is_unsigned, nt, out, in, flags);
#endif
  return is_unsigned ? cvt_by_width<true>(nt, out, in, flags) : cvt_by_width<false>(nt, out, in, flags);
}

bool rne_full_lanes_baseline(FpOp op, unsigned nt, uint32_t* out, const uint32_t* a, const uint32_t* b,
                             const uint32_t* c, uint32_t* flags) {
  return dispatch<false>(op, nt, out, a, b, c, flags);
}

}  // namespace vx
